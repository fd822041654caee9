"""What a precision and a ZeRO bug hunt found (30 Nov), each checked against the real releases:

- ``torch_autocast`` beside bf16 (or fp16) fails at ``deepspeed.initialize`` in 0.17.2-0.18.2 ("Cannot enable both
  torch autocast and bfloat16", real 0.17.6) and trains from 0.18.3; beside ZeRO++'s quantized weights it fails in
  every release with the section (real 0.19.8 and 0.17.6): the validator said OK;
- without ZeRO, which precision/accumulation pairs the engine refuses differs by release: bf16 with an fp32
  accumulation trains in 0.16.9 and 0.17.6 (BF16_Optimizer) and fails from 0.18; bf16 with a bf16 accumulation
  fails in 0.16.9 ("Bfloat16 wrapper must use a gradient accumulation type of fp32"): the validator applied
  0.19.8's rule to every release;
- ``compute_grad_norm`` false with the optimizer offloaded fails in ZeRO-1/2's optimizer (real 0.19.8: "does not
  support optimizer offload"): the validator said OK;
- NVMe offload_optimizer at ZeRO-1 with bf16 and an fp32 accumulation gets BF16_Optimizer (``zero_cpu_offload()``
  is the CPU device only; real 0.19.8 trains with BF16_Optimizer): the memory model estimated a CPU offload.

The release facts come from the profiles (``torch_autocast_checks``, ``optimizer_wrappers``, read from each
release's code by ``scripts/profile_extract.py``); the real runs are the initialize cases and the edge configs'
per-release proofs (``tests/oracle/initialize_cases.py``, ``tests/oracle/edge_configs.py``).
"""

from __future__ import annotations

import pytest

from core import memory as m
from core import versions
from core.validate import validate

BASE = {"train_micro_batch_size_per_gpu": 1}
AUTOCAST_BF16 = {**BASE, "bf16": {"enabled": True}, "torch_autocast": {"enabled": True, "dtype": "bf16"}}


def _errors(config: dict, version: str) -> dict[str, object]:
    return {f.code: f for f in validate(config, version=version).findings if f.severity == "error"}


@pytest.mark.parametrize(("version", "refused"), [
    ("0.16.9", None), ("0.17.1", None), ("0.17.2", True), ("0.17.6", True), ("0.18.2", True), ("0.18.3", False),
    ("0.19.8", False),
])
def test_the_profiles_know_which_releases_refuse_autocast_beside_bf16(version, refused):
    check = versions.torch_autocast_check(version, "torch autocast and bfloat16")
    quantized = versions.torch_autocast_check(version, "torch autocast and zero quantized weights")
    if refused is None:  # no torch_autocast section yet
        assert check is None and quantized is None
    else:
        assert (check is not None) is refused
        assert quantized == "Cannot enable both torch autocast and zero quantized weights"


@pytest.mark.parametrize(("version", "fails"), [("0.17.6", True), ("0.18.2", True), ("0.18.9", False),
                                                ("0.19.8", False)])
def test_autocast_beside_bf16_is_an_initialize_error_where_the_release_refuses_it(version, fails):
    errors = _errors(AUTOCAST_BF16, version)
    assert ("engine.autocast-conflict" in errors) is fails
    if fails:
        finding = errors["engine.autocast-conflict"]
        assert finding.path == "bf16.enabled" and "Cannot enable both torch autocast and bfloat16" in finding.message
        assert [(op.op, op.path, op.value) for op in finding.fix.ops] == [("set", "bf16.enabled", False)]


def test_autocast_enabled_auto_counts_as_on_beside_bf16():
    config = {**AUTOCAST_BF16, "torch_autocast": {"enabled": "auto"}}  # a truth value to the engine
    assert "engine.autocast-conflict" in _errors(config, "0.17.6")


@pytest.mark.parametrize("version", ["0.17.6", "0.19.8"])
def test_autocast_beside_quantized_weights_is_an_error_in_every_release_with_autocast(version):
    config = {**BASE, "torch_autocast": {"enabled": True}, "zero_optimization": {"stage": 3,
                                                                                "zero_quantized_weights": "true"}}
    finding = _errors(config, version)["engine.autocast-conflict"]
    assert finding.path == "zero_optimization.zero_quantized_weights"
    off = {**config, "torch_autocast": {"enabled": False}}
    assert "engine.autocast-conflict" not in _errors(off, version)


def test_a_16_bit_communication_dtype_beside_autocast_fails_only_where_the_release_checks_it():
    config = {**BASE, "torch_autocast": {"enabled": True}, "communication_data_type": "bf16"}
    assert "engine.autocast-conflict" in _errors(config, "0.17.2")
    assert "engine.autocast-conflict" not in _errors(config, "0.17.6")


