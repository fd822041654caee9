"""Long fuzzing profile (``make fuzz-long``): every property of the fuzz files with many examples each.

    python scripts/fuzz_long.py                    # >= 100,000 cases in total (default)
    python scripts/fuzz_long.py --total 20000      # a shorter run

Runs pytest on the property files with DSCONFIG_FUZZ_EXAMPLES set so that the properties together get at
least ``--total`` examples, then prints, per property, the examples Hypothesis really ran (from
``--hypothesis-show-statistics``), the failures and the wall time. Exit code: pytest's.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("tests/test_fuzz.py", "tests/test_property_validate.py", "tests/test_precision.py")

_TEST = re.compile(r"^(tests/\S+::\S+):\s*$")
_COUNTS = re.compile(r"(\d+) passing, (\d+) failing, and (\d+) invalid")


def _run_pytest(examples: int) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "DSCONFIG_FUZZ_EXAMPLES": str(examples)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
         "--timeout=0", *FILES],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    return proc, time.perf_counter() - start


def count_properties() -> int:
    """How many Hypothesis properties the fuzz files hold: the tests a 1-example run prints statistics for."""
    proc, _ = _run_pytest(1)
    return len(parse_statistics(proc.stdout)) or 1


def parse_statistics(text: str) -> dict[str, tuple[int, int, int]]:
    """``{test id: (passing, failing, invalid)}`` summed over the phases Hypothesis printed."""
    stats: dict[str, tuple[int, int, int]] = {}
    current = None
    for line in text.splitlines():
        head = _TEST.match(line.strip())
        if head:
            current = head.group(1)
            continue
        found = _COUNTS.search(line)
        if found and current:
            p, f, i = stats.get(current, (0, 0, 0))
            stats[current] = (p + int(found.group(1)), f + int(found.group(2)), i + int(found.group(3)))
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=100_000, help="examples in total across the properties")
    args = parser.parse_args(argv)
    n_props = count_properties()
    per_property = math.ceil(args.total / n_props)
    print(f"long fuzz: {n_props} properties x {per_property} examples (target {args.total:,})", flush=True)
    proc, elapsed = _run_pytest(per_property)
    stats = parse_statistics(proc.stdout)
    print(f"{'property':<78} {'passing':>9} {'failing':>8} {'invalid':>8}")
    for test, (p, f, i) in sorted(stats.items()):
        print(f"{test:<78} {p:>9,} {f:>8} {i:>8}")
    total = sum(p + f for p, f, _ in stats.values())
    failing = sum(f for _, f, _ in stats.values())
    summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    print(f"\ncases run: {total:,} ({failing} failing) in {elapsed:,.0f} s wall; pytest: "
          f"{summary[-1] if summary else '?'} (exit {proc.returncode})")
    if proc.returncode != 0:
        print(proc.stdout[-20000:])
        print(proc.stderr[-5000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
