"""Run the whole differential comparison (core.validate vs the real DeepSpeed) and print a summary.

    .venv/bin/python scripts/differential_report.py [--version 0.19.8|0.19.5|all] [--full] [--list N]

Checks every corpus file, every generated mutation (``--full``: every candidate mutation, not the
seeded sample the tests use), the hand-written edge configs and N seeded random edits of the repaired
corpus configs (``--random N``), at world sizes 1, 2, 8 and 64.
Prints the counts (configs, accepted/rejected by DeepSpeed, agreements, disagreements by kind) and the
first N disagreements. Exit status 1 when there is any disagreement.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.oracle.corpus import corpus_entries
from tests.oracle.differential import DISAGREEMENTS, OUTCOMES, WORLD_SIZES, Comparison, run_differential, validator_api
from tests.oracle.edge_configs import edge_configs
from tests.oracle.initialize import initialize_outcome_problems, run_initialize_cases
from tests.oracle.initialize_cases import INITIALIZE_CASES
from tests.oracle.mutations import mutate, random_edit_mutations, repaired
from tests.oracle.oracle import SUPPORTED_VERSIONS


def _cases(full: bool, random_edits: int) -> tuple[list[tuple[str, str, dict]], list[str]]:
    """(group, label, config) for every corpus file, mutation and edge config; plus unloadable files."""
    cases: list[tuple[str, str, dict]] = []
    unloadable: list[str] = []
    for entry in corpus_entries():
        if entry.config is None:
            unloadable.append(f"{entry.rel}: {entry.load_error}")
            continue
        cases.append(("corpus", entry.rel, entry.config))
        for m in mutate(entry.config, seed=entry.rel, caps={} if full else None):
            cases.append((m.kind, f"{entry.rel} :: {m.label}", m.config))
    cases += [("edge", f"edge :: {m.label}", m.config) for m in edge_configs()]
    bases = [repaired(e.config)[0] for e in corpus_entries() if e.config is not None]
    cases += [("random-edit", f"random :: {m.label}", m.config) for m in random_edit_mutations(bases, random_edits)]
    return cases, unloadable


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        " | ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _ds_signature(comp: Comparison) -> str:
    """DeepSpeed's complaint without the config-specific values: model, field and error kind."""
    verdict = comp.verdict
    if verdict.accepted:
        return "accepted"
    lines = (verdict.message or "").splitlines()
    if verdict.error_type == "ValidationError" and len(lines) >= 3:
        model = lines[0].split(" for ")[-1]
        kind = re.search(r"\[type=([a-z_]+)", lines[2])
        return f"ValidationError {model}.{lines[1].strip()} [{kind.group(1) if kind else '?'}]"
    text = re.sub(r"\d+(\.\d+)?", "N", " ".join(lines))
    return f"{verdict.error_type}: {text[:110]}"


def _distinct(bad: list[Comparison], initialize_codes: frozenset[str]) -> dict[tuple, list[Comparison]]:
    """Disagreements grouped by root cause: (outcome, DeepSpeed's complaint, validator error codes)."""
    groups: dict[tuple, list[Comparison]] = {}
    for comp in bad:
        # For a false alarm only the codes that are not initialize-time are the culprits.
        codes = tuple(sorted({code for code, _, _ in comp.errors if code not in initialize_codes}))
        groups.setdefault((comp.outcome, _ds_signature(comp), codes), []).append(comp)
    return dict(sorted(groups.items(), key=lambda item: -len(item[1])))


