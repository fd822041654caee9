"""Parity of the release profiles with the real releases, bigger than CI: more generated configs, every
release installed for the tests, and optionally the initialize proof on all of them.

    .venv/bin/python scripts/versions_parity.py                       # drift configs, 5 seeds, all releases
    .venv/bin/python scripts/versions_parity.py --seeds 20 --pairs 1000 --corpus
    .venv/bin/python scripts/versions_parity.py --first-seed 1000 --prove    # held-out seeds, with the proof
    .venv/bin/python scripts/versions_parity.py --prove 0.19.7         # + deepspeed.initialize per group

Prints, per release, how many configs were judged, the false accepts (the release's parser rejects, the
validator reports no error) and the false alarms (the parser accepts, the validator reports a parse-time
error), then every disagreement. With ``--prove`` it also runs the rejected-but-parsed groups through the
release's ``deepspeed.initialize`` (tests/oracle/initialize_proof.py) and prints each group's status.
Exit status 1 when anything disagrees or a rejected config trains.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle.corpus import corpus_entries
from tests.oracle.differential import disagreement_message, run_differential
from tests.oracle.edge_configs import edge_configs
from tests.oracle.initialize_proof import prove
from tests.oracle.mutations import mutate
from tests.oracle.oracle import oracle_available, parser_cannot_finish
from tests.oracle.release_drift import drift_cases
from tests.test_versions_differential import RELEASES


def cases(seeds: int, pairs: int, corpus: bool, first_seed: int = 0) -> list[tuple[str, dict]]:
    """Drift configs for ``seeds`` seeds from ``first_seed`` on, the edge configs and, with ``corpus``, every
    corpus file and its mutations (the tests' sample when ``first_seed`` is 0, another seeded sample else)."""
    found: dict[str, dict] = {}
    for seed in range(first_seed, first_seed + seeds):
        for label, config in drift_cases(f"drift-{seed}", pairs=pairs):
            found.setdefault(f"{label} [seed {seed}]", config)
    found.update({f"edge :: {m.label}": m.config for m in edge_configs()})
    if corpus:
        for entry in corpus_entries():
            if entry.config is not None:
                found[f"{entry.rel} (as is)"] = entry.config
                seed = entry.rel if first_seed == 0 else f"{entry.rel}#{first_seed}"
                found.update({f"{entry.rel} :: [{m.kind}] {m.label}": m.config
                              for m in mutate(entry.config, seed=seed)})
    return list(found.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="*", default=list(RELEASES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="first seed (seeds 0-4 were seen while the profiles were developed: pick e.g. 1000 "
                             "for configs nobody has looked at)")
    parser.add_argument("--pairs", type=int, default=400, help="pairs of drift points per seed")
    parser.add_argument("--corpus", action="store_true", help="also every corpus file and all its mutations")
    parser.add_argument("--prove", action="store_true", help="run the initialize proof too")
    args = parser.parse_args(argv)
    judged = cases(args.seeds, args.pairs, args.corpus, args.first_seed)
    bad = False
    print("| release | configs judged | parser rejects | false accepts | false alarms | seconds |")
    print("|---|---|---|---|---|---|")
    reports = []
    for release in args.releases:
        reason = oracle_available(release)
        if reason:
            print(f"| {release} | skipped: {reason} |")
            continue
        start = time.monotonic()
        judgeable = [(label, config) for label, config in judged if not parser_cannot_finish(release, config)]
        if len(judgeable) < len(judged):
            reports.append(f"{release}: {len(judged) - len(judgeable)} configs left out, its parser cannot finish "
                           "them (parser_cannot_finish)")
        comparisons = run_differential(judgeable, (1,), release)
        counts = collections.Counter(c.outcome for c in comparisons)
        rejects = sum(not c.verdict.accepted for c in comparisons)
        print(f"| {release} | {len(comparisons):,} | {rejects:,} | {counts['missed']} | {counts['false-alarm']} | "
              f"{time.monotonic() - start:.0f} |", flush=True)
        if any(c.disagrees for c in comparisons):
            bad = True
            reports.append(disagreement_message(comparisons))
        if args.prove:
            proofs = prove(release, judgeable)
            statuses = collections.Counter(p.status for p in proofs)
            reports.append(f"{release} initialize proof, {len(proofs)} groups: {dict(statuses)}\n"
                           + "\n".join(p.describe() for p in proofs))
            bad = bad or statuses["accepted"] > 0
    print("\n\n".join(reports))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
