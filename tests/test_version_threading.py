"""The chosen DeepSpeed release reaches every reading of the user's config: the memory model's defaults, the
planner (``core.perf.predict``), the ways to fit (``core.fit``), the sizing commands (``--deepspeed-version``) and
the app's ZeRO page (the session's release)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from app_support import app

from core import fit, memory, perf
from core.cli import main
from core.memory.settings import TrainingSettings
from core.models import get_config, get_spec
from core.versions import resolve_version

LLAMA3 = "meta-llama/Meta-Llama-3-8B"
#: bf16 master weights and optimizer states: read from 0.17.1 on, ignored (fp32 master weights) before.
MASTER_BF16 = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2},
               "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}
#: ZeRO-2 with the optimizer in CPU RAM and pin_memory left out: False before 0.19.5, True from it.
CPU_OFFLOAD = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
               "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
#: Between the two readings of MASTER_BF16 for Llama-3-8B on 8 GPUs (46.7 GiB as 0.16.9 reads it, 40.8 as 0.19.8).
TIGHT_GPU = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=44 * memory.GIB,
                            cpu_ram_per_node_bytes=512 * memory.GIB)
SHAPE = memory.Shape(1, 2048)


@pytest.fixture(scope="module")
def llama3():
    return get_spec(LLAMA3)


def test_offload_pin_memory_left_out_is_the_chosen_releases_default(llama3):
    """The memory model took every ZeRO/offload default from the schema (the newest release): a CPU offload without
    pin_memory was sized as pinned host memory for 0.19.4 too, whose pydantic default is pin_memory=False."""
    hw = memory.Hardware(gpus_per_node=8)
    old = memory.estimate(CPU_OFFLOAD, llama3, hw, SHAPE, version="0.19.4")
    new = memory.estimate(CPU_OFFLOAD, llama3, hw, SHAPE, version="0.19.8")
    assert old.cpu_bytes_per_node == new.cpu_bytes_per_node > 0
    assert old.cpu_pinned_bytes_per_node == 0 < new.cpu_pinned_bytes_per_node
    assert not any(c.pinned for c in old.components) and any(c.pinned for c in new.components)
    written = {**CPU_OFFLOAD, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                                                       "pin_memory": True}}}
    assert memory.estimate(written, llama3, hw, SHAPE, version="0.19.4").cpu_pinned_bytes_per_node == \
        new.cpu_pinned_bytes_per_node
    stage3 = {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
    assert not TrainingSettings.from_ds_config(stage3, "0.19.4").offload_param_pin_memory
    assert TrainingSettings.from_ds_config(stage3, "0.19.5").offload_param_pin_memory
    assert TrainingSettings.from_ds_config(stage3).offload_param_pin_memory  # the newest by default


def test_every_zero_and_offload_default_the_reader_fills_is_the_releases(monkeypatch):
    """Each size and flag the reader fills in for a left-out key asks the release's record, not only pin_memory:
    a release recording other defaults gets them (the schema's only where nothing is recorded)."""
    from core import versions
    from core.memory.settings import _release_default

    zero, opt, param = "zero_optimization", "zero_optimization.offload_optimizer", "zero_optimization.offload_param"
    recorded = {(zero, "reduce_bucket_size"): 11, (zero, "allgather_bucket_size"): 12,
                (zero, "stage3_prefetch_bucket_size"): 13, (zero, "stage3_param_persistence_threshold"): 14,
                (zero, "stage3_max_live_parameters"): 15, (zero, "sub_group_size"): 16,
                (zero, "zero_hpz_partition_size"): 17, (param, "buffer_count"): 18, (param, "buffer_size"): 19,
                (opt, "buffer_count"): 20, (opt, "pin_memory"): False, (param, "pin_memory"): False}
    real = versions.recorded_default

    def fake(version: str, prefix: str, key: str) -> tuple[bool, object]:
        if version == "0.19.8" and (prefix, key) in recorded:
            return True, recorded[prefix, key]
        return real(version, prefix, key)

    _release_default.cache_clear()
    try:
        with monkeypatch.context() as patched:
            patched.setattr(versions, "recorded_default", fake)
            read = TrainingSettings.from_ds_config({"zero_optimization": {"stage": 3, "offload_optimizer": {
                "device": "cpu"}, "offload_param": {"device": "cpu"}}}, "0.19.8")
    finally:
        _release_default.cache_clear()  # the faked records must not outlive the test
    assert (read.reduce_bucket_size, read.allgather_bucket_size, read.prefetch_bucket_size,
            read.param_persistence_threshold, read.max_live_parameters, read.sub_group_size,
            read.hpz_partition_size, read.offload_param_buffer_count, read.offload_param_buffer_size,
            read.offload_optimizer_buffer_count) == (11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
    assert not read.offload_optimizer_pin_memory and not read.offload_param_pin_memory
    assert TrainingSettings.from_ds_config({}).reduce_bucket_size == TrainingSettings.reduce_bucket_size


def test_predict_reads_the_config_as_the_chosen_release(llama3):
    """predict read every config as the newest release: 0.16.9's fp32 master weights were costed as bf16 in the
    CPU optimizer step, and 0.19.4's unpinned offload (its default) got no pin_memory note."""
    cluster = perf.Cluster("NVIDIA H100 80GB", 8, 1)
    config = {**MASTER_BF16, "zero_optimization": CPU_OFFLOAD["zero_optimization"]}
    old = perf.predict(config, llama3, cluster, SHAPE, version="0.16.9")
    new = perf.predict(config, llama3, cluster, SHAPE)
    assert old.assumptions["optimizer_step_bytes_per_param"] > new.assumptions["optimizer_step_bytes_per_param"]
    assert old.step_seconds > new.step_seconds
    unpinned = ("offload_optimizer.pin_memory is off: gradient copies to the host run at about half the PCIe rate "
                "(not modelled).")
    assert unpinned in perf.predict(CPU_OFFLOAD, llama3, cluster, SHAPE, version="0.19.4").notes
    assert unpinned not in perf.predict(CPU_OFFLOAD, llama3, cluster, SHAPE, version="0.19.8").notes


def test_the_pin_memory_note_looks_only_at_the_optimizer_offload(llama3):
    """The note asked both offload sections' pin_memory even when one offloads nothing: on 0.19.4 (unpinned by
    default) a ZeRO-2 optimizer offload written pinned was said to be unpinned, for the parameter section it lacks.
    Only the optimizer's pin_memory changes what is copied through unpinned memory."""
    cluster = perf.Cluster("NVIDIA H100 80GB", 8, 1)
    pinned = {**CPU_OFFLOAD, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                                                      "pin_memory": True}}}
    assert not [n for n in perf.predict(pinned, llama3, cluster, SHAPE, version="0.19.4").notes if "pin_memory" in n]
    params_only = {**CPU_OFFLOAD, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
    # ZeRO-3 pins the offloaded parameter partition whatever offload_param.pin_memory says (tests/test_memory_pinned.py)
    assert not [n for n in perf.predict(params_only, llama3, cluster, SHAPE, version="0.19.4").notes
                if "pin_memory" in n]
    both = {**CPU_OFFLOAD, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
                                                 "offload_optimizer": {"device": "cpu"}}}
    assert [n for n in perf.predict(both, llama3, cluster, SHAPE, version="0.19.4").notes
            if "offload_optimizer.pin_memory is off" in n]


