"""The production Dockerfile, checked without a Docker engine (there is none on CI's machines).

What can be checked for real is checked: the files it copies are everything the app imports, the image's file
set serves the app with the Dockerfile's own CMD, and its HEALTHCHECK command passes against that server; the
rest (slim base, non-root user, no dev dependencies) is read from the file.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import ROOT, free_port, stop_process, wait_until_healthy

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def exec_form(arguments: str) -> list[str]:
    """A JSON exec-form argument list (``["a", "b"]``), or the shell words."""
    return json.loads(arguments) if arguments.startswith("[") else shlex.split(arguments)


def copies() -> list[tuple[list[str], str]]:
    return [(words[:-1], words[-1]) for kind, args in instructions() if kind == "COPY"
            for words in [shlex.split(args)]]


async def open_session(url: str):
    """One browser-less session (the websocket load driver's client) opening the app's first page."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import websockets
    from load_test_ws import Client

    async with websockets.connect(url.replace("http://", "ws://") + "/_stcore/stream",
                                  subprotocols=["streamlit"], max_size=None) as ws:
        return await Client(ws, 60).rerun()


def test_slim_base_non_root_user_and_healthcheck_on_the_health_endpoint():
    steps = instructions()
    kinds = [kind for kind, _ in steps]
    assert steps[0][0] == "FROM" and steps[0][1].endswith("-slim")
    user = next(args for kind, args in steps if kind == "USER")
    assert user not in ("root", "0")
    # nothing copied or run after the switch to the user, and the server runs as it
    assert kinds.index("USER") > max(i for i, k in enumerate(kinds) if k in ("RUN", "COPY"))
    health = next(args for kind, args in steps if kind == "HEALTHCHECK")
    assert "/_stcore/health" in health
    cmd = exec_form(next(args for kind, args in steps if kind == "CMD"))
    port = next(a.split("=", 1)[1] for a in cmd if a.startswith("--server.port="))
    assert f":{port}/_stcore/health" in health
    assert f"EXPOSE {port}" in [f"{k} {a}" for k, a in steps]


def test_installs_only_the_runtime_dependencies():
    installs = [args for kind, args in instructions() if kind == "RUN" and "pip install" in args]
    assert installs == ["pip install ."]  # the project itself, no [test]/[deepspeed] extras, no torch
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv*", "tests", ".git"} <= set(ignored)


def local_imports(path: Path, local: set[str]) -> set[str]:
    """Top-level names of this repository that a Python file imports."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & local


def image_tree(tmp_path: Path) -> Path:
    """The /app folder of the image: what the Dockerfile's COPY lines put there, from this checkout."""
    app = tmp_path / "app"
    app.mkdir()
    for sources, dest in copies():
        for source in sources:
            target = app / dest / Path(source).name if dest.endswith("/") else app / dest
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, target)
    return app


def test_the_image_holds_everything_the_app_imports(tmp_path):
    app = image_tree(tmp_path)
    local = {p.stem if p.suffix == ".py" else p.name for p in ROOT.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "tests"}
    shipped = {p.stem if p.suffix == ".py" else p.name for p in app.iterdir()}
    for source in [app / "app.py", *app.rglob("*.py")]:
        missing = local_imports(source, local) - shipped
        assert not missing, f"{source.relative_to(app)} imports {missing}, which the Dockerfile does not copy"
    assert (app / ".streamlit" / "config.toml").exists()
    assert {p.name for p in (ROOT / "presets").glob("*.json")} <= {p.name for p in (app / "presets").glob("*.json")}


@pytest.mark.slow
def test_the_images_cmd_serves_and_its_healthcheck_passes(tmp_path):
    app = image_tree(tmp_path)
    steps = instructions()
    port = free_port()
    cmd = [a if not a.startswith("--server.port=") else f"--server.port={port}"
           for a in exec_form(next(args for kind, args in steps if kind == "CMD"))]
    cmd = [a if a != "--server.address=0.0.0.0" else "--server.address=127.0.0.1" for a in cmd]  # loopback in tests
    assert cmd[0] == "streamlit"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("streamlit")), *cmd[1:],
                                 "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                                cwd=app, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_healthy(url, proc, 90, f"the image's CMD did not serve; see {tmp_path / 'server.log'}")
            health = exec_form(next(args for kind, args in steps if kind == "HEALTHCHECK").split("CMD", 1)[1].strip())
            health = [sys.executable if a == "python" else a.replace(":8501/", f":{port}/") for a in health]
            assert subprocess.run(health, timeout=30).returncode == 0
            # and the app itself runs from the image's files: one session opens the Start page
            run = asyncio.run(open_session(url))
            assert not run.exceptions, run.exceptions
            assert "start_preset" in run.widgets
        finally:
            stop_process(proc)
