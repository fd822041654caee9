"""Model states: parameters (with ZeRO-3's gather buffers), gradients, fp32 master weights and optimizer states,
on the GPU or offloaded to CPU / NVMe."""

from __future__ import annotations

import numpy as np

from core.effective import bf16_optimizer_reason
from core.memory.parts import Inputs, Part, dtype_label
from core.models.arch import ModelSpec


def persists(numel: int, threshold: int) -> bool:
    """Whether ZeRO-3 keeps a parameter tensor of ``numel`` elements whole on every GPU: DeepSpeed decides per
    tensor, ``param.ds_numel <= param_threshold`` (parameter_offload.py ``mark_persistent_parameters`` over
    ``module.named_parameters()``, the same in every release 0.16 to 0.19)."""
    return numel <= threshold


def persistent_parameters(model: object, threshold: int) -> int:
    """Parameters ZeRO-3 keeps whole on every GPU under ``stage3_param_persistence_threshold``: every parameter
    tensor (a weight, a bias, a norm's scale) that ``persists``, a tied one once; 0 for a model known by counts."""
    if not isinstance(model, ModelSpec):
        return 0
    return sum(t * m.count for m in model.modules if not m.tied for t in m.tensor_sizes if persists(t, threshold))


def grads_offloaded(x: Inputs) -> bool:
    """ZeRO-2/3 with an offloaded optimizer keeps the fp32 gradient partition on the CPU, not the GPU."""
    return x.st.stage >= 2 and x.st.offload_optimizer != "none"


def parameters(x: Inputs) -> list[Part]:
    """The compute-dtype parameters; at stage 3 the partition, its offload, hpZ and the gathered layers."""
    st, e, n, p, part = x.st, x.e, x.n, x.p, x.part
    if st.stage < 3:
        return [Part("parameters", "gpu", e * p + 0 * n, f"{e}*P (full {st.precision} copy on every GPU)",
                     "model_states", "persistent")]
    out: list[Part] = []
    persist = persistent_parameters(x.model, st.param_persistence_threshold)
    if st.offload_param == "none":
        out.append(Part("parameters (partition)", "gpu", e * part, f"{e}*P/N", "model_states", "persistent"))
    else:
        where = st.offload_param
        # offload_param's pin_memory does not reach this buffer: stage3.py _create_param_groups_fp16_flat_cpu_memory
        # moves the partition into a flat CPU buffer it always pins (checked by recording the CPU accelerator's
        # pin_memory calls in a real run, tests/test_memory_pinned.py)
        out.append(Part(f"parameters (partition, offloaded to {where})", where, e * part * x.gpn,
                        f"{e}*P/N per rank x gpus_per_node" + (" (always pinned)" if where == "cpu" else ""),
                        "model_states", "persistent", pinned=where == "cpu"))
        if where == "nvme":
            # stage3.py _create_param_groups_fp16_flat_cpu_memory: with params offloaded, a pinned flat CPU buffer per
            # parameter group holds the partition; with NVMe only its first max_in_cpu elements (read, not measured:
            # the async I/O op has no build in the tests)
            held = np.minimum(part, st.offload_param_max_in_cpu)
            out.append(Part("parameters held in CPU memory (max_in_cpu, pinned)", "cpu", e * held * x.gpn + 0 * n,
                            f"{e}*min(P/N, max_in_cpu={st.offload_param_max_in_cpu:g}) per rank x gpus_per_node",
                            "model_states", "persistent", pinned=True))
            out.append(Part("parameter swap buffers (pinned)", "cpu",
                            st.offload_param_buffer_count * st.offload_param_buffer_size * e * x.gpn + 0 * n,
                            f"buffer_count*buffer_size*{e} per rank x gpus_per_node", "buffers", "persistent",
                            pinned=True))
    if st.hpz_partition_size > 1:
        out.append(Part("hpZ secondary parameter partition (ZeRO++)", "gpu",
                        e * np.ceil(p / st.hpz_partition_size) + 0 * n,
                        f"{e}*P/hpz (zero_hpz_partition_size={st.hpz_partition_size})", "model_states", "persistent"))
    if persist:
        out.append(Part("persistent small parameters", "gpu", e * persist + 0 * n,
                        f"{e}*(parameter tensors of at most stage3_param_persistence_threshold="
                        f"{st.param_persistence_threshold} elements)", "model_states", "persistent"))
    gathered = min(st.max_live_parameters, x.lg + st.prefetch_bucket_size)
    out.append(Part("gathered parameters (ZeRO-3 fetch + prefetch)", "gpu", e * gathered + 0 * n,
                    f"{e}*min(max_live_parameters, largest_layer + prefetch_bucket_size)", "buffers",
                    "forward_backward"))
    out.append(Part("largest layer's full gradient before reduce-scatter", "gpu", e * x.lg + 0 * n,
                    f"{e}*largest_layer", "buffers", "forward_backward"))
    return out


