"""The real DeepSpeed as the judge: does ``DeepSpeedConfig`` accept a config at a given world size?

0.19.8 (the version installed in the main venv) runs in-process, imported lazily. Other versions run in
a long-lived worker subprocess (``ds0195_worker.py`` under that version's interpreter) that answers
batches of configs over JSON lines, so the multi-second DeepSpeed import is paid once per session.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.oracle import ds0195_worker
from tests.oracle.ops_cache import torch_extensions_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_SCRIPT = Path(__file__).resolve().with_name("ds0195_worker.py")
IN_PROCESS_VERSION = "0.19.8"
# Interpreters holding other DeepSpeed releases (one interpreter cannot import two versions).
WORKER_PYTHONS: dict[str, Path] = {"0.19.5": REPO_ROOT / ".venv-ds0195" / "bin" / "python"}
# Releases installed side by side (``pip install --no-deps --target .venv-ds/<release>``, see
# scripts/install-test-deps.sh): run by this interpreter, sharing its torch, with the folder first on the path.
SIDE_BY_SIDE_ROOT = REPO_ROOT / ".venv-ds"
SIDE_BY_SIDE: tuple[str, ...] = ("0.16.9", "0.17.6", "0.18.9", "0.19.6", "0.19.7")
SUPPORTED_VERSIONS = (IN_PROCESS_VERSION, *WORKER_PYTHONS, *SIDE_BY_SIDE)
WORKER_BATCH = 500


class OracleUnavailable(RuntimeError):
    """The requested DeepSpeed version cannot be run here (not installed, wrong version, worker died)."""


@dataclass(frozen=True)
class Verdict:
    """DeepSpeed's verdict on one config: accepted, or rejected with the exception type and message."""

    accepted: bool
    error_type: str | None = None
    message: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(bool(data["accepted"]), data.get("error_type"), data.get("message"))

    def describe(self) -> str:
        """One line for reports: "accepted" or "ErrorType: message"."""
        if self.accepted:
            return "accepted"
        message = " ".join((self.message or "").split())
        return f"{self.error_type}: {message[:300]}"


# --------------------------------------------------------------------------- in-process (0.19.8)
def _check_in_process_version() -> None:
    try:
        installed = ds0195_worker.deepspeed_version()
    except ImportError as exc:
        raise OracleUnavailable(f"deepspeed is not importable in {sys.executable}: {exc}") from exc
    if installed != IN_PROCESS_VERSION:
        raise OracleUnavailable(f"expected deepspeed {IN_PROCESS_VERSION} in-process, found {installed}")


