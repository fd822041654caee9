"""The HF presets' scheduler claims the Trainer's default linear schedule: checked with DeepSpeed's own
WarmupDecayLR and transformers' get_linear_schedule_with_warmup, after the Trainer's "auto" filling."""

from __future__ import annotations

import pytest

from core.autofill import resolve_auto
from core.presets import BUILTIN_DIR, list_presets

PEAK_LR, WARMUP, TOTAL = 5e-5, 100, 1000

HF_PRESETS = [preset for preset in list_presets([BUILTIN_DIR])[0] if preset.target == "hf"
              and preset.config.get("scheduler", {}).get("type") == "WarmupDecayLR"]


def test_there_are_hf_presets_with_warmup_decay():
    assert len(HF_PRESETS) >= 2


@pytest.mark.deepspeed
@pytest.mark.parametrize("preset", HF_PRESETS, ids=lambda preset: preset.name)
def test_the_hf_presets_warm_up_linearly_as_the_trainer_does(preset):
    """Their justification says WarmupDecayLR "matches the Trainer's default linear schedule", but without
    warmup_type DeepSpeed warms up logarithmically (2.5e-5 at step 10 of 100 where the Trainer is at 5e-6)."""
    import torch
    from deepspeed.runtime.lr_schedules import WarmupDecayLR
    from transformers import get_linear_schedule_with_warmup

    filled = resolve_auto({"scheduler": preset.config["scheduler"]}, learning_rate=PEAK_LR, warmup_steps=WARMUP,
                          num_training_steps=TOTAL)
    params = dict(filled["scheduler"]["params"])

    def curve(make) -> list[float]:
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=PEAK_LR)
        scheduler = make(optimizer)
        rates = []
        for _ in range(TOTAL):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        return rates

    deepspeed_rates = curve(lambda opt: WarmupDecayLR(opt, **params))
    trainer_rates = curve(lambda opt: get_linear_schedule_with_warmup(opt, WARMUP, TOTAL))
    # DeepSpeed's schedule runs one step behind the Trainer's (its first step() sets iteration 0): within one
    # warm-up increment of it everywhere is the same linear schedule; a log warm-up is 4x that off by step 10
    one_step = PEAK_LR / WARMUP
    for step in range(TOTAL):
        assert abs(deepspeed_rates[step] - trainer_rates[step]) <= 1.01 * one_step, step
