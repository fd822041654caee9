"""Measure ZeRO-3's host-side (Python) cost per parameterised module per forward and per backward pass, on the CPU.

What it checks: ``core/perf/hardware.py`` ``Efficiency.zero3_module_overhead_s`` (150 µs), which
``core/perf/predict.py`` charges per parameterised module (linears + norms) per pass: once in the forward, once
in the backward and once more in a full-recompute forward. ZeRO-3's per-parameter gradient hooks are charged
separately (``grad_hook_overhead_s`` per parameter tensor, stages 2 and 3), so the module figure is meant to be
what ZeRO-3 adds beyond stage 2's hooks (the fetch/release hooks and their coordinator).

Method:

- One process, world size 1, gloo, ``DS_ACCELERATOR=cpu``, real ``deepspeed.initialize`` (DeepSpeed's
  shared-memory all-reduce op is not built: one rank needs none). fp32, torch Adam (``torch_adam``: no
  JIT-built op), micro batch 1, ``torch.set_num_threads(1)``.
- Model: ``M`` x ``torch.nn.Linear(16, 16)`` in a ``Sequential`` (2 parameter tensors each), input 1 x 16:
  compute is negligible, so what is timed is the host's per-module cost. M = 64, 128, 256.
- Variants, same model and data: plain PyTorch (no engine), stage 0, stage 2, stage 3 with
  ``stage3_param_persistence_threshold: 0`` (every module really fetched and released, as a 7B model's linears
  are), stage 3 with the default threshold (1e5: all these tiny parameters are persistent, never fetched), and
  stage 3 threshold 0 with ``memory_efficient_linear: false`` ("no-mel"). ``stage3_prefetch_bucket_size`` default.
- ZeRO-3's initialize replaces ``torch.nn.functional.linear`` process-wide with ``zero3_linear_wrap`` (a Python
  autograd Function, ``memory_efficient_linear``, default on) and never puts it back; a baseline timed after it in
  the same process would pay it too (plain Linear forward 12 -> 50 µs here). So each engine records the
  ``linear`` it would run with in a process of its own, and its steps run with that one.
- Per step: ``time.perf_counter`` around ``engine(x)`` (forward), ``engine.backward(loss)`` (backward) and
  ``engine.step()`` (step, reported but not used). For each M one engine per variant is built and given 6
  warm-up steps (ZeRO-3 traces its module order in the first ones); then 3 repeats, each the median of 20 steps
  per variant, the variants interleaved in alternating order so background load hits them alike.
  Spread = min..max over the 3 repeats. On a shared machine a busy neighbour inflates whole repeats, so the
  least-loaded repeat (``best``: each variant's fastest repeat at each M) is printed too.
- Per-module cost = (median(variant) - median(baseline)) / M, per forward and per backward, against stage 0
  (the closest to plain PyTorch, printed alongside) and, for the backward, also against stage 2 (what the
  module constant should hold, the gradient hooks being charged apart). Linearity: a least-squares line
  t(M) = a + b M through the repeats' medians of the difference; b is the per-module figure, a the fixed part.
- Then cProfile of 5 ZeRO-3 steps (threshold 0, largest M), top functions by own time.

Run: ``.venv/bin/python scripts/zero3_hook_cost.py`` (about 2 minutes on 2 busy cores).
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import io
import logging
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

MODULE_COUNTS = (64, 128, 256)
WARMUP = 6
STEPS = 20
REPEATS = 3
WIDTH = 16


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle.initialize import single_rank_env  # noqa: E402

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.update(single_rank_env())

import deepspeed  # noqa: E402
import deepspeed.ops  # noqa: E402
import torch  # noqa: E402

deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False  # one rank: no shared-memory all-reduce op
logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
deepspeed.utils.logger.setLevel(logging.ERROR)
torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=FutureWarning)  # torch.distributed's all_gather_into_tensor renames

ADAM = {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}}


def _config(stage: int, **zero: Any) -> dict[str, Any]:
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "optimizer": ADAM,
            "steps_per_print": 10**9, "zero_optimization": {"stage": stage, **zero}}


#: name -> DeepSpeed config (None: plain PyTorch, no engine)
VARIANTS: dict[str, dict[str, Any] | None] = {
    "plain torch": None,
    "stage 0": _config(0),
    "stage 2": _config(2),
    "z3 thr=0": _config(3, stage3_param_persistence_threshold=0),
    "z3 thr=default": _config(3),
    "z3 thr=0 no-mel": _config(3, stage3_param_persistence_threshold=0, memory_efficient_linear=False),
}
#: torch.nn.functional.linear before any engine: ZeRO-3's initialize replaces it process-wide with its Python
#: autograd Function (``memory_efficient_linear``, default on) and never restores it
ORIGINAL_LINEAR = torch.nn.functional.linear


def _model(m: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*(torch.nn.Linear(WIDTH, WIDTH) for _ in range(m)))


class _Plain:
    """The engine's three calls on plain PyTorch."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def step(self) -> None:
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def destroy(self) -> None:
        pass


