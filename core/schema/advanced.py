"""Advanced sections: activation checkpointing, checkpoint I/O, NVMe aio, autotuning, compile, pipeline,
data efficiency, DataStates, AutoEP, hybrid engine, weight quantization, timers, AutoTP training.

Strict ones mirror DeepSpeed 0.19.8's pydantic models (``compile/config.py``, ``runtime/config.py``
HybridEngineConfig, ``inference/config.py`` WeightQuantConfig, ``utils/config.py`` throughput timer,
``runtime/tensor_parallel/config.py``); lenient ones are read with ``dict.get`` (``activation_checkpointing``,
``checkpoint``, ``aio``, ``autotuning``, ``pipeline``, ``data_efficiency``, ``datastates_ckpt``,
``timers``, ``expert_parallel``).

Lenient fields where a wrong value makes DeepSpeed fail while it parses the config carry
``raises="config"`` in their metadata (e.g. ``checkpoint.tag_validation``; a type error there is a real
error, not a warning); ``raises="engine"`` marks values that fail only when ``deepspeed.initialize`` uses
them. Requirements between keys ("enabled needs max_tokens") are section validators or rules, not ``raises``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, ValidationInfo, field_validator, model_validator

from core.schema.base import META_KEY, LenientSection, OpenSection, Section, ds_field, field_meta

#: Class metadata of lenient sections whose validators reproduce errors DeepSpeed raises while parsing.
_RAISES_WHEN_PARSED = {META_KEY: {"kind": "lenient", "raises": "config"}}

# --------------------------------------------------------------------------------------------------
# activation checkpointing (lenient)
# --------------------------------------------------------------------------------------------------


class ActivationCheckpointingConfig(LenientSection):
    """Settings of DeepSpeed's activation checkpointing API (`deepspeed.checkpointing`), used by
    Megatron-style models. HF models use their own `gradient_checkpointing` instead."""

    partition_activations: bool = ds_field(
        False,
        description="Split the saved activations across model-parallel ranks: less memory per GPU, an "
        "all-gather in the backward. Only useful with model (tensor) parallelism.",
    )
    contiguous_memory_optimization: bool = ds_field(
        False,
        description="Copy the checkpointed activations into one pre-allocated buffer to avoid "
        "fragmentation. Needs `number_checkpoints`.",
    )
    cpu_checkpointing: bool = ds_field(
        False,
        description="Move the partitioned activations to CPU memory (with `partition_activations`): "
        "saves GPU memory, costs PCIe transfers.",
    )
    number_checkpoints: int | None = ds_field(
        None, description="Number of activation checkpoints, to size the buffer of `contiguous_memory_optimization`."
    )
    synchronize_checkpoint_boundary: bool = ds_field(
        False, description="Synchronise the device at each checkpoint boundary (debugging/profiling only)."
    )
    profile: bool = ds_field(False, description="Log the forward and backward time of each checkpointed function.")


# --------------------------------------------------------------------------------------------------
# checkpoint (lenient)
# --------------------------------------------------------------------------------------------------


class ParallelWriteConfig(LenientSection):
    """Parallel checkpoint writing."""

    pipeline_stage: bool = ds_field(
        False,
        raises="config",
        description="With pipeline parallelism, let every pipeline stage write its part of the checkpoint in "
        "parallel. Must be true or false (1/0 pass too).",
    )

    @field_validator("pipeline_stage", mode="before")
    @classmethod
    def _true_or_false(cls, value: Any) -> Any:
        # runtime/config.py get_checkpoint_parallel_write_pipeline: `value in [True, False]`.
        if value not in (True, False):
            raise ValueError(
                f"checkpoint::parallel_write::pipeline_stage value of '{value}' is invalid, expecting: true or false"
            )
        return value


class CheckpointWriterConfig(LenientSection):
    """The checkpoint writer (DeepSpeed's fast checkpointing engine)."""

    type: str | None = ds_field(
        "FAST",
        choices=("MOCK", "PYTHON", "FAST"),
        widget="select",
        raises="config",
        description="Writer implementation (case-insensitive): `fast` (asynchronous, pinned buffers), "
        "`python` (plain torch.save) or `mock` (writes nothing; for tests).",
    )
    decoupled: bool = ds_field(False, description="Write in a separate process, decoupled from training.")
    io_buffer_size: int = ds_field(
        64 * 1024**2, unit="bytes", description="Size of the pinned I/O buffer of the fast writer."
    )
    io_buffer_double: bool = ds_field(
        True, description="Double-buffer the writes (overlaps copying and writing; twice the buffer memory)."
    )
    show_statistics: bool = ds_field(False, description="Print write throughput statistics.")
    data_parallel: str | None = ds_field(
        None,
        choices=("REPLICA", "SOCKET", "MACHINE"),
        widget="select",
        raises="config",
        description="Which data-parallel ranks share the writing (case-insensitive): `replica`, `socket` or "
        "`machine`. Unset: rank 0 of each replica writes.",
    )
    io_multiplier: int = ds_field(1, description="Multiplier of the I/O parallelism of the fast writer.")

    @field_validator("type", "data_parallel", mode="before")
    @classmethod
    def _known_value(cls, value: Any, info: ValidationInfo) -> Any:
        # model_checkpointing/config.py: upper-cased, then checked against the allowed list.
        if isinstance(value, str):
            allowed = list(field_meta(cls.model_fields[info.field_name]).choices or ())
            if value.upper() not in allowed:
                raise ValueError(
                    f"writer contains invalid value {value.upper()} for {info.field_name}, expecting one of {allowed}"
                )
        return value


class CheckpointConfig(LenientSection):
    """Checkpoint saving and loading."""

    tag_validation: str = ds_field(
        "Warn",
        choices=("Warn", "Ignore", "Fail"),
        widget="select",
        raises="config",
        description="Check that all ranks save/load the same checkpoint tag (case-insensitive): `Warn` "
        "logs a mismatch, `Fail` stops, `Ignore` skips the check. Useful when restoring with a different "
        "world size.",
    )
    load_universal: bool = ds_field(
        False,
        description="Load a Universal Checkpoint (converted with `ds_to_universal`), e.g. to resume on a "
        "different number of GPUs or parallelism layout.",
    )
    use_node_local_storage: bool = ds_field(
        False,
        description="Save and load by local rank, so checkpoints work without a shared filesystem (each "
        "node keeps its own part).",
    )
    # Both sub-sections are read with `.get` while the config is parsed: anything but an object fails there.
    parallel_write: ParallelWriteConfig = ds_field(
        default_factory=ParallelWriteConfig, raises="config", description="Parallel checkpoint writing."
    )
    # Both read since 0.17.1 (runtime/model_checkpointing/, absent from the 0.17.0 sdist); the profiles do not
    # record the keys of dict.get sections below the top level, so the release is written here.
    checkpoint_serialization: bool = ds_field(
        True,
        description="Serialise tensors with torch's zip format (false: legacy format, faster for the fast writer).",
        added="0.17.1",
    )
    writer: CheckpointWriterConfig | None = ds_field(
        None, raises="config", added="0.17.1",
        description="Use DeepSpeed's checkpoint writer (e.g. the fast asynchronous one). Unset: torch.save.",
    )

    # --------------------------------------------------------------------------------------------------
    # aio (lenient)
    # --------------------------------------------------------------------------------------------------

    @field_validator("tag_validation", mode="before")
    @classmethod
    def _known_mode(cls, value: Any) -> Any:
        # runtime/config.py get_checkpoint_tag_validation_mode (upper-cased, then checked).
        if isinstance(value, str):
            modes = [c.upper() for c in field_meta(cls.model_fields["tag_validation"]).choices or ()]
            if value.upper() not in modes:
                raise ValueError(
                    f"Checkpoint config contains invalid tag_validation value of {value.upper()}, "
                    f"expecting one of {modes}"
                )
        return value


class AioConfig(LenientSection):
    """Linux asynchronous I/O (libaio) for NVMe offload (ZeRO-Infinity). Tune with
    `ds_nvme_tune` on the target machine."""

    block_size: int = ds_field(
        1048576,
        unit="bytes",
        description="I/O block size. Larger blocks usually reach higher NVMe bandwidth.",
    )
    queue_depth: int = ds_field(8, description="I/O queue depth (requests in flight).")
    intra_op_parallelism: int = ds_field(
        1, description="Threads that split each read/write request (intra-request parallelism)."
    )
    single_submit: bool = ds_field(
        False,
        description="Submit requests one by one instead of as one batch.",
    )
    overlap_events: bool = ds_field(
        True, description="Submit new requests without waiting for earlier ones to complete."
    )
    use_gds: bool = ds_field(
        False,
        description="Use NVIDIA GPUDirect Storage (NVMe ↔ GPU without a CPU bounce buffer). CUDA only; "
        "DeepSpeed fails on other accelerators.",
    )
    thread_count: int | None = ds_field(
        None,
        deprecated=True,
        replaced_by="intra_op_parallelism",
        description="Old name of `intra_op_parallelism`; DeepSpeed 0.19.8 ignores it.",
        doc_note="The docs list `thread_count` (default 1); DeepSpeed reads `intra_op_parallelism` and "
        "silently ignores `thread_count`.",
        ignored=True,
    )


# --------------------------------------------------------------------------------------------------
# autotuning (lenient)
# --------------------------------------------------------------------------------------------------


class ModelInfoConfig(LenientSection):
    """Model facts for the autotuner (skips profiling when given)."""

    profile: bool = ds_field(False, description="Only profile the model (parameters, activations) and stop.")
    num_params: int | None = ds_field(None, description="Number of model parameters.")
    hidden_size: int | None = ds_field(None, description="Hidden size of the model.")
    num_layers: int | None = ds_field(None, description="Number of layers.")


class AutotuningConfig(LenientSection):
    """The DeepSpeed autotuner (`deepspeed --autotuning run ...`): runs short experiments to find the ZeRO
    stage and micro batch size with the best throughput."""

    enabled: bool = ds_field(
        False, description="Turn the autotuner on (used by the `deepspeed --autotuning` launcher)."
    )
    fast: bool = ds_field(
        True, description="Only tune the ZeRO stage and micro batch size (fast); false also tunes other ZeRO knobs."
    )
    results_dir: str = ds_field(
        "autotuning_results",
        widget="path",
        description="Directory for the experiment results. Must not be empty or null.",
        doc_note='The docs give null as the default; DeepSpeed\'s default is "autotuning_results", and null '
        'or "" fails ("results_dir cannot be empty").',
    )
    exps_dir: str = ds_field(
        "autotuning_exps",
        widget="path",
        description="Directory for the experiment descriptions. Must not be empty or null.",
        doc_note='The docs give null as the default; DeepSpeed\'s default is "autotuning_exps", and null '
        'or "" fails ("exps_dir cannot be empty").',
    )
    overwrite: bool = ds_field(
        True,
        description="Re-run experiments whose results already exist (overwriting them).",
        doc_note="The docs give false as the default; DeepSpeed uses true.",
    )
    start_profile_step: int = ds_field(
        3, unit="steps", description="Step at which each experiment starts measuring (after warm-up)."
    )
    end_profile_step: int = ds_field(
        5, unit="steps", description="Step at which each experiment stops measuring (≥ `start_profile_step`)."
    )
    metric: str = ds_field(
        "throughput",
        choices=("throughput", "latency", "flops"),
        widget="select",
        description="What to optimise: `throughput` (samples/s), `latency` (step time) or `flops` (per GPU).",
    )
    metric_path: str | None = ds_field(None, widget="path", description="File the experiments write the metric to.")
    tuner_type: str = ds_field(
        "gridsearch",
        choices=("gridsearch", "random", "model_based"),
        widget="select",
        description="Search order within a ZeRO stage: `gridsearch`, `random` or `model_based`.",
        doc_note="The docs give model_based as the default; DeepSpeed uses gridsearch.",
    )
    tuner_early_stopping: int = ds_field(5, description="Stop after this many experiments without improvement.")
    tuner_num_trials: int = ds_field(50, description="Maximum experiments per ZeRO stage.")
    arg_mappings: dict[str, str] | None = ds_field(
        None,
        widget="json",
        description="Maps DeepSpeed config keys to your script's command-line arguments (when the script "
        "reads e.g. the micro batch size from its own flag).",
    )
    model_info: ModelInfoConfig | None = ds_field(
        None, raises="config", description="Model facts; skips the profiling run."
    )
    model_info_path: str | None = ds_field(None, widget="path", description="File with the model info.")
    mp_size: int = ds_field(1, description="Model-parallel degree of the training job.")
    max_train_batch_size: int | None = ds_field(None, description="Largest global batch size to try. Unset: no limit.")
    min_train_batch_size: int = ds_field(1, description="Smallest global batch size to try.")
    max_train_micro_batch_size_per_gpu: int = ds_field(1024, description="Largest micro batch size per GPU to try.")
    min_train_micro_batch_size_per_gpu: int = ds_field(1, description="Smallest micro batch size per GPU to try.")
    num_tuning_micro_batch_sizes: int = ds_field(3, description="Number of micro batch sizes to explore.")

    @field_validator("results_dir", "exps_dir", mode="before")
    @classmethod
    def _not_empty(cls, value: Any, info: ValidationInfo) -> Any:
        # autotuning/config.py asserts both are truthy.
        if not value:
            raise ValueError(f"{info.field_name} cannot be empty")
        return value


# --------------------------------------------------------------------------------------------------
# compile (strict)
# --------------------------------------------------------------------------------------------------

PassName = Literal["z1", "z3", "autosp", "autotp"]


class CompileConfig(Section):
    """`torch.compile` integration and DeepCompile (compiler-driven ZeRO optimisations). Takes effect when
    you call `engine.compile()`."""

    deepcompile: bool = ds_field(
        False,
        description="Turn on DeepCompile: ZeRO's communication and memory management is applied as "
        "compiler passes on the traced graph.",
    )
    autoep_non_moe: bool = ds_field(
        False,
        added="0.19.8",
        description="With AutoEP: compile the non-MoE parts while the AutoEP layers stay eager.",
    )
    free_activation: bool = ds_field(False, description="Free activations eagerly once they are no longer needed.")
    free_activation_threshold: int = ds_field(
        10 * 1024 * 1024,
        unit="bytes",
        description="With `free_activation`: only activations at least this large are freed eagerly.",
    )
    offload_activation: bool = ds_field(
        False,
        description="Move saved activations to pinned host memory and bring them back before the backward "
        "reads them (only ≥ 5 MB fixed-shape tensors, as many as the memory budget needs). Excludes "
        "`offload_parameters` and `offload_opt_states`.",
    )
    offload_activation_pin_memory: bool = ds_field(
        True,
        added="0.19.8",
        description="Pin the host buffers of `offload_activation` (needed for full-bandwidth async copies). "
        "Turn off only under tight `ulimit -l`.",
    )
    offload_opt_states: bool = ds_field(
        False,
        description="Offload optimizer states to pinned host memory during forward/backward and reload them "
        "for the step. Designed for gradient_accumulation_steps = 1. Excludes `offload_parameters`.",
    )
    double_buffer: bool = ds_field(True, description="Double-buffer parameter prefetching.")
    symmetric_memory: bool = ds_field(False, description="Use symmetric memory for communication buffers.")
    debug_log: bool = ds_field(False, description="Dump the graphs (debugging).")
    offload_parameters: bool = ds_field(False, description="Offload parameters to host memory.")
    sync_before_reduce: bool = ds_field(False, description="Synchronise before each reduce (debugging).")
    sync_after_reduce: bool = ds_field(False, description="Synchronise after each reduce (debugging).")
    sync_before_allgather: bool = ds_field(False, description="Synchronise before each all-gather (debugging).")
    sync_after_allgather: bool = ds_field(False, description="Synchronise after each all-gather (debugging).")
    keep_int_input_tensors: bool = ds_field(
        True, description="Keep the real values of integer input tensors when tracing (instead of dummies)."
    )
    keep_all_input_tensors: bool = ds_field(
        False, description="Keep the real values of all input tensors when tracing."
    )
    passes: list[PassName] | None = ds_field(
        None,
        choices_added={"autotp": "0.19.8"},
        description="DeepCompile passes to compose: `z1` (ZeRO-1), `z3` (ZeRO-3), `autosp` (sequence "
        "parallel), `autotp` (tensor parallel; 0.19.8 only).",
    )


# --------------------------------------------------------------------------------------------------
# pipeline (lenient, any keys)
# --------------------------------------------------------------------------------------------------


class PipelineConfig(OpenSection):
    """Pipeline-parallel engine settings (for `PipelineModule` models). DeepSpeed merges your keys into its
    defaults without checking them; unknown keys are kept."""

    stages: int | Literal["auto"] = ds_field(
        "auto", auto="kept", description="Number of pipeline stages (`auto`: taken from the PipelineModule)."
    )
    partition: str = ds_field(
        "best", description="How layers are split over stages (`best`, `parameters`, `uniform`, `type:<regex>`)."
    )
    seed_layers: bool = ds_field(False, description="Use a different random seed for each layer.")
    activation_checkpoint_interval: int = ds_field(
        0,
        # PipelineModule passes it to range(): any Python int (a bool is one), never a float
        as_written="initialize", auto="fails", range_argument=True,
        description="Checkpoint activations every N layers (0: off). Saves memory, costs recomputation.",
    )
    pipe_partitioned: bool = ds_field(
        True,
        raises="engine",
        as_written="initialize", auto="fails",
        description="Partition the activations sent between stages over the model-parallel group. Must be a "
        "boolean (the pipeline engine asserts it).",
    )
    grad_partitioned: bool = ds_field(
        True,
        raises="engine",
        as_written="initialize", auto="fails",
        description="Partition the gradients sent between stages over the model-parallel group. Must be a boolean.",
    )
    use_reentrant: bool | None = ds_field(
        None,
        unset_means=True,
        description="Use re-entrant activation checkpointing (unset: true). false uses the non-reentrant "
        "implementation.",
    )


# --------------------------------------------------------------------------------------------------
# data efficiency (lenient)
# --------------------------------------------------------------------------------------------------


class CurriculumScheduleConfig(LenientSection):
    """Parameters of the curriculum pacing function (`schedule_config`)."""

    total_curriculum_step: int | None = ds_field(
        None,
        unit="steps",
        description="Steps to go from min to max difficulty (`fixed_linear` and `fixed_root`).",
    )
    difficulty_step: int | None = ds_field(
        None,
        description="The difficulty is always a multiple of this (`fixed_linear`, `fixed_root`). Use a "
        "multiple of 8 (fp16) or 16 (int8) for sequence lengths, for tensor cores.",
    )
    root_degree: int | None = ds_field(None, description="Degree of the root function (`fixed_root`): 2 = square root.")
    difficulty: list[int] | None = ds_field(None, description="Difficulty levels (`fixed_discrete`).")
    max_step: list[int] | None = ds_field(None, description="Steps at which the difficulty changes (`fixed_discrete`).")


_SCHEDULE_TYPES = ("fixed_linear", "fixed_root", "fixed_discrete", "custom")


class CurriculumMetricConfig(LenientSection):
    """One curriculum metric (key = metric name) of the data-efficiency curriculum."""

    index_to_sample_path: str | None = ds_field(
        None, widget="path", description="index_to_sample file from the offline data analysis."
    )
    index_to_metric_path: str | None = ds_field(
        None, widget="path", description="index_to_metric file from the offline data analysis."
    )
    difficulty_type: str | None = ds_field(
        None,
        choices=("value", "percentile"),
        widget="select",
        description="How the accepted difficulty grows: by absolute `value` or by `percentile`.",
    )
    clustering_type: str | None = ds_field(
        None,
        choices=("schedule_based", "single_cluster"),
        widget="select",
        description="`schedule_based`: cluster data by the pacing function; `single_cluster`: no clustering.",
    )
    min_difficulty: int | None = ds_field(None, description="Difficulty at the first step.")
    max_difficulty: int | None = ds_field(None, description="Final difficulty.")
    schedule_type: str | None = ds_field(
        None,
        choices=_SCHEDULE_TYPES,
        widget="select",
        description="Pacing function: `fixed_linear`, `fixed_root`, `fixed_discrete` or `custom` (callback).",
    )
    schedule_config: CurriculumScheduleConfig | None = ds_field(None, description="Parameters of the pacing function.")


class DataSamplingCurriculumConfig(LenientSection):
    """Curriculum learning of the data-efficiency library (feeds easy samples first)."""

    # The engine and the parser's assert read this switch whatever data_efficiency and data_sampling say.
    model_config = ConfigDict(json_schema_extra={META_KEY: {**_RAISES_WHEN_PARSED[META_KEY], "switch_ungated": True}})

    enabled: bool = ds_field(
        False,
        description="Turn curriculum learning on. Needs `curriculum_metrics` (DeepSpeed fails otherwise).",
    )
    data_cluster_path: str | None = ds_field(
        None, widget="path", description="Directory where the sample indexes per difficulty range are stored."
    )
    curriculum_metrics: dict[str, CurriculumMetricConfig] | None = ds_field(
        None, widget="json", description="The curriculum metrics by name, each with its own schedule."
    )

    @model_validator(mode="after")
    def _metrics_when_enabled(self) -> DataSamplingCurriculumConfig:
        # data_pipeline/config.py get_curriculum_learning: an assert while the config is parsed.
        if self.enabled is True and "curriculum_metrics" not in self.model_fields_set:
            raise ValueError("Curriculum learning is enabled, curriculum_metrics must be specified")
        return self


class DynamicBatchingConfig(LenientSection):
    """Dynamic batching: variable batch sizes packed up to a token budget."""

    model_config = ConfigDict(json_schema_extra=_RAISES_WHEN_PARSED)

    enabled: bool = ds_field(False, description="Turn dynamic batching on. Needs `max_tokens`.")
    metrics_path: str | None = ds_field(None, widget="path", description="Path of the sequence-length metrics.")
    lr_scaling_method: str = ds_field(
        "linear",
        choices=("linear", "sqrt", "none"),
        widget="select",
        description="How the learning rate follows the batch size: `linear`, `sqrt` or `none`.",
    )
    min_batch_size: int = ds_field(1, raises="config", description="Smallest batch size.")
    max_batch_size: int | None = ds_field(None, raises="config", description="Largest batch size (unset: no limit).")
    sequence_picking_order: str = ds_field(
        "dataloader",
        choices=("dataloader", "random", "seqlen"),
        widget="select",
        description="Order in which sequences are packed: `dataloader`, `random` or `seqlen`.",
    )
    max_tokens: int | None = ds_field(
        None, raises="config", description="Token budget per batch. Required when enabled."
    )
    verbose: bool = ds_field(False, description="Log the batches.")

    @field_validator("enabled", mode="before")
    @classmethod
    def _truth_value(cls, value: Any) -> bool:
        # get_dynamic_batching: bool(value), so the string "false" turns it on and [] leaves it off.
        return bool(value)

    @field_validator("min_batch_size", "max_batch_size", "max_tokens", mode="before")
    @classmethod
    def _python_int(cls, value: Any, info: ValidationInfo) -> Any:
        # get_dynamic_batching converts these with int() (max_tokens only when enabled): 1.5 is read as 1 and
        # " 8 " as 8; null, a list or "1.5" fail there.
        if info.field_name == "max_tokens" and not info.data.get("enabled"):
            return value if isinstance(value, int) else None  # not read
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"DeepSpeed reads it with int(), which fails: {exc}") from None

    @model_validator(mode="after")
    def _max_tokens_when_enabled(self) -> DynamicBatchingConfig:
        # data_pipeline/config.py get_dynamic_batching: an assert while the config is parsed.
        if self.enabled is True and "max_tokens" not in self.model_fields_set:
            raise ValueError("Dynamic batching is enabled, so max_tokens must be specified")
        return self


