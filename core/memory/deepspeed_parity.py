"""Bit-exact re-implementation of DeepSpeed's ZeRO model-state memory estimators.

Mirrors ``deepspeed.runtime.zero.stage_1_and_2.estimate_zero2_model_states_mem_needs`` and
``deepspeed.runtime.zero.stage3.estimate_zero3_model_states_mem_needs`` (DeepSpeed 0.19.8). The
arithmetic keeps Python's left-to-right evaluation order of the originals, so the integers agree bit
for bit even for huge or float parameter counts (``2851e6``).
"""

from __future__ import annotations

import sys

import pandas as pd

# DeepSpeed formats ``f"{OffloadDeviceEnum.cpu:4}"``; for a ``str``-mixin Enum, Python >= 3.11 renders
# the member's repr-like name, older versions the padded value.
_CPU_DEVICE_TEXT = "OffloadDeviceEnum.cpu" if sys.version_info >= (3, 11) else "cpu "

ZERO2_FORMULA = {
    True: "gpu = 2*params; cpu = params*max(4*total_gpus, 16)*buffer_factor",
    False: "gpu = 2*params + int(18*params/total_gpus); cpu = params*4*gpus_per_node*buffer_factor",
}


def estimate_zero2_model_states_mem_needs(
    total_params, num_gpus_per_node=1, num_nodes=1, cpu_offload=True, additional_buffer_factor=1.5
):
    """Return ``(cpu_bytes, gpu_bytes)`` exactly as DeepSpeed's ZeRO-2 estimator does."""
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def estimate_zero3_model_states_mem_needs(
    total_params,
    largest_layer_params,
    num_gpus_per_node=1,
    num_nodes=1,
    cpu_offload=True,
    cpu_offload_params=True,
    zero_init=True,
    additional_buffer_factor=1.5,
):
    """Return ``(cpu_bytes, gpu_bytes, largest_layer_memory)`` exactly as DeepSpeed's ZeRO-3 estimator does.

    As in DeepSpeed, ``largest_layer_memory`` is ``4 * largest_layer_params`` without ``int()``.
    """
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    if cpu_offload:
        # 18 bytes a parameter on the CPU with the parameters offloaded too, else 16
        states = 18 if cpu_offload_params else 16
        gpu_mem = largest_layer_memory + (0 if cpu_offload_params else int(2 * total_params / total_gpus))
        if zero_init:
            cpu_mem = total_params * states * gpus_factor * additional_buffer_factor
        else:
            cpu_mem = total_params * max(4 * num_gpus_per_node, states * gpus_factor) * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        if zero_init:
            cpu_mem = largest_layer_params * 4 * num_gpus_per_node * additional_buffer_factor
        else:
            cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def _device(offloaded: bool) -> str:
    return _CPU_DEVICE_TEXT if offloaded else "none"


def _zero3_formula(cpu_offload: bool, cpu_offload_params: bool, zero_init: bool) -> str:
    if cpu_offload and cpu_offload_params:
        gpu = "4*largest_layer"
        cpu = "params*18/nodes*bf" if zero_init else "params*max(4*gpus_per_node, 18/nodes)*bf"
    elif cpu_offload:
        gpu = "4*largest_layer + int(2*params/total_gpus)"
        cpu = "params*16/nodes*bf" if zero_init else "params*max(4*gpus_per_node, 16/nodes)*bf"
    else:
        gpu = "4*largest_layer + int(18*params/total_gpus)"
        cpu = "largest_layer*4*gpus_per_node*bf" if zero_init else "params*4*gpus_per_node*bf"
    return f"gpu = {gpu}; cpu = {cpu}"


