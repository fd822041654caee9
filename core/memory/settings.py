"""The memory-relevant part of a DeepSpeed config (``TrainingSettings``), read leniently with DeepSpeed's defaults.

"auto", missing keys and wrong types fall back to the defaults with a note and never raise; what a config means
(stage, precision, optimizer, offload devices, derived defaults) comes from ``core.effective``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from core import versions
from core.autofill import HIDDEN_SIZE_KEYS
from core.batch import reads_sequence_parallel, sequence_parallel_degree
from core.effective import Effective, bf16_optimizer_reason, effective, pydantic_bool, uses_bf16_optimizer
from core.findings import brief
from core.rules.context import lax_int
from core.rules.precision import refused_master_weights
from core.schema.base import DEFAULT_VERSION
from core.schema.root import DeepSpeedConfig
from core.schema.walk import default_in, field_exists, section_fields
from core.schema.zero import OffloadOptimizerConfig, OffloadParamConfig, ZeroConfig

PRECISIONS = ("fp32", "fp16", "bf16")
_DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
_FP32_NAMES = ("torch.float32", "fp32", "float32", "float")  # deepspeed/runtime/config.py DtypeEnum.fp32

_SATURATE = 2**53


def _default(model: type, name: str) -> Any:
    """DeepSpeed's default for a field, as the schema records it (the settings' defaults and their reads share it)."""
    return model.model_fields[name].default


@cache
def _release_default(version: str, model: type, prefix: str, name: str) -> Any:
    """What DeepSpeed ``version`` uses for the field ``name`` of the section at dotted ``prefix`` when the config
    leaves it out: its profile's record (offload ``pin_memory`` is False before 0.19.5), else the schema's default."""
    value = default_in(section_fields(model)[name], f"{prefix}.{name}", version)
    return _default(model, name) if value is None else value  # a recorded null is "not set": no number to size


def _num(value: Any, default: float, minimum: float = 0) -> float:
    """A finite number >= minimum, else the default ("auto", other strings, None). As DeepSpeed's pydantic sections
    read an int field (lax mode), a whole number written as text ("100000000") is that number and a boolean is 0 or
    1 (``buffer_count: true`` is one buffer, ``max_in_cpu: false`` none)."""
    if isinstance(value, str):
        value = lax_int(value)
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int | float) or value < minimum:
        return default
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return default
    if not finite:
        return default
    # Absurd sizes (10**30 in a junk config) would overflow numpy's int64 arithmetic; 2**53 elements is
    # already far beyond any real bucket or model, so the estimate saturates there.
    return min(value, _SATURATE)


def _flag(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _section(cfg: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = cfg.get(key)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class TrainingSettings:
    """The memory-relevant part of a DeepSpeed config, with DeepSpeed's defaults filled in."""

    stage: int = 0
    stage_auto: bool = False  # zero_optimization.stage "auto": read as 0 (plain DeepSpeed); Accelerate fills 2
    precision: str = "fp32"
    offload_optimizer: str = "none"
    offload_param: str = "none"
    optimizer: str = "adamw"
    optimizer_states: int = 2
    reduce_bucket_size: int = _default(ZeroConfig, "reduce_bucket_size")
    allgather_bucket_size: int = _default(ZeroConfig, "allgather_bucket_size")
    overlap_comm: bool = False
    contiguous_gradients: bool = True
    prefetch_bucket_size: int = _default(ZeroConfig, "prefetch_bucket_size")
    param_persistence_threshold: int = _default(ZeroConfig, "param_persistence_threshold")
    max_live_parameters: int = _default(ZeroConfig, "max_live_parameters")
    sub_group_size: int = _default(ZeroConfig, "sub_group_size")
    offload_optimizer_pin_memory: bool = _default(OffloadOptimizerConfig, "pin_memory")
    offload_param_pin_memory: bool = _default(OffloadParamConfig, "pin_memory")
    offload_param_buffer_count: int = _default(OffloadParamConfig, "buffer_count")
    offload_param_buffer_size: int = _default(OffloadParamConfig, "buffer_size")
    offload_param_max_in_cpu: int = _default(OffloadParamConfig, "max_in_cpu")
    offload_optimizer_buffer_count: int = _default(OffloadOptimizerConfig, "buffer_count")
    partition_activations: bool = False
    cpu_checkpointing: bool = False
    #: ZeRO++ hierarchical partitioning: secondary 16-bit copy within a node
    hpz_partition_size: int = _default(ZeroConfig, "zero_hpz_partition_size")
    grad_accum_fp32: bool = False  # data_types.grad_accum_dtype is fp32 (any of DeepSpeed's DtypeEnum spellings)
    master_bytes: int = 4  # master weights and the optimizer's gradient partition (16-bit master-weight flags)
    state_bytes: int = 4  # one element of an optimizer state tensor
    #: bytes of an element of ``communication_data_type`` as written (None: unset, the training precision's)
    communication_data_type_bytes: int | None = None
    #: the release keeps one ZeRO reduce bucket per communication dtype (``reduce_buffer_bytes``)
    buckets_by_comm_dtype: bool = True
    #: the communication dtypes torch_autocast gives the parameters (``_autocast_comm_bytes``; (): off)
    autocast_comm_bytes: tuple[int, ...] = ()
    sequence_parallel: int = 1  # sequence_parallel_size (Ulysses): each GPU holds 1/sp of a sequence's activations
    #: tensor_parallel.autotp_size as DeepSpeed reads it (1: off). Not modelled (the estimate is for data
    #: parallelism), but its groups and the sequence-parallel ones must split the GPUs whole together.
    tensor_parallel: int = 1
    #: the DeepSpeed release read as (which optimizer wrapper it builds: :attr:`bf16_optimizer`)
    version: str = DEFAULT_VERSION
    notes: tuple[str, ...] = ()

    @property
    def bf16_optimizer(self) -> bool:
        """Whether DeepSpeed wraps the optimizer in BF16_Optimizer (see :func:`uses_bf16_optimizer`)."""
        return uses_bf16_optimizer(self.stage, self.precision, self.grad_accum_fp32, self.offload_optimizer,
                                   self.version)

    @property
    def bytes_per_param(self) -> int:
        """Bytes of one element of the compute dtype."""
        return 4 if self.precision == "fp32" else 2

    @property
    def grad_accum_bytes(self) -> int:
        """Bytes of one element of DeepSpeed's gradient accumulation dtype: ``data_types.grad_accum_dtype`` when
        fp32, else the model's dtype (``engine.get_data_types``)."""
        return 4 if self.grad_accum_fp32 else self.bytes_per_param

    @property
    def communication_bytes(self) -> int:
        """Bytes of one element of DeepSpeed's communication dtype: ``communication_data_type``, else the training
        precision's (engine.py ``communication_data_type``)."""
        return self.communication_data_type_bytes or self.bytes_per_param

    @property
    def reduce_buffer_bytes(self) -> tuple[int, ...]:
        """Bytes of one element of each ZeRO gradient reduce bucket's buffer, one entry per bucket.

        The releases with torch.autocast support (DeepSpeed #6993, 0.17.2: the ones that read ``torch_autocast``)
        keep one bucket per communication dtype (``ipg_buckets``): :attr:`communication_bytes`, or under torch_autocast
        :attr:`autocast_comm_bytes`. ZeRO-1/2 buffers hold the parameters' dtype whatever the bucket
        (stage_1_and_2.py ``setup_buckets``: ``dtype=self.dtype``), ZeRO-3 ones the bucket's communication dtype
        (stage3.py ``torch.empty(self.reduce_bucket_size, dtype=dtype)``). Older releases keep one buffer in the
        parameters' dtype.

        Not derived: DeepSpeed 0.19.8's ZeRO-1 with 16-bit parameters and an fp32 ``grad_accum_dtype``
        (``use_grad_accum_attribute``) stages in fp32 (``_gradient_reduction_buffer_dtype``), earlier releases in
        the parameters' dtype; no profile records which release does which, so the parameters' dtype is used."""
        if not self.buckets_by_comm_dtype:
            return (self.bytes_per_param,)
        comm = self.autocast_comm_bytes or (self.communication_bytes,)
        return comm if self.stage == 3 else (self.bytes_per_param,) * len(comm)

    @property
    def fp32_grad_partition(self) -> bool:
        """ZeRO-1/2 (DeepSpeedZeroOptimizer) with 16-bit parameters and an fp32 ``grad_accum_dtype`` reduces the
        gradients into an fp32 flat partition on the accelerator (stage_1_and_2.py
        ``_use_compact_grad_partition_buffer``: ``torch.zeros(partition_size, dtype=self.gradient_accumulation_dtype,
        device=get_accelerator().current_device_name())``), with or without optimizer offload."""
        return (self.stage in (1, 2) and self.precision != "fp32" and self.grad_accum_fp32
                and not self.bf16_optimizer)

    @classmethod
    def from_ds_config(cls, ds_config: Mapping[str, Any] | None, version: str = DEFAULT_VERSION) -> TrainingSettings:
        """Read a DeepSpeed config dict as DeepSpeed ``version`` does (``core.effective``: e.g. bf16's master-weights
        keys, which releases before 0.17.1 ignore); unusable values fall back to defaults with a note."""
        cfg = ds_config if isinstance(ds_config, Mapping) else {}
        notes: list[str] = []
        zero = _section(cfg, "zero_optimization")
        meaning = effective(cfg, version)
        stage = meaning.stage
        if stage == 0 and meaning.stage_written not in (0, None, False):
            notes.append(f"zero_optimization.stage={brief(meaning.stage_written)} is not 0-3; estimated as stage 0.")

        # an "auto" section counts as on, as the Precision page shows it: the HF Trainer fills it from
        # TrainingArguments, and a section written "auto" says which flag the run will pass (--bf16, --fp16)
        mode = meaning.precision_mode
        precision = mode if mode != "torch_autocast" else "fp32"
        if (meaning.fp16_auto or meaning.bf16_auto) and meaning.precision == "fp32":
            notes.append(
                f'{mode}.enabled is "auto": the HF Trainer fills it from TrainingArguments; estimated as {precision}, '
                f"as if --{mode} is passed (write the precision in the config to choose another)."
            )

        off_opt, off_param = meaning.offload_optimizer, meaning.offload_param
        opt_sec, param_sec = _section(zero, "offload_optimizer"), _section(zero, "offload_param")
        if stage == 0 and off_opt != "none":
            notes.append("offload_optimizer needs ZeRO stage >= 1; ignored at stage 0.")
            off_opt = "none"
        if stage < 3 and off_param != "none":
            notes.append("offload_param only works with ZeRO stage 3; ignored.")
            off_param = "none"
        grad_accum_fp32 = _section(cfg, "data_types").get("grad_accum_dtype") in _FP32_NAMES
        if stage == 0 and uses_bf16_optimizer(stage, precision, grad_accum_fp32, off_opt, version):
            notes.append(f"bf16 without ZeRO: DeepSpeed {version} wraps the optimizer in BF16_Optimizer, which splits "
                         "the fp32 master weights and optimizer states over the data-parallel GPUs as ZeRO-1 does and "
                         "accumulates the gradients in an fp32 buffer of every parameter; estimated so (from 0.18.5 "
                         "each GPU keeps them whole).")
        if off_opt == "nvme" and stage < 3 and uses_bf16_optimizer(stage, precision, grad_accum_fp32, off_opt, version):
            cpu_class = meaning.optimizer_backend == "cpu"
            notes.append("offload_optimizer to nvme with bf16, ZeRO-1 and an fp32 grad_accum_dtype: DeepSpeed picks "
                         "BF16_Optimizer (its offload test is the CPU device only), which offloads nothing; estimated "
                         "without offload." + (" Its CPU Adam then steps on GPU tensors and fails at the first step "
                                               "on GPUs: use device cpu." if cpu_class else ""))
            off_opt = "none"
        if off_opt == "nvme" and stage < 3:  # DeepSpeedZeroOptimizer: cpu_offload for any device but none
            notes.append(f"offload_optimizer to nvme at ZeRO stage {stage}: DeepSpeed has no NVMe swapper below "
                         "stage 3 and keeps the optimizer states in CPU RAM; estimated as CPU offload.")
            off_opt = "cpu"

        opt_type = meaning.optimizer_type
        name = (meaning.optimizer_name or "").lower() or "adamw"
        if meaning.optimizer_name is None and not (isinstance(opt_type, str) and opt_type != "auto"):
            notes.append('No optimizer type in the config (or "auto"): assumed AdamW (2 fp32 states).')
        elif meaning.optimizer_name is None:
            name = opt_type.lower()
        states = meaning.optimizer_states
        if states is None:
            states = 2
            if isinstance(opt_type, str) and opt_type != "auto":
                notes.append(f"Optimizer {brief(opt_type)} unknown to the estimator: assumed 2 fp32 states per "
                             "parameter.")
        if name in ("onebitadam", "zerooneadam", "onebitlamb"):
            notes.append("1-bit optimizers also keep error-feedback buffers (not counted).")

        sequence_parallel = sequence_parallel_degree(cfg) or 1
        if sequence_parallel > 1 and not reads_sequence_parallel(version):
            notes.append(f"sequence_parallel_size {sequence_parallel}: DeepSpeed {version} ignores "
                         "sequence_parallel_size, so no Ulysses groups form: each GPU holds and computes whole "
                         "sequences (activations estimated for the whole sequence, no sequence-parallel "
                         "all-to-all).")
            sequence_parallel = 1
        elif sequence_parallel > 1:
            notes.append(f"sequence_parallel_size {sequence_parallel}: activations are estimated for each GPU's "
                         f"share of the sequence (Ulysses shards it {sequence_parallel} ways; eager attention's "
                         "scores, which span the whole sequence for a share of the heads, are counted for the share "
                         "only, and the all-to-all buffers are not counted).")
        mics = zero.get("mics_shard_size")
        if stage == 3 and isinstance(mics, int) and not isinstance(mics, bool) and mics > 0:
            # the releases that read it build MiCS_Init / MiCS_Optimizer from it (0.19.8 refuses the key)
            notes.append(f"Not modelled: MiCS (mics_shard_size {mics}): model states are sharded within groups of "
                         f"{mics} GPUs and replicated across them, not over every GPU as estimated here (per-GPU "
                         "states are underestimated when there are more GPUs than that).")
        if meaning.autotp_size > 1:
            notes.append(f"tensor_parallel.autotp_size {meaning.autotp_size}: not modelled here (the estimate is "
                         "for data parallelism); AutoTP splits the weights, so the model states are overestimated.")
        if meaning.autoep_size > 1:
            notes.append(f"expert_parallel.autoep_size {meaning.autoep_size}: not modelled here (the estimate is for "
                         "data parallelism); AutoEP gives each GPU 1/{0} of each MoE layer's experts, so the model "
                         "states of an MoE model are overestimated.".format(meaning.autoep_size))
        ratio = opt_sec.get("ratio")
        if off_opt != "none" and isinstance(ratio, int | float) and not isinstance(ratio, bool) and 0 <= ratio < 1:
            notes.append(f"offload_optimizer.ratio {ratio:g}: not modelled (estimated as a full offload); DeepSpeed "
                         f"keeps {1 - ratio:.0%} of the optimizer's sub-groups on the GPU, so GPU memory is higher.")
        autos = [key for key in (path.removeprefix("zero_optimization.") for path in HIDDEN_SIZE_KEYS)
                 if zero.get(key) == "auto"]
        if autos:  # the HF Trainer fills them from the model's hidden size; plain DeepSpeed drops "auto"
            notes.append(f'{", ".join(autos)} "auto": estimated at DeepSpeed\'s default{"s" if len(autos) > 1 else ""} '
                         "(reduce bucket 5e8 elements), what plain DeepSpeed uses; the HF Trainer fills them from "
                         "the model's hidden size (reduce bucket hidden_size², usually far smaller), so the buffers "
                         "are overestimated there: write the values to size them.")
        comm = cfg.get("communication_data_type")
        comm = _DTYPE_BYTES.get(comm.lower()) if isinstance(comm, str) else None  # get_communication_data_type
        master, state_dtype = _master_dtypes(cfg, version, meaning, precision, off_opt, grad_accum_fp32, notes)
        ac = _section(cfg, "activation_checkpointing")
        zero_default = partial(_release_default, version, ZeroConfig, "zero_optimization")
        prefetch = int(_num(zero.get("stage3_prefetch_bucket_size", zero.get("prefetch_bucket_size")),
                            zero_default("prefetch_bucket_size")))
        if (stage == 3 and prefetch != 1 and versions.allgather_sequential_prefetch_one(version)
                and pydantic_bool(zero, "stage3_allgather_sequential",
                                  pydantic_bool(zero, "allgather_sequential", False))):
            notes.append(f"stage3_allgather_sequential is on: DeepSpeed {version} sets the prefetch bucket to 1 "
                         f"element (the written {prefetch:,} is not used), so no parameters are prefetched.")
            prefetch = 1
        opt_default = partial(_release_default, version, OffloadOptimizerConfig, "zero_optimization.offload_optimizer")
        param_default = partial(_release_default, version, OffloadParamConfig, "zero_optimization.offload_param")
        return cls(
            stage=stage,
            stage_auto=meaning.stage_written == "auto",
            precision=precision,
            offload_optimizer=off_opt,
            offload_param=off_param,
            optimizer=name,
            optimizer_states=states,
            reduce_bucket_size=int(_num(zero.get("reduce_bucket_size"), zero_default("reduce_bucket_size"), 1)),
            allgather_bucket_size=int(_num(zero.get("allgather_bucket_size"), zero_default("allgather_bucket_size"))),
            overlap_comm=meaning.overlap_comm,
            contiguous_gradients=meaning.contiguous_gradients,
            prefetch_bucket_size=prefetch,
            param_persistence_threshold=int(
                _num(zero.get("stage3_param_persistence_threshold", zero.get("param_persistence_threshold")),
                     zero_default("param_persistence_threshold"))
            ),
            max_live_parameters=int(_num(zero.get("stage3_max_live_parameters", zero.get("max_live_parameters")),
                                         zero_default("max_live_parameters"))),
            # 0 is valid (DeepSpeed's bound is >= 0): one sub-group per parameter tensor
            sub_group_size=int(_num(zero.get("sub_group_size"), zero_default("sub_group_size"), 0)),
            offload_optimizer_pin_memory=pydantic_bool(opt_sec, "pin_memory", opt_default("pin_memory")),
            offload_param_pin_memory=pydantic_bool(param_sec, "pin_memory", param_default("pin_memory")),
            offload_param_buffer_count=int(_num(param_sec.get("buffer_count"), param_default("buffer_count"))),
            offload_param_buffer_size=int(_num(param_sec.get("buffer_size"), param_default("buffer_size"))),
            offload_param_max_in_cpu=int(_num(param_sec.get("max_in_cpu"), param_default("max_in_cpu"))),
            offload_optimizer_buffer_count=int(_num(opt_sec.get("buffer_count"), opt_default("buffer_count"))),
            partition_activations=_flag(ac.get("partition_activations"), False),
            grad_accum_fp32=grad_accum_fp32,
            master_bytes=_DTYPE_BYTES[master],
            state_bytes=_DTYPE_BYTES[state_dtype],
            hpz_partition_size=int(_num(zero.get("zero_hpz_partition_size"), zero_default("zero_hpz_partition_size"),
                                        1)),
            cpu_checkpointing=_flag(ac.get("cpu_checkpointing"), False),
            communication_data_type_bytes=comm,
            buckets_by_comm_dtype=_buckets_by_comm_dtype(version),
            autocast_comm_bytes=_autocast_comm_bytes(mode == "torch_autocast", meaning.torch_autocast_dtype, version),
            sequence_parallel=sequence_parallel,
            tensor_parallel=max(1, meaning.autotp_size),
            version=version,
            notes=tuple(notes),
        )


