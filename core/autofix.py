"""Apply fixes until the config is stable: the one loop behind the review page's "apply all" and ``dsconfig fix``."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.findings import Finding, Report
from core.validate import validate

#: At most this many fixes are applied to one config (a config never needs that many; it bounds a cycle).
MAX_FIXES = 100


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


def fix_until_stable(
    config: dict[str, Any],
    *,
    unsafe: bool = False,
    severities: Sequence[str] = ("error", "warning"),
    world_size: int = 1,
    target: str = "deepspeed",
    version: str | None = None,
) -> FixResult:
    """Apply one fix at a time and validate again, because one fix can make another unnecessary.

    Only safe fixes (``Fix.safe``) are applied unless ``unsafe``; only findings of ``severities``. A fix that
    changes nothing, or would bring back a config seen before, is not applied again.
    """
    current = config
    applied: list[Finding] = []
    seen = {_key(config)}
    tried: set[tuple[str, str, str]] = set()
    report = validate(current, world_size=world_size, target=target, version=version)
    while len(applied) < MAX_FIXES:
        todo = None
        for finding in report.findings:
            fix = finding.fix
            if fix is None or finding.severity not in severities or not (fix.safe or unsafe):
                continue
            mark = (finding.code, finding.path, fix.description)
            if mark in tried:
                continue
            tried.add(mark)
            candidate = fix.apply(current)
            if _key(candidate) not in seen:
                todo = (finding, candidate)
                break
        if todo is None:
            break
        finding, current = todo
        seen.add(_key(current))
        applied.append(finding)
        report = validate(current, world_size=world_size, target=target, version=version)
    skipped = tuple(f for f in report.findings if f.fix is not None and f.severity in severities)
    return FixResult(current if applied else copy.deepcopy(config), tuple(applied), skipped, report)


def _key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=repr)
