"""The one generic widget builder: draws a config field from its schema entry and writes it back.

Label, help text, bounds, default, choices, the ZeRO stages a field applies to and the DeepSpeed
versions that have it all come from ``core.schema`` (``SchemaField``); pages only say which paths
to draw. A widget writes only its own dotted path into the config dict (callbacks run before the
script, so the sidebar and charts of the same run already see the change); every other key,
including keys the UI has no widget for, is left as it is.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Literal

import annotated_types as at
import streamlit as st
from pydantic import BaseModel

from core import autofill
from core.findings import Finding, Report, delete_path, get_path, join_path, set_path, split_path
from core.io import check_finite_numbers
from core.rules.context import lax_bool
from core.schema import DeepSpeedConfig
from core.schema.walk import SchemaField, is_open, resolve, section_fields, unique_fields
from ui import app_state, focus

_MISSING = object()
#: The scheduler's type: changing it adapts the scheduler's params (``core.autofill.switch_scheduler``).
SCHEDULER_TYPE = "scheduler.type"
#: Largest integer a browser number widget holds exactly.
JS_MAX_SAFE_INT = 2**53 - 1
Kind = Literal["bool", "int", "float", "choice", "str", "json", "section"]


@dataclass(frozen=True)
class FieldKind:
    """How a field is drawn."""

    kind: Kind
    choices: tuple[Any, ...] = ()
    optional: bool = False
    """None is accepted (shown as "not set")."""
    allows_auto: bool = False
    """The type itself accepts the string "auto" (``int | Literal["auto"]``)."""


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
    if field.meta.choices:
        return FieldKind("choice", tuple(field.meta.choices), optional, allows_auto)
    if len(plain) == 1 and isinstance(plain[0], type) and issubclass(plain[0], enum.Enum):
        return FieldKind("choice", tuple(m.value for m in plain[0]), optional, allows_auto)
    if literals and not plain:
        return FieldKind("choice", tuple(literals), optional, allows_auto)
    if plain == [bool]:
        return FieldKind("bool", (), optional, allows_auto)
    if plain == [int]:
        return FieldKind("int", (), optional, allows_auto)
    if set(plain) <= {int, float} and plain:
        return FieldKind("float", (), optional, allows_auto)
    if plain == [str]:
        return FieldKind("str", (), optional, allows_auto)
    return FieldKind("json", (), optional, allows_auto)


def bounds(field: SchemaField, kind: Kind) -> tuple[float | None, float | None]:
    """(min, max) for a number widget from the field's Ge/Gt/Le/Lt (open float bounds are left to the validator)."""
    low: float | None = None
    high: float | None = None
    for item in field.info.metadata:
        if isinstance(item, at.Ge):
            low = item.ge  # type: ignore[assignment]
        elif isinstance(item, at.Gt) and kind == "int":
            low = item.gt + 1  # type: ignore[operator]
        elif isinstance(item, at.Le):
            high = item.le  # type: ignore[assignment]
        elif isinstance(item, at.Lt) and kind == "int":
            high = item.lt - 1  # type: ignore[operator]
    if kind == "int":
        return (None if low is None else int(low), None if high is None else int(high))
    return (None if low is None else float(low), None if high is None else float(high))


def plain_default(field: SchemaField) -> Any:
    """The field's default as it would appear in JSON (enums as their value)."""
    value = field.default
    if value is Ellipsis:
        return None
    return value.value if isinstance(value, enum.Enum) else value


def widget_key(path: str) -> str:
    """The session-state key of the widget bound to ``path`` (tests use it to find the widget)."""
    return f"{app_state.WIDGET_PREFIX}{path}"


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


def field_for(path: str) -> SchemaField:
    found = resolve(DeepSpeedConfig, path)
    if found is None:
        raise KeyError(f"{path!r} is not a field of the DeepSpeed schema")
    return found


# --------------------------------------------------------------------------- config edits


def _json_error_key(path: str) -> str:
    return f"jsonerr:{path}"


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a valid JSON number; write a finite number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice; DeepSpeed refuses duplicate keys")
        out[key] = value
    return out


