"""Bugs a bug hunt found in the pages: widgets inside a null or non-object sub-section, and the two download buttons
of the Review page."""

from __future__ import annotations

import copy

from app_support import app


def _widget(at, key):
    """The widget with session key ``key``, whatever its kind."""
    kinds = (at.selectbox, at.segmented_control, at.number_input, at.checkbox, at.text_input, at.text_area)
    return next(w for kind in kinds for w in kind if w.key == key)


# ---- 1. a null sub-section is "not set": its widgets are editable and write a new object in its place


def test_a_null_offload_section_can_be_switched_on():
    """`offload_optimizer: null` (DeepSpeed 0.19.8 reads it as not set) disabled the device widget, with a help
    pointing to a raw JSON editor on Review & export that does not exist: CPU offload could never be turned on."""
    at = app({"zero_optimization": {"stage": 3, "offload_optimizer": None}}, "pages/zero.py")
    device = _widget(at, "cfg:zero_optimization.offload_optimizer.device")
    assert not device.disabled, device.help
    device.set_value("cpu").run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3, "offload_optimizer": {"device": "cpu"}}


def test_null_optimizer_params_can_be_edited():
    """`optimizer.params: null` (DeepSpeed: ``dict(self.optimizer_params() or {})``) disabled every parameter."""
    at = app({"optimizer": {"type": "AdamW", "params": None}}, "pages/optimizer.py")
    for key in ("cfg:optimizer.params.lr", "cfg:optimizer.params.betas"):
        assert not _widget(at, key).disabled, key
    _widget(at, "cfg:optimizer.params.lr").set_value(0.0003).run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["optimizer"] == {"type": "AdamW", "params": {"lr": 0.0003}}


# ---- 1. a list where an object belongs: the help points to a raw JSON box that is really on the page


def test_a_list_offload_section_is_corrected_in_the_raw_box_the_help_names():
    """`offload_param: []` (type.model_type) had no Fix button and no editor on any page, while the disabled
    widget's help sent the user to a raw JSON editor on Review & export that does not exist."""
    config = {"zero_optimization": {"stage": 3, "offload_param": []}}
    at = app(copy.deepcopy(config), "pages/zero.py")
    device = _widget(at, "cfg:zero_optimization.offload_param.device")
    assert device.disabled
    assert '"Raw JSON of `zero_optimization.offload_param`" on this page' in device.help
    assert "Review & export" not in device.help
    box = _widget(at, "cfg:raw:zero_optimization.offload_param")
    assert box.label == "Raw JSON of `zero_optimization.offload_param`"
    assert at.session_state["config"] == config  # drawing the box changed nothing
    box.input('{"device": "cpu"}').run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3, "offload_param": {"device": "cpu"}}
    assert not [e for e in at.error if "type.model_type" in e.value]
    assert not _widget(at, "cfg:zero_optimization.offload_param.device").disabled


def test_a_list_optimizer_params_gets_one_raw_box_and_emptying_it_removes_the_key():
    config = {"optimizer": {"type": "AdamW", "params": [0.001]}}
    at = app(copy.deepcopy(config), "pages/optimizer.py")
    boxes = [t for t in at.text_area if t.key == "cfg:raw:optimizer.params"]
    assert len(boxes) == 1  # one box, however many parameter widgets it blocks
    assert _widget(at, "cfg:optimizer.params.lr").disabled
    boxes[0].input("").run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["optimizer"] == {"type": "AdamW"}


# ---- 4. the Review page's download and the sidebar's: two files, two labels


def _downloads(at) -> dict[str, str]:
    """Each button on the page (sidebar included) that downloads the config (not the one filled for the HF Trainer):
    its label -> its file's media URL (the URL names the content: two buttons with one URL give the same bytes)."""
    buttons = [b for b in [*at.get("download_button"), *at.sidebar.get("download_button")]
               if b.proto.label.split(":")[0] == "Download ds_config.json"]
    found: dict[str, str] = {}
    for button in buttons:
        assert found.setdefault(button.proto.label, button.proto.url) == button.proto.url, button.proto.label
    return found


def test_the_two_download_buttons_say_which_file_they_give():
    """Both were labelled "Download ds_config.json": the sidebar's gives the config as written, the page's the form
    chosen above it ("Only what differs from defaults"), so one label gave two different files."""
    at = app({"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "fp16": {"enabled": False}},
             "pages/review.py")
    at.radio(key="review_variant").set_value("Only what differs from defaults").run()
    assert not at.exception, at.exception
    found = _downloads(at)
    assert set(found) == {"Download ds_config.json: as written",
                          "Download ds_config.json: only what differs from defaults"}
    assert len(set(found.values())) == 2  # two files, as the labels say
    at.radio(key="review_variant").set_value("As written").run()
    assert list(_downloads(at)) == ["Download ds_config.json: as written"]  # one file, one label
