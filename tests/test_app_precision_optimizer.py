"""AppTest: the Precision and Optimizer & scheduler pages."""

from __future__ import annotations

import copy
import io
import json

import pyarrow as pa
import pytest
from app_support import ROOT, app, click_fix, shown_tables, sidebar_findings, texts

from core import lr_schedules
from tests.test_precision import HF_TEMPLATE, SWITCHES_AND_BACK
from ui.widgets import widget_key

PRESET = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]


# ------------------------------------------------------------------ precision

def test_precision_mode_switch_sets_enabled_flags_only():
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "loss_scale_window": 500}, "x": 1},
             page="pages/precision.py")
    assert at.radio(key="cfg:precision_mode").value == "fp16"
    at.radio(key="cfg:precision_mode").set_value("bf16").run()
    assert at.session_state["config"] == {
        "train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": False, "loss_scale_window": 500}, "x": 1,
        "bf16": {"enabled": True},
    }
    assert at.checkbox(key=widget_key("bf16.enabled")).value is True



def test_precision_mode_keeps_the_legacy_bfloat16_section():
    at = app({"bfloat16": {"enabled": True}}, page="pages/precision.py")
    assert at.radio(key="cfg:precision_mode").value == "bf16"
    assert at.checkbox(key=widget_key("bfloat16.enabled")).value is True  # its own widgets, not bf16's
    at.radio(key="cfg:precision_mode").set_value("fp32").run()
    assert at.session_state["config"] == {"bfloat16": {"enabled": False}}
    at.radio(key="cfg:precision_mode").set_value("bf16").run()
    assert at.session_state["config"] == {"bfloat16": {"enabled": True}}

def _exactly(config: dict, expected: dict) -> bool:
    """The same keys, values and types (1 is not 1.0, nor true), in the same order at every level."""
    return config == expected and json.dumps(config) == json.dumps(expected)


@pytest.mark.parametrize(("config", "modes", "version"), SWITCHES_AND_BACK)
def test_switching_precision_and_back_gives_the_config_back(config, modes, version):
    """fp16 -> bf16 -> fp16 wrote true and false over HF's "auto" flags, and a switch and back left the section it
    had created behind ("bf16": {"enabled": false})."""
    at = app(copy.deepcopy(config), page="pages/precision.py", target="hf", version=version)
    for mode in modes:
        at.radio(key="cfg:precision_mode").set_value(mode).run()
        assert at.radio(key="cfg:precision_mode").value == mode and not at.exception
    assert _exactly(at.session_state["config"], config)


def test_a_section_a_precision_switch_created_goes_when_switched_away_unless_the_user_wrote_into_it():
    at = app({"fp16": {"enabled": True}}, page="pages/precision.py")
    for mode in ("bf16", "fp16", "bf16"):
        at.radio(key="cfg:precision_mode").set_value(mode).run()
        if mode == "fp16":
            assert _exactly(at.session_state["config"], {"fp16": {"enabled": True}})
    at.checkbox(key=widget_key("bf16.immediate_grad_update")).check().run()
    at.radio(key="cfg:precision_mode").set_value("fp16").run()
    assert _exactly(at.session_state["config"], {"fp16": {"enabled": True},
                                                 "bf16": {"enabled": False, "immediate_grad_update": True}})


def test_an_auto_precision_flag_switched_off_keeps_the_mode_and_on_again_gives_the_config_back():
    """fp16's "auto" switched off wrote the schema's false: the page jumped to bf16 (its "auto" now selected) and
    the fp16 toggle disappeared with fp16's box."""
    at = app(copy.deepcopy(HF_TEMPLATE), page="pages/precision.py", target="hf")
    at.toggle(key=widget_key("fp16.enabled") + ":auto").set_value(False).run()
    assert _exactly(at.session_state["config"], {"fp16": {"enabled": True, "loss_scale": 0},
                                                 "bf16": {"enabled": "auto"}})
    assert at.radio(key="cfg:precision_mode").value == "fp16"
    at.toggle(key=widget_key("fp16.enabled") + ":auto").set_value(True).run()
    assert _exactly(at.session_state["config"], HF_TEMPLATE)


def test_fp16_loss_scaling_widgets_come_from_schema():
    at = app({"fp16": {"enabled": True}}, page="pages/precision.py")
    window = at.number_input(key=widget_key("fp16.loss_scale_window"))
    assert window.value == 1000  # the schema default, not written until changed
    assert "fp16" in at.session_state["config"] and "loss_scale_window" not in at.session_state["config"]["fp16"]
    window.set_value(250).run()
    assert at.session_state["config"]["fp16"] == {"enabled": True, "loss_scale_window": 250}



