"""Activation memory: the tensors autograd saves for backward in PyTorch eager mode, per layer.

The terms follow what the Hugging Face implementations save (checked with ``saved_tensors_hooks`` in
``tests/test_memory_activations.py``): RMSNorm upcasts to fp32 and saves the fp32 input, the rsqrt and the
normalised output; eager attention saves q, the (GQA-repeated) k and v, the fp32 softmax and its
low-precision copy; SDPA / FlashAttention save q, k, v, the output and the fp32 log-sum-exp; the gated MLP
saves gate, act(gate), up and their product. Every function accepts numpy arrays for ``b`` and ``s`` so the
sweeps are vectorised.

Notation: b micro batch, s sequence length, h hidden, a heads, kv KV heads, d head dim, I intermediate,
V vocabulary, L layers, e bytes per element of the compute dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.batch import parallel_groups_whole
from core.memory.parts import Inputs, Part
from core.models.arch import ModelSpec

#: The attention implementations the models know, each with what it is (the app's and the CLI's help say it).
ATTENTION_KINDS = {
    "eager": "PyTorch ops; the score matrix is kept for the backward (the most activation memory)",
    "sdpa": "PyTorch scaled_dot_product_attention: a fused kernel, no score matrix kept",
    "flash": "FlashAttention-2 (transformers' flash_attention_2)",
    "flash1": "flash-attn 1.x or its Triton kernel (e.g. Megatron-DeepSpeed's --use-flash-attn-triton): the "
              "memory of flash; the planner costs it slower",
}
ATTENTION_IMPLS = tuple(ATTENTION_KINDS)


def attention_help(separator: str = "; ") -> str:
    """Every attention implementation with what it is, for a widget's or an option's help."""
    return separator.join(f"{name}: {what}" for name, what in ATTENTION_KINDS.items())


RECOMPUTE_MODES = ("none", "full", "selective")

# activation functions written as several elementwise ops in transformers: number of I-sized tensors they
# save (their input included); fused ones (silu, gelu, gelu_pytorch_tanh) save their input; relu saves its
# output, which is the next linear's input anyway
_COMPOSITE_ACT = {"gelu_new": 4, "gelu_fast": 4, "gelu_accurate": 4, "quick_gelu": 2, "relu": 0}


@dataclass(frozen=True)
class Term:
    """One activation term: ``value`` bytes (scalar or numpy array) and its formula."""

    name: str
    value: Any
    formula: str


def _act_tensors(spec: ModelSpec) -> int:
    return _COMPOSITE_ACT.get(spec.hidden_act, 1)


def _llama_like(spec: ModelSpec) -> bool:
    return spec.model_type in ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3")


def _softmax_fp32(spec: ModelSpec) -> bool:
    """Eager attention computes the softmax in fp32 and casts back (both saved) in these families."""
    return _llama_like(spec) or spec.model_type in ("gpt_neox", "opt", "bloom")


def norm_bytes(spec: ModelSpec, b, s, e: int):
    """Bytes one norm saves, its output (the next linear's input) included."""
    h = spec.hidden_size
    if spec.model_type in ("gemma", "gemma2"):
        # x.float(), rsqrt, normed fp32 (saved by the (1 + w) multiply), output cast to the compute dtype
        out = (8 + e) * b * s * h if e != 4 else 12 * b * s * h
        return out + 4 * b * s + 4 * h, "(8+e)*b*s*h + 4*b*s (fp32 input, rsqrt, normed; output)"
    if spec.model_type == "t5":
        # T5LayerNorm: fp32 copy for the variance, the input itself, x*rsqrt cast back, output
        return ((4 + 3 * e) if e != 4 else 12) * b * s * h + 4 * b * s, "(4+3e)*b*s*h + 4*b*s (T5LayerNorm)"
    if spec.norm == "rmsnorm":
        # HF RMSNorm: fp32 input copy, rsqrt, normalised (cast back), weight * normalised
        return (4 + 2 * e) * b * s * h + 4 * b * s, "(4+2e)*b*s*h + 4*b*s (fp32 input, rsqrt, normed, output)"
    # nn.LayerNorm: input, fp32 mean and rstd, output
    return 2 * e * b * s * h + 8 * b * s, "2e*b*s*h + 8*b*s (input, mean, rstd, output)"


def attention_terms(spec: ModelSpec, b, s, e: int, attention: str, recompute: str, mask_bytes: int = 1) -> list[Term]:
    """Saved bytes of one self-attention block (its input norm excluded)."""
    a = spec.num_heads
    qd, kvd = spec.q_dim, spec.kv_dim
    terms: list[Term] = []
    if attention == "eager":
        repeat = spec.num_kv_heads < spec.num_heads
        k_saved = qd if repeat else kvd
        # matmul needs contiguous batched operands: q, k (GQA-repeated) and v are saved as their own tensors
        terms.append(
            Term(
                "attn: q, k, v" + (" (GQA-repeated)" if repeat else ""),
                e * b * s * (qd + 2 * k_saved),
                "e*b*s*(a*d + 2*a*d)" if repeat else "e*b*s*(a*d + 2*kv*d)",
            )
        )
        if recompute != "selective":
            scores = b * a * s * s
            if _softmax_fp32(spec):
                sm = 4 * scores + (0 if e == 4 else e * scores)
                text = "4*b*a*s^2 (fp32 softmax) + e*b*a*s^2 (its cast)" if e != 4 else "4*b*a*s^2 (softmax)"
            else:
                sm, text = e * scores, "e*b*a*s^2 (softmax)"
            if spec.attention_dropout > 0:
                # dropout saves its mask; matmul saves the dropped probabilities instead of the cast copy
                sm = sm + mask_bytes * scores + (e * scores if not _softmax_fp32(spec) or e == 4 else 0)
                text += f" + {mask_bytes}*b*a*s^2 (dropout mask) + e*b*a*s^2 (dropped probs)"
            if spec.attn_logit_softcapping:
                sm = sm + e * scores
                text += " + e*b*a*s^2 (tanh soft-capping)"
            terms.append(Term("attn: softmax probabilities", sm, text))
        terms.append(Term("attn: output projection input", e * b * s * qd, "e*b*s*a*d"))
    else:
        # SDPA (CPU flash / CUDA flash or mem-efficient), flash_attention_2 and flash-attn 1.x (flash1): q, k, v
        # unrepeated (GQA done in-kernel), the output (also the o_proj input) and the fp32 log-sum-exp
        if spec.fused_qkv and not _llama_like(spec):
            # k stays a view of the fused projection output (keeping all of it alive); q and v are copied
            terms.append(
                Term(
                    f"attn ({attention}): fused qkv output, q and v copies, output",
                    e * b * s * (3 * qd + 3 * kvd),
                    "e*b*s*((a*d + 2*kv*d) + a*d + kv*d + a*d)",
                )
            )
        else:
            terms.append(
                Term(f"attn ({attention}): q, k, v, output", e * b * s * (2 * qd + 2 * kvd), "e*b*s*(2*a*d + 2*kv*d)")
            )
        terms.append(Term(f"attn ({attention}): log-sum-exp", 4 * b * a * s, "4*b*a*s"))
        if spec.attention_dropout > 0:
            terms.append(Term("attn: dropout RNG state", 0 * b, "0 (philox seed/offset)"))
    return terms


def mlp_terms(spec: ModelSpec, b, s, e: int, mask_bytes: int = 1) -> list[Term]:
    """Saved bytes of one MLP (its input norm excluded)."""
    inter = spec.intermediate_size
    n_act = _act_tensors(spec)
    tokens_factor = spec.experts_per_token if spec.num_experts else 1
    if spec.gated_mlp:
        # gate out, act(gate) (n_act tensors incl. input), up out, product (down_proj input)
        n = n_act + 3
        formula = f"{n}*e*b*s*I (gate, act(gate), up, gate*up)"
    else:
        # fc1 output (act input) ... act output (fc2 input)
        n = n_act + 1
        formula = f"{n}*e*b*s*I (fc1 out, activation, fc2 input)"
    terms = [
        Term(
            "mlp: intermediates",
            tokens_factor * n * e * b * s * inter,
            (f"k*{formula} (k={tokens_factor} experts per token)" if spec.num_experts else formula),
        )
    ]
    if spec.model_type == "t5" and spec.hidden_dropout > 0:
        terms.append(
            Term(
                "mlp: dropout inside the feed-forward",
                (mask_bytes + e) * b * s * inter,
                f"({mask_bytes}+e)*b*s*I (mask, dropped activations)",
            )
        )
    if spec.num_experts:
        h, n_exp = spec.hidden_size, spec.num_experts
        terms.append(
            Term(
                "moe: router and token gather/scatter",
                4 * b * s * n_exp + 2 * tokens_factor * e * b * s * h,
                "4*b*s*E (router softmax) + 2*k*e*b*s*h (gathered inputs, weighted outputs)",
            )
        )
    return terms


def layer_terms(
    spec: ModelSpec, b, s, e: int, attention: str = "sdpa", recompute: str = "none", mask_bytes: int = 1
) -> list[Term]:
    """Saved bytes of one decoder layer (without recomputation)."""
    norm, norm_text = norm_bytes(spec, b, s, e)
    if spec.norms_per_layer == 4:
        # gemma2's post-attention / post-feedforward norms feed the residual add: no linear saves their output
        out = e * b * s * spec.hidden_size if e != 4 else 4 * b * s * spec.hidden_size
        terms = [Term("norms", 4 * norm - 2 * out, f"4 x [{norm_text}] - 2 x output (post norms)")]
    else:
        terms = [Term("norms", spec.norms_per_layer * norm, f"{spec.norms_per_layer} x [{norm_text}]")]
    if spec.shared_norm_input and spec.norms_per_layer == 2:
        # parallel residual: both norms read the same input tensor
        terms.append(Term("shared norm input", -e * b * s * spec.hidden_size, "- e*b*s*h (both norms read x)"))
    terms += attention_terms(spec, b, s, e, attention, recompute, mask_bytes)
    terms += mlp_terms(spec, b, s, e, mask_bytes)
    if spec.hidden_dropout > 0:
        terms.append(
            Term(
                "dropout masks (residual)",
                2 * mask_bytes * b * s * spec.hidden_size,
                f"2*{mask_bytes}*b*s*h (masks after attention and MLP)",
            )
        )
    return terms


def sum_terms(terms: list[Term]):
    total = 0
    for t in terms:
        total = total + t.value
    return total


@dataclass(frozen=True)
class ActivationBreakdown:
    """Per-GPU activation bytes for one micro batch (scalars or numpy arrays)."""

    per_layer: Any  # saved bytes of one layer without recomputation
    layers_saved: Any  # what all layers keep until backward, under the recompute mode
    recompute_peak: Any  # one layer's activations rebuilt during backward (full recompute), else 0
    embeddings_and_head: Any  # embedding inputs, final norm, loss inputs saved for backward
    logits_working: Any  # live logits and one fp32 logits-sized transient (not saved for backward)
    checkpoints_cpu: Any  # bytes moved to CPU by cpu_checkpointing (per GPU)
    formula: str

    @property
    def saved_total(self):
        """What autograd holds at the end of the forward (the measurable quantity)."""
        return self.layers_saved + self.embeddings_and_head


def activation_breakdown(
    spec: ModelSpec,
    b,
    s,
    e: int,
    attention: str = "sdpa",
    recompute: str = "none",
    partition_activations: bool = False,
    cpu_checkpointing: bool = False,
    model_parallel_size: int = 1,
    dropout_mask_bytes: int = 1,
) -> ActivationBreakdown:
    """Activation memory of one micro batch on one GPU (data parallel: nothing is split across GPUs).

    ``dropout_mask_bytes``: CUDA's fused dropout saves a bool mask (1); on the CPU PyTorch saves the mask in
    the compute dtype (pass ``e`` to compare with a CPU measurement).
    """
    mb = dropout_mask_bytes
    if spec.position == "relative":
        attention = "eager"  # T5's learned position bias is added to the scores: no fused kernel applies
    h, v = spec.hidden_size, spec.vocab_size
    layers = spec.num_layers + spec.num_decoder_layers
    per_layer_terms = layer_terms(spec, b, s, e, attention, "selective" if recompute == "selective" else "none", mb)
    per_layer = sum_terms(layer_terms(spec, b, s, e, attention, "none", mb))
    norm, _ = norm_bytes(spec, b, s, e)
    rope = 0
    if spec.position == "rope":
        # cos and sin (1, s, d), computed once and shared by all layers
        rope = 2 * e * s * spec.head_dim + 0 * b
    embed = 8 * b * s + (8 * s if spec.position == "learned" else 0) + rope
    if spec.hidden_dropout > 0:
        embed = embed + mb * b * s * h  # embedding dropout mask
    if spec.encoder_decoder:
        # decoder input ids, relative-position bucket indices of both stacks (int64 s x s), decoder embedding
        # dropout mask, decoder's third residual dropout mask per layer; each stack's final norm output is
        # replaced by a dropout (mask + output)
        embed = embed + 8 * b * s + 2 * 8 * s * s
        if spec.hidden_dropout > 0:
            embed = embed + mb * b * s * h + spec.num_decoder_layers * mb * b * s * h
        norm = 2 * (norm + (mb * b * s * h if spec.hidden_dropout > 0 else 0))
    loss_saved = 4 * b * s * v + 8 * b * s  # fp32 log_softmax output and the labels
    logits_working = e * b * s * v + 4 * b * s * v  # live logits + an fp32 copy or its gradient
    if spec.model_type == "t5":
        # T5ForConditionalGeneration applies CrossEntropyLoss to the logits in the compute dtype
        loss_saved = e * b * s * v + 8 * b * s
        logits_working = 2 * e * b * s * v
    if spec.model_type == "bloom":
        embed = embed + e * b * s * h + 8 * b * s  # word_embeddings_layernorm input and stats
    if spec.model_type == "bert":
        # embedding LayerNorm (input, stats) and dropout output; the MLM head's dense, GELU and LayerNorm
        # replace a final norm; the loss runs log_softmax in the compute dtype
        embed = embed + 2 * e * b * s * h + 8 * b * s
        norm = 3 * e * b * s * h + 8 * b * s
        loss_saved = e * b * s * v + 8 * b * s
        logits_working = 2 * e * b * s * v
    if spec.final_logit_softcapping:
        loss_saved = loss_saved + e * b * s * v  # tanh output of the logit soft-capping
    head = embed + norm + loss_saved
    if spec.encoder_decoder:
        # cross-attention per decoder layer: q, k, v, scores and output
        cross = sum_terms(attention_terms(spec, b, s, e, attention, recompute, mb)) + norm_bytes(spec, b, s, e)[0]
        per_layer_dec = per_layer + cross
    else:
        per_layer_dec = per_layer
    formula_parts = [f"{t.name}: {t.formula}" for t in per_layer_terms]
    checkpoints_cpu = 0 * b
    if recompute == "full":
        ckpt = e * b * s * h  # each layer keeps its input
        if partition_activations and model_parallel_size > 1:
            ckpt = ckpt / model_parallel_size
        if cpu_checkpointing:
            checkpoints_cpu = layers * ckpt
            layers_saved = ckpt  # the checkpoint in flight
        else:
            layers_saved = layers * ckpt
        recompute_peak = max_like(per_layer, per_layer_dec)
        formula = (
            f"full recompute: L*e*b*s*h checkpoints{' on CPU' if cpu_checkpointing else ''}"
            f"{' /mp' if partition_activations and model_parallel_size > 1 else ''}"
            " + one layer rebuilt during backward [" + "; ".join(formula_parts) + "]"
        )
    else:
        sel = sum_terms(per_layer_terms)
        if spec.encoder_decoder:
            layers_saved = spec.num_layers * sel + spec.num_decoder_layers * (sel + (per_layer_dec - per_layer))
        else:
            layers_saved = layers * sel
        recompute_peak = 0 * b
        formula = (
            ("selective recompute (attention core rebuilt): " if recompute == "selective" else "")
            + "L x ["
            + "; ".join(formula_parts)
            + "]"
        )
    formula += " + embeddings/final norm + loss: 4*b*s*V (fp32 log_softmax) + 8*b*s"
    return ActivationBreakdown(
        per_layer=per_layer,
        layers_saved=layers_saved,
        recompute_peak=recompute_peak,
        embeddings_and_head=head,
        logits_working=logits_working,
        checkpoints_cpu=checkpoints_cpu,
        formula=formula,
    )


def max_like(x, y):
    """max() that also works elementwise on numpy arrays."""
    try:
        return x if x >= y else y
    except ValueError:
        import numpy as np

        return np.maximum(x, y)


def activation_parts(x: Inputs) -> list[Part]:
    """The activation components of the estimate (none for a model known only by its counts)."""
    model, st, shape, n = x.model, x.st, x.shape, x.n
    if not isinstance(model, ModelSpec):
        return []
    sp = st.sequence_parallel  # Ulysses: each GPU holds its share of every sequence
    tokens = x.s if sp == 1 else x.s // sp if isinstance(x.s, int) and x.s % sp == 0 else x.s / sp
    if sp > 1:  # only on GPU counts its groups split whole (core.batch): elsewhere whole sequences
        whole = parallel_groups_whole(x.gpus_per_node * x.nodes, st.tensor_parallel * sp)
        tokens = (tokens if whole else x.s) if np.ndim(whole) == 0 else np.where(whole, tokens, x.s)
    act = activation_breakdown(model, x.b, tokens, x.e, shape.attention, shape.recompute, st.partition_activations,
                               st.cpu_checkpointing, 1, x.allow.dropout_mask_bytes)
    out = [Part("activations (saved for backward)", "gpu", act.saved_total + 0 * n, act.formula, "activations",
                "forward_backward")]
    if shape.recompute == "full":
        out.append(Part("recomputed layer during backward", "gpu", act.recompute_peak + 0 * n,
                        "one layer's saved tensors, rebuilt from its checkpoint", "activations", "forward_backward"))
        if st.cpu_checkpointing:
            out.append(Part("activation checkpoints on CPU", "cpu", act.checkpoints_cpu * x.gpn,
                            "L*e*b*s*h per rank x gpus_per_node", "activations", "forward_backward"))
    out.append(Part("logits and loss working memory", "gpu", act.logits_working + 0 * n,
                    f"{x.e}*b*s*V (logits) + 4*b*s*V (fp32 upcast / its gradient)", "activations", "forward_backward"))
    return out
