"""Field logic of the widgets, without Streamlit: how a schema field or an optimizer parameter is drawn (kind,
bounds, default, choices, help), where its value lives in the config, when it is disabled, how typed JSON is
read, and how findings are put into words. ``ui.widgets`` draws with these; everything here is unit-testable.
"""

from __future__ import annotations

import copy
import enum
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from functools import cached_property
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel

from core import io, versions
from core.effective import Effective, effective, switch_on
from core.findings import Finding, Report, delete_path, get_path, join_path, split_path
from core.findings import plain as json_value
from core.rules import codes
from core.schema import DeepSpeedConfig
from core.schema.base import DEFAULT_VERSION, FieldMeta
from core.schema.optimizer import resolve_optimizer
from core.schema.walk import SchemaField, field_exists, resolve, section_fields, section_meta, unique_fields

#: The scheduler's type: changing it adapts the scheduler's params (``core.autofill.switch_scheduler``).
SCHEDULER_TYPE = "scheduler.type"
#: Largest integer a browser number widget holds exactly.
JS_MAX_SAFE_INT = 2**53 - 1
#: The field that switches a section on and off: any section model with a field of this name has one.
SWITCH = "enabled"
#: Longest text a code block shows in full; a larger file shows its beginning and says so (the download and
#: the copy the user exports are always the whole file).
MAX_SHOWN_LINES = 400
#: Most characters a code block shows: 400 indented lines of a config are ~20 K; a config written compact (one
#: line at the size limit, core.io.dump_config) is cut here too.
MAX_SHOWN_CHARS = 40_000
#: Findings of one code drawn one by one; the others of that code are summarised in one line (a config at the
#: size limit can hold tens of thousands of unknown keys, and nobody reads the 50th identical warning).
MAX_DRAWN_PER_CODE = 20
Kind = Literal["bool", "int", "float", "choice", "str", "json", "section"]
Bounds = tuple[float | None, float | None]


@dataclass(frozen=True)
class FieldKind:
    """How a field is drawn."""

    kind: Kind
    choices: tuple[Any, ...] = ()
    optional: bool = False
    """None is accepted (shown as "not set")."""
    allows_auto: bool = False
    """The type itself accepts the string "auto" (``int | Literal["auto"]``)."""
    segmented: bool = False
    """Drawn as a row of buttons, one click to choose (the schema's ``widget="segmented"``), not a drop-down."""


@dataclass(frozen=True)
class Form:
    """What every widget of one page run needs to know: the config, its findings and the context."""

    config: dict[str, Any]
    report: Report
    target: str
    version: str
    stage: int
    shown: set[str] = dc_field(default_factory=set)
    """Paths whose findings a widget of this run already showed."""
    raw_boxes: set[str] = dc_field(default_factory=set)
    """Paths whose raw JSON box this run already drew."""

    @cached_property
    def meaning(self) -> Effective:
        """What the config means to DeepSpeed ``version`` (``core.effective``), read once per page run."""
        return effective(self.config, self.version)

    def findings_at(self, path: str) -> list[Finding]:
        return [f for f in self.report.findings if f.path == path and f.severity in ("error", "warning")]

    def findings_under(self, path: str) -> list[Finding]:
        prefix = path + "."
        return [f for f in self.report.findings
                if (f.path == path or f.path.startswith(prefix)) and f.severity in ("error", "warning")]


# --------------------------------------------------------------------------- schema fields


