"""What the validator reports: findings, one-click fixes and the report."""

from __future__ import annotations

import copy
import enum
import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}

_MISSING = object()


Key = str | int


def plain(value: Any) -> Any:
    """A value as a config holds it: an enum member's value (the schema's ``ZeroStage.disabled`` is 0)."""
    return value.value if isinstance(value, enum.Enum) else value


def shown(value: Any) -> str:
    """A value as the config file writes it (JSON: true, "cpu", 0, {"device": "cpu"}), not as Python prints it."""
    return json.dumps(plain(value), ensure_ascii=False, default=lambda v: str(plain(v)))


def is_number(value: Any) -> bool:
    """Whether a JSON value is a number (an int or a float; a bool, though an int to Python, is not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def brief(value: Any, limit: int = 60) -> str:
    """``shown``, cut to ``limit`` characters: a value quoted in a message (a 1 MB list is not echoed whole)."""
    try:
        text = shown(value)
    except (ValueError, RecursionError):  # past Python's int-to-text limit, or nesting json cannot write
        text = (f"an integer of about {int(abs(value).bit_length() * 0.30103)} digits"
                if isinstance(value, int) else "…")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def join_path(prefix: str, key: object) -> str:
    """Append a key to a dotted path; ``.``, ``[`` and ``\\`` inside the key are escaped with a backslash."""
    text = str(key).replace("\\", "\\\\").replace(".", "\\.").replace("[", "\\[")
    return f"{prefix}.{text}" if prefix else text


def join_index(prefix: str, index: int) -> str:
    """Append a list index: ``layer_specs`` → ``layer_specs[0]``."""
    return f"{prefix}[{index}]"


def split_path(path: str) -> list[Key]:
    """``"a.b[0].c"`` → ``["a", "b", 0, "c"]`` (empty path → []); ``\\.``, ``\\[`` are literal characters.

    Empty keys are kept (``"a."`` → ``["a", ""]``): a config may really contain the key ``""``.
    """
    if not path:
        return []
    if "\\" not in path and "[" not in path:  # the common case, ~40x faster: nothing escaped, no index
        return path.split(".")
    return _split_escaped(path)


def _split_escaped(path: str) -> list[Key]:
    """``split_path`` character by character: escapes and list indices."""
    keys: list[Key] = []
    current: list[str] = []
    escaped = in_index = after_index = False
    for char in path:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_index:
            if char == "]":
                keys.append(int("".join(current)) if "".join(current).isdigit() else "".join(current))
                current, in_index, after_index = [], False, True
            else:
                current.append(char)
        elif char == "[":
            if not after_index:
                keys.append("".join(current))
            current, in_index = [], True
        elif char == ".":
            if not after_index:
                keys.append("".join(current))
            current, after_index = [], False
        else:
            current.append(char)
            after_index = False
    if not after_index:
        keys.append("".join(current))
    return keys


def _child(node: Any, key: Key) -> Any:
    if isinstance(key, int) and isinstance(node, list):
        return node[key] if 0 <= key < len(node) else _MISSING
    if isinstance(node, dict):
        return node.get(key, _MISSING)  # type: ignore[call-overload]
    return _MISSING


def get_path(config: Any, path: str, default: Any = None) -> Any:
    """The value at a path of nested dicts (and list items), or ``default`` when any step is missing."""
    node = config
    for key in split_path(path):
        node = _child(node, key)
        if node is _MISSING:
            return default
    return node


def has_path(config: Any, path: str) -> bool:
    """Whether every key of the dotted path exists."""
    return get_path(config, path, _MISSING) is not _MISSING


@dataclass(frozen=True)
class FixOp:
    """One edit of a fix: ``set`` a value, ``delete`` a key or ``move`` a value to another path."""

    op: Literal["set", "delete", "move"]
    path: str
    value: Any = None
    to: str | None = None


@dataclass(frozen=True)
class Fix:
    """A mechanical fix the app can apply with one click.

    ``safe``: the fix preserves what DeepSpeed does (``core.rules.codes.SAFE_MEANING``); "apply all" and
    ``dsconfig fix`` apply only safe fixes unless asked for all. ``core.validate`` sets it from the code table.
    """

    description: str
    ops: tuple[FixOp, ...]
    safe: bool = False

    def apply(self, config: dict[str, Any]) -> dict[str, Any]:
        """A new config with the fix applied (the input is not modified)."""
        return self.apply_in_place(copy.deepcopy(config))

    def apply_in_place(self, new: dict[str, Any]) -> dict[str, Any]:
        """``new`` with the fix applied to it, modified in place (for a caller that owns a copy already)."""
        for op in self.ops:
            keys = split_path(op.path)
            if op.op == "set":
                _set(new, keys, copy.deepcopy(op.value))
            elif op.op == "delete":
                _delete(new, keys)
            elif op.op == "move":
                value = get_path(new, op.path, _MISSING)
                if value is not _MISSING and op.to and not _rename(new, keys, split_path(op.to)):
                    _delete(new, keys)
                    _set(new, split_path(op.to), value)
        return new

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "safe": self.safe, "ops": [asdict(op) for op in self.ops]}


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a dotted path in place, creating (or replacing non-dict) parents."""
    _set(config, split_path(path), value)


def delete_path(config: dict[str, Any], path: str, *, prune: bool = False) -> None:
    """Remove the key at a dotted path in place (nothing happens when it is missing).

    With ``prune``, the parent dicts this leaves empty are removed too (an app edit that unsets the
    last key of a section should not leave ``{}`` behind); parents that were already empty stay.
    """
    keys = split_path(path)
    if not prune:
        _delete(config, keys)
        return
    chain: list[dict[str, Any]] = [config]
    for key in keys[:-1]:
        child = chain[-1].get(key)
        if not isinstance(child, dict):
            return
        chain.append(child)
    if not keys or keys[-1] not in chain[-1]:
        return
    chain[-1].pop(keys[-1])
    for depth in range(len(chain) - 1, 0, -1):
        if chain[depth]:
            break
        chain[depth - 1].pop(keys[depth - 1], None)


def _set(config: dict[str, Any], keys: list[Key], value: Any) -> None:
    node: Any = config
    for key in keys[:-1]:
        child = _child(node, key)
        if isinstance(key, int):
            if child is _MISSING:
                return  # no such list item: nothing to set
        elif not isinstance(child, dict | list) or not isinstance(node, dict):
            if not isinstance(node, dict):
                return
            child = {}
            node[key] = child
        node = child
    if not keys:
        return
    last = keys[-1]
    if isinstance(last, int) and isinstance(node, list):
        if 0 <= last < len(node):
            node[last] = value
    elif isinstance(node, dict):
        node[last] = value


def _rename(config: dict[str, Any], keys: list[Key], to: list[Key]) -> bool:
    """Rename a key inside its own section, keeping its place (a move would append it at the end of the section).

    False when ``to`` is in another section or already set: the caller then moves the value.
    """
    if not keys or len(keys) != len(to) or keys[:-1] != to[:-1]:
        return False
    node: Any = config
    for key in keys[:-1]:
        node = _child(node, key)
    old, new = keys[-1], to[-1]
    if not isinstance(node, dict) or isinstance(new, int) or old not in node or new in node:
        return False
    items = [(new if key == old else key, value) for key, value in node.items()]
    node.clear()
    node.update(items)
    return True


def _delete(config: dict[str, Any], keys: list[Key]) -> None:
    node: Any = config
    for key in keys[:-1]:
        node = _child(node, key)
        if node is _MISSING:
            return
    if isinstance(node, dict) and keys:
        node.pop(keys[-1], None)
    elif isinstance(node, list) and keys and isinstance(keys[-1], int) and 0 <= keys[-1] < len(node):
        node.pop(keys[-1])  # "Remove `ids[1]`": the item goes, the ones after it move up


@dataclass(frozen=True)
class Finding:
    """One thing the validator has to say about a config."""

    severity: Severity
    code: str
    path: str
    message: str
    suggestion: str = ""
    fix: Fix | None = None
    page: str | None = None
    """The app page where this is fixed."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "severity": self.severity, "code": self.code, "path": self.path, "message": self.message,
            "suggestion": self.suggestion, "page": self.page,
        }
        out["fix"] = self.fix.to_dict() if self.fix else None
        return out


@dataclass(frozen=True)
class BatchValues:
    """The batch trio as DeepSpeed resolves it for a world size."""

    train_batch_size: Any
    train_micro_batch_size_per_gpu: Any
    gradient_accumulation_steps: Any
    world_size: float
    derived: tuple[str, ...] = ()
    """Which of the three DeepSpeed computed rather than read."""


@dataclass(frozen=True)
class Report:
    """The result of ``core.validate``."""

    findings: tuple[Finding, ...]
    batch: BatchValues | None = None
    version: str = "0.19.8"
    target: str = "deepspeed"
    world_size: int = 1

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def counts(self) -> dict[str, int]:
        """How many findings of each severity (error, warning, info)."""
        return {s: sum(f.severity == s for f in self.findings) for s in ("error", "warning", "info")}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "version": self.version,
            "target": self.target,
            "world_size": self.world_size,
            "counts": self.counts(),
            "batch": asdict(self.batch) if self.batch else None,
            "findings": [f.to_dict() for f in self.findings],
        }
