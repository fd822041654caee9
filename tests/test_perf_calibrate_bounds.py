"""calibrate reaches measurements the planner itself predicts: a CPU optimizer faster than the catalog's, and fused
attention on a GPU whose FlashAttention rate is below its GEMM rate (the H100)."""

from __future__ import annotations

from dataclasses import replace

from core.memory import Shape
from core.models import get_spec
from core.perf import Cluster, calibrate, predict

LLAMA = get_spec("meta-llama/Llama-2-7b-hf")
H100 = Cluster("NVIDIA H100 80GB", 8)
CPU_OFFLOAD = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
               "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
               "zero_optimization": {"stage": 2, "overlap_comm": True, "contiguous_gradients": True,
                                     "offload_optimizer": {"device": "cpu", "pin_memory": True}}}
ZERO3 = {**CPU_OFFLOAD, "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True}}


def test_a_step_the_planner_predicts_with_a_faster_cpu_optimizer_is_calibrated():
    """--cpu-adam 3.6e9 predicted 2.2 s, and --calibrate-step 2.2 on the default cluster was refused as "faster than
    this config can run with every efficiency at 1": the CPU optimizer's rate rose only as far as the GEMM's."""
    shape = Shape(1, 2048, "flash", "none")
    faster_host = replace(H100, cpu_adam_params_per_s=2 * H100.cpu_adam_rate)
    measured = predict(CPU_OFFLOAD, LLAMA, faster_host, shape).step_seconds
    assert measured < predict(CPU_OFFLOAD, LLAMA, H100, shape).step_seconds
    fitted = calibrate(CPU_OFFLOAD, LLAMA, H100, shape, measured_step_seconds=measured)
    assert abs(predict(CPU_OFFLOAD, LLAMA, fitted, shape).step_seconds / measured - 1) < 0.02
    assert fitted.cpu_adam_rate > H100.cpu_adam_rate


def test_fused_attention_follows_a_calibrated_compute_efficiency_on_the_h100():
    """At 64K tokens the H100's FlashAttention rate (below its GEMMs') stayed at its catalog figure whatever the
    calibration fitted, so a long-sequence step 25% faster than predicted could not be calibrated, while the same
    case on an A100 could."""
    shape = Shape(1, 65536, "flash", "full")
    before = predict(ZERO3, LLAMA, H100, shape).step_seconds
    fitted = calibrate(ZERO3, LLAMA, H100, shape, measured_step_seconds=0.75 * before)
    assert abs(predict(ZERO3, LLAMA, fitted, shape).step_seconds / (0.75 * before) - 1) < 0.02
    assert fitted.attention_efficiency("flash") > H100.attention_efficiency("flash")
    assert fitted.attention_efficiency("flash") <= min(1.0, fitted.compute_efficiency)
    # a default cluster's fused attention is the catalog's measured figure, unchanged
    assert H100.attention_efficiency("flash") == min(H100.compute_efficiency, H100.perf.flash_attention_fraction)
