"""Navigating the schema: which model a dotted path lands in, which keys a section knows.

Everything here is derived from the pydantic models; nothing is listed by hand.
"""

from __future__ import annotations

import copy
import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from core import versions
from core.findings import plain
from core.schema.base import DEFAULT_VERSION, META_KEY, FieldMeta, field_meta, is_open_section, section_kind


@dataclass(frozen=True)
class SchemaField:
    """A field of a section, seen from the config: its key, alias and what it holds."""

    name: str
    alias: str | None
    info: FieldInfo
    meta: FieldMeta
    owner: type[BaseModel]
    model: type[BaseModel] | None
    """The section model the field holds, if it holds one."""
    item_model: type[BaseModel] | None = None
    """The section model of each item, for ``list[Model]`` and ``dict[str, Model]`` fields."""
    container: str | None = None
    """"list" or "dict" when the field holds a collection of sections."""

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.name, self.alias) if self.alias else (self.name,)

    @property
    def default(self) -> Any:
        if self.info.default_factory is not None:
            value = self.info.default_factory()  # type: ignore[call-arg]
            return value.model_dump(by_alias=True) if isinstance(value, BaseModel) else value
        return self.info.default


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel inside ``X``, ``X | None``, ``Optional[X]`` (None if there is none)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = nested_model(arg)
            if found is not None:
                return found
    return None


def collection_model(annotation: Any) -> tuple[str | None, type[BaseModel] | None]:
    """("list", Model) for ``list[Model]``, ("dict", Model) for ``dict[str, Model]`` (through Optional)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = collection_model(arg)
            if found[1] is not None:
                return found
        return None, None
    args = typing.get_args(annotation)
    if origin is list and args:
        return "list", nested_model(args[0])
    if origin is dict and len(args) == 2:
        return "dict", nested_model(args[1])
    return None, None


def section_meta(model: type[BaseModel]) -> dict[str, Any]:
    """The class-level ``x-ds`` metadata of a section (kind, raises, doc_only, ...)."""
    extra = model.model_config.get("json_schema_extra")
    return dict(extra.get(META_KEY, {})) if isinstance(extra, dict) else {}


@cache
def section_fields(model: type[BaseModel]) -> dict[str, SchemaField]:
    """Fields of a section keyed by every accepted spelling (name and alias)."""
    out: dict[str, SchemaField] = {}
    for name, info in model.model_fields.items():
        container, item_model = collection_model(info.annotation)
        field = SchemaField(
            name=name, alias=info.alias, info=info, meta=field_meta(info), owner=model,
            model=nested_model(info.annotation), item_model=item_model if item_model else None,
            container=container if item_model else None,
        )
        for key in field.keys:
            out[key] = field
    return out


def unique_fields(model: type[BaseModel]) -> list[SchemaField]:
    """Each field of a section once, in declaration order."""
    # section_fields maps a field's name and each alias to the same object: identity, not a deep compare, dedupes
    return list({id(field): field for field in section_fields(model).values()}.values())


def is_strict(model: type[BaseModel]) -> bool:
    return section_kind(model) == "strict"


def is_open(model: type[BaseModel]) -> bool:
    return is_open_section(model)


def iter_schema(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, SchemaField]]:
    """Every field of the schema, depth first, with its dotted path (canonical names)."""
    for field in unique_fields(model):
        path = f"{prefix}.{field.name}" if prefix else field.name
        yield path, field
        if field.model is not None:
            yield from iter_schema(field.model, path)


@cache
def key_index(root: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Every key spelling → the dotted paths of the sections where it is a field."""
    index: dict[str, list[str]] = {}
    for path, field in iter_schema(root):
        parent = path.rpartition(".")[0]
        for key in field.keys:
            index.setdefault(key, []).append(parent)
    return {k: tuple(v) for k, v in index.items()}


def resolve(root: type[BaseModel], path: str) -> SchemaField | None:
    """The field at a dotted path (name or alias at each step), or None."""
    model: type[BaseModel] | None = root
    found: SchemaField | None = None
    for key in path.split("."):
        if model is None:
            return None
        found = section_fields(model).get(key)
        if found is None:
            return None
        model = found.model
    return found


def field_exists(field: SchemaField, prefix: str, version: str) -> bool:
    """Whether DeepSpeed ``version`` reads ``field`` in the section at dotted ``prefix``: the release's
    generated profile says where it can (top level, pydantic sections), the schema's metadata elsewhere."""
    section = prefix.split("[")[0]
    for key in (field.alias, field.name):
        if key is None:
            continue
        known = versions.key_known(version, section, key)
        if known is not None:
            return known
    return field.meta.exists_in(version)


def json_default(field: SchemaField) -> tuple[bool, Any]:
    """(True, the default as JSON data) when the field has a default worth writing out, else (False, None)."""
    if field.info.is_required():
        return False, None
    default = plain(field.default)
    if default is None:
        return False, None  # "not set" is not a value one can write; null may mean something else
    try:
        json.dumps(default, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, copy.deepcopy(default)


def default_in(field: SchemaField, path: str, version: str) -> Any:
    """The value DeepSpeed ``version`` uses when the key at dotted ``path`` is left out, as JSON writes it: its
    profile's record (``gradient_clipping`` is 0.0 before 0.19.3), else the schema's default (None when required)."""
    found, recorded = versions.recorded_default(version, path.rpartition(".")[0], field.alias or field.name)
    if found:
        return recorded
    return None if field.default is Ellipsis else plain(field.default)


def release_default(field: SchemaField, prefix: str, version: str) -> tuple[bool, Any]:
    """(True, the default as JSON data) for a field with a default worth writing (``json_default``), taken from
    DeepSpeed ``version``'s profile where it records one (``versions.recorded_default``), else the schema's for the
    schema's own release; (False, None) when that release's default is not known or is "not set"."""
    has_default, default = json_default(field)
    if not has_default:
        return False, None
    found, recorded = versions.recorded_default(version, prefix, field.alias or field.name)
    if found:
        return (False, None) if recorded is None else (True, recorded)
    # not recorded (a section this release reads key by key, e.g. bf16 before 0.19): the schema's default is the
    # newest release's, and another release's may differ, so none is known
    return (True, default) if version == DEFAULT_VERSION else (False, None)