def _zero_page(config: dict, version: str, **context):
    spec = get_spec(LLAMA3)
    model = {"model": LLAMA3, "model_config": get_config(LLAMA3), "total_params": spec.total_params,
             "largest_layer_params": spec.largest_layer_params}
    return app(config, page="pages/zero.py", **model, version=version, gpu="NVIDIA H100 80GB", gpus_per_node=8,
               nodes=1, seq_len=2048, **context)


def test_the_zero_pages_step_prediction_reads_the_sessions_release():
    """The ZeRO page's predicted step read the config as the newest release: a CPU offload without pin_memory on
    0.19.4 (unpinned there) got no pin_memory note."""
    unpinned = "pin_memory is off"
    at = _zero_page(CPU_OFFLOAD, "0.19.4")
    assert any(unpinned in c.value for c in at.caption)
    at = _zero_page(CPU_OFFLOAD, "0.19.8")
    assert not any(unpinned in c.value for c in at.caption)



def test_ways_to_fit_read_the_config_as_the_chosen_release(llama3):
    """ways_to_fit read every config as the newest release: for 0.16.9, which sizes fp32 master weights, a job
    the app and fit call out of memory got no way out ("already fits" as 0.19.8 reads it)."""
    assert memory.estimate(MASTER_BF16, llama3, TIGHT_GPU, SHAPE).fits
    assert fit.ways_to_fit(MASTER_BF16, llama3, TIGHT_GPU, SHAPE) == []
    assert not memory.estimate(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version="0.16.9").fits
    ways = fit.ways_to_fit(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version="0.16.9")
    assert ways and ways[0].fits
    stage3 = next(w for w in ways if w.kind == "zero_stage" and w.config_patch["zero_optimization"]["stage"] == 3)
    patched = fit.apply_patch(MASTER_BF16, stage3.config_patch)
    assert stage3.gpu_bytes == memory.estimate(patched, llama3, TIGHT_GPU, SHAPE, version="0.16.9").gpu_bytes
    assert stage3.gpu_bytes > memory.estimate(patched, llama3, TIGHT_GPU, SHAPE).gpu_bytes


