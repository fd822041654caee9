"""Run DeepSpeed's own ``DeepSpeedConfig`` (and ``deepspeed.initialize``) on configs; report the verdict.

This file depends only on the standard library and the installed ``deepspeed``, because it also runs
as a long-lived worker inside a second interpreter (``.venv-ds0195`` holds DeepSpeed 0.19.5; one
interpreter cannot import two DeepSpeed versions). ``tests/oracle/oracle.py`` imports the same
functions for the in-process 0.19.8 oracle, so both versions are judged by one piece of code.

Worker protocol (JSON lines; one request per line on stdin, one answer per line on stdout):

    {"op": "version"}                                   -> {"ok": true, "version": "0.19.5"}
    {"op": "verdicts", "items": [{"config": {...}, "world_size": 8}, {"path": "/x.json", "world_size": 1}]}
                                                        -> {"ok": true, "verdicts": [{"accepted": ..,
                                                            "error_type": .., "message": ..}, ...]}
    {"op": "quit"}                                      -> process exits

A malformed request gets ``{"ok": false, "error": "..."}``. With ``--initialize`` it instead reads one JSON
object ``{"cases": {id: config}}``, runs ``deepspeed.initialize`` on a tiny CPU model for each config in
one process (the environment must name a single-rank torch.distributed rendezvous) and prints
``{"host": {"fp16": .., "bf16": ..}, "results": {id: result}}`` as one JSON object (see
``run_initialize_case_on_host``). Everything DeepSpeed prints goes to stderr so
that stdout carries only answers.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import sys
import warnings
from typing import Any

MAX_MESSAGE_CHARS = 4000
_STATE: dict[str, Any] = {}


def _deepspeed_config_class() -> type:
    """Import DeepSpeed (quietly, once) and return a DeepSpeedConfig subclass with a settable world size."""
    if "cls" in _STATE:
        return _STATE["cls"]
    with _quiet():
        from deepspeed.runtime.config import DeepSpeedConfig

    import deepspeed.runtime.config as config_module

    class _SimulatedComm:
        """What ``deepspeed.comm`` answers inside ``DeepSpeedConfig.__init__`` on rank 0 of ``world_size`` ranks."""

        def __init__(self, world_size: int) -> None:
            self._world_size = world_size

        def get_rank(self, group: Any = None) -> int:
            return 0

        def get_world_size(self, group: Any = None) -> int:
            return self._world_size

    class SimulatedWorldConfig(DeepSpeedConfig):
        """DeepSpeedConfig as it behaves with ``world_size`` ranks, without torch.distributed.

        DeepSpeedConfig.__init__ asks ``deepspeed.comm`` for rank and world size, and with no process group falls
        back to 1. For the duration of the constructor the config module's ``dist`` answers rank 0 of
        ``world_size``, so everything DeepSpeed derives from the world size runs as on a real job: the division by
        ``sequence_parallel_size`` (where the release does it), elastic training's batch search and its world-size
        check, and the batch checks.
        """

        def __init__(self, config: Any, world_size: int) -> None:
            real = config_module.dist
            config_module.dist = _SimulatedComm(world_size)
            try:
                super().__init__(config)
            finally:
                config_module.dist = real

    _STATE["cls"] = SimulatedWorldConfig
    return SimulatedWorldConfig


def deepspeed_version() -> str:
    """The version string of the importable DeepSpeed."""
    with _quiet():
        import deepspeed

    return str(deepspeed.__version__)


@contextlib.contextmanager
def _quiet():
    """Silence DeepSpeed's logger, Python warnings and prints for the duration (restored afterwards)."""
    ds_logger = logging.getLogger("DeepSpeed")
    old_level = ds_logger.level
    ds_logger.setLevel(logging.CRITICAL + 1)
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            # DeepSpeed's logger is created on import with a handler bound to the *current* sys.stdout;
            # when that was our sink, rebind it so later (unsilenced) logging does not vanish into it.
            for handler in logging.getLogger("DeepSpeed").handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is sink:
                    handler.setStream(sys.__stdout__)
            # If the body set a level (DeepSpeed's import creates its logger), keep that one.
            if ds_logger.level == logging.CRITICAL + 1:
                ds_logger.setLevel(old_level)


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + " ...[truncated]"