def report(version: str, full: bool, show: int, random_edits: int = 0) -> int:
    """Print the summary for one DeepSpeed version; return the number of disagreements."""
    started = time.perf_counter()
    cases, unloadable = _cases(full, random_edits)
    comparisons: list[Comparison] = run_differential([(label, cfg) for _, label, cfg in cases], WORLD_SIZES, version)
    groups = [group for group, _, _ in cases for _ in WORLD_SIZES]
    by_group: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for group, comp in zip(groups, comparisons, strict=True):
        by_group[group]["checks"] += 1
        by_group[group]["ds-accepts" if comp.verdict.accepted else "ds-rejects"] += 1
        by_group[group][comp.outcome] += 1
    total: collections.Counter = collections.Counter()
    for counter in by_group.values():
        total.update(counter)

    n_configs = len(cases)
    n_corpus = sum(1 for g, _, _ in cases if g == "corpus")
    n_edge = sum(1 for g, _, _ in cases if g == "edge")
    n_random = sum(1 for g, _, _ in cases if g == "random-edit")
    print(f"\n## Differential: core.validate vs DeepSpeed {version}  (world sizes {', '.join(map(str, WORLD_SIZES))})")
    print(
        f"configs: {n_configs} ({n_corpus} corpus files, {n_configs - n_corpus - n_edge - n_random} mutations, "
        f"{n_edge} edge, {n_random} random edits)"
        f"; checks (config x world size): {len(comparisons)}; unloadable corpus files: {len(unloadable)}"
    )
    columns = ["checks", "ds-accepts", "ds-rejects", *OUTCOMES]
    rows = [["kind", *columns]]
    rows += [[group, *(str(by_group[group][c]) for c in columns)] for group in sorted(by_group)]
    rows.append(["TOTAL", *(str(total[c]) for c in columns)])
    print(_table(rows))
    for line in unloadable:
        print(f"unloadable (DeepSpeed's own loader also fails): {line}")
    bad = [c for c in comparisons if c.outcome in DISAGREEMENTS]
    if bad:
        kinds = collections.Counter(c.outcome for c in bad)
        print(f"\ndisagreements: {len(bad)} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
        codes = collections.Counter(
            (c.outcome, c.verdict.error_type if c.outcome == "missed" else ",".join(sorted({e[0] for e in c.errors})))
            for c in bad
        )
        print("by outcome and DeepSpeed error type (missed) / validator codes (false-alarm):")
        for (outcome, what), count in codes.most_common():
            print(f"  {count:6d}  {outcome:12s} {what}")
        distinct = _distinct(bad, validator_api()[1])
        print(
            f"\n{len(distinct)} distinct disagreements (outcome, DeepSpeed's complaint, validator codes), "
            f"first {min(show, len(distinct))}:"
        )
        for (outcome, ds, codes), comps in list(distinct.items())[:show]:
            files = sorted({c.label.split(" :: ")[0] for c in comps})
            labels = sorted({c.label.split(" :: ", 1)[-1] for c in comps})
            sizes = sorted({c.world_size for c in comps})
            print(f"- [{outcome}] x{len(comps)} ({len(files)} file(s), world sizes {sizes})")
            print(f"    deepspeed: {ds}")
            print(f"    validator: {', '.join(codes) or 'no errors'}{' (not initialize-time)' if codes else ''}")
            print(f"    cases: {' | '.join(labels[:4])}{' | ...' if len(labels) > 4 else ''}")
    print(f"\n({time.perf_counter() - started:.1f} s)")
    return len(bad)


def initialize_report() -> None:
    """Run every INITIALIZE_CASES config through deepspeed.initialize and print what really happened."""
    run = run_initialize_cases(INITIALIZE_CASES)
    validate, codes = validator_api()
    print(f"\n## deepspeed.initialize cases (tiny CPU model, one rank; the accelerator supports {run.host})")
    for case in INITIALIZE_CASES:
        got = run.results[case.id]
        as_expected = not initialize_outcome_problems(case, got, run.host)
        if got["unsupported"]:
            print(f"    (this host has no {got['unsupported']}: refused as expected; the stand-in's outcome follows)")
            got = got["stand_in"]
        step = got.get("step") or {}
        if case.phase == "step" and not got["raised"]:
            got = {**step, "raised": step.get("raised", False)}
        flagged = sorted({f.code for f in validate(case.config).findings if f.severity == "error"})
        outcome = f"{got['error_type']}: {got['message']}" if got["raised"] else "initializes and trains"
        if case.phase == "step":
            outcome = f"initializes, then the first training step raises {outcome}"
        kind = "control" if not case.raises else ("rule" if case.config_rule else "not-config")
        print(f"- {case.id} [{kind}]{'' if as_expected else ' UNEXPECTED'}: {case.rule}")
        print(f"    deepspeed: {outcome[:300]}")
        print(
            f"    validator errors: {', '.join(flagged) or 'none'}"
            f"{' (initialize-time)' if flagged and set(flagged) <= codes else ''}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.19.8", choices=[*SUPPORTED_VERSIONS, "all"])
    parser.add_argument("--full", action="store_true", help="every candidate mutation, not the sampled set")
    parser.add_argument("--random", type=int, default=2000, metavar="N", help="N seeded random-edit configs too")
    parser.add_argument(
        "--initialize", action="store_true", help="also run the deepspeed.initialize cases and print their exceptions"
    )
    parser.add_argument("--list", type=int, default=40, metavar="N", help="show the first N disagreements")
    args = parser.parse_args(argv)
    versions = SUPPORTED_VERSIONS if args.version == "all" else (args.version,)
    disagreements = sum(report(v, args.full, args.list, args.random) for v in versions)
    if args.initialize:
        initialize_report()
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
