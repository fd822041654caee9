"""The JSON Schema of ``ds_config.json``, generated from the pydantic schema, for editors (VS Code)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel

from core import versions
from core.schema.base import DEFAULT_VERSION, META_KEY, version_tuple
from core.schema.root import DeepSpeedConfig
from core.schema.walk import is_strict, iter_schema, nested_model, unique_fields

SCHEMA_ID = "https://deepspeed-config-studio.local/ds_config.schema.json"
_AUTO = {"const": "auto", "description": "Filled in by the HF Trainer / Accelerate, or the default."}


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    if model.__name__ in seen:
        return seen
    seen[model.__name__] = model
    for field in unique_fields(model):
        inner = field.model or nested_model(field.info.annotation)
        if inner is not None:
            _models(inner, seen)
    return seen


def json_schema(version: str = DEFAULT_VERSION, target: str = "deepspeed") -> dict[str, Any]:
    """A draft 2020-12 JSON Schema of the config for DeepSpeed ``version`` and ``target``.

    Every spelling DeepSpeed accepts is a property (``stage3_*`` aliases and the plain names),
    ``"auto"`` is allowed where DeepSpeed or the HF Trainer accepts it, keys of other versions are
    marked, and deprecated keys carry VS Code's ``deprecationMessage``.
    """
    schema = copy.deepcopy(DeepSpeedConfig.model_json_schema(by_alias=True, mode="validation"))
    defs = schema.setdefault("$defs", {})
    models = _models(DeepSpeedConfig, {})
    _adjust(schema, DeepSpeedConfig, version, target)
    for name, model in models.items():
        if name in defs and model is not DeepSpeedConfig:
            _adjust(defs[name], model, version, target)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = f"DeepSpeed config (ds_config.json) for DeepSpeed {version}, target {target}"
    return schema


def _adjust(node: dict[str, Any], model: type[BaseModel], version: str, target: str) -> None:
    props: dict[str, Any] = node.get("properties", {})
    strict = is_strict(model)
    v = version_tuple(version)
    for field in unique_fields(model):
        key = field.alias or field.name
        prop = props.get(key)
        if prop is None:
            continue
        meta = field.meta
        xds = prop.get(META_KEY, {})
        if (meta.added and v < version_tuple(meta.added)) or (meta.removed and v >= version_tuple(meta.removed)):
            message = xds.get("removed_message") or (
                f"Not in DeepSpeed {version}" + (f" (added in {meta.added})." if meta.added else ".")
            )
            props[key] = {"not": {}, "description": message, "deprecationMessage": message}
            continue
        if meta.deprecated:
            replacement = f" Use `{meta.replaced_by}` instead." if meta.replaced_by else ""
            prop["deprecationMessage"] = f"Deprecated.{replacement}"
        if prop.get("description"):
            prop["markdownDescription"] = prop["description"] + (
                f"\n\n*Note:* {meta.doc_note}" if meta.doc_note else ""
            )
        _bounds(prop, version, _prefixes().get(model, ()), key, xds)
        auto_ok = strict or (target == "hf" and meta.hf_auto) or meta.auto == "default"
        if auto_ok and field.model is None:
            outer = ("description", "markdownDescription", "deprecationMessage")
            props[key] = {"anyOf": [prop, _AUTO], **{k: prop[k] for k in outer if k in prop}}
        if field.alias and field.name not in props:
            props[field.name] = copy.deepcopy(props[key])


@cache
def _prefixes() -> dict[type[BaseModel], tuple[str, ...]]:
    """Where each section model sits in the config (its dotted paths; the root at "")."""
    found: dict[type[BaseModel], tuple[str, ...]] = {DeepSpeedConfig: ("",)}
    for path, field in iter_schema(DeepSpeedConfig):
        if field.model is not None:
            found[field.model] = (*found.get(field.model, ()), path)
    return found


_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def _bounds(prop: dict[str, Any], version: str, prefixes: tuple[str, ...], key: str, xds: dict[str, Any]) -> None:
    """The numeric bounds ``version`` itself checks (its profile's pydantic constraints: 0.19.8 requires
    ``reduce_bucket_size`` > 0 where 0.19.5 took 0), or the schema's own ``x-ds`` minimum, as JSON Schema keywords
    an editor applies (bounds kept only under ``x-ds`` were not checked)."""
    entries = [versions.field_entry(version, prefix, key) for prefix in prefixes]
    found = {(k, entry[k]) for entry in entries if entry for k in _BOUNDS if k in entry}
    if len({k for k, _ in found}) != len(found):
        return  # two places with different bounds: keep the schema's
    wanted = {_BOUNDS[k]: v for k, v in found}
    if not wanted and "minimum" in xds:
        wanted = {"minimum": xds["minimum"]}
    if not wanted:
        return
    for branch in [prop, *prop.get("anyOf", ())]:
        if branch.get("type") in ("integer", "number"):
            for name in ("minimum", "exclusiveMinimum") if {"minimum", "exclusiveMinimum"} & wanted.keys() else ():
                branch.pop(name, None)
            for name in ("maximum", "exclusiveMaximum") if {"maximum", "exclusiveMaximum"} & wanted.keys() else ():
                branch.pop(name, None)
            branch.update(wanted)
