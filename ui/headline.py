"""The headline at the top of every page: does DeepSpeed accept the config, does it fit, the one problem
that matters most in words, and a button for its safe fix. Drawn in the main area so a phone shows it too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from core import fit
from core.findings import Finding, Report
from core.memory.result import gib_capacity, gib_used
from ui import actions, app_state, fields, focus, memory
from ui.shared_cache import shared_cache


def setup_advice(problem: memory.SetupProblem) -> str:
    """The sentence saying where a setup problem's inputs are changed, e.g. "Change the GPU on the Start page or
    the precision on the Precision page."."""
    return "Change " + " or ".join(f"{what} on the {app_state.PAGE_TITLES[page]} page"
                                   for what, page in problem.changed_by) + "."


def top_problem(report: Report, config: Mapping[str, Any], estimate: Any,
                setup: Sequence[memory.SetupProblem] = ()) -> tuple[str, Finding | memory.SetupProblem | None] | None:
    """The single most important problem: (text, the finding or setup problem it is, None for "does not fit"), or
    None.

    A misspelt section first (DeepSpeed ignores it entirely, so the run silently trains without it, though it
    is only a warning), then the first error, then a problem of the setup (``memory.setup_problems``: the model
    or the GPU cannot run it; the text names the pages that change it), then "does not fit", then the first
    warning."""
    for finding in report.warnings:
        section = focus.misspelt_section(finding, config)
        if section:
            return (f"`{finding.path}` is not a DeepSpeed section, so DeepSpeed ignores all of it: did you mean "
                    f"`{section}`? Until it is renamed, nothing in it takes effect.", finding)
    if report.errors:
        return fields.finding_text(report.errors[0]), report.errors[0]
    if setup:
        return f"{setup[0].message}. {setup_advice(setup[0])}", setup[0]
    if estimate is not None and not estimate.fits:
        return "It does not fit in memory: " + shortfall(estimate) + ".", None
    if report.warnings:
        return fields.finding_text(report.warnings[0]), report.warnings[0]
    return None


def shortfall(estimate: Any) -> str:
    """Only what is short, in words: "needs 630.6 GiB per GPU, the GPU has 79.15 GiB"."""
    hw = estimate.hardware
    gib = memory.GIB
    parts = []
    if not estimate.fits_gpu:  # needs rounded up where plain rounding would read as what the GPU has (gib_used)
        parts.append(f"it needs {gib_used(estimate.gpu_bytes, hw.gpu_memory_bytes)} GiB per GPU, the GPU has "
                     f"{gib_capacity(hw.gpu_memory_bytes)} GiB")
    if not estimate.fits_cpu:
        parts.append(f"{gib_used(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} GiB of CPU RAM per node, "
                     f"the node has {hw.cpu_ram_per_node_bytes / gib:.1f} GiB")
    if not estimate.fits_nvme:
        parts.append(f"{gib_used(estimate.nvme_bytes_per_node, hw.nvme_bytes_per_node or 0)} GiB of NVMe per node, "
                     f"the node has {(hw.nvme_bytes_per_node or 0) / gib:.1f} GiB")
    return "; ".join(parts)


def accept_sentence(report: Report, version: str, target: str) -> str:
    errors, warnings = len(report.errors), len(report.warnings)
    who = "the HF Trainer + DeepSpeed" if target == "hf" else f"DeepSpeed {version}"
    if errors:
        return (f":red[:material/block: **Refused**] by {who}: {fields.counted(errors, 'error')}, "
                f"{fields.counted(warnings, 'warning')}")
    if warnings:
        return f":orange[:material/warning: **Accepted**] by {who} with {fields.counted(warnings, 'warning')}"
    return f":green[:material/check_circle: **Accepted**] by {who}: no errors or warnings"


def fit_sentence(estimate: Any, assumption: str | None) -> str:
    if estimate is None:
        return ":gray[:material/help: **Fit unknown**]: choose a model on the Start page"
    extra = estimate.assumptions + "".join(
        f"; {said}" for said in (assumption, estimate.scope) if said)
    verdict = (":green[:material/check_circle: **Fits**]" if estimate.fits
               else f":red[:material/error: **Does not fit**] ({', '.join(fit.short_of(estimate))})")
    return f"{verdict}: {fit.fit_numbers(estimate)} — {extra}"


def ways(config: Mapping[str, Any], ctx: Mapping[str, Any], report: Report) -> list[fit.Way]:
    """``core.fit.ways_to_fit`` for the session's config and context ([] when it fits or no model is chosen)."""
    return list(_ways(_keys(config, ctx, report), int(ctx.get("hf_grad_accum") or 1)))


def speeds(found: list[fit.Way], config: Mapping[str, Any], ctx: Mapping[str, Any],
           report: Report) -> list[float | None]:
    """Each way's speed per GPU relative to now (``core.fit.speed_costs``); None for a custom GPU or no model.
    ``found`` is ``ways`` of the same config and context."""
    if not found:
        return []
    return list(_speeds(_keys(config, ctx, report), int(ctx.get("hf_grad_accum") or 1), str(ctx.get("gpu"))))


