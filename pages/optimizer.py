"""Optimizer & scheduler: every optimizer and scheduler with its parameters, and the LR curve."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

import pandas as pd
import streamlit as st

from core import autofill, lr_schedules
from core.effective import optimizer_backend
from core.findings import get_path
from core.schema.optimizer import SCHEDULER_PEAK_LR, SCHEDULERS, OptimizerSpec, resolve_optimizer
from ui import app_state, charts, frame, lr_chart, tables, widgets

frame.begin("Optimizer & scheduler")
widgets.explain(
    "What the optimizer and the scheduler do",
    """The **optimizer** turns gradients into weight updates. Adam/AdamW keep two extra numbers per
parameter (momentum and variance), which is why the optimizer states are the biggest part of training
memory and the first thing ZeRO partitions. DeepSpeed builds a fused GPU kernel for Adam, or its
CPU-Adam when the optimizer is offloaded to the CPU.

The **learning-rate scheduler** changes the learning rate after every optimizer step: a **warm-up**
from a small value avoids early divergence, a **decay** (linear or cosine) lets training settle.
The chart below is computed exactly as DeepSpeed's schedulers compute it.

Leave the optimizer out entirely if your script (or the HF Trainer) passes its own.""",
)

form = widgets.Form.current()
config = form.config
ctx = app_state.get_context()

# ------------------------------------------------------------------ optimizer
st.subheader("Optimizer")
widgets.render_field("optimizer.type", form)
opt_type = get_path(config, "optimizer.type")
spec = resolve_optimizer(opt_type, form.version) if isinstance(opt_type, str) and opt_type != "auto" else None
if isinstance(spec, OptimizerSpec):
    backend = optimizer_backend(config, spec.name)  # the order deepspeed.initialize builds it in
    st.caption(f"{spec.description} DeepSpeed builds `{spec.implementations.get(backend, '?')}` here"
               f" ({backend}).")
    params = spec.params_for(backend)
    cols = st.columns(3)
    for i, param in enumerate(params):
        with cols[i % 3]:
            widgets.render_param("optimizer.params", param, form)
    given = get_path(config, "optimizer.params", {})
    if isinstance(given, Mapping):
        other = [k for k in given if spec.param(k) is None or spec.param(k) not in params]
        if other:
            st.caption("Other keys in `optimizer.params` (kept; see the findings): "
                       + ", ".join(f"`{k}`" for k in other))
elif isinstance(spec, str):
    st.caption(f"`{spec}` is built from `torch.optim.{spec}`; its parameters are passed as they are.")
    widgets.render_field("optimizer.params", form)
elif isinstance(opt_type, str) and opt_type != "auto":
    st.error(f"`{opt_type}` is not an optimizer DeepSpeed {form.version} knows.", icon=":material/error:")
elif opt_type is None:
    st.caption("No optimizer section: your script passes its own optimizer to `deepspeed.initialize`.")
if isinstance(config.get("optimizer"), Mapping):
    widgets.render_field("optimizer.legacy_fusion", form)
cols = st.columns(2)
with cols[0]:
    widgets.render_field("zero_allow_untested_optimizer", form)
with cols[1]:
    widgets.render_field("zero_force_ds_cpu_optimizer", form)

# ------------------------------------------------------------------ scheduler
st.subheader("Learning-rate scheduler")
widgets.render_field("scheduler.type", form)
sched_type = get_path(config, "scheduler.type")

def _peak_note(config: dict, scheduler: object, peak: float) -> str | None:
    """Why the curve does not reach the optimizer's lr, when the scheduler's own peak replaces it (DeepSpeed's
    WarmupLR, WarmupDecayLR and OneCycle write their learning rate into the optimizer); None when they agree."""
    name = SCHEDULER_PEAK_LR.get(scheduler) if isinstance(scheduler, str) else None
    lr = get_path(config, "optimizer.params.lr")
    if name is None or isinstance(lr, bool) or not isinstance(lr, int | float) or math.isclose(lr, peak, rel_tol=1e-9):
        return None
    return (f"The scheduler sets the learning rate: the curve peaks at {peak:.3e} (`scheduler.params.{name}`, or its "
            f"default), not at the optimizer's `lr` {lr:.3e}, which {scheduler} replaces.")

sched = SCHEDULERS.get(sched_type) if isinstance(sched_type, str) else None
if sched is not None:
    st.caption(sched.description)
    cols = st.columns(3)
    for i, param in enumerate(sched.params):
        with cols[i % 3]:
            widgets.render_param("scheduler.params", param, form)
    steps = int(ctx.get("train_steps") or 1000)
    widgets.context_widget(st.number_input, "train_steps", "Steps to chart", step=1000)
    chart_config, trainer_fills = config, []
    if ctx["target"] == "hf" and any(p.startswith(("optimizer.", "scheduler.")) for p in autofill.find_auto(config)):
        # the Trainer fills these before DeepSpeed sees them: chart what it would fill (and say so); values of
        # the sections that disagree with the Trainer's are left to the curve's error, which names the value
        with contextlib.suppress(autofill.AutoFillError):
            chart_config, trainer_fills = autofill.trainer_schedule(config, steps)
    try:
        curve = lr_chart.schedule_curve(chart_config, steps, ctx["version"])
    except lr_schedules.ScheduleError as exc:
        path = lr_schedules.param_path(exc.param)
        where = f" (`{path}`)" if path else ""
        st.error(f"No curve{where}: {exc}", icon=":material/error:")
        curve = None
    if curve is not None:
        for warning in curve.attrs.get("warnings", []):
            st.warning(f"DeepSpeed would warn: {warning}")
        for assumed in curve.attrs.get("assumed", []):
            st.caption(f"Assumed: {assumed}.")
        if trainer_fills:
            st.caption('Assumed: the HF Trainer fills the "auto" values from TrainingArguments; charted with its '
                       f"defaults and {steps} training steps: {', '.join(trainer_fills)}. Your arguments decide.")
        if (peak_note := _peak_note(chart_config, sched_type, float(curve["lr"].max()))) is not None:
            st.caption(f"ℹ️ {peak_note}")
        series = [c for c in ("lr", "momentum") if c in curve]
        shown = lr_chart.decimate(curve, series)
        long = shown.melt("step", series, "series", "value")
        charts.draw(lr_chart.lr_curve, {"curve": long}, with_momentum="momentum" in shown)
        final = pd.DataFrame({"Optimizer step": [0, steps // 2, steps - 1],
                              "Learning rate": [curve["lr"].iloc[0], curve["lr"].iloc[steps // 2],
                                                curve["lr"].iloc[-1]]})
        tables.small_table(final, {"Learning rate": ".3e"})
elif isinstance(sched_type, str) and sched_type != "auto":
    st.caption(f"`{sched_type}` is not one of DeepSpeed's schedulers; it must be a class of "
               "torch.optim.lr_scheduler, built with the parameters as they are.")
    widgets.render_field("scheduler.params", form)
elif sched_type is None and ctx["target"] == "hf" and "scheduler" not in config:
    # transformers' deepspeed_optim_sched / Trainer.create_scheduler: without a scheduler section it builds its own
    st.caption("No scheduler section: the HF Trainer creates its own from TrainingArguments (`lr_scheduler_type`, "
               "`linear` by default: a warm-up over `warmup_steps`, 0 by default, then a linear decay to 0 over the "
               "run, from `learning_rate`).")
elif sched_type is None and ctx["target"] != "hf":  # for the Trainer a section without a type is an error below
    st.caption("No scheduler: the learning rate stays at the optimizer's `lr`.")

widgets.page_findings(form, "optimizer")
st.page_link(app_state.PAGES["zero"], label="Next: ZeRO & offload →", icon=":material/arrow_forward:")
frame.end()
