"""Muon's curve is its Muon group's: the engine gives the 2-D weight matrices ``muon_lr``, else ``lr``, else Muon's
0.02 (the curve read only ``lr``: {"lr": 0.01, "muon_lr": 0.02} peaked at 0.01 where 0.19.8 trains them at 0.02,
and without ``lr`` there was no curve at all though DeepSpeed trains with the defaults)."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import app, texts

from core.lr_schedules import config_schedule_curve

COSINE = {"type": "WarmupCosineLR", "params": {"total_num_steps": 20, "warmup_num_steps": 5}}
WARMUP = {"type": "WarmupLR", "params": {"warmup_num_steps": 4}}
PARAMS = [{"lr": 0.01, "muon_lr": 0.02}, {}, {"muon_lr": 0.05, "adam_lr": 3e-4}, {"lr": 0.03}]


def _real_muon_group(params: dict[str, Any], scheduler: dict[str, Any], steps: int) -> list[float]:
    """The Muon group's lr per step: DeepSpeed's own grouping (``DeepSpeedEngine._muon_param_groups``), its
    MuonWithAuxAdam and its scheduler, as ``deepspeed.initialize`` builds them (without the distributed engine)."""
    torch = pytest.importorskip("torch")
    engine = pytest.importorskip("deepspeed.runtime.engine")
    from deepspeed.runtime import lr_schedules
    from deepspeed.runtime.zero.muon.original_muon import MuonWithAuxAdam

    layer = torch.nn.Linear(4, 4)
    layer.weight.use_muon, layer.bias.use_muon = True, False
    opt = MuonWithAuxAdam(engine.DeepSpeedEngine._muon_param_groups(list(layer.parameters()), dict(params)))
    sched = getattr(lr_schedules, scheduler["type"])(opt, **scheduler["params"])
    muon = next(g for g in opt.param_groups if g["use_muon"])
    lrs = []
    for _ in range(steps):
        lrs.append(float(muon["lr"]))
        sched.step()
    return lrs


@pytest.mark.deepspeed
@pytest.mark.parametrize("scheduler", [COSINE, WARMUP], ids=["cosine", "warmup"])
@pytest.mark.parametrize("params", PARAMS, ids=["lr-and-muon_lr", "defaults", "muon_lr-adam_lr", "lr"])
def test_the_curve_is_the_muon_groups(params: dict[str, Any], scheduler: dict[str, Any]) -> None:
    config = {"optimizer": {"type": "Muon", "params": params}, "scheduler": scheduler}
    ours = config_schedule_curve(config, 10, "0.19.8")
    assert ours["lr"].tolist() == pytest.approx(_real_muon_group(params, scheduler, 10), rel=1e-12)
    assert "Muon's group of 2-D weight matrices" in ours.attrs["assumed"][0]


def test_the_caption_names_the_group_and_the_defaults() -> None:
    assumed = config_schedule_curve({"optimizer": {"type": "Muon", "params": {}}, "scheduler": COSINE}, 10,
                                    "0.19.8").attrs["assumed"]
    assert assumed == ["the curve is the learning rate of Muon's group of 2-D weight matrices (Muon's default "
                       "0.02); the Adam group of the other parameters has its own (Muon's default 0.0003)"]


def test_the_page_draws_muon_without_an_lr() -> None:
    at = app({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Muon", "params": {"adam_lr": 3e-4}},
              "scheduler": COSINE}, "pages/optimizer.py")
    assert not [e.value for e in at.error if "No curve" in e.value]
    assert any("Muon's group of 2-D weight matrices" in c for c in texts(at.caption))