def field_kind(field: SchemaField) -> FieldKind:
    """Classify a schema field for drawing, from its annotation and metadata."""
    annotation = field.info.annotation
    args: tuple[Any, ...] = (annotation,)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
    optional = type(None) in args
    args = tuple(a for a in args if a is not type(None))
    literals: list[Any] = []
    plain: list[Any] = []
    for arg in args:
        if typing.get_origin(arg) is Literal:
            literals.extend(typing.get_args(arg))
        else:
            plain.append(arg)
    allows_auto = "auto" in literals and bool(plain)
    if allows_auto:
        literals.remove("auto")
    if field.model is not None:
        return FieldKind("section", optional=optional)
    segmented = field.meta.widget == "segmented"
    if field.meta.choices:
        return FieldKind("choice", tuple(field.meta.choices), optional, allows_auto, segmented)
    if len(plain) == 1 and isinstance(plain[0], type) and issubclass(plain[0], enum.Enum):
        return FieldKind("choice", tuple(m.value for m in plain[0]), optional, allows_auto, segmented)
    if literals and not plain:
        return FieldKind("choice", tuple(literals), optional, allows_auto, segmented)
    if plain == [bool] and optional and field.default is None:
        # unset is neither true nor false (overlap_comm: true at stage 3): a checkbox could show neither it nor a way
        # back to it
        return FieldKind("choice", (True, False), optional, allows_auto)
    if plain == [bool]:
        return FieldKind("bool", (), optional, allows_auto)
    if plain == [int]:
        return FieldKind("int", (), optional, allows_auto)
    if set(plain) <= {int, float} and plain:
        return FieldKind("float", (), optional, allows_auto)
    if plain == [str]:
        return FieldKind("str", (), optional, allows_auto)
    return FieldKind("json", (), optional, allows_auto)


def added_by_presence(field: SchemaField) -> bool:
    """A nested section that is absent unless written (``Section | None = None``) and has no ``enabled`` switch:
    being there is what DeepSpeed reads (``zero_optimization.zenflow``: any object, ``{}`` too, turns ZenFlow on), so
    the app adds it only when asked, not as a side effect of a knob inside it."""
    return (field.model is not None and field.default is None and SWITCH not in section_fields(field.model)
            and type(None) in typing.get_args(field.info.annotation))


def auto_is_default(field: SchemaField) -> bool:
    """DeepSpeed's own default is ``"auto"`` (AutoEP's ``top_k``, ``pipeline.stages``, ZenFlow's intervals): a value
    it works out itself, not one the HF Trainer fills in, so it is a choice among the field's values."""
    return isinstance(field.default, str) and field.default == "auto"


def number_bounds(kind: Kind, ge: Any = None, gt: Any = None, le: Any = None, lt: Any = None) -> Bounds:
    """(min, max) of a number widget: an integer's open bounds become closed ones; open float bounds are left to
    the validator."""
    if kind == "int":
        low = ge if ge is not None else (gt + 1 if gt is not None else None)
        high = le if le is not None else (lt - 1 if lt is not None else None)
        return (None if low is None else int(low), None if high is None else int(high))
    return (None if ge is None else float(ge), None if le is None else float(le))


def bounds(field: SchemaField, kind: Kind) -> Bounds:
    """(min, max) for a number widget from the field's Ge/Gt/Le/Lt."""
    found: dict[str, Any] = {}
    for item in field.info.metadata:
        for name, cls in (("ge", at.Ge), ("gt", at.Gt), ("le", at.Le), ("lt", at.Lt)):
            if isinstance(item, cls):
                found[name] = getattr(item, name)
    return number_bounds(kind, **found)


def plain_default(field: SchemaField) -> Any:
    """The field's default as it would appear in JSON (enums as their value)."""
    return None if field.default is Ellipsis else json_value(field.default)


def config_path(config: Mapping[str, Any], path: str) -> str:
    """The dotted path as it is (or would be) spelled in the config: at each step the key the config
    already uses (name or alias), else the alias DeepSpeed documents (``stage3_...``), else the name."""
    model: type[BaseModel] | None = DeepSpeedConfig
    node: Any = config
    out: list[str] = []
    for key in split_path(path):
        found = section_fields(model).get(key) if model is not None else None
        if found is None:
            out.append(key)
            model = None
        else:
            used = next((k for k in found.keys if isinstance(node, Mapping) and k in node), None)
            out.append(used or found.alias or found.name)
            model = found.model
        node = node.get(out[-1]) if isinstance(node, Mapping) else None
    return ".".join(out)


#: Fields whose value when left out depends on the rest of the config, and the ``core.effective`` reading of it.
EFFECTIVE_READINGS: Mapping[str, str] = types.MappingProxyType({"zero_optimization.overlap_comm": "overlap_comm"})