def _engine(config: dict[str, Any] | None, m: int) -> Any:
    """A fresh engine, with ``.linear``: the ``torch.nn.functional.linear`` it runs with in a process of its own."""
    torch.nn.functional.linear = ORIGINAL_LINEAR
    model = _model(m)
    if config is None:
        engine = _Plain(model)
    else:
        with contextlib.redirect_stdout(io.StringIO()):
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    engine.linear = torch.nn.functional.linear
    torch.nn.functional.linear = ORIGINAL_LINEAR
    return engine


def _run(engine: Any, x: torch.Tensor, steps: int) -> list[tuple[float, float, float]]:
    torch.nn.functional.linear = engine.linear
    try:
        return [_step(engine, x) for _ in range(steps)]
    finally:
        torch.nn.functional.linear = ORIGINAL_LINEAR


def _step(engine: Any, x: torch.Tensor) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    out = engine(x)
    t1 = time.perf_counter()
    loss = out.sum()
    t2 = time.perf_counter()
    engine.backward(loss)
    t3 = time.perf_counter()
    engine.step()
    t4 = time.perf_counter()
    return t1 - t0, t3 - t2, t4 - t3


def _block(engine: Any, x: torch.Tensor) -> tuple[float, float, float]:
    """Median forward, backward, step seconds of ``STEPS`` steps of one engine."""
    gc.collect()
    times = _run(engine, x, STEPS)
    return tuple(statistics.median(t[i] for t in times) for i in range(3))  # type: ignore[return-value]


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares intercept and slope of (M, seconds)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def _us(s: float) -> str:
    return f"{s * 1e6:7.1f}"


def _profile(m: int) -> None:
    engine = _engine(VARIANTS["z3 thr=0"], m)
    x = torch.randn(1, WIDTH)
    _run(engine, x, WARMUP)
    torch.nn.functional.linear = engine.linear
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        loss = engine(x).sum()
        engine.backward(loss)
    prof.disable()
    torch.nn.functional.linear = ORIGINAL_LINEAR
    engine.destroy()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"\ncProfile, z3 thr=0, M={m}, 5 x (forward + backward), {total / 5 * 1e3:.1f} ms per step under the "
          "profiler (cProfile inflates it);\ntop functions by own time per step, and per module per pass (own / 2M):")
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"{'own ms':>8} {'cum ms':>8} {'µs/mod/pass':>12} {'calls/step':>10}  function")
    for (path, line, name), (_cc, ncalls, tottime, cumtime, _callers) in rows[:18]:
        short = path.split("site-packages/")[-1] if "site-packages/" in path else os.path.basename(path)
        print(f"{tottime / 5 * 1e3:8.2f} {cumtime / 5 * 1e3:8.2f} {tottime / 5 / (2 * m) * 1e6:12.1f} "
              f"{ncalls / 5:10.0f}  {short}:{line} {name}")


