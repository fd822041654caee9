"""The value checks of a torch.optim class's constructor, run on ``optimizer.params`` without torch.

``deepspeed.initialize`` builds a torch.optim class with ``cls(params, **optimizer.params)`` when the config names
one (or selects torch's Adam/AdamW/Adagrad), and a torch.optim.lr_scheduler class with ``cls(optimizer,
**scheduler.params)``, and the constructor refuses some values (``lr < 0``, ``betas`` outside
[0, 1), Nesterov without momentum, ...). The checks are read from the installed torch's code by
``scripts/gen_torch_checks.py`` into ``core/versions/torch_checks.json``: each is the source of an ``if`` test
and of its exception's message. This module evaluates that source on the config's values with Python's own
operators (so a string compared with a number raises the TypeError torch would) and a small whitelist of
expressions; anything else in a test (a method call reached only for tensors) stops that test, never the run.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from functools import cache
from typing import Any

from core import versions


class _Tensor:
    """Stands for ``torch.Tensor`` in ``isinstance`` tests: no JSON value is one."""


class Unsupported(Exception):
    """The test needs something the evaluator does not do (it is then not judged)."""


_GLOBALS: dict[str, Any] = {"Tensor": _Tensor, "isinstance": isinstance, "len": len, "float": float, "int": int,
                            "bool": bool, "str": str, "list": list, "tuple": tuple, "dict": dict, "type": type}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
#: Exceptions that evaluating a test on JSON values can raise, exactly as the constructor's own test would.
_AS_TORCH = (TypeError, IndexError, KeyError, ValueError, ZeroDivisionError, OverflowError)


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in _GLOBALS:
            return _GLOBALS[node.id]
        raise Unsupported(node.id)
    if isinstance(node, ast.List):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.Tuple):  # isinstance(x, (float, int)) needs a tuple
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.BoolOp):  # Python's short circuit: `isinstance(lr, Tensor) and lr.numel()` stops early
        value: Any = None
        for operand in node.values:
            value = _eval(operand, env)
            if (isinstance(node.op, ast.And) and not value) or (isinstance(node.op, ast.Or) and value):
                return value
        return value
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise Unsupported(type(node.op).__name__)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _eval(comparator, env)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.Subscript):
        return _eval(node.value, env)[_eval(node.slice, env)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _GLOBALS.get(node.func.id)
        if function is None:
            raise Unsupported(node.func.id)
        return function(*(_eval(a, env) for a in node.args))
    if isinstance(node, ast.JoinedStr):
        return "".join(_eval(v, env) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        value = _eval(node.value, env)
        value = {-1: value, 115: str(value), 114: repr(value), 97: ascii(value)}[node.conversion]
        return format(value, _eval(node.format_spec, env) if node.format_spec is not None else "")
    raise Unsupported(type(node).__name__)


@dataclass(frozen=True)
class Check:
    """One ``if``-test of a constructor, parsed once; or (``assign`` set) a new value given to a parameter when
    ``test`` holds, which later tests see."""

    when: str
    raises: str
    test: ast.Expression
    result: ast.Expression
    """The raise's message; for an assignment, the value assigned."""
    #: the constructor parameters the test (and an assigned value) reads, in the order they first appear
    reads: tuple[str, ...]
    assign: str | None = None


@dataclass(frozen=True)
class Refusal:
    """A check that refuses the values: the exception and its message, and the parameters the test read."""

    cls: str
    error: str
    message: str
    reads: tuple[str, ...]


#: JSON key of each kind of class in ``torch_checks.json``
_KINDS = {"optimizer": "classes", "scheduler": "schedulers"}


@cache
def _checks(cls: str, kind: str = "optimizer") -> tuple[
        dict[str, Any], tuple[Check, ...], tuple[str, dict[str, tuple[str, ast.Expression]]] | None, frozenset[str]]:
    """The class's defaults, its checks parsed, its parent's name with each argument it passes on (source and
    parsed), and the names of its parameters; parsed once per class."""
    data = versions.torch_checks()[_KINDS[kind]][cls]
    checks = []
    for record in data["checks"]:
        test = ast.parse(record["when"], mode="eval")
        result = ast.parse(record.get("value", record.get("message", "''")), mode="eval")
        names = [n.id for tree in (test, result) for n in ast.walk(tree)
                 if isinstance(n, ast.Name) and n.id not in _GLOBALS]
        checks.append(Check(record["when"], record.get("raises", ""), test, result, tuple(dict.fromkeys(names)),
                            record.get("assign")))
    parent = data.get("parent")
    passed_on = None if parent is None else (
        parent["class"], {k: (expr, ast.parse(expr, mode="eval")) for k, expr in parent["arguments"].items()})
    return (data["defaults"], tuple(checks), passed_on,
            frozenset(data["defaults"]) | frozenset(data.get("required", ())))


def known(cls: str, kind: str = "optimizer") -> bool:
    """Whether the checks of ``cls`` (a torch.optim class, or with ``kind="scheduler"`` a
    torch.optim.lr_scheduler class) were recorded."""
    return cls in versions.torch_checks()[_KINDS[kind]]


def defaults(cls: str, kind: str = "optimizer") -> dict[str, Any]:
    """The JSON defaults of ``cls``'s keyword parameters (a callable default is left out)."""
    return _checks(cls, kind)[0]


