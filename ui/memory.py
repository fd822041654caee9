"""Memory numbers for the app, from ``core.memory``.

Until the full per-GPU model (``core.memory.estimate``) lands, the app uses DeepSpeed's own ZeRO-2/3
model-state estimators (bit-exact copies in ``core.memory``): parameters, gradients and optimizer
states, not activations. They need the model's total and largest-layer parameter counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import memory

GIB = 2**30


@dataclass(frozen=True)
class ModelStates:
    """Model-state memory of the current config (bytes)."""

    gpu_bytes: int
    cpu_bytes: int
    """CPU RAM per node."""
    option: str
    """Which of DeepSpeed's estimator rows this is."""
    covers: str = "parameters, gradients and optimizer states (no activations)"


def _offload(config: Mapping[str, Any], which: str) -> bool:
    zero = config.get("zero_optimization")
    section = zero.get(which) if isinstance(zero, Mapping) else None
    return isinstance(section, Mapping) and section.get("device") in ("cpu", "nvme")


def model_params(context: Mapping[str, Any]) -> tuple[int, int] | None:
    """(total, largest layer) parameter counts from the context, or None when no model is chosen."""
    total, largest = context.get("total_params"), context.get("largest_layer_params")
    if not total or not largest:
        return None
    return int(total), int(largest)


def model_states(config: Mapping[str, Any], context: Mapping[str, Any], stage: int) -> ModelStates | None:
    """DeepSpeed's estimate for the config's stage and offload (None: no model, or stage 0/1 which
    DeepSpeed has no estimator for)."""
    params = model_params(context)
    if params is None or stage not in (2, 3):
        return None
    total, largest = params
    nodes, gpus = int(context["nodes"]), int(context["gpus_per_node"])
    off_opt = _offload(config, "offload_optimizer")
    if stage == 2:
        cpu, gpu = memory.estimate_zero2_model_states_mem_needs(total, gpus, nodes, cpu_offload=off_opt)
        return ModelStates(int(gpu), int(cpu), f"ZeRO-2, offload_optimizer={'cpu' if off_opt else 'none'}")
    # DeepSpeed's estimator has no row for parameter offload without optimizer offload.
    off_par = _offload(config, "offload_param") and off_opt
    cpu, gpu, _ = memory.estimate_zero3_model_states_mem_needs(
        total, largest, gpus, nodes, cpu_offload=off_opt, cpu_offload_params=off_par, zero_init=True
    )
    return ModelStates(
        int(gpu), int(cpu),
        f"ZeRO-3, offload_param={'cpu' if off_par else 'none'}, offload_optimizer={'cpu' if off_opt else 'none'}",
    )


def options_table(context: Mapping[str, Any]) -> pd.DataFrame | None:
    """Every stage-2/3 offload option DeepSpeed estimates, for the user's model and GPUs (GiB)."""
    params = model_params(context)
    if params is None:
        return None
    total, largest = params
    nodes, gpus = int(context["nodes"]), int(context["gpus_per_node"])
    z2 = memory.zero2_all_cold_table(total, gpus, nodes)
    z2.insert(0, "stage", 2)
    z2["offload_param"] = "none"
    z3 = memory.zero3_all_cold_table(total, largest, gpus, nodes)
    z3.insert(0, "stage", 3)
    z3 = z3[z3["zero_init"]]
    table = pd.concat([z2, z3], ignore_index=True)
    table["label"] = table.apply(
        lambda r: f"ZeRO-{r['stage']} opt={r['offload_optimizer']} param={r['offload_param']}", axis=1
    )
    return table[["label", "stage", "offload_optimizer", "offload_param", "gpu_gib", "cpu_gib"]]


#: The ZeRO paper's (Rajbhandari et al. 2020, Figure 1) mixed-precision Adam accounting, bytes per parameter:
#: fp16 parameters, fp16 gradients, and K = 12 bytes of fp32 optimizer state (master weights, momentum,
#: variance). It is the picture the paper teaches ZeRO with, not a full estimate (no activations, buffers).
PAPER_BYTES = (("parameters (fp16)", 2), ("gradients (fp16)", 2), ("optimizer states (fp32)", 12))
#: From which stage on each component is partitioned over the data-parallel GPUs.
PARTITIONED_FROM = {"parameters (fp16)": 3, "gradients (fp16)": 2, "optimizer states (fp32)": 1}


def zero_figure(total_params: int, world_size: int, stages: tuple[int, ...] = (0, 1, 2, 3)) -> pd.DataFrame:
    """Per-GPU GiB of each component under each ZeRO stage (the paper's Figure 1 for this model and GPU count)."""
    rows = []
    for stage in stages:
        for component, per_param in PAPER_BYTES:
            share = world_size if stage >= PARTITIONED_FROM[component] else 1
            rows.append({"stage": stage, "component": component,
                         "gib_per_gpu": total_params * per_param / share / GIB})
    return pd.DataFrame(rows)


def world_size_sweep(total_params: int, stage: int, sizes: tuple[int, ...]) -> pd.DataFrame:
    """Per-GPU GiB of the paper's model states for ``stage`` as the GPU count grows."""
    rows = []
    for n in sizes:
        total = zero_figure(total_params, n, (stage,))["gib_per_gpu"].sum()
        rows.append({"gpus": n, "gib_per_gpu": total})
    return pd.DataFrame(rows)
