"""Where a finding points in the file (core.source_map) and the CLI outputs that carry it: FILE:LINE:COLUMN in
text, line and column in JSON, and GitHub Actions annotations."""

from __future__ import annotations

import json
import json.decoder
from typing import Any

import hjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.cli import main
from core.findings import join_index, join_path
from core.io import ConfigLoadError, load_config
from core.source_map import key_positions, locate
from tests.fuzz_strategies import HOSTILE_STRINGS, corpus_files, json_values


def _paths(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path as findings name it, the key or the item) of every member and item below ``value``."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            path = join_path(prefix, key)
            found += [(path, key), *_paths(child, path)]
    elif isinstance(value, list):
        for index, child in enumerate(value):
            path = join_index(prefix, index)
            found += [(path, child), *_paths(child, path)]
    return found


def _offset(text: str, position: tuple[int, int]) -> int:
    line, column = position
    return sum(len(row) + 1 for row in text.split("\n")[:line - 1]) + column - 1


def _assert_every_key_found(text: str, config: dict[str, Any]) -> None:
    positions = key_positions(text)
    paths = _paths(config)
    assert set(positions) == {"", *(path for path, _ in paths)}  # "": the document, where its missing keys point
    for path, key_or_item in paths:
        at = _offset(text, positions[path])
        if isinstance(key_or_item, str) and not path.endswith("]"):  # a key: the quoted key starts there
            assert json.decoder.scanstring(text, at + 1)[0] == key_or_item, path
        else:  # an item: the value starts there
            assert json.JSONDecoder().raw_decode(text, at)[0] == key_or_item, path


keys = st.text(max_size=8) | st.sampled_from(["a.b", "a[0]", "back\\slash", '"quoted"', "ünï", "", *HOSTILE_STRINGS])
configs = st.dictionaries(keys, json_values | st.dictionaries(keys, json_values, max_size=3), max_size=6)


@settings(max_examples=300, deadline=None)
@given(config=configs, indent=st.sampled_from([None, 0, 2, 4, "\t"]), ascii_only=st.booleans(),
       tight=st.booleans())
def test_every_key_and_item_of_json_text_is_found_where_it_is_written(config, indent, ascii_only, tight):
    names = [path for path, _ in _paths(config)]
    # a key "" at the top has the path "" (the config's own), so its members' paths are the top level's
    assume(len(set(names)) == len(names))
    separators = (",", ":") if tight else None
    text = json.dumps(config, indent=indent, ensure_ascii=ascii_only, separators=separators)
    assert load_config(text) == config
    _assert_every_key_found(text, config)


def test_every_key_of_every_corpus_file_is_found_in_its_own_text():
    checked = 0
    for path in corpus_files():
        text = path.read_bytes().decode("utf-8-sig", "replace")
        try:
            config = load_config(text)
        except ConfigLoadError:
            continue
        _assert_every_key_found(text, config)
        checked += 1
    assert checked > 100


def test_hjson_text_keys_without_quotes_comments_and_a_root_without_braces():
    text = """# a comment
{
  // another
  train_batch_size: 8
  zero_optimization: {
    stage: 3  # three
    offload_param: {
      device: cpu
    }
  }
  /* a block
     comment */
  note: '''two
  lines'''
  "quoted key": 'single'
  list: [1, 2
    3]
}"""
    assert hjson.loads(text)["list"] == [1, 2, 3]
    positions = key_positions(text)
    assert positions["train_batch_size"] == (4, 3)
    assert positions["zero_optimization.stage"] == (6, 5)
    assert positions["zero_optimization.offload_param.device"] == (8, 7)
    assert positions["note"] == (13, 3) and positions["quoted key"] == (15, 3)
    assert positions["list[2]"] == (17, 5)
    assert key_positions("a: 1\nb: {\n  c: 2\n}\n") == {"": (1, 1), "a": (1, 1), "b": (2, 1), "b.c": (3, 3)}


@settings(max_examples=100, deadline=None)
@given(config=st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                              st.integers() | st.booleans() | st.from_regex(r"[a-z]{1,6}", fullmatch=True)
                              | st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.integers(),
                                                max_size=3), max_size=6))
