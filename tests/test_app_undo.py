"""Undo of big edits across pages: loads in a row come back to the user's own config, and a page's "loaded" message
goes with the edit it describes."""

from __future__ import annotations

from app_support import app

MINE = {"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 7,
        "zero_optimization": {"stage": 2, "reduce_bucket_size": 123456789}, "my_team_key": {"keep": True}}


def _undo_labels(at) -> list[str]:
    return [b.label for b in at.button if b.label.startswith("Undo")]


def _load(at, name: str) -> None:
    at.selectbox(key="presets_selected").set_value(name).run()
    at.button(key="presets_load").click().run()
    assert not at.exception, at.exception


def test_presets_loaded_one_after_another_undo_to_the_users_own_config():
    at = app(config=dict(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    _load(at, "zero2-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero2-bf16 (after load of zero3-bf16)"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == MINE
    assert not _undo_labels(at)


def test_an_edit_between_two_loads_is_what_the_second_undo_restores():
    at = app(config=dict(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    at.session_state["edits_since_undo"] = 1  # a widget edit of the loaded preset (ui.app_state.note_edit)
    edited = dict(at.session_state["config"])
    _load(at, "zero2-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero2-bf16"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == edited


def test_undo_of_a_plan_row_takes_its_loaded_message_away():
    at = app(page="pages/plan.py")
    before = dict(at.session_state["config"])
    at.selectbox(key="plan_row").set_value(2).run()
    at.button(key="plan_use").click().run()
    assert any("Loaded rank 2" in s.value for s in at.success)
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == before
    assert not any("Loaded rank" in s.value for s in at.success)
