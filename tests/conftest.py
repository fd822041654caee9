"""Shared pytest configuration.

With DSCONFIG_FAIL_ON_SKIP=1 (set by .ci/run) a skipped test fails the run, so a
missing dependency can never make CI green by skipping the tests that need it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
CORPUS_DIR = SHARED_DIR / "corpus"
REFERENCE_DIR = SHARED_DIR / "reference"


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
