"""elastic_checkpoint at ZeRO-1/2 with an optimizer that counts its step per parameter (a read-only hunt, 1 Dec
2026): the ZeRO optimizer's elastic state dict saves the step only when ``"step" in param_groups[0]``, so with
DeepSpeed's CPU Adam (the optimizer offloaded), FusedLamb or any torch.optim class ``save_checkpoint`` works and
``load_checkpoint`` fails (AssertionError in ``_restore_step_from_elastic_checkpoint``). The validator said nothing;
it now warns (``zero.elastic-checkpoint-step``). Judged by the real 0.19.8: save, then load, in one process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.effective import effective
from core.rules.zero import GROUP_STEP_OPTIMIZERS
from core.validate import validate
from tests.oracle.initialize import single_rank_env
from tests.oracle.oracle import oracle_available

CODE = "zero.elastic-checkpoint-step"
ADAMW = {"type": "AdamW", "params": {"lr": 1e-3}}


def _config(stage: int, optimizer: dict, elastic: object = True, **zero: object) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "optimizer": optimizer,
            "zero_optimization": {"stage": stage, "elastic_checkpoint": elastic, **zero}}


#: label: (config, whether load_checkpoint fails after save_checkpoint)
CASES = {
    "cpu-adam-stage-2": (_config(2, ADAMW, offload_optimizer={"device": "cpu"}), True),
    "torch-adamw-stage-1": (_config(1, {**ADAMW, "params": {"lr": 1e-3, "torch_adam": True}}, elastic="yes"), True),
    "control-fused-adam-stage-2": (_config(2, ADAMW), False),
    "control-cpu-adam-rigid": (_config(2, ADAMW, elastic=False, offload_optimizer={"device": "cpu"}), False),
}

_WORKER = textwrap.dedent("""
    import contextlib, copy, io, json, sys, tempfile, torch, deepspeed
    import deepspeed.ops
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    deepspeed.init_distributed(dist_backend="gloo")
    out = {}
    for label, config in json.loads(sys.argv[1]).items():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        with contextlib.redirect_stdout(io.StringIO()):
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
            for _ in range(2):
                engine.backward(engine(torch.randn(2, 64)).pow(2).mean())
                engine.step()
            folder = tempfile.mkdtemp()
            engine.save_checkpoint(folder)
            try:
                engine.load_checkpoint(folder)
                out[label] = None
            except Exception as exc:
                out[label] = type(exc).__name__
    print(json.dumps(out))
""")


@pytest.mark.parametrize("label", CASES)
def test_the_validator_warns_where_resuming_fails(label):
    config, fails = CASES[label]
    codes = {f.code for f in validate(config).findings}
    assert (CODE in codes) == fails


def test_no_warning_for_a_client_optimizer_or_bf16_optimizer():
    no_section = _config(2, ADAMW)
    del no_section["optimizer"]  # a client optimizer: its step is unknown here
    assert CODE not in {f.code for f in validate(no_section).findings}
    bf16_stage_1 = {**_config(1, {**ADAMW, "params": {"lr": 1e-3, "torch_adam": True}}), "bf16": {"enabled": True},
                    "data_types": {"grad_accum_dtype": "fp32"}}  # BF16_Optimizer: not the ZeRO optimizer's state dict
    assert CODE not in {f.code for f in validate(bf16_stage_1).findings}


def test_the_optimizers_that_keep_a_group_step_are_read_from_deepspeeds_source():
    """GROUP_STEP_OPTIMIZERS is every class under deepspeed/ops whose source writes ``group['step']``."""
    import deepspeed

    ops = Path(deepspeed.__file__).parent / "ops"
    writes = {path for path in ops.rglob("*.py") if re.search(r"group\[['\"]step['\"]\]\s*(\+)?=", path.read_text())}
    found = {f"deepspeed.ops.{path.parent.name}.{cls}" for path in writes
             for cls in re.findall(r"^class (\w+)\(", path.read_text(), re.M)}
    assert found == set(GROUP_STEP_OPTIMIZERS)
    assert effective(_config(2, ADAMW), "0.19.8").optimizer_class in GROUP_STEP_OPTIMIZERS


@pytest.mark.deepspeed
def test_resuming_fails_where_the_validator_warns():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    configs = {label: config for label, (config, _) in CASES.items()}
    proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(configs)], capture_output=True, text=True,
                          timeout=600, env=single_rank_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {label: "AssertionError" if fails else None for label, (_, fails) in CASES.items()}
