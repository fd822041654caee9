"""ZeRO communication buffers (core/memory/buffers.py) against what DeepSpeed allocates.

Two bugs a bug hunt confirmed, and what checking them found beside:

- the gradient reduce buffer was sized ``min(reduce_bucket_size, P)``; DeepSpeed allocates the whole
  ``reduce_bucket_size``: ZeRO-1/2 ``setup_buckets`` (``backward_prologue`` in 0.16) ``torch.empty(reduce_bucket_size)``
  per bucket, a second with ``overlap_comm``, when ``contiguous_gradients`` (forced by ZeRO-Offload), freed after each
  backward; ZeRO-3 one per bucket at initialize (``contiguous_gradients``), kept through the optimizer step;
- an "all-gather bucket after step" at ZeRO-1/2 that does not exist: ``all_gather_dp_groups`` gathers into the flat
  16-bit groups themselves (``allgather_bucket_size`` changes no memory);
- the buffers' dtype: ZeRO-1/2 the parameters' (``self.dtype``), ZeRO-3 the communication dtype from 0.17.2 on (one
  bucket per communication dtype since torch.autocast support, DeepSpeed #6993), the parameters' before;
- ZeRO-1 with BF16_Optimizer has no reduce bucket: the engine all-reduces its fp32 flat gradient buffer in place
  (``buffered_allreduce_fallback``), after casting it to a 16-bit communication dtype (a copy of P elements).

The last test runs each installed release's real ``deepspeed.initialize`` on the CPU and finds the buffers by size.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from core import memory as m

TINY = m.ModelCounts(121, 110)  # far smaller than any bucket
RBS = 100_000


def _cfg(stage: int, precision: str = "bf16", **zero) -> dict:
    cfg = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": stage, **zero}}
    if precision != "fp32":
        cfg[precision] = {"enabled": True}
    return cfg


def _parts(cfg: dict, model=TINY, version: str = "0.19.8", gpus: int = 1) -> dict[str, m.Component]:
    est = m.estimate(cfg, model, m.Hardware(gpus_per_node=gpus), m.Shape(), version=version)
    return {c.name: c for c in est.components}


def _buckets(parts: dict[str, m.Component]) -> list[m.Component]:
    return [c for c in parts.values() if "bucket" in c.name]


@pytest.mark.parametrize(("stage", "overlap", "copies"), [(1, False, 1), (1, True, 2), (2, False, 1), (2, True, 2)])
def test_zero12_reduce_buffers_are_the_whole_bucket_size(stage, overlap, copies):
    """A 121-parameter model still gets reduce_bucket_size-element buffers (the hunter's real engine: two bf16
    buffers of 100000 elements with overlap_comm), only during backward."""
    (bucket,) = _buckets(_parts(_cfg(stage, reduce_bucket_size=RBS, overlap_comm=overlap)))
    assert (bucket.bytes, bucket.phase, bucket.device) == (copies * 2 * RBS, "forward_backward", "gpu")


def test_zero3_reduce_buffer_is_the_whole_bucket_and_kept_through_the_step():
    """ZeRO-3 allocates it at initialize and keeps it: it also counts at the optimizer-step peak."""
    parts = _parts(_cfg(3, reduce_bucket_size=RBS))
    (bucket,) = _buckets(parts)
    assert (bucket.bytes, bucket.phase) == (2 * RBS, "persistent")
    est = m.estimate(_cfg(3, reduce_bucket_size=RBS), TINY, m.Hardware(gpus_per_node=1), m.Shape())
    without = m.estimate(_cfg(3, reduce_bucket_size=1), TINY, m.Hardware(gpus_per_node=1), m.Shape())
    assert est.gpu_bytes - without.gpu_bytes >= 2 * (RBS - 1)


def test_gpt2_zero2_overlap_counts_two_full_default_buckets():
    """The hunt's example: GPT-2 (124M), ZeRO-2 with overlap_comm, 8 GPUs: DeepSpeed allocates 2 x 5e8 bf16
    elements (1.86 GiB); the model said 2 x 124M."""
    from core import models

    spec = models.get_spec("openai-community/gpt2")
    cfg = {**_cfg(2, overlap_comm=True), "gradient_accumulation_steps": 1}
    est = m.estimate(cfg, spec, m.Hardware(8, 1), m.Shape(1, 1024, "flash", "none"))
    (bucket,) = [c for c in est.components if "bucket" in c.name]
    assert bucket.bytes == 2 * 2 * 500_000_000


@pytest.mark.parametrize("stage", [1, 2])
def test_allgather_bucket_size_changes_no_memory(stage):
    """No all-gather bucket after the ZeRO-1/2 step (Llama-2-7B stage 1 on 8 GPUs read 41.264 GiB at the default and
    40.287 GiB with allgather_bucket_size 1)."""
    model = m.ModelCounts(6_738_415_616, 202_383_360)
    hw = m.Hardware(gpus_per_node=8)
    default = m.estimate(_cfg(stage), model, hw, m.Shape())
    small = m.estimate(_cfg(stage, allgather_bucket_size=2), model, hw, m.Shape())
    assert default.gpu_bytes == small.gpu_bytes
    assert not any("all-gather" in c.name for c in default.components)


@pytest.mark.parametrize("stage", [1, 2])
def test_zero_offload_forces_contiguous_gradients(stage):
    """stage_1_and_2.py: ``contiguous_gradients or self.cpu_offload``: the buffers exist under ZeRO-Offload even with
    contiguous_gradients false; without offload a non-contiguous bucket only flattens its gradients."""
    off = {"offload_optimizer": {"device": "cpu"}}
    (forced,) = _buckets(_parts(_cfg(stage, reduce_bucket_size=RBS, contiguous_gradients=False, **off)))
    assert forced.bytes == 2 * RBS
    (flat,) = _buckets(_parts(_cfg(stage, reduce_bucket_size=RBS, contiguous_gradients=False)))
    assert flat.bytes == 2 * TINY.total_params


@pytest.mark.parametrize(("version", "element"), [("0.16.9", 2), ("0.17.1", 2), ("0.17.2", 4), ("0.19.8", 4)])
def test_zero3_buffer_has_the_communication_dtype_from_the_releases_with_per_dtype_buckets(version, element):
    """bf16 with communication_data_type fp32: ZeRO-3's bucket buffer is fp32 in the releases that key buckets by
    communication dtype (those that read torch_autocast, 0.17.2 on), bf16 (the parameters') before."""
    cfg = {**_cfg(3, reduce_bucket_size=RBS), "communication_data_type": "fp32"}
    (bucket,) = _buckets(_parts(cfg, version=version))
    assert bucket.bytes == element * RBS


def test_zero12_buffers_keep_the_parameter_dtype_whatever_the_communication_dtype():
    cfg = {**_cfg(2, reduce_bucket_size=RBS, overlap_comm=True), "communication_data_type": "fp32"}
    (bucket,) = _buckets(_parts(cfg))
    assert bucket.bytes == 2 * 2 * RBS


@pytest.mark.parametrize(("stage", "element"), [(2, 2 * (4 + 4)), (3, 2 + 4)])
def test_torch_autocast_keeps_one_bucket_per_communication_dtype(stage, element):
    """torch_autocast (bf16): Linear weights communicate in bf16, the norms and embeddings in fp32: two buckets;
    ZeRO-2 buffers in the fp32 parameters' dtype (two each with overlap_comm), ZeRO-3 one per dtype."""
    cfg = {"train_micro_batch_size_per_gpu": 1, "torch_autocast": {"enabled": True, "dtype": "bfloat16"},
           "zero_optimization": {"stage": stage, "reduce_bucket_size": RBS, "overlap_comm": True}}
    (bucket,) = _buckets(_parts(cfg))
    assert bucket.bytes == element * RBS
    (old,) = _buckets(_parts(cfg, version="0.16.9"))  # no torch_autocast there: plain fp32, one bucket
    assert old.bytes == (2 if stage == 2 else 1) * 4 * RBS


def test_bf16_optimizer_has_the_engine_allreduce_not_a_reduce_bucket():
    """bf16 + ZeRO-1 + fp32 grad_accum_dtype is BF16_Optimizer: no reduce_gradients, so the engine all-reduces its fp32
    flat gradients (one tensor per group: flattening copies nothing) after casting them to bf16 (measured on every
    installed release: a P-element allocation in backward, none with communication_data_type fp32);
    reduce_bucket_size plays no part."""
    cfg = {**_cfg(1, reduce_bucket_size=RBS), "data_types": {"grad_accum_dtype": "fp32"}}
    model = m.ModelCounts(10**6, 10**5)
    (bucket,) = _buckets(_parts(cfg, model))
    assert bucket.name == "gradient all-reduce bucket" and bucket.bytes == 2 * 10**6
    (same,) = _buckets(_parts({**cfg, "communication_data_type": "fp32"}, model))
    assert same.bytes == 0


# --------------------------------------------------------------------------------------------- real engines
WORKER = textwrap.dedent("""
    import gc, json, sys, warnings
    warnings.filterwarnings("ignore")
    import torch, deepspeed
    import deepspeed.comm.torch as ds_comm_torch
    ds_comm_torch.build_shm_op = lambda: None  # the shared-memory collectives op only speeds up CPU collectives
    cases = json.loads(sys.argv[1])

    def buffers(rbs):
        found = {}
        for obj in gc.get_objects():
            try:
                if torch.is_tensor(obj) and obj.untyped_storage().nbytes() == rbs * obj.element_size() > 0:
                    found[obj.untyped_storage().data_ptr()] = obj.element_size()
            except Exception:
                pass
        return sorted(found.values())

    out = {}
    for name, cfg in cases.items():
        rbs = cfg["zero_optimization"]["reduce_bucket_size"]
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.LayerNorm(96), torch.nn.Linear(96, 64))
        engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
        during = []
        engine.module[2].register_full_backward_hook(lambda *a: during.append(buffers(rbs)))
        dtype = torch.bfloat16 if cfg.get("bf16", {}).get("enabled") else torch.float32
        engine.backward(engine(torch.randn(2, 64, dtype=dtype)).float().pow(2).mean())
        engine.step()
        out[name] = {"backward": during[0], "after_step": buffers(rbs), "optimizer": type(optimizer).__name__}
        del engine, optimizer
        gc.collect()
    print("RESULT" + json.dumps({"release": deepspeed.__version__, "cases": out}))
""")

_RBS = 50021  # no tensor of the tiny model has this many elements; each case adds 2 (no buffer left by another)
_ADAMW = {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}
_OFFLOAD = {"offload_optimizer": {"device": "cpu", "pin_memory": False}}
CASES = {
    "zero1": _cfg(1),
    "zero2_overlap": _cfg(2, overlap_comm=True),
    "zero2_overlap_not_contiguous": _cfg(2, overlap_comm=True, contiguous_gradients=False),
    "zero2_fp32_overlap": _cfg(2, "fp32", overlap_comm=True),
    "zero2_comm_fp32": {**_cfg(2, overlap_comm=True), "communication_data_type": "fp32"},
    "zero2_offload_not_contiguous": {**_cfg(2, contiguous_gradients=False, **_OFFLOAD),
                                     "zero_force_ds_cpu_optimizer": False},
    "zero3": _cfg(3),
    "zero3_not_contiguous": _cfg(3, contiguous_gradients=False),
    "zero3_comm_fp32": {**_cfg(3), "communication_data_type": "fp32"},
    "zero3_offload": {**_cfg(3, **_OFFLOAD), "zero_force_ds_cpu_optimizer": False},
    # the worker's model has a LayerNorm beside its Linear layers: two communication dtypes under torch_autocast
    "zero3_torch_autocast": {**_cfg(3, "fp32"), "torch_autocast": {"enabled": True, "dtype": "bfloat16"}},
}
for _i, _case in enumerate(CASES.values()):
    _case["zero_optimization"]["reduce_bucket_size"] = _RBS + 2 * _i
    _case["optimizer"] = _ADAMW


def _expected(cfg: dict, version: str) -> tuple[int, int]:
    """Bytes of whole-bucket buffers the estimate counts during backward and after the optimizer step (a flattened
    bucket of gradients, the non-contiguous path, is no such buffer)."""
    (bucket,) = _buckets(_parts(cfg, m.ModelCounts(12_640, 6_240), version))  # the worker's model
    if bucket.phase == "persistent":
        return bucket.bytes, bucket.bytes
    return (bucket.bytes, 0) if bucket.name == "gradient reduce bucket(s)" else (0, 0)


#: CI checks the releases on each side of the buffers' changes (0.16: ``backward_prologue``; 0.17.2: one ZeRO-3 bucket
#: per communication dtype) and the newest; ``make releases-all`` (DSCONFIG_ALL_RELEASES=1) every installed one. Each
#: release's run costs 20-60 s, and the four in between never differed from their neighbours.
BUFFER_RELEASES = (["0.16.9", "0.17.6", "0.18.9", "0.19.5", "0.19.6", "0.19.7", "0.19.8"]
                   if os.environ.get("DSCONFIG_ALL_RELEASES") == "1" else ["0.16.9", "0.17.6", "0.19.8"])


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.parametrize("release", BUFFER_RELEASES)
def test_real_engine_allocates_the_buffers_the_estimate_counts(release):
    """Each release's real engine (CPU, one rank): the buffers of exactly reduce_bucket_size elements alive
    during backward and after the optimizer step, by element size, are the ones the estimate counts."""
    from tests.oracle.initialize import single_rank_env
    from tests.oracle.oracle import OracleUnavailable, release_interpreter

    try:
        python, extra = release_interpreter(release)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    proc = subprocess.run([python, "-c", WORKER, json.dumps(CASES)], capture_output=True, text=True, timeout=1500,
                          env={**single_rank_env(), **extra}, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    if not lines and "No module named 'deepspeed'" in proc.stderr:
        pytest.skip(f"DeepSpeed {release} is not installed")
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT"):])
    assert result["release"].split("+")[0] == release
    wrong = {}
    for name, cfg in CASES.items():
        got = result["cases"][name]
        want = _expected(cfg, release)
        rbs = cfg["zero_optimization"]["reduce_bucket_size"]
        if (sum(got["backward"]) * rbs, sum(got["after_step"]) * rbs) != want:
            wrong[name] = {"deepspeed": got, "estimate": want}
    assert not wrong, json.dumps(wrong, indent=1)
