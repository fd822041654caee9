"""ZeRO & offload: stage, optimizer/parameter offload, buckets and stage-3 knobs, and the memory charts."""

from __future__ import annotations

import streamlit as st

from core import fit
from core.findings import get_path
from core.launchers import job_world_size
from core.memory.result import gib_margin, gib_used
from core.perf.recommend import margin_caveat
from ui import (
    actions,
    app_state,
    charts,
    fields,
    frame,
    headline,
    memory,
    perf,
    tables,
    widgets,
    zero_charts,
    zero_view,
)

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
world = job_world_size(ctx)
capacity = float(ctx["gpu_memory_gib"])
capacity_row = zero_view.capacity(capacity)


SWEEP_AXES = {"micro_batch": "micro batch", "seq_len": "sequence length", "total_gpus": "GPU count"}


@st.fragment
def sweep_section(keys: memory.Keys, micro_batch: int, seq_len: int, world: int, capacity_row: bytes) -> None:
    """Memory against one axis; choosing the axis reruns this part only (the config does not change)."""
    st.subheader("Memory against micro batch, sequence length or GPU count")
    axis = st.radio("Sweep", list(SWEEP_AXES), format_func=SWEEP_AXES.get, horizontal=True,
                    index=app_state.kept_index("zero_sweep_axis", list(SWEEP_AXES)), key="zero_sweep_axis")
    app_state.keep("zero_sweep_axis")
    now = {"micro_batch": micro_batch, "seq_len": seq_len, "total_gpus": world}[axis]
    sweep = zero_view.sweep_view(keys, axis, now)
    charts.draw(zero_charts.sweep, {"sweep": sweep.rows, zero_charts.CAPACITY: capacity_row},
                axis=axis, axis_title=SWEEP_AXES[axis])
    st.caption(sweep.held)
    tables.draw(sweep.table)

widgets.render_field("zero_optimization.stage", form)
stage = form.stage
params = memory.model_params(ctx)
# every stage × offload option (None without a model)
full = zero_view.options_view(memory.options_keys(config, ctx, form.report), memory.current_option(config, stage))

# ------------------------------------------------------------------ the paper's Figure 1, live
st.subheader("What one GPU holds under each stage")
if params is None:
    st.info("Choose a model on the Start page to see the memory charts.")
    st.page_link(app_state.PAGES["start"], label="Choose a model", icon=":material/arrow_back:")
else:
    figure = zero_view.stage_view(params[0], world, stage, () if full is None else full.verdicts)
    charts.draw(zero_charts.stage_figure, {"figure": figure.figure, zero_charts.CAPACITY: capacity_row})
    st.caption(f"{ctx.get('model') or 'Your model'} ({params[0] / 1e9:.2f} B parameters) on "
               f"{fields.counted(world, 'GPU')}; "
               f"red line: {capacity:g} GiB per GPU. Model states only (16 bytes per parameter, the ZeRO "
               "paper's accounting); activations come on top, so whether a stage fits is the full estimate's "
               "verdict (the same as in the table of every option below).")
    tables.draw(figure.totals)

# ------------------------------------------------------------------ offload
st.subheader("Offload")
cols = st.columns(2)
#: The deprecated booleans DeepSpeed still reads as ``{"device": "cpu"}`` when the section is absent (core.effective).
LEGACY_OFFLOAD = {"offload_optimizer": "cpu_offload", "offload_param": "cpu_offload_param"}
for col, section in zip(cols, ("offload_optimizer", "offload_param"), strict=True):
    with col, st.container(border=True):
        device = get_path(config, f"zero_optimization.{section}.device")
        if device is None and getattr(form.meaning, section) == "cpu":
            # the widget below shows the section (absent: "none"), not what DeepSpeed does with the old key
            st.caption(f"**Offloaded to the CPU** by the deprecated `zero_optimization.{LEGACY_OFFLOAD[section]}: "
                       f"true`, which DeepSpeed reads as `{section}.device: cpu`. The finding about it on this page "
                       "rewrites it as this section (Fix); a device chosen here while the old key is there makes "
                       "DeepSpeed refuse the config.")
        # the other knobs do nothing without a device: only the device is shown then
        widgets.render_section(f"zero_optimization.{section}", form, columns=1,
                               only=None if device in ("cpu", "nvme") else ["device"])
if "nvme" in (get_path(config, "zero_optimization.offload_optimizer.device"),
              get_path(config, "zero_optimization.offload_param.device")):
    with st.container(border=True):
        widgets.render_section("aio", form, columns=3)

