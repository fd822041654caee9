"""Buffers and overheads: optimizer-step transients, communication buckets, model loading and process memory
on the CPU, and the GPU allowances (CUDA context, allocator fragmentation) that depend on all the rest."""

from __future__ import annotations

import numpy as np

from core.memory.parts import Inputs, Part, dtype_label
from core.memory.result import GIB, Allowances


def step_buffers(x: Inputs) -> list[Part]:
    """GPU transients of the optimizer step (none when the optimizer runs offloaded)."""
    st, e, n, p, part = x.st, x.e, x.n, x.p, x.part
    out: list[Part] = []
    if st.stage == 0 or st.offload_optimizer == "none":
        if st.stage == 0 and x.mixed:
            out.append(Part("fp32 gradient copy during step", "gpu", 4 * p + 0 * n,
                            "4*P (FP16_Optimizer flat fp32 grads)", "buffers", "step"))
        # the gradient partition is cast to the master weights' dtype for the step (fp32 unless 16-bit master)
        mb, dtype = st.master_bytes, dtype_label(st.master_bytes)
        # with an fp32 grad_accum_dtype the flat fp32 partition is that tensor already (stage_1_and_2.py step:
        # ``flat_grad_partition.to(self.single_partition_of_fp32_groups[i].dtype)`` copies only to 16-bit master)
        if st.stage in (1, 2) and not (st.fp32_grad_partition and mb == 4):
            out.append(Part(f"{dtype} gradient partition during step", "gpu", mb * part, f"{mb}*P/N", "buffers",
                            "step"))
        elif st.stage == 3:
            out.append(Part(f"{dtype} gradients of one sub-group during step", "gpu",
                            mb * x.sub_group, f"{mb}*{x.sub_group_text}", "buffers",
                            "step"))
    if st.stage in (1, 2):
        out.append(Part("all-gather bucket after step", "gpu", e * np.minimum(st.allgather_bucket_size, p) + 0 * n,
                        f"{e}*min(allgather_bucket_size, P)", "buffers", "step"))
    return out


def comm_buckets(x: Inputs) -> list[Part]:
    """Gradient all-reduce / reduce buckets during backward."""
    st, e, n, p = x.st, x.e, x.n, x.p
    if st.stage == 0:
        return [Part("gradient all-reduce bucket", "gpu", e * min(500_000_000, p) + 0 * n, f"{e}*min(5e8, P)",
                     "buffers", "forward_backward")]
    copies = 2 if (st.overlap_comm and st.stage in (1, 2) and st.contiguous_gradients) else 1
    return [Part("gradient reduce bucket(s)", "gpu", copies * e * min(st.reduce_bucket_size, p) + 0 * n,
                 f"{copies}*{e}*min(reduce_bucket_size, P)" + (" (overlap_comm double buffer)" if copies == 2 else ""),
                 "buffers", "forward_backward")]


def host_overheads(x: Inputs) -> list[Part]:
    """CPU RAM of model construction (before ``deepspeed.initialize``) and of each rank's process."""
    n, gpn, cpu_per_process = x.n, x.gpn, x.allow.cpu_per_process_bytes
    if x.st.stage == 3:
        load = Part("model construction (zero.Init: partitions only)", "cpu", 0 * n, "0 (zero.Init)", "overhead",
                    "load")
    else:
        load = Part("model construction (full fp32 model per rank)", "cpu", 4 * x.p * gpn + 0 * n,
                    "4*P per rank x gpus_per_node (before deepspeed.initialize)", "overhead", "load")
    return [load, Part("process overhead (allowance)", "cpu", cpu_per_process * gpn + 0 * n,
                       f"{cpu_per_process / GIB:g} GiB per rank x gpus_per_node", "overhead", "persistent")]


def gpu_allowances(parts: list[Part], allow: Allowances) -> list[Part]:
    """The CUDA context and the allocator allowance, which depend on the other GPU bytes at the peak."""
    def on_gpu(phase: str):
        return sum(r.value for r in parts if r.device == "gpu" and r.phase == phase)

    peak = on_gpu("persistent") + np.maximum(on_gpu("forward_backward"), on_gpu("step"))
    return [
        Part("CUDA context and workspaces (allowance)", "gpu", allow.cuda_context_bytes + 0 * peak,
             f"{allow.cuda_context_bytes / 2**20:g} MiB", "overhead", "persistent"),
        Part("allocator fragmentation (allowance)", "gpu", allow.allocator_fraction * peak,
             f"{allow.allocator_fraction:g} x other GPU bytes at peak", "overhead", "persistent"),
    ]
