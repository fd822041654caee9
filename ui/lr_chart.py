"""The Optimizer page's learning-rate (and momentum) curve as a ``ui.charts`` builder."""

from __future__ import annotations

import altair as alt


def lr_curve(with_momentum: bool) -> alt.Chart:
    """The schedule against the optimizer step (dataset ``curve``: step, series, value); one facet row per
    series when the schedule also cycles the momentum."""
    return alt.Chart(alt.NamedData("curve")).mark_line().encode(
        x=alt.X("step:Q", title="optimizer step"), y=alt.Y("value:Q", title=None),
        color=alt.Color("series:N", title=None),
        row=alt.Row("series:N", title=None) if with_momentum else alt.Undefined,
        tooltip=["step:Q", "series:N", alt.Tooltip("value:Q", format=".3e")],
    ).properties(height=220)
