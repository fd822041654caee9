"""The one generic widget builder: draws a config field from its schema entry and writes it back.

Label, help text, bounds, default, choices, the ZeRO stages a field applies to and the DeepSpeed
versions that have it all come from ``core.schema`` (``SchemaField``), read by ``ui.fields`` (the field
logic, without Streamlit); this module draws and holds the callbacks. Pages only say which paths to draw.
A widget writes only its own dotted path into the config dict (callbacks run before the script, so the
sidebar and charts of the same run already see the change); every other key, including keys the UI has no
widget for, is left as it is.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import streamlit as st
from pydantic import BaseModel

from core import autofill, precision
from core.effective import effective
from core.findings import Finding, delete_path, get_path, is_number, set_path, split_path
from core.rules.auto import hf_fills
from core.schema import DeepSpeedConfig
from core.schema.walk import default_in, is_open, resolve, section_fields, unique_fields
from ui import actions, app_state, fields, focus
from ui.fields import FieldKind, Kind

_MISSING = object()


class Form(fields.Form):
    """``ui.fields.Form`` of the session this page run belongs to."""

    @classmethod
    def current(cls) -> Form:
        ctx = app_state.get_context()
        config = app_state.get_config()
        return cls(config, app_state.report(), ctx["target"], ctx["version"], app_state.zero_stage(config))


def widget_key(path: str) -> str:
    """The session-state key of the widget bound to ``path`` (tests use it to find the widget)."""
    return f"{app_state.WIDGET_PREFIX}{path}"


# --------------------------------------------------------------------------- config edits (callbacks)


def _forget_raw_editor(path: str) -> None:
    # The raw JSON editor of the enclosing top-level section shows the old text otherwise.
    st.session_state.pop(f"{app_state.WIDGET_PREFIX}raw:{split_path(path)[0]}", None)


def _set_from_text(config: dict[str, Any], path: str, text: str, key: str, kept: str) -> bool:
    """Write the JSON ``text`` of widget ``key`` at ``path`` (empty: remove the key); a refused text is noted with
    its error for the widget to show (``_json_text_area``). Returns False when nothing was written."""
    stripped = text.strip()
    parsed, error = fields.parse_json_value(stripped, path) if stripped else (None, None)
    if error:
        app_state.note(key, path, (f"{error} {kept}", text))
        return False
    app_state.forget(key)
    if stripped:
        set_path(config, path, parsed)
    else:
        _delete_pruned(config, path)
    return True


def _delete_pruned(config: dict[str, Any], path: str) -> None:
    """Remove the key at ``path`` and the sections this leaves empty (``delete_path(prune=True)``), up to a section
    whose presence is its switch (``fields.added_by_presence``: ``zero_optimization.zenflow``, where ``{}`` too turns
    ZenFlow on), which stays, emptied, as its "Set" box still says."""
    parent = fields.parent_path(path)
    while parent:
        field = resolve(DeepSpeedConfig, parent)
        if field is not None and fields.added_by_presence(field) and isinstance(get_path(config, parent, None), dict):
            delete_path(get_path(config, parent), path[len(parent) + 1:], prune=True)
            return
        parent = fields.parent_path(parent)
    delete_path(config, path, prune=True)


def _forget_widgets_under(path: str) -> None:
    """Forget the own state of the widgets of the fields below ``path``, so they re-read the config."""
    prefix = widget_key(path) + "."
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        del st.session_state[key]


def _optimizer_class() -> str | None:
    return effective(app_state.get_config(), app_state.get_context()["version"]).optimizer_class


@app_state.counted_edit
def _on_change(path: str, kind: Kind, optional: bool) -> None:
    value = st.session_state.get(widget_key(path))
    config = app_state.get_config()
    optimizer = _optimizer_class()
    _forget_raw_editor(path)
    if kind == "json":
        _set_from_text(config, path, value or "", widget_key(path), "The previous value is kept.")
    else:
        _set_value(config, path, kind, optional, value)
    if _optimizer_class() != optimizer:
        # the parameter widgets hold what they showed for the class before (its defaults): they re-read
        _forget_widgets_under("optimizer.params")


def _set_value(config: dict[str, Any], path: str, kind: Kind, optional: bool, value: Any) -> None:
    """Write a widget's ``value`` at ``path`` (None: remove the key); a new scheduler type adapts its params."""
    if kind == "str" and value == "" and optional:
        value = None
    before = get_path(config, path, None)
    if kind == "float":
        value = _whole_as_written(path, value, before)
    if value == "auto" and (field := resolve(DeepSpeedConfig, path)) is not None and fields.auto_is_default(field):
        # DeepSpeed's own "auto" (a ZenFlow strategy, an AutoEP choice) is what leaving the key out gives, and the
        # only way to it under the HF target: Accelerate refuses an "auto" it does not fill (auto.not-filled)
        value = None
    if value is None:
        _delete_pruned(config, path)
    else:
        set_path(config, path, value)
    parent = fields.parent_path(path)
    if value == "none" and path.endswith(".device") and get_path(config, parent, None) == {"device": "none"} and \
            fields.added_by_presence(fields.field_for(parent)):
        # an offload section holding only device "none" is not "no offload section": DeepSpeed builds its config
        # object (zero_offload_optimizer() is not None), which AutoEP/AutoTP folding refuses; absent means "none"
        delete_path(config, parent, prune=True)
    if path == fields.SCHEDULER_TYPE:
        # a new scheduler takes other parameters: drop the ones it would fail on (remembered per type for a switch
        # back, until another config is loaded), fill its step count and its peak lr (the optimizer's, for the
        # release chosen: DeepSpeed's own 0.001 would replace it)
        context = app_state.get_context()
        steps = context.get("train_steps")
        params = get_path(config, "scheduler.params", None)  # still the previous type's: only the type was set
        if isinstance(params, dict) and isinstance(before, str):
            st.session_state[app_state.SCHEDULER_PARAMS_KEY + before] = copy.deepcopy(params)
        remembered = st.session_state.get(app_state.SCHEDULER_PARAMS_KEY + value) if isinstance(value, str) else None
        app_state.rewrite_config(autofill.switch_scheduler(config, value, steps, remembered,
                                                           target=context["target"], version=context["version"]))


