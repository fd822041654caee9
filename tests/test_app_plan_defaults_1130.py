"""The Plan page starts from the user's config and Start page (a browser hunt of 30 Nov 2026): it offered a global
batch of 256 and flash attention while the config's train_batch_size was 128 and the Start page said sdpa, so
"Use this config" silently doubled the batch; the message now names a global-batch change."""

from __future__ import annotations

from app_support import app

from core.batch import batch_run
from core.launchers import job_world_size
from core.models import get_spec

PAGE = "pages/plan.py"
L7 = "meta-llama/Llama-2-7b-hf"
MODEL = dict(model=L7, total_params=get_spec(L7).total_params,
             largest_layer_params=get_spec(L7).largest_layer_params)
CONFIG = {"train_batch_size": 128, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
          "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}


def test_the_plan_starts_from_the_configs_global_batch_and_the_start_pages_attention():
    at = app(dict(CONFIG), PAGE, attention="sdpa", **MODEL)
    assert at.number_input(key="plan_batch").value == 128
    assert at.selectbox(key="plan_attention").value == "sdpa"
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    ctx = at.session_state["context"]
    run = batch_run(at.session_state["config"], job_world_size(ctx), ctx["version"])
    assert run is not None and run[0] == 128, run
    message = next(s.value for s in at.success if "Loaded rank" in s.value)
    assert "global batch" not in message, message  # unchanged: not said


def test_a_global_batch_changed_on_the_plan_is_said_when_its_row_is_used():
    at = app(dict(CONFIG), PAGE, attention="sdpa", **MODEL)
    at.number_input(key="plan_batch").set_value(256).run()
    at.button(key="plan_use").click().run()
    message = next(s.value for s in at.success if "Loaded rank" in s.value)
    assert "global batch 128 → 256 sequences per step" in message, message


def test_a_batch_that_does_not_resolve_starts_from_256():
    at = app({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}, PAGE, target="hf",
             **MODEL)
    assert at.number_input(key="plan_batch").value == 256
