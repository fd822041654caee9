"""The learning rate (and OneCycle momentum) of DeepSpeed's schedulers, step by step, without torch.

Mirrors ``deepspeed/runtime/lr_schedules.py`` of DeepSpeed 0.19.8 operation for operation, and the older
releases' where their maths or checks differ (``_Release``), so the values are bit-identical to what the real
schedulers write into the optimizer:

* The engine builds the scheduler with ``cls(optimizer, **params)`` before the first step and calls
  ``scheduler.step()`` after every optimizer step that was applied. Row ``step = k`` of the curve is
  the learning rate the k-th optimizer step (0-based) uses, i.e. the value in the optimizer after the
  constructor and ``k`` calls of ``step()``; DeepSpeed's ``last_batch_iteration`` is then
  ``last_batch_iteration0 + k`` for ``k >= 1``.
* At ``k = 0`` each scheduler uses its constructor's value: WarmupLR/WarmupDecayLR ``warmup_min_lr``,
  WarmupCosineLR ``0.0`` (its ``get_lr`` before the start), LRRangeTest ``lr_range_test_min_lr``,
  OneCycle ``cycle_min_lr`` and momentum ``cycle_min_mom`` (the cycle formula would give ``cycle_max_mom``).
  With a resumed ``last_batch_iteration != -1`` the constructor leaves the optimizer's ``lr`` alone,
  so step 0 uses ``base_lr``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.findings import brief, is_number

WARMUP_LR = "WarmupLR"
WARMUP_DECAY_LR = "WarmupDecayLR"
WARMUP_COSINE_LR = "WarmupCosineLR"
ONE_CYCLE = "OneCycle"
LR_RANGE_TEST = "LRRangeTest"

#: DeepSpeed's VALID_LR_SCHEDULES (exact case, as the engine looks them up).
SCHEDULER_TYPES: tuple[str, ...] = (LR_RANGE_TEST, ONE_CYCLE, WARMUP_LR, WARMUP_DECAY_LR, WARMUP_COSINE_LR)

#: Largest number of steps a curve is computed for (a chart needs far fewer points).
MAX_STEPS = 2_000_000

_REQUIRED = object()


class ScheduleError(ValueError):
    """A scheduler type or parameter DeepSpeed would reject (or crash on); ``param`` names the key."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


#: Constructor signatures of 0.19.8 (name -> default; _REQUIRED for parameters without one).
SIGNATURES: dict[str, dict[str, Any]] = {
    LR_RANGE_TEST: {
        "lr_range_test_min_lr": 1e-3,
        "lr_range_test_step_size": 2000,
        "lr_range_test_step_rate": 1.0,
        "lr_range_test_staircase": False,
        "last_batch_iteration": -1,
    },
    ONE_CYCLE: {
        "cycle_min_lr": _REQUIRED,
        "cycle_max_lr": _REQUIRED,
        "decay_lr_rate": 0.0,
        "cycle_first_step_size": 2000,
        "cycle_second_step_size": None,
        "cycle_first_stair_count": 0,
        "cycle_second_stair_count": None,
        "decay_step_size": 0,
        "cycle_momentum": True,
        "cycle_min_mom": 0.8,
        "cycle_max_mom": 0.9,
        "decay_mom_rate": 0.0,
        "last_batch_iteration": -1,
    },
    WARMUP_LR: {
        "warmup_min_lr": 0.0,
        "warmup_max_lr": None,
        "warmup_num_steps": 1000,
        "warmup_type": "log",
        "last_batch_iteration": -1,
    },
    WARMUP_DECAY_LR: {
        "total_num_steps": _REQUIRED,
        "warmup_min_lr": 0.0,
        "warmup_max_lr": 0.001,
        "warmup_num_steps": 1000,
        "warmup_type": "log",
        "last_batch_iteration": -1,
    },
    WARMUP_COSINE_LR: {
        "total_num_steps": _REQUIRED,
        "warmup_min_ratio": 0.0,
        "warmup_num_steps": 1000,
        "cos_min_ratio": 0.0001,
        "warmup_type": "log",
        "last_batch_iteration": -1,
    },
}


