"""The one-operation fixes rules offer most often."""

from __future__ import annotations

from typing import Any

from core.findings import Fix, FixOp


def set_fix(path: str, value: Any, description: str | None = None) -> Fix:
    """A fix that sets ``path`` to ``value``."""
    return Fix(description or f"Set `{path}` to {value!r}", (FixOp("set", path, value),))


def delete_fix(path: str) -> Fix:
    """A fix that removes ``path``."""
    return Fix(f"Remove `{path}`", (FixOp("delete", path),))
