"""Elastic training's batch search (``core.elasticity``) and the rules built on it, against the real releases.

DeepSpeed 0.16-0.19.7 compute the batch of an enabled ``elasticity`` section themselves and stop with
``ElasticityIncompatibleWorldSize`` on a world size their search does not call valid: a config that starts on 8
GPUs and not on 64. The unit tests check what the validator says; the differential tests run each release's
own ``DeepSpeedConfig`` on the same sections and world sizes (``tests/oracle``, which simulates the world size
for the whole constructor).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import versions
from core.batch import valid_world_sizes
from core.elasticity import elastic_batch, elastic_batch_for, elastic_batches, keeps_oversized_elastic_base
from core.validate import validate
from tests.fuzz_strategies import json_values
from tests.oracle.oracle import SIDE_BY_SIDE, deepspeed_verdicts, oracle_available

DOCS_EXAMPLE = {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6], "version": 0.1}


def _codes(report) -> dict[str, object]:
    return {f.code: f for f in report.findings}


def test_a_world_size_the_search_calls_valid_gets_the_batch_deepspeed_uses():
    report = validate({"elasticity": DOCS_EXAMPLE}, world_size=8, version="0.19.7")
    assert report.ok
    batch = report.batch
    assert batch is not None and batch.train_batch_size == 1680
    assert batch.train_micro_batch_size_per_gpu * batch.gradient_accumulation_steps * 8 == 1680
    info = _codes(report)["elasticity.batch"]
    assert "train_batch_size 1680" in info.message and "on 8 GPUs" in info.message


def test_a_world_size_the_search_does_not_call_valid_is_an_error_naming_the_nearest_counts():
    report = validate({"elasticity": DOCS_EXAMPLE}, world_size=64, version="0.19.7")
    assert not report.ok and report.batch is None
    error = _codes(report)["elasticity.world-size"]
    assert error.severity == "error" and "ElasticityIncompatibleWorldSize" in error.message
    assert "64 GPUs" in error.message and "nearest: 60 or 70" in error.suggestion


def test_the_fix_sets_a_largest_batch_that_makes_the_world_size_valid():
    section = {"enabled": True, "max_train_batch_size": 100, "micro_batch_sizes": [2, 4], "version": 0.1}
    config = {"elasticity": section}
    report = validate(config, world_size=32, version="0.19.7")
    error = _codes(report)["elasticity.world-size"]
    assert error.fix is not None and not error.fix.safe
    fixed = error.fix.apply(config)
    value = fixed["elasticity"]["max_train_batch_size"]
    assert value != 100 and abs(value - 100) <= 256
    assert validate(fixed, world_size=32, version="0.19.7").ok


def test_sequence_parallel_ranks_are_what_the_search_checks():
    config = {"sequence_parallel_size": 2, "elasticity": DOCS_EXAMPLE}
    # 128 GPUs are 64 data-parallel ranks (refused); 16 GPUs are 8 (accepted)
    assert "elasticity.world-size" in _codes(validate(config, world_size=128, version="0.19.7"))
    report = validate(config, world_size=16, version="0.19.7")
    assert report.ok and report.batch.world_size == 8
    assert "8 data-parallel ranks" in _codes(report)["elasticity.batch"].message


def test_written_batch_values_elasticity_replaces_are_a_warning():
    config = {"train_batch_size": 32, "elasticity": {**DOCS_EXAMPLE, "max_train_batch_size": 100,
                                                     "ignore_non_elastic_batch_info": True}}
    report = validate(config, world_size=8, version="0.19.5")
    warning = _codes(report)["elasticity.overrides"]
    computed = report.batch.train_batch_size
    assert computed != 32 and f"train_batch_size 32 → {computed}" in warning.message
    assert "train_batch_size" not in warning.fix.apply(config)


def test_releases_without_elasticity_say_nothing_of_its_batch():
    report = validate({"train_batch_size": 8, "elasticity": DOCS_EXAMPLE}, world_size=64, version="0.19.8")
    codes = _codes(report)
    assert not any(c.startswith("elasticity.") for c in codes) and "removed.enabled-section" in codes
    assert elastic_batch_for({"elasticity": DOCS_EXAMPLE}, 8, "0.19.8") is None
    assert elastic_batch_for({"elasticity": {**DOCS_EXAMPLE, "enabled": False}}, 8, "0.19.7") is None


def test_which_releases_keep_an_oversized_base_is_read_from_their_profiles():
    kept = {r: keeps_oversized_elastic_base(r) for r in versions.RELEASES}
    assert kept["0.16.9"] is True and kept["0.19.5"] is True
    assert kept["0.19.6"] is False and kept["0.19.7"] is False
    assert kept["0.19.8"] is None  # no elasticity any more
    # the two variants differ exactly there: lcm(4, 6) = 12 is above the largest batch 10
    probe = {"enabled": True, "max_train_batch_size": 10, "micro_batch_sizes": [4, 6], "version": 0.1}
    assert elastic_batch(probe, 3, keep_oversized_base=True).world_size_ok
    assert not elastic_batch(probe, 3, keep_oversized_base=False).world_size_ok


def test_huge_values_are_answered_quickly_without_a_search_deepspeed_would_not_finish():
    # the batch 10**12 of micro batch 1: DeepSpeed tries every GPU count up to 5 * 10**11 (max_gpus allows it)
    section = {"enabled": True, "max_train_batch_size": 10**12, "micro_batch_sizes": [1, 10**12], "version": 0.1,
               "max_gpus": 10**15}
    assert elastic_batch(section, 8, keep_oversized_base=False) is None
    # bounded by the default max_gpus, DeepSpeed's loop is short and so is ours: an answer
    assert elastic_batch({**section, "max_gpus": 10000}, 8, keep_oversized_base=False).world_size_ok
    report = validate({"elasticity": {**DOCS_EXAMPLE, "max_train_batch_size": 10**9}}, world_size=64,
                      version="0.19.7")
    assert "elasticity.world-size" in _codes(report)


ELASTIC_KEYS = ("max_train_batch_size", "micro_batch_sizes", "min_gpus", "max_gpus", "num_gpus_per_node",
                "model_parallel_size", "prefer_larger_batch", "version")
small_numbers = st.one_of(st.integers(-3, 5000), st.floats(allow_nan=True, allow_infinity=True), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(ELASTIC_KEYS), st.one_of(small_numbers, json_values,
                                                               st.lists(small_numbers, max_size=4))),
       st.sampled_from(["0.16.9", "0.19.5", "0.19.7", "0.19.8"]), st.integers(1, 200))
def test_any_elastic_section_gets_an_answer_not_a_crash(section, release, world_size):
    config = {"elasticity": {"enabled": True, **section}}
    report = validate(config, world_size=world_size, version=release)
    assert report.findings is not None
    found = elastic_batch_for(config, world_size, release)
    assert found is None or isinstance(found.train_batch_size, int)


@pytest.mark.parametrize("seed", range(3))
def test_one_search_for_many_world_sizes_answers_as_one_search_per_world_size(seed):
    """The Batch page's list of GPU counts runs the search once; each count must get what it gets alone."""
    counts = list(range(1, 130))
    for index, (config, _) in enumerate(random_sections(seed=seed, count=60)):
        for keep in (True, False):
            together = elastic_batches(config["elasticity"], counts, keep_oversized_base=keep)
            alone = [elastic_batch(config["elasticity"], w, keep_oversized_base=keep) for w in counts]
            assert together == alone, config
        if index < 6:  # and the list agrees with the validator's batch on each count
            listed = valid_world_sizes(config, 40, "0.19.7")
            assert listed == [w for w in range(1, 41) if validate(config, world_size=w, version="0.19.7")
                              .batch is not None], config