class DataSamplingConfig(LenientSection):
    """Data sampling part of the data-efficiency library."""

    enabled: bool = ds_field(False, description="Turn data sampling on.")
    num_epochs: int = ds_field(1000, description="At most this many epochs of the dataset are iterated.")
    num_workers: int = ds_field(0, description="Data loader worker processes.")
    pin_memory: bool = ds_field(False, description="Pin the data loader's memory.")
    curriculum_learning: DataSamplingCurriculumConfig = ds_field(
        default_factory=DataSamplingCurriculumConfig, raises="config", description="Curriculum learning."
    )
    dynamic_batching: DynamicBatchingConfig = ds_field(
        default_factory=DynamicBatchingConfig, raises="config", description="Dynamic batching."
    )


class RandomLTDScheduleParams(LenientSection):
    """Parameters of the random-LTD sequence-length schedule."""

    # raises="step": read with config[key] and divided by at the first forward pass whenever min_value < max_value
    # (core.rules.misc's random-LTD schedule check says how a value fails), not checked when parsed
    require_steps: int | None = ds_field(None, unit="steps", raises="step", auto="fails",
                                         description="Steps to reach `max_value` from `min_value`.")
    seq_per_step: int | None = ds_field(
        None, raises="step", auto="fails",
        description="The kept sequence length is a multiple of this (8 for fp16, 16 for int8 tensor cores)."
    )


