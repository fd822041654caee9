"""Deterministic config mutations for the differential tests against the real DeepSpeed.

``corpus_entries()`` loads every config in the shared corpus (HJSON, key order kept, duplicate keys refused;
a file that does not load is recorded with its error). ``mutate(config, seed=...)`` derives labelled
variants of one config: key typos at every depth, wrong types, out-of-range values, enum typos,
conflicting options, removed and deprecated keys, ``"auto"`` in many places, batch-triangle variations,
misplaced keys and null sections. ``edge_configs()`` is a hand-written set of corner cases.

Everything is a pure function of its inputs: the same corpus and seed give the same mutations in the
same order (``random.Random`` seeded from a SHA-256 of the seed string, never the global RNG).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hjson

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
NOT_CONFIGS = frozenset({"SOURCES.tsv", "README.md"})

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class Mutation:
    """One generated config: ``kind`` (category), a short human ``label`` and the ``config`` itself."""

    kind: str
    label: str
    config: dict[str, Any]


@dataclass(frozen=True)
class CorpusEntry:
    """A corpus file: its path relative to the corpus root, the loaded config, or why it did not load."""

    rel: str
    path: Path
    config: dict[str, Any] | None
    load_error: str | None


# --------------------------------------------------------------------------- corpus loading
def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def load_config_text(text: str) -> dict[str, Any]:
    """Parse JSON/HJSON the way DeepSpeed's file loader does (comments allowed, duplicates refused),
    keeping key order; a document that is not an object raises ``ValueError``."""
    data = hjson.loads(text, object_pairs_hook=_pairs_no_duplicates)
    if not isinstance(data, dict):
        raise ValueError(f"top level is {type(data).__name__}, not an object")
    return data


def corpus_files(root: Path = CORPUS_DIR) -> list[Path]:
    """Every config file under ``root`` (the corpus README and SOURCES.tsv excluded), sorted."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name not in NOT_CONFIGS)


