"""Hypothesis strategies shared by the fuzz tests: arbitrary JSON, hostile values, mutated corpus configs.

Mutations start from the real configs of the shared corpus and delete, add or replace keys and values at
random depths, so the fuzzer spends its time near inputs people actually write.
"""

from __future__ import annotations

import copy
import os
from functools import cache
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from core.io import ConfigLoadError, load_config
from core.schema import DeepSpeedConfig
from core.schema.walk import iter_schema, key_index
from tests.conftest import corpus_files

#: Quick profile in CI; scripts/fuzz_long.py raises it for the long profile (same variable as
#: tests/test_property_validate.py).
EXAMPLES = int(os.environ.get("DSCONFIG_FUZZ_EXAMPLES", "200"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

VERSIONS = ("0.19.5", "0.19.8")

#: Every key spelling the schema knows, at any depth (derived, not listed).
SCHEMA_KEYS: tuple[str, ...] = tuple(sorted(key_index(DeepSpeedConfig)))
HOSTILE_STRINGS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "\"; rm -rf / #",
    "../../etc/passwd",
    "\u202eevil",
    "",
    " ",
    "auto",
    "AUTO",
    "cpu",
    "nvme",
    "none",
    "fp16",
    "bf16",
    "AdamW",
    "WarmupLR",
    "ｓｔａｇｅ",
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, -1, 1, 10**30, -(10**30), 2**63, -(2**63), 3, 4, 2**31 - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.5, -0.0, 1e-300, 1e300, -1e300, 2.5])
    | st.sampled_from(HOSTILE_STRINGS)
    | st.text(max_size=12)
)

#: Arbitrary JSON values (no NaN/Infinity: they are not JSON and load_config refuses them).
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10) | st.sampled_from(SCHEMA_KEYS), children, max_size=4),
    max_leaves=20,
)

#: What a mutation writes: the hostile pool first, then nested garbage.
mutation_values = st.one_of(
    st.sampled_from(["auto", None, 10**30, -(10**30), 10**400, -(10**400), -1, 0, 1.5, -2.5, True, False, [], {},
                     *HOSTILE_STRINGS]),
    json_values,
).map(copy.deepcopy)  # never hand out the pool's own [] / {}: a later mutation would edit the pool
mutation_keys = st.sampled_from(SCHEMA_KEYS) | st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=10)


@cache
def corpus_configs() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(name, config) of every corpus file load_config can read."""
    out = []
    for path in corpus_files():
        try:
            out.append((f"{path.parent.name}/{path.name}", load_config(path.read_bytes())))
        except ConfigLoadError:
            continue
    return tuple(out)


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (itself included), depth first."""
    found: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            found.append(node)
            stack.extend(node)
    return found


@st.composite
def mutated_corpus_configs(draw: st.DrawFn, max_mutations: int = 6) -> dict[str, Any]:
    """A corpus config with 0..max_mutations random edits (delete / add / replace) at random depths."""
    _, original = draw(st.sampled_from(corpus_configs()))
    config = copy.deepcopy(original)
    for _ in range(draw(st.integers(0, max_mutations))):
        nodes = _containers(config)
        node = nodes[draw(st.integers(0, len(nodes) - 1))]
        op = draw(st.sampled_from(["delete", "add", "replace", "replace", "wrap"]))
        if isinstance(node, dict):
            keys = list(node)
            if op == "add" or not keys:
                node[draw(mutation_keys)] = draw(mutation_values)
                continue
            key = keys[draw(st.integers(0, len(keys) - 1))]
            if op == "delete":
                del node[key]
            elif op == "wrap":
                node[key] = draw(st.sampled_from([[node[key]], {"value": node[key]}, {key: node[key]}]))
            else:
                node[key] = draw(mutation_values)
        else:
            if op == "add" or not node:
                node.insert(draw(st.integers(0, len(node))), draw(mutation_values))
                continue
            i = draw(st.integers(0, len(node) - 1))
            if op == "delete":
                del node[i]
            else:
                node[i] = draw(mutation_values)
    return config


@st.composite
def schema_shaped_configs(draw: st.DrawFn) -> dict[str, Any]:
    """Configs whose keys come from the schema (at the right depth), with arbitrary values."""
    paths = [path for path, _ in iter_schema(DeepSpeedConfig)]
    config: dict[str, Any] = {}
    for path in draw(st.lists(st.sampled_from(paths), max_size=10)):
        node = config
        keys = path.split(".")
        for key in keys[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[keys[-1]] = draw(mutation_values)
    return config


#: Any config the fuzzers feed in: mostly mutated real configs, some schema-shaped, some arbitrary objects.
any_config = st.one_of(
    mutated_corpus_configs(),
    mutated_corpus_configs(),
    schema_shaped_configs(),
    st.dictionaries(mutation_keys, json_values, max_size=6),
)


def result_or_refusal(error: type[Exception], fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or None when it refused the input with ``error`` and a message (anything else fails)."""
    try:
        return fn(*args)
    except error as exc:
        assert str(exc), f"{error.__name__} without a message"
        return None
