"""core.lr_schedules against the real DeepSpeed schedulers stepping a real torch optimizer."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.lr_schedules import SCHEDULER_TYPES, ScheduleError, config_schedule_curve, schedule_curve

torch = pytest.importorskip("torch")
ds_sched = pytest.importorskip("deepspeed.runtime.lr_schedules")

pytestmark = pytest.mark.deepspeed


def real_curve(kind: str, params: dict, steps: int, base_lr: float = 0.01, betas: bool = True):
    """What DeepSpeed's scheduler writes into the optimizer before each of ``steps`` optimizer steps."""
    weight = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([weight], lr=base_lr) if betas else torch.optim.SGD([weight], lr=base_lr)
    sched = getattr(ds_sched, kind)(opt, **params)
    lrs, moms = [], []
    for _ in range(steps):
        group = opt.param_groups[0]
        lrs.append(float(group["lr"]))
        moms.append(float(group["betas"][0]) if betas else math.nan)
        sched.step()
    return lrs, moms


def assert_same(kind, params, steps, base_lr=0.01, betas=True):
    ours = schedule_curve(kind, params, steps, base_lr, optimizer_has_betas=betas)
    lrs, moms = real_curve(kind, params, steps, base_lr, betas)
    assert list(ours["step"]) == list(range(steps))
    assert len(ours) == steps
    for k, (a, b) in enumerate(zip(ours["lr"], lrs, strict=True)):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-300), f"lr differs at step {k}: {a} vs {b}"
    if "momentum" in ours:
        for k, (a, b) in enumerate(zip(ours["momentum"], moms, strict=True)):
            if math.isnan(a):
                # resumed scheduler: step 0 keeps the optimizer's own beta1
                assert k == 0 and params.get("last_batch_iteration", -1) != -1
                continue
            assert a == pytest.approx(b, rel=1e-12, abs=1e-300), f"momentum differs at step {k}"
    elif kind == "OneCycle" and betas:
        assert params.get("cycle_momentum") is False
    return ours


# ---------------------------------------------------------------- grids over the tricky corners


@pytest.mark.parametrize("warmup_type", ["log", "linear", "bogus"])
@pytest.mark.parametrize("num", [1, 2, 3, 10, 57])
@pytest.mark.parametrize("max_lr", [None, 0.003])
def test_warmup_lr_grid(warmup_type, num, max_lr):
    params = {"warmup_min_lr": 1e-5, "warmup_num_steps": num, "warmup_type": warmup_type}
    if max_lr is not None:
        params["warmup_max_lr"] = max_lr
    ours = assert_same("WarmupLR", params, 3 * num + 5, base_lr=0.02)
    # warmup reaches the max and stays there
    assert ours["lr"].iloc[-1] == pytest.approx(max_lr if max_lr is not None else 0.02)
    assert bool(ours.attrs["warnings"]) == (warmup_type == "bogus")


@pytest.mark.parametrize("warmup_type", ["log", "linear"])
@pytest.mark.parametrize(("num", "total"), [(1, 10), (10, 10), (10, 5), (10, 11), (7, 100), (3, 3.5)])
def test_warmup_decay_grid(warmup_type, num, total):
    params = {"total_num_steps": total, "warmup_min_lr": 0.0, "warmup_max_lr": 0.1,
              "warmup_num_steps": num, "warmup_type": warmup_type}
    ours = assert_same("WarmupDecayLR", params, int(total) + 20)
    assert ours["lr"].iloc[-1] == 0.0  # decays to zero after total_num_steps


@pytest.mark.parametrize("warmup_type", ["log", "linear"])
@pytest.mark.parametrize(("num", "total"), [(1, 10), (10, 10), (10, 5), (4, 50), (2, 3)])
@pytest.mark.parametrize("ratios", [(0.0, 0.0001), (0.1, 0.2), (0.5, 0.0)])
def test_warmup_cosine_grid(warmup_type, num, total, ratios):
    params = {"total_num_steps": total, "warmup_min_ratio": ratios[0], "cos_min_ratio": ratios[1],
              "warmup_num_steps": num, "warmup_type": warmup_type}
    ours = assert_same("WarmupCosineLR", params, total + 10, base_lr=0.3)
    assert ours["lr"].iloc[0] == 0.0  # DeepSpeed's WarmupCosineLR starts at 0, not at warmup_min_ratio
    assert ours["lr"].iloc[-1] == pytest.approx(0.3 * ratios[1])


