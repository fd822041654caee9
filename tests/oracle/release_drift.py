"""Generated configs around what changes between DeepSpeed releases ("configs you have not seen").

The drift points are read from the generated profiles (``core/versions/profiles``), never typed: for each
pair of consecutive releases, every top-level key one reads and the other does not (or refuses on sight),
every pydantic section that appears, disappears or changes its ``extra`` policy, every field added,
removed, renamed, retyped, rebounded or given a new default, every validator message that changes (and the
fields it names), every optimizer or scheduler name and constructor keyword that comes or goes.

``drift_cases(seed, singles, pairs)`` builds labelled configs from them: each point set to values chosen
from its profile entry (default, bounds and just past them, other types, ``"auto"``, lax booleans, empty
and probe sections) inside one of a few base configs, plus pairs of points and pairs of enabled
switch sections (``fp16`` with ``bf16`` …) in one config. Everything is a pure function of the seed.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

from core import versions

#: A key DeepSpeed never reads: probes a section's ``extra`` policy.
PROBE = "dsconfig_probe"

BASES: tuple[dict[str, Any], ...] = (
    {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1},
    {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2},
    {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
     "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}},
    {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}, "fp16": {"enabled": True}},
    {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, "gradient_clipping": 1.0,
     "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}},
)


@dataclass(frozen=True)
class DriftPoint:
    """A place whose meaning changes between ``before`` and ``after``: ``section`` ("" top level,
    "optimizer" / "scheduler" for class names and keywords), ``key``, and what changed."""

    section: str
    key: str
    change: str
    before: str
    after: str


def _fields(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {info.get("alias") or name: info for name, info in entry["fields"].items()}


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(section, key, change) between two consecutive profiles."""
    out: list[tuple[str, str, str]] = []
    top_a, top_b = set(a["top_level_keys"]), set(b["top_level_keys"])
    out += [("", k, "top-level key read") for k in top_a ^ top_b]
    refused = set(a["removed_top_level_keys"]) ^ set(b["removed_top_level_keys"])
    out += [("", k, "top-level key refused") for k in refused]
    sections_a, sections_b = a["sections"], b["sections"]
    for prefix in set(sections_a) | set(sections_b):
        parent, _, name = prefix.rpartition(".")
        if (prefix in sections_a) != (prefix in sections_b):
            out.append((parent, name, "pydantic section"))
            continue
        ea, eb = sections_a[prefix], sections_b[prefix]
        if ea["extra"] != eb["extra"]:
            out.append((prefix, PROBE, "extra policy"))
        fa, fb = _fields(ea), _fields(eb)
        out += [(prefix, k, "field") for k in set(fa) ^ set(fb)]
        out += [(prefix, k, "field entry") for k in set(fa) & set(fb) if fa[k] != fb[k]]
        changed = set(ea.get("validator_messages", ())) ^ set(eb.get("validator_messages", ()))
        out += [(prefix, k, "validator") for k in set(fa) | set(fb) if any(k in text for text in changed)]
        if set(ea["field_validators"]) != set(eb["field_validators"]):
            out += [(prefix, k, "validator") for k in set(ea["field_validators"]) ^ set(eb["field_validators"])]
    opt_a, opt_b = a["optimizers"], b["optimizers"]
    out += [("optimizer", k, "optimizer name") for k in set(opt_a) ^ set(opt_b)]
    for name in set(opt_a) & set(opt_b):
        for backend in set(opt_a[name]) | set(opt_b[name]):
            pa = set(opt_a[name].get(backend, {}).get("params", ()))
            pb = set(opt_b[name].get(backend, {}).get("params", ()))
            out += [("optimizer", f"{name}/{backend}/{k}", "optimizer keyword") for k in pa ^ pb]
    sch_a, sch_b = a["schedulers"], b["schedulers"]
    out += [("scheduler", k, "scheduler name") for k in set(sch_a) ^ set(sch_b)]
    for name in set(sch_a) & set(sch_b):
        out += [("scheduler", f"{name}/{k}", "scheduler keyword") for k in set(sch_a[name]) ^ set(sch_b[name])]
    return out


@cache
def drift_points() -> tuple[DriftPoint, ...]:
    """Every drift point between consecutive profiled releases, in a stable order."""
    found: dict[tuple[str, str, str], DriftPoint] = {}
    releases = versions.RELEASES
    for before, after in itertools.pairwise(releases):
        for section, key, change in _diff(versions.profile(before), versions.profile(after)):
            found.setdefault((section, key, change), DriftPoint(section, key, change, before, after))
    return tuple(found[k] for k in sorted(found))


def _entry(section: str, key: str) -> dict[str, Any]:
    """The newest profile entry for a field (empty when no release has one)."""
    for release in reversed(versions.RELEASES):
        entry = versions.section(release, section) if section else None
        if entry is not None:
            info = _fields(entry).get(key)
            if info is not None:
                return info
    return {}


