"""The torch.optim constructor checks (``core/versions/torch_checks.json``, ``core.rules.torch_checks``) against the
installed torch: the file is what ``scripts/gen_torch_checks.py`` reads from torch's code today, and on a grid of
values per class the recorded checks refuse exactly what the real constructor refuses, with its exception and
message."""

from __future__ import annotations

import importlib
import itertools
import json
import linecache
import sys
from pathlib import Path
from typing import Any

import pytest

import core
from core.rules import torch_checks
from core.schema.optimizer import TORCH_OPTIMIZERS

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gen_torch_checks  # noqa: E402

#: Values tried for every parameter whose default is of that kind (numbers, pairs, switches, names).
NUMBERS: tuple[Any, ...] = (-1, -0.5, 0, 0.0, 0.5, 1, 1.0, 1.5, 2, "0.1", None, True, [0.5])
PAIRS: tuple[Any, ...] = ([1.5, 0.9], [0.9, 1.5], [0, 0.999], [0.0, 0.999], [0.9], 0.9, [-0.1, 0.9], [0.5, 1.2],
                          [0.9, 0.999], [1e-6, 50.0], [None, 1e-3], "x")
SWITCHES: tuple[Any, ...] = (True, False, None, 1, "yes")
NAMES: tuple[Any, ...] = ("original", "match_rms_adamw", "strong_wolfe", "x", None, 3)


def _tries(default: Any) -> tuple[Any, ...]:
    if isinstance(default, bool) or default is None:
        return SWITCHES + (NAMES if default is None else ())
    if isinstance(default, int | float):
        return NUMBERS
    if isinstance(default, list):
        return PAIRS
    return NAMES


def _grid(cls: str, kind: str = "optimizer") -> list[dict[str, Any]]:
    """One parameter changed at a time, and every pair of switches and numbers of the class together."""
    defaults = torch_checks.defaults(cls, kind)
    grid: list[dict[str, Any]] = [{}]
    grid += [{key: value} for key, default in defaults.items() for value in _tries(default)]
    small = [k for k, d in defaults.items() if isinstance(d, bool | int | float) or d is None]
    for a, b in itertools.combinations(small, 2):
        grid += [{a: x, b: y} for x in (True, 0.9, 0) for y in (True, 0.1, 0)]
    return grid


#: Valid values of the schedulers' required parameters, so that one changed parameter is what is judged.
SCHEDULER_REQUIRED: dict[str, dict[str, Any]] = {
    "StepLR": {"step_size": 10}, "MultiStepLR": {"milestones": [10]}, "ExponentialLR": {"gamma": 0.9},
    "CosineAnnealingLR": {"T_max": 10}, "CosineAnnealingWarmRestarts": {"T_0": 10},
    "CyclicLR": {"base_lr": 0.01, "max_lr": 0.1}, "OneCycleLR": {"max_lr": 0.1, "total_steps": 100},
}
SCHEDULERS = tuple(torch_checks.versions.torch_checks()["schedulers"])


