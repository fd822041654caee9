"""Charts whose altair spec is built once per shape and refilled with new rows on every rerun.

Building an altair chart validates every encoding and the whole spec against the vega-lite JSON Schema; on the
ZeRO page that was about half of a rerun's server time, repeated on every click although only the rows change.
Here a chart is drawn from named datasets (``alt.NamedData``): the spec for a (chart, settings) pair is built
and validated once per process, then each rerun sends that spec with its current data frames. Streamlit turns
the named datasets into Arrow as it does for ``st.altair_chart``; the browser gets the same chart.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
from streamlit import dataframe_util

#: A builder returns an altair chart whose layers read named datasets; its keyword arguments are the
#: settings that change the spec's shape (titles, heights, colour domains), never the rows.
Builder = Callable[..., alt.TopLevelMixin]


@st.cache_resource(show_spinner=False, max_entries=512)
def _spec_template(name: str, _builder: Builder, settings: tuple[tuple[str, Hashable], ...]) -> str:
    # ``name`` and ``settings`` are the cache key; the builder itself is looked up through ``name``. Kept as
    # JSON: parsing it is ~50x cheaper than a deep copy of the dict, and each caller gets its own.
    return json.dumps(_builder(**dict(settings)).to_dict())


#: A chart's rows: a frame, or the Arrow bytes ``arrow`` made of one (Streamlit sends bytes as they are).
Rows = pd.DataFrame | bytes


def arrow(frame: pd.DataFrame) -> bytes:
    """``frame`` as the Arrow bytes Streamlit would send for it (its own conversion). A page whose rows come from a
    cache converts them there, once, instead of on every rerun: the conversion was a tenth of a ZeRO-page rerun."""
    return dataframe_util.convert_anything_to_arrow_bytes(frame)


def spec(builder: Builder, datasets: Mapping[str, Rows], **settings: Hashable) -> dict[str, Any]:
    """The vega-lite spec of ``builder(**settings)`` with ``datasets`` as its named data (a fresh dict)."""
    name = f"{builder.__module__}.{builder.__qualname__}"
    template = _spec_template(name, builder, tuple(sorted(settings.items())))
    filled = json.loads(template)  # Streamlit edits the spec it is given; the cached one stays clean
    filled["datasets"] = dict(datasets)
    return filled


def draw(builder: Builder, datasets: Mapping[str, Rows], **settings: Hashable) -> None:
    """Draw ``builder``'s chart with ``datasets`` at the container's width."""
    st.vega_lite_chart(spec=spec(builder, datasets, **settings), width="stretch")


@contextlib.contextmanager
def on_demand(label: str, key: str) -> Iterator[bool]:
    """A collapsed expander whose chart is drawn only while it is open; yields whether it is.

    For a chart that repeats a table beside it: every vega-lite view costs the browser a chart compile and
    draw on each page switch and an update on each change (measured in BENCHMARKS.md, issue 15), so one that
    nobody opened should cost nothing. Opening it reruns the page (a tracked expander) and draws it."""
    with st.expander(label, icon=":material/bar_chart:", key=key, on_change="rerun") as box:
        yield box.open
