"""What the CLI tests share: run ``dsconfig`` in-process with both streams captured, and write a config file."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from core.cli import main


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``dsconfig argv``'s exit code, standard output and standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv, out=out)
    return code, out.getvalue(), err.getvalue()


def config_file(tmp_path: Path, config: Any, name: str = "ds.json") -> str:
    """``config`` written as JSON to ``tmp_path/name``; its path."""
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)
