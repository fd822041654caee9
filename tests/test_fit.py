"""core.fit (ranked ways to make a config fit) and ``dsconfig fit``."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from core import cli, fit, hardware, memory, models
from core.cli.common import catalog_gpu
from core.effective import effective
from core.validate import validate

#: An A100 80GB's usable memory, as the catalog has it.
A100_BYTES = hardware.GPU_BY_NAME["NVIDIA A100 80GB"].memory_bytes
A100 = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=A100_BYTES,
                       cpu_ram_per_node_bytes=512 * memory.GIB)
ZERO1 = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
         "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}}, "zero_optimization": {"stage": 1}}


@pytest.fixture(scope="module")
def llama8b():
    return models.get_spec("meta-llama/Meta-Llama-3-8B")


@pytest.fixture(scope="module")
def llama70b():
    return models.get_spec("meta-llama/Llama-2-70b-hf")


def test_apply_patch_merges_and_deletes_without_touching_the_input():
    config = {"a": 1, "z": {"stage": 1, "keep": True}, "gone": 3}
    out = fit.apply_patch(config, {"z": {"stage": 3}, "gone": None, "b": [1]})
    assert out == {"a": 1, "z": {"stage": 3, "keep": True}, "b": [1]}
    assert config == {"a": 1, "z": {"stage": 1, "keep": True}, "gone": 3}


def test_a_config_that_fits_needs_no_way(llama8b):
    small = memory.Hardware(8, 1, A100_BYTES, 1024 * memory.GIB)
    config = {**ZERO1, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}
    assert memory.estimate(config, llama8b, small, memory.Shape(1)).fits
    assert fit.ways_to_fit(config, llama8b, small, memory.Shape(1)) == []


def test_every_way_reports_the_memory_its_patch_gives(llama8b):
    shape = memory.Shape(micro_batch=4, seq_len=4096)
    assert not memory.estimate(ZERO1, llama8b, A100, shape).fits
    ways = fit.ways_to_fit(ZERO1, llama8b, A100, shape)
    kinds = {w.kind for w in ways}
    assert {"micro_batch", "recompute", "zero_stage", "offload_optimizer", "offload_param"} <= kinds
    for way in ways:
        if way.kind == "combined":
            continue
        patched = fit.apply_patch(ZERO1, way.config_patch)
        hw = A100
        if "nodes" in way.context_patch:
            hw = memory.Hardware(way.context_patch["gpus_per_node"], way.context_patch["nodes"],
                                 A100.gpu_memory_bytes, A100.cpu_ram_per_node_bytes)
        trial = memory.Shape(patched["train_micro_batch_size_per_gpu"], 4096,
                             recompute=way.context_patch.get("recompute", "none"))
        assert memory.estimate(patched, llama8b, hw, trial).gpu_bytes == way.gpu_bytes, way.title
    # fitting ways first, and among them the cheapest in speed first
    fits = [w.fits for w in ways]
    assert fits == sorted(fits, reverse=True)
    fitting = [fit.KINDS.index(w.kind) for w in ways if w.fits]
    assert fitting and fitting == sorted(fitting)


def test_smaller_micro_batch_keeps_the_global_batch(llama8b):
    shape = memory.Shape(micro_batch=4, seq_len=4096)
    way = next(w for w in fit.ways_to_fit(ZERO1, llama8b, A100, shape) if w.kind == "micro_batch")
    micro = way.config_patch["train_micro_batch_size_per_gpu"]
    accum = way.config_patch["gradient_accumulation_steps"]
    assert micro < 4 and micro * accum == 4 * 4
    assert isinstance(micro, int) and isinstance(accum, int)


def test_70b_on_one_node_needs_everything_and_more_gpus(llama70b):
    ways = fit.ways_to_fit(ZERO1, llama70b, A100, memory.Shape(4))
    best = ways[0]
    assert best.kind == "combined" and best.fits
    assert best.config_patch["zero_optimization"]["stage"] == 3
    assert best.context_patch["nodes"] * best.context_patch["gpus_per_node"] > 8
    assert all(not w.fits for w in ways[1:])
    assert all(w.short for w in ways[1:])


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


def test_cli_fit_lists_the_ways_and_exits_1(tmp_path, capsys):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(ZERO1))
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "A100 80GB", "--gpus", "8")
    assert code == 1
    assert "DOES NOT FIT" in text and "Ways to make it fit" in text and "config patch:" in text
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "NVIDIA A100 80GB",
                      "--gpus", "8", "--format", "json")
    assert code == 0 and json.loads(text)["fits"] is True and json.loads(text)["ways"] == []


def test_cli_fit_bad_input_is_a_message(tmp_path, capsys):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({**ZERO1, "train_micro_batch_size_per_gpu": "auto"}))
    code, _ = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "A100")
    assert code == 2 and "matches" in capsys.readouterr().err
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu-memory", "80")
    assert code in (0, 1) and '(micro batch 8 assumed: "auto" is filled by the HF Trainer' in text
    assert 'sdpa attention, no recomputation' in text.splitlines()[0]  # what the figure assumed, said


def test_cli_fit_refuses_batch_keys_deepspeed_refuses_on_that_gpu_count(tmp_path, capsys):
    """train_batch_size 8 on 16 GPUs is a micro batch of 0, which DeepSpeed refuses: fit said 'fits' with a micro
    batch of 1 'assumed: the config says null'."""
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": 2}}))
    code, _ = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "H100", "--gpus", "16")
    err = capsys.readouterr().err
    assert code == 2 and "do not work on 16 GPUs (the micro batch per GPU is 0" in err and "--micro-batch" in err
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "H100", "--gpus", "8")
    assert code == 0 and "micro batch 1, " in text and "(assumed" not in text
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "H100", "--gpus", "16",
                      "--micro-batch", "2")
    assert code == 0 and "micro batch 2" in text


@pytest.mark.parametrize(("text", "name"), [
    ("NVIDIA H100 80GB", "NVIDIA H100 80GB"), ("nvidia  h100 80gb", "NVIDIA H100 80GB"), ("h100", "NVIDIA H100 80GB"),
    ("A100 40", "NVIDIA A100 40GB"), ("mi300x", "AMD MI300X 192GB"), ("A100", None), ("", None), ("TPU", None)])
def test_catalog_gpu_takes_the_name_in_any_case_or_a_part_only_one_gpu_has(text, name):
    """The one reading of ``--gpu`` that fit, plan and predict share."""
    if name is not None:
        assert catalog_gpu(text) == name
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="matches NVIDIA A100 80GB, NVIDIA A100 40GB"
                           if text == "A100" else "pick one of: NVIDIA H100 80GB"):
            catalog_gpu(text)


def test_speed_costs_are_per_gpu_and_none_for_an_unknown_gpu(llama70b, llama8b):
    ways = fit.ways_to_fit(ZERO1, llama70b, A100, memory.Shape(4))
    speeds = fit.speed_costs(ways, ZERO1, llama70b, A100, memory.Shape(4), "NVIDIA A100 80GB")
    by_kind = {w.kind: s for w, s in zip(ways, speeds, strict=True)}
    assert all(s is not None and s > 0 for s in speeds)
    assert by_kind["offload_param"] < by_kind["zero_stage"] <= 1.0  # offload is the slow way out
    assert by_kind["recompute"] < 1.0  # recomputation costs compute
    assert by_kind["combined"] < 1.0  # more GPUs are not counted as a speed-up: per GPU
    assert fit.speed_costs(ways, ZERO1, llama70b, A100, memory.Shape(4), "Custom") == [None] * len(ways)


def test_way_inputs_apply_the_context_changes(llama70b):
    best = fit.ways_to_fit(ZERO1, llama70b, A100, memory.Shape(4))[0]
    config, hardware, shape = fit.way_inputs(best, ZERO1, A100, memory.Shape(4))
    assert hardware.total_gpus == best.context_patch["nodes"] * best.context_patch["gpus_per_node"]
    assert shape.recompute == "full" and shape.micro_batch == config["train_micro_batch_size_per_gpu"] == 1
    assert memory.estimate(config, llama70b, hardware, shape).gpu_bytes == best.gpu_bytes


def test_an_auto_micro_batch_is_changed_in_the_trainer_arguments(llama8b):
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
    shape = memory.Shape(micro_batch=8, seq_len=4096)  # the Trainer's per_device_train_batch_size
    way = next(w for w in fit.ways_to_fit(config, llama8b, A100, shape, trainer_accum=2) if w.kind == "micro_batch")
    assert way.config_patch == {}  # "auto" stays: the Trainer fills it
    assert way.context_patch["hf_micro_batch"] * way.context_patch["hf_grad_accum"] == 16
    assert "per_device_train_batch_size=" in way.detail
    patched, _, trial = fit.way_inputs(way, config, A100, shape)
    assert trial.micro_batch == way.context_patch["hf_micro_batch"]
    assert memory.estimate(patched, llama8b, A100, trial).gpu_bytes == way.gpu_bytes


def test_cli_fit_states_what_it_assumed(tmp_path, capsys):
    """A stage outside 0-3 estimated as stage 0 and the assumed AdamW were said by estimate and predict, never by
    fit; --gpu-memory silently won over --gpu."""
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": 7}, "bf16": {"enabled": True}}))
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "H100")
    assert code in (0, 1) and "NVIDIA H100 80GB" in text.splitlines()[0]
    assert "note: zero_optimization.stage=7 is not 0-3; estimated as stage 0." in text
    assert "assumed AdamW" in text
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "H100", "--gpu-memory", "40",
                      "--format", "json")
    assert code in (0, 1)
    assert json.loads(text)["notes"][0] == "--gpu-memory 40 GiB is used instead of --gpu NVIDIA H100 80GB's memory"
    code, text = _run("fit", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu-memory", "40")
    assert code in (0, 1) and "40.0 GiB GPUs" in text.splitlines()[0] and "instead of --gpu" not in text


@pytest.mark.parametrize(("config", "model", "gpus"), [
    # sequence parallelism: 8 GPUs are 4 data-parallel ranks (the micro-batch way wrote accumulation 4 for 32)
    ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 2,
      "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}, "meta-llama/Llama-2-70b-hf", 8),
    # a written global batch and ways that add GPUs (they kept train_batch_size 64 on 24 GPUs)
    ({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": True},
      "zero_optimization": {"stage": 3}}, "meta-llama/Meta-Llama-3-70B", 8),
    ({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": True},
      "zero_optimization": {"stage": 1}}, "meta-llama/Meta-Llama-3-70B", 8),
    ({"train_batch_size": 48, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
      "zero_optimization": {"stage": 0}}, "meta-llama/Llama-2-70b-hf", 8),
    # train_batch_size alone: DeepSpeed divides it over the GPUs, so more GPUs keep it with a smaller micro batch
    ({"train_batch_size": 64, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}},
     "meta-llama/Llama-2-13b-hf", 8),
], ids=["sequence-parallel", "zero3-more-gpus", "zero1-more-gpus", "derived-micro", "global-batch-only"])
def test_every_way_gives_a_config_deepspeed_accepts_on_its_gpu_count(config, model, gpus):
    """Each way's patch, applied with its context (more GPUs included), passes the batch check at its world size;
    a way that keeps the global batch says so truthfully, one that cannot says the batch grows."""
    from core import validate

    spec = models.get_spec(model)
    hardware = memory.Hardware(gpus, 1, A100_BYTES, 512 * memory.GIB)
    ways = fit.ways_to_fit(config, spec, hardware, memory.Shape(8, 4096, "sdpa", "full"))
    assert ways
    for way in ways:
        world = way.context_patch.get("nodes", 1) * way.context_patch.get("gpus_per_node", gpus)
        patched = fit.apply_patch(config, way.config_patch)
        batch_errors = [f for f in validate(patched, world_size=world).errors if f.code.startswith("batch.")]
        assert not batch_errors, (way.title, patched, world, [f.message for f in batch_errors])
        if world != gpus and "train_batch_size" in config:
            kept = patched["train_batch_size"] == config["train_batch_size"]
            assert (f"train_batch_size stays {config['train_batch_size']}" in way.detail) == kept, way.detail
            assert ("grows with the GPU count" in way.detail) != kept, way.detail


def test_no_nvme_given_means_none_as_in_the_app(tmp_path, capsys):
    """fit said "fits" beside "NVMe 169.7 GiB of 0 GiB" (no --nvme was unlimited) and refused --nvme 0, while the
    app (NVMe 0 GiB on Start) said it does not fit."""
    from core.presets import BUILTIN_DIR, load_preset

    path = tmp_path / "nvme.json"
    path.write_text(json.dumps(load_preset("zero-infinity-nvme", [BUILTIN_DIR]).config))
    # on a B200: its GPU peak (79.6 GiB at micro batch 4) is over an A100 80GB's 79.15, and the NVMe is the point
    argv = ["fit", str(path), "--model", "meta-llama/Llama-2-13b-hf", "--gpu", "NVIDIA B200 180GB"]
    for extra in ([], ["--nvme", "0"]):
        code = cli.main([*argv, *extra], out=io.StringIO())
        assert code == 1, extra
    assert cli.main([*argv, "--nvme", "2000"], out=io.StringIO()) == 0
    est_out = io.StringIO()
    cli.main(["estimate", "--model", "meta-llama/Llama-2-13b-hf", "--config", str(path)], out=est_out)
    assert "of unknown capacity" not in est_out.getvalue()


@pytest.mark.parametrize(("zero", "cpu_ram", "nvme", "kinds"), [
    ({"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"},
      "offload_param": {"device": "nvme", "nvme_path": "/n"}}, 512, 0, {"offload_device", "no_offload"}),
    ({"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}, 96, 0,
     {"no_offload"}),
    ({"stage": 2, "cpu_offload": True}, 64, 0, {"no_offload"}),
    # with NVMe on the nodes, a CPU-RAM-short job may swap to it instead (ZeRO-Infinity: stage 3)
    ({"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}, 96, 2000,
     {"offload_device", "no_offload"}),
    ({"stage": 2, "cpu_offload": True}, 96, 2000, {"offload_device", "no_offload"}),
], ids=["nvme-short", "cpu-ram-short", "legacy-cpu-offload-short", "cpu-ram-short-with-nvme",
        "legacy-cpu-offload-short-with-nvme"])
def test_a_job_short_of_host_memory_is_offered_less_offload(zero, cpu_ram, nvme, kinds):
    """fit only ever added offload: an NVMe-short job got three ways still short of NVMe (one at 0.46x the
    speed), a CPU-RAM-short one "twice the GPUs", though CPU RAM instead of NVMe, or no offload, fit on the
    GPUs it had. Each new way, applied, fits as it says and is a config DeepSpeed accepts."""
    from tests.oracle.oracle import deepspeed_verdict

    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": zero}
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    hardware = memory.Hardware(8, 1, A100_BYTES, cpu_ram * memory.GIB, nvme * memory.GIB)
    shape = memory.Shape(4, 1024)
    assert not memory.estimate(config, spec, hardware, shape).fits
    ways = fit.ways_to_fit(config, spec, hardware, shape)
    offered = {w.kind for w in ways if w.kind in ("offload_device", "no_offload")}
    assert offered == kinds
    assert ways[0].fits and ways[0].kind in kinds  # the cheapest fitting way comes first
    for way in (w for w in ways if w.kind in kinds):
        patched = fit.apply_patch(config, way.config_patch)
        assert memory.estimate(patched, spec, hardware, shape).fits == way.fits
        assert deepspeed_verdict(patched, world_size=8).accepted, (way.title, patched)
        if way.title.startswith("Offload to NVMe"):
            assert way.fits and "/local_nvme" in way.detail
            meaning = effective(patched)
            assert meaning.stage == 3 and "nvme" in (meaning.offload_optimizer, meaning.offload_param)
            assert not [f for f in validate(patched, world_size=8).findings if f.severity in ("error", "warning")]


@pytest.mark.deepspeed
@pytest.mark.parametrize("zero", [
    {"stage": 2, "cpu_offload": False},
    {"stage": 3, "cpu_offload": False, "cpu_offload_param": False},
    {"stage": 2, "cpu_offload": True, "cpu_offload_use_pin_memory": True},
    {"stage": 3, "cpu_offload": True},
], ids=["z2-cpu-offload-false", "z3-both-false", "z2-cpu-offload-true", "z3-cpu-offload-true"])
def test_ways_that_write_offload_sections_rewrite_the_deprecated_offload_keys(zero):
    """DeepSpeed refuses `cpu_offload` / `cpu_offload_param` beside an offload section ("Cannot provide deprecated
    parameter ... together"): the offload ways kept them, so Apply turned a config DeepSpeed accepts into one it
    refuses. Every way's result is judged by DeepSpeed's own parser, and what the deprecated keys meant stays."""
    pytest.importorskip("deepspeed")
    from tests.oracle.ds0195_worker import evaluate

    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": zero}
    assert evaluate(config, 4)["accepted"]
    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    written = [way for hardware in (memory.Hardware(4, 1, 40 * memory.GIB, 512 * memory.GIB),
                                    memory.Hardware(4, 1, 24 * memory.GIB, 64 * memory.GIB),
                                    memory.Hardware(4, 1, 24 * memory.GIB, 16 * memory.GIB))
               for way in fit.ways_to_fit(config, spec, hardware, memory.Shape(1, 2048))
               if "offload" in json.dumps(way.config_patch)]
    assert written
    for way in written:
        patched = fit.apply_patch(config, way.config_patch)
        verdict = evaluate(json.loads(json.dumps(patched)), 4)
        assert verdict["accepted"], (way.title, patched, verdict["message"])
        before, after = effective(config), effective(patched)
        if way.kind == "offload_param":  # the optimizer's offload is kept as the deprecated key said
            assert after.offload_optimizer == (before.offload_optimizer if before.offload_optimizer != "none"
                                               else "cpu"), (way.title, patched)


# ---- ways that the real job would refuse or that say the wrong thing (QA pass, 28 Nov)

def _errors(config, gpus):
    from core.validate import validate

    return [f.code for f in validate(config, world_size=gpus).findings if f.severity == "error"]


def test_ways_that_turn_zero_on_for_an_untested_optimizer_allow_it():
    config = {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
              "optimizer": {"type": "SGD", "params": {"lr": 0.01, "momentum": 0.9}}}
    hardware = memory.Hardware(8, 1, A100_BYTES, 512 * memory.GIB)
    shape = memory.Shape(4, 2048)
    ways = fit.ways_to_fit(config, models.get_spec("meta-llama/Llama-2-7b-hf"), hardware, shape)
    zero_ways = [w for w in ways if effective(fit.apply_patch(config, w.config_patch)).stage > 0]
    assert zero_ways
    for way in zero_ways:  # deepspeed.initialize refuses SGD under ZeRO without the flag (the validator's rule)
        patched, after, _ = fit.way_inputs(way, config, hardware, shape)
        assert way.config_patch["zero_allow_untested_optimizer"] is True, way.title
        assert "optimizer.untested-with-zero" not in _errors(patched, after.total_gpus), way.title
        assert "zero_allow_untested_optimizer" in way.detail
    for way in ways:
        if way not in zero_ways:
            assert "zero_allow_untested_optimizer" not in way.config_patch
    adamw = {**config, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    assert all("zero_allow_untested_optimizer" not in w.config_patch for w in fit.ways_to_fit(
        adamw, models.get_spec("meta-llama/Llama-2-7b-hf"), hardware, shape))


def test_a_written_micro_batch_with_auto_accumulation_keeps_the_trainers_global_batch():
    from core.autofill import HF_DEFAULTS, resolve_auto

    config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
              "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}
    hardware = memory.Hardware(8, 1, A100_BYTES, 1024 * memory.GIB)
    way = next(w for w in fit.ways_to_fit(config, models.get_spec("meta-llama/Llama-2-13b-hf"), hardware,
                                          memory.Shape(8, 4096), trainer_accum=4) if w.kind == "micro_batch")
    micro, accum = way.config_patch["train_micro_batch_size_per_gpu"], way.context_patch["hf_grad_accum"]
    assert "gradient_accumulation_steps" not in way.config_patch  # the "auto" stays: the Trainer fills it
    assert micro * accum == 8 * 4 and "stays 256" in way.detail
    filled = resolve_auto(fit.apply_patch(config, way.config_patch), **{
        **HF_DEFAULTS, "world_size": 8, "per_device_train_batch_size": micro, "gradient_accumulation_steps": accum})
    assert filled["train_batch_size"] == 256


def test_zero3_on_the_same_gpus_is_offered_when_the_next_stage_is_not_it():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    hardware = memory.Hardware(8, 1, A100_BYTES, 256 * memory.GIB)
    shape = memory.Shape(1, 2048, recompute="full")
    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    assert fit.short_of(memory.estimate(config, spec, hardware, shape)) == ("CPU RAM",)
    ways = fit.ways_to_fit(config, spec, hardware, shape)
    stages = [w for w in ways if w.kind == "zero_stage"]
    assert [w.config_patch["zero_optimization"]["stage"] for w in stages if w.fits] == [3]
    assert ways[0].kind == "zero_stage" and ways[0].fits  # ranked before adding or dropping GPUs


def test_a_way_that_takes_gpus_away_says_the_global_batch_shrinks():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    hardware = memory.Hardware(8, 1, A100_BYTES, 256 * memory.GIB)
    shape = memory.Shape(1, 2048, recompute="full")
    ways = [w for w in fit.ways_to_fit(config, models.get_spec("meta-llama/Llama-2-13b-hf"), hardware, shape)
            if w.kind == "gpus" and w.context_patch["nodes"] * w.context_patch["gpus_per_node"] < 8]
    assert ways
    for way in ways:
        assert "shrinks" in way.detail and "grows" not in way.detail, way.detail


def test_combined_adds_gpus_to_the_cheapest_rungs_that_need_the_fewest(llama70b):
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 1}}
    way = next(w for w in fit.ways_to_fit(config, llama70b, A100, memory.Shape(4, 2048)) if w.kind == "combined")
    gpus = way.context_patch["nodes"] * way.context_patch["gpus_per_node"]
    zero = way.config_patch["zero_optimization"]
    assert "offload_optimizer" not in zero and "offload_param" not in zero, way.title  # offloads needed more GPUs
    assert gpus == 16 and way.fits
    assert "The global batch grows with the GPU count (64 → 128)." in way.detail


def test_zero_options_drop_every_deprecated_offload_key():
    cfg = memory.with_zero_option({"zero_optimization": {"stage": 2, "cpu_offload": True, "cpu_offload_param": True,
                                                         "cpu_offload_use_pin_memory": True}}, 3, "cpu", "cpu")
    assert set(cfg["zero_optimization"]) == {"stage", "offload_optimizer", "offload_param"}


def test_more_gpus_way_leaves_gpus_idle_when_a_nodes_cpu_ram_holds_fewer_ranks():
    """Everything offloaded to 140 GiB nodes: one node of 8 ranks runs out of CPU RAM, and so do two whole
    nodes; two nodes with 4 ranks each fit. The GPU-count way proposes that (it proposed 3 whole nodes, 24 GPUs),
    says why GPUs stay idle, and its numbers are the estimate of that layout."""
    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                    "offload_param": {"device": "cpu"}}}
    hardware = memory.Hardware(8, 1, 24 * memory.GIB, 140 * memory.GIB)
    shape = memory.Shape(1, 2048, "flash", "full")
    way = next(w for w in fit.ways_to_fit(config, spec, hardware, shape) if w.kind == "gpus")
    assert (way.context_patch["nodes"], way.context_patch["gpus_per_node"]) == (2, 4)
    assert "8 GPUs (2 nodes × 4)" in way.title and "4 of each node's 8 GPUs" in way.detail
    assert way.fits
    layout = memory.Hardware(4, 2, hardware.gpu_memory_bytes, hardware.cpu_ram_per_node_bytes)
    assert way.gpu_bytes == memory.estimate(config, spec, layout, shape).gpu_bytes


def test_of_two_zero_stages_that_fit_the_lower_and_faster_ranks_first():
    """Llama-3-8B from ZeRO-1 on 48 GiB GPUs: ZeRO-2 and ZeRO-3 both fit; ZeRO-3 (fewer GPU bytes, parameters
    gathered layer by layer) ranked first although the product's own speed costs put it slower."""
    spec = models.get_spec("meta-llama/Meta-Llama-3-8B")
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}}, "zero_optimization": {"stage": 1}}
    hardware = memory.Hardware(8, 1, 48 * memory.GIB, 512 * memory.GIB)
    shape = memory.Shape(1, 2048)
    ways = fit.ways_to_fit(config, spec, hardware, shape)
    titles = [w.title for w in ways]
    z2, z3 = titles.index("ZeRO stage 2"), titles.index("ZeRO stage 3")
    assert ways[z2].fits and ways[z3].fits and z2 < z3
    speeds = fit.speed_costs(ways, config, spec, hardware, shape, "NVIDIA A100 80GB")
    assert speeds[z2] > speeds[z3]


