"""The browser-less load driver (scripts/load_test_ws.py) really drives the app: a short run with two
sessions loads a preset, picks a model, flips the ZeRO stage and sees every change, with no error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import load_test_ws


@pytest.mark.slow
def test_websocket_load_driver_short_run(capsys):
    assert load_test_ws.main(["--sessions", "2", "--duration", "4", "--ramp", "0"]) == 0
    out = capsys.readouterr().out
    assert "completed setup (open + load preset + model + ZeRO page): 2" in out
    assert "errors: 0" in out
    changes = int(out.split("stage changes measured: ")[1].split()[0])
    assert changes >= 2, out


def test_a_change_counts_only_when_the_caption_shows_the_new_stage():
    run = load_test_ws.Run(texts=["Current config: ZeRO-3 — 40 GiB per GPU"])
    assert load_test_ws._caption_shows(run, 3)
    assert not load_test_ws._caption_shows(run, 2)
    assert not load_test_ws._caption_shows(load_test_ws.Run(), 3)
