"""Safe fixes keep what the config means: the precision DeepSpeed (or the HF Trainer's Accelerate) ends up with
is the same before and after ``dsconfig fix``."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from core.autofix import fix_until_stable
from core.effective import effective
from core.validate import validate

BASE = {"train_micro_batch_size_per_gpu": 1}


def test_a_null_bf16_leaves_bfloat16_in_charge_and_the_safe_fix_keeps_bf16_on():
    config = {**BASE, "bf16": None, "bfloat16": {"enabled": True}}
    assert effective(config).precision == "bf16"  # DeepSpeed reads `bfloat16` when `bf16` is null
    finding = next(f for f in validate(config).findings if f.path == "bfloat16")
    assert finding.code == "deprecated.key" and finding.fix.safe and "null" in finding.message
    fixed = fix_until_stable(copy.deepcopy(config)).config
    assert fixed == {**BASE, "bf16": {"enabled": True}}
    assert effective(fixed).precision == "bf16"


def _accelerate_sections(config: dict, mixed_precision: str) -> dict:
    """The config after accelerate's own DeepSpeedPlugin.set_mixed_precision (the HF Trainer's path)."""
    from accelerate.utils.dataclasses import DeepSpeedPlugin

    ds_config = copy.deepcopy(config)
    plugin = SimpleNamespace(deepspeed_config=ds_config, enable_msamp=False, fill_match=lambda *a, **k: None)
    DeepSpeedPlugin.set_mixed_precision(plugin, mixed_precision)
    return ds_config


@pytest.mark.parametrize("mixed_precision", ["no", "bf16", "fp16"])
def test_under_the_hf_trainer_bfloat16_is_never_read_so_the_safe_fix_removes_it(mixed_precision):
    pytest.importorskip("accelerate")
    config = {**BASE, "bfloat16": {"enabled": True}}
    seen = _accelerate_sections(config, mixed_precision)
    assert "bf16" in seen  # Accelerate wrote its own section: DeepSpeed never reads `bfloat16`
    finding = next(f for f in validate(config, target="hf").findings if f.path == "bfloat16")
    assert finding.code == "deprecated.bfloat16-ignored" and finding.fix.safe
    fixed = fix_until_stable(copy.deepcopy(config), target="hf").config
    assert fixed == BASE
    # what DeepSpeed then reads is the same before and after the fix
    assert effective(_accelerate_sections(fixed, mixed_precision)).precision == effective(seen).precision
