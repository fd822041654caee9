"""core.fit against what the release really runs: elastic training's batch, and 0.16.x's data-parallel count."""

from __future__ import annotations

import itertools
import json
import re

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


GIB = memory.GIB
_ADAMW = {"bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}}


def _changes(config: dict, ways: list[fit.Way]) -> list[str]:
    """What each way leaves the job as: the changed config and the context changes, comparable as text."""
    return [json.dumps([fit.apply_patch(config, w.config_patch), w.context_patch], sort_keys=True) for w in ways]


def test_the_combined_way_is_not_listed_when_it_climbs_to_a_single_ways_config(llama7b: models.ModelSpec) -> None:
    # micro batch 1 with full recomputation at 32k tokens fits no 24 GiB GPU: the ladder climbed every rung, to
    # ZeRO-3 with both offloads, and listed it a second time as "Together: ZeRO-3, optimizer offload, parameter offload"
    config = {**_ADAMW, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 2}}
    hw = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=24 * GIB, cpu_ram_per_node_bytes=64 * GIB)
    ways = fit.ways_to_fit(config, llama7b, hw, memory.Shape(micro_batch=1, seq_len=32768, recompute="full"))
    assert "offload_param" in [w.kind for w in ways]
    changes = _changes(config, ways)
    assert len(changes) == len(set(changes)), [w.title for w in ways]


_BATCHES = ({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4}, {"train_batch_size": 64},
            {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1},
            {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"})
_ZEROS = ({"stage": 0}, {"stage": 2}, {"stage": 3}, {"stage": 2, "offload_optimizer": {"device": "cpu"}},
          {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}})
#: (GPUs per node, GPU GiB, CPU RAM GiB per node, NVMe GiB per node)
_CLUSTERS = ((8, 24, 64, None), (4, 16, 32, None), (2, 24, 48, 500), (8, 80, 128, 2000))


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.2-1B", "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf"])
def test_no_two_ways_make_the_same_change_and_every_way_changes_something(name: str) -> None:
    spec = models.get_spec(name)
    for batch, zero, (gpus, gpu_gib, ram, nvme), seq_len, recompute in itertools.product(
            _BATCHES, _ZEROS, _CLUSTERS, (2048, 32768), ("none", "full")):
        config = {**_ADAMW, **batch, "zero_optimization": zero}
        hw = memory.Hardware(gpus_per_node=gpus, nodes=1, gpu_memory_bytes=gpu_gib * GIB,
                             cpu_ram_per_node_bytes=ram * GIB, nvme_bytes_per_node=nvme and nvme * GIB)
        micro = batch.get("train_micro_batch_size_per_gpu", 8)
        shape = memory.Shape(micro_batch=micro if isinstance(micro, int) else 4, seq_len=seq_len, recompute=recompute)
        ways = fit.ways_to_fit(config, spec, hw, shape, trainer_accum=2)
        changes = _changes(config, ways)
        case = (name, batch, zero, hw, seq_len, recompute, [w.title for w in ways])
        assert len(changes) == len(set(changes)), case
        assert _changes(config, [fit.Way("none", "", "", 0, 0, 0, False)])[0] not in changes, case


def _zero0_ways(name: str, micro: int, accum: int, gpus_per_node: int, gpu_gib: int, ram_gib: int, seq_len: int,
                max_nodes: int = 1024) -> list[fit.Way]:
    """The ways of a ZeRO-0 AdamW job of model ``name`` on one node."""
    config = {**_ADAMW, "train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accum,
              "zero_optimization": {"stage": 0}}
    hw = memory.Hardware(gpus_per_node=gpus_per_node, nodes=1, gpu_memory_bytes=gpu_gib * GIB,
                         cpu_ram_per_node_bytes=ram_gib * GIB)
    return fit.ways_to_fit(config, models.get_spec(name), hw, memory.Shape(micro_batch=micro, seq_len=seq_len),
                           max_nodes=max_nodes)


def test_a_combined_way_that_does_not_fit_says_so_and_names_only_the_zero_stage_it_sets() -> None:
    # 32k tokens on 24 GiB GPUs: no rung fits, and no cluster does either. The way read "Together: ..., ZeRO-1,
    # ZeRO-2, ZeRO-3, ..." (its config sets stage 3 only) and "up to the first that fits" of a way that does not fit
    ways = _zero0_ways("meta-llama/Llama-3.2-1B", 4, 4, 8, 24, 64, 32768)
    way = next(w for w in ways if w.kind == "combined")
    assert not way.fits and way.config_patch["zero_optimization"]["stage"] == 3
    assert "ZeRO-3" in way.title and "ZeRO-1" not in way.title and "ZeRO-2" not in way.title, way.title
    assert "first that fits" not in way.detail and "still do not fit" in way.detail, way.detail


def test_the_combined_way_keeps_to_the_most_nodes_asked_for() -> None:
    # the single ways kept to max_nodes, the combined way searched up to 1024 nodes: 114 of them for max_nodes=2
    wide = next(w for w in _zero0_ways("meta-llama/Llama-3.1-405B", 8, 1, 8, 80, 64, 4096) if w.kind == "combined")
    assert wide.fits and wide.context_patch["nodes"] > 2
    for way in _zero0_ways("meta-llama/Llama-3.1-405B", 8, 1, 8, 80, 64, 4096, max_nodes=2):
        assert way.context_patch.get("nodes", 1) <= 2, way.title


def test_one_gpu_is_one_gpu_in_the_ways_words() -> None:
    # with offload, a node's 32 GiB of CPU RAM holds one rank: the combined way moves to 1 GPU, said "1 GPUs"
    ways = _zero0_ways("meta-llama/Llama-3.2-1B", 4, 4, 4, 16, 32, 8192)
    way = next(w for w in ways if w.kind == "combined")
    assert way.title.endswith("1 GPU (1 × 1)") and way.fits, way.title
    assert "fits on the fewest GPUs" in way.detail, way.detail
    assert not any("1 GPUs" in w.title + w.detail for w in ways), [w.title for w in ways]


def test_ways_on_gpus_that_sequence_parallel_size_does_not_divide_say_no_fractional_rank(
        llama7b: models.ModelSpec) -> None:
    # 8 GPUs ÷ sequence_parallel_size 3: DeepSpeed's batch check counts 2.67 data-parallel ranks (the validator
    # warns), and its sequence-parallel groups need a multiple of 3. The ways said "the global batch stays
    # 42.666666666666664 on 8 GPUs (2.66667 data-parallel ranks)" and "(42.6667 → 64)", and blamed a node's host
    # memory for the 6 of each node's 8 GPUs that the multiple of 3 asks for
    config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2, "sequence_parallel_size": 3,
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 0}}
    assert "misc.sequence-parallel" in {f.code for f in validate(config, world_size=8).findings}
    ways = fit.ways_to_fit(config, llama7b, A100, memory.Shape(micro_batch=8, seq_len=4096))
    for way in ways:
        assert not re.search(r"\d\.\d", way.title + way.detail), (way.title, way.detail)
    micro = next(w for w in ways if w.kind == "micro_batch")
    assert "each GPU still takes 16 samples per optimizer step" in micro.detail, micro.detail
    assert "sequence_parallel_size 3 does not divide the 8 GPUs" in micro.detail and "6 or 9" in micro.detail
    more = next(w for w in ways if w.kind == "gpus")
    gpus = more.context_patch["nodes"] * more.context_patch["gpus_per_node"]
    assert gpus % 3 == 0 and more.fits
    assert "the global batch becomes 64: 16 per data-parallel rank × 4 ranks" in more.detail, more.detail
    assert "multiple of sequence_parallel_size 3" in more.detail and "CPU RAM" not in more.detail, more.detail
    report = validate(fit.apply_patch(config, more.config_patch), world_size=gpus)
    assert not report.errors and "misc.sequence-parallel" not in {f.code for f in report.findings}


