"""Scheduler values at the edges and fixes that must not make a config worse (a hunt of 30 Nov 2026, second
session): a null ``warmup_max_lr`` is the optimizer's lr from 0.17.2 and refused before, in WarmupLR and in
WarmupDecayLR alike; a negative scheduler lr is a warning (DeepSpeed trains uphill with it); an fp16 key written
in a bf16 section is removed rather than moved into an fp16 section that is off; and ``dsconfig fix`` withholds a
fix of a warning whose result DeepSpeed refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.autofix import fix_until_stable
from core.validate import validate
from tests.oracle.oracle import run_under_release

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SGD = {"type": "SGD", "params": {"lr": 0.01}}


def _config(scheduler: str, **params) -> dict:
    if scheduler == "WarmupDecayLR":
        params.setdefault("total_num_steps", 100)
    return {"train_micro_batch_size_per_gpu": 1, "optimizer": SGD,
            "scheduler": {"type": scheduler, "params": {"warmup_num_steps": 10, **params}}}


def _codes(config: dict, version: str) -> dict[str, str]:
    return {f.path: f.code for f in validate(config, version=version).findings}


#: Builds the scheduler with the parameters given as JSON on the command line and steps it three times.
_BUILD = """
import json, sys, torch
from deepspeed.runtime import lr_schedules
name, params = sys.argv[1], json.loads(sys.argv[2])
opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.01)
try:
    scheduler = getattr(lr_schedules, name)(opt, **params)
except Exception as exc:
    print(json.dumps({"raises": type(exc).__name__}))
else:
    for _ in range(3):
        opt.step(); scheduler.step()
    print(json.dumps({"lr": scheduler.get_last_lr()[0]}))
