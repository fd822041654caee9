"""Sections only DeepSpeed 0.19.5 parses; 0.19.8 rejects each of them on mere presence.

Read from the 0.19.5 source (``runtime/config.py``, ``runtime/constants.py``, ``elasticity/``,
``nebula/``, ``compression/``, ``runtime/data_pipeline/``). All are read with ``dict.get``
(lenient). The root fields holding them carry ``removed="0.19.8"``; the fields here carry it too, so
the app never offers them for 0.19.8.

Some of these sections fail in 0.19.5 while the config is parsed, and the validators below reproduce
that with DeepSpeed's own messages: ``amp``, ``progressive_layer_drop`` and the legacy
``curriculum_learning`` need an ``enabled`` key (DeepSpeed pops it: ``KeyError: 'enabled'``), and an
enabled ``elasticity`` block is checked by ``ElasticityConfig``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, model_validator

from core.schema.advanced import CurriculumScheduleConfig
from core.schema.base import META_KEY, LenientSection, OpenSection, ds_field, pointed_error

_GONE = "0.19.8"


def _gone(default: Any = ..., *, description: str, **meta: Any) -> Any:
    """A field DeepSpeed 0.19.8 removed (``ds_field`` with ``removed=_GONE``)."""
    return ds_field(default, description=description, removed=_GONE, **meta)

_RAISES = {META_KEY: {"kind": "lenient", "raises": "config"}}


def _require_enabled_key(data: Any, section: str) -> Any:
    # Every release that reads the section copies it and pops "enabled" without a default (0.16.9 to 0.19.7).
    if isinstance(data, dict) and "enabled" not in data:
        raise ValueError(
            f"DeepSpeed fails with KeyError: 'enabled' when `{section}` has no `enabled` key; "
            'add "enabled": true or false'
        )
    return data


# --------------------------------------------------------------------------------------------------
# amp
# --------------------------------------------------------------------------------------------------


class AmpConfig(OpenSection):
    """NVIDIA Apex AMP (removed in 0.19.8). Every key besides `enabled` is passed to `apex.amp.initialize`
    (e.g. `opt_level`). Not compatible with ZeRO or `fp16`."""

    model_config = ConfigDict(json_schema_extra={META_KEY: {"kind": "lenient", "open": True, "raises": "config"}})

    enabled: bool = _gone(
        False,
        description="Use Apex AMP. Needs NVIDIA Apex installed; the engine refuses it together with ZeRO "
        '("Amp and ZeRO are not currently compatible"). Required key in 0.19.5.',
    )
    opt_level: str | None = _gone(
        None,
        choices=("O0", "O1", "O2", "O3"),
        widget="select",
        description='Apex AMP optimisation level (passed to amp.initialize): O1 mixed precision, O2 "almost fp16".',
    )

    @model_validator(mode="before")
    @classmethod
    def _enabled_required(cls, data: Any) -> Any:
        return _require_enabled_key(data, "amp")


# --------------------------------------------------------------------------------------------------
# elasticity
# --------------------------------------------------------------------------------------------------


class ElasticityConfig(LenientSection):
    """Elastic training (removed in 0.19.8): DeepSpeed picks a global batch size that works for a range of
    GPU counts, so a scheduler can grow or shrink the job. It then controls the batch size itself."""

    model_config = ConfigDict(json_schema_extra=_RAISES)

    enabled: bool = _gone(False, description="Turn elastic training on.")
    max_train_batch_size: int = _gone(
        2000,
        unit="samples",
        description="Largest acceptable global batch size. Required when enabled.",
    )
    micro_batch_sizes: list[int] = _gone(
        default_factory=lambda: [2, 4, 6],
        description="Acceptable micro batch sizes per GPU (positive integers). Required when enabled.",
    )
    min_gpus: int = _gone(1, description="Fewest GPUs to consider (≥ 1).")
    max_gpus: int = _gone(10000, description="Most GPUs to consider (≥ min_gpus).")
    min_time: int = _gone(0, description="Minutes to run before the scheduler may scale again (v0.1 only; 0: unknown).")
    prefer_larger_batch: bool = _gone(
        True,
        description="Prefer the batch size closest to `max_train_batch_size`.",
        doc_note="The docs spell it `prefer_large_batch`; DeepSpeed reads `prefer_larger_batch`.",
    )
    prefer_large_batch: bool | None = _gone(
        None,
        deprecated=True,
        replaced_by="prefer_larger_batch",
        ignored=True,
        description="Misspelling from the docs; DeepSpeed ignores it. Use `prefer_larger_batch`.",
    )
    ignore_non_elastic_batch_info: bool = _gone(
        False,
        description="Allow (and silently ignore) train_batch_size / train_micro_batch_size_per_gpu / "
        "gradient_accumulation_steps elsewhere in the config; otherwise their presence is an error.",
    )
    version: float = _gone(
        0.2, description="Elasticity algorithm version: 0.1 or 0.2 (0.2 supports model parallelism)."
    )
    num_gpus_per_node: int = _gone(1, description="GPUs per node (v0.2, model parallelism).")
    model_parallel_size: int = _gone(1, description="Model-parallel degree (v0.2 only).")

    @model_validator(mode="before")
    @classmethod
    def _elasticity_rules(cls, data: Any) -> Any:
        # ElasticityConfig.__init__ and the start of compute_elastic_config (0.16.9-0.19.7), only when enabled, on
        # the values as written: DeepSpeed reads them with dict.get and compares them as they are, so "64" fails
        # where pydantic would convert it, and one wrongly typed field must not hide these checks.
        if not isinstance(data, dict) or not data.get("enabled", False):
            return data
        for key in ("max_train_batch_size", "micro_batch_sizes"):
            if key not in data:
                raise ValueError(f"Elasticity config missing {key}")
        micro = data["micro_batch_sizes"]
        if not isinstance(micro, list):
            raise ValueError(f"Elasticity expected value of micro_batch_sizes to be a list of micro batches, "
                             f"instead is: {type(micro).__name__}")
        if not all(isinstance(m, int) for m in micro):
            raise ValueError(f"Elasticity expected micro_batch_sizes to only contain a list of integers, instead "
                             f"contains: f{micro}")  # DeepSpeed's own words, its stray "f" included
        if micro and all(isinstance(m, bool) for m in micro):  # DeepSpeed's isinstance(m, int) lets them through
            raise ValueError(f"Elasticity micro_batch_sizes holds only booleans ({micro}): DeepSpeed's search takes "
                             "their least common multiple with numpy, which refuses booleans (UFuncTypeError); "
                             "write micro batch sizes as numbers")
        if not all(m > 0 for m in micro):
            raise ValueError(f"Elasticity expected micro_batch_sizes to only contain positive integers, instead "
                             f"contains: f{micro}")
        numbers = {key: data.get(key, default) for key, default in (
            ("max_train_batch_size", 2000), ("min_gpus", 1), ("max_gpus", 10000), ("model_parallel_size", 1),
            ("num_gpus_per_node", 1), ("min_time", 0))}
        for key, value in numbers.items():
            if not isinstance(value, int | float):
                raise ValueError(f"elasticity.{key} is {value!r}: DeepSpeed computes with it as written and fails "
                                 "(TypeError); write a number")
        min_gpus, max_gpus = numbers["min_gpus"], numbers["max_gpus"]
        model_parallel, per_node = numbers["model_parallel_size"], numbers["num_gpus_per_node"]
        if min_gpus < 1 or max_gpus < 1:
            raise ValueError(f"Elasticity min/max gpus must be > 0, given min_gpus: {min_gpus}, max_gpus: {max_gpus}")
        if max_gpus < min_gpus:
            raise ValueError(f"Elasticity min_gpus cannot be greater than max_gpus, given min_gpus: {min_gpus}, "
                             f"max_gpus: {max_gpus}")
        if model_parallel < 1:
            raise ValueError(f"Model-Parallel size cannot be less than 1, given model-parallel size: {model_parallel}")
        if per_node < 1:
            raise ValueError(f"Number of GPUs per node cannot be less than 1, given number of GPUs per node: "
                             f"{per_node}")
        if numbers["min_time"] < 0:
            raise ValueError(f"Elasticity min time needs to be >= 0: given {numbers['min_time']}")
        try:
            version = float(data.get("version", 0.2))
        except (TypeError, ValueError):
            raise ValueError(f"elasticity.version is {data.get('version')!r}: write 0.1 or 0.2") from None
        if model_parallel > 1 and version != 0.2:
            raise ValueError(f"Elasticity V{version} does not support model-parallel training. Given model-parallel "
                             f"size: {model_parallel}")
        if version > 0.2:
            raise ValueError(f"Attempting to run elasticity version {version} but runtime only supports up to 0.2")
        if version not in (0.1, 0.2):
            raise ValueError(f"Unable to find elastic logic for version: {version} (write 0.1 or 0.2)")
        if not micro:
            raise ValueError("micro_batch_sizes is empty: DeepSpeed computes their least common multiple and fails")
        largest = numbers["max_train_batch_size"]
        if version == 0.2:  # _get_compatible_gpus_v02 works per node of data-parallel ranks
            if per_node % model_parallel:
                raise ValueError(f"In Elasticity v0.2, number of GPUs per node:{per_node} should be divisible by "
                                 f"model parallel size {model_parallel}")
            largest = int(largest / (per_node // model_parallel))
        if not all(m <= largest for m in micro):
            raise ValueError(f"All micro batches must be less than or equal to max_acceptable_batch_size: {largest}")
        return data


# --------------------------------------------------------------------------------------------------
# sparse attention
# --------------------------------------------------------------------------------------------------

SparseMode = Literal["dense", "fixed", "variable", "bigbird", "bslongformer"]


class SparseAttentionConfig(LenientSection):
    """Block-sparse attention kernels (removed in 0.19.8). Which keys apply depends on `mode`."""

    model_config = ConfigDict(json_schema_extra=_RAISES)

    mode: SparseMode = _gone(
        "fixed",
        widget="select",
        description="Sparsity layout: dense, fixed, variable, bigbird or bslongformer. Any other value fails "
        '("Given sparsity mode, X, has not been implemented yet!").',
        raises="config",
    )
    block: int = _gone(16, description="Block size of the sparse layout (all modes).")
    different_layout_per_head: bool = _gone(
        False, description="A different layout per attention head (all modes but dense)."
    )
    num_local_blocks: int = _gone(4, description="Local blocks per window (fixed).")
    num_global_blocks: int = _gone(1, description="Global blocks (fixed, bigbird).")
    attention: Literal["bidirectional", "unidirectional"] = _gone(
        "bidirectional",
        widget="select",
        description="Attention type: bidirectional (encoders) or unidirectional (decoders) (fixed, variable).",
    )
    horizontal_global_attention: bool = _gone(
        False,
        description="Global blocks also attend horizontally (fixed, variable; bidirectional only).",
    )
    num_different_global_patterns: int = _gone(1, description="Number of different global patterns (fixed).")
    num_random_blocks: int = _gone(0, description="Random blocks per row (variable, bigbird).")
    local_window_blocks: list[int] = _gone(
        default_factory=lambda: [4], description="Sizes of the local windows in blocks (variable)."
    )
    global_block_indices: list[int] = _gone(
        default_factory=lambda: [0],
        description="Indices of the global blocks (variable, bslongformer).",
    )
    global_block_end_indices: list[int] | None = _gone(
        None, description="End indices of global block ranges (variable, bslongformer)."
    )
    num_sliding_window_blocks: int = _gone(3, description="Blocks in the sliding window (bigbird, bslongformer).")


# --------------------------------------------------------------------------------------------------
# nebula
# --------------------------------------------------------------------------------------------------


class NebulaConfig(LenientSection):
    """Azure Nebula fast checkpointing (removed in 0.19.8; a leftover block in 0.19.8 is an error)."""

    enabled: bool = _gone(False, description="Use Nebula for checkpointing.")
    persistent_storage_path: str | None = _gone(None, widget="path", description="Where Nebula persists checkpoints.")
    persistent_time_interval: int = _gone(100, unit="seconds", description="Interval between persisting checkpoints.")
    num_of_version_in_retention: int = _gone(2, description="Checkpoint versions kept.")
    enable_nebula_load: bool = _gone(True, description="Load checkpoints through Nebula.")
    nebula_load_path: str | None = _gone(None, widget="path", description="Path Nebula loads checkpoints from.")


# --------------------------------------------------------------------------------------------------
# compression
# --------------------------------------------------------------------------------------------------


class CompressionGroupParams(LenientSection):
    """Technique parameters of one compression group (which apply depends on the technique)."""

    start_bits: int | None = _gone(
        None,
        description="Weight quantization: bits at the start of training. Required for weight quantization.",
    )
    target_bits: int | None = _gone(
        None,
        description="Weight quantization: bits reached at the end. Required for weight quantization.",
    )
    quantization_period: int = _gone(1, unit="steps", description="Weight quantization: steps between bit reductions.")
    bits: int | None = _gone(None, description="Activation quantization: bits. Required for activation quantization.")
    dense_ratio: float | None = _gone(
        None,
        description="Pruning: fraction of weights/rows/heads/channels kept. Required for pruning groups.",
    )


class CompressionGroupConfig(LenientSection):
    """One group of `different_groups`: its technique parameters and the modules it applies to."""

    params: CompressionGroupParams = _gone(
        default_factory=CompressionGroupParams,
        description="Technique parameters of this group (e.g. start_bits/target_bits, dense_ratio).",
    )
    modules: list[str] = _gone(default_factory=lambda: ["*"], description="Module name patterns the group applies to "
                               "(regular expressions searched in module names). Write them: DeepSpeed's default "
                               "\"*\" is no regular expression and fails at deepspeed.initialize.")
    related_modules: list[list[str]] | None = _gone(
        None, description="Modules pruned together with each module (channel/head pruning)."
    )


class LayerReductionConfig(LenientSection):
    """Layer reduction: keep only some layers of a (teacher) model."""

    enabled: bool = _gone(False, description="Turn layer reduction on.")
    keep_number_layer: int | None = _gone(None, description="Number of layers to keep.")
    module_name_prefix: str | None = _gone(
        None, description="Name prefix of the layer modules (e.g. bert.encoder.layer)."
    )
    teacher_layer: list[int] | None = _gone(None, description="Teacher layers used to initialise the kept layers.")
    other_module_name: list[str] | None = _gone(None, description="Other modules to initialise from the teacher.")


class FP16MixedQuantizeConfig(LenientSection):
    """Mix fp16 and quantized weights while quantizing."""

    enabled: bool = _gone(False, description="Turn fp16 mixed quantization on.")
    quantize_change_ratio: float = _gone(
        0.001, description="Ratio of the change from fp16 to quantized weights per step."
    )


class WeightQuantizationSharedConfig(LenientSection):
    """Shared parameters of weight quantization."""

    enabled: bool = _gone(False, description="Quantize weights. Needs `different_groups`.")
    quantizer_kernel: bool = _gone(False, description="Use the CUDA quantizer kernel.")
    # as_written="forward" (here and in the other techniques): the compression scheduler compares the step with it
    # (`training_steps >= schedule_offset`) from the first forward pass on, when the technique is on; compared=True:
    # a bool or a float compares like a number
    schedule_offset: int = _gone(0, unit="steps", as_written="forward", compared=True,
                                 description="Step at which quantization starts.")
    quantize_groups: int = _gone(1, description="Quantization groups per tensor.")
    quantize_verbose: bool = _gone(False, description="Log the quantization.")
    quantization_type: Literal["symmetric", "asymmetric"] = _gone(
        "symmetric", widget="select", raises="config", description="Symmetric or asymmetric."
    )
    rounding: Literal["nearest", "stochastic"] = _gone(
        "nearest", widget="select", raises="config", description="Rounding mode."
    )
    quantize_weight_in_forward: bool = _gone(
        False, description="Quantize in the forward pass instead of in the optimizer step."
    )
    fp16_mixed_quantize: FP16MixedQuantizeConfig = _gone(
        default_factory=FP16MixedQuantizeConfig, raises="config",  # read with .get whenever the block is read
        description="fp16 mixed quantization.",
    )


class ActivationQuantizationSharedConfig(LenientSection):
    """Shared parameters of activation quantization."""

    enabled: bool = _gone(False, description="Quantize activations. Needs `different_groups`.")
    quantization_type: Literal["symmetric", "asymmetric"] = _gone(
        "symmetric", widget="select", raises="config", description="Symmetric or asymmetric."
    )
    range_calibration: Literal["dynamic", "static"] = _gone(
        "dynamic", widget="select", raises="config", description="Range calibration."
    )
    schedule_offset: int = _gone(1000, unit="steps", as_written="forward", compared=True,
                                 description="Step at which it starts.")


class SparsePruningSharedConfig(LenientSection):
    """Shared parameters of sparse pruning."""

    enabled: bool = _gone(False, description="Prune weights sparsely. Needs `different_groups`.")
    method: Literal["l1", "topk", "snip_momentum"] = _gone(
        "l1", widget="select", raises="config", description="Pruning method."
    )
    schedule_offset: int = _gone(1000, unit="steps", as_written="forward", compared=True,
                                 description="Step at which pruning starts.")
    schedule_offset_end: int | None = _gone(
        None, unit="steps", description="snip_momentum: end step (≥ schedule_offset; unset: same)."
    )
    schedule_offset_stride: int = _gone(1, description="snip_momentum: stride of the schedule.")
    block_pattern: str = _gone("4x1", description="snip_momentum: block pattern, e.g. 4x1.")
    dense_ratio: float = _gone(
        0.1, description="snip_momentum: fraction kept (0 < r < 1; read only with that method)."
    )
    excluded_modules: list[str] = _gone(default_factory=list, description="snip_momentum: modules never pruned.")

    @model_validator(mode="before")
    @classmethod
    def _snip_momentum(cls, data: Any) -> Any:
        # get_sparse_pruning_shared_parameters reads dense_ratio and schedule_offset_end only for snip_momentum, as
        # written (get_scalar_param), and asserts `0 < dense_ratio < 1` and `schedule_offset <= schedule_offset_end`
        # (the end defaults to the start); a value Python cannot compare stops it too (TypeError)
        if not isinstance(data, dict) or data.get("method", "l1") != "snip_momentum":
            return data
        ratio = data.get("dense_ratio", 0.1)
        if not (isinstance(ratio, int | float) and 0 < ratio < 1):
            raise pointed_error("Invalid dense_ratio value. Must be less than 1", "dense_ratio",
                                "Write the fraction of weights kept, a number between 0 and 1 (e.g. 0.1).")
        start = data.get("schedule_offset", 1000)
        end = data.get("schedule_offset_end", start)
        try:
            ordered = bool(start <= end)
        except TypeError:
            ordered = False
        if not ordered:
            raise pointed_error("Invalid schedule_offset and schedule_offset_end values",
                                "schedule_offset_end" if "schedule_offset_end" in data else "schedule_offset",
                                "Write both as whole numbers of steps, the end at or after the start.")
        return data


class PruningSharedConfig(LenientSection):
    """Shared parameters of row and channel pruning."""

    enabled: bool = _gone(False, description="Turn this pruning on. Needs `different_groups`.")
    method: Literal["l1", "topk"] = _gone(
        "l1", widget="select", raises="config", description="Pruning method: l1 or topk."
    )
    schedule_offset: int = _gone(1000, unit="steps", as_written="forward", compared=True,
                                 description="Step at which pruning starts.")


class HeadPruningSharedConfig(PruningSharedConfig):
    """Shared parameters of head pruning."""

    @model_validator(mode="before")
    @classmethod
    def _num_heads_when_enabled(cls, data: Any) -> Any:
        # get_head_pruning_shared_parameters: `if enabled: assert num_heads in sub_param_dict.keys()`
        if isinstance(data, dict) and data.get("enabled") and "num_heads" not in data:
            raise ValueError("num_heads must be specified for head pruning (DeepSpeed asserts it when head pruning "
                             "is enabled): add the model's attention head count")
        return data

    method: Literal["l1", "topk"] = _gone(
        "topk", widget="select", raises="config", description="Pruning method: topk or l1."
    )
    num_heads: int | None = _gone(None, description="Number of attention heads. Required when enabled.")


def _technique(shared: type[LenientSection], what: str, required: tuple[str, ...]) -> Any:
    class Technique(LenientSection):
        @model_validator(mode="before")
        @classmethod
        def _groups_params(cls, data: Any) -> Any:
            # get_<technique>_different_groups indexes every group's params and asserts the technique's own keys
            # in them, whether the technique is enabled or not
            groups = data.get("different_groups") if isinstance(data, dict) else None
            for name, group in (groups.items() if isinstance(groups, dict) else ()):
                if not isinstance(group, dict):
                    continue
                if "params" not in group:
                    raise ValueError(f"{what} group {name!r} has no params; DeepSpeed reads them (KeyError: "
                                     f"'params'): add \"params\": {{...}} with {', '.join(required)}")
                params = group["params"]
                if not isinstance(params, dict):
                    raise ValueError(f"{what} group {name!r}: params is {params!r}; DeepSpeed reads its keys "
                                     "(AttributeError): write an object")
                missing = [key for key in required if key not in params]
                if missing:
                    raise ValueError(f"{' and '.join(missing)} must be specified for {what} group {name!r} "
                                     "(DeepSpeed asserts it while reading the config, enabled or not)")
            return data

        shared_parameters: shared = _gone(
            default_factory=shared, raises="config",  # read with .get and asserted on whenever it is written
            description=f"Parameters shared by all {what} groups.",
        )
        different_groups: dict[str, CompressionGroupConfig] = _gone(
            default_factory=dict,
            widget="json",
            raises="config",  # iterated with .items() while the config is parsed
            description=f"Named {what} groups, each with `params` and `modules`. Required when enabled.",
        )

    Technique.__name__ = Technique.__qualname__ = shared.__name__.replace("SharedConfig", "TechniqueConfig")
    Technique.__doc__ = f"{what.capitalize()} (compression)."
    return Technique


WeightQuantizationCompressionConfig = _technique(WeightQuantizationSharedConfig, "weight quantization",
                                                 ("start_bits", "target_bits"))
ActivationQuantizationConfig = _technique(ActivationQuantizationSharedConfig, "activation quantization", ("bits",))
SparsePruningConfig = _technique(SparsePruningSharedConfig, "sparse pruning", ("dense_ratio",))
PruningConfig = _technique(PruningSharedConfig, "pruning", ("dense_ratio",))
HeadPruningConfig = _technique(HeadPruningSharedConfig, "head pruning", ("dense_ratio",))


def _part(model: type[LenientSection], description: str) -> Any:
    """A part of compression_training: read with .keys() / .get, so anything but an object fails while parsing."""
    return _gone(default_factory=model, raises="config", description=description)


class CompressionTrainingConfig(LenientSection):
    """DeepSpeed Compression (removed in 0.19.8): quantization-aware training, pruning and layer reduction."""

    model_config = ConfigDict(json_schema_extra=_RAISES)

    @model_validator(mode="before")
    @classmethod
    def _groups_of_each_written_technique(cls, data: Any) -> Any:
        # compression/config.py get_<technique>_different_groups: param_dict[DIFFERENT_GROUPS] for every technique
        # that is written, enabled or not (KeyError: 'different_groups').
        if isinstance(data, dict):
            for name, section in data.items():
                field = cls.model_fields.get(name)
                model = getattr(field, "annotation", None) if field is not None else None
                if isinstance(section, dict) and "different_groups" in getattr(model, "model_fields", {}) \
                        and "different_groups" not in section:
                    raise ValueError(
                        f"compression_training.{name} has no different_groups; DeepSpeed reads it whenever "
                        f"{name} is written (KeyError: 'different_groups'): add \"different_groups\": {{}} "
                        "or remove the section"
                    )
        return data

    weight_quantization: WeightQuantizationCompressionConfig = _part(
        WeightQuantizationCompressionConfig, "Weight quantization."
    )
    shared_parameters: WeightQuantizationSharedConfig = _part(
        WeightQuantizationSharedConfig,
        "Not a setting of its own: releases up to 0.19.6 read this block, by mistake, as weight quantization's "
        "shared parameters when deciding whether to read the MoQ eigenvalue settings (`get_quantize_enabled`). "
        "Switched on, it stops the parse of releases up to 0.19.2 (NameError) and of 0.19.3-0.19.6 when "
        "`quantize_training.eigenvalue` is on. Weight quantization's settings belong in "
        "`weight_quantization.shared_parameters`.",
    )
    activation_quantization: ActivationQuantizationConfig = _part(
        ActivationQuantizationConfig, "Activation quantization."
    )
    sparse_pruning: SparsePruningConfig = _part(SparsePruningConfig, "Sparse pruning.")
    row_pruning: PruningConfig = _part(PruningConfig, "Row pruning.")
    head_pruning: HeadPruningConfig = _part(HeadPruningConfig, "Head pruning.")
    channel_pruning: PruningConfig = _part(PruningConfig, "Channel pruning.")
    layer_reduction: LayerReductionConfig = _part(LayerReductionConfig, "Layer reduction.")


# --------------------------------------------------------------------------------------------------
# MoQ: quantize_training / eigenvalue
# --------------------------------------------------------------------------------------------------


class EigenvalueConfig(LenientSection):
    """Eigenvalue computation for MoQ (removed in 0.19.8)."""

    enabled: bool = _gone(
        False,
        description="Compute eigenvalues of the parameter blocks to adapt the MoQ schedule.",
        doc_note="The docs show a top-level `eigenvalue` block; DeepSpeed 0.19.5 only reads "
        "`quantize_training.eigenvalue` (and only with compression weight quantization on), and then "
        'asserts it is disabled ("Eigenvalue based MoQ is temporarily disabled"). A top-level block is '
        "ignored by 0.19.5 and rejected by 0.19.8.",
    )
    verbose: bool = _gone(False, description="Print the eigenvalues.")
    max_iter: int = _gone(100, description="Maximum power iterations.")
    tol: float = _gone(1e-2, description="Convergence tolerance.")
    stability: float = _gone(1e-6, description="Numerical stability term.")
    gas_boundary_resolution: int = _gone(1, description="Compute every N accumulation boundaries.")
    layer_name: str = _gone("bert.encoder.layer", description="Name prefix of the layers.")
    layer_num: int = _gone(0, description="Number of layers.")


class QuantizeTrainingConfig(LenientSection):
    """MoQ (mixture-of-quantization) training settings (removed in 0.19.8). 0.19.5 only reads
    `eigenvalue` from here."""

    eigenvalue: EigenvalueConfig | None = _gone(None, description="Eigenvalue settings of MoQ.")


# --------------------------------------------------------------------------------------------------
# legacy curriculum learning, progressive layer drop
# --------------------------------------------------------------------------------------------------


class CurriculumLearningLegacyConfig(LenientSection):
    """The old top-level curriculum learning (removed in 0.19.8; use `data_efficiency`)."""

    model_config = ConfigDict(json_schema_extra=_RAISES)

    enabled: bool = _gone(False, description="Turn legacy curriculum learning on. Required key in 0.19.5.")
    curriculum_type: str | None = _gone(
        None,
        choices=("seqlen",),
        description="What the difficulty is; `seqlen` truncates sequences (the engine handles it).",
    )
    min_difficulty: int | None = _gone(None, description="Difficulty at the first step.")
    max_difficulty: int | None = _gone(None, description="Final difficulty.")
    schedule_type: str | None = _gone(
        None,
        choices=("fixed_linear", "fixed_root", "fixed_discrete", "custom"),
        widget="select",
        description="Pacing function.",
    )
    schedule_config: CurriculumScheduleConfig | None = _gone(None, description="Parameters of the pacing function.")

    @model_validator(mode="before")
    @classmethod
    def _enabled_required(cls, data: Any) -> Any:
        return _require_enabled_key(data, "curriculum_learning")


class ProgressiveLayerDropConfig(LenientSection):
    """Progressive layer drop (removed in 0.19.8): skip transformer layers stochastically, more as
    training progresses (needs model support)."""

    model_config = ConfigDict(json_schema_extra=_RAISES)

    enabled: bool = _gone(False, description="Turn PLD on. Required key in 0.19.5.")
    # no defaults in DeepSpeed: switched on, the engine reads both with config[key] (core.rules.misc.progressive_
    # layer_drop) and computes the keep probability with them as written at every optimizer step
    theta: float = _gone(1.0, as_written="step", auto="fails",
                         description="Final keep probability (required when PLD is on; the examples use 0.5).")
    gamma: float = _gone(0.001, as_written="step", auto="fails",
                         description="Decay rate of the keep probability (required when PLD is on; e.g. 0.001).")

    @model_validator(mode="before")
    @classmethod
    def _enabled_required(cls, data: Any) -> Any:
        return _require_enabled_key(data, "progressive_layer_drop")
