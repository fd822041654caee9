"""The pages' in-process caches of prepared results (``ui.zero_view``, ``ui.perf``, ``ui.plan_view``, the ways to
fit of ``ui.headline``) never show a stale result: after each change, a session that was cached along the way shows
exactly what a fresh session opened on the same state shows with every cache emptied (tables, chart rows, metrics,
captions, alerts, buttons)."""

from __future__ import annotations

import copy
import json

from app_support import ROOT, app, shown_tables, vega_charts

from core.hardware import find_gpu
from core.models import get_config, get_spec
from ui import headline, memory, perf, plan_view, zero_view
from ui.widgets import widget_key

NAME = "meta-llama/Llama-2-7b-hf"
SPEC = get_spec(NAME)
MODEL = {"model": NAME, "total_params": SPEC.total_params, "largest_layer_params": SPEC.largest_layer_params,
         "model_config": get_config(NAME)}
PRESET = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]


def seen(at) -> dict:
    """Everything the page shows that comes from the caches, as plain values."""
    charts = [{name: frame.to_dict("list") for name, frame in sorted(frames.items())} for _, frames in vega_charts(at)]
    return {"tables": [frame.to_dict("list") for frame in shown_tables(at)],
            "charts": sorted(charts, key=lambda c: json.dumps(c, sort_keys=True, default=str)),
            "metrics": [(m.label, m.value, m.proto.delta) for m in at.metric],
            "captions": [c.value for c in at.caption], "subheaders": [s.value for s in at.subheader],
            "notes": [e.value for e in (*at.info, *at.error, *at.success)],
            "markdown": [m.value for m in at.markdown], "buttons": [(b.label, b.proto.help) for b in at.button]}


PLAN_WIDGETS = ("plan_model", "plan_gpu", "plan_gpn", "plan_nodes", "plan_tokens", "plan_price", "plan_seq",
                "plan_speed_chart")


def clear_caches() -> None:
    """Empty every in-process cache of the app's modules (they are shared by all sessions of a process)."""
    for module in (headline, memory, perf, plan_view, zero_view):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                value.cache_clear()


def fresh(at, page: str) -> dict:
    """What a new session opened on ``at``'s config, context and page shows, computed without the caches."""
    clear_caches()
    other = app(copy.deepcopy(at.session_state["config"]), page=page,
                **copy.deepcopy(dict(at.session_state["context"])))
    for key in ("zero_sweep_axis", *PLAN_WIDGETS):
        if key in at.session_state:
            other.session_state[key] = at.session_state[key]
    other.run()
    return seen(other)


def test_zero_page_after_each_change_shows_what_a_fresh_session_shows():
    page = "pages/zero.py"
    at = app(copy.deepcopy(PRESET), page=page, **MODEL)
    assert at.metric and len(vega_charts(at)) == 3, "the estimate, its chart and the sweep are drawn"
    before = seen(at)
    assert before == fresh(at, page)

    at.button_group(key=widget_key("zero_optimization.stage")).set_value(2).run()  # a flip
    after_flip = seen(at)
    assert after_flip != before and after_flip == fresh(at, page)
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()  # and back: served from the caches
    assert seen(at) == before

    at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("none").run()
    shown = seen(at)
    assert shown != before and shown == fresh(at, page)

    a100_40 = find_gpu("NVIDIA A100 40GB")
    at.session_state["context"].update(gpu_memory_gib=a100_40.memory_gib, gpu=a100_40.name)  # capacity and GPU
    at.run()
    shown = seen(at)
    assert shown == fresh(at, page)
    at.session_state["config"]["train_micro_batch_size_per_gpu"] = 4  # the shape: micro batch
    at.run()
    shown = seen(at)
    assert shown == fresh(at, page)

    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()  # the sweep's fragment alone
    shown = seen(at)
    assert shown == fresh(at, page)


def test_cached_views_are_shared_and_left_as_they_were():
    # from empty caches, as a new server: what the earlier tests of this process left in the small LRU caches
    # (parsed keeps 4 configs) decides otherwise whether this session's config is still among them
    clear_caches()
    at = app(copy.deepcopy(PRESET), page="pages/zero.py", **MODEL)
    info = zero_view.estimate_view.cache_info()
    at.run()
    assert zero_view.estimate_view.cache_info().hits > info.hits, "a rerun with the same input is a cache hit"
    # the page reads the shared frames; a second session on the same input sees the same numbers
    other = app(copy.deepcopy(PRESET), page="pages/zero.py", **MODEL)
    assert seen(other) == seen(at)
    # nothing the caches hand out was edited by a page: the shared parsed config is still what its JSON says
    ctx = dict(at.session_state["context"])
    keys = memory.cache_keys(at.session_state["config"], ctx, memory.shape_for(ctx, at.session_state["config"], None))
    hits = memory.parsed.cache_info().hits
    assert memory.parsed(keys[0]) == json.loads(keys[0].text)
    assert memory.parsed.cache_info().hits == hits + 1, "the page's own key: the object the caches shared"
    found = memory.options_table(*memory.options_keys(at.session_state["config"], ctx))
    assert "current" not in found.columns and set(found["category"]) <= {"model_states", "activations", "buffers",
                                                                         "overhead"}


def test_plan_page_after_each_change_shows_what_a_fresh_session_shows():
    page = "pages/plan.py"
    at = app(copy.deepcopy(PRESET), page=page, **MODEL)
    at.session_state["plan_speed_chart"] = True  # the chart of every candidate, opened
    at.run()
    before = seen(at)
    assert before["tables"] and len(before["charts"]) == 3, "the ranking, its breakdown and both sweeps are drawn"
    assert before == fresh(at, page)
    for key, value in (("plan_nodes", 2), ("plan_price", 4.0), ("plan_tokens", 0.0), ("plan_gpu", "NVIDIA H100 80GB"),
                       ("plan_seq", 4096), ("plan_model", "meta-llama/Llama-2-13b-hf")):
        widget = at.number_input(key=key) if key not in ("plan_gpu", "plan_model") else at.selectbox(key=key)
        widget.set_value(value).run()
        shown = seen(at)
        assert shown != before, key
        assert shown == fresh(at, page), key
        before = shown


def test_ways_to_fit_after_each_change_show_what_a_fresh_session_shows():
    page = "pages/zero.py"
    preset = json.loads((ROOT / "presets" / "zero2-bf16.json").read_text())["config"]
    at = app(copy.deepcopy(preset), page=page, **MODEL, gpus_per_node=1)
    before = seen(at)
    assert any(b.startswith("Make it fit") for b, _ in before["buttons"]), "the headline offers a way to fit"
    assert "Make it fit" in before["subheaders"], "the ZeRO page lists the ways"
    assert before == fresh(at, page)
    for change in ({"seq_len": 4096}, {"hf_grad_accum": 4}, {"gpu": "NVIDIA H100 80GB"}, {"micro": 2}, {"stage": 1},
                   {"offload": "cpu"}):
        if "micro" in change:
            at.session_state["config"]["train_micro_batch_size_per_gpu"] = change["micro"]
            at.run()
        elif "stage" in change:
            at.button_group(key=widget_key("zero_optimization.stage")).set_value(change["stage"]).run()
        elif "offload" in change:
            at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("cpu").run()
        else:
            at.session_state["context"].update(change)
            at.run()
        shown = seen(at)
        assert shown == fresh(at, page), change
        if "offload" not in change:
            assert "Make it fit" in shown["subheaders"], f"{change}: still does not fit"
