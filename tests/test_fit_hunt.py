"""core.fit against what the release really runs: elastic training's batch, and 0.16.x's data-parallel count."""

from __future__ import annotations

import pytest

from core import fit, hardware, memory, models
from core.batch import batch_run
from core.validate import validate

A100 = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=hardware.GPU_BY_NAME["NVIDIA A100 80GB"].memory_bytes,
                       cpu_ram_per_node_bytes=512 * memory.GIB)
ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 4000, "micro_batch_sizes": [16, 32], "min_gpus": 1,
                          "max_gpus": 10000, "version": 0.1, "ignore_non_elastic_batch_info": True},
           "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}


@pytest.fixture(scope="module")
def llama7b() -> models.ModelSpec:
    return models.get_spec("meta-llama/Llama-2-7b-hf")


def test_elastic_micro_batch_way_changes_what_elastic_training_reads(llama7b: models.ModelSpec) -> None:
    version = "0.19.7"
    assert batch_run(ELASTIC, 8, version)[1] == 32  # elastic training's micro batch, not the written 4
    shape = memory.Shape(micro_batch=32, seq_len=4096)
    way = next(w for w in fit.ways_to_fit(ELASTIC, llama7b, A100, shape, version=version) if w.kind == "micro_batch")
    assert set(way.config_patch) == {"elasticity"}  # the batch keys are ignored: writing them changes nothing
    patched = fit.apply_patch(ELASTIC, way.config_patch)
    _, micro, accum = batch_run(patched, 8, version)
    assert way.title == f"Micro batch {micro} with {accum} accumulation steps"
    after = memory.estimate(patched, llama7b, A100, memory.Shape(micro_batch=micro, seq_len=4096), version=version)
    assert way.fits and after.fits and way.gpu_bytes == after.gpu_bytes
    assert not validate(patched, world_size=8, version=version).errors


def test_every_elastic_way_is_sized_with_the_micro_batch_elastic_training_runs(llama7b: models.ModelSpec) -> None:
    version = "0.19.7"
    shape = memory.Shape(micro_batch=32, seq_len=4096)
    for way in fit.ways_to_fit(ELASTIC, llama7b, A100, shape, version=version):
        config, hw, trial = fit.way_inputs(way, ELASTIC, A100, shape, version)
        run = batch_run(config, hw.total_gpus, version)
        assert run is not None and trial.micro_batch == run[1], way.title
        assert memory.estimate(config, llama7b, hw, trial, version=version).gpu_bytes == way.gpu_bytes, way.title


def test_micro_batch_way_on_016_counts_every_gpu_as_data_parallel(llama7b: models.ModelSpec) -> None:
    # 0.16.x does not read sequence_parallel_size: 64 = micro 8 × 1 × 8 GPUs, not over 4 data-parallel ranks
    config = {"train_batch_size": 64, "sequence_parallel_size": 2, "zero_optimization": {"stage": 1},
              "bf16": {"enabled": True}}
    version = "0.16.9"
    shape = memory.Shape(micro_batch=8, seq_len=4096)
    way = next(w for w in fit.ways_to_fit(config, llama7b, A100, shape, version=version) if w.kind == "micro_batch")
    patched = fit.apply_patch(config, way.config_patch)
    assert not validate(patched, world_size=8, version=version).errors
    tb, micro, accum = batch_run(patched, 8, version)
    assert tb == 64 and micro * accum * 8 == 64
    assert "data-parallel ranks" not in way.detail


def test_gpu_count_sweep_sizes_each_count_with_the_micro_batch_deepspeed_derives(llama7b: models.ModelSpec) -> None:
    # train_batch_size 64 alone: DeepSpeed derives micro batch 64 ÷ GPUs (8 on 8, 4 on 16, 1 on 64); 128 refuses it
    config = {"train_batch_size": 64, "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
    shape = memory.Shape(micro_batch=8, seq_len=2048)
    frame = memory.sweep_totals(config, llama7b, A100, shape, "total_gpus", [8, 16, 64, 128], version="0.19.7")
    rows = frame.set_index("total_gpus")
    for gpus, micro in ((8, 8), (16, 4), (64, 1)):
        hw = memory.Hardware(gpus_per_node=8, nodes=gpus // 8, gpu_memory_bytes=A100.gpu_memory_bytes,
                             cpu_ram_per_node_bytes=A100.cpu_ram_per_node_bytes)
        est = memory.estimate(config, llama7b, hw, memory.Shape(micro_batch=micro, seq_len=2048), version="0.19.7")
        assert rows.loc[gpus, "micro_batch"] == micro
        assert rows.loc[gpus, "gpu_bytes"] == pytest.approx(est.gpu_bytes, abs=2)
        assert bool(rows.loc[gpus, "fits"]) == est.fits
    assert bool(rows.loc[16, "fits"])  # held at micro batch 8 it read "does not fit" (110.2 GiB)
    assert not rows.loc[128, "batch_resolves"] and rows.loc[128, "fits"] is None
    assert frame["gpu_gib"].isna().tolist() == [False, False, False, True]


def test_gpu_count_sweep_holds_an_auto_micro_batch(llama7b: models.ModelSpec) -> None:
    config = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
    frame = memory.sweep_totals(config, llama7b, A100, memory.Shape(micro_batch=2), "total_gpus", [8, 16])
    assert frame["micro_batch"].tolist() == [2, 2] and not frame["batch_derived"].any()
    assert frame["batch_resolves"].all()
