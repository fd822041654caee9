"""What the mutations put into a config: wrong enum values, bound probes, conflicting options, removed and
deprecated keys, places for ``"auto"``, batch-triangle settings, misplaced keys, null sections, and how many of
each kind a corpus file gets (``DEFAULT_CAPS``). Data only; ``mutations.py`` applies them.
"""

from __future__ import annotations

from typing import Any

Path_ = tuple[str, ...]

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
