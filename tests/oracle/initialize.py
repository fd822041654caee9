"""``deepspeed.initialize`` as the judge: run configs through a release's real initialize and two CPU
training steps in one fresh single-rank subprocess, and check each outcome against what its case says.
The cases themselves are in ``initialize_cases.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.oracle import ds0195_worker
from tests.oracle.oracle import IN_PROCESS_VERSION, REPO_ROOT, WORKER_SCRIPT, release_interpreter

# The smallest config the cases build on, and two optimizers that need no JIT-compiled op.
TINY = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
SGD = {"type": "SGD", "params": {"lr": 0.01}}
ADAMW = {"type": "AdamW", "params": {"lr": 0.01, "torch_adam": True}}  # torch's AdamW: no JIT-compiled op


@dataclass(frozen=True)
class InitializeCase:
    """A config that DeepSpeedConfig accepts, and what ``deepspeed.initialize`` then does with it.

    ``raises``: initialize raises (``error_type``, a message containing ``message_contains``).
    ``config_rule``: the failure is the config's fault (a validator rule, an error). ``config_rule=False``:
    it is this CPU machine's (a CUDA cluster accepts it) or the caller's (e.g. no client optimizer passed),
    and the validator must not make it an error.
    Cases with ``raises=False`` are controls: the same shape that works (initialize and two optimizer steps),
    so a failure is the one key's doing. ``phase="step"``: initialize succeeds and the first training
    steps raise (still nothing DeepSpeedConfig catches).
    """

    id: str
    rule: str
    config: dict[str, Any]
    raises: bool
    error_type: str | None = None
    message_contains: str | None = None
    config_rule: bool = True
    phase: str = "initialize"  # "step": initialize succeeds, the first training steps raise


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: The start of a worker script (``python -c``) that builds the memory tests' tiny model from the config in argv[1]
#: (``cfg``, ``model``, ``torch``, ``deepspeed``); each test appends what it measures.
TINY_MODEL_WORKER = textwrap.dedent("""
    import json, sys, torch, deepspeed
    cfg = json.loads(sys.argv[1])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 64))
""")


def run_tiny_worker(worker: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """Run a TINY_MODEL_WORKER script on ``cfg`` in a one-rank subprocess; what it printed after ``RESULT``."""
    proc = subprocess.run([sys.executable, "-c", worker, json.dumps(cfg)], capture_output=True, text=True,
                          timeout=600, env=single_rank_env(), check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT"):])


def single_rank_env() -> dict[str, str]:
    """This process's environment for a one-rank torch.distributed run (DeepSpeed on the CPU) on a free port."""
    return {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "RANK": "0",
            "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}


@dataclass(frozen=True)
class InitializeRun:
    """One run of the initialize cases: what DeepSpeed's accelerator said the host supports, and each
    case's outcome (``{case id: result}``)."""

    host: dict[str, bool]
    results: dict[str, dict[str, Any]]


def _outcome_problems(case: InitializeCase, got: dict[str, Any], label: str) -> list[str]:
    """How ``got`` (one run of ``case.config`` or of its stand-in) differs from what the case expects."""
    if not case.raises:
        if got["raised"]:
            return [f"{label}: control raised {got['error_type']}: {got['message']}"]
        if got["step"]["raised"]:
            return [f"{label}: control fails to train: {got['step']}"]
        return []
    if case.phase == "step":
        if got["raised"]:
            return [f"{label}: expected initialize to pass, got {got['error_type']}: {got['message']}"]
        got = got["step"]
    if not got["raised"]:
        return [f"{label} ({case.rule}): deepspeed {case.phase} did not raise"]
    if got["error_type"] != case.error_type or case.message_contains not in got["message"]:
        return [f"{label}: expected {case.error_type} ({case.message_contains!r}), got {got['error_type']}: "
                f"{got['message']}"]
    return []


def initialize_outcome_problems(case: InitializeCase, got: dict[str, Any], host: dict[str, bool]) -> list[str]:
    """Everything wrong with one case's outcome on this host; empty when it is as the case says.

    On a host whose accelerator supports every precision the config enables, the case's own outcome is
    checked. Where the config enables a half precision the host lacks (fp16 on most x86 CPUs), DeepSpeed
    must refuse it with exactly its device error, and the stand-in (the same config with a precision the
    host has) must do what the case says, so the rest of the config is still proven here.
    """
    unsupported = got.get("unsupported")
    if unsupported is None:
        return _outcome_problems(case, got, case.id)
    if host.get(unsupported, True):
        return [f"{case.id}: the worker calls {unsupported} unsupported, but the host supports it: {host}"]
    refusal = ds0195_worker.DEVICE_REFUSAL.format(precision=unsupported)
    problems = []
    if not (got["raised"] and got["error_type"] == "ValueError" and got["message"] == refusal):
        problems.append(f"{case.id}: on a host without {unsupported} DeepSpeed must refuse with {refusal!r}, got "
                        f"{got['error_type']}: {got['message']}")
    stand_in = got.get("stand_in")
    if stand_in is None:
        return [*problems, f"{case.id}: no stand-in was run for the unsupported {unsupported}"]
    return problems + _outcome_problems(case, stand_in, f"{case.id} (stand-in without {unsupported})")



def run_initialize_configs(
    configs: dict[str, dict[str, Any]], version: str = IN_PROCESS_VERSION, timeout: float = 1500
) -> InitializeRun:
    """``run_initialize_cases`` for plain ``{id: config}`` under DeepSpeed ``version`` (one rank: DeepSpeed's
    shared-memory all-reduce op is not built)."""
    python, extra = release_interpreter(version)
    return _run_initialize(configs, python, {**extra, "DSCONFIG_NO_SHM_OP": "1"}, timeout)


def run_initialize_cases(
    cases: Sequence[InitializeCase], python: str = sys.executable, timeout: float = 1500
) -> InitializeRun:
    """Run ``deepspeed.initialize`` for every case in ONE fresh single-rank CPU subprocess (so no
    torch.distributed state leaks into the caller); returns what the host supports and each case's
    outcome (see ``ds0195_worker.run_initialize_case_on_host``)."""
    return _run_initialize({case.id: case.config for case in cases}, python, {}, timeout)


def _run_initialize(configs: dict[str, dict[str, Any]], python: str, extra: dict[str, str],
                    timeout: float) -> InitializeRun:
    request = json.dumps({"cases": configs})
    crashes: list[str] = []
    # A runner killed by a signal is run once more (on a new port): a CI run saw one abort with nothing but
    # "terminate called without an active exception" on stderr (a native thread of torch/DeepSpeed at teardown
    # or a rendezvous whose free port was taken meanwhile); it passed alone. A case that crashes DeepSpeed every
    # time still fails, with both runs' stderr.
    for _attempt in range(2):
        env = {**single_rank_env(), **extra}
        proc = subprocess.run(
            [python, str(WORKER_SCRIPT), "--initialize"],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(REPO_ROOT),
            check=False,
        )
        if proc.returncode == 0 and proc.stdout.strip():
            answer = json.loads(proc.stdout.strip().splitlines()[-1])
            return InitializeRun(host=answer["host"], results=answer["results"])
        crashes.append(f"exit {proc.returncode}: {proc.stderr[-3000:]}")
        if proc.returncode >= 0:
            break
    raise RuntimeError("initialize runner failed (" + "; then ".join(crashes) + ")")
