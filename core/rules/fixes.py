"""The one-operation fixes rules offer most often, and the closest allowed value to offer in them."""

from __future__ import annotations

import difflib
import math
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from core.findings import Fix, FixOp
from core.schema.walk import SchemaField


def set_fix(path: str, value: Any, description: str | None = None) -> Fix:
    """A fix that sets ``path`` to ``value``."""
    return Fix(description or f"Set `{path}` to {value!r}", (FixOp("set", path, value),))


def delete_fix(path: str) -> Fix:
    """A fix that removes ``path``."""
    return Fix(f"Remove `{path}`", (FixOp("delete", path),))


def closest_choice(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The allowed value ``value`` most likely meant (case-insensitive; None when nothing is close)."""
    lower = {c.lower(): c for c in choices}
    if value.lower() in lower:
        return lower[value.lower()]
    match = difflib.get_close_matches(value.lower(), list(lower), n=1, cutoff=0.6)
    return lower[match[0]] if match else None


def value_fix(field: SchemaField | None, path: str, value: Any) -> Fix | None:
    """For a scalar field whose value its type or bounds refuse: the value the user most likely meant (the item of
    a one-item list, a number written as text, the whole number of a float), else the field's default (removing
    the key when the default is unset). None for sections, collections, or when nothing fits the field's type."""
    if field is None or field.model is not None or field.item_model is not None:
        return None
    accepts = _acceptor(field.owner, field.name)
    candidates: list[Any] = []
    if isinstance(value, list) and len(value) == 1:
        candidates.append(value[0])
    if isinstance(value, str):
        try:
            number = float(value.strip().replace("_", ""))
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            candidates.append(int(number) if number.is_integer() and abs(number) <= 2**53 else number)
    whole = nearest_whole(value)
    if whole is not None:
        candidates.append(whole)
    for candidate in candidates:
        if candidate != value and accepts(candidate):
            return set_fix(path, candidate, f"Set `{path}` to {candidate!r} (was {_short(value)})")
    default = field.default
    if default is None:
        return delete_fix(path) if accepts(None) else None
    if isinstance(default, dict | list) or not accepts(default):
        return None
    return set_fix(path, default, f"Set `{path}` to its default, {default!r}")


def nearest_whole(value: Any) -> int | None:
    """The whole number a float was meant as: halves away from zero, and never 0 for a non-zero value (0.5 -> 1,
    2.5 -> 3, 0.3 -> 1, -2.5 -> -3); None for non-floats and floats that are not finite or beyond 2**53."""
    if not isinstance(value, float) or not math.isfinite(value) or abs(value) > 2**53:
        return None
    whole = int(math.copysign(math.floor(abs(value) + 0.5), value))
    return whole if whole != 0 or value == 0 else int(math.copysign(1, value))


@lru_cache(maxsize=1024)
def _acceptor(owner: type[BaseModel], name: str) -> Any:
    info = owner.model_fields[name]
    annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    adapter = TypeAdapter(annotation)

    def accepts(candidate: Any) -> bool:
        try:
            adapter.validate_python(candidate)
        except (ValidationError, TypeError, ValueError):
            return False
        return True

    return accepts


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
