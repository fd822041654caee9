"""Helpers for the app's AppTest modules (this module has no tests of its own)."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def app(config: dict | None = None, page: str | None = None, **context) -> AppTest:
    """A fresh session of the app, optionally seeded with a config and context values, on ``page``."""
    at = AppTest.from_file(APP, default_timeout=30)
    if config is not None:
        at.session_state["config"] = config
    at.run()
    if context:
        at.session_state["context"].update(context)
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> list[str]:
    """The text values of a list of elements."""
    return [e.value for e in elements]


def click_fix(at: AppTest, startswith: str = "Fix:") -> None:
    """Click the first one-click fix button whose label starts with ``startswith``."""
    next(b for b in at.button if b.label.startswith(startswith)).click().run()
    assert not at.exception, at.exception


def sidebar_findings(at: AppTest) -> list[tuple[str, str | None]]:
    """The findings the sidebar lists: (text, the help of the "Fix on …" link after it or None)."""
    out: list[tuple[str, str | None]] = []
    for element in at.sidebar:
        kind = type(element).__name__
        if kind == "Markdown" and element.value.startswith(("🛑", "⚠️")):
            out.append((element.value, None))
        elif kind == "PageLink" and out and element.proto.label.startswith("Fix on"):
            out[-1] = (out[-1][0], f"{element.proto.label} | {element.proto.help}")
    return out


def sidebar_text(at: AppTest) -> str:
    """All finding texts of the sidebar, joined."""
    return "\n".join(text for text, _ in sidebar_findings(at))


class _TableReader(HTMLParser):
    """The header and body rows of every ``<table>`` in a piece of HTML, as the cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_tables(at: AppTest) -> list[pd.DataFrame]:
    """The tables ``ui.tables.small_table`` drew (``st.html``), each cell as the text the user reads."""
    frames = []
    for element in at.html:
        reader = _TableReader()
        reader.feed(element.value)
        frames += [pd.DataFrame(rows[1:], columns=rows[0]) for rows in reader.tables]
    return frames


def shown_tables(at: AppTest) -> list[pd.DataFrame]:
    """Every table on the page (the HTML tables of ``ui.tables``, ``st.table`` and ``st.dataframe`` grids alike)
    as the user reads it, with the columns whose every cell is a number as written ("1,234.5") turned back into
    numbers."""
    frames = []
    for value in [*html_tables(at), *(e.value for e in [*at.table, *at.dataframe])]:
        frame = value.copy()
        for column in frame.columns:
            if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column]):
                numbers = pd.to_numeric(frame[column].astype(str).str.replace(",", "", regex=False), errors="coerce")
                if numbers.notna().all():
                    frame[column] = numbers
        frames.append(frame)
    return frames


def vega_charts(at) -> list[tuple[dict, dict[str, pd.DataFrame]]]:
    """(spec, datasets by name) of every vega-lite chart on the page, as the browser receives them."""
    out, stack = [], [at._tree]
    while stack:
        node = stack.pop()
        if isinstance(getattr(node, "children", None), dict):
            stack.extend(node.children.values())
        if getattr(node, "type", None) == "vega_lite_chart":
            proto = node.proto
            frames = {d.name: pa.ipc.open_stream(io.BytesIO(d.data.data)).read_all().to_pandas()
                      for d in proto.datasets}
            out.append((json.loads(proto.spec), frames))
    return out
