"""What keeps reruns cheap, and that it changes nothing the user sees: chart specs built once per shape (``ui.charts``),
Advanced sections the config does not use drawn only while open."""

from __future__ import annotations

import io
import json

import altair as alt
import pandas as pd
import pyarrow as pa
from test_app_support import app

from core.models import get_config, get_spec
from ui import charts, zero_charts
from ui.widgets import widget_key

SPEC = get_spec("meta-llama/Llama-2-7b-hf")
MODEL = {"model": "meta-llama/Llama-2-7b-hf", "total_params": SPEC.total_params,
         "largest_layer_params": SPEC.largest_layer_params, "model_config": get_config("meta-llama/Llama-2-7b-hf")}

BUILDS: list[int] = []


def counted_bars(height: int) -> alt.Chart:
    BUILDS.append(height)
    return alt.Chart(alt.NamedData("rows")).mark_bar().encode(x="a:Q", y="b:N").properties(height=height)


def test_spec_is_built_once_per_settings_and_filled_with_each_calls_rows():
    first = charts.spec(counted_bars, {"rows": pd.DataFrame({"a": [1], "b": ["x"]})}, height=100)
    second = charts.spec(counted_bars, {"rows": pd.DataFrame({"a": [2, 3], "b": ["y", "z"]})}, height=100)
    other = charts.spec(counted_bars, {"rows": pd.DataFrame({"a": [4], "b": ["w"]})}, height=200)
    assert BUILDS == [100, 200]
    assert list(first["datasets"]["rows"]["a"]) == [1]
    assert list(second["datasets"]["rows"]["a"]) == [2, 3]
    assert first["height"] == second["height"] == 100 and other["height"] == 200
    # the caller may edit what it got (Streamlit does) without reaching the cached template
    first["height"] = 5
    first["mark"]["type"] = "line"
    again = charts.spec(counted_bars, {"rows": pd.DataFrame({"a": [1], "b": ["x"]})}, height=100)
    assert again["height"] == 100 and again["mark"] == {"type": "bar"}


def named_data(spec: dict) -> set[str]:
    """Every dataset name a spec's layers read."""
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("data"), dict) and "name" in node["data"]:
                found.add(node["data"]["name"])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(spec)
    return found


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


def test_zero_page_charts_carry_the_current_rows_after_a_stage_flip():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}, page="pages/zero.py", **MODEL)
    drawn = vega_charts(at)
    assert len(drawn) == 4
    for spec, frames in drawn:
        assert named_data(spec) <= set(frames), "a layer reads a dataset the chart does not send"
        assert all(len(frame) for frame in frames.values()), "an empty dataset draws an empty chart"
    figures = [frames["figure"] for _, frames in drawn if "figure" in frames]
    assert sorted(figures[0].loc[figures[0]["current"], "stage"].unique()) == [1]

    at.selectbox(key=widget_key("zero_optimization.stage")).set_value(3).run()
    drawn = vega_charts(at)
    figure = next(frames["figure"] for _, frames in drawn if "figure" in frames)
    assert sorted(figure.loc[figure["current"], "stage"].unique()) == [3]
    totals = next(frames["totals"] for _, frames in drawn if "totals" in frames)
    assert list(totals.loc[totals["current"], "option"]) == ["ZeRO-3"]
    capacity = {float(frames[zero_charts.CAPACITY]["capacity"].iloc[0]) for _, frames in drawn
                if zero_charts.CAPACITY in frames}
    assert capacity == {float(at.session_state["context"]["gpu_memory_gib"])}


def test_advanced_draws_an_unused_section_only_while_it_is_open():
    at = app({"train_micro_batch_size_per_gpu": 1, "activation_checkpointing": {"partition_activations": True}},
             page="pages/advanced.py")
    keys = {w.key for w in (*at.checkbox, *at.number_input, *at.selectbox, *at.text_area)}
    # a section the config sets is drawn though collapsed; one it does not use is not, until opened
    assert widget_key("activation_checkpointing.cpu_checkpointing") in keys
    assert widget_key("compile.deepcompile") not in keys
    at.session_state["advanced_section:compile"] = True  # what opening the expander does
    at.run()
    at.checkbox(key=widget_key("compile.deepcompile")).check().run()
    assert at.session_state["config"]["compile"] == {"deepcompile": True}
    # now set, the section stays drawn after it is closed, with its value
    at.session_state["advanced_section:compile"] = False
    at.run()
    assert at.checkbox(key=widget_key("compile.deepcompile")).value is True
    assert "`compile` (set)" in [e.label for e in at.expander]


def test_one_size_limit_for_upload_paste_server_and_cli_said_before_trying():
    import tomllib

    from test_app_support import ROOT

    from core.io import MAX_CONFIG_BYTES, MAX_CONFIG_MB, ConfigLoadError, load_config

    server = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["maxUploadSize"] == MAX_CONFIG_MB and MAX_CONFIG_BYTES == MAX_CONFIG_MB * 1024 * 1024
    at = app(page="pages/start.py")
    at.radio(key="start_source").set_value("Upload or paste").run()
    paste = at.text_area(key="start_paste")
    assert paste.proto.max_chars == MAX_CONFIG_BYTES  # the browser stops the text there: never sent or parsed
    assert f"up to {MAX_CONFIG_MB} MB" in paste.label
    upload = at.get("file_uploader")[0]
    assert upload.proto.max_upload_size_mb == MAX_CONFIG_MB and f"up to {MAX_CONFIG_MB} MB" in upload.proto.label
    try:
        load_config(b"{}" + b" " * MAX_CONFIG_BYTES)
    except ConfigLoadError as exc:
        assert f"the limit is {MAX_CONFIG_MB} MB" in str(exc)
    else:
        raise AssertionError("an over-limit config was parsed")
