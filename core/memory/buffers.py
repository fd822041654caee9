"""Buffers and overheads: optimizer-step transients, communication buckets, model loading and process memory
on the CPU, and the GPU allowances (CUDA context, allocator fragmentation) that depend on all the rest."""

from __future__ import annotations

import numpy as np

from core.memory.parts import Inputs, Part, dtype_label
from core.memory.result import GIB, Allowances


def step_buffers(x: Inputs) -> list[Part]:
    """GPU transients of the optimizer step (none when the optimizer runs offloaded)."""
    st, n, p, part = x.st, x.n, x.p, x.part
    out: list[Part] = []
    if st.bf16_optimizer:
        # BF16_Optimizer steps on narrow() views of its fp32 gradient buffer (fp32_groups_gradient_flat_partition)
        # and copies the updated partition into the 16-bit flat groups in place: no step copy
        return out
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
    # no all-gather bucket after the ZeRO-1/2 step: all_gather_dp_groups (runtime/utils.py) gathers each rank's
    # partition straight into the flat 16-bit groups (all_gather_into_tensor, else all_gather into narrow() views of
    # them); allgather_bucket_size only sets how many pieces the fallback sends
    return out


def comm_buckets(x: Inputs) -> list[Part]:
    """Gradient all-reduce / reduce buckets."""
    st, e, n, p = x.st, x.e, x.n, x.p
    if st.stage == 0 or st.bf16_optimizer:
        return _engine_allreduce(x)
    rbs = st.reduce_bucket_size
    dtypes = st.reduce_buffer_bytes
    element = "+".join(str(b) for b in dtypes)
    element = element if len(dtypes) == 1 else f"({element})"
    per_dtype = "" if len(dtypes) == 1 else " (one bucket per communication dtype)"
    if st.stage == 3:
        if not st.contiguous_gradients:  # the bucket's gradients are flattened for the reduce-scatter
            return [Part("gradient reduce bucket", "gpu", e * min(rbs, p) + 0 * n, f"{e}*min(reduce_bucket_size, P)",
                         "buffers", "forward_backward")]
        # stage3.py: allocated once at initialize (contiguous_gradients), kept through the optimizer step
        return [Part(f"gradient reduce bucket{'s' if len(dtypes) > 1 else ''} (contiguous_gradients)", "gpu",
                     sum(dtypes) * rbs + 0 * n, f"{element}*reduce_bucket_size{per_dtype}", "buffers", "persistent")]
    # stage_1_and_2.py: ZeRO-Offload forces contiguous gradients (``contiguous_gradients or self.cpu_offload``)
    if not (st.contiguous_gradients or st.offload_optimizer != "none"):
        return [Part("gradient reduce bucket", "gpu", e * min(rbs, p) + 0 * n, f"{e}*min(reduce_bucket_size, P)",
                     "buffers", "forward_backward")]
    # setup_buckets (backward_prologue before 0.17): torch.empty(reduce_bucket_size) per bucket, a second with
    # overlap_comm; freed after each backward (_release_ipg_buffers)
    copies = 2 if st.overlap_comm else 1
    return [Part("gradient reduce bucket(s)", "gpu", copies * sum(dtypes) * rbs + 0 * n,
                 f"{copies}*{element}*reduce_bucket_size{per_dtype}"
                 + (" (overlap_comm double buffer)" if copies == 2 else ""), "buffers", "forward_backward")]


def _engine_allreduce(x: Inputs) -> list[Part]:
    """The engine's own gradient all-reduce (engine.py ``buffered_allreduce_fallback``): at stage 0 it flattens the
    gradients 5e8 elements at a time and casts the flat copy to the communication dtype when that differs
    (``allreduce_bucket``). ZeRO-1's BF16_Optimizer (no ``reduce_gradients``) hands it its fp32 flat gradient buffer
    per parameter group: flattening one tensor copies nothing, so only the cast to a 16-bit communication dtype
    allocates, a whole group at once (bounded here by P)."""
    st, n, p = x.st, x.n, x.p
    comm = st.communication_bytes
    if st.bf16_optimizer:
        grad = st.grad_accum_bytes
        cast = comm if comm != grad else 0
        return [Part("gradient all-reduce bucket", "gpu", cast * p + 0 * n,
                     f"{cast}*P (fp32 flat gradients cast to communication_data_type)" if cast else
                     "0 (fp32 flat gradients all-reduced in place)", "buffers", "forward_backward")]
    grad = x.e
    element, formula = grad, f"{grad}"
    if comm != grad:
        element, formula = grad + comm, f"({grad}+{comm})"
    return [Part("gradient all-reduce bucket", "gpu", element * min(500_000_000, p) + 0 * n,
                 f"{formula}*min(5e8, P)" + (" (flat copy cast to communication_data_type)" if comm != grad else ""),
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
