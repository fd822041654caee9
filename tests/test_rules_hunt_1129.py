"""Disagreements with DeepSpeed found by the 2026-11-29 bug hunt, each reproduced on the CPU: optimizer and
scheduler parameters written beside ``params`` instead of inside it were told to check their spelling, and a
top-level key inside the optimizer was told it "belongs in `the top level`".
"""

from __future__ import annotations

from typing import Any

import pytest

from core.validate import validate

B: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}


# ------------------------------------------------------------------ parameters beside params
@pytest.mark.parametrize(("section", "key", "value"), [
    ("optimizer", "lr", 0.001), ("optimizer", "betas", [0.9, 0.95]), ("scheduler", "warmup_num_steps", 10),
])
def test_a_parameter_beside_params_is_moved_into_params(section, key, value):
    config = {**B, "optimizer": {"type": "AdamW", "params": {"weight_decay": 0.01}},
              "scheduler": {"type": "WarmupLR", "params": {}}}
    config[section] = {**config[section], key: value}
    finding = next(f for f in validate(config).findings if f.path == f"{section}.{key}")
    assert finding.code == "keys.unknown-ignored"
    assert f"`{section}.params.{key}`" in finding.suggestion and "spelling" not in finding.suggestion
    assert (finding.fix.ops[0].op, finding.fix.ops[0].to) == ("move", f"{section}.params.{key}")


def test_a_top_level_key_inside_the_optimizer_says_the_top_level_plainly():
    config = {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}, "gradient_clipping": 1.0}}
    finding = next(f for f in validate(config).findings if f.path == "optimizer.gradient_clipping")
    assert "`the top level`" not in finding.suggestion and "top level" in finding.suggestion
    assert (finding.fix.ops[0].op, finding.fix.ops[0].to) == ("move", "gradient_clipping")