@pytest.mark.parametrize("staircase", [False, True])
@pytest.mark.parametrize(("size", "rate"), [(1, 1.0), (3, 0.5), (10, 2.0), (7, -0.05)])
def test_lr_range_test_grid(staircase, size, rate):
    params = {"lr_range_test_min_lr": 1e-4, "lr_range_test_step_size": size,
              "lr_range_test_step_rate": rate, "lr_range_test_staircase": staircase}
    assert_same("LRRangeTest", params, 40)


@pytest.mark.parametrize(("first", "second"), [(5, None), (4, 6), (7, 3), (10, 0), (3.5, 2.5)])
@pytest.mark.parametrize(("stairs1", "stairs2"), [(0, None), (2, None), (3, 0), (0, 4), (4, 4)])
@pytest.mark.parametrize(("decay_step", "decay_lr", "decay_mom"),
                         [(0, 0.0, 0.0), (3, 0.5, 0.01), (2, 0.0, 0.1)])
def test_one_cycle_grid(first, second, stairs1, stairs2, decay_step, decay_lr, decay_mom):
    params = {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-2, "cycle_first_step_size": first,
              "cycle_second_step_size": second, "cycle_first_stair_count": stairs1,
              "cycle_second_stair_count": stairs2, "decay_step_size": decay_step,
              "decay_lr_rate": decay_lr, "decay_mom_rate": decay_mom,
              "cycle_min_mom": 0.85, "cycle_max_mom": 0.95}
    ours = assert_same("OneCycle", params, 40)
    assert "momentum" in ours
    assert ours["momentum"].iloc[0] == 0.85  # the constructor sets cycle_min_mom


def test_one_cycle_without_betas_has_no_momentum():
    params = {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 4}
    ours = assert_same("OneCycle", params, 20, betas=False)
    assert "momentum" not in ours
    assert any("betas" in w for w in ours.attrs["warnings"])
    ours = assert_same("OneCycle", {**params, "cycle_momentum": False}, 20)
    assert "momentum" not in ours


@pytest.mark.parametrize("kind", SCHEDULER_TYPES)
def test_resumed_schedule(kind):
    params = {
        "WarmupLR": {"warmup_num_steps": 10},
        "WarmupDecayLR": {"total_num_steps": 30, "warmup_num_steps": 10},
        "WarmupCosineLR": {"total_num_steps": 30, "warmup_num_steps": 10},
        "LRRangeTest": {"lr_range_test_step_size": 3},
        "OneCycle": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 6},
    }[kind]
    ours = assert_same(kind, {**params, "last_batch_iteration": 7}, 30, base_lr=0.05)
    assert ours["lr"].iloc[0] == 0.05


def test_defaults_only():
    for kind in ("WarmupLR", "LRRangeTest"):
        assert_same(kind, {}, 3000)


# ---------------------------------------------------------------- property-based differential tests

finite = st.floats(min_value=1e-8, max_value=1.0, allow_nan=False)
steps_int = st.integers(min_value=1, max_value=60)
wtype = st.sampled_from(["log", "linear"])
hyp = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@hyp
@given(min_lr=finite, max_lr=finite, num=steps_int, wt=wtype, total=st.integers(1, 120), decay=st.booleans())
def test_warmup_property(min_lr, max_lr, num, wt, total, decay):
    params = {"warmup_min_lr": min_lr, "warmup_max_lr": max_lr, "warmup_num_steps": num, "warmup_type": wt}
    if decay:
        assert_same("WarmupDecayLR", {**params, "total_num_steps": total}, total + 5)
    else:
        assert_same("WarmupLR", params, num + 5)


@hyp
@given(base=finite, wmin=st.floats(0, 1), cmin=st.floats(0, 1), num=steps_int, wt=wtype,
       total=st.integers(1, 120))