def safe_text(text: str) -> str:
    """Text Streamlit can send to the browser: lone surrogates (from "\\ud800" escapes in a config) shown as
    escapes instead of failing the page."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def parse_json_value(text: str, path: str) -> tuple[Any, str | None]:
    """Parse a JSON value typed into a text area: (value, None) or (None, an error naming line and column)."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
        check_finite_numbers(value)  # 1e400 overflows to infinity: refused, like the importer does
        return value, None
    except json.JSONDecodeError as exc:
        return None, f"`{path}`: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
    except (ValueError, RecursionError) as exc:
        return None, f"`{path}`: {exc}."


def _forget_raw_editor(path: str) -> None:
    # The raw JSON editor of the enclosing top-level section shows the old text otherwise.
    st.session_state.pop(f"{app_state.WIDGET_PREFIX}raw:{split_path(path)[0]}", None)


def _on_change(path: str, kind: Kind, optional: bool) -> None:
    value = st.session_state.get(widget_key(path))
    config = app_state.get_config()
    _forget_raw_editor(path)
    if kind == "json":
        text = (value or "").strip()
        if not text:
            delete_path(config, path, prune=True)
            st.session_state.pop(_json_error_key(path), None)
            return
        parsed, error = parse_json_value(text, path)
        if error:
            st.session_state[_json_error_key(path)] = f"{error} The previous value is kept."
            return
        st.session_state.pop(_json_error_key(path), None)
        set_path(config, path, parsed)
        return
    if kind == "str" and value == "" and optional:
        value = None
    if value is None:
        delete_path(config, path, prune=True)
    else:
        set_path(config, path, value)
    if path == SCHEDULER_TYPE:
        # a new scheduler takes other parameters: drop the ones it would fail on, fill its step count
        steps = app_state.get_context().get("train_steps")
        app_state.replace_config(autofill.switch_scheduler(config, value, steps))


def _on_auto(path: str, default: Any) -> None:
    on = st.session_state.get(widget_key(path) + ":auto")
    config = app_state.get_config()
    _forget_raw_editor(path)
    if on:
        set_path(config, path, "auto")
    elif default is None:
        delete_path(config, path, prune=True)
    else:
        set_path(config, path, default)
    st.session_state.pop(widget_key(path), None)


# --------------------------------------------------------------------------- drawing


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

    @classmethod
    def current(cls) -> Form:
        ctx = app_state.get_context()
        config = app_state.get_config()
        return cls(config, app_state.report(), ctx["target"], ctx["version"], app_state.zero_stage(config))

    def findings_at(self, path: str) -> list[Finding]:
        return [f for f in self.report.findings if f.path == path and f.severity in ("error", "warning")]

    def findings_under(self, path: str) -> list[Finding]:
        prefix = path + "."
        return [f for f in self.report.findings
                if (f.path == path or f.path.startswith(prefix)) and f.severity in ("error", "warning")]


def help_text(field: SchemaField) -> str:
    """Help text of a widget: description, unit, default, notes — all from the schema."""
    parts = [field.info.description or ""]
    meta = field.meta
    default = plain_default(field)
    if field.model is None:
        parts.append(f"Default: `{json.dumps(default)}`" + (f" {meta.unit}" if meta.unit else "") + ".")
    elif meta.unit:
        parts.append(f"Unit: {meta.unit}.")
    if meta.stages is not None:
        parts.append("Applies to ZeRO stage " + ", ".join(str(s) for s in meta.stages) + ".")
    if meta.hf_auto:
        parts.append('The HF Trainer / Accelerate can fill this in ("auto").')
    if meta.added:
        parts.append(f"Added in DeepSpeed {meta.added}.")
    if meta.removed:
        parts.append(f"Removed in DeepSpeed {meta.removed}.")
    if meta.deprecated:
        parts.append("Deprecated" + (f": use `{meta.replaced_by}`." if meta.replaced_by else "."))
    if meta.doc_note:
        parts.append(f"Note: {meta.doc_note}")
    return "\n\n".join(p for p in parts if p)


#: The field that switches a section on and off: any section model with a field of this name has one.
SWITCH = "enabled"


