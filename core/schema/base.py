"""Building blocks of the schema: the section base classes and ``ds_field``.

Every field of the DeepSpeed config is declared once, with ``ds_field``; its
type, default, bounds and description live in the pydantic field, and the rest
of what the product needs to know about it (which ZeRO stages it applies to,
which DeepSpeed versions have it, whether it is deprecated, what ``"auto"``
does there, how the app should draw it) lives in ``json_schema_extra["x-ds"]``.
Validation, the app's widgets, the JSON Schema export and the docs all read
from here; no other module lists keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from core import versions
from core.versions import version_tuple  # the one parser of release numbers; also re-exported from here

#: DeepSpeed releases with a validation profile (generated, see core/versions), oldest first.
KNOWN_VERSIONS: tuple[str, ...] = versions.RELEASES
DEFAULT_VERSION = versions.NEWEST

#: What DeepSpeed does with the string "auto" in a field.
#: - "default": pydantic sections drop "auto" before validation, so it silently means the default.
#: - "crash": DeepSpeed keeps "auto" and fails on it while parsing (e.g. arithmetic on the batch trio).
#: - "kept": DeepSpeed keeps "auto" verbatim and does not look at it while parsing; it breaks later
#:   unless something (the HF Trainer) fills it in.
#: - "fails": kept verbatim, and training fails when DeepSpeed uses it (e.g. arithmetic at the first step).
AutoBehaviour = Literal["default", "crash", "kept", "fails"]

#: How DeepSpeed reads a section.
#: - "strict": a pydantic model with extra="forbid": wrong types and unknown keys are errors.
#: - "lenient": plain ``dict.get``: wrong types are not checked, unknown keys are silently ignored.
SectionKind = Literal["strict", "lenient"]

#: The pages of the app (the app maps them to page files).
Page = Literal["start", "batch", "precision", "optimizer", "zero", "monitoring", "advanced"]


@dataclass(frozen=True)
class FieldMeta:
    """What the product knows about a field beyond its type, default and bounds."""

    stages: tuple[int, ...] | None = None
    """ZeRO stages the field has an effect in (None: all)."""
    added: str | None = None
    """First DeepSpeed version with this field (None: present in every known version)."""
    removed: str | None = None
    """First DeepSpeed version that rejects or no longer reads the field."""
    deprecated: bool = False
    replaced_by: str | None = None
    """Dotted path (relative to the section) of the replacement of a deprecated field."""
    auto: AutoBehaviour = "default"
    hf_auto: bool = False
    """The HF Trainer / Accelerate fills in ``"auto"`` here."""
    doc_note: str | None = None
    """Where the docs disagree with the code, or anything else users should know."""
    page: Page | None = None
    widget: str | None = None
    """Hint for the app: "select", "segmented" (a few choices as one row of buttons), "json", "path" ..."""
    unit: str | None = None
    """"elements", "bytes", "steps" ..."""
    choices: tuple[Any, ...] | None = None
    """Accepted values of a lenient (unchecked) string field, for widgets and rules."""
    extra: dict[str, Any] = field(default_factory=dict)

    def exists_in(self, version: str) -> bool:
        """Whether the field exists in DeepSpeed ``version``."""
        v = version_tuple(version)
        if self.added and v < version_tuple(self.added):
            return False
        return not (self.removed and v >= version_tuple(self.removed))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in (
            "stages", "added", "removed", "deprecated", "replaced_by", "auto", "hf_auto",
            "doc_note", "page", "widget", "unit", "choices",
        ):
            value = getattr(self, key)
            if value not in (None, False, ()) and not (key == "auto" and value == "default"):
                out[key] = list(value) if isinstance(value, tuple) else value
        out.update(self.extra)
        return out


META_KEY = "x-ds"


def ds_field(
    default: Any = ...,
    *,
    description: str,
    alias: str | None = None,
    default_factory: Any = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    stages: tuple[int, ...] | None = None,
    added: str | None = None,
    removed: str | None = None,
    deprecated: bool = False,
    replaced_by: str | None = None,
    auto: AutoBehaviour = "default",
    hf_auto: bool = False,
    doc_note: str | None = None,
    page: Page | None = None,
    widget: str | None = None,
    unit: str | None = None,
    choices: tuple[Any, ...] | None = None,
    examples: list[Any] | None = None,
    **extra: Any,
) -> Any:
    """Declare one config field: pydantic's ``Field`` plus the product's metadata."""
    meta = FieldMeta(
        stages=stages, added=added, removed=removed, deprecated=deprecated, replaced_by=replaced_by,
        auto=auto, hf_auto=hf_auto, doc_note=doc_note, page=page, widget=widget, unit=unit,
        choices=choices, extra=extra,
    )
    kwargs: dict[str, Any] = {
        "description": description,
        "json_schema_extra": {META_KEY: meta.as_json()},
    }
    if alias is not None:
        kwargs["alias"] = alias
    for name, bound in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)):
        if bound is not None:
            kwargs[name] = bound
    if examples is not None:
        kwargs["examples"] = examples
    if default_factory is not None:
        return Field(default_factory=default_factory, **kwargs)
    return Field(default, **kwargs)


def field_meta(info: FieldInfo) -> FieldMeta:
    """The product metadata of a field (an empty FieldMeta for plain pydantic fields)."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    raw: dict[str, Any] = extra.get(META_KEY) or {}  # type: ignore[assignment]
    names = FieldMeta.__dataclass_fields__
    known = {k: v for k, v in raw.items() if k in names and k != "extra"}
    for key in ("stages", "choices"):
        if known.get(key) is not None:
            known[key] = tuple(known[key])
    return FieldMeta(**known, extra={k: v for k, v in raw.items() if k not in names})