def test_hjson_as_hjson_writes_it(config):
    text = hjson.dumps(config)
    assert hjson.loads(text) == config
    positions = key_positions(text)
    assert set(positions) == {"", *(path for path, _ in _paths(config))}
    for path, _ in _paths(config):
        line, column = positions[path]
        assert text.split("\n")[line - 1][column - 1:].startswith(path.rsplit(".", 1)[-1])


@pytest.mark.parametrize("text", ["{", '{"a": ', '{"a" 1}', "[1, 2]", "{/* open", '{"a": "open'])
def test_text_it_cannot_follow_gives_no_positions(text):
    assert key_positions(text) == {}


def test_a_missing_key_points_at_its_section_and_a_missing_top_level_key_at_the_document():
    positions = key_positions('{\n  "zero_optimization": {\n    "stage": 3\n  },\n  "l": [{"x": 1}]\n}')
    assert locate(positions, "zero_optimization.offload_param.device") == (2, 3)
    assert locate(positions, "zero_optimization.stage") == (3, 5)
    assert locate(positions, "l[0].x") == (5, 10) and locate(positions, "l[0].y") == (5, 9)
    # the document's section is the document: its opening brace (a CI annotation then has a line)
    assert locate(positions, "train_batch_size") == (1, 1) and locate(positions, "") == (1, 1)
    assert locate({}, "zero_optimization.stage") is None


# ---------------------------------------------------------------- the CLI

CONFIG = """{
  "train_batch_size": 8,
  "zero_optimization": {
    "stage": 3,
    "stage3_prefetch_bucket_sise": 5e7,
    "overlap%comm": true
  },
  "fp16": {"enabled": true, "loss_scale": "100%, always"}
}
"""


def _validate(tmp_path, capsys, *argv: str) -> tuple[int, str, str]:
    path = tmp_path / "ds_config.json"
    path.write_text(CONFIG)
    code = main(["validate", str(path), "--world-size", "8", *argv])
    captured = capsys.readouterr()
    return code, captured.out, str(path)


def test_text_output_says_file_line_and_column_of_each_finding(tmp_path, capsys):
    code, out, path = _validate(tmp_path, capsys)
    assert code == 1
    typo = next(line for line in out.splitlines() if "stage3_prefetch_bucket_sise" in line and "  error" in line)
    assert typo.endswith(f"  {path}:5:5")


def test_json_output_has_line_and_column(tmp_path, capsys):
    _, out, _ = _validate(tmp_path, capsys, "--format", "json")
    findings = json.loads(out)[0]["findings"]
    by_path = {f["path"]: (f["line"], f["column"]) for f in findings}
    assert by_path["zero_optimization.stage3_prefetch_bucket_sise"] == (5, 5)
    assert by_path["fp16.loss_scale"] == (8, 29)
    assert all({"line", "column"} <= set(f) for f in findings)


def test_github_output_is_one_escaped_annotation_per_finding(tmp_path, capsys):
    code, out, path = _validate(tmp_path, capsys, "--format", "github")
    assert code == 1
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    report = json.loads((main(["validate", path, "--world-size", "8", "--format", "json"]), capsys.readouterr().out)[1])
    assert len(annotations) == len(report[0]["findings"]) > 0
    typo = next(a for a in annotations if "stage3_prefetch_bucket_sise" in a)
    assert typo.startswith(f"::error file={path},line=5,col=5,title=dsconfig ")
    for annotation in annotations:
        properties, message = annotation[2:].split("::", 1)
        level, fields = properties.split(" ", 1)
        assert level in ("error", "warning", "notice")
        assert "\n" not in message and "%0A" not in fields
        assert all(":" not in value and "," not in value for value in
                   (field.split("=", 1)[1] for field in fields.split(",")))
    percent = next(a for a in annotations if "overlap%25comm" in a)  # the message's % is escaped
    assert percent.startswith(f"::error file={path},line=6,col=5,")


def test_github_output_for_an_unreadable_file(tmp_path, capsys):
    path = tmp_path / "broken,1.json"
    path.write_text('{"train_batch_size": 8')
    assert main(["validate", str(path), "--format", "github"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"::error file={str(path).replace(',', '%2C')},line=1,col=23,title=dsconfig unreadable::")
    assert main(["validate", str(tmp_path / "missing.json"), "--format", "github"]) == 2
    assert capsys.readouterr().out.startswith(f"::error file={tmp_path / 'missing.json'},title=dsconfig unreadable::")