def refusals(cls: str, params: Mapping[str, Any], kind: str = "optimizer") -> Iterator[Refusal]:
    """What ``cls``'s constructor (and its parent's, AdamW's Adam) refuses in ``params`` (keyword arguments as
    JSON gives them, already without the keys DeepSpeed pops). A test that reads an "auto" value, or needs more
    than the evaluator does, is not judged; nor is a test reading a required parameter that is missing (that is
    the missing-parameter rule's)."""
    defaults, checks, parent, names = _checks(cls, kind)
    env = {**defaults, **{k: v for k, v in params.items() if k in names}}
    for check in checks:
        if any(name not in env or env[name] == "auto" for name in check.reads if name in names):
            continue
        if check.assign is not None:
            try:
                if _eval(check.test, env):
                    env[check.assign] = _eval(check.result, env)
            except _AS_TORCH as exc:
                yield Refusal(cls, type(exc).__name__, str(exc), check.reads)
                return  # the constructor stops here
            except Unsupported:
                return  # what later tests would see is not known
            continue
        try:
            refused = bool(_eval(check.test, env))
        except _AS_TORCH as exc:
            yield Refusal(cls, type(exc).__name__, str(exc), check.reads)
            continue
        except Unsupported:
            continue
        if refused:
            try:
                message = str(_eval(check.result, env))
            except (Unsupported, *_AS_TORCH):
                message = check.when
            yield Refusal(cls, check.raises, message, check.reads)
    if parent is not None:
        name, arguments = parent
        try:
            passed = {k: _eval(tree, env) for k, (_, tree) in arguments.items()}
        except (Unsupported, *_AS_TORCH):
            return
        for refusal in refusals(name, passed, kind):
            # the parent's parameter names are the child's where it passes them on by name (AdamW → Adam)
            reads = tuple(k for k in refusal.reads if k in arguments and arguments[k][0] == k)
            yield Refusal(cls, refusal.error, refusal.message, reads)


#: The largest finite float32: torch converts a scalar for a float32 tensor operation and refuses one beyond it.
FLOAT32_MAX = 3.4028234663852886e38


def step_probe(value: Any) -> Any:
    """The value ``scripts/gen_torch_checks.py`` stepped that stands for ``value``'s kind (its STEP_PROBE_VALUES):
    a bool itself, 0 / 0.0 themselves, a float beyond float32's range ±1e39, a whole int ±1, a whole float ±1.0, a
    fraction ±0.5 (by sign); None for anything else (an int beyond float32's range, text, null, lists, infinities:
    not judged here)."""
    if isinstance(value, bool):
        return value
    sign = 1 if isinstance(value, int | float) and value > 0 else -1
    if isinstance(value, int | float) and math.isfinite(value) and abs(value) > FLOAT32_MAX:
        return sign * 1e39 if isinstance(value, float) else None
    if isinstance(value, int):
        return 0 if value == 0 else sign
    if isinstance(value, float) and math.isfinite(value):
        return 0.0 if value == 0 else sign * 1.0 if value.is_integer() else sign * 0.5
    return None


def step_refusals(cls: str, params: Mapping[str, Any]) -> Iterator[Refusal]:
    """What the first steps of the torch.optim class ``cls`` refuse in ``params`` although its constructor accepts
    it (``weight_decay: true`` reaches ``grad.add(param, alpha=True)``; an lr beyond float32's range cannot be
    converted for the weights): the kinds of value ``scripts/gen_torch_checks.py`` found refused by stepping the
    installed torch, a value matched by its kind (``step_probe``: true is not 1, 2.0 is a whole float like 1.0)."""
    if not known(cls):
        return
    for record in versions.torch_checks()["classes"][cls].get("steps", {}).get("refused", ()):
        probe = step_probe(params.get(record["param"]))
        if probe is not None and type(probe) is type(record["value"]) and probe == record["value"]:
            yield Refusal(cls, record["raises"], record["message"], (record["param"],))


def step_without_closure(cls: str) -> Refusal | None:
    """What the torch.optim class ``cls`` raises when stepped as DeepSpeed's engine steps it, ``step()`` without a
    closure, when its ``step`` requires one (LBFGS re-evaluates the loss); None for a class that steps without."""
    if not known(cls):
        return None
    record = versions.torch_checks()["classes"][cls].get("steps", {}).get("needs_closure")
    return None if record is None else Refusal(cls, record["raises"], record["message"], ())


@dataclass(frozen=True)
class ModuleName:
    """What ``deepspeed.initialize`` makes of one ``lower_precision_safe_modules`` entry naming a torch.nn class."""

    entry: str
    fails: bool
    """True: the import fails with the pinned torch; False: it imports a module the user's environment may lack."""
    meant: str | None
    """The torch.nn name it most likely meant, when there is one."""


def nn_module_name(entry: str) -> ModuleName | None:
    """Judge a ``torch_autocast.lower_precision_safe_modules`` entry that names torch.nn (``torch.nn.Linear``,
    ``torch.nn.modules.linear.Linear``) or looks like it (``nn.Linear``, the module torch is imported as) against
    the pinned torch's modules; None for an entry that imports, or one of the user's own modules (not judged)."""
    held: dict[str, list[str]] = versions.torch_checks()["nn_modules"]
    package, _, name = entry.rpartition(".")
    classes = held["torch.nn"]
    closest = get_close_matches(name, classes, n=1, cutoff=0.75)
    guess = name if name in classes else closest[0] if closest else None
    if package in held:
        if name in held[package]:
            return None
        return ModuleName(entry, True, f"torch.nn.{guess}" if guess else None)
    if package.startswith("torch.nn.modules.") and package.count(".") == 3:  # a module torch.nn.modules lacks
        return ModuleName(entry, True, f"torch.nn.{guess}" if guess else None)
    if package == "nn" and name in classes:
        return ModuleName(entry, False, f"torch.nn.{name}")
    return None
