"""Bad input and silent assumptions of the sizing commands found by a bug hunt: each is said with the flag or key
and the release it concerns, or refused naming both flags."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core.cli import main

LLAMA = ["--model", "meta-llama/Llama-2-7b-hf"]
RELEASE = ["--deepspeed-version", "0.19.8"]


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def config_file(tmp_path: Path, config: dict, name: str = "ds.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


#: train_batch_size 192 with 16 accumulation steps: no micro batch gives 192 on 8 GPUs (DeepSpeed derives 1: 128)
REFUSED_BATCH = {"train_batch_size": 192, "gradient_accumulation_steps": 16, "fp16": {"enabled": True},
                 "zero_optimization": {"stage": 2}}


def test_micro_batch_for_refused_batch_keys_keeps_the_written_accumulation_and_says_so(tmp_path):
    """predict timed 1 micro-step (dropping the written 16) and fit said "the config says null" of an absent key,
    neither saying that DeepSpeed refuses the batch keys."""
    path = config_file(tmp_path, REFUSED_BATCH)
    code, text = run(["fit", path, *LLAMA, "--micro-batch", "3", *RELEASE])
    assert code == 0 and "(micro batch given: the config writes no micro batch)" in text and "null" not in text
    assert ("caveat: DeepSpeed 0.19.8 refuses the config's batch keys on 8 GPUs (train_batch_size 192 ≠" in text
            and "sized as --micro-batch 3 × the written accumulation 16" in text)
    code, text = run(["predict", path, *LLAMA, "--gpu", "A100 80GB", "--micro-batch", "3", *RELEASE])
    assert code == 0 and "micro batch 3 x 16 accumulation" in text
    assert "write gradient_accumulation_steps and the micro batch" not in text
    data = json.loads(run(["predict", path, *LLAMA, "--gpu", "A100 80GB", "--micro-batch", "3", "--format",
                           "json"])[1])
    assert data["gradient_accumulation_steps"] == 16 and any("the written accumulation 16" in c
                                                             for c in data["caveats"])


def test_micro_batch_replaces_a_written_one_in_refused_batch_keys(tmp_path):
    """--micro-batch stands in for batch keys DeepSpeed refuses: fit refused it for contradicting the micro batch
    written among them ("--micro-batch is for a config that says "auto" or nothing")."""
    path = config_file(tmp_path, {"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3,
                                  "gradient_accumulation_steps": 2})
    code, text = run(["fit", path, *LLAMA, *RELEASE])
    assert code in (0, 1) and "micro batch 3," in text and "refuses this config as written" in text
    code, text = run(["fit", path, *LLAMA, "--micro-batch", "5", *RELEASE])
    assert code in (0, 1) and "micro batch 5," in text and "(micro batch given: the config writes 3)" in text
    assert "sized as --micro-batch 5 × the written accumulation 2 on 8 GPUs (train_batch_size 80)" in text


BOTH_PRECISIONS = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
                   "fp16": {"enabled": True}, "zero_optimization": {"stage": 2, "comm_overlap": True}}


@pytest.mark.parametrize("command", ["fit", "estimate"])
def test_fit_and_estimate_say_deepspeed_refuses_the_config_and_the_precision_sized(command, tmp_path):
    """fit said "fits" (exit 0) for a config DeepSpeed refuses, silently sized as fp16; predict said it."""
    path = config_file(tmp_path, BOTH_PRECISIONS)
    argv = [command, path, *LLAMA] if command == "fit" else [command, "--config", path, *LLAMA]
    code, text = run([*argv, *RELEASE])
    assert code == 0  # exit codes stay: fit's is the memory verdict, estimate's 0 (the docs say so)
    caveats = [line.strip() for line in text.splitlines() if line.strip().startswith("caveat: ")]
    assert caveats[0].startswith("caveat: DeepSpeed 0.19.8 refuses this config as written (2 error(s)")
    assert "keys.unknown" in caveats[0] and "precision.fp16-and-bf16" in caveats[0]
    assert any("fp16 and bf16 are both enabled" in c and "sized as fp16" in c for c in caveats)
    data = json.loads(run([*argv, *RELEASE, "--format", "json"])[1])
    assert [f"caveat: {c}" for c in data["caveats"]] == caveats


@pytest.mark.parametrize("command", ["fit", "estimate", "predict"])
def test_the_refusal_is_that_of_the_release_asked_for(command, tmp_path):
    """refused_caveat validated as the newest release whatever --deepspeed-version said: amp is refused by 0.19.8
    only."""
    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": False}})
    argv = ([command, "--config", path, *LLAMA] if command == "estimate" else
            [command, path, *LLAMA, *(["--gpu", "H100"] if command == "predict" else [])])
    assert "caveat: DeepSpeed 0.19.8 refuses this config as written (1 error(s): removed.key at amp)" in run(
        [*argv, "--deepspeed-version", "0.19.8"])[1]
    assert "refuses" not in run([*argv, "--deepspeed-version", "0.19.7"])[1]


def test_fit_refuses_an_accumulation_flag_the_config_contradicts(tmp_path, capsys):
    """--gradient-accumulation-steps 4 on a config writing 2 changed nothing, yet the JSON reported 4."""
    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2,
                                  "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}})
    argv = ["fit", path, *LLAMA, "--gpu", "H100"]
    assert run([*argv, "--gradient-accumulation-steps", "4"])[0] == 2
    err = capsys.readouterr().err
    assert "--gradient-accumulation-steps 4" in err and "gradient_accumulation_steps=2" in err
    assert run([*argv, "--gradient-accumulation-steps", "2"])[0] in (0, 1)
    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 8}, "mb.json")
    assert run(["fit", path, *LLAMA, "--gpu", "H100", "--gradient-accumulation-steps", "4"])[0] == 2
    assert "DeepSpeed runs 1 accumulation step(s)" in capsys.readouterr().err


def test_fit_says_the_gpu_has_no_bf16_and_how_to_count_a_package_of_devices(tmp_path):
    """predict and the app said that a T4 has no bf16; fit said nothing, nor that an MI250X entry is one GCD."""
    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                  "bf16": {"enabled": True}})
    argv = ["fit", path, "--model", "Qwen/Qwen2.5-0.5B"]
    assert "note: The NVIDIA T4 16GB has no bf16 arithmetic" in run([*argv, "--gpu", "T4"])[1]
    data = json.loads(run([*argv, "--gpu", "T4", "--format", "json"])[1])
    assert any("no bf16 arithmetic" in note for note in data["notes"])
    text = run([*argv, "--gpu", "MI250X"])[1]
    assert "One AMD MI250X 128GB is 2 devices (GCDs) of 63.98 GiB, one DeepSpeed rank each: count GPUs per node in " \
           "GCDs" in text
    assert "GCDs" not in run([*argv, "--gpu", "H100"])[1]


@pytest.mark.parametrize(("argv", "named"), [
    (["estimate", "--hf-config", "-", "--config", "-"], "--hf-config - and --config - both read standard input"),
    (["predict", "-", "--hf-config", "-", "--gpu", "H100"], "CONFIG - and --hf-config - both read standard input"),
    (["predict", "-", "--model", "gpt2", "--gpu", "H100", "--log", "-"], "CONFIG - and --log - both"),
    (["predict", "x.json", "--hf-config", "-", "--gpu", "H100", "--log", "-"], "--hf-config - and --log - both"),
])
def test_two_inputs_read_from_standard_input_are_refused_naming_both(argv, named, monkeypatch, capsys):
    """The second reader found standard input empty: "--config -: the config is empty"."""
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"train_micro_batch_size_per_gpu": 1})))
    code, _ = run(argv)
    err = capsys.readouterr().err
    assert code == 2 and named in err and "give one of them as a file path" in err and "empty" not in err


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_validate_writes_an_unreadable_file_to_stderr(fmt, tmp_path, capsys):
    """--help says exit 2 is "one message on stderr"; validate wrote a binary file's error to stdout only, then to
    both, which a terminal or a CI log showed twice."""
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x00\x01\x02\xff")
    good = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 1})
    code, out = run(["validate", str(path), good, "--format", fmt])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"dsconfig validate: error: {path}: ") and err.count("\n") == 1
    assert good in out  # the files after it are still checked
    # the text report does not repeat it; JSON and annotations keep an entry where a program reads them
    assert (str(path) in out) is (fmt != "text")
    if fmt == "json":
        assert [entry.get("unreadable", False) for entry in json.loads(out)] == [True, False]


def test_the_params_tables_say_their_gb_is_gib_and_refuse_absurd_counts(capsys):
    """DeepSpeed's tables label GiB "GB"; --params 1e30 printed "999999999999999983222784M total params"."""
    code, text = run(["estimate", "--params", "7e9"])
    assert code == 0 and "GB in these tables means GiB (2^30 bytes), as DeepSpeed prints it" in \
        capsys.readouterr().err and "GiB" not in text  # standard output stays DeepSpeed's printout
    for count in ("1e30", "2000000000000000", "2000T"):
        assert run(["estimate", "--params", count])[0] == 2
        assert f"argument --params: parameter count too large: '{count}' (at most 1e15" in capsys.readouterr().err
    assert "1000000000M total params" in run(["estimate", "--params", "1e15"])[1]


