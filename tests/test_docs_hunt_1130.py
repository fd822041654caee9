"""What the documentation promises, checked by running it (a read-only hunt of 30 Nov 2026): ``dsconfig fix --diff``
gives a patch ``patch`` applies when the file has no final newline, a missing top-level key points at the
document, the sidebar does not say "No errors or warnings" above a red problem of the setup, and the
gradient_clipping help does not contradict the release's own default."""

from __future__ import annotations

import json
import shutil
import subprocess

from app_support import app

from core.cli import main
from core.source_map import key_positions, locate
from core.versions import RELEASES, profile

ONE_LINE = '{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": "auto"}}'


def test_fix_diff_marks_a_last_line_without_its_newline(tmp_path, capsys):
    path = tmp_path / "ds.json"
    path.write_text(ONE_LINE)  # no final newline, as 38 of the corpus's 149 files
    assert main(["fix", str(path), "--info", "--diff"]) == 0
    diff = capsys.readouterr().out
    lines = diff.splitlines()
    removed = lines.index("-" + ONE_LINE)
    assert lines[removed + 1] == "\\ No newline at end of file", diff
    assert all(line[:1] in "+-@ \\" for line in lines), diff
    assert main(["fix", str(path), "--info"]) == 0
    fixed = capsys.readouterr().out
    if shutil.which("patch"):  # GNU patch applies it and gives the fixed file
        done = subprocess.run(["patch", str(path)], input=diff, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert path.read_text() == fixed
    assert json.loads(fixed)["bf16"] == {"enabled": False}


def test_a_missing_top_level_key_points_at_the_document(tmp_path, capsys):
    path = tmp_path / "ds.json"
    path.write_text('\n\n  {\n    "gradient_accumulation_steps": 2\n  }\n')
    assert main(["validate", str(path), "--format", "github"]) == 1
    out = capsys.readouterr().out
    assert f"::error file={path},line=3,col=3,title=dsconfig batch.missing::" in out, out
    positions = key_positions(path.read_text())
    assert locate(positions, "train_batch_size") == (3, 3)
    assert locate(positions, "gradient_accumulation_steps") == (4, 5)
    assert locate({}, "train_batch_size") is None  # text the reader cannot follow: no place


def _sidebar_texts(at) -> list[str]:
    return [e.value for kind in ("success", "markdown", "error") for e in getattr(at.sidebar, kind)]


def test_the_sidebar_does_not_say_no_errors_above_a_problem_of_the_setup():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}
    at = app(config, page="pages/batch.py", gpu="NVIDIA V100 32GB", gpu_memory_gib=31.74,
             model="openai-community/gpt2")
    at.run()
    texts = _sidebar_texts(at)
    assert any("has no bf16" in t for t in texts), texts
    assert "No errors or warnings" not in [s.value for s in at.sidebar.success]
    assert any("the model or cluster chosen has a problem" in t for t in texts), texts
    clean = app(config, page="pages/batch.py")
    clean.run()
    assert "No errors or warnings" in [s.value for s in clean.sidebar.success]


def test_the_gradient_clipping_help_does_not_contradict_the_releases_default():
    """The note said "the code agrees" with the docs' 1.0 under a Default of 0.0 (0.16.0-0.19.2)."""
    defaults = {profile(v)["top_level_defaults"]["gradient_clipping"] for v in RELEASES}
    assert defaults == {0.0, 1.0}
    for version in (RELEASES[0], RELEASES[-1]):
        at = app({"train_micro_batch_size_per_gpu": 1}, page="pages/precision.py", version=version)
        at.run()
        help_ = at.number_input(key="cfg:gradient_clipping").help
        assert "the code agrees" not in help_
        assert f"Default: `{profile(version)['top_level_defaults']['gradient_clipping']}`" in help_
