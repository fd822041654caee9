"""The batch-size triangle: train_batch_size = micro batch × accumulation steps × world size.

``resolve_batch`` reproduces DeepSpeed's ``_set_batch_related_parameters`` and
``_batch_assertion`` (runtime/config.py) operation by operation, on the raw
values, so it accepts and rejects exactly what DeepSpeed does; it then explains
the arithmetic and offers values that work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TB = "train_batch_size"
MB = "train_micro_batch_size_per_gpu"
GA = "gradient_accumulation_steps"
BATCH_KEYS = (TB, MB, GA)


@dataclass(frozen=True)
class BatchResolution:
    """Outcome of resolving the trio for one world size."""

    ok: bool
    train_batch_size: Any = None
    micro_batch: Any = None
    grad_accum: Any = None
    world_size: float = 1
    derived: tuple[str, ...] = ()
    problem: str | None = None
    """Which check failed: "missing", "type", "zero-division", "tb-positive", "mb-positive",
    "ga-positive", "product"."""
    message: str = ""


def _provided(config: dict[str, Any], key: str) -> bool:
    return config.get(key) is not None


def resolve_batch(config: dict[str, Any], world_size: float) -> BatchResolution:
    """Resolve the trio exactly as DeepSpeed does for ``world_size`` data-parallel ranks."""
    tb, mb, ga = (config.get(k) for k in BATCH_KEYS)
    w = world_size
    has_tb, has_mb, has_ga = (_provided(config, k) for k in BATCH_KEYS)
    derived: tuple[str, ...] = ()
    not_numbers = [k for k, v in zip(BATCH_KEYS, (tb, mb, ga), strict=True)
                   if v is not None and not isinstance(v, int | float)]
    if not_numbers:
        # DeepSpeed fails on these too (a list even gets repeated by `*` before the comparison fails);
        # never do that arithmetic here.
        names = ", ".join(f"{k}={config.get(k)!r}" for k in not_numbers)
        return BatchResolution(False, tb, mb, ga, w, derived, "type",
                               f"{names} is not a number, so DeepSpeed cannot do the arithmetic")
    try:
        if has_tb and has_mb and has_ga:
            pass
        elif has_tb and has_mb:
            ga = (tb // mb) // w
            derived = (GA,)
        elif has_tb and has_ga:
            mb = (tb // w) // ga
            derived = (MB,)
        elif has_mb and has_ga:
            tb = mb * ga * w
            derived = (TB,)
        elif has_tb:
            ga = 1
            mb = tb // w
            derived = (GA, MB)
        elif has_mb:
            tb = mb * w
            ga = 1
            derived = (TB, GA)
        else:
            return BatchResolution(
                ok=False, world_size=w, problem="missing",
                message="neither train_batch_size nor train_micro_batch_size_per_gpu is set; DeepSpeed needs "
                "at least one of them",
            )
        checks = (
            (tb, "tb-positive", f"train_batch_size is {tb!r}; it has to be greater than 0"),
            (mb, "mb-positive", f"the micro batch per GPU is {mb!r}; it has to be greater than 0"),
            (ga, "ga-positive", f"gradient_accumulation_steps is {ga!r}; it has to be greater than 0"),
        )
        for value, problem, message in checks:
            if not value > 0:
                return BatchResolution(False, tb, mb, ga, w, derived, problem, message)
        if tb != mb * ga * w:
            return BatchResolution(
                False, tb, mb, ga, w, derived, "product",
                f"train_batch_size {tb} ≠ micro batch {mb} × accumulation {ga} × {_fmt(w)} GPUs = {mb * ga * w}",
            )
    except OverflowError:
        return BatchResolution(
            False, tb, mb, ga, w, derived, "overflow",
            "the batch values are too large to compute with (a number beyond the floating-point range)",
        )
    except ZeroDivisionError:
        return BatchResolution(
            False, tb, mb, ga, w, derived, "zero-division",
            "a batch value of 0 makes DeepSpeed divide by zero while deriving the missing one",
        )
    except TypeError:
        bad = [k for k, v in zip(BATCH_KEYS, (config.get(k) for k in BATCH_KEYS), strict=True)
               if v is not None and not isinstance(v, int | float)]
        names = ", ".join(f"{k}={config.get(k)!r}" for k in bad) or "a batch value"
        return BatchResolution(
            False, tb, mb, ga, w, derived, "type", f"{names} is not a number, so DeepSpeed cannot do the arithmetic"
        )
    return BatchResolution(True, tb, mb, ga, w, derived, None, "")


def _fmt(w: float) -> str:
    return str(int(w)) if isinstance(w, float) and w.is_integer() else str(w)


def _as_positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value > 0 else None


def micro_batch_of(config: dict[str, Any], world_size: int) -> int | None:
    """The micro batch per GPU DeepSpeed runs ``config`` with on ``world_size`` GPUs: written, or derived from
    train_batch_size and gradient_accumulation_steps; None when neither gives a positive whole number."""
    resolved = resolve_batch(config, effective_world_size(config, world_size))  # data-parallel ranks, as DeepSpeed
    return _as_positive_int(resolved.micro_batch if resolved.ok else config.get(MB))


def train_batch_of(config: dict[str, Any], world_size: int) -> int | None:
    """The global batch (samples per optimizer step) DeepSpeed runs ``config`` with on ``world_size`` GPUs:
    written, or derived from the micro batch and accumulation; None when neither gives a positive whole number."""
    resolved = resolve_batch(config, effective_world_size(config, world_size))
    return _as_positive_int(resolved.train_batch_size if resolved.ok else config.get(TB))


def batch_suggestions(config: dict[str, Any], world_size: int) -> list[dict[str, int]]:
    """Complete trios that satisfy DeepSpeed for ``world_size``, closest to what the user wrote first.

    Each suggestion keeps as much of the user's input as possible: keep micro batch and
    accumulation (recompute the global batch); keep the global batch and micro batch
    (recompute accumulation, if it divides); keep the global batch and accumulation
    (recompute the micro batch); keep the global batch (largest micro batch ≤ the user's
    that divides it).
    """
    tb, mb, ga = (_as_positive_int(config.get(k)) for k in BATCH_KEYS)
    w = max(1, int(world_size))
    out: list[dict[str, int]] = []

    def add(t: int, m: int, g: int) -> None:
        trio = {TB: t, MB: m, GA: g}
        if t == m * g * w and m > 0 and g > 0 and trio not in out:
            out.append(trio)

    if mb and ga:
        add(mb * ga * w, mb, ga)
    if tb and mb and tb % (mb * w) == 0:
        add(tb, mb, tb // (mb * w))
    if tb and ga and tb % (ga * w) == 0:
        add(tb, tb // (ga * w), ga)
    if tb and tb % w == 0:
        per_gpu = tb // w
        cap = mb or per_gpu
        for m in range(min(cap, per_gpu), 0, -1):
            if per_gpu % m == 0:
                add(tb, m, per_gpu // m)
                break
    if tb and not out:
        # Round the global batch to the nearest multiple that works.
        step = (mb or 1) * w
        lower = max(step, (tb // step) * step)
        add(lower, mb or 1, lower // step)
        add(lower + step, mb or 1, (lower + step) // step)
    if not out and mb:
        add(mb * w, mb, 1)
    return out


def effective_world_size(config: dict[str, Any], world_size: int) -> float:
    """The data-parallel world size DeepSpeed uses: GPUs ÷ sequence_parallel_size when that is set."""
    if "sequence_parallel_size" not in config:
        return world_size
    sp = config["sequence_parallel_size"]
    if isinstance(sp, int | float) and not isinstance(sp, bool) and sp > 0:
        return world_size / sp
    return world_size  # not a usable divisor: a rule reports it


def valid_world_sizes(config: dict[str, Any], max_world_size: int = 1024) -> list[int]:
    """The data-parallel GPU counts (1..max) for which DeepSpeed accepts the batch values."""
    return [w for w in range(1, max_world_size + 1) if resolve_batch(config, effective_world_size(config, w)).ok]
