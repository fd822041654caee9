"""Widgets against what DeepSpeed reads (a read-only hunt of 30 Nov 2026, second round): a section whose presence
turns a feature on is added only on request, and a field whose DeepSpeed default is "auto" can be edited."""

from __future__ import annotations

import copy

from app_support import app

from core.effective import effective
from core.validate import validate

ZENFLOW = "zero_optimization.zenflow"
ZERO2_CPU = {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
             "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}


def _zero_knobs(config):
    at = app(copy.deepcopy(config), None)
    at.session_state["zero_knobs"] = True
    at.switch_page("pages/zero.py").run()
    assert not at.exception, at.exception
    return at


def _widget(at, kind, key):
    return next((w for w in getattr(at, kind) if w.key == key), None)


def test_zenflow_knobs_are_not_drawn_until_the_section_is_asked_for():
    """A knob inside an absent zenflow section would add the section, which turns ZenFlow on (DeepSpeed's
    ``configure_zenflow``: ``zenflow_config is not None``), by touching any knob."""
    at = _zero_knobs(ZERO2_CPU)
    assert _widget(at, "checkbox", f"cfg:{ZENFLOW}.overlap_step") is None
    switch = _widget(at, "checkbox", f"cfg:{ZENFLOW}:set")
    assert switch is not None and switch.value is False
    assert "zenflow" not in at.session_state["config"]["zero_optimization"]

    switch.check().run()
    config = at.session_state["config"]
    assert config["zero_optimization"]["zenflow"] == {}
    assert effective(config).zenflow
    _widget(at, "checkbox", f"cfg:{ZENFLOW}.overlap_step").check().run()
    assert at.session_state["config"]["zero_optimization"]["zenflow"] == {"overlap_step": True}

    _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").uncheck().run()
    config = at.session_state["config"]
    assert "zenflow" not in config["zero_optimization"] and not effective(config).zenflow
    assert _widget(at, "checkbox", f"cfg:{ZENFLOW}.overlap_step") is None
    # added back, it holds what the user had set in it
    _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").check().run()
    assert at.session_state["config"]["zero_optimization"]["zenflow"] == {"overlap_step": True}
    assert not at.exception


def test_a_written_zenflow_section_is_shown_checked_and_left_as_written():
    written = copy.deepcopy(ZERO2_CPU)
    written["zero_optimization"]["zenflow"] = {"topk_ratio": 0.05, "select_strategy": "step"}
    at = _zero_knobs(written)
    assert _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").value is True
    assert _widget(at, "selectbox", f"cfg:{ZENFLOW}.select_strategy").value == "step"
    at.switch_page("pages/review.py").run()
    assert at.session_state["config"] == written


AUTOEP = {"train_micro_batch_size_per_gpu": 1, "expert_parallel": {"enabled": True, "autoep_size": 2}}


def _advanced(config, section, **context):
    at = app(copy.deepcopy(config), None, **context)
    at.session_state[f"advanced_section:{section}"] = True
    at.switch_page("pages/advanced.py").run()
    assert not at.exception, at.exception
    return at


def test_a_field_whose_deepspeed_default_is_auto_gets_a_number_box_not_an_hf_toggle():
    for target in ("deepspeed", "hf"):
        at = _advanced(AUTOEP, "expert_parallel", target=target)
        assert _widget(at, "toggle", "cfg:expert_parallel.top_k:auto") is None, target
        box = _widget(at, "number_input", "cfg:expert_parallel.top_k")
        assert box is not None and box.value is None, target
        box.set_value(2).run()
        assert at.session_state["config"]["expert_parallel"]["top_k"] == 2
        assert isinstance(at.session_state["config"]["expert_parallel"]["top_k"], int)
        _widget(at, "number_input", "cfg:expert_parallel.top_k").set_value(None).run()
        assert at.session_state["config"]["expert_parallel"] == AUTOEP["expert_parallel"]  # "auto" again: unset


def test_a_written_auto_of_deepspeed_own_stays_and_its_choices_are_offered():
    written = copy.deepcopy(AUTOEP)
    written["expert_parallel"].update(top_k="auto", score_func="auto")
    at = _advanced(written, "expert_parallel")
    assert _widget(at, "number_input", "cfg:expert_parallel.top_k").value is None
    choice = _widget(at, "selectbox", "cfg:expert_parallel.score_func")
    assert choice is not None and choice.value == "auto"
    at.switch_page("pages/review.py").run()
    assert at.session_state["config"] == written  # visiting changes nothing
    at = _advanced(written, "expert_parallel")
    _widget(at, "selectbox", "cfg:expert_parallel.score_func").set_value("sigmoid").run()
    assert at.session_state["config"]["expert_parallel"] == {**written["expert_parallel"], "score_func": "sigmoid"}


def test_an_hf_auto_field_keeps_its_toggle():
    at = app({"train_micro_batch_size_per_gpu": "auto"}, "pages/batch.py", target="hf")
    assert _widget(at, "toggle", "cfg:train_micro_batch_size_per_gpu:auto").value is True


def test_hf_target_offers_auto_only_where_the_trainer_fills_it_in():
    """Accelerate refuses an "auto" it does not fill (auto.not-filled): no toggle may write one."""
    config = {"train_micro_batch_size_per_gpu": "auto", "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
              "scheduler": {"type": "WarmupDecayLR", "params": {}}}
    at = app(copy.deepcopy(config), "pages/optimizer.py", target="hf")
    toggles = [t.key for t in at.toggle if t.key.startswith(("cfg:optimizer.params.", "cfg:scheduler.params."))]
    names = {key.removeprefix("cfg:").removesuffix(":auto") for key in toggles}
    assert {"optimizer.params.lr", "optimizer.params.betas", "optimizer.params.eps",
            "optimizer.params.weight_decay", "scheduler.params.total_num_steps"} <= names
    assert not names & {"optimizer.params.amsgrad", "optimizer.params.torch_adam", "optimizer.params.adam_w_mode",
                        "scheduler.params.warmup_type", "scheduler.params.last_batch_iteration"}
    for key in toggles:
        session = app(copy.deepcopy(config), "pages/optimizer.py", target="hf")
        toggle = _widget(session, "toggle", key)
        if not toggle.value:
            toggle.set_value(True).run()
        written = session.session_state["config"]
        assert "auto.not-filled" not in {f.code for f in validate(written, target="hf").findings}, (key, written)


def test_a_true_false_or_unset_optimizer_parameter_can_go_back_to_unset():
    """torch's ``foreach`` / ``fused``: null picks by device (foreach on CUDA), false forces the per-tensor loop."""
    at = app({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adagrad", "params": {"lr": 0.01}}},
             "pages/optimizer.py")
    box = _widget(at, "selectbox", "cfg:optimizer.params.foreach")
    assert box is not None and box.value is None
    box.set_value(False).run()
    assert at.session_state["config"]["optimizer"]["params"] == {"lr": 0.01, "foreach": False}
    _widget(at, "selectbox", "cfg:optimizer.params.foreach").select_index(0).run()  # "— not set —"
    assert at.session_state["config"]["optimizer"]["params"] == {"lr": 0.01}


def test_a_field_written_under_its_deprecated_name_shows_that_value_and_cannot_be_set_twice():
    """DeepSpeed reads ``stage3_gather_fp16_weights_on_model_save`` as ``gather_16bit_weights_on_model_save`` and
    refuses the two together ("Cannot provide deprecated parameter ... and replacing parameter ... together")."""
    written = {"train_micro_batch_size_per_gpu": 1,
               "zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": True}}
    at = _zero_knobs(written)
    new = _widget(at, "checkbox", "cfg:zero_optimization.stage3_gather_16bit_weights_on_model_save")
    assert new.value is True and new.disabled
    assert "stage3_gather_fp16_weights_on_model_save" in new.help
    at.switch_page("pages/review.py").run()
    assert at.session_state["config"] == written


def test_a_scheduler_set_back_to_not_set_leaves_no_section_and_comes_back_with_its_params():
    config = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    at = app(copy.deepcopy(config), "pages/optimizer.py", target="hf")
    _widget(at, "selectbox", "cfg:scheduler.type").select("WarmupLR").run()
    chosen = copy.deepcopy(at.session_state["config"]["scheduler"])
    assert chosen["params"]
    _widget(at, "selectbox", "cfg:scheduler.type").select_index(0).run()  # "— not set —"
    assert at.session_state["config"] == config
    assert "hf.scheduler-no-type" not in {f.code for f in validate(at.session_state["config"], target="hf").findings}
    _widget(at, "selectbox", "cfg:scheduler.type").select("WarmupLR").run()
    assert at.session_state["config"]["scheduler"] == chosen


def test_offload_device_set_back_to_none_removes_the_section_it_added():
    at = _zero_knobs({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})
    key = "cfg:zero_optimization.offload_optimizer.device"
    _widget(at, "selectbox", key).set_value("cpu").run()
    assert at.session_state["config"]["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    _widget(at, "selectbox", key).set_value("none").run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3}
    # a section with other keys keeps them, with device "none", as the user set it
    kept = {"train_micro_batch_size_per_gpu": 1,
            "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": True}}}
    at = _zero_knobs(kept)
    _widget(at, "selectbox", "cfg:zero_optimization.offload_param.device").set_value("none").run()
    assert at.session_state["config"]["zero_optimization"]["offload_param"] == {"device": "none", "pin_memory": True}


def test_choosing_deepspeeds_own_auto_leaves_the_key_out_so_the_hf_target_stays_valid():
    """A choice whose DeepSpeed default is "auto" wrote the string back when chosen: under the HF target Accelerate
    refuses it (auto.not-filled); leaving the key out gives DeepSpeed's own "auto" under either target."""
    for target in ("hf", "deepspeed"):
        written = copy.deepcopy(AUTOEP)
        written["expert_parallel"]["score_func"] = "sigmoid"
        at = _advanced(written, "expert_parallel", target=target)
        _widget(at, "selectbox", "cfg:expert_parallel.score_func").set_value("auto").run()
        config = at.session_state["config"]
        assert config["expert_parallel"] == AUTOEP["expert_parallel"], target
        assert not [f.code for f in validate(config, target=target, world_size=2).findings
                    if f.path.startswith("expert_parallel")]
        assert _widget(at, "selectbox", "cfg:expert_parallel.score_func").value == "auto"
