"""A read-only hunt of the preset folders (30 Nov 2026): a team preset's text could crash the app's pages (a lone
surrogate), reach the Start page as live Markdown, or reach a terminal as control sequences; and ``presets check``
did not validate a preset without ``verified_with``, which the app judges by the release it was written for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_support import app

from core import cli, presets

CONFIG = {"train_micro_batch_size_per_gpu": 1}


def _team(tmp_path: Path, monkeypatch, name: str, text: str) -> Path:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / f"{name}.json").write_text(text, encoding="utf-8")
    monkeypatch.setenv(presets.ENV_VAR, str(folder))
    return folder


@pytest.mark.parametrize("field", ["title", "description"])
def test_a_lone_surrogate_in_a_team_presets_text_is_shown_escaped_not_a_crash(tmp_path, monkeypatch, field):
    meta = {"title": "ok", "description": "d", "target": "deepspeed"}
    text = json.dumps({"meta": meta, "config": CONFIG}).replace(f'"{meta[field]}"', '"bad \\ud800 text"', 1)
    _team(tmp_path, monkeypatch, "st", text)
    at = app(None, "pages/start.py")
    at.radio(key="start_source").set_value("Preset").run()
    at.selectbox(key="start_preset").set_value("st").run()
    assert not at.exception, at.exception
    at.switch_page("pages/presets.py").run()
    at.selectbox(key="presets_selected").set_value("st").run()
    assert not at.exception, at.exception
    at.button(key="presets_load").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"] == CONFIG  # the config itself loads as it is


def test_the_start_page_shows_a_team_presets_title_and_skipped_files_as_text(tmp_path, monkeypatch):
    link = "![x](https://tracker.example/p.png) [update](https://evil.example)"
    folder = _team(tmp_path, monkeypatch, "md-title", json.dumps(
        {"meta": {"title": link, "description": "d", "target": "deepspeed"}, "config": CONFIG}))
    (folder / "dupkey.json").write_text('{"meta": {}, "config": {"![y](https://t.example/q.png)": 1, '
                                        '"![y](https://t.example/q.png)": 2}}')
    at = app(None, "pages/start.py")
    at.radio(key="start_source").set_value("Preset").run()
    warned = [w.value for w in at.warning if "dupkey" in w.value]
    assert warned and "![y](" not in warned[0] and r"\!\[y\]" in warned[0], warned
    at.selectbox(key="start_preset").set_value("md-title").run()
    at.button(key="start_load_preset").click().run()
    said = [s.value for s in at.success if "Loaded the preset" in s.value]
    assert said and "![x](" not in said[0] and r"\!\[x\]" in said[0], said


def test_presets_show_writes_a_team_files_control_characters_escaped(tmp_path, monkeypatch, capsys):
    _team(tmp_path, monkeypatch, "ansi", json.dumps({"meta": {
        "title": "t\x1b[31m", "description": "d", "target": "deepspeed",
        "when_to_use": "x\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\nsecond line\tand a tab"}, "config": CONFIG}))
    assert cli.main(["presets", "show", "ansi"]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\x07" not in shown
    assert r"x\x1b]0;pwned\x07\x1b[2J\x1b[31mRED" in shown and "second line\tand a tab" in shown
    assert cli.main(["presets", "list"]) == 0
    listed = capsys.readouterr().out
    assert "\x1b" not in listed and r"t\x1b[31m" in listed


def test_presets_check_validates_a_preset_without_verified_with_as_the_app_judges_it(tmp_path, monkeypatch,
                                                                                     capsys):
    """No verified_with: the app judges it by written_for (else the newest release); check said nothing of a stage
    DeepSpeed refuses."""
    folder = _team(tmp_path, monkeypatch, "refused", json.dumps({"meta": {
        "title": "t", "description": "d", "target": "deepspeed", "written_for": "0.17.6"},
        "config": {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 7}}}))
    assert cli.main(["presets", "check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "zero_optimization.stage" in out and "DeepSpeed 0.17.6 on 1 GPU" in out, out
    preset = presets.load_preset("refused", [folder])
    assert preset.judged_with == ["0.17.6"]
