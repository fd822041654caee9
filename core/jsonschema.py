"""The JSON Schema of ``ds_config.json``, generated from the pydantic schema, for editors (VS Code)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from core.schema.base import DEFAULT_VERSION, META_KEY, version_tuple
from core.schema.root import DeepSpeedConfig
from core.schema.walk import is_strict, nested_model, unique_fields

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
        auto_ok = strict or (target == "hf" and meta.hf_auto) or meta.auto == "default"
        if auto_ok and field.model is None:
            outer = ("description", "markdownDescription", "deprecationMessage")
            props[key] = {"anyOf": [prop, _AUTO], **{k: prop[k] for k in outer if k in prop}}
        if field.alias and field.name not in props:
            props[field.name] = copy.deepcopy(props[key])
