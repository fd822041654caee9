"""Step time of one optimizer step: compute (roofline per GEMM), ZeRO communication, offload, host overheads.

The model, per GPU and per micro-step (b sequences of s tokens):

- compute: every linear layer's GEMM (and its two backward GEMMs) takes max(FLOPs / (peak x efficiency.compute),
  bytes / HBM bandwidth), so small micro-batches and hidden sizes run below peak (efficiency.compute defaults to
  the GPU's measured best matmul fraction x efficiency.gemm_fraction); the attention core is costed as GEMMs
  (causal flash/SDPA kernels skip the upper triangle; on GPUs where FlashAttention runs below the GEMMs, the H100,
  at its own rate); elementwise kernels (norms, activations, softmax, dropout) move each saved activation byte
  ``ACTIVATION_PASSES`` times through HBM, Hugging Face's composite activations (gelu_new) more. Full
  recomputation repeats the forward; selective recomputation repeats the attention core.
- communication: ring collectives over the ZeRO group; a ring spanning nodes is bounded by the slower of the
  per-GPU intra-node link and the node's network (which carries the ring's whole crossing traffic).
  Stage 0 all-reduces gradients once per step; stage 1 reduce-scatters them once per step (every micro-step
  with overlap_comm); stage 2 every micro-step; stages 1-2 all-gather the updated parameters after the step;
  stage 3 all-gathers parameters in forward and again in backward and reduce-scatters gradients, every
  micro-step. ZeRO++: qwZ halves the forward all-gather (int8), hpZ keeps the backward all-gather inside a
  node, qgZ sends int4 gradients (a quarter of the bytes).
- latency: every collective call costs efficiency.collective_latency_s plus one efficiency.ring_hop_latency_s
  per ring step (N-1 for an all-gather over N GPUs), so per-module ZeRO-3 fetches at scale are latency-bound.
- host: per layer (kernel launches), per ZeRO-3 module (fetch/release hooks) and per parameter tensor (ZeRO's
  gradient hooks in stages 2-3, and stage 1 with overlap_comm).
- overlap: communication that DeepSpeed runs on a side stream (overlap_comm, and ZeRO-3's prefetch) hides
  behind compute up to ``efficiency.overlap``; the rest adds to the step.
- offload: gradients go to the host every micro-step (fp32, over PCIe), the CPU optimizer updates its
  partition (all ranks of a node share the node's CPU-Adam rate), updated parameters come back; NVMe adds a
  read and a write of the optimizer state per step (and parameter reads every micro-step for offload_param).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.hardware import GPU_BY_NAME
from core.memory.activations import layer_terms, sum_terms
from core.memory.estimate import ModelCounts, Shape, _check_shape
from core.models.arch import ModelSpec
from core.perf.advice import bottleneck_text
from core.perf.hardware import Cluster
from core.perf.settings import PerfSettings, read_settings

#: Elementwise kernels move each saved activation byte this many times through HBM: written by its producer
#: and read by its consumer in forward, read again in backward, its gradient written and read once.
ACTIVATION_PASSES = 5
#: Activations that Hugging Face writes as a chain of PyTorch ops instead of one kernel: tensor passes through
#: HBM over forward and backward (each pass reads or writes the b x s x intermediate tensor once). gelu_new
#: (GPT-2, GPT-J, CodeGen, Phi-1/2, T5 v1.1): forward pow, 0.044715*, +x, sqrt(2/pi)*, tanh, 1+, 0.5*x, * = 18
#: passes; autograd's backward of those ops and the sum of the three gradients into x = 28 passes. A fused
#: activation (nn.GELU, SiLU, ReLU) is 5 passes, which ACTIVATION_PASSES already counts.
COMPOSITE_ACTIVATION_PASSES = {"gelu_new": 46}
#: Families whose eager attention runs the softmax in fp32 (as core.memory.activations models them).
_FP32_SOFTMAX = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "gpt_neox", "opt", "bloom")
#: Bytes per parameter a fused Adam step moves on the GPU: fp32 master, m, v read and written (24), the
#: fp32 gradient read (4), the 16-bit parameter written (2), rounded up for the norm and the overflow check.
ADAM_BYTES_PER_PARAM = 34


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
            "micro_batch": self.micro_batch,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "tokens_per_step": self.tokens_per_step,
            "model_flops_per_token": self.model_flops_per_token,
            "assumptions": dict(self.assumptions),
        }


# ---------------------------------------------------------------------------------------------------------
# FLOPs


def _linears(spec: ModelSpec) -> list[tuple[int, int, float]]:
    """(in, out, count per layer) of every linear layer that runs per token (MoE: the active experts)."""
    h, q, kv, inter = spec.hidden_size, spec.q_dim, spec.kv_dim, spec.intermediate_size
    active = spec.experts_per_token if spec.num_experts else 1
    out = [(h, q + 2 * kv, 1.0), (q, h, 1.0)]
    if spec.gated_mlp:
        out += [(h, 2 * inter, active), (inter, h, active)]
    else:
        out += [(h, inter, active), (inter, h, active)]
    if spec.num_experts:
        out.append((h, spec.num_experts, 1.0))
    return out


def flops_per_token(model: ModelSpec | ModelCounts, seq_len: int) -> tuple[float, float]:
    """Forward FLOPs per token: (linear layers incl. the LM head, attention scores and values). Attention is
    counted over the full s x s matrix, as the Megatron/DeepSpeed formulas do."""
    if not isinstance(model, ModelSpec):
        return 2.0 * model.total_params, 0.0
    layers = model.num_layers + model.num_decoder_layers
    linear = sum(i * o * c for i, o, c in _linears(model)) * layers + model.vocab_size * model.hidden_size
    if model.encoder_decoder:
        linear += model.num_decoder_layers * 2 * model.hidden_size * model.q_dim * 2  # cross-attention q/o, k/v
    attention = 4.0 * seq_len * model.q_dim * layers
    return 2.0 * linear, attention


# ---------------------------------------------------------------------------------------------------------
# collectives


def _ring(bytes_total: float, factor: float, ranks: int, gpus_per_node: int, cl: Cluster, intra_only=False) -> float:
    """Seconds for a ring collective moving ``factor`` x (ranks-1)/ranks x bytes per GPU (1: reduce-scatter or
    all-gather, 2: all-reduce) over ``ranks`` GPUs filled node by node."""
    if ranks <= 1 or bytes_total <= 0:
        return 0.0
    volume = factor * (ranks - 1) / ranks * bytes_total
    link = cl.efficiency.link
    in_node = min(ranks, gpus_per_node)
    t = volume / (cl.intra_bytes_s * link) if in_node > 1 else 0.0
    if ranks > gpus_per_node and not intra_only:
        t = max(t, volume / (cl.inter_bytes_s * link))
    return t


@dataclass
class _Parts:
    """Seconds per micro-step / per step, split into overlappable and serial parts."""

    micro_serial: dict[str, float] = field(default_factory=dict)
    micro_overlap: dict[str, float] = field(default_factory=dict)
    step_serial: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def add(d: dict[str, float], name: str, seconds: float) -> None:
        if seconds > 0:
            d[name] = d.get(name, 0.0) + seconds


def linear_modules_per_layer(spec: ModelSpec) -> int:
    """nn.Linear modules of one layer as Hugging Face builds them (q, k, v apart unless fused; gate and up apart):
    what ZeRO-3 fetches and hooks module by module."""
    mlp = (3 if spec.gated_mlp else 2) * max(1, spec.num_experts) + (1 if spec.num_experts else 0)
    return (1 if spec.fused_qkv else 3) + 1 + mlp


def param_tensors_per_layer(spec: ModelSpec) -> int:
    """Parameter tensors of one layer (weights, biases, norm scales and shifts): what per-parameter hooks visit."""
    attention = (1 if spec.fused_qkv else 3) + 1
    mlp = linear_modules_per_layer(spec) - attention
    norm = 2 if spec.norm == "layernorm" else 1
    return (attention * (2 if spec.attention_bias else 1) + mlp * (2 if spec.mlp_bias else 1)
            + spec.norms_per_layer * norm)


def _compute(model: ModelSpec | ModelCounts, st: PerfSettings, cl: Cluster, shape: Shape, peak: float) -> dict:
    """Per-GPU seconds of one micro-step's forward, backward and recomputation, and FLOPs."""
    b, s = shape.micro_batch, shape.seq_len
    e = st.memory.bytes_per_param
    tp, sp = st.tp, st.sp
    tokens = b * s / sp  # tokens this GPU processes per micro-step
    eff = cl.compute_efficiency
    hbm = cl.hbm_bytes_s
    lin_f, attn_f = flops_per_token(model, s)
    if not isinstance(model, ModelSpec):
        fwd = tokens * lin_f / tp / (peak * eff)
        return {"fwd": fwd, "recompute": fwd if shape.recompute == "full" else 0.0, "layers": 0, "modules": 0,
                "lin_f": lin_f, "attn_f": 0.0, "elementwise": 0.0}
    layers = model.num_layers + model.num_decoder_layers
    gemm = 0.0
    for n_in, n_out, count in _linears(model):
        k, n = n_in, n_out / tp
        flops = 2 * tokens * k * n
        moved = e * (tokens * k + k * n + tokens * n)
        gemm += count * max(flops / (peak * eff), moved / hbm)
    head = max(2 * tokens * model.hidden_size * model.vocab_size / tp / (peak * eff),
               e * model.vocab_size * model.hidden_size / tp / hbm)
    # attention core per layer: QK^T and AV, local heads (tp) over the full sequence (Ulysses gathers it)
    causal_skip = 0.5 if (model.causal and shape.attention != "eager") else 1.0
    attn_eff = eff
    if shape.attention != "eager" and cl.perf.flash_attention_fraction:
        attn_eff = min(eff, cl.perf.flash_attention_fraction)  # the fused kernel runs below the GEMMs (H100)
    attn_core = 4 * b * s * s * model.q_dim / tp / sp * causal_skip / (peak * attn_eff)
    # elementwise traffic: the saved activations without the attention scores (SDPA terms), then the eager
    # score matrix explicitly: scale/mask, softmax (fp32 in llama-like models), cast and dropout each read and
    # write the b x a x s^2 matrix in forward, and twice as much happens in backward
    per_layer_saved = sum_terms(layer_terms(model, b, s / sp, e, "sdpa", "none")) / tp
    elementwise = ACTIVATION_PASSES * per_layer_saved / hbm
    extra_passes = COMPOSITE_ACTIVATION_PASSES.get(model.hidden_act, ACTIVATION_PASSES) - ACTIVATION_PASSES
    if extra_passes > 0:
        active = model.experts_per_token if model.num_experts else 1
        elementwise += extra_passes * e * tokens * model.intermediate_size * active / tp / hbm
    if shape.attention == "eager" or model.position == "relative":
        kernels = 3 + (1 if model.attention_dropout > 0 else 0)
        score_bytes = 4 if model.model_type in _FP32_SOFTMAX else e
        scores = b * model.num_heads / tp * (s / sp) * s
        elementwise += 3 * kernels * 2 * score_bytes * scores / hbm
    logits = b * s / sp * model.vocab_size / tp
    head += ACTIVATION_PASSES * (e + 8) * logits / hbm / 3  # logits, fp32 log-softmax and its gradient
    fwd_layer = gemm + attn_core + elementwise / 3  # forward does a third of the elementwise traffic
    fwd = layers * fwd_layer + head
    if shape.recompute == "full":
        recompute = layers * fwd_layer
    elif shape.recompute == "selective":
        recompute = layers * attn_core
    else:
        recompute = 0.0
    modules = linear_modules_per_layer(model) + model.norms_per_layer
    return {"fwd": fwd, "recompute": recompute, "layers": layers, "modules": modules, "lin_f": lin_f,
            "attn_f": attn_f, "elementwise": elementwise * layers}