_BY_TYPE: dict[str, list[Any]] = {
    "bool": [True, False, "yes", "off", 1, 2, "maybe"],
    "int": [0, 1, -1, 3, 1.5, "8", 2**40],
    "float": [0.0, 0.5, 1.0, -1.0, 2.0, "0.1", 1e12],
    "str": ["", "auto", "none", "x"],
    "list": [[], ["x"], "x"],
    "dict": [{}, {PROBE: 1}, []],
}
_ANY = [None, 0, 1, -1, 0.5, True, "auto", "x", [], {}, {"enabled": True}, {PROBE: 1}]


def _bound_values(info: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for bound in ("ge", "gt", "le", "lt"):
        value = info.get(bound)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        step = 1 if isinstance(value, int) and "int" in info.get("type", "") else 0.5 if value == 0 else abs(value) / 2
        out += [value, value - step, value + step]
    return out


def field_values(section: str, key: str) -> list[Any]:
    """Values worth trying at ``section.key``: its default, bounds and just past them, other types."""
    info = _entry(section, key)
    kind = info.get("type", "")
    values: list[Any] = []
    default = info.get("default")
    if "default" in info and not (isinstance(default, str) and default.startswith("<")):
        values.append(default)
    values += _bound_values(info)
    for name, sample in _BY_TYPE.items():
        if name in kind.lower():
            values += sample
    if not kind or "Model" in kind or "Config" in kind:
        values += _ANY
    values += ["auto", None]
    unique: list[Any] = []
    for value in values:
        if not any(type(value) is type(seen) and value == seen for seen in unique):
            unique.append(value)
    return unique


def _rng(seed: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and value:
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _nest(section: str, key: str, value: Any) -> dict[str, Any]:
    patch: dict[str, Any] = {key: value}
    for part in reversed(section.split(".") if section else []):
        patch = {part: patch}
    return patch


def _patches(point: DriftPoint, rng: random.Random, per_point: int) -> list[tuple[str, dict[str, Any]]]:
    """(label, patch) for one drift point."""
    if point.section == "optimizer":
        name, _, rest = point.key.partition("/")
        backend, _, keyword = rest.partition("/")
        params: dict[str, Any] = {"lr": 0.001}
        if keyword:
            params[keyword] = rng.choice([0.0, 0.9, False, True, 10])
        patch: dict[str, Any] = {"optimizer": {"type": name, "params": params}}
        if backend == "cpu":
            patch["zero_optimization"] = {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        return [(f"optimizer {point.key}", patch)]
    if point.section == "scheduler":
        name, _, keyword = point.key.partition("/")
        params = {keyword: rng.choice([0, 10, 0.1, True])} if keyword else {}
        return [(f"scheduler {point.key}", {"scheduler": {"type": name, "params": params}})]
    values = field_values(point.section, point.key)
    chosen = values if len(values) <= per_point else rng.sample(values, per_point)
    dotted = f"{point.section}.{point.key}" if point.section else point.key
    return [(f"{dotted} = {value!r}", _nest(point.section, point.key, value)) for value in chosen]


@cache
def switch_sections() -> tuple[str, ...]:
    """Top-level sections switched on by ``enabled`` in the project's schema (fp16, bf16, wandb, …)."""
    from core.schema import DeepSpeedConfig
    from core.schema.walk import iter_schema

    paths = [path for path, _ in iter_schema(DeepSpeedConfig)]
    return tuple(p.split(".")[0] for p in paths if p.endswith(".enabled") and p.count(".") == 1)


def drift_cases(seed: str = "drift", singles: int = 3, pairs: int = 150) -> list[tuple[str, dict[str, Any]]]:
    """Labelled configs: every drift point with up to ``singles`` values (each in a seeded base config),
    ``pairs`` seeded pairs of two points' values in one config, and every pair of switch sections
    enabled together (with a lax-boolean spelling)."""
    rng = _rng(seed)
    points = drift_points()
    per_point = [(p, _patches(p, rng, singles)) for p in points]
    cases: list[tuple[str, dict[str, Any]]] = []
    for point, patches in per_point:
        for label, patch in patches:
            base = rng.randrange(len(BASES))
            cases.append((f"drift [{point.change} {point.before}→{point.after}] {label} (base {base})",
                          _merge(BASES[base], patch)))
    flat = [(label, patch) for _, patches in per_point for label, patch in patches]
    for _ in range(pairs if len(flat) > 1 else 0):
        (la, pa), (lb, pb) = rng.sample(flat, 2)
        base = rng.randrange(len(BASES))
        cases.append((f"drift pair: {la} + {lb} (base {base})", _merge(_merge(BASES[base], pa), pb)))
    switches = switch_sections()
    for i, first in enumerate(switches):
        for second in switches[i + 1:]:
            on = rng.choice([True, "true", 1, "yes"])
            base = rng.randrange(len(BASES))
            patch = {first: {"enabled": True}, second: {"enabled": on}}
            cases.append((f"drift switches: {first} and {second} enabled ({on!r}) (base {base})",
                          _merge(BASES[base], patch)))
    return cases
