"""The speed model's batch (``core.perf.settings.read_settings``) is the one ``core.batch`` says DeepSpeed runs,
including the HF Trainer's "auto" case, where the written accumulation is the run's."""

from __future__ import annotations

import pytest

from core.batch import GA, run_or_written
from core.perf.settings import read_settings

#: What the HF Trainer fills: the global and the micro batch.
AUTO_BATCH = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}


@pytest.mark.parametrize("accum", [4, 4.0])
def test_an_auto_batch_runs_the_written_accumulation_as_deepspeed_counts_it(accum):
    """train_batch_size and the micro batch "auto" beside gradient_accumulation_steps 4.0: the HF Trainer accepts
    4.0 (it compares 4.0 == 4) and DeepSpeed runs 4 steps, but the speed model read only an int and costed no
    accumulation (grad_accum None, "no whole number of accumulation steps")."""
    config = {**AUTO_BATCH, "gradient_accumulation_steps": accum}
    settings = read_settings(config, 8, "0.19.8")
    assert settings.grad_accum == 4 == run_or_written(config, 8, "0.19.8", GA)
    assert settings.batch_problem == ""
    assert any("the written gradient_accumulation_steps (4) is used" in note for note in settings.notes)


@pytest.mark.parametrize("accum", [0, 2.5, True, "4"])
def test_an_auto_batch_with_no_whole_accumulation_says_why(accum):
    """An accumulation DeepSpeed cannot count (0, a fraction, a boolean, a string) is not taken as the run's."""
    config = {**AUTO_BATCH, "gradient_accumulation_steps": accum}
    settings = read_settings(config, 8, "0.19.8")
    assert settings.grad_accum is None and settings.batch_problem