class RandomLTDScheduleConfig(LenientSection):
    """How many tokens random-LTD keeps over training."""

    # as_written="forward": the scheduler computes the consumed layer tokens with them at every forward pass
    min_value: int | None = ds_field(None, as_written="forward", auto="fails",
                                     description="Kept sequence length at step 0.")
    max_value: int | None = ds_field(None, as_written="forward", auto="fails",
                                     description="Final kept sequence length (usually the full length).")
    schedule_type: str | None = ds_field(
        None, choices=("fixed_linear",), raises="step",
        description="Schedule shape; only `fixed_linear` is supported (any other stops the first forward pass)."
    )
    schedule_config: RandomLTDScheduleParams | None = ds_field(None, description="Schedule parameters.")


class LayerTokenLRScheduleConfig(LenientSection):
    """Learning-rate schedule by consumed layer tokens (random-LTD)."""

    enabled: bool = ds_field(False, description="Schedule the lr by layer tokens instead of steps.")
    total_layer_tokens: int | None = ds_field(None, description="Total layer tokens of the training run.")
    warmup_type: str | None = ds_field(None, description="Warm-up shape.")
    warmup_layer_tokens: int | None = ds_field(None, description="Layer tokens of the warm-up.")


class RandomLTDConfig(LenientSection):
    """Random layerwise token dropping: middle layers see only a random subset of the tokens."""

    # The engine builds the scheduler on this switch alone, whatever data_efficiency and data_routing say.
    model_config = ConfigDict(json_schema_extra={META_KEY: {"kind": "lenient", "switch_ungated": True}})

    enabled: bool = ds_field(False, description="Turn random-LTD on.")
    total_layer_num: int | None = ds_field(None, as_written="forward", auto="fails",
                                           description="Number of layers of the model.")
    random_ltd_layer_num: int | None = ds_field(None, as_written="forward", auto="fails",
                                                description="Number of layers that drop tokens.")
    random_ltd_layer_id: list[int] | None = ds_field(
        None, description="Ids of the layers that drop tokens (as many as `random_ltd_layer_num`)."
    )
    model_mask_name: str | None = ds_field(
        None, description="Keyword name of the attention-mask argument of the model's forward (HF: attention_mask)."
    )
    model_type: str | None = ds_field(
        None, choices=("decoder", "encoder"), widget="select", description="`decoder` or `encoder`."
    )
    hidden_state_order: str | None = ds_field(
        None,
        choices=("batch_seq_dim", "seq_batch_dim"),
        widget="select",
        description="Order of the hidden-state dimensions: `batch_seq_dim` or `seq_batch_dim`.",
    )
    random_ltd_schedule: RandomLTDScheduleConfig | None = ds_field(None, description="Kept-token schedule.")
    layer_token_lr_schedule: LayerTokenLRScheduleConfig = ds_field(
        default_factory=LayerTokenLRScheduleConfig, description="Learning rate by consumed layer tokens."
    )