def unset_value(path: str, config: Mapping[str, Any], version: str, default: Any,
                field: SchemaField | None = None) -> Any:
    """What DeepSpeed ``version`` uses for ``path`` when ``config`` leaves it out: ``core.effective``'s reading where
    it reads the field, else ``default`` (the release's), else what the schema says a left-out value means where
    DeepSpeed passes None on and the consumer reads it (``unset_means``: comet's ``online``, ``use_reentrant``)."""
    reading = EFFECTIVE_READINGS.get(path)
    if reading is None:
        return default if default is not None or field is None else field.meta.extra.get("unset_means")
    without = copy.deepcopy(dict(config))
    delete_path(without, path)
    return getattr(effective(without, version), reading)


def field_for(path: str) -> SchemaField:
    """The schema field at the dotted ``path`` (KeyError when the schema has none)."""
    found = resolve(DeepSpeedConfig, path)
    if found is None:
        raise KeyError(f"{path!r} is not a field of the DeepSpeed schema")
    return found


def page_fields(page: str) -> list[str]:
    """Names of the top-level schema fields the schema assigns to ``page``, in declaration order."""
    return [f.name for f in unique_fields(DeepSpeedConfig) if f.meta.page == page]


def release_history(field: SchemaField, prefix: str | None) -> tuple[str | None, str | None]:
    """(the release that added ``field``, the one that removed it) as the releases' profiles say for the section at
    ``prefix`` (``versions.history``), else as the schema's metadata says (sections no profile records)."""
    if prefix is not None:
        for key in (field.alias, field.name):
            if key is not None and (found := versions.history(prefix.split("[")[0], key)) != (None, None):
                return found
    return field.meta.added, field.meta.removed


def parent_path(path: str) -> str:
    """The dotted path of the section holding ``path`` ("" for a top-level key)."""
    return _join(split_path(path)[:-1])


def _help(description: str, meta: FieldMeta, default_line: str | None,
          history: tuple[str | None, str | None] | None = None) -> str:
    """Help text from a description, a default (or "Required.") and the metadata config fields and optimizer or
    scheduler parameters share (``FieldMeta``); ``history`` (added, removed) as the releases say, else the
    metadata's."""
    parts = [description]
    if default_line is not None:
        parts.append(default_line)
    elif meta.unit:
        parts.append(f"Unit: {meta.unit}.")
    if meta.stages is not None:
        parts.append("Applies to ZeRO stage " + ", ".join(str(s) for s in meta.stages) + ".")
    if meta.hf_auto:
        parts.append('The HF Trainer / Accelerate can fill this in ("auto").')
    added, removed = history or (meta.added, meta.removed)
    if added:
        parts.append(f"Added in DeepSpeed {added}.")
    if removed:
        parts.append(f"Removed in DeepSpeed {removed}.")
    if meta.deprecated:
        parts.append("Deprecated" + (f": use `{meta.replaced_by}`." if meta.replaced_by else "."))
    if meta.doc_note:
        parts.append(f"Note: {meta.doc_note}")
    return "\n\n".join(p for p in parts if p)


def _default_line(default: Any, meta: FieldMeta) -> str:
    return f"Default: `{json.dumps(default)}`" + (f" {meta.unit}" if meta.unit else "") + "."


def help_text(field: SchemaField, default: Any = Ellipsis, prefix: str | None = None) -> str:
    """Help text of a widget: description, unit, default (``default`` when given: the release's), notes — all
    from the schema; the releases that added or removed it from their profiles when the section ``prefix`` is
    given."""
    shown_default = plain_default(field) if default is Ellipsis else default
    default_line = _default_line(shown_default, field.meta) if field.model is None else None
    return _help(field.info.description or "", field.meta, default_line, release_history(field, prefix))


def _join(keys: list[str]) -> str:
    out = ""
    for key in keys:
        out = join_path(out, key)
    return out


def non_object_parent(config: Mapping[str, Any], path: str) -> tuple[str, Any] | None:
    """The enclosing key of ``path`` the config has that holds a list, a string, a number or a boolean instead of
    an object (an edit inside it would be dropped), with its value; else None.

    A null is no obstacle: DeepSpeed reads it as "not set", and a widget writing inside it replaces it with a new
    object (``core.findings.set_path``); the null held no keys, so nothing the user wrote is lost."""
    node: Any = config
    walked: list[str] = []
    for key in split_path(path)[:-1]:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
        walked.append(key)
        if node is None:
            return None
        if not isinstance(node, Mapping):
            return ".".join(walked), node
    return None


