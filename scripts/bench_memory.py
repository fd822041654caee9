"""Benchmark the memory model: 10,000-point vectorised sweeps, solvers and the scalar estimate.

python scripts/bench_memory.py            # prints timings (median of repeats); no assertions
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import memory, models
from scripts.bench import median_time


def main() -> None:
    spec = models.get_spec("meta-llama/Meta-Llama-3-8B")
    cfg = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}
    hw = memory.Hardware(8, 1, 80 * memory.GIB, 1024 * memory.GIB)
    shape = memory.Shape(1, 4096, "flash", "full")
    values = np.arange(1, 10_001)
    rows = [
        ("estimate() scalar, one config", lambda: memory.estimate(cfg, spec, hw, shape)),
        (
            "evaluate_arrays, 10,000 micro batches (totals)",
            lambda: memory.evaluate_arrays(cfg, spec, hw, shape, micro_batch=values),
        ),
        (
            "sweep_totals, 10,000 seq lens (DataFrame)",
            lambda: memory.sweep_totals(cfg, spec, hw, shape, "seq_len", values),
        ),
        (
            "sweep, 10,000 micro batches x components (long DataFrame)",
            lambda: memory.sweep(cfg, spec, hw, shape, "micro_batch", values),
        ),
        ("sweep, 10,000 GPU counts x components", lambda: memory.sweep(cfg, spec, hw, shape, "total_gpus", values)),
        ("max_micro_batch (limit 4096)", lambda: memory.max_micro_batch(cfg, spec, hw, shape)),
        ("min_gpus (up to 1024 nodes)", lambda: memory.min_gpus(cfg, spec, hw, shape)),
        ("options_table (14 options + max micro batch each)", lambda: memory.options_table(cfg, spec, hw, shape)),
        (
            "DeepSpeed parity: 10,000 zero3 estimator calls",
            lambda: [memory.estimate_zero3_model_states_mem_needs(1e9 + i, 1e7, 8, 2) for i in range(10_000)],
        ),
    ]
    print(f"{'benchmark':62s} {'median':>10s}")
    for name, fn in rows:
        print(f"{name:62s} {median_time(fn, 7) * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
