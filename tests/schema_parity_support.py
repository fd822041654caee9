"""Helpers of the schema parity tests (tests/test_schema_parity*.py): compare one of our section models with
DeepSpeed's (fields, aliases, defaults, bounds, verdicts) and generate inputs for both."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from core.schema.base import LenientSection, field_meta

_BOUND_TYPES = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le", annotated_types.Lt: "lt"}


def _bounds(info: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in info.metadata:
        for cls, name in _BOUND_TYPES.items():
            if isinstance(item, cls):
                out[name] = getattr(item, name)
    return out


def normalise(value: Any) -> Any:
    """Make a default comparable across the two models (enums, nested models, paths, dicts)."""
    if isinstance(value, enum.Enum):
        return normalise(value.value)
    if isinstance(value, BaseModel):
        return {name: normalise(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)  # torch.float16 -> "torch.float16"
    return value


def our_field_default(info: FieldInfo) -> Any:
    return info.get_default(call_default_factory=True)


def _their_default(model: type[BaseModel], name: str) -> Any:
    """DeepSpeed's default as DeepSpeed ends up with it (its models validate defaults)."""
    info = model.model_fields[name]
    default = info.get_default(call_default_factory=True)
    annotation = info.annotation
    if isinstance(default, dict) and isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation(**default)
    return default


def assert_same_fields(
    ours: type[BaseModel],
    theirs: type[BaseModel],
    *,
    only_ours: set[str] = frozenset(),
    bound_exceptions: dict[str, tuple[dict, dict]] | None = None,
) -> None:
    """Names, aliases, defaults and bounds of ``ours`` equal those of DeepSpeed's ``theirs``.

    ``only_ours``: fields our model keeps for an older DeepSpeed version (they must be marked removed
    in 0.19.8). ``bound_exceptions``: field -> (our bounds, their bounds), each one an explicit,
    documented difference.
    """
    bound_exceptions = bound_exceptions or {}
    our_fields = ours.model_fields
    their_fields = theirs.model_fields
    for name in only_ours:
        assert name in our_fields, name
        assert not field_meta(our_fields[name]).exists_in("0.19.8"), f"{name} should be removed in 0.19.8"
    assert set(our_fields) - set(only_ours) == set(their_fields), (
        f"only ours: {sorted(set(our_fields) - set(only_ours) - set(their_fields))}, "
        f"only DeepSpeed's: {sorted(set(their_fields) - set(our_fields))}"
    )
    for name, their in their_fields.items():
        our = our_fields[name]
        assert our.alias == their.alias, f"{ours.__name__}.{name}: alias {our.alias!r} != {their.alias!r}"
        our_default = normalise(our_field_default(our))
        their_default = normalise(_their_default(theirs, name))
        where = f"{ours.__name__}.{name}"
        assert our_default == their_default, f"{where}: default {our_default!r} != {their_default!r}"
        if name in bound_exceptions:
            want_ours, want_theirs = bound_exceptions[name]
            assert _bounds(our) == want_ours and _bounds(their) == want_theirs, name
        else:
            assert _bounds(our) == _bounds(their), f"{where}: {_bounds(our)} != {_bounds(their)}"
        assert our.description, f"{ours.__name__}.{name} has no description"


def _verdict(model: type[BaseModel], data: dict[str, Any]) -> tuple[bool, list[tuple[tuple, str]]]:
    try:
        model(**data)
    except ValidationError as exc:
        return False, sorted((tuple(str(p) for p in e["loc"]), e["msg"]) for e in exc.errors())
    except (AssertionError, ValueError, TypeError) as exc:  # DeepSpeed's deprecated-field handling
        return False, [((), str(exc))]
    return True, []


def assert_same_verdict(ours: type[BaseModel], theirs: type[BaseModel], data: dict[str, Any]) -> None:
    """Both models accept ``data``, or both reject it with the same messages."""
    our_ok, our_errors = _verdict(ours, data)
    their_ok, their_errors = _verdict(theirs, data)
    assert our_ok == their_ok, f"{data!r}: ours {our_ok} {our_errors}, DeepSpeed {their_ok} {their_errors}"
    # Same fields at fault; the messages of validators (not pydantic's type messages, which depend on
    # the exact annotation, e.g. str vs Path) must be DeepSpeed's.
    # (A model-level error has an empty location; DeepSpeed raises some field checks at model level.)
    our_locs = {loc[:1] for loc, _ in our_errors}
    their_locs = {loc[:1] for loc, _ in their_errors}
    if () not in our_locs | their_locs:
        assert our_locs == their_locs, data
    # Every message of a DeepSpeed validator is reproduced (ours may add an explanation where DeepSpeed
    # only has pydantic's type message, e.g. tensor_parallel.dtype).
    custom = ("Value error", "Assertion failed")
    ours_custom = {m for _, m in our_errors if m.startswith(custom)}
    assert {m for _, m in their_errors if m.startswith(custom)} <= ours_custom, data


#: Values pydantic's lax mode treats differently, for every field type.
ANY_VALUE = st.one_of(
    st.booleans(),
    st.integers(min_value=-3, max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "auto",
            "",
            "0",
            "1",
            "12",
            "1.5",
            "5e8",
            "true",
            "off",
            "yes",
            "none",
            "cpu",
            "nvme",
            "CPU",
            "fp16",
            "bf16",
            "abc",
            "torch.float16",
            "mean",
            "z1",
            "z3",
        ]
    ),
    st.none(),
    st.lists(st.sampled_from(["a", "b", 1]), max_size=2),
    st.just({}),
)


def inputs_for(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    keys = list(model.model_fields)
    keys += [f.alias for f in model.model_fields.values() if f.alias]
    keys += ["bogus_key"]
    return st.dictionaries(st.sampled_from(keys), ANY_VALUE, max_size=4)


def defaults_of(model: type[LenientSection]) -> dict[str, Any]:
    """Defaults of the fields DeepSpeed reads (documented-but-ignored spellings left out)."""
    return {
        name: normalise(our_field_default(info))
        for name, info in model.model_fields.items()
        if not field_meta(info).extra.get("ignored")
    }


def assert_defaults_cover(theirs: dict[str, Any], ours: type[BaseModel], path: str = "") -> None:
    """Every key of DeepSpeed's parsed-defaults dict is a field of ``ours`` with the same default."""
    for key, value in theirs.items():
        where = f"{path}{key}"
        assert key in ours.model_fields, f"{where} missing in {ours.__name__}"
        info = ours.model_fields[key]
        default = our_field_default(info)
        if isinstance(value, dict) and isinstance(default, BaseModel):
            assert_defaults_cover(value, type(default), f"{where}.")
        else:
            assert normalise(our_field_default(info)) == value, f"{where}: {our_field_default(info)!r} != {value!r}"
