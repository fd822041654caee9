"""Master-weight copies and gradient partitions: the estimate against what a real ``deepspeed.initialize`` allocates.

Each case runs DeepSpeed on the CPU (world size 1) in a subprocess, takes one backward pass and reports:

- ``master``: bytes of the optimizer's master partition that do NOT share storage with the model's (16-bit or
  fp32) parameters, i.e. the separate copy ZeRO keeps; at stage 0 the torch optimizer's own parameters;
- ``grad``: the gradient partition DeepSpeed reduces into: ZeRO-3's ``grad_partitions_flat_buffer`` (allocated at
  initialize), ZeRO-1/2's fp32 flat partition (built in backward when ``grad_accum_dtype`` is fp32);
- ``master_grad``: the ``.grad`` of the master partition when the optimizer is offloaded.

On a CPU host the accelerator is the CPU, so "gpu" and "cpu" cannot be told apart by the tensor's device; the
device of each part comes from DeepSpeed's source (``self.device`` is "cpu" under optimizer offload).
"""

from __future__ import annotations

import textwrap

import pytest

from core import memory
from tests.oracle.initialize import TINY_MODEL_WORKER, run_tiny_worker

pytest.importorskip("deepspeed")
pytestmark = [pytest.mark.deepspeed, pytest.mark.slow]

WORKER = TINY_MODEL_WORKER + textwrap.dedent("""
    params = sum(p.numel() for p in model.parameters())  # before ZeRO-3 empties the parameters
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    dtype = torch.bfloat16 if cfg.get("bf16", {}).get("enabled") else torch.float32
    loss = engine(torch.randn(2, 64, dtype=dtype)).float().pow(2).mean()
    engine.backward(loss)

    def nbytes(t):
        return t.numel() * t.element_size()

    def storage(t):
        return t.untyped_storage().data_ptr()

    weights = {storage(p) for p in engine.module.parameters() if p.numel() > 0}
    for name in ("bit16_groups_flat", "fp16_partitioned_groups_flat"):
        weights |= {storage(t) for t in getattr(optimizer, name, None) or [] if t is not None and t.numel() > 0}
    masters = None
    for name in ("single_partition_of_fp32_groups", "fp32_partitioned_groups_flat"):
        if hasattr(optimizer, name):
            masters = list(getattr(optimizer, name))
            break
    if masters is None:  # stage 0: the torch optimizer itself
        masters = [p for g in optimizer.param_groups for p in g["params"]]
    master = sum(nbytes(t) for t in masters if storage(t) not in weights)
    grad = None
    if getattr(optimizer, "grad_partitions_flat_buffer", None) is not None:
        buf = optimizer.grad_partitions_flat_buffer
        grad = {"bytes": nbytes(buf), "dtype": str(buf.dtype), "device": str(buf.device)}
    else:
        for group in (getattr(optimizer, "averaged_gradients", None) or {}).values():
            flat = getattr(group, "flat_partition", None)
            if flat is not None:
                grad = {"bytes": nbytes(flat), "dtype": str(flat.dtype), "device": str(flat.device)}
    master_grad = sum(nbytes(t.grad) for t in masters if t.grad is not None)
    print("RESULT" + json.dumps({"P": params, "optimizer": type(optimizer).__name__,
                                 "master": master, "master_tensors": len(masters), "grad": grad,
                                 "master_grad": master_grad}))
""")


def _run_deepspeed(cfg: dict) -> dict:
    return run_tiny_worker(WORKER, cfg)


_ADAMW = {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}


def _cfg(zero: dict, precision: str = "fp32", **extra) -> dict:
    cfg = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero, "optimizer": _ADAMW, **extra}
    if precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    return cfg