@dataclass(frozen=True)
class _Release:
    """Where the chosen release's scheduler differs from 0.19.8's: the messages it raises (its profile's
    ``scheduler_facts``: the argument checks 0.19.3 and 0.19.4 added), the parameters it never reads, what its
    WarmupLR signature says of warmup_max_lr, and two changes of WarmupCosineLR the profiles do not record."""

    version: str
    raises: tuple[str, ...] | None
    unread: frozenset[str]
    #: WarmupCosineLR clamps its cosine at total_num_steps and divides by max(1, total - warm-up): 0.19.3 and later
    #: (0.16.9, 0.17.6, 0.18.9 and the v0.19.0-v0.19.2 sources do not; the cosine climbs back past the total, and
    #: total == warm-up divides by zero when the warm-up ends).
    cosine_clamps: bool
    #: WarmupCosineLR warns and uses 'log' for an unknown warmup_type: 0.19.4 and later (before, its warm-up leaves
    #: the ratio unset: UnboundLocalError at the first step; WarmupLR has the fallback in every release).
    cosine_type_fallback: bool
    #: WarmupLR (and WarmupDecayLR through it) takes a null warmup_max_lr as the optimizer's lr: the releases whose
    #: WarmupLR signature defaults it to None (0.17.2 on, as the v0.17.1/v0.17.2 sources show); before, it subtracts
    #: None (TypeError).
    null_peak_is_lr: bool

    @classmethod
    def of(cls, version: str, scheduler_type: str) -> _Release:
        from core import versions

        at = versions.version_tuple(version)
        return cls(version, versions.scheduler_checks(version, scheduler_type),
                   versions.scheduler_unread(version, scheduler_type), at >= (0, 19, 3), at >= (0, 19, 4),
                   null_peak_is_lr(version))

    def checks(self, fragment: str) -> bool:
        """Whether the scheduler raises the message starting with ``fragment`` (True when the profile has none)."""
        return self.raises is None or any(text.startswith(fragment) for text in self.raises)


@dataclass(frozen=True)
class _Point:
    lr: float
    momentum: float | None = None


# ---------------------------------------------------------------- parameter checking


def param_path(param: str | None) -> str | None:
    """The config path a ``ScheduleError.param`` names (None for the chart's own step count)."""
    if not param or param == "steps":
        return None
    if param == "lr":
        return "optimizer.params.lr"
    if param == "params":
        return "scheduler.params"
    return param if "." in param else f"scheduler.params.{param}"


