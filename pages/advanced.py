"""Advanced: every remaining section of the schema, generated from it, each with a raw JSON editor."""

from __future__ import annotations

import streamlit as st

from core.schema import DeepSpeedConfig
from core.schema.walk import section_fields, unique_fields
from ui import app_state, fields, frame, widgets

frame.begin("Advanced")
widgets.explain(
    "Everything else",
    """These are the sections most configs never touch: activation checkpointing (recompute activations
in the backward pass to save memory), checkpoint writing, data types, autotuning, torch.compile and
DeepCompile, pipeline and tensor parallelism, data efficiency, and more. Every widget here is
generated from the schema, with the same help text, limits and defaults as elsewhere. Each section
also has a **raw JSON editor** for anything the widgets do not cover; keys the app does not know are
kept and exported unchanged.""",
    expanded=False,
)

form = widgets.Form.current()
names = fields.page_fields("advanced")
schema_fields = {f.name: f for f in unique_fields(DeepSpeedConfig)}
leaves = [n for n in names if schema_fields[n].model is None]
sections = [n for n in names if schema_fields[n].model is not None]

st.subheader("Top-level settings")
widgets.render_section("", form, only=leaves, columns=3)

st.subheader("Sections")
for name in sections:
    field = schema_fields[name]
    present = name in form.config
    if not present and (field.meta.deprecated or not fields.exists(field, form, "")):
        continue  # removed or deprecated sections appear only when the config has them
    errors = form.findings_under(name)
    mark = " 🛑" if any(f.severity == "error" for f in errors) else " ⚠️" if errors else ""
    # Keyed and tracked, so a section the config does not use draws its widgets only while it is open (about
    # 180 widgets in all); sections the config sets are always drawn, so their values and findings are there.
    with widgets.kept_expander(f"`{name}`{' (set)' if present else ''}{mark}", f"advanced_section:{name}",
                               first=False, opened=bool(errors)) as section:
        if present or errors or section.open:
            widgets.render_section(name, form, columns=2)
            widgets.raw_section_editor(name, form)

known = section_fields(DeepSpeedConfig)
unknown = [k for k in form.config if k not in known]
if unknown:
    st.subheader("Keys the schema does not know")
    st.caption("Kept and exported unchanged; DeepSpeed ignores unknown top-level keys (see the findings).")
    shown = unknown[:fields.MAX_DRAWN_PER_CODE * 5]
    st.json({k: form.config[k] for k in shown}, expanded=False)
    if len(unknown) > len(shown):
        st.caption(f"The first {len(shown)} of {len(unknown):,} unknown keys are shown; all of them are kept.")

widgets.page_findings(form, "advanced")
st.page_link(app_state.PAGES["review"], label="Next: review & export →", icon=":material/arrow_forward:")
frame.end()