def _json_kind(value: Any) -> str:
    """``value``'s JSON type in words (\"a list\", \"a string\", \"a number\", \"a boolean\")."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a list" if isinstance(value, list) else "a string" if isinstance(value, str) else \
        f"a {type(value).__name__}"


def not_an_object(config: Mapping[str, Any], path: str) -> str | None:
    """Why nothing can be written at ``path``: an enclosing key the config has holds a list, a string or a
    number instead of an object (``non_object_parent``); else None. The widget draws the raw JSON box it names
    (``ui.widgets``)."""
    found = non_object_parent(config, path)
    if found is None:
        return None
    where, value = found
    return (f"`{where}` is {_json_kind(value)}, not an object, so nothing can be set inside it: write it as an "
            f"object in the box \"Raw JSON of `{where}`\" on this page, or empty that box to remove it (DeepSpeed "
            "then uses the defaults).")


def switched_off(section_path: str, config: Mapping[str, Any], version: str = DEFAULT_VERSION) -> str | None:
    """Why the fields of the section at ``section_path`` do nothing now: the first section on the way
    (itself or an enclosing one) whose schema has an ``enabled`` switch that is off in ``config`` as DeepSpeed
    ``version`` reads it (``core.effective.switch_on``: in a release that reads the section with ``dict.get``,
    ``"false"`` is on); or None.

    Driven by the schema, not a list of sections: ``tensorboard``, ``wandb``, ``fp16``, ``flops_profiler``,
    ``data_efficiency.data_sampling`` … all qualify by having the field. ``"auto"`` counts as on (the HF
    Trainer fills it in); an absent switch takes the schema default. A section marked ``switch_ungated`` (DeepSpeed
    acts on its own switch alone, e.g. random-LTD) is not gated by the switches above it.
    """
    model: type[BaseModel] | None = DeepSpeedConfig
    node: Any = config
    walked: list[str] = []
    reason: str | None = None
    for key in split_path(section_path):
        found = section_fields(model).get(key) if model is not None else None
        if found is None or found.model is None:
            return None
        model = found.model
        node = node.get(key) if isinstance(node, Mapping) else None
        walked.append(key)
        if switch_ungated(model):
            reason = None  # DeepSpeed reads this section's switch whatever the enclosing ones say
        switch = section_fields(model).get(SWITCH)
        if switch is None or reason is not None:
            continue
        if found.meta.extra.get("presence_matters") and isinstance(node, Mapping):
            continue  # on by being there, whatever its switch says (comms_logger: 'comms_logger' in ds_config)
        value = node.get(SWITCH, plain_default(switch)) if isinstance(node, Mapping) else plain_default(switch)
        if value != "auto" and not switch_on(value, _join(walked), version):
            reason = f"`{_join(walked)}` is off: turn on `{SWITCH}` first."
    return reason


def switch_ungated(model: type[BaseModel]) -> bool:
    """Whether DeepSpeed acts on the section's own ``enabled`` switch whatever the enclosing sections' switches
    say (the schema's ``switch_ungated``: random-LTD and the curriculum of ``data_efficiency``)."""
    return bool(section_meta(model).get("switch_ungated"))


def disabled_reason(field: SchemaField, form: Form, path: str | None = None) -> str | None:
    """Why a field cannot be edited now (not in this DeepSpeed version, as its profile says; wrong ZeRO stage; its
    section switched off), or None. ``path`` is the field's dotted path (needed for the section switch)."""
    meta = field.meta
    prefix = None if path is None else parent_path(path)
    if not exists(field, form, prefix):
        added, removed = release_history(field, prefix)
        when = f"removed in {removed}" if removed and versions.version_tuple(form.version) >= \
            versions.version_tuple(removed) else f"added in {added}" if added else None
        return f"Not available in DeepSpeed {form.version}" + (f" ({when})." if when else ".")
    if meta.stages is not None and form.stage not in meta.stages:
        stages = ", ".join(str(s) for s in meta.stages)
        return f"Only has an effect with ZeRO stage {stages}; the current stage is {form.stage}."
    if path and (blocked := not_an_object(form.config, path)):
        return blocked
    if path and (old := written_as_deprecated(field, form.config, path)):
        return (f"Written under its deprecated name `{old[0]}` ({json.dumps(json_value(old[1]))}), which this "
                "widget shows; rename the key (the finding's fix) to edit it here.")
    if path:
        # A section's own switch stays editable (only enclosing switches count); all else waits for it.
        if switch_ungated(field.model if field.model is not None else field.owner) and (
                field.name == SWITCH or field.model is not None):
            return None  # the section itself and its own switch: the enclosing switches gate neither
        keys = split_path(path)[: -2 if field.name == SWITCH else -1]
        return switched_off(_join(keys), form.config, form.version) if keys else None
    return None


def written_as_deprecated(field: SchemaField, config: Mapping[str, Any], path: str) -> tuple[str, Any] | None:
    """(key, value) of the deprecated key of the same section that names this field as its replacement and stands
    in its place in ``config`` (``stage3_gather_fp16_weights_on_model_save`` for
    ``gather_16bit_weights_on_model_save``), while the field's own keys are absent; else None."""
    if field.model is not None:
        return None
    parent = parent_path(path)
    section = get_path(config, parent, None) if parent else config
    if not isinstance(section, Mapping) or any(key in section for key in field.keys):
        return None
    for spec in unique_fields(field.owner):
        if spec.model is None and spec.meta.deprecated and spec.meta.replaced_by in field.keys:
            for key in spec.keys:
                if key in section:
                    return key, section[key]
    return None


def exists(field: SchemaField, form: Form, prefix: str | None) -> bool:
    """Whether the form's DeepSpeed release reads ``field`` in the section at ``prefix`` (its profile, where one
    records the section; the schema's metadata without a ``prefix`` or a profile)."""
    return field.meta.exists_in(form.version) if prefix is None else field_exists(field, prefix, form.version)


def visible(field: SchemaField, form: Form, section_value: Any, prefix: str | None = None) -> bool:
    """A field is listed when the config has it, or when it is current (not deprecated, read by this release in
    the section at ``prefix``)."""
    present = isinstance(section_value, Mapping) and any(k in section_value for k in field.keys)
    if present:
        return True
    return not field.meta.deprecated and exists(field, form, prefix)


def fits(value: Any, kind: FieldKind, low: Any, high: Any) -> bool:
    """Whether the widget of ``kind`` can show ``value`` (else the value is edited as raw JSON)."""
    if value is None:
        return kind.optional or kind.kind in ("str", "json")
    if kind.kind == "bool" or (kind.kind == "choice" and kind.choices == (True, False)):
        return isinstance(value, bool)  # 1 == True: a 1 in the file would be shown, and written back, as true
    if kind.kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if kind.kind == "int" and not isinstance(value, int):
            return False
        if isinstance(value, int) and abs(value) > JS_MAX_SAFE_INT:
            return False  # the browser cannot hold it exactly (nor a float box one beyond float range): JSON text
        return (low is None or value >= low) and (high is None or value <= high)
    if kind.kind == "str":
        return isinstance(value, str)
    return True


#: The choice fields whose options come and go with the DeepSpeed release: whether a release knows an option, asked
#: of core's per-release knowledge (the optimizers each profile lists, or a torch.optim class; its schedulers; the
#: values its AutoEP accepts for an ``expert_parallel`` key, ``versions.autoep_choices``). The other choice fields'
#: options are the same in every release (tests/test_app_hunt_1129.py checks the profiles).
_RELEASE_CHOICES: dict[str, Callable[[Any, str], bool]] = {
    "optimizer.type": lambda name, version: resolve_optimizer(name, version) is not None,
    "scheduler.type": lambda name, version: name in versions.scheduler_names(version),
}
_AUTOEP = "expert_parallel."


def release_choices(kind: FieldKind, path: str, version: str) -> FieldKind:
    """``kind`` without the choices DeepSpeed ``version`` does not know (OneBitAdam in 0.19.8, or AutoEP's
    ``fused_weighted_sum`` in 0.19.6: choosing it is an error); the value the config holds is still offered
    (``choice_options``), so nothing is lost."""
    if path.startswith(_AUTOEP):  # a key the release's AutoEP does not check keeps every choice
        accepted = versions.autoep_choices(version).get(path.removeprefix(_AUTOEP), kind.choices)
        return replace(kind, choices=tuple(choice for choice in kind.choices if choice in accepted))
    known = _RELEASE_CHOICES.get(path)
    if known is None:
        return kind
    return replace(kind, choices=tuple(choice for choice in kind.choices if known(choice, version)))


def choice_options(kind: FieldKind, value: Any) -> list[Any]:
    """The options of a choice widget: not-set first when optional, and the current value even when it is
    not one of the choices (so the widget shows what the config holds)."""
    options: list[Any] = ([None] if kind.optional else []) + list(kind.choices)
    if value not in options:
        options.append(value)
    return options


def choice_label(value: Any, field: SchemaField, default: Any) -> str:
    """The label of one option of a schema field's choice widget (enum values with their name)."""
    if value is None:
        return "— not set —" if default is None else f"— not set (default: {json.dumps(default)}) —"
    if isinstance(value, bool):
        return json.dumps(value)
    annotation = field.info.annotation
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, enum.Enum):
            try:
                return f"{value} — {arg(value).name.replace('_', ' ')}"
            except ValueError:
                return str(value)
    return str(value)