# --------------------------------------------------------------------------- worker (other versions)
class _Worker:
    """One worker subprocess for one DeepSpeed version; requests are serialised by a lock."""

    def __init__(self, version: str) -> None:
        if version not in SUPPORTED_VERSIONS or version == IN_PROCESS_VERSION:
            raise OracleUnavailable(f"no DeepSpeed {version} profile; supported: {', '.join(SUPPORTED_VERSIONS)}")
        executable, extra = release_interpreter(version)
        python, env = Path(executable), ({**os.environ, **extra} if extra else None)
        if not python.exists():
            raise OracleUnavailable(f"{python} not found (scripts/install-test-deps.sh creates it)")
        self.version = version
        self._lock = threading.Lock()
        # A file, not a pipe: a chatty worker can never block on a full stderr buffer.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker, closed in close()
        self._proc = subprocess.Popen(
            [str(python), str(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            cwd=str(REPO_ROOT),
            env=env,
        )
        found = self._request({"op": "version"})["version"]
        if found != version:
            self.close()
            raise OracleUnavailable(f"{python} has deepspeed {found}, expected {version}")

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2000:]

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            try:
                self._proc.stdin.write(json.dumps(request) + "\n")
                self._proc.stdin.flush()
                line = self._proc.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise OracleUnavailable(f"DeepSpeed {self.version} worker died: {self._stderr_tail()}") from exc
        if not line:
            raise OracleUnavailable(f"DeepSpeed {self.version} worker died: {self._stderr_tail()}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"DeepSpeed {self.version} worker refused a request: {answer.get('error')}")
        return answer

    def verdicts(self, items: list[dict[str, Any]]) -> list[Verdict]:
        out: list[Verdict] = []
        for start in range(0, len(items), WORKER_BATCH):
            answer = self._request({"op": "verdicts", "items": items[start : start + WORKER_BATCH]})
            out.extend(Verdict.from_dict(v) for v in answer["verdicts"])
        return out

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write('{"op": "quit"}\n')
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()


_WORKERS: dict[str, _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker(version: str) -> _Worker:
    with _WORKERS_LOCK:
        worker = _WORKERS.get(version)
        if worker is None or worker._proc.poll() is not None:
            worker = _WORKERS[version] = _Worker(version)
        return worker


@atexit.register
def close_workers() -> None:
    """Stop every worker subprocess this process started."""
    with _WORKERS_LOCK:
        for worker in _WORKERS.values():
            worker.close()
        _WORKERS.clear()


# --------------------------------------------------------------------------- public API
def _jsonable(config: Any) -> Any:
    # Worker requests travel as JSON; configs come from JSON/HJSON, so this is lossless for them.
    return json.loads(json.dumps(config))


def oracle_available(version: str = IN_PROCESS_VERSION) -> str | None:
    """None when DeepSpeed ``version`` can judge configs here, else the reason it cannot."""
    try:
        if version == IN_PROCESS_VERSION:
            _check_in_process_version()
        else:
            _worker(version)
    except OracleUnavailable as exc:
        return str(exc)
    return None


def deepspeed_verdicts(items: Iterable[tuple[Any, int]], version: str = IN_PROCESS_VERSION) -> list[Verdict]:
    """Verdicts for many ``(config, world_size)`` pairs; a config may also be a path string to a file,
    which DeepSpeed then loads itself (HJSON, duplicate keys refused)."""
    pairs = list(items)
    if version == IN_PROCESS_VERSION:
        _check_in_process_version()
        return [Verdict.from_dict(ds0195_worker.evaluate(cfg, ws)) for cfg, ws in pairs]
    payload = [
        {"path": cfg, "world_size": ws} if isinstance(cfg, str) else {"config": _jsonable(cfg), "world_size": ws}
        for cfg, ws in pairs
    ]
    return _worker(version).verdicts(payload)


def deepspeed_verdict(config: Any, world_size: int = 1, version: str = IN_PROCESS_VERSION) -> Verdict:
    """DeepSpeed's verdict on one config (dict, or path string) with ``world_size`` data-parallel ranks."""
    return deepspeed_verdicts([(config, world_size)], version)[0]


def deepspeed_file_verdicts(path: Path, world_sizes: Sequence[int], version: str = IN_PROCESS_VERSION) -> list[Verdict]:
    """Verdicts for a config file loaded by DeepSpeed itself, one per world size."""
    return deepspeed_verdicts([(str(path), ws) for ws in world_sizes], version)


# --------------------------------------------------------------------------- differential comparison
WORLD_SIZES = (1, 2, 8, 64)


@dataclass(frozen=True)
class Divergence:
    """A known, intended difference between the validator and DeepSpeed-on-this-machine.

    ``applies(config, world_size, verdict)`` says whether a given disagreement is explained by it.
    """

    name: str
    reason: str
    applies: Callable[[dict[str, Any], int, Verdict], bool]


DOCUMENTED_DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        "aio.use_gds",
        "DeepSpeed asserts 'GDS currently only supported for CUDA accelerator' only on a non-CUDA accelerator. "
        "The oracle runs on a CPU machine, so it rejects what a CUDA cluster accepts; the validator judges "
        "for the cluster.",
        lambda config, _ws, verdict: not verdict.accepted and "GDS currently only supported" in (verdict.message or ""),
    ),
)


@dataclass(frozen=True)
class Comparison:
    """One config at one world size: DeepSpeed's verdict against the validator's findings.

    ``outcome`` is one of OUTCOMES: "agree-accept", "agree-reject", "initialize-time" (DeepSpeed's parser
    accepts, the validator's only errors are "fails at initialize" rules), "divergence" (explained by a
    DOCUMENTED_DIVERGENCES entry), or a disagreement: "missed" (DeepSpeed rejects, no error),
    "false-alarm" (DeepSpeed accepts, an error that is not initialize-time), "crash" (validate raised).
    """

    label: str
    world_size: int
    version: str
    verdict: Verdict
    errors: tuple[tuple[str, str, str], ...]  # (code, path, message) of every error finding
    outcome: str
    note: str = ""
    config_json: str = ""

    @property
    def disagrees(self) -> bool:
        return self.outcome in DISAGREEMENTS

    def describe(self) -> str:
        """A multi-line account for an assertion message or a report."""
        errors = "; ".join(f"{code} @ {path or '<root>'} ({message[:100]})" for code, path, message in self.errors)
        errors = errors or "no errors"
        return (
            f"[{self.outcome}] {self.label} | world_size={self.world_size} | deepspeed {self.version}: "
            f"{self.verdict.describe()}\n    validator: {errors}{' | ' + self.note if self.note else ''}"
            f"\n    config: {self.config_json}"
        )


OUTCOMES = ("agree-accept", "agree-reject", "initialize-time", "divergence", "missed", "false-alarm", "crash")
DISAGREEMENTS = frozenset({"missed", "false-alarm", "crash"})


def validator_api() -> tuple[Any, frozenset[str]]:
    """``(validate, INITIALIZE_TIME_CODES)`` from the project's ``core.validate`` module."""
    import importlib

    module = importlib.import_module("core.validate")
    return module.validate, frozenset(module.INITIALIZE_TIME_CODES)


def compare(
    label: str,
    config: dict[str, Any],
    world_size: int,
    verdict: Verdict,
    *,
    version: str = IN_PROCESS_VERSION,
    validate: Any = None,
    initialize_codes: frozenset[str] | None = None,
) -> Comparison:
    """Run the validator (``target="deepspeed"``) on ``config`` and classify it against ``verdict``."""
    shown = json.dumps(config, default=repr)
    shown = shown if len(shown) <= 600 else shown[:600] + " ..."
    if validate is None or initialize_codes is None:
        validate, initialize_codes = validator_api()
    try:
        report = validate(config, world_size=world_size, target="deepspeed", version=version)
    except Exception as exc:  # the validator must never raise on a dict
        return Comparison(
            label, world_size, version, verdict, (), "crash", f"{type(exc).__name__}: {exc}", config_json=shown
        )
    errors = tuple((f.code, f.path, f.message) for f in report.findings if f.severity == "error")
    if report.ok != (not errors):
        return Comparison(
            label, world_size, version, verdict, errors, "crash", "Report.ok disagrees with findings", config_json=shown
        )
    divergence = next((d for d in DOCUMENTED_DIVERGENCES if d.applies(config, world_size, verdict)), None)
    if divergence is not None:
        return Comparison(label, world_size, version, verdict, errors, "divergence", divergence.name, config_json=shown)
    if not verdict.accepted:
        outcome = "agree-reject" if errors else "missed"
    elif not errors:
        outcome = "agree-accept"
    elif all(code in initialize_codes for code, _, _ in errors):
        outcome = "initialize-time"
    else:
        outcome = "false-alarm"
    return Comparison(label, world_size, version, verdict, errors, outcome, config_json=shown)


def run_differential(
    cases: Sequence[tuple[str, dict[str, Any]]],
    world_sizes: Sequence[int] = WORLD_SIZES,
    version: str = IN_PROCESS_VERSION,
) -> list[Comparison]:
    """Every ``(label, config)`` at every world size: DeepSpeed ``version`` against ``core.validate``."""
    validate, initialize_codes = validator_api()
    pairs = [(label, config, ws) for label, config in cases for ws in world_sizes]
    verdicts = deepspeed_verdicts([(config, ws) for _, config, ws in pairs], version)
    return [
        compare(label, config, ws, verdict, version=version, validate=validate, initialize_codes=initialize_codes)
        for (label, config, ws), verdict in zip(pairs, verdicts, strict=True)
    ]


def disagreement_message(comparisons: Sequence[Comparison], limit: int = 60) -> str:
    """All disagreements of a group, with config labels, world sizes, DeepSpeed's error and our findings."""
    bad = [c for c in comparisons if c.disagrees]
    lines = [f"{len(bad)} of {len(comparisons)} comparisons disagree with DeepSpeed:"]
    lines += [c.describe() for c in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more")
    return "\n".join(lines)


# --------------------------------------------------------------------------- deepspeed.initialize cases
_TINY = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
_SGD = {"type": "SGD", "params": {"lr": 0.01}}
_ADAMW = {"type": "AdamW", "params": {"lr": 0.01, "torch_adam": True}}  # torch's AdamW: no JIT-compiled op


@dataclass(frozen=True)
class InitializeCase:
    """A config that DeepSpeedConfig accepts, and what ``deepspeed.initialize`` then does with it.

    ``raises``: initialize raises (``error_type``, a message containing ``message_contains``).
    ``config_rule``: the failure is the config's fault (a validator rule, an error). ``config_rule=False``:
    it is this CPU machine's (a CUDA cluster accepts it) or the caller's (e.g. no client optimizer passed),
    and the validator must not make it an error.
    Cases with ``raises=False`` are controls: the same shape that works (initialize and two training steps),
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


INITIALIZE_CASES: tuple[InitializeCase, ...] = (
    InitializeCase("control-sgd", "torch.optim name, exact case", {**_TINY, "optimizer": _SGD}, False),
    InitializeCase(
        "control-adamw-upper-case",
        "DeepSpeed optimizer names are case-insensitive",
        {**_TINY, "optimizer": {**_ADAMW, "type": "ADAMW"}},
        False,
    ),
    InitializeCase(
        "unknown-optimizer",
        "optimizer.type not a DeepSpeed optimizer nor a torch.optim class",
        {**_TINY, "optimizer": {"type": "AdamQ", "params": {"lr": 0.01}}},
        True,
        "AssertionError",
        "AdamQ is not a supported DeepSpeed Optimizer",
    ),
    InitializeCase(
        "torch-optimizer-wrong-case",
        "torch.optim names are case-sensitive ('sgd' is not torch.optim.SGD)",
        {**_TINY, "optimizer": {**_SGD, "type": "sgd"}},
        True,
        "AssertionError",
        "sgd is not a supported DeepSpeed Optimizer",
    ),
    InitializeCase(
        "removed-optimizer-onebitadam",
        "OneBitAdam is no longer a DeepSpeed optimizer in 0.19.8",
        {**_TINY, "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.01}}},
        True,
        "AssertionError",
        "OneBitAdam is not a supported DeepSpeed Optimizer",
    ),
    InitializeCase(
        "optimizer-type-auto",
        "optimizer.type 'auto' is kept verbatim by DeepSpeed",
        {**_TINY, "optimizer": {**_SGD, "type": "auto"}},
        True,
        "AssertionError",
        "auto is not a supported DeepSpeed Optimizer",
    ),
    InitializeCase(
        "optimizer-param-not-accepted",
        "an optimizer parameter its constructor does not take",
        {**_TINY, "optimizer": {"type": "SGD", "params": {"lr": 0.01, "betas": [0.9, 0.99]}}},
        True,
        "TypeError",
        "unexpected keyword argument 'betas'",
    ),
    InitializeCase(
        "deepspeed-optimizer-param-not-accepted",
        "a parameter DeepSpeed's AdamW does not take (momentum)",
        {**_TINY, "optimizer": {**_ADAMW, "params": {**_ADAMW["params"], "momentum": 0.9}}},
        True,
        "TypeError",
        "unexpected keyword argument 'momentum'",
    ),
    InitializeCase(
        "optimizer-lr-auto",
        "optimizer.params.lr 'auto' reaches the optimizer as a string",
        {**_TINY, "optimizer": {"type": "SGD", "params": {"lr": "auto"}}},
        True,
        "TypeError",
        "not supported between instances of 'str' and 'float'",
    ),
    InitializeCase(
        "max-grad-norm-in-optimizer-params",
        "optimizer.params.max_grad_norm (use gradient_clipping)",
        {**_TINY, "optimizer": {"type": "SGD", "params": {"lr": 0.01, "max_grad_norm": 1.0}}},
        True,
        "ValueError",
        "'max_grad_norm' is not supported as an optimizer parameter",
    ),
    InitializeCase(
        "lamb-static-loss-scale",
        "Lamb requires dynamic loss scaling (fp16.loss_scale 0), even with fp16 off",
        {**_TINY, "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}, "fp16": {"enabled": False, "loss_scale": 128}},
        True,
        "AssertionError",
        "DeepSpeed lamb optimizer requires dynamic loss scaling",
    ),
    InitializeCase(
        "lamb-static-loss-scale-fp16",
        "Lamb with fp16 on and a static loss scale",
        {**_TINY, "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}, "fp16": {"enabled": True, "loss_scale": 128}},
        True,
        "AssertionError",
        "DeepSpeed lamb optimizer requires dynamic loss scaling",
    ),
    InitializeCase(
        "optimizer-param-wrong-type",
        "an optimizer parameter of the wrong type (AdamW betas a number, not a pair)",
        {**_TINY, "optimizer": {**_ADAMW, "params": {**_ADAMW["params"], "betas": 0.9}}},
        True,
        "TypeError",
        "'float' object is not subscriptable",
    ),
    InitializeCase(
        "torch-optimizer-lr-string",
        "a torch.optim optimizer with lr given as a string",
        {**_TINY, "optimizer": {"type": "SGD", "params": {"lr": "0.01"}}},
        True,
        "TypeError",
        "not supported between instances of 'str' and 'float'",
    ),
    InitializeCase(
        "lamb-on-cpu",
        "FusedLamb has no CPU kernel: fails on this CPU machine only, fine on a CUDA cluster",
        {**_TINY, "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}},
        True,
        "ValueError",
        "This op had not been implemented on CPU backend",
        config_rule=False,
    ),
    InitializeCase(
        "zero-untested-optimizer",
        "ZeRO with an optimizer outside ZERO_SUPPORTED_OPTIMIZERS needs zero_allow_untested_optimizer",
        {**_TINY, "optimizer": _SGD, "zero_optimization": {"stage": 1}, "bf16": {"enabled": True}},
        True,
        "AssertionError",
        "You are using an untested ZeRO Optimizer",
    ),
    InitializeCase(
        "control-zero-untested-optimizer-allowed",
        "the same with zero_allow_untested_optimizer true",
        {
            **_TINY,
            "optimizer": _SGD,
            "zero_optimization": {"stage": 1},
            "bf16": {"enabled": True},
            "zero_allow_untested_optimizer": True,
        },
        False,
    ),
    InitializeCase(
        "control-zero2-torch-adamw",
        "ZeRO-2 with torch AdamW (a supported optimizer)",
        {**_TINY, "optimizer": _ADAMW, "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}},
        False,
    ),
    InitializeCase(
        "compute-grad-norm-false-with-clipping",
        "compute_grad_norm false needs gradient_clipping 0 (its default is 1.0)",
        {**_TINY, "optimizer": _ADAMW, "zero_optimization": {"stage": 2, "compute_grad_norm": False}},
        True,
        "ValueError",
        "compute_grad_norm=false requires gradient_clipping=0",
    ),
    InitializeCase(
        "control-compute-grad-norm-false-no-clipping",
        "compute_grad_norm false with gradient_clipping 0, stage 2",
        {
            **_TINY,
            "optimizer": _ADAMW,
            "gradient_clipping": 0,
            "zero_optimization": {"stage": 2, "compute_grad_norm": False},
        },
        False,
    ),
    InitializeCase(
        "managed-grad-accum-false-overlap-stage1",
        "managed_gradient_accumulation false with overlap_comm needs ZeRO stage 2",
        {
            **_TINY,
            "optimizer": _ADAMW,
            "managed_gradient_accumulation": False,
            "zero_optimization": {"stage": 1, "overlap_comm": True},
            "bf16": {"enabled": True},
        },
        True,
        "AssertionError",
        "managed_gradient_accumulation=False supports ZeRO overlap_comm only with ZeRO stage 2",
    ),
    InitializeCase(
        "data-types-invalid-dtype",
        "data_types.grad_accum_dtype not a DeepSpeed dtype name",
        {**_TINY, "optimizer": _SGD, "data_types": {"grad_accum_dtype": "fp8"}},
        True,
        "ValueError",
        "'fp8' is not a valid DtypeEnum",
    ),
    InitializeCase(
        "data-types-invalid-param-dtype",
        "data_types.param_dtype not a DeepSpeed dtype name",
        {**_TINY, "optimizer": _SGD, "data_types": {"param_dtype": "float8"}},
        True,
        "ValueError",
        "'float8' is not a valid DtypeEnum",
    ),
    InitializeCase(
        "bf16-fp32-grad-accum-without-zero",
        "bf16 with grad_accum_dtype fp32 needs ZeRO (stage 0 has no such mixed path)",
        {**_TINY, "optimizer": _SGD, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}},
        True,
        "NotImplementedError",
        "unsupported mix of model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32",
    ),
    InitializeCase(
        "control-bf16-fp32-grad-accum-zero2",
        "bf16 with grad_accum_dtype fp32 under ZeRO-2",
        {
            **_TINY,
            "optimizer": _ADAMW,
            "bf16": {"enabled": True},
            "data_types": {"grad_accum_dtype": "fp32"},
            "zero_optimization": {"stage": 2},
        },
        False,
    ),
    InitializeCase(
        "param-dtype-conflicts-with-precision",
        "data_types.param_dtype must match the enabled precision (bf16 here, but bf16 is off)",
        {**_TINY, "optimizer": _SGD, "data_types": {"param_dtype": "bf16"}},
        True,
        "AssertionError",
        "data_types.param_dtype='bf16' conflicts with the enabled precision mode",
    ),
    InitializeCase(
        "control-param-dtype-matches-precision",
        "data_types.param_dtype bf16 with bf16 enabled",
        {**_TINY, "optimizer": _ADAMW, "bf16": {"enabled": True}, "data_types": {"param_dtype": "bf16"}},
        False,
    ),
    InitializeCase(
        "compute-grad-norm-false-stage1-bf16-fp32-accum",
        "compute_grad_norm false is not supported by ZeRO-1 with bf16 parameters and fp32 accumulation",
        {
            **_TINY,
            "optimizer": _ADAMW,
            "gradient_clipping": 0,
            "bf16": {"enabled": True},
            "data_types": {"grad_accum_dtype": "fp32"},
            "zero_optimization": {"stage": 1, "compute_grad_norm": False},
        },
        True,
        "ValueError",
        "compute_grad_norm=false does not support ZeRO Stage 1 with BF16 parameters and FP32 gradient accumulation",
    ),
    InitializeCase(
        "zero-legacy-stage1",
        "zero_optimization.legacy_stage1 true (removed implementation)",
        {
            **_TINY,
            "optimizer": _ADAMW,
            "bf16": {"enabled": True},
            "zero_optimization": {"stage": 1, "legacy_stage1": True},
        },
        True,
        "Exception",
        "The deprecated version of ZeRO Stage 1 is not supported",
    ),
    InitializeCase(
        "zero-without-optimizer",
        "ZeRO stage 1/2 with no optimizer: fails only when the caller passes no optimizer either "
        "(HF Trainer / Accelerate pass their own), so not the config's fault alone",
        {**_TINY, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}},
        True,
        "AssertionError",
        "zero stage 2 requires an optimizer",
        config_rule=False,
    ),
    InitializeCase(
        "control-warmuplr",
        "a valid DeepSpeed scheduler",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}},
        False,
    ),
    InitializeCase(
        "unknown-scheduler",
        "scheduler.type neither a DeepSpeed nor a torch.optim.lr_scheduler class",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLinear", "params": {}}},
        True,
        "AssertionError",
        "DeepSpeed does not recognize LR scheduler WarmupLinear",
    ),
    InitializeCase(
        "scheduler-wrong-case",
        "scheduler names are case-sensitive",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "warmuplr", "params": {}}},
        True,
        "AssertionError",
        "DeepSpeed does not recognize LR scheduler warmuplr",
    ),
    InitializeCase(
        "scheduler-type-auto",
        "scheduler.type 'auto' is kept verbatim",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "auto", "params": {}}},
        True,
        "AssertionError",
        "DeepSpeed does not recognize LR scheduler auto",
    ),
    InitializeCase(
        "scheduler-param-not-accepted",
        "a scheduler parameter its constructor does not take (WarmupLR has no total_num_steps)",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"total_num_steps": 10}}},
        True,
        "TypeError",
        "unexpected keyword argument 'total_num_steps'",
    ),
    InitializeCase(
        "warmupcosine-param-not-accepted",
        "WarmupCosineLR takes no warmup_max_lr",
        {
            **_TINY,
            "optimizer": _SGD,
            "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_max_lr": 0.1}},
        },
        True,
        "TypeError",
        "unexpected keyword argument 'warmup_max_lr'",
    ),
    InitializeCase(
        "warmupdecaylr-missing-total-num-steps",
        "WarmupDecayLR requires total_num_steps",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}},
        True,
        "TypeError",
        "missing 1 required positional argument: 'total_num_steps'",
    ),
    InitializeCase(
        "control-warmupdecaylr",
        "WarmupDecayLR with total_num_steps",
        {
            **_TINY,
            "optimizer": _SGD,
            "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100, "warmup_num_steps": 10}},
        },
        False,
    ),
    InitializeCase(
        "onecycle-missing-cycle-min-lr",
        "OneCycle requires cycle_min_lr and cycle_max_lr",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "OneCycle", "params": {"cycle_max_lr": 0.1}}},
        True,
        "TypeError",
        "missing 1 required positional argument: 'cycle_min_lr'",
    ),
    InitializeCase(
        "scheduler-params-null",
        "scheduler.params null",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": None}},
        True,
        "TypeError",
        "argument after ** must be a mapping",
    ),
    InitializeCase(
        "scheduler-param-auto",
        "scheduler.params values 'auto' reach the constructor",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}},
        True,
        "ValueError",
        "warmup_num_steps must be a positive integer, got auto",
    ),
    InitializeCase(
        "scheduler-param-wrong-type",
        "a scheduler parameter of the wrong type (warmup_num_steps a string)",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "100"}}},
        True,
        "ValueError",
        "warmup_num_steps must be a positive integer, got 100",
    ),
    InitializeCase(
        "scheduler-steps-float",
        "warmup_num_steps 100.0 (a float, as written 1e2) is not an integer",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100.0}}},
        True,
        "ValueError",
        "warmup_num_steps must be a positive integer, got 100.0",
    ),
    InitializeCase(
        "scheduler-lr-string",
        "WarmupLR warmup_max_lr given as a string",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": "0.1"}}},
        True,
        "TypeError",
        "unsupported operand type(s) for -: 'str' and 'float'",
    ),
    InitializeCase(
        "warmup-num-steps-zero",
        "WarmupLR warmup_num_steps must be a positive integer",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}},
        True,
        "ValueError",
        "warmup_num_steps must be a positive integer, got 0",
    ),
    InitializeCase(
        "lrrangetest-step-size-zero",
        "LRRangeTest lr_range_test_step_size must be a positive integer",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_step_size": 0}}},
        True,
        "ValueError",
        "lr_range_test_step_size must be a positive integer, got 0",
    ),
    InitializeCase(
        "torch-scheduler-missing-argument",
        "a torch.optim.lr_scheduler class without its required argument",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "StepLR", "params": {}}},
        True,
        "TypeError",
        "missing 1 required positional argument: 'step_size'",
    ),
    InitializeCase(
        "torch-scheduler-needs-python-objects",
        "a torch.optim.lr_scheduler class whose required argument is a Python function",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "LambdaLR", "params": {}}},
        True,
        "TypeError",
        "missing 1 required positional argument: 'lr_lambda'",
    ),
    InitializeCase(
        "control-torch-scheduler",
        "torch.optim.lr_scheduler.StepLR with step_size",
        {**_TINY, "optimizer": _SGD, "scheduler": {"type": "StepLR", "params": {"step_size": 10}}},
        False,
    ),
    InitializeCase(
        "steps-per-print-zero",
        "steps_per_print 0: DeepSpeed computes step % steps_per_print",
        {**_TINY, "optimizer": _SGD, "steps_per_print": 0},
        True,
        "ZeroDivisionError",
        "integer modulo by zero",
        phase="step",
    ),
    InitializeCase(
        "steps-per-print-string",
        "steps_per_print given as a string",
        {**_TINY, "optimizer": _SGD, "steps_per_print": "10"},
        True,
        "TypeError",
        "unsupported operand type(s) for %: 'int' and 'str'",
        phase="step",
    ),
    InitializeCase(
        "control-steps-per-print-negative",
        "steps_per_print -1 trains (prints every step)",
        {**_TINY, "optimizer": _SGD, "steps_per_print": -1},
        False,
    ),
    InitializeCase(
        "gradient-clipping-auto",
        "gradient_clipping 'auto' is kept verbatim and compared with a float at the first step",
        {**_TINY, "optimizer": _SGD, "gradient_clipping": "auto"},
        True,
        "TypeError",
        "'>' not supported between instances of 'str' and 'float'",
        phase="step",
    ),
    InitializeCase(
        "control-fp16-on-cpu",
        "fp16 with dynamic loss scaling initializes on this CPU accelerator (FP16_UnfusedOptimizer)",
        {**_TINY, "optimizer": _SGD, "fp16": {"enabled": True}},
        False,
    ),
    InitializeCase(
        "control-end", "the first control again, last (no state leaked)", {**_TINY, "optimizer": _SGD}, False
    ),
)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def release_interpreter(version: str) -> tuple[str, dict[str, str]]:
    """(python, extra environment) that imports DeepSpeed ``version``: the main interpreter for the
    in-process and side-by-side releases (the latter first on PYTHONPATH, own JIT ops folder), else the
    release's own venv."""
    if version in SIDE_BY_SIDE:
        folder = SIDE_BY_SIDE_ROOT / version
        if not (folder / "deepspeed").is_dir():
            raise OracleUnavailable(f"{folder} not found (scripts/install-test-deps.sh creates it)")
        return sys.executable, {"PYTHONPATH": str(folder), "TORCH_EXTENSIONS_DIR": str(torch_extensions_dir(version))}
    if version in WORKER_PYTHONS:
        return str(WORKER_PYTHONS[version]), {}
    return sys.executable, {}


def run_initialize_configs(
    configs: dict[str, dict[str, Any]], version: str = IN_PROCESS_VERSION, timeout: float = 1500
) -> InitializeRun:
    """``run_initialize_cases`` for plain ``{id: config}`` under DeepSpeed ``version`` (one rank: DeepSpeed's
    shared-memory all-reduce op is not built)."""
    python, extra = release_interpreter(version)
    return _run_initialize(configs, python, {**extra, "DSCONFIG_NO_SHM_OP": "1"}, timeout)


def run_initialize_cases(
    cases: Sequence[InitializeCase] = INITIALIZE_CASES, python: str = sys.executable, timeout: float = 1500
) -> InitializeRun:
    """Run ``deepspeed.initialize`` for every case in ONE fresh single-rank CPU subprocess (so no
    torch.distributed state leaks into the caller); returns what the host supports and each case's
    outcome (see ``ds0195_worker.run_initialize_case_on_host``)."""
    return _run_initialize({case.id: case.config for case in cases}, python, {}, timeout)


def _run_initialize(configs: dict[str, dict[str, Any]], python: str, extra: dict[str, str],
                    timeout: float) -> InitializeRun:
    env = {**single_rank_env(), **extra}
    request = json.dumps({"cases": configs})
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
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"initialize runner failed (exit {proc.returncode}): {proc.stderr[-3000:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    return InitializeRun(host=answer["host"], results=answer["results"])
