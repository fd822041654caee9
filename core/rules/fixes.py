"""The one-operation fixes rules offer most often, and the closest allowed value to offer in them."""

from __future__ import annotations

import difflib
from typing import Any

from core.findings import Fix, FixOp


def set_fix(path: str, value: Any, description: str | None = None) -> Fix:
    """A fix that sets ``path`` to ``value``."""
    return Fix(description or f"Set `{path}` to {value!r}", (FixOp("set", path, value),))


def delete_fix(path: str) -> Fix:
    """A fix that removes ``path``."""
    return Fix(f"Remove `{path}`", (FixOp("delete", path),))


def closest_choice(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The allowed value ``value`` most likely meant (case-insensitive; None when nothing is close)."""
    lower = {c.lower(): c for c in choices}
    if value.lower() in lower:
        return lower[value.lower()]
    match = difflib.get_close_matches(value.lower(), list(lower), n=1, cutoff=0.6)
    return lower[match[0]] if match else None
