"""The Optimizer page's learning-rate (and momentum) curve as a ``ui.charts`` builder."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from core import lr_schedules
from ui.shared_cache import ConfigKey, config_key, shared_cache

#: The chart is ~700 px wide: 100 buckets of (first, last, lowest, highest, sharpest change) points draw the line every
#: step draws. The browser's cost grows with the points (vega evaluates each one's encodings and tooltip; 2,000
#: points were most of the Optimizer page's switch time, BENCHMARKS.md, issue 15).
BUCKETS = 100


def lr_curve(with_momentum: bool) -> alt.Chart:
    """The schedule against the optimizer step (dataset ``curve``: step, series, value); one facet row per
    series when the schedule also cycles the momentum."""
    return alt.Chart(alt.NamedData("curve")).mark_line().encode(
        x=alt.X("step:Q", title="optimizer step"),
        # the learning rate alone: in the table's notation (2e-05, not 0.000020); with the momentum, one row each
        y=alt.Y("value:Q", title=None) if with_momentum else alt.Y("value:Q", title="learning rate",
                                                                    axis=alt.Axis(format=".2~e")),
        color=alt.Color("series:N", title=None),
        row=alt.Row("series:N", title=None) if with_momentum else alt.Undefined,
        tooltip=["step:Q", "series:N", alt.Tooltip("value:Q", format=".3e")],
    ).properties(height=220)


def decimate(curve: pd.DataFrame, series: list[str], buckets: int = BUCKETS) -> pd.DataFrame:
    """The rows of ``curve`` a line chart needs: in each of ``buckets`` runs of consecutive steps, the first and
    last row, the rows of each ``series``' lowest and highest value and both sides of its sharpest change (so
    peaks, drops and the ends survive)."""
    if len(curve) <= 4 * buckets:
        return curve
    bucket = np.arange(len(curve)) * buckets // len(curve)
    keep = np.zeros(len(curve), dtype=bool)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    keep[starts] = True
    keep[np.r_[starts[1:] - 1, len(curve) - 1]] = True
    for name in series:
        values = curve[name].to_numpy()
        grouped = pd.Series(values).groupby(bucket)  # index = row position
        keep[grouped.idxmin().to_numpy()] = True
        keep[grouped.idxmax().to_numpy()] = True
        # the sharpest change in each bucket, both sides of it (a step schedule's drop stays a drop)
        jump = pd.Series(np.abs(np.diff(values, prepend=values[0]))).groupby(bucket).idxmax().to_numpy()
        keep[jump] = keep[np.maximum(jump - 1, 0)] = True
    return curve[keep]


def schedule_curve(config: Mapping[str, Any], steps: int, version: str = "0.19.8") -> pd.DataFrame:
    """``core.lr_schedules.config_schedule_curve`` of ``config`` (a copy, attrs included), computed once per
    distinct (config, steps, release) in the process: stepping the schedule through every step was about half of
    the Optimizer page's rerun, repeated when nothing it depends on had changed. Raises what it raises."""
    return _curve(config_key(config), steps, version).copy()


@shared_cache(maxsize=64)
def _curve(config: ConfigKey, steps: int, version: str) -> pd.DataFrame:
    return lr_schedules.config_schedule_curve(json.loads(config.text), steps, version)
