"""The bottleneck of a predicted step in plain words, with the change that would help, and what a prediction
assumed about the cluster."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.perf.constants import (
    ADAM_BYTES_PER_PARAM,
    FLASH1_ATTENTION_SPEED,
    FUSED_ATTENTION_BACKWARD_FACTOR,
    UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM,
    ZEROPP_QGZ_BYTES_PER_PARAM,
    ZEROPP_QWZ_BYTES_PER_PARAM,
)

if TYPE_CHECKING:
    from core.perf.hardware import Cluster


@dataclass(frozen=True)
class Accuracy:
    """The planner against the published runs (``core.perf.accuracy``, printed by scripts/perf_accuracy.py):
    errors are |predicted / measured - 1| of the step time, ``worst`` the largest factor off."""

    rows: int
    median_error: float
    first_round_rows: int
    first_round_median: float
    held_out_median: float
    third_round_rows: int
    third_round_median: float
    a100_h100_rows: int
    a100_h100_median: float
    a100_h100_worst: float
    worst: float
    beyond_1_5x: int


#: The figures the page help quotes; tests/test_perf_effects.py recomputes them, so a model change that moves
#: them fails until they are updated here (README and BENCHMARKS.md state the same figures).
ACCURACY = Accuracy(rows=131, median_error=0.122, first_round_rows=65, first_round_median=0.104,
                    held_out_median=0.197, third_round_rows=8, third_round_median=0.421, a100_h100_rows=55,
                    a100_h100_median=0.099, a100_h100_worst=2.7, worst=2.7, beyond_1_5x=9)


def trust_text(acc: Accuracy = ACCURACY) -> str:
    """How far to trust a prediction, in one paragraph for the user."""
    return (f"Against {acc.rows} published runs (DeepSpeed ZeRO-3 at up to 1,024 A100s, ZeRO++ and Hugging Face "
            "GPT-2 on V100s, ZeRO-3 and CPU offload on H100s, Megatron-DeepSpeed long sequences and MosaicML's FSDP "
            f"runs on 8 to 512 A100s and H100s) the median error is {acc.median_error:.1%} "
            f"({acc.first_round_median:.1%} on the {acc.first_round_rows} runs it was built on, "
            f"{acc.held_out_median:.1%} on the {acc.rows - acc.first_round_rows} added later, held out until one "
            f"constant, the share of communication hidden behind compute, was lowered against all of them; "
            f"{acc.third_round_median:.1%} on the last {acc.third_round_rows}, collected after the model was built), "
            f"and {acc.a100_h100_median:.1%} on the {acc.a100_h100_rows} A100/H100 runs (worst "
            f"{acc.a100_h100_worst:.2f}x). {acc.beyond_1_5x} runs are off by more than 1.5x (worst {acc.worst:.2f}x), "
            "every one predicted too fast: 2020-2021 DeepSpeed and Megatron releases on V100s, Hugging Face and "
            "TRL end-to-end throughput, and ZeRO-3 with little work per GPU (a 7B model at 512 tokens per H100 ran "
            "1.9-2.1x slower than predicted). Treat a prediction as the speed a "
            "well-tuned run reaches, and ZeRO-3 at small micro batches as optimistic (BENCHMARKS.md lists each run).")


@dataclass(frozen=True)
class SmallWorkEvidence:
    """How the published ZeRO-3 runs with little work per GPU compare with the model (``core.perf.accuracy``):
    the runs at ``max_tokens`` tokens or fewer per GPU per micro-step against the other ZeRO-3 runs."""

    max_tokens: int
    rows: int
    median_slowdown: float  # measured / predicted step time, the median over those runs
    beyond_1_5x: int  # of them, runs more than 1.5x slower than predicted
    other_rows: int
    other_median_slowdown: float


#: Recomputed by tests/test_perf_effects.py from the accuracy table (a model change that moves it fails there).
ZERO3_SMALL_WORK = SmallWorkEvidence(max_tokens=1024, rows=26, median_slowdown=1.2, beyond_1_5x=3, other_rows=61,
                                     other_median_slowdown=0.97)


def small_work_note(tokens_per_gpu: float, ev: SmallWorkEvidence = ZERO3_SMALL_WORK) -> str | None:
    """The caveat for a ZeRO-3 step with ``tokens_per_gpu`` tokens per GPU per micro-step, or None above the
    evidence's bound: the model's ZeRO-3 is a well-tuned one, and real runs with this little work per GPU were
    slower than it (fixed per-module costs and exposed gathers weigh more)."""
    if tokens_per_gpu > ev.max_tokens:
        return None
    return (f"ZeRO-3 with {tokens_per_gpu:,.0f} tokens per GPU per micro-step: the {ev.rows} published ZeRO-3 runs "
            f"at {ev.max_tokens:,} tokens or fewer ran a median {ev.median_slowdown:.2f}x slower than this model "
            f"predicts them, {ev.beyond_1_5x} of them more than 1.5x (the {ev.other_rows} with more work per GPU: "
            f"{ev.other_median_slowdown:.2f}x; BENCHMARKS.md). Read this step time as a lower bound, prefer a "
            "larger micro batch where memory allows, and measure before relying on it.")


_ADVICE = {
    "compute": "the GPUs are busy computing: larger micro-batches, fewer recomputations or faster GPUs help",
    "recomputation": "activation recomputation repeats the forward: turn it off or use selective recompute "
    "if the memory allows",
    "host overhead": "kernel-launch and Python overhead dominate: larger micro-batches amortise it "
    "(ZeRO-3's per-module hooks add to it)",
    "ZeRO-3 parameter all-gather": "the ZeRO-3 parameter all-gathers are exposed: ZeRO++ (qwZ + hpZ) shrinks "
    "them, ZeRO-2 avoids them when the model fits, a faster network or larger micro-batches hide them",
    "gradient all-reduce": "the gradient all-reduce runs after the backward: ZeRO-1/2 with overlap_comm or more "
    "gradient accumulation amortises it",
    "parameter all-gather after the step": "the post-step all-gather of the updated parameters: more gradient "
    "accumulation amortises it",
    "CPU optimizer step": "the CPU-Adam step on the host dominates: keep the optimizer on the GPU if it fits "
    "(more GPUs or ZeRO-3), or amortise it with more gradient accumulation",
    "PCIe": "host-device copies over PCIe dominate: avoid offloading, or accumulate more micro-steps per step",
    "NVMe": "NVMe swapping dominates: offload to CPU memory instead, or add drives",
    "tensor-parallel": "tensor-parallel all-reduces dominate: lower autotp_size",
    "sequence-parallel": "Ulysses all-to-alls dominate: lower sequence_parallel_size",
    "optimizer step (GPU)": "the GPU optimizer step dominates: accumulate more micro-steps per step",
}


def _reduce_scatter_advice(name: str, stage: int | None, overlap: bool | None) -> str:
    """What shortens an exposed gradient reduce-scatter, for this config: overlap_comm only when it is off, ZeRO++
    qgZ only at stage 3 (the only stage where the planner uses it), the bucket size for the last bucket."""
    ways = []
    if "reduce_scatter off" in name:
        ways.append("set zero_optimization.reduce_scatter to true: it reduce-scatters with half the traffic")
    if "last bucket" in name:
        ways.append("the last bucket is reduced after the backward: a smaller reduce_bucket_size shortens it")
    elif not overlap:
        ways.append("enable overlap_comm to reduce while the backward runs")
    if stage == 3:
        ways.append("ZeRO++ qgZ quantises it on slow networks")
    ways.append("a faster network shortens it")
    return "the gradient reduction is exposed: " + "; ".join(ways)


def _advice(name: str, stage: int | None = None, overlap: bool | None = None) -> str:
    if "gradient reduce-scatter" in name or "reduce_scatter off" in name:
        return _reduce_scatter_advice(name, stage, overlap)
    for key, text in _ADVICE.items():
        if key in name:
            return text
    return ""


def duration_text(seconds: float) -> str:
    """A time in the unit that shows it: seconds (3 decimals) from 1 s, else ms or µs with 3 significant digits, so
    a non-zero time never reads 0 (``0.000 s`` hid a 0.2 ms collective)."""
    if seconds == 0 or abs(seconds) >= 0.9995:
        return f"{seconds:.3f} s"
    if abs(seconds) >= 0.9995e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def decimals_for(values: Iterable[float], least: int) -> int:
    """Decimals that show every non-zero finite value of a column with two significant digits, and at least
    ``least``: training hours of a short run (0.0003 h) read 0.0 with the one decimal of a long one."""
    small = [abs(v) for v in values if v and math.isfinite(v)]
    if not small:
        return least
    return min(MAX_DECIMALS, max(least, 1 - math.floor(math.log10(min(small)))))


#: More decimals than this say nothing a person reads (a microsecond of a training run).
MAX_DECIMALS = 6


def share_text(part: float, whole: float) -> str:
    """``part`` as a share of ``whole`` with one decimal, "<0.1%" for a non-zero share that would round to 0."""
    share = part / whole if whole else 0.0
    return "<0.1%" if 0 < share < 0.0005 else f"{share:.1%}"


def percent_text(fraction: float) -> str:
    """A fraction as a whole percentage ("51%"), with one decimal below 1% so a non-zero one never reads 0%."""
    return f"{fraction:.0%}" if fraction >= 0.0095 or fraction <= 0 else share_text(fraction, 1.0)


def bottleneck_text(breakdown: dict[str, float], total: float, *, stage: int | None = None,
                    overlap: bool | None = None) -> str:
    """The largest part of the step in words, with the change that would help this config (its ZeRO ``stage``
    and ``overlap_comm``: advice it already follows is not given)."""
    if not breakdown or total <= 0:
        return "nothing to run"
    name, seconds = max(breakdown.items(), key=lambda kv: kv[1])
    share = 100 * seconds / total
    advice = _advice(name, stage, overlap)
    return f"{name} takes {share:.0f}% of the step" + (f"; {advice}." if advice else ".")


def assumptions_text(cluster: Cluster) -> str:
    """What a prediction on ``cluster`` assumes (its rates with the catalog defaults filled in and the model's
    constants), in one paragraph for the user."""
    eff, rates = cluster.efficiency, cluster.resolved()
    nodes = f"{cluster.nodes} node{'s' if cluster.nodes > 1 else ''}"
    cuda_cores = "" if cluster.cuda_core_scale == 1 else (
        f"; {cluster.compute_efficiency * cluster.cuda_core_scale:.0%} of the fp32 peak on the CUDA cores")
    return (f"{cluster.total_gpus} × {cluster.gpu} ({nodes}): {rates['peak_tflops']:g} TFLOPs peak, "
            f"{rates['hbm_gbyte_s']:g} GB/s memory, {rates['intra_node_gbyte_s']:g} GB/s GPU-to-GPU, "
            f"{rates['inter_node_gbit_s']:g} Gbit/s network per node, {rates['pcie_gbyte_s']:g} GB/s PCIe; "
            f"matrix multiplies at {cluster.compute_efficiency:.0%} of the peak (at most{cuda_cores}), "
            f"FlashAttention-2 / SDPA at {cluster.attention_efficiency('flash'):.0%} (flash-attn 1.x and its Triton "
            "kernel at "
            f"{FLASH1_ATTENTION_SPEED:g}x that), fused attention's "
            f"backward at {FUSED_ATTENTION_BACKWARD_FACTOR:g}x its forward, links at {eff.link:.0%} "
            f"of line rate, {eff.overlap:.0%} of overlappable communication hidden behind the compute of its "
            f"phase, {eff.ring_hop_latency_s * 1e6:g} µs per ring step, host costs of "
            f"{eff.layer_overhead_s * 1e6:g} µs per layer, {eff.zero3_module_overhead_s * 1e6:g} µs per ZeRO-3 "
            f"module and "
            f"{eff.grad_hook_overhead_s * 1e6:g} µs per parameter tensor (ZeRO's gradient hooks, DeepSpeed's "
            f"unfused fp16 optimizer), the GPU optimizer step at {ADAM_BYTES_PER_PARAM} bytes per parameter for "
            f"Adam ({UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM} unfused; 8 fewer per state tensor an optimizer does not "
            f"keep), ZeRO++'s quantization kernels at "
            f"{ZEROPP_QWZ_BYTES_PER_PARAM} (qwZ) and {ZEROPP_QGZ_BYTES_PER_PARAM} (qgZ) bytes per parameter, the CPU "
            f"optimizer at "
            f"{rates['cpu_adam_params_per_s'] / 1e9:.1f}e9 parameters per second per node.")
