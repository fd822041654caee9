"""Ways out of memory that change the GPU count, for an HF config whose train_batch_size is written beside an "auto"
micro batch or accumulation: the HF Trainer fills those from TrainingArguments and refuses the job unless micro
batch x accumulation x GPUs equals the written number. A way used to move such a job to GPU counts the number does
not divide (22 GPUs for a train_batch_size of 64), which transformers' own check refuses; each way is now judged by
that check (``HfTrainerDeepSpeedConfig.fill_match``) with the TrainingArguments the way says to pass.
"""

from __future__ import annotations

import copy

import pytest

from core import fit, hardware, memory, models
from core.validate import validate

hf_ds = pytest.importorskip("transformers.integrations.deepspeed")

#: one node of eight 80 GB A100s with little host memory: a 70B model fits only on more of them
NODE = memory.Hardware(gpus_per_node=8, nodes=1,
                       gpu_memory_bytes=hardware.GPU_BY_NAME["NVIDIA A100 80GB"].memory_bytes,
                       cpu_ram_per_node_bytes=128 * memory.GIB)
SHAPE = memory.Shape(micro_batch=1, seq_len=4096)


@pytest.fixture(scope="module")
def llama70b() -> models.ModelSpec:
    return models.get_spec("meta-llama/Llama-2-70b-hf")


def _hf_config(train_batch_size: int, stage: int, **batch: object) -> dict:
    return {"train_batch_size": train_batch_size, "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto", **batch, "bf16": {"enabled": True},
            "zero_optimization": {"stage": stage}}


def _trainer_refuses(config: dict, per_device: int, accumulation: int, gpus: int) -> list[str]:
    """transformers' own batch check of ``config`` for these TrainingArguments on ``gpus`` GPUs: its mismatches."""
    trainer = hf_ds.HfTrainerDeepSpeedConfig(copy.deepcopy(config))
    trainer.fill_match("train_micro_batch_size_per_gpu", per_device, "per_device_train_batch_size")
    trainer.fill_match("gradient_accumulation_steps", accumulation, "gradient_accumulation_steps")
    trainer.fill_match("train_batch_size", per_device * accumulation * gpus, "train_batch_size (calculated)")
    return trainer.mismatches


def _gpu_ways(config: dict, model: models.ModelSpec, trainer_accum: int, shape: memory.Shape = SHAPE) -> list[fit.Way]:
    ways = fit.ways_to_fit(config, model, NODE, shape, trainer_accum=trainer_accum)
    return [way for way in ways if "nodes" in way.context_patch]


@pytest.mark.parametrize(("train_batch_size", "stage"), [(64, 0), (96, 0), (24, 0), (40, 0), (64, 3), (1000, 3)])
def test_every_gpu_count_way_passes_the_trainers_batch_check(llama70b, train_batch_size, stage):
    config = _hf_config(train_batch_size, stage)
    ways = _gpu_ways(config, llama70b, trainer_accum=1)
    assert ways, "the 70B model needs more GPUs than one node: some way changes the count"
    for way in ways:
        changed, hw, after = fit.way_inputs(way, config, NODE, SHAPE)
        per_device = way.context_patch.get("hf_micro_batch", SHAPE.micro_batch)
        accumulation = way.context_patch.get("hf_grad_accum", 1)
        assert not _trainer_refuses(changed, per_device, accumulation, hw.total_gpus), (way.title, way.detail)
        assert "hf.batch-never-matches" not in validate(changed, world_size=hw.total_gpus, target="hf").codes()
        assert after.micro_batch == per_device  # sized with the per-device batch the way passes
        if changed["train_batch_size"] == train_batch_size:  # kept: the way says which arguments keep it
            assert per_device * accumulation * hw.total_gpus == train_batch_size
            assert f"train_batch_size stays {train_batch_size}: pass per_device_train_batch_size={per_device} " \
                   f"and gradient_accumulation_steps={accumulation} to TrainingArguments." in way.detail


def test_a_count_that_keeps_the_written_batch_is_preferred_to_a_smaller_one_that_does_not(llama70b):
    # ZeRO-3 with the optimizer offloaded fits the 70B model on 22 GPUs, which 64 sequences do not divide over
    config = _hf_config(64, 0)
    combined = next(way for way in _gpu_ways(config, llama70b, trainer_accum=1) if way.kind == "combined")
    gpus = combined.context_patch["nodes"] * combined.context_patch["gpus_per_node"]
    assert 64 % gpus == 0 and gpus > 8
    assert combined.config_patch.get("train_batch_size") is None  # the written number stays


def test_with_no_count_that_keeps_it_the_written_batch_becomes_auto(llama70b):
    # 7 sequences divide over 1 or 7 GPUs only, and the model fits on neither: the Trainer must compute the batch
    config = _hf_config(7, 3)
    ways = _gpu_ways(config, llama70b, trainer_accum=1)
    assert ways
    for way in ways:
        changed, hw, _ = fit.way_inputs(way, config, NODE, SHAPE)
        assert hw.total_gpus not in (1, 7)
        assert changed["train_batch_size"] == "auto", way.title
        assert 'train_batch_size 7 → "auto" (the Trainer computes it)' in way.detail
        assert not _trainer_refuses(changed, SHAPE.micro_batch, 1, hw.total_gpus)


def test_a_written_micro_batch_stays_and_the_trainer_fills_the_accumulation(llama70b):
    config = _hf_config(128, 3, train_micro_batch_size_per_gpu=2)
    shape = memory.Shape(micro_batch=2, seq_len=4096)
    ways = _gpu_ways(config, llama70b, trainer_accum=1, shape=shape)
    assert ways
    for way in ways:
        changed, hw, after = fit.way_inputs(way, config, NODE, shape)
        micro = changed["train_micro_batch_size_per_gpu"]  # written: 2, or what the way's micro-batch rung writes
        assert micro == after.micro_batch and "hf_micro_batch" not in way.context_patch
        accumulation = way.context_patch["hf_grad_accum"]
        assert micro * accumulation * hw.total_gpus == 128
        assert not _trainer_refuses(changed, micro, accumulation, hw.total_gpus)
        assert f"pass gradient_accumulation_steps={accumulation} to TrainingArguments" in way.detail
        assert "per_device_train_batch_size=" not in way.detail
