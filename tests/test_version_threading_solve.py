"""The solvers (largest micro batch, fewest GPUs, every ZeRO option, the sweeps), the ways to fit built on them,
calibration and the app's sweep table read the config as the chosen DeepSpeed release, not always the newest.

The config: Llama-3-8B, ZeRO-2, bf16 with bf16 master weights and optimizer states, keys that releases before 0.17.1
ignore (fp32 master weights: 46.7 GiB per GPU as 0.16.9 reads it on 8 GPUs, 40.8 as 0.19.8 does)."""

from __future__ import annotations

import pytest

from core import fit, memory, perf
from core.models import get_config, get_spec
from core.perf.recommend import hardware_for
from ui import memory as ui_memory

LLAMA3 = "meta-llama/Meta-Llama-3-8B"
OLD, NEW = "0.16.9", "0.19.8"
MASTER_BF16 = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2},
               "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}
#: Between the two readings of MASTER_BF16 on 8 GPUs.
TIGHT_GPU = memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=44 * memory.GIB,
                            cpu_ram_per_node_bytes=512 * memory.GIB)
SHAPE = memory.Shape(1, 2048)
#: Recomputed activations are small: the master weights' dtype moves the largest micro batch (3 vs 5 on TIGHT_GPU).
RECOMPUTED = memory.Shape(16, 2048, recompute="full")


@pytest.fixture(scope="module")
def llama3():
    return get_spec(LLAMA3)


def test_max_micro_batch_reads_the_chosen_release(llama3):
    old = memory.max_micro_batch(MASTER_BF16, llama3, TIGHT_GPU, RECOMPUTED, version=OLD)
    new = memory.max_micro_batch(MASTER_BF16, llama3, TIGHT_GPU, RECOMPUTED, version=NEW)
    assert (old, new) == (3, 5)
    assert memory.max_micro_batch(MASTER_BF16, llama3, TIGHT_GPU, RECOMPUTED) == new  # the newest by default
    assert memory.max_micro_batch(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=OLD) == 0
    assert memory.max_micro_batch(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=NEW) == 1


def test_min_gpus_reads_the_chosen_release(llama3):
    old = memory.min_gpus(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=OLD)
    new = memory.min_gpus(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=NEW)
    assert old is not None and new is not None
    assert (old.nodes, old.gpus_per_node) == (2, 8)
    assert (new.nodes, new.gpus_per_node) == (1, 6)
    assert memory.estimate(MASTER_BF16, llama3, old, SHAPE, version=OLD).fits
    assert not memory.estimate(MASTER_BF16, llama3, new, SHAPE, version=OLD).fits


def test_options_table_reads_each_option_as_the_chosen_release(llama3):
    old = memory.options_table(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=OLD).set_index(
        ["stage", "offload_optimizer", "offload_param"])
    new = memory.options_table(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=NEW).set_index(
        ["stage", "offload_optimizer", "offload_param"])
    zero2, zero3_param = (2, "none", "none"), (3, "none", "cpu")
    assert old.loc[zero2, "gpu_gib"] == pytest.approx(46.68, abs=0.01)
    assert new.loc[zero2, "gpu_gib"] == pytest.approx(40.79, abs=0.01)
    assert (bool(old.loc[zero2, "fits"]), bool(new.loc[zero2, "fits"])) == (False, True)
    assert (old.loc[zero3_param, "max_micro_batch"], new.loc[zero3_param, "max_micro_batch"]) == (1, 2)
    for option in old.index:
        config = memory.with_zero_option(MASTER_BF16, *option)
        assert old.loc[option, "gpu_bytes"] == memory.estimate(config, llama3, TIGHT_GPU, SHAPE,
                                                               version=OLD).gpu_bytes


def test_the_sweeps_read_the_chosen_release(llama3):
    values = [1, 2, 4]
    old = memory.sweep_totals(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, "micro_batch", values, version=OLD)
    new = memory.sweep_totals(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, "micro_batch", values, version=NEW)
    for micro, row in zip(values, old.itertuples(), strict=True):
        expected = memory.estimate({**MASTER_BF16, "train_micro_batch_size_per_gpu": micro}, llama3, TIGHT_GPU,
                                   memory.Shape(micro, 2048), version=OLD).gpu_bytes
        assert row.gpu_bytes == pytest.approx(expected, abs=1)  # the arrays are floats
    assert (old["gpu_bytes"] > new["gpu_bytes"]).all()
    by_part = memory.sweep(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, "micro_batch", values, version=OLD)
    assert by_part.groupby("micro_batch")["bytes"].sum().max() > \
        memory.sweep(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, "micro_batch", values).groupby(
            "micro_batch")["bytes"].sum().max()