def switched_off(section_path: str, config: Mapping[str, Any]) -> str | None:
    """Why the fields of the section at ``section_path`` do nothing now: the first section on the way
    (itself or an enclosing one) whose schema has an ``enabled`` switch that is off in ``config``; or None.

    Driven by the schema, not a list of sections: ``tensorboard``, ``wandb``, ``fp16``, ``flops_profiler``,
    ``data_efficiency.data_sampling`` … all qualify by having the field. ``"auto"`` counts as on (the HF
    Trainer fills it in); an absent switch takes the schema default.
    """
    model: type[BaseModel] | None = DeepSpeedConfig
    node: Any = config
    walked: list[str] = []
    for key in split_path(section_path):
        found = section_fields(model).get(key) if model is not None else None
        if found is None or found.model is None:
            return None
        model = found.model
        node = node.get(key) if isinstance(node, Mapping) else None
        walked.append(key)
        switch = section_fields(model).get(SWITCH)
        if switch is None:
            continue
        value = node.get(SWITCH, plain_default(switch)) if isinstance(node, Mapping) else plain_default(switch)
        if value != "auto" and lax_bool(value) is not True:
            return f"`{_join(walked)}` is off: turn on `{SWITCH}` first."
    return None


def disabled_reason(field: SchemaField, form: Form, path: str | None = None) -> str | None:
    """Why a field cannot be edited now (not in this DeepSpeed version, wrong ZeRO stage, its section
    switched off), or None. ``path`` is the field's dotted path (needed for the section switch)."""
    meta = field.meta
    if not meta.exists_in(form.version):
        when = f"removed in {meta.removed}" if meta.removed else f"added in {meta.added}"
        return f"Not available in DeepSpeed {form.version} ({when})."
    if meta.stages is not None and form.stage not in meta.stages:
        stages = ", ".join(str(s) for s in meta.stages)
        return f"Only has an effect with ZeRO stage {stages}; the current stage is {form.stage}."
    if path:
        # A section's own switch stays editable (only enclosing switches count); all else waits for it.
        keys = split_path(path)[: -2 if field.name == SWITCH else -1]
        return switched_off(_join(keys), form.config) if keys else None
    return None


def _join(keys: list[str]) -> str:
    out = ""
    for key in keys:
        out = join_path(out, key)
    return out


def _fits(value: Any, kind: FieldKind, low: Any, high: Any) -> bool:
    if value is None:
        return kind.optional or kind.kind in ("str", "json")
    if kind.kind == "bool":
        return isinstance(value, bool)
    if kind.kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if kind.kind == "int" and (not isinstance(value, int) or abs(value) > JS_MAX_SAFE_INT):
            return False  # the browser cannot hold it exactly: edit it as JSON text
        return (low is None or value >= low) and (high is None or value <= high)
    if kind.kind == "choice":
        return True
    if kind.kind == "str":
        return isinstance(value, str)
    return True


def _choice_label(value: Any, field: SchemaField, default: Any) -> str:
    if value is None:
        return f"— not set (default: {json.dumps(default)}) —"
    annotation = field.info.annotation
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, enum.Enum):
            try:
                return f"{value} — {arg(value).name.replace('_', ' ')}"
            except ValueError:
                return str(value)
    return str(value)


def number_box(label: str, value: Any, key: str, *, integer: bool, low: float | None, high: float | None,
               help_: str, disabled: bool, args: dict[str, Any], placeholder: str) -> None:
    """A number box showing ``value`` that the user can empty, which removes the key from the config.

    Streamlit's box can only be emptied in the browser when it is created with ``value=None``, so the value
    shown is given through the widget's session state instead (only while it has no number of its own:
    every config replacement clears the widgets' states, so they re-read the config).
    """
    held = st.session_state.get(key, _MISSING)
    # seed unless the box has a number (or None: emptied) of its own; a raw-JSON editor that had this key
    # before leaves text behind
    if isinstance(held, bool) or not isinstance(held, int | float | None):
        st.session_state[key] = None if value is None else (int(value) if integer else float(value))
    st.number_input(label, value=None, min_value=low, max_value=high, step=1 if integer else 0.01,
                    format=None if integer else "%g", key=key, help=help_, disabled=disabled,
                    on_change=_on_change, kwargs=args, placeholder=placeholder)


