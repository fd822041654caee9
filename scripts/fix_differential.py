"""Fix every corpus file and mutation (safe fixes only, and all fixes) at 1 and 8 GPUs and judge the results with
DeepSpeed 0.19.8's parser: ``.venv/bin/python scripts/fix_differential.py [--every N]``. Prints how many configs
DeepSpeed rejected before and accepts after, any safe fix that broke an accepted config, the unsafe fixes after
which DeepSpeed rejects an accepted one, and any fixed config on which the validator and DeepSpeed disagree.
Exit status 1 on a broken config or a disagreement."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle.differential import disagreement_message
from tests.oracle.fix_differential import WORLD_SIZES, fix_cases, run_fix_differential


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="take every N-th mutation (default: all)")
    args = parser.parse_args()
    started = time.perf_counter()
    cases = fix_cases(args.every)
    result = run_fix_differential(cases)
    counts = collections.Counter((kind, outcome) for outcome in ("repaired", "rejected")
                                 for kind, _, _ in result[outcome])
    print(f"{len(cases)} configs x {len(WORLD_SIZES)} GPU counts, {time.perf_counter() - started:.0f} s")
    for kind in ("safe", "unsafe"):
        repaired, rejected = counts[(kind, "repaired")], counts[(kind, "rejected")]
        total = repaired + rejected
        print(f"{kind:>6} fixes: {repaired} of {total} configs DeepSpeed rejected are accepted after them "
              f"({100 * repaired / max(total, 1):.0f}%)")
    print(f"safe fixes that broke an accepted config: {len(result['broken'])}")
    print(f"unsafe fixes after which DeepSpeed rejects an accepted config (each reported by the validator): "
          f"{len(result['revealed'])}")
    for line in result["revealed"][:20]:
        print("  " + line)
    print(f"fixed configs where the validator and DeepSpeed disagree: {len(result['disagree'])}")
    for line in result["broken"][:20]:
        print("  " + line)
    if result["disagree"]:
        print(disagreement_message(result["disagree"]))
    return 1 if result["broken"] or result["disagree"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
