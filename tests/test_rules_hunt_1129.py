"""Disagreements with ``deepspeed.initialize`` found by the 2026-11-29 bug hunt, each reproduced on the CPU:

- ``prescale_gradients`` and ``gradient_predivide_factor`` != 1 with ZeRO-2/3 and ``reduce_scatter`` on: the ZeRO
  optimizer asserts at initialize (``engine.prescale-reduce-scatter``, ``engine.predivide-reduce-scatter``);
- a predivide factor of 0 was an error wherever it was written, though ZeRO-1 with ``reduce_scatter`` on never
  reads it (``misc.step-number`` only where DeepSpeed divides by it);
- NVMe offload without ``nvme_path`` fails at initialize at stage 3 (``zero.nvme-without-path`` is an error there,
  and quiet below stage 3, where nothing is swapped);
- ZenFlow without optimizer offload (``engine.zenflow-without-offload``), an ``autotp_size`` that does not divide the
  GPUs (``engine.autotp-world-size``), partial optimizer offload with an optimizer other than DeepSpeedCPUAdam
  (``engine.partial-offload-optimizer``), a ``datastates_ckpt`` written to mean off that turns DataStates on
  (``misc.datastates-on``), and optimizer/scheduler parameters written beside ``params`` instead of inside it.

The 0.19.8 proofs are cases of ``tests/oracle/initialize_cases.py`` (``tests/test_initialize_failures.py``); the
oldest installed release is proven here with one ``deepspeed.initialize`` run.
"""

from __future__ import annotations

from typing import Any

import pytest

from core import versions
from core.validate import validate

B: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
TORCH_ADAMW = {"type": "AdamW", "params": {"lr": 0.01, "torch_adam": True}}
CPU_ADAMW = {"type": "AdamW", "params": {"lr": 0.01}}


def _zero(stage: int, **extra: Any) -> dict[str, Any]:
    return {"zero_optimization": {"stage": stage, **extra}}


