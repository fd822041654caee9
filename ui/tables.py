"""Small read-only tables drawn as one static HTML element instead of a data grid or ``st.table``.

``st.dataframe`` loads and draws a canvas data grid that measures, resizes and redraws itself, and ``st.table``
renders every cell as its own Markdown component (Streamlit parses each cell as Markdown): measured in headless
Chromium, the Plan page's 20 × 15 ranking alone cost the browser more than the rest of the page. A table here
is one ``st.html`` element, a plain ``<table>`` that the browser lays out once (BENCHMARKS.md, issue 15).
Tables of a few dozen rows that are read, not sorted or searched, use this; longer ones stay a data grid.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

#: Above this many rows a table is a data grid (scrolls, sorts, searches) rather than a page-long HTML table.
MAX_HTML_ROWS = 40
#: Marks the tables this module draws (tests read them back with ``TABLE_CLASS``).
TABLE_CLASS = "ds-table"
#: The look of ``st.table`` (theme colours through Streamlit's CSS variables where it has them).
_STYLE = (f"<style>div.{TABLE_CLASS}-wrap{{overflow-x:auto;margin-bottom:1rem}}"
          f"table.{TABLE_CLASS}{{border-collapse:collapse;font-size:0.875rem;width:100%}}"
          f"table.{TABLE_CLASS} th,table.{TABLE_CLASS} td{{border:1px solid rgba(49,51,63,0.1);"
          "padding:0.25rem 0.375rem;text-align:left;vertical-align:top}"
          f"table.{TABLE_CLASS} th{{font-weight:400;color:rgba(49,51,63,0.6)}}"
          f"table.{TABLE_CLASS} td.n{{text-align:right;font-variant-numeric:tabular-nums}}</style>")


_NUMBER_CELL = '<td class="n">'


#: What a small table is drawn from: a frame, or its rows as mappings (column → value; no pandas on the way).
Rows = Sequence[Mapping[str, object]]


def _missing(value: object) -> bool:
    """None, NaN, ``pd.NA`` or ``NaT``: a cell shown as a dash."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str | bool | int) or not pd.api.types.is_scalar(value):
        return False
    return bool(pd.isna(value))


def _cell(value: object, spec: str | None) -> tuple[str, bool]:
    """The text of one cell and whether it is a number (right-aligned)."""
    if _missing(value):
        return "—", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, numbers.Number):
        return format(value, spec) if spec else str(value), True
    return str(value), False


#: The columns of rows to show: keys in order, or key → heading (headings may repeat; a frame's may too).
Columns = Sequence[str] | Mapping[str, str]


def _grid(rows: Rows, columns: Columns | None) -> tuple[list[str], list[list[object]]]:
    """The headings and the cell values (row by row) that ``rows`` show: ``columns`` in order, or every key in
    the order first seen, as pandas would name them; a key a row lacks is None."""
    keys = list(columns) if columns is not None else list(dict.fromkeys(key for row in rows for key in row))
    headings = [columns[k] for k in keys] if isinstance(columns, Mapping) else keys
    return headings, [[row.get(key) for key in keys] for row in rows]


def table_html(data: pd.DataFrame | Rows, formats: Mapping[str, str] | None = None,
               columns: Columns | None = None) -> str:
    """``data`` (a frame without its index, or rows) as an HTML table; ``formats`` maps a column heading to a
    format spec (``".1f"``); ``columns`` chooses, orders and may rename the columns of rows (a key a row lacks
    shows a dash)."""
    formats = formats or {}
    if isinstance(data, pd.DataFrame):
        names = list(data.columns)
        values_by_row = data.astype(object).to_numpy().tolist()  # by position: column names may repeat
    else:
        names, values_by_row = _grid(data, columns)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in names)
    specs = [formats.get(c) for c in names]
    rows = []
    for values in values_by_row:
        cells = []
        for spec, value in zip(specs, values, strict=True):
            text, number = _cell(value, spec)
            cells.append((_NUMBER_CELL if number else "<td>") + html.escape(text) + "</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    body = "".join(rows)
    # in a box that scrolls sideways: a table wider than the page (the Plan ranking at 1280 px) stays inside it
    return (f"<div class=\"{TABLE_CLASS}-wrap\"><table class=\"{TABLE_CLASS}\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


@dataclass(frozen=True)
class Table:
    """A table ready to draw (``draw``): the HTML of a small one, or the frame of a long one and its formats.

    Preparing is the costly part (pandas and formatting); a page whose rows come from a cache keeps the prepared
    table there too, so a rerun with the same rows only sends it."""

    html: str | None
    frame: pd.DataFrame | None = None
    formats: tuple[tuple[str, str], ...] = ()


def prepare(data: pd.DataFrame | Rows, formats: Mapping[str, str] | None = None,
            columns: Columns | None = None) -> Table:
    """``data`` (a frame without its index, or rows) ready to draw; ``formats`` maps a column heading to a
    format spec (e.g. ``".1f"``), ``columns`` chooses, orders and may rename the columns of rows."""
    if len(data) > MAX_HTML_ROWS:
        frame = data if isinstance(data, pd.DataFrame) else _frame(data, columns)
        return Table(None, frame, tuple((formats or {}).items()))
    return Table(table_html(data, formats, columns))


def draw_style() -> None:
    """The tables' look, once per page (``ui.frame.end``): a table redrawn by a rerun then carries no style sheet
    of its own for the browser to sanitise and apply again."""
    st.html(_STYLE)


def _frame(rows: Rows, columns: Columns | None) -> pd.DataFrame:
    """``rows`` as a frame for the data grid, with the columns and headings ``table_html`` would show."""
    headings, values_by_row = _grid(rows, columns)
    return pd.DataFrame(values_by_row, columns=headings)


def draw(table: Table) -> None:
    """Draw a prepared table: one HTML element, or a data grid for a long one."""
    if table.html is not None:
        st.html(table.html)
        return
    st.dataframe(table.frame, hide_index=True, column_config={
        column: st.column_config.NumberColumn(format=f"%{spec}") for column, spec in table.formats
        if table.frame is not None and column in table.frame.columns})


def small_table(data: pd.DataFrame | Rows, formats: Mapping[str, str] | None = None,
                columns: Columns | None = None) -> None:
    """Draw ``data`` (a frame without its index, or rows as mappings); ``formats`` maps a column heading to a
    format spec (e.g. ``".1f"``) for how its numbers are shown, ``columns`` chooses, orders and may rename the
    columns of rows."""
    draw(prepare(data, formats, columns))
