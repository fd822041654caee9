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


#: GDDR memory with ECC on gives 1/16 of itself to the check bits (the datacenter GDDR cards ship with ECC on).
_GDDR_ECC = {"NVIDIA L40S 48GB", "NVIDIA A10G 24GB", "NVIDIA L4 24GB", "NVIDIA T4 16GB"}


@pytest.mark.parametrize("gpu", hardware.GPUS, ids=lambda g: g.name)
def test_memory_is_what_pytorch_reports_not_the_size_in_the_name(gpu):
    # The name ends with the vendor's size per package ("... 80GB", HBM and GDDR sizes being GiB); a device
    # (an MI250X GCD) has its share. PyTorch's total is below it (the driver keeps some), by little: the
    # marketing figure itself, or the size misread as 10**9 bytes (80 GB = 74.5 GiB), fail here.
    size = gpu.name.rsplit(" ", 1)[1]
    assert size.endswith("GB")
    nominal = float(size[:-2]) / gpu.devices
    usable = nominal * 15 / 16 if gpu.name in _GDDR_ECC else nominal
    assert 0.97 * usable <= gpu.memory_gib < nominal
    assert gpu.memory_bytes == int(gpu.memory_gib * 2**30)


@pytest.mark.parametrize("gpu", hardware.GPUS, ids=lambda g: g.name)
def test_every_capacity_cites_its_source(gpu):
    # A figure comes from a public report naming the GPU (a GitHub thread), or says it is unverified.
    assert "https://github.com/" in gpu.source
    assert f"{gpu.memory_gib:.2f}" in gpu.source or gpu.source.startswith("unverified:")


def test_the_mi250x_entry_is_one_gcd_the_device_a_rank_runs_on():
    mi250x = hardware.find_gpu("AMD MI250X 128GB")
    assert mi250x.devices == 2 and mi250x.memory_gib * mi250x.devices < 128
    assert all(g.devices == 1 for g in hardware.GPUS if g is not mi250x)


def test_the_default_gpu_is_in_the_catalog():
    assert hardware.find_gpu(hardware.DEFAULT_GPU) is not None


def test_bf16_follows_the_architecture():
    assert hardware.find_gpu("NVIDIA V100 32GB").bf16 is False
    assert hardware.find_gpu("NVIDIA T4 16GB").bf16 is False
    assert hardware.find_gpu("NVIDIA A100 40GB").bf16 is True
    assert hardware.find_gpu("NVIDIA H100 80GB").bf16 is True
    assert hardware.find_gpu("AMD MI250X 128GB").bf16 is True


def test_the_planner_times_the_same_device_the_catalog_sizes():
    """The MI250X entry is one GCD (64 GiB, one rank): the planner's peak and bandwidth are one GCD's, half the
    package datasheet's 383 TFLOPs and 3.2 TB/s, not both dies'."""
    from core.perf.hardware import GPU_PERF

    gcd = GPU_PERF["AMD MI250X 128GB"]
    assert hardware.GPU_BY_NAME["AMD MI250X 128GB"].memory_gib < 64
    assert (gcd.peak_tflops, gcd.hbm_gbyte_s) == (383.0 / 2, 3200.0 / 2)
