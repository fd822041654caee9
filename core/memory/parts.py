"""The vectorised core shared by the component groups: one ``Part`` per memory consumer, and their ``Inputs``.

Every numeric value may be a numpy array over micro batch, sequence length, GPUs per node or nodes, so one pass
answers a whole sweep; ``estimate`` turns the parts of a single point into ``Component`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.memory.result import Allowances, ModelCounts, Shape
from core.memory.settings import TrainingSettings
from core.models.arch import ModelSpec


def dtype_label(nbytes: int) -> str:
    """How a part's name calls an element of ``nbytes`` bytes: fp32, or 16-bit (fp16 / bf16)."""
    return "fp32" if nbytes == 4 else "16-bit"


@dataclass(frozen=True)
class Part:
    """One memory consumer before rounding: ``value`` bytes (scalar or array) and the formula behind it."""

    name: str
    device: str
    value: Any
    formula: str
    category: str
    phase: str
    pinned: bool = False


@dataclass(frozen=True)
class Inputs:
    """What every component group reads: the model's counts, the settings and the (array) cluster and shape."""

    model: ModelSpec | ModelCounts
    st: TrainingSettings
    shape: Shape
    allow: Allowances
    gpus_per_node: Any
    nodes: Any
    b: Any
    s: Any

    @property
    def p(self) -> int:
        """Total parameters."""
        return self.model.total_params

    @property
    def lg(self) -> int:
        """Parameters of the largest layer."""
        return self.model.largest_layer_params

    @property
    def e(self) -> int:
        """Bytes per element of the compute dtype."""
        return self.st.bytes_per_param

    @property
    def n(self) -> Any:
        """Ranks: GPUs per node x nodes."""
        return np.asarray(self.gpus_per_node) * np.asarray(self.nodes)

    @property
    def gpn(self) -> Any:
        return np.asarray(self.gpus_per_node)

    @property
    def part(self) -> Any:
        """Parameters of one rank's partition (DeepSpeed pads partitions; the padding is negligible)."""
        return np.ceil(self.p / self.n)

    @property
    def sub_group(self) -> Any:
        """Elements of one rank's largest ZeRO-3 optimizer sub-group: sub_group_size capped by the partition. 0 makes
        every parameter tensor its own sub-group (stage3.py ``_create_fp16_sub_groups``), so the largest module's
        share of each rank bounds it."""
        if self.st.sub_group_size == 0:
            return np.minimum(np.ceil(self.lg / self.n), self.part)
        return np.minimum(self.st.sub_group_size, self.part)

    @property
    def sub_group_text(self) -> str:
        """How ``sub_group`` is computed, for a part's formula."""
        return "min(largest module/N, P/N) (sub_group_size 0)" if self.st.sub_group_size == 0 \
            else "min(sub_group_size, P/N)"

    @property
    def mixed(self) -> bool:
        return self.st.precision != "fp32"

    @property
    def k(self) -> int:
        """fp32 optimizer state tensors per parameter."""
        return self.st.optimizer_states
