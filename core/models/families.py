"""Per-family module trees: how each Hugging Face ``model_type`` turns into a ``ModelSpec`` (``describe``).

Counting mirrors the module tree ``transformers`` builds for the training head of each family
(``AutoModelForCausalLM``; ``BertForMaskedLM`` for bert; ``T5ForConditionalGeneration`` for t5). A new family is
one function ``(ConfigReader, name) -> ModelSpec`` here, added to ``FAMILIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.models.arch import (
    BY_HAND,
    DEFAULT_SOURCE,
    ConfigReader,
    ModelConfigError,
    ModelSpec,
    ModuleParams,
    UnsupportedModelError,
)

#: Why a model whose hidden size is not a multiple of its head count is refused.
_HEADS_SPLIT = "transformers' attention splits the hidden size into equal heads and refuses the model otherwise"


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _lin(name: str, n_in: int, n_out: int, bias: bool, count: int = 1) -> ModuleParams:
    """A Linear (or GPT-2's Conv1D) module: its weight, and its bias when it has one, as separate tensors."""
    return ModuleParams(name, _linear(n_in, n_out, bias), count, tensors=(n_in * n_out, n_out) if bias else ())


def _layernorm(name: str, width: int, count: int = 1) -> ModuleParams:
    """A LayerNorm with its scale and shift (two tensors of ``width``)."""
    return ModuleParams(name, 2 * width, count, tensors=(width, width))


def _layernorm_era_spec(name: str, model_type: str, *, hidden: int, layers: int, heads: int, inter: int, vocab: int,
                        positions: int, tie: bool, modules: Sequence[ModuleParams], **rest: Any) -> ModelSpec:
    """A ModelSpec for gpt2, gpt_neox, opt, bloom, falcon, bert and t5: unless ``rest`` says otherwise,
    multi-head attention (as many KV heads as heads, head_dim = hidden // heads) with biases, an ungated
    MLP with biases and two LayerNorms per layer."""
    fields: dict[str, Any] = {"num_kv_heads": heads, "head_dim": hidden // heads, "gated_mlp": False,
                              "attention_bias": True, "mlp_bias": True, "norm": "layernorm", "norms_per_layer": 2}
    fields.update(rest)
    return ModelSpec(name=name, model_type=model_type, hidden_size=hidden, num_layers=layers, num_heads=heads,
                     intermediate_size=inter, vocab_size=vocab, max_position_embeddings=positions,
                     tie_word_embeddings=tie, modules=tuple(modules), **fields)


# family -> (default vocab, hidden, intermediate, layers, heads, kv heads (None: = heads), head_dim (None: derived),
#            tie, norms per layer)
_LLAMA_LIKE: dict[str, dict[str, Any]] = {
    # heads_split: the config class refuses a hidden size that the heads do not divide, head_dim given or not
    # (LlamaConfig / Gemma2Config.validate_architecture in transformers 5)
    "llama": dict(vocab=32000, hidden=4096, inter=11008, layers=32, heads=32, kv=None, head_dim=None, tie=False,
                  heads_split=True),
    "mistral": dict(vocab=32000, hidden=4096, inter=14336, layers=32, heads=32, kv=8, head_dim=None, tie=False),
    "mixtral": dict(vocab=32000, hidden=4096, inter=14336, layers=32, heads=32, kv=8, head_dim=None, tie=False),
    "qwen2": dict(vocab=151936, hidden=4096, inter=22016, layers=32, heads=32, kv=32, head_dim=None, tie=False),
    "gemma": dict(vocab=256000, hidden=3072, inter=24576, layers=28, heads=16, kv=16, head_dim=256, tie=True),
    "gemma2": dict(vocab=256000, hidden=2304, inter=9216, layers=26, heads=8, kv=4, head_dim=256, tie=True,
                   heads_split=True),
    "phi3": dict(vocab=32064, hidden=3072, inter=8192, layers=32, heads=32, kv=None, head_dim=None, tie=False),
}


def _llama_like(c: ConfigReader, name: str) -> ModelSpec:
    mt = c.model_type
    d = _LLAMA_LIKE[mt]
    hidden = c.int("hidden_size", default=d["hidden"])
    layers = c.int("num_hidden_layers", default=d["layers"])
    heads = c.int("num_attention_heads", default=d["heads"])
    kv = c.int("num_key_value_heads", default=d["kv"] or heads)
    if d.get("heads_split"):
        c.require_multiple("hidden_size", hidden, "num_attention_heads", heads, _HEADS_SPLIT)
    c.require_multiple("num_attention_heads", heads, "num_key_value_heads", kv,
                       "the attention repeats each key/value head for num_attention_heads / num_key_value_heads "
                       "query heads, and the model fails at its first forward otherwise")
    head_dim = c.int("head_dim", default=d["head_dim"] or hidden // heads)
    c.require_even_rotary(head_dim, "partial_rotary_factor",
                          head_dim_from="head_dim" if c.cfg.get("head_dim") is not None else "hidden_size / heads")
    inter = c.int("intermediate_size", default=d["inter"])
    vocab = c.int("vocab_size", default=d["vocab"])
    tie = c.bool("tie_word_embeddings", default=d["tie"])
    qkv_bias = out_bias = mlp_bias = False
    if mt in ("llama", "gemma", "gemma2"):
        qkv_bias = out_bias = c.bool("attention_bias", default=False)
    if mt == "llama":
        mlp_bias = c.bool("mlp_bias", default=False)
    if mt == "qwen2":
        qkv_bias = True
    q, kvd = heads * head_dim, kv * head_dim
    per_layer: list[ModuleParams] = []
    if mt == "phi3":
        per_layer.append(_lin("self_attn.qkv_proj", hidden, q + 2 * kvd, False, layers))
    else:
        per_layer += [
            _lin("self_attn.q_proj", hidden, q, qkv_bias, layers),
            _lin("self_attn.k_proj", hidden, kvd, qkv_bias, layers),
            _lin("self_attn.v_proj", hidden, kvd, qkv_bias, layers),
        ]
    per_layer.append(_lin("self_attn.o_proj", q, hidden, out_bias, layers))
    experts = top_k = 0
    if mt == "mixtral":
        experts = c.int("num_local_experts", default=8)
        top_k = c.int("num_experts_per_tok", default=2)
        if top_k > experts:
            raise ModelConfigError(f"{c.where}: 'num_experts_per_tok' ({top_k}) is more than "
                                   f"'num_local_experts' ({experts}): the router cannot pick more experts than exist.")
        per_layer += [
            ModuleParams("mlp.gate (router)", hidden * experts, layers),
            # transformers 5 stacks the experts into one module of two tensors (gate_up_proj, down_proj)
            ModuleParams("mlp.experts", experts * (2 * inter * hidden + hidden * inter), layers,
                         tensors=(experts * 2 * inter * hidden, experts * hidden * inter)),
        ]
    elif mt == "phi3":
        per_layer += [
            _lin("mlp.gate_up_proj", hidden, 2 * inter, False, layers),
            _lin("mlp.down_proj", inter, hidden, False, layers),
        ]
    else:
        per_layer += [
            _lin("mlp.gate_proj", hidden, inter, mlp_bias, layers),
            _lin("mlp.up_proj", hidden, inter, mlp_bias, layers),
            _lin("mlp.down_proj", inter, hidden, mlp_bias, layers),
        ]
    norms = 4 if mt == "gemma2" else 2
    per_layer.append(ModuleParams("layer norms (RMSNorm)", hidden, layers * norms))
    modules = (
        ModuleParams("embed_tokens", vocab * hidden),
        *per_layer,
        ModuleParams("norm", hidden),
        ModuleParams("lm_head", vocab * hidden, tied=tie),
    )
    return ModelSpec(
        name=name,
        model_type=mt,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        max_position_embeddings=c.int("max_position_embeddings", default=2048),
        tie_word_embeddings=tie,
        gated_mlp=True,
        attention_bias=qkv_bias,
        mlp_bias=mlp_bias,
        norm="rmsnorm",
        norms_per_layer=norms,
        num_experts=experts,
        experts_per_token=top_k,
        attention_dropout=c.float("attention_dropout", default=0.0),
        hidden_dropout=c.float("resid_pdrop", default=0.0) if mt == "phi3" else 0.0,
        fused_qkv=mt == "phi3",
        attn_logit_softcapping=c.float("attn_logit_softcapping", default=50.0) if mt == "gemma2" else 0.0,
        final_logit_softcapping=c.float("final_logit_softcapping", default=30.0) if mt == "gemma2" else 0.0,
        modules=modules,
    )


def _gpt2(c: ConfigReader, name: str) -> ModelSpec:
    # transformers sets the standard names (PretrainedConfig's attribute_map) after GPT2Config's own arguments:
    # a config giving both keeps hidden_size, num_hidden_layers, num_attention_heads, max_position_embeddings
    hidden = c.int("hidden_size", "n_embd", default=768)
    layers = c.int("num_hidden_layers", "n_layer", default=12)
    heads = c.int("num_attention_heads", "n_head", default=12)
    c.require_multiple(c.named("hidden_size", "n_embd"), hidden, c.named("num_attention_heads", "n_head"), heads,
                       _HEADS_SPLIT)
    inter = c.int("n_inner", default=4 * hidden)
    vocab = c.int("vocab_size", default=50257)
    positions = c.int("max_position_embeddings", "n_positions", default=1024)
    tie = c.bool("tie_word_embeddings", default=True)
    modules = (
        ModuleParams("wte", vocab * hidden),
        ModuleParams("wpe", positions * hidden),
        _layernorm("ln_1, ln_2", hidden, 2 * layers),
        _lin("attn.c_attn", hidden, 3 * hidden, True, layers),
        _lin("attn.c_proj", hidden, hidden, True, layers),
        _lin("mlp.c_fc", hidden, inter, True, layers),
        _lin("mlp.c_proj", inter, hidden, True, layers),
        _layernorm("ln_f", hidden),
        ModuleParams("lm_head", vocab * hidden, tied=tie),
    )
    return _layernorm_era_spec(
        name, "gpt2",
        hidden=hidden, layers=layers, heads=heads, inter=inter, vocab=vocab, positions=positions, tie=tie,
        attention_dropout=c.float("attn_pdrop", default=0.1), hidden_dropout=c.float("resid_pdrop", default=0.1),
        fused_qkv=True, hidden_act=c.str("activation_function", default="gelu_new"), position="learned",
        modules=modules,
    )


def _gpt_neox(c: ConfigReader, name: str) -> ModelSpec:
    hidden = c.int("hidden_size", default=6144)
    layers = c.int("num_hidden_layers", default=44)
    heads = c.int("num_attention_heads", default=64)
    c.require_multiple("hidden_size", hidden, "num_attention_heads", heads, _HEADS_SPLIT)
    c.require_even_rotary(hidden // heads, "rotary_pct", 0.25, head_dim_from="hidden_size / heads")
    inter = c.int("intermediate_size", default=24576)
    vocab = c.int("vocab_size", default=50432)
    tie = c.bool("tie_word_embeddings", default=False)
    bias = c.bool("attention_bias", default=True)
    modules = (
        ModuleParams("embed_in", vocab * hidden),
        _layernorm("input/post_attention_layernorm", hidden, 2 * layers),
        _lin("attention.query_key_value", hidden, 3 * hidden, bias, layers),
        _lin("attention.dense", hidden, hidden, bias, layers),
        _lin("mlp.dense_h_to_4h", hidden, inter, True, layers),
        _lin("mlp.dense_4h_to_h", inter, hidden, True, layers),
        _layernorm("final_layer_norm", hidden),
        ModuleParams("lm_head", vocab * hidden, tied=tie),
    )
    return _layernorm_era_spec(
        name, "gpt_neox",
        hidden=hidden, layers=layers, heads=heads, inter=inter, vocab=vocab,
        positions=c.int("max_position_embeddings", default=2048), tie=tie, attention_bias=bias,
        attention_dropout=c.float("attention_dropout", default=0.0),
        hidden_dropout=c.float("hidden_dropout", default=0.0), fused_qkv=True,
        hidden_act=c.str("hidden_act", default="gelu"),
        shared_norm_input=c.bool("use_parallel_residual", default=True), modules=modules,
    )


def _opt(c: ConfigReader, name: str) -> ModelSpec:
    hidden = c.int("hidden_size", default=768)
    layers = c.int("num_hidden_layers", default=12)
    heads = c.int("num_attention_heads", default=12)
    c.require_multiple("hidden_size", hidden, "num_attention_heads", heads, _HEADS_SPLIT)
    ffn = c.int("ffn_dim", default=3072)
    vocab = c.int("vocab_size", default=50272)
    positions = c.int("max_position_embeddings", default=2048)
    proj = c.int("word_embed_proj_dim", default=hidden)
    bias = c.bool("enable_bias", default=True)
    affine = c.bool("layer_norm_elementwise_affine", default=True)
    ln = 2 * hidden if affine else 0
    ln_tensors = (hidden, hidden) if affine else ()
    final_ln = c.bool("do_layer_norm_before", default=True) and not c.bool("_remove_final_layer_norm", default=False)
    tie = c.bool("tie_word_embeddings", default=True)
    modules = [
        ModuleParams("embed_tokens", vocab * proj),
        ModuleParams("embed_positions", (positions + 2) * hidden),  # OPT offsets positions by 2
    ]
    if proj != hidden:
        modules += [ModuleParams("project_in", proj * hidden), ModuleParams("project_out", hidden * proj)]
    if final_ln:
        modules.append(ModuleParams("final_layer_norm", ln, tensors=ln_tensors))
    modules += [
        _lin("self_attn.q/k/v/out_proj", hidden, hidden, bias, 4 * layers),
        ModuleParams("self_attn_layer_norm, final_layer_norm", ln, 2 * layers, tensors=ln_tensors),
        _lin("fc1", hidden, ffn, bias, layers),
        _lin("fc2", ffn, hidden, bias, layers),
        ModuleParams("lm_head", proj * vocab, tied=tie),
    ]
    return _layernorm_era_spec(
        name, "opt",
        hidden=hidden, layers=layers, heads=heads, inter=ffn, vocab=vocab, positions=positions, tie=tie,
        attention_bias=bias, mlp_bias=bias, attention_dropout=c.float("attention_dropout", default=0.0),
        hidden_dropout=c.float("dropout", default=0.1), hidden_act=c.str("activation_function", default="relu"),
        position="learned", embedding_width=proj if proj != hidden else 0, modules=modules,
    )


def _bloom(c: ConfigReader, name: str) -> ModelSpec:
    # BloomConfig pops the legacy n_embed and prefers it to hidden_size; the standard names of the layers and
    # heads are set after its own n_layer / n_head (as transformers reads a config giving both)
    hidden = c.int("n_embed", "hidden_size", default=64)
    layers = c.int("num_hidden_layers", "n_layer", default=2)
    heads = c.int("num_attention_heads", "n_head", default=8)
    c.require_multiple(c.named("n_embed", "hidden_size"), hidden, c.named("num_attention_heads", "n_head"), heads,
                       _HEADS_SPLIT)
    vocab = c.int("vocab_size", default=250880)
    tie = c.bool("tie_word_embeddings", default=True)
    modules = (
        ModuleParams("word_embeddings", vocab * hidden),
        _layernorm("word_embeddings_layernorm", hidden),
        _layernorm("input/post_attention_layernorm", hidden, 2 * layers),
        _lin("self_attention.query_key_value", hidden, 3 * hidden, True, layers),
        _lin("self_attention.dense", hidden, hidden, True, layers),
        _lin("mlp.dense_h_to_4h", hidden, 4 * hidden, True, layers),
        _lin("mlp.dense_4h_to_h", 4 * hidden, hidden, True, layers),
        _layernorm("ln_f", hidden),
        ModuleParams("lm_head", vocab * hidden, tied=tie),
    )
    return _layernorm_era_spec(
        name, "bloom",
        hidden=hidden, layers=layers, heads=heads, inter=4 * hidden, vocab=vocab, positions=0, tie=tie,
        attention_dropout=c.float("attention_dropout", default=0.0),
        hidden_dropout=c.float("hidden_dropout", default=0.0), fused_qkv=True, hidden_act="bloom_gelu",
        position="alibi", modules=modules,
    )


def _falcon(c: ConfigReader, name: str) -> ModelSpec:
    hidden = c.int("n_embed", "hidden_size", default=4544)  # FalconConfig prefers the legacy n_embed, as Bloom's
    layers = c.int("num_hidden_layers", "n_layer", default=32)
    heads = c.int("num_attention_heads", "n_head", default=71)
    c.require_multiple(c.named("n_embed", "hidden_size"), hidden, c.named("num_attention_heads", "n_head"), heads,
                       _HEADS_SPLIT)
    kv = c.int("num_kv_heads", default=heads)
    vocab = c.int("vocab_size", default=65024)
    ffn = c.int("ffn_hidden_size", default=4 * hidden)
    bias = c.bool("bias", default=False)
    new_arch = c.bool("new_decoder_architecture", default=False)
    multi_query = c.bool("multi_query", default=True)
    parallel = c.bool("parallel_attn", default=True)
    n_ln = c.int("num_ln_in_parallel_attn", default=2 if new_arch else 1)
    tie = c.bool("tie_word_embeddings", default=True)
    head_dim = hidden // heads
    if not c.bool("alibi", default=False):
        c.require_even_rotary(head_dim, head_dim_from="hidden_size / heads")
    if new_arch:
        qkv_out, kv_heads = (2 * kv + heads) * head_dim, kv
    elif multi_query:
        qkv_out, kv_heads = hidden + 2 * head_dim, 1
    else:
        qkv_out, kv_heads = 3 * hidden, heads
    norms = 2 if (not parallel or n_ln == 2) else 1
    modules = (
        ModuleParams("word_embeddings", vocab * hidden),
        _lin("self_attention.query_key_value", hidden, qkv_out, bias, layers),
        _lin("self_attention.dense", hidden, hidden, bias, layers),
        _lin("mlp.dense_h_to_4h", hidden, ffn, bias, layers),
        _lin("mlp.dense_4h_to_h", ffn, hidden, bias, layers),
        _layernorm("layer norms", hidden, norms * layers),
        _layernorm("ln_f", hidden),
        ModuleParams("lm_head", vocab * hidden, tied=tie),
    )
    return _layernorm_era_spec(
        name, "falcon",
        hidden=hidden, layers=layers, heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, inter=ffn, vocab=vocab,
        positions=c.int("max_position_embeddings", default=2048), tie=tie, attention_bias=bias, mlp_bias=bias,
        norms_per_layer=norms, attention_dropout=c.float("attention_dropout", default=0.0),
        hidden_dropout=c.float("hidden_dropout", default=0.0), fused_qkv=True,
        hidden_act=c.str("activation", default="gelu"), shared_norm_input=parallel and norms == 2,
        position="alibi" if c.bool("alibi", default=False) else "rope", modules=modules,
    )


def _bert(c: ConfigReader, name: str) -> ModelSpec:
    hidden = c.int("hidden_size", default=768)
    layers = c.int("num_hidden_layers", default=12)
    heads = c.int("num_attention_heads", default=12)
    c.require_multiple("hidden_size", hidden, "num_attention_heads", heads, _HEADS_SPLIT)
    inter = c.int("intermediate_size", default=3072)
    vocab = c.int("vocab_size", default=30522)
    positions = c.int("max_position_embeddings", default=512)
    types = c.int("type_vocab_size", default=2, minimum=0)
    tie = c.bool("tie_word_embeddings", default=True)
    modules = (
        ModuleParams("embeddings.word_embeddings", vocab * hidden),
        ModuleParams("embeddings.position_embeddings", positions * hidden),
        ModuleParams("embeddings.token_type_embeddings", types * hidden),
        _layernorm("embeddings.LayerNorm", hidden),
        _lin("attention.self.query/key/value, attention.output.dense", hidden, hidden, True, 4 * layers),
        _layernorm("attention.output.LayerNorm, output.LayerNorm", hidden, 2 * layers),
        _lin("intermediate.dense", hidden, inter, True, layers),
        _lin("output.dense", inter, hidden, True, layers),
        _lin("cls.predictions.transform.dense", hidden, hidden, True),
        _layernorm("cls.predictions.transform.LayerNorm", hidden),
        ModuleParams("cls.predictions.bias", vocab),
        # tied: the decoder's weight is the word embedding and its bias is cls.predictions.bias;
        # untied (transformers ties neither then): both are its own tensors
        ModuleParams("cls.predictions.decoder", vocab * hidden + vocab, tied=tie, tensors=(vocab * hidden, vocab)),
    )
    return _layernorm_era_spec(
        name, "bert",
        hidden=hidden, layers=layers, heads=heads, inter=inter, vocab=vocab, positions=positions, tie=tie,
        causal=False, attention_dropout=c.float("attention_probs_dropout_prob", default=0.1),
        hidden_dropout=c.float("hidden_dropout_prob", default=0.1), hidden_act=c.str("hidden_act", default="gelu"),
        position="learned", modules=modules,
    )


def _t5(c: ConfigReader, name: str) -> ModelSpec:
    # the standard names win over T5Config's own when a config gives both (set after them, as in GPT-2)
    d_model = c.int("hidden_size", "d_model", default=512)
    d_kv = c.int("d_kv", default=64)
    d_ff = c.int("d_ff", default=2048)
    enc_layers = c.int("num_hidden_layers", "num_layers", default=6)
    # T5Config defaults the decoder's depth to its own num_layers argument before the standard name is applied:
    # num_hidden_layers alone leaves the decoder at the default 6 (transformers' behaviour, however odd)
    if c.cfg.get("num_decoder_layers") is None and c.cfg.get("num_layers") is not None:
        dec_layers = c.int("num_layers")
    elif c.cfg.get("num_decoder_layers") is None and c.cfg.get("num_hidden_layers") is not None:
        dec_layers = 6  # T5Config's default num_layers
    else:
        dec_layers = c.int("num_decoder_layers", default=enc_layers)
    heads = c.int("num_attention_heads", "num_heads", default=8)
    vocab = c.int("vocab_size", default=32128)
    buckets = c.int("relative_attention_num_buckets", default=32)
    gated = c.str("feed_forward_proj", default="relu").startswith("gated-")
    # transformers >= 5 ties T5's lm_head to the shared embedding whatever tie_word_embeddings says (it only
    # uses the flag to decide output scaling); 4.x kept a separate lm_head for t5 v1.1 / flan-t5 checkpoints.
    c.bool("tie_word_embeddings", default=True)  # still validated
    tie = True
    inner = heads * d_kv
    ff_in = ModuleParams(
        "DenseReluDense.wi_0/wi_1" if gated else "DenseReluDense.wi",
        d_model * d_ff,
        (2 if gated else 1) * (enc_layers + dec_layers),
    )
    modules = (
        ModuleParams("shared", vocab * d_model),
        ModuleParams("encoder/decoder.embed_tokens", vocab * d_model, 2, tied=True),
        ModuleParams("SelfAttention.q/k/v", d_model * inner, 3 * (enc_layers + dec_layers)),
        ModuleParams("SelfAttention.o", inner * d_model, enc_layers + dec_layers),
        ModuleParams("relative_attention_bias", buckets * heads, 2),
        ModuleParams("EncDecAttention.q/k/v", d_model * inner, 3 * dec_layers),
        ModuleParams("EncDecAttention.o", inner * d_model, dec_layers),
        ff_in,
        ModuleParams("DenseReluDense.wo", d_ff * d_model, enc_layers + dec_layers),
        ModuleParams("layer_norm", d_model, 2 * enc_layers + 3 * dec_layers + 2),
        ModuleParams("lm_head", d_model * vocab, tied=tie),
    )
    return _layernorm_era_spec(
        name, "t5",
        hidden=d_model, layers=enc_layers, heads=heads, head_dim=d_kv, inter=d_ff, vocab=vocab, positions=0, tie=tie,
        gated_mlp=gated, attention_bias=False, mlp_bias=False, norm="rmsnorm", encoder_decoder=True,
        num_decoder_layers=dec_layers, causal=False, attention_dropout=c.float("dropout_rate", default=0.1),
        hidden_dropout=c.float("dropout_rate", default=0.1),
        hidden_act="gelu_new" if gated else c.str("dense_act_fn", default="relu"), position="relative",
        modules=modules,
    )


FAMILIES: dict[str, Callable[[ConfigReader, str], ModelSpec]] = {
    **dict.fromkeys(_LLAMA_LIKE, _llama_like),
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
    "bloom": _bloom,
    "falcon": _falcon,
    "bert": _bert,
    "t5": _t5,
}
SUPPORTED_FAMILIES: tuple[str, ...] = tuple(sorted(FAMILIES))
#: The ``transformers`` auto class that builds the model whose parameters ``describe`` counts (causal LM unless
#: listed): what the tests and ``scripts/measure_activations.py`` instantiate to check the counts.
TRAINING_HEADS: dict[str, str] = {"t5": "AutoModelForSeq2SeqLM", "bert": "AutoModelForMaskedLM"}


def training_head(model_type: str) -> str:
    """Name of the ``transformers`` auto class for ``model_type``'s training model."""
    return TRAINING_HEADS.get(model_type, "AutoModelForCausalLM")


#: The most parameters a described model may have (2**53 - 1, as for counts typed by hand in the app): the
#: largest trained models have ~2e12; sizes beyond this are typos, and overflow the memory model's arithmetic.
MAX_PARAMS = 2**53 - 1


def describe(hf_config: Mapping[str, Any], name: str | None = None, *, source: str = DEFAULT_SOURCE,
             instead: str = BY_HAND) -> ModelSpec:
    """Describe the architecture of a Hugging Face ``config.json`` dict.

    ``source`` names the file in messages (the CLI: ``--hf-config PATH``), ``instead`` what the caller offers
    when the model cannot be described (the app: counts by hand).
    Raises ``UnsupportedModelError`` for an unknown ``model_type`` and ``ModelConfigError`` for bad values.
    """
    if not isinstance(hf_config, Mapping):
        raise ModelConfigError(f"{source} must be a JSON object, got {type(hf_config).__name__}.")
    model_type = hf_config.get("model_type")
    if not model_type:
        raise UnsupportedModelError(
            f"{source} has no 'model_type' (is it a model's config.json?); add it (e.g. \"llama\") or {instead}."
        )
    family = FAMILIES.get(str(model_type))
    if family is None:
        raise UnsupportedModelError(
            f"{source}: model_type '{model_type}' is not supported yet (supported: {', '.join(SUPPORTED_FAMILIES)}); "
            f"{instead}."
        )
    label = name or hf_config.get("_name_or_path") or str(model_type)
    reader = ConfigReader(hf_config, str(model_type), source, instead)
    spec = replace(family(reader, str(label)), defaulted=tuple(reader.defaulted))
    if spec.total_params > MAX_PARAMS:
        raise ModelConfigError(
            f"{source} describes a model with a {len(str(spec.total_params))}-digit parameter count, more than "
            f"{MAX_PARAMS:,}: check hidden_size, intermediate_size, num_hidden_layers and vocab_size."
        )
    return spec


def count_params(hf_config: Mapping[str, Any]) -> tuple[int, int]:
    """``(total_params, largest_layer_params)`` of the model ``transformers`` builds for this config."""
    spec = describe(hf_config)
    return spec.total_params, spec.largest_layer_params
