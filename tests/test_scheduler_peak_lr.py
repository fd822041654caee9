"""A scheduler chosen on the Optimizer page peaks at the optimizer's lr: switch_scheduler wrote WarmupDecayLR without
warmup_max_lr, whose default is 0.001 in every release, and DeepSpeed's scheduler writes that peak into the optimizer,
so an AdamW at lr 2e-5 trained at 1e-3 (50x). WarmupLR had the same 0.001 up to 0.17.1 (the optimizer's lr from
0.17.2), and OneCycle came with no params at all (TypeError: its cycle_min_lr and cycle_max_lr are required)."""

from __future__ import annotations

import json

import pytest
from app_support import app

from core.autofill import switch_scheduler
from tests.oracle.oracle import run_under_release

LR = 2e-5
BASE = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": LR}}}


@pytest.mark.parametrize("version", ["0.16.9", "0.17.6", "0.19.8"])
def test_warmup_decay_peaks_at_the_optimizers_lr_in_every_release(version):
    params = switch_scheduler(BASE, "WarmupDecayLR", 10000, version=version)["scheduler"]["params"]
    assert params == {"total_num_steps": 10000, "warmup_max_lr": LR}


@pytest.mark.parametrize(("version", "filled"), [("0.16.9", True), ("0.17.1", True), ("0.17.2", False),
                                                 ("0.19.8", False)])
def test_warmup_lr_gets_the_lr_only_where_its_default_is_0_001(version, filled):
    """From 0.17.2 WarmupLR's unset warmup_max_lr is the optimizer's lr already: nothing to write."""
    params = switch_scheduler(BASE, "WarmupLR", 10000, version=version)["scheduler"]["params"]
    assert params == ({"warmup_max_lr": LR} if filled else {})


def test_the_newest_release_is_the_default():
    assert switch_scheduler(BASE, "WarmupLR", 10000)["scheduler"]["params"] == {}
    assert switch_scheduler(BASE, "WarmupDecayLR", 10000)["scheduler"]["params"]["warmup_max_lr"] == LR


def test_one_cycle_gets_its_max_lr_and_leaves_the_min_to_the_user():
    """DeepSpeed documents no cycle_min_lr / cycle_max_lr ratio (its examples use 10x, 2.5x and 30x), so the
    required cycle_min_lr stays unset and the validator names it."""
    from core.validate import validate

    out = switch_scheduler(BASE, "OneCycle", 10000, version="0.19.8")
    assert out["scheduler"]["params"] == {"cycle_max_lr": LR}
    assert {(f.code, f.path) for f in validate(out, world_size=1).findings if f.severity == "error"} == {
        ("scheduler.missing-param", "scheduler.params.cycle_min_lr")}


def test_no_peak_is_written_for_schedulers_without_one():
    assert switch_scheduler(BASE, "WarmupCosineLR", 100)["scheduler"]["params"] == {"total_num_steps": 100}
    assert switch_scheduler(BASE, "LRRangeTest", 100, version="0.16.9")["scheduler"]["params"] == {}


def test_written_and_remembered_peaks_are_kept():
    written = {**BASE, "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 3e-4}}}
    assert switch_scheduler(written, "WarmupDecayLR", 100, version="0.16.9")["scheduler"]["params"] == {
        "warmup_max_lr": 3e-4, "total_num_steps": 100}
    nulled = {**BASE, "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": None}}}
    assert switch_scheduler(nulled, "WarmupDecayLR", 100)["scheduler"]["params"]["warmup_max_lr"] is None
    remembered = {"cycle_min_lr": 1e-6, "cycle_max_lr": 1e-3}
    assert switch_scheduler(BASE, "OneCycle", 100, remembered)["scheduler"]["params"] == remembered


@pytest.mark.parametrize("lr", ["auto", [1e-4, 2e-4], None, True, float("nan")])
def test_no_numeric_lr_no_peak(lr):
    config = {"optimizer": {"type": "AdamW", "params": {} if lr is None else {"lr": lr}}}
    assert "warmup_max_lr" not in switch_scheduler(config, "WarmupDecayLR", 100)["scheduler"]["params"]
    assert switch_scheduler({}, "WarmupDecayLR", 100)["scheduler"]["params"] == {"total_num_steps": 100}


def test_the_hf_target_still_leaves_the_peak_to_the_trainer():
    params = switch_scheduler(BASE, "WarmupDecayLR", 100, target="hf", version="0.16.9")["scheduler"]["params"]
    assert params["warmup_max_lr"] == "auto"
    assert switch_scheduler(BASE, "OneCycle", 100, target="hf")["scheduler"]["params"] == {}


_REAL = """
import json, sys, torch
from deepspeed.runtime import lr_schedules
lr, runs = json.loads(sys.argv[1])
peaks = {}
for kind, params, steps in runs:
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    sched = getattr(lr_schedules, kind)(opt, **params)
    seen = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step(); sched.step(); seen.append(opt.param_groups[0]["lr"])
    peaks[kind] = max(seen)
print(json.dumps(peaks))
"""


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
def test_the_real_scheduler_built_from_the_switch_peaks_at_the_optimizers_lr(version):
    runs = []
    for kind, written in (("WarmupDecayLR", {"warmup_num_steps": 10}), ("WarmupLR", {"warmup_num_steps": 10}),
                          ("OneCycle", {"cycle_min_lr": LR / 4, "cycle_first_step_size": 10})):
        # as the page leaves it once the user has written the steps (and OneCycle's minimum, which is theirs)
        config = {**BASE, "scheduler": {"type": kind, "params": written}}
        params = switch_scheduler(config, kind, 100, version=version)["scheduler"]["params"]
        runs.append((kind, params, 40))
    peaks = json.loads(run_under_release(version, _REAL, json.dumps([LR, runs])))
    assert peaks == pytest.approx({"WarmupDecayLR": LR, "WarmupLR": LR, "OneCycle": LR}, rel=1e-9)


@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
def test_choosing_warmup_decay_on_the_optimizer_page_writes_the_optimizers_lr(version):
    at = app(dict(BASE), "pages/optimizer.py", version=version)
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupDecayLR").run()
    assert not at.exception, at.exception
    params = at.session_state["config"]["scheduler"]["params"]
    assert params["warmup_max_lr"] == LR


def test_choosing_warmup_lr_on_the_page_follows_the_chosen_release():
    at = app(dict(BASE), "pages/optimizer.py", version="0.16.9")
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupLR").run()
    assert at.session_state["config"]["scheduler"]["params"] == {"warmup_max_lr": LR}
    newest = app(dict(BASE), "pages/optimizer.py", version="0.19.8")
    newest.selectbox(key="cfg:scheduler.type").set_value("WarmupLR").run()
    assert newest.session_state["config"]["scheduler"]["params"] == {}
