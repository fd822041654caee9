"""Which offloaded host memory is pinned: the estimate against what a real ``deepspeed.initialize`` pins.

DeepSpeed pins host memory through its accelerator's ``pin_memory``; on the CPU that returns the tensor itself,
so a worker that wraps it records the storage of every tensor DeepSpeed asked to pin. After one step each
offloaded part (master weights, optimizer states, gradients, ZeRO-3's parameter partition) is pinned when its
storage is one of those. Found by reading DeepSpeed's source in a hunt, confirmed here: ``pin_memory`` of
``offload_optimizer`` pins ZeRO-1/2's master partition and the gradients but never the optimizer states (made with
``zeros_like``) nor ZeRO-3's master copy (``.to("cpu").clone()``); ZeRO-3 pins the offloaded parameter partition
whatever ``offload_param.pin_memory`` says. The estimate used to follow the flag for all of them.
"""

from __future__ import annotations

import textwrap

import pytest

from core import memory
from tests.oracle.initialize import TINY_MODEL_WORKER, run_tiny_worker

pytest.importorskip("deepspeed")
pytestmark = [pytest.mark.deepspeed, pytest.mark.slow]

WORKER = TINY_MODEL_WORKER + textwrap.dedent("""
    from deepspeed.accelerator import get_accelerator
    accelerator = get_accelerator()
    pinned_storages = []
    pin_memory = accelerator.pin_memory

    def recording_pin_memory(tensor, *args, **kwargs):
        out = pin_memory(tensor, *args, **kwargs)
        pinned_storages.append((out.untyped_storage().data_ptr(), out.untyped_storage().nbytes()))
        return out

    accelerator.pin_memory = recording_pin_memory
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    loss = engine(torch.randn(2, 64, dtype=torch.bfloat16)).float().pow(2).mean()
    engine.backward(loss)
    engine.step()

    def is_pinned(t):
        ptr = t.untyped_storage().data_ptr()
        return any(start <= ptr < start + size for start, size in pinned_storages)

    def part(tensors):
        tensors = [t for t in tensors if torch.is_tensor(t) and t.numel() > 0]
        return {"bytes": sum(t.numel() * t.element_size() for t in tensors),
                "pinned": sorted({is_pinned(t) for t in tensors})}

    masters = list(getattr(optimizer, "single_partition_of_fp32_groups", None)
                   or optimizer.fp32_partitioned_groups_flat)
    out = {"P": sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in model.parameters()),
           "master": part(masters), "master_grad": part([m.grad for m in masters]),
           "states": part([t for s in optimizer.optimizer.state.values() for t in s.values()
                           if torch.is_tensor(t) and t.dim() > 0])}
    if getattr(optimizer, "fp16_partitioned_groups_flat", None):
        out["param_partition"] = part(optimizer.fp16_partitioned_groups_flat)
    if getattr(optimizer, "grad_partitions_flat_buffer", None) is not None:
        out["grad_partition"] = part([optimizer.grad_partitions_flat_buffer])
    print("RESULT" + json.dumps(out))
""")

#: each real part and the estimate's component for it (bf16, no grad_accum_dtype: 16-bit reduced gradients)
COMPONENTS = {
    "master": "fp32 master weights (offloaded)",
    "states": "optimizer states",
    "master_grad": "fp32 gradients (partition, offloaded)",
    "param_partition": "parameters (partition, offloaded to cpu)",
    "grad_partition": "16-bit gradients (reduced partition, offloaded)",
}


def _run_deepspeed(cfg: dict) -> dict:
    return run_tiny_worker(WORKER, cfg)


@pytest.mark.parametrize("pin_memory", [True, False])
@pytest.mark.parametrize("zero", [
    {"stage": 2, "offload_optimizer": {"device": "cpu"}},
    {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}},
], ids=["zero2-optimizer", "zero3-optimizer-and-parameters"])
def test_the_estimate_pins_what_deepspeed_pins(zero, pin_memory):
    zero = {**zero, **{k: {**v, "pin_memory": pin_memory} for k, v in zero.items() if isinstance(v, dict)}}
    cfg = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": zero,
           "zero_force_ds_cpu_optimizer": False,
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    real = _run_deepspeed(cfg)
    est = memory.estimate(cfg, memory.ModelCounts(real.pop("P"), 0), memory.Hardware(gpus_per_node=1),
                          memory.Shape())
    got, want = {}, {}
    for key, seen in real.items():
        assert len(seen["pinned"]) == 1, f"{key}: partly pinned {seen}"
        component = next(c for c in est.components if c.name.startswith(COMPONENTS[key]))
        got[key] = {"bytes": component.bytes, "pinned": component.pinned, "device": component.device}
        want[key] = {"bytes": seen["bytes"], "pinned": seen["pinned"][0], "device": "cpu"}
    assert got == want
    # what the flag governs and what it does not, as the real run showed it
    assert want["states"]["pinned"] is False
    assert want["master"]["pinned"] is (pin_memory and zero["stage"] < 3)
    assert want["master_grad"]["pinned"] is pin_memory
    if zero["stage"] == 3:
        assert want["param_partition"]["pinned"] is True
    assert est.cpu_pinned_bytes_per_node == sum(c.bytes for c in est.components if c.device == "cpu" and c.pinned)