class DataRoutingConfig(LenientSection):
    """Data routing part of the data-efficiency library."""

    enabled: bool = ds_field(False, description="Turn data routing on.")
    random_ltd: RandomLTDConfig = ds_field(default_factory=RandomLTDConfig, raises="config", description="Random-LTD.")


class DataEfficiencyConfig(LenientSection):
    """DeepSpeed Data Efficiency: curriculum learning (data sampling) and random-LTD (data routing).
    Mostly used with Megatron-DeepSpeed."""

    enabled: bool = ds_field(False, description="Turn the data-efficiency library on.")
    seed: int = ds_field(1234, description="Random seed of the data sampling.")
    data_sampling: DataSamplingConfig = ds_field(
        default_factory=DataSamplingConfig,
        raises="config",
        description="Curriculum learning and dynamic batching.",
    )
    data_routing: DataRoutingConfig = ds_field(
        default_factory=DataRoutingConfig, raises="config", description="Random-LTD."
    )


# --------------------------------------------------------------------------------------------------
# DataStates (lenient)
# --------------------------------------------------------------------------------------------------


class DataStatesConfig(OpenSection):
    """DataStates-LLM asynchronous checkpointing (needs the `datastates` package). DeepSpeed enables it
    when the key is present with any value except `false`, and hands the whole block to DataStates, which
    defines its keys."""


