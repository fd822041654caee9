"""Proof of the "fails at initialize" rules: configs DeepSpeedConfig accepts but ``deepspeed.initialize`` rejects.

Every case in ``tests.oracle.initialize_cases.INITIALIZE_CASES`` runs ``deepspeed.initialize`` on a tiny model on
the CPU, all in one fresh single-rank subprocess (no torch.distributed state leaks into pytest). A case
either raises (the exception type and message are checked; a few "step" cases pass initialize and fail
in the first two training steps) or is a control that initializes and trains, so each failure is shown
to come from the one key that differs. Whether the CPU supports fp16 depends on the host (DeepSpeed asks
torch's oneDNN check: AVX512-FP16 or AMX-FP16); where DeepSpeed's accelerator says a precision the case
enables is unsupported, the case must be refused with exactly DeepSpeed's device error and its stand-in
(the same config with a precision the host has) must do what the case says. Then the validator is held
to the same cases, whatever the host:
it flags each config-caused failure with a code in ``core.validate.INITIALIZE_TIME_CODES``, stays quiet
on the controls and on the CPU-only failure, and each code in that set is proven by a case here.
"""

from __future__ import annotations

import importlib

import pytest

from tests.oracle.ds0195_worker import precision_stand_in
from tests.oracle.initialize import InitializeRun, initialize_outcome_problems, run_initialize_cases
from tests.oracle.initialize_cases import INITIALIZE_CASES
from tests.oracle.oracle import deepspeed_verdict, oracle_available
from tests.test_advanced_hunt_1129d import PROVEN_ON_OLDER_RELEASES as PROVEN_LEGACY_CURRICULUM
from tests.test_amp_engine import PROVEN_ON_OLDER_RELEASES
from tests.test_compression_hunt_1201 import PROVEN_ON_OLDER_RELEASES as PROVEN_COMPRESSION
from tests.test_expert_parallel_hunt_1201 import PROVEN_ON_OLDER_RELEASES as PROVEN_EXPERT_PARALLEL
from tests.test_hf_trainer_no_type import PROVEN_WITH_TRAINER
from tests.test_hpz_world_size import PROVEN_WITH_RANKS
from tests.test_pld_hunt_1201 import PROVEN_ON_OLDER_RELEASES as PROVEN_PLD
from tests.test_sequence_mesh_1201 import PROVEN_WITH_RANKS as PROVEN_MESH

# one worker runs the whole module, so the module fixture's DeepSpeed subprocess runs once per session
pytestmark = [pytest.mark.deepspeed, pytest.mark.slow, pytest.mark.xdist_group("initialize")]

RAISING = [c for c in INITIALIZE_CASES if c.raises and c.config_rule]
QUIET = [c for c in INITIALIZE_CASES if not c.raises or not c.config_rule]


@pytest.fixture(scope="module")
def results() -> InitializeRun:
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    return run_initialize_cases(INITIALIZE_CASES)


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
    got = results.results[case.id]
    print(f"\n[{case.id}] host: {results.host}; unsupported here: {got['unsupported']}")
    problems = initialize_outcome_problems(case, got, results.host)
    assert not problems, "\n".join(problems)
    if got["unsupported"]:
        # a property of the host, not of the config: the validator's verdict does not depend on it
        codes = [f.code for f in _errors(case.config)]
        assert bool(codes) == (case.raises and case.config_rule), (case.id, codes)


FP16_CASES = [c for c in INITIALIZE_CASES if (c.config.get("fp16") or {}).get("enabled") is True]


def test_some_cases_enable_fp16_so_both_kinds_of_host_are_exercised():
    assert {c.id for c in FP16_CASES} >= {"lamb-static-loss-scale-fp16", "control-fp16-on-cpu"}


def _run(raised: bool, error_type: str | None = None, message: str | None = None, step_raised: bool = False) -> dict:
    step = {"raised": step_raised, "error_type": None, "message": None}
    return {"raised": raised, "error_type": error_type, "message": message, "step": None if raised else step,
            "unsupported": None, "stand_in": None}


@pytest.mark.parametrize("case", FP16_CASES, ids=[c.id for c in FP16_CASES])
def test_outcome_check_on_both_kinds_of_host(case):
    """The host logic itself, on made-up outcomes for a host with fp16 and one without (no DeepSpeed run)."""
    expected = (_run(True, case.error_type, case.message_contains) if case.raises and case.phase == "initialize"
                else _run(False))
    wrong = _run(False) if case.raises else _run(True, "ValueError", "something else")
    fp16_host, no_fp16_host = {"fp16": True, "bf16": True}, {"fp16": False, "bf16": True}
    assert initialize_outcome_problems(case, expected, fp16_host) == []
    assert initialize_outcome_problems(case, wrong, fp16_host)
    refused = {**_run(True, "ValueError", "Type fp16 is not supported on your device."), "unsupported": "fp16"}
    assert initialize_outcome_problems(case, {**refused, "stand_in": expected}, no_fp16_host) == []
    assert initialize_outcome_problems(case, {**refused, "stand_in": wrong}, no_fp16_host)  # stand-in is checked
    assert initialize_outcome_problems(case, {**refused, "stand_in": None}, no_fp16_host)  # and required
    other_error = {**_run(True, "ValueError", "Type bf16 is not supported on your device."), "unsupported": "fp16"}
    assert initialize_outcome_problems(case, {**other_error, "stand_in": expected}, no_fp16_host)
    assert initialize_outcome_problems(case, {**refused, "stand_in": expected}, fp16_host)  # host says it has fp16


def test_precision_stand_in_changes_only_the_precision():
    config = {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "loss_scale": 128},
              "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}}
    with_bf16 = precision_stand_in(config, "fp16", {"fp16": False, "bf16": True})
    assert with_bf16 == {**config, "fp16": {"enabled": False, "loss_scale": 128}, "bf16": {"enabled": True}}
    assert config["fp16"]["enabled"] is True  # the original is not touched
    fp32 = precision_stand_in(config, "fp16", {"fp16": False, "bf16": False})
    assert fp32 == {**config, "fp16": {"enabled": False, "loss_scale": 128}}
    legacy = {"bfloat16": {"enabled": True}, "fp16": {"initial_scale_power": 8}}
    assert precision_stand_in(legacy, "bf16", {"fp16": True, "bf16": False}) == {
        "bfloat16": {"enabled": False}, "fp16": {"initial_scale_power": 8, "enabled": True}}


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
    proven = ({f.code for case in RAISING for f in _errors(case.config)} | PROVEN_ON_OLDER_RELEASES
              | PROVEN_LEGACY_CURRICULUM | PROVEN_WITH_RANKS | PROVEN_WITH_TRAINER | PROVEN_COMPRESSION
              | PROVEN_PLD | PROVEN_MESH | PROVEN_EXPERT_PARALLEL)
    unproven = sorted(codes - proven)
    assert not unproven, f"INITIALIZE_TIME_CODES without a deepspeed.initialize case proving them: {unproven}"


def test_cases_are_unique_and_controlled():
    assert {c.phase for c in INITIALIZE_CASES} == {"initialize", "step"}
    ids = [c.id for c in INITIALIZE_CASES]
    assert len(ids) == len(set(ids))
    assert INITIALIZE_CASES[0].id == "control-sgd" and INITIALIZE_CASES[-1].id == "control-end"
    for case in INITIALIZE_CASES:
        assert case.raises == (case.error_type is not None) == (case.message_contains is not None), case.id