def zero2_all_cold_table(total_params, num_gpus_per_node=1, num_nodes=1, additional_buffer_factor=1.5) -> pd.DataFrame:
    """The rows of DeepSpeed's ``estimate_zero2_model_states_mem_needs_all_cold`` as a DataFrame (bytes)."""
    rows = []
    for cpu_offload in (True, False):
        cpu, gpu = estimate_zero2_model_states_mem_needs(
            total_params, num_gpus_per_node, num_nodes, cpu_offload, additional_buffer_factor
        )
        rows.append(
            {
                "offload_optimizer": "cpu" if cpu_offload else "none",
                "options": f"offload_optimizer={_device(cpu_offload)}",
                "cpu_bytes": cpu,
                "gpu_bytes": gpu,
                "cpu_gib": cpu / 2**30,
                "gpu_gib": gpu / 2**30,
                "formula": ZERO2_FORMULA[cpu_offload],
            }
        )
    return pd.DataFrame(rows)


def zero3_all_cold_table(
    total_params, largest_layer_params, num_gpus_per_node=1, num_nodes=1, additional_buffer_factor=1.5
) -> pd.DataFrame:
    """The six rows of DeepSpeed's ``estimate_zero3_..._all_cold`` as a DataFrame (bytes)."""
    rows = []
    for cpu_offload in (True, False):
        for cpu_offload_params in (True, False):
            if not cpu_offload and cpu_offload_params:
                continue
            for zero_init in (True, False):
                cpu, gpu, llm = estimate_zero3_model_states_mem_needs(
                    total_params,
                    largest_layer_params,
                    num_gpus_per_node,
                    num_nodes,
                    cpu_offload,
                    cpu_offload_params,
                    zero_init,
                    additional_buffer_factor,
                )
                options = (
                    f"offload_param={_device(cpu_offload_params)}, "
                    f"offload_optimizer={_device(cpu_offload)}, zero_init={1 if zero_init else 0}"
                )
                rows.append(
                    {
                        "offload_param": "cpu" if cpu_offload_params else "none",
                        "offload_optimizer": "cpu" if cpu_offload else "none",
                        "zero_init": zero_init,
                        "options": options,
                        "cpu_bytes": cpu,
                        "gpu_bytes": gpu,
                        "largest_layer_memory": llm,
                        "cpu_gib": cpu / 2**30,
                        "gpu_gib": gpu / 2**30,
                        "formula": _zero3_formula(cpu_offload, cpu_offload_params, zero_init),
                    }
                )
    return pd.DataFrame(rows)


def _header(num_nodes, num_gpus_per_node) -> str:
    nodes_str = "nodes" if num_nodes > 1 else "node"
    gpus_str = "GPUs" if num_gpus_per_node > 1 else "GPU"
    return (
        "Estimated memory needed for params, optim states and gradients for a:\n"
        f"HW: Setup with {num_nodes} {nodes_str}, {num_gpus_per_node} {gpus_str} per node.\n"
    )


def _render_rows(table: pd.DataFrame) -> str:
    lines = ["  per CPU  |  per GPU |   Options"]
    for row in table.itertuples():
        lines.append(f" {row.cpu_bytes / 2**30:7.2f}GB | {row.gpu_bytes / 2**30:6.2f}GB | {row.options}")
    return "\n".join(lines) + "\n"


def render_zero2_all_cold(total_params, num_gpus_per_node=1, num_nodes=1, additional_buffer_factor=1.5) -> str:
    """The exact text DeepSpeed's ``estimate_zero2_model_states_mem_needs_all_cold`` prints."""
    table = zero2_all_cold_table(total_params, num_gpus_per_node, num_nodes, additional_buffer_factor)
    return (
        _header(num_nodes, num_gpus_per_node)
        + f"SW: Model with {int(total_params / 1e6)}M total params.\n"
        + _render_rows(table)
    )


def render_zero3_all_cold(
    total_params, largest_layer_params, num_gpus_per_node=1, num_nodes=1, additional_buffer_factor=1.5
) -> str:
    """The exact text DeepSpeed's ``estimate_zero3_model_states_mem_needs_all_cold`` prints."""
    table = zero3_all_cold_table(
        total_params, largest_layer_params, num_gpus_per_node, num_nodes, additional_buffer_factor
    )
    return (
        _header(num_nodes, num_gpus_per_node) + f"SW: Model with {int(total_params / 1e6)}M total params, "
        f"{int(largest_layer_params / 1e6)}M largest layer params.\n" + _render_rows(table)
    )