def _finite(value: int | float) -> bool:
    """A finite float, or an integer a float can hold (DeepSpeed's arithmetic turns it into one)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond float range
        return False


def _shown(value: Any) -> str:
    text = brief(value, 10**9)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def _scalar(name: str, value: Any) -> Any:
    """DeepSpeed accepts a list (one value per param group); a chart has one group."""
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise ScheduleError(
                f"{name}: a list gives one value per optimizer param group; the chart shows one group, "
                f"so give a single number (got {len(value)} values)",
                name,
            )
        return value[0]
    return value


def _auto_message(name: str) -> str:
    return f'{name} is "auto": resolve it (HF Trainer values) before plotting the schedule'


#: Parameters DeepSpeed accepts as one value per optimizer param group (``_format_param``, or a list for
#: LRRangeTest's min lr); every other parameter must be a single number.
_PER_GROUP = frozenset({"warmup_min_lr", "warmup_max_lr", "cycle_min_lr", "cycle_max_lr", "cycle_min_mom",
                        "cycle_max_mom", "lr_range_test_min_lr"})


def _number(name: str, value: Any) -> float:
    if name in _PER_GROUP:
        value = _scalar(name, value)
    if value == "auto":
        raise ScheduleError(_auto_message(name), name)
    if not is_number(value) or not _finite(value):
        raise ScheduleError(f"{name} must be a finite number within float range, got {_shown(value)}", name)
    return value


def _float_read(name: str, value: Any) -> float:
    """A parameter DeepSpeed passes through ``float()`` first (OneCycle's step sizes): a number written as text
    ("100") is that number."""
    if isinstance(value, str) and value != "auto":
        with contextlib.suppress(ValueError):  # a text that is no number is refused below, shown as it is
            value = float(value)
    return float(_number(name, value))


def _positive_int(name: str, value: Any) -> int:
    if value == "auto":
        raise ScheduleError(_auto_message(name), name)
    # DeepSpeed checks isinstance(int) and > 0; a bool would pass that check but is never meant.
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ScheduleError(f"{name} must be a positive integer, got {brief(value)}", name)
    return value


def _bound_params(scheduler_type: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    if scheduler_type not in SIGNATURES:
        raise ScheduleError(
            f"scheduler type {brief(scheduler_type)} has no chart; DeepSpeed's schedulers are "
            f"{', '.join(SCHEDULER_TYPES)} (exact case)",
            "type",
        )
    if params is None:
        # The engine calls cls(optimizer, **None) -> TypeError.
        raise ScheduleError("scheduler.params is missing: DeepSpeed needs a params object (may be {})",
                            "params")
    if not isinstance(params, Mapping):
        raise ScheduleError(f"scheduler.params must be an object, got {type(params).__name__}", "params")
    signature = SIGNATURES[scheduler_type]
    unknown = sorted(set(params) - set(signature))
    if unknown:
        raise ScheduleError(
            f"{scheduler_type} has no parameter {brief(unknown[0])} (DeepSpeed raises TypeError); "
            f"its parameters are {', '.join(signature)}",
            unknown[0],
        )
    bound = {**signature, **params}
    for name, value in bound.items():
        if value is _REQUIRED:
            raise ScheduleError(f"{scheduler_type} needs {brief(name)} in scheduler.params", name)
    lbi = bound["last_batch_iteration"]
    if not isinstance(lbi, int) or isinstance(lbi, bool) or lbi < -1:
        raise ScheduleError(f"last_batch_iteration must be an integer >= -1, got {brief(lbi)}",
                            "last_batch_iteration")
    return bound


def _warmup_type(value: Any, warnings: list[str], unknown_fails: str | None = None) -> str:
    """The warm-up shape; ``unknown_fails`` says how the release fails on an unknown one (None: it warns and uses
    'log')."""
    if not isinstance(value, str):
        raise ScheduleError(f"warmup_type must be 'log' or 'linear', got {brief(value)}", "warmup_type")
    if value not in {"log", "linear"}:
        if unknown_fails:
            raise ScheduleError(f"warmup_type {brief(value)} is unknown: {unknown_fails}; use 'log' or 'linear'",
                                "warmup_type")
        warnings.append(f"warmup_type {brief(value)} is unknown: DeepSpeed warns and uses 'log'")
        return "log"
    return value


def _warmup_steps(bound: dict[str, Any], release: _Release) -> int | float:
    """``max(2, warmup_num_steps)`` as the release computes it: from 0.19.3 the value must be a positive integer;
    before, any number is taken (0 or -3 warm up over 2 steps, 10.0 over 10)."""
    value = bound["warmup_num_steps"]
    if release.checks("warmup_num_steps must be a positive integer"):
        return max(2, _positive_int("warmup_num_steps", value))
    if value == "auto":
        raise ScheduleError(_auto_message("warmup_num_steps"), "warmup_num_steps")
    return max(2, _number("warmup_num_steps", value))


def _truthy(name: str, value: Any) -> bool:
    """A switch every release reads with ``if value:`` (1 or "false" are on, 0 and "" off)."""
    if value == "auto":
        raise ScheduleError(_auto_message(name), name)
    return bool(value)


def _need_base_lr(base_lr: float | None, why: str) -> float:
    if base_lr is None or base_lr == "auto":
        raise ScheduleError(f"the optimizer's lr is needed ({why}); set optimizer.params.lr", "lr")
    if not is_number(base_lr) or not _finite(base_lr):
        raise ScheduleError(f"optimizer lr must be a finite number within float range, got {_shown(base_lr)}",
                            "lr")
    return base_lr


# ---------------------------------------------------------------- the schedulers


def _warmup(bound: dict[str, Any], base_lr: float | None, warnings: list[str], decay: bool, release: _Release):
    min_lr = _number("warmup_min_lr", bound["warmup_min_lr"])
    if bound["warmup_max_lr"] is None and not release.null_peak_is_lr:
        raise ScheduleError(f"warmup_max_lr is null: DeepSpeed {release.version}'s WarmupLR does not read it as the "
                            "optimizer's lr and subtracts it (TypeError); give a number, or leave it out for the "
                            "release's default", "warmup_max_lr")
    if bound["warmup_max_lr"] is None:
        max_lr = _need_base_lr(base_lr, "warmup_max_lr is not set, so WarmupLR warms up to the optimizer lr")
    else:
        max_lr = _number("warmup_max_lr", bound["warmup_max_lr"])
    num_steps = _warmup_steps(bound, release)
    total = _number("total_num_steps", bound["total_num_steps"]) if decay else None
    if decay and total < num_steps:
        warnings.append(f"total_num_steps {total} is less than warmup_num_steps {bound['warmup_num_steps']}")
    kind = _warmup_type(bound["warmup_type"], warnings)
    delta = max_lr - min_lr
    inverse_log = 1.0 / math.log(num_steps)

    def gamma(it: int) -> float:
        if it < num_steps:
            if kind == "log":
                return inverse_log * math.log(it + 1)
            return it / num_steps
        if not decay:
            return 1.0
        return max(0.0, float(total - it) / float(max(1.0, total - num_steps)))

    def at(it: int) -> _Point:
        if it < 0:
            return _Point(min_lr)
        return _Point(min_lr + (delta * gamma(it)))

    return at, _Point(min_lr)


def _warmup_cosine(bound: dict[str, Any], base_lr: float | None, warnings: list[str], release: _Release):
    org_lr = _need_base_lr(base_lr, "WarmupCosineLR scales the optimizer lr by a ratio")
    total = _number("total_num_steps", bound["total_num_steps"])
    min_ratio = _number("warmup_min_ratio", bound["warmup_min_ratio"])
    cos_min_ratio = _number("cos_min_ratio", bound["cos_min_ratio"])
    num_steps = _warmup_steps(bound, release)
    warms_up = bound["last_batch_iteration"] + 1 < num_steps  # a resumed run past the warm-up never reads the type
    kind = _warmup_type(bound["warmup_type"], warnings, None if release.cosine_type_fallback or not warms_up else (
        f"DeepSpeed {release.version}'s WarmupCosineLR has no fallback for it and raises UnboundLocalError at the "
        "first step of the warm-up"))
    if total < num_steps:
        warnings.append(f"total_num_steps {total} is less than warmup_num_steps {bound['warmup_num_steps']}")
    if not release.cosine_clamps and total == num_steps:
        raise ScheduleError(
            f"total_num_steps {brief(total)} equals the warm-up ({brief(num_steps)} steps): DeepSpeed "
            f"{release.version}'s WarmupCosineLR divides by total_num_steps - warmup_num_steps when the warm-up "
            f"ends (ZeroDivisionError at step {brief(num_steps)}); give a total larger than the warm-up",
            "total_num_steps")
    inverse_log = 1.0 / math.log(num_steps)

    def ratio(it: int) -> float:
        if it < num_steps:
            r = inverse_log * math.log(it + 1) if kind == "log" else it / num_steps
            return min_ratio + r * (1.0 - min_ratio)
        real_last_step = it - num_steps + 1
        if release.cosine_clamps:
            progress = min(1.0, real_last_step / max(1, total - num_steps))
        else:
            progress = real_last_step / (total - num_steps)
        r = (1 + math.cos(math.pi * progress)) / 2
        return max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * r)

    def at(it: int) -> _Point:
        if it < 0:
            return _Point(0.0)
        return _Point(org_lr * ratio(it))

    return at, _Point(0.0)


def _lr_range_test(bound: dict[str, Any], warnings: list[str], release: _Release):
    min_lr = _number("lr_range_test_min_lr", bound["lr_range_test_min_lr"])
    if release.checks("lr_range_test_step_size must be a positive integer"):
        step_size: int | float = _positive_int("lr_range_test_step_size", bound["lr_range_test_step_size"])
    else:  # up to 0.19.3 any number is taken, and 0 divides by zero at the first step
        step_size = _number("lr_range_test_step_size", bound["lr_range_test_step_size"])
        if step_size == 0:
            raise ScheduleError(f"lr_range_test_step_size 0: DeepSpeed {release.version}'s LRRangeTest divides by it "
                                "at the first step (ZeroDivisionError); give a positive step size",
                                "lr_range_test_step_size")
    step_rate = _number("lr_range_test_step_rate", bound["lr_range_test_step_rate"])
    staircase = _truthy("lr_range_test_staircase", bound["lr_range_test_staircase"])

    def at(it: int) -> _Point:
        interval = math.floor(float(it + 1) / step_size) if staircase else float(it + 1) / step_size
        return _Point(min_lr * (1 + step_rate * interval))

    return at, _Point(min_lr)


def _one_cycle(bound: dict[str, Any], warnings: list[str], optimizer_has_betas: bool, release: _Release):
    first = _float_read("cycle_first_step_size", bound["cycle_first_step_size"])
    second_raw = bound["cycle_second_step_size"]
    second = _float_read("cycle_second_step_size", second_raw) if second_raw is not None else first
    # up to 0.19.3 the sizes are not checked: the arithmetic below divides by zero where DeepSpeed's does
    if first <= 0 and release.checks("cycle_first_step_size must be positive"):
        raise ScheduleError(f"cycle_first_step_size must be positive, got {first}", "cycle_first_step_size")
    if second < 0 and release.checks("cycle_second_step_size must be non-negative"):
        raise ScheduleError(f"cycle_second_step_size must be non-negative, got {second}",
                            "cycle_second_step_size")
    total_size = first + second
    step_ratio = first / total_size
    if "cycle_first_stair_count" in release.unread:  # stored, never used: the cycle stays continuous
        first_stairs = second_stairs = 0.0
    else:
        first_stairs = _number("cycle_first_stair_count", bound["cycle_first_stair_count"])
        second_raw = bound["cycle_second_stair_count"]
        second_stairs = first_stairs if second_raw is None else _number("cycle_second_stair_count", second_raw)
    decay_step_size = _number("decay_step_size", bound["decay_step_size"])
    skip_lr_decay = skip_mom_decay = math.isclose(decay_step_size, 0)
    min_lr = _number("cycle_min_lr", bound["cycle_min_lr"])
    max_lr = _number("cycle_max_lr", bound["cycle_max_lr"])
    decay_lr_rate = _number("decay_lr_rate", bound["decay_lr_rate"])
    if math.isclose(decay_lr_rate, 0):
        skip_lr_decay = True
    cycle_momentum = _truthy("cycle_momentum", bound["cycle_momentum"])
    if cycle_momentum and not optimizer_has_betas:
        warnings.append("cycle_momentum is disabled: the optimizer has no betas (DeepSpeed warns, skips it)")
        cycle_momentum = False
    if cycle_momentum:
        min_mom = _number("cycle_min_mom", bound["cycle_min_mom"])
        max_mom = _number("cycle_max_mom", bound["cycle_max_mom"])
        decay_mom_rate = _number("decay_mom_rate", bound["decay_mom_rate"])
        if math.isclose(decay_mom_rate, 0):
            skip_mom_decay = True

    def scale_factor(it: int) -> float:
        batch_iteration = it + 1
        cycle = math.floor(1 + batch_iteration / total_size)
        x = 1.0 + batch_iteration / total_size - cycle
        if x <= step_ratio:
            factor = x / step_ratio
            stair_count = first_stairs
        else:
            factor = (x - 1) / (step_ratio - 1)
            stair_count = second_stairs
        if stair_count > 0:
            cycle_iteration = batch_iteration % total_size
            if cycle_iteration <= first:
                stair_position = cycle_iteration * stair_count / first
            else:
                stair_position = (total_size - cycle_iteration) * stair_count / second
            factor = math.floor(stair_position) / stair_count
        return factor

    def at(it: int) -> _Point:
        in_cycle = it < total_size
        factor = scale_factor(it) if in_cycle else 0.0
        if in_cycle:
            lr = min_lr + (max_lr - min_lr) * factor
        elif skip_lr_decay:
            lr = min_lr
        else:
            divisor = 1 + decay_lr_rate * ((it - total_size + 1) / decay_step_size)
            if divisor <= 0:  # DeepSpeed's _get_decay_lr divides by it: ZeroDivisionError, or a negative lr
                raise ScheduleError(
                    f"decay_lr_rate {decay_lr_rate:g} with decay_step_size {decay_step_size:g} makes OneCycle's "
                    f"decay divisor 1 + decay_lr_rate × (steps after the cycle / decay_step_size) "
                    f"{'zero' if divisor == 0 else 'negative'} at step {it} (DeepSpeed then "
                    f"{'divides by zero' if divisor == 0 else 'sets a negative learning rate'}); give both a "
                    "positive value, or decay_step_size 0 for no decay", "decay_lr_rate")
            lr = min_lr / divisor
        if not cycle_momentum:
            return _Point(lr)
        if in_cycle:
            mom = max_mom - (max_mom - min_mom) * factor
        elif skip_mom_decay:
            mom = max_mom
        else:
            mom = max_mom * (1 + decay_mom_rate * ((it - total_size + 1) / decay_step_size))
        return _Point(lr, mom)

    return at, _Point(min_lr, min_mom if cycle_momentum else None)


# ---------------------------------------------------------------- public API


def schedule_curve(
    scheduler_type: str,
    params: Mapping[str, Any] | None,
    steps: int,
    base_lr: float | None = None,
    *,
    optimizer_has_betas: bool = True,
    version: str = "0.19.8",
) -> pd.DataFrame:
    """Learning rate per optimizer step, as DeepSpeed ``version``'s scheduler ``scheduler_type`` sets it.

    ``params`` is the config's ``scheduler.params``; ``base_lr`` the optimizer's ``lr`` (needed by
    WarmupCosineLR, by WarmupLR without ``warmup_max_lr`` and when resuming); ``optimizer_has_betas``
    is False for optimizers without ``betas`` (SGD ...), for which OneCycle does not cycle momentum.
    Returns columns ``step``, ``lr`` and, for OneCycle with momentum, ``momentum`` (beta1);
    ``df.attrs["warnings"]`` lists what DeepSpeed would warn about. Raises ScheduleError (``.param``
    names the offending key) for anything DeepSpeed would reject or crash on.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= MAX_STEPS:
        raise ScheduleError(f"steps must be an integer from 1 to {MAX_STEPS}, got {brief(steps)}", "steps")
    bound = _bound_params(scheduler_type, params)
    try:
        return _curve(scheduler_type, bound, steps, base_lr, optimizer_has_betas, _Release.of(version, scheduler_type))
    except (OverflowError, ZeroDivisionError) as exc:  # the same arithmetic fails in DeepSpeed's scheduler
        raise ScheduleError(f"DeepSpeed's {scheduler_type} arithmetic fails with these values ({type(exc).__name__}: "
                            f"{exc}); give step sizes and learning rates of a trainable size") from exc


def _curve(scheduler_type: str, bound: dict[str, Any], steps: int, base_lr: float | None,
           optimizer_has_betas: bool, release: _Release) -> pd.DataFrame:
    """``schedule_curve`` once the parameters are bound."""
    warnings: list[str] = []
    at: Callable[[int], _Point]
    if scheduler_type in (WARMUP_LR, WARMUP_DECAY_LR):
        bound.setdefault("total_num_steps", None)
        at, initial = _warmup(bound, base_lr, warnings, scheduler_type == WARMUP_DECAY_LR, release)
    elif scheduler_type == WARMUP_COSINE_LR:
        at, initial = _warmup_cosine(bound, base_lr, warnings, release)
    elif scheduler_type == LR_RANGE_TEST:
        at, initial = _lr_range_test(bound, warnings, release)
    else:
        at, initial = _one_cycle(bound, warnings, optimizer_has_betas, release)

    lbi0 = bound["last_batch_iteration"]
    if lbi0 != -1:
        # A resumed scheduler does not touch the optimizer until its first step().
        kept_lr = _need_base_lr(base_lr, "last_batch_iteration is set, so step 0 keeps the optimizer lr")
        initial = _Point(kept_lr, None if initial.momentum is None else math.nan)
        if initial.momentum is not None:
            warnings.append("momentum at step 0 is the optimizer's own beta1 (resumed scheduler)")
    points = [initial] + [at(lbi0 + k) for k in range(1, steps)]
    lrs = [float(p.lr) for p in points]  # an integer lr (2**64) as the float DeepSpeed's arithmetic makes it
    moms = [p.momentum for p in points]
    for series, values in (("learning rate", lrs), ("momentum", moms)):
        step = next((i for i, v in enumerate(values) if v is not None and not _finite(v) and not (
            i == 0 and lbi0 != -1)), None)  # a resumed scheduler's step 0 momentum is unknown (nan) on purpose
        if step is not None:
            raise ScheduleError(f"the {series} leaves float range at step {step} (bounds too far apart to "
                                "interpolate between, or a decay that overflows): give values of a trainable size")
    data: dict[str, list[Any]] = {"step": list(range(steps)), "lr": lrs}
    if initial.momentum is not None or any(p.momentum is not None for p in points[1:]):
        data["momentum"] = [math.nan if p.momentum is None else p.momentum for p in points]
    frame = pd.DataFrame(data)
    frame.attrs["warnings"] = warnings
    return frame


def null_peak_is_lr(version: str) -> bool:
    """Whether DeepSpeed ``version``'s WarmupLR (and WarmupDecayLR, which passes its ``warmup_max_lr`` on) reads a
    null ``warmup_max_lr`` as the optimizer's lr: where the profile records its signature default as None (0.17.2
    on); before, ``__init__`` subtracts it (TypeError at deepspeed.initialize)."""
    found, peak = scheduler_param_default(WARMUP_LR, "warmup_max_lr", version)
    return not found or peak is None


def scheduler_param_default(scheduler_type: Any, name: str, version: str) -> tuple[bool, Any]:
    """(True, the default) of scheduler parameter ``name`` in DeepSpeed ``version`` as its profile records it
    (WarmupLR's warmup_max_lr is 0.001 in 0.16.x, None later: the optimizer's lr), else (False, None)."""
    from core import versions

    entry = versions.profile(version).get("schedulers", {}).get(scheduler_type) if isinstance(scheduler_type, str) \
        else None
    info = entry.get(name) if isinstance(entry, Mapping) else None
    return (True, info["default"]) if isinstance(info, Mapping) and "default" in info else (False, None)


def release_params(scheduler_type: Any, params: Any, version: str) -> Any:
    """``params`` with DeepSpeed ``version``'s own defaults written in where they differ from ``SIGNATURES`` (the
    newest release's), so the curve is the one that release draws; anything else as given."""
    signature = SIGNATURES.get(scheduler_type) if isinstance(scheduler_type, str) else None
    if signature is None or not isinstance(params, Mapping):
        return params
    differ = {}
    for name, default in signature.items():
        found, own = scheduler_param_default(scheduler_type, name, version)
        if name not in params and default is not _REQUIRED and found and own != default:
            differ[name] = own
    return {**params, **differ} if differ else params


def config_schedule_curve(config: Mapping[str, Any], steps: int, version: str = "0.19.8") -> pd.DataFrame:
    """``schedule_curve`` for a whole DeepSpeed config (reads ``scheduler`` and ``optimizer``). A learning rate
    the optimizer section leaves out is the built optimizer's default, as in DeepSpeed (FusedAdam's 1e-3, SGD's
    1e-3, Adagrad's 1e-2); OneCycle cycles momentum only for an optimizer whose defaults hold ``betas``."""
    scheduler = config.get("scheduler")
    if not isinstance(scheduler, Mapping) or "type" not in scheduler:
        raise ScheduleError("the config has no scheduler with a type", "scheduler.type")
    optimizer = config.get("optimizer")
    base_lr = None
    assumed: list[str] = []
    has_betas = True  # an optimizer the studio does not know (a client optimizer): assumed Adam-like
    if isinstance(optimizer, Mapping):
        defaults_lr, defaults_betas, name = _optimizer_defaults(config, version)
        opt_params = optimizer.get("params")
        given = opt_params if isinstance(opt_params, Mapping) else {}
        if name == "muon":
            base_lr, assumed = _muon_group_lr(given)
        else:
            base_lr = given.get("lr", defaults_lr)
            if "lr" not in given and is_number(base_lr):
                assumed = [f"optimizer.params.lr is not written: the optimizer's default lr, {base_lr:g}, as "
                           "DeepSpeed builds it"]
        if defaults_betas is not None:
            has_betas = defaults_betas
    frame = schedule_curve(scheduler["type"], release_params(scheduler["type"], scheduler.get("params"), version),
                           steps, base_lr, optimizer_has_betas=has_betas, version=version)
    frame.attrs["assumed"] = assumed
    return frame


#: The lr of MuonWithAuxAdam's groups when the engine hands it none (``group.get("lr", 0.02)`` for the Muon group,
#: ``3e-4`` for the Adam group, in runtime/zero/muon/original_muon.py of each installed release with Muon: 0.17.6,
#: 0.18.9, 0.19.5 to 0.19.8; the profiles record the class's constructor, which takes no lr).
MUON_GROUP_LR = 0.02
MUON_ADAM_GROUP_LR = 3e-4


def _muon_group_lr(given: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The lr of Muon's group of 2-D weight matrices, the group the curve draws, and the caption saying so: the
    engine gives that group ``muon_lr``, else ``lr``, else Muon's default; the Adam group ``adam_lr``, else ``lr``,
    else its own (``DeepSpeedEngine._muon_param_groups``)."""

    def written(override: str, default: float) -> tuple[Any, str]:
        key = next((k for k in (override, "lr") if k in given), None)
        return (given[key], f"{key} {brief(given[key])}") if key else (default, f"Muon's default {default:g}")

    lr, muon_from = written("muon_lr", MUON_GROUP_LR)
    _, adam_from = written("adam_lr", MUON_ADAM_GROUP_LR)
    return lr, [f"the curve is the learning rate of Muon's group of 2-D weight matrices ({muon_from}); the Adam group "
                f"of the other parameters has its own ({adam_from})"]


def _optimizer_defaults(config: Mapping[str, Any], version: str) -> tuple[Any, bool | None, str | None]:
    """(the default lr, whether ``betas`` is in the defaults, the studio's name for it) of the optimizer
    ``deepspeed.initialize`` builds from the config's section; (None, None, None) when it is not one the studio
    knows."""
    from core.effective import effective
    from core.rules import torch_checks

    meaning = effective(config, version)
    if meaning.torch_optimizer is not None and torch_checks.known(meaning.torch_optimizer):
        defaults = torch_checks.defaults(meaning.torch_optimizer)
        return defaults.get("lr"), "betas" in defaults, None
    spec = meaning.optimizer_spec
    if spec is None:
        return None, None, None
    lr = spec.param("lr")
    return (lr.default if lr is not None else None), spec.has_betas_default, spec.name