def test_the_combined_way_titles_the_accumulation_its_patch_sets():
    """Llama-2-70B from ZeRO-1 on one node: the combined way ends on 16 GPUs and re-derives the accumulation for
    them (8), but its title kept the micro-batch rung's 16."""
    spec = models.get_spec("meta-llama/Llama-2-70b-hf")
    config = {"train_batch_size": 128, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
              "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}},
              "zero_optimization": {"stage": 1}}
    way = next(w for w in fit.ways_to_fit(config, spec, memory.Hardware(8, 1, A100_BYTES, 512 * memory.GIB),
                                          memory.Shape(4)) if w.kind == "combined")
    patch = way.config_patch
    assert (f"Micro batch {patch['train_micro_batch_size_per_gpu']} with {patch['gradient_accumulation_steps']} "
            "accumulation steps") in way.title
    gpus = way.context_patch["nodes"] * way.context_patch["gpus_per_node"]
    assert patch["train_micro_batch_size_per_gpu"] * patch["gradient_accumulation_steps"] * gpus == 128


def test_cli_fit_takes_the_trainers_accumulation_for_an_auto_one_and_says_when_it_assumed_it(tmp_path):
    """With gradient_accumulation_steps "auto", dsconfig fit had no way to be told the Trainer's accumulation and
    silently took 1: following its advice with a Trainer at 4 shrank the global batch from 256 to 64."""
    path = tmp_path / "hf.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                "train_batch_size": "auto", "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 2}}))
    argv = ["fit", str(path), "--model", "meta-llama/Meta-Llama-3-8B", "--gpus", "8", "--micro-batch", "8",
            "--seq-len", "4096", "--format", "json"]
    out = io.StringIO()
    cli.main(argv, out=out)
    assumed = json.loads(out.getvalue())
    assert any("taken as 1" in note for note in assumed["notes"])
    out = io.StringIO()
    cli.main([*argv, "--gradient-accumulation-steps", "4"], out=out)
    told = json.loads(out.getvalue())
    assert not any("taken as 1" in note for note in told["notes"])
    way = next(w for w in told["ways"] if w["kind"] == "micro_batch")
    assert "gradient accumulation 4 → 32: the global batch stays 256" in way["detail"]


