"""Full memory estimate: per-GPU bytes by component, CPU RAM per node (pinned included) and NVMe bytes.

Inputs are a plain DeepSpeed config dict (read leniently: "auto", missing keys and wrong types fall back to
DeepSpeed's defaults and never raise), a model (``ModelSpec`` or bare parameter counts), the hardware and the
training shape. Each component carries the formula that produced it.

GPU peak = persistent components + max(forward/backward transients, optimizer-step transients): the
activation peak (end of forward / start of backward) and the step peak do not coexist.
Data parallelism only: N = gpus_per_node * nodes ranks, no tensor or pipeline parallelism.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from core.effective import effective, pydantic_bool
from core.memory.activations import ATTENTION_IMPLS, RECOMPUTE_MODES, activation_breakdown
from core.models.arch import ModelSpec

GIB = 2**30

PRECISIONS = ("fp32", "fp16", "bf16")


_SATURATE = 2**53


def _num(value: Any, default: float, minimum: float = 0) -> float:
    """A finite number >= minimum, else the default ("auto", strings, bools, None)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
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
    precision: str = "fp32"
    offload_optimizer: str = "none"
    offload_param: str = "none"
    optimizer: str = "adamw"
    optimizer_states: int = 2
    reduce_bucket_size: int = 500_000_000
    allgather_bucket_size: int = 500_000_000
    overlap_comm: bool = False
    contiguous_gradients: bool = True
    prefetch_bucket_size: int = 50_000_000
    param_persistence_threshold: int = 100_000
    max_live_parameters: int = 1_000_000_000
    sub_group_size: int = 1_000_000_000
    offload_optimizer_pin_memory: bool = True
    offload_param_pin_memory: bool = True
    offload_param_buffer_count: int = 5
    offload_param_buffer_size: int = 100_000_000
    offload_optimizer_buffer_count: int = 4
    partition_activations: bool = False
    cpu_checkpointing: bool = False
    hpz_partition_size: int = 1  # ZeRO++ hierarchical partitioning: secondary 16-bit copy within a node
    grad_accum_fp32: bool = False  # data_types.grad_accum_dtype == "fp32"
    notes: tuple[str, ...] = ()

    @property
    def bytes_per_param(self) -> int:
        """Bytes of one element of the compute dtype."""
        return 4 if self.precision == "fp32" else 2

    @classmethod
    def from_ds_config(cls, ds_config: Mapping[str, Any] | None) -> TrainingSettings:
        """Read a DeepSpeed config dict; unusable values fall back to defaults with a note."""
        cfg = ds_config if isinstance(ds_config, Mapping) else {}
        notes: list[str] = []
        zero = _section(cfg, "zero_optimization")
        meaning = effective(cfg)
        stage = meaning.stage
        if stage == 0 and meaning.stage_written not in (0, None, False):
            notes.append(f"zero_optimization.stage={meaning.stage_written!r} is not 0-3; estimated as stage 0.")

        precision = meaning.precision if meaning.precision != "torch_autocast" else "fp32"
        if meaning.fp16_auto or meaning.bf16_auto:
            notes.append(
                'fp16/bf16 "enabled": "auto" is resolved by the HF Trainer; estimated as '
                f"{precision} (choose the precision explicitly to override)."
            )

        off_opt, off_param = meaning.offload_optimizer, meaning.offload_param
        opt_sec, param_sec = _section(zero, "offload_optimizer"), _section(zero, "offload_param")
        if stage == 0 and off_opt != "none":
            notes.append("offload_optimizer needs ZeRO stage >= 1; ignored at stage 0.")
            off_opt = "none"
        if stage < 3 and off_param != "none":
            notes.append("offload_param only works with ZeRO stage 3; ignored.")
            off_param = "none"
        if off_opt == "nvme" and stage < 3:
            notes.append("offload_optimizer to nvme is only supported with ZeRO stage 3 (ZeRO-Infinity).")

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
                notes.append(f"Optimizer {opt_type!r} unknown to the estimator: assumed 2 fp32 states per parameter.")
        if name in ("onebitadam", "zerooneadam", "onebitlamb"):
            notes.append("1-bit optimizers also keep error-feedback buffers (not counted).")

        ac = _section(cfg, "activation_checkpointing")
        return cls(
            stage=stage,
            precision=precision,
            offload_optimizer=off_opt,
            offload_param=off_param,
            optimizer=name,
            optimizer_states=states,
            reduce_bucket_size=int(_num(zero.get("reduce_bucket_size"), 5e8, 1)),
            allgather_bucket_size=int(_num(zero.get("allgather_bucket_size"), 5e8)),
            overlap_comm=meaning.overlap_comm,
            contiguous_gradients=meaning.contiguous_gradients,
            prefetch_bucket_size=int(
                _num(zero.get("stage3_prefetch_bucket_size", zero.get("prefetch_bucket_size")), 5e7)
            ),
            param_persistence_threshold=int(
                _num(zero.get("stage3_param_persistence_threshold", zero.get("param_persistence_threshold")), 1e5)
            ),
            max_live_parameters=int(_num(zero.get("stage3_max_live_parameters", zero.get("max_live_parameters")), 1e9)),
            sub_group_size=int(_num(zero.get("sub_group_size"), 1e9, 1)),
            offload_optimizer_pin_memory=pydantic_bool(opt_sec, "pin_memory", True),
            offload_param_pin_memory=pydantic_bool(param_sec, "pin_memory", True),
            offload_param_buffer_count=int(_num(param_sec.get("buffer_count"), 5)),
            offload_param_buffer_size=int(_num(param_sec.get("buffer_size"), 1e8)),
            offload_optimizer_buffer_count=int(_num(opt_sec.get("buffer_count"), 4)),
            partition_activations=_flag(ac.get("partition_activations"), False),
            grad_accum_fp32=_section(cfg, "data_types").get("grad_accum_dtype") in ("fp32", "float32"),
            hpz_partition_size=int(_num(zero.get("zero_hpz_partition_size"), 1, 1)),
            cpu_checkpointing=_flag(ac.get("cpu_checkpointing"), False),
            notes=tuple(notes),
        )


