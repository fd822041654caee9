"""scripts/room_floor: the floor app that ``make load-floor`` serves must offer the flow the room driver clicks."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.models import get_spec

FLOOR = Path(__file__).resolve().parent.parent / "scripts" / "room_floor" / "app.py"
MODEL = "mistralai/Mistral-7B-v0.1"


def test_floor_app_offers_the_rooms_flow():
    at = AppTest.from_file(str(FLOOR), default_timeout=30).run()
    assert not at.exception and at.title[0].value == "Start"
    preset = next(s for s in at.selectbox if s.label == "Preset")
    assert any(option.endswith("(zero2-bf16)") for option in preset.options)
    preset.set_value("zero2-bf16").run()
    next(b for b in at.button if b.label == "Load this preset").click().run()
    # the room driver checks the loaded preset by its name in brackets, as the app's Start page writes it
    assert any(s.value.startswith("Loaded the preset") and "(zero2-bf16)" in s.value for s in at.success)
    next(s for s in at.selectbox if s.label == "Model from the catalog").set_value(MODEL).run()
    shown = f"{MODEL} ({get_spec(MODEL).total_params / 1e9:.2f} B parameters)"
    assert any(c.value == shown for c in at.caption)
    at.switch_page("pages/zero.py").run()
    assert not at.exception and at.title[0].value == "ZeRO & offload"
    assert [c.value for c in at.caption] == ["Current config: ZeRO-2", shown]
    at.button_group(key="stage").set_value(3).run()
    assert at.caption[0].value == "Current config: ZeRO-3"


def test_floor_stage_buttons_read_as_the_apps():
    # the floor draws its stage control without the app's ui package; the driver clicks buttons by their label,
    # so the floor's labels must be the ones the app's widget draws for the schema's choices
    from ui import fields

    stage = fields.field_for("zero_optimization.stage")
    at = AppTest.from_file(str(FLOOR.parent / "pages" / "zero.py"), default_timeout=30).run()
    assert at.button_group(key="stage").options == [
        fields.choice_label(choice, stage, fields.plain_default(stage)) for choice in fields.field_kind(stage).choices]
