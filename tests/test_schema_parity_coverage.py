"""Schema coverage: every key of the reference docs exists in the schema, every field has a description, and
any JSON into any section gives a result or a ValidationError."""

from __future__ import annotations

import contextlib
import re
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from core.schema import advanced, legacy, monitoring, optimizer, precision
from core.schema.root import DeepSpeedConfig

pytestmark = pytest.mark.deepspeed

# --------------------------------------------------------------------------------------------------
# documented keys
# --------------------------------------------------------------------------------------------------

#: Keys in the reference docs that are not config keys of any section: optimizer/scheduler names and
#: user-chosen group/metric names in the examples, and a typo in a note.
_NOT_KEYS = {
    "Adam",
    "AdamW",
    "Lamb",
    "OneBitAdam",
    "OneBitLamb",
    "Note",
    "aq1",
    "cp1",
    "rp1",
    "wq1",
    "wq2",
    "vocabularyrarity",
    "gradient_accumulation",
}
def _all_schema_keys() -> set[str]:
    """Every field name and alias reachable from the root, through lists and dicts of sections too."""
    seen: set[type[BaseModel]] = set()
    keys: set[str] = set()

    def models_in(annotation: Any) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in models_in(arg)]

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        meta = (model.model_config.get("json_schema_extra") or {}).get("x-ds", {})
        keys.update(meta.get("doc_only", {}))
        for name, info in model.model_fields.items():
            keys.add(name)
            if info.alias:
                keys.add(info.alias)
            for sub in models_in(info.annotation):
                visit(sub)

    visit(DeepSpeedConfig)
    return keys


def _documented_keys() -> dict[str, str]:
    from tests.conftest import REFERENCE_DIR

    found: dict[str, str] = {}
    for name in (
        "ds-config-docs-site.md",
        "ds-config-docs-early.md",
        "ds-config-quickref.md",
        "ds-config-docs-latest.txt",
        "deepspeed-api-docs.txt",
    ):
        text = (REFERENCE_DIR / name).read_text()
        patterns = [r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:']
        if name != "deepspeed-api-docs.txt":
            patterns += [
                r"\*\*\*?([A-Za-z_][A-Za-z0-9_\\]*)\*\*\*?",
                r"^([a-z_][a-z0-9_]*): \[",
                r"^([a-z][a-z0-9]*_[a-z0-9_]+)$",
            ]
        for pattern in patterns:
            for match in re.finditer(pattern, text, re.MULTILINE):
                found.setdefault(match.group(1).replace("\\", ""), name)
    return found


def test_every_documented_key_exists_in_the_schema():
    schema_keys = _all_schema_keys()
    registry = {p.name for s in optimizer.OPTIMIZERS.values() for p in s.params}
    registry |= {p.name for s in optimizer.SCHEDULERS.values() for p in s.params}
    missing = {
        k: doc
        for k, doc in _documented_keys().items()
        if k not in schema_keys | registry | _NOT_KEYS
    }
    assert missing == {}



# --------------------------------------------------------------------------------------------------
# robustness: any JSON into any section gives a result or a ValidationError, never another exception
# --------------------------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.just("auto"),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _section_models() -> list[type[BaseModel]]:
    modules = {advanced.__name__, legacy.__name__, monitoring.__name__, optimizer.__name__, precision.__name__}
    found: dict[str, type[BaseModel]] = {}
    for module in (advanced, legacy, monitoring, optimizer, precision):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ in modules:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


@pytest.mark.parametrize("model", _section_models(), ids=lambda m: m.__qualname__)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data())
def test_sections_never_raise_anything_but_validation_errors(model, data):
    keys = st.sampled_from([*model.model_fields, "bogus"])
    value = data.draw(st.dictionaries(keys, _JSON, max_size=4) | _JSON)
    with contextlib.suppress(ValidationError):
        model.model_validate(value)


@pytest.mark.parametrize("model", _section_models(), ids=lambda m: m.__qualname__)
def test_every_field_has_a_user_facing_description(model):
    for name, info in model.model_fields.items():
        assert info.description and len(info.description) >= 10, f"{model.__qualname__}.{name}"
