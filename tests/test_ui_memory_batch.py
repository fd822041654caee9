"""ui.memory's micro batch without a validation report: what the context's release runs, as the report says."""

from __future__ import annotations

import pytest

import core
from ui import app_state
from ui import memory as ui_memory

ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1},
           "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
SEQUENCE_PARALLEL = {"train_batch_size": 64, "sequence_parallel_size": 2, "bf16": {"enabled": True}}


@pytest.mark.parametrize(("config", "version"), [(ELASTIC, "0.19.7"), (SEQUENCE_PARALLEL, "0.16.9"),
                                                 (SEQUENCE_PARALLEL, "0.19.8")])
def test_the_micro_batch_without_a_report_is_the_reports(config, version):
    """The fallback derived the batch keys as the newest release reads them: an elastic config's micro batch was
    "1 (assumed)" where elastic training runs 6, and a sequence_parallel_size 0.16.9 ignores halved the data-parallel
    GPUs (micro batch 16 where DeepSpeed 0.16.9 runs 8)."""
    context = {**app_state.default_context(), "version": version}
    report = core.validate(config, world_size=8, version=version)
    assert ui_memory.micro_batch_and_assumption(config, None, context) == \
        ui_memory.micro_batch_and_assumption(config, report, context)
    assert ui_memory.micro_batch(config, None, context) == report.batch.train_micro_batch_size_per_gpu


@pytest.mark.parametrize("config", [
    {"train_batch_size": 40, "train_micro_batch_size_per_gpu": 2.5, "gradient_accumulation_steps": 2},
    {**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "min_gpus": 16}, "train_micro_batch_size_per_gpu": 4},
])
def test_a_micro_batch_the_cli_does_not_size_is_assumed_with_or_without_a_report(config):
    """A fractional micro batch (DeepSpeed accepts it, no data loader takes it) was sized as its whole part, and an
    elastic config refusing the GPU count as the written micro batch elastic training ignores, where the CLI reads
    none (``core.batch.run_or_written``): both are now an assumption the app says."""
    context = {**app_state.default_context(), "version": "0.19.7"}
    report = core.validate(config, world_size=8, version="0.19.7")
    for given in (None, report):
        assert ui_memory.micro_batch_and_assumption(config, given, context) == \
            (1, "micro batch 1 assumed: the config's micro batch is not resolvable")