def _communication(model, st: PerfSettings, cl: Cluster, parts: _Parts) -> None:
    """Add every collective and offload transfer to ``parts``."""
    m = st.memory
    g, n_nodes = cl.gpus_per_node, cl.nodes
    zero_ranks = cl.total_gpus // st.tp  # ZeRO partitions over data x sequence parallel ranks
    gpn_zero = max(1, g // st.tp)
    params = model.total_params / st.tp
    wire = params * st.comm_bytes
    overlap = m.overlap_comm
    ring = lambda nbytes, factor, intra_only=False: _ring(nbytes, factor, zero_ranks, gpn_zero, cl, intra_only)  # noqa: E731
    pcie = cl.pcie_bytes_s * cl.efficiency.link
    part = params / zero_ranks  # parameters this rank owns
    hop = cl.efficiency.ring_hop_latency_s

    def alpha_of(ranks: int, steps_per_rank: int = 1) -> float:
        """Latency of one ring collective over ``ranks`` GPUs: a fixed cost plus one hop per ring step."""
        return cl.efficiency.collective_latency_s + steps_per_rank * max(0, ranks - 1) * hop

    alpha = alpha_of(zero_ranks)

    def calls(nbytes: float, bucket_elems: int, elem_bytes: int) -> float:
        return max(1.0, math.ceil(nbytes / max(1, bucket_elems * elem_bytes))) if nbytes > 0 else 0.0

    def reduce_bucketed(target: dict[str, float], name: str, seconds: float, nbytes: float) -> None:
        """A bucketed gradient reduction: latency per bucket; when it overlaps backward, the last bucket
        (filled by the last layers' gradients) still runs after the backward."""
        n = calls(nbytes, m.reduce_bucket_size, st.comm_bytes)
        seconds += n * alpha
        tail = seconds / n if n else 0.0
        if target is parts.micro_overlap:
            parts.add(parts.micro_serial, name + " (last bucket)", tail)
            seconds -= tail
        parts.add(target, name, seconds)

    if m.stage == 0:
        parts.add(parts.step_serial, "gradient all-reduce",
                  ring(wire, 2) + calls(wire, 500_000_000, st.comm_bytes) * alpha_of(zero_ranks, 2))
    elif m.stage in (1, 2):
        grads = ring(wire, 1)
        if m.stage == 2 or overlap:
            reduce_bucketed(parts.micro_overlap if overlap else parts.micro_serial, "gradient reduce-scatter",
                            grads, wire)
        else:
            reduce_bucketed(parts.step_serial, "gradient reduce-scatter", grads, wire)
        gather = params * m.bytes_per_param
        parts.add(parts.step_serial, "parameter all-gather after the step",
                  ring(gather, 1) + calls(gather, m.allgather_bucket_size, m.bytes_per_param) * alpha)
    else:
        persistent = 0
        fetches = calls(params * m.bytes_per_param, m.prefetch_bucket_size, m.bytes_per_param)
        if isinstance(model, ModelSpec):
            persistent = sum(x.params * x.count for x in model.modules
                             if not x.tied and x.params < m.param_persistence_threshold) / st.tp
            fetches = (model.num_layers + model.num_decoder_layers) * linear_modules_per_layer(model) + 2
        gathered = max(0.0, params - persistent) * m.bytes_per_param
        fwd_bytes = gathered * (0.5 if st.quantized_weights else 1.0)
        target = parts.micro_overlap if overlap else parts.micro_serial
        # one all-gather per parameterised module (DeepSpeed fetches module by module, prefetching ahead)
        parts.add(target, "ZeRO-3 parameter all-gather (forward)", ring(fwd_bytes, 1) + fetches * alpha)
        hpz = m.hpz_partition_size
        if hpz > 1:
            parts.add(target, "ZeRO-3 parameter all-gather (backward, hpZ in-node)",
                      _ring(gathered, 1, min(hpz, zero_ranks), gpn_zero, cl, intra_only=True)
                      + fetches * alpha_of(min(hpz, zero_ranks)))
        else:
            parts.add(target, "ZeRO-3 parameter all-gather (backward)", ring(gathered, 1) + fetches * alpha)
        if st.quantized_gradients:
            # qgZ: int4 all-to-all inside the node, then across nodes on the node's reduced share
            grad_t = _ring(wire * 0.25, 1, min(gpn_zero, zero_ranks), gpn_zero, cl, intra_only=True)
            if zero_ranks > gpn_zero:
                grad_t += wire * 0.25 * (n_nodes - 1) / n_nodes / (cl.inter_bytes_s * cl.efficiency.link)
            reduce_bucketed(target, "gradient reduce-scatter (qgZ int4)", grad_t, wire)
        else:
            reduce_bucketed(target, "gradient reduce-scatter", ring(wire, 1), wire)
        if m.offload_param != "none":
            # each forward and backward fetches the partition from the host before the all-gather
            parts.add(target, "parameter upload over PCIe (offload_param)", 2 * part * m.bytes_per_param / pcie)
            if m.offload_param == "nvme":
                node_bytes = 2 * params * m.bytes_per_param / n_nodes
                parts.add(target, "parameter reads from NVMe", node_bytes / (cl.nvme_bytes_s * cl.efficiency.link))
    if m.stage >= 1 and m.offload_optimizer != "none":
        grad_copy = 4 * part / pcie
        if m.stage == 1:
            parts.add(parts.step_serial, "gradient download to the host (PCIe)", grad_copy)
        else:
            parts.add(parts.micro_overlap if overlap else parts.micro_serial,
                      "gradient download to the host (PCIe)", grad_copy)
        node_params = params * st.tp / n_nodes  # every rank of a node shares the node's CPU
        parts.add(parts.step_serial, "CPU optimizer step", node_params / cl.cpu_adam_rate)
        parts.add(parts.step_serial, "parameter upload after the step (PCIe)", part * m.bytes_per_param / pcie)
        if m.offload_optimizer == "nvme":
            state_bytes = (4 + 4 * m.optimizer_states) * node_params
            parts.add(parts.step_serial, "optimizer state NVMe read + write",
                      2 * state_bytes / (cl.nvme_bytes_s * cl.efficiency.link))
    elif m.stage >= 0:
        owned = params if m.stage == 0 else part
        parts.add(parts.step_serial, "optimizer step (GPU)", ADAM_BYTES_PER_PARAM * owned / cl.hbm_bytes_s)


def _tensor_sequence_parallel(model, st: PerfSettings, cl: Cluster, shape: Shape, parts: _Parts) -> None:
    if not isinstance(model, ModelSpec):
        return
    layers = model.num_layers + model.num_decoder_layers
    e = st.memory.bytes_per_param
    act = shape.micro_batch * shape.seq_len / st.sp * model.hidden_size * e
    if st.tp > 1:
        # two all-reduces of b*s*h per layer in forward and two in backward, inside the node
        t = 4 * layers * _ring(act, 2, st.tp, cl.gpus_per_node, cl)
        parts.add(parts.micro_serial, "tensor-parallel all-reduce (autotp)", t)
    if st.sp > 1:
        # Ulysses: q, k, v and the output re-sharded by all-to-all in forward, and again in backward
        ranks = st.sp
        volume = 8 * layers * act * (ranks - 1) / ranks
        bw = cl.intra_bytes_s if ranks * st.tp <= cl.gpus_per_node else min(cl.intra_bytes_s,
                                                                            cl.inter_bytes_s / cl.gpus_per_node)
        parts.add(parts.micro_serial, "sequence-parallel all-to-all (Ulysses)", volume / (bw * cl.efficiency.link))


def _peak(cl: Cluster, precision: str, notes: list[str]) -> float:
    if precision == "fp32":
        notes.append("fp32 training: costed at the plain fp32 rate (PyTorch leaves TF32 matmuls off by default).")
        return cl.perf.fp32_tflops * 1e12
    if precision == "bf16" and not GPU_BY_NAME[cl.gpu].bf16:
        notes.append(f"{cl.gpu} has no bf16 tensor cores: bf16 is emulated, costed at the fp32 rate; use fp16.")
        return cl.perf.fp32_tflops * 1e12
    return cl.peak_flops


def predict(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    shape: Shape | None = None,
    *,
    settings: PerfSettings | None = None,
) -> StepEstimate:
    """Predict one optimizer step of ``ds_config`` training ``model`` on ``cluster`` with ``shape``.

    ``shape.micro_batch`` is the micro batch per GPU; gradient accumulation comes from the config's batch keys
    (1 when they do not resolve, with a note). ``settings`` skips re-reading the config (for sweeps).
    """
    shape = shape or Shape()
    _check_shape(shape)
    st = settings or read_settings(ds_config, cluster.total_gpus)
    notes = list(st.notes)
    m = st.memory
    gas = st.grad_accum
    if gas is None:
        gas = 1
        notes.append("The config's batch keys do not resolve for this cluster: 1 micro-step per optimizer step "
                     "assumed.")
    if st.config_micro_batch is not None and st.config_micro_batch != shape.micro_batch:
        notes.append(f"The config's micro batch ({st.config_micro_batch}) differs from the shape's "
                     f"({shape.micro_batch}): the shape's is used.")
    peak = _peak(cluster, m.precision, notes)
    comp = _compute(model, st, cluster, shape, peak)
    parts = _Parts()
    fwd = comp["fwd"]
    parts.add(parts.micro_serial, "forward + backward compute", 3 * fwd)
    parts.add(parts.micro_serial, "recomputation", comp["recompute"])
    overhead = comp["layers"] * cluster.efficiency.layer_overhead_s * (4 / 3 if shape.recompute == "full" else 1)
    if m.stage == 3:
        overhead += comp["layers"] * comp["modules"] * 2 * cluster.efficiency.zero3_module_overhead_s
    if isinstance(model, ModelSpec) and (m.stage >= 2 or (m.stage == 1 and m.overlap_comm)):
        # per-parameter gradient hooks (stage 3 has them as well as its module fetch/release hooks)
        overhead += comp["layers"] * param_tensors_per_layer(model) * cluster.efficiency.grad_hook_overhead_s
    parts.add(parts.micro_serial, "host overhead (kernel launches, hooks)", overhead)
    _communication(model, st, cluster, parts)
    _tensor_sequence_parallel(model, st, cluster, shape, parts)

    # overlappable communication hides behind this micro-step's compute (backward only for stage 1/2 buckets)
    compute_micro = 3 * fwd + comp["recompute"]
    window = compute_micro if m.stage == 3 else 2 * fwd + comp["recompute"]
    comm = sum(parts.micro_overlap.values())
    hidden_total = cluster.efficiency.overlap * min(comm, window)
    exposed_fraction = (comm - hidden_total) / comm if comm > 0 else 0.0
    breakdown: dict[str, float] = {}
    hidden: dict[str, float] = {}
    for name, sec in parts.micro_serial.items():
        breakdown[name] = gas * sec
    for name, sec in parts.micro_overlap.items():
        breakdown[name + " (exposed)"] = gas * sec * exposed_fraction
        hidden[name] = gas * sec * (1 - exposed_fraction)
    for name, sec in parts.step_serial.items():
        breakdown[name] = breakdown.get(name, 0.0) + sec
    step = sum(breakdown.values())
    dp = cluster.total_gpus // (st.tp * st.sp)
    tokens_per_step = shape.micro_batch * shape.seq_len * gas * dp
    lin_f, attn_f = comp["lin_f"], comp["attn_f"]
    model_flops = 3 * (lin_f + attn_f)
    hw_flops = model_flops + (lin_f + attn_f if shape.recompute == "full" else 0.0)
    if shape.recompute == "selective":
        hw_flops += attn_f
    tflops = model_flops * tokens_per_step / cluster.total_gpus / step / 1e12
    hw_tflops = hw_flops * tokens_per_step / cluster.total_gpus / step / 1e12
    if not isinstance(model, ModelSpec):
        notes.append("Model given by counts only: 6 FLOPs per parameter per token, no attention, no per-layer "
                     "overheads.")
    elif model.encoder_decoder:
        notes.append("Encoder-decoder model: encoder and decoder are costed at the same sequence length.")
    if m.offload_optimizer != "none" or m.offload_param != "none":
        pinned = m.offload_optimizer_pin_memory and m.offload_param_pin_memory
        if not pinned:
            notes.append("pin_memory is off: host copies run at about half the PCIe rate (not modelled).")
    if shape.attention == "flash" and not GPU_BY_NAME[cluster.gpu].bf16:
        notes.append(f"FlashAttention-2 needs an Ampere or newer GPU; on the {cluster.gpu} SDPA's memory-efficient "
                     "kernel runs instead (costed the same).")
    if cluster.nodes > 1:
        notes.append("Inter-node rings are costed at the node's total network bandwidth; NCCL tree algorithms "
                     "and topology effects are not modelled.")
    return StepEstimate(
        step_seconds=step,
        tokens_per_second=tokens_per_step / step,
        tflops_per_gpu=tflops,
        hardware_tflops_per_gpu=hw_tflops,
        mfu=tflops * 1e12 / peak,
        breakdown=breakdown,
        bottleneck=bottleneck_text(breakdown, step),
        notes=tuple(dict.fromkeys(notes)),
        micro_batch=shape.micro_batch,
        gradient_accumulation_steps=gas,
        tokens_per_step=tokens_per_step,
        model_flops_per_token=model_flops,
        hidden=hidden,
        assumptions={**cluster.resolved(), "peak_tflops_used": peak / 1e12,
                     "efficiency": cluster.efficiency.__dict__.copy(), "activation_passes": ACTIVATION_PASSES},
    )
