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
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.memory.estimate import ModelCounts, Shape, estimate
from core.models.arch import ModelSpec
from core.perf.hardware import Cluster
from core.perf.predict import predict

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0}
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIMERS = re.compile(r"time \(ms\) \|(?P<body>.*)$", re.M)
_THROUGHPUT = re.compile(
    r"global_step=(?P<step>\d+), RunningAvgSamplesPerSec=(?P<avg>[\d.eE+-]+), CurrSamplesPerSec=(?P<cur>[\d.eE+-]+)"
    r"(?:, MemAllocated=(?P<mem>[\d.]+)GB, MaxMemAllocated=(?P<maxmem>[\d.]+)GB)?"
)
_PROFILER = {
    "fwd_latency_s": r"^fwd latency:\s+([\d.]+)\s*(us|ms|s)\b",
    "bwd_latency_s": r"^bwd latency:\s+([\d.]+)\s*(us|ms|s)\b",
    "step_latency_s": r"^step latency:\s+([\d.]+)\s*(us|ms|s)\b",
    "iter_latency_s": r"^iter latency:\s+([\d.]+)\s*(us|ms|s)\b",
}
_MEGATRON = re.compile(r"elapsed time per iteration \(ms\): (?P<ms>[\d.]+)(?:.*?TFLOPs: (?P<tflops>[\d.]+))?")


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

    def typical_step_seconds(self) -> float | None:
        """Median optimizer-step time, the first (warm-up) step dropped when there are more; None if unknown."""
        for series in (self.step_seconds, self.megatron_iteration_seconds):
            if series:
                steady = series[1:] if len(series) > 1 else series
                return statistics.median(steady)
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
        if (cur := _measured(match.group("cur"))) is not None:
            current.append(cur)
        running = _measured(match.group("avg"))
        max_mem = _measured(match.group("maxmem")) or max_mem
    profiler: dict[str, float] = {}
    summaries = text.split("DeepSpeed Flops Profiler")
    if len(summaries) > 1:
        last = summaries[-1]
        for key, pattern in _PROFILER.items():
            m = re.search(pattern, last, re.M)
            if m and (value := _measured(m.group(1))) is not None:
                profiler[key] = value * _UNITS[m.group(2)]
        for key, pattern in (("samples_per_second", r"^samples/second:\s+([\d.]+)"),
                             ("batch_size_per_gpu", r"^batch size per GPU:\s+(\d+)")):
            m = re.search(pattern, last, re.M)
            if m and (value := _measured(m.group(1))) is not None:
                profiler[key] = value
        m = re.search(r"^FLOPS per GPU = [^:]*:\s+(.+)$", last, re.M)
        if m and (flops := _number_with_scale(m.group(1))) is not None:
            profiler["flops_per_gpu"] = flops
    mega_s = [ms / 1000 for m in _MEGATRON.finditer(text) if (ms := _measured(m.group("ms")))]
    mega_tf = [tf for m in _MEGATRON.finditer(text) if (tf := _measured(m.group("tflops"))) is not None]
    return LogSummary(tuple(steps), tuple(micro), tuple(optimizer), tuple(current), running, max_mem, profiler,
                      tuple(mega_s), tuple(mega_tf))


def step_seconds_from_log(summary: LogSummary, global_batch: int | None = None) -> float | None:
    """One optimizer step's seconds from a parsed log: the wall-clock timers, else Megatron's iteration time,
    else the throughput timer with ``global_batch`` (samples per step)."""
    step = summary.typical_step_seconds()
    if step is None and summary.samples_per_second and global_batch:
        step = global_batch / statistics.median(summary.samples_per_second)
    return step


def _solve(fn, lo: float, hi: float, target: float) -> float:
    """Bisection for a decreasing fn(x) == target on [lo, hi] (clamped to the ends)."""
    f_lo, f_hi = fn(lo), fn(hi)
    if target >= f_lo:
        return lo
    if target <= f_hi:
        return hi
    for _ in range(50):
        mid = (lo + hi) / 2
        if fn(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def calibrate(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    shape: Shape,
    *,
    measured_step_seconds: float | None = None,
    measured_peak_bytes: int | None = None,
) -> Cluster:
    """A copy of ``cluster`` whose constants reproduce the measurement.

    The step time fits ``efficiency.compute`` (the GEMM fraction of peak) in [0.02, 1]; when even that cannot
    reach the measurement (a communication-bound step), ``efficiency.link`` is fitted too. A measured peak fits
    the memory model's allocator allowance (``memory_allowances.allocator_fraction``).
    """
    out = cluster
    if measured_step_seconds is not None:
        if not measured_step_seconds > 0:
            raise ValueError("measured_step_seconds must be a positive number of seconds.")

        def step_with(**eff: float) -> float:
            return predict(ds_config, model, replace(cluster, efficiency=replace(cluster.efficiency, **eff)),
                           shape).step_seconds

        compute = _solve(lambda c: step_with(compute=c), 0.02, 1.0, measured_step_seconds)
        eff = replace(cluster.efficiency, compute=compute)
        if compute in (0.02, 1.0):
            link = _solve(lambda x: step_with(compute=compute, link=x), 0.02, 1.0, measured_step_seconds)
            eff = replace(eff, link=link)
        out = replace(out, efficiency=eff)
    if measured_peak_bytes is not None:
        if not measured_peak_bytes > 0:
            raise ValueError("measured_peak_bytes must be a positive number of bytes.")
        from core.perf.recommend import hardware_for

        base = replace(out.memory_allowances, allocator_fraction=0.0)
        est = estimate(ds_config, model, hardware_for(out), shape, allowances=base)
        without = est.gpu_bytes - base.cuda_context_bytes
        fraction = (measured_peak_bytes - est.gpu_bytes) / without if without > 0 else 0.0
        if fraction < 0:
            # the model overestimates even without the allocator: shrink the fixed context allowance instead
            context = max(0, base.cuda_context_bytes + (measured_peak_bytes - est.gpu_bytes))
            out = replace(out, memory_allowances=replace(base, cuda_context_bytes=int(context)))
        else:
            out = replace(out, memory_allowances=replace(base, allocator_fraction=min(fraction, 1.0)))
    return out


__all__ = ["LogSummary", "calibrate", "parse_log", "step_seconds_from_log"]
