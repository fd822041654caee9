"""core.hardware: the GPU catalog."""

from __future__ import annotations

import pytest

from core import hardware


def test_names_are_unique_and_lookup_round_trips():
    names = hardware.gpu_names()
    assert len(names) == len(set(names)) == len(hardware.GPUS)
    for gpu in hardware.GPUS:
        assert hardware.find_gpu(gpu.name) is gpu
    assert hardware.find_gpu("Custom") is None
    assert hardware.find_gpu("nvidia h100 80gb") is None  # exact names only
    assert hardware.find_gpu(["NVIDIA H100 80GB"]) is None  # untrusted data (a shared link) never raises


@pytest.mark.parametrize("gpu", hardware.GPUS, ids=lambda g: g.name)
def test_memory_matches_the_size_in_the_name(gpu):
    # Every catalog name ends with the vendor's memory size ("... 80GB"): the number must agree.
    size = gpu.name.rsplit(" ", 1)[1]
    assert size.endswith("GB")
    assert gpu.memory_gib == float(size[:-2])
    assert gpu.memory_bytes == int(gpu.memory_gib) * 2**30


def test_bf16_follows_the_architecture():
    assert hardware.find_gpu("NVIDIA V100 32GB").bf16 is False
    assert hardware.find_gpu("NVIDIA T4 16GB").bf16 is False
    assert hardware.find_gpu("NVIDIA A100 40GB").bf16 is True
    assert hardware.find_gpu("NVIDIA H100 80GB").bf16 is True
    assert hardware.find_gpu("AMD MI250X 128GB").bf16 is True
