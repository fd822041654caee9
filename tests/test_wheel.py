"""The built wheel works outside the repository: every module, every built-in preset, a working ``dsconfig``.

The wheel is built from a copy of what the build reads (so the checkout gets no ``build/`` or ``*.egg-info``),
installed with ``--no-deps --no-index`` into a fresh virtual environment whose dependencies come from this
interpreter's site-packages (a path entry, so this checkout's editable install is not seen), and run from a
temporary folder with no ``PYTHONPATH``: whatever it finds, it finds in the installed package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: What the build reads; nothing else of the checkout is copied.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "core", "presets")

# one worker builds and installs once for the module
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DSCONFIG_PRESETS_PATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps`` of a copy of the build inputs."""
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                 "-w", str(out), str(src)], cwd=src, env=_clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; dependencies from this interpreter's site-packages."""
    root = tmp_path_factory.mktemp("venv") / "env"
    env = _clean_env()
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(root)], cwd=root.parent, env=env)
    assert done.returncode == 0, done.stderr
    python = root / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=root.parent, env=env).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                 str(wheel)], cwd=root.parent, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """An empty working folder outside the repository."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_wheel_holds_every_module_and_every_builtin_preset(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "core").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules <= names, sorted(modules - names)
    presets = {f"core/builtin_presets/{p.name}" for p in (REPO / "presets").glob("*.json")}
    assert len(presets) >= 10
    assert presets <= names, sorted(presets - names)
    profiles = {p.relative_to(REPO).as_posix() for p in (REPO / "core" / "versions").rglob("*.json")}
    assert profiles and profiles <= names, sorted(profiles - names)
    assert not [n for n in names if n.startswith(("presets/", "tests/", "ui/", "pages/")) or "__pycache__" in n]


def test_installed_dsconfig_lists_every_builtin_preset(venv: Path, elsewhere: Path) -> None:
    env = _clean_env()
    where = _run([str(venv / "bin" / "python"), "-c", "import core, core.presets as p; print(core.__file__); "
                  "print(p.BUILTIN_DIR)"], cwd=elsewhere, env=env)
    module, builtin_dir = where.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(builtin_dir).is_relative_to(venv), where.stdout

    done = _run([str(venv / "bin" / "dsconfig"), "presets", "list", "--format", "json"], cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)
    listed = sorted(row["name"] for row in rows if row["builtin"])
    assert listed == sorted(p.stem for p in (REPO / "presets").glob("*.json"))
    assert all(Path(row["path"]).is_relative_to(venv) for row in rows)


def test_installed_dsconfig_exports_and_checks_a_preset(venv: Path, elsewhere: Path) -> None:
    env = _clean_env()
    dsconfig = str(venv / "bin" / "dsconfig")
    done = _run([dsconfig, "export", "--preset", "zero3-bf16", "-o", "ds_config.json"], cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((elsewhere / "ds_config.json").read_text())["zero_optimization"]["stage"] == 3

    done = _run([dsconfig, "validate", "ds_config.json", "--world-size", "8"], cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ds_config.json: OK" in done.stdout

    broken = elsewhere / "broken.json"
    broken.write_text('{"train_batch_size": 7, "train_micro_batch_size_per_gpu": 2}')
    done = _run([dsconfig, "validate", str(broken), "--world-size", "2"], cwd=elsewhere, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout
