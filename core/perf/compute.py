"""Compute time of one micro-step on one GPU: FLOPs per token, each GEMM on the roofline of the GPU's achievable
matmul rate and its memory bandwidth, the attention core, elementwise traffic, recomputation (``predict`` adds
communication, offload and host costs; its module docstring describes the whole model)."""

from __future__ import annotations

from core.hardware import GPU_BY_NAME
from core.memory.activations import layer_terms, sum_terms
from core.memory.estimate import ModelCounts, Shape
from core.models.arch import ModelSpec
from core.perf.constants import FUSED_ATTENTION_BACKWARD_FACTOR, FUSED_ATTENTION_HEAD_DIMS
from core.perf.hardware import Cluster
from core.perf.settings import PerfSettings

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


def _cross_attention_linears(spec: ModelSpec) -> list[tuple[int, int, float]]:
    """(in, out, count) of a decoder layer's cross-attention (encoder-decoder models): q from the decoder, k and v
    from the encoder's output, o; none for a decoder-only model."""
    if not spec.encoder_decoder:
        return []
    h, q = spec.hidden_size, spec.q_dim
    return [(h, q, 1.0), (h, 2 * q, 1.0), (q, h, 1.0)]


def _head_linears(spec: ModelSpec) -> list[tuple[int, int, float]]:
    """(in, out, count) of the linear layers outside the layers that run per token: the projections between the
    embedding width and the hidden size (OPT's project_in and project_out) when the two differ; the LM head is
    costed apart."""
    if not spec.embedding_width:
        return []
    return [(spec.embedding_width, spec.hidden_size, 1.0), (spec.hidden_size, spec.embedding_width, 1.0)]


def layer_module_params(spec: ModelSpec) -> list[float]:
    """Parameters of each linear module of one layer in forward order (q/k/v or fused qkv, o, the MLP's input
    projections, its output projection; MoE: the router, then every expert in the one module transformers stacks
    them in): the order ZeRO-3 fetches them in."""
    linears = _linears(spec)
    if not spec.num_experts:
        return [i * o * c for i, o, c in linears]
    attention, experts, router = linears[:2], linears[2:4], linears[4]
    return ([i * o * c for i, o, c in attention] + [router[0] * router[1] * router[2]]
            + [spec.num_experts * sum(i * o for i, o, _ in experts)])


def flops_per_token(model: ModelSpec | ModelCounts, seq_len: int) -> tuple[float, float]:
    """Forward FLOPs per token: (linear layers incl. the LM head, attention scores and values). Attention is
    counted over the full s x s matrix, as the Megatron/DeepSpeed formulas do."""
    if not isinstance(model, ModelSpec):
        return 2.0 * model.total_params, 0.0
    layers = model.num_layers + model.num_decoder_layers
    linear = sum(i * o * c for i, o, c in _linears(model)) * layers + model.vocab_size * model.head_width
    linear += sum(i * o * c for i, o, c in _head_linears(model))
    linear += model.num_decoder_layers * sum(i * o * c for i, o, c in _cross_attention_linears(model))
    # a decoder layer of an encoder-decoder model attends twice: to itself and to the encoder's output
    cross_layers = model.num_decoder_layers if model.encoder_decoder else 0
    attention = 4.0 * seq_len * model.q_dim * (layers + cross_layers)
    return 2.0 * linear, attention


def padded_head_dim(head_dim: int, attention: str) -> int:
    """The head dimension a fused attention kernel computes with (``FUSED_ATTENTION_HEAD_DIMS``: the smallest
    compiled one that holds ``head_dim``); eager attention and head dimensions beyond the kernels' run unpadded."""
    return next((d for d in FUSED_ATTENTION_HEAD_DIMS.get(attention, ()) if d >= head_dim), head_dim)


def parameterised_modules(spec: ModelSpec) -> int:
    """Modules with parameters of their own in the module tree transformers builds (``spec.modules``: linears,
    norms, embeddings, the head, a MoE layer's router and its one stacked experts module): what ZeRO-3 fetches
    and hooks module by module. A tied head is a module of its own, hooked like the others."""
    return sum(m.count for m in spec.modules if m.tensor_sizes)


def parameter_tensors(model: ModelSpec | ModelCounts) -> int | None:
    """Parameter tensors of the whole model (``spec.modules``' tensors, a tied one once), or None for a model known
    by its counts: what per-parameter hooks visit and the most gradient buckets a backward fills."""
    if not isinstance(model, ModelSpec):
        return None
    return sum(len(m.tensor_sizes) * m.count for m in model.modules if not m.tied)