# --------------------------------------------------------------------------------------------------
# expert parallelism: AutoEP (lenient)
# --------------------------------------------------------------------------------------------------

_NEW = "0.19.8"


class ExpertParallelConfig(LenientSection):
    """AutoEP: automatic expert parallelism for MoE models (experts sharded over GPUs, tokens exchanged
    with all-to-all). DeepSpeed reads every key with dict.get and checks them (``validate_autoep_config``) when
    deepspeed.initialize builds the engine, only with ``enabled`` on as a Python truth value; the values each
    release accepts for its choice keys are read from the release (``core.rules.expert_parallel``)."""

    # initialize checks nothing while the section is off: a value it would refuse is harmless then
    model_config = ConfigDict(json_schema_extra={META_KEY: {"kind": "lenient", "engine_checks_when_on": True,
                                                            "as_written_check": "AutoEP's validate_autoep_config "
                                                            "refuses it (ValueError)"}})

    enabled: bool = ds_field(False, description="Turn AutoEP on.")
    # as_written="initialize", int_only: validate_autoep_config takes an int (isinstance) and refuses 1.0 and "1"
    autoep_size: int = ds_field(1, ge=1, raises="engine", as_written="initialize", int_only=True,
                                description="Expert-parallel degree (GPUs the experts are spread over). 1: no EP.")
    expert_tensor_parallel_size: int = ds_field(
        1, ge=1, le=1, raises="engine", as_written="initialize", int_only=True,
        description="Tensor-parallel degree inside each expert. Reserved: every release with AutoEP refuses "
        "anything but 1.")
    validate_folding_routing: bool = ds_field(
        False, raises="engine", as_written="initialize",
        description="Check the folded routing (debugging). Must be a boolean."
    )
    async_split_plan: bool = ds_field(
        False,
        raises="engine",
        as_written="initialize",
        added=_NEW,
        description="Compute the token split plan asynchronously. Not with AutoTP folding.",
    )
    preset_model: str | None = ds_field(
        None, raises="engine", description="Built-in model preset (e.g. mixtral, qwen3_moe, deepseek_v3)."
    )
    moe_layer_pattern: str | None = ds_field(None, description="Regex of the MoE layer module names (custom models).")
    expert_pattern: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Attribute name of the MoE block's experts child (custom models; a direct name, no dots).")
    router_pattern: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Attribute name of the MoE block's router child (custom models; a direct name, no dots).")
    use_grouped_mm: bool = ds_field(True, description="Run the experts with grouped matrix multiplies.")
    disable_triton_grouped_mm: bool = ds_field(False, description="Do not use the Triton grouped-mm kernel.")
    route_norm: bool | None = ds_field(None, description="Renormalise the top-k routing weights (unset: preset).")
    route_scale: float = ds_field(1.0, description="Scale applied to the routing weights.")
    score_apply: str = ds_field(
        "auto",
        choices=("auto", "pre", "post"),
        raises="engine",
        auto="kept",
        description="Apply the routing score before (`pre`) or after (`post`) the expert.",
    )
    combine_impl: str = ds_field(
        "auto",
        choices=("auto", "weighted_sum", "fused_weighted_sum", "legacy_bmm"),
        raises="engine",
        auto="kept",
        description="How expert outputs are combined (`fused_weighted_sum`: 0.19.7 on).",
    )
    row_weighting_impl: str = ds_field(
        "auto",
        choices=("auto", "eager", "fused"),
        raises="engine",
        auto="kept",
        added=_NEW,
        description="Row weighting implementation (`fused` needs comm_backend deepep and autoep_size > 1).",
    )
    gate_up_impl: str = ds_field(
        "separate",
        choices=("separate", "fused"),
        raises="engine",
        added=_NEW,
        description="Gate and up projections separately or as one grouped mm (`fused` needs use_grouped_mm).",
    )
    comm_backend: str = ds_field(
        "comm",
        choices=("comm", "deepep"),
        raises="engine",
        added="0.19.7",
        description="Token exchange backend: `comm` (torch.distributed all-to-all) or `deepep` (DeepEP).",
    )
    comm_num_sm: int = ds_field(12, ge=1, raises="engine", added="0.19.7", as_written="initialize", int_only=True,
                                description="SMs DeepEP may use (≥ 1).")
    comm_qp_margin: int = ds_field(4, ge=0, raises="engine", added="0.19.7", as_written="initialize", int_only=True,
                                   description="DeepEP queue-pair margin (≥ 0).")
    comm_max_tokens_per_rank: int = ds_field(
        0,
        ge=0,
        raises="engine",
        added="0.19.7",
        as_written="initialize",
        int_only=True,
        description="DeepEP buffer size in tokens per rank; must be > 0 with comm_backend deepep.",
    )
    # compared=True: validate_autoep_config compares them with 1 (a float compares, text fails)
    num_expert_groups: int | None = ds_field(
        None, ge=1, raises="engine", as_written="initialize", compared=True,
        description="Expert groups (group-limited routing)."
    )
    num_limited_groups: int | None = ds_field(
        None, ge=1, raises="engine", as_written="initialize", compared=True,
        description="Groups a token may route to (≤ num_expert_groups)."
    )
    score_func: str = ds_field(
        "auto",
        choices=("auto", "softmax", "sigmoid"),
        raises="engine",
        auto="kept",
        description="Router score function.",
    )
    top_k: int | Literal["auto"] = ds_field(
        "auto", auto="kept", description="Experts per token (`auto`: from the model)."
    )
    load_balance_coeff: None = ds_field(
        None,
        raises="config",
        description="Not supported by this AutoEP build: any non-null value fails.",
    )
    routed_scaling_factor: float | Literal["auto"] = ds_field(
        "auto", auto="kept", raises="engine", as_written="initialize",
        description="Scaling of the routed expert output (`auto`: from the model)."
    )
    expert_w1: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Name of the first expert weight (custom models).")
    expert_w2: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Name of the second expert weight (custom models).")
    expert_w3: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Name of the third expert weight; null means gate and up are fused (custom models).")
    num_experts_attr: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Attribute holding the number of experts.")
    top_k_attr: str | None = ds_field(None, attribute_name=True, raises="engine",
                                      description="Attribute holding top-k.")
    has_shared_experts: bool | None = ds_field(None, raises="engine", as_written="initialize",
                                               description="Whether the MoE block has shared experts.")
    shared_experts_pattern: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Attribute name of the shared-expert child (a direct name, no dots).")
    shared_experts_gate_pattern: str | None = ds_field(
        None, attribute_name=True, raises="engine",
        description="Attribute name of the shared-expert gate child (a direct name, no dots).")
    expert_activation: str | None = ds_field(
        None, raises="engine", added=_NEW, description="Expert activation function (registered name)."
    )


