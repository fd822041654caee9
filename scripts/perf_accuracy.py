"""Print the planner's prediction against every published measurement (core/perf/measurements*.py).

Usage: python scripts/perf_accuracy.py [--sources] [--first-round | --third-set | --fourth-set]
Step seconds per optimizer step, predicted vs measured (each source's FLOP convention normalised), the error
per row, then per group and overall: rows, median error, worst factor and rows beyond 1.5x.
``--first-round`` limits it to the 65 rows of the first round (core/perf/measurements.py), ``--third-set`` to the
third held-out set (core/perf/measurements_third.py), ``--fourth-set`` to the fourth held-out set
(core/perf/measurements_fourth.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.perf.accuracy import ALL_ROWS, evaluate, group_table
from core.perf.measurements import MEASUREMENTS
from core.perf.measurements_fourth import FOURTH_ROWS
from core.perf.measurements_third import THIRD_ROWS


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    rows = (MEASUREMENTS if "--first-round" in args else THIRD_ROWS if "--third-set" in args
            else FOURTH_ROWS if "--fourth-set" in args else ALL_ROWS)
    table = evaluate(rows)
    print(f"{'measurement':38} {'predicted s':>12} {'measured s':>11} {'pred/meas':>9} {'error':>7}  bottleneck")
    for row in table.itertuples():
        print(f"{row.id:38} {row.predicted_step_s:12.3f} {row.measured_step_s:11.3f} {row.ratio:9.2f} "
              f"{row.error:7.1%}  {row.bottleneck}")
        if "--sources" in args:
            print(f"    source: {row.source}")
    worst = table.loc[table["off_by"].idxmax()]
    print(f"\nrows: {len(table)}   median error: {table['error'].median():.1%}   "
          f"worst: {worst['id']} off by {worst['off_by']:.2f}x   "
          f"rows within 1.5x: {(table['off_by'] <= 1.5).sum()}/{len(table)}\n")
    print(f"{'group':78} {'rows':>4} {'median':>7} {'worst':>6} {'>1.5x':>5}")
    for g in group_table(table).itertuples():
        print(f"{g.group:78} {g.rows:4d} {g.median_error:7.1%} {g.worst:5.2f}x {g._5:5d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
