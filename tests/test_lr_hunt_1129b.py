"""The LR curve draws the selected release's scheduler, not 0.19.8's for every release: up to 0.19.2 WarmupCosineLR
does not clamp past total_num_steps and divides by zero when total == warm-up, and up to 0.19.3 its unknown
warmup_type raises UnboundLocalError; up to 0.19.3 OneCycle ignores its stair counts and the step counts take any
number; WarmupLR fails on a null warmup_max_lr before 0.17.2; every release reads lr_range_test_staircase by
truthiness."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from core.lr_schedules import ScheduleError, config_schedule_curve
from tests.oracle.oracle import run_under_release

_REAL = """
import json, sys, torch
from deepspeed.runtime import lr_schedules as L
out = []
for case in json.loads(sys.argv[1]):
    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=case["lr"])
    lrs = []
    try:
        sched = getattr(L, case["type"])(opt, **case["params"])
        for _ in range(case["steps"]):
            lrs.append(float(opt.param_groups[0]["lr"]))
            sched.step()
        out.append({"lr": lrs})
    except Exception as exc:
        out.append({"error": type(exc).__name__, "steps_done": len(lrs)})
print(json.dumps(out))
"""

#: (scheduler type, params, steps); the optimizer is Adam with lr 1e-3.
CASES: list[tuple[str, dict[str, Any], int]] = [
    ("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 5}, 40),
    ("WarmupCosineLR", {"total_num_steps": 5, "warmup_num_steps": 5}, 10),
    ("WarmupCosineLR", {"total_num_steps": 3, "warmup_num_steps": 1}, 6),
    ("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 5, "warmup_type": "cubic"}, 10),
    ("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 0}, 8),
    ("WarmupLR", {"warmup_num_steps": 0}, 5),
    ("WarmupLR", {"warmup_num_steps": 10.0, "warmup_type": "linear"}, 12),
    ("WarmupLR", {"warmup_num_steps": 5, "warmup_type": "cubic"}, 8),
    ("WarmupDecayLR", {"total_num_steps": 20, "warmup_num_steps": -3}, 25),
    ("WarmupLR", {"warmup_max_lr": None, "warmup_num_steps": 3}, 5),
    ("WarmupDecayLR", {"total_num_steps": 20, "warmup_max_lr": None, "warmup_num_steps": 3}, 5),
    ("LRRangeTest", {"lr_range_test_step_size": 5.0}, 5),
    ("LRRangeTest", {"lr_range_test_step_size": 0}, 5),
    ("LRRangeTest", {"lr_range_test_staircase": 1, "lr_range_test_step_size": 2}, 6),
    ("OneCycle", {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 4,
                  "cycle_first_stair_count": 2}, 12),
    ("OneCycle", {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 4,
                  "cycle_momentum": 0}, 10),
]


def _config(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"optimizer": {"type": "Adam", "params": {"lr": 1e-3}}, "scheduler": {"type": kind, "params": params}}


@cache
def _real(release: str) -> list[dict[str, Any]]:
    """Every case run by ``release``'s own schedulers (one subprocess per release)."""
    cases = [{"type": k, "params": p, "steps": n, "lr": 1e-3} for k, p, n in CASES]
    return json.loads(run_under_release(release, _REAL, json.dumps(cases)))


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", ["0.16.9", "0.18.9", "0.19.8"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{k}-{json.dumps(p)}" for k, p, _ in CASES])
def test_the_curve_is_the_releases_own(release: str, case: int) -> None:
    kind, params, steps = CASES[case]
    real = _real(release)[case]
    if "error" in real:
        with pytest.raises(ScheduleError):
            config_schedule_curve(_config(kind, params), steps, release)
        return
    ours = config_schedule_curve(_config(kind, params), steps, release)["lr"].tolist()
    assert ours == pytest.approx(real["lr"], rel=1e-12, abs=1e-300)


