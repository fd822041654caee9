"""dsconfig: exit codes, text and JSON output, migrate, schema."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from core.cli import main


def run(argv, stdin=None):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def test_validate_ok_and_errors(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"train_batch_size": 16, "bf16": {"enabled": true}}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"train_batch_size": 16, "zero_optimization": {"stage": 7}}')
    assert run(["validate", str(good), "--world-size", "8"])[0] == 0
    code, text = run(["validate", str(bad)])
    assert code == 1 and "zero_optimization.stage" in text and "FAILED" in text
    code, text = run(["validate", str(good), "--world-size", "3"])
    assert code == 1 and "16 ≠" in text


def test_a_preset_file_is_named_as_one_with_the_way_to_its_config():
    from core.presets import BUILTIN_DIR

    preset = BUILTIN_DIR / "zero2-bf16.json"
    code, text = run(["validate", str(preset)])
    assert code == 1 and "config.preset-file" in text and "dsconfig export --preset" in text
    code, text = run(["versions", str(preset)])
    assert "config.preset-file" in text
    code, text = run(["export", "--preset", "zero2-bf16"])
    assert code == 0 and "meta" not in json.loads(text)


def test_unreadable_input_exit_2(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"train_batch_size": 16,,}')
    code, text = run(["validate", str(broken)])
    err = capsys.readouterr().err
    # a CI linter's reading: the error once, on stderr, and exit 2; nothing on stdout to read it twice from
    assert code == 2 and "line 1" in err and err.count("\n") == 1 and text == ""
    assert run(["validate", str(tmp_path / "missing.json")])[0] == 2
    assert run(["validate", str(tmp_path)])[0] == 2


def test_json_format_is_data(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 2, "zero_optimisation": {}}')
    code, text = run(["validate", str(path), "--format", "json", "--world-size", "4"])
    data = json.loads(text)
    assert code == 0
    assert data[0]["batch"]["train_batch_size"] == 8
    assert data[0]["findings"][0]["code"] == "keys.unknown-top-level"
    assert data[0]["findings"][0]["fix"]["ops"][0]["to"] == "zero_optimization"


def test_bad_options_exit_2(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{}")
    assert run(["validate", str(path), "--world-size", "zero"])[0] == 2
    assert run(["validate", str(path), "--deepspeed-version", "0.1"])[0] == 2
    assert run(["frobnicate"])[0] == 2


def test_migrate_prints_and_writes(tmp_path):
    path = tmp_path / "old.json"
    path.write_text('{"zero_optimization": {"stage": 2, "cpu_offload": true}}')
    code, text = run(["migrate", str(path)])
    assert code == 0 and json.loads(text)["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    assert "cpu_offload" in path.read_text()
    before = path.read_text()
    assert run(["migrate", str(path), "--check"]) == (1, "") and path.read_text() == before
    assert run(["migrate", str(path), "--write"])[0] == 0
    assert json.loads(path.read_text())["zero_optimization"] == {"stage": 2, "offload_optimizer": {"device": "cpu"}}
    assert run(["migrate", str(path), "--check"]) == (0, "")
    assert run(["migrate", str(path), str(path)])[0] == 2  # printing takes one file


def test_schema_command(tmp_path):
    code, text = run(["schema"])
    assert code == 0 and json.loads(text)["$schema"].endswith("2020-12/schema")
    target = tmp_path / "s.json"
    assert run(["schema", "-o", str(target), "--target", "hf"])[0] == 0
    assert "hf" in json.loads(target.read_text())["title"]


def test_python_dash_m_core_and_stdin():
    proc = subprocess.run([sys.executable, "-m", "core", "validate", "-"], input='{"train_batch_size": 4}',
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout


def test_estimate_and_presets_are_wired_into_dsconfig():
    code, text = run(["estimate", "--params", "2851e6", "--largest-layer", "32e6", "--gpus-per-node", "8"])
    assert code == 0 and "127.45GB" in text and "5.31GB" in text
    code, text = run(["presets", "list"])
    assert code == 0 and "zero3-bf16" in text
    code, text = run(["export", "--preset", "zero3-bf16", "--set", "zero_optimization.stage=2"])
    assert code == 0 and json.loads(text)["zero_optimization"]["stage"] == 2
    assert run(["export", "--preset", "../../etc/passwd"])[0] == 2


def test_the_pre_commit_hooks_fail_exactly_on_what_they_describe(tmp_path):
    """Each hook of .pre-commit-hooks.yaml run as pre-commit runs it: its entry, then the staged files its
    ``files`` pattern matches. The validate hook fails on errors; the migrate check on deprecated keys only."""
    root = Path(__file__).resolve().parent.parent
    hooks = {hook["id"]: hook for hook in yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())}
    files = {
        "ds_config_ok.json": {"train_batch_size": 8, "zero_optimization": {"stage": 2}},
        "ds_config_deprecated.json": {"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": True}},
        "ds_config_error.json": {"train_batch_size": 8, "zero_optimization": {"stge": 2}},
        "README.json": {"not": "a config"},
    }
    for name, config in files.items():
        (tmp_path / name).write_text(json.dumps(config))

    def run(hook_id: str, *names: str) -> int:
        hook = hooks[hook_id]
        staged = [n for n in names if re.search(hook["files"], n)]
        assert staged == [n for n in names if n.startswith("ds_config")]
        entry = shlex.split(hook["entry"])
        command = [sys.executable, "-m", "core", *entry[1:]] if entry[0] == "dsconfig" else entry
        return subprocess.run([*command, *staged], cwd=tmp_path, capture_output=True, timeout=120).returncode

    assert set(hooks) == {"dsconfig-validate", "dsconfig-migrate-check"}
    assert run("dsconfig-validate", "ds_config_ok.json", "ds_config_deprecated.json", "README.json") == 0
    assert run("dsconfig-validate", "ds_config_ok.json", "ds_config_error.json") == 1
    assert run("dsconfig-migrate-check", "ds_config_ok.json", "ds_config_error.json", "README.json") == 0
    assert run("dsconfig-migrate-check", "ds_config_ok.json", "ds_config_deprecated.json") == 1


def test_stdin_gets_the_encoding_checks_of_a_file(tmp_path):
    """Standard input is read as bytes, so Latin-1 or UTF-16 text is refused as it is from a file (before, a
    Latin-1 é became a lone surrogate in the config and validate said OK)."""
    latin1 = '{"train_batch_size": 8, "note": "café"}'.encode("latin-1")
    file = tmp_path / "latin1.json"
    file.write_bytes(latin1)
    for payload in (latin1, '{"train_batch_size": 8}'.encode("utf-16")):
        proc = subprocess.run([sys.executable, "-m", "core", "validate", "-"], input=payload, capture_output=True,
                              timeout=120)
        assert proc.returncode == 2 and b"Traceback" not in proc.stderr, proc
        assert b"UTF-8" in proc.stdout + proc.stderr
    from_file = subprocess.run([sys.executable, "-m", "core", "validate", str(file)], capture_output=True, timeout=120)
    from_stdin = subprocess.run([sys.executable, "-m", "core", "validate", "-"], input=latin1, capture_output=True,
                                timeout=120)
    assert from_stdin.stdout.replace(b"-: ", b"") == from_file.stdout.replace(str(file).encode() + b": ", b"")


@pytest.mark.parametrize("argv", [
    ["estimate", "--params", "1e308"],
    ["estimate", "--params", "7B", "--buffer-factor", "1e308"],
    ["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu-memory", "1e300"],
    ["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--nvme", "1e300"],
    ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "64", "--cpu-ram", "1e300"],
], ids=["params", "buffer-factor", "gpu-memory", "nvme", "plan-cpu-ram"])
def test_numbers_too_large_to_compute_with_are_a_usage_error(argv, capsys):
    code, _ = run(argv)
    err = capsys.readouterr().err
    assert code == 2 and "error:" in err and "Traceback" not in err, err


@pytest.mark.parametrize("command", [
    ["estimate", "--model", "meta-llama/Llama-2-7b-hf"],
    ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "64"],
])
def test_seq_len_is_read_alike_by_every_subcommand_and_bounded(command, capsys):
    """4e3 is 4000 everywhere (estimate and fit refused it while plan and predict took it); a length beyond 2**30
    is refused by the flag before any arithmetic overflows (plan printed numpy overflow warnings first)."""
    code, _ = run([*command, "--seq-len", "4e3", "--format", "json"])
    assert code == 0, capsys.readouterr().err
    code, _ = run([*command, "--seq-len", "1e308"])
    err = capsys.readouterr().err
    assert code == 2 and "--seq-len: expected a number up to 1,073,741,824" in err and "Warning" not in err


def test_network_is_bounded_so_json_output_stays_json(capsys):
    code, _ = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "64",
                   "--network", "1e308", "--format", "json"])
    assert code == 2 and "--network: expected a number up to 1,000,000" in capsys.readouterr().err


def test_a_micro_batch_contradicting_the_config_is_one_policy(tmp_path, capsys):
    """train_batch_size 8 on 8 GPUs runs micro batch 1: fit and predict refuse --micro-batch 4 (DeepSpeed would
    refuse 4 x 1 x 8); estimate sizes what it is asked but says the config runs 1."""
    path = tmp_path / "c.json"
    path.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}')
    model = ["--model", "meta-llama/Llama-2-7b-hf"]
    for argv in (["fit", str(path), *model, "--gpu", "H100", "--gpus", "8", "--micro-batch", "4"],
                 ["predict", str(path), *model, "--gpu", "H100", "--micro-batch", "4"]):
        code, _ = run(argv)
        assert code == 2 and "the config runs with a micro batch of 1" in capsys.readouterr().err, argv
    code, text = run(["estimate", *model, "--config", str(path), "--micro-batch", "4"])
    assert code == 0 and "--micro-batch 4 replaces the config's micro batch of 1" in text


def test_validate_on_several_gpu_counts_marks_what_fails_where(tmp_path):
    """A config a team runs on 8, 12 and 16 GPUs, checked in one call: 16 = 2 x 1 x 8 works only on 8; the finding
    every count shares is printed once, the batch errors with the count they are on."""
    path = tmp_path / "c.json"
    path.write_text('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "zero_optimisation": {}}')
    code, text = run(["validate", str(path), "--world-size", "8,12", "--world-size", "16"])
    assert code == 1
    assert text.splitlines()[0].startswith(f"{path}: FAILED on 12, 16 GPUs, OK on 8 GPUs")
    assert text.count("keys.unknown-top-level") == 1 and "zero_optimisation" in text
    lines = [line for line in text.splitlines() if "batch.ga-positive" in line]
    assert [line.rsplit("[", 1)[1] for line in lines] == ["on 12 GPUs]", "on 16 GPUs]"]
    assert "batch on 8 GPUs: train_batch_size=16 = micro 2 × accumulation 1 × 8 GPU(s)" in text
    assert run(["validate", str(path), "--world-size", "8,8"])[0] == 0  # one count, given twice
    github = run(["validate", str(path), "--world-size", "4,8", "--format", "github"])[1]
    assert "title=dsconfig batch.ga-positive::" not in github  # 16 = 2 x 2 x 4 works on 4 too
    github = run(["validate", str(path), "--world-size", "8,32", "--format", "github"])[1]
    assert "title=dsconfig batch.ga-positive (on 32 GPUs)::" in github
    assert "title=dsconfig keys.unknown-top-level::" in github
    code, data = run(["validate", str(path), "--world-size", "8,32", "--format", "json"])
    results = json.loads(data)
    assert code == 1 and [(r["world_size"], r["ok"]) for r in results] == [(8, True), (32, False)]
    assert run(["validate", str(path), "--world-size", "8,,2"])[0] == 2  # argparse: "separated by commas"


def test_an_elastic_config_checked_on_the_counts_a_scheduler_may_give_it(tmp_path):
    path = tmp_path / "elastic.json"
    path.write_text('{"elasticity": {"enabled": true, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6], '
                    '"version": 0.1}}')
    # its search picks 1680 samples (micro batches 2/4/6): 16 and 64 GPUs cannot share it evenly, 8 and 12 can
    code, text = run(["validate", str(path), "--world-size", "8,12,16,64", "--deepspeed-version", "0.19.7"])
    assert code == 1 and "FAILED on 16, 64 GPUs, OK on 8, 12 GPUs" in text
    assert "elasticity.world-size" in text and "[on 64 GPUs]" in text and "[on 16 GPUs]" in text
