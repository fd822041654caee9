"""What keeps reruns cheap, and that it changes nothing the user sees: chart specs built once per shape (``ui.charts``),
Advanced sections the config does not use drawn only while open."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import pytest
from app_support import ROOT, app, shown_tables, vega_charts

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


def test_zero_page_charts_carry_the_current_rows_after_a_stage_flip():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}, page="pages/zero.py", **MODEL)
    # the chart of every option repeats the table above it: drawn only once its expander is opened
    assert len(vega_charts(at)) == 3 and not any("totals" in frames for _, frames in vega_charts(at))
    at.session_state["zero_options_chart"] = True  # what opening the expander does
    at.run()
    drawn = vega_charts(at)
    assert len(drawn) == 4
    for spec, frames in drawn:
        assert named_data(spec) <= set(frames), "a layer reads a dataset the chart does not send"
        assert all(len(frame) for frame in frames.values()), "an empty dataset draws an empty chart"
    figures = [frames["figure"] for _, frames in drawn if "figure" in frames]
    assert sorted(figures[0].loc[figures[0]["current"], "stage"].unique()) == [1]

    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()
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

    from app_support import ROOT

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


# ------------------------------------------------------------------ a config at the size limit

def limit_config() -> dict:
    """A config just under the size limit made of tens of thousands of unknown top-level keys."""
    from core.io import MAX_CONFIG_BYTES

    config: dict = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}}
    entry = len('"k000000": 0, ')  # bytes per filler key in the JSON (about; the values grow to 5 digits)
    config.update({f"k{i:06d}": i for i in range((MAX_CONFIG_BYTES - 30_000) // (entry + 4))})
    assert MAX_CONFIG_BYTES * 0.95 < len(json.dumps(config)) <= MAX_CONFIG_BYTES
    return config


def test_every_page_draws_a_config_at_the_size_limit_with_huge_parts_summarised():
    from ui import app_state

    config = limit_config()
    at = app(config)
    at.default_timeout = 120
    for page in app_state.PAGES.values():
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    at.switch_page("pages/review.py").run()
    unknown = [e.value for e in at.warning if "keys.unknown-top-level" in e.value]
    assert len(unknown) == 21  # 20 drawn, then one line for the rest
    assert "more **keys.unknown-top-level** findings" in unknown[-1] and f"{len(config) - 1 - 20:,}" in unknown[-1]
    # the misspelt section is still found among them, with its did-you-mean
    assert any("zero_optimisation" in e.value and "zero_optimization" in e.value for e in at.warning)
    assert any("characters of" in c.value and "the download holds all of it" in c.value for c in at.caption)
    at.switch_page("pages/advanced.py").run()
    assert any("unknown keys are shown; all of them are kept" in c.value for c in at.caption)
    assert at.session_state["config"] == config  # nothing the user gave is lost


def test_works_with_gives_the_same_verdicts_without_the_keys_no_release_reads():
    from core import validate
    from core.io import ConfigLoadError, load_config
    from core.versions import RELEASES
    from core.versions.matrix import _without_ignored_everywhere, works_with

    releases = (RELEASES[0], RELEASES[len(RELEASES) // 2], RELEASES[-1])
    corpus = sorted((ROOT.parent / "shared" / "corpus").rglob("*.json"))[:40]
    configs = []
    for path in corpus:
        try:
            configs.append(load_config(path.read_bytes()))
        except ConfigLoadError:
            continue
    configs += [dict(c, **{f"team_key_{i}": i for i in range(30)}, bf16={"enabled": "yes"}) for c in configs[:10]]
    assert len(configs) >= 20
    for config in configs:
        got = works_with(config, world_size=8, releases=releases)
        for verdict, version in zip(got.verdicts, releases, strict=True):
            errors = validate(config, world_size=8, version=version).errors
            assert verdict.ok == (not errors)
            if errors:
                assert (verdict.code, verdict.path) == (errors[0].code, errors[0].path)
    assert len(_without_ignored_everywhere(limit_config())) == 2


def test_did_you_mean_for_the_first_unknown_keys_of_a_section_only():
    from core import validate
    from core.rules.fixes import MAX_SUGGESTED_PER_SECTION

    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 1}}
    config |= {f"x{i}": i for i in range(MAX_SUGGESTED_PER_SECTION)}
    config["gradient_clippin"] = 1.0  # past the cap: still reported, without a guess
    found = {f.path: f for f in validate(config).findings if f.code == "keys.unknown-top-level"}
    assert len(found) == MAX_SUGGESTED_PER_SECTION + 2
    assert "zero_optimization" in found["zero_optimisation"].suggestion
    assert "Did you mean" not in found["gradient_clippin"].suggestion
    alone = validate({"train_micro_batch_size_per_gpu": 1, "gradient_clippin": 1.0}).findings
    assert "Did you mean `gradient_clipping`" in next(f for f in alone if f.path == "gradient_clippin").suggestion


def test_validation_runs_once_per_distinct_input_in_a_session(monkeypatch):
    import core

    calls = []
    real = core.validate
    monkeypatch.setattr(core, "validate", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = app({"train_micro_batch_size_per_gpu": 1}, page="pages/batch.py")
    before = len(calls)
    at.run()
    at.switch_page("pages/precision.py").run()
    assert len(calls) == before  # same config, context: the memo answers (sidebar, headline and page)
    at.session_state["config"] = {"train_micro_batch_size_per_gpu": 2}
    at.run()
    assert len(calls) == before + 1


def test_plan_page_charts_carry_the_ranked_rows():
    at = app(page="pages/plan.py")
    at.number_input(key="plan_nodes").set_value(2).run()
    # the chart of every candidate is drawn once its expander is opened
    assert not any("candidates" in frames for _, frames in vega_charts(at))
    at.session_state["plan_speed_chart"] = True
    at.run()
    drawn = vega_charts(at)
    assert len(drawn) == 3
    for spec, frames in drawn:
        assert named_data(spec) <= set(frames), "a layer reads a dataset the chart does not send"
        assert all(len(frame) for frame in frames.values()), "an empty dataset draws an empty chart"
    ranked = next(d for d in shown_tables(at) if "Rank" in d.columns)
    parts = next(frames["parts"] for _, frames in drawn if "parts" in frames)
    # the breakdown's bars add up to each shown candidate's step time, in rank order
    per_candidate = parts.groupby("Candidate", sort=False)["Seconds"].sum()
    assert list(per_candidate.round(3)) == list(ranked["Step s"].head(10))
    candidates = next(frames["candidates"] for _, frames in drawn if "candidates" in frames)
    assert set(candidates["Fits"]) <= {"fits", "does not fit"} and "fits" in set(candidates["Fits"])
    sweep = next(frames["sweep"] for _, frames in drawn if "sweep" in frames)
    assert set(sweep["Metric"]) == {"training hours", "cost (USD)"}
    # the chosen row's ds_config is drawn once its expander is opened
    assert not at.json
    at.session_state["plan_config_box"] = True
    at.run()
    assert json.loads(at.json[0].value)["zero_optimization"]["stage"] == ranked["Stage"].iloc[0]


def test_lr_curve_is_drawn_from_fewer_points_with_its_peaks_and_ends():
    import numpy as np

    from ui import lr_chart

    steps = np.arange(5000)
    lr = np.where(steps < 137, steps / 137 * 2e-3, 2e-3 * (1 - (steps - 137) / 4863))
    lr[2613:] *= 0.5  # a step down inside a bucket
    curve = pd.DataFrame({"step": steps, "lr": lr, "momentum": 0.9 - 0.05 * np.sin(steps / 40)})
    shown = lr_chart.decimate(curve, ["lr", "momentum"])
    assert len(shown) <= 6 * 2 * lr_chart.BUCKETS < len(curve)
    assert shown.equals(curve.loc[shown.index])  # rows of the curve, unchanged
    for name in ("lr", "momentum"):
        assert shown[name].max() == curve[name].max() and shown[name].min() == curve[name].min()
    assert {0, 137, 2612, 2613, 4999} <= set(shown["step"])  # start, warm-up peak, both sides of the drop, end
    short = curve.head(300)
    assert lr_chart.decimate(short, ["lr"]) is short


def test_release_verdicts_are_computed_once_per_distinct_input_in_a_session(monkeypatch):
    from ui import app_state

    calls = []
    real = app_state.works_with
    monkeypatch.setattr(app_state, "works_with", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = app({"train_micro_batch_size_per_gpu": 1}, page="pages/review.py")
    assert len(calls) == 1
    at.radio(key="review_variant").set_value("Only what differs from defaults").run()
    assert len(calls) == 1  # a rerun for another widget: the 36 validations are not repeated
    before = next(m.value for m in at.markdown if m.value.startswith("**Works with releases:**"))
    at.session_state["config"] = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                  "zero_optimization": {"stage": 3, "zeropp_loco_param": {"err_beta": 0.8}}}
    at.run()
    assert len(calls) == 2
    after = next(m.value for m in at.markdown if m.value.startswith("**Works with releases:**"))
    assert after != before  # the verdicts follow the config


def test_every_option_replaces_only_the_zero_section_as_core_does():
    from core import memory as core_memory
    from ui import memory

    configs = [{}, {"zero_optimization": 5}, {"zero_optimization": {"offload_optimizer": "x"}},
               {"zero_optimization": {"stage": 3, "cpu_offload": True, "offload_param": {"device": "cpu", "pin_memory":
                True}}, "bf16": {"enabled": True}, "k": [1, {"a": 2}]}]
    for config in configs:
        for option in core_memory.zero_options():
            assert memory._with_zero_option(config, *option) == core_memory.with_zero_option(config, *option)


def test_a_stage_flip_keeps_every_zero_chart_spec_and_only_swaps_rows():
    # the browser builds a vega view anew whenever a chart's spec changes, and only updates its data when just the
    # rows change (BENCHMARKS.md, issue 15, fifth pass): the peak chart's height came from its row count, which
    # differs between ZeRO-2 and ZeRO-3, so every flip rebuilt it
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}, page="pages/zero.py", **MODEL)
    before = vega_charts(at)
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()
    after = vega_charts(at)
    assert [spec for spec, _ in before] == [spec for spec, _ in after]
    peak = [(frames["peak"], spec) for spec, frames in before + after if "peak" in frames]
    assert len(peak) == 2 and len(peak[0][0]) != len(peak[1][0]), "the flip should change the number of components"
    assert peak[0][1]["height"] == {"step": zero_charts.PEAK_BAR_PX}


@pytest.mark.parametrize(("section", "code"), [
    ({"optimizer": {"type": "AdamW", "params": {}}}, "optimizer.unknown-param"),
    ({"optimizer": {"type": "SGD", "params": {"lr": 0.1}}}, "optimizer.unknown-param"),
    ({"scheduler": {"type": "WarmupLR", "params": {}}}, "scheduler.unknown-param"),
    ({"scheduler": {"type": "StepLR", "params": {"step_size": 1}}}, "scheduler.unknown-param"),
])
def test_no_did_you_mean_past_the_cap_for_optimizer_and_scheduler_params(section, code):
    """20,000 unknown AdamW params took `dsconfig versions` 40 s: a fuzzy match per param per release. A handful of
    misspellings still get a guess; past MAX_SUGGESTED_PER_SECTION unknown params none does (as for a section)."""
    from core import validate
    from core.rules.fixes import MAX_SUGGESTED_PER_SECTION

    name = next(iter(section))
    few = {name: {**section[name], "params": {**section[name]["params"], "weight_decayy": 0.1, "warmup_num_stepz": 1,
                                                           "gamme": 0.5}}}
    guessed = [f for f in validate({"train_micro_batch_size_per_gpu": 1, **few}).findings if f.code == code]
    assert guessed and any("Did you mean" in f.suggestion for f in guessed)
    many = {name: {**few[name], "params": {**few[name]["params"],
                                            **{f"x{i}": i for i in range(MAX_SUGGESTED_PER_SECTION)}}}}
    found = [f for f in validate({"train_micro_batch_size_per_gpu": 1, **many}).findings if f.code == code]
    assert len(found) >= MAX_SUGGESTED_PER_SECTION + 1 and not any("Did you mean" in f.suggestion for f in found)