def _keys(config: Mapping[str, Any], ctx: Mapping[str, Any], report: Report) -> memory.Keys:
    return memory.cache_keys(config, ctx, memory.shape_for(ctx, config, report))


# Both are shown on every page of a job that does not fit (the headline, and the ZeRO page's list): computed once
# per distinct input and shared by the process's sessions (read only: ``fit.apply_patch`` copies what it applies).
@shared_cache(maxsize=256)
def _ways(keys: memory.Keys, trainer_accum: int) -> tuple[fit.Way, ...]:
    found = memory.inputs(keys)
    if found is None:
        return ()
    return tuple(fit.ways_to_fit(found.config, found.model, found.hardware, found.shape, trainer_accum=trainer_accum,
                                 version=memory.version_of(found.context)))


@shared_cache(maxsize=256)
def _speeds(keys: memory.Keys, trainer_accum: int, gpu: str) -> tuple[float | None, ...]:
    ways_found, found = _ways(keys, trainer_accum), memory.inputs(keys)
    if found is None or not ways_found:
        return (None,) * len(ways_found)
    return tuple(fit.speed_costs(list(ways_found), found.config, found.model, found.hardware, found.shape, gpu,
                                 trainer_accum, version=memory.version_of(found.context)))


def _apply_finding_fix(finding: Finding) -> None:
    assert finding.fix is not None  # noqa: S101 — only offered for findings with a fix
    actions.apply_fix(finding.fix.description, finding.fix.apply(app_state.get_config()))


def render() -> None:
    """Draw the headline for the session's current state."""
    config, ctx = app_state.get_config(), app_state.get_context()
    report = app_state.report()
    estimate = memory.current_estimate(config, ctx, report)
    assumption = memory.micro_batch_and_assumption(config, report, ctx)[1] if estimate is not None else None
    with st.container(border=True, key="headline"):
        cols = st.columns(2)
        cols[0].markdown(accept_sentence(report, ctx["version"], ctx["target"]))
        cols[1].markdown(fit_sentence(estimate, assumption))
        setup = memory.setup_problems(config, ctx)
        problem = top_problem(report, config, estimate, setup)
        if problem is None:
            st.markdown("**Nothing to fix.**")
        else:
            text, cause = problem
            finding = cause if isinstance(cause, Finding) else None
            st.markdown(f"**Most important:** {text}")
            buttons = st.columns([2, 2, 1])
            if isinstance(cause, memory.SetupProblem):
                for column, page in zip(buttons, cause.pages, strict=False):
                    column.page_link(app_state.PAGES[page], label=f"Edit on {app_state.PAGE_TITLES[page]}",
                                     icon=":material/edit:")
            elif finding is not None and finding.fix is not None:
                buttons[0].button(f"Fix: {finding.fix.description}", key="headline_fix", type="primary",
                                  on_click=_apply_finding_fix, args=(finding,), icon=":material/build:")
            elif cause is None:
                found = ways(config, ctx, report)
                best = found[0] if found and found[0].fits else None
                if best is not None:
                    buttons[0].button("Make it fit", key="headline_fit", type="primary", on_click=actions.apply_way,
                                      args=(best,), icon=":material/build:",
                                      help=f"{best.title}: {best.detail}")
                    st.caption(f"Make it fit applies: {best.title} → GPU {best.gpu_bytes / memory.GIB:.1f} GiB per "
                               f"GPU, CPU RAM {best.cpu_bytes_per_node / memory.GIB:.1f} GiB per node.")
                buttons[1].page_link(app_state.PAGES["zero"], label="All ways to make it fit",
                                     icon=":material/list:")
            if finding is not None and finding.page in app_state.PAGES:
                buttons[1].page_link(app_state.PAGES[finding.page], query_params=focus.link_params(finding, config),
                                     label=f"Edit on {app_state.PAGE_TITLES[finding.page]}", icon=":material/edit:")
        actions.undo_button("headline")
    _focus(report)


def _focus(report: Report) -> None:
    """The finding a link brought the user here for, right under the headline (the page may be long)."""
    path, code = st.query_params.get(focus.FOCUS), st.query_params.get(focus.CODE)
    on_path = [f for f in report.findings if path and fields.safe_text(f.path) == path and f.severity != "info"]
    finding = next((f for f in on_path if f.code == code), on_path[0] if on_path else None)
    if finding is None:
        return
    with st.container(border=True, key="focus"):
        st.markdown(f":material/my_location: **You came here to fix:** {fields.finding_text(finding)}")
        if finding.fix is not None:
            st.button(f"Fix: {finding.fix.description}", key="focus_fix", on_click=_apply_finding_fix,
                      args=(finding,), icon=":material/build:")
