"""Planner: predict the step time of a DeepSpeed config on a cluster, rank configs, calibrate from a measurement."""

from core.perf.hardware import GPU_PERF, NETWORKS, Cluster, Efficiency, GPUPerf, gpu_perf
from core.perf.predict import StepEstimate, flops_per_token, predict
from core.perf.recommend import build_config, gpu_sweep, recommend
from core.perf.settings import PerfSettings, read_settings

__all__ = [
    "GPU_PERF",
    "NETWORKS",
    "Cluster",
    "Efficiency",
    "GPUPerf",
    "PerfSettings",
    "StepEstimate",
    "build_config",
    "flops_per_token",
    "gpu_perf",
    "gpu_sweep",
    "predict",
    "read_settings",
    "recommend",
]
