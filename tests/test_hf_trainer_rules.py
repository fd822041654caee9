"""Validator rules for the HF target judged by the real transformers: a config the validator passes, the Trainer
takes (``TrainingArguments(deepspeed=...)`` and ``trainer_config_finalize``), and each error's fix gives one it
takes."""

from __future__ import annotations

import copy

import pytest

import core
from tests.test_export import _trainer_accepts

BASE = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
        "zero_optimization": {"stage": 2}}


@pytest.mark.parametrize(("config", "code"), [
    ({**BASE, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
      "scheduler": {"type": "WarmupLR", "params": "auto"}}, "scheduler.params-not-object"),
    ({**BASE, "optimizer": {"type": "AdamW", "params": "auto"}}, "optimizer.params-not-object"),
    ({**BASE, "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": ["auto", "auto"]}}},
     "auto.not-filled"),
    ({**BASE, "optimizer": {"type": "AdamW", "params": {"betas": ["auto", 0.95]}}}, "auto.not-filled"),
], ids=["scheduler-params-auto", "optimizer-params-auto", "betas-items-auto", "beta1-auto"])
def test_an_error_the_trainer_also_refuses_and_its_fix_it_takes(config, code):
    """scheduler.params "auto" passed the HF validator, and TrainingArguments crashed ('str' object has no attribute
    'get' in fill_match); so did "betas": ["auto", "auto"], which the Trainer compares with its own betas (it
    fills only a whole "auto")."""
    with pytest.raises((AttributeError, ValueError)):
        _trainer_accepts(config, {}, world_size=1)
    finding = next(f for f in core.validate(config, world_size=1, target="hf").errors if f.code == code)
    fixed = finding.fix.apply(copy.deepcopy(config))
    assert not core.validate(fixed, world_size=1, target="hf").errors
    assert _trainer_accepts(fixed, {}, world_size=1)
