"""State across a session (a read-only hunt of 30 Nov 2026, third round): Review's "auto" resolver with a batch value
its boxes cannot hold, what an undo puts back (only what the big edit changed, the values held beside the config,
never past a preset a fix followed), a section whose presence is its switch, and an Advanced section that an edit
inside it does not fold shut."""

from __future__ import annotations

import copy

import pytest
from app_support import app

from core.models import get_spec

MINE = {"train_micro_batch_size_per_gpu": 3, "zero_optimization": {"stage": 2}, "mine": 1}
ZENFLOW = "zero_optimization.zenflow"
ZERO2_CPU = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
             "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
             "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}


def _load(at, name: str) -> None:
    at.switch_page("pages/presets.py").run()
    at.selectbox(key="presets_selected").set_value(name).run()
    at.button(key="presets_load").click().run()
    assert not at.exception, at.exception


def _undo(at) -> str:
    button = next(b for b in at.button if b.label.startswith("Undo"))
    label = button.label
    button.click().run()
    assert not at.exception, at.exception
    return label


def _widget(at, kind, key):
    return next((w for w in getattr(at, kind) if w.key == key), None)


@pytest.mark.parametrize(("config", "box"), [
    ({"train_micro_batch_size_per_gpu": 0, "train_batch_size": "auto"}, "per_device_train_batch_size"),
    ({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": -2, "train_batch_size": "auto"},
     "gradient_accumulation_steps"),
    ({"train_micro_batch_size_per_gpu": 10**30, "train_batch_size": "auto"}, "per_device_train_batch_size"),
])
def test_review_resolves_auto_next_to_a_batch_value_its_boxes_cannot_hold(config, box):
    """The guess was the config's own value (0, -2, 1e30) given to a box with min_value 1: the page died with
    StreamlitValueBelowMinError; the box now asks for the value, and the validator reports the config's."""
    at = app(config=copy.deepcopy(config), target="hf")
    at.switch_page("pages/review.py").run()
    assert not at.exception, at.exception
    assert {b.label: b.value for b in at.number_input}[box] is None


def test_undoing_a_load_keeps_the_model_and_gpu_picked_on_start_after_it():
    at = app(config=copy.deepcopy(MINE), page="pages/presets.py")
    before = copy.deepcopy(at.session_state["context"])
    _load(at, "zero3-bf16")
    at.switch_page("pages/start.py").run()
    at.selectbox(key="start_model").set_value("meta-llama/Llama-2-13b-hf").run()
    at.selectbox(key="ctx:gpu").set_value("NVIDIA H100 80GB").run()
    at.switch_page("pages/presets.py").run()
    assert "What you changed on Start since stays" in next(b for b in at.button if b.label.startswith("Undo")).help
    assert _undo(at) == "Undo: load of zero3-bf16"
    context = at.session_state["context"]
    assert at.session_state["config"] == MINE
    assert context["model"] == "meta-llama/Llama-2-13b-hf" and context["gpu"] == "NVIDIA H100 80GB"
    assert context["total_params"] == get_spec("meta-llama/Llama-2-13b-hf").total_params
    assert context["target"] == before["target"]
    for page in ("pages/start.py", "pages/batch.py", "pages/start.py"):  # no stale picker writes its choice back
        at.switch_page(page).run()
        assert at.session_state["context"]["model"] == "meta-llama/Llama-2-13b-hf"


def test_a_model_picked_between_two_loads_is_an_edit_the_second_undo_keeps():
    at = app(config=copy.deepcopy(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    first = copy.deepcopy(at.session_state["config"])
    at.switch_page("pages/start.py").run()
    at.selectbox(key="start_model").set_value("meta-llama/Llama-2-13b-hf").run()
    _load(at, "zero2-bf16")
    assert _undo(at) == "Undo: load of zero2-bf16"  # not chained back to before zero3-bf16
    assert at.session_state["config"] == first
    assert at.session_state["context"]["model"] == "meta-llama/Llama-2-13b-hf"


def test_undoing_make_it_fit_right_after_a_load_gives_the_preset_back():
    """A way to fit chained onto the load before it (nothing edited between), so its undo threw the preset away too."""
    model = "meta-llama/Llama-2-13b-hf"
    at = app(config=copy.deepcopy(MINE), page="pages/start.py")
    at.selectbox(key="start_model").set_value(model).run()
    _load(at, "zero2-bf16")
    loaded = copy.deepcopy(at.session_state["config"])
    at.switch_page("pages/zero.py").run()
    fit = _widget(at, "button", "headline_fit")
    assert fit is not None, "the preset fits Llama-2-13B on the default cluster: nothing to make fit"
    fit.click().run()
    assert at.session_state["config"] != loaded
    label = _undo(at)
    assert "(after load" not in label, label
    assert at.session_state["config"] == loaded


def test_a_presence_section_stays_when_its_last_knob_is_emptied():
    """Emptying ZenFlow's only knob pruned the emptied section too: ZenFlow went off while its Set box said on
    (DeepSpeed turns ZenFlow on for any zenflow object, {} included)."""
    config = copy.deepcopy(ZERO2_CPU)
    config["zero_optimization"]["zenflow"] = {"topk_ratio": 0.05}
    at = app(config=config, page="pages/zero.py")
    at.session_state["zero_knobs"] = True
    at.run()
    at.number_input(key=f"cfg:{ZENFLOW}.topk_ratio").set_value(None).run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["zero_optimization"]["zenflow"] == {}
    assert _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").value is True


def test_what_a_switched_off_section_held_comes_back_after_a_load_and_its_undo():
    held = {"topk_ratio": 0.05, "update_interval": 8, "overlap_step": True}
    config = copy.deepcopy(ZERO2_CPU)
    config["zero_optimization"]["zenflow"] = dict(held)
    at = app(config=config, page="pages/zero.py")
    at.session_state["zero_knobs"] = True
    at.run()
    _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").uncheck().run()
    assert "zenflow" not in at.session_state["config"]["zero_optimization"]
    _load(at, "zero3-bf16")
    _undo(at)
    at.session_state["zero_knobs"] = True
    at.switch_page("pages/zero.py").run()
    _widget(at, "checkbox", f"cfg:{ZENFLOW}:set").check().run()
    assert at.session_state["config"]["zero_optimization"]["zenflow"] == held


def test_an_advanced_section_stays_open_after_the_first_edit_inside_it():
    """Streamlit makes a new expander when its label changes (" (set)" after the first edit): it folded shut."""
    at = app(config={"train_micro_batch_size_per_gpu": 1}, page="pages/advanced.py")
    at.session_state["advanced_section:activation_checkpointing"] = True
    at.run()
    at.checkbox(key="cfg:activation_checkpointing.partition_activations").set_value(True).run()
    section = next(e for e in at.expander if "activation_checkpointing" in e.label)
    assert section.label.endswith("(set)") and section.proto.expanded
    assert at.session_state["config"]["activation_checkpointing"] == {"partition_activations": True}