def _places(config: Mapping[str, Any], path: str) -> list[Any]:
    """For each key along ``path`` that exists, the key that follows it in its object (None: the last)."""
    places: list[Any] = []
    node: Any = config
    for key in split_path(path):
        if not isinstance(node, dict) or key not in node:
            break
        siblings = list(node)
        at = siblings.index(key) + 1
        places.append(siblings[at] if at < len(siblings) else None)
        node = node[key]
    return places


def _set_in_place(config: dict[str, Any], path: str, value: Any, places: list[Any]) -> None:
    """``set_path``, with the first key it creates put back before the key that followed it (``_places``)."""
    keys = split_path(path)
    depth, node = 0, config
    while depth < len(keys) and isinstance(node, dict) and keys[depth] in node:
        node, depth = node[keys[depth]], depth + 1
    set_path(config, path, value)  # creates keys[depth] in ``node`` when that is an object (else replaces it)
    following = places[depth] if depth < len(places) else None
    if isinstance(node, dict) and following in node and following != keys[depth]:
        created = (keys[depth], node.pop(keys[depth]))
        items = list(node.items())
        items.insert(next(i for i, (k, _) in enumerate(items) if k == following), created)
        node.clear()
        node.update(items)


def _whole_as_written(path: str, value: Any, before: Any) -> Any:
    """A whole number from a float box as an int where the loaded config (the baseline) has an int at ``path``, as
    a float where it has a float, else as the value it replaces is written.

    A float box cannot tell 1 from 1.0, so the file decides: ``gradient_clipping: 1`` typed 2.5 and then 1 again
    gives back 1 (following the replaced 2.5 gave 1.0), and a file's 1.0 stays 1.0."""
    if not (isinstance(value, float) and value.is_integer() and abs(value) < 2**53):
        return value
    loaded = get_path(app_state.get_baseline(), path, None)
    written = loaded if is_number(loaded) else before
    return int(value) if is_number(written) and isinstance(written, int) else value