def corpus_entries(root: Path = CORPUS_DIR) -> list[CorpusEntry]:
    """Load every corpus file; files that do not parse are kept with ``load_error`` set."""
    entries = []
    for path in corpus_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            config = load_config_text(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:  # HjsonDecodeError is a ValueError
            entries.append(CorpusEntry(rel, path, None, f"{type(exc).__name__}: {exc}"))
        else:
            entries.append(CorpusEntry(rel, path, config, None))
    return entries


# --------------------------------------------------------------------------- tree helpers
def _walk(node: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) below ``node`` through nested dicts (lists are leaves), depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = (*prefix, key)
            yield path, value
            yield from _walk(value, path)


def _get(config: dict[str, Any], path: Path_, default: Any = None) -> Any:
    node: Any = config
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _with(config: dict[str, Any], path: Path_, value: Any) -> dict[str, Any] | None:
    """Copy of ``config`` with ``path`` set to ``value`` (intermediate dicts created); None when a
    parent on the way exists but is not a dict."""
    out = copy.deepcopy(config)
    node = out
    for key in path[:-1]:
        if key not in node:
            node[key] = {}
        if not isinstance(node[key], dict):
            return None
        node = node[key]
    node[path[-1]] = copy.deepcopy(value)
    return out


def _with_many(config: dict[str, Any], changes: dict[Path_, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] | None = config
    for path, value in changes.items():
        if out is None:
            return None
        out = _with(out, path, value)
    return out


def _without(config: dict[str, Any], path: Path_) -> dict[str, Any]:
    out = copy.deepcopy(config)
    parent = _get(out, path[:-1]) if len(path) > 1 else out
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    return out


def _renamed(config: dict[str, Any], path: Path_, new_key: str) -> dict[str, Any]:
    """Copy with the key at ``path`` renamed, keeping its position among its siblings."""
    out = copy.deepcopy(config)
    parent = _get(out, path[:-1]) if len(path) > 1 else out
    items = list(parent.items())
    parent.clear()
    for key, value in items:
        parent[new_key if key == path[-1] else key] = value
    return out


def _dotted(path: Path_) -> str:
    return ".".join(path)


def _rng(seed: str) -> random.Random:
    return random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------- mutation families
def typo_variants(key: str) -> list[str]:
    """Plausible misspellings of ``key``: dropped, swapped, doubled letters, British spelling, case,
    hyphens, a trailing "s"."""
    out: list[str] = []
    if "optimization" in key:
        out.append(key.replace("optimization", "optimisation"))
    letters = [i for i, ch in enumerate(key) if ch.isalpha()]
    if len(letters) >= 3:
        i = letters[len(letters) // 2]
        out.append(key[:i] + key[i + 1 :])  # dropped letter
        if i + 1 < len(key) and key[i + 1] != key[i]:
            out.append(key[:i] + key[i + 1] + key[i] + key[i + 2 :])  # swapped letters
        out.append(key[:i] + key[i] + key[i:])  # doubled letter
    if "_" in key:
        out.append(key.replace("_", "-"))
        out.append(key.replace("_", ""))
    out.append(key + "s" if not key.endswith("s") else key[:-1])
    out.append(key.upper() if key.islower() else key.lower())
    seen: list[str] = []
    for variant in out:
        if variant != key and variant not in seen:
            seen.append(variant)
    return seen


def _wrong_type_values(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, bool):
        return [("str 'maybe'", "maybe"), ("int 2", 2), ("null", None), ("list", [value]), ("str 'true'", "true")]
    if isinstance(value, int):
        return [
            ("digit string", str(value)),
            ("word string", "many"),
            ("list", [value]),
            ("null", None),
            ("bool true", True),
            ("dict", {"value": value}),
        ]
    if isinstance(value, float):
        return [("numeric string", repr(value)), ("null", None), ("bool false", False), ("list", [value])]
    if isinstance(value, str):
        return [("int 1", 1), ("null", None), ("list", [value]), ("dict", {}), ("bool true", True)]
    if isinstance(value, dict):
        return [("list", []), ("null", None), ("bool true", True), ("str 'on'", "on"), ("int 1", 1)]
    if isinstance(value, list):
        return [("str", "a,b"), ("dict", {}), ("null", None), ("int 0", 0)]
    return [("str", "x")]


def _out_of_range_values(value: Any) -> list[tuple[str, Any]]:
    values: list[tuple[str, Any]] = [("negative", -1), ("zero", 0), ("huge int", 10**20), ("huge float", 1e30)]
    if isinstance(value, int):
        values.append(("fractional", value + 0.5))
        values.append(("integral float", float(value)))
    else:
        values.append(("negative fraction", -0.5))
        values.append(("above one", 1.5))
        values.append(("infinity", float("inf")))
    return values


# Enum-like values: (path, wrong value, note). Applied whether or not the key is present.
ENUM_TYPOS: list[tuple[Path_, Any]] = [
    (("zero_optimization", "offload_optimizer", "device"), "CPU"),
    (("zero_optimization", "offload_optimizer", "device"), "Nvme"),
    (("zero_optimization", "offload_optimizer", "device"), "gpu"),
    (("zero_optimization", "offload_param", "device"), "CPU"),
    (("zero_optimization", "offload_param", "device"), "nvme "),
    (("zero_optimization", "offload_param", "device"), "None"),
    (("zero_optimization", "stage"), 4),
    (("zero_optimization", "stage"), -1),
    (("zero_optimization", "stage"), 2.5),
    (("zero_optimization", "stage"), "3"),
    (("zero_optimization", "stage"), "three"),
    (("communication_data_type",), "float16"),
    (("communication_data_type",), "FP16"),
    (("communication_data_type",), "fp8"),
    (("seq_parallel_communication_data_type",), "bfloat16"),
    (("gradient_allreduce_op",), "SUM"),
    (("gradient_allreduce_op",), "avg"),
    (("checkpoint", "tag_validation"), "warn"),
    (("checkpoint", "tag_validation"), "Strict"),
    (("checkpoint", "writer", "type"), "slow"),
    (("torch_autocast", "dtype"), "fp8"),
    (("torch_autocast", "dtype"), "bfloat16"),
    (("optimizer", "type"), "ADAMW"),
    (("optimizer", "type"), "adamw_torch"),
    (("optimizer", "type"), "sgd"),
    (("optimizer", "type"), "OneBitAdam"),
    (("scheduler", "type"), "warmuplr"),
    (("scheduler", "type"), "WarmupLinear"),
    (("scheduler", "type"), "CosineAnnealingLR"),
    (("zero_optimization", "zenflow", "select_strategy"), "Auto"),
    (("weight_quantization", "q_type"), "symetric"),
    (("compile", "passes"), ["z2"]),
    (("data_types", "keep_in_fp32_modules"), "lm_head"),
    (("tensor_parallel", "dtype"), "fp16"),
    (("checkpoint", "parallel_write", "pipeline_stage"), "yes"),
]

# Values with a documented range, pushed just outside (or onto) the edge.
BOUND_PROBES: list[tuple[Path_, Any]] = [
    (("zero_optimization", "offload_optimizer", "ratio"), 1.5),
    (("zero_optimization", "offload_optimizer", "ratio"), -0.1),
    (("zero_optimization", "offload_optimizer", "cpuadam_cores_perc"), 2),
    (("zero_optimization", "offload_optimizer", "buffer_count"), -1),
    (("zero_optimization", "offload_param", "buffer_size"), -5),
    (("zero_optimization", "reduce_bucket_size"), 0),
    (("zero_optimization", "reduce_bucket_size"), "5e8"),
    (("zero_optimization", "allgather_bucket_size"), 0),
    (("zero_optimization", "sub_group_size"), -1),
    (("zero_optimization", "stage3_prefetch_bucket_size"), 1.5),
    (("zero_optimization", "stage3_max_live_parameters"), -1),
    (("zero_optimization", "zero_hpz_partition_size"), -2),
    (("zero_optimization", "zenflow", "topk_ratio"), 1.0),
    (("zero_optimization", "zenflow", "update_interval"), 0),
    (("fp16", "loss_scale"), -1),
    (("fp16", "loss_scale"), True),
    (("fp16", "loss_scale"), "dynamic"),
    (("fp16", "loss_scale"), float("inf")),
    (("fp16", "loss_scale_window"), 0),
    (("fp16", "min_loss_scale"), 0),
    (("fp16", "min_loss_scale"), 0.5),
    (("fp16", "initial_scale_power"), -3),
    (("hybrid_engine", "max_out_tokens"), 0),
    (("gradient_clipping",), -1.0),
    (("steps_per_print",), 0),
    (("activation_checkpointing", "number_checkpoints"), -4),
    (("flops_profiler", "profile_step"), -1),
    (("aio", "block_size"), 0),
    (("comet", "samples_log_interval"), -1),
    (("timers", "throughput", "enabled"), "sometimes"),
]

CONFLICTS: list[tuple[str, dict[Path_, Any]]] = [
    ("fp16 and bf16 both enabled", {("fp16", "enabled"): True, ("bf16", "enabled"): True}),
    ("fp16 enabled and bf16 'auto'", {("fp16", "enabled"): True, ("bf16", "enabled"): "auto"}),
    (
        "offload_optimizer ratio 0.5 with stage 2",
        {
            ("zero_optimization", "stage"): 2,
            ("zero_optimization", "offload_optimizer"): {"device": "cpu", "ratio": 0.5},
        },
    ),
    (
        "offload_optimizer ratio 0.5 with stage 3",
        {
            ("zero_optimization", "stage"): 3,
            ("zero_optimization", "offload_optimizer"): {"device": "cpu", "ratio": 0.5},
        },
    ),
    (
        "offload_optimizer device none, ratio 0.3, stage 1",
        {
            ("zero_optimization", "stage"): 1,
            ("zero_optimization", "offload_optimizer"): {"device": "none", "ratio": 0.3},
        },
    ),
    (
        "compute_grad_norm false with stage 3",
        {("zero_optimization", "stage"): 3, ("zero_optimization", "compute_grad_norm"): False},
    ),
    (
        "compute_grad_norm false with stage 0",
        {("zero_optimization", "stage"): 0, ("zero_optimization", "compute_grad_norm"): False},
    ),
    (
        "compute_grad_norm false with stage 2",
        {("zero_optimization", "stage"): 2, ("zero_optimization", "compute_grad_norm"): False},
    ),
    (
        "cpu_offload true together with offload_optimizer",
        {("zero_optimization", "cpu_offload"): True, ("zero_optimization", "offload_optimizer"): {"device": "cpu"}},
    ),
    (
        "cpu_offload false together with offload_optimizer",
        {("zero_optimization", "cpu_offload"): False, ("zero_optimization", "offload_optimizer"): {"device": "cpu"}},
    ),
    (
        "cpu_offload_param together with offload_param",
        {
            ("zero_optimization", "stage"): 3,
            ("zero_optimization", "cpu_offload_param"): True,
            ("zero_optimization", "offload_param"): {"device": "cpu"},
        },
    ),
    (
        "stage3_gather_fp16_weights_on_model_save with gather_16bit_weights_on_model_save",
        {
            ("zero_optimization", "stage3_gather_fp16_weights_on_model_save"): True,
            ("zero_optimization", "gather_16bit_weights_on_model_save"): True,
        },
    ),
    (
        "stage3_gather_fp16_weights_on_model_save with stage3_gather_16bit_weights_on_model_save",
        {
            ("zero_optimization", "stage3_gather_fp16_weights_on_model_save"): False,
            ("zero_optimization", "stage3_gather_16bit_weights_on_model_save"): True,
        },
    ),
    (
        "alias and field name both: stage3_prefetch_bucket_size + prefetch_bucket_size",
        {
            ("zero_optimization", "stage3_prefetch_bucket_size"): 1000,
            ("zero_optimization", "prefetch_bucket_size"): 1000,
        },
    ),
    (
        "gradient_allreduce_op sum with stage 3",
        {("gradient_allreduce_op",): "sum", ("zero_optimization", "stage"): 3},
    ),
    (
        "gradient_allreduce_op sum with stage 2",
        {("gradient_allreduce_op",): "sum", ("zero_optimization", "stage"): 2},
    ),
    (
        "gradient_allreduce_op sum with zenflow",
        {("gradient_allreduce_op",): "sum", ("zero_optimization", "stage"): 2, ("zero_optimization", "zenflow"): {}},
    ),
    (
        "fp16_master_weights_and_grads with stage 0",
        {("fp16", "fp16_master_weights_and_grads"): True, ("zero_optimization", "stage"): 0},
    ),
    (
        "bf16_master_weights_and_grads with stage 0",
        {("bf16", "bf16_master_weights_and_grads"): True, ("zero_optimization", "stage"): 0},
    ),
    (
        "bf16_optimizer_states without bf16_master_weights_and_grads (stage 2)",
        {("bf16", "bf16_optimizer_states"): True, ("zero_optimization", "stage"): 2},
    ),
    (
        "offload_param with stage 2",
        {("zero_optimization", "stage"): 2, ("zero_optimization", "offload_param"): {"device": "cpu"}},
    ),
    (
        "nvme offload without nvme_path",
        {("zero_optimization", "stage"): 3, ("zero_optimization", "offload_param"): {"device": "nvme"}},
    ),
    (
        "max_grad_norm in optimizer params",
        {("optimizer", "type"): "AdamW", ("optimizer", "params", "max_grad_norm"): 1.0},
    ),
    ("lamb with static loss scale", {("optimizer", "type"): "Lamb", ("fp16", "loss_scale"): 128}),
    (
        "WarmupDecayLR without total_num_steps",
        {("scheduler",): {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}},
    ),
    (
        "WarmupLR with total_num_steps (not a parameter of WarmupLR)",
        {("scheduler",): {"type": "WarmupLR", "params": {"warmup_num_steps": 10, "total_num_steps": 100}}},
    ),
    ("OneCycle without cycle_min_lr", {("scheduler",): {"type": "OneCycle", "params": {"cycle_max_lr": 0.1}}}),
    (
        "curriculum learning (data_efficiency) enabled without metrics",
        {
            ("data_efficiency", "enabled"): True,
            ("data_efficiency", "data_sampling", "curriculum_learning", "enabled"): True,
        },
    ),
    ("aio.use_gds true", {("aio", "use_gds"): True}),
    ("autotuning with empty results_dir", {("autotuning", "results_dir"): ""}),
    ("expert_parallel with load_balance_coeff", {("expert_parallel", "load_balance_coeff"): 0.01}),
    (
        "deepcompile with gradient_allreduce_op sum",
        {("compile", "deepcompile"): True, ("gradient_allreduce_op",): "sum"},
    ),
]

REMOVED_KEYS: dict[str, Any] = {
    "amp": {"enabled": True, "opt_level": "O1"},
    "elasticity": {
        "enabled": True,
        "max_train_batch_size": 64,
        "micro_batch_sizes": [2, 4],
        "min_gpus": 1,
        "max_gpus": 64,
    },
    "sparse_attention": {"mode": "fixed", "block": 16},
    "nebula": {"enabled": False},
    "compression_training": {},
    "quantize_training": {"enabled": False},
    "sparse_gradients": True,
    "eigenvalue": {"enabled": False},
    "graph_harvesting": False,
    "curriculum_learning": {"enabled": False},
    "progressive_layer_drop": {"enabled": False},
}
REMOVED_ZERO_KEYS: dict[str, Any] = {
    "mics_shard_size": 8,
    "mics_hierarchical_params_gather": False,
    "zeropp_loco_param": {},
}

DEPRECATED: list[tuple[str, dict[Path_, Any]]] = [
    ("zero cpu_offload true (deprecated)", {("zero_optimization", "cpu_offload"): True}),
    (
        "zero cpu_offload_param (deprecated)",
        {("zero_optimization", "stage"): 3, ("zero_optimization", "cpu_offload_param"): True},
    ),
    ("zero cpu_offload_use_pin_memory (deprecated)", {("zero_optimization", "cpu_offload_use_pin_memory"): True}),
    (
        "stage3_gather_fp16_weights_on_model_save (deprecated)",
        {("zero_optimization", "stage3_gather_fp16_weights_on_model_save"): True},
    ),
    ("cpu_offload_params (plural: not a field)", {("zero_optimization", "cpu_offload_params"): True}),
    ("zero_optimization as bool true (old format)", {("zero_optimization",): True}),
    ("zero_optimization as bool false (old format)", {("zero_optimization",): False}),
    ("bfloat16 instead of bf16", {("bfloat16",): {"enabled": True}}),
]

AUTO_PLACES: list[Path_] = [
    ("train_batch_size",),
    ("train_micro_batch_size_per_gpu",),
    ("gradient_accumulation_steps",),
    ("gradient_clipping",),
    ("steps_per_print",),
    ("wall_clock_breakdown",),
    ("communication_data_type",),
    ("gradient_allreduce_op",),
    ("zero_optimization", "stage"),
    ("zero_optimization", "reduce_bucket_size"),
    ("zero_optimization", "stage3_prefetch_bucket_size"),
    ("zero_optimization", "stage3_param_persistence_threshold"),
    ("zero_optimization", "offload_optimizer", "device"),
    ("fp16", "enabled"),
    ("fp16", "loss_scale"),
    ("bf16", "enabled"),
    ("optimizer", "type"),
    ("optimizer", "params", "lr"),
    ("optimizer", "params", "max_grad_norm"),
    ("scheduler", "type"),
    ("scheduler", "params", "warmup_num_steps"),
    ("activation_checkpointing", "partition_activations"),
    ("tensorboard", "enabled"),
    ("checkpoint", "tag_validation"),
    ("data_types", "keep_in_fp32_modules"),
]

BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
BATCH_SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("no batch keys", {}),
    ("only gradient_accumulation_steps", {"gradient_accumulation_steps": 4}),
    ("train_batch_size 1 only", {"train_batch_size": 1}),
    ("train_batch_size 16 only", {"train_batch_size": 16}),
    ("train_batch_size 24 only", {"train_batch_size": 24}),
    ("train_batch_size 128 only", {"train_batch_size": 128}),
    ("micro batch 4 only", {"train_micro_batch_size_per_gpu": 4}),
    ("tb 32 + mb 4", {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}),
    ("tb 24 + mb 4", {"train_batch_size": 24, "train_micro_batch_size_per_gpu": 4}),
    ("tb 64 + ga 2", {"train_batch_size": 64, "gradient_accumulation_steps": 2}),
    ("mb 2 + ga 8", {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8}),
    (
        "all three, exact for 8 ranks",
        {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2},
    ),
    (
        "all three, exact for 1 rank",
        {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2},
    ),
    ("micro batch 0", {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 0}),
    ("gradient_accumulation_steps 0", {"train_batch_size": 16, "gradient_accumulation_steps": 0}),
    ("negative train_batch_size", {"train_batch_size": -8}),
    (
        "negative micro batch and accumulation",
        {"train_micro_batch_size_per_gpu": -2, "gradient_accumulation_steps": -3},
    ),
    ("float train_batch_size 64.0", {"train_batch_size": 64.0}),
    ("fractional micro batch 2.5", {"train_micro_batch_size_per_gpu": 2.5}),
    ("string train_batch_size '64'", {"train_batch_size": "64"}),
    ("bool micro batch true", {"train_micro_batch_size_per_gpu": True, "gradient_accumulation_steps": 1}),
    ("train_batch_size null + micro batch 2", {"train_batch_size": None, "train_micro_batch_size_per_gpu": 2}),
    ("huge train_batch_size 2**40", {"train_batch_size": 2**40}),
    (
        "batch keys 'auto'",
        {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"},
    ),
]

MISPLACED: list[tuple[str, dict[Path_, Any]]] = [
    ("offload_optimizer at top level", {("offload_optimizer",): {"device": "cpu"}}),
    ("stage at top level", {("stage",): 2}),
    ("overlap_comm at top level", {("overlap_comm",): True}),
    ("gradient_clipping inside zero_optimization", {("zero_optimization", "gradient_clipping"): 1.0}),
    ("loss_scale inside bf16", {("bf16", "loss_scale"): 0}),
    ("lr directly under optimizer", {("optimizer", "type"): "AdamW", ("optimizer", "lr"): 1e-4}),
    ("enabled at top level", {("enabled",): True}),
    ("max_grad_norm at top level", {("max_grad_norm",): 1.0}),
]

SECTION_NULLS: list[str] = [
    "zero_optimization",
    "fp16",
    "bf16",
    "optimizer",
    "scheduler",
    "activation_checkpointing",
    "tensorboard",
    "wandb",
    "flops_profiler",
    "checkpoint",
    "aio",
    "data_efficiency",
    "compile",
    "comms_logger",
    "hybrid_engine",
]

# Per-kind caps for the default (sampled) mutation set; None means "all".
DEFAULT_CAPS: dict[str, int | None] = {
    "key-typo": 8,
    "wrong-type": 8,
    "out-of-range": 6,
    "bound": 3,
    "enum-typo": 4,
    "conflict": 5,
    "removed-key": 3,
    "deprecated": 2,
    "auto": 4,
    "strip-auto": None,
    "cleanup": None,
    "batch": 6,
    "misplaced-key": 2,
    "section-null": 2,
}
MUTATION_KINDS = tuple(DEFAULT_CAPS)


def _candidates(config: dict[str, Any]) -> dict[str, list[tuple[str, Callable[[], dict[str, Any] | None]]]]:
    """Every possible mutation of ``config``, lazily built, grouped by kind."""
    nodes = list(_walk(config))
    by_kind: dict[str, list[tuple[str, Callable[[], dict[str, Any] | None]]]] = {k: [] for k in MUTATION_KINDS}

    def add(kind: str, label: str, build: Callable[[], dict[str, Any] | None]) -> None:
        by_kind[kind].append((label, build))

    for path, _value in nodes:
        for variant in typo_variants(path[-1]):
            add("key-typo", f"{_dotted(path)} misspelt {variant!r}", lambda p=path, v=variant: _renamed(config, p, v))
    for path, value in nodes:
        for what, wrong in _wrong_type_values(value):
            add("wrong-type", f"{_dotted(path)} {what}", lambda p=path, w=wrong: _with(config, p, w))
        if _is_num(value):
            for what, wrong in _out_of_range_values(value):
                add("out-of-range", f"{_dotted(path)} {what} ({wrong!r})", lambda p=path, w=wrong: _with(config, p, w))
    for path, wrong in BOUND_PROBES:
        add("bound", f"{_dotted(path)} = {wrong!r}", lambda p=path, w=wrong: _with(config, p, w))
    for path, wrong in ENUM_TYPOS:
        add("enum-typo", f"{_dotted(path)} = {wrong!r}", lambda p=path, w=wrong: _with(config, p, w))
    for label, changes in CONFLICTS:
        add("conflict", label, lambda c=changes: _with_many(config, c))
    for key, value in REMOVED_KEYS.items():
        add("removed-key", f"add removed key {key}", lambda k=key, v=value: _with(config, (k,), v))
    for key, value in REMOVED_ZERO_KEYS.items():
        add(
            "removed-key",
            f"add removed key zero_optimization.{key}",
            lambda k=key, v=value: _with(config, ("zero_optimization", k), v),
        )
    for label, changes in DEPRECATED:
        add("deprecated", label, lambda c=changes: _with_many(config, c))
    for path in AUTO_PLACES:
        add("auto", f"{_dotted(path)} = 'auto'", lambda p=path: _with(config, p, "auto"))
    auto_paths = [p for p, v in nodes if v == "auto"]
    if auto_paths:
        add("strip-auto", f"drop the {len(auto_paths)} 'auto' values", lambda: _strip_auto(config, auto_paths))
    present_removed = [k for k in REMOVED_KEYS if k in config]
    zero = config.get("zero_optimization")
    present_removed += [f"zero_optimization.{k}" for k in REMOVED_ZERO_KEYS if isinstance(zero, dict) and k in zero]
    if present_removed:
        add("cleanup", f"drop removed keys {', '.join(present_removed)}", lambda: _drop_removed(config))
    for key in BATCH_KEYS:
        if key in config:
            add("batch", f"drop {key}", lambda k=key: _without(config, (k,)))
    for label, setting in BATCH_SETTINGS:
        add("batch", f"batch: {label}", lambda s=setting: _with_batch(config, s))
    for label, changes in MISPLACED:
        add("misplaced-key", label, lambda c=changes: _with_many(config, c))
    for key in SECTION_NULLS:
        add("section-null", f"{key}: null", lambda k=key: _with(config, (k,), None))
    return by_kind


def _strip_auto(config: dict[str, Any], paths: list[Path_]) -> dict[str, Any]:
    out = config
    for path in paths:
        out = _without(out, path)
    if not any(out.get(k) is not None for k in BATCH_KEYS[:2]):
        out = _with(out, ("train_micro_batch_size_per_gpu",), 1) or out
    return out


def _drop_removed(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in REMOVED_KEYS}
    zero = out.get("zero_optimization")
    if isinstance(zero, dict):
        for key in REMOVED_ZERO_KEYS:
            zero.pop(key, None)
    return out


def _with_batch(config: dict[str, Any], setting: dict[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in BATCH_KEYS}
    out.update(copy.deepcopy(setting))
    return out


def repaired(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``config`` with the usual reasons for rejection removed, and what was changed: removed keys
    dropped, every ``"auto"`` dropped, and the batch keys replaced by a micro batch and accumulation
    that fit any world size (the existing positive integers are kept).

    Mutating the repaired config makes each mutation's verdict depend on the mutation, not on the
    corpus file already being rejected (most HF-style files are, for their ``"auto"`` batch sizes).
    """
    out = _drop_removed(config)
    changes = [] if out == config else ["removed keys dropped"]
    auto_paths = [p for p, v in _walk(out) if v == "auto"]
    for path in auto_paths:
        out = _without(out, path)
    if auto_paths:
        changes.append(f"{len(auto_paths)} 'auto' dropped")
    batch = {}
    for key in BATCH_KEYS[1:]:
        value = out.get(key)
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        batch[key] = value if ok else 1
    new = {k: v for k, v in out.items() if k not in BATCH_KEYS}
    new.update(batch)
    if any(out.get(k) != new.get(k) for k in BATCH_KEYS):
        changes.append(f"batch set to micro {batch[BATCH_KEYS[1]]} x accumulation {batch[BATCH_KEYS[2]]}")
    return new, changes


REPAIR_INDEPENDENT_KINDS = frozenset({"strip-auto", "cleanup"})


def mutate(
    config: dict[str, Any], *, seed: str, caps: dict[str, int | None] | None = None, repair: bool = True
) -> list[Mutation]:
    """Labelled mutations of ``config``, deterministic for a given ``seed``.

    With ``repair`` (default) the mutations apply to ``repaired(config)`` (and that repaired config is
    itself the first mutation, kind "repaired"), except "strip-auto" and "cleanup", which fix the original.
    ``caps`` limits how many mutations of each kind are kept (a seeded sample; default ``DEFAULT_CAPS``);
    pass ``{}`` for every candidate. Mutations identical to the original or to an earlier one are dropped.
    """
    caps = DEFAULT_CAPS if caps is None else caps
    rng = _rng(seed)
    seen = {json.dumps(config, sort_keys=True, default=repr)}
    out: list[Mutation] = []
    base, changes = repaired(config) if repair else (config, [])
    if changes:
        seen.add(json.dumps(base, sort_keys=True, default=repr))
        out.append(Mutation("repaired", "repaired: " + "; ".join(changes), base))
    candidates_by_kind = _candidates(base)
    if base is not config:
        original = _candidates(config)
        for kind in REPAIR_INDEPENDENT_KINDS:
            candidates_by_kind[kind] = original[kind]
    for kind, candidates in candidates_by_kind.items():
        cap = caps.get(kind)
        order = list(range(len(candidates)))
        if cap is not None and cap < len(order):
            order = _spread_typos(candidates, cap, rng) if kind == "key-typo" else sorted(rng.sample(order, cap))
        for index in order:
            label, build = candidates[index]
            mutated = build()
            if mutated is None:
                continue
            fingerprint = json.dumps(mutated, sort_keys=True, default=repr)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            out.append(Mutation(kind, label, mutated))
    return out


def _spread_typos(candidates: list[tuple[str, Any]], cap: int, rng: random.Random) -> list[int]:
    """Sample typos so that every depth present gets some: half top level, half nested."""
    top = [i for i, (label, _) in enumerate(candidates) if "." not in label.split(" misspelt ")[0]]
    nested = [i for i in range(len(candidates)) if i not in set(top)]
    n_nested = min(len(nested), cap - min(len(top), cap // 2))
    n_top = min(len(top), cap - n_nested)
    return sorted(rng.sample(top, n_top) + rng.sample(nested, n_nested))


def corpus_mutations(
    entries: list[CorpusEntry] | None = None, caps: dict[str, int | None] | None = None
) -> dict[str, list[Mutation]]:
    """Mutations of every loadable corpus file, keyed by its relative path (seeded by that path)."""
    entries = corpus_entries() if entries is None else entries
    return {e.rel: mutate(e.config, seed=e.rel, caps=caps) for e in entries if e.config is not None}


# --------------------------------------------------------------------------- hand-written edge cases
_BASE = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}


def edge_configs() -> list[Mutation]:
    """Hand-written corner cases, each a complete config."""
    cases: list[tuple[str, dict[str, Any]]] = [
        ("empty config", {}),
        ("only train_batch_size 8", {"train_batch_size": 8}),
        ("minimal micro batch", dict(_BASE)),
        ("all batch keys null", {"train_batch_size": None, "train_micro_batch_size_per_gpu": None}),
        ("unknown top-level key", {**_BASE, "bogus_top_level": 1}),
        ("British zero_optimisation at top level", {**_BASE, "zero_optimisation": {"stage": 3}}),
        ("unknown key inside zero_optimization", {**_BASE, "zero_optimization": {"stage": 2, "stagee": 3}}),
        ("unknown key inside fp16", {**_BASE, "fp16": {"enabled": False, "loss_scal": 0}}),
        ("unknown key inside bf16 (check_overflow)", {**_BASE, "bf16": {"enabled": True, "check_overflow": True}}),
        ("unknown key inside optimizer (ignored)", {**_BASE, "optimizer": {"type": "AdamW", "parms": {"lr": 1e-3}}}),
        (
            "unknown key inside activation_checkpointing",
            {**_BASE, "activation_checkpointing": {"partition_activation": True}},
        ),
        ("unknown key inside tensorboard", {**_BASE, "tensorboard": {"enabled": True, "output": "x"}}),
        ("unknown key inside wandb", {**_BASE, "wandb": {"enabled": False, "entity": "me"}}),
        (
            "unknown key inside offload_param",
            {**_BASE, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin": True}}},
        ),
        ("unknown key inside hybrid_engine", {**_BASE, "hybrid_engine": {"enabled": False, "max_tokens": 5}}),
        ("unknown key inside comms_logger", {**_BASE, "comms_logger": {"enabled": True, "prof_al": True}}),
        ("unknown key inside compile", {**_BASE, "compile": {"deepcompile": False, "backend": "inductor"}}),
        ("unknown key inside timers.throughput", {**_BASE, "timers": {"throughput": {"enabled": True, "x": 1}}}),
        ("unknown key inside weight_quantization", {**_BASE, "weight_quantization": {"num_bit": 8}}),
        ("unknown key inside tensor_parallel", {**_BASE, "tensor_parallel": {"autotp_size": 1, "tp_sise": 2}}),
        ("tensor_parallel tp block", {**_BASE, "tensor_parallel": {"tp": {"tp_size": 1}}}),
        (
            "zero stage 3 with every alias",
            {
                **_BASE,
                "zero_optimization": {
                    "stage": 3,
                    "stage3_prefetch_bucket_size": 5e7,
                    "stage3_param_persistence_threshold": 1e5,
                    "stage3_max_live_parameters": 1e9,
                    "stage3_max_reuse_distance": 1e9,
                    "stage3_gather_16bit_weights_on_model_save": True,
                },
            },
        ),
        (
            "zero field name and alias both",
            {**_BASE, "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9, "max_live_parameters": 1e9}},
        ),
        ("stage as bool true", {**_BASE, "zero_optimization": {"stage": True}}),
        ("stage as integral float", {**_BASE, "zero_optimization": {"stage": 2.0}}),
        ("stage null", {**_BASE, "zero_optimization": {"stage": None}}),
        ("reduce_bucket_size as float 5e8", {**_BASE, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8}}),
        (
            "reduce_bucket_size as digit string",
            {**_BASE, "zero_optimization": {"stage": 2, "reduce_bucket_size": "100"}},
        ),
        ("overlap_comm 'yes' (lax bool)", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": "yes"}}),
        ("overlap_comm 2", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": 2}}),
        ("overlap_comm null", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": None}}),
        ("offload_param null", {**_BASE, "zero_optimization": {"stage": 3, "offload_param": None}}),
        ("offload device 'auto'", {**_BASE, "zero_optimization": {"stage": 3, "offload_param": {"device": "auto"}}}),
        (
            "offload nvme with path",
            {
                **_BASE,
                "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}},
            },
        ),
        ("leaf_module as string", {**_BASE, "zero_optimization": {"stage": 3, "leaf_module": {"classes": "MyMoE"}}}),
        (
            "fp16 loss_scale 0 and window 0 (dynamic)",
            {**_BASE, "fp16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 0}},
        ),
        ("fp16 disabled, window 0", {**_BASE, "fp16": {"enabled": False, "loss_scale_window": 0}}),
        ("fp16 loss_scale NaN", {**_BASE, "fp16": {"enabled": True, "loss_scale": float("nan")}}),
        ("fp16 loss_scale string number", {**_BASE, "fp16": {"enabled": True, "loss_scale": "128"}}),
        ("bf16 null falls back to bfloat16", {**_BASE, "bf16": None, "bfloat16": {"enabled": True}}),
        ("fp16 enabled, bfloat16 enabled", {**_BASE, "fp16": {"enabled": True}, "bfloat16": {"enabled": True}}),
        (
            "torch_autocast with bad module list",
            {**_BASE, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": [1]}},
        ),
        (
            "torch_autocast dtype torch.bfloat16",
            {**_BASE, "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}},
        ),
        ("optimizer type int", {**_BASE, "optimizer": {"type": 3}}),
        ("optimizer without type", {**_BASE, "optimizer": {"params": {"lr": 1e-3}}}),
        ("scheduler without type", {**_BASE, "scheduler": {"params": {"warmup_num_steps": 10}}}),
        ("scheduler params null", {**_BASE, "scheduler": {"type": "WarmupLR", "params": None}}),
        (
            "optimizer max_grad_norm 'auto'",
            {**_BASE, "optimizer": {"type": "AdamW", "params": {"max_grad_norm": "auto"}}},
        ),
        ("communication_data_type null", {**_BASE, "communication_data_type": None}),
        ("communication_data_type 16", {**_BASE, "communication_data_type": 16}),
        ("gradient_allreduce_op null", {**_BASE, "gradient_allreduce_op": None}),
        (
            "gradient_allreduce_op 'Sum' with stage 3",
            {**_BASE, "gradient_allreduce_op": "Sum", "zero_optimization": {"stage": 3}},
        ),
        ("checkpoint tag_validation 3", {**_BASE, "checkpoint": {"tag_validation": 3}}),
        (
            "checkpoint parallel_write pipeline_stage 1",
            {**_BASE, "checkpoint": {"parallel_write": {"pipeline_stage": 1}}},
        ),
        (
            "checkpoint writer bad data_parallel",
            {**_BASE, "checkpoint": {"writer": {"type": "fast", "data_parallel": "rack"}}},
        ),
        ("keep_in_fp32_modules list of str", {**_BASE, "data_types": {"keep_in_fp32_modules": ["lm_head"]}}),
        ("keep_in_fp32_modules list with int", {**_BASE, "data_types": {"keep_in_fp32_modules": ["lm_head", 3]}}),
        (
            "dynamic batching without max_tokens",
            {**_BASE, "data_efficiency": {"enabled": True, "data_sampling": {"dynamic_batching": {"enabled": True}}}},
        ),
        ("datastates_ckpt null", {**_BASE, "datastates_ckpt": None}),
        (
            "sequence_parallel_size 2",
            {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2},
        ),
        ("sequence_parallel_size 0", {**_BASE, "sequence_parallel_size": 0}),
        ("vocabulary_size not a multiple of 8", {**_BASE, "vocabulary_size": 50257}),
        ("wall_clock_breakdown 'auto'", {**_BASE, "wall_clock_breakdown": "auto"}),
        ("flops_profiler enabled", {**_BASE, "flops_profiler": {"enabled": True, "profile_step": 2}}),
        ("pipeline with arbitrary keys", {**_BASE, "pipeline": {"stages": 4, "anything": [1, 2]}}),
        (
            "zenflow block",
            {**_BASE, "zero_optimization": {"stage": 2, "zenflow": {"topk_ratio": 0.05, "update_interval": 4}}},
        ),
        (
            "zenflow pt_reserved_cores_perc int",
            {**_BASE, "zero_optimization": {"stage": 2, "zenflow": {"pt_reserved_cores_perc": 1}}},
        ),
        ("compile passes autotp", {**_BASE, "compile": {"deepcompile": True, "passes": ["autotp"]}}),
        ("expert_parallel unknown key", {**_BASE, "expert_parallel": {"whatever": 1}}),
        (
            "deep unknown nesting",
            {**_BASE, "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "x": {"y": {"z": 1}}}}},
        ),
        ("unicode key", {**_BASE, "zéro_optimization": {"stage": 2}}),
        ("amp disabled (removed key even when off)", {**_BASE, "amp": {"enabled": False}}),
        (
            "elasticity with batch info",
            {**_BASE, "elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4]}},
        ),
        (
            "hf-style auto config",
            {
                "train_batch_size": "auto",
                "train_micro_batch_size_per_gpu": "auto",
                "gradient_accumulation_steps": "auto",
                "gradient_clipping": "auto",
                "fp16": {"enabled": "auto"},
                "bf16": {"enabled": "auto"},
                "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto"},
                "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
            },
        ),
    ]
    return [Mutation("edge", label, config) for label, config in cases]


# --------------------------------------------------------------------------- random edits
#: Odd values a random edit may put anywhere (the hypothesis test adds generated ints and floats).
EDIT_VALUE_POOL: tuple[Any, ...] = (
    None, True, False, 0, 1, 2, 3, 4, -1, 8, 1.5, 2.0, 10**20, 5e8, float("inf"), -0.5,
    "auto", "cpu", "CPU", "nvme", "none", "fp16", "bf16", "sum", "mean", "AdamW", "WarmupLR", "", "100", "yes",
    [], [1], [0, 2], {}, {"enabled": True}, {"device": "cpu"}, {"x": 1},
)  # fmt: skip

Edit = tuple[Path_, Any, bool]  # (path, value, delete instead of set)


def edit_paths(configs: list[dict[str, Any]]) -> list[Path_]:
    """Every key path in ``configs`` plus the enum and bound probe paths, sorted."""
    paths = {p for config in configs for p, _ in _walk(config)}
    return sorted(paths | {p for p, _ in ENUM_TYPOS + BOUND_PROBES})


def apply_edits(base: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    """A copy of ``base`` with each edit applied (missing or non-dict parents become dicts)."""
    config = copy.deepcopy(base)
    for path, value, delete in edits:
        node = config
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        if delete:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    return config


def random_edit_mutations(bases: list[dict[str, Any]], count: int, *, seed: str = "random-edits") -> list[Mutation]:
    """``count`` configs, each a base with 1-3 random edits from ``EDIT_VALUE_POOL`` (seeded, deterministic)."""
    rng = _rng(seed)
    paths = edit_paths(bases)
    out = []
    for _ in range(count):
        base_index = rng.randrange(len(bases))
        edits = [
            (rng.choice(paths), rng.choice(EDIT_VALUE_POOL), rng.random() < 0.15) for _ in range(rng.randint(1, 3))
        ]
        label = f"base #{base_index}: " + "; ".join(
            f"del {_dotted(p)}" if d else f"{_dotted(p)} = {json.dumps(v, default=repr)}" for p, v, d in edits
        )
        out.append(Mutation("random-edit", label, apply_edits(bases[base_index], edits)))
    return out