def render_field(path: str, form: Form, *, label: str | None = None, placeholder: str | None = None) -> None:
    """Draw the widget for the schema field at ``path`` and show the findings about it (in the landing box
    when a finding's link asked for this field: ``ui.focus``)."""
    with focus.box(config_path(form.config, path)):
        _render_field(path, form, label=label, placeholder=placeholder)


def _render_field(path: str, form: Form, *, label: str | None = None, placeholder: str | None = None) -> None:
    field = field_for(path)
    kind = field_kind(field)
    if kind.kind == "section":
        render_section(path, form)
        return
    path = config_path(form.config, path)
    key = widget_key(path)
    current = get_path(form.config, path, _MISSING)
    present = current is not _MISSING
    default = plain_default(field)
    value = current if present else default
    reason = disabled_reason(field, form, path)
    help_ = help_text(field)
    if reason:
        help_ = f"**Disabled:** {reason}\n\n{help_}"
    label = label or field.name
    label_shown = label
    form.shown.add(path)
    args = {"path": path, "kind": kind.kind, "optional": kind.optional}

    auto_possible = kind.allows_auto or field.meta.hf_auto
    show_auto = auto_possible and (form.target == "hf" or value == "auto")
    is_auto = value == "auto"
    if show_auto:
        st.toggle(
            f'{label}: "auto"', value=is_auto, key=key + ":auto", on_change=_on_auto,
            kwargs={"path": path, "default": None if kind.optional else default},
            help='Leave this to the HF Trainer / Accelerate, which fill "auto" in from TrainingArguments.',
            disabled=reason is not None,
        )
    if is_auto:
        st.caption(f'`{path}` = `"auto"`')
    else:
        low, high = bounds(field, kind.kind) if kind.kind in ("int", "float") else (None, None)
        if not _fits(value, kind, low, high):
            # The value cannot be shown by the normal widget (wrong type, out of range): edit it as JSON.
            _json_widget(path, label_shown + " (raw JSON)", value, help_, reason, args | {"kind": "json"})
        elif kind.kind == "bool":
            st.checkbox(label_shown, value=bool(value), key=key, help=help_, disabled=reason is not None,
                        on_change=_on_change, kwargs=args)
        elif kind.kind in ("int", "float"):
            number_box(label_shown, value, key, integer=kind.kind == "int", low=low, high=high, help_=help_,
                       disabled=reason is not None, args=args, placeholder=placeholder or "not set")
        elif kind.kind == "choice":
            options: list[Any] = ([None] if kind.optional else []) + list(kind.choices)
            if value not in options:
                options.append(value)
            st.selectbox(label_shown, options, index=options.index(value), key=key, help=help_,
                         disabled=reason is not None, on_change=_on_change, kwargs=args,
                         format_func=lambda v: _choice_label(v, field, default))
        elif kind.kind == "str":
            st.text_input(label_shown, value=safe_text(value or ""), key=key, help=help_,
                          disabled=reason is not None, on_change=_on_change, kwargs=args, placeholder="not set")
        else:
            _json_widget(path, label_shown, value, help_, reason, args)
    if reason and present and value != default:
        st.caption(f"⚠️ `{path}` is set but {reason[0].lower()}{reason[1:]}")
    for finding in form.findings_at(path):
        _show_finding(finding)


def _json_widget(path: str, label: str, value: Any, help_: str, reason: str | None, args: dict[str, Any]) -> None:
    text = "" if value is None else json.dumps(value, indent=2 if isinstance(value, dict | list) else None)
    height = 68 if "\n" not in text else min(300, 40 + 22 * text.count("\n"))
    st.text_area(label, value=text, key=widget_key(path), help=help_, disabled=reason is not None,
                 on_change=_on_change, kwargs=args, height=height)
    error = st.session_state.get(_json_error_key(path))
    if error:
        st.error(error)