@app_state.counted_edit
def _on_auto(path: str, default: Any) -> None:
    key = widget_key(path) + ":auto"
    on = st.session_state.get(key)
    config = app_state.get_config()
    _forget_raw_editor(path)
    if on:
        before = get_path(config, path, _MISSING)
        # a key "auto" switched off removed goes back where it was, not to the end of its object
        _set_in_place(config, path, "auto", app_state.forget(key + ":place", []))
        if before is not _MISSING and before != "auto":
            # comes back when "auto" is switched off, while the path still holds the "auto" (app_state.note)
            app_state.note(key, path, before)
    elif (before := app_state.forget(key, _MISSING)) is not _MISSING:
        set_path(config, path, before)
    elif default is None:
        places = _places(config, path)
        _delete_pruned(config, path)
        app_state.note(key + ":place", path, places)
    else:
        set_path(config, path, default)
    st.session_state.pop(widget_key(path), None)


@app_state.counted_edit
def _on_raw_change(path: str, key: str) -> None:
    text = st.session_state.get(key) or ""
    if not _set_from_text(app_state.get_config(), path, text, key, "Nothing was changed."):
        return
    if split_path(path)[0] != path:
        _forget_raw_editor(path)  # the box of the enclosing top-level section (Advanced page) shows the old text
    _forget_widgets_under(path)  # the field widgets of this section must re-read the new value


# --------------------------------------------------------------------------- drawing


def seed(key: str, value: Any, *, keep: Callable[[Any], bool] = lambda held: True) -> None:
    """Give the widget at ``key`` the value to show through its session state, unless it holds one of its own
    that ``keep`` accepts. The widget still gets ``value=`` (``index=``, ``default=``): what it shows when its
    type changes under the same key, and the fallback for a value outside its limits.

    Why: when a fix, an undo, a load or another widget clears or sets a widget's state, Streamlit redraws a
    widget created with ``value=`` with the new value on the server but does not send it to the browser, which
    keeps showing the old one and sends it back with the next click, silently undoing the change. A value put
    in session state before the widget is created is sent."""
    if key not in st.session_state or not keep(st.session_state[key]):
        st.session_state[key] = value


def _is_number(held: Any) -> bool:
    return isinstance(held, int | float) and not isinstance(held, bool)


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


def _auto_toggle(label: str, path: str, value: Any, default: Any, **kwargs: Any) -> None:
    key = widget_key(path) + ":auto"
    seed(key, value == "auto", keep=lambda held: isinstance(held, bool))
    st.toggle(f'{label}: "auto"', value=value == "auto", key=key, on_change=_on_auto,
              kwargs={"path": path, "default": default}, **kwargs)