def gradients(x: Inputs) -> list[Part]:
    """Gradients in DeepSpeed's gradient accumulation dtype (the compute dtype unless ``grad_accum_dtype`` says
    fp32); the master-dtype copy the optimizer steps on is a step transient or lives with the offload."""
    st, e, n, p = x.st, x.e, x.n, x.p
    if st.bf16_optimizer:
        return [Part("gradients (fp32 accumulation buffer, BF16_Optimizer)", "gpu", 4 * p + 0 * n,
                     f"4*P ({bf16_optimizer_reason(st.stage, st.version)} selects BF16_Optimizer)", "model_states",
                     "persistent")]
    out: list[Part] = []
    if st.stage <= 1:
        out.append(Part("gradients", "gpu", e * p + 0 * n, f"{e}*P (full gradients before the optimizer step)",
                        "model_states", "persistent"))
    elif st.stage == 3:
        ga = st.grad_accum_bytes
        # stage3.py: grad_partitions_flat_buffer = torch.zeros(sum partition numel,
        # dtype=self.gradient_accumulation_dtype, device=self.device); self.device is "cpu" under optimizer offload
        text = f"{ga}*P/N" + (" (grad_accum_dtype fp32)" if ga != e else "")
        if st.offload_optimizer == "none":
            out.append(Part("gradients (partition)", "gpu", ga * x.part, text, "model_states", "persistent"))
        else:
            out.append(Part(f"{dtype_label(ga)} gradients (reduced partition, offloaded)", "cpu",
                            ga * x.part * x.gpn, f"{text} per rank x gpus_per_node (grad_partitions_flat_buffer)",
                            "model_states", "persistent", pinned=st.offload_optimizer_pin_memory))
    elif st.fp32_grad_partition and not grads_offloaded(x):
        out.append(Part("gradients (partition)", "gpu", 4 * x.part,
                        "4*P/N (fp32 grad_accum_dtype: fp32 flat partition)", "model_states", "persistent"))
    elif not grads_offloaded(x):
        out.append(Part("gradients (partition)", "gpu", e * x.part, f"{e}*P/N", "model_states", "persistent"))
    if st.fp32_grad_partition and (st.stage == 1 or grads_offloaded(x)):
        # the same fp32 flat partition on the GPU, beside the full 16-bit gradients (stage 1) or the offloaded copy
        out.append(Part("fp32 gradient accumulation partition (grad_accum_dtype)", "gpu", 4 * x.part,
                        "4*P/N (fp32 grad_accum_dtype: fp32 flat partition on the GPU)", "model_states",
                        "persistent"))
    if grads_offloaded(x):
        out.extend(_offloaded_fp32_grads(x))
    return out


def _offloaded_fp32_grads(x: Inputs) -> list[Part]:
    mb = x.st.master_bytes  # the gradient partition has the master weights' dtype
    if x.st.stage == 3 and x.st.offload_optimizer == "nvme":
        # ZeRO-Infinity swaps each sub-group's gradients out with its states (stage3.py swap_out_gradients); the
        # CPU holds one buffer of the largest sub-group, shared by the swapped ones (initialize_optimizer_states)
        return [Part(f"{dtype_label(mb)} gradients (partition, swapped to NVMe)", "nvme", mb * x.part * x.gpn,
                     f"{mb}*P/N per rank x gpus_per_node", "model_states", "persistent"),
                Part(f"{dtype_label(mb)} gradient buffer of one sub-group (CPU)", "cpu",
                     mb * x.sub_group * x.gpn,
                     f"{mb}*{x.sub_group_text} per rank x gpus_per_node", "buffers", "persistent")]
    return [Part(f"{dtype_label(mb)} gradients (partition, offloaded)", "cpu", mb * x.part * x.gpn,
                 f"{mb}*P/N per rank x gpus_per_node", "model_states", "persistent",
                 pinned=x.st.offload_optimizer_pin_memory)]


