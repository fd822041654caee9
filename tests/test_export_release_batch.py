"""The launchers' exports derive the batch DeepSpeed runs in the release the user chose (``core.batch.batch_run``):
0.16.x ignores ``sequence_parallel_size``, and up to 0.19.7 elastic training replaces the batch keys. The exports
derived it as the newest release reads the config, whatever release the app's context named."""

from __future__ import annotations

import pytest

from core.batch import batch_run
from core.launchers import (
    _batch_deepspeed_derives,
    hf_trainer_export,
    launch_snippets,
    launch_values,
    launcher_exports,
    lightning_export,
)
from tests.test_export import _trainer_accepts

#: train_batch_size 32 and micro batch 2 with sequence parallelism 2: on 8 GPUs accumulation 2 in 0.16.x (it counts
#: 8 data-parallel ranks), 4 from 0.17 (8 ÷ 2 ranks).
SP = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2,
      "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
#: Elastic training, which 0.19.7 runs (ignoring the batch keys) and 0.19.8 no longer reads.
ELASTIC_SECTION = {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6], "min_gpus": 1,
                   "max_gpus": 64, "version": 0.1, "ignore_non_elastic_batch_info": True}
ELASTIC = {"train_batch_size": 64, "zero_optimization": {"stage": 2}, "elasticity": ELASTIC_SECTION}
ARGS = ("per_device_train_batch_size", "gradient_accumulation_steps")


def _run(config: dict, version: str) -> dict[str, int]:
    """The Trainer batch arguments for what ``core.batch`` says DeepSpeed ``version`` runs on 8 GPUs."""
    run = batch_run(config, 8, version)
    assert run is not None
    return dict(zip(ARGS, run[1:], strict=True))


def test_the_derived_batch_counts_the_ranks_the_release_counts():
    assert _batch_deepspeed_derives(SP, 8, "0.16.9") == dict(zip(ARGS, (2, 2), strict=True)) == _run(SP, "0.16.9")
    assert _batch_deepspeed_derives(SP, 8, "0.19.8") == dict(zip(ARGS, (2, 4), strict=True)) == _run(SP, "0.19.8")
    assert _batch_deepspeed_derives(SP, 8) == _run(SP, "0.19.8")  # no release named: the newest


def test_the_derived_batch_is_elastic_trainings_where_the_release_runs_it():
    """0.19.7 runs what elastic training computes (micro 6 x 35 on 8 GPUs), whatever the batch keys say, "auto"
    included; 0.19.8 ignores the section and derives 8 x 1 from train_batch_size 64."""
    elastic = _batch_deepspeed_derives(ELASTIC, 8, "0.19.7")
    assert elastic == _run(ELASTIC, "0.19.7") == dict(zip(ARGS, (6, 35), strict=True))
    assert _batch_deepspeed_derives(ELASTIC, 8, "0.19.8") == dict(zip(ARGS, (8, 1), strict=True))
    auto = {**ELASTIC, "train_micro_batch_size_per_gpu": "auto"}
    assert _batch_deepspeed_derives(auto, 8, "0.19.7") == elastic
    assert _batch_deepspeed_derives(auto, 8, "0.19.8") == {}


def test_every_launcher_follows_the_release_in_the_apps_context():
    """The Review page passes its context, release included: on 0.16.9 the HF Trainer, accelerate and Lightning get
    accumulation 2 and no ParallelismConfig (0.16.x has neither the reading nor the Ulysses module accelerate
    imports for it); the Trainer then computes 2 x 2 x 8 = 32, the batch 0.16.9 checks on 8 GPUs."""
    for version, accum in (("0.16.9", 2), ("0.19.8", 4)):
        context = {"nodes": 1, "gpus_per_node": 8, "version": version}
        exports = launcher_exports(SP, context)
        hf_config, kwargs, notes = exports.hf
        assert (kwargs["per_device_train_batch_size"], kwargs["gradient_accumulation_steps"]) == (2, accum)
        assert exports.accelerate[0]["gradient_accumulation_steps"] == accum
        assert exports.lightning[1]["accumulate_grad_batches"] == accum
        snippet = launch_snippets(context, 2, config=SP, exports=exports)
        told = version != "0.16.9"
        assert ("ParallelismConfig" in snippet["HF Trainer"]) is told
        assert ("parallelism_config_sp_size" in snippet["accelerate launch"]) is told
        assert any("ParallelismConfig(sp_backend" in note for note in notes) is told
        if not told:
            assert _trainer_accepts(hf_config, kwargs, world_size=8)["train_batch_size"] == 32