def evaluate(config: Any, world_size: int) -> dict[str, Any]:
    """DeepSpeed's verdict on ``config`` (a dict, or a path string as DeepSpeed itself would load it).

    The config is deep-copied first (DeepSpeed mutates nested dicts). Any exception counts as a rejection.
    """
    cls = _deepspeed_config_class()
    try:
        arg = copy.deepcopy(config)
        with _quiet():
            cls(arg, world_size)
    except Exception as exc:  # any exception is DeepSpeed rejecting the config
        return {"accepted": False, "error_type": type(exc).__name__, "message": _short(str(exc))}
    return {"accepted": True, "error_type": None, "message": None}


def _answer(request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        return {"ok": False, "error": "request must be a JSON object"}
    op = request.get("op")
    if op == "version":
        return {"ok": True, "version": deepspeed_version()}
    if op == "verdicts":
        verdicts = []
        for item in request.get("items", []):
            source = item["path"] if "path" in item else item["config"]
            verdicts.append(evaluate(source, int(item.get("world_size", 1))))
        return {"ok": True, "verdicts": verdicts}
    return {"ok": False, "error": f"unknown op {op!r}"}


def main() -> None:
    """Serve requests until stdin closes or a ``quit`` arrives."""
    # Keep the protocol channel private: anything printed later (by Python or C code) lands on stderr.
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _deepspeed_config_class()  # pay the import cost up front
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            answer: dict[str, Any] = {"ok": False, "error": f"bad JSON: {exc}"}
        else:
            if isinstance(request, dict) and request.get("op") == "quit":
                break
            try:
                answer = _answer(request)
            except Exception as exc:  # report, keep serving
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


# --------------------------------------------------------------------------- host precision support
#: The exact refusal of DeepSpeed's engine (``_do_sanity_check``) when the accelerator lacks a precision.
DEVICE_REFUSAL = "Type {precision} is not supported on your device."
HALF_PRECISIONS = ("fp16", "bf16")


def host_precision_support() -> dict[str, bool]:
    """What DeepSpeed's accelerator answers here: is fp16 / bf16 supported on this device?

    The engine asks exactly these two questions before it builds anything; on the CPU accelerator fp16
    depends on the processor (torch's oneDNN check: AVX512-FP16 or AMX-FP16), so the answer differs
    between hosts of the same kind.
    """
    with _quiet():
        from deepspeed.accelerator import get_accelerator

        accelerator = get_accelerator()
        return {"fp16": bool(accelerator.is_fp16_supported()), "bf16": bool(accelerator.is_bf16_supported())}


def enabled_half_precisions(config: dict[str, Any]) -> list[str]:
    """The half precisions DeepSpeed's own config parser enables for ``config`` (world size 1)."""
    parsed = _deepspeed_config_class()(copy.deepcopy(config), 1)
    # 0.17 and later keep the sections as models; 0.16 as flags
    enabled = {"fp16": getattr(getattr(parsed, "float16_config", None), "enabled", None),
               "bf16": getattr(getattr(parsed, "bfloat16_config", None), "enabled", None)}
    enabled["fp16"] = getattr(parsed, "fp16_enabled", False) if enabled["fp16"] is None else enabled["fp16"]
    enabled["bf16"] = getattr(parsed, "bfloat16_enabled", False) if enabled["bf16"] is None else enabled["bf16"]
    return [name for name in HALF_PRECISIONS if enabled[name]]


def precision_stand_in(config: dict[str, Any], unsupported: str, host: dict[str, bool]) -> dict[str, Any]:
    """``config`` with the ``unsupported`` half precision swapped for one the host has; all else the same.

    The other half precision is used where the host supports it, else fp32. Every other key of the
    precision sections stays (e.g. ``fp16.loss_scale``, which DeepSpeed reads for Lamb even with fp16
    off), so the stand-in exercises the rest of the config exactly as the original would.
    """
    stand_in = copy.deepcopy(config)
    sections = {"fp16": ("fp16",), "bf16": ("bf16", "bfloat16")}
    for key in sections[unsupported]:
        if isinstance(stand_in.get(key), dict):
            stand_in[key]["enabled"] = False
    other = "bf16" if unsupported == "fp16" else "fp16"
    if host.get(other):
        section = stand_in.get(other)
        stand_in[other] = {**(section if isinstance(section, dict) else {}), "enabled": True}
    return stand_in


# --------------------------------------------------------------------------- deepspeed.initialize cases
def run_initialize_case_on_host(config: dict[str, Any], host: dict[str, bool]) -> dict[str, Any]:
    """`run_initialize_case`, plus what the host means for it.

    ``"unsupported"`` names the half precision the config enables and the host lacks (or None); then
    ``"stand_in"`` holds the outcome of the same config with a precision the host has, so the rest of
    the config is still proven on this host.
    """
    result = run_initialize_case(config)
    missing = [name for name in enabled_half_precisions(config) if not host[name]]
    result["unsupported"] = missing[0] if missing else None
    result["stand_in"] = run_initialize_case(precision_stand_in(config, missing[0], host)) if missing else None
    return result


def run_initialize_case(config: dict[str, Any]) -> dict[str, Any]:
    """``deepspeed.initialize`` on a tiny CPU model with ``config``: did it raise, and with what? When it
    did not, ``"step"`` says whether training then raises (two optimizer steps and the LR schedule walked
    through, see ``_train_steps``).

    Expects MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE / LOCAL_RANK in the environment (one process).
    """
    import torch

    with _quiet():
        import deepspeed

    if os.environ.get("DSCONFIG_NO_SHM_OP"):
        # One rank needs no shared-memory all-reduce: skip building DeepSpeed's shm op (a minute per release)
        import deepspeed.ops

        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    try:
        with _quiet():
            _engine, optimizer, _, scheduler = deepspeed.initialize(
                model=model, model_parameters=model.parameters(), config=copy.deepcopy(config)
            )
    except Exception as exc:  # the point: record what initialize raises
        return {"raised": True, "error_type": type(exc).__name__, "message": _short(str(exc)), "step": None}
    return {
        "raised": False,
        "error_type": None,
        "message": None,
        "optimizer": type(optimizer).__name__ if optimizer is not None else None,
        "scheduler": type(scheduler).__name__ if scheduler is not None else None,
        "step": _train_steps(_engine, torch),
    }


#: Micro steps per optimizer step the training run goes to at most (a config's gradient_accumulation_steps).
MAX_ACCUMULATION = 1024
#: Scheduler steps the schedule walk takes at most.
MAX_SCHEDULE_WALK = 20_000


def schedule_horizon(params: Any) -> int:
    """How many scheduler steps reach every phase of a schedule: twice its largest step count (any number
    >= 1 among its parameters: warm-up, cycle, decay, total steps), capped at ``MAX_SCHEDULE_WALK``."""
    values = params.values() if isinstance(params, dict) else ()
    counts = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool) and v >= 1]
    return int(min(MAX_SCHEDULE_WALK, 2 * max(counts, default=0) + 10))


