"""The batch size elastic training computes (DeepSpeed 0.16-0.19.7's ``elasticity`` section).

With ``elasticity.enabled`` DeepSpeed ignores the batch keys and computes ``train_batch_size``, the micro batch and
the accumulation itself (``deepspeed/elasticity/elasticity.py compute_elastic_config``), for a list of GPU counts
it calls valid; on any other data-parallel world size it stops with ``ElasticityIncompatibleWorldSize``. That is
the "works on 8 GPUs, fails on 12" failure, so the validator computes the same list. Pure: a section (as written,
already checked by ``core.schema.legacy.ElasticityConfig``) and a world size in, an :class:`ElasticBatch` out.

Releases differ in one step: whether a base batch size above ``max_train_batch_size`` (the least common multiple of
the micro batches can be) is still a candidate (up to 0.19.6) or skipped (0.19.7). Which one a release does is
read from its profile's probe (``scripts/profile_extract.py`` runs the release's own ``compute_elastic_config`` on
a probe section), not typed here: :func:`keeps_oversized_base` picks the variant that reproduces it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

#: DeepSpeed's HCN_LIST: the 38 smallest highly composite numbers it scales a base batch size by.
HIGHLY_COMPOSITE = (
    1, 2, 4, 6, 12, 24, 36, 48, 60, 120, 180, 240, 360, 720, 840, 1260, 1680, 2520, 5040, 7560, 10080, 15120, 20160,
    25200, 27720, 45360, 50400, 55440, 83160, 110880, 166320, 221760, 277200, 332640, 498960, 554400, 665280, 720720,
)

#: Beyond this many GPUs per micro batch, with max_gpus as large, DeepSpeed's own search loops for minutes or
#: hours; the validator does not follow it there.
_LARGEST_SEARCH = 10**10


@dataclass(frozen=True)
class ElasticBatch:
    """What elastic training computes for one world size."""

    #: the global batch DeepSpeed picks (its ``train_batch_size``)
    train_batch_size: int
    #: the data-parallel world sizes it accepts
    valid_world_sizes: tuple[int, ...]
    #: the micro batch per GPU for this world size (None when the world size is refused)
    micro_batch: int | None
    #: ``train_batch_size // (micro_batch × world size)``, as DeepSpeed computes it (None when refused)
    gradient_accumulation_steps: int | None
    #: why DeepSpeed stops on this world size: "world-size" (not among the valid ones), "micro-batch" (no micro
    #: batch divides this rank's share) or "batch" (the computed trio fails DeepSpeed's batch check, e.g. a
    #: batch of 0); None when it accepts it
    refusal: str | None

    @property
    def world_size_ok(self) -> bool:
        """Whether DeepSpeed accepts this world size."""
        return self.refusal is None


def _settings(section: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "micro": list(section["micro_batch_sizes"]),
        "largest": section["max_train_batch_size"],
        "min_gpus": section.get("min_gpus", 1),
        "max_gpus": section.get("max_gpus", 10000),
        "per_node": section.get("num_gpus_per_node", 1),
        "model_parallel": section.get("model_parallel_size", 1),
        "prefer_larger": section.get("prefer_larger_batch", True),
        "version": float(section.get("version", 0.2)),
    }


def _candidates(bases: list[int], largest: float, keep_oversized: bool) -> list[int]:
    """``get_candidate_batch_sizes``: each base scaled by the largest highly composite number that keeps it within
    ``largest`` (numpy's argmax of "none above" is 0, so DeepSpeed then scales by the last entry; kept)."""
    out = []
    for base in bases:
        if base > largest and not keep_oversized:
            continue
        if base >= largest:
            out.append(base)
            continue
        value = largest // base
        index = next((i for i, h in enumerate(HIGHLY_COMPOSITE) if h > value), 0)
        out.append(HIGHLY_COMPOSITE[index - 1] * base)
    return sorted(set(out), key=lambda b: (b, str(b)))


def _divisors(n: int) -> list[int]:
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return small + [n // i for i in reversed(small) if i * i != n]


def _valid_world_sizes(batch: int, micro: list[int], min_gpus: float, max_gpus: float) -> list[int]:
    """``get_valid_gpus``: for each micro batch dividing ``batch``, the GPU count that takes no accumulation and
    its factors up to half of it, within [min_gpus, max_gpus]."""
    found: set[int] = set()
    for m in micro:
        if batch % m:
            continue
        most = batch // m
        if min_gpus <= most <= max_gpus:
            found.add(most)
        upto = min(most // 2, max_gpus)
        if upto <= 2 * math.isqrt(most):  # DeepSpeed's own loop, bounded by max_gpus, is the shorter one here
            found.update(i for i in range(max(1, math.ceil(min_gpus)), int(upto) + 1) if most % i == 0)
        elif most > _LARGEST_SEARCH:
            raise OverflowError(most)
        else:
            found.update(d for d in _divisors(most) if d <= most // 2 and min_gpus <= d <= max_gpus)
    return sorted(found)


def _best(candidates: list[int], micro: list[int], min_gpus: float, max_gpus: float,
          prefer_larger: Any) -> tuple[int, list[int] | None]:
    """``get_best_candidates``: the candidate with the most valid GPU counts (ties by size, as preferred)."""
    most, valid, final = 0, None, int(min(micro))
    for batch in candidates:
        current = _valid_world_sizes(batch, micro, min_gpus, max_gpus)
        if len(current) > most or (len(current) == most and ((prefer_larger and batch > final)
                                                              or (not prefer_larger and batch < final))):
            most, valid, final = len(current), current, batch
    return final, valid


def _version_01(micro: list[int], largest: float, min_gpus: Any, max_gpus: Any, prefer_larger: Any,
                keep_oversized: bool) -> tuple[int, list[int] | None]:
    min_gpus = min_gpus or 1
    max_gpus = max_gpus or largest // min(micro)
    if not all(m <= largest for m in micro):
        raise ValueError("a micro batch above the largest batch")
    lcm = math.lcm(*micro)
    candidates = _candidates([*micro, lcm], largest, keep_oversized)
    return _best(candidates, micro, min_gpus, max_gpus, prefer_larger)


def _micro_for(batch: float, world: float, micro: list[int], prefer_larger: Any) -> int | None:
    chosen = None
    for m in micro:
        if batch // world % m == 0:
            if chosen is None:
                chosen = m
            if prefer_larger and chosen < m:
                chosen = m
    return chosen


def _version_02_search(s: dict[str, Any], keep_oversized: bool) -> tuple[int, list[int] | None, int]:
    """Version 0.2's node-level search (independent of the world size): the batch and the valid data-parallel
    sizes, scaled from nodes to data-parallel ranks, and the data-parallel ranks per node it scaled by."""
    per_node_dp = s["per_node"] // s["model_parallel"]
    final, nodes = _version_01(s["micro"], int(s["largest"] / per_node_dp), int(s["min_gpus"] / s["per_node"]),
                               int(s["max_gpus"] / s["per_node"]), s["prefer_larger"], keep_oversized)
    return int(final) * per_node_dp, None if nodes is None else [n * per_node_dp for n in nodes], per_node_dp


def _version_02_world(s: dict[str, Any], searched: tuple[int, list[int] | None, int],
                      world: float) -> tuple[int, list[Any]]:
    """Version 0.2 on one world size: the search's answer when the world size is among its valid ones, else a
    batch computed for the current data-parallel size."""
    final, valid, per_node_dp = searched
    if valid is None:  # no candidate has a valid GPU count: DeepSpeed then fails on None (refused either way)
        return final, []
    if world // s["model_parallel"] in valid:
        return final, valid
    micro = s["micro"]
    current_dp = (world / s["per_node"]) * per_node_dp
    sizes = [math.floor(s["largest"] / float(m * current_dp)) * m * current_dp for m in micro]
    return (max(sizes) if s["prefer_larger"] else min(sizes)), [int(current_dp)]


def _finish(s: dict[str, Any], final: int, valid: list[Any] | None, world_size: float) -> ElasticBatch:
    """The world-size check, micro batch and accumulation DeepSpeed derives from the search's answer."""
    valid_sizes = tuple(valid or ())
    if world_size not in valid_sizes:
        return ElasticBatch(final, valid_sizes, None, None, "world-size")
    micro = next((m for m in sorted(set(s["micro"]), reverse=True) if final // world_size % m == 0), None)
    if micro is None:
        return ElasticBatch(final, valid_sizes, None, None, "micro-batch")
    accumulation = int(final // (micro * world_size))
    # DeepSpeedConfig then checks the trio it computed as it checks written batch keys
    adds_up = final > 0 and accumulation > 0 and final == micro * accumulation * world_size
    return ElasticBatch(final, valid_sizes, micro, accumulation, None if adds_up else "batch")


def elastic_batches(section: Mapping[str, Any], world_sizes: Iterable[float], *,
                    keep_oversized_base: bool) -> list[ElasticBatch | None]:
    """What DeepSpeed's elastic training computes for each of ``world_sizes`` data-parallel ranks (GPUs ÷
    ``sequence_parallel_size``), one entry per world size, None where it cannot be computed (the section is not
    one DeepSpeed can compute with: the schema reports why; or the search is beyond what DeepSpeed itself would
    finish). The search, which does not depend on the world size, runs once."""
    sizes = list(world_sizes)
    errors = (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError)
    try:
        s = _settings(section)
        if s["version"] not in (0.1, 0.2):
            return [None] * len(sizes)
        searched_01 = (_version_01(s["micro"], s["largest"], s["min_gpus"], s["max_gpus"], s["prefer_larger"],
                                   keep_oversized_base) if s["version"] == 0.1 else None)
        searched_02 = _version_02_search(s, keep_oversized_base) if searched_01 is None else None
    except errors:
        return [None] * len(sizes)
    out: list[ElasticBatch | None] = []
    for world in sizes:
        try:
            final, valid = searched_01 if searched_02 is None else _version_02_world(s, searched_02, world)
            out.append(_finish(s, int(final), valid, world))
        except errors:
            out.append(None)
    return out


def elastic_batch(section: Mapping[str, Any], world_size: float, *, keep_oversized_base: bool) -> ElasticBatch | None:
    """What elastic training computes for one world size (:func:`elastic_batches`)."""
    return elastic_batches(section, [world_size], keep_oversized_base=keep_oversized_base)[0]


def keeps_oversized_base(probe: Mapping[str, Any] | None) -> bool | None:
    """Whether a release keeps a base batch above ``max_train_batch_size`` as a candidate, read from its profile's
    ``elastic_probe`` (the section it ran and what its ``compute_elastic_config`` returned); None when the profile
    has no probe or neither variant reproduces it."""
    if not probe or "batch" not in probe:
        return None
    for keep in (True, False):
        # the probe runs version 0.1, whose search does not depend on the world size (1 here)
        found = elastic_batch(probe["section"], 1, keep_oversized_base=keep)
        if found is None:
            return None
        if found.train_batch_size == probe["batch"] and list(found.valid_world_sizes) == list(probe["valid_gpus"]):
            return keep
    return None


def elastic_section(config: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    """The ``elasticity`` section DeepSpeed ``version`` acts on: read by that release and switched on as DeepSpeed
    tests it (``section.get("enabled")`` for truth, so the string "false" switches it on); else None."""
    from core import versions

    section = config.get("elasticity")
    if isinstance(section, dict) and section.get("enabled") and versions.key_known(version, "", "elasticity"):
        return section
    return None


def elastic_batch_for(config: Mapping[str, Any], world_size: int, version: str) -> ElasticBatch | None:
    """What elastic training computes for ``config`` on ``world_size`` GPUs under DeepSpeed ``version`` (its
    data-parallel size: GPUs ÷ ``sequence_parallel_size`` where the release reads that); None when elasticity is
    off, not read by the release, or cannot be computed."""
    return elastic_batches_for(config, [world_size], version)[0]


def elastic_batches_for(config: Mapping[str, Any], world_sizes: Iterable[int],
                        version: str) -> list[ElasticBatch | None]:
    """:func:`elastic_batch_for` for each of ``world_sizes`` GPU counts, with one search."""
    from core.batch import effective_world_size

    counts = list(world_sizes)
    section = elastic_section(config, version)
    keep = keeps_oversized_elastic_base(version) if section is not None else None
    if section is None or keep is None:
        return [None] * len(counts)
    as_dict = dict(config)
    return elastic_batches(section, [effective_world_size(as_dict, w, version) for w in counts],
                           keep_oversized_base=keep)


@cache
def keeps_oversized_elastic_base(version: str) -> bool | None:
    """Whether DeepSpeed ``version``'s elastic training keeps a base batch above ``max_train_batch_size`` as a
    candidate, read from its profile's probe; None when the release has no elasticity."""
    from core import versions

    return keeps_oversized_base(versions.elastic_probe(version))
