"""With no release named, ``dsconfig export`` and the app read a config as the installed DeepSpeed (README: "the
default is the DeepSpeed installed in your environment"), as ``validate`` and ``fix`` did: export and the app's
release picker defaulted to the newest profiled release, so a key 0.17.6 refuses was exported for a 0.17.6
environment without a word."""

from __future__ import annotations

import io

import pytest
from app_support import app

from core import versions
from core.cli import main


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture
def installed_0_17_6(monkeypatch):
    monkeypatch.setattr(versions, "installed_deepspeed", lambda: "0.17.6")
    assert versions.default_version() == "0.17.6"


def test_export_validates_for_the_installed_release(installed_0_17_6, tmp_path, capsys):
    written = tmp_path / "e.json"
    argv = ["export", "--preset", "zero3-bf16", "--set", "zero_optimization.allgather_sequential=true",
            "-o", str(written)]
    code, _ = _run(argv)
    err = capsys.readouterr().err
    assert code != 0 and not written.exists(), err
    assert "allgather_sequential" in err and "0.17.6" in err
    code, _ = _run([*argv, "--deepspeed-version", "0.19.8"])  # named: that release, which reads the key
    assert code == 0 and written.exists(), capsys.readouterr().err


def test_the_app_starts_on_the_installed_release(installed_0_17_6):
    at = app()
    assert at.session_state["context"]["version"] == "0.17.6"
