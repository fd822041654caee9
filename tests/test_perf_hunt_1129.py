"""Planner counts from the module tree transformers builds (bug hunt of 29 Nov 2026).

- ZeRO-3's per-module hooks and the per-tensor gradient hooks are counted from ``spec.modules`` (its tensors
  checked against transformers), not a per-layer formula: a MoE layer is one stacked ``mlp.experts`` module of
  two tensors, and T5's decoder has its cross-attention.
- OPT with ``word_embed_proj_dim`` below the hidden size: the LM head is ``Linear(proj, vocab)`` plus
  ``project_in`` and ``project_out`` (torch's FLOP counter on a real model).
- ZeRO-3 persistence is per parameter tensor with ``ds_numel <= threshold`` (DeepSpeed's source in every
  installed release, and a real ``deepspeed.initialize`` on the CPU).
- Ulysses all-to-alls move k and v at their KV head count (at least one per rank).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from core import models
from core.memory import Hardware, Shape, estimate
from core.memory.states import persistent_parameters
from core.perf import Cluster, predict
from core.perf.compute import flops_per_token, micro_step, parameter_tensors, parameterised_modules, peak_flops
from core.perf.settings import read_settings
from tests.test_models import FAMILY_CONFIGS, _build

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parent.parent
HOST = "host overhead (kernel launches, hooks)"


def _own(module) -> list[int]:
    return [p.numel() for p in module.parameters(recurse=False)]


def _tree(spec: models.ModelSpec) -> tuple[Counter, Counter]:
    """(per-module sorted tensor sizes, every distinct tensor's size) as ``spec.modules`` lists them."""
    mods, tensors = Counter(), Counter()
    for m in spec.modules:
        if m.tensor_sizes:
            mods[tuple(sorted(m.tensor_sizes))] += m.count
        if not m.tied:
            for t in m.tensor_sizes:
                tensors[t] += m.count
    return mods, tensors


@pytest.mark.parametrize("key", sorted(FAMILY_CONFIGS))
def test_each_module_and_tensor_of_the_tree_is_one_transformers_builds(key):
    """Every parameterised module with its own tensors' sizes, and every distinct parameter tensor (tied ones
    once), equal the model transformers builds: what ZeRO-3 hooks, persists and reduces."""
    cfg = FAMILY_CONFIGS[key]
    model = _build(cfg)
    built_mods = Counter(tuple(sorted(_own(m))) for m in model.modules() if _own(m))
    built_tensors = Counter(p.numel() for p in model.parameters())
    assert _tree(models.describe(cfg)) == (built_mods, built_tensors)


@pytest.mark.parametrize("name", ["mistralai/Mixtral-8x7B-v0.1", "google-t5/t5-3b", "meta-llama/Llama-2-7b-hf",
                                  "openai-community/gpt2-xl", "google-bert/bert-large-uncased", "facebook/opt-350m"])
def test_hooked_modules_and_parameter_tensors_are_the_built_models(name):
    """Mixtral-8x7B: 291 tensors and 259 modules (a per-layer formula said 995 tensors, 8 x 3 expert linears per
    layer); T5-3B: 509 tensors (the formula left out the decoder's cross-attention: 387)."""
    cfg = models.get_config(name)
    model = _build(cfg)
    spec = models.get_spec(name)
    assert parameter_tensors(spec) == len(list(model.parameters()))
    assert parameterised_modules(spec) == sum(1 for m in model.modules() if _own(m))


def test_zero3_host_overhead_hooks_the_modules_and_tensors_transformers_builds():
    """Mixtral-8x7B ZeRO-3 on 4 x 8 H100, full recomputation: per micro-step, 3 passes over each parameterised
    module (forward, recomputation, backward) and one gradient hook per tensor of the built model (2.4 s of host
    overhead and a 6.9 s step with the per-expert formula; 0.7 s and 5.2 s now)."""
    name = "mistralai/Mixtral-8x7B-v0.1"
    model = _build(models.get_config(name))
    built_modules = sum(1 for m in model.modules() if _own(m))
    built_tensors = len(list(model.parameters()))
    spec = models.get_spec(name)
    cl = Cluster("NVIDIA H100 80GB", 8, 4)
    gas = 4
    cfg = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": gas, "bf16": {"enabled": True},
           "zero_optimization": {"stage": 3}}
    est = predict(cfg, spec, cl, Shape(1, 2048, "flash", "full"))
    eff = cl.efficiency
    layers = spec.num_layers
    expected = gas * (layers * eff.layer_overhead_s * 4 / 3 + built_modules * 3 * eff.zero3_module_overhead_s
                      + built_tensors * eff.grad_hook_overhead_s)
    assert est.breakdown[HOST] == pytest.approx(expected, rel=1e-12)
    assert est.step_seconds < 5.5


