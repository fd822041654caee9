"""The finding-code table as text: ``dsconfig explain`` and the generated docs/rules.md."""

from __future__ import annotations

import json
from typing import Any

from core.findings import Finding
from core.rules.codes import CODES, FAILS, SAFE_MEANING, Code

_FIX = {True: "safe", False: "unsafe (review it)", None: "none"}
_TOPICS = {"config": "The config", "keys": "Keys", "removed": "Keys", "type": "Types and values", "batch": "Batch",
           "misc": "Other checks", "elasticity": "Batch", "auto": "\"auto\"", "precision": "Precision",
           "comm": "Precision", "deprecated": "Deprecated forms", "zero": "ZeRO", "optimizer": "Optimizer",
           "scheduler": "Scheduler", "engine": "Initialize-time combinations", "checkpoint": "Other checks",
           "data-types": "Other checks", "data-efficiency": "Other checks", "autotuning": "Other checks",
           "compile": "Other checks"}


def example_outcome(entry: Code) -> tuple[Finding | None, dict[str, Any] | None]:
    """The finding the entry's example gets, and the example with that finding's fix applied (if any)."""
    from core.rules.codes import lookup
    from core.validate import validate

    if entry.example is None:
        return None, None
    report = validate(entry.example, **entry.example_settings())
    finding = next((f for f in report.findings if lookup(f.code) is entry), None)
    fixed = finding.fix.apply(entry.example) if finding and finding.fix else None
    return finding, fixed


def _settings(entry: Code) -> str:
    s = entry.settings
    parts = [f"DeepSpeed {s['version']}" if "version" in s else "",
             f"{s['world_size']} GPUs" if "world_size" in s else "", "target hf" if s.get("target") == "hf" else ""]
    return ", ".join(p for p in parts if p)


def _severity(entry: Code) -> str:
    return entry.severity + (f" (or {entry.other_severity})" if entry.other_severity else "")


def _json(config: Any) -> str:
    flat = json.dumps(config, ensure_ascii=False, default=str)
    return flat if len(flat) <= 100 else json.dumps(config, indent=2, ensure_ascii=False, default=str)


def text(entry: Code) -> str:
    """One entry, for the terminal."""
    finding, fixed = example_outcome(entry)
    lines = [f"{entry.code} — {entry.summary}",
             f"severity: {_severity(entry)} · when: {FAILS[entry.fails]} · fix: {_FIX[entry.fix_safe]}",
             "", entry.why]
    if entry.example is not None:
        where = _settings(entry)
        lines += ["", "Example" + (f" ({where})" if where else "") + ":", _json(entry.example)]
    if finding is not None:
        lines += ["", f"{finding.severity}: {finding.message}"]
    if fixed is not None and finding is not None and finding.fix is not None:
        lines += ["", f"Fix ({'safe' if finding.fix.safe else 'unsafe'}): {finding.fix.description}",
                  _json(fixed)]
    return "\n".join(lines) + "\n"


def index() -> str:
    """Every code with its severity and summary, one a line."""
    width = max(len(c) for c in CODES)
    return "".join(f"{c.code:<{width}}  {c.severity:<7}  {c.summary}\n" for c in CODES.values())


def markdown() -> str:
    """docs/rules.md: every code, grouped by topic, with its example and fix."""
    out = ["# Finding codes", "",
           "Generated from `core/rules/codes.py` by `scripts/gen_rules_doc.py`; do not edit by hand. "
           "`dsconfig explain CODE` prints the same entry.", "",
           "**When DeepSpeed fails on it:**", ""]
    out += [f"- `{k}`: {v}." for k, v in FAILS.items()]
    out += ["", f"**Fix safety:** {SAFE_MEANING}", ""]
    topics: dict[str, list[Code]] = {}
    for entry in CODES.values():
        topics.setdefault(_TOPICS.get(entry.code.split(".")[0], "Other checks"), []).append(entry)
    for topic, entries in topics.items():
        out += [f"## {topic}", ""]
        for entry in entries:
            out += _markdown_entry(entry)
    return "\n".join(out).rstrip("\n") + "\n"


def _markdown_entry(entry: Code) -> list[str]:
    finding, fixed = example_outcome(entry)
    out = [f"### `{entry.code}`", "", f"**{entry.summary}** Severity: {_severity(entry)}. When: "
           f"{FAILS[entry.fails]}. Fix: {_FIX[entry.fix_safe]}.", "", entry.why, ""]
    if entry.example is not None:
        where = _settings(entry)
        out += ["Example" + (f" ({where})" if where else "") + ":", "", "```json", _json(entry.example), "```", ""]
    if finding is not None:
        out += [f"> {finding.severity}: {finding.message}", ""]
    if fixed is not None and finding is not None and finding.fix is not None:
        out += [f"Fixed ({'safe' if finding.fix.safe else 'unsafe'}: {finding.fix.description}):", "", "```json",
                _json(fixed), "```", ""]
    return out
