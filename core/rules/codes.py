"""The finding-code table: every code the validator can report, with its severity, when DeepSpeed fails on
it, whether its automatic fix is safe, a summary, an explanation and a config that triggers it.

It is the one source for ``INITIALIZE_TIME_CODES``, for ``dsconfig explain``, for docs/rules.md
(``scripts/gen_rules_doc.py``) and for the safety of each ``Fix`` (``core.validate`` stamps it on the fixes).
A new rule adds its codes to ``core.rules.code_table``; ``tests/test_codes.py`` checks that every code the
rules emit has an entry and that every entry's example really gets its code.
"""

from __future__ import annotations

from core.rules.code_table import TABLE, Code, Fails

__all__ = ["CODES", "FAILS", "INITIALIZE_TIME_CODES", "SAFE_MEANING", "Code", "Fails", "lookup"]

#: What each ``Code.fails`` value means.
FAILS: dict[str, str] = {
    "parse": "DeepSpeed refuses the config while reading it (before any model is built)",
    "initialize": "the config is read, but deepspeed.initialize fails when it builds the engine, optimizer "
                  "or scheduler",
    "training": "deepspeed.initialize succeeds; training fails the first time the value is used",
    "ignored": "DeepSpeed accepts the config and silently ignores the setting (or it has no effect)",
    "n/a": "DeepSpeed runs; the finding is advice about something likely wrong or wasteful",
}

#: What "safe" means for a fix (as in ruff: a safe fix preserves meaning; "apply all" applies only these).
SAFE_MEANING = (
    "A safe fix leaves DeepSpeed training exactly as before: it only removes what this DeepSpeed release "
    "ignores or refuses to read, or rewrites a setting in an equivalent spelling. An unsafe fix chooses a "
    "value or changes what DeepSpeed does; review it before applying."
)


#: Every code, by code (a family by its pattern, e.g. ``type.<pydantic error type>``).
CODES: dict[str, Code] = {c.code: c for c in TABLE}

_FAMILIES: tuple[Code, ...] = tuple(c for c in TABLE if c.family)


def lookup(code: str) -> Code | None:
    """The table entry of a finding code (an exact entry first, then a family), or None."""
    if code in CODES:
        return CODES[code]
    return next((c for c in _FAMILIES if code.startswith(c.prefix)), None)


#: Codes of mistakes DeepSpeed only detects at ``deepspeed.initialize`` or later (not while parsing).
INITIALIZE_TIME_CODES: frozenset[str] = frozenset(
    c.code for c in TABLE if c.severity == "error" and c.fails in ("initialize", "training")
)
