"""Apply fixes until the config is stable: the one loop behind the review page's "apply all" and ``dsconfig fix``."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.findings import Finding, Report, split_path
from core.io import check_depth
from core.validate import validate

#: At most this many rounds of fixes (each followed by one validation) are applied to one config (a config never
#: needs that many; it bounds a cycle).
MAX_ROUNDS = 100
#: Fixes of unknown keys and of parameters the optimizer or scheduler class does not take (rename, move or remove
#: the key) change only the paths they name: several of them whose
#: paths do not overlap are applied in one round. Any other fix is applied alone and validated before the next
#: (fixing the stage can make a stage-3 knob's removal wrong). A config with 20,000 misspelt keys took 100 rounds
#: of a 2 s validation and fixed 100 of them.
BATCHED_CODES = frozenset({"keys.unknown", "keys.unknown-top-level", "keys.unknown-ignored", "keys.unknown-auto",
                           "optimizer.unknown-param", "scheduler.unknown-param"})


@dataclass(frozen=True)
class FixResult:
    """What applying the fixes did."""

    config: dict[str, Any]
    """The fixed config (a new dict; the input is not modified)."""
    applied: tuple[Finding, ...]
    """The findings whose fixes were applied, in order."""
    skipped: tuple[Finding, ...]
    """Findings of the final config that have a fix which was not applied (unsafe ones, unless asked for)."""
    report: Report
    """``validate`` of the fixed config."""
    stopped: bool = False
    """Whether the loop stopped at ``MAX_ROUNDS`` (running it again may apply more)."""
    withheld: tuple[tuple[Finding, tuple[str, ...]], ...] = ()
    """Fixes of warnings not applied because the config they give has errors the config did not have: (the
    finding, those error codes). Removing a value DeepSpeed does not check can remove a key another rule requires."""


def fix_until_stable(
    config: dict[str, Any],
    *,
    unsafe: bool = False,
    severities: Sequence[str] = ("error", "warning"),
    world_size: int = 1,
    target: str = "deepspeed",
    version: str | None = None,
) -> FixResult:
    """Apply one fix at a time and validate again, because one fix can make another unnecessary (fixes of
    unknown keys whose paths do not overlap go together, ``BATCHED_CODES``).

    Only safe fixes (``Fix.safe``) are applied unless ``unsafe``; only findings of ``severities``. A fix that
    changes nothing, or would bring back a config seen before, is not applied again. ValueError for a config
    nested deeper than the loader reads (``core.io.check_depth``).
    """
    check_depth(config)
    current = config
    applied: list[Finding] = []
    withheld: list[tuple[Finding, tuple[str, ...]]] = []
    seen = {_key(config)}
    tried: set[tuple[str, str, str]] = set()
    report = validate(current, world_size=world_size, target=target, version=version)
    stopped = False
    for _ in range(MAX_ROUNDS):
        batch: list[Finding] = []
        touched = _Paths()
        candidate = current  # replaced by a copy with the round's first fix
        for finding in report.findings:
            fix = finding.fix
            if fix is None or finding.severity not in severities or not (fix.safe or unsafe):
                continue
            mark = (finding.code, finding.path, fix.description)
            if mark in tried:
                continue
            paths = [tuple(split_path(p)) for op in fix.ops for p in (op.path, op.to) if p]
            if batch and (finding.code not in BATCHED_CODES or batch[0].code not in BATCHED_CODES
                          or any(touched.overlaps(path) for path in paths)):
                continue  # next round, against the config as it is then
            tried.add(mark)
            if batch:  # the round's own copy: no copy of a large config per fix
                candidate = fix.apply_in_place(candidate)
            else:
                candidate = fix.apply(current)
                if _key(candidate) in seen:
                    continue
            batch.append(finding)
            for path in paths:
                touched.add(path)
            if finding.code not in BATCHED_CODES:
                break
        if not batch:
            break
        if len(batch) > 1 and _key(candidate) in seen:  # together they go back to a config seen before
            batch, candidate = batch[:1], batch[0].fix.apply(current)
        seen.add(_key(candidate))
        after = validate(candidate, world_size=world_size, target=target, version=version)
        added = _added_errors(report, after)
        if added and batch[0].severity != "error" and batch[0].code not in BATCHED_CODES:
            withheld.append((batch[0], added))  # renames (BATCHED_CODES) may reveal a section's errors: kept
            continue
        current, report = candidate, after
        applied.extend(batch)
    else:
        stopped = True
    skipped = tuple(f for f in report.findings if f.fix is not None and f.severity in severities)
    return FixResult(current if applied else copy.deepcopy(config), tuple(applied), skipped, report, stopped,
                     tuple(withheld))


def _added_errors(before: Report, after: Report) -> tuple[str, ...]:
    """The codes of the errors ``after`` has and ``before`` has not, in order."""
    known = {f.code for f in before.errors}
    return tuple(dict.fromkeys(f.code for f in after.errors if f.code not in known))


def _key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=repr)


class _Paths:
    """Paths taken by a round's fixes: whether another path is one of them, inside one, or holds one, in time
    proportional to its length (a round can hold tens of thousands)."""

    def __init__(self) -> None:
        self.exact: set[tuple] = set()
        self.holders: set[tuple] = set()  # every proper prefix of a path taken

    def add(self, path: tuple) -> None:
        self.exact.add(path)
        self.holders.update(path[:i] for i in range(len(path)))

    def overlaps(self, path: tuple) -> bool:
        return path in self.holders or any(path[:i] in self.exact for i in range(len(path) + 1))
