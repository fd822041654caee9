"""ZeRO++ hpZ's group size and the GPU count, proven with a real multi-rank ``deepspeed.initialize``.

ZeRO-3 builds hpZ's secondary partition groups of ``min(zero_hpz_partition_size, world size)`` ranks and asserts
that they tile the world (``groups._create_zero_param_parallel_group``): 2 on 3 GPUs fails at initialize, 4 on 2 GPUs
is capped to 2 and runs. The validator said "warning" for the first and warned about the second. The one-rank
initialize cases cannot show it (any size is capped to 1), so this module runs gloo jobs of 2 and 3 CPU ranks.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from core.validate import validate
from tests.oracle.oracle import oracle_available

pytestmark = [pytest.mark.deepspeed, pytest.mark.slow, pytest.mark.xdist_group("hpz_ranks")]

#: the initialize-time codes this module proves (tests/test_initialize_failures.py counts them as proven)
PROVEN_WITH_RANKS = frozenset({"zero.hpz-partition"})

_RANK = r"""
import json, logging, os, sys
import torch
import deepspeed
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)
deepspeed.init_distributed(dist_backend="gloo")
config = json.loads(sys.argv[1])
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
try:
    deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    print(json.dumps({"raised": None}), flush=True)
except Exception as exc:
    print(json.dumps({"raised": type(exc).__name__, "message": str(exc)}), flush=True)
os._exit(0)
"""


def _config(hpz: int) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
            "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "torch_adam": True}},
            "zero_optimization": {"stage": 3, "zero_hpz_partition_size": hpz}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _initialize(world_size: int, config: dict) -> list[dict]:
    """Each rank's outcome of ``deepspeed.initialize`` in a gloo job of ``world_size`` CPU ranks."""
    port = str(_free_port())
    ranks = [subprocess.Popen(
        [sys.executable, "-c", _RANK, json.dumps(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": str(rank),
             "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world_size),
             "DS_ACCELERATOR": "cpu"})
        for rank in range(world_size)]
    outcomes = []
    for process in ranks:
        out, err = process.communicate(timeout=600)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines, f"a rank printed no outcome (exit {process.returncode}):\n{err[-2000:]}"
        outcomes.append(json.loads(lines[-1]))
    return outcomes


@pytest.mark.parametrize(("world_size", "hpz", "fails"), [(3, 2, True), (2, 4, False)])
def test_hpz_that_does_not_divide_the_gpus_fails_at_initialize(world_size, hpz, fails):
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    outcomes = _initialize(world_size, _config(hpz))
    flagged = [f for f in validate(_config(hpz), world_size=world_size).findings if f.code == "zero.hpz-partition"]
    if fails:
        assert all(o["raised"] == "AssertionError" and o["message"] == f"{world_size} is not divisible by {hpz}"
                   for o in outcomes), outcomes
        assert [f.severity for f in flagged] == ["error"]
        assert f"{world_size} is not divisible by {hpz}" in flagged[0].message
    else:
        assert all(o["raised"] is None for o in outcomes), outcomes
        assert flagged == []
