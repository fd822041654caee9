"""The CPU RAM peak of model construction says what it assumes (a read-only hunt of 30 Nov 2026).

Below ZeRO-3 every rank builds the whole model before ``deepspeed.initialize``; the memory model counts it in fp32
(4 bytes per parameter per rank, DeepSpeed's own ZeRO-2 estimator's count). When that load, not training, sets the
CPU peak, a verdict of "does not fit (CPU RAM)" rests on it, and transformers 5 loads a bf16 checkpoint in bf16
(``from_pretrained``'s ``dtype="auto"``), half of it: the estimate says both.
"""

from __future__ import annotations

import io
import json

import pytest

from core import memory as m
from core.cli import main

LLAMA3_8B = m.ModelCounts(8_030_261_248, 525_336_576)
ZERO2_BF16 = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}


def _estimate(config, gpus=8):
    return m.estimate(config, LLAMA3_8B, m.Hardware(gpus_per_node=gpus), m.Shape(seq_len=1024))


def test_the_model_load_peak_states_its_fp32_assumption_and_the_16bit_figure():
    est = _estimate(ZERO2_BF16)
    assert est.cpu_peak_is_model_load
    (note,) = [n for n in est.notes if n.startswith("CPU RAM peaks while the model is built")]
    assert f"{4 * LLAMA3_8B.total_params * 8 / 2**30:.1f} GiB per node" in note
    assert f"{2 * LLAMA3_8B.total_params * 8 / 2**30:.1f} GiB" in note


def test_no_load_note_where_zero_init_builds_partitions_or_training_sets_the_peak():
    assert not any("while the model is built" in n for n in _estimate({**ZERO2_BF16, "zero_optimization": {
        "stage": 3}}).notes)
    offloaded = _estimate({**ZERO2_BF16, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
                          gpus=2)
    assert not offloaded.cpu_peak_is_model_load
    assert not any("while the model is built" in n for n in offloaded.notes)


def test_fp32_training_gets_no_16bit_alternative():
    est = _estimate({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})
    (note,) = [n for n in est.notes if "while the model is built" in n]
    assert "16-bit" not in note


def test_fit_prints_the_note_beside_a_cpu_ram_verdict(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(ZERO2_BF16))
    out = io.StringIO()
    main(["fit", str(path), "--model", "meta-llama/Meta-Llama-3-8B", "--gpus", "8", "--cpu-ram", "256",
          "--seq-len", "1024"], out=out)
    text = out.getvalue()
    assert "DOES NOT FIT (CPU RAM)" in text and "note: CPU RAM peaks while the model is built" in text


@pytest.mark.slow
def test_transformers_loads_a_bf16_checkpoint_in_bf16(tmp_path):
    """The 16-bit figure's premise, asked of transformers itself: a bf16 checkpoint comes back bf16 by default."""
    import torch
    import transformers

    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2)
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(tmp_path)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert {p.dtype for p in loaded.parameters()} == {torch.bfloat16}
