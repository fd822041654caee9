"""The Plan page's three charts as builders for ``ui.charts``: the spec's shape only, the rows come per rerun."""

from __future__ import annotations

import altair as alt

from ui import memory


def breakdown() -> alt.Chart:
    """Seconds per optimizer step by part, per candidate (dataset ``parts``: Candidate, Part, Seconds)."""
    return alt.Chart(alt.NamedData("parts")).mark_bar().encode(
        y=alt.Y("Candidate:N", sort=None),
        x=alt.X("Seconds:Q", stack=True, title="seconds per optimizer step"),
        # the parts' names are long ("ZeRO-3 parameter all-gather (forward)"): cut at the default 160 px, two
        # of them read the same
        color=alt.Color("Part:N", legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)),
        tooltip=["Candidate:N", "Part:N", alt.Tooltip("Seconds:Q", format=".3f")],
    )


def speed_memory() -> alt.LayerChart:
    """Throughput against GPU memory, fits or not (datasets ``candidates``: Candidate, gpu_peak_gib,
    tokens_per_second, step_seconds, Fits; ``limit``: gib, the GPU memory a row may use, headroom taken off)."""
    points = alt.Chart(alt.NamedData("candidates")).mark_circle(size=60).encode(
        x=alt.X("gpu_peak_gib:Q", title="GPU memory at peak (GiB)"),
        y=alt.Y("tokens_per_second:Q", title="tokens per second (cluster)"),
        color=alt.Color("Fits:N", scale=memory.FIT_COLORS),
        tooltip=["Candidate:N", alt.Tooltip("gpu_peak_gib:Q", format=".1f"),
                 alt.Tooltip("tokens_per_second:Q", format=",.0f"), alt.Tooltip("step_seconds:Q", format=".3f")],
    )
    # ~500 points: on a canvas rather than as 500 SVG elements the browser creates, styles and lays out
    return (points + alt.Chart(alt.NamedData("limit")).mark_rule(strokeDash=[4, 4]).encode(x="gib:Q")).properties(
        usermeta={"embedOptions": {"renderer": "canvas"}})


def time_and_cost() -> alt.Chart:
    """Training hours and cost against the GPU count (dataset ``sweep``: total_gpus, stage, micro_batch, Metric,
    Value), one row of the facet per metric."""
    return alt.Chart(alt.NamedData("sweep")).mark_line(point=True).encode(
        x=alt.X("total_gpus:Q", scale=alt.Scale(type="log"), title="GPUs"), y=alt.Y("Value:Q", title=None),
        row=alt.Row("Metric:N", title=None),
        tooltip=["total_gpus:Q", "stage:Q", "micro_batch:Q", alt.Tooltip("Value:Q", format=",.1f")],
    ).resolve_scale(y="independent").properties(height=160)