def test_warmup_cosine_property(base, wmin, cmin, num, wt, total):
    params = {"total_num_steps": total, "warmup_min_ratio": wmin, "cos_min_ratio": cmin,
              "warmup_num_steps": num, "warmup_type": wt}
    assert_same("WarmupCosineLR", params, total + 5, base_lr=base)


@hyp
@given(min_lr=finite, size=steps_int, rate=st.floats(-1, 10), stair=st.booleans())
def test_lr_range_property(min_lr, size, rate, stair):
    params = {"lr_range_test_min_lr": min_lr, "lr_range_test_step_size": size,
              "lr_range_test_step_rate": rate, "lr_range_test_staircase": stair}
    assert_same("LRRangeTest", params, 50)


@hyp
@given(
    lo=finite, hi=finite, first=st.integers(1, 30), second=st.none() | st.integers(0, 30),
    s1=st.integers(0, 6), s2=st.none() | st.integers(0, 6), dstep=st.integers(0, 5),
    dlr=st.sampled_from([0.0, 0.001, 0.5, 2.0]), dmom=st.sampled_from([0.0, 0.01, 0.3]),
    mlo=st.floats(0.5, 0.9), mhi=st.floats(0.5, 0.99), mom=st.booleans(),
)
def test_one_cycle_property(lo, hi, first, second, s1, s2, dstep, dlr, dmom, mlo, mhi, mom):
    params = {"cycle_min_lr": lo, "cycle_max_lr": hi, "cycle_first_step_size": first,
              "cycle_second_step_size": second, "cycle_first_stair_count": s1,
              "cycle_second_stair_count": s2, "decay_step_size": dstep, "decay_lr_rate": dlr,
              "decay_mom_rate": dmom, "cycle_min_mom": mlo, "cycle_max_mom": mhi, "cycle_momentum": mom}
    total = first + (first if second is None else second)
    assert_same("OneCycle", params, total + 15)


# ---------------------------------------------------------------- errors: named, and where DeepSpeed fails


def ds_rejects(kind, params, base_lr=0.01):
    try:
        real_curve(kind, params, 3, base_lr)
    except (ValueError, TypeError, AssertionError, ZeroDivisionError):
        return True
    return False


@pytest.mark.parametrize(
    ("kind", "params", "param"),
    [
        ("WarmupLR", {"warmup_num_steps": 0}, "warmup_num_steps"),
        ("WarmupLR", {"warmup_num_steps": 10.0}, "warmup_num_steps"),
        ("WarmupLR", {"warmup_num_steps": -3}, "warmup_num_steps"),
        ("WarmupLR", {"warmup_max_lr": 0.1, "warmup_min_lr": 0.0, "bogus": 1}, "bogus"),
        ("WarmupDecayLR", {"warmup_num_steps": 10}, "total_num_steps"),
        ("WarmupCosineLR", {"warmup_num_steps": 10}, "total_num_steps"),
        ("WarmupCosineLR", {"total_num_steps": 10, "warmup_min_lr": 0.1}, "warmup_min_lr"),
        ("WarmupCosineLR", {"total_num_steps": 10, "warmup_num_steps": 0}, "warmup_num_steps"),
        ("LRRangeTest", {"lr_range_test_step_size": 0}, "lr_range_test_step_size"),
        ("LRRangeTest", {"lr_range_test_step_size": 2.5}, "lr_range_test_step_size"),
        ("OneCycle", {"cycle_max_lr": 0.1}, "cycle_min_lr"),
        ("OneCycle", {"cycle_min_lr": 0.1}, "cycle_max_lr"),
        ("OneCycle", {"cycle_min_lr": 0.01, "cycle_max_lr": 0.1, "cycle_first_step_size": 0},
         "cycle_first_step_size"),
        ("OneCycle", {"cycle_min_lr": 0.01, "cycle_max_lr": 0.1, "cycle_second_step_size": -1},
         "cycle_second_step_size"),
    ],
)
def test_rejected_like_deepspeed(kind, params, param):
    assert ds_rejects(kind, params), "the real scheduler accepts this, so we must too"
    with pytest.raises(ScheduleError) as info:
        schedule_curve(kind, params, 10, 0.01)
    assert info.value.param == param
    assert param in str(info.value)


