"""Random-LTD (data_efficiency.data_routing.random_ltd) as its scheduler reads it (a read-only hunt, 1 Dec 2026).

DeepSpeed builds RandomLTDScheduler whenever random_ltd.enabled is truthy, whatever data_efficiency.enabled and
data_routing.enabled say, and engine.forward calls its ``update_seq`` at every forward pass: it computes with the
layer counts, min_value and max_value as written, and (while the kept length is below max_value) reads the schedule
type and divides by require_steps and seq_per_step. The validator was silent on text in those numbers, on a schedule
type other than fixed_linear, on a null schedule or schedule_config, on missing or zero require_steps / seq_per_step,
and only warned on a truthy ``layer_token_lr_schedule.enabled`` (NotImplementedError in initialize). The 0.19.8
verdicts are deepspeed.initialize cases (tests/oracle/initialize_cases.py, ``random-ltd-*``); here the same verdicts
on the oldest release (the scheduler's source is the same in every release), and the fixes the validator offers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.autofix import fix_until_stable
from core.validate import validate
from tests.oracle.initialize_cases import _random_ltd
from tests.oracle.oracle import SIDE_BY_SIDE_ROOT
from tests.test_versions_differential import RELEASES

PREFIX = "data_efficiency.data_routing.random_ltd"

#: (id, config, the error code and path the validator reports, or None for a config that trains)
CASES = [
    ("complete", _random_ltd(), None),
    ("never-runs", _random_ltd(schedule={"min_value": 64, "schedule_type": "fixed_root"}), None),
    ("layer-count-text", _random_ltd(random_ltd_layer_num="1"), ("type.as-written", f"{PREFIX}.random_ltd_layer_num")),
    ("total-text", _random_ltd(total_layer_num="2"), ("type.as-written", f"{PREFIX}.total_layer_num")),
    ("max-text", _random_ltd(schedule={"max_value": "64"}),
     ("type.as-written", f"{PREFIX}.random_ltd_schedule.max_value")),
    ("fixed-root", _random_ltd(schedule={"schedule_type": "fixed_root"}),
     ("data-efficiency.random-ltd-schedule", f"{PREFIX}.random_ltd_schedule.schedule_type")),
    ("schedule-null", _random_ltd(random_ltd_schedule=None),
     ("data-efficiency.random-ltd-schedule", f"{PREFIX}.random_ltd_schedule")),
    ("schedule-config-null", _random_ltd(schedule={"schedule_config": None}),
     ("data-efficiency.random-ltd-schedule", f"{PREFIX}.random_ltd_schedule.schedule_config")),
    ("require-steps-zero", _random_ltd(schedule_config={"require_steps": 0}),
     ("data-efficiency.random-ltd-schedule", f"{PREFIX}.random_ltd_schedule.schedule_config.require_steps")),
    ("seq-per-step-text", _random_ltd(schedule_config={"seq_per_step": "8"}),
     ("data-efficiency.random-ltd-schedule", f"{PREFIX}.random_ltd_schedule.schedule_config.seq_per_step")),
    ("layer-token-lr-on", _random_ltd(layer_token_lr_schedule={"enabled": True}),
     ("data-efficiency.random-ltd-layer-token-lr", f"{PREFIX}.layer_token_lr_schedule.enabled")),
]


CASES_BY_ID = {case: config for case, config, _ in CASES}


def _errors(config: dict, version: str) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in validate(config, world_size=1, version=version).errors}


@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
@pytest.mark.parametrize(("case", "config", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_validator_says_what_the_scheduler_does(case, config, expected, version):
    errors = _errors(config, version)
    assert errors == ({expected} if expected else set()), case


def test_the_scheduler_is_checked_whatever_the_switches_above_it_say():
    """data_efficiency.enabled and data_routing.enabled off (or absent) gate nothing: the engine reads
    random_ltd.enabled alone, so a value it computes with is checked there too."""
    config = _random_ltd(random_ltd_layer_num="1")
    config["data_efficiency"] = {"enabled": False, "data_routing": {"enabled": False,
                                                                     **config["data_efficiency"]["data_routing"]}}
    assert ("type.as-written", f"{PREFIX}.random_ltd_layer_num") in _errors(config, "0.19.8")
    off = _random_ltd(enabled=False, random_ltd_layer_num="1")
    assert not _errors(off, "0.19.8")  # random-LTD itself off: nothing reads it


def test_a_value_with_nothing_meant_gets_no_fix_that_sets_null():
    """A dict where the scheduler computes with a number: the default is null, which fails the same way, so the
    finding offers no fix rather than one that writes null."""
    config = _random_ltd(schedule={"min_value": {"value": 32}})
    finding = next(f for f in validate(config).errors if f.path.endswith("random_ltd_schedule.min_value"))
    assert finding.code == "type.as-written" and finding.fix is None
    text = next(f for f in validate(_random_ltd(schedule={"min_value": "8"})).errors
                if f.path.endswith("min_value"))
    assert [(op.op, op.value) for op in text.fix.ops] == [("set", 8)]
    assert type(text.fix.ops[0].value) is int  # an int field's fix writes an integer (it wrote 8.0: int | None)


def test_every_release_runs_the_same_scheduler_so_the_0198_cases_judge_them_all():
    """RandomLTDScheduler's source is byte for byte the same in every installed release: the deepspeed.initialize
    cases on 0.19.8 (tests/oracle/initialize_cases.py) are the verdicts of 0.16.9 to 0.19.7 as well (the hunt ran
    them on 0.16.9 and 0.19.6 too, with the same outcomes)."""
    import deepspeed

    relative = Path("runtime/data_pipeline/data_routing/scheduler.py")
    newest = (Path(deepspeed.__file__).parent / relative).read_bytes()
    for version in RELEASES:
        older = SIDE_BY_SIDE_ROOT / version / "deepspeed" / relative
        if older.is_file():
            assert older.read_bytes() == newest, version


@pytest.mark.parametrize("case", ["layer-count-text", "total-text", "max-text", "layer-token-lr-on"])
def test_the_fixes_give_back_the_config_that_trains(case):
    """The validator's fixes (unsafe ones included) turn each text case into the complete config, which trains
    (the control-random-ltd-full initialize case): text becomes its number, the unimplemented schedule is off."""
    config = dict(CASES_BY_ID[case])
    result = fix_until_stable(config, unsafe=True, world_size=1, version="0.16.9")
    assert result.report.ok, [(f.code, f.path) for f in result.report.errors]
    fixed = result.config["data_efficiency"]["data_routing"]["random_ltd"]
    complete = _random_ltd()["data_efficiency"]["data_routing"]["random_ltd"]
    assert {**fixed, "layer_token_lr_schedule": None} == {**complete, "layer_token_lr_schedule": None}
    assert all(type(fixed[key]) is type(complete[key]) for key in complete)  # integers stay integers
    assert fixed.get("layer_token_lr_schedule", {"enabled": False})["enabled"] is False
