"""Step time of one optimizer step: compute (roofline per GEMM), ZeRO communication, offload, host overheads.

The model, per GPU and per micro-step (b sequences of s tokens):

- compute: every linear layer's GEMM (and its two backward GEMMs) takes max(FLOPs / (peak x efficiency.compute),
  bytes / HBM bandwidth), so small micro-batches and hidden sizes run below peak (efficiency.compute defaults to
  the GPU's measured best matmul fraction x efficiency.gemm_fraction); the attention core is costed as GEMMs
  (causal flash/SDPA kernels skip the upper triangle; on GPUs where FlashAttention runs below the GEMMs, the H100,
  at its own rate; flash-attn 1.x and its Triton kernel (``flash1``) at ``FLASH1_ATTENTION_SPEED`` of that; a
  fused kernel pads the head dimension to the next one it is compiled for, ``FUSED_ATTENTION_HEAD_DIMS``; their
  backward recomputes the scores, ``FUSED_ATTENTION_BACKWARD_FACTOR`` x the forward);
  elementwise kernels (norms, activations, softmax, dropout) move each saved activation byte
  ``ACTIVATION_PASSES`` times through HBM, Hugging Face's composite activations (gelu_new) more. Full
  recomputation repeats the forward; selective recomputation repeats the attention core.
- communication: ring collectives over the ZeRO group; a ring spanning nodes is bounded by the slower of the
  per-GPU intra-node link and the node's network (which carries the ring's whole crossing traffic).
  Stage 0 all-reduces gradients once per step; stage 1 reduce-scatters them once per step (with overlap_comm
  during the last micro-step's backward); stage 2 every micro-step; stages 1-2 all-gather the updated parameters
  after the step; stage 3 all-gathers parameters in forward and again in backward and reduce-scatters gradients, every
  micro-step. Which backward gathers happen follows DeepSpeed's release rule (``stage3_max_reuse_distance``):
  a module's parameters stay gathered when fewer parameters than that distance are fetched before their next
  use, so the last modules of a model skip the backward gather, and with full recomputation the backward runs
  the recomputation's gather plus a second one for the modules whose reuse lies beyond the distance.
  ZeRO++: qwZ halves every parameter all-gather (int8), hpZ keeps the backward all-gathers (and the forward ones
  of later micro-steps, until the step invalidates its copy) inside a node, qgZ sends int4 gradients (a
  quarter of the bytes).
- latency: every collective call costs efficiency.collective_latency_s plus one efficiency.ring_hop_latency_s
  per ring step (N-1 for an all-gather over N GPUs), so per-module ZeRO-3 fetches at scale are latency-bound.
- host: per layer (kernel launches), per ZeRO-3 module (fetch/release hooks) and per parameter tensor (ZeRO's
  gradient hooks in stages 2-3, and stage 1 with overlap_comm).
- overlap: communication that DeepSpeed runs on a side stream (overlap_comm, and ZeRO-3's prefetch) hides
  behind the compute of its own phase up to ``efficiency.overlap`` (forward gathers behind the forward,
  backward gathers and gradient reductions behind the recomputation and backward); the rest adds to the step.
  A ``comms_logger`` section (its presence turns the logger on) synchronises the device after every collective,
  so nothing overlaps then.
- offload: gradients go to the host over PCIe (ZeRO-2: every micro-step in the master dtype; ZeRO-1: once per
  step; ZeRO-3: down to its host accumulation buffer and back up every micro-step in grad_accum_dtype, then once in
  the master dtype), the CPU optimizer updates its
  partition (all ranks of a node share the node's CPU-Adam rate), updated parameters come back; NVMe adds a
  read and a write of the optimizer state per step (and parameter reads every micro-step for offload_param).
- optimizer: a fused step on the GPU moves ``optimizer_step_bytes_per_param``; fp16 or bf16 at stage 0 without FusedAdam
  runs DeepSpeed's unfused fp16 optimizer (``UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM`` and a host-side loop
  over the parameter tensors).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.hardware import GPU_BY_NAME
from core.memory.estimate import ModelCounts, Shape, _check_shape
from core.memory.states import persistent_parameters, persists
from core.models.arch import ModelSpec
from core.perf.advice import Situation, bottleneck_text, small_work_note
from core.perf.collectives import qgz_reduce_seconds, ring_seconds
from core.perf.compute import (
    ACTIVATION_PASSES,
    layer_module_params,
    micro_step,
    parameter_tensors,
    peak_flops,
)
from core.perf.constants import (
    COUNTS_FETCH_PARAMS,
    FLASH1_ATTENTION_SPEED,
    FUSED_ATTENTION_BACKWARD_FACTOR,
    UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM,
    ZEROPP_QGZ_BYTES_PER_PARAM,
    ZEROPP_QWZ_BYTES_PER_PARAM,
    optimizer_step_bytes_per_param,
)
from core.perf.hardware import Cluster
from core.perf.settings import PerfSettings, read_settings
from core.schema.base import DEFAULT_VERSION


@dataclass(frozen=True)
class StepEstimate:
    """Predicted time of one optimizer step and what it is spent on.

    ``breakdown`` holds seconds on the critical path (they add up to ``step_seconds``); communication that
    hides behind compute is not in it (see ``hidden``).
    """

    step_seconds: float
    tokens_per_second: float
    tflops_per_gpu: float  # model FLOPs (6N + attention, no recomputation) per GPU per second / 1e12
    hardware_tflops_per_gpu: float  # counting recomputation, as DeepSpeed's and Megatron's papers report
    mfu: float
    breakdown: dict[str, float]
    bottleneck: str
    notes: tuple[str, ...]
    micro_batch: int
    gradient_accumulation_steps: int
    tokens_per_step: int
    model_flops_per_token: float
    hidden: dict[str, float] = field(default_factory=dict)
    assumptions: dict[str, Any] = field(default_factory=dict)
    #: Where the published measurements say this very figure is optimistic (e.g. ZeRO-3 with little work per GPU):
    #: shown beside the step time, not among the notes.
    caveats: tuple[str, ...] = ()
    #: The cluster predicted on (``Cluster.described()``: GPU, counts, rates) and the shape (micro batch, sequence
    #: length, attention kernel, recomputation): what the figure assumed, as data.
    cluster: dict[str, Any] = field(default_factory=dict)
    shape: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable."""
        return {
            "step_seconds": self.step_seconds,
            "tokens_per_second": self.tokens_per_second,
            "tflops_per_gpu": self.tflops_per_gpu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "mfu": self.mfu,
            "breakdown": dict(self.breakdown),
            "hidden_behind_compute": dict(self.hidden),
            "bottleneck": self.bottleneck,
            "notes": list(self.notes),
            "caveats": list(self.caveats),
            "micro_batch": self.micro_batch,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "tokens_per_step": self.tokens_per_step,
            "model_flops_per_token": self.model_flops_per_token,
            "cluster": dict(self.cluster),
            "shape": dict(self.shape),
            "assumptions": dict(self.assumptions),
        }


