"""``zero.offload-param-below-3``'s fix moved the config to ZeRO-3 even where the release refuses its 16-bit master
weights there (fp16_master_weights_and_grads is ZeRO-2 only in 0.17.6; bf16 master weights without CPU-Adam
offload in 0.19.8): the unsafe fix broke a config DeepSpeed accepted, and repeated ``fix --unsafe`` runs flipped
between stage 2 and 3 (a hunt of 30 Nov 2026). Where stage 3 is refused, the fix removes offload_param."""

from __future__ import annotations

import pytest

from core.autofix import fix_until_stable
from core.validate import validate

ADAMW = {"type": "AdamW", "params": {"lr": 1e-4}}
CASES = [
    ("0.17.6", {"train_micro_batch_size_per_gpu": 1, "optimizer": ADAMW,
                "fp16": {"enabled": True, "fp16_master_weights_and_grads": True},
                "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                                      "offload_param": {"device": "cpu"}}}),
    ("0.19.8", {"train_micro_batch_size_per_gpu": 2, "optimizer": ADAMW,
                "bf16": {"enabled": True, "bf16_master_weights_and_grads": True},
                "data_types": {"grad_accum_dtype": "fp32"},
                "zero_optimization": {"stage": 1, "offload_param": {"device": "cpu"}}}),
]


@pytest.mark.parametrize(("version", "config"), CASES, ids=[v for v, _ in CASES])
def test_the_fix_removes_the_offload_where_stage_3_is_refused_and_stays_fixed(version, config):
    assert validate(config, version=version).ok
    finding = next(f for f in validate(config, version=version).findings if f.code == "zero.offload-param-below-3")
    assert [(op.op, op.path) for op in finding.fix.ops] == [("delete", "zero_optimization.offload_param")]
    assert "16-bit master weights" in finding.suggestion
    fixed = fix_until_stable(config, unsafe=True, version=version).config
    assert validate(fixed, version=version).ok and "offload_param" not in fixed["zero_optimization"]
    assert fix_until_stable(fixed, unsafe=True, version=version).config == fixed  # a second run changes nothing


def test_the_fix_still_moves_to_stage_3_where_it_runs():
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": ADAMW, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}
    finding = next(f for f in validate(config).findings if f.code == "zero.offload-param-below-3")
    assert [(op.op, op.path, op.value) for op in finding.fix.ops] == [("set", "zero_optimization.stage", 3)]
