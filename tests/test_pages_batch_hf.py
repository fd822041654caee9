"""AppTest: the Batch page for the HF target shows the batch the HF Trainer and accelerate hand to DeepSpeed
(accelerate writes a missing gradient_accumulation_steps as 1), as the real transformers and DeepSpeed do."""

from __future__ import annotations

from app_support import app, html_tables

from tests.test_export import _trainer_accepts
from ui.widgets import CONTEXT_PREFIX, widget_key

ZERO = {"zero_optimization": {"stage": 0}}


def _runs(config: dict, per_device: int, accum: int, world_size: int) -> bool:
    """Whether the real Trainer takes the config with these arguments and DeepSpeed then accepts its batch."""
    from tests.oracle.oracle import deepspeed_verdict

    try:
        given = _trainer_accepts(config, {"per_device_train_batch_size": per_device,
                                          "gradient_accumulation_steps": accum}, world_size=world_size)
    except ValueError:
        return False
    return deepspeed_verdict(given, world_size=world_size).accepted


def test_an_auto_micro_batch_beside_a_written_batch_uses_accelerates_accumulation():
    """train_batch_size 256, "auto" micro batch, no accumulation, per-device 4 and accumulation 64 on the page: it
    showed "256 = 4 × 64 × 1, accumulation derived by DeepSpeed" with the accumulation input disabled; the real
    launch writes accumulation 1 and refuses it. Only a per-device batch of 256 (accumulation 1) trains."""
    config = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": "auto", **ZERO}
    assert not _runs(config, 4, 64, 1) and _runs(config, 256, 1, 1)
    at = app(config, page="pages/batch.py", target="hf", hf_micro_batch=4, hf_grad_accum=64, nodes=1,
             gpus_per_node=1)
    assert at.number_input(key=CONTEXT_PREFIX + "hf_grad_accum").disabled
    assert not at.number_input(key=CONTEXT_PREFIX + "hf_micro_batch").disabled
    error = next(e.value for e in at.error if "does not resolve" in e.value)
    assert "per_device_train_batch_size 4 and gradient_accumulation_steps 1 (what accelerate writes" in error
    assert not html_tables(at)
    at = app(config, page="pages/batch.py", target="hf", hf_micro_batch=256, hf_grad_accum=64, nodes=1,
             gpus_per_node=1)
    (table,) = html_tables(at)
    rows = table.set_index("Setting")
    assert list(rows["Value"]) == ["256", "256", "1"]
    assert rows.loc["gradient_accumulation_steps", "Source"].startswith("written as 1 by accelerate")
    assert not any("does not resolve" in e.value for e in at.error)


def test_an_auto_global_batch_alone_is_the_trainers_per_device_batch_on_every_gpu():
    """{"train_batch_size": "auto"}: the page said the HF Trainer refuses it; the Trainer computes 2 GPUs × 4 and
    DeepSpeed derives the micro batch 4 from it."""
    config = {"train_batch_size": "auto", **ZERO}
    assert _runs(config, 4, 1, 2)
    at = app(config, page="pages/batch.py", target="hf", hf_micro_batch=4, hf_grad_accum=3, nodes=1,
             gpus_per_node=2)
    (table,) = html_tables(at)
    assert list(table.set_index("Setting")["Value"]) == ["8", "4", "1"]
    assert not any("does not resolve" in e.value for e in at.error)
    assert at.number_input(key=CONTEXT_PREFIX + "hf_grad_accum").disabled


def test_a_written_batch_without_accumulation_says_accelerate_writes_it():
    """No "auto": the table said the accumulation 1 was derived by DeepSpeed; accelerate writes it."""
    config = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, **ZERO}
    at = app(config, page="pages/batch.py", target="hf", nodes=1, gpus_per_node=2)
    (table,) = html_tables(at)
    assert table.set_index("Setting").loc["gradient_accumulation_steps", "Source"].startswith("written as 1")
    assert at.number_input(key=widget_key("gradient_accumulation_steps")).proto.placeholder == \
        "not set — DeepSpeed derives 1"


def test_the_hf_export_passes_the_per_device_batch_the_page_used_for_an_auto_global_batch():
    """{"train_batch_size": "auto"} with per-device 4 on the Batch page: the HF snippet passed no
    per_device_train_batch_size, so the Trainer used its default 8 (a batch of 16 on 2 GPUs, not the page's 8)."""
    config = {"train_batch_size": "auto", **ZERO}
    at = app(config, page="pages/review.py", target="hf", hf_micro_batch=4, hf_grad_accum=3, nodes=1,
             gpus_per_node=2)
    snippet = next(c.value for c in at.code if "TrainingArguments(" in c.value)
    assert "per_device_train_batch_size=4," in snippet and "gradient_accumulation_steps" not in snippet


def test_an_auto_train_batch_size_alone_is_sized_at_the_trainers_per_device_batch():
    """{"train_batch_size": "auto"} with per-device 4: the Batch page and the HF export used 4 while the memory
    figures said "micro batch 1 assumed: the config's micro batch is not set"."""
    from test_app_answers import headline, model_context

    at = app({"train_batch_size": "auto", "zero_optimization": {"stage": 2}}, page="pages/batch.py", target="hf",
             nodes=1, gpus_per_node=2, hf_micro_batch=4, **model_context("meta-llama/Llama-3.2-1B"))
    said = [line for line in headline(at).splitlines() if "micro batch" in line]
    assert any("micro batch 4 assumed" in line and "per_device_train_batch_size" in line for line in said), said
    assert not any("micro batch 1" in line for line in said)


def test_the_review_resolver_takes_only_what_the_config_leaves_to_the_trainer():
    """An accumulation of 3 kept from an earlier config, which this one (no accumulation key) does not leave to the
    Trainer: the Batch page and the launch files used 1 (8 = 4 x 1 x 2), the Review page's resolved file 24. Its
    "auto" precision is also resolved on, as the launch files assume."""
    at = app({"train_batch_size": "auto", "zero_optimization": {"stage": 2}}, page="pages/batch.py", target="hf",
             nodes=1, gpus_per_node=2, hf_micro_batch=4, hf_grad_accum=3)
    at.switch_page("pages/review.py").run()
    inputs = {n.key: n.value for n in at.number_input}
    assert inputs.get("review_auto_gradient_accumulation_steps") in (None, 1)
    assert inputs["review_auto_per_device_train_batch_size"] == 4
    assert not [c.value for c in at.code if '"train_batch_size": 24' in c.value]
    assert [c.value for c in at.code if '"train_batch_size": 8' in c.value]
    at = app({"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto",
              "zero_optimization": {"stage": 2}}, page="pages/review.py", target="hf", nodes=1, gpus_per_node=2)
    boxes = {c.key: c.value for c in at.checkbox}
    assert boxes.get("review_auto_fp16") is True and boxes.get("review_auto_bf16") is False