# --------------------------------------------------------------------------------------------------
# hybrid engine, weight quantization, timers (strict)
# --------------------------------------------------------------------------------------------------


class HybridEngineConfig(Section):
    """DeepSpeed-Chat hybrid engine: switches the model between training and fast inference (RLHF
    generation) without copying it."""

    enabled: bool = ds_field(False, description="Turn the hybrid engine on (RLHF / DeepSpeed-Chat).")
    max_out_tokens: int = ds_field(
        512,
        gt=0,
        description="Maximum tokens generated in inference mode (sizes the KV cache).",
        doc_note="DeepSpeed 0.19.8 requires a value > 0; 0.19.5 accepted any integer.",
    )
    inference_tp_size: int = ds_field(1, description="Tensor-parallel degree used for generation.")
    release_inference_cache: bool = ds_field(
        False, description="Free the inference KV cache after generation (saves memory, costs re-allocation)."
    )
    pin_parameters: bool = ds_field(True, description="Pin the gathered parameters in inference mode.")
    tp_gather_partition_size: int = ds_field(
        8, description="Layers gathered at once when switching to inference with tensor parallelism."
    )
    enable_cuda_graph: bool = ds_field(
        False, added="0.19.8", description="Capture generation with CUDA graphs (faster, more memory)."
    )


