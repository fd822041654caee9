"""AppTest over every preset and every page: rendering never changes the config and never fails."""

from __future__ import annotations

import copy

import pytest
from app_support import ROOT, app

from core.models import get_config, get_spec
from core.presets import list_presets
from ui import app_state

PRESETS = {p.name: p for p in list_presets([ROOT / "presets"])[0]}
PAGES = tuple(app_state.PAGES)  # every page the app declares
MODEL = "mistralai/Mistral-7B-v0.1"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_page_renders_every_preset_without_touching_it(name):
    preset = PRESETS[name]
    spec = get_spec(MODEL)
    config = copy.deepcopy(preset.config)
    config["x_team_metadata"] = {"owner": "infra", "nested": [1, {"k": None}]}
    at = app(copy.deepcopy(config), target=preset.target, model=MODEL, model_config=get_config(MODEL),
             total_params=spec.total_params, largest_layer_params=spec.largest_layer_params)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (name, page, at.exception)
        assert at.session_state["config"] == config, (name, page)
