"""Where a finding's "Edit on …" link lands: the page AND the widget of the field to change.

The link carries two query parameters: ``focus`` (the finding's path, which the headline repeats under itself
with its fix) and ``field`` (the path of the widget to change). The widget bound to ``field`` is drawn inside a
bordered box (key ``focus_widget``) that says so, and the browser scrolls it into view once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import streamlit as st

from core.findings import Finding, get_path
from core.schema import DeepSpeedConfig
from core.schema.walk import resolve, unique_fields
from ui.fields import safe_text

#: Query parameter: the finding the user came to fix (its path).
FOCUS = "focus"
#: Query parameter: the finding's code, which tells apart two findings on one path (type.unchecked and
#: batch.not-integer on a micro batch of 1.5: the link of one landed on the other, and its fix was applied).
CODE = "code"
#: Query parameter: the path of the widget to land on.
FIELD = "field"
#: Key of the box drawn around the widget a link landed on (CSS class ``st-key-focus_widget`` in the page).
BOX_KEY = "focus_widget"
#: Finding code of a top-level key DeepSpeed does not know (and so ignores entirely).
UNKNOWN_TOP = "keys.unknown-top-level"


def misspelt_section(finding: Finding, config: Mapping[str, Any]) -> str | None:
    """The section a misspelt top-level key was meant to be (``zero_optimisation`` → ``zero_optimization``),
    when the key holds a section and its fix renames it to a schema section; else None."""
    if finding.code != UNKNOWN_TOP or finding.fix is None or not isinstance(config.get(finding.path), Mapping):
        return None
    dest = next((op.to for op in finding.fix.ops if op.op == "move" and op.to), None)
    found = resolve(DeepSpeedConfig, dest) if dest else None
    return dest if found is not None and found.model is not None else None


def section_widget(path: str) -> str:
    """The widget that stands for a schema section: its on/off switch (``enabled``), else its ``stage``, else its
    first field; a path that is not a schema section stands for itself."""
    found = resolve(DeepSpeedConfig, path)
    if found is None or found.model is None:
        return path
    names = [f.name for f in unique_fields(found.model)]
    for name in ("enabled", "stage"):
        if name in names:
            return f"{path}.{name}"
    return f"{path}.{names[0]}" if names else path


def field_of(finding: Finding, config: Mapping[str, Any]) -> str:
    """The path of the widget where ``finding`` is fixed: the intended section's switch for a misspelt section,
    the section's switch for a finding about a whole section, else the finding's own path."""
    section = misspelt_section(finding, config)
    if section:
        return section_widget(section)
    value = get_path(config, finding.path, None)
    return section_widget(finding.path) if isinstance(value, Mapping) or value is None else finding.path


def link_params(finding: Finding, config: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters for a link to the page AND widget where ``finding`` is fixed."""
    if not finding.path:
        return {}
    # a key with a lone surrogate ("\ud800" in the file) cannot be URL-encoded: the link carries it escaped
    return {FOCUS: safe_text(finding.path), FIELD: safe_text(field_of(finding, config)), CODE: finding.code}


def wanted() -> str | None:
    """The widget path the current URL asks to land on."""
    return st.query_params.get(FIELD)


@contextlib.contextmanager
def box(path: str) -> Iterator[None]:
    """Draw what follows inside the landing box when ``path`` is the field the link asked for; else as usual."""
    if safe_text(path) != wanted():
        yield
        return
    with st.container(border=True, key=BOX_KEY):
        st.caption(f":material/my_location: **The field you came to change:** `{safe_text(path)}`")
        yield
        # scrolled into view once, when the element first appears (a rerun with the same content does not re-run it)
        selector = json.dumps(f".st-key-{BOX_KEY}")
        st.html(f"<script>setTimeout(() => document.querySelector({selector})"
                f"?.scrollIntoView({{block: 'center'}}), 300)</script>", unsafe_allow_javascript=True)
