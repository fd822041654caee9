"""The planner times the batch the chosen release runs (core.batch.batch_run: elastic training's where the release
runs it, data-parallel ranks as it counts them), ignores sequence_parallel_size where the release does (0.16.x),
and times a Ulysses all-to-all inside one MI250X package at the package's link."""

from __future__ import annotations

from core.batch import batch_run
from core.memory import Shape
from core.memory.estimate import TrainingSettings
from core.models import get_spec
from core.perf import Cluster, predict
from core.perf.settings import read_settings

LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
H100 = "NVIDIA H100 80GB"
MI250X = "AMD MI250X 128GB"
ULYSSES = "sequence-parallel all-to-all (Ulysses)"
SP_ON_16 = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2,
            "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
#: DeepSpeed 0.19.7's elastic search: candidates 1680 (2 x 840) and 1440; 1680 is valid on 8 GPUs (840 % 8 == 0),
#: whose largest micro batch dividing 1680 / 8 = 210 is 6: 35 steps. On 16 GPUs no micro batch divides 105.
ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1, "ignore_non_elastic_batch_info": True},
           "train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}


def test_sequence_parallel_on_0_16_accumulates_over_every_gpu_as_the_release_does():
    """0.16.x ignores sequence_parallel_size: 64 = 2 x 2 x 16 GPUs, not 2 x 4 x 8 data-parallel ranks."""
    assert batch_run(SP_ON_16, 16, "0.16.9") == (64, 2, 2)
    assert batch_run(SP_ON_16, 16, "0.19.7") == (64, 2, 4)
    for version, accum in (("0.16.9", 2), ("0.19.7", 4)):
        assert read_settings(SP_ON_16, 16, version).grad_accum == accum
        step = predict(SP_ON_16, LLAMA7, Cluster(H100, 8, nodes=2), Shape(micro_batch=2, seq_len=2048),
                       version=version)
        assert step.gradient_accumulation_steps == accum


def test_elastic_training_is_timed_with_the_batch_it_computes():
    settings = read_settings(ELASTIC, 8, "0.19.7")
    assert (settings.config_micro_batch, settings.grad_accum) == (6, 35) == batch_run(ELASTIC, 8, "0.19.7")[1:]
    step = predict(ELASTIC, LLAMA7, Cluster(H100, 8), Shape(micro_batch=6, seq_len=1024), version="0.19.7")
    assert step.gradient_accumulation_steps == 35
    assert step.tokens_per_step == 1680 * 1024
    # 0.19.8 no longer reads elasticity: the written micro batch, one step per GPU's sample
    newest = read_settings(ELASTIC, 8, "0.19.8")
    assert (newest.config_micro_batch, newest.grad_accum) == (8, 1)


def test_a_gpu_count_elastic_training_refuses_says_so_not_the_batch_keys():
    settings = read_settings(ELASTIC, 16, "0.19.7")
    assert settings.grad_accum is None and settings.elastic
    assert "elastic training" in settings.batch_problem and "16 GPUs" in settings.batch_problem
    step = predict(ELASTIC, LLAMA7, Cluster(H100, 8, nodes=2), Shape(micro_batch=6, seq_len=1024),
                   version="0.19.7")
    assert step.gradient_accumulation_steps == 1
    assert any("elastic training" in n and "batch keys" not in n for n in step.notes)


def test_0_16_sizes_and_times_whole_sequences_with_sequence_parallel_size_written():
    without = {k: v for k, v in SP_ON_16.items() if k != "sequence_parallel_size"}
    memory = TrainingSettings.from_ds_config(SP_ON_16, "0.16.9")
    assert memory.sequence_parallel == 1
    assert any("0.16.9 ignores sequence_parallel_size" in n for n in memory.notes)
    assert TrainingSettings.from_ds_config(SP_ON_16, "0.19.7").sequence_parallel == 2
    settings = read_settings(SP_ON_16, 16, "0.16.9")
    assert settings.sp == 1 and settings.comm_bytes == 2  # no fp32 seq_parallel_communication_data_type either
    cluster, shape = Cluster(H100, 8, nodes=2), Shape(micro_batch=2, seq_len=8192)
    old = predict(SP_ON_16, LLAMA7, cluster, shape, version="0.16.9")
    assert ULYSSES not in old.breakdown
    assert old.step_seconds == predict(without, LLAMA7, cluster, shape, version="0.16.9").step_seconds
    assert ULYSSES in predict(SP_ON_16, LLAMA7, cluster, shape, version="0.19.7").breakdown


def test_mi250x_ulysses_inside_one_package_runs_at_the_package_link():
    """8 GCDs in 4 packages: an SP group of 2 spans one package (200 GB/s), of 4 two packages (the 50 GB/s link)."""
    shape = Shape(micro_batch=1, seq_len=4096)

    def all_to_all(sp: int, intra_gbyte_s: float | None = None) -> float:
        config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "train_batch_size": 8 // sp,
                  "sequence_parallel_size": sp, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
        return predict(config, LLAMA7, Cluster(MI250X, 8, intra_node_gbyte_s=intra_gbyte_s), shape).breakdown[ULYSSES]

    assert all_to_all(2) == all_to_all(2, 200) == all_to_all(2, 50) / 4
    assert all_to_all(4) == all_to_all(4, 50)