# ------------------------------------------------------------------------------------------ OPT's projection
OPT_PROJ = {"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "ffn_dim": 128,
            "vocab_size": 5000, "max_position_embeddings": 64, "do_layer_norm_before": False}


def _torch_linear_flops_per_token(cfg: dict, seq: int) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    conf = transformers.AutoConfig.for_model(**cfg)
    model = transformers.AutoModelForCausalLM.from_config(conf)
    ids = torch.randint(0, cfg["vocab_size"], (1, seq))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids)
    ops = counter.get_flop_counts()["Global"]
    mm = {op: n for op, n in ops.items() if str(op).split(".")[1] in ("mm", "addmm")}
    return sum(mm.values()) / seq


@pytest.mark.parametrize("proj", [16, 64])
def test_opt_linear_flops_count_the_head_at_the_projection_width(proj):
    """OPT-350m's shape (word_embed_proj_dim below the hidden size): the head is Linear(proj, vocab) and
    project_in / project_out map between the widths; torch's FLOP counter on the real model (hidden 64, proj 16:
    295,168 linear FLOPs per token, not 771,072 with the head at the hidden size). proj 64 is the control."""
    cfg = {**OPT_PROJ, "word_embed_proj_dim": proj}
    linear, _ = flops_per_token(models.describe(cfg), 32)
    assert linear == _torch_linear_flops_per_token(cfg, 32)


def test_opt_head_time_follows_the_projection_width():
    """The LM head's GEMM of an OPT with a narrow embedding is costed at that width (plus the two projections), so
    its forward is shorter than the same model's with the embedding at the hidden size."""
    cl = Cluster("NVIDIA A100 80GB", 8, 1)
    st = read_settings({"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": True}}, 8)
    shape = Shape(8, 2048, "flash")
    peak = peak_flops(cl, st.compute_precision, [])
    big = {**OPT_PROJ, "hidden_size": 1024, "num_attention_heads": 16, "ffn_dim": 4096, "vocab_size": 50272,
           "max_position_embeddings": 2048}
    narrow = micro_step(models.describe({**big, "word_embed_proj_dim": 256}), st, cl, shape, peak)["fwd"]
    wide = micro_step(models.describe({**big, "word_embed_proj_dim": 1024}), st, cl, shape, peak)["fwd"]
    tokens = 8 * 2048
    # the head's FLOPs fall by 2 x tokens x vocab x (1024 - 256); the projections add 2 x 2 x tokens x 1024 x 256
    saved = 2 * tokens * 50272 * 768 / (peak * cl.compute_efficiency)
    assert narrow < wide
    assert wide - narrow == pytest.approx(saved, rel=0.05)  # less the projections' (memory-bound) time


# -------------------------------------------------------------------------------------- ZeRO-3 persistence
def _release_sources() -> dict[str, Path]:
    """Each installed release's package folder: this venv's (found without importing it) and ``.venv-ds``'s."""
    spec = importlib.util.find_spec("deepspeed")
    found = {"this venv": Path(spec.origin).parent} if spec and spec.origin else {}
    for root in sorted((REPO / ".venv-ds").glob("*/deepspeed")):
        found[root.parent.name] = root
    return found


def test_every_installed_release_persists_each_parameter_tensor_at_or_below_the_threshold():
    """parameter_offload.py ``mark_persistent_parameters``: a loop over ``module.named_parameters`` marking each
    tensor with ``param.ds_numel <= param_threshold``, in every release installed here (0.16.9 to 0.19.8)."""
    sources = _release_sources()
    if not sources:
        pytest.skip("no DeepSpeed release installed")
    for release, root in sources.items():
        text = (root / "runtime" / "zero" / "parameter_offload.py").read_text()
        body = text.split("def mark_persistent_parameters", 1)[1].split("\n    def ", 1)[0]
        assert "in self.module.named_parameters(recurse=True)" in body, release
        assert re.search(r"if param\.ds_numel <= param_threshold:", body), release


def test_persistence_is_per_tensor_and_inclusive():
    """Llama-2-7B at stage3_param_persistence_threshold 4096: every RMSNorm weight (4096 elements) persists, 65 of
    them (none with a per-module '<' rule); GPT-2 XL at the default 1e5: its biases and LayerNorms persist too,
    1,001,600 parameters (310,400 counting whole modules)."""
    llama = models.get_spec("meta-llama/Llama-2-7b-hf")
    assert persistent_parameters(llama, 4096) == 65 * 4096
    assert persistent_parameters(llama, 4095) == 0
    assert persistent_parameters(models.get_spec("openai-community/gpt2-xl"), 100_000) == 1_001_600
    cfg = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 4096}}
    parts = {c.name: c for c in estimate(cfg, llama, Hardware(8, 1), Shape(1, 2048)).components}
    assert parts["persistent small parameters"].bytes == 2 * 65 * 4096