def _value_widget(path: str, label: str, value: Any, kind: FieldKind, bounds: fields.Bounds, *, help_: str,
                  reason: str | None, format_func: Any, placeholder: str) -> None:
    """The widget of ``kind`` showing ``value``, or a raw JSON editor when the widget cannot show it."""
    key = widget_key(path)
    args = {"path": path, "kind": kind.kind, "optional": kind.optional}
    disabled = reason is not None
    if reason:
        help_ = f"**Disabled:** {reason}\n\n{help_}"
    low, high = bounds
    if not fields.fits(value, kind, low, high) or (kind.kind == "float" and isinstance(value, list)):
        # The value cannot be shown by the normal widget (wrong type, out of range): edit it as JSON.
        _json_widget(path, label + " (raw JSON)", value, help_, reason, args | {"kind": "json"})
    elif kind.kind == "bool":
        seed(key, bool(value), keep=lambda held: isinstance(held, bool))
        st.checkbox(label, value=bool(value), key=key, help=help_, disabled=disabled, on_change=_on_change,
                    kwargs=args)
    elif kind.kind in ("int", "float"):
        number_box(label, value, key, integer=kind.kind == "int", low=low, high=high, help_=help_,
                   disabled=disabled, args=args, placeholder=placeholder)
    elif kind.kind == "choice" and kind.segmented and not kind.optional and value in kind.choices:
        seed(key, value, keep=lambda held: held in kind.choices)
        st.segmented_control(label, list(kind.choices), default=value, required=True, key=key, help=help_,
                             disabled=disabled, on_change=_on_change, kwargs=args, format_func=format_func)
    elif kind.kind == "choice":
        options = fields.choice_options(kind, value)
        seed(key, value, keep=lambda held: held in options)
        st.selectbox(label, options, index=options.index(value), key=key, help=help_, disabled=disabled,
                     on_change=_on_change, kwargs=args, format_func=format_func)
    elif kind.kind == "str":
        seed(key, fields.safe_text(value or ""), keep=lambda held: isinstance(held, str))
        st.text_input(label, value=fields.safe_text(value or ""), key=key, help=help_, disabled=disabled,
                      on_change=_on_change, kwargs=args, placeholder="not set")
    else:
        _json_widget(path, label, value, help_, reason, args)


def render_field(path: str, form: Form, *, label: str | None = None, placeholder: str | None = None) -> None:
    """Draw the widget for the schema field at ``path`` and show the findings about it (in the landing box
    when a finding's link asked for this field: ``ui.focus``)."""
    with focus.box(fields.config_path(form.config, path)):
        _render_field(path, form, label=label, placeholder=placeholder)


def _render_field(path: str, form: Form, *, label: str | None = None, placeholder: str | None = None) -> None:
    field = fields.field_for(path)
    kind = fields.field_kind(field)
    if kind.kind == "section":
        render_section(path, form)
        return
    path = fields.config_path(form.config, path)
    kind = fields.release_choices(kind, path, form.version)  # an optimizer the release does not know is no choice
    current = get_path(form.config, path, _MISSING)
    present = current is not _MISSING
    default = default_in(field, path, form.version)
    old = None if present else fields.written_as_deprecated(field, form.config, path)
    value = current if present else default if old is None else old[1]
    unset = fields.unset_value(path, form.config, form.version, default, field)
    reason = fields.disabled_reason(field, form, path)
    help_ = fields.help_text(field, unset, fields.parent_path(path))
    label = label or field.name
    form.shown.add(path)
    _blocking_section_box(path, form)
    own_auto = fields.auto_is_default(field)
    if (field.meta.hf_auto or (kind.allows_auto and not own_auto)) and (form.target == "hf" or value == "auto"):
        # switched off, a precision flag keeps the mode its "auto" was read as (not the schema's off)
        read = precision.auto_flag_reading(form.config, path, form.version)
        off = (None if kind.optional else default) if read is None else read
        _auto_toggle(label, path, value, off, disabled=reason is not None,
                     help='Leave this to the HF Trainer / Accelerate, which fill "auto" in from TrainingArguments.')
    if value == "auto" and own_auto and kind.kind in ("int", "float"):
        # DeepSpeed works "auto" out itself: an empty box; a number replaces it, emptying the box gives "auto" back
        low, high = fields.bounds(field, kind.kind)
        number_box(label, None, widget_key(path), integer=kind.kind == "int", low=low, high=high,
                   help_=help_ + '\n\nEmpty: `"auto"`, DeepSpeed\'s default.', disabled=reason is not None,
                   args={"path": path, "kind": kind.kind, "optional": kind.optional}, placeholder='"auto"')
    elif value == "auto" and not own_auto:
        st.caption(f'`{path}` = `"auto"`')
    else:
        bounds = fields.bounds(field, kind.kind) if kind.kind in ("int", "float") else (None, None)
        _value_widget(path, label, value, kind, bounds, help_=help_, reason=reason,
                      format_func=lambda v: fields.choice_label(v, field, unset),
                      placeholder=placeholder or "not set")
    if reason and present and value != default:
        st.caption(f"⚠️ `{path}` is set but {reason[0].lower()}{reason[1:]}")
    for finding in form.findings_at(path):
        _show_finding(finding)