class WeightQuantizationConfig(Section):
    """Weight quantization (ZeRO-Inference / post-training): read only when the key is present."""

    enabled: bool = ds_field(True, description="Quantize the weights (on by default once the section is present).")
    num_bits: int = ds_field(8, description="Bits per quantized weight (8 or 4).")
    q_type: Literal["asymmetric", "symmetric"] = ds_field(
        "symmetric", widget="select", description="`symmetric` or `asymmetric` quantization."
    )
    q_groups: int = ds_field(1, description="Quantization groups per tensor (more groups: more accurate).")
    quantized_initialization: dict = ds_field(
        default_factory=dict, widget="json", description="Quantize while the model is initialised (settings)."
    )
    post_init_quant: dict = ds_field(
        default_factory=dict, widget="json", description="Quantize after initialisation (settings per module)."
    )


class ThroughputTimerConfig(Section):
    """The throughput timer (samples/s reported with `steps_per_print`)."""

    enabled: bool = ds_field(True, description="Measure throughput.")
    synchronized: bool = ds_field(
        True,
        description="Synchronise the device for each measurement: accurate numbers, small slowdown. The CPU "
        "timer alone is often accurate enough.",
    )


class TimersConfig(LenientSection):
    """Timers. Only `throughput` is read."""

    throughput: ThroughputTimerConfig = ds_field(
        default_factory=ThroughputTimerConfig, description="The throughput timer."
    )


