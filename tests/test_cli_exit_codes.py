"""``dsconfig``'s exit codes: a crash (70) is never a verdict (1) or bad input (2), and every sizing command
answers "does not fit" with 1."""

from __future__ import annotations

import importlib
import io
import json

import pytest

from core.cli import build_parser, main
from core.cli.common import DEBUG_ENV, EXIT_CODES_HELP, EXIT_ERRORS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE

LLAMA_70B = ["--model", "meta-llama/Llama-2-70b-hf"]


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _boom(*args, **kwargs):
    raise KeyError("stage")


@pytest.mark.parametrize(("target", "argv"), [
    ("core.cli.plan.recommend", ["plan", "--model", "openai-community/gpt2", "--gpu", "H100", "--global-batch", "8"]),
    ("core.validate.validate", ["validate", "{cfg}"]),
    ("core.memory.estimate", ["fit", "{cfg}", "--model", "openai-community/gpt2"]),
], ids=["plan", "validate", "fit"])
def test_a_bug_inside_a_command_is_exit_70_and_one_line(target, argv, monkeypatch, tmp_path, capsys):
    """A bug (any exception but bad input) was a Python traceback with exit code 1, which is also "does not fit":
    CI could not tell a crash from a verdict. It is now exit 70 and one line naming the exception."""
    cfg = tmp_path / "ds.json"
    cfg.write_text('{"train_micro_batch_size_per_gpu": 1}')
    module, name = target.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, _boom)  # core.validate the module, not the function
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    code, _, err = run([str(cfg) if a == "{cfg}" else a for a in argv], capsys)
    assert code == EXIT_INTERNAL == 70
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"dsconfig {argv[0]}: internal error: KeyError: 'stage'; please report it with the command" in err
    assert f"{DEBUG_ENV}=1" in err
    monkeypatch.setenv(DEBUG_ENV, "1")
    code, _, err = run([str(cfg) if a == "{cfg}" else a for a in argv], capsys)
    assert code == 70 and "Traceback (most recent call last)" in err and "internal error: KeyError" in err


def test_the_exit_codes_are_distinct_and_in_every_help():
    assert len({EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL, 130, 141}) == 6
    parser = build_parser()
    assert EXIT_CODES_HELP in parser.format_help()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        assert "70   internal error" in command.format_help(), name


def test_plan_where_nothing_fits_exits_1(capsys):
    """plan printed "Nothing fits" with exit code 0 while fit said the same with 1."""
    argv = ["plan", *LLAMA_70B, "--gpu", "NVIDIA A100 40GB", "--global-batch", "8", "--seq-len", "1024"]
    code, out, _ = run(argv, capsys)
    assert code == EXIT_ERRORS and "Nothing fits" in out
    code, out, _ = run([*argv, "--format", "json"], capsys)
    assert code == EXIT_ERRORS and json.loads(out)["fitting"] == 0
    code, out, _ = run([*argv, "--nvme", "30000"], capsys)  # something fits: 0
    assert code == EXIT_OK and "Best:" in out


def test_a_config_that_does_not_fit_is_1_for_fit_and_0_for_the_reports(tmp_path, capsys):
    """fit answers "does it fit" (1: no); predict and estimate report numbers (0) and say "does not fit" in their
    output, text and JSON, as the exit codes in --help say."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                                      "offload_param": {"device": "cpu"}}}))
    predict = ["predict", str(path), *LLAMA_70B, "--gpu", "NVIDIA A100 80GB"]
    estimate = ["estimate", *LLAMA_70B, "--config", str(path)]
    fit = ["fit", str(path), *LLAMA_70B, "--gpu", "NVIDIA A100 80GB"]
    verdicts = {"predict": lambda d: d["memory"]["fits"], "estimate": lambda d: d["fits"]["all"],
                "fit": lambda d: d["fits"]}
    for argv, said, expected in ((predict, "caveat: does not fit (CPU RAM)", EXIT_OK),
                                 (estimate, "DOES NOT FIT", EXIT_OK), (fit, "DOES NOT FIT", EXIT_ERRORS)):
        code, out, _ = run([*argv, "--cpu-ram", "256"], capsys)
        assert code == expected and said in out, argv[0]
        code, out, _ = run([*argv, "--cpu-ram", "256", "--format", "json"], capsys)
        assert code == expected and verdicts[argv[0]](json.loads(out)) is False, argv[0]
    assert "fit (fit)" in EXIT_CODES_HELP and "predict and estimate" in EXIT_CODES_HELP


@pytest.mark.parametrize(("argv", "flag", "position"), [
    (["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "7"], "--global-batch", None),
    (["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "8", "--price", "2"],
     "--price", None),
    (["predict", "{bad}", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100"], None, [2, 7]),
    (["fit", "{cfg}", "--model", "no/such-model"], "--model", None),
    (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--hf-config", "{cfg}"], None, None),
    (["validate", "-", "-"], None, None),
], ids=["plan-flag", "plan-price", "predict-unreadable", "fit-unknown-model", "estimate-two-models",
        "validate-stdin-twice"])
def test_an_error_under_format_json_is_one_json_object_on_stdout(argv, flag, position, tmp_path, capsys):
    """plan/predict/fit/estimate --format json printed an error raised inside the command as text on stderr with
    nothing on stdout, while validate --format json reports an unreadable file as JSON; the error is now
    {"error": {...}} on stdout (the exit code and the stderr line as before)."""
    cfg, bad = tmp_path / "ds.json", tmp_path / "bad.json"
    cfg.write_text('{"train_micro_batch_size_per_gpu": 1}')
    bad.write_text('{"a": 1,\n "b": }')
    argv = [{"{cfg}": str(cfg), "{bad}": str(bad)}.get(a, a) for a in argv]
    code, out, err = run([*argv, "--format", "json"], capsys)
    error = json.loads(out)["error"]
    assert code == EXIT_USAGE and error["kind"] == "usage" and error["command"] == argv[0]
    assert f"dsconfig {argv[0]}: error: {error['message']}\n" == err
    assert error["flag"] == flag and [error["line"], error["column"]] == (position or [None, None])
    text_code, text_out, _ = run(argv, capsys)  # text: stdout stays empty
    assert text_code == EXIT_USAGE and text_out == ""


def test_a_bug_under_format_json_is_a_json_error_too(monkeypatch, capsys):
    monkeypatch.setattr(importlib.import_module("core.cli.plan"), "recommend", _boom)
    code, out, err = run(["plan", "--model", "openai-community/gpt2", "--gpu", "H100", "--global-batch", "8",
                          "--format", "json"], capsys)
    error = json.loads(out)["error"]
    assert code == EXIT_INTERNAL and error["kind"] == "internal" and error["message"].startswith("KeyError: 'stage'")
    assert "internal error" in err
