"""engine.managed-accumulation-overlap reads managed_gradient_accumulation as DeepSpeed's engine does: Python truth
of the raw value (runtime/config.get_scalar_param, engine._do_sanity_check's ``if not
self.managed_gradient_accumulation()``), not as a pydantic bool."""

from __future__ import annotations

import pytest

from core import validate

BASE = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1,
                                                                                           "overlap_comm": True}}


def _codes(value, version: str) -> set[str]:
    report = validate({**BASE, "managed_gradient_accumulation": value}, world_size=8, version=version)
    return {finding.code for finding in report.findings}


@pytest.mark.parametrize("version", ["0.19.7", "0.19.8"])
@pytest.mark.parametrize(("value", "refused"), [(False, True), (None, True), (0, True), ("false", False),
                                                 (True, False), ("no", False)])
def test_the_overlap_check_reads_the_key_as_the_engine_does(version, value, refused):
    """"false" is a non-empty string, so the engine manages the accumulation and initializes; the rule called it
    an error (a pydantic bool reads "false" as False). A written null is falsy to the engine, which then stops,
    and the rule said nothing."""
    assert ("engine.managed-accumulation-overlap" in _codes(value, version)) is refused
