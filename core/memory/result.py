"""What an estimate is about and what it returns: the cluster, the training shape, the allowances, the components.

GPU peak = persistent components + max(forward/backward transients, optimizer-step transients): the
activation peak (end of forward / start of backward) and the step peak do not coexist.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from core.findings import brief
from core.hardware import DEFAULT_GPU, GIB, GPU_BY_NAME
from core.memory.settings import TrainingSettings

#: Beyond these no machine or model is built, and 10**400 overflows the float arithmetic of the models.
_LARGEST_BYTES = 2.0**80
_LARGEST_COUNT = 1e18


def gib_used(used: float, capacity: float | None, digits: int = 1) -> str:
    """``used`` bytes in GiB with ``digits`` decimals, rounded as every other figure is, except where that would
    contradict its verdict against ``capacity`` (shown with the same decimals): then down when it fits, up when it
    does not (79.996 of 80 is "79.9", fits; 80.002 is "80.1", does not; both were "80.0")."""
    value = used / GIB
    shown = round(value, digits)
    if capacity is not None:
        limit, step = round(capacity / GIB, digits), 10.0 ** -digits
        if used <= capacity and shown >= limit:
            shown = math.floor(value / step) * step
        elif used > capacity and shown <= limit:  # at least a step above the shown limit (75.199 of 75.197)
            shown = max(math.ceil(value / step) * step, limit + step)
    return f"{shown:.{digits}f}"


def gib_capacity(capacity: float) -> str:
    """``capacity`` bytes in GiB at one decimal, or two where one would round it (the A100 80GB's 79.15)."""
    value = capacity / GIB
    return f"{value:.1f}" if round(value, 1) == round(value, 2) else f"{value:.2f}"


def gib_margin(used: float, capacity: float, digits: int = 1) -> str:
    """What is left (``"3.2 GiB free"``) or missing (``"0.1 GiB over"``) of ``capacity``, rounded toward the
    verdict as :func:`gib_used` rounds: an overrun is never shown as 0."""
    return (f"{gib_used(capacity - used, None, digits)} GiB free" if used <= capacity else
            f"{gib_used(used - capacity, 0, digits)} GiB over")


def _check_finite_count(name: str, value: object, largest: float) -> None:
    """ValueError unless a Python number ``value`` is in [0, largest] (None and array inputs are the caller's)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if not 0 <= value <= largest:  # also false for NaN
        raise ValueError(f"{name} must be a number from 0 to {largest:g}, got {brief(value)}.")


@dataclass(frozen=True)
class Hardware:
    """The cluster: identical nodes with identical GPUs (by default 8 of the catalog's default GPU)."""

    gpus_per_node: int = 8
    nodes: int = 1
    gpu_memory_bytes: int = GPU_BY_NAME[DEFAULT_GPU].memory_bytes
    cpu_ram_per_node_bytes: int = 1024 * GIB
    nvme_bytes_per_node: int | None = None

    def __post_init__(self) -> None:
        for name in ("gpu_memory_bytes", "cpu_ram_per_node_bytes", "nvme_bytes_per_node"):
            _check_finite_count(f"Hardware.{name}", getattr(self, name), _LARGEST_BYTES)

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Shape:
    """The training shape on one GPU."""

    micro_batch: int = 1
    seq_len: int = 2048
    attention: str = "sdpa"  # "eager" | "sdpa" | "flash" (FlashAttention-2) | "flash1" (flash-attn 1.x / Triton)
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

    def __post_init__(self) -> None:
        _check_finite_count("ModelCounts.total_params", self.total_params, _LARGEST_COUNT)
        _check_finite_count("ModelCounts.largest_layer_params", self.largest_layer_params, _LARGEST_COUNT)


def counts_problem(total_params: float, largest_layer_params: float, total_name: str = "the total",
                   largest_name: str = "the largest layer") -> str | None:
    """Why two hand-given counts cannot describe a model (one layer is part of the model), naming the inputs as
    the caller calls them; None when they can."""
    if largest_layer_params > total_params:
        return (f"{largest_name} {int(largest_layer_params):,} is more than {total_name} "
                f"{int(total_params):,}: one layer is part of the model (usually the embedding, vocab x hidden)")
    return None


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
    states_only: bool = False
    """The model is given by parameter counts only: activations, logits and persistent small parameters are not
    in the totals (see :attr:`scope`)."""

    @property
    def scope(self) -> str | None:
        """What the totals leave out, for every place that shows them (None: nothing)."""
        return ("model states only: no activations for a model given by parameter counts (pick it from the "
                "catalog or upload its config.json)") if self.states_only else None

    @property
    def assumptions(self) -> str:
        """What the totals were computed for, in words, for every place that shows them: precision, micro batch,
        sequence length, attention kernel and recomputation (the same numbers differ by 10x across these), and the
        stage when the config leaves it to "auto"."""
        shape = self.shape
        recompute = {"none": "no recomputation", "full": "full recomputation"}.get(
            shape.recompute, f"{shape.recompute} recomputation")
        stage = ('ZeRO-0 for stage "auto" (plain DeepSpeed; the HF Trainer\'s Accelerate fills 2), '
                 if self.settings.stage_auto else "")
        return (f"{stage}{self.settings.precision}, micro batch {shape.micro_batch}, {shape.seq_len} tokens, "
                f"{shape.attention} attention, {recompute}")

    def _sum(self, device: str, phase: str | None = None, category: str | None = None) -> int:
        return sum(c.bytes for c in self.components if c.device == device and (phase is None or c.phase == phase)
                   and category in (None, c.category))

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
        """Peak CPU RAM of one node: the process overhead, plus the larger of model loading and training (the model
        built before ``deepspeed.initialize`` moves to the GPUs, or is partitioned, before the optimizer creates its
        offloaded states; DeepSpeed's own ZeRO-2 estimator takes the same maximum)."""
        return self._sum("cpu", "persistent", "overhead") + max(self.cpu_load_bytes_per_node, self._cpu_training())

    @property
    def cpu_load_bytes_per_node(self) -> int:
        """CPU RAM of one node's model construction, before ``deepspeed.initialize`` (``buffers.host_overheads``)."""
        return self._sum("cpu", "load")

    @property
    def cpu_peak_is_model_load(self) -> bool:
        """The CPU RAM peak is model construction (every rank's whole model before ``deepspeed.initialize``), not
        training."""
        return self.cpu_load_bytes_per_node > self._cpu_training()

    def _cpu_training(self) -> int:
        """CPU RAM of one node while training, without the process overhead."""
        return (self._sum("cpu", "persistent") - self._sum("cpu", "persistent", "overhead")
                + self._sum("cpu", "forward_backward"))

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
            "states_only": self.states_only,
        }

