"""The HF Trainer export's batch note with numbers beyond float range."""

from __future__ import annotations

from core.launchers import hf_trainer_export


def test_a_micro_batch_beyond_float_range_with_fractional_ranks_gets_a_note_not_an_overflow():
    """train_micro_batch_size_per_gpu 10**400 with sequence_parallel_size 2 on 3 GPUs (1.5 ranks): the Trainer's
    global batch was computed as micro x accumulation x 1.5 in floats, an OverflowError that the Review page showed
    as a traceback. It is computed exactly and the note says what the Trainer trains."""
    config = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 10**400, "sequence_parallel_size": 2}
    _, args, notes = hf_trainer_export(config, world_size=3, version="0.19.8")
    assert args["per_device_train_batch_size"] == 10**400
    note = next(n for n in notes if n.startswith("train_batch_size 16 is now \"auto\""))
    assert f"= {3 * 10**400 // 2}" in note and "not 16" in note


def test_whole_ranks_keep_integer_arithmetic_and_no_note_when_the_batch_matches():
    config = {"train_batch_size": 2 * 10**400, "train_micro_batch_size_per_gpu": 10**400,
              "gradient_accumulation_steps": 1, "sequence_parallel_size": 2}
    _, _, notes = hf_trainer_export(config, world_size=4, version="0.19.8")
    assert not any("is now \"auto\", and the Trainer computes it" in n for n in notes)