def test_speed_costs_predict_as_the_chosen_release(llama3):
    """speed_costs predicted each way as the newest release reads it: with CPU offload, 0.19.8 steps bf16 master
    weights and states (fewer bytes per parameter for DeepSpeedCPUAdam) that 0.16.9 keeps in fp32."""
    config = {**MASTER_BF16, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                                                      "pin_memory": True}}}
    way = fit.Way("zero_stage", "ZeRO stage 3", "", 0, 0, 0, True,
                  config_patch={"zero_optimization": {"stage": 3}})
    cluster = perf.Cluster("NVIDIA H100 80GB", 8, 1)

    def ratio(version: str) -> float:
        after = perf.predict(fit.apply_patch(config, way.config_patch), llama3, cluster, SHAPE, version=version)
        return after.tokens_per_second / perf.predict(config, llama3, cluster, SHAPE, version=version).tokens_per_second

    hw = memory.Hardware(gpus_per_node=8)
    old = fit.speed_costs([way], config, llama3, hw, SHAPE, "NVIDIA H100 80GB", version="0.16.9")
    assert old == [pytest.approx(ratio("0.16.9"), rel=1e-12)]
    assert old != fit.speed_costs([way], config, llama3, hw, SHAPE, "NVIDIA H100 80GB")


def test_the_zero_page_makes_it_fit_as_the_sessions_release_reads_the_config():
    """With 0.16.9 chosen the ZeRO page said "Does not fit" (its estimate read the release) yet listed no way out:
    ways_to_fit read the config as 0.19.8, where it fits."""
    at = _zero_page(MASTER_BF16, "0.16.9", gpu_memory_gib=44.0)
    assert any(s.value == "Make it fit" for s in at.subheader)
    applies = [b for b in at.button if b.key and b.key.startswith("zero_fit_")]
    assert applies, [i.value for i in at.info]
    assert any("Speed: about" in c.value for c in at.caption)  # speed_costs, predicted as 0.16.9 reads it
    at = _zero_page(MASTER_BF16, "0.19.8", gpu_memory_gib=44.0)
    assert not any(s.value == "Make it fit" for s in at.subheader)


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out), out.getvalue()


@pytest.fixture
def master_file(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(MASTER_BF16))
    return str(path)


