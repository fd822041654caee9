"""Benchmarks, side by side in one run (``make bench``).

- validation per config: ``core.validate`` against DeepSpeed's own ``DeepSpeedConfig`` on every corpus file;
- CLI cold start: ``dsconfig validate`` against ``python -c "import deepspeed"``;
- the memory sweep, when ``core.memory`` has one (see scripts/bench_memory.py).

Prints a table; copy it into BENCHMARKS.md with the machine it ran on.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import load_config, validate  # noqa: E402
from core.io import ConfigLoadError  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def corpus_configs() -> list[dict]:
    configs = []
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file() and path.name not in ("SOURCES.tsv", "README.md"):
            with contextlib.suppress(ConfigLoadError):
                configs.append(load_config(path.read_bytes()))
    return configs


def time_per_call(fn, items, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, (time.perf_counter() - start) / len(items))
    return best


def deepspeed_parse(config: dict) -> None:
    from deepspeed.runtime.config import DeepSpeedConfig

    with contextlib.suppress(Exception):  # rejections are part of the work being timed
        DeepSpeedConfig(copy.deepcopy(config))


def cold_start(cmd: list[str], runs: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    configs = corpus_configs()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"corpus: {len(configs)} loadable configs\n")
    ours = time_per_call(lambda c: validate(c, world_size=8), configs)
    logging.disable(logging.CRITICAL)
    import deepspeed  # noqa: F401 — import cost is measured separately below

    theirs = time_per_call(deepspeed_parse, configs)
    print(f"{'validation per config':<40} {'core.validate':>16} {'DeepSpeedConfig':>16}")
    print(f"{'':<40} {ours * 1e3:>13.3f} ms {theirs * 1e3:>13.3f} ms")
    sample = CORPUS / "CSCfi__pytorch-ddp-examples" / "ds_config.json"
    cli = cold_start([sys.executable, "-m", "core", "validate", str(sample)])
    ds = cold_start([sys.executable, "-c", "import deepspeed"])
    print(f"\n{'cold start (median / best of 5)':<40} {'dsconfig validate':>20} {'import deepspeed':>18}")
    print(f"{'':<40} {cli[0]:>9.2f} s / {cli[1]:.2f} s {ds[0]:>8.2f} s / {ds[1]:.2f} s")
    bench_memory = ROOT / "scripts" / "bench_memory.py"
    if bench_memory.exists():
        print()
        subprocess.run([sys.executable, str(bench_memory)], check=False, cwd=ROOT)


if __name__ == "__main__":
    main()
