"""Presets: browse, compare, load and save vetted configs (``core.presets``)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pandas as pd
import streamlit as st

from core import presets
from core.export import key_differences
from core.fit import short_of
from core.launchers import job_world_size
from core.memory.result import gib_used
from ui import actions, app_state, charts, fields, frame, memory, preset_cache, tables, widgets, zero_charts

frame.begin("Presets")
widgets.explain(
    "What is a preset?",
    """A **preset** is a complete DeepSpeed config that someone has checked, together with the reasons:
what it is for, when *not* to use it, which hardware it assumes, which DeepSpeed versions accepted it,
and the documentation section behind each non-default choice. The built-in presets were each trained
with the real DeepSpeed. Your team can keep its own presets in a folder named by the environment
variable `DSCONFIG_PRESETS_PATH`; they appear here next to the built-in ones.

Filter the gallery, read a preset's details and its validation report, compare two presets key by key
and by memory for your model, then **load** one into the builder (it becomes the baseline the Review
page compares against), or **save** your current config as a team preset.""",
    expanded=False,
)

#: Gallery filters: facet key → label (the facets come from ``core.presets.facets``).
FILTERS = {"stage": "ZeRO stage", "offload": "Offload", "precision": "Precision", "runtime": "Runtime"}
folders = presets.env_search_path()
team_folders = folders[1:]
found, problems = preset_cache.listing(folders)
by_name = {p.name: p for p in found}
facet = {p.name: presets.facets(p) for p in found}

# ------------------------------------------------------------------ gallery
st.subheader("Gallery")
for problem in problems:
    st.warning(f"Skipped: {fields.md_escape(problem)}", icon=":material/warning:")
cols = st.columns(len(FILTERS))
chosen: dict[str, list[str]] = {}
for col, (key, label) in zip(cols, FILTERS.items(), strict=True):
    options = sorted({str(f[key]) for f in facet.values()})
    kept_filter = [o for o in app_state.kept(f"presets_filter_{key}", []) if o in options]
    chosen[key] = col.multiselect(label, options, kept_filter, key=f"presets_filter_{key}", placeholder="any")
    app_state.keep(f"presets_filter_{key}")
shown = [p for p in found if all(not sel or str(facet[p.name][k]) in sel for k, sel in chosen.items())]
tables.small_table(
    [{"Name": p.name, "Title": p.title, **{label: str(facet[p.name][k]) for k, label in FILTERS.items()},
      "ZeRO++": facet[p.name]["zeropp"], "Source": "built-in" if p.builtin else str(p.path.parent)}
     for p in shown],
    columns=["Name", "Title", *FILTERS.values(), "ZeRO++", "Source"],
)
st.caption(f"{len(shown)} of {len(found)} presets shown · folders searched: "
           + ", ".join(fields.md_escape(f) for f in folders))

# ------------------------------------------------------------------ details
st.subheader("Details")


def _load(name: str) -> None:
    preset = by_name[name]
    actions.remember(f"load of {preset.name}", load=True)  # the edits it replaces come back with one click
    app_state.replace_config(copy.deepcopy(preset.config), baseline=True)
    note = actions.keep_target(preset.target, "on Start")
    st.session_state["presets_message"] = f"Loaded the preset {preset.title} ({preset.name}) into the builder.{note}"


if not shown:
    st.info("No preset matches these filters.")
else:
    shown_names = [p.name for p in shown]
    name = st.selectbox("Preset", shown_names, key="presets_selected",
                        index=app_state.kept_index("presets_selected", shown_names),
                        format_func=lambda n: f"{by_name[n].title} ({n})")
    app_state.keep("presets_selected")
    preset = by_name[name]
    meta = preset.meta
    st.markdown(f"#### {fields.md_escape(preset.title)}")
    st.text(str(meta.get("description", "—")))
    cols = st.columns(2)
    with cols[0]:
        st.markdown("**When to use**")
        st.text(str(meta.get("when_to_use", "—")))
    with cols[1]:
        st.markdown("**When not to use**")
        st.text(str(meta.get("when_not_to_use", "—")))
    st.markdown("**Hardware assumptions**")
    st.text(str(meta.get("hardware", "—")))
    st.caption(f"Target: {fields.md_escape(preset.target)} · verified with DeepSpeed "
               f"{fields.md_escape(', '.join(preset.verified_with) or '—')} · file: {fields.md_escape(preset.path)}")
    if preset.justifications:
        st.markdown("**Why each non-default choice** (the DeepSpeed documentation file and section cited)")
        tables.small_table([{name.capitalize(): j.get(name) for name in presets.JUSTIFICATION_FIELDS}
                            for j in preset.justifications])
    for problem in presets.meta_problems(meta, vetted=preset.builtin):
        st.warning(fields.md_escape(problem))
    # drawn only while open: a highlighted code block is one of the heaviest elements for the browser
    with st.expander("JSON", icon=":material/data_object:", key="presets_json_box", on_change="rerun") as json_box:
        if json_box.open:
            st.code(json.dumps(preset.config, indent=2), language="json")
    st.markdown(f"**Validation for its target ({fields.md_escape(preset.target)})**")
    try:
        reports = preset_cache.reports(preset, job_world_size(app_state.get_context()))
    except ValueError as exc:  # a team preset's meta names an unknown target or version
        st.error(f"Cannot validate this preset: {fields.md_escape(exc)}. "
                 "Fix meta.target / meta.verified_with in its file.")
        reports = []
    for version, report in reports:
        errors, warnings = report.errors, report.warnings
        if not errors and not warnings:
            st.success(f"DeepSpeed {fields.md_escape(version)}: no errors or warnings.", icon=":material/check:")
        for finding in [*errors, *warnings]:
            show = st.error if finding.severity == "error" else st.warning
            show(f"DeepSpeed {fields.md_escape(version)} · {fields.md_escape(finding.code)} at "
                 f"{fields.md_escape(finding.path or '(top level)')}: {fields.md_escape(finding.message)}")
    st.button("Load into the builder", type="primary", key="presets_load", icon=":material/input:",
              on_click=_load, args=(preset.name,))
if st.session_state.get("presets_message"):
    st.success(fields.md_escape(st.session_state["presets_message"]), icon=":material/check:")
    actions.undo_button("presets")

# ------------------------------------------------------------------ compare
st.subheader("Compare")
CURRENT = "(current config)"
sides = {CURRENT: app_state.get_config(), **{n: p.config for n, p in by_name.items()}}


def _side_label(name: str) -> str:
    return "Your current config (being edited)" if name == CURRENT else f"{by_name[name].title} ({name})"


names = list(sides)
cols = st.columns(2)
left = cols[0].selectbox("Left", names, index=app_state.kept_index("presets_left", names), key="presets_left",
                        format_func=_side_label)
right = cols[1].selectbox("Right", names, index=app_state.kept_index("presets_right", names, min(1, len(names) - 1)),
                         key="presets_right", format_func=_side_label)
app_state.keep("presets_left", "presets_right")
# keys and values as safe text: the current config may hold anything (even lone surrogates)
rows = [{k: fields.safe_text(v) for k, v in row.items()} for row in key_differences(sides[left], sides[right])]
if rows:
    tables.small_table(rows, columns={"key": "Key", "left": left, "right": right})  # left may equal right
else:
    st.info("The two configs are identical.")
ctx = app_state.get_context()
if memory.model_for(ctx) is None:
    st.info("Choose a model on the Start page to compare memory per GPU.")
    st.page_link(app_state.PAGES["start"], label="Choose a model", icon=":material/arrow_back:")
else:
    mem_rows, totals = [], []
    # each side's batch as the release would resolve it on the Start page's GPUs (the current config's is the
    # headline's report): elastic training and sequence parallelism change it, and the headline counts them
    side_reports = {name: app_state.report() if name == CURRENT else
                    preset_cache.report_for(sides[name], job_world_size(ctx), ctx["target"], ctx["version"])
                    for name in dict.fromkeys((left, right))}
    for pname, side_report in side_reports.items():
        est = memory.current_estimate(sides[pname], ctx, side_report)
        micro, assumed = memory.micro_batch_and_assumption(sides[pname], side_report, ctx)
        written = sides[pname].get("train_micro_batch_size_per_gpu")
        for category, size in sorted(est.gpu_peak_by_category().items()):
            mem_rows.append({"config": pname, "category": zero_charts.category_label(category),
                             "gib": size / memory.GIB})
        totals.append({"Config": pname, "Micro batch (as written)": json.dumps(written) if written is not None
                       else "not set", "Micro batch used": f"{micro}" + (" (assumed)" if assumed else ""),
                       # on the verdict's side of the capacity, as every other peak (79.14 of 79.10 is "79.2")
                       "GPU GiB per GPU (peak)": float(gib_used(est.gpu_bytes, est.hardware.gpu_memory_bytes)),
                       "Fits": "yes" if est.fits else f"no: {', '.join(short_of(est))}"})
    mem = pd.DataFrame(mem_rows)
    capacity = float(ctx["gpu_memory_gib"])
    charts.draw(zero_charts.config_comparison,
                {"compare": mem, zero_charts.CAPACITY: pd.DataFrame({"capacity": [capacity]})})
    tables.small_table(totals, {"GPU GiB per GPU (peak)": ".1f"})
    notes = {memory.micro_batch_and_assumption(sides[n], r, ctx)[1] for n, r in side_reports.items()} - {None}
    for note in sorted(notes):
        st.caption(f"ℹ️ {note}")
    st.caption(f"{fields.md_escape(ctx.get('model') or 'Your model')} on {fields.counted(job_world_size(ctx), 'GPU')} "
               f"(context of the Start page); red line: {capacity:g} GiB per GPU, the whole of it (Fits counts the "
               "CPU RAM and NVMe per node too).")

# ------------------------------------------------------------------ save
st.subheader("Save the current config as a team preset")


def _save(folder: str) -> None:
    ss = st.session_state
    meta: dict[str, Any] = {"title": ss.get("presets_save_title", "").strip(),
                            "description": ss.get("presets_save_description", "").strip()}
    for key in ("when_to_use", "when_not_to_use", "hardware"):
        if ss.get(f"presets_save_{key}", "").strip():
            meta[key] = ss[f"presets_save_{key}"].strip()
    ctx = app_state.get_context()
    # a quick save claims no verification; the release it was written for is what it is judged by (judged_with)
    meta.update(target=ctx["target"], verified_with=[], written_for=ctx["version"], justifications=[])
    raw_name = ss.get("presets_save_name", "").strip()
    missing = [label for key, label in (("title", "Title"), ("description", "Description")) if not meta[key]]
    if missing:  # named as the form names them (core's check says meta.title)
        ss["presets_save_error"] = f"Give the preset a {' and a '.join(missing)}: both are required."
        ss.pop("presets_save_ok", None)
        return
    try:
        name = presets.check_name(raw_name) if raw_name else presets.suggest_name(meta["title"] or "preset")
        path = presets.save_preset(name, app_state.get_config(), meta, folder,
                                   overwrite=bool(ss.get("presets_save_overwrite")), later_folders=team_folders[1:])
    except (presets.PresetError, OSError) as exc:
        ss["presets_save_error"] = str(exc)
        ss.pop("presets_save_ok", None)
        return
    ss.pop("presets_save_error", None)
    ss["presets_save_ok"] = f"Saved {name} to {path}."


if not team_folders:
    st.info("Saving needs a team folder. Set the environment variable `DSCONFIG_PRESETS_PATH` to a folder "
            "(several folders separated by `:` on Linux/macOS, `;` on Windows; the first one receives saved "
            "presets) before starting the app, e.g. `DSCONFIG_PRESETS_PATH=~/team-presets streamlit run app.py`. "
            "Built-in presets are read-only.", icon=":material/info:")
else:
    target_folder = str(team_folders[0])
    st.caption(f"Into {fields.md_escape(target_folder)} (first folder of DSCONFIG\\_PRESETS\\_PATH). The metadata is "
               "stored with the config; a title and a description are required.")
    # what was typed here comes back after a visit to another page (app_state.kept)
    cols = st.columns(2)
    cols[0].text_input("Title", app_state.kept("presets_save_title", ""), key="presets_save_title", max_chars=200)
    cols[1].text_input("File name", app_state.kept("presets_save_name", ""), key="presets_save_name", max_chars=64,
                       help="a-z, 0-9, '-' and '_' (at most 64); left empty, it is derived from the title.")
    st.text_area("Description", app_state.kept("presets_save_description", ""), key="presets_save_description",
                 height=80)
    cols = st.columns(3)
    for col, (key, label) in zip(cols, (("when_to_use", "When to use"), ("when_not_to_use", "When not to use"),
                                        ("hardware", "Hardware assumptions")), strict=True):
        col.text_area(label, app_state.kept(f"presets_save_{key}", ""), key=f"presets_save_{key}", height=80)
    st.checkbox("Replace a team preset of the same name", app_state.kept("presets_save_overwrite", False),
                key="presets_save_overwrite")
    app_state.keep(*(f"presets_save_{k}" for k in ("title", "name", "description", "when_to_use", "when_not_to_use",
                                                    "hardware", "overwrite")))
    st.button("Save as preset", key="presets_save", icon=":material/save:", on_click=_save,
              args=(target_folder,))
    if st.session_state.get("presets_save_error"):
        st.error(fields.md_escape(st.session_state["presets_save_error"]), icon=":material/error:")
    elif st.session_state.get("presets_save_ok"):
        st.success(fields.md_escape(st.session_state["presets_save_ok"]), icon=":material/check:")
frame.end()
