"""A catalog of well-known models as Hugging Face ``config.json`` dicts (architecture keys only).

Parameter counts are never typed in: they are computed from these dicts by ``core.models.arch``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pandas as pd

from core.models.arch import ModelConfigError, ModelSpec
from core.models.families import describe


def _llama(h, inter, layers, heads, kv, vocab, **extra) -> dict[str, Any]:
    return dict(
        model_type="llama",
        hidden_size=h,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        vocab_size=vocab,
        **extra,
    )


_CONFIGS: dict[str, dict[str, Any]] = {
    "meta-llama/Llama-2-7b-hf": _llama(
        4096, 11008, 32, 32, 32, 32000, max_position_embeddings=4096, tie_word_embeddings=False
    ),
    "meta-llama/Llama-2-13b-hf": _llama(
        5120, 13824, 40, 40, 40, 32000, max_position_embeddings=4096, tie_word_embeddings=False
    ),
    "meta-llama/Llama-2-70b-hf": _llama(
        8192, 28672, 80, 64, 8, 32000, max_position_embeddings=4096, tie_word_embeddings=False
    ),
    "meta-llama/Meta-Llama-3-8B": _llama(
        4096, 14336, 32, 32, 8, 128256, max_position_embeddings=8192, tie_word_embeddings=False, rope_theta=500000.0
    ),
    "meta-llama/Meta-Llama-3-70B": _llama(
        8192, 28672, 80, 64, 8, 128256, max_position_embeddings=8192, tie_word_embeddings=False, rope_theta=500000.0
    ),
    "meta-llama/Llama-3.1-405B": _llama(
        16384,
        53248,
        126,
        128,
        8,
        128256,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
        rope_theta=500000.0,
    ),
    "meta-llama/Llama-3.2-1B": _llama(
        2048,
        8192,
        16,
        32,
        8,
        128256,
        head_dim=64,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        rope_theta=500000.0,
    ),
    "meta-llama/Llama-3.2-3B": _llama(
        3072,
        8192,
        28,
        24,
        8,
        128256,
        head_dim=128,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        rope_theta=500000.0,
    ),
    "mistralai/Mistral-7B-v0.1": dict(
        model_type="mistral",
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=32000,
        max_position_embeddings=32768,
        sliding_window=4096,
        tie_word_embeddings=False,
    ),
    "mistralai/Mixtral-8x7B-v0.1": dict(
        model_type="mixtral",
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=32000,
        max_position_embeddings=32768,
        num_local_experts=8,
        num_experts_per_tok=2,
        tie_word_embeddings=False,
    ),
    "mistralai/Mixtral-8x22B-v0.1": dict(
        model_type="mixtral",
        hidden_size=6144,
        intermediate_size=16384,
        num_hidden_layers=56,
        num_attention_heads=48,
        num_key_value_heads=8,
        vocab_size=32768,
        max_position_embeddings=65536,
        num_local_experts=8,
        num_experts_per_tok=2,
        tie_word_embeddings=False,
    ),
    "Qwen/Qwen2-7B": dict(
        model_type="qwen2",
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        vocab_size=152064,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
    ),
    "Qwen/Qwen2.5-0.5B": dict(
        model_type="qwen2",
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=151936,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
    ),
    "Qwen/Qwen2.5-72B": dict(
        model_type="qwen2",
        hidden_size=8192,
        intermediate_size=29568,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=152064,
        max_position_embeddings=131072,
        tie_word_embeddings=False,
    ),
    "google/gemma-2b": dict(
        model_type="gemma",
        hidden_size=2048,
        intermediate_size=16384,
        num_hidden_layers=18,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=256,
        vocab_size=256000,
        max_position_embeddings=8192,
    ),
    "google/gemma-7b": dict(
        model_type="gemma",
        hidden_size=3072,
        intermediate_size=24576,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=16,
        head_dim=256,
        vocab_size=256000,
        max_position_embeddings=8192,
    ),
    "google/gemma-2-9b": dict(
        model_type="gemma2",
        hidden_size=3584,
        intermediate_size=14336,
        num_hidden_layers=42,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=256,
        vocab_size=256000,
        max_position_embeddings=8192,
    ),
    "google/gemma-2-27b": dict(
        model_type="gemma2",
        hidden_size=4608,
        intermediate_size=36864,
        num_hidden_layers=46,
        num_attention_heads=32,
        num_key_value_heads=16,
        head_dim=128,
        vocab_size=256000,
        max_position_embeddings=8192,
    ),
    "microsoft/Phi-3-mini-4k-instruct": dict(
        model_type="phi3",
        hidden_size=3072,
        intermediate_size=8192,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32064,
        max_position_embeddings=4096,
    ),
    "microsoft/Phi-3-medium-4k-instruct": dict(
        model_type="phi3",
        hidden_size=5120,
        intermediate_size=17920,
        num_hidden_layers=40,
        num_attention_heads=40,
        num_key_value_heads=10,
        vocab_size=32064,
        max_position_embeddings=4096,
    ),
    "openai-community/gpt2": dict(
        model_type="gpt2", n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257
    ),
    "openai-community/gpt2-xl": dict(
        model_type="gpt2", n_embd=1600, n_layer=48, n_head=25, n_positions=1024, vocab_size=50257
    ),
    "EleutherAI/pythia-6.9b": dict(
        model_type="gpt_neox",
        hidden_size=4096,
        intermediate_size=16384,
        num_hidden_layers=32,
        num_attention_heads=32,
        vocab_size=50432,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
    ),
    "EleutherAI/gpt-neox-20b": dict(
        model_type="gpt_neox",
        hidden_size=6144,
        intermediate_size=24576,
        num_hidden_layers=44,
        num_attention_heads=64,
        vocab_size=50432,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
    ),
    "facebook/opt-350m": dict(
        model_type="opt",
        hidden_size=1024,
        ffn_dim=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        vocab_size=50272,
        max_position_embeddings=2048,
        word_embed_proj_dim=512,
        do_layer_norm_before=False,
    ),
    "facebook/opt-1.3b": dict(
        model_type="opt",
        hidden_size=2048,
        ffn_dim=8192,
        num_hidden_layers=24,
        num_attention_heads=32,
        vocab_size=50272,
        max_position_embeddings=2048,
        word_embed_proj_dim=2048,
        do_layer_norm_before=True,
    ),
    "facebook/opt-66b": dict(
        model_type="opt",
        hidden_size=9216,
        ffn_dim=36864,
        num_hidden_layers=64,
        num_attention_heads=72,
        vocab_size=50272,
        max_position_embeddings=2048,
        word_embed_proj_dim=9216,
        do_layer_norm_before=True,
    ),
    "bigscience/bloom-560m": dict(model_type="bloom", hidden_size=1024, n_layer=24, n_head=16, vocab_size=250880),
    "bigscience/bloom": dict(model_type="bloom", hidden_size=14336, n_layer=70, n_head=112, vocab_size=250880),
    "tiiuae/falcon-7b": dict(
        model_type="falcon",
        hidden_size=4544,
        num_hidden_layers=32,
        num_attention_heads=71,
        vocab_size=65024,
        multi_query=True,
        parallel_attn=True,
        new_decoder_architecture=False,
        bias=False,
        alibi=False,
    ),
    "tiiuae/falcon-40b": dict(
        model_type="falcon",
        hidden_size=8192,
        num_hidden_layers=60,
        num_attention_heads=128,
        num_kv_heads=8,
        vocab_size=65024,
        new_decoder_architecture=True,
        parallel_attn=True,
        bias=False,
        alibi=False,
    ),
    "google-bert/bert-base-uncased": dict(
        model_type="bert",
        hidden_size=768,
        intermediate_size=3072,
        num_hidden_layers=12,
        num_attention_heads=12,
        vocab_size=30522,
        max_position_embeddings=512,
        type_vocab_size=2,
    ),
    "google-bert/bert-large-uncased": dict(
        model_type="bert",
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        vocab_size=30522,
        max_position_embeddings=512,
        type_vocab_size=2,
    ),
    "google-t5/t5-small": dict(
        model_type="t5",
        d_model=512,
        d_kv=64,
        d_ff=2048,
        num_layers=6,
        num_heads=8,
        vocab_size=32128,
        feed_forward_proj="relu",
    ),
    "google-t5/t5-3b": dict(
        model_type="t5",
        d_model=1024,
        d_kv=128,
        d_ff=16384,
        num_layers=24,
        num_heads=32,
        vocab_size=32128,
        feed_forward_proj="relu",
    ),
    "google/flan-t5-xl": dict(
        model_type="t5",
        d_model=2048,
        d_kv=64,
        d_ff=5120,
        num_layers=24,
        num_heads=32,
        vocab_size=32128,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
}

CATALOG: Mapping[str, Mapping[str, Any]] = MappingProxyType(_CONFIGS)


def catalog_names() -> list[str]:
    """Names of the catalog models, in catalog order."""
    return list(CATALOG)


def catalog_name(name: str) -> str:
    """The catalog's spelling of ``name``: Hub ids are case-insensitive, and surrounding spaces are a slip
    (ModelConfigError naming the close ones if there is no such model)."""
    if name in CATALOG:
        return name
    wanted = str(name).strip().lower()
    found = next((n for n in CATALOG if n.lower() == wanted), None)
    if found is not None:
        return found
    close = [n for n in CATALOG if wanted and (wanted in n.lower() or wanted.split("/")[-1] in n.lower())]
    close = close or _sharing_most_words(wanted)
    hint = f" Did you mean: {', '.join(close[:5])}?" if close else " Pick a name from the model catalog."
    raise ModelConfigError(f"Unknown model '{name}'.{hint}")


def _name_words(name: str) -> set[str]:
    """The words of a model name, letters and numbers apart ("Llama-2-7b-hf": llama, 2, 7, b, hf)."""
    return set(re.findall(r"[a-z]+|\d+(?:\.\d+)?", name.lower()))


def _sharing_most_words(wanted: str) -> list[str]:
    """The catalog names sharing the most words with ``wanted`` ("llama-7b": Llama-2-7b-hf), one of them longer
    than a letter (a size's "b" alone says nothing); none when they share no such word."""
    words = _name_words(wanted)
    shared = {name: words & _name_words(name) for name in CATALOG}
    best = max((len(common) for common in shared.values() if any(len(w) > 1 for w in common)), default=0)
    return [name for name, common in shared.items() if best and len(common) == best
            and any(len(w) > 1 for w in common)][:5]


def get_config(name: str) -> dict[str, Any]:
    """A copy of the catalog config dict for ``name`` (any case; ModelConfigError if unknown)."""
    return dict(CATALOG[catalog_name(name)])


def get_spec(name: str) -> ModelSpec:
    """The architecture description of a catalog model."""
    return describe(get_config(name), name=catalog_name(name))


def catalog_table() -> pd.DataFrame:
    """One row per catalog model: name, family, layers, hidden size, total and largest-layer parameters."""
    rows = []
    for name in CATALOG:
        spec = get_spec(name)
        rows.append(
            {
                "name": name,
                "model_type": spec.model_type,
                "num_layers": spec.num_layers,
                "hidden_size": spec.hidden_size,
                "num_experts": spec.num_experts,
                "total_params": spec.total_params,
                "largest_layer_params": spec.largest_layer_params,
            }
        )
    return pd.DataFrame(rows)


def parse_hf_config(text: str | bytes) -> dict[str, Any]:
    """Parse an uploaded or pasted ``config.json``; ModelConfigError with a readable message if it is not one."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelConfigError(f"config.json is not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelConfigError(
            f"config.json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise ModelConfigError("config.json is nested too deeply to be a model config.") from None
    if not isinstance(data, dict):
        raise ModelConfigError(f"config.json must be a JSON object, got {type(data).__name__}.")
    return data