def _codes(config: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """{code: finding} of ``config`` (the last finding of each code)."""
    return {f.code: f for f in validate(config, **settings).findings}


def _errors(config: dict[str, Any], **settings: Any) -> set[str]:
    return {f.code for f in validate(config, **settings).errors}


# ------------------------------------------------------------------ prescale / predivide with reduce_scatter
@pytest.mark.parametrize("release", [versions.RELEASES[0], "0.17.6", versions.NEWEST])
@pytest.mark.parametrize("stage", [2, 3])
def test_prescale_and_predivide_are_refused_at_zero_2_and_3_with_reduce_scatter(release, stage):
    prescale = _codes({**B, "optimizer": TORCH_ADAMW, "prescale_gradients": True, **_zero(stage)}, version=release)
    finding = prescale["engine.prescale-reduce-scatter"]
    assert finding.severity == "error" and finding.path == "prescale_gradients"
    assert f"pre-scale gradients is not yet supported with ZeRO-{stage} with reduce scatter enabled" in finding.message
    assert "reduce_scatter to false" in finding.suggestion and finding.fix.ops[0].path == "prescale_gradients"
    predivide = _codes({**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 2.0, **_zero(stage)},
                       version=release)
    finding = predivide["engine.predivide-reduce-scatter"]
    assert finding.path == "gradient_predivide_factor"
    assert f"gradient_predivide_factor != 1.0 is not yet supported with ZeRO-{stage}" in finding.message
    assert "reduce_scatter" in finding.suggestion and finding.fix.ops[0].op == "delete"


@pytest.mark.parametrize("config", [
    {**B, "optimizer": TORCH_ADAMW, "prescale_gradients": True, **_zero(1)},
    {**B, "optimizer": TORCH_ADAMW, "prescale_gradients": True, **_zero(2, reduce_scatter=False)},
    {**B, "optimizer": TORCH_ADAMW, "prescale_gradients": False, **_zero(3)},
    {**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 2.0, **_zero(1)},
    {**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 2.0, **_zero(3, reduce_scatter=False)},
    {**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 1, **_zero(2)},  # 1 == 1.0
], ids=["prescale-stage1", "prescale-no-reduce-scatter", "prescale-false", "predivide-stage1",
        "predivide-no-reduce-scatter", "predivide-one"])
def test_what_initialize_takes_is_not_an_error(config):
    assert not _errors(config), config


def test_prescale_written_false_as_a_string_is_on():
    """get_scalar_param, used as a Python truth value: "false" prescales, so ZeRO-2 refuses it too."""
    codes = _codes({**B, "optimizer": TORCH_ADAMW, "prescale_gradients": "false", **_zero(2)})
    assert "engine.prescale-reduce-scatter" in codes


# ------------------------------------------------------------------ predivide factor 0
@pytest.mark.parametrize(("config", "fails"), [
    ({**B, "optimizer": TORCH_ADAMW, **_zero(1)}, False),  # ZeRO-1 reduce-scatters: the factor is never read
    ({**B, "optimizer": TORCH_ADAMW, **_zero(1, reduce_scatter=False)}, True),
    ({**B, "optimizer": TORCH_ADAMW, **_zero(2, reduce_scatter=False)}, True),
    ({**B, "optimizer": TORCH_ADAMW, **_zero(3, reduce_scatter=False)}, False),  # a tensor division: no exception
    ({**B, "optimizer": {"type": "SGD", "params": {"lr": 0.01}}}, True),  # the engine's all-reduce
    ({**B, "optimizer": TORCH_ADAMW, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"},
      **_zero(1)}, True),  # BF16_Optimizer: the engine's all-reduce again
], ids=["zero1", "zero1-no-reduce-scatter", "zero2-no-reduce-scatter", "zero3-no-reduce-scatter", "no-zero",
        "bf16-optimizer"])
def test_predivide_factor_zero_is_an_error_only_where_deepspeed_divides_by_it(config, fails):
    codes = _codes({**config, "gradient_predivide_factor": 0})
    assert ("misc.step-number" in codes) == fails, codes
    if fails:
        assert "ZeroDivisionError" in codes["misc.step-number"].message


def test_predivide_factor_zero_with_reduce_scatter_at_zero_2_is_the_initialize_error():
    codes = _codes({**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 0, **_zero(2)})
    assert "engine.predivide-reduce-scatter" in codes and "misc.step-number" not in codes


# ------------------------------------------------------------------ NVMe without nvme_path
@pytest.mark.parametrize("section", ["offload_param", "offload_optimizer"])
def test_nvme_without_path_is_an_initialize_error_at_stage_3(section):
    finding = _codes({**B, "optimizer": TORCH_ADAMW, **_zero(3, **{section: {"device": "nvme"}})})[
        "zero.nvme-without-path"]
    assert finding.severity == "error" and finding.path == f"zero_optimization.{section}.nvme_path"
    assert "deepspeed.initialize fails" in finding.message and "nvme_path" in finding.suggestion
    assert finding.fix.ops[0].path == f"zero_optimization.{section}.nvme_path"
    with_path = {**B, "optimizer": TORCH_ADAMW, **_zero(3, **{section: {"device": "nvme", "nvme_path": "/nvme"}})}
    assert "zero.nvme-without-path" not in _codes(with_path)


@pytest.mark.parametrize("stage", [1, 2])
def test_nvme_without_path_below_stage_3_is_left_to_the_offload_findings(stage):
    """Below stage 3 DeepSpeed offloads the optimizer to the CPU and never reads nvme_path: it trains."""
    codes = _codes({**B, "optimizer": TORCH_ADAMW, **_zero(stage, offload_optimizer={"device": "nvme"})})
    assert "zero.nvme-without-path" not in codes and "zero.nvme-below-3" in codes
    assert not _errors({**B, "optimizer": TORCH_ADAMW, **_zero(stage, offload_optimizer={"device": "nvme"})})


# ------------------------------------------------------------------ ZenFlow
def _zenflow_releases() -> list[str]:
    return [r for r in versions.RELEASES if versions.key_known(r, "zero_optimization", "zenflow")]


def test_zenflow_without_offload_is_an_error_in_every_release_that_has_zenflow():
    having = _zenflow_releases()
    assert having and having[0] == "0.17.5" and having[-1] == versions.NEWEST  # read from the profiles
    config = {**B, "optimizer": TORCH_ADAMW, **_zero(2, zenflow={})}
    for release in versions.RELEASES:
        codes = _codes(config, version=release)
        assert ("engine.zenflow-without-offload" in codes) == (release in having), release
    finding = _codes(config)["engine.zenflow-without-offload"]
    assert "Zenflow must be used with cpu offload" in finding.message and "offload_optimizer" in finding.suggestion
    assert finding.fix.ops[0].path == "zero_optimization.offload_optimizer"


@pytest.mark.parametrize(("zero", "flagged"), [
    (_zero(2, zenflow={"topk_ratio": 0.1}, offload_optimizer={"device": "cpu"}), False),
    (_zero(1, zenflow={"topk_ratio": 0.1}, offload_optimizer={"device": "nvme"}), False),  # NVMe is CPU below 3
    (_zero(2, zenflow=None), False),
    (_zero(1, zenflow={"topk_ratio": 0.1}), True),
    (_zero(0, zenflow={"topk_ratio": 0.1}), True),  # the first step asks the plain optimizer for ZenFlow's state
], ids=["cpu", "nvme", "null", "stage1", "stage0"])
def test_zenflow_needs_zero_1_or_2_with_optimizer_offload(zero, flagged):
    codes = _codes({**B, "optimizer": CPU_ADAMW, **zero})
    assert ("engine.zenflow-without-offload" in codes) == flagged, codes


# ------------------------------------------------------------------ AutoTP degree and the GPU count
@pytest.mark.parametrize(("size", "gpus", "flagged"), [(2, 1, True), (4, 6, True), (2, 8, False), (8, 8, False),
                                                       (1, 3, False)])
def test_autotp_size_must_divide_the_gpus(size, gpus, flagged):
    config = {**B, "optimizer": {"type": "SGD", "params": {"lr": 0.01}}, "tensor_parallel": {"autotp_size": size}}
    codes = _codes(config, world_size=gpus)
    assert ("engine.autotp-world-size" in codes) == flagged, codes
    if flagged:
        finding = codes["engine.autotp-world-size"]
        assert finding.path == "tensor_parallel.autotp_size" and f"{gpus} GPU" in finding.message
        assert "divisor" in finding.suggestion


def test_autotp_world_size_only_where_the_release_reads_autotp_size():
    config = {**B, "tensor_parallel": {"autotp_size": 2}}
    for release in versions.RELEASES:
        reads = versions.key_known(release, "tensor_parallel", "autotp_size") is True
        assert ("engine.autotp-world-size" in _codes(config, version=release)) == reads, release


# ------------------------------------------------------------------ partial optimizer offload
@pytest.mark.parametrize(("optimizer", "ratio", "flagged"), [
    (TORCH_ADAMW, 0.5, True),
    ({"type": "SGD", "params": {"lr": 0.01}}, 0.5, True),  # also untested with ZeRO: both are true
    ({"type": "Adagrad", "params": {"lr": 0.01}}, 0.3, True),  # DeepSpeedCPUAdagrad is not DeepSpeedCPUAdam
    (CPU_ADAMW, 0.5, False),
    (TORCH_ADAMW, 1.0, False),
    (None, 0.5, False),  # a client optimizer: its class is not known here
], ids=["torch-adamw", "sgd", "adagrad", "cpu-adam", "whole", "client"])
def test_partial_offload_needs_deepspeed_cpu_adam(optimizer, ratio, flagged):
    config = {**B, **_zero(3, offload_optimizer={"device": "cpu", "ratio": ratio}),
              **({"optimizer": optimizer} if optimizer else {})}
    codes = _codes(config)
    assert ("engine.partial-offload-optimizer" in codes) == flagged, codes
    if flagged:
        finding = codes["engine.partial-offload-optimizer"]
        assert "Hybrid Optimizer Only Supports DeepSpeedCPUAdam" in finding.message
        assert finding.path == "zero_optimization.offload_optimizer.ratio" and "ratio" in finding.suggestion


# ------------------------------------------------------------------ DataStates
@pytest.mark.parametrize(("value", "warned"), [
    ({"enabled": False}, True), (None, True), ({}, True), ({"enabled": "false"}, True), (0, True),
    (False, False), (True, False), ({"enabled": True}, False), ({"host_cache_size": 16}, False),
], ids=["enabled-false", "null", "empty", "enabled-false-string", "zero", "false", "true", "enabled", "settings"])
def test_datastates_written_to_mean_off_is_on(value, warned):
    codes = _codes({**B, "datastates_ckpt": value})
    assert ("misc.datastates-on" in codes) == warned, codes
    if warned:
        finding = codes["misc.datastates-on"]
        assert finding.severity == "warning" and finding.path == "datastates_ckpt"
        assert '"datastates_ckpt": false' in finding.suggestion and "remove" in finding.suggestion
        assert finding.fix.ops[0].value is False


def test_datastates_warning_only_where_the_release_reads_the_key():
    config = {**B, "datastates_ckpt": {"enabled": False}}
    reading = [r for r in versions.RELEASES if versions.key_known(r, "", "datastates_ckpt")]
    assert reading and reading[-1] == versions.NEWEST
    for release in versions.RELEASES:
        assert ("misc.datastates-on" in _codes(config, version=release)) == (release in reading), release


# ------------------------------------------------------------------ parameters beside params
@pytest.mark.parametrize(("section", "key", "value"), [
    ("optimizer", "lr", 0.001), ("optimizer", "betas", [0.9, 0.95]), ("scheduler", "warmup_num_steps", 10),
])
def test_a_parameter_beside_params_is_moved_into_params(section, key, value):
    config = {**B, "optimizer": {"type": "AdamW", "params": {"weight_decay": 0.01}},
              "scheduler": {"type": "WarmupLR", "params": {}}}
    config[section] = {**config[section], key: value}
    finding = next(f for f in validate(config).findings if f.path == f"{section}.{key}")
    assert finding.code == "keys.unknown-ignored"
    assert f"`{section}.params.{key}`" in finding.suggestion and "spelling" not in finding.suggestion
    assert (finding.fix.ops[0].op, finding.fix.ops[0].to) == ("move", f"{section}.params.{key}")


def test_a_top_level_key_inside_the_optimizer_says_the_top_level_plainly():
    config = {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}, "gradient_clipping": 1.0}}
    finding = next(f for f in validate(config).findings if f.path == "optimizer.gradient_clipping")
    assert "`the top level`" not in finding.suggestion and "top level" in finding.suggestion
    assert (finding.fix.ops[0].op, finding.fix.ops[0].to) == ("move", "gradient_clipping")