@dataclass(frozen=True)
class Hardware:
    """The cluster: identical nodes with identical GPUs."""

    gpus_per_node: int = 8
    nodes: int = 1
    gpu_memory_bytes: int = 80 * GIB
    cpu_ram_per_node_bytes: int = 1024 * GIB
    nvme_bytes_per_node: int | None = None

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Shape:
    """The training shape on one GPU."""

    micro_batch: int = 1
    seq_len: int = 2048
    attention: str = "sdpa"  # "eager" | "sdpa" | "flash"
    recompute: str = "none"  # "none" | "full" | "selective"


@dataclass(frozen=True)
class Allowances:
    """Stated allowances for what no formula can derive."""

    cuda_context_bytes: int = 768 * 2**20  # CUDA context + cuBLAS/NCCL workspaces, per GPU
    allocator_fraction: float = 0.05  # caching-allocator fragmentation, fraction of the other GPU bytes
    cpu_per_process_bytes: int = 4 * GIB  # Python, torch, CUDA libraries, dataloader, per rank
    dropout_mask_bytes: int = 1  # CUDA saves bool dropout masks


@dataclass(frozen=True)
class ModelCounts:
    """A model known only by its counts (unsupported family entered by hand): no activations."""

    total_params: int
    largest_layer_params: int
    name: str = "manual counts"


@dataclass(frozen=True)
class Component:
    """One memory consumer."""

    name: str
    device: str  # "gpu" | "cpu" | "nvme"
    bytes: int
    formula: str
    category: str  # "model_states" | "activations" | "buffers" | "overhead"
    phase: str  # "persistent" | "forward_backward" | "step" | "load"
    pinned: bool = False


