"""core.models: parameter counts equal what transformers builds (meta device), catalog, errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import models
from core.models.families import training_head
from tests.fuzz_strategies import result_or_refusal

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, vocab_size=1000)
OPT_SMALL = dict(model_type="opt", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=96,
                 vocab_size=1000)

# one small config per family plus variants that change the module tree
FAMILY_CONFIGS = {
    "llama": dict(model_type="llama", **SMALL),
    "llama-gqa-bias": dict(
        model_type="llama",
        **SMALL,
        num_key_value_heads=2,
        attention_bias=True,
        mlp_bias=True,
        tie_word_embeddings=True,
        head_dim=32,
    ),
    "mistral": dict(model_type="mistral", **SMALL, num_key_value_heads=2),
    "mixtral": dict(model_type="mixtral", **SMALL, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": dict(model_type="qwen2", **SMALL, num_key_value_heads=2, tie_word_embeddings=True),
    "gemma": dict(model_type="gemma", **SMALL, num_key_value_heads=1, head_dim=16),
    "gemma2": dict(model_type="gemma2", **SMALL, num_key_value_heads=2, head_dim=32),
    "phi3": dict(model_type="phi3", **dict(SMALL, vocab_size=32064), num_key_value_heads=2),
    "gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=1000, n_positions=128),
    "gpt2-untied-inner": dict(
        model_type="gpt2", n_embd=64, n_layer=3, n_head=4, n_inner=80, vocab_size=1000, tie_word_embeddings=False
    ),
    "gpt_neox": dict(model_type="gpt_neox", **SMALL),
    "gpt_neox-nobias": dict(model_type="gpt_neox", **SMALL, attention_bias=False, tie_word_embeddings=True),
    "opt": dict(**OPT_SMALL, max_position_embeddings=128),
    "opt-proj-postln": dict(**OPT_SMALL, word_embed_proj_dim=32, do_layer_norm_before=False),
    "bloom": dict(model_type="bloom", hidden_size=64, n_layer=2, n_head=4, vocab_size=1000),
    "falcon-7b-style": dict(
        model_type="falcon", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000
    ),
    "falcon-40b-style": dict(
        model_type="falcon",
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_kv_heads=2,
        new_decoder_architecture=True,
        vocab_size=1000,
        bias=True,
    ),
    "falcon-mha-serial": dict(
        model_type="falcon",
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        multi_query=False,
        parallel_attn=False,
        vocab_size=1000,
        ffn_hidden_size=100,
    ),
    "bert": dict(model_type="bert", **SMALL),
    "bert-untied": dict(model_type="bert", **SMALL, tie_word_embeddings=False, type_vocab_size=3),
    "t5": dict(model_type="t5", d_model=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4, vocab_size=1000),
    "t5-v1_1": dict(
        model_type="t5",
        d_model=64,
        d_kv=8,
        d_ff=96,
        num_layers=2,
        num_decoder_layers=3,
        num_heads=4,
        vocab_size=1000,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
}


def _build(cfg: dict):
    config = transformers.AutoConfig.for_model(**cfg)
    auto = getattr(transformers, training_head(cfg["model_type"]))
    with torch.device("meta"):
        return auto.from_config(config)


def _transformers_counts(cfg: dict) -> tuple[int, int]:
    model = _build(cfg)
    # meta tensors have no storage, so de-duplicate by identity instead of data_ptr() (tied weights are the
    # same Parameter object, which model.parameters() already yields once)
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    return total, largest


@pytest.mark.parametrize("key", sorted(FAMILY_CONFIGS))
def test_count_params_equals_transformers(key):
    cfg = FAMILY_CONFIGS[key]
    assert models.count_params(cfg) == _transformers_counts(cfg)


#: configs that give a size under two names, with different values: transformers keeps one of them (the standard
#: alias set through PretrainedConfig after the family's own argument; Bloom's and Falcon's legacy n_embed, popped
#: and preferred), and the counts must follow the one it keeps
ALIASED_CONFIGS = {
    "gpt2": dict(model_type="gpt2", n_embd=64, hidden_size=32, n_layer=2, num_hidden_layers=3, n_head=4,
                 num_attention_heads=2, n_positions=128, max_position_embeddings=64, vocab_size=1000),
    "bloom": dict(model_type="bloom", n_embed=64, hidden_size=32, n_layer=2, num_hidden_layers=3, n_head=4,
                  num_attention_heads=2, vocab_size=1000),
    "falcon": dict(model_type="falcon", n_embed=64, hidden_size=32, n_layer=2, num_hidden_layers=3, n_head=4,
                   num_attention_heads=2, vocab_size=1000),
    "t5": dict(model_type="t5", d_model=64, hidden_size=32, num_layers=2, num_hidden_layers=3, num_heads=4,
               num_attention_heads=2, d_kv=16, d_ff=96, vocab_size=1000),
}


@pytest.mark.parametrize("key", sorted(ALIASED_CONFIGS))
def test_a_size_given_under_two_names_is_read_as_transformers_reads_it(key):
    cfg = ALIASED_CONFIGS[key]
    assert models.count_params(cfg) == _transformers_counts(cfg)


def test_every_supported_family_is_covered():
    assert {c["model_type"] for c in FAMILY_CONFIGS.values()} == set(models.SUPPORTED_FAMILIES)


@pytest.mark.parametrize("name", models.catalog_names())
def test_catalog_counts_equal_transformers_real_size(name):
    """Every catalog model, at full size, built by transformers on the meta device."""
    assert models.count_params(models.get_config(name)) == _transformers_counts(models.get_config(name))


def test_catalog_size_and_families():
    table = models.catalog_table()
    assert len(table) >= 25
    assert set(table["model_type"]) == set(models.SUPPORTED_FAMILIES)
    assert (table["largest_layer_params"] < table["total_params"]).all()


def test_t5_3b_matches_deepspeed_docs_live_run():
    """deepspeed-api-docs 13.1.1 ran *_all_live on t5-3b: '2851M total params, 32M largest layer params'."""
    total, largest = models.count_params(models.get_config("google-t5/t5-3b"))
    assert int(total / 1e6) == 2851
    assert int(largest / 1e6) == 32


def test_unsupported_family_has_clear_message():
    with pytest.raises(models.UnsupportedModelError, match=r"not supported.*by hand"):
        models.count_params({"model_type": "mamba", "hidden_size": 768})
    with pytest.raises(models.UnsupportedModelError, match="no 'model_type'"):
        models.count_params({"hidden_size": 768})


@pytest.mark.parametrize(
    ("bad", "field_name"),
    [
        ({"hidden_size": "big"}, "hidden_size"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"num_hidden_layers": 2.5}, "num_hidden_layers"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ({"vocab_size": True}, "vocab_size"),
        ({"hidden_size": float("inf")}, "hidden_size"),
        ({"attention_dropout": float("nan")}, "attention_dropout"),
        ({"hidden_size": 2, "num_attention_heads": 4}, "hidden_size"),  # Llama: the heads must divide it
        ({"model_type": "mistral", "hidden_size": 2, "num_attention_heads": 4, "num_key_value_heads": 4},
         "head_dim"),
    ],
)
def test_bad_values_name_the_field(bad, field_name):
    cfg = dict(FAMILY_CONFIGS["llama"], **bad)
    with pytest.raises(models.ModelConfigError, match=f"'{field_name}'"):
        models.describe(cfg)


def test_unknown_catalog_name_suggests():
    with pytest.raises(models.ModelConfigError, match=r"Did you mean.*Llama-2-7b"):
        models.get_config("llama-2-7b")


def test_spec_fields_follow_config():
    spec = models.get_spec("mistralai/Mixtral-8x7B-v0.1")
    assert (spec.num_experts, spec.experts_per_token, spec.num_kv_heads, spec.head_dim) == (8, 2, 8, 128)
    assert spec.to_dict()["total_params"] == spec.total_params
    t5 = models.get_spec("google/flan-t5-xl")
    assert t5.encoder_decoder and t5.gated_mlp and t5.num_decoder_layers == 24


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=50))
def test_parse_hf_config_never_crashes(text):
    data = result_or_refusal(models.ModelConfigError, models.parse_hf_config, text)
    assert data is None or isinstance(data, dict)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "model_type",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "vocab_size",
                "intermediate_size",
                "tie_word_embeddings",
                "head_dim",
                "n_embd",
                "d_model",
                "num_local_experts",
            ]
        ),
        st.none()
        | st.booleans()
        | st.integers(-5, 5000)
        | st.floats(allow_nan=True)
        | st.text(max_size=8)
        | st.sampled_from(list(models.SUPPORTED_FAMILIES)),
        max_size=8,
    )
)
def test_describe_only_raises_model_config_error(cfg):
    spec = result_or_refusal(models.ModelConfigError, models.describe, cfg)
    assert spec is None or spec.total_params > 0


def test_absurd_sizes_are_refused_not_described():
    """A config.json (e.g. from a shared link) with sizes no model has: refused with the fields to check, rather
    than a spec whose memory estimate overflows (it crashed every page of the app)."""
    cfg = {"model_type": "llama", "hidden_size": 10**20, "num_hidden_layers": 10**10, "vocab_size": 10**12,
           "intermediate_size": 10**15, "num_attention_heads": 1}
    with pytest.raises(models.ModelConfigError, match="hidden_size"):
        models.describe(cfg)


def test_sizes_taken_from_the_family_defaults_are_said():
    """{"model_type": "llama"} is a 6.7B model by LlamaConfig's defaults: the estimate says which sizes were not
    in the file; no catalog config leaves one out."""
    from core.memory import Hardware, estimate

    describe, get_spec, catalog_names = models.describe, models.get_spec, models.catalog_names
    spec = describe({"model_type": "llama"})
    assert spec.defaulted == ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                              "vocab_size")
    notes = estimate({}, spec, Hardware()).notes
    assert any(n.startswith("The model's config.json does not give hidden_size, num_hidden_layers") for n in notes)
    assert not any(get_spec(name).defaulted for name in catalog_names())
    assert describe({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "intermediate_size": 128, "vocab_size": 100}).defaulted == ()


@pytest.mark.parametrize(("config", "named"), [
    ({"model_type": "gpt2", "n_embd": 768, "n_head": 5}, "'n_embd' (768) must be a multiple of 'n_head' (5)"),
    ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 7}, "'hidden_size' (768)"),
    ({"model_type": "opt", "hidden_size": 768, "num_attention_heads": 7}, "'hidden_size' (768)"),
    ({"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 3},
     "'num_attention_heads' (32) must be a multiple of 'num_key_value_heads' (3)"),
    ({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3},
     "'num_experts_per_tok' (3) is more than 'num_local_experts' (2)"),
])
def test_a_shape_transformers_refuses_is_refused_naming_the_fields(config, named):
    """transformers refuses these when it builds the model (GPT-2, BERT, OPT: heads must split the hidden size)
    or at the first forward (Llama's key/value heads, Mixtral's router): a parameter count for them is fiction."""
    with pytest.raises(models.ModelConfigError, match=re.escape(named)):
        models.describe(config)


def test_every_catalog_model_has_a_shape_transformers_builds():
    for name in models.catalog_names():
        models.get_spec(name)  # describe() of its config.json raises for a shape transformers refuses


@pytest.mark.parametrize("model_type", ["llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3"])
@pytest.mark.parametrize("head_dim", [None, 32])
def test_a_hidden_size_the_heads_do_not_divide_is_refused_exactly_where_transformers_refuses_it(model_type, head_dim):
    """Llama's and Gemma2's config classes refuse hidden_size 260 with 8 heads (head_dim given or not); the
    others take it. dsconfig sized the Llama one. (260 // 8 is even: an odd head_dim is RoPE's refusal.)"""
    config = {"model_type": model_type, "hidden_size": 260, "num_attention_heads": 8, "num_key_value_heads": 2,
              "intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 1000,
              **({"head_dim": head_dim} if head_dim else {})}
    try:
        transformers.AutoConfig.for_model(**config)
        refused = False
    except Exception:  # the config class's own validation (StrictDataclassClassValidationError)
        refused = True
    if refused:
        with pytest.raises(models.ModelConfigError, match=re.escape("'hidden_size' (260) must be a multiple")):
            models.describe(config)
    else:
        models.describe(config)


@pytest.mark.parametrize("written", ["meta-llama/llama-2-7b-hf", "META-LLAMA/LLAMA-2-7B-HF",
                                     " meta-llama/Llama-2-7b-hf "])
def test_a_catalog_model_is_found_whatever_its_case_and_surrounding_spaces(written):
    """Hub ids are case-insensitive; --model used to refuse them (and a trailing space without a suggestion)."""
    from core.models.catalog import catalog_name

    assert catalog_name(written) == "meta-llama/Llama-2-7b-hf"
    assert models.get_spec(written) == models.get_spec("meta-llama/Llama-2-7b-hf")


def test_an_unknown_model_names_the_close_ones():
    with pytest.raises(models.ModelConfigError, match=r"Did you mean: .*Llama-2-7b-hf"):
        models.get_spec("llama-2-7b")


def test_t5_given_num_hidden_layers_alone_keeps_the_decoder_at_six_layers_as_transformers_does():
    cfg = dict(model_type="t5", d_model=64, num_hidden_layers=2, num_heads=4, d_kv=16, d_ff=96, vocab_size=1000)
    assert models.count_params(cfg) == _transformers_counts(cfg)


#: one tiny config per RoPE family whose rotary dimension is odd (head dimension 15, or GPT-NeoX's share of 16)
ODD_ROTARY = {
    "llama": dict(model_type="llama", hidden_size=60, num_attention_heads=4, num_key_value_heads=4),
    "mistral": dict(model_type="mistral", hidden_size=60, num_attention_heads=4, num_key_value_heads=4),
    "mixtral": dict(model_type="mixtral", hidden_size=60, num_attention_heads=4, num_key_value_heads=4,
                    num_local_experts=2),
    "qwen2": dict(model_type="qwen2", hidden_size=60, num_attention_heads=4, num_key_value_heads=4),
    "gemma": dict(model_type="gemma", hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=15),
    "gemma2": dict(model_type="gemma2", hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=15),
    "phi3": dict(model_type="phi3", hidden_size=60, num_attention_heads=4, num_key_value_heads=4, pad_token_id=0),
    "gpt_neox": dict(model_type="gpt_neox", hidden_size=60, num_attention_heads=4, rotary_pct=1.0),
    "falcon": dict(model_type="falcon", hidden_size=60, num_attention_heads=4),
}


def _transformers_trains(cfg: dict) -> bool:
    """Whether transformers builds the model and runs a forward of 8 tokens on the CPU."""
    try:
        config = transformers.AutoConfig.for_model(**cfg, intermediate_size=64, num_hidden_layers=1,
                                                   vocab_size=100, eos_token_id=None, bos_token_id=None)
        model = transformers.AutoModelForCausalLM.from_config(config)
        model(torch.randint(1, 100, (1, 8)))
    except Exception:  # refused at any step is the answer
        return False
    return True


@pytest.mark.parametrize("key", sorted(ODD_ROTARY))
def test_an_odd_rotary_dimension_is_refused_as_transformers_refuses_it(key):
    cfg = {**ODD_ROTARY[key], "intermediate_size": 64, "num_hidden_layers": 1, "vocab_size": 100}
    with pytest.raises(models.ModelConfigError, match="RoPE rotates pairs"):
        models.describe(cfg)
    assert not _transformers_trains(ODD_ROTARY[key])



def test_a_partial_rotary_share_runs_and_is_described():
    """GPT-NeoX rotates int(head x rotary_pct) dimensions rounded up to a pair: 0.2 of 16 (3, so 4) runs."""
    cfg = dict(model_type="gpt_neox", hidden_size=64, num_attention_heads=4, rotary_pct=0.2)
    assert _transformers_trains(cfg)
    assert models.describe({**cfg, "intermediate_size": 64}).head_dim == 16


@pytest.mark.parametrize(("config", "named"), [
    ({"model_type": "gpt2", "n_embd": "768"}, "'n_embd' must be an integer"),
    ({"model_type": "t5", "num_layers": 0}, "'num_layers' must be >= 1"),
    ({"model_type": "bloom", "n_layer": 0}, "'n_layer' must be >= 1"),
    ({"model_type": "gpt_neox", "rotary_pct": "x"}, "'rotary_pct' must be a number"),
])
def test_a_bad_value_is_named_by_the_key_the_file_gave(config, named):
    """The messages named the family's first spelling ('hidden_size'), which the user's file does not have."""
    with pytest.raises(models.ModelConfigError) as raised:
        models.describe(config)
    assert named in str(raised.value)
