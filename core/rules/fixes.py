"""The one-operation fixes rules offer most often, and the closest allowed value to offer in them."""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from core.findings import Fix, FixOp, brief, plain, shown
from core.schema.walk import SchemaField


def set_fix(path: str, value: Any, description: str | None = None) -> Fix:
    """A fix that sets ``path`` to ``value``."""
    value = plain(value)  # the config holds JSON values, never the schema's enum members
    return Fix(description or f"Set `{path}` to {shown(value)}", (FixOp("set", path, value),))


def delete_fix(path: str) -> Fix:
    """A fix that removes ``path``."""
    return Fix(f"Remove `{path}`", (FixOp("delete", path),))


#: Unknown keys of one section (or one optimizer's or scheduler's params) that get a did-you-mean; past this many
#: they are not a handful of misspellings but a pile of foreign keys, and fuzzy matching each one would cost seconds
#: on a large config (36 times over for ``dsconfig versions``).
MAX_SUGGESTED_PER_SECTION = 200


def closest_choice(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The allowed value ``value`` most likely meant (case-insensitive; None when nothing is close)."""
    lower = {c.lower(): c for c in choices}
    if value.lower() in lower:
        return lower[value.lower()]
    match = difflib.get_close_matches(value.lower(), list(lower), n=1, cutoff=0.6)
    return lower[match[0]] if match else None


def guesser(keys: Iterable[Any], choices: Iterable[str]) -> Callable[[str], str | None]:
    """``closest_choice`` against ``choices`` for the unknown ones of ``keys``, or no guess at all when more than
    ``MAX_SUGGESTED_PER_SECTION`` of them are unknown."""
    known = list(choices)
    known_set = set(known)
    if sum(1 for key in keys if key not in known_set) > MAX_SUGGESTED_PER_SECTION:
        return lambda key: None
    return lambda key: closest_choice(key, known)


def value_fix(field: SchemaField | None, path: str, value: Any, items: Sequence[Any] | None = None) -> Fix | None:
    """For a scalar field whose value its type or bounds refuse: the value the user most likely meant (the item of
    a one-item list, a number written as text, the whole number of a float), else the field's default (removing
    the key when the default is unset). None for sections, collections, or when nothing fits the field's type.

    For one item of a list field (``path`` ends in ``[i]``; ``items`` is the whole list) the item's type judges,
    and an item that means nothing goes, together with every other such item of the list (one fix, so applying
    it does not leave the next bad item under the same index)."""
    if field is None or field.model is not None or field.item_model is not None:
        return None
    item = path.endswith("]")  # one item of a list field ("random_ltd_layer_id[0]"): judged by the item's type
    accepts = _item_acceptor(field.owner, field.name) if item else _acceptor(field.owner, field.name)
    if accepts is None:
        return None
    meant = _meant(value, accepts)
    if meant is not _NOTHING:
        return set_fix(path, meant, f"Set `{path}` to {brief(meant)} (was {brief(value)})")
    if item:
        list_path = path[:path.rindex("[")]
        gone = [i for i, other in enumerate(items or ()) if not accepts(other) and _meant(other, accepts) is _NOTHING]
        if len(gone) <= 1:
            return delete_fix(path)  # an item has no default: what it cannot be read as goes
        where = ", ".join(f"[{i}]" for i in gone)
        return Fix(f"Remove the items of `{list_path}` that it cannot read: {where}",
                   tuple(FixOp("delete", f"{list_path}[{i}]") for i in reversed(gone)))  # last first: no shifts
    default = plain_default(field)
    if default is None:
        return delete_fix(path) if accepts(None) else None
    if isinstance(default, dict | list):
        return None
    if not accepts(default):  # a default JSON cannot write (tensor_parallel.dtype's torch.float16): leave it out
        return delete_fix(path) if not field.info.is_required() else None
    return set_fix(path, default, f"Set `{path}` to its default, {shown(default)}")


def plain_default(field: SchemaField) -> Any:
    """A field's default as JSON writes it: an enum member's value (``ZeroStage.disabled`` is 0), else as is."""
    return plain(field.default)


#: ``_meant`` found no value the user could have meant.
_NOTHING = object()


def _meant(value: Any, accepts: Callable[[Any], bool]) -> Any:
    """The accepted value ``value`` was most likely meant as (the item of a one-item list, a choice written in
    another case, a number written as text, the whole number of a float), or ``_NOTHING``."""
    candidates: list[Any] = []
    if isinstance(value, list) and len(value) == 1:
        candidates.append(value[0])
    if isinstance(value, str):
        # a choice written in another case or with spaces ("CPU", " nvme"): DeepSpeed matches them exactly
        text = value.strip()
        candidates.extend(dict.fromkeys((text, text.lower(), text.upper(), text.capitalize())))
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
            return candidate
    return _NOTHING


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
    has_validators = any(name in decorator.info.fields
                         for decorator in owner.__pydantic_decorators__.field_validators.values())

    def accepts(candidate: Any) -> bool:
        try:
            adapter.validate_python(candidate)
        except (ValidationError, TypeError, ValueError):
            return False
        if has_validators:  # the section's own validators of this field (e.g. one that refuses every JSON value)
            try:
                owner.__pydantic_validator__.validate_assignment(owner.model_construct(), name, candidate)
            except ValidationError as error:  # only the field's own errors count, not the section's cross-checks
                return not any(tuple(e["loc"][:1]) == (name,) for e in error.errors())
            except (TypeError, ValueError):
                return False
        return True

    return accepts


@lru_cache(maxsize=1024)
def _item_acceptor(owner: type[BaseModel], name: str) -> Any:
    """Whether a value is a valid item of the list field ``owner.name`` (None when the field holds no list)."""
    item_type = _list_item_type(owner.model_fields[name].annotation)
    if item_type is None:
        return None
    adapter = TypeAdapter(item_type)

    def accepts(candidate: Any) -> bool:
        try:
            adapter.validate_python(candidate)
        except (ValidationError, TypeError, ValueError):
            return False
        return True

    return accepts


def _list_item_type(annotation: Any) -> Any:
    """``X`` of ``list[X]``, ``list[X] | None`` or ``tuple[X, ...]``; None otherwise."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        found = [_list_item_type(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
        return found[0] if len(found) == 1 else None
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        return args[0] if args else Any
    return None