@dataclass(frozen=True)
class MemoryEstimate:
    """Every component per GPU and per node, and the totals that decide whether it fits."""

    model_name: str
    total_params: int
    largest_layer_params: int
    settings: TrainingSettings
    hardware: Hardware
    shape: Shape
    components: tuple[Component, ...]
    notes: tuple[str, ...] = field(default=())
    symbols: tuple[tuple[str, float], ...] = field(default=())  # values of the letters used in the formulas

    def _sum(self, device: str, phase: str | None = None) -> int:
        return sum(c.bytes for c in self.components if c.device == device and (phase is None or c.phase == phase))

    @property
    def gpu_bytes(self) -> int:
        """Peak bytes on one GPU."""
        return self._sum("gpu", "persistent") + max(self._sum("gpu", "forward_backward"), self._sum("gpu", "step"))

    @property
    def gpu_peak_phase(self) -> str:
        return (
            "optimizer step" if self._sum("gpu", "step") > self._sum("gpu", "forward_backward") else "forward/backward"
        )

    @property
    def cpu_bytes_per_node(self) -> int:
        """Peak CPU RAM of one node (model loading and training do not coexist)."""
        return self._sum("cpu", "persistent") + max(self._sum("cpu", "load"), self._sum("cpu", "forward_backward"))

    @property
    def cpu_pinned_bytes_per_node(self) -> int:
        return sum(c.bytes for c in self.components if c.device == "cpu" and c.pinned)

    @property
    def nvme_bytes_per_node(self) -> int:
        return self._sum("nvme")

    @property
    def fits_gpu(self) -> bool:
        return self.gpu_bytes <= self.hardware.gpu_memory_bytes

    @property
    def fits_cpu(self) -> bool:
        return self.cpu_bytes_per_node <= self.hardware.cpu_ram_per_node_bytes

    @property
    def fits_nvme(self) -> bool:
        cap = self.hardware.nvme_bytes_per_node
        return self.nvme_bytes_per_node == 0 or cap is None or self.nvme_bytes_per_node <= cap

    @property
    def fits(self) -> bool:
        return self.fits_gpu and self.fits_cpu and self.fits_nvme

    def model_states_gpu_bytes(self) -> int:
        """Persistent parameters, gradients, master weights and optimizer states on one GPU."""
        return sum(
            c.bytes
            for c in self.components
            if c.device == "gpu" and c.category == "model_states" and c.phase == "persistent"
        )

    def gpu_peak_by_category(self) -> dict[str, int]:
        """Bytes on one GPU at the peak by category: the persistent components plus those of the larger
        transient phase (forward/backward or optimizer step); the values add up to ``gpu_bytes``."""
        transient = "step" if self.gpu_peak_phase == "optimizer step" else "forward_backward"
        out: dict[str, int] = {}
        for c in self.components:
            if c.device == "gpu" and c.phase in ("persistent", transient):
                out[c.category] = out.get(c.category, 0) + c.bytes
        return out

    def components_frame(self) -> pd.DataFrame:
        """One row per component (bytes and GiB), ready for a table or an altair chart."""
        frame = pd.DataFrame([asdict(c) for c in self.components])
        frame["gib"] = frame["bytes"] / GIB
        return frame

    def to_dict(self) -> dict[str, Any]:
        """Everything in bytes, JSON-serialisable."""
        return {
            "model": self.model_name,
            "total_params": self.total_params,
            "largest_layer_params": self.largest_layer_params,
            "settings": asdict(self.settings),
            "hardware": asdict(self.hardware),
            "shape": asdict(self.shape),
            "components": [asdict(c) for c in self.components],
            "totals": {
                "gpu_bytes": self.gpu_bytes,
                "gpu_peak_phase": self.gpu_peak_phase,
                "cpu_bytes_per_node": self.cpu_bytes_per_node,
                "cpu_pinned_bytes_per_node": self.cpu_pinned_bytes_per_node,
                "nvme_bytes_per_node": self.nvme_bytes_per_node,
            },
            "fits": {"gpu": self.fits_gpu, "cpu": self.fits_cpu, "nvme": self.fits_nvme, "all": self.fits},
            "notes": list(self.notes),
            "symbols": dict(self.symbols),
        }


# ---------------------------------------------------------------------------------------------------------
# the vectorised core: every value may be a numpy array over micro batch, sequence length or GPU count


@dataclass(frozen=True)
class _Raw:
    name: str
    device: str
    value: Any
    formula: str
    category: str
    phase: str
    pinned: bool = False