def _json_widget(path: str, label: str, value: Any, help_: str, reason: str | None, args: dict[str, Any]) -> None:
    text, height = fields.json_text(value)
    _json_text_area(label, text, widget_key(path), help=help_, disabled=reason is not None, on_change=_on_change,
                   kwargs=args, height=height)


def _json_text_area(label: str, text: str, key: str, **kwargs: Any) -> None:
    """A text area for JSON showing ``text``, or the text it last refused with the error about it.

    The two are kept together while the value the text was meant for is unchanged (``_set_from_text``), so a page
    switch, which drops the box's own state, gives the box back the user's text and not the config's beside the
    error. The text is given through the widget's session state (as in ``number_box``)."""
    refused = app_state.recall(key)
    if not isinstance(st.session_state.get(key), str):
        st.session_state[key] = text if refused is None else refused[1]
    st.text_area(label, value="", key=key, **kwargs)
    if refused is not None:
        st.error(refused[0])


def _alert(finding: Finding, text: str) -> None:
    if finding.severity == "error":
        st.error(text, icon=":material/error:")
    else:
        st.warning(text, icon=":material/warning:")


def _show_finding(finding: Finding) -> None:
    _alert(finding, fields.inline_finding_text(finding))
    fix_button(finding, key_suffix="inline")


def _apply_fix(finding: Finding) -> None:
    assert finding.fix is not None  # noqa: S101 — only called for findings with a fix
    actions.apply_fix(finding.fix.description, finding.fix.apply(app_state.get_config()))


def fix_button(finding: Finding, *, key_suffix: str) -> None:
    """A one-click fix button for a finding (applies ``finding.fix`` to the config)."""
    if finding.fix is None:
        return
    st.button(f"Fix: {finding.fix.description}", key=f"fix:{key_suffix}:{finding.code}:{finding.path}",
              on_click=_apply_fix, args=(finding,), icon=":material/build:")


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
    field = fields.field_for(path) if path else None
    model: type[BaseModel] | None = field.model if field else DeepSpeedConfig
    if model is None:
        render_field(path, form)
        return
    value = get_path(form.config, path, None) if path else form.config
    shown = [f for f in unique_fields(model) if f.name not in set(exclude)]
    if only is not None:
        wanted = list(only)
        shown = [f for f in shown if f.name in wanted]
    shown = [f for f in shown if fields.visible(f, form, value, path or "")]
    if title and field is not None:
        st.markdown(f"**`{path}`** — {field.info.description}")
        reason = fields.disabled_reason(field, form, path)
        if reason:
            st.caption(f"⚠️ {reason}")
        off = fields.switched_off(path, form.config, form.version)
        if off:
            st.caption(f"ℹ️ {off}", help="The other fields of the section are disabled until it is on.")
    leaves = [f for f in shown if f.model is None]
    sections = [f for f in shown if f.model is not None]
    if leaves:
        cols = st.columns(columns) if columns > 1 else [st.container()]
        for i, leaf in enumerate(leaves):
            with cols[i % len(cols)]:
                render_field(f"{path}.{leaf.name}" if path else leaf.name, form)
    for sub in sections:
        with st.container(border=True):
            sub_path = f"{path}.{sub.name}" if path else sub.name
            if not path or not fields.added_by_presence(sub) or _section_switch(sub_path, sub, form):
                render_section(sub_path, form, columns=columns)
    if isinstance(value, Mapping) and model is not None and only is None:
        known = section_fields(model)
        kept = [k for k in value if k not in known]
        if kept:
            note = "free-form keys of this section" if is_open(model) else "keys the schema does not know"
            st.caption(fields.safe_text(f"Kept unchanged ({note}): " + ", ".join(f"`{k}`" for k in kept)))