def test_emptying_a_number_box_removes_its_key_and_the_box_stays_empty():
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "loss_scale_window": 250}},
             page="pages/precision.py")
    window = at.number_input(key=widget_key("fp16.loss_scale_window"))
    assert window.value == 250
    window.set_value(None).run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True}}
    assert at.number_input(key=widget_key("fp16.loss_scale_window")).value is None
    assert not at.exception

def test_gradient_clipping_and_communication_dtype():
    at = app({}, page="pages/precision.py")
    at.number_input(key=widget_key("gradient_clipping")).set_value(0.5).run()
    at.selectbox(key=widget_key("communication_data_type")).set_value("fp32").run()
    assert at.session_state["config"] == {"gradient_clipping": 0.5, "communication_data_type": "fp32"}


def test_a_number_typed_back_is_written_as_the_config_wrote_it():
    """gradient_clipping 1 -> 2.5 -> 1 gave 1.0: a whole number stayed an int only where it replaced an int. The
    loaded config decides (a float box cannot tell 1 from 1.0), so a file's 1.0 stays a float too."""
    for config, page, path, typed in (
        ({"gradient_clipping": 1}, "precision", "gradient_clipping", 2.5),
        ({"optimizer": {"type": "Adam", "params": {"lr": 1, "eps": 1e-8}}}, "optimizer", "optimizer.params.lr", 0.5),
        ({"gradient_clipping": 1.0}, "precision", "gradient_clipping", 2.0),
    ):
        at = app(copy.deepcopy(config), page=f"pages/{page}.py")
        for value in (typed, 1.0):
            at.number_input(key=widget_key(path)).set_value(value).run()
        assert _exactly(at.session_state["config"], config), path


def test_precision_conflict_error_on_page_and_sidebar_and_fix():
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True}, "bf16": {"enabled": True}},
             page="pages/precision.py")
    assert any("precision.fp16-and-bf16" in e.value for e in at.main.error)
    assert any("fp16 and bf16 are both enabled" in text and link.startswith("Fix on Precision")
               for text, link in sidebar_findings(at))
    click_fix(at, "Fix: Keep bf16")
    assert at.session_state["config"]["fp16"]["enabled"] is False
    assert at.session_state["config"]["bf16"]["enabled"] is True
    assert not any("precision.fp16-and-bf16" in e.value for e in at.main.error)
    assert at.radio(key="cfg:precision_mode").value == "bf16"


# ------------------------------------------------------------------ optimizer

def test_optimizer_params_from_registry_change_config():
    at = app(json.loads(json.dumps(PRESET)), page="pages/optimizer.py")
    lr = at.number_input(key=widget_key("optimizer.params.lr"))
    assert lr.value == PRESET["optimizer"]["params"]["lr"]
    lr.set_value(3e-4).run()
    config = at.session_state["config"]
    assert config["optimizer"]["params"]["lr"] == 3e-4
    # everything else untouched
    rest = {k: v for k, v in config.items() if k != "optimizer"}
    assert rest == {k: v for k, v in PRESET.items() if k != "optimizer"}
    assert {k: v for k, v in config["optimizer"]["params"].items() if k != "lr"} == \
        {k: v for k, v in PRESET["optimizer"]["params"].items() if k != "lr"}


def test_lr_curve_matches_core_and_follows_widgets():
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
              "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 100,
                                                                 "warmup_max_lr": 1e-3}}}
    at = app(config, page="pages/optimizer.py", train_steps=1000)
    (table,) = shown_tables(at)
    expected = lr_schedules.config_schedule_curve(config, 1000)
    shown = [float(f"{expected['lr'].iloc[i]:.3e}") for i in (0, 500, -1)]  # as the table writes them
    assert list(table["Learning rate"]) == shown
    at.number_input(key=widget_key("scheduler.params.warmup_max_lr")).set_value(2e-3).run()
    (changed,) = shown_tables(at)
    assert changed["Learning rate"].iloc[1] > table["Learning rate"].iloc[1]
    spec, curve = _drawn_curve(at)
    assert set(curve["series"]) == {"lr"} and "row" not in json.dumps(spec["encoding"])
    lr = curve.set_index("step")["value"]  # the chart follows the widget
    assert f"{lr[500]:.3e}" == f"{changed['Learning rate'].iloc[1]:.3e}" and lr.max() == 2e-3