def micro_step(model: ModelSpec | ModelCounts, st: PerfSettings, cl: Cluster, shape: Shape, peak: float) -> dict:
    """Per-GPU seconds of one micro-step's forward, backward and recomputation, and FLOPs."""
    b, s = shape.micro_batch, shape.seq_len
    e = st.compute_bytes
    tp, sp = st.tp, st.sp
    tokens = b * s / sp  # tokens this GPU processes per micro-step
    cuda_cores = cl.cuda_core_scale if on_cuda_cores(cl, st.compute_precision) else 1.0
    eff = min(1.0, cl.compute_efficiency * cuda_cores)  # a fitted efficiency x the scale never beats the peak
    hbm = cl.hbm_bytes_s
    lin_f, attn_f = flops_per_token(model, s)
    if not isinstance(model, ModelSpec):
        fwd = tokens * lin_f / tp / (peak * eff)
        return {"fwd": fwd, "recompute": fwd if shape.recompute == "full" else 0.0, "layers": 0, "modules": 0,
                "lin_f": lin_f, "attn_f": 0.0, "elementwise": 0.0, "bwd_extra": 0.0}
    layers = model.num_layers + model.num_decoder_layers

    def gemms(linears: list[tuple[int, int, float]]) -> float:
        """Seconds of these linear layers' forward GEMMs, each on the roofline."""
        total = 0.0
        for n_in, n_out, count in linears:
            k, n = n_in, n_out / tp
            flops = 2 * tokens * k * n
            moved = e * (tokens * k + k * n + tokens * n)
            total += count * max(flops / (peak * eff), moved / hbm)
        return total

    gemm = gemms(_linears(model))
    head = max(2 * tokens * model.head_width * model.vocab_size / tp / (peak * eff),
               e * model.vocab_size * model.head_width / tp / hbm) + gemms(_head_linears(model))
    # attention core per layer: QK^T and AV, local heads (tp) over the full sequence (Ulysses gathers it)
    causal_skip = 0.5 if (model.causal and shape.attention != "eager") else 1.0
    attn_eff = min(1.0, cl.attention_efficiency(shape.attention) * cuda_cores)  # fused kernels can run slower
    attn_core = 4 * b * s * s * model.q_dim / tp / sp * causal_skip / (peak * attn_eff)
    if shape.attention == "flash1" or GPU_BY_NAME[cl.gpu].bf16:  # before Ampere SDPA runs its mem-efficient kernel
        attn_core *= padded_head_dim(model.head_dim, shape.attention) / model.head_dim
    # a decoder layer's cross-attention: its projections and a core over the encoder's tokens (not causal)
    cross_core = attn_core / causal_skip if model.encoder_decoder else 0.0
    cross = model.num_decoder_layers * (gemms(_cross_attention_linears(model)) + cross_core)
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
    fwd = layers * fwd_layer + cross + head
    if shape.recompute == "full":
        recompute = layers * fwd_layer + cross
    elif shape.recompute == "selective":
        recompute = layers * attn_core + model.num_decoder_layers * cross_core
    else:
        recompute = 0.0
    fused = shape.attention != "eager" and model.position != "relative"
    bwd_extra = (layers * attn_core + model.num_decoder_layers * cross_core) * (FUSED_ATTENTION_BACKWARD_FACTOR - 2) \
        if fused else 0.0
    return {"fwd": fwd, "recompute": recompute, "layers": layers, "modules": parameterised_modules(model),
            "lin_f": lin_f, "attn_f": attn_f, "elementwise": elementwise * layers, "bwd_extra": bwd_extra,
            "attn_computed": causal_skip}


def on_cuda_cores(cl: Cluster, precision: str) -> bool:
    """Whether the matmuls run on the CUDA cores (fp32, or bf16 on a GPU without bf16 tensor cores)."""
    return precision == "fp32" or (precision == "bf16" and not GPU_BY_NAME[cl.gpu].bf16)


def peak_flops(cl: Cluster, precision: str, notes: list[str]) -> float:
    if not on_cuda_cores(cl, precision):
        return cl.peak_flops
    notes.append("fp32 training: costed at the plain fp32 rate (PyTorch leaves TF32 matmuls off by default)."
                 if precision == "fp32" else
                 f"{cl.gpu} has no bf16 tensor cores: bf16 is emulated, costed at the fp32 rate; use fp16.")
    # a peak_tflops override (clocks, power caps) scales the CUDA cores' rate as it does the tensor cores'
    return cl.perf.fp32_tflops * 1e12 * cl.peak_flops / (cl.perf.peak_tflops * 1e12)
