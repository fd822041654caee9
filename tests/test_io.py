"""load_config / dump_config: JSON and HJSON in, stable JSON out, clear errors."""

from __future__ import annotations

import contextlib
import json
import re

import hjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.io import MAX_CONFIG_BYTES, ConfigLoadError, dump_config, load_config, parse_json_value
from tests.conftest import corpus_files


def test_plain_json():
    assert load_config('{"train_batch_size": 8, "fp16": {"enabled": true}}') == {
        "train_batch_size": 8, "fp16": {"enabled": True}
    }


def test_hjson_comments_and_quoteless_like_deepspeed():
    text = """
    {
      // the global batch
      train_batch_size: 16
      # another comment style
      "zero_optimization": {"stage": 2}  /* block */
    }
    """
    assert load_config(text) == {"train_batch_size": 16, "zero_optimization": {"stage": 2}}


def test_duplicate_keys_refused_with_position():
    with pytest.raises(ConfigLoadError) as err:
        load_config('{\n  "train_batch_size": 8,\n  "train_batch_size": 16\n}')
    assert "train_batch_size" in str(err.value) and "twice" in str(err.value)
    assert err.value.line == 3


def test_duplicate_nested_keys_refused():
    with pytest.raises(ConfigLoadError, match="stage"):
        load_config('{"zero_optimization": {"stage": 1, "stage": 2}}')


def test_duplicate_in_hjson_refused():
    with pytest.raises(ConfigLoadError, match="twice"):
        load_config("{\n // c\n a: 1\n a: 2\n}")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[1, 2]", "a list"),
        ('"hello"', "a string"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "true/false"),
    ],
)
def test_non_object_documents_refused(text, fragment):
    with pytest.raises(ConfigLoadError) as err:
        load_config(text)
    assert fragment in str(err.value) and "JSON object" in str(err.value)
    assert err.value.line == 1


def test_broken_json_reports_line_and_column():
    with pytest.raises(ConfigLoadError) as err:
        load_config('{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true,,}\n}')
    assert err.value.line == 3
    assert "line 3" in str(err.value)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_refused(literal):
    with pytest.raises(ConfigLoadError, match="finite"):
        load_config(f'{{"gradient_clipping": {literal}}}')


def test_nan_and_infinity_are_named_by_their_field_and_place():
    """NaN in strict JSON was refused with no field, line or column ("NaN is not a valid JSON number")."""
    text = '{\n "train_batch_size": 8,\n "optimizer": {\n  "type": "AdamW",\n  "params": {"lr": NaN, "b": 1}\n }\n}\n'
    with pytest.raises(ConfigLoadError) as err:
        load_config(text)
    assert str(err.value).startswith("optimizer.params.lr is NaN") and (err.value.line, err.value.column) == (5, 14)
    with pytest.raises(ConfigLoadError, match=r"^a\[1\] is -Infinity.*\(line 1, column 13\)"):
        load_config('{"a": [1.5, -Infinity]}')


def test_empty_and_binary_and_huge_inputs():
    with pytest.raises(ConfigLoadError, match="empty"):
        load_config("   ")
    with pytest.raises(ConfigLoadError, match="UTF-8"):
        load_config(b"\xff\xfe\x00\x01binary")
    with pytest.raises(ConfigLoadError, match="NUL"):
        load_config('{"a": 1}\x00')
    with pytest.raises(ConfigLoadError, match="MB"):
        load_config(b" " * (MAX_CONFIG_BYTES + 1))


def test_deep_nesting_refused():
    with pytest.raises(ConfigLoadError, match="deeper"):
        load_config("{" + '"a": {' * 200 + "}" * 201)


def test_what_the_tool_writes_it_reads_back():
    """An 889 KB compact config (accepted) was written indented at 1.25 MB, which the loader then refused; it is
    written compact instead, and small configs stay indented."""
    config = {"train_batch_size": 8, "my_unknown": {f"k{i:05d}": i for i in range(60_000)}}
    assert len(json.dumps(config, separators=(",", ":"))) < MAX_CONFIG_BYTES < len(json.dumps(config, indent=2))
    text = dump_config(config)
    assert load_config(text) == config and text.count("\n") == 1
    assert dump_config({"train_batch_size": 8}) == '{\n  "train_batch_size": 8\n}\n'


