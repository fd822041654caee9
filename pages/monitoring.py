"""Monitoring: TensorBoard, Weights & Biases, CSV, Comet, flops profiler, comms logger, printing."""

from __future__ import annotations

import streamlit as st

from ui import app_state, fields, frame, widgets

frame.begin("Monitoring")
widgets.explain(
    "Seeing what training does",
    """DeepSpeed can print progress every `steps_per_print` steps and write the loss, learning rate and
loss scale to **TensorBoard**, **Weights & Biases**, **CSV** files or **Comet** (each in its own
section; only rank 0 writes). The **flops profiler** measures FLOPs, latency and parameters per module
at one step; the **comms logger** records every collective (all-reduce, all-gather …) with its size
and time; `wall_clock_breakdown` times forward, backward and step on every rank. Profilers cost time:
turn them on to investigate, off for production runs.""",
)

form = widgets.Form.current()
widgets.render_section("", form, only=fields.page_fields("monitoring"), columns=2)
widgets.page_findings(form, "monitoring")
st.page_link(app_state.PAGES["advanced"], label="Next: advanced →", icon=":material/arrow_forward:")
frame.end()
