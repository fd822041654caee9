"""Planner predictions that must respect what DeepSpeed and the hardware do: found by a property hunt over random
configs (each test names the absurd figure it used to give)."""

from __future__ import annotations

import dataclasses

import pytest

from core.memory import ModelCounts, Shape
from core.models import get_spec
from core.perf import Cluster, Efficiency, calibrate, predict
from core.perf.calibrate import CalibrationError
from core.perf.compute import flops_per_token

LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
T5 = get_spec("google-t5/t5-3b")


def cfg(stage: int, micro: int = 4, world: int = 16, precision: str | None = "bf16", **zero) -> dict:
    out = {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": 1,
           "train_batch_size": micro * world, "zero_optimization": {"stage": stage, **zero}}
    if precision:
        out[precision] = {"enabled": True}
    return out


def comm(est) -> dict[str, float]:
    words = ("all-gather", "reduce-scatter", "all-reduce")
    return {k: v for k, v in {**est.breakdown, **est.hidden}.items() if any(w in k for w in words)}


def test_the_prefetch_bucket_does_not_set_how_many_fetches_a_model_by_counts_makes():
    """stage3_prefetch_bucket_size 0 (prefetching off) made a 7B model known by its counts take 3.9 million
    seconds a step: the fetch count came from the bucket."""
    counts, cl, shape = ModelCounts(7_000_000_000, 200_000_000), Cluster("NVIDIA A100 80GB", 8, 2), Shape(4, 2048)
    default = predict(cfg(3), counts, cl, shape).step_seconds
    for bucket in (0, 1, 10**12):
        assert predict(cfg(3, stage3_prefetch_bucket_size=bucket), counts, cl, shape).step_seconds == default
    assert default < 10


def test_persistent_modules_are_never_gathered():
    """With every module under stage3_param_persistence_threshold nothing is gathered, yet 0.7 s per pass of
    fetch latency was charged at 512 GPUs."""
    big, shape = Cluster("NVIDIA H100 80GB", 8, 64), Shape(1, 2048, "flash")
    est = predict(cfg(3, 1, 512, overlap_comm=False, stage3_param_persistence_threshold=10**12), LLAMA7, big, shape)
    assert not any("parameter all-gather" in k for k in {**est.breakdown, **est.hidden})
    normal = predict(cfg(3, 1, 512, overlap_comm=False), LLAMA7, big, shape)
    assert normal.breakdown["ZeRO-3 parameter all-gather (forward)"] > 0


def test_a_fitted_efficiency_never_runs_a_cuda_core_matmul_beyond_the_peak():
    """A V100 fp32 run calibrated to a fast measurement predicted 18.3 TFLOPs on a 15.7-TFLOP GPU (MFU 1.16) with
    no caveat; an efficiency of 1 on an MI300X in fp32 gave MFU 1.5."""
    v100, shape = Cluster("NVIDIA V100 32GB"), Shape(8, 1024, "sdpa")
    fp32 = cfg(2, 8, 8, None)
    predicted = predict(fp32, LLAMA7, v100, shape).step_seconds
    fitted = []
    for speedup in (1.2, 1.5, 2.0):  # beyond what the GPU's peak allows calibrate refuses the measurement
        try:
            fitted.append(calibrate(fp32, LLAMA7, v100, shape, measured_step_seconds=predicted / speedup))
        except CalibrationError as err:
            assert "faster than this config can run" in str(err)
    assert fitted and all(predict(fp32, LLAMA7, fast, shape).mfu <= 1.0 for fast in fitted)
    mi300 = Cluster("AMD MI300X 192GB", efficiency=Efficiency(compute=1.0))
    assert predict(fp32, LLAMA7, mi300, shape).mfu <= 1.0


def test_a_peak_override_scales_the_fp32_rate_too():
    """Cluster.peak_tflops (a power cap) changed nothing for fp32 training while the assumptions showed it."""
    shape = Shape(8, 1024, "sdpa")
    plain = predict(cfg(2, 8, 8, None), LLAMA7, Cluster("NVIDIA A100 80GB"), shape)
    capped = predict(cfg(2, 8, 8, None), LLAMA7, Cluster("NVIDIA A100 80GB", peak_tflops=156.0), shape)
    assert capped.step_seconds > 1.5 * plain.step_seconds


