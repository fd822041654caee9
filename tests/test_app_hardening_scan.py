"""A static scan of the app, ui/, pages/ and core/: no module-level mutable container is ever mutated, so no
state is shared between sessions by accident (the AppTest side of session isolation is in test_app_hardening.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from app_support import ROOT

# ------------------------------------------------------------------ static scan: module-level mutable state

SCANNED = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")),
           *sorted((ROOT / "pages").rglob("*.py")), *sorted((ROOT / "core").rglob("*.py"))]
#: Streamlit executes these scripts afresh on every rerun of every session: their top-level names are per-run
#: locals, never shared, so only mutation from inside their functions of a *shared* object would matter.
SCRIPTS = {ROOT / "app.py", *(ROOT / "pages").rglob("*.py")}
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "bytearray"}
MUTATING_METHODS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "add",
                    "discard", "remove", "appendleft", "extendleft", "sort", "reverse", "__setitem__"}


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in MUTABLE_CALLS
    return False


def _module_level_mutables(tree: ast.Module) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _is_mutable(value):
            found.update({t.id: node.lineno for t in targets if isinstance(t, ast.Name)})
    return found


def _mutations(tree: ast.Module, names: set[str]) -> list[tuple[str, int, str]]:
    """(name, line, how) for every place that changes one of ``names`` in place."""
    out: list[tuple[str, int, str]] = []

    def base(expr: ast.expr) -> str | None:
        while isinstance(expr, ast.Subscript | ast.Attribute):
            expr = expr.value
        return expr.id if isinstance(expr, ast.Name) else None

    # Building a constant while the module is imported is fine; changing it later (inside a function) is not.
    in_functions = [n for top in ast.walk(tree) if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                    for n in ast.walk(top)]
    for node in in_functions:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS:
            name = base(node.func.value)
            if name in names:
                out.append((name, node.lineno, f".{node.func.attr}()"))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript | ast.Attribute) and base(target) in names:
                    out.append((base(target), node.lineno, "item/attribute assignment"))
                elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name) and target.id in names:
                    out.append((target.id, node.lineno, "augmented assignment"))
        elif isinstance(node, ast.Global):
            out.extend((n, node.lineno, "global statement") for n in node.names if n in names)
    return out


def test_scan_finds_a_mutated_module_level_container():
    # The scanner itself must catch what it is meant to catch (and not flag a constant nobody changes).
    tree = ast.parse("CACHE = {}\nSEEN = []\nLIMITS = {'a': 1}\nLIMITS['b'] = 2\n"
                     "def f(k):\n    CACHE[k] = 1\n    SEEN.append(k)\n    return LIMITS['a']\n")
    names = set(_module_level_mutables(tree))
    assert names == {"CACHE", "SEEN", "LIMITS"}
    assert {n for n, _, _ in _mutations(tree, names)} == {"CACHE", "SEEN"}


def test_no_module_level_mutable_state_is_ever_mutated():
    problems = []
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        mutables = _module_level_mutables(tree)
        rel = path.relative_to(ROOT)
        for name, line, how in _mutations(tree, set(mutables) if path not in SCRIPTS else set()):
            problems.append(f"{rel}:{line}: module-level {name} (defined line {mutables[name]}) is mutated by {how}")
        for name, line in mutables.items():
            if path not in SCRIPTS and not name.isupper() and name != "__all__":
                problems.append(f"{rel}:{line}: module-level mutable {name} is not an UPPER_CASE constant")
    # Mutations by other modules: ``module.NAME[...] = `` or ``module.NAME.update(...)`` anywhere.
    exported = {}
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name in _module_level_mutables(tree):
            exported.setdefault(name, path.relative_to(ROOT))
    for path in SCANNED:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in MUTATING_METHODS and isinstance(node.func.value, ast.Attribute)
                    and node.func.value.attr in exported and node.func.value.attr.isupper()):
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: mutates {node.func.value.attr} "
                                f"of {exported[node.func.value.attr]}")
    assert not problems, "\n".join(problems)


def test_scan_covers_the_app():
    assert len(SCANNED) >= 20 and all(Path(p).exists() for p in SCANNED)