# --------------------------------------------------------------------------- registry parameters


def param_kind(param: Any, value: Any) -> FieldKind:
    """How to draw an optimizer/scheduler ``Param`` (from ``core.schema.optimizer``) holding ``value``."""
    types_ = set(param.types)
    optional = True  # a parameter can always be left out of ``params`` (required ones are then a finding)
    if param.meta.choices:
        return FieldKind("choice", tuple(param.meta.choices), optional)
    if "array" in types_ and (isinstance(value, list) or types_ <= {"array", "null"}):
        return FieldKind("json", (), optional)
    if types_ == {"boolean", "null"}:
        # null is neither (torch's foreach / fused: null picks by device): a checkbox could not show it nor go back
        return FieldKind("choice", (True, False), optional)
    if "boolean" in types_:
        return FieldKind("bool", (), optional)
    if ("integer" in types_ and "number" not in types_) or ("number" in types_ and param.meta.unit == "steps"):
        return FieldKind("int", (), optional)  # a step count is an integer even where DeepSpeed takes a float
    if "number" in types_:
        return FieldKind("float", (), optional)
    if "string" in types_:
        return FieldKind("str", (), optional)
    return FieldKind("json", (), optional)


def param_bounds(param: Any, kind: Kind) -> Bounds:
    """(min, max) for a parameter's number widget."""
    return number_bounds(kind, param.ge, param.gt, param.le, param.lt)


