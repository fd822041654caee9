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


def test_a_written_global_batch_with_an_auto_micro_batch_exports_the_accumulation_deepspeed_derives():
    """train_batch_size 256 with train_micro_batch_size_per_gpu "auto" (a corpus shape) and the Trainer's
    per-device batch 4 on 8 GPUs: the accelerate and Lightning exports said "ds train_batch_size=256 vs hf 32" and
    kept the "auto"s, so accelerate handed DeepSpeed 256 != 4 x 1 x 8 and Lightning's file failed to parse."""
    from accelerate.utils.deepspeed import HfDeepSpeedConfig

    from core.launchers import launcher_exports
    from core.validate import validate

    config = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2}}
    context = {"nodes": 1, "gpus_per_node": 8, "train_steps": 1000, "version": None}
    exports = launcher_exports(config, context, "auto", {"per_device_train_batch_size": 4})
    accelerate_file, accelerate_notes = exports.accelerate
    assert (accelerate_file["train_micro_batch_size_per_gpu"], accelerate_file["gradient_accumulation_steps"]) == (4, 8)
    assert not any("cannot be resolved" in note for note in accelerate_notes)
    # what accelerate's _prepare_deepspeed leaves in the file it hands DeepSpeed: the accumulation as written
    assert HfDeepSpeedConfig(accelerate_file).get_value("gradient_accumulation_steps") == 8
    assert not validate(accelerate_file, world_size=8).errors
    lightning_file, lightning_args, _ = exports.lightning
    assert lightning_file["train_micro_batch_size_per_gpu"] == 4 and lightning_args["accumulate_grad_batches"] == 8