@pytest.mark.parametrize(("version", "accum", "fails"), [
    ("0.16.9", "fp32", False), ("0.17.6", "fp32", False), ("0.18.9", "fp32", True), ("0.19.8", "fp32", True),
    ("0.16.9", "bf16", True), ("0.17.6", "bf16", False), ("0.19.8", "bf16", False),
])
def test_the_dtype_mix_without_zero_is_the_releases(version, accum, fails):
    config = {**BASE, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": accum}}
    errors = _errors(config, version)
    assert ("engine.dtype-mix" in errors) is fails
    if fails:  # the release's default accumulation for bf16 trains: removing the key is the fix
        assert [op.op for op in errors["engine.dtype-mix"].fix.ops] == ["delete"]
    if version == "0.16.9" and fails:
        assert "Bfloat16 wrapper must use a gradient accumulation type of fp32" in errors["engine.dtype-mix"].message


def test_the_optimizer_wrapper_probe_reads_the_releases_engine():
    assert versions.optimizer_wrapper("0.16.9", "bf16", None, 0) == "bf16"  # BF16_Optimizer by default
    assert versions.optimizer_wrapper("0.19.8", "bf16", None, 0) == "ddp_bf16"
    assert versions.optimizer_wrapper("0.19.8", "bf16", "fp32", 1) == "bf16"
    assert versions.optimizer_wrapper("0.19.8", "fp16", "fp32", 0).startswith("NotImplementedError: ")


@pytest.mark.parametrize("device", ["cpu", "nvme"])
def test_compute_grad_norm_off_with_the_optimizer_offloaded_is_an_initialize_error(device):
    config = {**BASE, "gradient_clipping": 0, "zero_optimization": {
        "stage": 2, "compute_grad_norm": False, "offload_optimizer": {"device": device, "nvme_path": "/nvme"}}}
    finding = _errors(config, "0.19.8")["engine.compute-grad-norm-offload"]
    assert "does not support optimizer offload" in finding.message
    assert [(op.path, op.value) for op in finding.fix.ops] == [("zero_optimization.compute_grad_norm", True)]
    config["zero_optimization"]["compute_grad_norm"] = True
    assert "engine.compute-grad-norm-offload" not in _errors(config, "0.19.8")


NVME_BF16_ZERO1 = {**BASE, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"},
                   "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}


def test_nvme_offload_beside_bf16_optimizer_is_estimated_as_what_runs():
    model = m.ModelCounts(1_000_000_000, 50_000_000)
    nvme = m.estimate(NVME_BF16_ZERO1, model, m.Hardware(gpus_per_node=8), m.Shape())
    none = {**NVME_BF16_ZERO1, "zero_optimization": {"stage": 1}}
    plain = m.estimate(none, model, m.Hardware(gpus_per_node=8), m.Shape())
    assert nvme.gpu_bytes == plain.gpu_bytes and nvme.cpu_pinned_bytes_per_node == plain.cpu_pinned_bytes_per_node
    assert any("BF16_Optimizer" in note for note in nvme.notes)


def test_the_nvme_warning_says_bf16_optimizer_offloads_nothing():
    (finding,) = [f for f in validate(NVME_BF16_ZERO1).findings if f.code == "zero.nvme-below-3"]
    assert "BF16_Optimizer" in finding.message and "CPU RAM" not in finding.message
    plain = {**NVME_BF16_ZERO1, "data_types": {}}
    (finding,) = [f for f in validate(plain).findings if f.code == "zero.nvme-below-3"]
    assert "CPU RAM" in finding.message


LAMB = {**BASE, "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}}


@pytest.mark.parametrize(("version", "path"), [("0.16.9", "bf16.enabled"), ("0.17.6", None), ("0.19.8", None)])
def test_lamb_under_bf16_needs_what_the_release_reads(version, path):
    """0.16.9 sets a static loss scale of 1.0 under bf16 (get_loss_scale), so Lamb's check fails there (real 0.16.9:
    "DeepSpeed lamb optimizer requires dynamic loss scaling"); from 0.17 the fp16 section's default 0 is read."""
    errors = _errors({**LAMB, "bf16": {"enabled": True}}, version)
    finding = errors.get("optimizer.lamb-static-loss-scale")
    assert (finding.path if finding else None) == path
    if finding:
        assert finding.fix is None and "static loss scale of 1" in finding.message


@pytest.mark.parametrize(("version", "error", "unused_warning"), [("0.16.9", False, True), ("0.19.8", True, False)])
def test_a_static_loss_scale_with_fp16_off_is_read_by_lambs_check_only_where_the_release_reads_it(
        version, error, unused_warning):
    """0.16.x reads fp16.loss_scale only with fp16 on (the Lamb check passes; the key does nothing, as the warning
    says); 0.17 on reads it with fp16 off too (real 0.17.6 and 0.19.8 fail), so it is not called unused there."""
    config = {**LAMB, "fp16": {"enabled": False, "loss_scale": 128}}
    codes = {f.code for f in validate(config, version=version).findings}
    assert ("optimizer.lamb-static-loss-scale" in codes) is error
    assert ("precision.loss-scale-unused" in codes) is unused_warning


@pytest.mark.parametrize(("optimizer", "cpu_class"), [
    ({"type": "AdamW", "params": {"lr": 1e-3}}, "DeepSpeedCPUAdam"),
    ({"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}, None),
])
def test_offload_at_stage_0_says_deepspeed_still_builds_the_cpu_optimizer(optimizer, cpu_class):
    """zero_use_cpu_optimizer() ignores the stage (real 0.19.8 at stage 0 with offload: DeepSpeedCPUAdam, whose step
    asserts "CPUAdam param is on ... and must be 'cpu'" for GPU tensors); torch's AdamW is not swapped."""
    config = {**BASE, "optimizer": optimizer, "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}}
    (finding,) = [f for f in validate(config).findings if f.code == "zero.offload-optimizer-stage-0"]
    assert ("DeepSpeedCPUAdam" in finding.message) is (cpu_class is not None)
    assert "nothing is offloaded" in finding.message


def test_nvme_parameter_offload_keeps_max_in_cpu_elements_in_pinned_cpu_memory():
    """ZeRO-3 with offload_param allocates a pinned flat CPU buffer per parameter group for the partition
    (stage3.py ``_create_param_groups_fp16_flat_cpu_memory``); under NVMe only min(partition, max_in_cpu) of it."""
    model = m.ModelCounts(4_000_000_000, 100_000_000)
    parts = {}
    for max_in_cpu in (10**9, 10**8):
        cfg = {**BASE, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3, "offload_param": {
            "device": "nvme", "nvme_path": "/nvme", "max_in_cpu": max_in_cpu}}}
        est = m.estimate(cfg, model, m.Hardware(gpus_per_node=8), m.Shape())
        (held,) = [c for c in est.components if c.name.startswith("parameters held in CPU memory")]
        parts[max_in_cpu] = held
    assert parts[10**9].bytes == 2 * 500_000_000 * 8  # the whole partition (P/N = 5e8 < max_in_cpu), 8 ranks
    assert parts[10**8].bytes == 2 * 100_000_000 * 8
    assert parts[10**8].device == "cpu" and parts[10**8].pinned


@pytest.mark.parametrize(("version", "prefetch_one"), [("0.17.6", False), ("0.19.8", True)])
def test_allgather_sequential_sets_the_prefetch_bucket_to_one_where_the_engine_does(version, prefetch_one):
    """From 0.18.x the engine sets ZeRO-3's prefetch_bucket_size to 1 when stage3_allgather_sequential is on (read
    from each release's engine: ``allgather_sequential_prefetch_one``); the gather buffer is then the largest layer."""
    model = m.ModelCounts(1_000_000_000, 50_000_000)
    zero = {"stage": 3, "stage3_prefetch_bucket_size": 200_000_000, "stage3_allgather_sequential": True}
    est = m.estimate({**BASE, "bf16": {"enabled": True}, "zero_optimization": zero}, model,
                     m.Hardware(gpus_per_node=8), m.Shape(), version=version)
    (gathered,) = [c for c in est.components if c.name.startswith("gathered parameters")]
    assert gathered.bytes == 2 * (50_000_000 + (1 if prefetch_one else 200_000_000))
    assert any("stage3_allgather_sequential" in note for note in est.notes) is prefetch_one


@pytest.mark.parametrize(("optimizer", "fails_on_gpus"), [
    ({"type": "AdamW", "params": {"lr": 1e-3}}, True),  # DeepSpeedCPUAdam (zero_use_cpu_optimizer counts NVMe)
    ({"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}, False),  # torch's AdamW steps on GPU tensors
])
def test_bf16_optimizer_under_nvme_says_the_first_step_fails_only_for_a_cpu_optimizer(optimizer, fails_on_gpus):
    config = {**NVME_BF16_ZERO1, "optimizer": optimizer}
    (finding,) = [f for f in validate(config).findings if f.code == "zero.nvme-below-3"]
    assert ("fails at the first step" in finding.message) is fails_on_gpus
    est = m.estimate(config, m.ModelCounts(10**9, 5 * 10**7), m.Hardware(gpus_per_node=8), m.Shape())
    (note,) = [n for n in est.notes if "BF16_Optimizer" in n]
    assert ("fails at the first step" in note) is fails_on_gpus