def test_an_encoder_decoders_cross_attention_is_timed_and_counted():
    """T5's cross-attention projections were in the FLOPs but not in the time (14% of its linear FLOPs), and its
    attention core in neither."""
    shape, cl = Shape(4, 512), Cluster("NVIDIA A100 80GB", 8)
    without = dataclasses.replace(T5, encoder_decoder=False)
    linear, attention = flops_per_token(T5, 512)
    linear_without, attention_without = flops_per_token(without, 512)
    layers = T5.num_layers + T5.num_decoder_layers
    assert linear - linear_without == 2 * T5.num_decoder_layers * 4 * T5.hidden_size * T5.q_dim
    assert attention / attention_without == pytest.approx((layers + T5.num_decoder_layers) / layers)
    with_cross, plain = (predict(cfg(2, 4, 8), m, cl, shape) for m in (T5, without))
    compute = "forward + backward compute"
    assert with_cross.breakdown[compute] > 1.1 * plain.breakdown[compute]
    # the time grows with the FLOPs: the model's FLOP rate stays about the same
    assert with_cross.tflops_per_gpu == pytest.approx(plain.tflops_per_gpu, rel=0.1)


@pytest.mark.parametrize(("field", "value"), [
    ("overlap", 1.5), ("overlap", -0.1), ("link", -0.5), ("link", 0), ("gemm_fraction", 0), ("compute", 0),
    ("compute", -0.5), ("compute", 1.2), ("collective_latency_s", -1), ("layer_overhead_s", float("nan")),
    ("ring_hop_latency_s", float("inf")), ("overlap", True), ("link", "0.8"),
])
def test_efficiency_refuses_what_is_not_a_fraction_or_a_time(field, value):
    """Efficiency(overlap=1.5) made hidden communication negative, link=-0.5 made all communication vanish,
    link=0 raised ZeroDivisionError, compute=0 silently meant the default."""
    with pytest.raises(ValueError, match=f"Efficiency.{field} must be"):
        Efficiency(**{field: value})


def test_efficiency_accepts_its_bounds():
    Efficiency(overlap=0.0, compute=1.0, link=1.0, gemm_fraction=1.0, layer_overhead_s=0.0)
    Efficiency(overlap=1.0)


def test_qwz_quantizes_the_backward_gathers_too():
    """partitioned_param_coordinator passes quantize=zero_quantized_weights to every gather, the backward's
    included: they were costed in fp16."""
    cl, shape = Cluster("NVIDIA A100 80GB", 8, 4, inter_node_gbit_s=100), Shape(1, 2048, "flash")
    plain = predict(cfg(3, 1, 32), LLAMA7, cl, shape)
    qwz = predict(cfg(3, 1, 32, zero_quantized_weights=True), LLAMA7, cl, shape)
    name = "ZeRO-3 parameter all-gather (backward)"
    both = lambda est: sum(v for k, v in {**est.breakdown, **est.hidden}.items() if k.startswith(name))  # noqa: E731
    assert both(qwz) < 0.55 * both(plain)


def test_one_gpu_runs_no_collective():
    """DeepSpeed skips gathers and reductions over one rank: ZeRO-3 on one GPU was charged 9 ms of latency."""
    one = Cluster("NVIDIA H100 80GB", 1, 1)
    for stage in (1, 2, 3):
        assert comm(predict(cfg(stage, 4, 1), LLAMA7, one, Shape(4, 2048, "flash"))) == {}


