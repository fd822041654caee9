"""The LR curve and the scheduler widgets use the selected release's own parameter defaults: WarmupLR's warmup_max_lr
is 0.001 in DeepSpeed 0.16.x and the optimizer's lr from 0.17 (the app drew 0.16.9's warm-up peaking at the lr,
10x below what 0.16.9 trains with)."""

from __future__ import annotations

import json

import pytest
from app_support import app

from core.lr_schedules import config_schedule_curve
from tests.oracle.oracle import run_under_release

CONFIG = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}

_REAL = """
import json, sys, torch
from deepspeed.runtime.lr_schedules import WarmupLR
opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-4)
sched = WarmupLR(opt, warmup_num_steps=10)
lrs = []
for _ in range(30):
    lrs.append(opt.param_groups[0]["lr"]); opt.step(); sched.step()
print(json.dumps(lrs))
"""


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
def test_the_warmup_curve_is_the_releases_own(version):
    real = json.loads(run_under_release(version, _REAL))
    ours = config_schedule_curve(CONFIG, 30, version)["lr"].tolist()
    assert ours == pytest.approx(real, rel=1e-9)
    assert max(real) == pytest.approx(0.001 if version == "0.16.9" else 1e-4)


def test_the_optimizer_page_shows_0_16_9s_warmup_max_lr_default():
    at = app(CONFIG, "pages/optimizer.py", version="0.16.9")
    widget = next(w for w in at.number_input if w.key == "cfg:scheduler.params.warmup_max_lr")
    assert "Default: `0.001`" in widget.help
    newest = app(CONFIG, "pages/optimizer.py", version="0.19.8")
    assert "Default: `0.001`" not in next(w for w in newest.number_input
                                          if w.key == "cfg:scheduler.params.warmup_max_lr").help
