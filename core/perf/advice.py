"""The bottleneck of a predicted step in plain words, with the change that would help, and what a prediction
assumed about the cluster."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

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
    second_round_rows: int
    second_round_median: float
    third_round_rows: int
    third_round_median: float
    fourth_round_rows: int
    fourth_round_median: float
    a100_h100_rows: int
    a100_h100_median: float
    a100_h100_worst: float
    worst: float
    beyond_1_5x: int


#: The figures the page help quotes; tests/test_perf_effects.py recomputes them, so a model change that moves
#: them fails until they are updated here (README and BENCHMARKS.md state the same figures).
ACCURACY = Accuracy(rows=148, median_error=0.124, first_round_rows=65, first_round_median=0.104,
                    second_round_rows=58, second_round_median=0.141, third_round_rows=8, third_round_median=0.417,
                    fourth_round_rows=17, fourth_round_median=0.138, a100_h100_rows=58, a100_h100_median=0.099,
                    a100_h100_worst=2.66, worst=2.66, beyond_1_5x=11)


def trust_text(acc: Accuracy = ACCURACY) -> str:
    """How far to trust a prediction, in one paragraph for the user."""
    return (f"Against {acc.rows} published runs (DeepSpeed ZeRO-3 at up to 1,024 A100s, ZeRO++ and Hugging Face "
            "GPT-2 on V100s, ZeRO-3 and CPU offload on H100s, Megatron-DeepSpeed long sequences and MosaicML's FSDP "
            f"runs on 8 to 512 A100s and H100s) the median error is {acc.median_error:.1%} "
            f"({acc.first_round_median:.1%} on the {acc.first_round_rows} runs it was built on; "
            f"{acc.second_round_median:.1%} and {acc.third_round_median:.1%} on {acc.second_round_rows} and "
            f"{acc.third_round_rows} added later, held out until one constant, the share of communication hidden "
            f"behind compute, was lowered against all of them; {acc.fourth_round_median:.1%} on the last "
            f"{acc.fourth_round_rows}, collected and first predicted after that with the model unchanged: the "
            "ZeRO-Offload and ZeRO-Infinity papers and DeepSpeed's own posts), "
            f"and {acc.a100_h100_median:.1%} on the {acc.a100_h100_rows} A100/H100 runs (worst "
            f"{acc.a100_h100_worst:.2f}x). {acc.beyond_1_5x} runs are off by more than 1.5x (worst {acc.worst:.2f}x), "
            "every one predicted too fast: 2020-2021 DeepSpeed and Megatron releases on V100s (Megatron's 16-way "
            "model parallelism of 2020 ran 2.5x slower), Hugging Face and "
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
ZERO3_SMALL_WORK = SmallWorkEvidence(max_tokens=1024, rows=26, median_slowdown=1.19, beyond_1_5x=3, other_rows=64,
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
    "recomputation": "activation recomputation repeats the forward: {recompute_change}",
    "forward + backward compute": "the GPUs are busy computing: larger micro-batches{fewer_recomputations} or "
    "faster GPUs help",
    "host overhead": "kernel-launch and Python overhead dominate: larger micro-batches amortise it{hooks}",
    "parameter all-gather after the step": "the post-step all-gather of the updated parameters: more gradient "
    "accumulation amortises it",
    "CPU optimizer step": "the CPU-Adam step on the host dominates: keep the optimizer on the GPU if it fits "
    "(more GPUs or ZeRO-3), or amortise it with more gradient accumulation",
    "NVMe": "NVMe swapping dominates: offload to CPU memory instead, or add drives",
    "tensor-parallel": "tensor-parallel all-reduces dominate: lower autotp_size",
    "sequence-parallel": "Ulysses all-to-alls dominate: lower sequence_parallel_size",
    "optimizer step (GPU)": "the GPU optimizer step dominates: accumulate more micro-steps per step",
}

#: A change is advised only when the planner predicts it at least this much faster (a 1% change is noise).
_HELPS = 0.99


@dataclass(frozen=True)
class Situation:
    """What the advice may try on the predicted config: ``predict``'s inputs and its reading of ``config``, so a
    change can be applied to the config and predicted (the advice names only changes the planner predicts faster,
    with both step times). ``config`` None: only the config's state (the reading) conditions the advice."""

    config: Mapping[str, Any] | None
    model: Any
    cluster: Any
    shape: Any
    settings: Any  # the PerfSettings predict used
    version: str
    step_seconds: float