def _section_switch(path: str, field: Any, form: Form) -> bool:
    """A checkbox that adds or removes the nested section at ``path`` (``fields.added_by_presence``); whether it is
    there now, so its fields are drawn. A widget inside an absent section would add it, and with it what the section
    turns on (ZenFlow's CPU optimizer and step), by touching any knob."""
    present = isinstance(get_path(form.config, path, None), Mapping)
    seed(widget_key(path) + ":set", present, keep=lambda held: isinstance(held, bool))
    st.checkbox(f"Set `{path}`", value=present, key=widget_key(path) + ":set", on_change=_on_section_switch,
                args=(path,), disabled=fields.disabled_reason(field, form, path) is not None,
                help=f"{field.info.description}\n\nAbsent, DeepSpeed does not read this section; present (`{{}}` "
                     "too), it does. Removing it keeps what it held for this session, to add back.")
    return present


@app_state.counted_edit
def _on_section_switch(path: str) -> None:
    key = widget_key(path) + ":set"
    config = app_state.get_config()
    _forget_raw_editor(path)
    if st.session_state.get(key):
        set_path(config, path, copy.deepcopy(app_state.forget(key, {})))
    else:
        held = get_path(config, path, None)
        delete_path(config, path, prune=False)
        app_state.note(key, path, held if isinstance(held, dict) else {})
    _forget_widgets_under(path)


def raw_section_editor(path: str, form: Form) -> None:
    """A raw JSON editor for a whole section (applies on change; errors name line and column), drawn once per page
    run."""
    if path in form.raw_boxes:
        return
    form.raw_boxes.add(path)
    key = f"{app_state.WIDGET_PREFIX}raw:{path}"
    value = get_path(form.config, path, None)
    text = "" if value is None else json.dumps(value, indent=2)
    _json_text_area(f"Raw JSON of `{path}`", text, key, height=160, on_change=_on_raw_change, args=(path, key),
                   help="Edit the whole section as JSON; empty removes the section.")


def _blocking_section_box(path: str, form: Form) -> None:
    """The raw JSON box of the section enclosing ``path`` that holds no object (a list, a string ...), which the
    disabled widget's help points to (``fields.not_an_object``): the one place on the page to correct it."""
    found = fields.non_object_parent(form.config, path)
    if found is not None:
        raw_section_editor(found[0], form)


@contextlib.contextmanager
def kept_expander(label: str, key: str, *, first: bool, opened: bool = False, **kwargs: Any) -> Iterator[Any]:
    """A tracked expander (``key``, a rerun when it opens or closes) drawn as the user left it on the last run, else
    ``first``; always open when ``opened``. Streamlit makes a new expander when its label or ``expanded`` changes
    (an Advanced section's " (set)" after its first edit), which would otherwise fold it shut."""
    was_open = app_state.kept(key + ":open", first)
    with st.expander(label, expanded=opened or was_open, key=key, on_change="rerun", **kwargs) as box:
        yield box
    st.session_state.setdefault(app_state.KEPT_INPUTS, {})[key + ":open"] = bool(box.open)


def explain(title: str, body: str, *, expanded: bool = True) -> None:
    """The plain-words explanation every page opens with (collapsible for experts): open on the first visit, then
    as the user left it (folded away, it stays folded on the next visit instead of pushing the page's result below
    the first screen again)."""
    with kept_expander(title, f"explain:{title}", first=expanded, icon=":material/school:") as box:
        if box.open:
            st.markdown(body)


def page_findings(form: Form, page: str) -> None:
    """The errors and warnings whose fix is on ``page`` and that no widget on the page showed inline
    (call it after the widgets)."""
    drawn, rest = fields.drawn_findings(f for f in form.report.findings if f.page == page
                                        and f.severity in ("error", "warning") and f.path not in form.shown)
    for finding in drawn:
        _alert(finding, fields.finding_text(finding))
        fix_button(finding, key_suffix="page")
    show_rest(rest)


