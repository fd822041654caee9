"""The Optimizer page's learning-rate curve beside an optimizer lr the scheduler replaces (a browser hunt of 30 Nov
2026): the user typed lr 1e-4, the curve and table peaked at 2e-05 (WarmupLR's warmup_max_lr) and nothing said
why. The page now says that the scheduler's peak replaces the optimizer's lr; the chart's axis is titled."""

from __future__ import annotations

import pytest
from app_support import app

from ui.lr_chart import lr_curve

ADAMW = {"type": "AdamW", "params": {"lr": 1e-4}}


def _notes(config, version="0.19.8"):
    at = app(config, "pages/optimizer.py", version=version)
    assert not at.exception, at.exception
    return [c.value for c in at.caption if "The scheduler sets the learning rate" in c.value]


@pytest.mark.parametrize(("scheduler", "version", "noted"), [
    ({"type": "WarmupLR", "params": {"warmup_max_lr": 2e-5}}, "0.19.8", True),
    ({"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4}}, "0.19.8", False),
    ({"type": "WarmupLR", "params": {}}, "0.19.8", False),  # follows the optimizer's lr from 0.17.2
    ({"type": "WarmupLR", "params": {}}, "0.16.9", True),  # 0.001 of its own
    ({"type": "WarmupCosineLR", "params": {"total_num_steps": 100}}, "0.19.8", False),  # scales the lr
])
def test_the_page_says_when_the_schedulers_peak_replaces_the_optimizers_lr(scheduler, version, noted):
    notes = _notes({"train_micro_batch_size_per_gpu": 1, "optimizer": ADAMW, "scheduler": scheduler}, version)
    assert bool(notes) == noted, notes
    if noted:
        assert "not at the optimizer's `lr` 1.000e-04" in notes[0]


def test_the_learning_rate_axis_is_titled_in_the_tables_notation():
    spec = lr_curve(with_momentum=False).to_dict(validate=False)
    assert spec["encoding"]["y"]["title"] == "learning rate" and spec["encoding"]["y"]["axis"]["format"] == ".2~e"
