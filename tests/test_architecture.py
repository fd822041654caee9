"""The import rules ARCHITECTURE.md states, checked on the source: a room that imports what it must not fails here
with the file and the line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every import in ``path``, module-level or inside functions; relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # ``from core import validate`` imports the room core.validate
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def offenders(files: list[Path], forbidden: tuple[str, ...], root: Path = ROOT) -> list[str]:
    out = []
    for path in files:
        for line, module in imports_of(path, root):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


def python_files(*rooms: str) -> list[Path]:
    return sorted(p for room in rooms for p in (ROOT / room).rglob("*.py"))


def test_core_never_imports_streamlit_ui_or_pages():
    assert offenders(python_files("core"), ("streamlit", "ui", "pages")) == []


def test_pages_and_ui_never_use_the_cli():
    assert offenders([*python_files("pages", "ui"), ROOT / "app.py"], ("core.cli",)) == []


@pytest.mark.parametrize("room, allowed_exceptions", [
    ("models", ()),
    ("versions", ("matrix.py",)),  # runs the whole validator once per release
])
def test_leaf_rooms_import_no_other_core_room(room, allowed_exceptions):
    files = [p for p in python_files(f"core/{room}") if p.name not in allowed_exceptions]
    assert files
    others = tuple(f"core.{p.stem if p.is_file() else p.name}" for p in (ROOT / "core").iterdir()
                   if p.name not in (room, "__pycache__", "__init__.py") and (p.suffix == ".py" or p.is_dir()))
    assert offenders(files, others) == []


def test_the_checker_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "core" / "memory" / "probe.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from ...ui import fields\n    import streamlit as st\n")
    assert offenders([bad], ("streamlit", "ui"), root=tmp_path) == [
        "core/memory/probe.py:2 imports ui", "core/memory/probe.py:2 imports ui.fields",
        "core/memory/probe.py:3 imports streamlit"]


def _core_rooms() -> list[str]:
    return sorted(p.stem if p.is_file() else p.name for p in (ROOT / "core").iterdir()
                  if p.name not in ("__pycache__", "__init__.py", "__main__.py")
                  and (p.suffix == ".py" or (p / "__init__.py").exists()))


def rooms_imported(room: str, leave_out: tuple[str, ...] = ()) -> set[str]:
    """The other rooms of core/ that ``room``'s files import (module level or inside a function)."""
    rooms = set(_core_rooms())
    single = ROOT / "core" / f"{room}.py"
    files = [single] if single.exists() else [p for p in python_files(f"core/{room}") if p.name not in leave_out]
    found = set()
    for path in files:
        for _line, module in imports_of(path):
            parts = module.split(".")
            if parts[0] == "core" and len(parts) > 1 and parts[1] in rooms and parts[1] != room:
                found.add(parts[1])
    return found


def test_architecture_md_names_every_room_each_room_imports():
    """ARCHITECTURE.md's import lines ("`perf` → `batch`, ...") said perf imports five rooms where it imports nine;
    each line must now equal the source's imports."""
    import re

    text = (ROOT / "ARCHITECTURE.md").read_text()
    lines = re.findall(r"^- ((?:`[a-z_]+`(?:, )?)+) → (.*)$", text, flags=re.M)
    assert len(lines) >= 8
    for rooms_text, imported in lines:
        if imported == "anything in core":
            continue
        named = set(re.findall(r"`([a-z_]+)`", imported.split("(")[0]))
        for room in re.findall(r"`([a-z_]+)`", rooms_text):
            if imported.startswith("nothing, except `versions/matrix.py`"):
                assert rooms_imported(room, ("matrix.py",)) == set(), room
                assert rooms_imported(room) == set(re.findall(r"`([a-z_]+)`", imported.split("(")[1])), room
            else:
                assert rooms_imported(room) == named, (room, sorted(rooms_imported(room)))