def _persistent_small_params(model: ModelSpec | ModelCounts, threshold: int) -> int:
    if not isinstance(model, ModelSpec):
        return 0
    return sum(m.params * m.count for m in model.modules if not m.tied and m.params < threshold)


def _components(
    model: ModelSpec | ModelCounts, st: TrainingSettings, gpus_per_node, nodes, b, s, shape: Shape, allow: Allowances
) -> list[_Raw]:
    p = model.total_params
    lg = model.largest_layer_params
    e = st.bytes_per_param
    n = np.asarray(gpus_per_node) * np.asarray(nodes)
    gpn = np.asarray(gpus_per_node)
    part = np.ceil(p / n)  # DeepSpeed pads partitions; the padding is negligible
    mixed = st.precision != "fp32"
    k = st.optimizer_states
    out: list[_Raw] = []

    def add(*args, **kwargs):
        out.append(_Raw(*args, **kwargs))

    # ---- parameters
    if st.stage < 3:
        add(
            "parameters",
            "gpu",
            e * p + 0 * n,
            f"{e}*P (full {st.precision} copy on every GPU)",
            "model_states",
            "persistent",
        )
    else:
        persist = _persistent_small_params(model, st.param_persistence_threshold)
        if st.offload_param == "none":
            add("parameters (partition)", "gpu", e * part, f"{e}*P/N", "model_states", "persistent")
        else:
            where = st.offload_param
            add(
                f"parameters (partition, offloaded to {where})",
                where,
                e * part * gpn,
                f"{e}*P/N per rank x gpus_per_node",
                "model_states",
                "persistent",
                pinned=where == "cpu" and st.offload_param_pin_memory,
            )
            if where == "nvme":
                add(
                    "parameter swap buffers (pinned)",
                    "cpu",
                    st.offload_param_buffer_count * st.offload_param_buffer_size * e * gpn + 0 * n,
                    f"buffer_count*buffer_size*{e} per rank x gpus_per_node",
                    "buffers",
                    "persistent",
                    pinned=True,
                )
        if st.hpz_partition_size > 1:
            add(
                "hpZ secondary parameter partition (ZeRO++)",
                "gpu",
                e * np.ceil(p / st.hpz_partition_size) + 0 * n,
                f"{e}*P/hpz (zero_hpz_partition_size={st.hpz_partition_size})",
                "model_states",
                "persistent",
            )
        if persist:
            add(
                "persistent small parameters",
                "gpu",
                e * persist + 0 * n,
                f"{e}*(params of modules below stage3_param_persistence_threshold={st.param_persistence_threshold})",
                "model_states",
                "persistent",
            )
        gathered = min(st.max_live_parameters, lg + st.prefetch_bucket_size)
        add(
            "gathered parameters (ZeRO-3 fetch + prefetch)",
            "gpu",
            e * gathered + 0 * n,
            f"{e}*min(max_live_parameters, largest_layer + prefetch_bucket_size)",
            "buffers",
            "forward_backward",
        )
        add(
            "largest layer's full gradient before reduce-scatter",
            "gpu",
            e * lg + 0 * n,
            f"{e}*largest_layer",
            "buffers",
            "forward_backward",
        )

    # ---- gradients (in the compute dtype; the fp32 copy is a step transient or lives with the offload)
    grad_where = "gpu"
    if st.stage == 1 and st.precision == "bf16" and st.grad_accum_fp32 and st.offload_optimizer == "none":
        add(
            "gradients (fp32 accumulation buffer, BF16_Optimizer)",
            "gpu",
            4 * p + 0 * n,
            "4*P (bf16 + ZeRO-1 + grad_accum_dtype fp32 selects BF16_Optimizer)",
            "model_states",
            "persistent",
        )
    elif st.stage <= 1:
        add(
            "gradients",
            "gpu",
            e * p + 0 * n,
            f"{e}*P (full gradients before the optimizer step)",
            "model_states",
            "persistent",
        )
    elif st.offload_optimizer == "none":
        add("gradients (partition)", "gpu", e * part, f"{e}*P/N", "model_states", "persistent")
    else:
        grad_where = "cpu"
        add(
            "fp32 gradients (partition, offloaded)",
            "cpu",
            4 * part * gpn,
            "4*P/N per rank x gpus_per_node",
            "model_states",
            "persistent",
            pinned=st.offload_optimizer_pin_memory,
        )

    # ---- fp32 master weights and optimizer states
    master_elems = p + 0 * n if st.stage == 0 else part
    master_text = "P" if st.stage == 0 else "P/N"
    opt_dev = st.offload_optimizer if st.stage >= 1 else "none"
    if opt_dev == "none":
        if mixed:
            add("fp32 master weights", "gpu", 4 * master_elems, f"4*{master_text}", "model_states", "persistent")
        add(
            f"optimizer states ({st.optimizer}: {k} fp32 tensors)",
            "gpu",
            4 * k * master_elems,
            f"{k}*4*{master_text}",
            "model_states",
            "persistent",
        )
    else:
        mult = gpn
        if opt_dev == "cpu":
            add(
                "fp32 master weights (offloaded)",
                "cpu",
                4 * part * mult,
                "4*P/N per rank x gpus_per_node",
                "model_states",
                "persistent",
                pinned=st.offload_optimizer_pin_memory,
            )
            add(
                f"optimizer states ({st.optimizer}, offloaded)",
                "cpu",
                4 * k * part * mult,
                f"{k}*4*P/N per rank x gpus_per_node",
                "model_states",
                "persistent",
                pinned=st.offload_optimizer_pin_memory,
            )
        else:
            add(
                "fp32 master weights + optimizer states (on NVMe)",
                "nvme",
                (4 + 4 * k) * part * mult,
                f"(4+{k}*4)*P/N per rank x gpus_per_node",
                "model_states",
                "persistent",
            )
            swap = np.minimum(st.sub_group_size, part)
            add(
                "optimizer swap buffers (pinned)",
                "cpu",
                st.offload_optimizer_buffer_count * 4 * swap * mult,
                "buffer_count*4*min(sub_group_size, P/N) per rank x gpus_per_node",
                "buffers",
                "persistent",
                pinned=True,
            )
        if grad_where == "gpu":
            # stage 1 with offload: fp32 gradient partition is copied to the CPU too
            add(
                "fp32 gradients (partition, offloaded)",
                "cpu",
                4 * part * mult,
                "4*P/N per rank x gpus_per_node",
                "model_states",
                "persistent",
                pinned=st.offload_optimizer_pin_memory,
            )

    # ---- optimizer-step transients on the GPU
    if opt_dev == "none":
        if st.stage == 0 and mixed:
            add(
                "fp32 gradient copy during step",
                "gpu",
                4 * p + 0 * n,
                "4*P (FP16_Optimizer flat fp32 grads)",
                "buffers",
                "step",
            )
        elif st.stage in (1, 2):
            add("fp32 gradient partition during step", "gpu", 4 * part, "4*P/N", "buffers", "step")
        elif st.stage == 3:
            add(
                "fp32 gradients of one sub-group during step",
                "gpu",
                4 * np.minimum(st.sub_group_size, part),
                "4*min(sub_group_size, P/N)",
                "buffers",
                "step",
            )
    if st.stage in (1, 2):
        add(
            "all-gather bucket after step",
            "gpu",
            e * np.minimum(st.allgather_bucket_size, p) + 0 * n,
            f"{e}*min(allgather_bucket_size, P)",
            "buffers",
            "step",
        )

    # ---- communication buffers during backward
    if st.stage == 0:
        add(
            "gradient all-reduce bucket",
            "gpu",
            e * min(500_000_000, p) + 0 * n,
            f"{e}*min(5e8, P)",
            "buffers",
            "forward_backward",
        )
    else:
        copies = 2 if (st.overlap_comm and st.stage in (1, 2) and st.contiguous_gradients) else 1
        add(
            "gradient reduce bucket(s)",
            "gpu",
            copies * e * min(st.reduce_bucket_size, p) + 0 * n,
            f"{copies}*{e}*min(reduce_bucket_size, P)" + (" (overlap_comm double buffer)" if copies == 2 else ""),
            "buffers",
            "forward_backward",
        )

    # ---- activations
    if isinstance(model, ModelSpec):
        act = activation_breakdown(
            model,
            b,
            s,
            e,
            shape.attention,
            shape.recompute,
            st.partition_activations,
            st.cpu_checkpointing,
            1,
            allow.dropout_mask_bytes,
        )
        add(
            "activations (saved for backward)",
            "gpu",
            act.saved_total + 0 * n,
            act.formula,
            "activations",
            "forward_backward",
        )
        if shape.recompute == "full":
            add(
                "recomputed layer during backward",
                "gpu",
                act.recompute_peak + 0 * n,
                "one layer's saved tensors, rebuilt from its checkpoint",
                "activations",
                "forward_backward",
            )
            if st.cpu_checkpointing:
                add(
                    "activation checkpoints on CPU",
                    "cpu",
                    act.checkpoints_cpu * gpn,
                    "L*e*b*s*h per rank x gpus_per_node",
                    "activations",
                    "forward_backward",
                )
        add(
            "logits and loss working memory",
            "gpu",
            act.logits_working + 0 * n,
            f"{e}*b*s*V (logits) + 4*b*s*V (fp32 upcast / its gradient)",
            "activations",
            "forward_backward",
        )

    # ---- CPU: model loading and per-process overhead
    if st.stage == 3:
        add("model construction (zero.Init: partitions only)", "cpu", 0 * n, "0 (zero.Init)", "overhead", "load")
    else:
        add(
            "model construction (full fp32 model per rank)",
            "cpu",
            4 * p * gpn + 0 * n,
            "4*P per rank x gpus_per_node (before deepspeed.initialize)",
            "overhead",
            "load",
        )
    add(
        "process overhead (allowance)",
        "cpu",
        allow.cpu_per_process_bytes * gpn + 0 * n,
        f"{allow.cpu_per_process_bytes / GIB:g} GiB per rank x gpus_per_node",
        "overhead",
        "persistent",
    )
    return out


