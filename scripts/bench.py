"""Benchmarks, side by side in one run (``make bench``); prints one table with the machine it ran on.

- validation per config: ``core.validate`` against DeepSpeed's own ``DeepSpeedConfig`` on every corpus file;
- CLI cold start: ``dsconfig validate`` against ``python -c "import deepspeed"``;
- the memory sweep for 10,000 points (vectorised, as the charts draw it) against 10,000 scalar ``estimate`` calls;
- every app page's rerun time under ``streamlit.testing.v1.AppTest`` against a trivial one-line page
  (median of ``--reruns``), when the app exists;
- then the detailed memory-model timings of scripts/bench_memory.py.

Copy the output into BENCHMARKS.md. Timings only, no assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import io
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import load_config, validate  # noqa: E402
from core.io import ConfigLoadError  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
SWEEP_POINTS = 10_000
BENCH_MODEL = "meta-llama/Meta-Llama-3-8B"


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


def median_time(fn: Callable[[], object], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def deepspeed_parse(config: dict) -> None:
    from deepspeed.runtime.config import DeepSpeedConfig

    with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
        DeepSpeedConfig(copy.deepcopy(config))  # rejections are part of the work being timed


def cold_start(cmd: list[str], runs: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def machine_info() -> list[str]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.1f} GiB RAM"
    load = ""
    with contextlib.suppress(OSError, AttributeError):
        load = " (load average at start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + ")"
    versions = []
    for dist in ("deepspeed", "streamlit", "torch", "pydantic"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
    return [
        f"machine: {cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}{load}",
        f"software: Python {platform.python_version()}, " + ", ".join(versions),
    ]


def bench_memory_sweep(repeat: int) -> list[tuple[str, str, str]]:
    import numpy as np

    from core import memory, models

    spec = models.get_spec(BENCH_MODEL)
    cfg = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}
    hw = memory.Hardware(8, 1, 80 * memory.GIB, 1024 * memory.GIB)
    shape = memory.Shape(1, 4096, "flash", "full")
    values = np.arange(1, SWEEP_POINTS + 1)
    shapes = [memory.Shape(int(b), 4096, "flash", "full") for b in values]
    vec_totals = median_time(lambda: memory.sweep_totals(cfg, spec, hw, shape, "micro_batch", values), repeat)
    vec_chart = median_time(lambda: memory.sweep(cfg, spec, hw, shape, "micro_batch", values), repeat)
    scalar = median_time(lambda: [memory.estimate(cfg, spec, hw, s) for s in shapes], 1)
    n = f"{SWEEP_POINTS:,}"
    return [
        (f"memory sweep, {n} micro batches: totals", f"{vec_totals * 1e3:.1f} ms",
         f"{scalar * 1e3:.0f} ms ({n} x estimate())"),
        (f"memory sweep, {n} points x components (chart)", f"{vec_chart * 1e3:.1f} ms",
         f"{scalar * 1e3:.0f} ms ({n} x estimate())"),
    ]


def _seeded_app(page_file: str):
    from streamlit.testing.v1 import AppTest

    from core.models import get_config, get_spec

    model = "meta-llama/Llama-2-7b-hf"
    spec = get_spec(model)
    config = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["config"] = config
    at.run()
    at.session_state["context"].update(model=model, model_config=get_config(model), total_params=spec.total_params,
                                       largest_layer_params=spec.largest_layer_params)
    at.switch_page(page_file).run()
    return at


def bench_pages(reruns: int) -> list[tuple[str, str, str]]:
    if not (ROOT / "app.py").exists() or not list((ROOT / "pages").glob("*.py")):
        return [("app page reruns", "app not found", "")]
    from streamlit.testing.v1 import AppTest

    from ui import app_state

    with tempfile.TemporaryDirectory() as tmp:
        trivial_file = Path(tmp) / "trivial.py"
        trivial_file.write_text('import streamlit as st\nst.write("trivial")\n', encoding="utf-8")
        trivial = AppTest.from_file(str(trivial_file), default_timeout=60).run()
        trivial_time = median_time(trivial.run, reruns)
    rows = []
    for page_id, page_file in app_state.PAGES.items():
        try:
            at = _seeded_app(page_file)
            if at.exception:
                rows.append((f"page rerun: {page_id}", "error: " + str(at.exception[0].message)[:40], ""))
                continue
            page_time = median_time(at.run, reruns)
            if at.exception:  # a rerun that ends on an error screen is not a page rerun time
                rows.append((f"page rerun: {page_id}", "error: " + str(at.exception[0].message)[:40], ""))
                continue
            rows.append((f"page rerun: {page_id} (median of {reruns})", f"{page_time * 1e3:.0f} ms",
                         f"{trivial_time * 1e3:.0f} ms (trivial page)"))
        except Exception as exc:  # a benchmark run reports a broken page rather than stopping
            rows.append((f"page rerun: {page_id}", f"failed: {type(exc).__name__}", ""))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Benchmarks, side by side.")
    parser.add_argument("--reruns", type=int, default=10, help="page reruns per page (median)")
    parser.add_argument("--no-pages", action="store_true", help="skip the app page reruns")
    parser.add_argument("--no-details", action="store_true", help="skip scripts/bench_memory.py")
    args = parser.parse_args(argv)

    header = machine_info()
    configs = corpus_configs()
    rows: list[tuple[str, str, str]] = []
    ours = time_per_call(lambda c: validate(c, world_size=8), configs)
    logging.disable(logging.CRITICAL)
    import deepspeed  # noqa: F401 — import cost is measured separately below

    theirs = time_per_call(deepspeed_parse, configs)
    rows.append((f"validation per config ({len(configs)} corpus configs)", f"{ours * 1e3:.3f} ms",
                 f"{theirs * 1e3:.3f} ms (DeepSpeedConfig)"))
    sample = CORPUS / "CSCfi__pytorch-ddp-examples" / "ds_config.json"
    cli = cold_start([sys.executable, "-m", "core", "validate", str(sample)])
    ds = cold_start([sys.executable, "-c", "import deepspeed"])
    rows.append(("CLI cold start, median / best of 5", f"{cli[0]:.2f} s / {cli[1]:.2f} s",
                 f"{ds[0]:.2f} s / {ds[1]:.2f} s (import deepspeed)"))
    rows.extend(bench_memory_sweep(repeat=7))
    if not args.no_pages:
        rows.extend(bench_pages(args.reruns))

    print("\n".join(header))
    width = max(len(r[0]) for r in rows) + 2
    print(f"\n{'benchmark':<{width}} {'DeepSpeed Config Studio':>26}   reference")
    print("-" * (width + 70))
    for name, value, reference in rows:
        print(f"{name:<{width}} {value:>26}   {reference}")
    sys.stdout.flush()
    bench_memory = ROOT / "scripts" / "bench_memory.py"
    if bench_memory.exists() and not args.no_details:
        print("\nmemory model details (scripts/bench_memory.py):", flush=True)
        subprocess.run([sys.executable, str(bench_memory)], check=False, cwd=ROOT)


if __name__ == "__main__":
    main()