@dataclass
class _Parts:
    """Seconds per micro-step / per step, split into overlappable and serial parts."""

    micro_serial: dict[str, float] = field(default_factory=dict)
    micro_overlap: dict[str, float] = field(default_factory=dict)  # hides behind recomputation + backward
    micro_overlap_fwd: dict[str, float] = field(default_factory=dict)  # hides behind the forward
    step_serial: dict[str, float] = field(default_factory=dict)
    step_overlap: dict[str, float] = field(default_factory=dict)  # once per step, behind the last backward

    @staticmethod
    def add(d: dict[str, float], name: str, seconds: float) -> None:
        if seconds > 0:
            d[name] = d.get(name, 0.0) + seconds


def backward_gathers(model: ModelSpec | ModelCounts, st: PerfSettings, recompute: str) -> float:
    """All-gathers of each parameter in the backward phase of one ZeRO-3 micro-step, averaged over the
    parameters. DeepSpeed (PartitionedParameterCoordinator, ``stage3_max_reuse_distance``) keeps a module's
    parameters after use when the modules traced before their next use hold fewer parameters than the distance:
    without recomputation the next use is the module's backward, 2 x (parameters after it) away, so the last
    distance/2 parameters of the model skip the backward gather; with full recomputation each layer is gathered
    for its recomputation and a module again for its backward when 2 x (parameters after it in its layer) reach
    the distance (large layers)."""
    if not isinstance(model, ModelSpec):
        return 1.0
    dist = st.max_reuse_distance * st.tp  # the distance counts a rank's (tensor-parallel) shard of each tensor
    mods = layer_module_params(model)
    if recompute == "full":
        again = sum(p for i, p in enumerate(mods) if 2 * sum(mods[i + 1:]) >= dist)
        return 1.0 + again / sum(mods)
    return 1.0 - min(1.0, dist / 2 / model.total_params)