def test_the_combined_way_uses_nvme_when_cpu_ram_is_what_is_short():
    """Llama-3-70B with the legacy cpu_offload on 2 nodes whose 256 GiB of CPU RAM is short but which have NVMe: the
    combined way could only add nodes (20 GPUs, global batch 64 -> 80), although a smaller micro batch with NVMe
    in place of CPU RAM fits the 16 GPUs as they are."""
    from tests.oracle.oracle import deepspeed_verdict

    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
              "sequence_parallel_size": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
              "zero_optimization": {"stage": 3, "cpu_offload": True}}
    spec = models.get_spec("meta-llama/Meta-Llama-3-70B")
    hardware = memory.Hardware(8, 2, A100_BYTES, 256 * memory.GIB, 4000 * memory.GIB)
    ways = fit.ways_to_fit(config, spec, hardware, memory.Shape(4, 2048))
    combined = next(w for w in ways if w.kind == "combined")
    assert combined.fits and "NVMe" in combined.title
    assert "nodes" not in combined.context_patch and "train_batch_size" not in combined.config_patch
    patched = fit.apply_patch(config, combined.config_patch)
    assert deepspeed_verdict(patched, world_size=16).accepted
    assert not [f for f in validate(patched, world_size=16).findings if f.severity == "error"]


