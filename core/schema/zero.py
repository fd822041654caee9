"""``zero_optimization``: ZeRO stages, offload, stage-3 knobs and ZeRO++.

Mirrors ``deepspeed/runtime/zero/config.py``, ``offload_config.py``,
``leaf_module_config.py`` and ``zenflow/zenflow_config.py`` of DeepSpeed 0.19.8
(strict pydantic sections: unknown keys and wrong types are errors).
"""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import Literal

from pydantic import ConfigDict, field_validator, model_validator

from core.schema.base import META_KEY, Section, ds_field, pointed_error

OffloadDevice = Literal["none", "cpu", "nvme"]


#: The NVMe mount written where the product must put one in a config (a fix, a planned or fitted config):
#: a placeholder for the user's own drive, named as such wherever it is written.
NVME_PATH_EXAMPLE = "/local_nvme"
#: sub_group_size the product writes where it swaps the optimizer to NVMe: DeepSpeed pins buffer_count sub-groups
#: of fp32 states in CPU RAM for the swap, which at the default (1e9 parameters) can take more than they move.
NVME_SUB_GROUP_SIZE = 100_000_000


class ZeroStage(IntEnum):
    """ZeRO stages: 0 off, 1 optimizer states, 2 + gradients, 3 + parameters."""

    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3


class OffloadParamConfig(Section):
    """Parameter offload (ZeRO-3 only): keeps the fp16/bf16 parameters in CPU RAM or on NVMe and
    fetches each layer's parameters to the GPU just before it is used."""

    device: OffloadDevice = ds_field(
        "none",
        description="Where the parameters live: `cpu` (CPU RAM) or `nvme` (ZeRO-Infinity, needs `nvme_path`). "
        "Exact lower-case spelling; `CPU` is rejected.",
        widget="select", hf_auto=True,
        stages=(3,),
    )
    nvme_path: str | None = ds_field(
        None,
        description="Directory on a fast local NVMe drive for the swapped parameters. Required for `nvme`.",
        widget="path",
        stages=(3,),
    )
    buffer_count: int = ds_field(
        5, ge=0, description="Number of buffers in the pool used to swap parameters to and from NVMe.", stages=(3,)
    )
    buffer_size: int = ds_field(
        100_000_000,
        ge=0,
        unit="elements",
        description="Size of each NVMe swap buffer, in parameter elements. Must be at least the size of "
        "the largest parameter tensor, or DeepSpeed fails when it swaps it.",
        stages=(3,),
    )
    max_in_cpu: int = ds_field(
        1_000_000_000,
        ge=0,
        unit="elements",
        description="With NVMe offload, how many parameter elements may stay in CPU memory.",
        stages=(3,),
    )
    pin_memory: bool = ds_field(
        True,
        description="Page-lock (pin) the parameter partition `zero.Init` first builds in CPU memory, and "
        "ZeRO++ hpZ's secondary partition. It does not reach the partition used in training: DeepSpeed's ZeRO-3 "
        "optimizer moves it into a flat CPU buffer that it always pins, so turning this off hardly lowers pinned "
        "memory.",
        stages=(3,),
    )


class OffloadOptimizerConfig(Section):
    """Optimizer offload (ZeRO 1, 2, 3): keeps the fp32 master weights and optimizer states in CPU RAM
    or on NVMe and runs the optimizer step on the CPU (DeepSpeed's CPU-Adam)."""

    device: OffloadDevice = ds_field(
        "none",
        description="Where the optimizer states live: `cpu` or `nvme` (needs `nvme_path`). The optimizer "
        "step itself runs on the CPU either way.",
        widget="select", hf_auto=True,
        stages=(1, 2, 3),
    )
    nvme_path: str | None = ds_field(
        None,
        description="Directory on a fast local NVMe drive for the optimizer states. Required for `nvme`.",
        widget="path",
        stages=(1, 2, 3),
    )
    buffer_count: int = ds_field(
        4,
        ge=0,
        description="Buffers in the NVMe swap pool. At least the number of states per parameter the "
        "optimizer keeps (Adam: 4 — parameter, gradient, momentum, variance).",
        stages=(1, 2, 3),
    )
    pin_memory: bool = ds_field(
        True,
        description="Page-lock (pin) the offloaded gradients, and at ZeRO-1/2 the fp32 master weights: faster "
        "GPU↔CPU copies, but pinned memory cannot be paged out. The optimizer states (e.g. Adam's moments) are "
        "never pinned, nor are ZeRO-3's master weights.",
        stages=(1, 2, 3),
    )
    pipeline_read: bool = ds_field(
        False,
        description="With NVMe, read the next tile while the current one is being updated (ZeRO-Infinity).",
        stages=(1, 2, 3),
    )
    pipeline_write: bool = ds_field(
        False,
        description="With NVMe, write the previous tile while the current one is being updated.",
        stages=(1, 2, 3),
    )
    fast_init: bool = ds_field(
        False, description="Faster optimizer initialisation when offloading to NVMe.", stages=(1, 2, 3)
    )
    ratio: float = ds_field(
        1.0,
        ge=0.0,
        le=1.0,
        description="Fraction of the optimizer states offloaded (partial offload, ZeRO-3 only). "
        "A value below 1.0 with stage 1 or 2 is rejected.",
        stages=(3,),
    )
    super_offload: bool = ds_field(
        False, description="High-performance CPU offload for Superchips (GH200 class). ZeRO-3 only.", stages=(3,)
    )
    cpuadam_cores_perc: float = ds_field(
        0.8,
        ge=0.0,
        le=1.0,
        description="Fraction of CPU cores CPU-Adam may use (ZeRO-3 with `super_offload`).",
        stages=(3,),
    )


