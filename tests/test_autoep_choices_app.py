"""The Advanced page's AutoEP (``expert_parallel``) choice widgets offer what the selected release's AutoEP accepts
(``validate_autoep_config``'s lists, read into each profile as ``autoep_choices``), as the optimizer and scheduler
choices follow the release: 0.19.6 refuses ``combine_impl: fused_weighted_sum`` (``expert-parallel.choice``), so its
widget does not offer it; a config that holds it keeps it."""

from __future__ import annotations

import pytest
from app_support import app

from core import versions
from core.validate import validate
from ui import fields

CONFIG = {"train_micro_batch_size_per_gpu": 1, "expert_parallel": {"enabled": True, "autoep_size": 1}}
KEY = "cfg:expert_parallel.combine_impl"


@pytest.mark.parametrize(("release", "offered"), [("0.19.6", False), ("0.19.7", True), ("0.19.8", True)])
def test_the_combine_choices_are_the_releases_own(release, offered):
    at = app(config=CONFIG, page="pages/advanced.py", version=release)
    assert not at.exception, at.exception
    options = at.selectbox(key=KEY).options
    assert ("fused_weighted_sum" in options) is offered
    assert set(options) == set(versions.autoep_choices(release)["combine_impl"])


def test_a_held_value_the_release_refuses_is_still_shown_and_reported():
    config = {**CONFIG, "expert_parallel": {**CONFIG["expert_parallel"], "combine_impl": "fused_weighted_sum"}}
    at = app(config=config, page="pages/advanced.py", version="0.19.6")
    assert at.selectbox(key=KEY).value == "fused_weighted_sum"
    assert at.session_state["config"] == config
    assert any(f.code == "expert-parallel.choice" for f in validate(config, version="0.19.6").errors)


def test_every_autoep_choice_field_offers_exactly_what_the_newest_release_accepts():
    newest = versions.RELEASES[-1]
    accepted = versions.autoep_choices(newest)
    checked = 0
    for key, values in accepted.items():
        kind = fields.field_kind(fields.field_for(f"expert_parallel.{key}"))
        if kind.kind != "choice":
            continue  # a free-text field (preset_model, expert_activation): the validator checks its value
        checked += 1
        assert set(kind.choices) == set(values) - {None}, key
        assert fields.release_choices(kind, f"expert_parallel.{key}", newest).choices == kind.choices
    assert checked >= 5
