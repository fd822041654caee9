"""Where load_config says a problem is (duplicate keys, syntax errors in JSON and HJSON, in the user's own text),
bounded reading of config files, and ``dsconfig presets check`` carrying on past a preset it cannot follow."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import core.preset_vetting
from core.cli import main
from core.io import ConfigLoadError, load_config, load_config_file_and_text, parse_json_value
from core.preset_vetting import vetting_problems
from core.presets import parse_preset

ROOT = Path(__file__).resolve().parent.parent


def _error(text: str) -> ConfigLoadError:
    with pytest.raises(ConfigLoadError) as err:
        load_config(text)
    return err.value


# ---------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize(("text", "where"), [
    pytest.param('{\n  "fp16": {"enabled": true},\n  "bf16": {\n    "enabled": true,\n    "enabled": false\n  }\n}',
                 (5, 5), id="same key in an earlier section"),
    pytest.param('{\n  "x": "train_batch_size",\n  "train_batch_size": 8,\n  "train_batch_size": 16\n}', (4, 3),
                 id="key name used as a value"),
    pytest.param('{\n  train_batch_size: 8\n  train_batch_size: 16\n}', (3, 3), id="unquoted HJSON keys"),
    pytest.param('{\n  "clé": 1,\n  "clé": 2\n}', (3, 3), id="non-ASCII key"),
    pytest.param('{\n  "a": 1, // "a": 3\n  "a": 2\n}', (3, 3), id="key name in a comment"),
    pytest.param('{\n  "a\\u0062": 1,\n  "ab": 2\n}', (3, 3), id="escaped key"),
    pytest.param("train_batch_size: 8\nfp16: {enabled: true}\ntrain_batch_size: 16\n", (3, 1),
                 id="HJSON root without braces"),
    # the parser refuses the first object to close: the inner one, although the outer repeat comes first
    pytest.param('{"a": 1, "a": 2,\n "z": {"b": 1, "b": 2}}', (2, 16), id="inner object closes first"),
    pytest.param("{\n  a: '''\n  a: 1\n  '''\n  a: 2\n}", (5, 3), id="key name inside a multiline string"),
])
def test_duplicate_key_points_at_the_repeated_key(text, where):
    error = _error(text)
    assert "appears twice" in str(error)
    assert (error.line, error.column) == where


def test_duplicate_key_in_a_json_value_points_at_the_repeated_key():
    with pytest.raises(ConfigLoadError) as err:
        parse_json_value('[{"a": 1},\n {"b": "a", "a": 2, "a": 3}]')
    assert (err.value.line, err.value.column) == (2, 21)


# ---------------------------------------------------------------- positions in the original text


@pytest.mark.parametrize(("text", "where"), [
    pytest.param('\n\n{\n  "train_batch_size": 8,,\n}\n', (4, 25), id="syntax error after blank lines"),
    pytest.param('\n\n{\n  "train_batch_size": 8,\n  "train_batch_size": 16\n}\n', (5, 3),
                 id="duplicate after blank lines"),
    pytest.param('    {"train_batch_size": 8,, "x": 1}', (1, 28), id="indented first line"),
    pytest.param('\x0c\n{\n  "a": 1,,\n}', (3, 10), id="form feed before the object"),
])
def test_positions_are_those_of_the_text_as_given(text, where):
    error = _error(text)
    assert (error.line, error.column) == where
    assert f"(line {where[0]}, column {where[1]})" in str(error)


def test_surrounding_whitespace_json_does_not_accept_is_still_allowed():
    assert load_config('\ufeff\x0c\u00a0\n {"a": 1}\n\x0b') == {"a": 1}
    assert load_config("\n\n  // c\n  a: 1\n") == {"a": 1}


# ---------------------------------------------------------------- HJSON errors


@pytest.mark.parametrize(("text", "where", "fragment"), [
    pytest.param("{\n  train_batch_size: 8\n  zero_optimization: {\n    stage: 2\n"
                 "    offload_optimizer: {device: cpu\n  }\n}", (7, 2), "a closing } is missing", id="missing brace"),
    pytest.param("{\n  train_batch_size: 8\n  betas: [0.9, 0.95\n}", (4, 1), "punctuator", id="missing bracket"),
    pytest.param('{\n  "a": 1, // comment\n  "b": [1,\n  "c": 2\n}', (4, 6), "", id="after a comment"),
    pytest.param('{\n  "a": 1\n  "b": {"c": 1\n}', (4, 2), "a closing } is missing", id="newline for a comma"),
])
def test_hjson_text_is_refused_where_hjson_stops(text, where, fragment):
    error = _error(text)
    assert "enclosed in double quotes" not in str(error)  # DeepSpeed reads unquoted keys: no advice to quote
    assert (error.line, error.column) == where
    assert fragment in str(error)


@pytest.mark.parametrize("text", [
    "{\n  train_batch_size: 8\n  lr: 1e400\n}",
    '{\n  "train_batch_size": 8, // per GPU x GPUs\n  "lr": -1e400\n}',
])
def test_an_overflowing_number_in_hjson_is_named(text):
    error = _error(text)
    assert "1e400 is too large" in str(error) and "finite number" in str(error)


def test_too_many_digits_in_hjson_is_named():
    error = _error('{\n  "train_batch_size": 8, // per GPU x GPUs\n  "seed": 1' + "1" * 5000 + "\n}")
    assert "more than 4300 digits" in str(error)


@pytest.mark.parametrize(("text", "where", "message"), [
    ('{"a": 1 "b": 2}', (1, 9), "Expecting ',' delimiter"),
    ('{"a": 1,, "b": 2}', (1, 9), "Expecting property name"),
    ('{"a": [1,, 2]}', (1, 10), "Expecting value"),
])
def test_strict_json_mistakes_keep_the_exact_json_error(text, where, message):
    error = _error(text)
    assert message in str(error) and (error.line, error.column) == where


def test_a_placeholder_value_is_refused_where_it_is_not_where_hjson_stops():
    error = _error('{\n  "train_batch_size": CONFIG_BATCH_SIZE,\n  "x": [A, B],\n  "y": 1\n}')
    assert "Expecting value" in str(error) and (error.line, error.column) == (2, 23)


def test_a_trailing_comma_lets_hjson_find_the_real_mistake():
    error = _error('{\n  "a": [1, 2,],\n  "b": {"c": 1\n}')
    assert "a closing } is missing" in str(error) and error.line == 4


def test_valid_hjson_with_large_finite_numbers_still_loads():
    assert load_config("{\n  a: 1e300\n  b: 2.5e3\n}") == {"a": 1e300, "b": 2500}


# ---------------------------------------------------------------- reading files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_no_further_than_the_size_limit(tmp_path):
    """A pipe (like a device) reports size 0; reading it to its end had no bound (/dev/zero has none)."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    written = [0]
    cap = 64 * 1024 * 1024  # a bound for this test only: without the fix the reader takes all of it

    def writer() -> None:
        chunk = b" " * 65536
        try:
            with open(fifo, "wb") as pipe:
                while written[0] < cap:
                    pipe.write(chunk)
                    written[0] += len(chunk)
        except BrokenPipeError:
            pass  # the reader stopped reading: what is expected

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    with pytest.raises(ConfigLoadError, match="more than 1 MB, too large: the limit is 1 MB"):
        load_config_file_and_text(fifo)
    thread.join(timeout=30)
    assert written[0] < 8 * 1024 * 1024


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_cli_refuses_dev_zero_with_the_size_message():
    code = "import sys; from core.cli import main; sys.exit(main(['validate', '/dev/zero']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            preexec_fn=_limit_memory if sys.platform.startswith("linux") else None)
    assert result.returncode == 2
    assert "/dev/zero: the config is more than 1 MB, too large" in result.stdout + result.stderr


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1536 * 1024**2, 1536 * 1024**2))


