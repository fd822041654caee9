"""The initialize oracle's runner (tests/oracle/initialize.py): a runner killed by a signal is run once more, any
other failure is reported at once."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.oracle.initialize import _run_initialize

ANSWER = '{"host": {"fp16": false, "bf16": true}, "results": {"0": {"raised": false}}}'


def _fake_python(tmp_path: Path, behaviours: list[str]) -> str:
    """An executable standing in for the release's python: its n-th call does behaviours[n] ("abort": dies by
    SIGABRT with the message a C++ terminate prints, "fail": exits 1, "answer": prints a valid answer)."""
    script = tmp_path / "python"
    calls = tmp_path / "calls"
    cases = "\n".join(f'  {i}) {{ {b}; }} ;;' for i, b in enumerate(
        {"abort": 'echo "terminate called without an active exception" >&2; kill -ABRT $$',
         "fail": 'echo "ImportError: no deepspeed" >&2; exit 1',
         "answer": f"echo '{ANSWER}'"}[b] for b in behaviours))
    script.write_text(f"""#!/bin/bash
cat > /dev/null
n=$(cat {calls} 2>/dev/null || echo 0); echo $((n + 1)) > {calls}
case $n in
{cases}
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _calls(tmp_path: Path) -> int:
    return int((tmp_path / "calls").read_text())


def test_a_runner_killed_by_a_signal_is_run_once_more(tmp_path):
    run = _run_initialize({"0": {}}, _fake_python(tmp_path, ["abort", "answer"]), {}, 30)
    assert run.host == {"fp16": False, "bf16": True} and run.results == {"0": {"raised": False}}
    assert _calls(tmp_path) == 2


def test_two_signal_deaths_fail_with_both_stderrs(tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)exit -6: terminate called.*then exit -6: terminate called"):
        _run_initialize({"0": {}}, _fake_python(tmp_path, ["abort", "abort", "answer"]), {}, 30)
    assert _calls(tmp_path) == 2


def test_an_ordinary_failure_is_not_retried(tmp_path):
    with pytest.raises(RuntimeError, match=r"exit 1: ImportError: no deepspeed"):
        _run_initialize({"0": {}}, _fake_python(tmp_path, ["fail", "answer"]), {}, 30)
    assert _calls(tmp_path) == 1
