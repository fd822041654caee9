"""Validation time per config for each DeepSpeed release profile (issue 13's budget: within 2x of 0.19.8).

    .venv/bin/python scripts/bench_versions.py              # the seven parity releases and 0.16.0
    .venv/bin/python scripts/bench_versions.py --all        # every profiled release

Every loadable corpus config validated at world size 8 for each release; one warm-up pass (loads the profile),
then the median of ``--repeat`` passes, divided by the number of configs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import corpus_configs, machine_info

from core import versions
from core.validate import validate
from tests.test_versions_differential import RELEASES as PARITY_RELEASES


def per_config_ms(configs: list[dict], release: str, repeat: int) -> float:
    """Median over ``repeat`` passes of one pass's time per config, in ms (after a warm-up pass)."""
    for config in configs:
        validate(config, world_size=8, version=release)
    passes = []
    for _ in range(repeat):
        start = time.perf_counter()
        for config in configs:
            validate(config, world_size=8, version=release)
        passes.append((time.perf_counter() - start) / len(configs))
    return statistics.median(passes) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every profiled release")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    releases = versions.RELEASES if args.all else tuple(sorted({*PARITY_RELEASES, "0.16.0"},
                                                               key=versions.RELEASES.index))
    configs = corpus_configs()
    print("\n".join(machine_info()))
    print(f"\n{len(configs)} corpus configs, world size 8, median of {args.repeat} passes\n")
    print("| release | ms per config | vs newest |")
    print("|---|---|---|")
    newest = per_config_ms(configs, versions.NEWEST, args.repeat)
    for release in releases:
        took = newest if release == versions.NEWEST else per_config_ms(configs, release, args.repeat)
        print(f"| {release} | {took:.2f} | {took / newest:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