def test_0_18_9s_cosine_climbs_back_past_the_total() -> None:
    config = _config("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 5})
    old = config_schedule_curve(config, 40, "0.18.9")["lr"]
    assert [old[20], old[30], old[35]] == pytest.approx([1e-7, 7.5e-4, 1e-3], rel=1e-4)
    new = config_schedule_curve(config, 40, "0.19.8")["lr"]
    assert [new[20], new[30], new[35]] == pytest.approx([1e-7, 1e-7, 1e-7], rel=1e-6)


def test_0_18_9s_one_cycle_ignores_its_stair_counts() -> None:
    params = {"cycle_min_lr": 0.0, "cycle_max_lr": 1.0, "cycle_first_step_size": 4, "cycle_first_stair_count": 2}
    config = _config("OneCycle", params)
    assert config_schedule_curve(config, 5, "0.18.9")["lr"].tolist() == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    assert config_schedule_curve(config, 5, "0.19.8")["lr"].tolist() == pytest.approx([0, 0, 0.5, 0.5, 1.0])


def test_a_cosine_total_equal_to_the_warm_up_divides_by_zero_before_0_19_3() -> None:
    config = _config("WarmupCosineLR", {"total_num_steps": 5, "warmup_num_steps": 5})
    with pytest.raises(ScheduleError, match="ZeroDivisionError at step 5") as raised:
        config_schedule_curve(config, 3, "0.18.9")
    assert raised.value.param == "total_num_steps"
    assert config_schedule_curve(config, 10, "0.19.3")["lr"].iloc[6] == pytest.approx(1e-7)


def test_an_unknown_cosine_warmup_type_fails_before_0_19_4() -> None:
    config = _config("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 5, "warmup_type": "cubic"})
    for version in ("0.16.9", "0.19.3"):
        with pytest.raises(ScheduleError, match="UnboundLocalError") as raised:
            config_schedule_curve(config, 10, version)
        assert raised.value.param == "warmup_type"
    assert "uses 'log'" in config_schedule_curve(config, 10, "0.19.4").attrs["warnings"][0]
    # a run resumed past the warm-up never reads the type
    resumed = _config("WarmupCosineLR", {"total_num_steps": 20, "warmup_num_steps": 5, "warmup_type": "cubic",
                                         "last_batch_iteration": 6})
    assert len(config_schedule_curve(resumed, 3, "0.18.9")) == 3


@pytest.mark.parametrize(("kind", "params", "version", "peak"), [
    ("WarmupLR", {"warmup_num_steps": 0, "warmup_max_lr": 1e-3}, "0.18.9", 1e-3),
    ("WarmupLR", {"warmup_num_steps": 10.0, "warmup_max_lr": 1e-3}, "0.16.9", 1e-3),
    ("LRRangeTest", {"lr_range_test_step_size": 5.0, "lr_range_test_min_lr": 1.0}, "0.19.3", 3.2),
])
def test_old_releases_take_any_step_count(kind: str, params: dict[str, Any], version: str, peak: float) -> None:
    assert config_schedule_curve(_config(kind, params), 12, version)["lr"].max() == pytest.approx(peak)
    with pytest.raises(ScheduleError, match="positive integer"):
        config_schedule_curve(_config(kind, params), 12, "0.19.8")


def test_a_zero_range_test_step_size_names_the_parameter() -> None:
    with pytest.raises(ScheduleError, match="ZeroDivisionError") as raised:
        config_schedule_curve(_config("LRRangeTest", {"lr_range_test_step_size": 0}), 5, "0.16.9")
    assert raised.value.param == "lr_range_test_step_size"


@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
def test_switches_are_read_by_truthiness(version: str) -> None:
    params = {"lr_range_test_staircase": 1, "lr_range_test_step_size": 2, "lr_range_test_min_lr": 1.0}
    assert config_schedule_curve(_config("LRRangeTest", params), 4, version)["lr"].tolist() == [1, 1, 2, 2]
    cycle = {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_momentum": 0}
    assert "momentum" not in config_schedule_curve(_config("OneCycle", cycle), 4, version)


def test_a_null_peak_is_the_optimizers_lr_from_0_17_2() -> None:
    config = _config("WarmupDecayLR", {"total_num_steps": 20, "warmup_max_lr": None, "warmup_num_steps": 3})
    for version in ("0.16.9", "0.17.1"):
        with pytest.raises(ScheduleError, match="TypeError") as raised:
            config_schedule_curve(config, 5, version)
        assert raised.value.param == "warmup_max_lr"
    assert config_schedule_curve(config, 5, "0.17.2")["lr"].max() == pytest.approx(1e-3)