def test_a_lone_surrogate_is_escaped_alone():
    """A lone surrogate ("\\ud800" in the input) has no UTF-8: the whole file was then written with every
    non-ASCII character escaped (6 bytes for each), now only the surrogate is."""
    config = {"notes": "é字" * 1000 + "\ud800", "\udfff": 1}
    text = dump_config(config)
    assert load_config(text.encode("utf-8")) == config
    assert "é字" * 1000 in text and '"\\udfff": 1' in text and len(text.encode("utf-8")) < 5100


def test_dump_is_stable_and_readable():
    config = {"b": 1, "a": {"z": [1, 2], "é": "ü"}}
    text = dump_config(config)
    assert text == dump_config(json.loads(text))
    assert text.endswith("\n") and '  "b": 1' in text and "é" in text
    assert list(json.loads(text)) == ["b", "a"]


def _deepspeed_pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("Duplicate keys in DeepSpeed config")
    return dict(pairs)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_round_trip(path):
    try:
        config = load_config(path.read_bytes())
    except ConfigLoadError as exc:
        # Only files DeepSpeed's own loader (hjson, duplicate keys refused) cannot read either,
        # or empty files (hjson reads them as {}, which no run can use).
        assert str(exc)
        text = path.read_text("utf-8", errors="replace")
        if not text.strip():
            assert "empty" in str(exc)
            return
        with pytest.raises(Exception):
            loaded = hjson.loads(text, object_pairs_hook=_deepspeed_pairs)
            if not isinstance(loaded, dict):
                raise TypeError("not an object") from None
        return
    again = load_config(dump_config(config))
    assert again == config
    assert json.dumps(again) == json.dumps(config)  # same key order too


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_property_load_dump_identity(config):
    assert load_config(dump_config(config)) == config


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_property_load_never_raises_anything_but_config_errors(text):
    try:
        result = load_config(text)
    except ConfigLoadError:
        return
    assert isinstance(result, dict)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_property_load_bytes(data):
    with contextlib.suppress(ConfigLoadError):
        load_config(data)


@pytest.mark.parametrize(("text", "fragment"), [
    ('{"a": 1, "a": 2}', "line 1, column 10"), ("[1,", "not valid JSON"), ("NaN", "the value is NaN"),
    ('{"x": 1e400}', "x is Infinity"), ("[" * 5000, "nests too deeply"), ("9" * 5000, "more than 4300 digits"),
])
def test_a_json_value_is_read_as_strictly_as_a_config(text, fragment):
    with pytest.raises(ConfigLoadError, match=re.escape(fragment)):
        parse_json_value(text)
    assert parse_json_value('[1, "a", {"b": null}]') == [1, "a", {"b": None}]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_text_is_named_with_the_fix(encoding):
    """PowerShell's > writes UTF-16: the message called it "not UTF-8 ... not a binary file" (or a NUL byte)."""
    width = encoding[4:6]
    with pytest.raises(ConfigLoadError, match=f"the file is UTF-{width} text.*save it as UTF-8"):
        load_config('{"train_micro_batch_size_per_gpu": 1}'.encode(encoding))
    assert load_config('{"a": "é"}'.encode("utf-8-sig")) == {"a": "é"}


@pytest.mark.parametrize(("text", "hint"), [
    ("auto", 'text is written in double quotes: "auto"'),
    ("'auto'", 'JSON strings take double quotes: "auto"'),
    ("True", "JSON writes true where Python writes True"),
    ("[0.9, False]", "JSON writes false where Python writes False"),
    ('{"device": None}', "JSON writes null where Python writes None"),
])
def test_a_json_value_typed_as_python_or_bare_text_says_how_json_writes_it(text, hint):
    """A field's JSON text area answered `auto`, `'auto'` and `True` with "Expecting value (line 1, column 1)"."""
    with pytest.raises(ConfigLoadError, match=re.escape(hint)):
        parse_json_value(text)
    with pytest.raises(ConfigLoadError, match="the value is Infinity"):  # not "the document": it is one value
        parse_json_value("1e400")