def optimizer_states(x: Inputs) -> list[Part]:
    """Master weights and the optimizer's state tensors, where the optimizer runs (fp32 unless the config asks
    for 16-bit master weights / optimizer states).

    The ZeRO optimizers (stages 1-3) always keep their master partition as a separate copy, fp32 training too:
    stage_1_and_2.py ``weights_partition = self.parallel_partitioned_bit16_groups[i][partition_id].detach().clone()``;
    stage3.py ``_create_fp32_partitions`` would reuse the flat 16-bit buffer only if ``...device == self.device``,
    which compares a torch.device with a string and is False, so it copies (``converted.clone().detach()``).
    Stage 0 in fp32 has no master copy: the torch optimizer steps on the model's parameters. BF16_Optimizer (bf16
    without ZeRO in 0.16.0-0.18.4) splits its fp32 copy and the states over the ranks as ZeRO-1 does
    (bf16_optimizer.py: ``bf16_dp_partitions[partition_id].clone().float()``)."""
    st, k, part = x.st, x.k, x.part
    mb, sb = st.master_bytes, st.state_bytes
    master, states = f"{dtype_label(mb)} master weights", f"{k} {dtype_label(sb)} tensors"
    whole = st.stage == 0 and not st.bf16_optimizer
    master_elems = x.p + 0 * x.n if whole else part
    master_text = "P" if whole else "P/N"
    opt_dev = st.offload_optimizer if st.stage >= 1 else "none"
    out: list[Part] = []
    if opt_dev == "none":
        if x.mixed or st.stage >= 1:
            copy = "" if x.mixed else " (ZeRO's separate copy of the partition, fp32 training too)"
            out.append(Part(master, "gpu", mb * master_elems, f"{mb}*{master_text}{copy}", "model_states",
                            "persistent"))
        out.append(Part(f"optimizer states ({st.optimizer}: {states})", "gpu", sb * k * master_elems,
                        f"{k}*{sb}*{master_text}", "model_states", "persistent"))
        return out
    mult = x.gpn
    if opt_dev == "cpu":
        # pin_memory pins ZeRO-1/2's master partition (stage_1_and_2.py weights_partition); ZeRO-3 copies its
        # master with .to("cpu").clone() and the optimizer makes its states with zeros_like, neither pinned
        out.append(Part(f"{master} (offloaded)", "cpu", mb * part * mult, f"{mb}*P/N per rank x gpus_per_node",
                        "model_states", "persistent", pinned=st.stage < 3 and st.offload_optimizer_pin_memory))
        out.append(Part(f"optimizer states ({st.optimizer}, offloaded{'' if sb == 4 else ': ' + states})", "cpu",
                        sb * k * part * mult,
                        f"{k}*{sb}*P/N per rank x gpus_per_node", "model_states", "persistent"))
    else:
        out.append(Part(f"{master} + optimizer states (on NVMe)", "nvme", (mb + sb * k) * part * mult,
                        f"({mb}+{k}*{sb})*P/N per rank x gpus_per_node", "model_states", "persistent"))
        swap = x.sub_group
        # the swapper's buffers have the master weights' dtype (stage3.py: OptimizerSwapper dtype)
        out.append(Part("optimizer swap buffers (pinned)", "cpu", st.offload_optimizer_buffer_count * mb * swap * mult,
                        f"buffer_count*{mb}*{x.sub_group_text} per rank x gpus_per_node", "buffers",
                        "persistent", pinned=True))
    if not grads_offloaded(x):
        # stage 1 with offload: fp32 gradient partition is copied to the CPU too
        out.extend(_offloaded_fp32_grads(x))
    return out