def main() -> None:
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model_name = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if "Model name" in line), "?")
    print(f"CPU: {model_name} ({os.cpu_count()} logical), Python {platform.python_version()}, "
          f"torch {torch.__version__}, deepspeed {deepspeed.__version__}, torch threads 1")
    # results[variant][m] = list of (fwd, bwd, step) per repeat
    results: dict[str, dict[int, list[tuple[float, float, float]]]] = {v: {m: [] for m in MODULE_COUNTS}
                                                                         for v in VARIANTS}
    start = time.perf_counter()
    x = torch.randn(1, WIDTH)
    for m in MODULE_COUNTS:
        engines = {name: _engine(config, m) for name, config in VARIANTS.items()}
        for engine in engines.values():
            _run(engine, x, WARMUP)
        for rep in range(REPEATS):  # interleaved, order alternating, so background load hits every variant alike
            for name in list(VARIANTS) if rep % 2 == 0 else list(reversed(VARIANTS)):
                results[name][m].append(_block(engines[name], x))
        for engine in engines.values():
            engine.destroy()
        print(f"  M={m} done at {time.perf_counter() - start:.0f} s", file=sys.stderr)

    print("\nMedian seconds per pass (median of the 3 repeats' medians), µs:")
    print(f"{'variant':<22}" + "".join(f"{'M=' + str(m) + ' fwd':>12}{'bwd':>9}{'step':>9}" for m in MODULE_COUNTS))
    for name in VARIANTS:
        row = ""
        for m in MODULE_COUNTS:
            med = [statistics.median(r[i] for r in results[name][m]) for i in range(3)]
            row += f"{_us(med[0]):>12}{_us(med[1]):>9}{_us(med[2]):>9}"
        print(f"{name:<22}{row}")

    def per_module(name: str, base: str, i: int) -> tuple[list[str], float, float, float, float, float]:
        """Per-module (variant - base) at each M as 'median [min..max]' over repeats; the fit over all repeats
        (intercept, slope), the slope's range over repeats, and the slope of the fastest repeats."""
        cells, points = [], []
        for m in MODULE_COUNTS:
            diffs = [(v[i] - b[i]) / m for v, b in zip(results[name][m], results[base][m], strict=True)]
            points += [(m, d * m) for d in diffs]
            cells.append(f"{_us(statistics.median(diffs)).strip()} [{_us(min(diffs)).strip()}.."
                         f"{_us(max(diffs)).strip()}]")
        intercept, slope = _fit(points)
        rep_slopes = [_fit([(m, (results[name][m][r][i] - results[base][m][r][i])) for m in MODULE_COUNTS])[1]
                      for r in range(REPEATS)]
        best = _fit([(m, min(r[i] for r in results[name][m]) - min(r[i] for r in results[base][m]))
                     for m in MODULE_COUNTS])[1]
        return cells, intercept, slope, min(rep_slopes), max(rep_slopes), best

    print("\nPer module per pass = (variant - baseline) / M, µs: median [min..max over repeats]; fit t = a + b*M over "
          "all repeats (b per module, a fixed, µs); b's range over the repeats; best: b of the fastest repeats")
    print(f"{'variant - baseline':<30}{'pass':<5}" + "".join(f"{'M=' + str(m):>24}" for m in MODULE_COUNTS)
          + f"{'b':>8}{'b range':>16}{'best':>8}{'a':>9}")
    comparisons = [(v, "stage 0") for v in VARIANTS if v != "stage 0"] + \
                  [(v, "stage 2") for v in VARIANTS if v.startswith("z3")]
    for name, base in comparisons:
        for i, label in ((0, "fwd"), (1, "bwd")):
            cells, a, b, bmin, bmax, best = per_module(name, base, i)
            print(f"{name + ' - ' + base:<30}{label:<5}" + "".join(f"{c:>24}" for c in cells)
                  + f"{_us(b):>8}{_us(bmin).strip() + '..' + _us(bmax).strip():>16}{_us(best):>8}{a * 1e6:9.0f}")

    _profile(MODULE_COUNTS[-1])
    print(f"\ntotal {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