# ------------------------------------------------------------------ the real deepspeed.initialize, oldest release
OLDEST_INSTALLED = "0.16.9"
_OLD_RELEASE_CONFIGS: dict[str, dict[str, Any]] = {
    "prescale-zero2": {**B, "optimizer": TORCH_ADAMW, "prescale_gradients": True, **_zero(2)},
    "predivide-zero3": {**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 2.0, **_zero(3)},
    "predivide-zero-zero1": {**B, "optimizer": TORCH_ADAMW, "gradient_predivide_factor": 0, **_zero(1)},
    "nvme-param-zero3": {**B, "optimizer": TORCH_ADAMW, **_zero(3, offload_param={"device": "nvme"})},
    "partial-offload-torch-adamw": {**B, "optimizer": TORCH_ADAMW,
                                    **_zero(3, offload_optimizer={"device": "cpu", "ratio": 0.5})},
}


@pytest.mark.deepspeed
@pytest.mark.slow
def test_the_oldest_installed_release_agrees():
    """One ``deepspeed.initialize`` run (and two training steps) per config on 0.16.9: the validator has an error
    exactly where the release fails."""
    from tests.oracle.initialize import run_initialize_configs
    from tests.oracle.oracle import oracle_available

    reason = oracle_available(OLDEST_INSTALLED)
    if reason:
        pytest.skip(reason)
    run = run_initialize_configs(_OLD_RELEASE_CONFIGS, OLDEST_INSTALLED)
    for key, config in _OLD_RELEASE_CONFIGS.items():
        result = run.results[key]
        fails = bool(result["raised"] or (result["step"] or {}).get("raised"))
        errors = _errors(config, version=OLDEST_INSTALLED)
        assert bool(errors) == fails, (key, result, errors)
    assert not run.results["predivide-zero-zero1"]["raised"]  # the false alarm: it trains


