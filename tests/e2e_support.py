"""Shared pieces for browser tests and the load script: start ``streamlit run app.py`` on a free loopback port.

No pytest here, so ``scripts/load_test.py`` can use it too. The pytest fixtures of the e2e tests live in
``tests/test_e2e.py``; this module only adds what they do not offer (a server with its own environment).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
#: Debian's Chromium (package ``chromium``), wherever PATH has it; None when it is not installed
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port that is free on the loopback interface right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate ``proc``; kill it if it has not exited 15 s later."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout: float, failure: str) -> None:
    """Poll ``url``/_stcore/health until it answers 200; RuntimeError(failure) if ``proc`` dies or time is up."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(failure) from None
            time.sleep(0.5)


@contextlib.contextmanager
def chromium_browser() -> Iterator[Any]:
    """Debian's Chromium, headless with this workplace's flags, driven by Playwright; closed on exit."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def streamlit_server(log_name: str = "streamlit-e2e-extra.log", env: Mapping[str, str] | None = None,
                     extra_args: tuple[str, ...] = (), timeout: float = 90.0, app: str = "app.py") -> Iterator[str]:
    """Run the app (``app``: its main script, relative to the repository) on a free loopback port; yield its base
    URL; stop it (and only it) on exit."""
    port = free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / log_name, "w") as log:
        proc = subprocess.Popen(
            [str(streamlit), "run", app, "--server.headless", "true", "--server.port", str(port),
             "--server.address", LOOPBACK, "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", *extra_args],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            env=os.environ | {"PYTHONUNBUFFERED": "1"} | dict(env or {}),
        )
        url = f"http://{LOOPBACK}:{port}"
        try:
            wait_until_healthy(url, proc, timeout, f"streamlit did not start; see {ARTIFACTS / log_name}")
            yield url
        finally:
            stop_process(proc)


#: The ZeRO page's stage control: one row of buttons ("0 — disabled" … "3 — weights"), one click to choose.
STAGE_CONTROL = '[data-testid="stButtonGroup"]'


def stage_button(page: Any, stage: int) -> Any:
    """The button of ``stage`` in the ZeRO page's stage control (``page`` sync or async Playwright, or a locator
    inside it)."""
    return page.locator(f"{STAGE_CONTROL} button").filter(has_text=re.compile(rf"^\s*{stage} —"))
