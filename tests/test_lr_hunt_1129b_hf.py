"""The HF target's scheduler: a scheduler picked on the Optimizer page leaves the step counts the Trainer fills to it
("auto"), as the Trainer refuses a total_num_steps other than its own; and with no scheduler section the page says
that the Trainer builds its own (``lr_scheduler_type``), not that the learning rate stays flat."""

from __future__ import annotations

import pytest
from app_support import app, texts

from core.autofill import switch_scheduler
from tests.test_export import _trainer_accepts

BASE = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
TRAINING = {"max_steps": 500, "warmup_steps": 20, "learning_rate": 2e-4}


@pytest.mark.parametrize("kind", ["WarmupLR", "WarmupDecayLR", "WarmupCosineLR"])
def test_a_scheduler_chosen_for_the_trainer_is_filled_by_it(kind: str) -> None:
    chosen = switch_scheduler(BASE, kind, 10000, target="hf")
    given = _trainer_accepts(chosen, TRAINING, world_size=1)["scheduler"]["params"]
    assert given.get("total_num_steps", 500) == 500 and given["warmup_num_steps"] == 20
    if kind != "WarmupCosineLR":
        assert given["warmup_max_lr"] == 2e-4


def test_the_steps_written_for_plain_deepspeed_are_refused_by_the_trainer() -> None:
    chosen = switch_scheduler(BASE, "WarmupDecayLR", 10000)
    assert chosen["scheduler"]["params"] == {"total_num_steps": 10000}
    with pytest.raises(ValueError, match="total_num_steps"):
        _trainer_accepts(chosen, TRAINING, world_size=1)


def test_written_values_stay_under_the_trainer() -> None:
    config = {**BASE, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 7}}}
    params = switch_scheduler(config, "WarmupDecayLR", 10000, target="hf")["scheduler"]["params"]
    assert params == {"warmup_num_steps": 7, "warmup_max_lr": "auto", "total_num_steps": "auto"}
    assert switch_scheduler(config, "OneCycle", 10000, target="hf")["scheduler"]["params"] == {}


def test_no_scheduler_under_the_trainer_is_its_own_scheduler() -> None:
    captions = texts(app(dict(BASE), "pages/optimizer.py", target="hf").caption)
    assert any("HF Trainer creates its own" in c and "lr_scheduler_type" in c for c in captions)
    assert not any("stays at the optimizer's" in c for c in captions)
    plain = texts(app(dict(BASE), "pages/optimizer.py", target="deepspeed").caption)
    assert any("stays at the optimizer's `lr`" in c for c in plain)


def test_choosing_a_scheduler_on_the_page_for_the_trainer_writes_auto() -> None:
    at = app(dict(BASE), "pages/optimizer.py", target="hf")
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupDecayLR").run()
    assert at.session_state["config"]["scheduler"]["params"]["total_num_steps"] == "auto"


def test_a_switched_scheduler_for_the_trainer_is_charted_with_the_written_values() -> None:
    """After the switch wrote "auto" for total_num_steps, the chart refused it ("No curve ... resolve it"): it
    filled the "auto" steps with the Trainer's default arguments, which disagreed with the written lr, weight
    decay and warm-up. The arguments it assumes now agree with what the config writes."""
    edited = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.1}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-4,
                                                           "warmup_num_steps": 100}}}
    at = app(edited, "pages/optimizer.py", target="hf", train_steps=12000)
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupCosineLR").run()
    assert at.session_state["config"]["scheduler"]["params"]["total_num_steps"] == "auto"
    assert not at.main.error, [e.value for e in at.main.error]
    assert any("num_training_steps=12000" in c.value for c in at.main.caption)