def test_persistent_norms_are_not_fetched():
    """At threshold 4096 Llama-2-7B's norms stay on every GPU: 65 fewer all-gathers and their bytes, so the
    forward gather is shorter than at 4095 (where every norm is fetched)."""
    llama = models.get_spec("meta-llama/Llama-2-7b-hf")
    cl = Cluster("NVIDIA A100 80GB", 8, 1)
    name = "ZeRO-3 parameter all-gather (forward)"

    def gather(threshold: int) -> float:
        cfg = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
               "zero_optimization": {"stage": 3, "overlap_comm": False,
                                     "stage3_param_persistence_threshold": threshold}}
        return predict(cfg, llama, cl, Shape(1, 2048)).breakdown[name]

    alpha = cl.efficiency.collective_latency_s + 7 * cl.efficiency.ring_hop_latency_s
    assert gather(4095) - gather(4096) >= 65 * alpha


_PERSIST_WORKER = textwrap.dedent("""
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    import torch, deepspeed, transformers
    out = []
    for case in json.loads(sys.argv[1]):
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**case["model"]))
        cfg = {"train_micro_batch_size_per_gpu": 1,
               "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
               "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": case["threshold"]}}
        engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
        out.append(sum(p.ds_numel for p in engine.module.parameters() if getattr(p, "ds_persist", False)))
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.deepspeed
@pytest.mark.slow
def test_persistent_parameters_are_what_a_real_zero3_engine_keeps():
    """deepspeed.initialize on the CPU (world size 1), ZeRO-3: the parameters marked ``ds_persist`` equal the
    estimate's. A tiny Llama at a threshold equal to its norms' width keeps all 5 norms (320); a tiny GPT-2 at
    200 keeps the biases of 64 and 192 elements and the LayerNorms, not the MLP's 256-element bias (1,280)."""
    pytest.importorskip("deepspeed")
    from tests.oracle.initialize import single_rank_env

    cases = [{"model": dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=96, vocab_size=1000), "threshold": 64},
             {"model": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=1000, n_positions=128),
              "threshold": 200}]
    proc = subprocess.run([sys.executable, "-c", _PERSIST_WORKER, json.dumps(cases)], capture_output=True, text=True,
                          timeout=900, env={**single_rank_env(), "DS_ACCELERATOR": "cpu"}, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, proc.stderr[-3000:]
    kept = json.loads(lines[-1][len("RESULT"):])
    ours = [persistent_parameters(models.describe(c["model"]), c["threshold"]) for c in cases]
    assert ours == kept == [320, 1280]


# ------------------------------------------------------------------------------------------------- Ulysses
def _ulysses(spec: models.ModelSpec, sp: int) -> float:
    cfg = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "sequence_parallel_size": sp,
           "zero_optimization": {"stage": 3}}
    est = predict(cfg, spec, Cluster("NVIDIA H100 80GB", 8, 1), Shape(1, 16384, "flash"))
    return est.breakdown["sequence-parallel all-to-all (Ulysses)"]


def test_ulysses_moves_k_and_v_at_their_kv_head_count():
    """Llama-3-8B (32 query heads, 8 KV heads of 128): q, k, v and the output per token are 4096 + 1024 + 1024 +
    4096 elements, 0.625 of four hidden-size tensors (sequence/layer.py DistributedAttention moves the key and
    value as given; runtime/sequence_parallel/ulysses_sp.py likewise)."""
    gqa = models.get_spec("meta-llama/Meta-Llama-3-8B")
    mha = models.describe({**models.get_config("meta-llama/Meta-Llama-3-8B"), "num_key_value_heads": 32})
    assert _ulysses(gqa, 8) / _ulysses(mha, 8) == pytest.approx(10240 / 16384, rel=1e-12)


def test_ulysses_repeats_kv_heads_up_to_one_per_rank():
    """Fewer KV heads than ranks: DeepSpeed's Hugging Face integration repeats them (ulysses_sp.py
    kv_replication_factor = world_size // kv_head_count), so 2 KV heads over 8 ranks move as 8 do."""
    cfg = models.get_config("meta-llama/Meta-Llama-3-8B")
    two = models.describe({**cfg, "num_key_value_heads": 2})
    eight = models.describe({**cfg, "num_key_value_heads": 8})
    assert _ulysses(two, 8) == pytest.approx(_ulysses(eight, 8), rel=1e-12)
    assert _ulysses(two, 2) < _ulysses(eight, 2)
