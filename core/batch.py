"""The batch-size triangle: train_batch_size = micro batch × accumulation steps × world size.

``resolve_batch`` reproduces DeepSpeed's ``_set_batch_related_parameters`` and
``_batch_assertion`` (runtime/config.py) operation by operation, on the raw
values, so it accepts and rejects exactly what DeepSpeed does; it then explains
the arithmetic and offers values that work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.findings import brief

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


def shown(value: Any) -> str:
    """A batch value as the user wrote it in JSON, saying how DeepSpeed reads a boolean (as 0 or 1)."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (DeepSpeed reads it as {int(value)})"
    return brief(value)


def resolve_batch(config: dict[str, Any], world_size: float, ranks: str = "GPUs") -> BatchResolution:
    """Resolve the trio exactly as DeepSpeed does for ``world_size`` data-parallel ranks (``ranks``: what the
    product's message calls them, e.g. "data-parallel ranks (3 GPUs ÷ sequence_parallel_size 2)")."""
    tb, mb, ga = (config.get(k) for k in BATCH_KEYS)
    w = world_size
    has_tb, has_mb, has_ga = (_provided(config, k) for k in BATCH_KEYS)
    derived: tuple[str, ...] = ()
    not_numbers = [k for k, v in zip(BATCH_KEYS, (tb, mb, ga), strict=True)
                   if v is not None and not isinstance(v, int | float)]
    if not_numbers:
        # DeepSpeed fails on these too (a list even gets repeated by `*` before the comparison fails);
        # never do that arithmetic here.
        names = ", ".join(f"{k}={brief(config.get(k))}" for k in not_numbers)
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
            (tb, "tb-positive", f"train_batch_size is {shown(tb)}; it has to be greater than 0"),
            (mb, "mb-positive", f"the micro batch per GPU is {shown(mb)}; it has to be greater than 0"),
            (ga, "ga-positive", f"gradient_accumulation_steps is {shown(ga)}; it has to be greater than 0"),
        )
        for value, problem, message in checks:
            if not value > 0:
                return BatchResolution(False, tb, mb, ga, w, derived, problem, message)
        if tb != mb * ga * w:
            return BatchResolution(
                False, tb, mb, ga, w, derived, "product",
                f"train_batch_size {tb} ≠ micro batch {mb} × accumulation {ga} × {number_text(w)} {ranks} = "
                f"{number_text(mb * ga * w)}",
            )
    except OverflowError:
        return BatchResolution(
            False, tb, mb, ga, w, derived, "overflow",
            "the batch values are too large to compute with (a number beyond the floating-point range)",
        )
    except ZeroDivisionError:
        zeros = [f"{k} is {shown(config[k])}" for k in (MB, GA) if _provided(config, k) and config[k] == 0]
        culprit = " and ".join(zeros) or "a batch value is 0"
        return BatchResolution(
            False, tb, mb, ga, w, derived, "zero-division",
            f"{culprit}, and DeepSpeed divides by it while deriving the missing value",
        )
    except TypeError:
        bad = [k for k, v in zip(BATCH_KEYS, (config.get(k) for k in BATCH_KEYS), strict=True)
               if v is not None and not isinstance(v, int | float)]
        names = ", ".join(f"{k}={brief(config.get(k))}" for k in bad) or "a batch value"
        return BatchResolution(
            False, tb, mb, ga, w, derived, "type", f"{names} is not a number, so DeepSpeed cannot do the arithmetic"
        )
    return BatchResolution(True, tb, mb, ga, w, derived, None, "")


