"""Top-level data_parallel_size beside sequence_parallel_size (a read-only hunt, 1 Dec 2026), proven with gloo jobs
of two CPU ranks: deepspeed.initialize builds a (data_parallel_size, sequence_parallel_size) device mesh from the
pair as written, in every release, while DeepSpeed's parser does not know data_parallel_size. The validator called
the key unknown and "silently ignored"; a mesh that is not the job's GPUs now is error ``engine.sequence-mesh``.
"""

from __future__ import annotations

import pytest

from core.validate import validate
from tests.oracle.oracle import oracle_available
from tests.test_hpz_world_size import _initialize

CODE = "engine.sequence-mesh"
#: the initialize-time code this module proves (tests/test_initialize_failures.py counts it as proven)
PROVEN_WITH_RANKS = frozenset({CODE})

BASE = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
#: (data_parallel_size, sequence_parallel_size) on 2 ranks -> what each rank raises (None: it initializes)
MESHES = {
    "bigger": ((2, 2), ["RuntimeError", "RuntimeError"]),
    "smaller": ((1, 1), [None, "IndexError"]),
    "text": (("2", 1), ["ValueError", "ValueError"]),
    "control-dp1-sp2": ((1, 2), [None, None]),
    "control-dp2-sp1": ((2, 1), [None, None]),
}


def _config(dp: object, sp: object) -> dict:
    return {**BASE, "data_parallel_size": dp, "sequence_parallel_size": sp}


@pytest.mark.parametrize("label", MESHES)
def test_the_validator_says_where_the_mesh_is_not_the_job(label):
    (dp, sp), raised = MESHES[label]
    findings = validate(_config(dp, sp), world_size=2).findings
    assert ({f.code for f in findings if f.severity == "error"} == {CODE}) == any(raised)
    assert "keys.unknown-top-level" not in {f.code for f in findings}  # initialize reads it beside the other


def test_alone_data_parallel_size_is_still_an_unknown_key():
    codes = {f.code for f in validate({**BASE, "data_parallel_size": 4}, world_size=2).findings}
    assert "keys.unknown-top-level" in codes and CODE not in codes


def test_the_fix_is_the_mesh_of_the_job():
    finding = next(f for f in validate(_config(2, 2), world_size=2).errors if f.code == CODE)
    fixed = finding.fix.apply(_config(2, 2))
    assert fixed["data_parallel_size"] == 1 and not validate(fixed, world_size=2).errors


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.xdist_group("hpz_ranks")
def test_two_ranks_fail_where_the_validator_says():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    for label, ((dp, sp), raised) in MESHES.items():
        if label == "control-dp2-sp1":
            continue  # the same shape of mesh as the other control (one job less of CI's budget)
        outcomes = _initialize(2, _config(dp, sp))
        assert [o["raised"] for o in outcomes] == raised, (label, outcomes)
        if label == "bigger":
            assert "Mesh should not be bigger than default world size 2" in outcomes[0]["message"]
