"""Input problems of the sizing commands (plan, predict, fit, estimate): each is said in the words of the flag or
key the user wrote, with the fix, and never as an empty reason or an internal field."""

from __future__ import annotations

import io
import json

import pytest

from core.cli import main

MODEL = ["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100"]


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.mark.parametrize(("value", "shown", "example"), [(2.5, "2.5", "2"), (True, "true (DeepSpeed reads it as 1)",
                                                                              "1")])
@pytest.mark.parametrize("command", ["predict", "fit", "estimate"])
def test_a_micro_batch_deepspeed_accepts_but_that_is_not_whole_is_named_with_the_fix(value, shown, example, command,
                                                                                     tmp_path, capsys):
    """It said "the config's batch keys do not work on 8 GPUs (); DeepSpeed refuses it": an empty reason, and
    DeepSpeed runs it (validate: batch.not-integer, a warning)."""
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": value}))
    argv = ([command, "--config", str(path), *MODEL[:2]] if command == "estimate" else [command, str(path), *MODEL])
    code, out = run(argv)
    said = out if command == "estimate" else capsys.readouterr().err
    assert code == (0 if command == "estimate" else 2)
    assert f"train_micro_batch_size_per_gpu is {shown}; DeepSpeed accepts it" in said
    assert "whole number >= 1" in said and "batch.not-integer" in said and f"e.g. {example}" in said
    assert "--micro-batch" in said and "()" not in said and "DeepSpeed refuses" not in said


def test_plan_price_without_tokens_is_a_usage_error_naming_both_flags(capsys):
    """--price without --tokens was ignored: no cost column, no note, and the JSON assumptions listed the price."""
    code, out = run(["plan", *MODEL, "--global-batch", "64", "--price", "2.5"])
    assert code == 2 and out == ""
    assert "--price 2.5 needs --tokens: the cost is that of training --tokens tokens" in capsys.readouterr().err