def test_the_trainer_batch_note_counts_every_gpu_where_the_release_ignores_sequence_parallelism():
    """The whole trio written, 32 = 2 x 2 x 8 GPUs, as 0.16.9 checks it: the export said the Trainer trains 16
    (2 x 2 x 8 ÷ 2), the ranks of a ParallelismConfig it does not ask for on that release."""
    config = {**SP, "gradient_accumulation_steps": 2}
    said = [n for n in hf_trainer_export(config, world_size=8, version="0.16.9")[2] if "is now \"auto\"" in n]
    assert said == []
    said = [n for n in hf_trainer_export(config, world_size=8, version="0.19.8")[2] if "is now \"auto\"" in n]
    assert len(said) == 1 and "global batch of 16, not 32" in said[0]


@pytest.mark.parametrize("mode", ["auto", "match"])
def test_the_hf_trainer_trains_the_batch_elastic_training_runs(mode):
    """0.19.7 replaces the written micro batch 2 and accumulation 1 with elastic training's 6 x 35 on 8 GPUs: the
    Trainer's DataLoader and accumulation now carry those, and the config it hands DeepSpeed says them too."""
    config = {**ELASTIC, "train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}
    out, kwargs, notes = hf_trainer_export(config, mode, world_size=8, version="0.19.7")
    assert {name: kwargs[name] for name in ARGS} == _run(config, "0.19.7")
    assert any("what DeepSpeed derives from elastic training on 8 GPUs" in note for note in notes)
    given = _trainer_accepts(out, kwargs, world_size=8)
    assert (given["train_batch_size"], given["train_micro_batch_size_per_gpu"],
            given["gradient_accumulation_steps"]) == batch_run(config, 8, "0.19.7")
    newest = hf_trainer_export(config, mode, world_size=8, version="0.19.8")[1]
    assert {name: newest[name] for name in ARGS} == dict(zip(ARGS, (2, 1), strict=True))


def test_lightning_gets_the_batch_elastic_training_runs():
    values = launch_values({"nodes": 1, "gpus_per_node": 8})
    for version, (micro, accum) in (("0.19.7", (6, 35)), ("0.19.8", (8, 1))):
        out, kwargs, _ = lightning_export(ELASTIC, values, 8, version)
        assert (out["train_micro_batch_size_per_gpu"], kwargs["accumulate_grad_batches"]) == (micro, accum)


# ------------------------------------------------------------------ the Review page's HF path, end to end

def _snippet_arguments(snippet: str) -> dict:
    """The keyword arguments the HF snippet's ``TrainingArguments(...)`` passes, read from its text."""
    body = snippet.split("args = TrainingArguments(\n", 1)[1].split("\n)\n", 1)[0]
    return eval(f"dict({body})", {"__builtins__": {"dict": dict}})  # noqa: S307 - the app's own snippet


@pytest.mark.parametrize("release", ["0.16.9", "0.19.8"])
@pytest.mark.parametrize("mode", ["auto", "match"])
@pytest.mark.parametrize("preset", ["hf-auto-zero2", "hf-auto-zero3", "zero2-bf16", "zero3-offload-cpu",
                                    "single-gpu-lowmem"])
def test_the_review_pages_hf_snippet_and_file_are_accepted_and_train_the_batch_they_say(preset, mode, release):
    """What the Review page shows for the HF Trainer (the snippet's TrainingArguments and the ds_config.json beside
    it, from the page's own context and planned batch) goes through transformers' own ``TrainingArguments`` and
    ``trainer_config_finalize``: accepted, and the batch the Trainer hands DeepSpeed is the snippet's per-device
    batch and accumulation (the Trainer's 8 and 1 where it passes none) on 8 GPUs, which DeepSpeed ``release``
    runs as they are; a preset's written micro batch and accumulation survive, an "auto" one is the planned one."""
    from core.autofill import trainer_batch_arguments
    from core.presets import BUILTIN_DIR, list_presets

    config = next(p.config for p in list_presets([BUILTIN_DIR])[0] if p.name == preset)
    context = {"nodes": 2, "gpus_per_node": 4, "train_steps": 1000, "model_config": {"hidden_size": 1024},
               "version": release, "hf_micro_batch": 2, "hf_grad_accum": 4}
    planned = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}
    trainer_values = {name: value for name, value in planned.items() if name in trainer_batch_arguments(config)}
    exports = launcher_exports(config, context, mode, trainer_values)
    snippet = launch_snippets(context, 0, config=config, hf_mode=mode, trainer_values=trainer_values,
                              exports=exports)["HF Trainer"]
    told = _snippet_arguments(snippet)
    assert told.pop("deepspeed") == "ds_config.json" and told.pop("output_dir") == "out"
    assert told == exports.hf[1]
    given = _trainer_accepts(exports.hf[0], told, world_size=8)
    micro = told.get("per_device_train_batch_size", 8)
    accum = told.get("gradient_accumulation_steps", 1)
    run = batch_run(given, 8, release)  # a train_batch_size the file leaves out is DeepSpeed's to derive
    assert run == (micro * accum * 8, micro, accum)
    assert (given["train_micro_batch_size_per_gpu"], given["gradient_accumulation_steps"]) == run[1:]
    assert given.get("train_batch_size", run[0]) == run[0]
    for name, key in (("per_device_train_batch_size", "train_micro_batch_size_per_gpu"),
                      ("gradient_accumulation_steps", "gradient_accumulation_steps")):
        written = config.get(key)
        assert dict(zip(ARGS, run[1:], strict=True))[name] == (planned[name] if written == "auto" else written)


