"""Check the ZeRO++ blog rows at 49B-138B against what their sources leave open (BENCHMARKS.md, fourth round).

Usage: python scripts/perf_zeropp_check.py
Prints, for the rows of the ZeRO++ blog's Figures 6-8 (core/perf/measurements_docs.py):

1. the planner's pred/meas when each size is built from another depth (the blog and the paper name the sizes
   only): 40 layers (the rows' assumption) to 304;
2. the same rows with the sequence as 2048 x micro batch 1 instead of 1024 x 2 for "2K tokens per GPU";
3. the rows with no overlap at all (``Efficiency(overlap=0)``): every collective in series with the compute, an
   upper bound on what any prefetch or overlap structure can add;
4. what the bars themselves say, taking each size's ZeRO-3 and ZeRO++ steps at 100 Gbit/s as C + V and C + V/4
   (ZeRO++'s 4x smaller cross-node volume, the paper's claim): the bandwidth-independent part C against the
   planner's compute, and C + V/4 (ZeRO-3) / C + V/16 (ZeRO++) against the 400 Gbit/s bars;
5. every row of the accuracy table with other values of the overlap constant (``Efficiency.overlap``, 0.8 by default);
6. the 384-GPU ZeRO++ rows with the ZeRO++ tutorial's config (reduce_bucket_size 1e7, overlap_comm).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.memory.estimate import Shape
from core.perf.accuracy import ALL_ROWS, evaluate, measurement_config, measurement_model
from core.perf.hardware import Cluster, Efficiency
from core.perf.measurements import MEASUREMENTS, gpt
from core.perf.measurements_docs import ZEROPP_SIZE_ROWS
from core.perf.predict import predict

#: (hidden, layers, heads) giving each size (12 x layers x hidden^2 + the 50304-word embedding), 128-wide heads
SHAPES = {"49b": ((10112, 40, 79), (8192, 60, 64), (7168, 80, 56), (6144, 107, 48)),
          "91b": ((13824, 40, 108), (10240, 72, 80), (8192, 112, 64), (6144, 200, 48)),
          "138b": ((16896, 40, 132), (12288, 76, 96), (10240, 110, 80), (8192, 171, 64), (6144, 304, 48))}


def _ratios(rows) -> dict[str, float]:
    return {r.id: r.ratio for r in evaluate(rows).itertuples()}


def main() -> int:
    base = _ratios(ZEROPP_SIZE_ROWS)
    print("1. pred/meas by assumed depth (min-max over the size's rows)")
    for size, shapes in SHAPES.items():
        rows = [m for m in ZEROPP_SIZE_ROWS if m.id.startswith(f"zeropp-{size}-")]
        for hidden, layers, heads in shapes:
            r = _ratios([replace(m, model=gpt(hidden, layers, heads)) for m in rows]).values()
            print(f"   {size:>4} as {layers:3d} x {hidden:5d}: {min(r):.2f}-{max(r):.2f}")
    two_k = [m for m in ZEROPP_SIZE_ROWS if m.micro_batch == 2]
    seq = _ratios([replace(m, micro_batch=1, seq_len=2048) for m in two_k])
    moved = [seq[k] - base[k] for k in seq]
    print(f"2. 2K tokens as 2048 x 1 instead of 1024 x 2: pred/meas moves {min(moved):+.3f} to {max(moved):+.3f}")
    serial = {r.id: r.ratio for r in evaluate(ZEROPP_SIZE_ROWS, {"efficiency": Efficiency(overlap=0.0)}).itertuples()}
    print("3. no overlap at all (every collective in series with the compute), pred/meas:")
    for k in base:
        if base[k] < 2 / 3:
            print(f"   {k:32} {base[k]:.2f} -> {serial[k]:.2f}")
    print("4. the bars as C + V / bandwidth (100 Gbit/s: ZeRO-3 = C + V, ZeRO++ = C + V/4)")
    by_id = {m.id: m for m in ZEROPP_SIZE_ROWS}
    measured = {r.id: r.measured_step_s for r in evaluate(ZEROPP_SIZE_ROWS).itertuples()}
    lines: list[str] = []
    for size in SHAPES:
        for tokens in (1, 2):
            z3, zpp = measured[f"zeropp-{size}-zero3-100g-{tokens}k"], measured[f"zeropp-{size}-zeropp-100g-{tokens}k"]
            c = (4 * zpp - z3) / 3
            v = z3 - c
            m = by_id[f"zeropp-{size}-zero3-100g-{tokens}k"]
            est = predict(measurement_config(m), measurement_model(m), Cluster(m.gpu, m.gpus_per_node, m.nodes),
                          Shape(m.micro_batch, m.seq_len, m.attention, m.recompute))
            compute = est.breakdown["forward + backward compute"] + est.breakdown["recomputation"]
            z3_400, zpp_400 = (measured[f"zeropp-{size}-{k}-400g-{tokens}k"] for k in ("zero3", "zeropp"))
            lines.append(f"   {size:>4} {tokens}K: C {c:6.1f} s (planner's compute {compute:5.1f} s, "
                         f"x{c / compute:.2f}), V {v:5.1f} s; at 400 Gbit/s ZeRO-3 {c + v / 4:5.1f} (bar "
                         f"{z3_400:5.1f}), ZeRO++ {c + v / 16:5.1f} (bar {zpp_400:5.1f})")
    print("\n".join(lines))
    print("5. overlap constant: median / rows beyond 1.5x (all, first round, held out) and the 49B-138B group")
    first = {m.id for m in MEASUREMENTS}
    for overlap in (0.8, 0.6, 0.5, 0.0):
        t = evaluate(ALL_ROWS, {"efficiency": Efficiency(overlap=overlap)})
        parts = [t, t[t["id"].isin(first)], t[~t["id"].isin(first)], t[t["id"].isin(base)]]
        cells = (f"{p['error'].median():.1%} / {(p['off_by'] > 1.5).sum()}" for p in parts)
        print(f"   {overlap:.1f}: " + "  ".join(cells))
    rows = [m for m in ALL_ROWS if m.id.startswith("zeropp-")]
    tut = evaluate([replace(m, zero={**m.zero, "reduce_bucket_size": 10_000_000, "overlap_comm": True}) for m in rows])
    before = evaluate(rows)["error"].median()
    print(f"6. tutorial config on the {len(rows)} rows: median {before:.1%} -> {tut['error'].median():.1%}")
    for size in ("18b", "49b", "91b", "138b"):
        r = tut[tut["id"].str.startswith(f"zeropp-{size}-")]["ratio"]
        print(f"   {size:>4}: pred/meas {r.min():.2f}-{r.max():.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