# ---------------------------------------------------------------------------------------- against the releases
ELASTIC_RELEASES = (*SIDE_BY_SIDE, "0.19.5")
WORLD_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 100, 128)


def random_sections(seed: int, count: int) -> list[tuple[dict, int]]:
    """(config, world size) pairs with enabled elastic sections of both algorithm versions, node sizes, model
    parallelism, GPU bounds and the larger/smaller preference, some with sequence parallelism."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        section = {"enabled": True,
                   "max_train_batch_size": rng.choice([8, 10, 12, 16, 64, 100, 128, 256, 1000, 2000, 4096,
                                                       rng.randint(1, 5000)]),
                   "micro_batch_sizes": rng.sample([1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 48], rng.randint(1, 4)),
                   "version": rng.choice([0.1, 0.2])}
        if rng.random() < 0.4:
            section["min_gpus"] = rng.choice([1, 2, 4, 8, 16])
        if rng.random() < 0.4:
            section["max_gpus"] = max(section.get("min_gpus", 1), rng.choice([4, 8, 16, 64, 128, 10000]))
        if rng.random() < 0.3:
            section["prefer_larger_batch"] = False
        if section["version"] == 0.2 and rng.random() < 0.5:
            section["num_gpus_per_node"] = per_node = rng.choice([1, 2, 4, 8])
            if rng.random() < 0.3 and per_node % 2 == 0:
                section["model_parallel_size"] = 2
        config = {"elasticity": section}
        if rng.random() < 0.15:
            config["sequence_parallel_size"] = 2
        out.append((config, rng.choice(WORLD_SIZES)))
    return out


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", ELASTIC_RELEASES)
def test_the_validator_accepts_exactly_the_world_sizes_the_release_accepts(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    pairs = random_sections(seed=sum(map(ord, release)), count=400)
    verdicts = deepspeed_verdicts(pairs, release)
    disagreements = []
    refused_for_world_size = 0
    for (config, world_size), verdict in zip(pairs, verdicts, strict=True):
        report = validate(config, world_size=world_size, version=release)
        refused_for_world_size += verdict.error_type == "ElasticityIncompatibleWorldSize"
        if report.ok != verdict.accepted:
            disagreements.append(f"{config} on {world_size}: DeepSpeed {verdict.describe()}, validator "
                                 f"{[f.code for f in report.findings if f.severity == 'error']}")
    assert not disagreements, f"{len(disagreements)} of {len(pairs)}:\n" + "\n".join(disagreements[:10])
    assert refused_for_world_size >= 50  # the sample exercises the check this file is about
