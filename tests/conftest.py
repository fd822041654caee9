"""Shared pytest configuration.

With DSCONFIG_FAIL_ON_SKIP=1 (set by .ci/run) a skipped test fails the run, so a
missing dependency can never make CI green by skipping the tests that need it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.oracle.ops_cache import TORCH_EXTENSIONS_ROOT, torch_extensions_dir

# A loaded or slow CI host must not turn a property test into a failure: no per-example deadline and no
# "too slow" health check for any test (a test's own @settings still sets its example count).
settings.register_profile("dsconfig", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dsconfig")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
CORPUS_DIR = SHARED_DIR / "corpus"
REFERENCE_DIR = SHARED_DIR / "reference"

# set before any test starts a DeepSpeed subprocess (they inherit it) or loads an op in-process
os.environ["TORCH_EXTENSIONS_DIR"] = str(torch_extensions_dir("0.19.8"))
# CI has no network but the package registries: nothing in a test may reach for a model hub, and a
# library that would must fail at once, not wait on a connection
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _files_open_in_some_process() -> set[str]:
    """Every path a running process holds open (read from /proc; what cannot be read is left out)."""
    held: set[str] = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            fds = list(fd_dir.iterdir())
        except OSError:  # the process ended, or is not ours to read
            continue
        for fd in fds:
            try:
                held.add(os.readlink(fd))
            except OSError:
                continue
    return held


def stale_op_locks() -> list[Path]:
    """The op ``lock`` files in this clone that no running process holds open: a killed build's leftovers.

    torch's FileBaton keeps the lock's file descriptor open until it releases it, so a lock no process
    has open can never be released; a lock that is held belongs to a build in progress (perhaps of a
    second test run in this clone) and is left alone.
    """
    locks = sorted(TORCH_EXTENSIONS_ROOT.glob("*/*/lock")) if TORCH_EXTENSIONS_ROOT.is_dir() else []
    if not locks:
        return []
    held = _files_open_in_some_process()
    return [lock for lock in locks if str(lock) not in held]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remove op locks a killed run left behind; only in the controlling process, never an xdist worker."""
    if hasattr(session.config, "workerinput"):
        return
    for lock in stale_op_locks():
        lock.unlink(missing_ok=True)


def _start_order(item: pytest.Item) -> int:
    """Longest first: tests marked ``long`` (real-DeepSpeed training and op builds, minutes each), then the
    other slow real-DeepSpeed and browser tests, then the rest."""
    if item.get_closest_marker("long"):
        return 0
    if item.get_closest_marker("slow") and (item.get_closest_marker("deepspeed") or item.get_closest_marker("e2e")):
        return 1
    return 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the long tests first, so that on several xdist workers none of them is left to run alone at the
    end (the order is stable, so every worker collects the same list)."""
    items.sort(key=_start_order)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("DSCONFIG_FAIL_ON_SKIP") == "1" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped while DSCONFIG_FAIL_ON_SKIP=1: {reason}"


def corpus_files() -> list[Path]:
    """Every config file in the shared corpus (sorted, stable ids)."""
    return sorted(
        p for p in CORPUS_DIR.rglob("*") if p.is_file() and p.name not in ("SOURCES.tsv", "README.md")
    )