def test_precision_mode_leaves_fp16_under_a_release_that_reads_false_as_on():
    """0.16.0 reads fp16.enabled "false" as on: choosing fp32 changed nothing, bf16 left fp16 on beside it."""
    config = {"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": "false"}}
    at = app(copy.deepcopy(config), page="pages/precision.py", version="0.16.0")
    assert at.radio(key="cfg:precision_mode").value == "fp16"
    at.radio(key="cfg:precision_mode").set_value("bf16").run()
    assert at.session_state["config"] == {**config, "fp16": {"enabled": False}, "bf16": {"enabled": True}}
    at.radio(key="cfg:precision_mode").set_value("fp32").run()
    assert at.radio(key="cfg:precision_mode").value == "fp32"
    assert at.session_state["config"] == {**config, "fp16": {"enabled": False}}  # the bf16 the switch created goes

def _drawn_curve(at):
    """(spec, dataset ``curve``) of the page's one chart, as the browser receives them."""
    (chart,) = at.get("vega_lite_chart")
    (data,) = [d for d in chart.proto.datasets if d.name == "curve"]
    return json.loads(chart.proto.spec), pa.ipc.open_stream(io.BytesIO(data.data.data)).read_all().to_pandas()


def test_switch_scheduler_type_drops_the_params_it_rejects_and_reports_the_missing_ones():
    at = app(json.loads(json.dumps(PRESET)), page="pages/optimizer.py")
    at.selectbox(key=widget_key("scheduler.type")).set_value("OneCycle").run()
    errors = " ".join(texts(at.main.error))
    assert "scheduler.unknown-param" not in errors and "scheduler.missing-param" in errors
    assert any("OneCycle" in text and link.startswith("Fix on Optimizer & scheduler")
               for text, link in sidebar_findings(at))
    at.number_input(key=widget_key("scheduler.params.cycle_min_lr")).set_value(1e-5).run()
    at.number_input(key=widget_key("scheduler.params.cycle_max_lr")).set_value(1e-3).run()
    assert at.session_state["config"]["scheduler"] == {
        "type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-3}}
    assert not any("scheduler." in e.value for e in at.main.error)
    spec, curve = _drawn_curve(at)
    assert set(curve["series"]) == {"lr", "momentum"} and spec["encoding"]["row"]["field"] == "series"


def test_switching_the_scheduler_type_and_back_keeps_its_params_order():
    """WarmupDecayLR -> WarmupLR -> WarmupDecayLR moved total_num_steps (which WarmupLR does not take) to the end."""
    config = {"scheduler": {"type": "WarmupDecayLR", "params": {
        "warmup_min_lr": 0, "warmup_max_lr": 3e-5, "total_num_steps": 1000, "warmup_num_steps": 100}}}
    at = app(copy.deepcopy(config), page="pages/optimizer.py")
    for scheduler in ("WarmupLR", "WarmupDecayLR"):
        at.selectbox(key=widget_key("scheduler.type")).set_value(scheduler).run()
    assert _exactly(at.session_state["config"], config)


def test_bad_scheduler_value_shows_error_naming_the_parameter():
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
              "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 10}}}
    at = app(config, page="pages/optimizer.py")
    errors = " ".join(texts(at.main.error))
    assert "total_num_steps" in errors
    assert not at.get("vega_lite_chart")


def test_hf_target_allows_auto_optimizer_params():
    config = {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    at = app(config, page="pages/optimizer.py", target="hf")
    at.toggle(key=widget_key("optimizer.params.lr") + ":auto").set_value(True).run()
    assert at.session_state["config"]["optimizer"]["params"]["lr"] == "auto"


def test_a_parameters_auto_switched_off_and_on_again_keeps_its_place():
    """lr and warmup_min_lr moved to the end of their params when their "auto" was switched off (removing them) and
    on again."""
    config = {"optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                           "warmup_num_steps": "auto"}}}
    at = app(copy.deepcopy(config), page="pages/optimizer.py", target="hf")
    for path in ("optimizer.params.lr", "scheduler.params.warmup_min_lr"):
        at.toggle(key=widget_key(path) + ":auto").set_value(False).run()
        at.toggle(key=widget_key(path) + ":auto").set_value(True).run()
    assert _exactly(at.session_state["config"], config)


def test_float_valued_integer_like_params_render():
    # Regression (found by the corpus test): a float value with an int bound crashed number_input.
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
              "scheduler": {"type": "OneCycle", "params": {
                  "cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 1000.0,
                  "cycle_second_step_size": 100}}}
    at = app(json.loads(json.dumps(config)), page="pages/optimizer.py")
    assert at.number_input(key=widget_key("scheduler.params.cycle_second_step_size")).value == 100.0
    assert at.session_state["config"] == config


def test_bf16_on_a_gpu_without_bf16_warns_from_the_catalog():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}
    at = app(config, page="pages/precision.py", gpu="NVIDIA V100 32GB")
    assert any("NVIDIA V100 32GB has no bf16" in w.value for w in at.main.warning)
    ampere = app(config, page="pages/precision.py", gpu="NVIDIA A100 80GB")
    assert not any("has no bf16" in w.value for w in ampere.main.warning)
    custom = app(config, page="pages/precision.py", gpu="Custom")
    assert not any("has no bf16" in w.value for w in custom.main.warning)


def test_the_precision_radio_follows_the_config_when_a_section_is_switched_off_below_it():
    """Unticking fp16.enabled left the radio on "fp16" (its own widget state) while the config trained fp32, and
    choosing fp16 again did nothing."""
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "loss_scale_window": 500}},
             page="pages/precision.py")
    at.checkbox(key="cfg:fp16.enabled").uncheck().run()
    assert at.radio(key="cfg:precision_mode").value == "fp32"
    at.radio(key="cfg:precision_mode").set_value("fp16").run()
    assert at.session_state["config"]["fp16"] == {"enabled": True, "loss_scale_window": 500}
    assert at.radio(key="cfg:precision_mode").value == "fp16" and not at.exception