def test_the_micro_batch_way_picks_what_fits_as_the_chosen_release_reads_it(llama3):
    """The way's micro batch was the newest release's largest (4 of 5), which does not fit as 0.16.9 reads it."""
    config = {**MASTER_BF16, "train_micro_batch_size_per_gpu": 16}

    def micro_way(version: str) -> fit.Way:
        ways = fit.ways_to_fit(config, llama3, TIGHT_GPU, RECOMPUTED, version=version)
        return next(w for w in ways if w.kind == "micro_batch")

    old, new = micro_way(OLD), micro_way(NEW)
    assert old.config_patch == {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8}
    assert new.config_patch == {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4}
    assert old.fits and new.fits


def test_the_gpu_count_way_is_the_smallest_cluster_as_the_chosen_release_reads_it(llama3):
    """As 0.16.9 reads the config the way was 6 GPUs on one node (the newest release's smallest), which does not fit."""
    ways = fit.ways_to_fit(MASTER_BF16, llama3, TIGHT_GPU, SHAPE, version=OLD)
    gpus = [w for w in ways if w.kind == "gpus" and not w.config_patch.get("zero_optimization")]
    assert len(gpus) == 1
    assert gpus[0].context_patch == {"nodes": 2, "gpus_per_node": 8}
    assert gpus[0].fits


def _calibration_config() -> dict:
    return {**MASTER_BF16, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                                                    "pin_memory": True}}}


def test_calibrate_fits_the_step_as_the_chosen_release_predicts_it(llama3):
    config = _calibration_config()
    cluster = perf.Cluster("NVIDIA H100 80GB", 8, 1)
    measured = 1.5 * perf.predict(config, llama3, cluster, SHAPE, version=OLD).step_seconds
    old = perf.calibrate(config, llama3, cluster, SHAPE, measured_step_seconds=measured, version=OLD)
    new = perf.calibrate(config, llama3, cluster, SHAPE, measured_step_seconds=measured)
    assert perf.predict(config, llama3, old, SHAPE, version=OLD).step_seconds == pytest.approx(measured, rel=1e-6)
    assert old.compute_efficiency != pytest.approx(new.compute_efficiency, rel=1e-3)
    assert perf.predict(config, llama3, new, SHAPE, version=OLD).step_seconds != pytest.approx(measured, rel=1e-3)


def test_calibrate_fits_the_peak_as_the_chosen_release_estimates_it(llama3):
    cluster = perf.Cluster("NVIDIA H100 80GB", 8, 1)
    hardware = hardware_for(cluster)
    peak = int(1.05 * memory.estimate(MASTER_BF16, llama3, hardware, SHAPE, version=OLD).gpu_bytes)
    old = perf.calibrate(MASTER_BF16, llama3, cluster, SHAPE, measured_peak_bytes=peak, version=OLD)
    new = perf.calibrate(MASTER_BF16, llama3, cluster, SHAPE, measured_peak_bytes=peak)
    reached = memory.estimate(MASTER_BF16, llama3, hardware, SHAPE, allowances=old.memory_allowances,
                              version=OLD).gpu_bytes
    assert reached == pytest.approx(peak, rel=1e-6)
    assert old.memory_allowances.allocator_fraction == pytest.approx(0.103, abs=0.001)
    assert new.memory_allowances.allocator_fraction == pytest.approx(0.266, abs=0.001)


def test_the_apps_sweep_table_reads_the_sessions_release(llama3):
    """The ZeRO page's sweep chart and table (``ui.memory.sweep_table``) sized the config as the newest release."""
    context = {"model": LLAMA3, "model_config": get_config(LLAMA3), "total_params": llama3.total_params,
               "largest_layer_params": llama3.largest_layer_params, "gpus_per_node": 8, "nodes": 1,
               "gpu_memory_gib": 44.0, "cpu_ram_gib": 512.0, "nvme_gib": 0}

    def table(version: str):
        keys = ui_memory.cache_keys(MASTER_BF16, {**context, "version": version}, SHAPE)
        return ui_memory.sweep_table(*keys, "micro_batch", (1, 2))

    old, new = table(OLD), table(NEW)
    assert old["gpu_gib"].iloc[0] == pytest.approx(46.68, abs=0.01)
    assert new["gpu_gib"].iloc[0] == pytest.approx(40.79, abs=0.01)
    assert list(old["fits"]) == [False, False] and bool(new["fits"].iloc[0])
