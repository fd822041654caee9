"""GPU catalog: the accelerators users pick from, with their usable memory and whether they compute in bf16.

``memory_gib`` is the device memory PyTorch reports as the device's total, in GiB
(``torch.cuda.get_device_properties(i).total_memory``, the "total capacity" of PyTorch's out-of-memory
message): what every allocation of a rank runs against, and so what a predicted peak must stay within. It
is below the vendor's figure in the name ("80GB"): the driver keeps part of the memory for itself, GDDR
memory with ECC on (T4, A10G, L4, L40S) gives up a further 1/16, and ``nvidia-smi`` reports a larger
total than PyTorch does. The CUDA context is allocated inside this total, so the memory model adds it to
the peak (core.memory's CUDA context allowance) and does not take it from the capacity.

The figure varies with the driver (reports for the A100 80GB range from 79.15 to 79.35 GiB), so each entry
holds the lowest figure found in a public report naming that GPU; ``source`` cites it. Where no PyTorch
figure was found, the source says "unverified" and which other figure stands in. AMD's MI250X is two GCDs
that PyTorch sees as two devices of 64 GB, one DeepSpeed rank each: its entry is one GCD (count GPUs per
node in GCDs, 8 on a 4-MI250X node), though its name keeps the package's 128GB.

bf16 support is the hardware's (NVIDIA Ampere and newer, AMD CDNA2 and newer); V100 and T4 (Volta,
Turing) have none, so bf16 training there is emulated or refused and fp16 is the mixed-precision choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

GIB: Final = 2**30
#: CPU RAM per node when none is given (the app's Start page, every dsconfig command and the planner agree).
DEFAULT_CPU_RAM_GIB: Final = 512.0
#: The GPU when none is picked (the app's first context, ``dsconfig fit`` and the memory model's Hardware).
DEFAULT_GPU: Final = "NVIDIA A100 80GB"


@dataclass(frozen=True)
class GPU:
    """One catalog entry: ``devices`` PyTorch devices (DeepSpeed ranks) per package of the name's size."""

    name: str
    memory_gib: float
    bf16: bool
    source: str
    devices: int = 1

    @property
    def memory_bytes(self) -> int:
        """Usable device memory in bytes."""
        return int(self.memory_gib * GIB)

    def counting_note(self) -> str | None:
        """How to count GPUs of a package that PyTorch sees as several devices (a sentence without its full stop:
        callers add theirs), or None for a one-device GPU."""
        if self.devices == 1:
            return None
        return (f"One {self.name} is {self.devices} devices (GCDs) of {self.memory_gib:g} GiB, one DeepSpeed rank "
                f"each: count GPUs per node in GCDs ({self.devices} per package)")

    def precision_problem(self, precision: str) -> str | None:
        """Why training in ``precision`` does not work on this GPU (a sentence without its full stop: callers add
        theirs), or None."""
        if precision == "bf16" and not self.bf16:
            return (f"The {self.name} has no bf16 arithmetic: bf16 training is slow or refused there. Choose fp16 "
                    "with loss scaling for mixed precision")
        return None


_GH = "https://github.com/"
GPUS: Final[tuple[GPU, ...]] = (
    GPU("NVIDIA H100 80GB", 79.10, True,
        f"PyTorch 79.10 GiB (vLLM's total_gpu_memory, 8x H100: {_GH}huggingface/trl/issues/2688); 79.11 GiB on an "
        f"H100 80GB HBM3, driver 535 ({_GH}vllm-project/vllm/issues/27508)"),
    GPU("NVIDIA H200 141GB", 140.40, True,
        f"unverified: nvidia-smi's 143771 MiB ({_GH}sgl-project/sglang/issues/3196), an upper bound; no PyTorch "
        "figure was found, and PyTorch's total is below nvidia-smi's (H100: 79.10 against 79.65 GiB)"),
    GPU("NVIDIA B200 180GB", 178.35, True,
        f"CUDA's totalGlobalMem, which PyTorch reports, 178.35 GiB on an NVIDIA B200 "
        f"({_GH}pytorch/ao/pull/4002)"),
    GPU("NVIDIA A100 80GB", 79.15, True,
        f"PyTorch 79.15 GiB on an A100 80GB ({_GH}vllm-project/vllm/issues/4408); older drivers 79.25 "
        f"({_GH}levihsu/OOTDiffusion/issues/235) and 79.35 ({_GH}Instruction-Tuning-with-GPT-4/GPT-4-LLM/issues/16)"),
    GPU("NVIDIA A100 40GB", 39.50, True,
        f"PyTorch 39.50 GiB on an A100 ({_GH}TianheWu/CoSeR/issues/10); one report only"),
    GPU("NVIDIA L40S 48GB", 44.42, True,
        f"PyTorch 44.42 GiB on 8x L40S ({_GH}stepfun-ai/Step-Video-T2V/issues/8); 44.68 on Windows, AWS G6e "
        f"({_GH}vladmandic/sdnext/issues/3656)"),
    GPU("NVIDIA A10G 24GB", 22.49, True,
        f"PyTorch 22.49 GiB on an A10G, 2022 ({_GH}AUTOMATIC1111/stable-diffusion-webui/issues/1259); one report "
        "only, and the A10 (the same GA102 chip and 24 GB) reports 21.99 GiB on a newer driver "
        f"({_GH}zai-org/CogVLM/issues/236)"),
    GPU("NVIDIA L4 24GB", 22.49, True,
        f"unverified: nvidia-smi's 23034 MiB on an NVIDIA L4 ({_GH}lmstudio-ai/lmstudio-bug-tracker/issues/1638, "
        f"{_GH}modal-labs/modal-client/pull/2797), an upper bound; no PyTorch figure was found"),
    GPU("NVIDIA V100 32GB", 31.74, False,
        f"PyTorch 31.74 GiB on a V100 32GB ({_GH}liucongg/ChatGLM-Finetuning/issues/73) and on 8x V100 "
        f"({_GH}haotian-liu/LLaVA/issues/812)"),
    GPU("NVIDIA V100 16GB", 15.78, False,
        f"PyTorch 15.78 GiB on a 16G V100 ({_GH}kchengiva/Shift-GCN/issues/34); one report only"),
    GPU("NVIDIA RTX 4090 24GB", 23.52, True,
        f"PyTorch 23.52 GiB on a 4090 24G ({_GH}Soul-AILab/SoulX-FlashTalk/issues/5); 23.64 "
        f"({_GH}ali-vilab/VGen/issues/104, {_GH}3DTopia/Phidias-Diffusion/issues/8) and 23.68 on older drivers "
        f"({_GH}zai-org/CogVideo/issues/36)"),
    GPU("NVIDIA T4 16GB", 14.74, False,
        f"PyTorch 14.74 GiB on a Colab T4 ({_GH}zai-org/CogVideo/issues/741); 14.75 "
        f"({_GH}hpcaitech/Open-Sora/issues/697)"),
    GPU("AMD MI300X 192GB", 191.98, True,
        f"HIP's device memory pool, 201310208 KiB = 191.98 GiB, in rocminfo on an MI300X "
        f"({_GH}ROCm/vllm/issues/397)"),
    GPU("AMD MI250X 128GB", 63.98, True,
        f"one GCD: HIP's device memory pool, 67092480 KiB = 63.98 GiB, in rocminfo on an MI250X "
        f"({_GH}ROCm/flash-attention/issues/149)", devices=2),
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