def number_text(value: float) -> str:
    """A count in a message: 4.0 as 4, 2.6666666666666665 as 2.6667."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{round(value, 4):g}" if isinstance(value, float) else str(value)


def _whole_seed(value: Any) -> int | None:
    """What a suggestion starts from: a positive whole number as DeepSpeed reads the value (true is 1), a
    fractional one cut to its whole part (32.5 -> 32), a negative one's magnitude (-8 -> 8); None when there is
    nothing to keep."""
    if isinstance(value, bool):
        return 1 if value else None
    if not isinstance(value, int | float) or not abs(value) >= 1 or abs(value) == float("inf"):
        return None
    return int(abs(value))


def whole(value: Any) -> int | None:
    """A whole number as DeepSpeed's arithmetic (and hjson, reading a file) takes it: an int, or a float without a
    fraction (4.0 is 4); None otherwise (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def positive_whole(value: Any) -> int | None:
    """A batch count as DeepSpeed's arithmetic takes it: a positive :func:`whole` number (a derived 2.0 is 2)."""
    found = whole(value)
    return found if found is not None and found > 0 else None


def micro_and_accum_of(config: dict[str, Any], world_size: int,
                       version: str | None = None) -> tuple[int, int] | None:
    """The micro batch and accumulation DeepSpeed resolves ``config`` to on ``world_size`` GPUs (data-parallel
    ranks, as DeepSpeed ``version`` counts them), written or derived; None when the batch keys do not resolve to
    whole ones."""
    resolved = resolve_batch(config, effective_world_size(config, world_size, version))
    micro, accum = positive_whole(resolved.micro_batch), positive_whole(resolved.grad_accum)
    return (micro, accum) if resolved.ok and micro is not None and accum is not None else None


def runs_elastic(config: Mapping[str, Any], version: str) -> bool:
    """Whether DeepSpeed ``version`` computes the batch itself: elastic training on, in a release that reads it."""
    from core.elasticity import elastic_section

    return elastic_section(config, version) is not None


def batch_run(config: dict[str, Any], world_size: int, version: str) -> tuple[int, int, int] | None:
    """(train_batch_size, micro batch, accumulation) DeepSpeed ``version`` runs ``config`` with on ``world_size``
    GPUs: what elastic training computes when the release acts on an enabled ``elasticity`` section (it ignores
    the batch keys), else the batch keys resolved over the data-parallel ranks; None when they do not resolve to
    whole numbers or elastic training refuses the GPU count."""
    from core.elasticity import elastic_batch_for

    if runs_elastic(config, version):
        found = elastic_batch_for(config, world_size, version)
        if found is None or not found.world_size_ok or found.micro_batch is None \
                or found.gradient_accumulation_steps is None:
            return None
        return found.train_batch_size, found.micro_batch, found.gradient_accumulation_steps
    resolved = resolve_batch(config, effective_world_size(config, world_size, version))
    tb, micro, accum = (positive_whole(v) for v in (resolved.train_batch_size, resolved.micro_batch,
                                                     resolved.grad_accum))
    if not resolved.ok or tb is None or micro is None or accum is None:
        return None
    return tb, micro, accum


def run_or_written(config: dict[str, Any], world_size: int, version: str, key: str) -> int | None:
    """The value of batch key ``key`` (``TB``, ``MB`` or ``GA``) DeepSpeed ``version`` runs ``config`` with on
    ``world_size`` GPUs: ``batch_run``'s, else, where the batch keys do not resolve to whole numbers, the written
    ``key`` when it is one (a refusal names it, and sizing goes on with it); None when neither gives one or elastic
    training, which ignores the batch keys, refuses the GPU count. The CLI and the app both read the batch a config
    runs with here."""
    run = batch_run(config, world_size, version)
    if run is not None:
        return run[BATCH_KEYS.index(key)]  # batch_run's triple is in BATCH_KEYS' order
    return None if runs_elastic(config, version) else positive_whole(config.get(key))


def micro_batch_one(written: Any) -> tuple[int, str]:
    """Micro batch 1 and the words saying it is assumed, for a config whose micro batch (``written``, None when
    missing) sizes nothing: the app and the CLI size and say the same."""
    what = '"auto"' if written == "auto" else "not set" if written is None else "not resolvable"
    return 1, f"micro batch 1 assumed: the config's micro batch is {what}"


def batch_suggestions(config: dict[str, Any], world_size: int) -> list[dict[str, int]]:
    """Complete trios that satisfy DeepSpeed for ``world_size``, closest to what the user wrote first.

    A fractional value counts as its whole part, a negative one as its magnitude, a boolean as DeepSpeed reads
    it. Each suggestion keeps as much
    of the user's input as possible: keep micro batch and
    accumulation (recompute the global batch); keep the global batch and micro batch
    (recompute accumulation, if it divides); keep the global batch and accumulation
    (recompute the micro batch); keep the global batch (largest micro batch ≤ the user's
    that divides it); else the nearest global batch that works, with the micro batch (or the accumulation) kept.
    """
    tb, mb, ga = (_whole_seed(config.get(k)) for k in BATCH_KEYS)
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
        m = _largest_divisor_at_most(per_gpu, mb or per_gpu)
        if m:
            add(tb, m, per_gpu // m)
    if tb and not out:
        # Round the global batch to the nearest multiple that works (nearest first; a tie goes to the smaller),
        # keeping the micro batch, else the accumulation, else deriving as DeepSpeed does (micro = tb / GPUs).
        unit = (mb or ga or 1) * w
        lower = max(unit, (tb // unit) * unit)
        candidates = [lower] + ([lower + unit] if lower < tb else [])
        for t in sorted(candidates, key=lambda c: (abs(c - tb), c)):
            if mb:
                add(t, mb, t // unit)
            else:
                add(t, t // unit if ga else t // w, ga or 1)
    if not out and mb:
        add(mb * w, mb, 1)
    return out


#: Beyond this many samples per GPU the divisor search (square-root time) is skipped: no real batch is near it,
#: and a typed 1e18 must not stall validation.
_DIVISOR_SEARCH_LIMIT = 10**10


def _largest_divisor_at_most(n: int, cap: int) -> int | None:
    """The largest divisor of ``n`` that is at most ``cap`` (None when ``n`` is too large to search)."""
    if cap >= n:
        return n
    if n > _DIVISOR_SEARCH_LIMIT:
        return None
    best = 1
    i = 1
    while i * i <= n:
        if n % i == 0:
            for d in (i, n // i):
                if best < d <= cap:
                    best = d
        i += 1
    return best


def reads_sequence_parallel(version: str | None) -> bool:
    """Whether DeepSpeed ``version`` reads ``sequence_parallel_size`` (0.16.x does not; None: a release that does)."""
    from core import versions

    return version is None or bool(versions.key_known(version, "", "sequence_parallel_size"))


def effective_world_size(config: dict[str, Any], world_size: int, version: str | None = None) -> float:
    """The data-parallel world size DeepSpeed ``version`` uses: GPUs ÷ sequence_parallel_size when that is set
    and the release reads it (``reads_sequence_parallel``); where it cannot divide by it (0, not a number), what the
    release falls back to (1 in 0.17-0.18: ``versions.world_size_when_sequence_parallel_fails``)."""
    if "sequence_parallel_size" not in config or not reads_sequence_parallel(version):
        return world_size
    sp = config["sequence_parallel_size"]
    if isinstance(sp, int | float) and not isinstance(sp, bool) and sp > 0:
        return world_size / sp
    if version is not None:
        from core import versions

        fallback = versions.world_size_when_sequence_parallel_fails(version, sp)
        if fallback is not None:  # the release swallows the failed division and checks the batch on this
            return fallback
    return world_size  # not a usable divisor: a rule reports it


def sequence_parallel_degree(config: dict[str, Any]) -> int | None:
    """The ``sequence_parallel_size`` DeepSpeed divides the GPUs by, when it is a whole number above 1 (None when
    unset, 1, or a value a rule reports): sequence parallelism that changes the data-parallel size."""
    sp = config.get("sequence_parallel_size")
    if isinstance(sp, float) and sp.is_integer():
        sp = int(sp)
    return sp if isinstance(sp, int) and not isinstance(sp, bool) and sp > 1 else None


def parallel_groups_whole(gpus: Any, group_size: int) -> Any:
    """Whether ``gpus`` GPUs (a number or a numpy array of them) split into whole model-parallel groups of
    ``group_size`` (autotp_size x sequence_parallel_size): where not, the models ignore that parallelism."""
    return gpus % group_size == 0 if group_size > 1 else gpus == gpus


def parallelism_left_out(gpus: int, degrees: dict[str, int], what: str) -> str | None:
    """Why the models ignore model parallelism on ``gpus`` GPUs, or None: its groups (``degrees``, e.g.
    ``{"sequence_parallel_size": 3}``, multiplied) must split the GPUs whole, else no group forms and each GPU
    holds and computes whole sequences and layers. The memory model and the planner both ask this, so they size
    and cost the same reading; ``what`` says what is ignored."""
    product = 1
    for degree in degrees.values():
        product *= degree
    if parallel_groups_whole(gpus, product):
        return None
    names = " x ".join(degrees)
    shown_degree = f"{names} = {product}" if len(degrees) > 1 else f"{names} {product}"
    return f"{gpus} GPUs are not divisible by {shown_degree}: {what} ignored"


def valid_world_sizes(config: dict[str, Any], max_world_size: int = 1024, version: str | None = None) -> list[int]:
    """The GPU counts (1..max) for which DeepSpeed ``version`` accepts the batch values (or, with elastic training
    on in a release that reads it, the batch its search computes: ``core.elasticity``): with sequence parallelism
    only the multiples of ``sequence_parallel_size`` (its groups must be whole: ``misc.sequence-parallel``), whose
    data-parallel ranks the batch check counts (where ``version`` reads it: ``reads_sequence_parallel``)."""
    sp = (sequence_parallel_degree(config) or 1) if reads_sequence_parallel(version) else 1
    if version is not None:
        from core.elasticity import elastic_batches_for, elastic_section

        if elastic_section(config, version) is not None:  # elastic training's search decides, not the batch keys
            counts = range(sp, max_world_size + 1, sp)
            return [w for w, found in zip(counts, elastic_batches_for(config, counts, version), strict=True)
                    if found is not None and found.world_size_ok]
    return [w for w in range(sp, max_world_size + 1, sp)
            if resolve_batch(config, effective_world_size(config, w, version)).ok]