def _finish_gpu(raws: list[_Raw], allow: Allowances) -> list[_Raw]:
    """Add the CUDA context and the allocator allowance, which depend on the other GPU bytes."""
    persistent = sum(r.value for r in raws if r.device == "gpu" and r.phase == "persistent")
    fb = sum(r.value for r in raws if r.device == "gpu" and r.phase == "forward_backward")
    step = sum(r.value for r in raws if r.device == "gpu" and r.phase == "step")
    peak = persistent + np.maximum(fb, step)
    return [
        *raws,
        _Raw(
            "CUDA context and workspaces (allowance)",
            "gpu",
            allow.cuda_context_bytes + 0 * peak,
            f"{allow.cuda_context_bytes / 2**20:g} MiB",
            "overhead",
            "persistent",
        ),
        _Raw(
            "allocator fragmentation (allowance)",
            "gpu",
            allow.allocator_fraction * peak,
            f"{allow.allocator_fraction:g} x other GPU bytes at peak",
            "overhead",
            "persistent",
        ),
    ]


def _check_shape(shape: Shape) -> None:
    if shape.attention not in ATTENTION_IMPLS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION_IMPLS)}, got {shape.attention!r}.")
    if shape.recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {shape.recompute!r}.")
    if shape.micro_batch < 1 or shape.seq_len < 1:
        raise ValueError("micro_batch and seq_len must be >= 1.")


