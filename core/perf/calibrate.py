"""Read step times from DeepSpeed's own log output, and fit the model's constants to one measurement.

``parse_log`` understands what DeepSpeed prints:

- ``wall_clock_breakdown: true``: per optimizer step ``time (ms) | fwd: .. | bwd: .. | step: ..`` (and the same per
  micro-step with ``_microstep`` names, and the optimizer's ``optimizer_step`` timers);
- the throughput timer (every ``steps_per_print`` steps): ``epoch=../micro_step=../global_step=..,
  RunningAvgSamplesPerSec=.., CurrSamplesPerSec=.., MemAllocated=..GB, MaxMemAllocated=..GB``;
- the flops profiler summary: ``fwd latency``, ``bwd latency``, ``step latency``, ``iter latency``,
  ``FLOPS per GPU``, ``samples/second``, ``batch size per GPU``;
- Megatron-DeepSpeed's ``elapsed time per iteration (ms)`` and ``TFLOPs`` columns.
"""

from __future__ import annotations

import math
import numbers
import re
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.memory.estimate import ModelCounts, Shape, estimate
from core.models.arch import ModelSpec
from core.perf.errors import PlanInputError
from core.perf.hardware import Cluster
from core.perf.predict import predict
from core.schema.base import DEFAULT_VERSION