def _show_finding(finding: Finding) -> None:
    text = safe_text(f"**{finding.code}** — {finding.message}"
                     + (f"\n\n{finding.suggestion}" if finding.suggestion else ""))
    if finding.severity == "error":
        st.error(text, icon=":material/error:")
    else:
        st.warning(text, icon=":material/warning:")
    if finding.fix is not None:
        fix_button(finding, key_suffix="inline")


def _apply_fix(finding: Finding) -> None:
    assert finding.fix is not None  # noqa: S101 — only called for findings with a fix
    app_state.replace_config(finding.fix.apply(app_state.get_config()))


def fix_button(finding: Finding, *, key_suffix: str) -> None:
    """A one-click fix button for a finding (applies ``finding.fix`` to the config)."""
    if finding.fix is None:
        return
    st.button(f"Fix: {finding.fix.description}", key=f"fix:{key_suffix}:{finding.code}:{finding.path}",
              on_click=_apply_fix, args=(finding,), icon=":material/build:")


def _visible(field: SchemaField, form: Form, section_value: Any) -> bool:
    present = isinstance(section_value, Mapping) and any(k in section_value for k in field.keys)
    if present:
        return True
    return not field.meta.deprecated and field.meta.exists_in(form.version)


def render_section(
    path: str,
    form: Form,
    *,
    only: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    columns: int = 2,
    title: bool = True,
) -> None:
    """Draw every field of the section at ``path`` (nested sections in bordered boxes), keys without a
    widget listed as kept."""
    field = field_for(path) if path else None
    model: type[BaseModel] | None = field.model if field else DeepSpeedConfig
    if model is None:
        render_field(path, form)
        return
    value = get_path(form.config, path, None) if path else form.config
    fields = [f for f in unique_fields(model) if f.name not in set(exclude)]
    if only is not None:
        wanted = list(only)
        fields = [f for f in fields if f.name in wanted]
    fields = [f for f in fields if _visible(f, form, value)]
    if title and field is not None:
        st.markdown(f"**`{path}`** — {field.info.description}")
        reason = disabled_reason(field, form)
        if reason:
            st.caption(f"⚠️ {reason}")
        off = switched_off(path, form.config)
        if off:
            st.caption(f"ℹ️ {off}", help="The other fields of the section are disabled until it is on.")
    leaves = [f for f in fields if f.model is None]
    sections = [f for f in fields if f.model is not None]
    if leaves:
        cols = st.columns(columns) if columns > 1 else [st.container()]
        for i, leaf in enumerate(leaves):
            with cols[i % len(cols)]:
                render_field(f"{path}.{leaf.name}" if path else leaf.name, form)
    for sub in sections:
        with st.container(border=True):
            render_section(f"{path}.{sub.name}" if path else sub.name, form, columns=columns)
    if isinstance(value, Mapping) and model is not None and only is None:
        known = section_fields(model)
        kept = [k for k in value if k not in known]
        if kept:
            note = "free-form keys of this section" if is_open(model) else "keys the schema does not know"
            st.caption(f"Kept unchanged ({note}): " + ", ".join(f"`{k}`" for k in kept))


def raw_section_editor(path: str, form: Form) -> None:
    """A raw JSON editor for a whole top-level section (applies on change; errors name line and column)."""
    key = f"{app_state.WIDGET_PREFIX}raw:{path}"
    value = get_path(form.config, path, None)
    text = "" if value is None else json.dumps(value, indent=2)
    st.text_area(f"Raw JSON of `{path}`", value=text, key=key, height=160, on_change=_on_raw_change,
                 args=(path, key), help="Edit the whole section as JSON; empty removes the section.")
    error = st.session_state.get(_json_error_key("raw:" + path))
    if error:
        st.error(error)


def _on_raw_change(path: str, key: str) -> None:
    text = (st.session_state.get(key) or "").strip()
    config = app_state.get_config()
    if not text:
        delete_path(config, path, prune=True)
        st.session_state.pop(_json_error_key("raw:" + path), None)
    else:
        parsed, error = parse_json_value(text, path)
        if error:
            st.session_state[_json_error_key("raw:" + path)] = f"{error} Nothing was changed."
            return
        st.session_state.pop(_json_error_key("raw:" + path), None)
        set_path(config, path, parsed)
    # The field widgets of this section must re-read the new value.
    prefix = app_state.WIDGET_PREFIX + path + "."
    for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        del st.session_state[k]