def code_preview(text: str, language: str | None = "json") -> None:
    """``st.code`` of ``text``, or of its first ``MAX_SHOWN_LINES`` lines with a caption when it is longer."""
    shown, caption = fields.preview(text)
    st.code(shown, language=language)
    if caption:
        st.caption(caption)


def show_rest(rest: Mapping[str, list[Finding]]) -> None:
    """One line per code for the findings ``fields.drawn_findings`` did not draw."""
    for code, findings in rest.items():
        (st.error if any(f.severity == "error" for f in findings) else st.warning)(
            fields.rest_text(code, findings), icon=":material/more_horiz:")


# --------------------------------------------------------------------------- context widgets

CONTEXT_PREFIX = "ctx:"


def _on_context(name: str, then: Callable[[], None] | None = None) -> None:
    before = dict(app_state.get_context())
    app_state.get_context()[name] = st.session_state[CONTEXT_PREFIX + name]
    if then is not None:
        then()
    app_state.context_edited(before)


def context_widget(factory: Any, name: str, label: str, *, then: Callable[[], None] | None = None,
                   **kwargs: Any) -> Any:
    """A widget bound to ``context[name]`` (target, hardware, model, training shape); ``then`` runs after the
    user changes it."""
    value = app_state.get_context().get(name)
    key = CONTEXT_PREFIX + name
    if factory is st.number_input and name in app_state.CONTEXT_LIMITS:
        low, high = app_state.CONTEXT_LIMITS[name]
        kwargs.setdefault("min_value", low)
        kwargs.setdefault("max_value", high)
    if "options" in kwargs:
        options = list(kwargs["options"])
        seed(key, value if value in options else options[0], keep=lambda held: held in options)
        kwargs["index"] = options.index(value) if value in options else 0
    else:
        seed(key, value, keep=lambda held: held is None or _is_number(held))
        kwargs["value"] = value
    return factory(label, key=key, on_change=_on_context, args=(name, then), **kwargs)


def cluster_widgets(cols: list[Any]) -> None:
    """The two numbers that make the world size, nodes and GPUs per node, in the first two of ``cols``."""
    with cols[0]:
        context_widget(st.number_input, "nodes", "Nodes", step=1)
    with cols[1]:
        context_widget(st.number_input, "gpus_per_node", "GPUs per node", step=1)


# --------------------------------------------------------------------------- registry parameters


def render_param(base: str, param: Any, form: Form) -> None:
    """Draw one constructor parameter at ``base.<name>`` (e.g. ``optimizer.params.lr``) from its Param (in the
    landing box when a finding's link asked for it)."""
    with focus.box(f"{base}.{param.name}"):
        _render_param(base, param, form)


def _param_choice_label(value: Any, default: Any) -> str:
    if value is None:
        return "— not set —" if default is None else f"— default ({json.dumps(default)}) —"
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _render_param(base: str, param: Any, form: Form) -> None:
    path = f"{base}.{param.name}"
    form.shown.add(path)
    current = get_path(form.config, path, _MISSING)
    default = fields.param_default(param, form, base)
    value = default if current is _MISSING else current
    kind = fields.param_kind(param, value)
    _blocking_section_box(path, form)
    if (form.target == "hf" and hf_fills(path)) or value == "auto":
        # only where the HF Trainer / Accelerate fill it in: Accelerate refuses any other "auto" (auto.not-filled)
        _auto_toggle(param.name, path, value, None)
    if value == "auto":
        st.caption(f'`{path}` = `"auto"`')
    else:
        _value_widget(path, param.name + (" *" if param.required else ""), value, kind,
                      fields.param_bounds(param, kind.kind), help_=fields.param_help(param, default),
                      reason=fields.not_an_object(form.config, path),
                      format_func=lambda v: _param_choice_label(v, default),
                      placeholder="not set")
    for finding in form.findings_at(path):
        _show_finding(finding)
