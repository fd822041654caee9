"""The real DeepSpeed as the judge: does ``DeepSpeedConfig`` accept a config at a given world size?

0.19.8 (the version installed in the main venv) runs in-process, imported lazily. Other versions run in
a long-lived worker subprocess (``ds0195_worker.py`` under that version's interpreter) that answers
batches of configs over JSON lines, so the multi-second DeepSpeed import is paid once per session.

The comparison with the validator is in ``differential.py``; ``deepspeed.initialize`` runs in
``initialize.py`` (cases in ``initialize_cases.py``).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
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


def parser_cannot_finish(release: str, config: dict) -> bool:
    """Whether ``release``'s own parser cannot judge ``config`` on any machine: 0.16.x computes
    ``2**fp16.initial_scale_power`` while parsing (``get_initial_dynamic_scale`` in runtime/config.py), so an
    exponent like 10**20 runs for hours and exhausts memory (the worker was killed after 15 minutes)."""
    fp16 = config.get("fp16")
    power = fp16.get("initial_scale_power") if isinstance(fp16, dict) else None
    return release.startswith("0.16.") and isinstance(power, int) and not isinstance(power, bool) and power > 2**24


# --------------------------------------------------------------------------- interpreters
def run_under_release(version: str, script: str, *args: str, timeout: int = 300) -> str:
    """The last line ``script`` (Python source) prints when the interpreter that imports DeepSpeed ``version`` runs
    it with ``args`` (``release_interpreter``); CalledProcessError when it fails."""
    python, extra = release_interpreter(version)
    done = subprocess.run([python, "-c", script, *args], capture_output=True, text=True,
                          env={**os.environ, **extra}, timeout=timeout, check=True)
    return done.stdout.strip().splitlines()[-1]


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