class LeafModuleConfig(Section):
    """Modules ZeRO-3 treats as leaves (no per-submodule hooks), e.g. MoE blocks."""

    classes: list[str] = ds_field(
        default_factory=lambda: [
            "transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock",
            "transformers.models.qwen2_moe.modeling_qwen2_moe.Qwen2MoeSparseMoeBlock",
            "transformers.models.qwen3_moe.modeling_qwen3_moe.Qwen3MoeSparseMoeBlock",
        ],
        description="Fully qualified class names of leaf modules. A single string is accepted as a list of one.",
        stages=(3,),
    )
    names: list[str] = ds_field(
        default_factory=list,
        description="Module names (as in `named_modules()`) to treat as leaves.",
        stages=(3,),
    )
    name_suffixes: list[str] = ds_field(
        default_factory=list, description="Module-name suffixes to treat as leaves.", stages=(3,)
    )

    @model_validator(mode="before")
    @classmethod
    def _string_is_list_of_one(cls, data: object) -> object:
        if isinstance(data, dict):
            return {
                k: ([v] if k in ("classes", "names", "name_suffixes") and isinstance(v, str) else v)
                for k, v in data.items()
            }
        return data


_UPDATE_INTERVAL_MIN = "If update_interval is a number, it must be at least 1"


class ZenFlowConfig(Section):
    """ZenFlow: stall-free offloading that updates only the most important gradient columns on the GPU."""

    model_config = ConfigDict(json_schema_extra={META_KEY: {"kind": "strict"}})

    topk_ratio: float = ds_field(
        0.1, gt=0.0, lt=1.0, description="Fraction of the most important gradient columns updated on the GPU.",
        doc_note="DeepSpeed 0.19.5 allowed 0 and 1 (0 ≤ x ≤ 1); 0.19.8 requires 0 < x < 1.",
    )
    select_strategy: str = ds_field(
        "auto", choices=("auto", "step", "epoch"),
        description="When to re-select the important columns: `auto`, every `step`s or every `epoch`s.",
    )
    select_interval: str | int = ds_field(
        "auto", description="Re-selection interval (steps or epochs), or `auto`."
    )
    update_interval: str | int = ds_field(
        "auto", description="How often the accumulated unimportant gradients are applied (≥ 1), or `auto`."
    )
    overlap_step: bool = ds_field(False, description="Overlap the CPU optimizer step with forward/backward.")
    offload: bool = ds_field(False, description="Offload the selective optimizer states to the CPU.")
    auto_ratio: float = ds_field(
        0.99, ge=0.0, le=1.0, description="Threshold the `auto` strategy uses to pick `update_interval`."
    )
    full_warm_up_rounds: int = ds_field(0, description="Initial rounds in which all gradients are updated.")
    pt_reserved_cores_perc: float = ds_field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Fraction of CPU cores reserved for PyTorch threads; the rest run ZenFlow's workers "
        "(0 to 1).",
    )
    steps_per_epoch: int | None = ds_field(None, description="Set by DeepSpeed at run time; do not set it yourself.")

    @model_validator(mode="after")
    def _check_fields(self) -> ZenFlowConfig:
        # The same checks, in the same order, as DeepSpeed's ZenFlowConfig.validate_fields.
        if self.select_strategy not in ("auto", "step", "epoch"):
            raise ValueError('select_strategy must be one of "auto", "step", or "epoch"')
        if isinstance(self.select_interval, str) and self.select_interval != "auto":
            raise ValueError('If select_interval is a string, it must be "auto"')
        if isinstance(self.update_interval, str) and self.update_interval != "auto":
            raise ValueError('If update_interval is a string, it must be "auto"')
        if isinstance(self.update_interval, int) and self.update_interval < 1:
            raise ValueError(_UPDATE_INTERVAL_MIN)
        if not isinstance(self.pt_reserved_cores_perc, float):
            raise ValueError("pt_reserved_cores_perc must be a float")
        return self