@pytest.mark.parametrize("argv", [["fit", "{path}", *LLAMA], ["estimate", *LLAMA], ["predict", "{path}", *LLAMA,
                                                                                     "--gpu", "H100"]])
def test_a_whole_count_written_with_a_decimal_point_is_read_as_1e3_is(argv, tmp_path, capsys):
    """--seq-len 1e3 was accepted, --seq-len 4096.0 refused as not whole."""
    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 1})
    argv = [arg.replace("{path}", path) for arg in argv]
    code, text = run([*argv, "--seq-len", "4096.0", "--format", "json"])
    assert code in (0, 1) and (code, text) == run([*argv, "--seq-len", "4096", "--format", "json"])
    assert run([*argv, "--seq-len", "4096.5"])[0] == 2
    assert "expected a positive whole number, got '4096.5'" in capsys.readouterr().err


def test_export_names_the_resolve_auto_value_it_refuses(capsys):
    code, _ = run(["export", "--preset", "hf-auto-zero3", "--resolve-auto", "per_device_train_batch_size=abc"])
    assert code == 2
    assert "error: --resolve-auto per_device_train_batch_size=abc: " in capsys.readouterr().err


def test_an_unknown_release_is_answered_with_what_a_user_can_give(capsys):
    """The hint was "python scripts/gen_profiles.py <release>", a script the package does not ship."""
    from core.versions import NEWEST

    assert run(["fit", "x.json", *LLAMA, "--deepspeed-version", "latest"])[0] == 2
    err = capsys.readouterr().err
    assert "gen_profiles" not in err and "Leave the flag out" in err and f"the newest, {NEWEST}" in err


