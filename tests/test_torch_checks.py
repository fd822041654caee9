"""The torch.optim constructor checks (``core/versions/torch_checks.json``, ``core.rules.torch_checks``) against the
installed torch: the file is what ``scripts/gen_torch_checks.py`` reads from torch's code today, and on a grid of
values per class the recorded checks refuse exactly what the real constructor refuses, with its exception and
message."""

from __future__ import annotations

import itertools
import json
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


def _grid(cls: str) -> list[dict[str, Any]]:
    """One parameter changed at a time, and every pair of switches and numbers of the class together."""
    defaults = torch_checks.defaults(cls)
    grid: list[dict[str, Any]] = [{}]
    grid += [{key: value} for key, default in defaults.items() for value in _tries(default)]
    small = [k for k, d in defaults.items() if isinstance(d, bool | int | float) or d is None]
    for a, b in itertools.combinations(small, 2):
        grid += [{a: x, b: y} for x in (True, 0.9, 0) for y in (True, 0.1, 0)]
    return grid


def _construct(cls: str, params: dict[str, Any]) -> BaseException | None:
    weight = torch.nn.Parameter(torch.zeros(2, 2))
    try:
        getattr(torch.optim, cls)([weight], **params)
    except Exception as exc:  # any refusal counts; its type is compared by the caller
        return exc
    return None


def test_the_recorded_checks_are_the_installed_torchs():
    recorded = json.loads((ROOT / "core" / "versions" / "torch_checks.json").read_text())
    assert recorded == json.loads(gen_torch_checks.render(gen_torch_checks.extract()))
    assert recorded["torch"] == torch.__version__.split("+")[0]


@pytest.mark.parametrize("cls", TORCH_OPTIMIZERS)
def test_the_checks_refuse_what_the_constructor_refuses(cls):
    wrong = []
    for params in _grid(cls):
        raised = _construct(cls, params)
        found = list(torch_checks.refusals(cls, params))
        if raised is None and found:
            wrong.append((params, "torch accepts, the checks refuse", found[0]))
        elif raised is not None and not found:
            wrong.append((params, "torch refuses, the checks accept", repr(raised)))
        elif raised is not None and (type(raised).__name__, str(raised)) != (found[0].error, found[0].message):
            wrong.append((params, "a different refusal", repr(raised), found[0]))
    assert not wrong, wrong[:10]
    assert len(_grid(cls)) > 10


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
