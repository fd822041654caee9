"""Deterministic config mutations for the differential tests against the real DeepSpeed.

``mutate(config, seed=...)`` derives labelled variants of one config: key typos at every depth, wrong types,
out-of-range values, enum typos, conflicting options, removed and deprecated keys, ``"auto"`` in many places,
batch-triangle variations, misplaced keys and null sections (the tables are in ``mutation_tables.py``).
``random_edit_mutations`` makes configs from random edits. The corpus is loaded by ``corpus.py``; the
hand-written corner cases are in ``edge_configs.py``.

Everything is a pure function of its inputs: the same corpus and seed give the same mutations in the
same order (``random.Random`` seeded from a SHA-256 of the seed string, never the global RNG).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from tests.oracle.corpus import CorpusEntry, Mutation, corpus_entries
from tests.oracle.mutation_tables import (
    AUTO_PLACES,
    BATCH_KEYS,
    BATCH_SETTINGS,
    BOUND_PROBES,
    CONFLICTS,
    DEFAULT_CAPS,
    DEPRECATED,
    ENUM_TYPOS,
    MISPLACED,
    MUTATION_KINDS,
    REMOVED_KEYS,
    REMOVED_ZERO_KEYS,
    SECTION_NULLS,
    Path_,
)


# --------------------------------------------------------------------------- tree helpers
def _walk(node: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) below ``node`` through nested dicts (lists are leaves), depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = (*prefix, key)
            yield path, value
            yield from _walk(value, path)


def _get(config: dict[str, Any], path: Path_, default: Any = None) -> Any:
    node: Any = config
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _with(config: dict[str, Any], path: Path_, value: Any) -> dict[str, Any] | None:
    """Copy of ``config`` with ``path`` set to ``value`` (intermediate dicts created); None when a
    parent on the way exists but is not a dict."""
    out = copy.deepcopy(config)
    node = out
    for key in path[:-1]:
        if key not in node:
            node[key] = {}
        if not isinstance(node[key], dict):
            return None
        node = node[key]
    node[path[-1]] = copy.deepcopy(value)
    return out


def _with_many(config: dict[str, Any], changes: dict[Path_, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] | None = config
    for path, value in changes.items():
        if out is None:
            return None
        out = _with(out, path, value)
    return out


def _without(config: dict[str, Any], path: Path_) -> dict[str, Any]:
    out = copy.deepcopy(config)
    parent = _get(out, path[:-1]) if len(path) > 1 else out
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    return out


def _renamed(config: dict[str, Any], path: Path_, new_key: str) -> dict[str, Any]:
    """Copy with the key at ``path`` renamed, keeping its position among its siblings."""
    out = copy.deepcopy(config)
    parent = _get(out, path[:-1]) if len(path) > 1 else out
    items = list(parent.items())
    parent.clear()
    for key, value in items:
        parent[new_key if key == path[-1] else key] = value
    return out


def _dotted(path: Path_) -> str:
    return ".".join(path)


def _rng(seed: str) -> random.Random:
    return random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------- mutation families
def typo_variants(key: str) -> list[str]:
    """Plausible misspellings of ``key``: dropped, swapped, doubled letters, British spelling, case,
    hyphens, a trailing "s"."""
    out: list[str] = []
    if "optimization" in key:
        out.append(key.replace("optimization", "optimisation"))
    letters = [i for i, ch in enumerate(key) if ch.isalpha()]
    if len(letters) >= 3:
        i = letters[len(letters) // 2]
        out.append(key[:i] + key[i + 1 :])  # dropped letter
        if i + 1 < len(key) and key[i + 1] != key[i]:
            out.append(key[:i] + key[i + 1] + key[i] + key[i + 2 :])  # swapped letters
        out.append(key[:i] + key[i] + key[i:])  # doubled letter
    if "_" in key:
        out.append(key.replace("_", "-"))
        out.append(key.replace("_", ""))
    out.append(key + "s" if not key.endswith("s") else key[:-1])
    out.append(key.upper() if key.islower() else key.lower())
    seen: list[str] = []
    for variant in out:
        if variant != key and variant not in seen:
            seen.append(variant)
    return seen


def _wrong_type_values(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, bool):
        return [("str 'maybe'", "maybe"), ("int 2", 2), ("null", None), ("list", [value]), ("str 'true'", "true")]
    if isinstance(value, int):
        return [
            ("digit string", str(value)),
            ("word string", "many"),
            ("list", [value]),
            ("null", None),
            ("bool true", True),
            ("dict", {"value": value}),
        ]
    if isinstance(value, float):
        return [("numeric string", repr(value)), ("null", None), ("bool false", False), ("list", [value])]
    if isinstance(value, str):
        return [("int 1", 1), ("null", None), ("list", [value]), ("dict", {}), ("bool true", True)]
    if isinstance(value, dict):
        return [("list", []), ("null", None), ("bool true", True), ("str 'on'", "on"), ("int 1", 1)]
    if isinstance(value, list):
        return [("str", "a,b"), ("dict", {}), ("null", None), ("int 0", 0)]
    return [("str", "x")]


def _out_of_range_values(value: Any) -> list[tuple[str, Any]]:
    values: list[tuple[str, Any]] = [("negative", -1), ("zero", 0), ("huge int", 10**20), ("huge float", 1e30)]
    if isinstance(value, int):
        values.append(("fractional", value + 0.5))
        values.append(("integral float", float(value)))
    else:
        values.append(("negative fraction", -0.5))
        values.append(("above one", 1.5))
        values.append(("infinity", float("inf")))
    return values



def _candidates(config: dict[str, Any]) -> dict[str, list[tuple[str, Callable[[], dict[str, Any] | None]]]]:
    """Every possible mutation of ``config``, lazily built, grouped by kind."""
    nodes = list(_walk(config))
    by_kind: dict[str, list[tuple[str, Callable[[], dict[str, Any] | None]]]] = {k: [] for k in MUTATION_KINDS}

    def add(kind: str, label: str, build: Callable[[], dict[str, Any] | None]) -> None:
        by_kind[kind].append((label, build))

    for path, _value in nodes:
        for variant in typo_variants(path[-1]):
            add("key-typo", f"{_dotted(path)} misspelt {variant!r}", lambda p=path, v=variant: _renamed(config, p, v))
    for path, value in nodes:
        for what, wrong in _wrong_type_values(value):
            add("wrong-type", f"{_dotted(path)} {what}", lambda p=path, w=wrong: _with(config, p, w))
        if _is_num(value):
            for what, wrong in _out_of_range_values(value):
                add("out-of-range", f"{_dotted(path)} {what} ({wrong!r})", lambda p=path, w=wrong: _with(config, p, w))
    for path, wrong in BOUND_PROBES:
        add("bound", f"{_dotted(path)} = {wrong!r}", lambda p=path, w=wrong: _with(config, p, w))
    for path, wrong in ENUM_TYPOS:
        add("enum-typo", f"{_dotted(path)} = {wrong!r}", lambda p=path, w=wrong: _with(config, p, w))
    for label, changes in CONFLICTS:
        add("conflict", label, lambda c=changes: _with_many(config, c))
    for key, value in REMOVED_KEYS.items():
        add("removed-key", f"add removed key {key}", lambda k=key, v=value: _with(config, (k,), v))
    for key, value in REMOVED_ZERO_KEYS.items():
        add(
            "removed-key",
            f"add removed key zero_optimization.{key}",
            lambda k=key, v=value: _with(config, ("zero_optimization", k), v),
        )
    for label, changes in DEPRECATED:
        add("deprecated", label, lambda c=changes: _with_many(config, c))
    for path in AUTO_PLACES:
        add("auto", f"{_dotted(path)} = 'auto'", lambda p=path: _with(config, p, "auto"))
    auto_paths = [p for p, v in nodes if v == "auto"]
    if auto_paths:
        add("strip-auto", f"drop the {len(auto_paths)} 'auto' values", lambda: _strip_auto(config, auto_paths))
    present_removed = [k for k in REMOVED_KEYS if k in config]
    zero = config.get("zero_optimization")
    present_removed += [f"zero_optimization.{k}" for k in REMOVED_ZERO_KEYS if isinstance(zero, dict) and k in zero]
    if present_removed:
        add("cleanup", f"drop removed keys {', '.join(present_removed)}", lambda: _drop_removed(config))
    for key in BATCH_KEYS:
        if key in config:
            add("batch", f"drop {key}", lambda k=key: _without(config, (k,)))
    for label, setting in BATCH_SETTINGS:
        add("batch", f"batch: {label}", lambda s=setting: _with_batch(config, s))
    for label, changes in MISPLACED:
        add("misplaced-key", label, lambda c=changes: _with_many(config, c))
    for key in SECTION_NULLS:
        add("section-null", f"{key}: null", lambda k=key: _with(config, (k,), None))
    return by_kind


def _strip_auto(config: dict[str, Any], paths: list[Path_]) -> dict[str, Any]:
    out = config
    for path in paths:
        out = _without(out, path)
    if not any(out.get(k) is not None for k in BATCH_KEYS[:2]):
        out = _with(out, ("train_micro_batch_size_per_gpu",), 1) or out
    return out


def _drop_removed(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in REMOVED_KEYS}
    zero = out.get("zero_optimization")
    if isinstance(zero, dict):
        for key in REMOVED_ZERO_KEYS:
            zero.pop(key, None)
    return out


def _with_batch(config: dict[str, Any], setting: dict[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in BATCH_KEYS}
    out.update(copy.deepcopy(setting))
    return out


def repaired(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``config`` with the usual reasons for rejection removed, and what was changed: removed keys
    dropped, every ``"auto"`` dropped, and the batch keys replaced by a micro batch and accumulation
    that fit any world size (the existing positive integers are kept).

    Mutating the repaired config makes each mutation's verdict depend on the mutation, not on the
    corpus file already being rejected (most HF-style files are, for their ``"auto"`` batch sizes).
    """
    out = _drop_removed(config)
    changes = [] if out == config else ["removed keys dropped"]
    auto_paths = [p for p, v in _walk(out) if v == "auto"]
    for path in auto_paths:
        out = _without(out, path)
    if auto_paths:
        changes.append(f"{len(auto_paths)} 'auto' dropped")
    batch = {}
    for key in BATCH_KEYS[1:]:
        value = out.get(key)
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        batch[key] = value if ok else 1
    new = {k: v for k, v in out.items() if k not in BATCH_KEYS}
    new.update(batch)
    if any(out.get(k) != new.get(k) for k in BATCH_KEYS):
        changes.append(f"batch set to micro {batch[BATCH_KEYS[1]]} x accumulation {batch[BATCH_KEYS[2]]}")
    return new, changes