def _train_steps(engine: Any, torch: Any, optimizer_steps: int = 2) -> dict[str, Any]:
    """Forward/backward/step on random data until the optimizer has stepped ``optimizer_steps`` times
    (``gradient_accumulation_steps`` micro steps each), then the LR scheduler on through its schedule (the
    engine steps it once per optimizer step): some settings only fail once training runs, some only in a
    later phase of the schedule."""
    try:
        dtype = next(engine.module.parameters()).dtype
        accumulation = min(MAX_ACCUMULATION, max(1, int(engine.gradient_accumulation_steps())))
        with _quiet():
            for _ in range(optimizer_steps * accumulation):
                loss = engine(torch.randn(1, 4, dtype=dtype)).float().pow(2).mean()
                engine.backward(loss)
                engine.step()
            scheduler = getattr(engine, "lr_scheduler", None)
            if scheduler is not None:
                for _ in range(schedule_horizon(engine.scheduler_params() or {})):
                    scheduler.step()
    except Exception as exc:  # recorded, like initialize's exceptions
        return {"raised": True, "error_type": type(exc).__name__, "message": _short(str(exc))}
    return {"raised": False, "error_type": None, "message": None}


def initialize_main() -> None:
    """Read ``{"cases": {id: config}}`` from stdin, run each in order, print ``{id: result}`` as JSON."""
    request = json.load(sys.stdin)
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    host = host_precision_support()
    results = {case_id: run_initialize_case_on_host(config, host) for case_id, config in request["cases"].items()}
    protocol.write(json.dumps({"host": host, "results": results}) + "\n")
    protocol.flush()
    sys.stderr.flush()
    # The answer is out: skip the interpreter's teardown, where native threads of the engines built above can
    # abort the process ("terminate called without an active exception") and turn a finished run into a failure.
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1:] == ["--initialize"]:
        initialize_main()
    else:
        main()