def test_the_combined_way_names_the_zero_stage_its_offload_rungs_move_to(llama7b: models.ModelSpec) -> None:
    # the optimizer-offload rung sets ZeRO-3 itself, so the ZeRO rungs were left out as unneeded and the title read
    # "Together: Micro batch 1 with 4 accumulation steps, optimizer offload" of a change from ZeRO-0 to ZeRO-3
    config = {**_ADAMW, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 0}}
    hw = memory.Hardware(gpus_per_node=1, nodes=1, gpu_memory_bytes=80 * GIB, cpu_ram_per_node_bytes=256 * GIB)
    way = next(w for w in fit.ways_to_fit(config, llama7b, hw, memory.Shape(micro_batch=4, seq_len=4096))
               if w.kind == "combined")
    assert way.config_patch["zero_optimization"]["stage"] == 3 and way.fits
    assert way.title == "Together: Micro batch 1 with 4 accumulation steps, ZeRO-3, optimizer offload", way.title


def test_the_parameter_offload_way_does_not_say_it_moves_an_nvme_optimizer_to_cpu_ram() -> None:
    # its patch keeps the optimizer's NVMe offload, its title read "parameters and optimizer offloaded to CPU RAM"
    config = {**_ADAMW, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"}}}
    hw = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=24 * GIB, cpu_ram_per_node_bytes=512 * GIB,
                         nvme_bytes_per_node=4000 * GIB)
    ways = fit.ways_to_fit(config, models.get_spec("meta-llama/Llama-2-13b-hf"), hw,
                           memory.Shape(micro_batch=8, seq_len=2048))
    way = next(w for w in ways if w.kind == "offload_param")
    assert way.config_patch["zero_optimization"]["offload_optimizer"]["device"] == "nvme"
    assert way.title == "ZeRO-3 with parameters offloaded to CPU RAM (the optimizer stays on NVMe)", way.title


@pytest.mark.parametrize(("batch", "gpus_per_node", "gpu_gib", "ram_gib", "shape"), [
    ({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}, 4, 16, 32,
     memory.Shape(1, 1024, recompute="full")),
    ({"train_batch_size": 64}, 8, 80, 128, memory.Shape(8, 1024)),
], ids=["derived-global-batch", "written-train-batch-size"])
def test_the_same_gpus_on_more_nodes_leave_the_batch_alone(llama7b: models.ModelSpec, batch: dict,
                                                           gpus_per_node: int, gpu_gib: int, ram_gib: int,
                                                           shape: memory.Shape) -> None:
    # fewer ranks per node, as many GPUs: the way said "the global batch shrinks with the GPU count (4 → 4)" or
    # "train_batch_size stays 64: gradient accumulation 1 → 1" and wrote the micro batch and accumulation DeepSpeed
    # derives itself
    zero = {"stage": 2} if "train_batch_size" in batch else {"stage": 2, "offload_optimizer": {"device": "cpu"}}
    config = {**_ADAMW, **batch, "zero_optimization": zero}
    hw = memory.Hardware(gpus_per_node=gpus_per_node, nodes=1, gpu_memory_bytes=gpu_gib * GIB,
                         cpu_ram_per_node_bytes=ram_gib * GIB)
    way = next(w for w in fit.ways_to_fit(config, llama7b, hw, shape)
               if w.kind == "gpus" and w.title.startswith(f"{gpus_per_node} GPUs ("))
    assert way.context_patch["nodes"] * way.context_patch["gpus_per_node"] == gpus_per_node
    assert way.config_patch == {}, way.config_patch
    assert way.detail.endswith("than a node has).") and "batch" not in way.detail, way.detail