@pytest.mark.parametrize(
    ("kind", "params", "param"),
    [
        ("WarmupDecayLR", {"total_num_steps": "auto", "warmup_max_lr": 0.1}, "total_num_steps"),
        ("WarmupLR", {"warmup_max_lr": "auto"}, "warmup_max_lr"),
        ("WarmupLR", {"warmup_num_steps": "auto"}, "warmup_num_steps"),
        ("WarmupLR", {"warmup_min_lr": "0.1"}, "warmup_min_lr"),
        ("WarmupLR", {"warmup_max_lr": [0.1, 0.2]}, "warmup_max_lr"),
    ],
)
def test_bad_values_name_the_parameter(kind, params, param):
    with pytest.raises(ScheduleError) as info:
        schedule_curve(kind, params, 10, 0.01)
    assert info.value.param == param
    assert param in str(info.value)


def test_auto_message_says_resolve():
    with pytest.raises(ScheduleError, match="resolve"):
        schedule_curve("WarmupLR", {"warmup_max_lr": "auto"}, 5)


def test_unknown_type_and_missing_params():
    with pytest.raises(ScheduleError, match="WarmupLR") as info:
        schedule_curve("warmuplr", {}, 10)
    assert info.value.param == "type"
    with pytest.raises(ScheduleError) as info:
        schedule_curve("WarmupLR", None, 10)
    assert info.value.param == "params"


def test_base_lr_needed_when_used():
    with pytest.raises(ScheduleError) as info:
        schedule_curve("WarmupCosineLR", {"total_num_steps": 10}, 10)
    assert info.value.param == "lr"
    with pytest.raises(ScheduleError):
        schedule_curve("WarmupLR", {}, 10)  # warmup_max_lr None -> the optimizer lr
    # not needed when warmup_max_lr is given
    assert len(schedule_curve("WarmupLR", {"warmup_max_lr": 0.1}, 10)) == 10


@pytest.mark.parametrize("steps", [0, -1, 1.5, True, 10**9])
def test_bad_steps(steps):
    with pytest.raises(ScheduleError) as info:
        schedule_curve("WarmupLR", {"warmup_max_lr": 0.1}, steps)
    assert info.value.param == "steps"


@given(params=st.dictionaries(
    st.sampled_from(["warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "total_num_steps",
                     "x"]),
    st.none() | st.booleans() | st.integers(-5, 50) | st.floats(allow_nan=True) | st.text(max_size=5)
    | st.lists(st.floats(0, 1), max_size=3),
    max_size=5))
@settings(max_examples=300, deadline=None)
def test_arbitrary_params_never_crash_unexpectedly(params):
    """Any params: either exactly DeepSpeed's curve or a ScheduleError naming a key."""
    try:
        schedule_curve("WarmupDecayLR", params, 20, 0.01)
    except ScheduleError as exc:
        assert exc.param is not None
        assert exc.param in str(exc) or exc.param == "params"
        return
    assert_same("WarmupDecayLR", params, 20)


