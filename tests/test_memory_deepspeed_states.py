"""Optimizer-state and master-weight bytes: the estimate against what the real DeepSpeed allocates.

Each case runs ``deepspeed.initialize`` on the CPU (world size 1, bf16) in a subprocess, takes one step, and
sums the optimizer's state tensors and fp32 master partition; the estimate for the same parameter count and
config must give the same bytes.
"""

from __future__ import annotations

import textwrap

import pytest

from core import memory
from tests.oracle.initialize import TINY_MODEL_WORKER, run_tiny_worker

pytest.importorskip("deepspeed")
pytestmark = [pytest.mark.deepspeed, pytest.mark.slow]

WORKER = TINY_MODEL_WORKER + textwrap.dedent("""
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    loss = engine(torch.randn(2, 64, dtype=torch.bfloat16)).float().pow(2).mean()
    engine.backward(loss)
    engine.step()
    inner = optimizer.optimizer
    states = sum(t.numel() * t.element_size() for s in inner.state.values() for t in s.values()
                 if torch.is_tensor(t) and t.dim() > 0)
    master = 0
    for name in ("single_partition_of_fp32_groups", "fp32_partitioned_groups_flat"):
        if hasattr(optimizer, name):
            master = sum(t.numel() * t.element_size() for t in getattr(optimizer, name))
            break
    print("RESULT" + json.dumps({"P": sum(p.numel() for p in model.parameters()), "states": states,
                                 "master": master}))
""")


def _run_deepspeed(cfg: dict) -> dict:
    return run_tiny_worker(WORKER, cfg)


@pytest.mark.parametrize(
    ("stage", "optimizer", "params"),
    [
        (1, "AdamW", {"torch_adam": True}),
        (3, "AdamW", {"torch_adam": True}),
        (2, "Adagrad", {}),
        (2, "SGD", {"momentum": 0.9}),
    ],
)
def test_optimizer_states_and_master_weights_match_deepspeed(stage, optimizer, params):
    cfg = {
        "train_micro_batch_size_per_gpu": 1,
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": stage},
        "zero_allow_untested_optimizer": True,
        "optimizer": {"type": optimizer, "params": {"lr": 1e-3, **params}},
    }
    _assert_estimate_matches(cfg, "fp32 master weights")


def _assert_estimate_matches(cfg: dict, master_name: str) -> None:
    real = _run_deepspeed(cfg)
    est = memory.estimate(cfg, memory.ModelCounts(real["P"], 0), memory.Hardware(gpus_per_node=1), memory.Shape())
    states = next(c for c in est.components if c.name.startswith("optimizer states"))
    master = next(c for c in est.components if c.name.startswith(master_name))
    assert states.bytes == real["states"]
    assert master.bytes == real["master"]


_ADAMW = {"type": "AdamW", "params": {"lr": 1e-3}}
_BF16_MASTER = {"enabled": True, "bf16_master_weights_and_grads": True}


@pytest.mark.parametrize(
    ("bf16", "zero", "optimizer"),
    [
        # bf16 master weights need CPU offload with DeepSpeedCPUAdam, whose states stay fp32 by default
        (_BF16_MASTER, {"stage": 2, "offload_optimizer": {"device": "cpu"}}, _ADAMW),
        # with bf16_optimizer_states the states take the master weights' dtype on the GPU (zeros_like) ...
        ({**_BF16_MASTER, "bf16_optimizer_states": True}, {"stage": 2},
         {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}),
        # ... and DeepSpeedCPUAdam is built with fp32_optimizer_states=False
        ({**_BF16_MASTER, "bf16_optimizer_states": True}, {"stage": 3, "offload_optimizer": {"device": "cpu"}},
         _ADAMW),
    ],
)
def test_bf16_master_weights_and_optimizer_states_match_deepspeed(bf16, zero, optimizer):
    cfg = {"train_micro_batch_size_per_gpu": 1, "bf16": bf16, "zero_optimization": zero, "optimizer": optimizer}
    _assert_estimate_matches(cfg, "16-bit master weights")