# ---------------------------------------------------------------- presets check

META = {"title": "T", "description": "D", "target": "deepspeed"}
BROKEN = json.dumps({"meta": META, "config": {"train_micro_batch_size_per_gpu": "x"}})


def _check(folder: Path) -> tuple[int, str]:
    out = io.StringIO()
    return main(["presets", "check", str(folder)], out=out), out.getvalue()


def test_an_unknown_target_is_a_meta_target_problem_not_a_crash():
    preset = parse_preset(json.dumps({"meta": {**META, "target": "HF", "verified_with": ["0.19.8"]},
                                      "config": {"train_micro_batch_size_per_gpu": 1}}), name="team")
    paths = {problem.path: problem.message for problem in vetting_problems(preset)}
    assert paths["meta.target"] == "meta.target must be one of deepspeed, hf"


def test_check_reports_a_preset_with_an_unknown_target_and_the_others(tmp_path):
    (tmp_path / "a-good.json").write_text(json.dumps({"meta": META, "config": {"train_micro_batch_size_per_gpu": 1}}))
    typo = {"meta": {**META, "target": "HF", "verified_with": ["0.19.8"]},
            "config": {"train_micro_batch_size_per_gpu": 1}}
    (tmp_path / "b-typo-target.json").write_text(json.dumps(typo, indent=2))
    (tmp_path / "c-broken.json").write_text(BROKEN)
    code, out = _check(tmp_path)
    assert code == 1
    assert f"{tmp_path / 'b-typo-target.json'}:5:5: meta.target must be one of deepspeed, hf" in out
    assert f"{tmp_path / 'c-broken.json'}:" in out
    assert out.endswith("3 preset(s) checked: 0 vetted, 3 with problems\n")


def test_check_reads_a_utf16_preset_as_the_loader_does(tmp_path):
    document = {"meta": META, "config": {"train_micro_batch_size_per_gpu": 1}}
    (tmp_path / "a-utf16.json").write_bytes(json.dumps(document, indent=2).encode("utf-16"))
    (tmp_path / "b-broken.json").write_text(BROKEN)
    code, out = _check(tmp_path)
    assert code == 1
    path = tmp_path / "a-utf16.json"
    assert f"{path}:8:5: config.train_micro_batch_size_per_gpu has no justification" in out
    assert f"{tmp_path / 'b-broken.json'}:" in out
    assert out.endswith("2 preset(s) checked: 0 vetted, 2 with problems\n")


def test_check_carries_on_past_a_preset_it_cannot_check(tmp_path, monkeypatch):
    for name in ("a-first", "b-second"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"meta": META, "config": {}}))
    real = core.preset_vetting.vetting_problems

    def flaky(preset, **kwargs):
        if preset.name == "a-first":
            raise ValueError("something the checker cannot follow")
        return real(preset, **kwargs)

    monkeypatch.setattr(core.preset_vetting, "vetting_problems", flaky)
    code, out = _check(tmp_path)
    assert code == 1
    assert f"{tmp_path / 'a-first.json'}: cannot check this preset: something the checker cannot follow" in out
    assert f"{tmp_path / 'b-second.json'}:" in out
    assert out.endswith("2 preset(s) checked: 0 vetted, 2 with problems\n")
