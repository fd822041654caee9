"""Print the planner's prediction against every published measurement (core/perf/measurements.py).

Usage: python scripts/perf_accuracy.py [--sources]
Step seconds per optimizer step, predicted vs measured (each source's FLOP convention normalised), the error
per row, the median error and the worst factor.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.perf.accuracy import evaluate


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    table = evaluate()
    print(f"{'measurement':34} {'predicted s':>12} {'measured s':>11} {'pred/meas':>9} {'error':>7}  bottleneck")
    for row in table.itertuples():
        print(f"{row.id:34} {row.predicted_step_s:12.3f} {row.measured_step_s:11.3f} {row.ratio:9.2f} "
              f"{row.error:7.1%}  {row.bottleneck}")
        if "--sources" in args:
            print(f"    source: {row.source}")
    worst = table.loc[table["off_by"].idxmax()]
    print(f"\nrows: {len(table)}   median error: {table['error'].median():.1%}   "
          f"worst: {worst['id']} off by {worst['off_by']:.2f}x   "
          f"rows within 1.5x: {(table['off_by'] <= 1.5).sum()}/{len(table)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