#: The prefixes DeepSpeed's flops profiler prints a number with (profiler.number_to_string: u, m, none, K, M, G, T).
#: A number as Python's and C's printf write one (an exponent where the value needs it).
_NUMBER = r"[\d.]+(?:[eE][+-]?\d+)?"
_SCALE = {"u": 1e-6, "m": 1e-3, "": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
#: ANSI terminal escapes (colours, bold): ``ESC [ numbers m``.
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
_TIMERS = re.compile(r"time \(ms\) \|(?P<body>.*)$", re.M)
_THROUGHPUT = re.compile(
    r"global_step=(?P<step>\d+), RunningAvgSamplesPerSec=(?P<avg>[\d.eE+-]+), CurrSamplesPerSec=(?P<cur>[\d.eE+-]+)"
    r"(?:, MemAllocated=(?P<mem>[\d.]+)GB, MaxMemAllocated=(?P<maxmem>[\d.]+)GB)?"
)
#: What a launcher puts before each line of a worker's output: pdsh's "worker-0: " (the deepspeed launcher on
#: several nodes), torchrun --tee's "[default0]:" or "[rank0]: "; the profiler's lines are matched after it.
_LINE_START = r"^(?:[\w.-]+: |\[[^\]\n]*\]: ?)?"
#: The batch and world size in DeepSpeed's printout of its config at start ("[config.py:678:print]   world_size
#: ................... 1"), every release from 0.16 on.
_CONFIG_PRINT = re.compile(r"\[config\.py:\d+:print\]\s+(?P<key>train_batch_size|train_micro_batch_size_per_gpu|"
                           r"gradient_accumulation_steps|world_size) \.* +(?P<value>\d+)\s*$", re.M)
#: Durations as profiler.duration_to_string writes them: "20.96 ms", "15.74 us", "400 s", "1.2 Ks" (1,000 s or more).
_PROFILER = {key: rf"{_LINE_START}{name} latency:\s+([\d.]+(?:e[+-]?\d+)?)\s*([umKMGT]?)s\b"
             for key, name in (("fwd_latency_s", "fwd"), ("bwd_latency_s", "bwd"), ("step_latency_s", "step"),
                               ("iter_latency_s", "iter"))}
# the gaps are bounded (a Megatron line puts TFLOPs ~250 characters after the time): an unbounded lazy gap rescans
# the rest of a long line from every partial match, minutes for one 1 MB line
_MEGATRON = re.compile(rf"elapsed time per iteration \(ms\): (?P<ms>{_NUMBER})"
                       rf"(?:[^\n]{{0,1000}}?TFLOPs: (?P<tflops>{_NUMBER}))?")
#: PipelineEngine.train_batch's line (runtime/pipe/engine.py): the train_batch timer over steps_per_print steps,
#: divided by them.
_PIPE = re.compile(rf"steps: \d+ loss: [^\n]{{0,1000}}?iter time \(s\): (?P<s>{_NUMBER}) samples/sec: {_NUMBER}")


@dataclass(frozen=True)
class LogSummary:
    """What a DeepSpeed log says about speed. Times in seconds."""

    step_seconds: tuple[float, ...] = ()  # wall_clock_breakdown: fwd + bwd + step per optimizer step
    micro_step_seconds: tuple[float, ...] = ()  # the same per micro-step
    optimizer_step_seconds: tuple[float, ...] = ()  # optimizer_step timer (the optimizer's own update)
    samples_per_second: tuple[float, ...] = ()  # throughput timer, CurrSamplesPerSec
    running_avg_samples_per_second: float | None = None
    max_memory_allocated_gib: float | None = None
    profiler: dict[str, float] = field(default_factory=dict)  # flops profiler summary (last one in the log)
    megatron_iteration_seconds: tuple[float, ...] = ()
    megatron_tflops: tuple[float, ...] = ()
    pipe_iteration_seconds: tuple[float, ...] = ()  # the pipeline engine's "iter time (s)"
    #: what the run's DeepSpeed printed of its own config at start (``DeepSpeedConfig.print``: "  train_batch_size
    #: ...... 16"), the last run's when the log holds several: the batch its samples/s count
    logged_config: dict[str, int] = field(default_factory=dict)

    def typical_step_seconds(self) -> float | None:
        """Median optimizer-step time, the first (warm-up) step dropped when there are more; None if unknown.

        A time per iteration the log states (the pipeline engine's, Megatron's) comes first: the pipeline
        engine logs its fwd/bwd/step timers only every steps_per_print steps, summed over them, so there the
        wall-clock series is steps_per_print times one step."""
        found = self.step_series()
        if found is None:
            return None
        series = found[1]
        return statistics.median(series[1:] if len(series) > 1 else series)

    def step_series(self) -> tuple[str, tuple[float, ...]] | None:
        """The series ``typical_step_seconds`` reads, in words, with its values; None when the log has none."""
        for what, series in (("the pipeline engine's iter time", self.pipe_iteration_seconds),
                             ("Megatron's elapsed time per iteration", self.megatron_iteration_seconds),
                             ("the wall-clock timers (forward + backward + step)", self.step_seconds)):
            if series:
                return what, series
        return None

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {
            "typical_step_seconds": self.typical_step_seconds()
        }


def _measured(text: str | None) -> float | None:
    """A number the log states: finite and >= 0, else None (a garbled or truncated line, "nan", "1.2.3" or "inf"
    measures nothing)."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _timer_fields(body: str) -> dict[str, float]:
    out = {}
    for part in body.split("|"):
        name, _, value = part.partition(":")
        ms = _measured(value)
        if ms is not None:
            out[name.strip()] = ms / 1000
    return out


def _number_with_scale(text: str) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*([KMGTP]?)", text)
    value = _measured(match.group(1)) if match else None
    return None if value is None else value * _SCALE[match.group(2)]


def parse_log(text: str) -> LogSummary:
    """Step times, throughput and the flops-profiler summary found in ``text`` (a DeepSpeed training log)."""
    if not isinstance(text, str):
        raise TypeError("parse_log expects the log as text.")
    text = _COLOURS.sub("", text)  # a wrapper's colours (DeepSpeed writes none) would hide the numbers they end
    steps: list[float] = []
    micro: list[float] = []
    optimizer: list[float] = []
    for match in _TIMERS.finditer(text):
        f = _timer_fields(match.group("body"))
        for series, names in ((steps, ("fwd", "bwd", "step")), (micro, ("fwd_microstep", "bwd_microstep",
                              "step_microstep")), (steps, ("forward", "backward", "step"))):  # older releases' names
            if set(names) <= f.keys():
                if sum(f[n] for n in names) > 0:  # a step of 0 ms measures nothing
                    series.append(sum(f[n] for n in names))
                break
        if "optimizer_step" in f:
            optimizer.append(f["optimizer_step"])
    current: list[float] = []
    running = max_mem = None
    for match in _THROUGHPUT.finditer(text):
        if cur := _measured(match.group("cur")):  # 0 samples/s (a stalled or first interval) measures nothing
            current.append(cur)
        running = _measured(match.group("avg")) or None
        max_mem = _measured(match.group("maxmem")) or max_mem
    profiler: dict[str, float] = {}
    summaries = text.split("DeepSpeed Flops Profiler")
    if len(summaries) > 1:
        last = summaries[-1]
        for key, pattern in _PROFILER.items():
            m = re.search(pattern, last, re.M)
            if m and (value := _measured(m.group(1))) is not None:
                profiler[key] = value * _SCALE[m.group(2)]
        for key, pattern in (("samples_per_second", rf"{_LINE_START}samples/second:\s+({_NUMBER})"),
                             ("batch_size_per_gpu", rf"{_LINE_START}batch size per GPU:\s+(\d+)")):
            m = re.search(pattern, last, re.M)
            if m and (value := _measured(m.group(1))) is not None:
                profiler[key] = value
        m = re.search(rf"{_LINE_START}FLOPS per GPU = [^:]*:\s+(.+)$", last, re.M)
        if m and (flops := _number_with_scale(m.group(1))) is not None:
            profiler["flops_per_gpu"] = flops
    mega_s = [ms / 1000 for m in _MEGATRON.finditer(text) if (ms := _measured(m.group("ms")))]
    mega_tf = [tf for m in _MEGATRON.finditer(text) if (tf := _measured(m.group("tflops"))) is not None]
    pipe_s = [seconds for m in _PIPE.finditer(text) if (seconds := _measured(m.group("s")))]
    logged = {m.group("key"): int(m.group("value")) for m in _CONFIG_PRINT.finditer(text)}
    return LogSummary(tuple(steps), tuple(micro), tuple(optimizer), tuple(current), running, max_mem, profiler,
                      tuple(mega_s), tuple(mega_tf), tuple(pipe_s), logged)


def step_seconds_from_log(summary: LogSummary, global_batch: int | None = None) -> float | None:
    """One optimizer step's seconds from a parsed log: a stated time per iteration (pipeline engine, Megatron),
    else the wall-clock timers, else the throughput timer with ``global_batch`` (samples per step)."""
    if global_batch is not None and (isinstance(global_batch, bool) or not isinstance(global_batch, numbers.Real)
                                     or not global_batch > 0):
        raise PlanInputError("global_batch", global_batch, "must be a positive number of samples per step")
    step = summary.typical_step_seconds()
    if step is None and summary.samples_per_second and global_batch:
        rate = statistics.median(summary.samples_per_second)
        step = global_batch / rate if rate > 0 else math.inf
        if not math.isfinite(step):
            raise ValueError(f"the log's throughput timer reads {rate:g} samples/s, which gives no step time for "
                             f"{global_batch} samples: give the measured step time instead.")
    return step


def step_source(summary: LogSummary, global_batch: int | None = None, batch_of: str = "") -> str | None:
    """Where ``step_seconds_from_log`` took its step time from, in words (which series, how many steps or reports,
    what was dropped); None when it found none. ``batch_of`` says whose the global batch is ("the logged run's")."""
    found = summary.step_series()
    if found is not None:
        what, series = found
        if len(series) == 1:
            return f"{what}: the log's one step"
        if len(series) == 2:
            return f"{what}: the log's second step, the first dropped as warm-up"
        return f"{what}: the median of {len(series) - 1} steps, the first of {len(series)} dropped as warm-up"
    if summary.samples_per_second and global_batch:
        reports = len(summary.samples_per_second)
        return (f"the throughput timer: {global_batch} samples per step{f' ({batch_of})' if batch_of else ''} at the "
                f"median {statistics.median(summary.samples_per_second):.4g} samples/s of {reports} "
                f"report{'' if reports == 1 else 's'}")
    return None


def _solve(fn, lo: float, hi: float, target: float) -> float:
    """Bisection (in log space) for a decreasing fn(x) == target on [lo, hi] (clamped to the ends)."""
    if target >= fn(lo):
        return lo
    if target <= fn(hi):
        return hi
    lo_log, hi_log = math.log(lo), math.log(hi)
    for _ in range(60):
        mid = (lo_log + hi_log) / 2
        if fn(math.exp(mid)) > target:
            lo_log = mid
        else:
            hi_log = mid
    return math.exp((lo_log + hi_log) / 2)


#: How much slower than the model's defaults a calibrated cluster may run (one factor on every rate): a
#: measurement beyond 20x the prediction is not a slow cluster but different inputs (micro batch, accumulation,
#: sequence length, GPU count) or a step that includes what the model does not (data loading, evaluation,
#: checkpointing).
SLOWEST_RATE_FACTOR = 0.05
#: How far a calibrated prediction may miss the measurement before ``calibrate`` refuses it.
CALIBRATION_TOLERANCE = 0.02


class CalibrationError(PlanInputError):
    """A measurement the model cannot reproduce on this config and cluster (the reason says what to check)."""


def _number(name: str, value: object, unit: str) -> float:
    try:  # math.isfinite of an int beyond the float range (10**400) raises OverflowError
        finite = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    except OverflowError:
        finite = False
    if not finite or not value > 0:
        raise PlanInputError(name, value, f"must be a positive, finite number of {unit}")
    return float(value)


def _rates_scaled(cluster: Cluster, factor: float, used: Mapping[str, bool] | None = None) -> Cluster:
    """``cluster`` with every rate the step depends on times ``factor``: the GEMM and link efficiencies (capped at
    1, the datasheet) and the CPU optimizer's rate; ``used`` (``rates_used``) leaves the rates the step does not
    depend on as they are, since the measurement says nothing of them."""
    eff = cluster.efficiency
    scale_link = used is None or used.get("link", True)
    scale_cpu = used is None or used.get("cpu_adam", True)
    return replace(cluster, cpu_adam_params_per_s=cluster.cpu_adam_rate * factor if scale_cpu else
                   cluster.cpu_adam_params_per_s,
                   efficiency=replace(eff, compute=min(1.0, cluster.compute_efficiency * factor),
                                      link=min(1.0, eff.link * factor) if scale_link else eff.link))


def rates_used(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, cluster: Cluster, shape: Shape,
               version: str = DEFAULT_VERSION) -> dict[str, bool]:
    """Which of the rates a calibration fits besides the compute efficiency the step of ``ds_config`` depends on:
    the link efficiency (collectives, PCIe and NVMe transfers) and the CPU optimizer's rate (offload_optimizer),
    found by halving each: a step that does not change says nothing about it."""
    step = predict(ds_config, model, cluster, shape, version=version).step_seconds
    slower = {"link": replace(cluster, efficiency=replace(cluster.efficiency, link=cluster.efficiency.link / 2)),
              "cpu_adam": replace(cluster, cpu_adam_params_per_s=cluster.cpu_adam_rate / 2)}
    return {key: predict(ds_config, model, changed, shape, version=version).step_seconds != step
            for key, changed in slower.items()}


def calibrate(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    shape: Shape,
    *,
    measured_step_seconds: float | None = None,
    measured_peak_bytes: int | None = None,
    version: str = DEFAULT_VERSION,
) -> Cluster:
    """A copy of ``cluster`` whose constants reproduce the measurement of ``ds_config`` run with DeepSpeed
    ``version`` (the prediction and the memory estimate read the config as that release does).

    A measured step fits one factor on every rate the step depends on: ``efficiency.compute`` and
    ``efficiency.link`` (each at most 1, the datasheet) and ``cpu_adam_params_per_s``. One factor, because one
    step time cannot tell which part of the step ran slower or faster than assumed; fitting only the GEMM rate
    to a step that the network or the CPU optimizer dominates put it at a few percent of peak, which then
    predicted every compute-bound config on the cluster many times too slow. A measured peak fits the memory
    model's allocator allowance (``memory_allowances.allocator_fraction``), or the CUDA context allowance when the
    model's estimate is already above the measurement.

    Raises ``PlanInputError`` (naming the measurement's parameter) for a measurement that is not a positive finite
    number, and ``CalibrationError`` (a ``PlanInputError``) for one the model cannot
    reproduce within ``CALIBRATION_TOLERANCE``: a step faster than the config can run with every efficiency at 1,
    or slower than it runs with every rate at ``SLOWEST_RATE_FACTOR`` of its value (at most 1 / that times the
    prediction: latencies and host overheads do not scale); a peak below what the model's own tensors take
    or above twice the estimate. Those are measurements of other inputs, and the message says which to check.
    """
    out = cluster
    if measured_step_seconds is not None:
        measured = _number("measured_step_seconds", measured_step_seconds, "seconds")
        # the most a rate can rise: until both efficiencies reach 1, and the CPU optimizer's rate (a host's, whose
        # catalog figure is one CPU among many) as far as the slow side goes down
        fastest = max(1.0 / min(cluster.compute_efficiency, cluster.efficiency.link), 1.0 / SLOWEST_RATE_FACTOR)

        def step_with(factor: float) -> float:
            return predict(ds_config, model, _rates_scaled(cluster, factor), shape, version=version).step_seconds

        factor = _solve(step_with, SLOWEST_RATE_FACTOR, fastest, measured)
        reached = step_with(factor)
        if abs(reached / measured - 1) > CALIBRATION_TOLERANCE:
            before = predict(ds_config, model, cluster, shape, version=version).step_seconds
            if measured < reached:
                why = (f"faster than this config can run on this cluster with every efficiency at 1 and the CPU "
                       f"optimizer at {fastest:.3g}x its rate ({reached:.3g} s; the uncalibrated prediction is "
                       f"{before:.3g} s; latencies and host overheads are fixed)")
            else:
                # latencies and host overheads do not scale with the rates, so the slowest step the factor
                # reaches is less than 1 / SLOWEST_RATE_FACTOR times the prediction: say the real bound
                ratio = measured / before
                times = f"{ratio:.3g}x" if math.isfinite(ratio) else f"over {sys.float_info.max:.0e} times"
                why = (f"{times} the prediction ({before:.3g} s), slower than this config runs even "
                       f"with every rate at {SLOWEST_RATE_FACTOR:g} of its default ({reached:.3g} s, "
                       f"{reached / before:.3g}x), more than a slower cluster explains (data loading, evaluation or "
                       "checkpointing inside the timed step?)")
            raise CalibrationError("measured_step_seconds", measured, f"is {why}: check that the micro batch, "
                                   "gradient accumulation, sequence length, GPU count and precision are the measured "
                                   "run's")
        out = _rates_scaled(cluster, factor, rates_used(ds_config, model, cluster, shape, version))
    if measured_peak_bytes is not None:
        peak = _number("measured_peak_bytes", measured_peak_bytes, "bytes")
        from core.perf.recommend import hardware_for

        base = replace(out.memory_allowances, allocator_fraction=0.0)
        est = estimate(ds_config, model, hardware_for(out), shape, allowances=base, version=version)
        without = est.gpu_bytes - base.cuda_context_bytes
        fraction = (peak - est.gpu_bytes) / without if without > 0 else 0.0
        gib = 2**30
        if peak < without or fraction > 1:
            side = ("below what the model's own tensors take" if peak < without
                    else "more than twice the memory model's estimate")
            raise CalibrationError("measured_peak_bytes", peak, f"({peak / gib:.2f} GiB) is {side} "
                                   f"({without / gib:.2f} GiB without the CUDA context and allocator): check that "
                                   "the config, model, micro batch, sequence length and recompute are the measured "
                                   "run's, and that the figure is torch.cuda.max_memory_reserved() of one GPU")
        if fraction < 0:
            # the model overestimates even without the allocator: shrink the fixed context allowance instead
            context = base.cuda_context_bytes + (peak - est.gpu_bytes)
            out = replace(out, memory_allowances=replace(base, cuda_context_bytes=int(context)))
        else:
            out = replace(out, memory_allowances=replace(base, allocator_fraction=fraction))
    return out


__all__ = ["CalibrationError", "LogSummary", "calibrate", "parse_log", "step_seconds_from_log"]