def param_default(param: Any, form: Form, base: str = "optimizer.params") -> Any:
    """The value a parameter left out of the form's config takes: the default of the class the config selects
    (``Param.default_for``: torch.optim.AdamW's weight_decay is 0.01 where DeepSpeed's AdamW's is 0); for a
    scheduler's (``base`` "scheduler.params"), the release's own where its profile records it (WarmupLR's
    warmup_max_lr is 0.001 in 0.16.x)."""
    if base == "scheduler.params":
        from core.lr_schedules import scheduler_param_default

        section = form.config.get("scheduler")
        found, default = scheduler_param_default(section.get("type") if isinstance(section, Mapping) else None,
                                                 param.name, form.version)
        if found:
            return default
    return param.default_for(form.meaning.optimizer_class)


def param_help(param: Any, default: Any = Ellipsis) -> str:
    """Help text of a parameter's widget: description, required or default (``default`` when given: the selected
    class's), notes (as a field's)."""
    shown = param.default if default is Ellipsis else default
    return _help(param.description, param.meta, "Required." if param.required else _default_line(shown, param.meta))


# --------------------------------------------------------------------------- typed text


def parse_json_value(text: str, path: str) -> tuple[Any, str | None]:
    """Parse a JSON value typed into a text area (``core.io.parse_json_value``): (value, None) or (None, an error
    naming the path, and line and column where they are known)."""
    try:
        return io.parse_json_value(text), None
    except io.ConfigLoadError as exc:
        return None, f"`{path}`: {exc}."


