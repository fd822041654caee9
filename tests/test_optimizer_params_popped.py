"""Which keys DeepSpeed pops off ``optimizer.params`` is read per release from the profiles
(``optimizer_params_popped``): ``fp32_optimizer_states`` is popped from 0.19 on, and before it reaches the
optimizer's constructor, where FusedAdam and torch's AdamW raise TypeError. The validator accepted it for every
release (the schema marked it consumed), and ``dsconfig versions`` said the config works with 0.16.0-0.19.8."""

from __future__ import annotations

import pytest

from core import versions
from core.validate import validate
from tests.oracle.oracle import oracle_available

TRAIN = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True}}
FUSED = {**TRAIN, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "fp32_optimizer_states": True}}}
TORCH = {**TRAIN, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "fp32_optimizer_states": True,
                                                             "torch_adam": True}}}


def _popping() -> list[str]:
    return [r for r in versions.RELEASES if versions.optimizer_param_popped(r, "fp32_optimizer_states")]


def _unknown(config: dict, release: str) -> list:
    return [f for f in validate(config, version=release).errors
            if f.path == "optimizer.params.fp32_optimizer_states"]


def test_the_releases_that_pop_it_are_read_from_the_profiles():
    popping = _popping()
    assert popping and popping[-1] == versions.NEWEST and popping[0] != versions.RELEASES[0]
    assert all(versions.optimizer_param_popped(r, "torch_adam") for r in versions.RELEASES)
    for release in versions.RELEASES:
        pops = release in popping
        assert bool(_unknown(FUSED, release)) == (not pops), release
        assert bool(_unknown(TORCH, release)) == (not pops), release


def test_with_cpu_offload_it_is_the_cpu_optimizers_keyword_where_the_release_has_it():
    offloaded = {**FUSED, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    for release in versions.RELEASES:
        takes = versions.optimizer_keywords(release, "adamw", "cpu")
        pops = versions.optimizer_param_popped(release, "fp32_optimizer_states")
        expected_error = not pops and takes is not None and "fp32_optimizer_states" not in takes
        assert bool(_unknown(offloaded, release)) == expected_error, release


@pytest.mark.deepspeed
@pytest.mark.long
@pytest.mark.parametrize("release", ["0.18.9", "0.19.8"])
def test_real_initialize_agrees(release):
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    got = run_initialize_configs({"fused": FUSED, "torch": TORCH}, release).results
    pops = versions.optimizer_param_popped(release, "fp32_optimizer_states")
    for key, config in (("fused", FUSED), ("torch", TORCH)):
        result = got[key]
        if pops:
            assert not result["raised"] and not result["step"]["raised"], (release, key, result)
            assert not validate(config, version=release).errors
        else:
            assert result["error_type"] == "TypeError", (release, key, result)
            assert "unexpected keyword argument 'fp32_optimizer_states'" in result["message"]
            assert _unknown(config, release), (release, key)
