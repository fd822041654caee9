"""Make it fit with 16-bit master weights: each way removes the master-weights keys the validator would refuse at
the stage and offload it moves to (``core.rules.precision.refused_master_weights``), says so, and is sized and costed
without them; every way's config, applied as the ZeRO page applies it (``fit.apply_patch``), is accepted."""

from __future__ import annotations

import itertools

import pytest

from core import fit, memory, models
from core.validate import validate

FP16_MASTER = {"train_batch_size": 64, "fp16": {"enabled": True, "fp16_master_weights_and_grads": True},
               "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
               "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
BF16_MASTER = {"train_batch_size": 64,
               "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
               "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
               "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
BF16_MASTER_ON_GPU = {"train_batch_size": 64,
                      "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
                      "zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
BF16_MASTER_FP32_STATES = {**BF16_MASTER, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}
CONFIGS = {"fp16-master-offload": FP16_MASTER, "bf16-master-offload": BF16_MASTER,
           "bf16-master-on-gpu": BF16_MASTER_ON_GPU, "bf16-master-fp32-states-offload": BF16_MASTER_FP32_STATES}
MASTER_KEYS = ("fp16.fp16_master_weights_and_grads", "bf16.bf16_master_weights_and_grads",
               "bf16.bf16_optimizer_states")
RELEASES = ("0.16.9", "0.19.7", "0.19.8")
MODELS = ("meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf")
GPU_GIB = (80, 24)


def _has(config: dict, path: str) -> bool:
    section, _, key = path.partition(".")
    return isinstance(config.get(section), dict) and key in config[section]


def _hardware(gib: int) -> memory.Hardware:
    return memory.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=gib * memory.GIB,
                           cpu_ram_per_node_bytes=512 * memory.GIB, nvme_bytes_per_node=4000 * memory.GIB)


def _errors(config: dict, gpus: int, version: str) -> list[str]:
    return [f.code for f in validate(config, world_size=gpus, version=version).errors]


@pytest.mark.parametrize("name, version, model_id, gib", list(itertools.product(CONFIGS, RELEASES, MODELS, GPU_GIB)))
def test_every_way_with_master_weights_is_accepted_and_says_what_it_removed(name, version, model_id, gib) -> None:
    config, hardware = CONFIGS[name], _hardware(gib)
    model, shape = models.get_spec(model_id), memory.Shape(micro_batch=1, seq_len=4096)
    present = [path for path in MASTER_KEYS if _has(config, path)]
    if _errors(config, 8, version):
        pytest.skip(f"{name} is refused as written on {version}")
    ways = fit.ways_to_fit(config, model, hardware, shape, max_nodes=16, version=version)
    for way in ways:
        applied, hw, after = fit.way_inputs(way, config, hardware, shape, version)
        assert applied == fit.apply_patch(config, way.config_patch)  # what ui.actions.apply_way writes
        assert _errors(applied, hw.total_gpus, version) == [], (way.title, way.config_patch)
        removed = [path for path in present if not _has(applied, path)]
        for path in removed:
            assert f"also removes {path}" in way.detail or f"and {path}" in way.detail, (way.title, way.detail)
        if not removed:
            assert "also removes" not in way.detail, (way.title, way.detail)
        # sized as applied: without the removed keys
        est = memory.estimate(applied, model, hw, after, version=version)
        assert (way.gpu_bytes, way.cpu_bytes_per_node, way.fits) == (est.gpu_bytes, est.cpu_bytes_per_node, est.fits), \
            way.title


def _ways(config: dict, version: str, gib: int = 80) -> dict[str, fit.Way]:
    found = fit.ways_to_fit(config, models.get_spec(MODELS[0]), _hardware(gib),
                            memory.Shape(micro_batch=1, seq_len=4096), max_nodes=16, version=version)
    return {way.title: way for way in found}


def test_zero_3_ways_on_016_drop_fp16_master_weights_and_say_why() -> None:
    ways = _ways(FP16_MASTER, "0.16.9")
    said = ("The change also removes fp16.fp16_master_weights_and_grads: DeepSpeed 0.16.9 does not support it at "
            "ZeRO-3 (sized and costed without it).")
    for title in ("ZeRO stage 3", "No offload (ZeRO stage 3)", "Offload to NVMe instead of CPU RAM (ZeRO-3)",
                  "ZeRO-3 with parameters and optimizer offloaded to CPU RAM"):
        assert ways[title].config_patch["fp16"] == {"fp16_master_weights_and_grads": None}, title
        assert ways[title].detail.endswith(said), title
    together = next(way for title, way in ways.items() if title.startswith("Together"))
    assert together.fits and together.detail.endswith(said)
    assert fit.apply_patch(FP16_MASTER, together.config_patch)["fp16"] == {"enabled": True}
    # the micro batch keeps ZeRO-2 with the CPU-Adam offload, where 0.16.9 runs them: nothing to remove or say
    micro = next(way for way in ways.values() if way.kind == "micro_batch")
    assert "fp16" not in micro.config_patch and "removes" not in micro.detail


def test_no_offload_on_019_drops_master_weights_the_zero_optimizer_refuses_and_sizes_fp32_masters() -> None:
    for config, paths in ((FP16_MASTER, "fp16.fp16_master_weights_and_grads"),
                          (BF16_MASTER_FP32_STATES, "bf16.bf16_master_weights_and_grads")):
        way = _ways(config, "0.19.8")["No offload (ZeRO stage 3)"]
        assert f"The change also removes {paths}: DeepSpeed 0.19.8 runs it at ZeRO-3 only with the optimizer " \
               "offloaded to the CPU as DeepSpeedCPUAdam" in way.detail
        applied = fit.apply_patch(config, way.config_patch)
        kept = memory.estimate(fit.apply_patch(config, {"zero_optimization": way.config_patch["zero_optimization"]}),
                               models.get_spec(MODELS[0]), _hardware(80), memory.Shape(micro_batch=1, seq_len=4096),
                               version="0.19.8")
        assert _errors(applied, 8, "0.19.8") == []
        assert way.gpu_bytes > kept.gpu_bytes  # fp32 master weights on the GPUs: more than the refused 16-bit ones