def json_text(value: Any) -> tuple[str, int]:
    """A value as the text of a JSON text area, and the area's height in pixels."""
    text = "" if value is None else json.dumps(value, indent=2 if isinstance(value, dict | list) else None)
    return text, 68 if "\n" not in text else min(300, 40 + 22 * text.count("\n"))


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: Any) -> str:
    """``text`` as literal Markdown (no links, images, emphasis or HTML from preset files or paths)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def safe_text(text: str) -> str:
    """Text Streamlit can send to the browser: lone surrogates (from "\\ud800" escapes in a config) shown as
    escapes instead of failing the page."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def preview(text: str) -> tuple[str, str | None]:
    """What a code block shows of ``text``: all of it, or its first ``MAX_SHOWN_LINES`` lines and a caption."""
    lines = text.count("\n") + 1
    if lines <= MAX_SHOWN_LINES and len(text) <= MAX_SHOWN_CHARS:
        return text, None
    head = "\n".join(text.split("\n", MAX_SHOWN_LINES)[:MAX_SHOWN_LINES])
    size = f"{len(text.encode()) / 1024:,.0f} KiB"
    if len(head) > MAX_SHOWN_CHARS:
        return head[:MAX_SHOWN_CHARS], (f"The first {MAX_SHOWN_CHARS:,} characters of {size} are shown; the "
                                        "download holds all of it.")
    return head, f"The first {MAX_SHOWN_LINES:,} of {lines:,} lines ({size}) are shown; the download holds all of it."


# --------------------------------------------------------------------------- findings in words


def counted(count: int | float, noun: str) -> str:
    """"1 error", "2 errors", "0 warnings", "1.5 GPUs": a count in words, as every page says it (a fractional
    count, GPUs ÷ model-parallel ranks that do not divide, is written as Python's ``g`` format writes it)."""
    return f"{count:g} {noun}{'' if count == 1 else 's'}" if isinstance(count, float) else \
        f"{count} {noun}{'' if count == 1 else 's'}"


def finding_text(finding: Finding) -> str:
    """A finding as markdown: code, path, message and suggestion (safe to send to the browser)."""
    text = f"**{finding.code}** at `{finding.path or '(top level)'}` — {finding.message}"
    if finding.suggestion:
        text += f"\n\n{finding.suggestion}"
    return safe_text(text)


def code_reference(code: str) -> str:
    """The finding-code table's entry of ``code`` as markdown (what ``dsconfig explain CODE`` prints)."""
    entry = codes.lookup(code)
    if entry is None:
        return safe_text(f"**{code}**: no entry in the finding-code table.")
    fix = {True: "safe (keeps what DeepSpeed does)", False: "unsafe (review it)", None: "none"}[entry.fix_safe]
    return safe_text(f"**{code}** ({entry.severity}) — {entry.summary}\n\n"
                     f"*When:* {codes.FAILS[entry.fails]}. *Automatic fix:* {fix}.\n\n{entry.why}")


def inline_finding_text(finding: Finding) -> str:
    """A finding shown under its widget: code, message and suggestion (the path is the widget's)."""
    return safe_text(f"**{finding.code}** — {finding.message}" + (f"\n\n{finding.suggestion}" if finding.suggestion
                                                                else ""))


def drawn_findings(findings: Iterable[Finding]) -> tuple[list[Finding], dict[str, list[Finding]]]:
    """The findings to draw one by one, and for each code with more than ``MAX_DRAWN_PER_CODE`` the rest."""
    drawn: list[Finding] = []
    rest: dict[str, list[Finding]] = {}
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
        if counts[finding.code] <= MAX_DRAWN_PER_CODE:
            drawn.append(finding)
        else:
            rest.setdefault(finding.code, []).append(finding)
    return drawn, rest


def rest_text(code: str, findings: list[Finding]) -> str:
    """The one line that stands for the findings of ``code`` that ``drawn_findings`` left undrawn."""
    paths = ", ".join(f"`{f.path}`" for f in findings[:5])
    return safe_text(f"…and **{len(findings):,}** more **{code}** findings like those above ({paths}, …); "
                     "`dsconfig validate` lists every one.")
