"""Standard input read as a file is: a byte-order mark the HF Trainer's json.load refuses is refused for --target hf
as it is for a file (the decoded text had lost it), and an oversized input says "more than" the limit (it said
"1.0 MB" for 20 MB: only the limit and one byte are read)."""

from __future__ import annotations

import codecs
import io
import json

from tests.cli_support import config_file, run_cli

CONFIG = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}


def _stdin(monkeypatch, data: bytes) -> None:
    """Standard input holding ``data``: a text stream with the bytes beneath it, as a real one."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_a_byte_order_mark_on_standard_input_is_refused_for_hf_as_in_a_file(monkeypatch, tmp_path):
    data = codecs.BOM_UTF8 + json.dumps(CONFIG).encode()
    path = tmp_path / "bom.json"
    path.write_bytes(data)
    from_file = run_cli(["validate", "--target", "hf", str(path)])
    _stdin(monkeypatch, data)
    from_stdin = run_cli(["validate", "--target", "hf", "-"])
    assert from_file[0] == from_stdin[0] == 2
    assert "byte-order mark" in from_stdin[2] and "BOM" in from_stdin[2]
    _stdin(monkeypatch, data)  # DeepSpeed itself reads it
    assert run_cli(["validate", "-"])[0] == 0


def test_an_oversized_standard_input_says_more_than_the_limit(monkeypatch, tmp_path):
    big = json.dumps({"a": "x" * 3_000_000}).encode()
    _stdin(monkeypatch, big)
    code, _, err = run_cli(["validate", "-"])
    assert code == 2 and "more than 1 MB" in err and "1.0 MB" not in err
    code, _, err = run_cli(["validate", config_file(tmp_path, {"a": "x" * 3_000_000})])
    assert code == 2 and "2.9 MB" in err