keys = memory.cache_keys(config, ctx, memory.shape_for(ctx, config, form.report))
view = zero_view.estimate_view(keys)
if view is not None:
    estimate = view.estimate
    st.subheader("This config on one GPU")
    cols = st.columns([3, 2])
    with cols[0]:
        charts.draw(zero_charts.peak_components, {"peak": view.peak})
    with cols[1]:
        hw = estimate.hardware

        def margin(used: int, cap: int) -> str:  # the sign sets the arrow and colour; the words say which way
            return f"+{gib_margin(used, cap)}" if used <= cap else f"-{gib_margin(used, cap)} capacity"

        st.metric("Peak per GPU", f"{gib_used(estimate.gpu_bytes, hw.gpu_memory_bytes)} GiB",
                  delta=margin(estimate.gpu_bytes, hw.gpu_memory_bytes), delta_color="normal",
                  help=f"Peak during {estimate.gpu_peak_phase}. Capacity {capacity:g} GiB.")
        st.metric("CPU RAM per node", f"{gib_used(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} GiB",
                  delta=margin(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes),
                  help=f"Pinned: {estimate.cpu_pinned_bytes_per_node / memory.GIB:.1f} GiB.")
        perf.step_panel(keys, ctx, fit.short_of(estimate), margin_caveat(estimate, "the Plan page"))
    st.caption(f"Current config: {memory.current_option(config, stage)} — "
               f"{gib_used(estimate.gpu_bytes, hw.gpu_memory_bytes)} GiB per GPU, "
               f"{gib_used(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} GiB CPU RAM per node "
               f"(micro batch {estimate.shape.micro_batch}, {estimate.shape.seq_len} tokens, "
               f"{estimate.shape.attention} attention, recompute {estimate.shape.recompute}).")
    assumed = memory.micro_batch_and_assumption(config, form.report, ctx)[1]
    for note in [*([assumed[0].upper() + assumed[1:] + "."] if assumed else []), *estimate.notes]:
        st.caption(f"ℹ️ {note}")
    with st.expander("Every component with its formula", icon=":material/functions:"):
        tables.draw(view.components)

    if not estimate.fits:
        st.subheader("Make it fit")
        found = headline.ways(config, ctx, form.report)
        speeds = headline.speeds(found, config, ctx, form.report)
        if not found:
            st.info(fit.nothing_helps(fit.short_of(estimate)))
        for i, (way, speed) in enumerate(zip(found, speeds, strict=True)):
            with st.container(border=True):
                verdict = ":green[**fits**]" if way.fits else f":red[still short of {', '.join(way.short)}]"
                hw = estimate.hardware  # the per-GPU and per-node capacities stay whatever a way changes
                nvme = (f", NVMe {gib_used(way.nvme_bytes_per_node, hw.nvme_bytes_per_node or 0)} GiB per node"
                        if way.nvme_bytes_per_node else "")  # a way that swaps to NVMe says how much
                st.markdown(f"**{i + 1}. {way.title}** — GPU {gib_used(way.gpu_bytes, hw.gpu_memory_bytes)} GiB "
                            f"per GPU, CPU RAM {gib_used(way.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} GiB "
                            f"per node{nvme}: {verdict}")
                cost = "" if speed is None else (
                    f" Speed: about **{speed:.2f}×** the tokens per second per GPU of the current config "
                    "(the planner's estimate).")
                st.caption(way.detail + cost)
                st.button("Apply", key=f"zero_fit_{i}", on_click=actions.apply_way, args=(way,),
                          icon=":material/build:", type="primary" if i == 0 and way.fits else "secondary")

    st.subheader("Every ZeRO stage and offload option")
    tables.draw(full.table)
    with charts.on_demand("Chart of every option, by category", key="zero_options_chart") as shown:
        if shown:
            options, totals = full.chart_rows()
            charts.draw(zero_charts.every_option, {"options": options, "totals": totals,
                                                   zero_charts.CAPACITY: capacity_row})

    sweep_section(keys, estimate.shape.micro_batch, estimate.shape.seq_len, world, capacity_row)

# ------------------------------------------------------------------ everything else in zero_optimization
OWN_WIDGETS = ("stage", "offload_optimizer", "offload_param")  # drawn above
knob_findings = [f for f in form.findings_under("zero_optimization")
                 if f.path != "zero_optimization" and f.path.split(".")[1] not in OWN_WIDGETS]
# About 40 widgets: drawn only while the expander is open (a lazy, tracked expander), or when one of them has a
# finding, so a click elsewhere on the page does not rebuild them.
with st.expander("Buckets, stage-3 knobs, ZeRO++ and the other ZeRO settings", icon=":material/tune:",
                 expanded=bool(knob_findings), key="zero_knobs", on_change="rerun") as knobs:
    if knobs.open or knob_findings:
        st.caption("Settings that do not apply to the current stage are disabled; hover for the reason.")
        widgets.render_section("zero_optimization", form, exclude=OWN_WIDGETS, title=False)

# Other top-level keys of this page (e.g. the deprecated `allgather_size`) appear only when the config has them.
widgets.render_section("", form, only=[n for n in fields.page_fields("zero") if n not in ("zero_optimization", "aio")])
widgets.page_findings(form, "zero")
st.page_link(app_state.PAGES["monitoring"], label="Next: monitoring →", icon=":material/arrow_forward:")
frame.end()