def test_gradient_clipping_shows_the_selected_releases_default():
    """DeepSpeed's gradient_clipping default is 0.0 (no clipping) up to 0.19.2 and 1.0 from 0.19.3 (the release
    profiles record it): the widget showed 1.0, "clipping on", for every release."""
    from core import versions

    for version in versions.RELEASES:
        recorded = versions.profile(version)["top_level_defaults"]["gradient_clipping"]
        at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}, page="pages/precision.py",
                 version=version)
        at.run()
        widget = at.number_input(key=widget_key("gradient_clipping"))
        assert widget.value == recorded, version
        assert f"Default: `{recorded}`" in widget.help, version
    assert {versions.profile(v)["top_level_defaults"]["gradient_clipping"] for v in versions.RELEASES} == {0.0, 1.0}


def test_an_auto_value_is_fixed_to_the_selected_releases_default():
    import core

    for version, expected in (("0.18.9", 0.0), ("0.19.8", 1.0)):
        finding = next(f for f in core.validate({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": "auto"},
                                                version=version).findings if f.code == "auto.fails")
        assert finding.fix is not None and finding.fix.apply({"gradient_clipping": "auto"}) == {
            "gradient_clipping": expected}, version


def test_the_lr_chart_of_a_config_without_lr_uses_the_optimizers_default_and_says_so():
    """DeepSpeed builds SGD without an lr on SGD's default (0.001); the chart refused ("set optimizer.params.lr")
    while the page's own lr box showed 0.001."""
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "SGD", "params": {}},
              "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_num_steps": 10}}}
    at = app(config, page="pages/optimizer.py", train_steps=100)
    assert not at.error, [e.value for e in at.error]
    _spec, curve = _drawn_curve(at)
    assert curve["value"].max() == pytest.approx(0.001)
    assert any("the optimizer's default lr, 0.001" in c.value for c in at.caption)


def test_the_hf_presets_schedule_is_charted_with_the_trainers_defaults():
    """The vetted HF preset writes its schedule as "auto": the page showed a red error with nothing to resolve it."""
    from core.presets import BUILTIN_DIR, load_preset

    config = load_preset("hf-auto-zero2", [BUILTIN_DIR]).config
    at = app(copy.deepcopy(config), page="pages/optimizer.py", target="hf", train_steps=1000)
    assert not at.error, [e.value for e in at.error]
    _spec, curve = _drawn_curve(at)
    assert curve["value"].max() == pytest.approx(5e-05)
    assert any("HF Trainer fills" in c.value and "learning_rate=5e-05" in c.value and "num_training_steps=1000"
               in c.value for c in at.caption)
    assert at.session_state["config"] == config  # charting is a view: the "auto"s stay