def test_predict_names_only_written_values_when_the_trainer_refuses_them(tmp_path, capsys):
    """predict compared the Trainer's flags with the config as sized for --micro-batch (accumulation 1, which it
    wrote itself): "ds gradient_accumulation_steps=1 vs hf …" of a key the user never wrote. It compares the
    written config, as fit does."""
    path = config_file(tmp_path, {"train_batch_size": 100, "fp16": {"enabled": True}})
    flags = [*LLAMA, "--micro-batch", "2", "--gradient-accumulation-steps", "4", *RELEASE]
    errors = []
    for command in (["predict", path, "--gpu", "A100 80GB"], ["fit", path]):
        assert run([*command, *flags])[0] == 2
        errors.append(capsys.readouterr().err.split(": ", 1)[1])
    assert "ds train_batch_size=100 vs hf train_batch_size (calculated)=64" in errors[0]
    assert "gradient_accumulation_steps=1" not in errors[0] and errors[0] == errors[1]


#: The HF Trainer's standard config: every batch key and both precisions "auto"
HF_STANDARD = {"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto",
               "gradient_accumulation_steps": "auto", "train_batch_size": "auto", "zero_optimization": {"stage": 2}}


@pytest.mark.parametrize("command", ["fit", "estimate"])
def test_the_standard_hf_config_is_not_said_to_enable_both_precisions(command, tmp_path):
    """0.16.9 reads a raw "auto" as on, but under the Trainer (--fp16 or --bf16, never both) the config runs, as
    validate --target hf says: fit and estimate said "fp16 and bf16 are both enabled, which DeepSpeed refuses"."""
    path = config_file(tmp_path, HF_STANDARD)
    argv = [command, path, *LLAMA] if command == "fit" else [command, "--config", path, *LLAMA]
    assert run(["validate", "--target", "hf", "--deepspeed-version", "0.16.9", path])[0] == 0
    data = json.loads(run([*argv, "--deepspeed-version", "0.16.9", "--format", "json"])[1])
    assert data["deepspeed_version"] == "0.16.9" and data["caveats"] == []
    # written on, both are still refused whatever fills the rest
    path = config_file(tmp_path, {**HF_STANDARD, "fp16": {"enabled": True}, "bf16": {"enabled": True}})
    data = json.loads(run([*argv, "--deepspeed-version", "0.16.9", "--format", "json"])[1])
    assert any(c.startswith("fp16 and bf16 are both enabled") for c in data["caveats"])


@pytest.mark.parametrize("command", ["fit", "predict"])
def test_the_refusal_suggests_the_validate_command_that_checked_it(command, tmp_path):
    """For a config with "auto" values the refusal is the HF Trainer's, yet it suggested validate without
    --target hf, which reads every "auto" raw: 5 errors where the caveat counted 1."""
    path = config_file(tmp_path, {**HF_STANDARD, "zero_optimization": {"stage": 7}})
    argv = [command, path, *LLAMA, *(["--gpu", "H100"] if command == "predict" else []),
            "--deepspeed-version", "0.16.9"]
    caveat = next(line for line in run(argv)[1].splitlines() if "refuses this config" in line)
    assert "(1 error(s): type.enum at zero_optimization.stage)" in caveat
    suggested = caveat.split("(dsconfig ", 1)[1].split(" says how)")[0].replace("FILE", path).split()
    assert suggested[:3] == ["validate", "--target", "hf"]
    assert "— 1 error(s)" in run(suggested)[1]
    assert "— 5 error(s)" in run([arg for arg in suggested if arg not in ("--target", "hf")])[1]


def test_fit_counts_a_package_of_devices_in_the_start_page_s_words(tmp_path, monkeypatch):
    """gpu_notes typed the sentence GPU.counting_note gives the Start page: one wording, so a change to it reaches
    both."""
    from core import hardware

    path = config_file(tmp_path, {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}})
    monkeypatch.setattr(hardware.GPU, "counting_note", lambda gpu: f"count {gpu.name} in GCDs")
    text = run(["fit", path, "--model", "Qwen/Qwen2.5-0.5B", "--gpu", "MI250X"])[1]
    assert "note: count AMD MI250X 128GB in GCDs" in text and "one DeepSpeed rank" not in text