def test_an_offloaded_parameter_partition_is_not_uploaded_after_the_step():
    """With offload_param the CPU optimizer updates the host partition in place; the next forward's upload is
    charged already, so the post-step upload was counted twice."""
    cl, shape = Cluster("NVIDIA A100 80GB", 8), Shape(1, 2048, "flash")
    offload = {"offload_optimizer": {"device": "cpu"}}
    both = predict(cfg(3, 1, 8, **offload, offload_param={"device": "cpu"}), LLAMA7, cl, shape)
    optimizer_only = predict(cfg(3, 1, 8, **offload), LLAMA7, cl, shape)
    assert "parameter upload after the step (PCIe)" not in both.breakdown
    assert optimizer_only.breakdown["parameter upload after the step (PCIe)"] > 0


def test_zero3_hooks_run_again_in_the_recomputation():
    """Full recomputation reruns each module's forward, and with it ZeRO-3's fetch/release hooks: they were
    charged for the forward and the backward only."""
    cl = Cluster("NVIDIA H100 80GB", 4)
    host = "host overhead (kernel launches, hooks)"
    plain, full = (predict(cfg(3, 1, 4), LLAMA7, cl, Shape(1, 512, "flash", r)).breakdown[host]
                   for r in ("none", "full"))
    eff, layers = cl.efficiency, LLAMA7.num_layers
    # per layer q, k, v, o, gate, up, down and the two norms; the embedding, the final norm and the head
    modules = layers * (7 + LLAMA7.norms_per_layer) + 3
    assert full - plain == pytest.approx(layers * eff.layer_overhead_s / 3 + modules * eff.zero3_module_overhead_s)


@pytest.mark.parametrize("accum_dtype, accum_bytes", [(None, 2), ("fp32", 4)])
def test_zero3_offload_moves_the_gradient_partition_down_and_up_every_micro_step(accum_dtype, accum_bytes):
    """DeepSpeed's ZeRO-3 with the optimizer offloaded (stage3.py partition_grads, 0.16-0.19) accumulates the
    gradient partition in a host buffer of grad_accum_dtype (the model's dtype unless data_types says fp32): every
    micro-step copies it down and back up, and only the step's last one copies the master-dtype gradient to the
    optimizer. One download per micro-step was costed before."""
    cl, shape, gas = Cluster("NVIDIA A100 80GB", 8), Shape(1, 2048, "flash"), 4
    config = cfg(3, 1, 8, overlap_comm=False, offload_optimizer={"device": "cpu"})
    config.update(gradient_accumulation_steps=gas, train_batch_size=8 * gas)
    if accum_dtype:
        config["data_types"] = {"grad_accum_dtype": accum_dtype}
    est = predict(config, LLAMA7, cl, shape)
    pcie = cl.pcie_bytes_s * cl.efficiency.link
    part = LLAMA7.total_params / 8
    assert est.breakdown["gradient accumulation through the host buffer (PCIe, down and up)"] == pytest.approx(
        gas * 2 * accum_bytes * part / pcie)
    assert est.breakdown["gradient download to the host (PCIe)"] == pytest.approx(4 * part / pcie)  # fp32 master
    zero2 = predict({**config, "zero_optimization": {**config["zero_optimization"], "stage": 2}}, LLAMA7, cl, shape)
    assert "gradient accumulation through the host buffer (PCIe, down and up)" not in zero2.breakdown


@pytest.mark.parametrize("name, stage, cure", [
    ("gradient download to the host (PCIe)", 2, "larger micro-batches"),
    ("gradient download to the host (PCIe)", 1, "more gradient accumulation"),
    ("gradient download to the host (PCIe)", 3, "more gradient accumulation"),
    ("gradient accumulation through the host buffer (PCIe, down and up)", 3, "larger micro-batches"),
    ("parameter upload over PCIe (offload_param)", 3, "larger micro-batches"),
    ("parameter upload after the step (PCIe)", 2, "more gradient accumulation"),
])
def test_pcie_advice_amortises_a_copy_by_how_often_it_runs(name, stage, cure):
    """More accumulation was advised for every PCIe copy, although most run every micro-step and grow with it."""
    from core.perf.advice import _advice

    text = _advice(name, stage)
    assert text.startswith("host-device copies over PCIe dominate: avoid offloading, or ") and cure in text
