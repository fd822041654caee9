"""bf16 without ZeRO, as each release builds it: BF16_Optimizer in 0.16.0-0.18.4 (fp32 master weights and optimizer
states split over the data-parallel ranks as ZeRO-1 does, an fp32 gradient buffer of every parameter), FP16_Optimizer
in bf16 from 0.18.5 (everything whole on every GPU). The estimate said the latter for every release: Llama-2-7B on 8
GPUs at 132 GiB per GPU where 0.16-0.18.4 need 63."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from core import memory
from core.models import get_spec

CFG = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}, "zero_optimization": {"stage": 0},
       "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}


def _gpu_parts(version: str, gpus: int, model) -> dict[str, int]:
    est = memory.estimate(CFG, model, memory.Hardware(gpus_per_node=gpus), memory.Shape(), version=version)
    return {c.name: int(c.bytes) for c in est.components if c.device == "gpu"}


@pytest.mark.parametrize(("version", "bf16_optimizer"), [("0.16.0", True), ("0.17.6", True), ("0.18.4", True),
                                                         ("0.18.5", False), ("0.19.8", False)])
def test_llama_7b_on_8_gpus_per_release(version, bf16_optimizer):
    parts = _gpu_parts(version, 8, get_spec("meta-llama/Llama-2-7b-hf"))
    p = 6_738_415_616
    master = parts["fp32 master weights"]
    if bf16_optimizer:
        assert master == pytest.approx(4 * p / 8, rel=1e-6)
        assert parts["gradients (fp32 accumulation buffer, BF16_Optimizer)"] == 4 * p
        assert "gradients" not in parts and "fp32 gradient copy during step" not in parts
    else:
        assert master == 4 * p and parts["gradients"] == 2 * p and parts["fp32 gradient copy during step"] == 4 * p
    est = memory.estimate(CFG, get_spec("meta-llama/Llama-2-7b-hf"), memory.Hardware(gpus_per_node=8),
                          memory.Shape(), version=version)
    assert any("BF16_Optimizer" in n for n in est.notes) == bf16_optimizer


def test_bf16_zero1_fp32_accumulation_has_no_step_copy():
    """BF16_Optimizer steps on narrow() views of its fp32 gradient buffer: no gradient partition is copied."""
    cfg = {**CFG, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "fp32"}}
    est = memory.estimate(cfg, memory.ModelCounts(10**9, 0), memory.Hardware(gpus_per_node=8), memory.Shape())
    assert not [c.name for c in est.components if c.phase == "step"]
    assert any(c.name.startswith("gradients (fp32 accumulation buffer") for c in est.components)


# --------------------------------------------------------------------------------------------- real engines
WORKER = textwrap.dedent("""
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    import torch, deepspeed
    import deepspeed.comm.torch as ds_comm_torch
    ds_comm_torch.build_shm_op = lambda: None  # the shared-memory collectives op only speeds up CPU collectives
    cfg = json.loads(sys.argv[1])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 64))
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    engine.backward(engine(torch.randn(2, 64, dtype=torch.bfloat16)).float().pow(2).mean())
    engine.step()
    inner = optimizer.optimizer
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)
    out = {"class": type(optimizer).__name__, "P": sum(p.numel() for p in model.parameters()),
           "master": nbytes(p for g in inner.param_groups for p in g["params"]),
           "states": nbytes(t for s in inner.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0),
           "grad_buffer": nbytes(getattr(optimizer, "fp32_groups_gradients_flat", []))}
    if torch.distributed.get_rank() == 0:
        print("RESULT" + json.dumps(out))
""")
RANKS = 2


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.parametrize(("release", "wrapper"), [("0.16.9", "BF16_Optimizer"), ("0.19.8", "FP16_UnfusedOptimizer")])
def test_real_engines_on_two_ranks_hold_what_the_estimate_counts(release, wrapper):
    """Two CPU ranks of each release's engine: the optimizer class, the master weights and states each rank holds
    (half of them under BF16_Optimizer) and BF16_Optimizer's fp32 gradient buffer, against the estimate for 2 GPUs."""
    from tests.oracle.initialize import single_rank_env
    from tests.oracle.oracle import OracleUnavailable, release_interpreter

    try:
        python, extra = release_interpreter(release)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    cfg = {**CFG, "train_batch_size": CFG["train_micro_batch_size_per_gpu"] * RANKS}
    base = {**single_rank_env(), **extra, "WORLD_SIZE": str(RANKS), "LOCAL_WORLD_SIZE": str(RANKS)}
    procs = [subprocess.Popen([python, "-c", WORKER, json.dumps(cfg)],
                              env={**base, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(RANKS)]
    outs = [p.communicate(timeout=900) for p in procs]
    lines = [ln for out, _ in outs for ln in out.splitlines() if ln.startswith("RESULT")]
    assert lines, outs[0][1][-3000:]
    real = json.loads(lines[0][len("RESULT"):])
    assert real["class"] == wrapper
    parts = _gpu_parts(release, RANKS, memory.ModelCounts(real["P"], 0))
    assert parts["fp32 master weights"] == real["master"]
    assert next(v for k, v in parts.items() if k.startswith("optimizer states")) == real["states"]
    assert parts.get("gradients (fp32 accumulation buffer, BF16_Optimizer)", 0) == real["grad_buffer"]


# --------------------------------------------------------------------------------------------- the planner
def _predict(zero: dict, version: str, **extra):
    from core.memory.estimate import Shape
    from core.perf.hardware import Cluster
    from core.perf.predict import predict

    cfg = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
           "zero_optimization": zero, **extra}
    return predict(cfg, get_spec("meta-llama/Llama-2-7b-hf"), Cluster("NVIDIA A100 80GB", 8, 2),
                   Shape(4, 2048, "flash", "none"), version=version)


def test_the_planner_costs_bf16_optimizer_as_it_runs():
    """BF16_Optimizer all-reduces the gradients (no reduce-scatter of its own), steps on 1/N and gathers: ZeRO-1 with
    fp32 accumulation was costed as ZeRO-1's reduce-scatter, and bf16 without ZeRO in 0.16-0.18.4 as the unfused fp16
    optimizer stepping on every parameter."""
    zero1 = _predict({"stage": 1}, "0.19.8")
    bf16_opt = _predict({"stage": 1}, "0.19.8", data_types={"grad_accum_dtype": "fp32"})
    assert "gradient reduce-scatter" in zero1.breakdown and "gradient reduce-scatter" not in bf16_opt.breakdown
    assert bf16_opt.breakdown["gradient all-reduce"] == pytest.approx(2 * zero1.breakdown["gradient reduce-scatter"],
                                                                      rel=0.05)
    assert any("BF16_Optimizer" in n for n in bf16_opt.notes) and not any("BF16_Optimizer" in n for n in zero1.notes)
    old, new = _predict({"stage": 0}, "0.16.9"), _predict({"stage": 0}, "0.19.8")
    assert old.breakdown["optimizer step (GPU)"] == pytest.approx(bf16_opt.breakdown["optimizer step (GPU)"])
    assert "parameter all-gather after the step" in old.breakdown
    assert not [k for k in old.breakdown if "unfused" in k] and [k for k in new.breakdown if "unfused" in k]
    assert old.step_seconds < new.step_seconds
