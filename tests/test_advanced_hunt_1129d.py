"""Bug hunt of 29 November (d): the legacy top-level curriculum_learning (read up to 0.19.7) switched on without
what deepspeed.initialize's CurriculumScheduler asserts, proven with each old release's real initialize."""

from __future__ import annotations

from typing import Any

import pytest

from core.validate import validate
from tests.oracle.initialize import SGD, TINY
from tests.oracle.oracle import oracle_available

CODE = "curriculum.legacy-schedule"
#: This module's real-initialize test proves the code on the old releases (0.19.8 refuses the key while parsing, so
#: tests/oracle/initialize_cases.py cannot).
PROVEN_ON_OLDER_RELEASES = frozenset({CODE})
OLD_RELEASES = ("0.19.7",)  # the last release that reads it (CI time: 0.16.9 agreed when checked)

LINEAR = {"enabled": True, "curriculum_type": "other", "min_difficulty": 8, "max_difficulty": 64,
          "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 8}}


def _without(key: str, **changes: Any) -> dict[str, Any]:
    return {**{k: v for k, v in LINEAR.items() if k != key}, **changes}


#: label: (curriculum_learning, the path of the finding, what DeepSpeed raises and where; None: it trains).
CASES: dict[str, tuple[dict[str, Any], str | None, tuple[str, str, str] | None]] = {
    "enabled-only": ({"enabled": True}, "min_difficulty",
                     ("initialize", "AssertionError", "Curriculum learning requires the config 'min_difficulty'")),
    "no-max": (_without("max_difficulty"), "max_difficulty",
               ("initialize", "AssertionError", "requires the config 'max_difficulty'")),
    "no-schedule-config": (_without("schedule_config"), "schedule_config",
                           ("initialize", "KeyError", "schedule_config")),
    "linear": ({**LINEAR, "schedule_type": "linear"}, "schedule_type",
               ("initialize", "RuntimeError", "Unsupported curriculum schedule type")),
    "root-without-degree": ({**LINEAR, "schedule_type": "fixed_root"}, "schedule_config.root_degree",
                            ("initialize", "AssertionError", "fixed_root schedule requires the schedule_config "
                                                             "'root_degree'")),
    "discrete-lengths": ({**LINEAR, "schedule_type": "fixed_discrete",
                          "schedule_config": {"difficulty": [1, 2], "max_step": [5, 6]}}, "schedule_config.max_step",
                         ("initialize", "AssertionError", "")),
    "no-curriculum-type": (_without("curriculum_type"), "curriculum_type", ("step", "KeyError", "curriculum_type")),
    # values the scheduler computes with as written (a read-only hunt, 1 Dec 2026): silent before
    "difficulty-step-as-text": ({**LINEAR, "schedule_config": {"total_curriculum_step": 10, "difficulty_step": "8"}},
                                "schedule_config.difficulty_step",
                                ("initialize", "TypeError", "not all arguments converted")),
    "total-step-as-text": ({**LINEAR, "schedule_config": {"total_curriculum_step": "10", "difficulty_step": 8}},
                           "schedule_config.total_curriculum_step", ("step", "TypeError", "unsupported operand")),
    "min-as-text": ({**LINEAR, "min_difficulty": "8"}, "min_difficulty", ("step", "TypeError", "not supported")),
    "root-degree-as-text": ({**LINEAR, "schedule_type": "fixed_root", "schedule_config": {
        **LINEAR["schedule_config"], "root_degree": "2"}}, "schedule_config.root_degree",
        ("step", "TypeError", "unsupported operand")),
    "discrete-step-as-text": ({**LINEAR, "schedule_type": "fixed_discrete",
                               "schedule_config": {"difficulty": [8, 64], "max_step": ["10"]}},
                              "schedule_config.max_step", ("step", "TypeError", "not supported")),
    "total-step-zero": ({**LINEAR, "schedule_config": {"total_curriculum_step": 0, "difficulty_step": 8}},
                        "schedule_config.total_curriculum_step", ("step", "ZeroDivisionError", "division by zero")),
    "difficulty-step-zero": ({**LINEAR, "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 0}},
                             "schedule_config.difficulty_step", ("step", "ZeroDivisionError", "modulo by zero")),
    "control-starts-at-max": ({**LINEAR, "min_difficulty": 64, "schedule_config": {"total_curriculum_step": 0,
                                                                                   "difficulty_step": 8}}, None, None),
    "control-linear": (LINEAR, None, None),
    "control-root": ({**LINEAR, "schedule_type": "fixed_root",
                      "schedule_config": {**LINEAR["schedule_config"], "root_degree": 2}}, None, None),
    "control-off": ({"enabled": False}, None, None),
}


def _config(section: dict[str, Any]) -> dict[str, Any]:
    return {**TINY, "optimizer": SGD, "curriculum_learning": section}


@pytest.mark.parametrize("version", ["0.16.0", "0.17.6", "0.19.5", "0.19.7"])
@pytest.mark.parametrize("label", list(CASES))
def test_the_rule_names_the_first_thing_the_scheduler_lacks(label, version):
    section, key, failure = CASES[label]
    errors = [f for f in validate(_config(section), version=version).findings if f.severity == "error"]
    if key is None:
        assert errors == []
        return
    assert [(f.code, f.path) for f in errors] == [(CODE, f"curriculum_learning.{key}")]
    assert failure[1] in errors[0].message and failure[2] in errors[0].message


def test_0198_only_says_it_refuses_the_key():
    codes = [f.code for f in validate(_config({"enabled": True}), version="0.19.8").findings]
    assert CODE not in codes and "removed.enabled-section" in codes


@pytest.mark.parametrize("enabled", [True, "false", 1])
def test_enabled_is_read_as_a_python_truth_value(enabled):
    codes = [f.code for f in validate(_config({"enabled": enabled}), version="0.19.7").findings]
    assert CODE in codes


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", OLD_RELEASES)
def test_real_initialize_fails_where_the_rule_says(release):
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    from tests import test_pld_hunt_1201 as pld  # the other legacy section: one DeepSpeed import for both

    configs = {label: _config(section) for label, (section, _, _) in CASES.items()}
    run = run_initialize_configs({**configs, **pld.real_run_configs()}, release)
    pld.check_real_run(run.results)
    for label, (_, _, failure) in CASES.items():
        got = run.results[label]
        outcome = got if got["raised"] else got["step"]
        if failure is None:
            assert not got["raised"] and not got["step"]["raised"], (release, label, got)
            continue
        phase, error_type, message = failure
        assert bool(got["raised"]) == (phase == "initialize"), (release, label, got)
        assert outcome["error_type"] == error_type and message in (outcome["message"] or ""), (release, label, got)