_STAGE3 = (3,)


class ZeroConfig(Section):
    """ZeRO partitions the training state across the data-parallel GPUs instead of replicating it:
    stage 1 the optimizer states, stage 2 also the gradients, stage 3 also the parameters.
    Offload moves states further, to CPU RAM or NVMe."""

    model_config = ConfigDict(
        json_schema_extra={
            META_KEY: {
                "kind": "strict",
                "doc_only": {
                    "grad_hooks": "the early docs list it, but it is not a ZeRO option in current DeepSpeed.",
                    "cpu_offload_params": "the plural is a common misspelling; the deprecated key is "
                    "`cpu_offload_param`, replaced by `offload_param: {\"device\": \"cpu\"}`.",
                },
            }
        }
    )

    stage: ZeroStage = ds_field(
        ZeroStage.disabled,
        description="0: off (plain data parallel). 1: partition optimizer states. 2: also gradients. "
        "3: also parameters (each GPU holds 1/N of the model).",
        widget="segmented",
        page="zero",
        hf_auto=True,
    )
    contiguous_gradients: bool = ds_field(
        True,
        description="Copy gradients into one contiguous buffer as they are produced; avoids memory "
        "fragmentation in the backward pass.",
        stages=(1, 2, 3),
    )
    reduce_scatter: bool = ds_field(
        True, description="Average gradients with reduce/reduce-scatter instead of all-reduce.", stages=(1, 2)
    )
    reduce_bucket_size: int = ds_field(
        500_000_000,
        ge=0,
        unit="elements",
        hf_auto=True,
        description="Elements reduced at a time. Larger is faster but needs more memory "
        "(the bucket is allocated in the gradient dtype, twice with `overlap_comm`).",
        doc_note="DeepSpeed 0.19.8 requires a value > 0; 0.19.5 accepted 0.",
        stages=(1, 2, 3),
    )
    use_multi_rank_bucket_allreduce: bool = ds_field(
        True,
        description="Combine the reduce buckets of different ranks into one all-reduce; helps small "
        "models on many GPUs.",
        stages=(1, 2),
    )
    allgather_partitions: bool = ds_field(
        True,
        description="Gather updated parameters with one all-gather (true) or a series of broadcasts (false) "
        "after each step.",
        stages=(1, 2),
    )
    allgather_bucket_size: int = ds_field(
        500_000_000,
        ge=0,
        unit="elements",
        description="Elements all-gathered at a time after the optimizer step. Larger is faster but needs more memory.",
        stages=(1, 2),
    )
    overlap_comm: bool | None = ds_field(
        None,
        description="Overlap gradient reduction with the backward pass. Unset means true for stage 3 and "
        "false otherwise. In stage 1 and 2 it costs a second gradient bucket (2 × `reduce_bucket_size` with "
        "contiguous_gradients; DeepSpeed's docs say 4.5 ×, its code allocates two).",
        stages=(1, 2, 3),
    )
    compute_grad_norm: bool = ds_field(
        True,
        description="Compute the global gradient norm in the ZeRO-1/2 optimizer step. `false` is only "
        "allowed with stage 1 or 2, and only safe with gradient clipping off.",
        stages=(1, 2),
        added="0.19.8",
    )
    load_from_fp32_weights: bool = ds_field(
        True,
        description="On checkpoint load, initialise the fp32 master weights from the fp32 copies "
        "(lossless) rather than from the 16-bit model weights.",
        stages=(1, 2, 3),
    )
    elastic_checkpoint: bool = ds_field(
        False,
        description="Legacy elastic checkpoints for stage 1/2. Not supported with stage 3 (warning); "
        "use Universal Checkpointing instead.",
        stages=(1, 2),
    )
    offload_param: OffloadParamConfig | None = ds_field(
        None,
        description="Offload the model parameters to CPU or NVMe. Only stage 3 reads it; below stage 3 it "
        "is accepted but does nothing.",
        stages=_STAGE3,
    )
    offload_optimizer: OffloadOptimizerConfig | None = ds_field(
        None,
        description="Offload the optimizer states (and the optimizer step) to CPU or NVMe. Stages 1, 2, 3.",
        stages=(1, 2, 3),
    )
    zenflow: ZenFlowConfig | None = ds_field(
        None,
        description="ZenFlow stall-free offloading (with optimizer offload).",
        stages=(1, 2),
    )
    sub_group_size: int = ds_field(
        1_000_000_000,
        ge=0,
        unit="elements",
        description="Tile size for the optimizer step over huge models (ZeRO-3 offload / ZeRO-Infinity). "
        "Smaller tiles use less memory, larger ones run faster.",
        stages=_STAGE3,
    )
    cpu_offload_param: bool | None = ds_field(
        None,
        deprecated=True,
        replaced_by="offload_param",
        description='Deprecated: use `offload_param: {"device": "cpu"}`.',
        stages=_STAGE3,
    )
    cpu_offload_use_pin_memory: bool | None = ds_field(
        None,
        deprecated=True,
        description="Deprecated and ignored: use `pin_memory` inside `offload_param` / `offload_optimizer`.",
        stages=(1, 2, 3),
    )
    cpu_offload: bool | None = ds_field(
        None,
        deprecated=True,
        replaced_by="offload_optimizer",
        description='Deprecated: use `offload_optimizer: {"device": "cpu"}`.',
        stages=(1, 2, 3),
    )
    prefetch_bucket_size: int = ds_field(
        50_000_000,
        ge=0,
        unit="elements",
        alias="stage3_prefetch_bucket_size",
        hf_auto=True,
        description="Parameter elements fetched ahead of use. Larger hides latency, costs GPU memory.",
        stages=_STAGE3,
    )
    param_persistence_threshold: int = ds_field(
        100_000,
        ge=0,
        unit="elements",
        alias="stage3_param_persistence_threshold",
        hf_auto=True,
        description="Parameters smaller than this are not partitioned (kept whole on every GPU). Smaller "
        "values save memory but add many small, latency-bound messages.",
        stages=_STAGE3,
    )
    model_persistence_threshold: int = ds_field(
        sys.maxsize,
        ge=0,
        unit="elements",
        alias="stage3_model_persistence_threshold",
        description="Upper bound on the total elements kept unpartitioned by `param_persistence_threshold`.",
        stages=_STAGE3,
    )
    max_live_parameters: int = ds_field(
        1_000_000_000,
        ge=0,
        unit="elements",
        alias="stage3_max_live_parameters",
        description="Maximum parameter elements resident per GPU before ZeRO-3 releases them. Smaller uses "
        "less memory and more communication.",
        stages=_STAGE3,
    )
    max_reuse_distance: int = ds_field(
        1_000_000_000,
        ge=0,
        unit="elements",
        alias="stage3_max_reuse_distance",
        description="Keep a parameter if it will be reused within this many elements of computation.",
        stages=_STAGE3,
    )
    gather_16bit_weights_on_model_save: bool = ds_field(
        False,
        alias="stage3_gather_16bit_weights_on_model_save",
        hf_auto=True,
        description="Gather the partitioned 16-bit weights when saving with `save_16bit_model()` "
        "(needed to save a usable model file with stage 3; slow and memory hungry for huge models).",
        stages=_STAGE3,
    )
    module_granularity_threshold: int = ds_field(
        0,
        alias="stage3_module_granularity_threshold",
        description="Modules with fewer parameters per descendant than this are fetched as one unit; "
        "reduces hook overhead for fine-grained models. 0 disables.",
        stages=_STAGE3,
    )
    use_all_reduce_for_fetch_params: bool = ds_field(
        False,
        alias="stage3_use_all_reduce_for_fetch_params",
        description="Fetch module parameters with all-reduce instead of all-gather.",
        stages=_STAGE3,
    )
    allgather_sequential: bool = ds_field(
        False,
        alias="stage3_allgather_sequential",
        description="All-gather parameters one by one, bypassing bucketing: less copying and lower peak "
        "memory, for memory-pressured runs.",
        stages=_STAGE3,
    )
    stage3_gather_fp16_weights_on_model_save: bool = ds_field(
        False,
        deprecated=True,
        replaced_by="gather_16bit_weights_on_model_save",
        description="Deprecated: use `stage3_gather_16bit_weights_on_model_save`.",
        stages=_STAGE3,
    )
    ignore_unused_parameters: bool = ds_field(
        True,
        description="Do not fail when some parameters get no gradient (dynamic networks). Stage 2 only.",
        stages=(2,),
    )
    legacy_stage1: bool = ds_field(
        False, description="Old ZeRO-1 implementation, for backward compatibility only.", stages=(1,)
    )
    round_robin_gradients: bool = ds_field(
        False,
        description="Stage 1/2 with CPU offload: spread gradient copies to the CPU over ranks. Helps with "
        "many accumulation steps or many GPUs.",
        stages=(1, 2),
    )
    parameter_alignment: bool = ds_field(
        False,
        added="0.19.8",
        description="Align every parameter in the stage-1/2 flat buffers to 16 bytes (costs padding memory).",
        stages=(1, 2),
    )
    zero_hpz_partition_size: int = ds_field(
        1,
        ge=0,
        description="ZeRO++ hpZ: size of the secondary (intra-node) partition of the parameters. Set to the "
        "GPUs per node to keep a copy per node and all-gather within the node. 1 disables.",
        stages=_STAGE3,
    )
    zero_quantized_weights: bool = ds_field(
        False, description="ZeRO++ qwZ: quantize weights to int8 for the all-gather.", stages=_STAGE3
    )
    zero_quantized_nontrainable_weights: bool = ds_field(
        False,
        description="Store non-trainable weights quantized (saves memory and communication; for LoRA).",
        stages=_STAGE3,
    )
    zero_quantized_gradients: bool = ds_field(
        False, description="ZeRO++ qgZ: quantize gradients for an all-to-all reduce.", stages=_STAGE3
    )
    memory_efficient_linear: bool = ds_field(
        True, description="Memory-efficient linear layer implementation for stage 3.", stages=_STAGE3
    )
    pipeline_loading_checkpoint: bool = ds_field(
        False, description="Load the checkpoint in pipeline mode (stage 3).", stages=_STAGE3
    )
    override_module_apply: bool = ds_field(
        True, description="Override `nn.Module.apply` so it sees gathered parameters (stage 3).", stages=_STAGE3
    )
    log_trace_cache_warnings: bool = ds_field(
        False, description="Log warnings from ZeRO-3's trace cache (invalidations).", stages=_STAGE3
    )
    enable_sanity_checks: bool = ds_field(False, description="Internal sanity checks, for debugging.")
    save_muon_momentum_buffer_in_memory: bool = ds_field(
        False,
        description="With the Muon optimizer and NVMe offload, keep Muon's momentum in memory.",
        stages=_STAGE3,
    )
    leaf_module: LeafModuleConfig = ds_field(
        default_factory=LeafModuleConfig,
        description="Modules ZeRO-3 treats as leaves (fetched as a whole, e.g. MoE blocks).",
        stages=_STAGE3,
    )
    # Fields only DeepSpeed 0.19.5 knows (0.19.8 rejects them with a "removed" error).
    mics_shard_size: int = ds_field(
        -1,
        removed="0.19.8",
        removed_message=(
            "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_shard_size' is no longer supported."
        ),
        description="MiCS: shard size (removed in 0.19.8).",
        stages=_STAGE3,
    )
    mics_hierarchical_params_gather: bool = ds_field(
        False,
        removed="0.19.8",
        removed_message=(
            "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_hierarchical_params_gather'"
            " is no longer supported."
        ),
        description="MiCS hierarchical all-gather (removed in 0.19.8).",
        stages=_STAGE3,
    )
    zeropp_loco_param: dict | None = ds_field(
        None,
        removed="0.19.8",
        removed_message=(
            "LoCo-Zero++ has been removed; 'zero_optimization.zeropp_loco_param' is no longer "
            "supported. Remove this key to use standard ZeRO++ quantized gradients without LoCo error "
            "feedback."
        ),
        description="ZeRO++ LoCo parameters (removed in 0.19.8).",
        stages=_STAGE3,
    )

    @field_validator("leaf_module", mode="before")
    @classmethod
    def _leaf_module_none_is_empty(cls, value: object) -> object:
        return {} if value is None else value

    @model_validator(mode="after")
    def _compute_grad_norm_valid(self) -> ZeroConfig:
        if not self.compute_grad_norm and self.stage not in (1, 2):
            raise pointed_error("compute_grad_norm=false is supported only with ZeRO Stage 1 or 2", "compute_grad_norm",
                                "Remove compute_grad_norm (true, the default), or use ZeRO stage 1 or 2.")
        return self

    @model_validator(mode="after")
    def _offload_ratio_check(self) -> ZeroConfig:
        if self.offload_optimizer is not None and self.offload_optimizer.ratio < 1.0 and self.stage != 3:
            raise pointed_error("Partial offloading only supported for ZeRO Stage 3.", "offload_optimizer.ratio",
                                "Remove ratio (the whole optimizer offloaded, the default), or use ZeRO stage 3.")
        return self
