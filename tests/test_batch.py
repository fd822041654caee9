"""The batch triangle: DeepSpeed's arithmetic, suggestions, valid GPU counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.batch import (
    GA,
    MB,
    TB,
    batch_run,
    batch_suggestions,
    effective_world_size,
    micro_batch_one,
    resolve_batch,
    run_or_written,
    valid_world_sizes,
)
from core.schema.base import DEFAULT_VERSION
from core.validate import validate


@pytest.mark.parametrize(
    ("config", "w", "ok", "trio"),
    [
        ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}, 4, True, (32, 4, 2)),
        ({"train_batch_size": 32, "gradient_accumulation_steps": 2}, 4, True, (32, 4, 2)),
        ({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}, 4, True, (32, 4, 2)),
        ({"train_batch_size": 8}, 4, True, (8, 2, 1)),
        ({"train_micro_batch_size_per_gpu": 3}, 5, True, (15, 3, 1)),
        ({"train_batch_size": 8}, 3, False, (8, 2, 1)),
        ({"train_batch_size": 2}, 4, False, (2, 0, 1)),
        ({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}, 4, False, (4, 2, 0)),
        ({"train_batch_size": 8.0}, 4, True, (8.0, 2.0, 1)),
    ],
)
def test_resolution_matches_deepspeed_rules(config, w, ok, trio):
    result = resolve_batch(config, w)
    assert result.ok is ok
    assert (result.train_batch_size, result.micro_batch, result.grad_accum) == trio


def test_problems_are_named():
    assert resolve_batch({}, 1).problem == "missing"
    assert resolve_batch({"gradient_accumulation_steps": 4}, 1).problem == "missing"
    assert resolve_batch({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 0}, 2).problem == "zero-division"
    assert resolve_batch({"train_batch_size": "8"}, 2).problem == "type"
    assert resolve_batch({"train_batch_size": 8}, 3).problem == "product"
    assert resolve_batch({"train_micro_batch_size_per_gpu": -2, "gradient_accumulation_steps": -3}, 2).problem == (
        "mb-positive"
    )


def test_product_message_shows_the_arithmetic():
    result = resolve_batch({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                            "gradient_accumulation_steps": 2}, 4)
    assert "30" in result.message and "4" in result.message and "= 32" in result.message


def test_valid_world_sizes():
    assert valid_world_sizes({"train_batch_size": 12}, 16) == [1, 2, 3, 4, 6, 12]
    assert valid_world_sizes({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2}, 16) == [1, 2, 4, 8]
    assert valid_world_sizes({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3}, 5) == [
        1, 2, 3, 4, 5]
    all_three = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}
    assert valid_world_sizes(all_three, 64) == [8]


def test_sequence_parallel_divides_world():
    assert effective_world_size({"sequence_parallel_size": 2}, 8) == 4
    assert effective_world_size({}, 8) == 8


@settings(max_examples=300, deadline=None)
@given(
    tb=st.one_of(st.none(), st.integers(1, 4096)),
    mb=st.one_of(st.none(), st.integers(1, 64)),
    ga=st.one_of(st.none(), st.integers(1, 64)),
    w=st.integers(1, 128),
)
def test_suggestions_always_work(tb, mb, ga, w):
    config = {k: v for k, v in (("train_batch_size", tb), ("train_micro_batch_size_per_gpu", mb),
                                ("gradient_accumulation_steps", ga)) if v is not None}
    for trio in batch_suggestions(config, w):
        assert resolve_batch(trio, w).ok, trio
    if tb or mb:
        assert batch_suggestions(config, w), "there is always a trio that works"


@pytest.mark.parametrize(("config", "world", "micro"), [
    ({"train_batch_size": 64, "gradient_accumulation_steps": 2}, 8, 4),  # derived as DeepSpeed does
    ({"train_micro_batch_size_per_gpu": 3}, 8, 3),
    ({"train_batch_size": 64, "gradient_accumulation_steps": 3}, 8, None),  # 64 is not 3 x 8 x a whole micro batch
    ({"train_micro_batch_size_per_gpu": "auto"}, 8, None),
    ({"train_micro_batch_size_per_gpu": -1}, 8, None),
    # Ulysses: 8 GPUs in groups of 4 are 2 data-parallel ranks, 64 = 2 accumulation x 2 ranks x micro batch 16
    ({"train_batch_size": 64, "gradient_accumulation_steps": 2, "sequence_parallel_size": 4}, 8, 16),
])
def test_the_micro_batch_deepspeed_runs(config, world, micro):
    run = batch_run(config, world, DEFAULT_VERSION)
    assert (run[1] if run is not None else None) == micro


def test_a_fractional_global_batch_gets_suggestions_from_its_whole_part():
    assert batch_suggestions({"train_batch_size": 32.5}, 1)[0] == {
        "train_batch_size": 32, "train_micro_batch_size_per_gpu": 32, "gradient_accumulation_steps": 1}
    trio = batch_suggestions({"train_micro_batch_size_per_gpu": 2.5, "gradient_accumulation_steps": 2}, 4)[0]
    assert trio == {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}


def test_a_false_divisor_is_named_as_written_and_read():
    result = resolve_batch({"train_batch_size": 32, "train_micro_batch_size_per_gpu": False}, 1)
    assert result.problem == "zero-division"
    assert "train_micro_batch_size_per_gpu is false (DeepSpeed reads it as 0)" in result.message
    result = resolve_batch({"train_batch_size": False}, 1)
    assert result.problem == "tb-positive" and "is false (DeepSpeed reads it as 0)" in result.message
    assert "False" not in result.message


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 5000))
def test_largest_divisor_at_most_is_the_brute_force_one(n, cap):
    from core.batch import _largest_divisor_at_most

    assert _largest_divisor_at_most(n, cap) == max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def test_suggestions_for_a_huge_prime_global_batch_keep_it_and_use_micro_batch_one():
    # The old search counted down from the micro batch one by one: ~10^9 steps for this config.
    trio = batch_suggestions({"train_batch_size": 1_000_000_007, "train_micro_batch_size_per_gpu": 999_999_999}, 1)
    assert {"train_batch_size": 1_000_000_007, "train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": 1_000_000_007} in trio


@pytest.mark.parametrize(("config", "world", "first"), [
    ({"train_batch_size": 60, "train_micro_batch_size_per_gpu": 4}, 8, (64, 4, 2)),
    ({"train_batch_size": 250, "train_micro_batch_size_per_gpu": 16}, 8, (256, 16, 2)),
    ({"train_batch_size": 1000, "train_micro_batch_size_per_gpu": 8}, 64, (1024, 8, 2)),
    ({"train_batch_size": 36, "train_micro_batch_size_per_gpu": 4}, 8, (32, 4, 1)),  # nearer below
    ({"train_batch_size": 9, "train_micro_batch_size_per_gpu": 3}, 2, (6, 3, 1)),  # a tie: the smaller
    ({"train_batch_size": 30}, 8, (32, 4, 1)),  # micro derived as DeepSpeed derives it, accumulation 1
    ({"train_batch_size": 100, "gradient_accumulation_steps": 2}, 8, (96, 6, 2)),  # the accumulation kept
    ({"train_batch_size": 3, "train_micro_batch_size_per_gpu": 2}, 8, (16, 2, 1)),  # below one unit
], ids=["60-to-64", "250-to-256", "1000-to-1024", "36-to-32", "tie-9", "tb-only", "ga-kept", "tiny"])
def test_the_rounding_suggestion_is_the_nearest_global_batch(config, world, first):
    """The one-click fix rounded the global batch down (60 -> 32 beside 64) and, with only train_batch_size
    written, moved the micro batch into accumulation (30 -> 24 = 1 x 3 x 8)."""
    suggestions = batch_suggestions(config, world)
    assert (suggestions[0][TB], suggestions[0][MB], suggestions[0][GA]) == first
    assert all(resolve_batch(s, world).ok for s in suggestions)
    fix = next(f.fix for f in validate(config, world_size=world).findings if f.code.startswith("batch.") and f.fix)
    assert f"train_batch_size={first[0]}," in fix.description


@pytest.mark.parametrize(("config", "expected"), [
    ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2}, [2, 4, 8, 16, 32]),
    ({"train_batch_size": 32, "sequence_parallel_size": 3}, [3, 6, 12, 24, 48, 96]),
    ({"train_batch_size": 32, "sequence_parallel_size": 1}, [1, 2, 4, 8, 16, 32]),
])
def test_gpu_counts_that_work_are_whole_sequence_parallel_groups(config, expected):
    """The Batch page listed 1, 2, 4, … for sequence_parallel_size 2 (and 1, 2, 3, 4, 6, … for 3): GPU counts the
    groups do not divide, where the data-parallel size is a fraction (the validator's misc.sequence-parallel)."""
    counts = valid_world_sizes(config, 128)
    assert counts == expected
    assert all(not any(f.code == "misc.sequence-parallel" for f in validate(config, world_size=w).findings)
               for w in counts)


@pytest.mark.parametrize("sp", [0, "2", None, False])
def test_a_sequence_parallel_size_0_17_cannot_divide_by_makes_it_check_the_batch_on_one_gpu(sp):
    """DeepSpeed 0.17.6 divides the GPU count by sequence_parallel_size in a try that catches everything: 0 or a
    string leaves a world size of 1 (its profile's probe says so), and the batch is checked on that; 0.19.7 stops."""
    config = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": sp}
    assert effective_world_size(config, 8, "0.17.6") == 1
    old = validate(config, world_size=8, version="0.17.6")
    assert old.ok and old.batch.gradient_accumulation_steps == 2
    warning = next(f for f in old.warnings if f.code == "misc.sequence-parallel-swallowed")
    assert "checks the batch as on 1 GPU" in warning.message and "8 GPUs" in warning.message
    assert effective_world_size(config, 8, "0.19.7") == 8
    assert "misc.sequence-parallel-invalid" in {f.code for f in validate(config, world_size=8, version="0.19.7").errors}


@pytest.mark.parametrize(("gpus", "degrees", "left_out"), [
    (8, {"sequence_parallel_size": 3}, "8 GPUs are not divisible by sequence_parallel_size 3: sp ignored"),
    (6, {"sequence_parallel_size": 3}, None),
    (8, {"sequence_parallel_size": 1}, None),
    (12, {"autotp_size": 2, "sequence_parallel_size": 4},
     "12 GPUs are not divisible by autotp_size x sequence_parallel_size = 8: sp ignored"),
    (16, {"autotp_size": 2, "sequence_parallel_size": 4}, None),
])
def test_parallel_groups_must_split_the_gpus_whole(gpus, degrees, left_out):
    """One rule for the memory model and the planner: no whole groups, the parallelism is ignored."""
    from core.batch import parallelism_left_out

    assert parallelism_left_out(gpus, degrees, "sp") == left_out


ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1}}
SEQUENCE_PARALLEL = {TB: 64, "sequence_parallel_size": 2}


