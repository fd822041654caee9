"""AppTest: the ZeRO & offload page (stage, offload, disabled options, memory charts, fixes)."""

from __future__ import annotations

from test_app_support import app, click_fix, texts

from core import memory as core_memory
from core.models import get_spec
from ui.widgets import widget_key

SPEC = get_spec("meta-llama/Llama-2-7b-hf")
MODEL = {"model": "meta-llama/Llama-2-7b-hf", "total_params": SPEC.total_params,
         "largest_layer_params": SPEC.largest_layer_params}


def zero_app(zero: dict, **context):
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero, "keep_me": [1, 2]}
    return app(config, page="pages/zero.py", **(MODEL | context))


def table(at, column: str):
    """The first dataframe on the page that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_stage_widget_changes_config_and_charts():
    at = zero_app({"stage": 1, "team_key": "x"}, nodes=1, gpus_per_node=8)
    totals = table(at, "fits")
    assert list(totals.loc[totals["current"], "stage"]) == [1]
    sweep_before = table(at, "gpus").copy()
    at.selectbox(key=widget_key("zero_optimization.stage")).set_value(3).run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 1,
                                          "zero_optimization": {"stage": 3, "team_key": "x"}, "keep_me": [1, 2]}
    totals = table(at, "fits")
    assert list(totals.loc[totals["current"], "stage"]) == [3]
    sweep_after = table(at, "gpus")
    assert (sweep_after["gib_per_gpu"].iloc[1:] < sweep_before["gib_per_gpu"].iloc[1:]).all()
    options = table(at, "label")
    assert list(options.loc[options["current"], "label"]) == ["ZeRO-3 opt=none param=none"]


def test_figure_follows_the_zero_paper_accounting():
    at = zero_app({"stage": 0}, nodes=2, gpus_per_node=8)
    totals = table(at, "fits").set_index("stage")["gib_per_gpu"]
    psi = SPEC.total_params / 2**30
    assert totals[0] == 16 * psi
    assert totals[1] == 4 * psi + 12 * psi / 16
    assert totals[2] == 2 * psi + 14 * psi / 16
    assert totals[3] == 16 * psi / 16


def test_offload_changes_estimate_to_deepspeeds_numbers():
    at = zero_app({"stage": 3}, nodes=1, gpus_per_node=4)
    at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("cpu").run()
    at.selectbox(key=widget_key("zero_optimization.offload_param.device")).set_value("cpu").run()
    zero = at.session_state["config"]["zero_optimization"]
    assert zero["offload_optimizer"] == {"device": "cpu"} and zero["offload_param"] == {"device": "cpu"}
    options = table(at, "label")
    current = options.loc[options["current"]].iloc[0]
    assert current["label"] == "ZeRO-3 opt=cpu param=cpu"
    cpu, gpu, _largest = core_memory.estimate_zero3_model_states_mem_needs(
        SPEC.total_params, SPEC.largest_layer_params, 4, 1, True, True, True)
    assert current["gpu_gib"] == gpu / 2**30
    assert current["cpu_gib"] == cpu / 2**30
    assert any(f"{gpu / 2**30:.1f} GiB per GPU" in c.value for c in at.caption)


def test_stage3_options_disabled_with_reason_below_stage3():
    at = zero_app({"stage": 2})
    device = at.selectbox(key=widget_key("zero_optimization.offload_param.device"))
    assert device.disabled
    assert "Only has an effect with ZeRO stage 3; the current stage is 2." in device.help
    knob = at.number_input(key=widget_key("zero_optimization.stage3_prefetch_bucket_size"))
    assert knob.disabled
    assert not at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).disabled
    at.selectbox(key=widget_key("zero_optimization.stage")).set_value(3).run()
    assert not at.selectbox(key=widget_key("zero_optimization.offload_param.device")).disabled
    assert not at.number_input(key=widget_key("zero_optimization.stage3_prefetch_bucket_size")).disabled


def test_alias_spelling_is_written_as_documented():
    at = zero_app({"stage": 3})
    at.number_input(key=widget_key("zero_optimization.stage3_max_live_parameters")).set_value(123).run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3, "stage3_max_live_parameters": 123}


def test_invalid_stage_shows_error_on_page_and_sidebar():
    at = zero_app({"stage": 5})
    assert any("zero_optimization.stage" in e.value and "5" in e.value for e in at.main.error)
    assert any("zero_optimization.stage" in link.proto.label for link in at.sidebar.get("page_link"))
    assert at.selectbox(key=widget_key("zero_optimization.stage")).value == 5
    at.selectbox(key=widget_key("zero_optimization.stage")).set_value(2).run()
    assert not any("type.enum" in e for e in texts(at.main.error))


def test_param_offload_below_stage3_fix_switches_stage():
    at = zero_app({"stage": 2, "offload_param": {"device": "cpu"}})
    assert any("zero.offload-param-below-3" in w.value for w in at.main.warning)
    click_fix(at, "Fix: Switch to ZeRO stage 3")
    assert at.session_state["config"]["zero_optimization"]["stage"] == 3
    assert at.selectbox(key=widget_key("zero_optimization.stage")).value == 3
    assert not any("zero.offload-param-below-3" in w.value for w in at.main.warning)


def test_nvme_offload_shows_aio_settings_and_path_fix():
    at = zero_app({"stage": 3})
    assert not any(k.key and k.key.startswith(widget_key("aio.")) for k in at.number_input)
    at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("nvme").run()
    assert any(k.key and k.key.startswith(widget_key("aio.")) for k in [*at.number_input, *at.checkbox])
    click_fix(at, "Fix: Set `zero_optimization.offload_optimizer.nvme_path`")
    assert at.session_state["config"]["zero_optimization"]["offload_optimizer"]["nvme_path"] == "/local_nvme"


def test_without_model_the_page_asks_for_one():
    at = app({"zero_optimization": {"stage": 2}}, page="pages/zero.py")
    assert any("Choose a model" in i.value for i in at.info)
    assert not at.dataframe
