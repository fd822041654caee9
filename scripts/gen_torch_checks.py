"""Derive the value checks of the torch.optim classes DeepSpeed may build from the installed torch's own code.

    python scripts/gen_torch_checks.py          # writes core/versions/torch_checks.json

When ``optimizer.type`` names a torch.optim class (``"SGD"``, ``"RMSprop"``, ...), or ``torch_adam`` /
``adagrad`` select torch's Adam, AdamW or Adagrad, ``deepspeed.initialize`` calls ``cls(params, **optimizer.params)``
(and ``scheduler.type`` a torch.optim.lr_scheduler class: ``cls(optimizer, **scheduler.params)``), and the
class's ``__init__`` refuses some values (``if lr < 0.0: raise ValueError(f"Invalid learning rate:
{lr}")``). This reads every such ``if ...: raise`` of each ``__init__`` (ast; a nested ``if`` contributes its
ancestors' tests, an ``else`` branch their negation) whose test reads only the constructor's parameters, and
records its source, the exception and the message's f-string source, with the signature's JSON defaults; an
assignment of a new value to a parameter on the way (LBFGS's ``max_eval``) is recorded in its place, since later
tests see the new value and computing it can itself raise.
``core.rules.torch_checks`` evaluates them on a config. Checks that read anything else (a local variable, the
parameter groups) are listed under ``skipped`` with the reason, so what is not checked is visible. Nothing runs
torch at validation time; ``tests/test_torch_checks.py`` regenerates this file from the installed torch and
compares, and constructs the real classes on a grid of values to check the verdicts.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "core" / "versions" / "torch_checks.json"
sys.path.insert(0, str(REPO))

#: Names a recorded test may use besides the constructor's parameters.
ALLOWED_GLOBALS = frozenset({"Tensor", "isinstance", "len", "float", "int", "bool", "str", "list", "tuple", "dict",
                             "type"})


def _json_default(value: Any) -> Any:
    """A signature default as JSON (tuples as lists), or raise TypeError for one JSON cannot hold."""
    if isinstance(value, tuple):
        return [_json_default(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(type(value).__name__)


def _walk(stmts: list[ast.stmt], guards: list[str], params: set[str]) -> list[tuple[str, ast.Raise | ast.Assign]]:
    """In source order, every ``raise`` reached through ``if`` statements only, and every assignment of a new value
    to a parameter (LBFGS: ``max_eval = max_iter * 5 // 4`` when it is None), each with the conjunction of the
    tests that lead to it ("True" at the top)."""
    found: list[tuple[str, ast.Raise | ast.Assign]] = []
    for stmt in stmts:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in params):
            found.append((" and ".join(f"({g})" for g in guards) or "True", stmt))
        elif isinstance(stmt, ast.Raise) and guards:  # an ``if``'s body or an ``else:`` ending in a raise
            found.append((" and ".join(f"({g})" for g in guards), stmt))
            break
        elif isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            found += _walk(stmt.body, [*guards, test], params)
            found += _walk(stmt.orelse, [*guards, f"not ({test})"], params)
    return found


def _names(expression: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}


def class_checks(cls: type, receives: tuple[str, ...] = ("params",)) -> dict[str, Any]:
    """The checks of one class's ``__init__``: defaults, required keywords, recorded checks and skipped ones.
    ``receives``: the arguments DeepSpeed passes itself (the parameters, or a scheduler's optimizer), which no
    recorded test may read."""
    signature = inspect.signature(cls.__init__)
    params = [p for p in signature.parameters.values() if p.name not in ("self", *receives)]
    required = [p.name for p in params if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    defaults: dict[str, Any] = {}
    for p in params:
        if p.default is inspect.Parameter.empty:
            continue
        with contextlib.suppress(TypeError):  # e.g. a callable default: the names test below skips checks on it
            defaults[p.name] = _json_default(p.default)
    function = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__))).body[0]
    if not isinstance(function, ast.FunctionDef):
        raise TypeError(f"{cls.__name__}.__init__ is not a plain function")
    names = {p.name for p in params}
    checks, skipped = [], []
    for test, raised in _walk(function.body, [], names):
        if isinstance(raised, ast.Assign):
            target = ast.unparse(raised.targets[0])  # a parameter's name (``_walk``)
            value = ast.unparse(raised.value)
            assign = {"when": test, "assign": target, "value": value}
            foreign = sorted((_names(test) | _names(value)) - names - ALLOWED_GLOBALS)
            if foreign:
                skipped.append({**assign, "reason": f"reads {', '.join(foreign)}, not a constructor parameter"})
            else:
                checks.append(assign)
            continue
        exc = raised.exc
        error = exc.func.id if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) else ast.unparse(exc)
        message = ast.unparse(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else "''"
        foreign = sorted(_names(test) - names - ALLOWED_GLOBALS)
        record = {"when": test, "raises": error, "message": message}
        if foreign:
            skipped.append({**record, "reason": f"reads {', '.join(foreign)}, not a constructor parameter"})
        elif not (_names(message) <= names | ALLOWED_GLOBALS):
            skipped.append({**record, "reason": "its message reads more than the parameters"})
        else:
            checks.append(record)
    result: dict[str, Any] = {"defaults": defaults, "checks": checks, "skipped": skipped}
    if required:
        result["required"] = required
    parent = _parent_call(function, cls)
    if parent is not None:
        result["parent"] = parent
    return result


def _parent_call(function: ast.FunctionDef, cls: type) -> dict[str, Any] | None:
    """A ``super().__init__(params, ...)`` into another torch.optim class (AdamW into Adam): the parent's name and
    each of its parameters as an expression of this class's parameters, so the parent's checks apply too."""
    import torch.optim

    base = cls.__mro__[1]
    if base is torch.optim.Optimizer or not issubclass(base, torch.optim.Optimizer):
        return None  # the base Optimizer checks no value; schedulers have no parent with value checks
    for stmt in function.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
                and isinstance(call.func.value, ast.Call) and ast.unparse(call.func.value) == "super()"):
            continue
        names = [p for p in inspect.signature(base.__init__).parameters if p != "self"]
        arguments = {names[i]: ast.unparse(a) for i, a in enumerate(call.args)}
        arguments |= {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg is not None}
        arguments.pop("params", None)
        return {"class": base.__name__, "arguments": arguments}
    return None


#: The values tried at the first steps, one of each kind a config may write where a constructor takes a number and
#: the constructor lets through: the booleans (Python's bool is an int: ``weight_decay: true`` reaches
#: ``grad.add(param, alpha=True)``), zero, whole numbers of each sign, the same as floats, fractions, and numbers
#: beyond float32's range (a step's ``alpha=-lr`` on float32 weights: "cannot be converted ... without overflow").
#: ``core.rules.torch_checks.step_probe`` maps a config's value to the one of its kind.
STEP_PROBE_VALUES: tuple[Any, ...] = (True, False, 0, 1, -1, 0.0, 1.0, -1.0, 0.5, -0.5, 1e39, -1e39)
#: Optimizer steps each probe takes: the second sees the state the first created (momentum buffers, LBFGS history).
PROBE_STEPS = 2


def _steps(cls: type, keywords: dict[str, Any]) -> str | None:
    """Build ``cls`` on one 2-D weight (Muon takes only matrices) with ``keywords`` and take ``PROBE_STEPS``
    steps on a fixed loss, calling ``step()`` without arguments as DeepSpeed's engine does; None when it trains, else
    the exception ``Type: message`` of construction or a step (construction's prefixed ``init:``)."""
    import torch

    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(3, 3))
    with warnings.catch_warnings():  # a probe's overflow warns (ASGD: complex values cast) before it raises or not
        warnings.simplefilter("ignore")
        return _stepped(cls, keywords, weight, torch)


def _stepped(cls: type, keywords: dict[str, Any], weight: Any, torch: Any) -> str | None:
    try:
        optimizer = cls([weight], **keywords)
    except Exception as exc:  # the constructor's own refusal: class_checks records those
        return f"init: {type(exc).__name__}: {exc}"
    try:
        for _ in range(PROBE_STEPS):
            optimizer.zero_grad()
            (weight @ torch.ones(3)).pow(2).sum().backward()
            optimizer.step()
    except Exception as exc:  # the point: what the first steps raise
        return f"{type(exc).__name__}: {exc}"
    return None


def step_refusals(cls: type, defaults: dict[str, Any]) -> dict[str, Any]:
    """What the first optimizer steps refuse that the constructor accepts, tried on the installed torch: each
    ``STEP_PROBE_VALUES`` value for each keyword whose default is a number, one at a time, with every
    implementation the class offers on the CPU (``foreach`` off and on; a GPU runs the foreach one). A value is
    recorded when every implementation raises the same exception, with torch's message. A class whose ``step``
    needs a closure (LBFGS re-evaluates the loss) never steps under DeepSpeed, whose engine calls ``step()`` with
    none: that is recorded instead; a class whose defaults do not step here (SparseAdam needs sparse gradients) is
    recorded as not probed, with the reason."""
    closure = inspect.signature(cls.step).parameters.get("closure")
    if closure is not None and closure.default is inspect.Parameter.empty:
        failure = _steps(cls, {})
        if failure is None:
            raise RuntimeError(f"{cls.__name__}.step() trains without its required closure: update this script")
        error, _, message = failure.partition(": ")
        return {"needs_closure": {"raises": error, "message": message.splitlines()[0]}}
    control = _steps(cls, {})
    if control is not None:
        return {"not_probed": f"its defaults do not step on a dense weight ({control.splitlines()[0]})"}
    implementations = [{"foreach": False}, {"foreach": True}] if "foreach" in defaults else [{}]
    refused = []
    for name, default in sorted(defaults.items()):
        if isinstance(default, bool) or not isinstance(default, int | float):
            continue
        for value in STEP_PROBE_VALUES:
            outcomes = {_steps(cls, {name: value, **implementation}) for implementation in implementations}
            if len(outcomes) != 1 or None in outcomes:
                continue
            outcome = outcomes.pop()
            if outcome.startswith("init:"):
                continue  # the constructor refuses it: a recorded check, or one class_checks lists as skipped
            error, _, message = outcome.partition(": ")
            refused.append({"param": name, "value": value, "raises": error, "message": message.splitlines()[0]})
    return {"refused": refused}


def extract() -> dict[str, Any]:
    """The checks of every class in ``TORCH_OPTIMIZERS`` and of every ``TORCH_SCHEDULER_PARAMS`` scheduler a JSON
    config can build, from the installed torch."""
    import torch
    import torch.optim
    import torch.optim.lr_scheduler

    from core.schema.optimizer import TORCH_OPTIMIZERS, TORCH_SCHEDULER_PARAMS, TORCH_SCHEDULERS_NEED_OBJECTS

    classes = {name: class_checks(getattr(torch.optim, name)) for name in TORCH_OPTIMIZERS}
    for name, data in classes.items():
        data["steps"] = step_refusals(getattr(torch.optim, name), data["defaults"])
    for data in list(classes.values()):
        parent = data.get("parent", {}).get("class")
        if parent is not None and parent not in classes:
            classes[parent] = class_checks(getattr(torch.optim, parent))
    schedulers = {name: class_checks(getattr(torch.optim.lr_scheduler, name), receives=("optimizer",))
                  for name in TORCH_SCHEDULER_PARAMS if name not in TORCH_SCHEDULERS_NEED_OBJECTS}
    resume = _resume_check()
    for name, data in schedulers.items():
        cls = getattr(torch.optim.lr_scheduler, name)
        if issubclass(cls, torch.optim.lr_scheduler.LRScheduler) and "last_epoch" in data["defaults"]:
            data["checks"].append(resume)  # the base constructor runs after the class's own checks
    return {"torch": torch.__version__.split("+")[0], "classes": classes, "schedulers": schedulers,
            "nn_modules": nn_modules()}


def nn_modules() -> dict[str, list[str]]:
    """The ``torch.nn.Module`` classes that ``torch.nn`` and each ``torch.nn.modules.<name>`` module hold as
    attributes (what they define and what they import): the names a config's
    ``torch_autocast.lower_precision_safe_modules`` can give (deepspeed.initialize imports the part before the last
    dot with ``importlib`` and takes the class with ``getattr``)."""
    import importlib
    import pkgutil

    import torch.nn
    import torch.nn.modules

    submodules = sorted(f"torch.nn.modules.{info.name}" for info in pkgutil.iter_modules(torch.nn.modules.__path__))
    modules = ["torch.nn", *submodules]
    held = {}
    for name in modules:
        module = importlib.import_module(name)
        held[name] = sorted(attr for attr, value in vars(module).items()
                            if inspect.isclass(value) and issubclass(value, torch.nn.Module))
    return held


def _resume_check() -> dict[str, Any]:
    """``LRScheduler.__init__``'s refusal of ``last_epoch`` other than -1 on an optimizer that was never stepped by
    a scheduler (DeepSpeed's, built fresh by ``deepspeed.initialize``): the test is the base constructor's ``if``
    whose ``else`` raises, the exception and message are what the base constructor raises on a fresh optimizer
    (its message is built in a loop over the parameter groups, so it is taken from a run, not from the source)."""
    import torch
    from torch.optim.lr_scheduler import LRScheduler

    function = ast.parse(textwrap.dedent(inspect.getsource(LRScheduler.__init__))).body[0]
    test = next(ast.unparse(n.test) for n in ast.walk(function) if isinstance(n, ast.If)
                and "last_epoch" in _names(ast.unparse(n.test))
                and any(isinstance(m, ast.Raise) for o in n.orelse for m in ast.walk(o)))
    fresh = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    try:
        LRScheduler.__init__(object.__new__(LRScheduler), fresh, last_epoch=0)
    except Exception as exc:  # the refusal being recorded
        return {"when": f"not ({test})", "raises": type(exc).__name__, "message": repr(exc.args[0])}
    raise RuntimeError("LRScheduler no longer refuses last_epoch >= 0 on a fresh optimizer: update this script")


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(extract()))
    print(f"wrote {OUT.relative_to(REPO)}")