# --------------------------------------------------------------------------------------------------
# tensor parallel training: AutoTP (strict)
# --------------------------------------------------------------------------------------------------

TP_DTYPE_MESSAGE = (
    "tensor_parallel.dtype cannot be set in a JSON config: DeepSpeed requires a torch.dtype object (e.g. "
    "torch.bfloat16), which JSON cannot express, so every value is rejected. Remove the key; it defaults "
    "to torch.float16 and can only be set from Python."
)


class TPLayerSpecConfig(LenientSection):
    """One custom AutoTP partitioning rule (`partition_config.layer_specs[i]`)."""

    patterns: list[str] = ds_field(
        default_factory=list,
        raises="engine",
        description="Regexes of the parameter names the rule applies to, e.g. `.*\\.o_proj\\.weight$`.",
    )
    partition_type: str = ds_field(
        "column",
        choices=("column", "row", "skip"),
        widget="select",
        raises="engine",
        description="`column` (split the output dim), `row` (split the input dim) or `skip` (replicate).",
    )
    gather_output: bool = ds_field(False, description="All-gather the layer output after a column split.")
    grad_allreduce: bool = ds_field(False, description="All-reduce the gradients of a skipped layer.")
    shape: list[Any] | None = ds_field(
        None, description="Logical shape for fused weights, e.g. `[2, -1]` for a fused gate/up projection."
    )
    partition_dim: int | None = ds_field(None, description="Dimension of `shape` that is split.")
    model_types: list[str] | None = ds_field(None, description="Only apply to these HF model types.")


class TPPartitionConfig(LenientSection):
    """Custom AutoTP partitioning (`tensor_parallel.partition_config`), read when the engine starts."""

    use_default_specs: bool = ds_field(
        True, description="Merge the rules with the built-in ones (false: only your `layer_specs`)."
    )
    layer_specs: list[TPLayerSpecConfig] = ds_field(default_factory=list, description="The partitioning rules.")
    tp_size: int = ds_field(1, description="Tensor-parallel size recorded in the partition config.")
    embedding_partition_dim: int = ds_field(1, description="Dimension along which embeddings are split.")
    lm_head_patterns: list[str] = ds_field(
        default_factory=lambda: ["lm_head", "embed_out"], description="Names of the lm_head modules."
    )
    strict_mode: bool = ds_field(False, description="Fail when a Linear layer matches no rule.")


class TPConfig(Section):
    """Tensor-parallel group settings (`tensor_parallel.tp`)."""

    tp_size: int = ds_field(1, description="Number of GPUs each layer is split across.")
    tp_grain_size: int = ds_field(1, description="Granularity of the MLP / lm_head split (not yet used in training).")
    mpu: Any = ds_field(None, description="A model-parallel unit object; set from Python only.")
    tp_group: Any = ds_field(None, description="The tensor-parallel process group; set from Python only.")


class TensorParallelConfig(Section):
    """AutoTP training: DeepSpeed shards the Linear layers of HF models over `autotp_size` GPUs (tensor
    parallelism), combinable with ZeRO 0-2."""

    dtype: str = ds_field(
        "torch.float16",
        raises="config",
        description="Model dtype for AutoTP. Cannot be given in JSON (DeepSpeed wants a torch.dtype "
        "object); leave it out.",
        doc_note='DeepSpeed\'s field type is torch.dtype, so any JSON value ("bf16", "torch.bfloat16", '
        "null) is a validation error.",
    )
    autotp_size: int = ds_field(
        0,
        description="Tensor-parallel degree of AutoTP training; 0 disables AutoTP.",
    )
    tp_overlap_comm: bool = ds_field(False, description="Overlap the tensor-parallel all-reduce with computation.")
    vocab_parallel_lm_head: bool | None = ds_field(
        None,
        added="0.19.8",
        description="Shard the vocabulary of the lm_head: true requires it, false disables it, unset follows "
        "the model's tied-embedding plan.",
    )
    vocab_parallel_ce_backend: Literal["torch", "liger"] = ds_field(
        "torch",
        added="0.19.8",
        widget="select",
        description="Cross-entropy implementation with a sharded vocabulary: `torch` or `liger` (faster, "
        "needs liger-kernel).",
    )
    tensor_parallel: TPConfig = ds_field(
        default_factory=TPConfig,
        alias="tp",
        description="Tensor-parallel group settings (`tp_size`); write it as `tp`.",
    )
    injection_policy_tuple: tuple | None = ds_field(
        None, description="Layer names to inject (advanced; normally from Python)."
    )
    partition_config: TPPartitionConfig | None = ds_field(
        None,
        description="Custom partitioning rules: `use_default_specs` and `layer_specs` (patterns, "
        "row/column partition type, shape).",
        doc_note="DeepSpeed types this as a free dict and reads it only when the engine starts "
        "(AutoTPConfig.from_dict), so mistakes inside surface at deepspeed.initialize.",
    )
    preset_model: str | None = ds_field(
        None,
        description="Built-in partitioning preset: llama, bloom, chatglm, mixtral, deepseek_v2, qwen2, phi3.",
    )
    keep_module_on_host: bool = ds_field(
        False,
        description="Keep loaded checkpoint weights on the host instead of moving them to the GPU (avoids OOM "
        "on huge models; lets you quantize before moving).",
    )
    replace_with_kernel_inject: bool = ds_field(
        False, alias="kernel_inject", description="Inject DeepSpeed's fused inference kernels."
    )

    @field_validator("dtype", mode="before")
    @classmethod
    def _dtype_not_expressible_in_json(cls, value: Any) -> Any:
        raise ValueError(TP_DTYPE_MESSAGE)
