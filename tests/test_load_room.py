"""A room, in short: three real Chromium sessions on one server, each with its own preset and model, change the
ZeRO stage at a person's pace; every session gets to work, sees every change, and never shows another session's
model (``scripts/load_test.py``; the full 20-session run is ``make load``, figures in BENCHMARKS.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import load_test
from e2e_support import CHROMIUM

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("load-room")]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_three_browser_sessions_share_one_server(capsys):
    # generous step time-out: CI runs this beside other browser tests on 2 cores; the figures are not asserted,
    # and each session makes at least two changes however slow the machine is (a change took 9.6 s on CI)
    code = load_test.main(["--sessions", "3", "--duration", "4", "--min-changes", "2", "--pace", "1", "--ramp", "1",
                           "--timeout", "300"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "completed setup (open + load preset + ZeRO page): 3" in out
    assert "errors: 0" in out
    changes = int(out.split("stage changes measured: ")[1].split()[0])
    assert changes >= 6, out  # at least two per session (--min-changes)
    # where the browser's time went, by Chromium process: a real run has tabs and a main process
    cpu_line = next(line for line in out.splitlines() if line.startswith("CPU while the sessions ran:"))
    assert "browser: tabs" in cpu_line and "browser: main" in cpu_line and "browser in all" in cpu_line, cpu_line


def test_chromium_processes_are_grouped_by_their_type():
    chromium = "/usr/lib/chromium/chromium"
    assert load_test.browser_group([chromium, "--headless", "--no-sandbox"]) == "browser: main"
    assert load_test.browser_group([chromium, "--type=renderer", "--renderer-client-id=7"]) == "browser: tabs"
    assert load_test.browser_group([chromium, "--type=zygote"]) == "browser: tabs"
    assert load_test.browser_group([chromium, "--type=gpu-process"]) == "browser: GPU/compositor"
    assert load_test.browser_group([chromium, "--type=utility", "--utility-sub-type=network.mojom.NetworkService"]) \
        == "browser: utilities"
    assert load_test.browser_group([chromium, "--type=broker"]) == "browser: other"
