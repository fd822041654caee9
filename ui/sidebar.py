"""The sidebar every page shows: findings linking to their page, the memory fit, the download."""

from __future__ import annotations

import streamlit as st

import core
from core.findings import Finding, Report
from core.launchers import job_world_size
from core.memory.result import gib_used
from ui import app_state, fields, focus, memory

_ICONS = {"error": "🛑", "warning": "⚠️"}
MAX_LISTED = 12


def finding_label(finding: Finding) -> str:
    """Short one-line text of a finding for the sidebar."""
    message = finding.message if len(finding.message) <= 240 else finding.message[:237] + "…"
    # most messages open with the field they are about; the sidebar names it only when the text does not
    where = f"`{finding.path}`: " if finding.path and f"`{finding.path}`" not in message else ""
    # a did-you-mean belongs in the text a user reads, not only in the hover help
    hint = finding.suggestion if finding.suggestion and finding.suggestion.startswith("Did you mean") else ""
    return fields.safe_text(f"{_ICONS.get(finding.severity, '')} {where}{message}" + (f" {hint}" if hint else ""))


def render(report: Report) -> None:
    """Draw the sidebar for the current session."""
    ctx = app_state.get_context()
    config = app_state.get_config()
    with st.sidebar:
        st.caption(
            f"Target **{ctx['target']}** · DeepSpeed **{ctx['version']}** · "
            f"**{job_world_size(ctx)}** GPUs ({ctx['nodes']} × {ctx['gpus_per_node']})"
        )
        errors, warnings = report.errors, report.warnings
        problems = memory.setup_problems(config, ctx)  # of the model and cluster chosen, shown with the memory
        if errors:
            st.markdown(f"**{fields.counted(len(errors), 'error')}**, {fields.counted(len(warnings), 'warning')}")
        elif warnings:
            st.markdown(f"No errors, **{fields.counted(len(warnings), 'warning')}**")
        elif problems:
            st.markdown("No errors or warnings in the config; the model or cluster chosen has a problem (below)")
        else:
            st.success("No errors or warnings", icon=":material/check_circle:")
        for i, finding in enumerate([*errors, *warnings][:MAX_LISTED]):
            st.markdown(finding_label(finding), help=finding.suggestion or None)
            page = app_state.PAGES.get(finding.page or "")
            if page:
                st.page_link(page, label=f"Fix on {app_state.PAGE_TITLES[finding.page]}",
                             icon=":material/arrow_forward:",
                             help=fields.safe_text(f"{finding.code} at {finding.path}"),
                             query_params=focus.link_params(finding, app_state.get_config()))
            if i < min(len(errors) + len(warnings), MAX_LISTED) - 1:
                st.divider()
        hidden = len(errors) + len(warnings) - MAX_LISTED
        if hidden > 0:
            st.page_link(app_state.PAGES["review"], label=f"… and {hidden} more on Review & export")
        _memory_fit(config, ctx, report, problems)
        st.download_button(
            "Download ds_config.json: as written", data=core.dump_config(config), file_name="ds_config.json",
            mime="application/json", icon=":material/download:", key="sidebar_download",
            width="stretch",
        )


def _memory_fit(config: dict, ctx: dict, report: Report, problems: list) -> None:
    for problem in problems:
        st.error(f"{problem.message}.", icon=":material/block:")
    estimate = memory.current_estimate(config, ctx, report)
    if estimate is None:
        st.caption("Memory: choose a model on Start to see whether it fits.")
        return
    hw = estimate.hardware  # figures rounded toward the verdict beside them (gib_used)
    cpu = gib_used(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes, 0)
    text = (f"{gib_used(estimate.gpu_bytes, hw.gpu_memory_bytes)} of {float(ctx['gpu_memory_gib']):g} GiB per GPU "
            f"(peak in {estimate.gpu_peak_phase}); CPU {cpu} of {float(ctx['cpu_ram_gib']):g} GiB per node")
    if estimate.nvme_bytes_per_node:
        nvme = gib_used(estimate.nvme_bytes_per_node, hw.nvme_bytes_per_node)
        text += (f"; NVMe {nvme} GiB per node" if hw.nvme_bytes_per_node is None
                 else f"; NVMe {nvme} of {float(ctx['nvme_gib']):g} GiB per node")
    text += f" — {estimate.assumptions}."
    for assumed in (memory.micro_batch_and_assumption(config, report, ctx)[1], estimate.scope):
        if assumed:
            text += f" ({assumed}.)"
    if estimate.fits:
        st.success(f"Fits: {text}", icon=":material/memory:")
    else:
        short = [name for name, ok in (("GPU", estimate.fits_gpu), ("CPU RAM", estimate.fits_cpu),
                                       ("NVMe", estimate.fits_nvme)) if not ok]
        st.error(f"Does not fit ({', '.join(short)}): {text}", icon=":material/memory:")
    st.page_link(app_state.PAGES["zero"], label="Memory charts", icon=":material/bar_chart:")
