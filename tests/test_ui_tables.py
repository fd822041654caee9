"""``ui.tables``: a small table drawn from rows reads exactly as the same rows drawn through a pandas frame."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ui import tables

_CELLS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_infinity=False),
                   st.text(max_size=8))
_KEYS = st.sampled_from(["a", "b", "c", "<d>", "Ä"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _CELLS, max_size=5), max_size=6), st.sampled_from([None, ".2f", ".3e"]))
def test_rows_give_the_html_of_their_frame(rows, spec):
    """Columns in first-seen order, a key a row lacks and NaN both a dash, numbers right-aligned and formatted,
    text escaped: the HTML of the same cells in a pandas frame (the pages drew frames before; an object frame,
    since pandas would turn a column of ints with a gap into floats)."""
    formats = {"a": spec} if spec else None
    columns = list(pd.DataFrame(rows).columns)
    frame = pd.DataFrame([[row.get(k) for k in columns] for row in rows], columns=columns, dtype=object)
    assert tables.table_html(rows, formats) == tables.table_html(frame, formats)


def test_an_int_column_with_a_gap_keeps_its_ints():
    html = tables.table_html([{"a": 3}, {}])
    assert '<td class="n">3</td>' in html and "<td>—</td>" in html and "3.0" not in html


def test_columns_choose_order_and_rename_and_may_repeat_a_heading():
    rows = [{"key": "zero.stage", "left": "2", "right": "3", "extra": "x"}]
    html = tables.table_html(rows, columns={"key": "Key", "left": "same", "right": "same"})
    assert "<th>Key</th><th>same</th><th>same</th>" in html
    assert "<td>zero.stage</td><td>2</td><td>3</td>" in html and "extra" not in html
    html = tables.table_html([{"b": 1}], columns=["a", "b"])
    assert "<th>a</th><th>b</th>" in html and '<td>—</td><td class="n">1</td>' in html


@pytest.mark.parametrize("value", [None, math.nan, float("nan"), pd.NA, pd.NaT])
def test_missing_values_read_as_a_dash(value):
    assert "<td>—</td>" in tables.table_html([{"x": value}])


def test_long_rows_become_a_data_grid_with_the_chosen_headings():
    rows = [{"k": i, "v": i * 0.5} for i in range(tables.MAX_HTML_ROWS + 1)]
    table = tables.prepare(rows, {"V": ".1f"}, columns={"k": "K", "v": "V"})
    assert table.html is None and list(table.frame.columns) == ["K", "V"]
    assert table.frame["V"].iloc[-1] == rows[-1]["v"] and table.formats == (("V", ".1f"),)
    assert tables.prepare(rows[:3]).html is not None


def test_a_page_carries_the_table_style_once_and_its_tables_none():
    """The ZeRO page draws five tables; their look is one style element per page (``frame.end``), so a table a
    rerun redraws brings no style sheet of its own."""
    import json

    from app_support import ROOT, app

    from core.models import get_spec

    spec = get_spec("meta-llama/Llama-2-7b-hf")
    preset = json.loads((ROOT / "presets" / "zero2-bf16.json").read_text())["config"]
    at = app(preset, page="pages/zero.py", model="meta-llama/Llama-2-7b-hf", total_params=spec.total_params,
             largest_layer_params=spec.largest_layer_params)
    assert not at.exception
    values = [element.value for element in at.html]
    table_elements = [v for v in values if f'class="{tables.TABLE_CLASS}"' in v]
    assert len(table_elements) >= 4 and not any("<style" in v for v in table_elements)
    assert [v for v in values if f"table.{tables.TABLE_CLASS}" in v] == [tables._STYLE]