REPAIR_INDEPENDENT_KINDS = frozenset({"strip-auto", "cleanup"})


def mutate(
    config: dict[str, Any], *, seed: str, caps: dict[str, int | None] | None = None, repair: bool = True
) -> list[Mutation]:
    """Labelled mutations of ``config``, deterministic for a given ``seed``.

    With ``repair`` (default) the mutations apply to ``repaired(config)`` (and that repaired config is
    itself the first mutation, kind "repaired"), except "strip-auto" and "cleanup", which fix the original.
    ``caps`` limits how many mutations of each kind are kept (a seeded sample; default ``DEFAULT_CAPS``);
    pass ``{}`` for every candidate. Mutations identical to the original or to an earlier one are dropped.
    """
    caps = DEFAULT_CAPS if caps is None else caps
    rng = _rng(seed)
    seen = {json.dumps(config, sort_keys=True, default=repr)}
    out: list[Mutation] = []
    base, changes = repaired(config) if repair else (config, [])
    if changes:
        seen.add(json.dumps(base, sort_keys=True, default=repr))
        out.append(Mutation("repaired", "repaired: " + "; ".join(changes), base))
    candidates_by_kind = _candidates(base)
    if base is not config:
        original = _candidates(config)
        for kind in REPAIR_INDEPENDENT_KINDS:
            candidates_by_kind[kind] = original[kind]
    for kind, candidates in candidates_by_kind.items():
        cap = caps.get(kind)
        order = list(range(len(candidates)))
        if cap is not None and cap < len(order):
            order = _spread_typos(candidates, cap, rng) if kind == "key-typo" else sorted(rng.sample(order, cap))
        for index in order:
            label, build = candidates[index]
            mutated = build()
            if mutated is None:
                continue
            fingerprint = json.dumps(mutated, sort_keys=True, default=repr)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            out.append(Mutation(kind, label, mutated))
    return out


