"""The whole DeepSpeed config: every top-level key, with the section models it holds.

DeepSpeed reads the top level with ``dict.get`` (unknown top-level keys are
silently ignored), so the root is a lenient section; most sections below it are
strict pydantic models.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from core.schema.advanced import (
    ActivationCheckpointingConfig,
    AioConfig,
    AutotuningConfig,
    CheckpointConfig,
    CompileConfig,
    DataEfficiencyConfig,
    DataStatesConfig,
    ExpertParallelConfig,
    HybridEngineConfig,
    PipelineConfig,
    TensorParallelConfig,
    TimersConfig,
    WeightQuantizationConfig,
)
from core.schema.base import META_KEY, LenientSection, ds_field
from core.schema.legacy import (
    AmpConfig,
    CompressionTrainingConfig,
    CurriculumLearningLegacyConfig,
    EigenvalueConfig,
    ElasticityConfig,
    NebulaConfig,
    ProgressiveLayerDropConfig,
    QuantizeTrainingConfig,
    SparseAttentionConfig,
)
from core.schema.monitoring import (
    CometConfig,
    CommsLoggerConfig,
    CSVMonitorConfig,
    FlopsProfilerConfig,
    TensorBoardConfig,
    WandbConfig,
)
from core.schema.optimizer import OptimizerConfig, SchedulerConfig
from core.schema.precision import BF16Config, DataTypesConfig, FP16Config, TorchAutocastConfig
from core.schema.zero import ZeroConfig

_REMOVED_IN_0198 = "0.19.8"


class DeepSpeedConfig(LenientSection):
    """A ``ds_config.json``."""

    model_config = ConfigDict(
        json_schema_extra={
            META_KEY: {
                "kind": "lenient",
                "doc_only": {
                    "fp32_allreduce": "the early docs list it; current DeepSpeed ignores it. Use "
                    "`communication_data_type: \"fp32\"`.",
                    "train_step_batch_size": "the early docs list it; current DeepSpeed ignores it. Use "
                    "`train_batch_size`.",
                },
            }
        }
    )

    # --- batch size -------------------------------------------------------------------------
    train_batch_size: int | None = ds_field(
        None, auto="crash", hf_auto=True, page="batch", unit="samples",
        description="Global batch size: samples per optimizer step over all GPUs. Must equal "
        "micro batch × gradient accumulation steps × number of data-parallel GPUs.",
    )
    train_micro_batch_size_per_gpu: int | None = ds_field(
        None, auto="crash", hf_auto=True, page="batch", unit="samples",
        description="Micro batch: samples one GPU processes in one forward/backward pass. The main "
        "driver of activation memory.",
    )
    gradient_accumulation_steps: int | None = ds_field(
        None, auto="crash", hf_auto=True, page="batch", unit="steps",
        description="Micro batches accumulated before each optimizer step. Raises the global batch "
        "without more memory, at the cost of time per step.",
    )
    managed_gradient_accumulation: bool = ds_field(
        True, auto="kept", page="batch", added="0.19.8",
        description="Let DeepSpeed count micro steps and step the optimizer at accumulation boundaries.",
    )
    # --- communication ----------------------------------------------------------------------
    communication_data_type: str | None = ds_field(
        None, auto="crash", page="precision", choices=("fp32", "fp16", "bf16"),
        description="Data type of gradient communication (all-reduce / reduce-scatter). Unset: the "
        "training precision. fp32 is more accurate and doubles the traffic.",
    )
    seq_parallel_communication_data_type: str | None = ds_field(
        "fp32", auto="crash", page="advanced", choices=("fp32", "fp16", "bf16"),
        description="Data type of sequence-parallel communication.",
    )
    prescale_gradients: bool = ds_field(
        False, auto="kept", page="precision",
        description="Scale gradients before the all-reduce instead of after it.",
    )
    gradient_predivide_factor: float = ds_field(
        1.0, auto="fails", page="precision", raises="step",
        description="Divide gradients by this factor before the all-reduce (and by world size / factor "
        "after); helps avoid fp16 overflow on many GPUs.",
    )
    gradient_allreduce_op: str | None = ds_field(
        "mean", auto="crash", page="precision", added="0.19.8", choices=("mean", "sum"),
        description="How gradients are combined over data-parallel ranks: `mean` or `sum` "
        "(`sum` is not supported with ZeRO-3, ZenFlow or DeepCompile).",
    )
    disable_allgather: bool = ds_field(False, auto="kept", page="advanced", description="Disable all-gather.")
    # --- precision & clipping --------------------------------------------------------------
    fp16: FP16Config = ds_field(
        default_factory=FP16Config, page="precision",
        description="16-bit floating point (fp16) mixed precision with loss scaling.",
    )
    bf16: BF16Config | None = ds_field(
        default_factory=BF16Config, page="precision",
        description="bfloat16 mixed precision (no loss scaling needed; needs Ampere or newer).",
    )
    bfloat16: BF16Config | None = ds_field(
        None, page="precision",
        description="Old spelling of `bf16`; read only when `bf16` is absent or null.",
        replaced_by="bf16", deprecated=True,
    )
    torch_autocast: TorchAutocastConfig = ds_field(
        default_factory=TorchAutocastConfig, page="precision",
        description="Use `torch.autocast` for mixed precision instead of DeepSpeed's fp16/bf16 engines.",
    )
    gradient_clipping: float = ds_field(
        1.0, auto="fails", hf_auto=True, page="precision", raises="step",
        description="Clip the global gradient norm to this value. 0 disables clipping.",
        doc_note="The docs give 1.0 as the default; older releases default to 0.0 (no clipping): the Default line "
        "gives the chosen release's.",
    )
    data_types: DataTypesConfig = ds_field(
        default_factory=DataTypesConfig, page="advanced",
        description="Data types of gradient accumulation, parameters and buffers.",
    )
    # --- optimizer & scheduler --------------------------------------------------------------
    optimizer: OptimizerConfig = ds_field(  # null is refused by DeepSpeed
        None, page="optimizer", description="The optimizer DeepSpeed builds (omit to pass your own)."
    )
    scheduler: SchedulerConfig = ds_field(  # null is refused by DeepSpeed
        None, page="optimizer", description="The learning-rate scheduler DeepSpeed builds."
    )
    zero_allow_untested_optimizer: bool = ds_field(
        False, auto="kept", page="optimizer",
        description="Allow ZeRO with an optimizer DeepSpeed has not tested (a client optimizer).",
    )
    zero_force_ds_cpu_optimizer: bool = ds_field(
        True, auto="kept", page="optimizer",
        description="With optimizer offload, require DeepSpeed's CPU optimizer (CPU-Adam).",
    )
    # --- ZeRO -------------------------------------------------------------------------------
    zero_optimization: ZeroConfig = ds_field(
        default_factory=ZeroConfig, page="zero",
        description="ZeRO: partition optimizer states, gradients and parameters across GPUs; offload.",
    )
    aio: AioConfig | None = ds_field(
        default_factory=AioConfig, page="zero",
        description="Asynchronous I/O settings for NVMe offload (ZeRO-Infinity).",
    )
    # --- monitoring -------------------------------------------------------------------------
    steps_per_print: int | None = ds_field(
        None, auto="fails", page="monitoring", unit="steps",
        description="Print training progress every N steps.",
        doc_note="The docs give 10 as the default; DeepSpeed 0.19.8 reads None (no periodic print).",
    )
    wall_clock_breakdown: bool = ds_field(
        False, auto="crash", page="monitoring",
        description="Time forward, backward and step on every rank (adds synchronisation).",
    )
    memory_breakdown: bool = ds_field(
        False, auto="kept", page="monitoring", description="Print memory use at key points of the step."
    )
    dump_state: bool = ds_field(False, auto="kept", page="monitoring", description="Print the config at start.")
    # The monitors are keyword arguments of DeepSpeedMonitorConfig (monitor/config.py get_monitor_config), a
    # DeepSpeedConfigModel, which drops "auto" keyword arguments: a monitor written "auto" is one not written.
    tensorboard: TensorBoardConfig = ds_field(
        default_factory=TensorBoardConfig, page="monitoring", description="Log to TensorBoard.", auto_dropped=True
    )
    wandb: WandbConfig = ds_field(
        default_factory=WandbConfig, page="monitoring", description="Log to Weights & Biases.", auto_dropped=True
    )
    csv_monitor: CSVMonitorConfig = ds_field(
        default_factory=CSVMonitorConfig, page="monitoring", description="Log to CSV files.", auto_dropped=True
    )
    comet: CometConfig = ds_field(default_factory=CometConfig, page="monitoring", description="Log to Comet.",
                                  auto_dropped=True)
    comms_logger: CommsLoggerConfig = ds_field(
        default_factory=CommsLoggerConfig, page="monitoring", description="Log collective communication.",
        presence_matters=True,  # DeepSpeedCommsConfig: comms_logger_enabled = 'comms_logger' in ds_config
    )
    flops_profiler: FlopsProfilerConfig = ds_field(
        default_factory=FlopsProfilerConfig, page="monitoring",
        description="Profile FLOPs, latency and parameters per module.",
    )
    log_level: str | None = ds_field(None, auto="kept", page="monitoring", description="DeepSpeed log level.")
    # --- advanced ---------------------------------------------------------------------------
    activation_checkpointing: ActivationCheckpointingConfig = ds_field(
        default_factory=ActivationCheckpointingConfig, page="advanced",
        description="Activation checkpointing (recomputation) settings for DeepSpeed's checkpointing API.",
    )
    checkpoint: CheckpointConfig = ds_field(
        default_factory=CheckpointConfig, page="advanced", description="Checkpoint saving and loading."
    )
    autotuning: AutotuningConfig = ds_field(
        default_factory=AutotuningConfig, page="advanced", description="The DeepSpeed autotuner."
    )
    compile: CompileConfig = ds_field(
        default_factory=CompileConfig, page="advanced", description="torch.compile and DeepCompile."
    )
    pipeline: PipelineConfig = ds_field(
        default_factory=PipelineConfig, page="advanced", description="Pipeline parallelism."
    )
    data_efficiency: DataEfficiencyConfig = ds_field(
        default_factory=DataEfficiencyConfig, page="advanced",
        description="Data efficiency: curriculum learning and random layer-token drop.",
    )
    hybrid_engine: HybridEngineConfig = ds_field(
        default_factory=HybridEngineConfig, page="advanced",
        description="DeepSpeed-Chat hybrid engine (training + inference).",
    )
    weight_quantization: WeightQuantizationConfig = ds_field(  # null is refused by DeepSpeed
        None, page="advanced", description="Weight quantization (read only when present)."
    )
    timers: TimersConfig = ds_field(default_factory=TimersConfig, page="monitoring", description="Timers.")
    tensor_parallel: TensorParallelConfig = ds_field(
        default_factory=TensorParallelConfig, page="advanced", description="AutoTP tensor-parallel training."
    )
    expert_parallel: ExpertParallelConfig | None = ds_field(
        default_factory=ExpertParallelConfig, page="advanced", description="AutoEP expert parallelism."
    )
    datastates_ckpt: DataStatesConfig | bool | None = ds_field(
        None, page="advanced", enabled_by_presence=True,
        description="DataStates asynchronous checkpointing: enabled when the key is present, unless it is "
        "`false`.",
    )
    use_data_before_expert_parallelism: bool = ds_field(
        False, auto="kept", page="advanced", description="Use the data-before-expert process-group topology."
    )
    dataloader_drop_last: bool = ds_field(
        False, auto="kept", page="advanced", as_written="dataloader",
        description="Drop the last incomplete batch of DeepSpeed's dataloader (true or false: it reaches torch's "
        "DataLoader as written)."
    )
    disable_python_gc: bool = ds_field(
        False, auto="kept", page="advanced", added="0.19.8",
        description="Disable Python's garbage collector during training steps.",
    )
    vocabulary_size: int | None = ds_field(
        None, auto="kept", page="advanced",
        description="Model vocabulary size; a warning is printed if it is not a multiple of 8.",
    )
    sequence_parallel_size: int | None = ds_field(
        None, auto="kept", page="batch",
        description="Sequence-parallel degree; the data-parallel world size is GPUs ÷ this.",
    )
    allgather_size: int = ds_field(
        500_000_000, auto="kept", page="zero", deprecated=True,
        replaced_by="zero_optimization.allgather_bucket_size",
        description="Only read with the deprecated `\"zero_optimization\": true` form.",
    )
    # --- removed in 0.19.8 (parsed by 0.19.5) -------------------------------------------------
    amp: AmpConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "NVIDIA Apex AMP integration has been removed. Use DeepSpeed 'fp16', 'bf16', or "
            "'torch_autocast' instead."
        ),
        page="precision", description="NVIDIA Apex AMP (removed in 0.19.8)."
    )
    elasticity: ElasticityConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "Elastic training has been removed; the 'elasticity' configuration block is no longer "
            'supported. Set train_batch_size / train_micro_batch_size_per_gpu / '
            'gradient_accumulation_steps directly.'
        ),
        page="batch", description="Elastic training (removed in 0.19.8)."
    )
    sparse_attention: SparseAttentionConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "DeepSpeed Sparse Attention has been removed; the 'sparse_attention' configuration block is"
            ' no longer supported.'
        ),
        page="advanced", description="Sparse attention (removed in 0.19.8)."
    )
    nebula: NebulaConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "Nebula checkpointing has been removed. A leftover 'nebula' block would be ignored and "
            'checkpoints would silently fall back to local torch.save.'
        ),
        page="advanced", description="Nebula checkpointing (removed in 0.19.8)."
    )
    compression_training: CompressionTrainingConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "The DeepSpeed compression library has been removed. A leftover 'compression_training' "
            'block would be ignored and the model would train unquantized.'
        ),
        page="advanced", description="Compression (removed in 0.19.8)."
    )
    quantize_training: QuantizeTrainingConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message="Mixture-of-Quantization (MoQ) / 'quantize_training' has been removed.",
        page="advanced", description="MoQ quantize training (removed in 0.19.8)."
    )
    sparse_gradients: bool | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            'Sparse compression of dense torch.nn.Embedding gradients has been removed. A leftover '
            "'sparse_gradients' flag would be ignored and those gradients would be reduced dense. "
            'Gradients from an embedding constructed with sparse=True are still reduced sparsely and '
            'need no config flag.'
        ),
        page="advanced", description="Sparse gradients (removed in 0.19.8)."
    )
    eigenvalue: EigenvalueConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            'Eigenvalue-based Mixture-of-Quantization (MoQ) has been removed; the standalone '
            "'eigenvalue' configuration block is no longer supported."
        ),
        page="advanced", description="Eigenvalue computation (removed in 0.19.8). DeepSpeed 0.19.5 reads only "
        "`quantize_training.eigenvalue` and ignores a top-level block."
    )
    graph_harvesting: bool | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "Graph harvesting has been removed; the 'graph_harvesting' configuration option is no "
            'longer supported.'
        ),
        page="advanced", description="CUDA graph harvesting (removed in 0.19.8)."
    )
    curriculum_learning: CurriculumLearningLegacyConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "Legacy top-level 'curriculum_learning' has been removed. Use "
            "'data_efficiency.data_sampling.curriculum_learning' instead."
        ),
        page="advanced",
        description="Legacy top-level curriculum learning (removed in 0.19.8; use data_efficiency).",
    )
    progressive_layer_drop: ProgressiveLayerDropConfig | None = ds_field(
        None, removed=_REMOVED_IN_0198,
        removed_message=(
            "Progressive Layer Dropping has been removed; the 'progressive_layer_drop' configuration "
            'block is no longer supported.'
        ),
        page="advanced",
        description="Progressive layer drop (removed in 0.19.8).",
    )


def empty_config() -> dict[str, Any]:
    """The smallest config DeepSpeed accepts as a start."""
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
