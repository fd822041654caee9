"""ZenFlow and the optimizer it builds. With ZenFlow on (``zero_optimization.zenflow`` an object, 0.17.5 on) and
the optimizer offloaded:

* at ZeRO-1/2 DeepSpeed builds ZenFlow's selective optimizer, a torch AdamW, with ``optimizer.params`` passed as
  keyword arguments as written, so DeepSpeed's own keys (``bias_correction``, ``torch_adam``...) and a missing
  ``params`` raise TypeError at ``deepspeed.initialize`` (``engine.zenflow-optimizer-params``; proven on 0.19.8 in
  ``tests/oracle/initialize_cases.py``);
* Adam/AdamW is ``ZenFlowCPUAdam``, which ZeRO's ``ZERO_SUPPORTED_OPTIMIZERS`` lacks in the earlier ZenFlow
  releases: they refuse it unless ``zero_allow_untested_optimizer`` is true (``optimizer.untested-with-zero``),
  read per release from the profiles and proven here on two installed releases.
"""

from __future__ import annotations

from typing import Any

import pytest

from core import versions
from core.rules import torch_checks
from core.rules.optim import untested_with_zero
from core.validate import validate
from tests.oracle.oracle import oracle_available

B: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True}}
ZENFLOW_OFFLOAD = {"zenflow": {"topk_ratio": 0.1}, "offload_optimizer": {"device": "cpu"}}


def _config(stage: int = 2, params: Any = ..., allow: bool = False, **zero: Any) -> dict[str, Any]:
    optimizer: dict[str, Any] = {"type": "AdamW"}
    if params is not ...:
        optimizer["params"] = params
    return {**B, "optimizer": optimizer, "zero_optimization": {"stage": stage, **ZENFLOW_OFFLOAD, **zero},
            **({"zero_allow_untested_optimizer": True} if allow else {})}


def _zenflow_releases() -> list[str]:
    return [r for r in versions.RELEASES if versions.key_known(r, "zero_optimization", "zenflow")]


def _supports_zenflow_adam(release: str) -> bool:
    return "ZenFlowCPUAdam" in versions.profile(release)["zero_supported_optimizers"]


def _findings(config: dict[str, Any], code: str, version: str = versions.NEWEST) -> list:
    return [f for f in validate(config, version=version).findings if f.code == code]


@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("key", ["bias_correction", "torch_adam", "adam_w_mode", "fp32_optimizer_states"])
def test_a_key_torchs_adamw_does_not_take_is_an_error_with_its_fix(stage, key):
    config = _config(stage, {"lr": 1e-3, "betas": [0.9, 0.95], key: True})
    (finding,) = _findings(config, "engine.zenflow-optimizer-params")
    assert finding.severity == "error" and finding.path == f"optimizer.params.{key}"
    assert f"unexpected keyword argument '{key}'" in finding.message
    fixed = finding.fix.apply(config)
    assert key not in fixed["optimizer"]["params"] and not _findings(fixed, "engine.zenflow-optimizer-params")


def test_every_keyword_of_torchs_adamw_is_accepted_and_params_are_required():
    every = {key: value for key, value in torch_checks.defaults("AdamW").items()}
    assert set(every) >= {"lr", "betas", "eps", "weight_decay", "amsgrad"}  # read from the recorded torch checks
    assert not _findings(_config(2, every), "engine.zenflow-optimizer-params")
    (missing,) = _findings(_config(1), "engine.zenflow-optimizer-params")
    assert missing.path == "optimizer.params" and "argument after ** must be a mapping" in missing.message
    assert missing.fix.apply(_config(1))["optimizer"]["params"] == {}


@pytest.mark.parametrize(("config", "why"), [
    (_config(3, {"bias_correction": True}), "stage 3 builds its selective optimizer from the param groups"),
    ({**_config(2, {"bias_correction": True}), "zero_optimization": {"stage": 2, "zenflow": None,
                                                                      "offload_optimizer": {"device": "cpu"}}},
     "zenflow null is off"),
    ({**B, "zero_optimization": {"stage": 2, **ZENFLOW_OFFLOAD}}, "no optimizer section: a client optimizer"),
], ids=["stage3", "zenflow-null", "client-optimizer"])
def test_no_finding_where_zenflows_adamw_does_not_get_the_params(config, why):
    assert not _findings(config, "engine.zenflow-optimizer-params"), why


def test_no_finding_in_a_release_without_zenflow():
    before = [r for r in versions.RELEASES if r not in _zenflow_releases()]
    assert before and not _findings(_config(2, {"bias_correction": True}), "engine.zenflow-optimizer-params",
                                    before[-1])


def test_zenflow_cpu_adam_is_untested_with_zero_where_the_release_does_not_list_it():
    releases = _zenflow_releases()
    refusing = [r for r in releases if not _supports_zenflow_adam(r)]
    assert refusing and len(refusing) < len(releases)  # both kinds exist, read from the releases
    for release in releases:
        config = _config(2, {"lr": 1e-3})
        untested = _findings(config, "optimizer.untested-with-zero", release)
        assert bool(untested) == (release in refusing), release
        assert (untested_with_zero(config, release) is not None) == (release in refusing), release
        if untested:
            assert "ZenFlowCPUAdam" in untested[0].message
            assert not _findings(untested[0].fix.apply(config), "optimizer.untested-with-zero", release)
        # without ZenFlow the same optimizer is DeepSpeedCPUAdam, which every release lists
        plain = {**config, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
        assert not _findings(plain, "optimizer.untested-with-zero", release)


#: Releases that refuse ZenFlowCPUAdam, proven with their real initialize (CPU-Adam built; a release that lists it
#: trains in the 0.19.8 control case).
ZENFLOW_REFUSING = ("0.17.6",)


@pytest.mark.deepspeed
@pytest.mark.long
@pytest.mark.parametrize("release", ZENFLOW_REFUSING)
def test_real_initialize_refuses_what_the_validator_flags_on_older_releases(release):
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    train = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True}}
    configs = {
        "adamw": {**_config(2, {"lr": 1e-3}), **train},
        "adamw-allowed": {**_config(2, {"lr": 1e-3}, allow=True), **train},
        "bias-correction-allowed": {**_config(2, {"lr": 1e-3, "bias_correction": True}, allow=True), **train},
    }
    got = run_initialize_configs(configs, release).results
    untested = ("AssertionError", 'You are using an untested ZeRO Optimizer. Please add '
                '<"zero_allow_untested_optimizer": true> in the configuration file to use it.')

    def outcome(key: str) -> tuple[str | None, str | None]:
        return (got[key]["error_type"], got[key]["message"]) if got[key]["raised"] else (None, None)

    def errors(key: str) -> set[str]:
        return {f.code for f in validate(configs[key], version=release).errors}

    if _supports_zenflow_adam(release):
        assert outcome("adamw") == (None, None) and not got["adamw"]["step"]["raised"], got["adamw"]
        assert errors("adamw") == set()
    else:
        assert outcome("adamw") == untested, got["adamw"]
        assert errors("adamw") == {"optimizer.untested-with-zero"}
    assert outcome("adamw-allowed") == (None, None) and not got["adamw-allowed"]["step"]["raised"]
    assert errors("adamw-allowed") == set()
    kind, message = outcome("bias-correction-allowed")
    assert kind == "TypeError" and "unexpected keyword argument 'bias_correction'" in message
    assert errors("bias-correction-allowed") == {"engine.zenflow-optimizer-params"}