def test_compute_grad_norm_is_checked_only_where_the_release_reads_it_with_its_own_clipping_default():
    """compute_grad_norm false on 0.19.6 (which has no such key) got "deepspeed.initialize fails" beside the right
    keys.not-in-version-on, and an unsafe fix that turned clipping off; on 0.16.9 it said clipping was "1 (the
    default)" where 0.16.9's default is 0."""
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1, "compute_grad_norm": False}}
    for version in ("0.16.9", "0.19.6"):
        codes = {f.code for f in validate(config, world_size=1, version=version).findings}
        assert "engine.compute-grad-norm-clipping" not in codes, version
    found = [f for f in validate(config, world_size=1, version="0.19.7").findings
             if f.code == "engine.compute-grad-norm-clipping"]
    assert len(found) == 1 and "gradient_clipping is 1 (the default)" in found[0].message


def test_stage3_keys_unused_names_the_keys_as_written_deprecated_spellings_included():
    """At stage 2, the deprecated stage3_gather_fp16_weights_on_model_save got no zero.stage3-keys-unused while its
    rename (the safe fix of deprecated.key) did: the fix brought up a new finding. And the message listed the
    schema's field names (max_live_parameters), not the keys the config writes."""
    def unused(zero: dict[str, Any]) -> list[str]:
        config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, **zero}}
        return [f.message for f in validate(config, world_size=1).findings if f.code == "zero.stage3-keys-unused"]

    assert unused({"stage3_gather_fp16_weights_on_model_save": True, "stage3_max_live_parameters": 5}) == [
        "Stage-3 settings have no effect at stage 2: stage3_gather_fp16_weights_on_model_save, "
        "stage3_max_live_parameters."]
    assert unused({"stage3_gather_16bit_weights_on_model_save": True}) == [
        "Stage-3 settings have no effect at stage 2: stage3_gather_16bit_weights_on_model_save."]