def explain(title: str, body: str, *, expanded: bool = True) -> None:
    """The plain-words explanation every page opens with (collapsible for experts)."""
    with st.expander(title, expanded=expanded, icon=":material/school:"):
        st.markdown(body)


def page_findings(form: Form, page: str) -> None:
    """The errors and warnings whose fix is on ``page`` and that no widget on the page showed inline
    (call it after the widgets)."""
    drawn, rest = drawn_findings(f for f in form.report.findings
                                 if f.page == page and f.severity in ("error", "warning") and f.path not in form.shown)
    for finding in drawn:
        _show_finding_once(finding)
    show_rest(rest)


#: Longest text a code block shows in full; a larger file shows its beginning and says so (the download and
#: the copy the user exports are always the whole file).
MAX_SHOWN_LINES = 400


def code_preview(text: str, language: str | None = "json") -> None:
    """``st.code`` of ``text``, or of its first ``MAX_SHOWN_LINES`` lines with a caption when it is longer."""
    lines = text.count("\n") + 1
    if lines <= MAX_SHOWN_LINES:
        st.code(text, language=language)
        return
    head = "\n".join(text.split("\n", MAX_SHOWN_LINES)[:MAX_SHOWN_LINES])
    st.code(head, language=language)
    st.caption(f"The first {MAX_SHOWN_LINES:,} of {lines:,} lines ({len(text.encode()) / 1024:,.0f} KiB) are shown; "
               "the download holds all of it.")


#: Findings of one code drawn one by one; the others of that code are summarised in one line (a config at the
#: size limit can hold tens of thousands of unknown keys, and nobody reads the 50th identical warning).
MAX_DRAWN_PER_CODE = 20


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


def show_rest(rest: Mapping[str, list[Finding]]) -> None:
    """One line per code for the findings ``drawn_findings`` did not draw."""
    for code, findings in rest.items():
        paths = ", ".join(f"`{f.path}`" for f in findings[:5])
        text = safe_text(f"…and **{len(findings):,}** more **{code}** findings like those above ({paths}, …); "
                         "`dsconfig validate` lists every one.")
        (st.error if any(f.severity == "error" for f in findings) else st.warning)(text, icon=":material/more_horiz:")


def finding_text(finding: Finding) -> str:
    """A finding as markdown: code, path, message and suggestion (safe to send to the browser)."""
    text = f"**{finding.code}** at `{finding.path or '(top level)'}` — {finding.message}"
    if finding.suggestion:
        text += f"\n\n{finding.suggestion}"
    return safe_text(text)


def _show_finding_once(finding: Finding) -> None:
    text = finding_text(finding)
    if finding.severity == "error":
        st.error(text, icon=":material/error:")
    else:
        st.warning(text, icon=":material/warning:")
    fix_button(finding, key_suffix="page")


# --------------------------------------------------------------------------- context widgets

CONTEXT_PREFIX = "ctx:"


def _on_context(name: str) -> None:
    app_state.get_context()[name] = st.session_state[CONTEXT_PREFIX + name]


def context_widget(factory: Any, name: str, label: str, **kwargs: Any) -> Any:
    """A widget bound to ``context[name]`` (target, hardware, model, training shape)."""
    value = app_state.get_context().get(name)
    if factory is st.number_input and name in app_state.CONTEXT_LIMITS:
        low, high = app_state.CONTEXT_LIMITS[name]
        kwargs.setdefault("min_value", low)
        kwargs.setdefault("max_value", high)
    if "options" in kwargs:
        options = list(kwargs["options"])
        kwargs["index"] = options.index(value) if value in options else 0
    else:
        kwargs["value"] = value
    return factory(label, key=CONTEXT_PREFIX + name, on_change=_on_context, args=(name,), **kwargs)