# ------------------------------------------------------------------ "auto" train_batch_size, per release

#: Micro batch 2 x accumulation 2 with sequence parallelism 2, the global batch left to the launcher.
SP_AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
           "sequence_parallel_size": 2, "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}


@pytest.mark.parametrize(("release", "total"), [("0.16.9", 32), ("0.19.8", 16)])
def test_an_auto_global_batch_is_resolved_as_the_release_counts_the_ranks(release, total):
    """0.16.9 ignores sequence_parallel_size and checks 2 x 2 x 8 = 32 on 8 GPUs; 0.19.8 checks 2 x 2 x (8 ÷ 2).
    The accelerate and Lightning files wrote 16 whatever the release (resolve_auto divided by hand), which 0.16.9
    refuses. Each release's own DeepSpeedConfig (0.16.9 in its worker subprocess) judges the exported file."""
    from core.autofill import resolve_auto
    from core.launchers import accelerate_export, resolved_export
    from tests.oracle.oracle import deepspeed_verdict, oracle_available

    values = launch_values({"nodes": 1, "gpus_per_node": 8})
    out, _ = accelerate_export(SP_AUTO, values, release)
    assert out["train_batch_size"] == total == batch_run(SP_AUTO | {"train_batch_size": total}, 8, release)[0]
    assert resolved_export(SP_AUTO, values, version=release)[0]["train_batch_size"] == total
    trainer = {"world_size": 8, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 2}
    assert resolve_auto(SP_AUTO, version=release, **trainer)["train_batch_size"] == total
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    verdict = deepspeed_verdict(out, 8, release)
    assert verdict.accepted, verdict.describe()


def test_resolve_auto_defaults_to_the_newest_release():
    from core.autofill import resolve_auto, trainer_batch

    trainer = {"world_size": 8, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 2}
    assert resolve_auto(SP_AUTO, **trainer) == resolve_auto(SP_AUTO, version="0.19.8", **trainer)
    auto = {**SP_AUTO, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}
    # the HF batch the CLI and the planner size: sequence parallelism goes along with the batch keys
    assert trainer_batch(auto, 2, 2, 8)["train_batch_size"] == 16
    assert trainer_batch(auto, 2, 2, 8, "0.16.9")["train_batch_size"] == 32
    # 0.16.9 has no sequence-parallel groups to make whole: 7 GPUs are 7 data-parallel ranks
    assert trainer_batch(auto, 2, 2, 7, "0.16.9")["train_batch_size"] == 28