def _buckets_by_comm_dtype(version: str) -> bool:
    """Whether DeepSpeed ``version`` keeps one ZeRO reduce bucket per communication dtype: the torch.autocast support
    (DeepSpeed #6993, 0.17.2) brought both, so the releases that read ``torch_autocast``."""
    return field_exists(section_fields(DeepSpeedConfig)["torch_autocast"], "", version)


def _autocast_comm_bytes(autocast: bool, autocast_dtype: str | None, version: str) -> tuple[int, ...]:
    """The communication dtypes (bytes of an element) torch_autocast gives the parameters, one per ZeRO reduce bucket;
    () when it is off or the release does not read it. The lower-precision-safe modules' parameters (Linear, Conv)
    communicate in the autocast dtype, the rest (norms, embeddings: every transformer has them) in their fp32
    (torch_autocast.py ``init_autocast_params``, ``get_all_comm_dtypes``)."""
    if not autocast or not _buckets_by_comm_dtype(version):
        return ()
    if autocast_dtype == "fp32":
        return (4,)  # the autocast modules' dtype is the rest's: one communication dtype
    # unset: the modules' comm dtype is None, a second key whose buffer torch.empty makes float32
    return (_DTYPE_BYTES.get(autocast_dtype or "fp32", 4), 4)


def _master_dtypes(cfg: Mapping[str, Any], version: str, meaning: Effective, precision: str, off_opt: str,
                   grad_accum_fp32: bool, notes: list[str]) -> tuple[str, str]:
    """The dtypes of the master weights (and gradient partition) and of the optimizer states, as built; whether
    ``deepspeed.initialize`` refuses them is the validator's verdict for ``version`` (``refused_master_weights``)."""
    master = meaning.master_dtype
    if master == "fp32":
        return "fp32", "fp32"
    if uses_bf16_optimizer(meaning.stage, precision, grad_accum_fp32, off_opt, version):  # not given the flags
        why = bf16_optimizer_reason(meaning.stage, version)
        notes.append(f"16-bit master weights are ignored by BF16_Optimizer ({why}): estimated in fp32.")
        return "fp32", "fp32"
    states = meaning.optimizer_states_dtype
    what = f"{master} master weights{'' if meaning.bf16_optimizer_states else ' with fp32 optimizer states'}"
    refused = _master_weights_refusals(cfg, version)
    if refused:
        why = [text for code, text in (
            ("precision.master-weights-offload", "need optimizer offload with DeepSpeedCPUAdam"),
            ("precision.master-weights-stage", f"are not supported at ZeRO stage {meaning.stage}"),
        ) if code in refused.values()]
        notes.append(f"{what} {' and '.join(why)}: DeepSpeed {version} refuses this config at deepspeed.initialize ("
                     + ", ".join(f"{code} at {path}" for path, code in sorted(refused.items()))
                     + "); estimated as DeepSpeed would keep them.")
    elif meaning.master_weights_refused and meaning.optimizer_class is None:
        # the optimizer is the client's (or "auto"), which the validator does not judge: the ZeRO optimizer checks
        # the one it is given (where a release's ZeRO-3 optimizer has no such check, its config check refuses the
        # flag at stage 3, and the validator says so above)
        notes.append(f"{what} need optimizer offload with DeepSpeedCPUAdam: deepspeed.initialize refuses them with "
                     "any other optimizer (_configure_master_weights); estimated as DeepSpeed would keep them.")
    return master, states


def _master_weights_refusals(cfg: Mapping[str, Any], version: str) -> dict[str, str]:
    """The master-weights keys DeepSpeed ``version`` refuses in ``cfg`` (dotted path -> finding code), as the
    validator's rules judge them; the memory model does not judge them again."""
    return {path: code for path, code in refused_master_weights(cfg, version).items()
            if code != "precision.bf16-optimizer-states"}