def page_fields(page: str) -> list[str]:
    """Names of the top-level schema fields the schema assigns to ``page``, in declaration order."""
    return [f.name for f in unique_fields(DeepSpeedConfig) if f.meta.page == page]


# --------------------------------------------------------------------------- registry parameters

def param_kind(param: Any, value: Any) -> FieldKind:
    """How to draw an optimizer/scheduler ``Param`` (from ``core.schema.optimizer``) holding ``value``."""
    types = set(param.types)
    optional = True  # a parameter can always be left out of ``params`` (required ones are then a finding)
    if param.choices:
        return FieldKind("choice", tuple(param.choices), optional)
    if "array" in types and (isinstance(value, list) or types <= {"array", "null"}):
        return FieldKind("json", (), optional)
    if "boolean" in types:
        return FieldKind("bool", (), optional)
    if ("integer" in types and "number" not in types) or ("number" in types and param.unit == "steps"):
        return FieldKind("int", (), optional)  # a step count is an integer even where DeepSpeed takes a float
    if "number" in types:
        return FieldKind("float", (), optional)
    if "string" in types:
        return FieldKind("str", (), optional)
    return FieldKind("json", (), optional)


def param_help(param: Any) -> str:
    parts = [param.description]
    if param.required:
        parts.append("Required.")
    else:
        parts.append(f"Default: `{json.dumps(param.default)}`" + (f" {param.unit}" if param.unit else "") + ".")
    if param.doc_note:
        parts.append(f"Note: {param.doc_note}")
    return "\n\n".join(parts)


def render_param(base: str, param: Any, form: Form) -> None:
    """Draw one constructor parameter at ``base.<name>`` (e.g. ``optimizer.params.lr``) from its Param (in the
    landing box when a finding's link asked for it)."""
    with focus.box(f"{base}.{param.name}"):
        _render_param(base, param, form)


def _render_param(base: str, param: Any, form: Form) -> None:
    path = f"{base}.{param.name}"
    form.shown.add(path)
    key = widget_key(path)
    current = get_path(form.config, path, _MISSING)
    value = param.default if current is _MISSING else current
    kind = param_kind(param, value)
    help_ = param_help(param)
    label = param.name + (" *" if param.required else "")
    args = {"path": path, "kind": kind.kind, "optional": True}
    if form.target == "hf" or value == "auto":
        st.toggle(f'{param.name}: "auto"', value=value == "auto", key=key + ":auto", on_change=_on_auto,
                  kwargs={"path": path, "default": None})
    if value == "auto":
        st.caption(f'`{path}` = `"auto"`')
    else:
        if kind.kind == "int":
            low = param.ge if param.ge is not None else (param.gt + 1 if param.gt is not None else None)
            high = param.le if param.le is not None else (param.lt - 1 if param.lt is not None else None)
            low, high = (None if low is None else int(low)), (None if high is None else int(high))
        else:
            low = None if param.ge is None else float(param.ge)
            high = None if param.le is None else float(param.le)
        if not _fits(value, kind, low, high) or (kind.kind == "float" and isinstance(value, list)):
            _json_widget(path, label + " (raw JSON)", value, help_, None, args | {"kind": "json"})
        elif kind.kind == "bool":
            st.checkbox(label, value=bool(value), key=key, help=help_, on_change=_on_change, kwargs=args)
        elif kind.kind in ("int", "float"):
            number_box(label, value, key, integer=kind.kind == "int", low=low, high=high, help_=help_,
                       disabled=False, args=args, placeholder="not set")
        elif kind.kind == "choice":
            options = [None, *kind.choices]
            if value not in options:
                options.append(value)
            st.selectbox(label, options, index=options.index(value), key=key, help=help_, on_change=_on_change,
                         kwargs=args, format_func=lambda v: f"— default ({param.default}) —" if v is None else str(v))
        elif kind.kind == "str":
            st.text_input(label, value=value or "", key=key, help=help_, on_change=_on_change, kwargs=args)
        else:
            _json_widget(path, label, value, help_, None, args)
    for finding in form.findings_at(path):
        _show_finding(finding)
