"""Proof of the "fails at initialize" rules: configs DeepSpeedConfig accepts but ``deepspeed.initialize`` rejects.

Every case in ``tests.oracle.oracle.INITIALIZE_CASES`` runs ``deepspeed.initialize`` on a tiny model on
the CPU, all in one fresh single-rank subprocess (no torch.distributed state leaks into pytest). A case
either raises (the exception type and message are checked; a few "step" cases pass initialize and fail
in the first two training steps) or is a control that initializes and trains, so each failure is shown
to come from the one key that differs. Then the validator is held to the same cases:
it flags each config-caused failure with a code in ``core.validate.INITIALIZE_TIME_CODES``, stays quiet
on the controls and on the CPU-only failure, and each code in that set is proven by a case here.
"""

from __future__ import annotations

import importlib

import pytest

from tests.oracle.oracle import INITIALIZE_CASES, deepspeed_verdict, oracle_available, run_initialize_cases

pytestmark = [pytest.mark.deepspeed, pytest.mark.slow]

RAISING = [c for c in INITIALIZE_CASES if c.raises and c.config_rule]
QUIET = [c for c in INITIALIZE_CASES if not c.raises or not c.config_rule]


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    return run_initialize_cases()


def _validator():
    module = importlib.import_module("core.validate")
    return module.validate, frozenset(module.INITIALIZE_TIME_CODES)


def _errors(config: dict) -> list:
    validate, _ = _validator()
    return [f for f in validate(config, world_size=1, target="deepspeed").findings if f.severity == "error"]


@pytest.mark.parametrize("case", INITIALIZE_CASES, ids=[c.id for c in INITIALIZE_CASES])
def test_deepspeed_config_accepts_it(case):
    """Every case gets past DeepSpeedConfig: any failure is initialize-time, not parse-time."""
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    verdict = deepspeed_verdict(case.config, 1)
    assert verdict.accepted, f"{case.id}: DeepSpeedConfig already rejects it: {verdict.describe()}"


@pytest.mark.parametrize("case", INITIALIZE_CASES, ids=[c.id for c in INITIALIZE_CASES])
def test_initialize_outcome(case, results):
    got = results[case.id]
    if not case.raises:
        assert not got["raised"], f"{case.id}: control raised {got['error_type']}: {got['message']}"
        assert not got["step"]["raised"], f"{case.id}: control fails to train: {got['step']}"
        return
    if case.phase == "step":
        assert not got["raised"], f"{case.id}: expected initialize to pass, got {got['error_type']}: {got['message']}"
        got = got["step"]
    assert got["raised"], f"{case.id} ({case.rule}): deepspeed {case.phase} did not raise"
    assert got["error_type"] == case.error_type, f"{case.id}: {got['error_type']}: {got['message']}"
    assert case.message_contains in got["message"], f"{case.id}: {got['message']}"


@pytest.mark.parametrize("case", RAISING, ids=[c.id for c in RAISING])
def test_validator_flags_initialize_failure(case):
    _, codes = _validator()
    errors = _errors(case.config)
    assert errors, f"{case.id} ({case.rule}): deepspeed.initialize raises, the validator finds no error"
    assert any(f.code in codes for f in errors), (
        f"{case.id}: errors {[f.code for f in errors]} are not in INITIALIZE_TIME_CODES, so the "
        "differential test would count them as false alarms"
    )


@pytest.mark.parametrize("case", QUIET, ids=[c.id for c in QUIET])
def test_validator_accepts_what_initialize_accepts(case):
    errors = _errors(case.config)
    assert not errors, f"{case.id} ({case.rule}): {[(f.code, f.path, f.message) for f in errors]}"


def test_every_initialize_time_code_is_proven_by_a_case():
    _, codes = _validator()
    proven = {f.code for case in RAISING for f in _errors(case.config)}
    unproven = sorted(codes - proven)
    assert not unproven, f"INITIALIZE_TIME_CODES without a deepspeed.initialize case proving them: {unproven}"


def test_cases_are_unique_and_controlled():
    assert {c.phase for c in INITIALIZE_CASES} == {"initialize", "step"}
    ids = [c.id for c in INITIALIZE_CASES]
    assert len(ids) == len(set(ids))
    assert INITIALIZE_CASES[0].id == "control-sgd" and INITIALIZE_CASES[-1].id == "control-end"
    for case in INITIALIZE_CASES:
        assert case.raises == (case.error_type is not None) == (case.message_contains is not None), case.id