def _construct(cls: str, params: dict[str, Any], kind: str = "optimizer") -> BaseException | None:
    """The exception the class's own constructor raises on ``params`` (None: it accepts them). An exception from
    further in (a scheduler's first ``get_lr``) is not a constructor check and is returned as None."""
    weight = torch.nn.Parameter(torch.zeros(2, 2))
    if kind == "optimizer":
        build, classes = (lambda: getattr(torch.optim, cls)([weight], **params)), getattr(torch.optim, cls).__mro__
    else:
        optimizer = torch.optim.SGD([weight], lr=0.1, momentum=0.9)
        scheduler = getattr(torch.optim.lr_scheduler, cls)
        build, classes = (lambda: scheduler(optimizer, **params)), scheduler.__mro__
    try:
        build()
    except Exception as exc:  # any refusal counts; its type is compared by the caller
        frame = exc.__traceback__
        while frame.tb_next is not None:
            frame = frame.tb_next
        inits = {c.__init__.__code__ for c in classes if hasattr(vars(c).get("__init__"), "__code__")}
        if frame.tb_frame.f_code not in inits:
            return None
        line = linecache.getline(frame.tb_frame.f_code.co_filename, frame.tb_lineno).strip()
        # an ``if`` test or a ``raise`` of the constructor is what the checks record; anything else (a value
        # computed from the parameters, e.g. CyclicLR's float(step_size_up) or OneCycleLR's max_lr / div_factor)
        # is a refusal the checks do not claim to know
        assigned = line.split("=")[0].strip()  # LBFGS: max_eval = max_iter * 5 // 4, recorded as an assignment
        code = frame.tb_frame.f_code
        recorded = (line.startswith(("if ", "elif ", "raise "))
                    or assigned in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        return exc if recorded else Unrecorded(exc)
    return None


class Unrecorded(Exception):
    """A constructor's refusal from a statement that is not an ``if``-test or a ``raise``."""


def _text(exc: BaseException) -> str:
    """An exception's message (a KeyError's str() quotes it)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def _compare(cls: str, grid: list[dict[str, Any]], kind: str) -> list[tuple[Any, ...]]:
    """Where the recorded checks and the real constructor disagree on ``grid``; a refusal from a statement the
    checks do not record (``Unrecorded``) is not compared."""
    wrong: list[tuple[Any, ...]] = []
    for params in grid:
        raised = _construct(cls, params, kind)
        found = list(torch_checks.refusals(cls, params, kind))
        if isinstance(raised, Unrecorded):
            continue  # torch refuses (first) where no check is recorded; a recorded refusal after it is still one
        if raised is None and found:
            wrong.append((params, "torch accepts, the checks refuse", found[0]))
        elif raised is not None and not found:
            wrong.append((params, "torch refuses, the checks accept", repr(raised)))
        elif raised is not None and (type(raised).__name__, _text(raised)) != (found[0].error, found[0].message):
            wrong.append((params, "a different refusal", repr(raised), found[0]))
    return wrong


def test_the_recorded_checks_are_the_installed_torchs():
    recorded = json.loads((ROOT / "core" / "versions" / "torch_checks.json").read_text())
    assert recorded == json.loads(gen_torch_checks.render(gen_torch_checks.extract()))
    assert recorded["torch"] == torch.__version__.split("+")[0]


@pytest.mark.parametrize("cls", TORCH_OPTIMIZERS)
def test_the_checks_refuse_what_the_constructor_refuses(cls):
    grid = _grid(cls)
    assert len(grid) > 10
    wrong = _compare(cls, grid, "optimizer")
    assert not wrong, wrong[:10]
    # for the optimizers every refusal on the grid is one the checks record
    assert not [p for p in grid if isinstance(_construct(cls, p), Unrecorded)]


@pytest.mark.parametrize("cls", SCHEDULERS)
def test_the_checks_refuse_what_the_schedulers_constructor_refuses(cls):
    """As for the optimizers, except that a scheduler's constructor also computes from its parameters (CyclicLR's
    float(step_size_up), OneCycleLR's max_lr / div_factor), and those refusals are not recorded."""
    required = SCHEDULER_REQUIRED.get(cls, {})
    grid = [{**required, **params} for params in _grid(cls, "scheduler")]
    grid += [{**required, key: value} for key in required for value in NUMBERS + PAIRS]
    grid += [{k: v for k, v in required.items() if k != key} for key in required]  # a required one missing
    wrong = _compare(cls, grid, "scheduler")
    assert not wrong, wrong[:10]
    refused = sum(isinstance(_construct(cls, p, "scheduler"), ValueError | TypeError | KeyError) for p in grid)
    # the classes with value checks refuse some of the grid (so the comparison compared something)
    assert refused > 0 or not torch_checks._checks(cls, "scheduler")[1], cls


def test_every_class_has_its_value_checks_or_says_why_not():
    classes = core.versions.torch_checks()["classes"]
    assert set(TORCH_OPTIMIZERS) <= set(classes)
    for name, data in classes.items():
        assert data["checks"] or data.get("parent"), name
        assert all(skip["reason"] for skip in data["skipped"])
    assert classes["AdamW"]["parent"]["arguments"]["decoupled_weight_decay"] == "True"


@pytest.mark.parametrize(("optimizer", "path", "refused"), [
    ({"type": "SGD", "params": {"lr": -0.1}}, "optimizer.params.lr", True),
    ({"type": "SGD", "params": {"lr": 0.1, "nesterov": True}}, "optimizer.params.nesterov", True),
    ({"type": "SGD", "params": {"lr": 0.1, "nesterov": True, "momentum": 0.9}}, None, False),
    ({"type": "RMSprop", "params": {"lr": 0.1, "alpha": -1}}, "optimizer.params.alpha", True),
    # torch_adam: torch's AdamW (adam_w_mode on by default), or Adam with adam_w_mode false; both check betas
    ({"type": "Adam", "params": {"lr": 0.1, "torch_adam": True, "betas": [0.9, 1.0]}}, "optimizer.params.betas", True),
    ({"type": "Adam", "params": {"lr": 0.1, "torch_adam": True, "adam_w_mode": False, "betas": [0, 0.9]}},
     "optimizer.params.betas", True),
    # without CPU offload DeepSpeed's Adagrad is torch's
    ({"type": "Adagrad", "params": {"lr": -0.1}}, "optimizer.params.lr", True),
    # DeepSpeed's fused AdamW does not check lr: a warning, not torch's refusal
    ({"type": "AdamW", "params": {"lr": -0.1}}, None, False),
    # "auto" is the HF Trainer's to fill: not judged here
    ({"type": "SGD", "params": {"lr": "auto", "nesterov": True, "momentum": "auto"}}, None, False),
])
def test_validate_reports_the_refusal_at_the_parameter(optimizer, path, refused):
    report = core.validate({"train_batch_size": 8, "optimizer": optimizer}, world_size=8, target="hf")
    found = [f for f in report.findings if f.code == "optimizer.torch-raises"]
    assert bool(found) == refused, report.findings
    if refused:
        assert [f.path for f in found] == [path]
        assert found[0].severity == "error" and "raises" in found[0].message and found[0].suggestion


def test_the_torch_class_deepspeed_builds_is_read_once():
    from core.effective import effective

    def cls(opt: dict[str, Any], **zero: Any) -> str | None:
        return effective({"optimizer": opt, "zero_optimization": zero}).torch_optimizer

    assert cls({"type": "SGD"}) == "SGD"
    assert cls({"type": "sgd"}) is None  # not a torch name (case-sensitive), not DeepSpeed's
    assert cls({"type": "Adam", "params": {"torch_adam": True}}) == "AdamW"
    assert cls({"type": "Adam", "params": {"torch_adam": True, "adam_w_mode": False}}) == "Adam"
    assert cls({"type": "AdamW", "params": {"torch_adam": True, "adam_w_mode": False}}) == "AdamW"
    assert cls({"type": "AdamW"}) is None
    assert cls({"type": "Adagrad"}) == "Adagrad"
    assert cls({"type": "Adagrad"}, stage=2, offload_optimizer={"device": "cpu"}) is None


@pytest.mark.parametrize(("scheduler", "path"), [
    ({"type": "OneCycleLR", "params": {"max_lr": 0.1, "total_steps": 100, "pct_start": 1}},
     "scheduler.params.pct_start"),
    ({"type": "OneCycleLR", "params": {"max_lr": 0.1}}, "scheduler.params"),  # neither total_steps nor epochs
    ({"type": "CosineAnnealingWarmRestarts", "params": {"T_0": 10.0}}, "scheduler.params.T_0"),
    ({"type": "StepLR", "params": {"step_size": 10, "last_epoch": 3}}, "scheduler.params.last_epoch"),
    ({"type": "StepLR", "params": {"step_size": 10}}, None),
    ({"type": "LinearLR", "params": {"start_factor": 0.5, "total_iters": 10}}, None),
])
def test_validate_reports_a_torch_schedulers_refusal(scheduler, path):
    config = {"train_batch_size": 8, "optimizer": {"type": "SGD", "params": {"lr": 0.1}}, "scheduler": scheduler}
    found = [f for f in core.validate(config, world_size=8).findings if f.code == "scheduler.torch-raises"]
    assert [f.path for f in found] == ([path] if path else [])
    assert all("\n" not in f.message and f.severity == "error" for f in found)


def _first_steps(cls: str, params: dict[str, Any]) -> str | None:
    """What the real class raises in its first three steps on a small weight (None: it trains), built with torch's
    default implementation; "init" when the constructor already refuses ``params``."""
    torch.manual_seed(1)
    weight = torch.nn.Parameter(torch.randn(4, 2))
    try:
        optimizer = getattr(torch.optim, cls)([weight], **params)
    except Exception:  # a constructor refusal: the other tests' subject
        return "init"

    try:
        for _ in range(3):  # as DeepSpeed's engine steps: backward, then step() without a closure
            optimizer.zero_grad()
            (weight.sum(dim=1) - 1).pow(2).mean().backward()
            optimizer.step()
    except Exception as exc:  # the refusal being compared
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@pytest.mark.parametrize("cls", [c for c in TORCH_OPTIMIZERS if "refused" in core.versions.torch_checks()[
    "classes"][c]["steps"]])
def test_the_step_refusals_are_what_the_real_steps_refuse(cls):
    """Every number parameter set to a bool, to the numbers the bool stands for (1 is not true to torch's tensor
    operations), to other members of each kind ``step_probe`` maps (2 like 1, 2.5 like 0.5, 1e300 like 1e39), one at
    a time: the recorded step refusals name exactly the values the real class, built and stepped three times with
    each of its implementations, raises on (with its exception and message)."""
    numbers = [k for k, d in torch_checks.defaults(cls).items()
               if isinstance(d, int | float) and not isinstance(d, bool)]
    assert numbers
    compared = 0
    for key in numbers:
        for value in (True, False, 0, 1, 0.0, 1.0, 0.5, 2, 3.0, 2.5, 7, -1, 3.5e38, 1e300, -1e300):
            # the claim is for every implementation the class has (a GPU steps with the foreach one): where they
            # disagree (single-tensor ASGD overflows on a huge alpha, foreach trains on) nothing is claimed
            ways = [{"foreach": False}, {"foreach": True}] if "foreach" in torch_checks.defaults(cls) else [{}]
            outcomes = {_first_steps(cls, {key: value, **way}) for way in ways}
            if "init" in outcomes:
                continue
            raised = outcomes.pop() if len(outcomes) == 1 else None
            compared += 1
            found = [f"{r.error}: {r.message}" for r in torch_checks.step_refusals(cls, {key: value})]
            assert found == ([raised] if raised else []), (cls, key, value, raised, found)
    assert compared >= len(numbers)


@pytest.mark.parametrize(("optimizer", "code"), [
    ({"type": "SGD", "params": {"lr": 0.1, "weight_decay": True}}, "optimizer.torch-step-raises"),
    ({"type": "SGD", "params": {"lr": 0.1, "weight_decay": 1}}, None),  # the number trains
    ({"type": "SGD", "params": {"lr": 0.1, "weight_decay": False}}, None),  # no decay: the bool is never used
    # torch_adam: AdamW (adam_w_mode's default) multiplies by 1 - lr * True and trains; Adam's step refuses it
    ({"type": "Adam", "params": {"lr": 0.1, "torch_adam": True, "weight_decay": True}}, "optimizer.param-bool"),
    ({"type": "Adam", "params": {"lr": 0.1, "torch_adam": True, "adam_w_mode": False, "weight_decay": True}},
     "optimizer.torch-step-raises"),
    # kinds of number, not only booleans: a float beyond float32's range, a whole float where LBFGS counts
    ({"type": "SGD", "params": {"lr": 1e300}}, "optimizer.torch-step-raises"),
    ({"type": "SGD", "params": {"lr": 1e30}}, None),
    # under ZeRO the torch class still steps the partitions
    ({"type": "RMSprop", "params": {"lr": 0.1, "weight_decay": True}}, "optimizer.torch-step-raises"),
])
def test_validate_reports_a_value_the_first_step_refuses(optimizer, code):
    config = {"train_batch_size": 8, "optimizer": optimizer, "zero_optimization": {"stage": 1},
              "zero_allow_untested_optimizer": True}
    found = [f for f in core.validate(config, world_size=8).findings if f.path.startswith("optimizer.params")]
    assert [f.code for f in found] == ([code] if code else []), found
    if code == "optimizer.torch-step-raises":
        assert found[0].severity == "error" and "first optimizer step raises" in found[0].message
        assert found[0].fix is not None
        fixed = found[0].fix.apply(config)
        assert not [f for f in core.validate(fixed, world_size=8).findings if f.path.startswith("optimizer.params")]


def test_an_optimizer_whose_step_needs_a_closure_never_steps_under_deepspeed():
    """LBFGS.step(closure) re-evaluates the loss; DeepSpeed's engine calls optimizer.step() (checked with 0.19.8:
    TypeError "missing 1 required positional argument: 'closure'"). Read from the class's signature and one call."""
    assert [c for c in TORCH_OPTIMIZERS if torch_checks.step_without_closure(c)] == ["LBFGS"]
    config = {"train_batch_size": 8, "optimizer": {"type": "LBFGS", "params": {"lr": 0.1, "history_size": 10.0}}}
    found = [f for f in core.validate(config, world_size=8).findings if f.severity == "error"]
    assert [(f.code, f.path) for f in found] == [("optimizer.torch-step-raises", "optimizer.type")]
    assert "missing 1 required positional argument: 'closure'" in found[0].message
    assert "AdamW" in found[0].suggestion



@pytest.mark.parametrize(("entry", "judged"), [
    ("torch.nn.Linear", None),
    ("torch.nn.modules.linear.Linear", None),
    ("torch.nn.modules.linear.Module", None),  # the file imports it: getattr finds it
    ("torch.nn.Lnear", (True, "torch.nn.Linear")),
    ("torch.nn.modules.linear.Conv2d", (True, "torch.nn.Conv2d")),
    ("torch.nn.modules.nonexistent.Linear", (True, "torch.nn.Linear")),
    ("torch.nn.Qwerty", (True, None)),
    ("nn.LayerNorm", (False, "torch.nn.LayerNorm")),
    ("nn.Qwerty", None),  # not a torch.nn name: the user's own nn package, not judged
    ("mypkg.layers.Fancy", None),
    ("transformers.pytorch_utils.Conv1D", None),
])
def test_lower_precision_safe_module_names_are_judged_against_torch(entry, judged):
    found = torch_checks.nn_module_name(entry)
    assert (None if found is None else (found.fails, found.meant)) == judged
    if judged is not None and judged[0]:  # what the pinned torch itself does with the import DeepSpeed makes
        package, _, name = entry.rpartition(".")
        with pytest.raises((ImportError, AttributeError)):
            getattr(importlib.import_module(package), name)
    elif entry.startswith("torch."):
        package, _, name = entry.rpartition(".")
        assert issubclass(getattr(importlib.import_module(package), name), torch.nn.Module)


def test_the_autocast_module_findings_and_their_fix():
    config = {"train_batch_size": 8, "torch_autocast": {
        "enabled": True, "lower_precision_safe_modules": ["torch.nn.Linear", "torch.nn.Lnear", "nn.Embedding"]}}
    found = {f.code: f for f in core.validate(config, world_size=8).findings
             if f.path == "torch_autocast.lower_precision_safe_modules"}
    assert set(found) == {"precision.autocast-module-missing", "precision.autocast-module-nn"}
    assert found["precision.autocast-module-missing"].severity == "error"
    fixed = found["precision.autocast-module-missing"].fix.apply(config)
    fixed = found["precision.autocast-module-nn"].fix.apply(fixed)
    assert fixed["torch_autocast"]["lower_precision_safe_modules"] == ["torch.nn.Linear", "torch.nn.Linear",
                                                                       "torch.nn.Embedding"]
    assert not [f for f in core.validate(fixed, world_size=8).findings if f.path.startswith("torch_autocast")]
    # autocast off: DeepSpeed never imports the names
    off = {**config, "torch_autocast": {**config["torch_autocast"], "enabled": False}}
    assert not [f for f in core.validate(off, world_size=8).findings if f.code.startswith("precision.autocast-module")]
