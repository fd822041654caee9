"""Small read-only tables drawn as plain HTML (``st.table``) instead of the interactive data grid.

``st.dataframe`` loads and draws a canvas data grid that measures, resizes and redraws itself: measured in
headless Chromium, a five-row grid kept the Batch page changing for about 300 ms more than the same rows as an
HTML table (BENCHMARKS.md, issue 15). Tables of a few dozen rows that are read, not sorted or searched, use this.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

#: Above this many rows a table is a data grid (scrolls, sorts, searches) rather than a page-long HTML table.
MAX_HTML_ROWS = 40


def small_table(frame: pd.DataFrame, formats: Mapping[str, str] | None = None) -> None:
    """Draw ``frame`` without its index; ``formats`` maps a column to a format spec (e.g. ``".1f"``) for how
    its numbers are shown (st.table would show every float with four decimals)."""
    if len(frame) > MAX_HTML_ROWS:
        st.dataframe(frame, hide_index=True, column_config={
            column: st.column_config.NumberColumn(format=f"%{spec}") for column, spec in (formats or {}).items()
            if column in frame.columns})
        return
    shown = frame
    present = {c: spec for c, spec in (formats or {}).items() if c in frame.columns}
    if present:
        # plain strings: pandas' Styler would do the same but costs ~3 ms a table in Streamlit's marshalling
        shown = frame.copy()
        for column, spec in present.items():
            shown[column] = ["—" if pd.isna(value) else format(value, spec) for value in frame[column]]
    st.table(shown, hide_index=True)
