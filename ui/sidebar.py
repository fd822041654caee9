"""The sidebar every page shows: findings linking to their page, the memory fit, the download."""

from __future__ import annotations

import streamlit as st

import app_state
import core
from core.findings import Finding, Report
from ui import memory

_ICONS = {"error": "🛑", "warning": "⚠️"}
MAX_LISTED = 12


def finding_label(finding: Finding) -> str:
    """Short one-line text of a finding for the sidebar."""
    where = f"`{finding.path}`: " if finding.path else ""
    message = finding.message if len(finding.message) <= 140 else finding.message[:137] + "…"
    return f"{_ICONS.get(finding.severity, '')} {where}{message}"


def render(report: Report) -> None:
    """Draw the sidebar for the current session."""
    ctx = app_state.get_context()
    config = app_state.get_config()
    with st.sidebar:
        st.caption(
            f"Target **{ctx['target']}** · DeepSpeed **{ctx['version']}** · "
            f"**{app_state.world_size(ctx)}** GPUs ({ctx['nodes']} × {ctx['gpus_per_node']})"
        )
        errors, warnings = report.errors, report.warnings
        if errors:
            st.markdown(f"**{len(errors)} error(s)**, {len(warnings)} warning(s)")
        elif warnings:
            st.markdown(f"No errors, **{len(warnings)} warning(s)**")
        else:
            st.success("No errors or warnings", icon=":material/check_circle:")
        for finding in [*errors, *warnings][:MAX_LISTED]:
            label = finding_label(finding)
            page = app_state.PAGES.get(finding.page or "")
            if page:
                st.page_link(page, label=label, help=finding.suggestion or None)
            else:
                st.markdown(label)
        hidden = len(errors) + len(warnings) - MAX_LISTED
        if hidden > 0:
            st.page_link(app_state.PAGES["review"], label=f"… and {hidden} more on Review & export")
        _memory_fit(config, ctx)
        st.download_button(
            "Download ds_config.json", data=core.dump_config(config), file_name="ds_config.json",
            mime="application/json", icon=":material/download:", key="sidebar_download",
            width="stretch",
        )


def _memory_fit(config: dict, ctx: dict) -> None:
    stage = app_state.zero_stage(config)
    estimate = memory.model_states(config, ctx, stage)
    capacity = float(ctx["gpu_memory_gib"])
    if memory.model_params(ctx) is None:
        st.caption("Memory: choose a model on Start to see whether it fits.")
        return
    if estimate is None:
        st.caption(f"Memory: DeepSpeed estimates ZeRO stages 2 and 3 only (current stage {stage}).")
        return
    gpu_gib = estimate.gpu_bytes / memory.GIB
    cpu_gib = estimate.cpu_bytes / memory.GIB
    text = (f"Model states {gpu_gib:.1f} GiB of {capacity:.0f} GiB per GPU; "
            f"CPU {cpu_gib:.0f} of {float(ctx['cpu_ram_gib']):.0f} GiB per node")
    if gpu_gib <= capacity and cpu_gib <= float(ctx["cpu_ram_gib"]):
        st.success(f"Fits: {text} (activations not included).", icon=":material/memory:")
    else:
        st.error(f"Does not fit: {text}.", icon=":material/memory:")
