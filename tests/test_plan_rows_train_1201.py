"""Configs the planner produces, judged by the validator and by the real DeepSpeed (a read-only hunt of 1 Dec 2026,
which checked ~100,000 produced configs; these were its failures).

- A Muon optimizer (the user's, through ``base``, or the caller's ``optimizer``) made every ZeRO-3 row one that
  DeepSpeed 0.19.8 refuses: ``reduce_scatter`` defaults to true and "Muon and reduce scatter cannot be used
  together". A row now writes the switch its candidate needs (``needed_switches``) and says so.
- ``recommend(optimizer=...)`` with an optimizer ZeRO was not tested with (SGD, Lamb, Muon) left out
  ``zero_allow_untested_optimizer``, which ``base`` adoption writes: every ZeRO row was refused.
"""

from __future__ import annotations

import pytest

import core
from core.models import get_spec
from core.perf import Cluster, recommend
from core.perf.recommend import adopt_candidate, adoption_notes, needed_switches
from tests.oracle.oracle import oracle_available

SPEC = get_spec("openai-community/gpt2")
CLUSTER = Cluster("NVIDIA H100 80GB", 8, 1)
MUON = {"type": "Muon", "params": {"lr": 0.001}}
SGD = {"type": "SGD", "params": {"lr": 0.001}}


def _rows(**inputs):
    return recommend(SPEC, CLUSTER, seq_len=512, global_batch=8, **inputs)


@pytest.mark.parametrize("inputs", [{"base": {"optimizer": MUON}}, {"optimizer": MUON}, {"optimizer": SGD},
                                    {"base": {"optimizer": SGD}}, {"base": {"optimizer": MUON}, "precision": "fp16"}],
                         ids=["muon-base", "muon-optimizer", "sgd-optimizer", "sgd-base", "muon-base-fp16"])
def test_every_row_is_a_config_the_validator_accepts(inputs):
    rows = _rows(**inputs)
    assert (rows["stage"] == 3).any()
    refused = {(int(row.stage), f.code) for row in rows.itertuples()
               for f in core.validate(row.config, world_size=CLUSTER.total_gpus).errors}
    assert not refused


def test_a_muon_zero3_row_turns_reduce_scatter_off_and_says_why():
    base = {"optimizer": MUON}
    row = _rows(base=base).query("stage == 3").iloc[0]
    assert row["config"]["zero_optimization"]["reduce_scatter"] is False
    notes = adoption_notes(base, row["config"])
    assert any(note.startswith("zero_optimization.reduce_scatter set to false") and "engine.muon-reduce-scatter"
               in note for note in notes), notes
    assert adopt_candidate(row["config"], row["config"]) == row["config"]  # adopting it again changes nothing
    assert not [note for note in adoption_notes(row["config"], row["config"]) if "reduce_scatter" in note]


def test_no_switch_is_written_where_the_default_is_accepted():
    base = {"optimizer": MUON, "zero_optimization": {"stage": 2}}
    for row in _rows(base=base).query("stage < 3").itertuples():
        assert "reduce_scatter" not in row.config["zero_optimization"]
    adamw = _rows(base={"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}).query("stage == 3").iloc[0]
    assert "reduce_scatter" not in adamw["config"]["zero_optimization"]
    assert needed_switches({}, adamw["config"]) == ()


@pytest.mark.deepspeed
def test_the_muon_zero3_row_trains_under_the_real_deepspeed_and_its_default_does_not():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    from tests.oracle.initialize import run_initialize_configs

    row = dict(_rows(base={"optimizer": MUON}).query("stage == 3 and offload_optimizer == 'none'").iloc[0]["config"])
    one_gpu = {**row, "train_batch_size": row["train_micro_batch_size_per_gpu"] * row["gradient_accumulation_steps"]}
    zero = {key: value for key, value in one_gpu["zero_optimization"].items() if key != "reduce_scatter"}
    run = run_initialize_configs({"row": one_gpu, "default": {**one_gpu, "zero_optimization": zero}}, "0.19.8")
    trained = run.results["row"]
    assert not trained["raised"] and not (trained["step"] or {}).get("raised"), trained
    refused = run.results["default"]
    assert refused["raised"] and "Muon and reduce scatter cannot be used together" in refused["message"], refused
