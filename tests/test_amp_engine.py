"""Apex AMP (`amp`) next to what DeepSpeed's engine refuses with it: ZeRO, fp16/bf16 without ZeRO, and
managed_gradient_accumulation off. The releases that still read `amp` (up to 0.19.7) parse such configs and fail
at deepspeed.initialize; 0.19.8 refuses the section itself. The release gate is checked against each installed
release's own engine source, and the verdicts against its real deepspeed.initialize on the CPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from core import validate
from tests.oracle.initialize import ADAMW, TINY
from tests.oracle.oracle import IN_PROCESS_VERSION, SIDE_BY_SIDE, SIDE_BY_SIDE_ROOT, oracle_available

AMP_CODES = frozenset({"engine.amp-zero", "engine.amp-half-precision", "engine.amp-managed-accumulation"})
#: Initialize-time codes no 0.19.8 case can prove (it refuses `amp` while parsing): the real-initialize test here
#: proves each on 0.19.7 (tests/test_initialize_failures.py counts them as proven).
PROVEN_ON_OLDER_RELEASES = AMP_CODES
ON = {"amp": {"enabled": True}}
OLD_RELEASES = ("0.16.9", "0.19.7")


def _cfg(**extra: Any) -> dict[str, Any]:
    return {"train_micro_batch_size_per_gpu": 1, **extra}


def _codes(config: dict[str, Any], version: str, target: str = "deepspeed") -> set[str]:
    return {f.code for f in validate(config, version=version, target=target).findings}


def _errors(config: dict[str, Any], version: str) -> list[str]:
    return [f.code for f in validate(config, version=version).errors]


@pytest.mark.parametrize("version", OLD_RELEASES)
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_amp_with_zero_is_an_initialize_error(version, stage):
    report = validate(_cfg(**ON, zero_optimization={"stage": stage}), version=version)
    finding = next(f for f in report.findings if f.code == "engine.amp-zero")
    assert finding.severity == "error" and finding.path == "amp" and finding.fix is None
    assert "Amp and ZeRO are not currently compatible" in finding.message
    assert "engine.amp-half-precision" not in report.codes()  # the ZeRO assertion comes first


@pytest.mark.parametrize("version", OLD_RELEASES)
@pytest.mark.parametrize("precision", ["fp16", "bf16", "bfloat16"])
def test_amp_with_half_precision_without_zero_is_an_initialize_error(version, precision):
    report = validate(_cfg(**ON, **{precision: {"enabled": True}}), version=version)
    finding = next(f for f in report.findings if f.code == "engine.amp-half-precision")
    assert finding.severity == "error" and finding.path == "amp" and finding.fix is None
    assert "Cannot enable both amp with (legacy) fp16 or bfloat16 mode" in finding.message
    assert "engine.amp-zero" not in report.codes()


@pytest.mark.parametrize("version", OLD_RELEASES)
@pytest.mark.parametrize("config", [
    _cfg(amp={"enabled": False}, zero_optimization={"stage": 2}),
    _cfg(amp={"enabled": False}, bf16={"enabled": True}),
    _cfg(amp={"enabled": 0}, fp16={"enabled": True}, zero_optimization={"stage": 3}),
    _cfg(**ON),  # amp alone: DeepSpeed's checks pass (it then needs apex, a property of the machine)
    _cfg(**ON, fp16={"enabled": False}, bf16={"enabled": False}, zero_optimization={"stage": 0}),
    _cfg(zero_optimization={"stage": 2}, bf16={"enabled": True}),
], ids=["off-zero2", "off-bf16", "zero-int-off", "amp-alone", "amp-stage0-fp32", "no-amp"])
def test_amp_off_or_alone_is_not_flagged(version, config):
    assert not AMP_CODES & _codes(config, version)
    assert _errors(config, version) == []


@pytest.mark.parametrize("version", OLD_RELEASES)
def test_enabled_is_read_as_a_python_truth_value(version):
    """get_scalar_param hands the raw value to `amp_enabled and zero_enabled`: the string "false" is on."""
    assert "engine.amp-zero" in _codes(_cfg(amp={"enabled": "false"}, zero_optimization={"stage": 1}), version)
    assert "engine.amp-half-precision" in _codes(_cfg(amp={"enabled": "no"}, bf16={"enabled": True}), version)
    # the legacy boolean form of ZeRO is stage 1
    assert "engine.amp-zero" in _codes(_cfg(**ON, zero_optimization=True), version)


def test_half_precision_follows_how_the_release_reads_fp16():
    """Before 0.19, fp16 is read with dict.get: "auto" left in the file is on (the engine then refuses amp)."""
    config = _cfg(**ON, fp16={"enabled": "auto"})
    assert "engine.amp-half-precision" in _codes(config, "0.16.9")


def test_amp_with_unmanaged_accumulation_is_an_error_where_the_release_reads_both():
    config = _cfg(**ON, managed_gradient_accumulation=False)
    report = validate(config, version="0.19.7")
    finding = next(f for f in report.findings if f.code == "engine.amp-managed-accumulation")
    assert finding.severity == "error" and finding.fix is None
    assert "not supported with Apex AMP" in finding.message
    # "false" is a truthy string: DeepSpeed keeps managing accumulation
    assert "engine.amp-managed-accumulation" not in _codes(_cfg(**ON, managed_gradient_accumulation="false"), "0.19.7")
    assert "engine.amp-managed-accumulation" not in _codes(_cfg(managed_gradient_accumulation=False), "0.19.7")
    # 0.16.9 never reads the key, so nothing refuses it there
    assert "engine.amp-managed-accumulation" not in _codes(config, "0.16.9")


@pytest.mark.parametrize("config", [
    _cfg(**ON, zero_optimization={"stage": 2}),
    _cfg(**ON, bf16={"enabled": True}),
    _cfg(**ON, managed_gradient_accumulation=False),
], ids=["zero", "bf16", "unmanaged"])
def test_0198_keeps_only_its_removed_section_finding(config):
    codes = _codes(config, "0.19.8")
    assert not AMP_CODES & codes
    assert [f.code for f in validate(config, version="0.19.8").errors] == ["removed.enabled-section"]


def test_hf_target_gets_it_too():
    assert "engine.amp-zero" in _codes(_cfg(**ON, zero_optimization={"stage": 2}), "0.19.7", target="hf")


# ---- the release gate against each installed release's own engine

_MESSAGES = {
    "engine.amp-zero": ("Amp and ZeRO are not currently compatible", _cfg(**ON, zero_optimization={"stage": 2})),
    "engine.amp-half-precision": ("Cannot enable both amp with (legacy) fp16 or bfloat16 mode",
                                  _cfg(**ON, bf16={"enabled": True})),
    "engine.amp-managed-accumulation": ("managed_gradient_accumulation=False is not supported with Apex AMP",
                                        _cfg(**ON, managed_gradient_accumulation=False)),
}


def _engine_source(version: str) -> str | None:
    if version == IN_PROCESS_VERSION:
        spec = importlib.util.find_spec("deepspeed")
        path = Path(spec.origin).parent / "runtime/engine.py" if spec and spec.origin else None
    else:
        path = SIDE_BY_SIDE_ROOT / version / "deepspeed/runtime/engine.py"
    return path.read_text() if path and path.is_file() else None


@pytest.mark.parametrize("version", [*SIDE_BY_SIDE, IN_PROCESS_VERSION])
@pytest.mark.parametrize("code", sorted(_MESSAGES))
def test_the_rule_fires_exactly_in_the_installed_releases_whose_engine_asserts_it(code, version):
    source = _engine_source(version)
    if source is None:
        pytest.skip(f"DeepSpeed {version} is not installed here")
    message, config = _MESSAGES[code]
    assert (code in _codes(config, version)) == (message in source), (version, code)


# ---- the real deepspeed.initialize on the CPU

_TRAIN = {**TINY, "optimizer": ADAMW}
_INIT_CONFIGS: dict[str, dict[str, Any]] = {
    "amp-zero2": {**_TRAIN, **ON, "zero_optimization": {"stage": 2}},
    "amp-false-string-zero1": {**_TRAIN, "amp": {"enabled": "false"}, "zero_optimization": {"stage": 1}},
    "control-amp-off-zero2": {**_TRAIN, "amp": {"enabled": False}, "zero_optimization": {"stage": 2}},
    "amp-bf16": {**_TRAIN, **ON, "bf16": {"enabled": True}},
    "control-amp-off-bf16": {**_TRAIN, "amp": {"enabled": False}, "bf16": {"enabled": True}},
    "amp-fp16": {**_TRAIN, **ON, "fp16": {"enabled": True}},
    "amp-alone": {**_TRAIN, **ON},
    "amp-unmanaged": {**_TRAIN, **ON, "managed_gradient_accumulation": False},
}
_DEVICE_REFUSAL = "Type fp16 is not supported on your device."


@pytest.mark.deepspeed
@pytest.mark.long
@pytest.mark.parametrize("release", OLD_RELEASES)
def test_real_initialize_refuses_what_the_validator_flags(release):
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    run = run_initialize_configs(_INIT_CONFIGS, release)
    got = run.results

    def failure(key: str) -> tuple[str | None, str]:
        result = got[key]
        return (result["error_type"], result["message"] or "") if result["raised"] else (None, "")

    proven: set[str] = set()
    for key in ("amp-zero2", "amp-false-string-zero1"):
        assert failure(key) == ("AssertionError", "Amp and ZeRO are not currently compatible, please use (legacy) "
                                "fp16 mode which performs similar to amp opt_mode=O2"), (release, key, got[key])
        assert "engine.amp-zero" in _errors(_INIT_CONFIGS[key], release)
        proven.add("engine.amp-zero")

    # amp with bf16: the half-precision check, or (0.16.9: bf16 without ZeRO accumulates in fp32) the dtype one
    kind, message = failure("amp-bf16")
    assert kind == "NotImplementedError" and ("Cannot enable both amp" in message
                                             or "must be equal to use Amp" in message), got["amp-bf16"]
    assert "engine.amp-half-precision" in _errors(_INIT_CONFIGS["amp-bf16"], release)
    proven.add("engine.amp-half-precision")

    # fp16: a CPU without fp16 refuses the precision before the optimizer checks run, so only there it is proven
    kind, message = failure("amp-fp16")
    if run.host.get("fp16"):
        assert kind == "NotImplementedError" and "Cannot enable both amp" in message, got["amp-fp16"]
    else:
        assert (kind, message) == ("ValueError", _DEVICE_REFUSAL), got["amp-fp16"]
    assert "engine.amp-half-precision" in _errors(_INIT_CONFIGS["amp-fp16"], release)

    # the controls train, and the validator says nothing against them
    for key in ("control-amp-off-zero2", "control-amp-off-bf16"):
        assert not got[key]["raised"] and not got[key]["step"]["raised"], (release, key, got[key])
        assert _errors(_INIT_CONFIGS[key], release) == []

    # amp alone passes DeepSpeed's config checks and then needs apex: the machine's, not the config's, fault
    assert _errors(_INIT_CONFIGS["amp-alone"], release) == []
    if importlib.util.find_spec("apex") is None:
        assert failure("amp-alone") == ("RuntimeError", "Unable to import apex/amp, please make sure it is installed")

    # unmanaged accumulation: refused before the apex lookup where the release reads the key (0.19.4 on)
    unmanaged = _errors(_INIT_CONFIGS["amp-unmanaged"], release)
    if "managed_gradient_accumulation=False is not supported with Apex AMP" in (_engine_source(release) or ""):
        assert failure("amp-unmanaged") == ("AssertionError",
                                            "managed_gradient_accumulation=False is not supported with Apex AMP")
        assert "engine.amp-managed-accumulation" in unmanaged
        proven.add("engine.amp-managed-accumulation")
    else:
        assert "engine.amp-managed-accumulation" not in unmanaged
        if importlib.util.find_spec("apex") is None:
            assert failure("amp-unmanaged")[0] == "RuntimeError"
    if release == "0.19.7":
        assert proven == PROVEN_ON_OLDER_RELEASES