@pytest.mark.parametrize(("config", "version", "trio"), [
    (ELASTIC, "0.19.7", (1680, 6, 35)),  # elastic training's batch: 6 x 35 x 8 GPUs, no batch key written
    (ELASTIC, "0.19.8", (None, None, None)),  # 0.19.8 removed elasticity and nothing else gives a batch
    (SEQUENCE_PARALLEL, "0.16.9", (64, 8, 1)),  # 0.16.9 does not read sequence_parallel_size: 8 data-parallel ranks
    (SEQUENCE_PARALLEL, "0.19.8", (64, 16, 1)),  # 0.19.8 divides the 8 GPUs into 4 data-parallel ranks
    ({TB: 64, MB: 4, GA: 3}, "0.19.8", (64, 4, 3)),  # refused (4 x 3 x 8 = 96): the written keys
    ({TB: 64, MB: 2.5, GA: 3}, "0.19.8", (64, None, 3)),  # refused, and a written fraction is no micro batch
    ({TB: "auto", MB: 4}, "0.19.8", (None, 4, None)),  # "auto" is the Trainer's to fill: only the written number
])
def test_run_or_written_is_what_the_release_runs_else_the_written_key(config, version, trio):
    assert tuple(run_or_written(config, 8, version, key) for key in (TB, MB, GA)) == trio


def test_run_or_written_ignores_the_batch_keys_when_elastic_training_refuses_the_gpu_count():
    """Elastic training replaces the batch keys, so where it refuses 8 GPUs the written ones are not the run's."""
    config = {**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "min_gpus": 16}, TB: 32, MB: 4}
    assert [run_or_written(config, 8, "0.19.7", key) for key in (TB, MB, GA)] == [None, None, None]
    assert [run_or_written(config, 8, "0.19.8", key) for key in (TB, MB, GA)] == [32, 4, 1]  # no elasticity there


@pytest.mark.parametrize(("written", "what"), [(None, "not set"), ("auto", '"auto"'), (2.5, "not resolvable"),
                                               (True, "not resolvable")])
def test_micro_batch_one_says_why_the_config_sizes_none(written, what):
    assert micro_batch_one(written) == (1, f"micro batch 1 assumed: the config's micro batch is {what}")