@pytest.mark.parametrize("command", ["estimate", "fit", "predict"])
def test_the_sizing_commands_read_the_config_as_deepspeed_version(command, master_file):
    """estimate, fit and predict had no --deepspeed-version and read the config as the newest release: 0.16.9's
    fp32 master weights (~5.9 GiB more per GPU for Llama-3-8B) were never sized. Their JSON says the release."""
    argv = {"estimate": ["estimate", "--model", LLAMA3, "--config", master_file],
            "fit": ["fit", master_file, "--model", LLAMA3, "--gpu", "H100"],
            "predict": ["predict", master_file, "--model", LLAMA3, "--gpu", "H100"]}[command]

    def peak(data: dict) -> int:
        return {"estimate": lambda: data["totals"]["gpu_bytes"], "fit": lambda: data["gpu_bytes"],
                "predict": lambda: data["memory"]["gpu_bytes"]}[command]()

    read = {}
    for version in ("0.16.9", "0.19.8"):
        code, text = _cli([*argv, "--deepspeed-version", version, "--format", "json"])
        assert code == 0, text
        data = json.loads(text)
        assert data["deepspeed_version"] == version
        read[version] = peak(data)
        assert f"read as DeepSpeed {version}" in _cli([*argv, "--deepspeed-version", version])[1].splitlines()[
            1 if command == "estimate" else 0]
    assert read["0.16.9"] > read["0.19.8"] + 5 * memory.GIB
    data = json.loads(_cli([*argv, "--format", "json"])[1])
    assert data["deepspeed_version"] == resolve_version(None)  # the installed DeepSpeed, else the newest
    code, _ = _cli([*argv, "--deepspeed-version", "0.1.0"])
    assert code == 2


def test_fit_lists_ways_for_a_config_only_the_older_release_cannot_fit(master_file):
    """dsconfig fit on GPUs between the two readings: out of memory with ways for 0.16.9, fits for 0.19.8."""
    argv = ["fit", master_file, "--model", LLAMA3, "--gpu-memory", "44", "--format", "json"]
    old = json.loads(_cli([*argv, "--deepspeed-version", "0.16.9"])[1])
    assert not old["fits"] and old["ways"] and old["ways"][0]["fits"]
    new = json.loads(_cli([*argv, "--deepspeed-version", "0.19.8"])[1])
    assert new["fits"] and new["ways"] == []


def test_the_params_tables_refuse_deepspeed_version():
    """DeepSpeed's --params tables read no config, so no release either: the flag is refused, not ignored."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code, _ = _cli(["estimate", "--params", "7B", "--deepspeed-version", "0.16.9"])
    assert code == 2 and "--deepspeed-version does not apply here" in err.getvalue()


def test_estimate_options_list_each_option_as_deepspeed_version(master_file):
    """estimate --options sized every ZeRO option as the newest release whatever --deepspeed-version said: ZeRO-2
    of MASTER_BF16 on 44 GiB GPUs fits as 0.19.8 reads it, not as 0.16.9 does."""
    argv = ["estimate", "--model", LLAMA3, "--config", master_file, "--gpu-memory", "44", "--options",
            "--format", "json"]

    def zero2(version: str) -> dict:
        rows = json.loads(_cli([*argv, "--deepspeed-version", version])[1])["options"]
        return next(r for r in rows if (r["stage"], r["offload_optimizer"], r["offload_param"]) == (2, "none", "none"))

    assert (zero2("0.16.9")["fits"], zero2("0.19.8")["fits"]) == (False, True)


def test_predict_calibrates_as_deepspeed_version(master_file):
    """predict --calibrate-step fitted the measured step as the newest release predicts the config: with
    --deepspeed-version 0.16.9 the calibrated step missed the measured one."""
    argv = ["predict", master_file, "--model", LLAMA3, "--gpu", "H100", "--deepspeed-version", "0.16.9",
            "--format", "json"]
    uncalibrated = json.loads(_cli(argv)[1])["step_seconds"]
    data = json.loads(_cli([*argv, "--calibrate-step", str(1.5 * uncalibrated)])[1])
    assert data["calibration"]["reached"] and data["step_seconds"] == pytest.approx(1.5 * uncalibrated, rel=1e-6)
