"""Make it fit against the validator (a read-only hunt of 30 Nov 2026): a way that moved to ZeRO-3 kept keys DeepSpeed
refuses there (``compute_grad_norm: false``, ``prescale_gradients``, an NVMe offload without a path ZeRO-3 starts
using), and a way that changed the GPU count ignored AutoTP's and hpZ's groups. Every way now makes a config the
validator accepts on the GPUs it runs on (no error the config did not have), or is not offered."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.fit import apply_patch, ways_to_fit
from core.hardware import find_gpu
from core.memory import Hardware, Shape
from core.models import get_spec
from core.validate import validate

ADAMW = {"type": "AdamW", "params": {"lr": 1e-4}}
BASE = {"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}, "optimizer": ADAMW}
A100_40 = Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=40 * 2**30)
A100_80 = int(find_gpu("NVIDIA A100 80GB").memory_gib * 2**30)  # what PyTorch reports, as the CLI sizes with


def _errors(config, gpus):
    return {(f.code, f.path) for f in validate(config, world_size=gpus).errors}


def _judged(config, model, hardware):
    ways = ways_to_fit(config, get_spec(model), hardware, Shape(seq_len=2048, micro_batch=4))
    assert ways, "the job fits already: nothing to judge"
    own = _errors(config, hardware.total_gpus)
    for way in ways:
        gpus = way.context_patch.get("nodes", hardware.nodes) * way.context_patch.get(
            "gpus_per_node", hardware.gpus_per_node)
        new = _errors(apply_patch(config, way.config_patch), gpus) - own
        assert not new, (way.title, new)
    return ways


@pytest.mark.parametrize(("extra", "removed"), [
    ({"zero_optimization": {"stage": 2, "compute_grad_norm": False}, "gradient_clipping": 0},
     "zero_optimization.compute_grad_norm"),
    ({"zero_optimization": {"stage": 1}, "prescale_gradients": True}, "prescale_gradients"),
])
def test_a_zero3_way_removes_what_deepspeed_refuses_at_zero3_and_says_so(extra, removed):
    ways = _judged({**BASE, **extra}, "meta-llama/Llama-2-13b-hf", A100_40)
    stage3 = [w for w in ways if apply_patch({**BASE, **extra}, w.config_patch)["zero_optimization"].get("stage") == 3]
    assert stage3 and any(w.fits for w in stage3)
    assert all(f"removes {removed}" in w.detail for w in stage3), [w.detail for w in stage3]


def test_no_way_starts_using_an_nvme_offload_without_its_path():
    config = {**BASE, "zero_optimization": {"stage": 2, "offload_param": {"device": "nvme"}}}
    ways = _judged(config, "meta-llama/Llama-2-13b-hf", A100_40)
    assert not [w for w in ways if apply_patch(config, w.config_patch)["zero_optimization"].get("stage") == 3
                and "offload_param" in apply_patch(config, w.config_patch)["zero_optimization"]]


def test_gpu_count_ways_keep_autotps_groups_whole():
    config = {**BASE, "zero_optimization": {"stage": 1}, "tensor_parallel": {"autotp_size": 2}}
    ways = _judged(config, "meta-llama/Llama-2-7b-hf", Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=A100_80))
    counts = [w.context_patch["nodes"] * w.context_patch["gpus_per_node"] for w in ways if "nodes" in w.context_patch]
    assert counts and all(count % 2 == 0 for count in counts), counts


def test_gpu_count_ways_keep_hpzs_groups_whole(tmp_path, capsys):
    """``dsconfig fit`` of a ZeRO++ job with hpZ groups of 8 on one node of 4: its first way went to 12 GPUs (3 x 4),
    where ZeRO-3 cannot build groups of 8 (zero.hpz-partition)."""
    config = {**BASE, "gradient_accumulation_steps": 2,
              "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8, "zero_quantized_weights": True}}
    path = tmp_path / "hpz.json"
    path.write_text(json.dumps(config))
    main(["fit", str(path), "--model", "meta-llama/Llama-2-70b-hf", "--gpus", "4", "--gpus-per-node", "4",
          "--format", "json"])
    ways = json.loads(capsys.readouterr().out)["ways"]
    counts = []
    for way in ways:
        if "nodes" in way["context_patch"]:
            count = way["context_patch"]["nodes"] * way["context_patch"]["gpus_per_node"]
            counts.append(count)
            assert ("zero.hpz-partition", "zero_optimization.zero_hpz_partition_size") not in _errors(
                apply_patch(config, way["config_patch"]), count), way["title"]
    assert counts