def _drop_auto(data: Any) -> Any:
    # DeepSpeedConfigModel.__init__ drops every "auto" value before validation, in every
    # pydantic section (nested ones too), so "auto" there silently means the default.
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if not (isinstance(v, str) and v == "auto")}
    return data


def _section_config(extra: Literal["forbid", "allow"], kind: SectionKind) -> ConfigDict:
    """The pydantic settings of every section; ``extra`` and ``kind`` tell a strict section from a lenient one."""
    return ConfigDict(extra=extra, populate_by_name=True, validate_default=False, use_enum_values=True,
                      protected_namespaces=(), json_schema_extra={META_KEY: {"kind": kind}})


class Section(BaseModel):
    """A section DeepSpeed parses with pydantic (``DeepSpeedConfigModel``): strict."""

    model_config = _section_config("forbid", "strict")

    @model_validator(mode="before")
    @classmethod
    def _drop_auto_values(cls, data: Any) -> Any:
        return _drop_auto(data)


class LenientSection(BaseModel):
    """A section DeepSpeed reads with ``dict.get``: nothing is type-checked, unknown keys are ignored.

    Type errors found here are reported as warnings (DeepSpeed would not notice them
    until the value is used), unknown keys as warnings. Unlike pydantic sections, DeepSpeed keeps
    "auto" here verbatim, so it is validated like any other value (the "auto" rule explains it).
    """

    model_config = _section_config("allow", "lenient")


class OpenSection(LenientSection):
    """A lenient section whose keys are free-form (DeepSpeed passes them on or merges them):
    unknown keys here are not reported."""

    model_config = ConfigDict(json_schema_extra={META_KEY: {"kind": "lenient", "open": True}})


def is_open_section(model: type[BaseModel]) -> bool:
    """Whether unknown keys are expected in this section."""
    return issubclass(model, OpenSection)


def section_kind(model: type[BaseModel]) -> SectionKind:
    """"strict" or "lenient" for a section model."""
    return "lenient" if issubclass(model, LenientSection) else "strict"


def pointed_error(message: str, at: str, suggestion: str) -> PydanticCustomError:
    """A section check's failure that names the key it is about (``at``, under the section) and the fix: the
    finding points at that key, suggests ``suggestion`` and offers to remove the key. ``message`` is DeepSpeed's
    own (the profiles match it per release)."""
    return PydanticCustomError("value_error", message, {"at": at, "suggestion": suggestion})
