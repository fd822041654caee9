"""Planner: predict the step time of a DeepSpeed config on a cluster, rank configs, calibrate from a measurement."""

from core.perf.calibrate import (
    CalibrationError,
    LogSummary,
    calibrate,
    parse_log,
    step_seconds_from_log,
    step_source,
)
from core.perf.compute import flops_per_token
from core.perf.errors import PlanInputError
from core.perf.hardware import GPU_PERF, NETWORKS, Cluster, Efficiency, GPUPerf, gpu_perf
from core.perf.predict import StepEstimate, predict
from core.perf.recommend import batch_split_problem, build_config, gpu_sweep, recommend
from core.perf.settings import PerfSettings, read_settings

__all__ = [
    "GPU_PERF",
    "NETWORKS",
    "CalibrationError",
    "Cluster",
    "Efficiency",
    "GPUPerf",
    "LogSummary",
    "PerfSettings",
    "PlanInputError",
    "StepEstimate",
    "batch_split_problem",
    "build_config",
    "calibrate",
    "flops_per_token",
    "gpu_perf",
    "gpu_sweep",
    "parse_log",
    "predict",
    "read_settings",
    "recommend",
    "step_seconds_from_log",
    "step_source",
]