def _spread_typos(candidates: list[tuple[str, Any]], cap: int, rng: random.Random) -> list[int]:
    """Sample typos so that every depth present gets some: half top level, half nested."""
    top = [i for i, (label, _) in enumerate(candidates) if "." not in label.split(" misspelt ")[0]]
    nested = [i for i in range(len(candidates)) if i not in set(top)]
    n_nested = min(len(nested), cap - min(len(top), cap // 2))
    n_top = min(len(top), cap - n_nested)
    return sorted(rng.sample(top, n_top) + rng.sample(nested, n_nested))


def corpus_mutations(
    entries: list[CorpusEntry] | None = None, caps: dict[str, int | None] | None = None
) -> dict[str, list[Mutation]]:
    """Mutations of every loadable corpus file, keyed by its relative path (seeded by that path)."""
    entries = corpus_entries() if entries is None else entries
    return {e.rel: mutate(e.config, seed=e.rel, caps=caps) for e in entries if e.config is not None}


# --------------------------------------------------------------------------- random edits
#: Odd values a random edit may put anywhere (the hypothesis test adds generated ints and floats).
EDIT_VALUE_POOL: tuple[Any, ...] = (
    None, True, False, 0, 1, 2, 3, 4, -1, 8, 1.5, 2.0, 10**20, 5e8, float("inf"), -0.5,
    "auto", "cpu", "CPU", "nvme", "none", "fp16", "bf16", "sum", "mean", "AdamW", "WarmupLR", "", "100", "yes",
    [], [1], [0, 2], {}, {"enabled": True}, {"device": "cpu"}, {"x": 1},
)  # fmt: skip

Edit = tuple[Path_, Any, bool]  # (path, value, delete instead of set)


def edit_paths(configs: list[dict[str, Any]]) -> list[Path_]:
    """Every key path in ``configs`` plus the enum and bound probe paths, sorted."""
    paths = {p for config in configs for p, _ in _walk(config)}
    return sorted(paths | {p for p, _ in ENUM_TYPOS + BOUND_PROBES})


def apply_edits(base: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    """A copy of ``base`` with each edit applied (missing or non-dict parents become dicts)."""
    config = copy.deepcopy(base)
    for path, value, delete in edits:
        node = config
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        if delete:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    return config


def random_edit_mutations(bases: list[dict[str, Any]], count: int, *, seed: str = "random-edits") -> list[Mutation]:
    """``count`` configs, each a base with 1-3 random edits from ``EDIT_VALUE_POOL`` (seeded, deterministic)."""
    rng = _rng(seed)
    paths = edit_paths(bases)
    out = []
    for _ in range(count):
        base_index = rng.randrange(len(bases))
        edits = [
            (rng.choice(paths), rng.choice(EDIT_VALUE_POOL), rng.random() < 0.15) for _ in range(rng.randint(1, 3))
        ]
        label = f"base #{base_index}: " + "; ".join(
            f"del {_dotted(p)}" if d else f"{_dotted(p)} = {json.dumps(v, default=repr)}" for p, v, d in edits
        )
        out.append(Mutation("random-edit", label, apply_edits(bases[base_index], edits)))
    return out