#: Set while the advice predicts a changed config: that prediction's own bottleneck tries nothing (no recursion).
_TRYING: ContextVar[bool] = ContextVar("advice_trying", default=False)


def _changed(config: Mapping[str, Any], zero: Mapping[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """``config`` with ``zero`` written into its zero_optimization section (and the ``drop`` keys removed)."""
    out = dict(config)  # a shallow copy: reading a config changes nothing in it
    section = out.get("zero_optimization")
    section = dict(section) if isinstance(section, Mapping) else {}
    for key in drop:
        section.pop(key, None)
    section.update(zero)
    out["zero_optimization"] = section
    return out


def _tried(sit: Situation | None, zero: Mapping[str, Any], drop: tuple[str, ...] = ()) -> float | None:
    """The predicted step time of the config with this zero_optimization change, or None when it cannot be tried
    (no config given) or is not faster."""
    if sit is None or sit.config is None or not isinstance(sit.config, Mapping):
        return None
    return _faster(sit, _changed(sit.config, zero, drop))


def _faster(sit: Situation, changed: dict[str, Any]) -> float | None:
    """The predicted step time of ``changed`` (``sit``'s config with a change), or None when it is not faster."""
    from core.perf.predict import predict  # predict imports this module

    token = _TRYING.set(True)
    try:
        seconds = predict(changed, sit.model, sit.cluster, sit.shape, version=sit.version,
                          settings=_reading(changed, sit)).step_seconds
    except (ValueError, TypeError):
        return None
    finally:
        _TRYING.reset(token)
    return seconds if seconds < _HELPS * sit.step_seconds else None


_BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


@lru_cache(maxsize=256)
def _reading_without_batch(config_json: str, gpus: int, version: str) -> Any:
    """``read_settings`` of a changed config without its batch keys, bounded: a sweep's candidates differ in their
    batch keys only, so each option's change is read once (JSON text in, so that the cache holds no caller's dict)."""
    from core.perf.settings import read_settings

    return read_settings(json.loads(config_json), gpus, version)


def _reading(changed: dict[str, Any], sit: Situation) -> Any:
    """``read_settings(changed)``: a change to zero_optimization leaves the batch's reading as it was, so the
    reading of the config without its batch keys is kept and given this config's batch (what read_settings of the
    changed config returns; elastic training, which may read more, is read afresh)."""
    from core.perf.settings import read_settings

    st = sit.settings
    gpus = sit.cluster.total_gpus
    if st.elastic:
        return read_settings(changed, gpus, sit.version)
    try:
        text = json.dumps({k: v for k, v in changed.items() if k not in _BATCH_KEYS}, allow_nan=False)
    except (TypeError, ValueError):  # not JSON data: read as it is
        return read_settings(changed, gpus, sit.version)
    base = _reading_without_batch(text, gpus, sit.version)
    return replace(base, grad_accum=st.grad_accum, batch_problem=st.batch_problem, elastic=st.elastic,
                   config_micro_batch=st.config_micro_batch)


def _effect(sit: Situation, seconds: float) -> str:
    return f" ({duration_text(sit.step_seconds)} → {duration_text(seconds)} per step)"


_ZEROPP_KEYS = ("zero_quantized_weights", "zero_quantized_gradients", "zero_hpz_partition_size")


def _fewer_buckets_size(sit: Situation) -> int | None:
    """A reduce_bucket_size that splits this model's gradients into about 8 buckets, when the config's holds them
    in fewer (one bucket is reduced only after the backward, overlap_comm or not)."""
    params = getattr(sit.model, "total_params", 0) / max(1, sit.settings.tp)
    size = sit.settings.memory.reduce_bucket_size
    if not params or size * 4 < params:
        return None
    target = params / 8
    digits = 10 ** math.floor(math.log10(target))
    return int(max(1, math.floor(target / digits)) * digits)


def _count(n: int) -> str:
    """A bucket size as a config would write it: 10000000 reads 1e7."""
    mantissa, exponent = f"{n:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}" if int(exponent) >= 4 and int(mantissa) * 10 ** int(exponent) == n \
        else str(n)


def _gather_advice(sit: Situation | None, stage: int | None) -> str:
    """What shortens exposed ZeRO-3 parameter all-gathers: the ZeRO++ parts the config lacks and ZeRO-2, each
    only when the planner predicts it faster, then what always does (more work per gather, a faster network)."""
    ways = []
    st = sit.settings if sit else None
    if st is not None:
        multi_node = sit.cluster.nodes > 1
        zero: dict[str, Any] = {}
        names = []
        if not st.quantized_weights:
            zero["zero_quantized_weights"] = True
            names.append("qwZ")
        if multi_node and st.memory.hpz_partition_size <= 1:
            zero["zero_hpz_partition_size"] = sit.cluster.gpus_per_node
            names.append(f"hpZ over {sit.cluster.gpus_per_node} GPUs")
        faster = _tried(sit, zero) if zero else None
        if faster is not None:
            keys = ", ".join(f"{k}: {str(v).lower()}" for k, v in zero.items())
            ways.append(f"ZeRO++ {' + '.join(names)} ({keys}) shrinks them{_effect(sit, faster)}")
        # ZeRO-2 offloads no parameters and the optimizer to the CPU only: a config offloading either way keeps
        # ZeRO-3 (the change would be two)
        zero2 = st.memory.offload_param == "none" and st.memory.offload_optimizer != "nvme"
        faster = _tried(sit, {"stage": 2, "overlap_comm": True}, drop=_ZEROPP_KEYS) if zero2 else None
        if faster is not None:
            ways.append(f"ZeRO-2 with overlap_comm avoids them when the model fits{_effect(sit, faster)}")
    ways.append("larger micro-batches hide them")
    if st is None or sit.cluster.nodes > 1:
        ways.append("a faster network shortens them")
    return "the ZeRO-3 parameter all-gathers are exposed: " + "; ".join(ways)


def _all_reduce_advice(sit: Situation | None) -> str:
    """Stage 0's gradient all-reduce after the backward: ZeRO-1 with overlap_comm when the planner predicts it
    faster, and more gradient accumulation (a step's all-reduce spread over more tokens)."""
    ways = []
    # ZeRO-1 reduces once per step and hooks the gradients in the last backward only: never slower than ZeRO-2 in
    # the planner, so it alone is tried (ZeRO-2 saves memory, not time)
    faster = _tried(sit, {"stage": 1, "overlap_comm": True})
    if faster is not None:
        ways.append(f"ZeRO-1 with overlap_comm reduces while the backward runs{_effect(sit, faster)}")
    ways.append("more gradient accumulation amortises it")
    return "the gradient all-reduce runs after the backward: " + "; ".join(ways)


def _reduce_scatter_advice(name: str, stage: int | None, overlap: bool | None,
                           sit: Situation | None = None) -> str:
    """What shortens an exposed gradient reduce-scatter, for this config: reduce_scatter when it is off, overlap_comm
    when it is off, a smaller reduce_bucket_size for the last bucket, ZeRO++ qgZ at stage 3 when it is off (the
    only stage where the planner uses it); with a config to try them on, each only when the planner predicts it
    faster."""
    ways = []
    st = sit.settings if sit is not None and sit.config is not None else None
    if "reduce_scatter off" in name:
        ways.append("set zero_optimization.reduce_scatter to true: it reduce-scatters with half the traffic")
    if st is None:
        if "last bucket" in name:
            ways.append("the last bucket is reduced after the backward: a smaller reduce_bucket_size shortens it")
        elif not overlap:
            ways.append("enable overlap_comm to reduce while the backward runs")
        if stage == 3 and "qgZ" not in name:
            ways.append("ZeRO++ qgZ quantises it on slow networks")
    else:
        size = _fewer_buckets_size(sit)
        if not overlap:
            change: dict[str, Any] = {"overlap_comm": True}
            if size is not None:  # one bucket is reduced after the backward, overlap_comm or not
                change["reduce_bucket_size"] = size
            faster = _tried(sit, change)
            if faster is not None:
                smaller = f" with reduce_bucket_size {_count(size)}" if "reduce_bucket_size" in change else ""
                ways.append(f"enable overlap_comm{smaller} to reduce while the backward runs{_effect(sit, faster)}")
        elif size is not None or "last bucket" in name:
            size = size or max(1, st.memory.reduce_bucket_size // 4)
            faster = _tried(sit, {"reduce_bucket_size": size})
            if faster is not None:
                ways.append("the last bucket is reduced after the backward: reduce_bucket_size "
                            f"{_count(size)} shortens it{_effect(sit, faster)}")
        if st.stage == 3 and not st.quantized_gradients:
            faster = _tried(sit, {"zero_quantized_gradients": True})
            if faster is not None:
                ways.append(f"ZeRO++ qgZ (zero_quantized_gradients: true) quantises it{_effect(sit, faster)}")
    if sit is None or sit.cluster.nodes > 1:
        ways.append("a faster network shortens it")
    return "the gradient reduction is exposed: " + "; ".join(ways)


def _comms_logger_advice(sit: Situation | None) -> str | None:
    """The communication logger's cost, when the planner predicts the config faster without ``comms_logger`` (the
    section's presence turns the logger on, whatever its ``enabled`` says)."""
    if sit is None or not isinstance(sit.config, Mapping) or not getattr(sit.settings, "comms_logger", False):
        return None
    faster = _faster(sit, {key: value for key, value in sit.config.items() if key != "comms_logger"})
    if faster is None:
        return None
    return ("The communication logger (the comms_logger section, on whatever its `enabled` says) synchronises the "
            "device after every collective, so none hides behind compute: without the section the step is faster"
            f"{_effect(sit, faster)}.")


def _pcie_advice(name: str, stage: int | None) -> str:
    """What amortises a host-device copy: more accumulation for one that runs once per step (the upload after the
    step; the gradient download of ZeRO-1 and ZeRO-3), a larger micro-batch for one that runs every micro-step
    (ZeRO-2's download, ZeRO-3's accumulation round trip, offload_param's uploads)."""
    once = name.startswith("parameter upload after the step") or (name.startswith("gradient download")
                                                                    and stage in (1, 3))
    cure = ("more gradient accumulation amortises it (it runs once per step)" if once else
            "larger micro-batches amortise it (it runs every micro-step)")
    return f"host-device copies over PCIe dominate: avoid offloading, or {cure}"


def _advice(name: str, stage: int | None = None, overlap: bool | None = None, sit: Situation | None = None) -> str:
    if "gradient reduce-scatter" in name or "reduce_scatter off" in name:
        return _reduce_scatter_advice(name, stage, overlap, sit)
    if name.startswith("ZeRO-3 parameter all-gather"):
        return _gather_advice(sit, stage)
    if name.startswith("gradient all-reduce"):
        return _all_reduce_advice(sit)
    if "PCIe" in name:
        return _pcie_advice(name, stage)
    recompute = getattr(sit.shape, "recompute", None) if sit is not None else None
    for key, text in _ADVICE.items():
        if key in name:
            return text.format(
                recompute_change="turn it off if the memory allows" if recompute == "selective" else
                "turn it off or use selective recompute if the memory allows",
                fewer_recomputations=", less recomputation" if recompute in ("full", "selective") else "",
                hooks=(", and ZeRO-3's per-module hooks add to it" if stage == 3 else
                       ", and ZeRO's per-parameter gradient hooks add to it" if stage == 2 else ""))
    return ""


def duration_text(seconds: float) -> str:
    """A time in the unit that shows it: seconds (3 decimals) from 1 s, else ms or µs with 3 significant digits, so
    a non-zero time never reads 0 (``0.000 s`` hid a 0.2 ms collective)."""
    if seconds == 0 or abs(seconds) >= 0.9995:
        return f"{seconds:.3f} s"
    if abs(seconds) >= 0.9995e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


#: From here on, and where fixed decimals would round a non-zero value to 0, a number is written in scientific
#: notation with 3 significant digits: absurd but accepted rates (--network 1e-9) give 22-digit step times and
#: costs that say no more than their exponent.
COMPACT_FROM = 1e9


def seconds_text(seconds: float) -> str:
    """A time as ``duration_text`` writes it (s, ms or µs), in scientific notation beyond ``COMPACT_FROM``: the
    step time as the CLI and the app both show it."""
    return f"{seconds:.3g} s" if abs(seconds) >= COMPACT_FROM else duration_text(seconds)


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
                    overlap: bool | None = None, situation: Situation | None = None) -> str:
    """The largest part of the step in words, with the change that would help this config (its ZeRO ``stage``
    and ``overlap_comm``: advice it already follows is not given). With a ``situation`` (``predict`` passes its
    inputs), the ZeRO changes the advice names (ZeRO++, ZeRO-2, ZeRO-1/2 with overlap_comm, overlap_comm, the bucket
    size, qgZ) are applied to the config and predicted: only those the planner predicts faster are named, with both
    step times."""
    if not breakdown or total <= 0:
        return "nothing to run"
    name, seconds = max(breakdown.items(), key=lambda kv: kv[1])
    share = 100 * seconds / total
    if _TRYING.get():  # a changed config predicted for another's advice: its own words are not read
        return f"{name} takes {share:.0f}% of the step."
    advice = _advice(name, stage, overlap, situation)
    text = f"{name} takes {share:.0f}% of the step" + (f"; {advice}." if advice else ".")
    logger = _comms_logger_advice(situation)
    return f"{text} {logger}" if logger else text


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