def test_the_combined_way_drops_the_rungs_its_last_one_made_unneeded():
    """The same job: the ladder climbed micro batch 1, recomputation and parameter offload before NVMe fitted, and the
    way asked for all four, though NVMe with the smaller micro batch fits: recomputation (a third more compute) and
    parameter offload (PCIe traffic every pass) were dead weight. Each rung it keeps is needed."""
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
              "sequence_parallel_size": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
              "zero_optimization": {"stage": 3, "cpu_offload": True}}
    spec = models.get_spec("meta-llama/Meta-Llama-3-70B")
    hardware = memory.Hardware(8, 2, A100_BYTES, 256 * memory.GIB, 4000 * memory.GIB)
    shape = memory.Shape(4, 2048)
    ways = {w.kind: w for w in fit.ways_to_fit(config, spec, hardware, shape)}
    combined = ways["combined"]
    assert combined.fits
    assert combined.title == "Together: Micro batch 1 with 8 accumulation steps, offload to NVMe instead of CPU RAM"
    assert "recompute" not in combined.context_patch
    assert "offload_param" not in combined.config_patch["zero_optimization"]
    assert not ways["micro_batch"].fits and not ways["offload_device"].fits  # neither alone


def test_a_job_short_only_of_cpu_ram_is_not_offered_more_offload(llama8b, tmp_path):
    """Short of CPU RAM alone (nothing offloaded, GPU half empty), every way offered added offload, the first one
    with five times the CPU RAM of now (non-fitting ways were ranked by their GPU memory). A way that fits nothing
    is now offered only when it gets closer, nearest first; when none does, the page and the CLI say what would."""
    config = {**ZERO1, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}
    shape = memory.Shape(1, 2048)
    tiny_ram = memory.Hardware(8, 1, A100_BYTES, 2 * memory.GIB)
    now = memory.estimate(config, llama8b, tiny_ram, shape)
    assert fit.short_of(now) == ("CPU RAM",)
    assert fit.ways_to_fit(config, llama8b, tiny_ram, shape) == []
    assert fit.nothing_helps(fit.short_of(now)).endswith("more CPU RAM per node (a node's ranks share it) would.")
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    code, text = _run("fit", str(path), "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "A100 80GB", "--gpus", "8",
                      "--cpu-ram", "2")
    assert code == 1 and "gets it closer; more CPU RAM per node" in text
    # a little short: every way offered is nearer than now on what is short, and the nearest comes first
    some_ram = memory.Hardware(8, 1, A100_BYTES, now.cpu_bytes_per_node * 3 // 4)
    ways = fit.ways_to_fit(config, llama8b, some_ram, shape)
    assert ways and all(w.fits or w.cpu_bytes_per_node < now.cpu_bytes_per_node for w in ways)
    assert all(w.kind != "offload_optimizer" for w in ways)


def test_the_combined_ways_batch_sentence_compares_with_the_users_config():
    """It said "gradient accumulation 8 → 12" (8 from its own micro-batch rung; the config has 1) and capitalised
    the key ("Train_batch_size")."""
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    config = {"train_batch_size": 24, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 0}, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    hardware = memory.Hardware(gpus_per_node=3, nodes=1, gpu_memory_bytes=24 * memory.GIB,
                               cpu_ram_per_node_bytes=64 * memory.GIB)
    combined = next(w for w in fit.ways_to_fit(config, spec, hardware, memory.Shape(8, 2048)) if w.kind == "combined")
    patched = fit.apply_patch(config, combined.config_patch)
    micro, accum = patched["train_micro_batch_size_per_gpu"], patched["gradient_accumulation_steps"]
    assert combined.context_patch["nodes"] * combined.context_patch["gpus_per_node"] != 3  # the GPU count changed
    assert combined.detail.endswith(
        f"train_batch_size stays 24: micro batch 8 → {micro}, gradient accumulation 1 → {accum}.")
    assert micro * accum * combined.context_patch["nodes"] * combined.context_patch["gpus_per_node"] == 24


def test_a_ways_speed_counts_the_trainers_accumulation():
    """With "auto" batch keys and --gradient-accumulation-steps 4, micro batch 4 -> 1 (16 steps) was priced as
    micro 4 x 1 step against micro 1 x 1 (0.85x) instead of 4 x 4 against 1 x 16 (0.93x, what predict says)."""
    from core import perf
    from core.autofill import trainer_batch

    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    hardware, shape = memory.Hardware(8, 1, A100_BYTES), memory.Shape(4)
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
    ways = fit.ways_to_fit(config, spec, hardware, shape, trainer_accum=4)
    way = next(w for w in ways if w.context_patch.get("hf_grad_accum") == 16)
    speed = fit.speed_costs(ways, config, spec, hardware, shape, "NVIDIA A100 80GB", 4)[ways.index(way)]
    cluster = perf.Cluster("NVIDIA A100 80GB", 8)
    now, after = (perf.predict(trainer_batch(config, micro, accum, 8), spec, cluster, memory.Shape(micro))
                  for micro, accum in ((4, 4), (1, 16)))
    assert speed == pytest.approx(after.tokens_per_second / now.tokens_per_second)


def test_fit_json_says_what_the_text_says_it_assumed(tmp_path, capsys):
    """The text names the GPU, the cluster, the capacities and why the micro batch is 8; the JSON had none."""
    path = tmp_path / "hf.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
                                "gradient_accumulation_steps": "auto", "fp16": {"enabled": "auto"},
                                "zero_optimization": {"stage": 2}}))
    cli.main(["fit", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (report["gpu"], report["gpus"], report["nodes"], report["gpus_per_node"]) == ("NVIDIA A100 80GB", 8, 1, 8)
    assert report["gpu_memory_bytes"] == A100_BYTES and report["cpu_ram_per_node_bytes"] > 0
    assert report["micro_batch"] == 8 and report["micro_batch_assumed"].startswith("micro batch 8 assumed")
    assert report["assumptions"].endswith("no recomputation")


def test_fit_and_estimate_say_a_sequence_the_model_cannot_run(tmp_path):
    """GPT-2 at 2048 tokens (1024 learned positions): fit and estimate said "fits" without a word, where predict
    and the app say the model cannot run it."""
    path = tmp_path / "ds.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 2}')
    gpt2 = ("--model", "openai-community/gpt2", "--seq-len", "2048")
    for argv in (("fit", str(path), *gpt2, "--gpu", "NVIDIA A100 80GB"), ("estimate", *gpt2, "--config", str(path))):
        _code, text = _run(*argv)
        assert "beyond the model's 1024 learned positions" in text and "sized as if it could" in text, argv
    _code, text = _run("fit", str(path), "--model", "openai-community/gpt2", "--gpu", "NVIDIA A100 80GB",
                       "--seq-len", "1024")
    assert "learned positions" not in text


def test_more_gpus_keep_a_global_batch_written_alone_with_the_micro_batch_deepspeed_derives():
    """train_batch_size 64 alone on 8 GPUs runs micro batch 8; the "16 GPUs" way wrote micro batch 8 and
    train_batch_size 128 (the global batch doubled, "64 does not divide over 16 ranks with micro batch 8") and was
    sized at micro batch 8, so the smallest cluster "that fits as configured" did not fit. On 16 GPUs DeepSpeed
    divides 64 into micro batches of 4 itself: nothing to write, and the way is sized (and found) with that."""
    from core.batch import batch_run

    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    config = {"train_batch_size": 64, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    hardware = memory.Hardware(8, 1, A100_BYTES, 512 * memory.GIB)
    ways = fit.ways_to_fit(config, spec, hardware, memory.Shape(8, 4096, "sdpa", "full"))
    way = next(w for w in ways if w.kind == "gpus" and "stage" not in json.dumps(w.config_patch))
    gpus = way.context_patch["nodes"] * way.context_patch["gpus_per_node"]
    assert gpus == 16 and way.fits and way.config_patch == {}
    assert "train_batch_size stays 64: micro batch 8 → 4 (DeepSpeed derives it on 16 GPUs)." in way.detail
    assert batch_run(fit.apply_patch(config, way.config_patch), gpus, "0.19.8") == (64, 4, 1)
    _, hw, shape = fit.way_inputs(way, config, hardware, memory.Shape(8, 4096, "sdpa", "full"), "0.19.8")
    assert shape.micro_batch == 4 and memory.estimate(config, spec, hw, shape).fits


def test_ways_that_fit_only_on_more_gpus_still_get_the_combined_way_ranked_by_gpu_count():
    """Llama-2-70B, ZeRO-1, train_batch_size 128 on one node of 8: ZeRO-3 alone fits once 128 GPUs run micro
    batches of 1, which kept the combined way (micro batch 1, recomputation, ZeRO-3 on 16 GPUs) from being
    offered at all; it is offered, and ranked first, needing 8x fewer GPUs."""
    spec = models.get_spec("meta-llama/Llama-2-70b-hf")
    config = {"train_batch_size": 128, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    ways = fit.ways_to_fit(config, spec, memory.Hardware(8, 1, A100_BYTES, 512 * memory.GIB), memory.Shape(4))
    fitting = [w for w in ways if w.fits]
    assert [w.kind for w in fitting] == ["combined", "gpus"]
    counts = [w.context_patch["nodes"] * w.context_patch["gpus_per_node"] for w in fitting]
    assert counts == sorted(counts) and counts[0] < counts[1]
    for way, gpus in zip(fitting, counts, strict=True):
        patched = fit.apply_patch(config, way.config_patch)
        assert patched["train_batch_size"] == 128
        assert patched["train_micro_batch_size_per_gpu"] * patched["gradient_accumulation_steps"] * gpus == 128


def test_a_way_to_zero3_sets_what_the_changed_job_needs_instead_of_being_dropped(llama8b):
    """Muon at ZeRO-3 needs reduce_scatter false (engine.muon-reduce-scatter, whose fix sets it): the ZeRO-3 ways were
    dropped as refused; they are offered with the setting, said in their detail, and the changed config validates."""
    muon = {**ZERO1, "optimizer": {"type": "Muon", "params": {"lr": 0.02}}}
    assert not validate(muon, world_size=8).errors
    ways = fit.ways_to_fit(muon, llama8b, A100, memory.Shape(4, 4096))
    zero3 = [w for w in ways if w.config_patch.get("zero_optimization", {}).get("stage") == 3]
    assert zero3, [w.title for w in ways]
    for way in zero3:
        assert way.config_patch["zero_optimization"]["reduce_scatter"] is False
        assert "also sets zero_optimization.reduce_scatter to false" in way.detail
        assert "engine.muon-reduce-scatter" in way.detail
        assert not validate(fit.apply_patch(muon, way.config_patch), world_size=8).errors
    # AdamW needs no such setting: its ZeRO-3 way leaves reduce_scatter alone
    plain = next(w for w in fit.ways_to_fit(ZERO1, llama8b, A100, memory.Shape(4, 4096)) if w.kind == "zero_stage"
                 and w.config_patch["zero_optimization"]["stage"] == 3)
    assert "reduce_scatter" not in plain.config_patch["zero_optimization"] and "also sets" not in plain.detail
