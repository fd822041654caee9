"""CLI problems found by a bug hunt on 29 Nov 2026: each refused naming the flag, or answered in the format asked."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from core.cli import main
from core.models import catalog_names


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv, out=out)
    return code, out.getvalue(), err.getvalue()


def test_list_models_in_json_is_json_and_takes_no_model_source():
    """--list-models --format json printed one name per line (exit 0), and --list-models --params 7 listed too."""
    code, out, _ = run(["estimate", "--list-models", "--format", "json"])
    assert code == 0 and json.loads(out) == list(catalog_names())
    code, out, err = run(["estimate", "--list-models", "--params", "7e9"])
    assert code == 2 and "--list-models lists the catalog; it takes no --params" in out + err


@pytest.mark.parametrize("factor", ["1e20", "1e308"])
def test_buffer_factor_has_a_ceiling_named_with_the_flag(factor):
    """1e308 overflowed into an error naming no flag, 1e20 printed a 2.6e21 GB row."""
    code, out, err = run(["estimate", "--params", "7e9", "--buffer-factor", factor])
    assert code == 2 and "argument --buffer-factor: expected a number up to 100" in out + err


@pytest.mark.parametrize("command", ["fit", "estimate"])
def test_fit_and_estimate_default_to_a_sequence_the_model_can_run(tmp_path, command):
    """GPT-2 has 1024 learned positions: fit and estimate sized 2048 tokens by default and said "fits" beside a note
    that the model cannot run it, while plan and predict default to 1024."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1}))
    argv = ([command, str(path)] if command == "fit" else [command, "--config", str(path)])
    code, out, _ = run([*argv, "--model", "openai-community/gpt2", "--format", "json"])
    report = json.loads(out)
    text = json.dumps(report)
    assert code == 0 and "cannot run" not in text and "beyond the model" not in text
    assert '"seq_len": 1024' in text
    code, out, _ = run([*argv, "--model", "openai-community/gpt2", "--seq-len", "2048", "--format", "json"])
    assert "beyond the model's 1024 learned positions" in out  # asked for explicitly: sized, and said


@pytest.mark.parametrize(("value", "said"), [
    ('bf16={"enabled":false', "Expecting ',' delimiter"),
    ("optimizer.params.lr=.0001", "Expecting value"),
    ("zero_optimization.offload_optimizer={'device':'cpu'}", "enclosed in double quotes"),
])
def test_set_refuses_json_that_does_not_parse_instead_of_writing_it_as_text(value, said):
    """--set bf16={"enabled":false (a missing brace) became the string '{"enabled":false', and the error then said
    bf16 must be an object, which the user wrote."""
    code, out, err = run(["export", "--preset", "zero3-bf16", "--set", value])
    assert code == 2, (out, err)
    assert "is not valid JSON" in out + err and said in out + err


@pytest.mark.parametrize("value", ["tensorboard.job_name=3rd_run", "zero_optimization.offload_optimizer.device=cpu",
                                   "tensorboard.output_path=./logs"])
def test_set_keeps_plain_words_as_text(value, tmp_path):
    _, out, err = run(["export", "--preset", "zero3-bf16", "--set", value, "-o", str(tmp_path / "o.json")])
    assert "is not valid JSON" not in out + err
    key, _, word = value.partition("=")
    node = json.loads((tmp_path / "o.json").read_text())
    for part in key.split("."):
        node = node[part]
    assert node == word




@pytest.mark.parametrize(("name", "meant"), [
    ("llama-7b", "meta-llama/Llama-2-7b-hf"), ("llama2-7b", "meta-llama/Llama-2-7b-hf"),
    ("gpt-2", "openai-community/gpt2"), ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
])
def test_an_unknown_model_name_gets_the_catalog_names_sharing_its_words(name, meant, tmp_path):
    """Only names containing the whole typed text were suggested: "llama-7b" got "Pick a name from the model
    catalog" while --gpu "Tesla T4" gets "did you mean NVIDIA T4 16GB"."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1}))
    code, out, err = run(["fit", str(path), "--model", name])
    assert code == 2 and f"Unknown model '{name}'. Did you mean: " in out + err and meant in out + err


def test_a_name_sharing_only_a_letter_gets_no_suggestion():
    from core.models import ModelConfigError
    from core.models.catalog import catalog_name

    with pytest.raises(ModelConfigError, match="Pick a name from the model catalog"):
        catalog_name("zzz-b")


@pytest.mark.parametrize("preset", ["hf-auto-zero2", "hf-auto-zero3"])
def test_export_resolved_for_a_gpu_count_is_validated_on_that_count(preset, tmp_path):
    """--resolve-auto world_size=8 resolved train_batch_size 64 for 8 GPUs, then validated it on 1 GPU and refused
    its own output ("64 ≠ micro batch 8 × accumulation 1 × 1 GPUs"); --world-size 8 worked."""
    out = tmp_path / "x.json"
    code, stdout, err = run(["export", "--preset", preset, "--resolve-auto", "world_size=8", "num_training_steps=1000",
                             "hidden_size=2048", "bf16=true", "-o", str(out)])
    assert code == 0, stdout + err
    assert json.loads(out.read_text())["train_batch_size"] == 64
