"""ZeRO & offload: stage, optimizer/parameter offload, buckets and stage-3 knobs, and the memory charts."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

import app_state
from core.findings import get_path
from ui import frame, memory, widgets

frame.begin("ZeRO & offload")
widgets.explain(
    "What ZeRO partitions, and what offload costs",
    """In plain data parallelism every GPU holds a full copy of everything: the 16-bit **parameters**, their
16-bit **gradients**, and the **optimizer states** (for Adam a 32-bit master copy of the weights plus
momentum and variance — 12 bytes per parameter, the biggest part). **ZeRO** removes the copies by
splitting them over the N data-parallel GPUs:

* **Stage 1** splits the optimizer states (each GPU keeps 1/N of them),
* **Stage 2** also splits the gradients,
* **Stage 3** also splits the parameters themselves; each layer's weights are gathered just before use.

More splitting means less memory per GPU and a bit more communication. **Offload** goes further: it
keeps the optimizer states (and, with stage 3, the parameters) in **CPU RAM** or on **NVMe** and runs
the optimizer step on the CPU. It frees the most GPU memory but is limited by PCIe and CPU speed, so
use it only when the model does not fit otherwise. The chart below draws what one of *your* GPUs holds
under each stage, for *your* model and GPU count.""",
)

form = widgets.Form.current()
config = form.config
ctx = app_state.get_context()
world = app_state.world_size(ctx)
capacity = float(ctx["gpu_memory_gib"])

widgets.render_field("zero_optimization.stage", form)
stage = form.stage
params = memory.model_params(ctx)

# ------------------------------------------------------------------ the paper's Figure 1, live
st.subheader("What one GPU holds under each stage")
if params is None:
    st.info("Choose a model on the Start page to see the memory charts.")
    st.page_link(app_state.PAGES["start"], label="Choose a model", icon=":material/arrow_back:")
else:
    figure = memory.zero_figure(params[0], world)
    figure["current"] = figure["stage"] == stage
    bars = alt.Chart(figure).mark_bar().encode(
        x=alt.X("stage:O", title="ZeRO stage", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("gib_per_gpu:Q", title="GiB per GPU"),
        color=alt.Color("component:N", title=None),
        opacity=alt.condition("datum.current", alt.value(1.0), alt.value(0.35)),
        tooltip=["stage", "component", alt.Tooltip("gib_per_gpu:Q", format=".1f")],
    )
    rule = alt.Chart(pd.DataFrame({"capacity": [capacity]})).mark_rule(color="red", strokeDash=[4, 4]).encode(
        y="capacity:Q")
    st.altair_chart((bars + rule).properties(height=300), width="stretch")
    totals = figure.groupby("stage", as_index=False)["gib_per_gpu"].sum()
    totals["fits"] = totals["gib_per_gpu"] <= capacity
    totals["current"] = totals["stage"] == stage
    st.caption(f"{ctx.get('model') or 'Your model'} ({params[0] / 1e9:.2f} B parameters) on {world} GPUs; "
               f"red line: {capacity:g} GiB per GPU. Model states only (16 bytes per parameter, the ZeRO "
               "paper's accounting); activations come on top.")
    st.dataframe(totals, hide_index=True, key="zero_stage_totals")

# ------------------------------------------------------------------ offload
st.subheader("Offload")
cols = st.columns(2)
with cols[0], st.container(border=True):
    widgets.render_section("zero_optimization.offload_optimizer", form, columns=1)
with cols[1], st.container(border=True):
    widgets.render_section("zero_optimization.offload_param", form, columns=1)
if "nvme" in (get_path(config, "zero_optimization.offload_optimizer.device"),
              get_path(config, "zero_optimization.offload_param.device")):
    with st.container(border=True):
        widgets.render_section("aio", form, columns=3)

if params is not None:
    st.subheader("Every stage-2/3 offload option (DeepSpeed's estimator)")
    options = memory.options_table(ctx)
    current = memory.model_states(config, ctx, stage)
    options["current"] = options["label"] == (
        f"ZeRO-{stage} opt={'cpu' if current and 'offload_optimizer=cpu' in current.option else 'none'} "
        f"param={'cpu' if current and 'offload_param=cpu' in current.option else 'none'}")
    chart_cols = st.columns(2)
    for col, column, title, limit in (
        (chart_cols[0], "gpu_gib", "GiB per GPU", capacity),
        (chart_cols[1], "cpu_gib", "GiB CPU RAM per node", float(ctx["cpu_ram_gib"])),
    ):
        bars = alt.Chart(options).mark_bar().encode(
            y=alt.Y("label:N", title=None, sort=None), x=alt.X(f"{column}:Q", title=title),
            opacity=alt.condition("datum.current", alt.value(1.0), alt.value(0.4)),
            tooltip=["label", alt.Tooltip(f"{column}:Q", format=".1f")],
        )
        rule = alt.Chart(pd.DataFrame({"limit": [limit]})).mark_rule(color="red", strokeDash=[4, 4]).encode(
            x="limit:Q")
        col.altair_chart((bars + rule).properties(height=220), width="stretch")
    if current is None:
        st.caption(f"DeepSpeed has no estimator for stage {stage}; the options above are for stages 2 and 3.")
    else:
        st.caption(f"Current config: **{current.option}** — {current.gpu_bytes / memory.GIB:.1f} GiB per GPU, "
                   f"{current.cpu_bytes / memory.GIB:.0f} GiB CPU RAM per node ({current.covers}).")
    st.dataframe(options, hide_index=True, key="zero_options")

    st.subheader("Memory against the GPU count")
    sizes = tuple(n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if n <= max(64, world * 4))
    sweep = memory.world_size_sweep(params[0], stage, sizes)
    line = alt.Chart(sweep).mark_line(point=True).encode(
        x=alt.X("gpus:Q", scale=alt.Scale(type="log", base=2), title="GPUs"),
        y=alt.Y("gib_per_gpu:Q", title=f"GiB per GPU (stage {stage})"),
    )
    cap = alt.Chart(pd.DataFrame({"capacity": [capacity]})).mark_rule(color="red", strokeDash=[4, 4]).encode(
        y="capacity:Q")
    st.altair_chart((line + cap).properties(height=260), width="stretch")
    st.dataframe(sweep, hide_index=True, key="zero_sweep")

# ------------------------------------------------------------------ everything else in zero_optimization
with st.expander("Buckets, stage-3 knobs, ZeRO++ and the other ZeRO settings", icon=":material/tune:"):
    st.caption("Settings that do not apply to the current stage are disabled; hover for the reason.")
    widgets.render_section("zero_optimization", form, exclude=("stage", "offload_optimizer", "offload_param"),
                           title=False)

widgets.page_findings(form, "zero")
st.page_link(app_state.PAGES["monitoring"], label="Next: monitoring →", icon=":material/arrow_forward:")
frame.end()