def test_config_schedule_curve_reads_optimizer():
    cfg = {"optimizer": {"type": "AdamW", "params": {"lr": 0.2}},
           "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 20, "warmup_num_steps": 5}}}
    frame = config_schedule_curve(cfg, 25)
    lrs, _ = real_curve("WarmupCosineLR", cfg["scheduler"]["params"], 25, 0.2)
    assert list(frame["lr"]) == pytest.approx(lrs, rel=1e-12)
    cfg = {"optimizer": {"type": "SGD", "params": {"lr": 0.2}},
           "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 0.2}}}
    assert "momentum" not in config_schedule_curve(cfg, 5)
    with pytest.raises(ScheduleError):
        config_schedule_curve({}, 5)


CYCLE = {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 2}


@pytest.mark.parametrize(("scheduler", "fragment"), [
    ({"type": "OneCycle", "params": {**CYCLE, "decay_lr_rate": -1, "decay_step_size": 1}},
     "divisor 1 + decay_lr_rate × (steps after the cycle / decay_step_size) zero at step 4"),
    ({"type": "OneCycle", "params": {**CYCLE, "decay_lr_rate": 0.5, "decay_step_size": -3}},
     "zero at step 9 (DeepSpeed then divides by zero)"),
    ({"type": "WarmupLR", "params": {"warmup_min_lr": 1e308, "warmup_max_lr": -1e308}},
     "learning rate leaves float range at step 1"),
    ({"type": "WarmupLR", "params": {"warmup_max_lr": 10 ** 400}}, "within float range, got 10000000000000000000…"),
])
def test_a_schedule_deepspeed_would_crash_on_or_overflow_is_a_schedule_error(scheduler, fragment):
    """These crashed the Optimizer page's chart (ZeroDivisionError, NaN, OverflowError) instead of saying why."""
    config = {"optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}, "scheduler": scheduler}
    with pytest.raises(ScheduleError, match=re.escape(fragment)):
        config_schedule_curve(config, 50)


def test_an_integer_learning_rate_beyond_int64_is_charted_as_a_float():
    config = {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 2 ** 64, "warmup_max_lr": 2 ** 65}}}
    curve = config_schedule_curve(config, 5)
    assert curve["lr"].dtype == float and curve["lr"].iloc[0] == float(2 ** 64)


TORCH_TYPES = ["SGD", "RMSprop", "Rprop", "Adadelta", "ASGD", "Adam", "AdamW", "Adagrad", "NAdam", "RAdam",
               "Adamax"]


@pytest.mark.parametrize("kind, params", [
    ("OneCycle", {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 4}),
    ("WarmupCosineLR", {"total_num_steps": 12, "warmup_num_steps": 3}),
    ("WarmupLR", {"warmup_num_steps": 5}),
], ids=["onecycle", "warmup-cosine", "warmup"])
@pytest.mark.parametrize("opt_type", TORCH_TYPES)
def test_a_config_without_lr_or_betas_charts_what_the_built_optimizer_gets(opt_type, kind, params):
    """An optimizer section without ``lr`` trains on the class's default lr (the chart refused it: "set
    optimizer.params.lr"), and OneCycle cycles momentum only when the class's defaults hold ``betas`` (the chart
    drew momentum for RMSprop, Rprop, Adadelta and ASGD). The real class, built as DeepSpeed builds it, with
    DeepSpeed's scheduler on it, is the judge."""
    weight = torch.nn.Parameter(torch.zeros(1))
    opt = getattr(torch.optim, opt_type)([weight])
    sched = getattr(ds_sched, kind)(opt, **params)
    real = []
    for _ in range(10):
        real.append(float(opt.param_groups[0]["lr"]))
        sched.step()
    config = {"optimizer": {"type": opt_type, "params": {}}, "scheduler": {"type": kind, "params": params}}
    ours = config_schedule_curve(config, 10)
    assert list(ours["lr"]) == pytest.approx(real, rel=1e-12)
    cycles = kind == "OneCycle" and "betas" in opt.defaults
    assert ("momentum" in ours) == cycles, opt.defaults.keys()
    lr_written = any("optimizer's default lr" in a for a in ours.attrs["assumed"])
    assert lr_written


def test_deepspeeds_own_optimizers_default_lr_is_their_signatures():
    """The spec's default lr, which the chart uses when the section writes none, is each class's own."""
    import inspect

    from deepspeed.ops.adam import DeepSpeedCPUAdam, FusedAdam
    from deepspeed.ops.lamb import FusedLamb
    from deepspeed.ops.lion import FusedLion

    from core.schema.optimizer import OPTIMIZERS

    for name, cls in (("adam", FusedAdam), ("adamw", FusedAdam), ("lamb", FusedLamb), ("lion", FusedLion)):
        assert OPTIMIZERS[name].param("lr").default == inspect.signature(cls.__init__).parameters["lr"].default
    assert OPTIMIZERS["adam"].param("lr").default == inspect.signature(DeepSpeedCPUAdam.__init__).parameters[
        "lr"].default
    assert OPTIMIZERS["muon"].has_betas_default is False and OPTIMIZERS["adam"].has_betas_default
