"""The ZeRO page's four charts as builders for ``ui.charts``: the spec's shape only, the rows come per rerun.

Datasets each builder reads: ``capacity`` (one row, column ``capacity``: GiB per GPU) and the one named below.
"""

from __future__ import annotations

import altair as alt

from ui import memory

CATEGORY_COLORS = alt.Scale(domain=["model states", "activations", "buffers", "overhead"],
                            range=["#4c78a8", "#f58518", "#72b7b2", "#bab0ac"])


def category_label(category: str) -> str:
    """A memory component's category as every chart names it ("model_states" -> "model states")."""
    return category.replace("_", " ")
#: Legends under the chart in two columns, so a phone-width chart shows every entry.
LEGEND = alt.Legend(orient="bottom", columns=2, labelLimit=220)
CAPACITY = "capacity"


def _capacity_rule(channel: str) -> alt.Chart:
    """The red dashed line at the GPU's capacity, along ``channel`` ("x" or "y")."""
    return alt.Chart(alt.NamedData(CAPACITY)).mark_rule(color="red", strokeDash=[4, 4]).encode(
        **{channel: alt.X("capacity:Q") if channel == "x" else alt.Y("capacity:Q")})


def stage_figure() -> alt.LayerChart:
    """Model states per GPU under each stage (dataset ``figure``: stage, component, gib_per_gpu, current)."""
    bars = alt.Chart(alt.NamedData("figure")).mark_bar().encode(
        x=alt.X("stage:O", title="ZeRO stage", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("gib_per_gpu:Q", title="GiB per GPU"),
        color=alt.Color("component:N", title=None, scale=alt.Scale(range=["#4c78a8", "#72b7b2", "#f2b447"]),
                        legend=LEGEND),
        opacity=alt.condition("datum.current", alt.value(1.0), alt.value(0.35)),
        tooltip=[alt.Tooltip("stage:O"), alt.Tooltip("component:N"), alt.Tooltip("gib_per_gpu:Q", format=".1f")],
    )
    return (bars + _capacity_rule("y")).properties(height=300)


#: Height of one bar of ``peak_components``: the chart's height follows its number of rows in the browser, so its
#: spec is the same for every config and a change only swaps its rows (a height computed here from the row count
#: changed the spec between ZeRO-2 and -3, and the browser then built the chart anew on every stage flip).
PEAK_BAR_PX = 20


def peak_components() -> alt.Chart:
    """This config's GPU components at the peak (dataset ``peak``: name, gib, category, phase, formula)."""
    return alt.Chart(alt.NamedData("peak")).mark_bar().encode(
        # labels capped so a phone-width chart keeps room for its bars; the full name is in the tooltip
        y=alt.Y("name:N", title=None, sort="-x", axis=alt.Axis(labelLimit=230, labelOverlap=False)),
        x=alt.X("gib:Q", title="GiB on one GPU at the peak"),
        color=alt.Color("category:N", title=None, scale=CATEGORY_COLORS, legend=LEGEND),
        tooltip=[alt.Tooltip("name:N"), alt.Tooltip("gib:Q", format=".2f"), alt.Tooltip("phase:N"),
                 alt.Tooltip("formula:N")],
    ).properties(height=alt.Step(PEAK_BAR_PX))


def every_option() -> alt.LayerChart:
    """Every stage × offload option stacked by category, a diamond at its total (datasets ``options``,
    ``totals``: option, category, gib, cpu_gib, total_gib, verdict, current)."""
    stacked = alt.Chart(alt.NamedData("options")).mark_bar().encode(
        y=alt.Y("option:N", title=None, sort=None, axis=alt.Axis(labelLimit=170)),
        x=alt.X("gib:Q", title="GiB per GPU at the peak (current option opaque)", stack=True),
        color=alt.Color("category:N", title=None, scale=CATEGORY_COLORS, legend=LEGEND),
        opacity=alt.condition("datum.current", alt.value(1.0), alt.value(0.45)),
        tooltip=[alt.Tooltip("option:N"), alt.Tooltip("category:N"), alt.Tooltip("gib:Q", format=".1f"),
                 alt.Tooltip("cpu_gib:Q", format=".0f")],
    )
    marks = alt.Chart(alt.NamedData("totals")).mark_point(filled=True, size=90, shape="diamond").encode(
        y=alt.Y("option:N", sort=None), x=alt.X("total_gib:Q"),
        color=alt.Color("verdict:N", title=None, scale=memory.FIT_COLORS, legend=LEGEND),
        tooltip=[alt.Tooltip("option:N"), alt.Tooltip("verdict:N"), alt.Tooltip("total_gib:Q", format=".1f")],
    )
    return (stacked + marks + _capacity_rule("x")).resolve_scale(color="independent").properties(height=360)


def sweep(axis: str, axis_title: str) -> alt.LayerChart:
    """GiB per GPU against ``axis`` on a log-2 scale (dataset ``sweep``: axis, gpu_gib, verdict)."""
    base = alt.Chart(alt.NamedData("sweep")).encode(
        x=alt.X(f"{axis}:Q", scale=alt.Scale(type="log", base=2), title=axis_title),
        y=alt.Y("gpu_gib:Q", title="GiB per GPU at the peak"),
        tooltip=[alt.Tooltip(f"{axis}:Q"), alt.Tooltip("gpu_gib:Q", format=".1f"), alt.Tooltip("verdict:N")],
    )
    line = base.mark_line(color="#888888") + base.mark_point(filled=True, size=70).encode(
        color=alt.Color("verdict:N", title=None, scale=memory.FIT_COLORS, legend=LEGEND))
    return (line + _capacity_rule("y")).properties(height=260)


def config_comparison() -> alt.LayerChart:
    """GPU memory at the peak of two configs side by side (dataset ``compare``: config, category, gib)."""
    bars = alt.Chart(alt.NamedData("compare")).mark_bar().encode(
        x=alt.X("config:N", title=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("gib:Q", title="GiB per GPU"),
        color=alt.Color("category:N", title=None, scale=CATEGORY_COLORS, legend=LEGEND),
        tooltip=["config:N", "category:N", alt.Tooltip("gib:Q", format=".1f")],
    )
    return (bars + _capacity_rule("y")).properties(height=280)
