"""``dsconfig validate --target hf`` said OK for files the HF Trainer and Accelerate cannot open: they ``json.load``
the file as UTF-8, so HJSON syntax (comments, trailing commas), which DeepSpeed reads, and a UTF-8 byte-order mark
fail there. The verdict now follows transformers' own reader, checked here against it."""

from __future__ import annotations

import io
import json

import pytest

from core.cli import main
from core.io import is_strict_json, strict_json_problem

STRICT = '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}\n'
UNREADABLE_BY_HF = {
    "comment": '{\n  // ZeRO-2\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 2}\n}\n',
    "trailing-comma": '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},}\n',
    "byte-order-mark": "\ufeff" + STRICT,
}


def _validate(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(["validate", *argv], out=out), out.getvalue()


def _transformers_reads(path) -> bool:
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    try:
        HfTrainerDeepSpeedConfig(str(path))
    except ValueError:  # json.JSONDecodeError is a ValueError
        return False
    return True


@pytest.mark.parametrize("kind", sorted(UNREADABLE_BY_HF))
def test_a_file_the_hf_trainer_cannot_read_is_refused_for_the_hf_target(kind, tmp_path, capsys):
    path = tmp_path / f"{kind}.json"
    path.write_bytes(UNREADABLE_BY_HF[kind].encode("utf-8"))
    assert not _transformers_reads(path)
    code, _ = _validate(str(path), "--target", "hf")
    err = capsys.readouterr().err
    assert code == 2 and "the HF Trainer and Accelerate cannot read it" in err and "DeepSpeed itself reads it" in err
    code, text = _validate(str(path), "--target", "hf", "--format", "json")
    (entry,) = json.loads(text)
    assert code == 2 and entry["unreadable"] and entry["line"] is not None
    capsys.readouterr()
    assert _validate(str(path))[0] == 0  # plain DeepSpeed reads it (HJSON, the mark skipped)
    assert not is_strict_json(path.read_bytes()) and strict_json_problem(path.read_bytes()) is not None


def test_strict_json_passes_for_the_hf_target(tmp_path):
    path = tmp_path / "strict.json"
    path.write_text(STRICT)
    assert _transformers_reads(path)
    assert _validate(str(path), "--target", "hf")[0] == 0
    assert is_strict_json(path.read_bytes()) and is_strict_json(STRICT)
