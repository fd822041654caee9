"""One config, the same numbers on every surface (a hunt of 30 Nov 2026, second session): tables round GiB toward
their verdict as the headline does, step times in the CLI's words, the sidebar's NVMe figure with its capacity,
"1 GPU" not "1 GPUs", and the accelerate note's arithmetic under sequence parallelism."""

from __future__ import annotations

import json

import pytest
from app_support import app, shown_tables
from e2e_support import ROOT

from core import launchers
from core.models import get_config, get_spec

pytestmark = pytest.mark.filterwarnings("ignore")


def model(name: str) -> dict:
    spec = get_spec(name)
    return {"model": name, "model_config": get_config(name), "total_params": spec.total_params,
            "largest_layer_params": spec.largest_layer_params}


LLAMA7 = model("meta-llama/Llama-2-7b-hf")


def _current_row(at, first_column: str) -> dict:
    for table in shown_tables(at):
        if table.columns[0] == first_column:
            return table[table["Current"].astype(str).str.contains("current")].iloc[0].to_dict()
    raise AssertionError(f"no table starting with {first_column}")


def test_the_options_table_and_the_sweep_round_gib_toward_their_verdict_as_the_headline_does():
    # 79.15 < peak < 79.2 GiB on a 79.1 GiB GPU: plain rounding wrote "79.1 … does not fit" beside a headline's 79.2
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3}}
    at = app(config, "pages/zero.py", gpu="NVIDIA H100 80GB", gpu_memory_gib=79.1, seq_len=2572, **LLAMA7)
    headline = next(m.value for m in at.markdown if "Does not fit" in m.value)
    assert "GPU 79.2 of 79.1 GiB" in headline, headline
    option = _current_row(at, "Option")
    assert (str(option["GPU, GiB per GPU"]), option["Fits"]) == ("79.2", "does not fit")
    at.radio(key="zero_sweep_axis").set_value("seq_len").run()
    swept = _current_row(at, "Sequence length (tokens)")
    assert (str(swept["GPU, GiB per GPU"]), swept["Fits"]) == ("79.2", "does not fit")


def test_a_long_step_reads_in_seconds_not_scientific_notation_as_the_cli_writes_it():
    from core.perf.advice import seconds_text

    assert seconds_text(2078.84) == "2078.840 s" and seconds_text(0.0123) == "12.3 ms"
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1024, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3}}
    at = app(config, "pages/zero.py", **LLAMA7)
    step = next(m for m in at.metric if m.label == "Predicted step time")
    assert "e+" not in step.value and step.value.endswith(" s"), step.value


def test_the_sidebar_gives_the_nvme_figure_with_its_capacity_rounded_toward_the_verdict():
    config = json.loads((ROOT / "presets" / "zero-infinity-nvme.json").read_text())["config"]
    at = app(config, "pages/zero.py", nvme_gib=1000.0, **LLAMA7)
    texts = [x.value for x in (*at.sidebar.success, *at.sidebar.error)]
    assert any("NVMe" in t and "of 1000 GiB per node" in t for t in texts), texts


def test_one_gpu_is_written_in_the_singular_on_review_batch_and_zero():
    at = app({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8}, "pages/review.py", gpus_per_node=1,
             **LLAMA7)
    said = " ".join(m.value for m in at.markdown)
    assert "1 GPU)" in said and "1 GPUs" not in said
    at.switch_page("pages/batch.py").run()
    assert any("On 1 data-parallel GPU: 16 = 8 × 2 × 1" in c.value for c in at.caption)
    at.switch_page("pages/zero.py").run()
    assert any(" on 1 GPU;" in c.value for c in at.caption)


def test_the_accelerate_note_divides_by_the_data_parallel_ranks_under_sequence_parallelism():
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2}
    out, notes = launchers.accelerate_export(config, {"world_size": 8}, "0.19.8")
    assert out["gradient_accumulation_steps"] == 8  # 64 / 2 / (8 / 2)
    assert any("4 data-parallel ranks: 8 GPUs / sequence_parallel_size" in n for n in notes), notes
    _, plain = launchers.accelerate_export({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2},
                                           {"world_size": 8}, "0.19.8")
    assert any("(train_batch_size / micro batch / GPUs)" in n for n in plain), plain


def test_trainer_batch_values_the_written_batch_refuses_are_the_headlines_problem_under_the_hf_trainer():
    # per_device_train_batch_size 8 (the Batch page's default) cannot give the written 256 on 8 GPUs: the Batch
    # page said the Trainer refuses it, while the headline said "no errors or warnings" and nothing to fix
    config = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 3}}
    at = app(config, "pages/zero.py", target="hf", **LLAMA7)
    most = next(m.value for m in at.markdown if m.value.startswith("**Most important:**"))
    assert "per_device_train_batch_size 8" in most and "the HF Trainer refuses this at launch" in most, most
    assert any("the HF Trainer refuses this at launch" in e.value for e in at.sidebar.error)
    at.session_state["context"]["hf_micro_batch"] = 32  # 32 × 1 × 8 = 256: the Trainer runs it
    at.run()
    assert not any("refuses this at launch" in m.value for m in at.markdown)
    at.session_state["context"]["target"] = "deepspeed"  # plain DeepSpeed: the validator's own errors say it
    at.session_state["context"]["hf_micro_batch"] = 8
    at.run()
    assert not any("refuses this at launch" in e.value for e in at.sidebar.error)


def test_the_plan_page_starts_at_the_configs_precision():
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}}  # fp32: no precision section
    at = app(config, "pages/plan.py", **LLAMA7)
    assert next(s.value for s in at.selectbox if s.label == "Precision") == "fp32"
    at = app({**config, "bf16": {"enabled": True}}, "pages/plan.py", gpu="NVIDIA V100 32GB", gpu_memory_gib=31.74,
             **LLAMA7)
    assert next(s.value for s in at.selectbox if s.label == "Precision") == "fp16"  # the V100 has no bf16
    at = app(None, "pages/plan.py", **LLAMA7)  # a blank config's fp32 is no choice: the GPU's 16-bit format
    assert next(s.value for s in at.selectbox if s.label == "Precision") == "bf16"


def test_the_zero_page_says_when_a_fitting_config_is_above_the_plan_pages_margin():
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3}}
    at = app(config, "pages/zero.py", seq_len=2560, **LLAMA7)  # 78.8 of 79.15 GiB: fits, above 95%
    assert any(w.value.startswith("Fits, with a peak of 78.8 GiB") and "the Plan page would mark it as not fitting"
               in w.value for w in at.warning), [w.value for w in at.warning]
    at = app(config, "pages/zero.py", seq_len=1024, **LLAMA7)
    assert not any("Plan page would mark" in w.value for w in at.warning)


def test_the_plan_sweep_names_the_sizes_it_left_out_and_the_memory_floor():
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}}, "zero_optimization": {"stage": 3}}
    at = app(config, "pages/plan.py", seq_len=4096, **model("meta-llama/Llama-2-70b-hf"))  # global batch 8
    caption = next(c.value for c in at.caption if "in the sweep fits" in c.value)
    assert "Left out: 16, 32, 64, 128, 256 GPUs, which do not divide the global batch of 8" in caption, caption
    assert "The memory floor" in caption and "is 16 GPUs" in caption
