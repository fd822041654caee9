"""GPU catalog: the accelerators users pick from, with their memory and whether they compute in bf16.

Memory is the usable device memory as the vendor states it, in GiB (what ``torch.cuda.mem_get_info``
reports as total, rounded): an "80GB" H100 or A100 has 80 GiB. bf16 support is the hardware's (NVIDIA
Ampere and newer, AMD CDNA2 and newer); V100 and T4 (Volta, Turing) have none, so bf16 training there
is emulated or refused and fp16 is the mixed-precision choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

GIB: Final = 2**30
#: CPU RAM per node when none is given (the app's Start page, every dsconfig command and the planner agree).
DEFAULT_CPU_RAM_GIB: Final = 512.0


@dataclass(frozen=True)
class GPU:
    """One catalog entry."""

    name: str
    memory_gib: float
    bf16: bool

    @property
    def memory_bytes(self) -> int:
        """Usable device memory in bytes."""
        return int(self.memory_gib * GIB)

    def precision_problem(self, precision: str) -> str | None:
        """Why training in ``precision`` does not work on this GPU (a sentence without its full stop: callers add
        theirs), or None."""
        if precision == "bf16" and not self.bf16:
            return (f"The {self.name} has no bf16 arithmetic: bf16 training is slow or refused there. Choose fp16 "
                    "with loss scaling for mixed precision")
        return None


GPUS: Final[tuple[GPU, ...]] = (
    GPU("NVIDIA H100 80GB", 80.0, True),
    GPU("NVIDIA H200 141GB", 141.0, True),
    GPU("NVIDIA B200 180GB", 180.0, True),
    GPU("NVIDIA A100 80GB", 80.0, True),
    GPU("NVIDIA A100 40GB", 40.0, True),
    GPU("NVIDIA L40S 48GB", 48.0, True),
    GPU("NVIDIA A10G 24GB", 24.0, True),
    GPU("NVIDIA L4 24GB", 24.0, True),
    GPU("NVIDIA V100 32GB", 32.0, False),
    GPU("NVIDIA V100 16GB", 16.0, False),
    GPU("NVIDIA RTX 4090 24GB", 24.0, True),
    GPU("NVIDIA T4 16GB", 16.0, False),
    GPU("AMD MI300X 192GB", 192.0, True),
    GPU("AMD MI250X 128GB", 128.0, True),
)

#: Name → entry, in catalog order.
GPU_BY_NAME: Final = MappingProxyType({g.name: g for g in GPUS})


def gpu_names() -> tuple[str, ...]:
    """The catalog's GPU names, in display order."""
    return tuple(GPU_BY_NAME)


def find_gpu(name: object) -> GPU | None:
    """The catalog entry called ``name`` (exact name), or None when it is not in the catalog (or not a
    string: the name may come from untrusted data such as a shared link)."""
    return GPU_BY_NAME.get(name) if isinstance(name, str) else None