"""


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
@pytest.mark.parametrize("scheduler", ["WarmupLR", "WarmupDecayLR"])
def test_a_null_peak_is_refused_exactly_where_the_release_raises(version, scheduler):
    config = _config(scheduler, warmup_max_lr=None)
    params = config["scheduler"]["params"]
    real = json.loads(run_under_release(version, _BUILD, scheduler, json.dumps(params)))
    found = _codes(config, version).get("scheduler.params.warmup_max_lr")
    if "raises" in real:
        assert found == "scheduler.param-type", (real, found)
    else:
        assert found is None, (real, found)
        assert 0 < real["lr"] <= 0.01  # warming up towards the optimizer's lr


def test_a_null_peak_follows_the_profiles_cut_at_0_17_2():
    for scheduler in ("WarmupLR", "WarmupDecayLR"):
        config = _config(scheduler, warmup_max_lr=None)
        assert "scheduler.params.warmup_max_lr" in _codes(config, "0.17.1")
        assert "scheduler.params.warmup_max_lr" not in _codes(config, "0.17.2")


@pytest.mark.deepspeed
def test_a_negative_scheduler_lr_is_a_warning_and_deepspeed_trains_uphill_with_it():
    params = {"warmup_num_steps": 10, "warmup_min_lr": -0.01, "warmup_max_lr": -0.001}
    real = json.loads(run_under_release("0.19.8", _BUILD, "WarmupLR", json.dumps(params)))
    assert real["lr"] < 0
    findings = {f.path: f for f in validate(_config("WarmupLR", **{k: v for k, v in params.items()})).findings}
    for key in ("warmup_min_lr", "warmup_max_lr"):
        finding = findings[f"scheduler.params.{key}"]
        assert (finding.severity, finding.code) == ("warning", "type.unchecked")
        assert "gradient ascent" in finding.message


@pytest.mark.parametrize(("scheduler", "params"), [
    ("WarmupDecayLR", {"warmup_min_lr": -1e-5}),
    ("OneCycle", {"cycle_min_lr": -1.0, "cycle_max_lr": 0.1}),
    ("LRRangeTest", {"lr_range_test_min_lr": [-0.1]}),
    ("WarmupCosineLR", {"total_num_steps": 100, "warmup_min_ratio": -1}),
])
def test_every_scheduler_lr_below_zero_is_named(scheduler, params):
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": SGD, "scheduler": {"type": scheduler, "params":
              {"total_num_steps": 100, **params} if scheduler == "WarmupDecayLR" else params}}
    codes = _codes(config, "0.19.8")
    negative = [key for key, value in params.items() if (value[0] if isinstance(value, list) else value) < 0]
    for key in negative:
        assert codes.get(f"scheduler.params.{key}") == "type.unchecked", codes
    for key in negative:  # the same value at zero: nothing to say
        zero = json.loads(json.dumps(config))
        zero["scheduler"]["params"][key] = [0.0] if isinstance(params[key], list) else 0
        assert f"scheduler.params.{key}" not in _codes(zero, "0.19.8")


def test_fp16_keys_in_a_bf16_section_are_removed_not_moved_into_an_fp16_that_is_off():
    path = CORPUS / "microsoft__DeepSpeedExamples" / "training__cifar__ds_config.json"
    from core import load_config

    config = load_config(path.read_text())
    finding = next(f for f in validate(config, world_size=8).findings if f.path == "bf16.loss_scale")
    assert [op.op for op in finding.fix.ops] == ["delete"] and "fp16 is off" in finding.suggestion
    fixed = fix_until_stable(config, unsafe=True, world_size=8)
    assert "fp16" not in fixed.config and fixed.report.ok and not fixed.report.warnings
    # with fp16 on the key still belongs there and moves
    on = {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True}, "bf16": {"loss_scale_window": 500}}
    moved = next(f for f in validate(on).findings if f.path == "bf16.loss_scale_window")
    assert [(op.op, op.to) for op in moved.fix.ops] == [("move", "fp16.loss_scale_window")]


@pytest.mark.parametrize(("config", "withheld", "error"), [
    ({"train_micro_batch_size_per_gpu": 1, "optimizer": {"params": {"lr": "auto"}}},
     "optimizer.no-type", "auto.kept-optimizer"),
    # (a random-LTD min_value of {"value": 32} was the second case: a warning whose removal made random-ltd-keys; it
    # is an error now, the scheduler computing with it at the first forward pass: tests/test_random_ltd_hunt_1201.py)
])
def test_a_fix_of_a_warning_that_would_add_an_error_is_withheld(config, withheld, error):
    assert validate(config).ok
    result = fix_until_stable(config, unsafe=True)
    assert result.report.ok and result.config == config
    assert [(f.code, codes) for f, codes in result.withheld] == [(withheld, (error,))]
    # the fix itself does make the error: the guard is what holds it back
    finding = next(f for f in validate(config).findings if f.code == withheld)
    assert error in {f.code for f in validate(finding.fix.apply(config)).errors}


def test_the_cli_says_why_a_withheld_fix_was_not_applied(tmp_path, capsys):
    from core.cli import main

    source = tmp_path / "c.json"
    source.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "optimizer": {"params": {"lr": "auto"}}}))
    assert main(["fix", "--unsafe", str(source), "-o", str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    assert "not applied (it would add the error auto.kept-optimizer): optimizer.no-type" in err, err


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
def test_a_one_cycle_step_size_written_as_text_trains_as_its_number_and_the_fix_writes_that_number(version):
    from core.lr_schedules import config_schedule_curve

    params = {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": "100",
              "cycle_second_step_size": " 50"}
    real = json.loads(run_under_release(version, _BUILD, "OneCycle", json.dumps(params)))
    numbers = {**params, "cycle_first_step_size": 100, "cycle_second_step_size": 50}
    as_numbers = json.loads(run_under_release(version, _BUILD, "OneCycle", json.dumps(numbers)))
    assert real == as_numbers  # DeepSpeed float()s them first
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": SGD,
              "scheduler": {"type": "OneCycle", "params": params}}
    report = validate(config, version=version)
    assert report.ok and {f.code for f in report.warnings} == {"scheduler.param-text"}
    fixed = fix_until_stable(config, version=version)  # safe: DeepSpeed reads the number the same way
    assert fixed.config["scheduler"]["params"] == numbers and not fixed.report.findings
    curve = config_schedule_curve(config, 5, version=version)
    assert curve["lr"].tolist() == config_schedule_curve(fixed.config, 5, version=version)["lr"].tolist()
