"""What a DeepSpeed config means for speed: read in one place (stage, precision and offload come from the memory
model's reader, ``TrainingSettings.from_ds_config``, so both models always agree on what the config says)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.batch import (
    GA,
    MB,
    TB,
    batch_run,
    effective_world_size,
    parallelism_left_out,
    resolve_batch,
    run_or_written,
    runs_elastic,
)
from core.effective import bf16_optimizer_reason, effective, pydantic_bool, read_bool, section_enabled
from core.memory.estimate import TrainingSettings
from core.precision import autocast_compute
from core.schema.base import DEFAULT_VERSION
from core.schema.optimizer import OPTIMIZERS

#: The key whose dtype replaces communication_data_type under sequence parallelism (DeepSpeed's
#: SEQ_PARALLEL_COMMUNICATION_DATA_TYPE, default "fp32").
SP_COMM_DTYPE_KEY = "seq_parallel_communication_data_type"


def _truthy_at(config: Mapping[str, Any], *path: str) -> bool:
    """The value at ``path`` as ``get_scalar_param`` then ``if`` reads it (a Python truth value; absent: off)."""
    node: Any = config
    for key in path:
        if not isinstance(node, Mapping):
            return False
        node = node.get(key)
    return bool(node)


def _present(config: Mapping[str, Any], key: str) -> bool:
    return isinstance(config.get(key), Mapping)


#: Config sections that change speed and that the performance model does not cost, each with how DeepSpeed (or
#: the library that reads it) decides it is on; anything on is named in the notes.
_UNMODELLED = {
    "pipeline": ("pipeline parallelism (the model assumes data, tensor and sequence parallelism only)",
                 lambda c: _present(c, "pipeline")),
    # deepspeed.compression's init_compression applies each technique whose shared_parameters.enabled is set
    "compression_training": ("compression training", lambda c: _present(c, "compression_training") and any(
        _truthy_at(technique, "shared_parameters", "enabled")
        for technique in c["compression_training"].values() if isinstance(technique, Mapping))),
    "curriculum_learning": ("curriculum learning (changes the sequence length during training)",
                            lambda c: section_enabled(c, "curriculum_learning")),
    # the engine reads random-LTD and curriculum learning by their own flags (random_ltd_enabled(),
    # curriculum_learning_enabled()), whatever data_efficiency.enabled says
    "data_efficiency": ("data efficiency (random-LTD / curriculum)", lambda c: section_enabled(c, "data_efficiency")
                        or _truthy_at(c, "data_efficiency", "data_routing", "random_ltd", "enabled")
                        or _truthy_at(c, "data_efficiency", "data_sampling", "curriculum_learning", "enabled")),
    "moe": ("MoE expert parallelism (experts are costed as dense compute of the active experts)",
            lambda c: _present(c, "moe")),
    "expert_parallel": ("AutoEP expert parallelism (experts are costed as dense compute of the active experts, "
                        "without the all-to-alls)", lambda c: section_enabled(c, "expert_parallel")),
    "hybrid_engine": ("the hybrid engine's generation phase (RLHF; only the training step is costed)",
                      lambda c: section_enabled(c, "hybrid_engine")),
    # get_sparse_attention: the section itself switches it on (its mode defaults to "fixed")
    "sparse_attention": ("sparse attention (costed as dense attention)", lambda c: _present(c, "sparse_attention")),
    "flops_profiler": ("the flops profiler (adds synchronisation while it profiles)",
                       lambda c: section_enabled(c, "flops_profiler")),
    "amp": ("apex AMP (costed as fp16)", lambda c: section_enabled(c, "amp")),
    # see_memory_usage(force=memory_breakdown) before and after forward, backward and step: gc.collect() on rank 0
    "memory_breakdown": ("memory_breakdown (rank 0 runs gc.collect() and reads the allocator's statistics before and "
                         "after every forward, backward and step; the other ranks wait for it at the next collective)",
                         lambda c: bool(c.get("memory_breakdown", False))),  # get_scalar_param: a truth value
    # get_pld_enabled (releases before 0.19.8, which refuses the section): the engine hands pld_theta to the
    # model's forward, which may skip layers
    "progressive_layer_drop": ("progressive layer drop (a model that reads pld_theta skips layers; costed with "
                               "every layer run)", lambda c: section_enabled(c, "progressive_layer_drop")),
    # engine.step logs the micro timers after every micro-step: each timer's elapsed() synchronises on its events;
    # DeepSpeedConfig ORs the flag with flops_profiler.enabled
    "wall_clock_breakdown": ("wall_clock_breakdown's timers (also on with the flops profiler; read after every "
                             "micro-step, so the host waits for the GPU each time; usually a small cost)",
                             lambda c: bool(c.get("wall_clock_breakdown", False))
                             or section_enabled(c, "flops_profiler")),
}


#: Without ZeRO, _do_optimizer_sanity_check wraps a 16-bit model's optimizer with _configure_fp16_optimizer
#: (FP16 for fp16; DDP_BFLOAT16 for bf16, whose gradients accumulate in bf16 since get_data_types defaults
#: grad_accum_dtype to the model's dtype), which is FP16_UnfusedOptimizer unless the optimizer is a FusedAdam.
UNFUSED_PRECISIONS = ("fp16", "bf16")
#: The class DeepSpeed builds for an Adam/AdamW section on the GPU.
_FUSED_ADAM = OPTIMIZERS["adamw"].implementations["gpu"]


def _flag(section: Mapping[str, Any], key: str) -> bool:
    return pydantic_bool(section, key, False)  # ZeRO++ flags live in the pydantic zero_optimization section


@dataclass(frozen=True)
class PerfSettings:
    """The speed-relevant part of a config (DeepSpeed defaults filled in)."""

    memory: TrainingSettings
    quantized_weights: bool = False  # ZeRO++ qwZ
    quantized_gradients: bool = False  # ZeRO++ qgZ
    tp: int = 1  # tensor_parallel.autotp_size
    sp: int = 1  # sequence_parallel_size (Ulysses)
    comm_bytes: int = 2  # bytes per element on the wire (communication_data_type)
    compute_precision: str = "bf16"  # the dtype matmuls run in (torch_autocast: its dtype)
    compute_bytes: int = 2  # bytes per activation element
    grad_accum: int | None = None  # from the batch keys; None when they do not resolve
    batch_problem: str = ""  # why they do not (core.batch's message)
    elastic: bool = False  # elastic training computes the batch, not the batch keys (core.batch.runs_elastic)
    config_micro_batch: int | None = None
    wall_clock_breakdown: bool = False
    fused_optimizer: bool = True  # DeepSpeed builds FusedAdam from the config's optimizer section
    unfused_optimizer: bool = False  # DeepSpeed runs FP16_UnfusedOptimizer (see UNFUSED_PRECISIONS)
    max_reuse_distance: int = 1_000_000_000  # zero_optimization.stage3_max_reuse_distance (parameters)
    reduce_scatter: bool = True  # zero_optimization.reduce_scatter: stages 1-2 all-reduce the gradients when off
    comms_logger: bool = False  # core.effective's comms_logger: every collective synchronises, none overlaps
    notes: tuple[str, ...] = ()

    @property
    def stage(self) -> int:
        return self.memory.stage


def _batch(cfg: Mapping[str, Any], total_gpus: int, version: str,
           notes: list[str]) -> tuple[int | None, int | None, str, bool]:
    """(accumulation, micro batch, why they do not resolve, elastic) as DeepSpeed ``version`` runs ``cfg`` on
    ``total_gpus`` GPUs (``core.batch.batch_run``: elastic training's batch where the release runs it, else the
    batch keys over the data-parallel ranks that release counts)."""
    as_dict = dict(cfg)
    # DeepSpeedConfig checks the batch keys against dist.get_world_size() (/ sequence_parallel_size) when no mpu
    # is passed, which AutoTP is not: its groups come later (engine._configure_tensor_parallel_states), so
    # train_batch_size counts every tensor-parallel rank (core.batch.effective_world_size, as the validator)
    run = batch_run(as_dict, total_gpus, version)
    if run is not None:
        return run[2], run[1], "", runs_elastic(as_dict, version)
    if runs_elastic(as_dict, version):  # it ignores the batch keys, "auto" or not
        return None, None, f"elastic training computes no batch DeepSpeed {version} accepts on {total_gpus} GPUs", True
    # the HF Trainer fills the "auto" keys and requires a written accumulation to match its own
    # (trainer_config_process fill_match): that written count (4.0 is 4, as DeepSpeed counts it) is the run's
    grad_accum = run_or_written(as_dict, total_gpus, version, GA) if "auto" in (cfg.get(TB), cfg.get(MB)) else None
    if grad_accum is not None:
        notes.append(f'train_batch_size / the micro batch are "auto" (the HF Trainer fills them): the written '
                     f"gradient_accumulation_steps ({grad_accum}) is used.")
        return grad_accum, None, "", False
    resolved = resolve_batch(as_dict, effective_world_size(as_dict, total_gpus, version))
    return None, None, resolved.message or "no whole number of accumulation steps", False


def read_settings(ds_config: Mapping[str, Any] | None, total_gpus: int,
                  version: str = DEFAULT_VERSION) -> PerfSettings:
    """Read a config leniently, as DeepSpeed ``version`` does (like the memory model: bad values fall back to that
    release's defaults, with a note)."""
    cfg = ds_config if isinstance(ds_config, Mapping) else {}
    mem = TrainingSettings.from_ds_config(cfg, version)
    notes = list(mem.notes)
    zero = cfg.get("zero_optimization") if isinstance(cfg.get("zero_optimization"), Mapping) else {}
    meaning = effective(cfg, version)
    tp = max(1, meaning.autotp_size)  # AutoTP is off at 0 or 1 (engine: autotp_size() > 1)
    if meaning.autotp_size_string:
        notes.append(f"tensor_parallel.autotp_size is a string: deepspeed.initialize compares it with 0 before "
                     f"parsing and fails (TypeError); costed as its parser reads it ({meaning.autotp_size}). Write "
                     "a number.")
    sp = mem.sequence_parallel  # the memory model's reading: the GPU's share of the sequence is costed and sized alike
    left_out = parallelism_left_out(total_gpus, {"autotp_size": tp, "sequence_parallel_size": sp},
                                    "tensor/sequence parallelism")
    if left_out:
        notes.append(f"{left_out}.")
        tp = sp = 1
    compute, compute_bytes = mem.precision, mem.bytes_per_param
    if meaning.precision == "torch_autocast":
        # parameters, gradients and optimizer states stay fp32 (the memory model's reading); the forward runs
        # under torch.autocast, and init_autocast_params sets the Linear/Conv parameters' comm_dtype to its dtype
        compute = autocast_compute(meaning)
        compute_bytes = 4 if compute == "fp32" else 2
        notes.append(f"torch_autocast: matmuls and activations costed in {compute} (its dtype; unset is "
                     "PyTorch's CUDA default, fp16), parameters and optimizer states in fp32, gradients reduced in "
                     f"{compute}.")
    dtype = cfg.get("communication_data_type")
    if sp > 1:
        # engine._configure_distributed_model: with sequence parallelism the engine's communication dtype (the
        # ZeRO optimizers' gradient reduction) is seq_parallel_communication_data_type, "fp32" unless written
        dtype = cfg.get(SP_COMM_DTYPE_KEY, "fp32")
        if SP_COMM_DTYPE_KEY not in cfg and compute_bytes < 4:
            notes.append(f"sequence_parallel_size {sp}: gradients are reduced in fp32 ({SP_COMM_DTYPE_KEY}'s "
                         f'default, which replaces communication_data_type), twice the bytes of {compute}; write '
                         f'"{SP_COMM_DTYPE_KEY}": "{compute}" to halve them.')
    comm_bytes = compute_bytes
    if isinstance(dtype, str) and dtype.lower() in ("fp32", "float32"):
        comm_bytes = 4
    elif isinstance(dtype, str) and dtype.lower() in ("fp16", "bf16", "float16", "bfloat16"):
        comm_bytes = 2
    qw = _flag(zero, "zero_quantized_weights") and mem.stage == 3
    qg = _flag(zero, "zero_quantized_gradients") and mem.stage == 3
    zeropp = [key for key in ("zero_quantized_weights", "zero_quantized_gradients") if _flag(zero, key)]
    if mem.hpz_partition_size > 1:
        zeropp.append("zero_hpz_partition_size")
    if zeropp and mem.stage != 3:  # stage3.py / partition_parameters.py are the only readers
        notes.append(f"ZeRO++ ({', '.join(zeropp)}) only acts with ZeRO stage 3: ignored.")
    grad_accum, micro, batch_problem, elastic = _batch(cfg, total_gpus, version, notes)
    notes.extend(f"Not modelled: {what}." for what, on in _UNMODELLED.values() if on(cfg))
    if meaning.comms_logger:
        notes.append("comms_logger is present, which turns DeepSpeed's communication logger on whatever its "
                     "`enabled` says: it synchronises the device after every collective, so no communication "
                     "hides behind compute; costed so (without overlap_comm's overlap).")
    compile_sec = cfg.get("compile")
    if isinstance(compile_sec, Mapping):  # CompileConfig has no "enabled": engine.compile() turns it on
        notes.append("Not modelled: DeepCompile (compile.deepcompile: the compiler schedules ZeRO's gathers and "
                     "frees; eager DeepSpeed is costed)." if pydantic_bool(compile_sec, "deepcompile", False) else
                     "Not modelled: torch.compile (the compile section acts once the script calls engine.compile(); "
                     "it can be faster than eager PyTorch, which is what the model assumes).")
    if mem.master_bytes < 4 and mem.offload_optimizer != "none":  # the step's bytes follow the dtypes otherwise
        notes.append("Not modelled: DeepSpeedCPUAdam's speed with 16-bit master weights"
                     f"{' and optimizer states' if mem.state_bytes < 4 else ''}: costed at its fp32 rate.")
    if isinstance(zero.get("zenflow"), Mapping):  # configure_zenflow: on whenever the section is given
        notes.append("Not modelled: ZenFlow (important gradients updated on the GPU, the rest on the CPU "
                     "asynchronously): costed as plain ZeRO-Offload.")
    off_opt = zero.get("offload_optimizer")
    if isinstance(off_opt, Mapping) and off_opt.get("ratio") not in (None, 1, 1.0):
        notes.append("Not modelled: partial optimizer offload (ratio): costed as a full offload.")
    if read_bool(cfg, "activation_checkpointing", "cpu_checkpointing", False):
        notes.append("Not modelled: the PCIe time of cpu_checkpointing (checkpoints copied to the host).")
    if isinstance(off_opt, Mapping) and _flag(off_opt, "super_offload"):
        notes.append("Not modelled: SuperOffload (super_offload: the CPU step overlapped with the GPU's work on "
                     "Grace-Hopper-class machines): costed as plain ZeRO-Offload.")
    if isinstance(off_opt, Mapping) and (_flag(off_opt, "pipeline_read") or _flag(off_opt, "pipeline_write")):
        notes.append("Not modelled: pipelined NVMe optimizer reads/writes (pipeline_read / pipeline_write "
                     "overlap the swap with the step): costed without the overlap.")
    if mem.stage == 3 and any(_flag(zero, key) for key in ("stage3_use_all_reduce_for_fetch_params",
                                                              "use_all_reduce_for_fetch_params")):
        notes.append("Not modelled: stage3_use_all_reduce_for_fetch_params (ZeRO-3 fetches parameters with an "
                     "all-reduce, about twice an all-gather's bytes): costed as all-gathers.")
    if _flag(zero, "zero_quantized_nontrainable_weights"):
        notes.append("Not modelled: zero_quantized_nontrainable_weights (only frozen weights are affected).")
    # engine._configure_fp16_optimizer wraps only a FusedAdam in the fused fp16 optimizer; which class the
    # engine builds (torch_adam read as a Python truth value, a client optimizer without a section) is
    # core.effective's reading
    fused = meaning.optimizer_class == _FUSED_ADAM
    # BF16_Optimizer (bf16 without ZeRO in 0.16.0-0.18.4) takes the place of the fp16 optimizers
    unfused = mem.stage == 0 and mem.precision in UNFUSED_PRECISIONS and not fused and not mem.bf16_optimizer
    if mem.bf16_optimizer:
        notes.append(f"{bf16_optimizer_reason(mem.stage, version)}: DeepSpeed wraps the optimizer in BF16_Optimizer, "
                     "which all-reduces the gradients (twice a reduce-scatter's traffic), steps on its 1/N partition "
                     "and gathers the parameters after the step; costed as such.")
    if unfused:
        notes.append(f"{mem.precision} at stage 0 without FusedAdam (no DeepSpeed Adam/AdamW section, or "
                     "torch_adam): DeepSpeed wraps the optimizer in its unfused fp16 optimizer (a loop over "
                     "parameter tensors with a host synchronisation per tensor), costed as such.")
    reuse = zero.get("stage3_max_reuse_distance", zero.get("max_reuse_distance"))
    return PerfSettings(
        memory=mem,
        quantized_weights=qw,
        quantized_gradients=qg,
        tp=tp,
        sp=sp,
        comm_bytes=comm_bytes,
        compute_precision=compute,
        compute_bytes=compute_bytes,
        grad_accum=grad_accum,
        batch_problem=batch_problem,
        elastic=elastic,
        config_micro_batch=micro,
        wall_clock_breakdown=bool(cfg.get("wall_clock_breakdown", False)),  # get_scalar_param, a truth value
        fused_optimizer=fused,
        unfused_optimizer=unfused,
        max_reuse_distance=int(min(reuse, 1e18)) if isinstance(reuse, int | float) and not isinstance(reuse, bool)
        and reuse >= 0 else 1_000_000_000,
        reduce_scatter=pydantic_bool(zero, "reduce_scatter", True),
        comms_logger=meaning.comms_logger,
        notes=tuple(notes),
    )
