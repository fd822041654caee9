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


#: Elastic training with no batch key written and no ignore_non_elastic_batch_info.
ELASTIC_ONLY = {"zero_optimization": {"stage": 2},
                "elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                               "min_gpus": 1, "max_gpus": 64, "version": 0.1}}


def test_elastic_training_under_the_trainer_needs_the_flag_as_the_release_says():
    """A config with elastic training and no batch key passed the HF validator, but accelerate's plugin (built by
    TrainingArguments) writes gradient_accumulation_steps 1, and DeepSpeed 0.19.7 then refuses it
    (ElasticityConfigError): the HF Trainer runs elastic training only with ignore_non_elastic_batch_info. The
    fix sets it and the release's own DeepSpeedConfig takes what the Trainer hands it; plain DeepSpeed takes the
    config as it is, and 0.19.8, which refuses elasticity altogether, says only that."""
    from tests.oracle.oracle import deepspeed_verdict, oracle_available

    def codes(config: dict, target: str, version: str) -> list[str]:
        return [f.code for f in core.validate(config, world_size=8, target=target, version=version).findings]

    given = _trainer_accepts(ELASTIC_ONLY, {}, world_size=8)
    assert given["gradient_accumulation_steps"] == 1 and "gradient_accumulation_steps" not in ELASTIC_ONLY
    finding = next(f for f in core.validate(ELASTIC_ONLY, world_size=8, target="hf", version="0.19.7").errors
                   if f.code == "elasticity.batch-keys")
    assert "accelerate writes gradient_accumulation_steps 1" in finding.message
    assert finding.fix is not None and not finding.fix.safe  # DeepSpeed then trains elastic training's batch
    fixed = finding.fix.apply(copy.deepcopy(ELASTIC_ONLY))
    assert fixed["elasticity"]["ignore_non_elastic_batch_info"] is True
    assert not core.validate(fixed, world_size=8, target="hf", version="0.19.7").errors
    assert "elasticity.batch-keys" in codes(ELASTIC_ONLY, "hf", "0.16.9")
    assert "elasticity.batch-keys" not in codes(ELASTIC_ONLY, "deepspeed", "0.19.7")
    newest = codes(ELASTIC_ONLY, "hf", "0.19.8")
    assert "removed.enabled-section" in newest and "elasticity.batch-keys" not in newest
    reason = oracle_available("0.19.7")
    if reason:
        pytest.skip(reason)
    refused = deepspeed_verdict(given, 8, "0.19.7")
    assert not refused.accepted and "ignore_non_elastic_batch_info" in (refused.message or "")
    assert deepspeed_verdict(ELASTIC_ONLY, 8, "0.19.7").accepted  # plain DeepSpeed: no batch key, no refusal
    assert deepspeed_verdict(_trainer_accepts(fixed, {}, world_size=8), 8, "0.19.7").accepted