def test_the_precision_radio_reads_the_config_as_the_selected_release_and_prefers_a_written_section():
    """The radio showed fp16 for fp16 "auto" beside bf16 true (DeepSpeed runs bf16; the Trainer fills fp16 false
    with --bf16 and refuses --fp16 beside bf16), and read 0.16's dict.get sections as 0.19 does ("false" is on)."""
    mode_key = "cfg:precision_mode"
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": "auto"}, "bf16": {"enabled": True}},
             page="pages/precision.py")
    assert at.radio(key=mode_key).value == "bf16"
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": "false"}}, page="pages/precision.py",
             version="0.16.9")
    at.run()
    assert at.radio(key=mode_key).value == "fp16"  # DeepSpeed 0.16.9: fp16_enabled == 'false', a true value


def test_fp16_enabled_as_each_release_reads_it():
    from core.effective import effective

    for version, on in (("0.16.9", True), ("0.19.8", False)):
        assert effective({"fp16": {"enabled": "false"}}, version).fp16 is on, version


@pytest.mark.parametrize(("written", "mode"), [({"bf16": {"enabled": "auto"}}, "bf16"),
                                                ({"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}, "fp16")])
def test_an_auto_precision_is_read_the_same_by_the_radio_and_the_figures(written, mode):
    """An HF config with "enabled": "auto": the radio showed bf16 while the memory figures and the headline on the
    same page were fp32 (the estimator read "auto" as off); both read it as the section the Trainer will fill."""
    from core.models import get_config, get_spec

    name = "meta-llama/Llama-2-7b-hf"
    spec = get_spec(name)
    at = app({"train_micro_batch_size_per_gpu": 4, **written, "zero_optimization": {"stage": 2}},
             page="pages/precision.py", target="hf", model=name, total_params=spec.total_params,
             largest_layer_params=spec.largest_layer_params, model_config=get_config(name))
    assert at.radio(key="cfg:precision_mode").value == mode
    verdict = next(m.value for m in at.markdown if "micro batch 4" in m.value)
    assert f"{mode}, micro batch 4" in verdict, verdict


def test_a_parameter_left_out_shows_the_default_of_the_class_the_config_selects():
    """torch_adam builds torch.optim.AdamW, whose weight_decay is 0.01 (DeepSpeed's own AdamW's is 0): the box and
    its help said 0.0 while the validator used 0.01."""
    params = {"lr": 1e-4, "torch_adam": True}
    at = app({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": params}},
             page="pages/optimizer.py")
    box = at.number_input(key=widget_key("optimizer.params.weight_decay"))
    assert box.value == 0.01 and "Default: `0.01`." in box.help
    fused = app({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}},
                page="pages/optimizer.py")
    box = fused.number_input(key=widget_key("optimizer.params.weight_decay"))
    assert box.value == 0.0 and "Default: `0.0`." in box.help


def test_parameter_boxes_follow_the_optimizer_class_when_it_changes():
    """The boxes kept the defaults they were drawn with: Adagrad's lr showed Adam's 0.001 (its help said 0.01), and
    ticking torch_adam left weight_decay at 0.0 where torch.optim.AdamW uses 0.01."""
    at = app({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "Adam", "params": {}}},
             page="pages/optimizer.py")
    assert at.number_input(key=widget_key("optimizer.params.lr")).value == 0.001
    at.selectbox(key=widget_key("optimizer.type")).set_value("Adagrad").run()
    for name, default in (("lr", 0.01), ("eps", 1e-10)):
        box = at.number_input(key=widget_key(f"optimizer.params.{name}"))
        assert box.value == default and f"Default: `{default}`." in box.help, name
    assert at.session_state["config"]["optimizer"] == {"type": "Adagrad", "params": {}}
    at.selectbox(key=widget_key("optimizer.type")).set_value("AdamW").run()
    assert at.number_input(key=widget_key("optimizer.params.weight_decay")).value == 0.0
    at.checkbox(key=widget_key("optimizer.params.torch_adam")).check().run()
    assert at.number_input(key=widget_key("optimizer.params.weight_decay")).value == 0.01


def test_a_first_scheduler_is_filled_with_the_step_count():
    at = app({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}},
             page="pages/optimizer.py")
    at.selectbox(key=widget_key("scheduler.type")).set_value("WarmupDecayLR").run()
    # and its peak is the optimizer's lr, not DeepSpeed's default 0.001 (tests/test_scheduler_peak_lr.py)
    assert at.session_state["config"]["scheduler"] == {"type": "WarmupDecayLR",
                                                       "params": {"total_num_steps": 10_000, "warmup_max_lr": 1e-4}}
    assert not any("scheduler.missing-param" in e.value for e in at.main.error)