def _communication(model, st: PerfSettings, cl: Cluster, parts: _Parts, recompute: str = "none", gas: int = 1) -> None:
    """Add every collective and offload transfer to ``parts``."""
    m = st.memory
    g, n_nodes = cl.gpus_per_node, cl.nodes
    zero_ranks = cl.total_gpus // st.tp  # ZeRO partitions over data x sequence parallel ranks
    gpn_zero = max(1, g // st.tp)
    params = model.total_params / st.tp
    wire = params * st.comm_bytes
    overlap = m.overlap_comm and not st.comms_logger  # the logger synchronises after every collective
    # each tensor-parallel rank of a node has its own data-parallel ring, and they share the node's network
    rings = min(st.tp, g)
    ring = lambda nbytes, factor, intra_only=False: ring_seconds(nbytes, factor, zero_ranks, gpn_zero, cl, intra_only,  # noqa: E731
                                                          rings)
    pcie = cl.pcie_bytes_s * cl.efficiency.link
    part = params / zero_ranks  # parameters this rank owns
    hop = cl.efficiency.ring_hop_latency_s

    def alpha_of(ranks: int, steps_per_rank: int = 1) -> float:
        """Latency of one ring collective over ``ranks`` GPUs: a fixed cost plus one hop per ring step; none over
        one GPU, where DeepSpeed skips the collective (``_no_gather_coalesced``, a world size of 1)."""
        if ranks <= 1:
            return 0.0
        return cl.efficiency.collective_latency_s + steps_per_rank * max(0, ranks - 1) * hop

    alpha = alpha_of(zero_ranks)

    def calls(nbytes: float, bucket_elems: int, elem_bytes: int) -> float:
        return max(1.0, math.ceil(nbytes / max(1, bucket_elems * elem_bytes))) if nbytes > 0 else 0.0

    tensors = parameter_tensors(model)

    def reduce_bucketed(target: dict[str, float], name: str, seconds: float, nbytes: float) -> None:
        """A bucketed gradient reduction: latency per bucket; when it overlaps backward, the last bucket
        (filled by the last layers' gradients) still runs after the backward. A bucket is reduced before a
        gradient that would overflow it is added (stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads,
        stage3.py __add_grad_to_ipg_bucket), so it holds at least one gradient tensor: no more calls than
        tensors, however small reduce_bucket_size is."""
        n = calls(nbytes, m.reduce_bucket_size, st.comm_bytes)
        if tensors:
            n = min(n, tensors)
        seconds += n * alpha
        tail = seconds / n if n else 0.0
        if target is parts.micro_overlap or target is parts.step_overlap:
            parts.add(parts.micro_serial if target is parts.micro_overlap else parts.step_serial,
                      name + " (last bucket)", tail)
            seconds -= tail
        parts.add(target, name, seconds)

    if m.stage == 0 or m.bf16_optimizer:
        # the engine's own all-reduce (buffered_allreduce_fallback, 5e8 elements a call): without ZeRO, and under
        # BF16_Optimizer (bf16 + ZeRO-1 + fp32 grad_accum_dtype; bf16 without ZeRO in 0.16.0-0.18.4), which has no
        # reduce-scatter of its own
        parts.add(parts.step_serial, "gradient all-reduce",
                  ring(wire, 2) + calls(wire, 500_000_000, st.comm_bytes) * alpha_of(zero_ranks, 2))
        if m.bf16_optimizer:  # it steps on its 1/N partition, then gathers the 16-bit ones (all_gather_dp_groups)
            parts.add(parts.step_serial, "parameter all-gather after the step",
                      ring(params * m.bytes_per_param, 1) + alpha)
    elif m.stage in (1, 2):
        # reduce_scatter false: average_tensor all-reduces each bucket whole (twice a reduce-scatter's traffic)
        grads = ring(wire, 1 if st.reduce_scatter else 2)
        name = "gradient reduce-scatter" if st.reduce_scatter else "gradient all-reduce (reduce_scatter off)"
        if m.stage == 2:
            reduce_bucketed(parts.micro_overlap if overlap else parts.micro_serial, name, grads, wire)
        else:  # stage 1 reduces only in the step's last backward (stage_1_and_2.py: partition_gradients or boundary)
            reduce_bucketed(parts.step_overlap if overlap else parts.step_serial, name, grads, wire)
        # one all_gather_into_tensor per parameter group: runtime/utils.all_gather_dp_groups takes that path
        # whenever torch has it (PyTorch >= 1.13) and never reads allgather_bucket_size then
        gather = params * m.bytes_per_param
        parts.add(parts.step_serial, "parameter all-gather after the step", ring(gather, 1) + alpha)
    else:
        persistent = 0
        # a model known by its counts: one fetch per COUNTS_FETCH_PARAMS parameters (the prefetch bucket size
        # only sets how far ahead DeepSpeed fetches, not how much one fetch holds)
        fetches = max(1.0, math.ceil(params / COUNTS_FETCH_PARAMS))
        if isinstance(model, ModelSpec):
            persistent = persistent_parameters(model, m.param_persistence_threshold) / st.tp
            # one all-gather per module with a parameter tensor above the persistence threshold: persistent
            # tensors stay AVAILABLE and are never gathered, so a module whose tensors all persist is not fetched
            # (partitioned_param_coordinator.fetch_sub_module gathers only NOT_AVAILABLE ones; a tied head is
            # fetched again)
            fetches = sum(x.count for x in model.modules
                          if any(not persists(t, m.param_persistence_threshold) for t in x.tensor_sizes))
        # qwZ quantizes every parameter gather to int8, the backward's and hpZ's secondary ones too
        # (partitioned_param_coordinator.__all_gather_params passes quantize=zero_quantized_weights to each)
        gathered_params = max(0.0, params - persistent)
        gathered = gathered_params * m.bytes_per_param * (0.5 if st.quantized_weights else 1.0)
        target = parts.micro_overlap if overlap else parts.micro_serial
        target_fwd = parts.micro_overlap_fwd if overlap else parts.micro_serial
        # one all-gather per parameterised module (DeepSpeed fetches module by module, prefetching ahead)
        fwd_gather = ring(gathered, 1) + fetches * alpha
        hpz = m.hpz_partition_size
        # hpZ's secondary group: inside a node when zero_hpz_partition_size <= GPUs per node, else across nodes
        in_node = ring_seconds(gathered, 1, min(hpz, zero_ranks), gpn_zero, cl, rings_per_node=rings) + \
            fetches * alpha_of(min(hpz, zero_ranks))
        if hpz > 1:  # hpZ's secondary copy serves every gather until the step invalidates it (stage3.py)
            fwd_gather = (fwd_gather + (gas - 1) * in_node) / gas
        parts.add(target_fwd, "ZeRO-3 parameter all-gather (forward)", fwd_gather)
        again = backward_gathers(model, st, recompute)
        # ZeRO++'s quantization kernels run on the compute stream: qwZ dequantizes every gather (the forward's
        # and the backward's), qgZ quantizes and reduces the gradients
        quant = ZEROPP_QWZ_BYTES_PER_PARAM * gathered_params * (1 + again) if st.quantized_weights else 0.0
        quant += ZEROPP_QGZ_BYTES_PER_PARAM * params if st.quantized_gradients else 0.0
        parts.add(parts.micro_serial, "ZeRO++ quantization kernels (HBM)", quant / cl.hbm_bytes_s)
        if hpz > 1:
            where = "in-node" if min(hpz, zero_ranks) <= gpn_zero else f"over {hpz} GPUs across nodes"
            parts.add(target, f"ZeRO-3 parameter all-gather (backward, hpZ {where})", again * in_node)
        else:
            parts.add(target, "ZeRO-3 parameter all-gather (backward)", again * (ring(gathered, 1) + fetches * alpha))
        if st.quantized_gradients:
            reduce_bucketed(target, "gradient reduce-scatter (qgZ int4)",
                            qgz_reduce_seconds(wire, zero_ranks, gpn_zero, n_nodes, cl, rings), wire)
        else:
            reduce_bucketed(target, "gradient reduce-scatter", ring(wire, 1), wire)
        if m.offload_param != "none":
            # each forward and backward fetches the partition from the host before the all-gather
            upload = part * m.bytes_per_param / pcie
            parts.add(target_fwd, "parameter upload over PCIe (offload_param)", upload)
            parts.add(target, "parameter upload over PCIe (offload_param)", upload)
            if m.offload_param == "nvme":
                node_read = params * m.bytes_per_param / n_nodes / (cl.nvme_bytes_s * cl.efficiency.link)
                parts.add(target_fwd, "parameter reads from NVMe", node_read)
                parts.add(target, "parameter reads from NVMe", node_read)
    if m.stage >= 1 and m.offload_optimizer != "none":
        grad_copy = m.master_bytes * part / pcie  # the partition is cast to the master weights' dtype
        per_micro_step = parts.micro_overlap if overlap else parts.micro_serial
        if m.stage == 1:
            parts.add(parts.step_serial, "gradient download to the host (PCIe)", grad_copy)
        elif m.stage == 3:
            # stage3.py partition_grads (0.16-0.19): the gradient partition accumulates in a host buffer of
            # grad_accum_dtype; every micro-step copies it down into that buffer and back up (the add runs on the
            # GPU), and the step's last one also casts it to the master dtype and copies that to the optimizer's
            # gradient on the host
            parts.add(per_micro_step, "gradient accumulation through the host buffer (PCIe, down and up)",
                      2 * m.grad_accum_bytes * part / pcie)
            parts.add(parts.step_overlap if overlap else parts.step_serial,
                      "gradient download to the host (PCIe)", grad_copy)
        else:
            parts.add(per_micro_step, "gradient download to the host (PCIe)", grad_copy)
        node_params = params * st.tp / n_nodes  # every rank of a node shares the node's CPU
        parts.add(parts.step_serial, "CPU optimizer step", node_params / cl.cpu_adam_rate)
        if m.offload_param == "none":  # an offloaded parameter partition is updated where it lives, on the host
            parts.add(parts.step_serial, "parameter upload after the step (PCIe)", part * m.bytes_per_param / pcie)
        if m.offload_optimizer == "nvme":
            state_bytes = (m.master_bytes + m.state_bytes * m.optimizer_states) * node_params
            parts.add(parts.step_serial, "optimizer state NVMe read + write",
                      2 * state_bytes / (cl.nvme_bytes_s * cl.efficiency.link))
    elif st.unfused_optimizer:
        parts.add(parts.step_serial, "optimizer step (GPU, DeepSpeed's unfused fp16 optimizer)",
                  UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM * params / cl.hbm_bytes_s)
        if tensors:
            parts.add(parts.step_serial, "unfused fp16 optimizer loop over parameter tensors (host)",
                      tensors * cl.efficiency.grad_hook_overhead_s)
    else:
        owned = params if m.stage == 0 and not m.bf16_optimizer else part
        parts.add(parts.step_serial, "optimizer step (GPU)",
                  optimizer_step_bytes_per_param(m.master_bytes, m.state_bytes, m.optimizer_states) * owned
                  / cl.hbm_bytes_s)


def _tensor_sequence_parallel(model, st: PerfSettings, cl: Cluster, shape: Shape, parts: _Parts) -> None:
    """Tensor-parallel all-reduces and Ulysses all-to-alls; full recomputation reruns the forward's ones."""
    if not isinstance(model, ModelSpec):
        return
    layers = model.num_layers + model.num_decoder_layers
    e = st.compute_bytes
    act = shape.micro_batch * shape.seq_len / st.sp * model.hidden_size * e
    rerun = shape.recompute == "full"
    if st.tp > 1:
        # two all-reduces of b*s*h per layer in forward (again in the recomputation) and two in backward
        t = (6 if rerun else 4) * layers * ring_seconds(act, 2, st.tp, cl.gpus_per_node, cl)
        parts.add(parts.micro_serial, "tensor-parallel all-reduce (autotp)", t)
    if st.sp > 1:
        # Ulysses: q, k, v and the attention output re-sharded by all-to-all in forward (and the recomputation),
        # and again in backward. k and v move at their own (grouped) head count; DeepSpeed's Hugging Face
        # integration repeats KV heads up to one per rank when there are fewer (runtime/sequence_parallel/
        # ulysses_sp.py kv_replication_factor; sequence/layer.py DistributedAttention moves key and value as
        # given and refuses fewer KV heads than ranks)
        ranks = st.sp
        per_token = 2 * model.q_dim + 2 * max(model.num_kv_heads, ranks) * model.head_dim
        moved = shape.micro_batch * shape.seq_len / ranks * per_token * e
        volume = (3 if rerun else 2) * layers * moved * (ranks - 1) / ranks
        # an SP group's ranks sit every tp devices (ring_seconds' placement), so it spans tp*(sp-1)+1 of them:
        # inside one package that is the package's link, not the whole node's ring (MI250X: 200 vs 50 GB/s)
        if ranks * st.tp <= cl.gpus_per_node:
            bw = cl.intra_ring_bytes_s(st.tp * (ranks - 1) + 1)
        else:
            bw = min(cl.intra_bytes_s, cl.inter_bytes_s / cl.gpus_per_node)
        parts.add(parts.micro_serial, "sequence-parallel all-to-all (Ulysses)", volume / (bw * cl.efficiency.link))


def predict(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    shape: Shape | None = None,
    *,
    settings: PerfSettings | None = None,
    version: str = DEFAULT_VERSION,
) -> StepEstimate:
    """Predict one optimizer step of ``ds_config``, read as DeepSpeed ``version`` reads it, training ``model`` on
    ``cluster`` with ``shape``.

    ``shape.micro_batch`` is the micro batch per GPU; gradient accumulation comes from the config's batch keys
    (1 when they do not resolve, with a note). ``settings`` skips re-reading the config (for sweeps).
    """
    shape = shape or Shape()
    _check_shape(shape)
    if not model.total_params >= 1:
        raise ValueError(f"the model has {model.total_params!r} parameters: a step needs at least one (give the "
                         "model's total parameter count)")
    st = settings or read_settings(ds_config, cluster.total_gpus, version)
    notes = list(st.notes)
    if isinstance(model, ModelSpec) and model.position == "relative" and shape.attention != "eager":
        # transformers computes T5's relative position bias in its own eager attention, whatever is asked
        shape = replace(shape, attention="eager")
        notes.append("T5-style relative position bias needs eager attention: timed as eager, whatever attention "
                     "was chosen.")
    m = st.memory
    gas = st.grad_accum
    if gas is None:
        gas = 1
        why = st.batch_problem or "no whole number of accumulation steps"
        notes.append(f"The config's batch does not resolve on this cluster ({why}): 1 micro-step per optimizer "
                     "step assumed; DeepSpeed stops there (choose a GPU count elastic training accepts)."
                     if st.elastic else
                     f"The config's batch keys do not resolve on this cluster ({why}): 1 micro-step per optimizer "
                     "step assumed; write gradient_accumulation_steps and the micro batch to predict the step you "
                     "run.")
    tokens = shape.micro_batch * shape.seq_len * gas * cluster.total_gpus
    if tokens > sys.float_info.max:
        raise ValueError(f"one optimizer step is a {len(str(tokens))}-digit number of tokens: too many to predict; "
                         "check train_batch_size (the global batch), gradient_accumulation_steps and the micro batch")
    if st.config_micro_batch is not None and st.config_micro_batch != shape.micro_batch:
        notes.append(f"The config's micro batch ({st.config_micro_batch}) differs from the shape's "
                     f"({shape.micro_batch}): the shape's is used.")
    peak = peak_flops(cluster, st.compute_precision, notes)
    comp = micro_step(model, st, cluster, shape, peak)
    parts = _Parts()
    fwd = comp["fwd"]
    parts.add(parts.micro_serial, "forward + backward compute", 3 * fwd + comp["bwd_extra"])
    parts.add(parts.micro_serial, "recomputation", comp["recompute"])
    overhead = comp["layers"] * cluster.efficiency.layer_overhead_s * (4 / 3 if shape.recompute == "full" else 1)
    if m.stage == 3:
        # the fetch/release hooks run in every pass over a module: forward, backward and the recomputation
        passes = 3 if shape.recompute == "full" else 2
        overhead += comp["modules"] * passes * cluster.efficiency.zero3_module_overhead_s
    hooks = (parameter_tensors(model) or 0) * cluster.efficiency.grad_hook_overhead_s
    if m.stage >= 2:  # per-parameter gradient hooks (stage 3 has them as well as its module fetch/release hooks)
        overhead += hooks
    parts.add(parts.micro_serial, "host overhead (kernel launches, hooks)", overhead)
    if m.stage == 1 and m.overlap_comm:  # stage 1's hooks bucket and reduce only in the step's last backward
        parts.add(parts.step_serial, "host overhead (kernel launches, hooks)", hooks)
    _communication(model, st, cluster, parts, shape.recompute, gas)
    _tensor_sequence_parallel(model, st, cluster, shape, parts)

    # overlappable communication hides behind the compute of its phase: ZeRO-3's forward gathers behind the
    # forward, everything else (backward gathers, gradient reductions) behind recomputation + backward
    breakdown: dict[str, float] = {}
    hidden: dict[str, float] = {}
    for name, sec in parts.micro_serial.items():
        breakdown[name] = gas * sec
    backward = 2 * fwd + comp["bwd_extra"] + comp["recompute"]
    # what runs once per step hides behind the last micro-step's backward, in the time its own traffic leaves
    last_backward = max(0.0, backward - sum(parts.micro_overlap.values()))
    for pool, window, times in ((parts.micro_overlap_fwd, fwd, gas), (parts.micro_overlap, backward, gas),
                                (parts.step_overlap, last_backward, 1)):
        comm = sum(pool.values())
        exposed_fraction = (comm - cluster.efficiency.overlap * min(comm, window)) / comm if comm > 0 else 0.0
        for name, sec in pool.items():
            breakdown[name + " (exposed)"] = breakdown.get(name + " (exposed)", 0.0) + times * sec * exposed_fraction
            hidden[name] = hidden.get(name, 0.0) + times * sec * (1 - exposed_fraction)
    for name, sec in parts.step_serial.items():
        breakdown[name] = breakdown.get(name, 0.0) + sec
    step = sum(breakdown.values())
    if not math.isfinite(step):
        worst = max(breakdown, key=lambda k: breakdown[k])
        raise ValueError(f"the {worst} takes longer than a number can hold: check the cluster's rates (network, "
                         "PCIe, NVMe, CPU-Adam) and the sizes")
    dp = cluster.total_gpus // (st.tp * st.sp)
    tokens_per_step = shape.micro_batch * shape.seq_len * gas * dp
    lin_f, attn_f = comp["lin_f"], comp["attn_f"]
    model_flops = 3 * (lin_f + attn_f)
    hw_flops = model_flops + (lin_f + attn_f if shape.recompute == "full" else 0.0)
    if shape.recompute == "selective":
        hw_flops += attn_f
    tflops = model_flops * tokens_per_step / cluster.total_gpus / step / 1e12
    hw_tflops = hw_flops * tokens_per_step / cluster.total_gpus / step / 1e12
    attention_share = attn_f / (lin_f + attn_f) if lin_f + attn_f else 0.0
    beyond_peak = max(tflops, hw_tflops) * 1e12 > peak
    flops_caveat = None
    if comp.get("attn_computed", 1.0) < 1.0 and attention_share >= 0.1:
        text = (f"TFLOPs and MFU count attention over the whole s x s matrix, as the Megatron and PaLM formulas do "
                f"({attention_share:.0%} of the model FLOPs at this length); the causal kernel computes half of "
                "it, so they overstate the work the GPUs do" + (", here beyond the GPU's peak." if beyond_peak
                                                                else "."))
        if beyond_peak:
            flops_caveat = text
        else:
            notes.append(text)
    if not isinstance(model, ModelSpec):
        notes.append("Model given by counts only: 6 FLOPs per parameter per token, no attention, no per-layer "
                     "overheads.")
    else:
        if model.encoder_decoder:
            notes.append("Encoder-decoder model: encoder and decoder are costed at the same sequence length.")
        beyond = f"Sequence length {shape.seq_len} is beyond the model's {model.max_position_embeddings} "
        cannot = model.sequence_problem(shape.seq_len)
        if cannot:
            notes.append(cannot + "; costed as if it could.")
        elif shape.seq_len > model.max_position_embeddings and model.position == "rope":
            notes.append(beyond + "positions (max_position_embeddings): it runs, but needs RoPE scaling to train "
                         "well; costed as is.")
    # offload_param's pin_memory is not read here: ZeRO-3 pins the offloaded parameter partition whatever it says
    if m.offload_optimizer != "none" and not m.offload_optimizer_pin_memory:
        notes.append("offload_optimizer.pin_memory is off: gradient copies to the host run at about half the PCIe "
                     "rate (not modelled).")
    if shape.attention == "flash1":
        notes.append(f"flash1 (flash-attn 1.x or its Triton kernel): the attention core at {FLASH1_ATTENTION_SPEED:g}x "
                     "FlashAttention-2's rate (FlashAttention-2 paper, Figure 4).")
    if shape.attention == "flash" and not GPU_BY_NAME[cluster.gpu].bf16:
        notes.append(f"FlashAttention-2 needs an Ampere or newer GPU; on the {cluster.gpu} SDPA's memory-efficient "
                     "kernel runs instead (costed the same).")
    if cluster.nodes > 1:
        notes.append("Inter-node rings are costed at the node's total network bandwidth; NCCL tree algorithms "
                     "and topology effects are not modelled.")
    small = small_work_note(shape.micro_batch * shape.seq_len / st.sp) if m.stage == 3 else None
    return StepEstimate(
        step_seconds=step,
        tokens_per_second=tokens_per_step / step,
        tflops_per_gpu=tflops,
        hardware_tflops_per_gpu=hw_tflops,
        mfu=tflops * 1e12 / peak,
        breakdown=breakdown,
        bottleneck=bottleneck_text(breakdown, step, stage=m.stage, overlap=bool(m.overlap_comm),
                                  situation=Situation(ds_config, model, cluster, shape, st, version, step)),
        notes=tuple(dict.fromkeys(notes)),
        micro_batch=shape.micro_batch,
        gradient_accumulation_steps=gas,
        tokens_per_step=tokens_per_step,
        model_flops_per_token=model_flops,
        hidden=hidden,
        caveats=tuple(c for c in (small, flops_caveat) if c),
        cluster=cluster.described(),
        shape={"micro_batch": shape.micro_batch, "seq_len": shape.seq_len, "attention": shape.attention,
               "recompute": shape.recompute},
        assumptions={**cluster.resolved(), "peak_tflops_used": peak / 1e12,
                     "efficiency": cluster.efficiency.__dict__.copy(), "activation_passes": ACTIVATION_PASSES,
                     "fused_attention_backward_factor": FUSED_ATTENTION_BACKWARD_FACTOR,
                     "attention_efficiency": cluster.attention_efficiency(shape.attention),
                     "flash1_attention_speed": FLASH1_ATTENTION_SPEED,
                     "optimizer_step_bytes_per_param": optimizer_step_bytes_per_param(
                         st.memory.master_bytes, st.memory.state_bytes, st.memory.optimizer_states),
                     "unfused_fp16_optimizer_bytes_per_param": UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM,
                     "zeropp_qwz_bytes_per_param": ZEROPP_QWZ_BYTES_PER_PARAM,
                     "zeropp_qgz_bytes_per_param": ZEROPP_QGZ_BYTES_PER_PARAM,
                     "stage3_max_reuse_distance": st.max_reuse_distance},
    )