@pytest.mark.parametrize(("written", "stage"), [(True, 1), ("3", 3), (3.0, 3), (" 2 ", 2), ("3.0", 3)])
def test_a_stage_written_as_bool_float_or_string_warns_and_its_fix_is_what_the_hf_trainer_reads(written, stage):
    """"stage": "3" or true was silent: DeepSpeed coerces it, but accelerate's HfDeepSpeedConfig (the HF Trainer's)
    compares the raw value with 3, so "3" was not ZeRO-3 to it (no zero.Init when the model loads)."""
    from accelerate.utils.deepspeed import HfDeepSpeedConfig
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    from core.autofix import fix_until_stable

    assert int(DeepSpeedZeroConfig(stage=written).stage) == stage
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": written}}
    found = [f for f in validate(config, world_size=1).findings if f.code == "zero.stage-not-integer"]
    assert len(found) == 1 and f"reads it as stage {stage}" in found[0].message
    fixed = fix_until_stable(config).config  # a safe fix
    assert fixed["zero_optimization"]["stage"] == stage and type(fixed["zero_optimization"]["stage"]) is int
    assert HfDeepSpeedConfig(fixed).is_zero3() == (stage == 3)
    if stage == 3 and isinstance(written, str):
        assert not HfDeepSpeedConfig(config).is_zero3() and "HF Trainer and accelerate" in found[0].message
    assert not [f for f in validate(fixed, world_size=1).findings if f.code == "zero.stage-not-integer"]