def _estimate(cfg: dict, params: int) -> dict[str, memory.Component]:
    est = memory.estimate(cfg, memory.ModelCounts(params, 0), memory.Hardware(gpus_per_node=1), memory.Shape())
    return {c.name: c for c in est.components}


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_fp32_zero_keeps_a_separate_fp32_master_copy(stage):
    """fp32 training under ZeRO: the optimizer's master partition is a copy of the weights (4*P/N on the GPU)."""
    cfg = _cfg({"stage": stage})
    real = _run_deepspeed(cfg)
    assert real["master"] == 4 * real["P"]  # a separate copy, not the parameters themselves
    part = _estimate(cfg, real["P"])["fp32 master weights"]
    assert (part.bytes, part.device) == (real["master"], "gpu")
    assert "separate copy" in part.formula


def test_fp32_stage0_has_no_master_copy():
    """Without ZeRO the torch optimizer steps on the model's own fp32 parameters: no master copy."""
    cfg = _cfg({"stage": 0})
    real = _run_deepspeed(cfg)
    assert real["master_tensors"] > 0 and real["master"] == 0
    assert not any("master weights" in name for name in _estimate(cfg, real["P"]))


@pytest.mark.parametrize(("grad_accum", "element"), [(None, 2), ("fp32", 4)])
def test_bf16_zero3_gradient_partition_has_the_grad_accum_dtype(grad_accum, element):
    """ZeRO-3's grad_partitions_flat_buffer has DeepSpeed's gradient accumulation dtype (bf16 unless
    data_types.grad_accum_dtype says fp32)."""
    extra = {"data_types": {"grad_accum_dtype": grad_accum}} if grad_accum else {}
    cfg = _cfg({"stage": 3}, "bf16", **extra)
    real = _run_deepspeed(cfg)
    assert real["grad"]["bytes"] == element * real["P"]
    part = _estimate(cfg, real["P"])["gradients (partition)"]
    assert (part.bytes, part.device) == (real["grad"]["bytes"], "gpu")
    assert part.formula.startswith(f"{element}*P/N")


def test_bf16_zero2_fp32_grad_accum_reduces_into_an_fp32_partition():
    """ZeRO-2, bf16 + grad_accum_dtype fp32: the gradients are reduced into an fp32 flat partition (the optimizer
    steps on it directly: no second fp32 copy during the step)."""
    cfg = _cfg({"stage": 2}, "bf16", data_types={"grad_accum_dtype": "fp32"})
    real = _run_deepspeed(cfg)
    assert real["optimizer"] == "DeepSpeedZeroOptimizer"
    assert real["grad"] == {"bytes": 4 * real["P"], "dtype": "torch.float32", "device": "cpu"}
    parts = _estimate(cfg, real["P"])
    assert parts["gradients (partition)"].bytes == real["grad"]["bytes"]
    assert "fp32 gradient partition during step" not in parts


@pytest.mark.parametrize(("grad_accum", "element"), [(None, 2), ("fp32", 4)])
def test_bf16_zero3_offload_keeps_the_reduced_gradient_partition_in_host_memory(grad_accum, element):
    """ZeRO-3 with offload_optimizer: grad_partitions_flat_buffer is allocated on self.device = "cpu" (pinned when
    pin_memory), besides the fp32 .grad of the master partition."""
    extra = {"data_types": {"grad_accum_dtype": grad_accum}} if grad_accum else {}
    cfg = _cfg({"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": False}}, "bf16",
               zero_force_ds_cpu_optimizer=False, **extra)
    real = _run_deepspeed(cfg)
    assert real["grad"]["device"] == "cpu" and real["grad"]["bytes"] == element * real["P"]
    assert real["master_grad"] == 4 * real["P"]
    parts = _estimate(cfg, real["P"])
    host = parts[f"{'fp32' if element == 4 else '16-bit'} gradients (reduced partition, offloaded)"]
    assert (host.bytes, host.device, host.pinned) == (real["grad"]["bytes"], "cpu", False)
    master_grad = parts["fp32 gradients (partition, offloaded)"]
    assert (master_grad.bytes, master_grad.device) == (real["master_grad"], "cpu")
    pinned = {**cfg, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
    assert _estimate(pinned, real["P"])[host.name].pinned
