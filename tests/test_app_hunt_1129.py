"""Bugs a bug hunt found in the pages: undo after an import, a precision switch and back, the optimizer choices of
the selected release, and the Plan page's global batch after a change of GPU count."""

from __future__ import annotations

import json

import pytest
from app_support import app

MINE = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8, "my_team_key": 1}


def _undo(at):
    return next(b for b in at.button if b.label.startswith("Undo"))


def _imported_on_presets():
    """A session that imported MINE on the Start page, on the Presets page."""
    at = app(page="pages/start.py")
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").input(json.dumps(MINE)).run()
    at.button(key="start_import").click().run()
    assert at.session_state["config"] == MINE
    at.switch_page("pages/presets.py").run()
    return at


def test_undo_of_a_preset_loaded_after_an_import_gives_the_imported_config_back():
    """The load chained back past the import (nothing was edited between): undo gave the blank config, and the
    import was lost."""
    at = _imported_on_presets()
    at.button(key="presets_load").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"] != MINE
    assert _undo(at).label.startswith("Undo: load of ") and "(after" not in _undo(at).label
    _undo(at).click().run()
    assert at.session_state["config"] == MINE
    assert at.session_state["baseline"] == MINE


def test_presets_loaded_in_a_row_after_an_import_still_undo_to_the_import():
    """What the chaining is for stays: two loads after the import come back to the import, not the first load."""
    at = _imported_on_presets()
    for name in ("zero3-bf16", "zero2-bf16"):
        at.selectbox(key="presets_selected").set_value(name).run()
        at.button(key="presets_load").click().run()
    assert _undo(at).label == "Undo: load of zero2-bf16 (after load of zero3-bf16)"
    _undo(at).click().run()
    assert at.session_state["config"] == MINE


def _autocast_keys(at) -> list[str]:
    return [w.key for kind in ("checkbox", "selectbox", "text_input", "text_area") for w in at.get(kind)
            if str(w.key).startswith("cfg:torch_autocast.")]


@pytest.mark.parametrize("mode", ["bf16", "fp16"])
def test_a_precision_switch_and_back_keeps_torch_autocast_on_beside_bf16_or_fp16(mode):
    """fp32 and back turned torch_autocast off (the restore left a second section on and was refused), and no page
    drew a torch_autocast widget while the mode was bf16 or fp16."""
    config = {"train_micro_batch_size_per_gpu": 1, mode: {"enabled": True},
              "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}}
    at = app(config=json.loads(json.dumps(config)), page="pages/precision.py")
    assert at.radio(key="cfg:precision_mode").value == mode
    assert "cfg:torch_autocast.enabled" in _autocast_keys(at)
    at.radio(key="cfg:precision_mode").set_value("fp32").run()
    assert at.session_state["config"]["torch_autocast"]["enabled"] is False
    assert "cfg:torch_autocast.enabled" in _autocast_keys(at)  # off, its settings kept: still shown
    at.radio(key="cfg:precision_mode").set_value(mode).run()
    assert not at.exception, at.exception
    assert json.dumps(at.session_state["config"]) == json.dumps(config)
    at.checkbox(key="cfg:torch_autocast.enabled").uncheck().run()  # editable beside the mode
    assert at.session_state["config"]["torch_autocast"]["enabled"] is False
    assert at.radio(key="cfg:precision_mode").value == mode


def test_the_optimizer_drop_down_offers_only_what_the_selected_release_knows():
    """0.19.8 removed OneBitAdam, ZeroOneAdam and OneBitLamb; the drop-down offered them, and choosing one was an
    error. A config that holds one keeps it shown (nothing is lost); 0.19.5, which has them, offers them."""
    removed = {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    at = app(config=config, page="pages/optimizer.py", version="0.19.8")
    options = set(at.selectbox(key="cfg:optimizer.type").options)
    assert {"AdamW", "Lamb", "SGD"} <= options and not options & removed
    old = app(config=config, page="pages/optimizer.py", version="0.19.5")
    assert removed <= set(old.selectbox(key="cfg:optimizer.type").options)
    held = {**config, "optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}}}
    at = app(config=held, page="pages/optimizer.py", version="0.19.8")
    box = at.selectbox(key="cfg:optimizer.type")
    assert box.value == "OneBitAdam" and not set(box.options) & (removed - {"OneBitAdam"})


def test_no_other_choice_field_has_options_that_differ_between_releases():
    """ui.fields.release_choices filters optimizer.type, scheduler.type and AutoEP's choice keys (their values are
    checked by a function, not typed: tests/test_autoep_choices_app.py) by release; every other field whose type
    the profiles record as a Literal or an Enum has the same type in every release (compile.passes, a list, is edited
    as JSON), so no other choice widget offers what a release refuses."""
    from core import versions
    from ui import fields

    types: dict[str, set[str]] = {}
    for release in versions.RELEASES:
        for section, entry in versions.profile(release)["sections"].items():
            for name, info in entry["fields"].items():
                if "Literal" in str(info.get("type")) or "Enum" in str(info.get("type")):
                    types.setdefault(f"{section}.{name}", set()).add(str(info.get("type")))
    assert {path for path, seen in types.items() if len(seen) > 1} == {"compile.passes"}
    assert fields.field_kind(fields.field_for("compile.passes")).kind == "json"


def test_the_plans_untouched_global_batch_follows_the_gpu_count_and_a_typed_one_stays():
    """3 nodes of 8 GPUs: the global batch stayed at the 256 offered for 8 GPUs ("cannot be split over 24 GPUs")."""
    at = app(page="pages/plan.py")
    assert at.number_input(key="plan_batch").value == 256
    at.number_input(key="plan_nodes").set_value(3).run()
    assert not at.exception, at.exception
    assert at.number_input(key="plan_batch").value == 264  # the smallest multiple of 24 from 256
    assert not any("cannot be split" in e.value for e in at.error)
    at.number_input(key="plan_nodes").set_value(1).run()
    assert at.number_input(key="plan_batch").value == 256
    at.number_input(key="plan_batch").set_value(512).run()
    at.number_input(key="plan_nodes").set_value(2).run()
    assert at.number_input(key="plan_batch").value == 512
    at.switch_page("pages/start.py").run()
    at.switch_page("pages/plan.py").run()
    assert at.number_input(key="plan_batch").value == 512