def estimate(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    hardware: Hardware | None = None,
    shape: Shape | None = None,
    *,
    precision: str | None = None,
    allowances: Allowances | None = None,
) -> MemoryEstimate:
    """Estimate per-GPU, per-node CPU and NVMe memory for training ``model`` with ``ds_config``.

    ``precision`` ("fp32" | "fp16" | "bf16") overrides what the config says (e.g. for "auto").
    """
    hardware = hardware or Hardware()
    shape = shape or Shape()
    allow = allowances or Allowances()
    _check_shape(shape)
    if hardware.gpus_per_node < 1 or hardware.nodes < 1:
        raise ValueError("gpus_per_node and nodes must be >= 1.")
    st = TrainingSettings.from_ds_config(ds_config)
    if precision is not None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.")
        st = replace(st, precision=precision)
    raws = _finish_gpu(
        _components(model, st, hardware.gpus_per_node, hardware.nodes, shape.micro_batch, shape.seq_len, shape, allow),
        allow,
    )
    components = tuple(
        Component(r.name, r.device, round(float(r.value)), r.formula, r.category, r.phase, r.pinned) for r in raws
    )
    notes = list(st.notes)
    if not isinstance(model, ModelSpec):
        notes.append(
            "Model given by counts only: activations, logits and persistent small parameters are not estimated."
        )
    if shape.recompute == "selective" and shape.attention != "eager":
        notes.append("Selective recompute only drops the attention scores, which SDPA/flash never store.")
    if isinstance(model, ModelSpec) and model.position == "relative" and shape.attention != "eager":
        notes.append("T5-style relative position bias needs eager attention: activations estimated for eager.")
    if st.partition_activations:
        notes.append(
            "partition_activations splits checkpoints across tensor-parallel ranks: no effect here "
            "(data parallelism only)."
        )
    name = model.name
    symbols: dict[str, float] = {
        "P": model.total_params,
        "largest_layer": model.largest_layer_params,
        "N": hardware.total_gpus,
        "gpus_per_node": hardware.gpus_per_node,
        "nodes": hardware.nodes,
        "e": st.bytes_per_param,
        "k": st.optimizer_states,
        "b": shape.micro_batch,
        "s": shape.seq_len,
    }
    if st.stage == 3 and st.hpz_partition_size > 1:
        symbols["hpz"] = st.hpz_partition_size
    if isinstance(model, ModelSpec):
        symbols.update(
            h=model.hidden_size,
            L=model.num_layers + model.num_decoder_layers,
            a=model.num_heads,
            kv=model.num_kv_heads,
            d=model.head_dim,
            I=model.intermediate_size,
            V=model.vocab_size,
        )
    return MemoryEstimate(
        name,
        model.total_params,
        model.largest_layer_params,
        st,
        hardware,
        shape,
        components,
        tuple(notes),
        tuple(symbols.items()),
    )


def evaluate_arrays(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    hardware: Hardware,
    shape: Shape,
    *,
    micro_batch=None,
    seq_len=None,
    gpus_per_node=None,
    nodes=None,
    precision: str | None = None,
    allowances: Allowances | None = None,
) -> dict[str, np.ndarray]:
    """Vectorised totals: any of micro_batch / seq_len / gpus_per_node / nodes may be numpy arrays.

    Returns arrays ``gpu_bytes``, ``cpu_bytes_per_node``, ``nvme_bytes_per_node`` and one ``gpu:<component>``
    array per GPU component.
    """
    allow = allowances or Allowances()
    _check_shape(shape)
    st = TrainingSettings.from_ds_config(ds_config)
    if precision is not None:
        st = replace(st, precision=precision)
    b = np.asarray(shape.micro_batch if micro_batch is None else micro_batch, dtype=np.float64)
    s = np.asarray(shape.seq_len if seq_len is None else seq_len, dtype=np.float64)
    gpn = np.asarray(hardware.gpus_per_node if gpus_per_node is None else gpus_per_node, dtype=np.float64)
    nn = np.asarray(hardware.nodes if nodes is None else nodes, dtype=np.float64)
    raws = _finish_gpu(_components(model, st, gpn, nn, b, s, shape, allow), allow)
    shape_all = np.broadcast_shapes(b.shape, s.shape, gpn.shape, nn.shape)

    def total(device: str, phase: str) -> np.ndarray:
        acc = np.zeros(shape_all)
        for r in raws:
            if r.device == device and r.phase == phase:
                acc = acc + r.value
        return acc

    result = {
        "gpu_bytes": total("gpu", "persistent") + np.maximum(total("gpu", "forward_backward"), total("gpu", "step")),
        "cpu_bytes_per_node": total("cpu", "persistent")
        + np.maximum(total("cpu", "load"), total("cpu", "forward_backward")),
        "nvme_bytes_per_node": total("nvme", "persistent"),
    }
    for r in raws:
        if r.device == "gpu":
            result[f"gpu:{r.name}"] = np.broadcast_to(np.asarray(r.value, dtype=np.float64), shape_all)
    return result
