"""``dsconfig estimate --gpu``: the full estimate sized against a catalog GPU, as ``dsconfig fit`` sizes it."""

from __future__ import annotations

import json

import pytest

from core.hardware import GPU_BY_NAME
from tests.cli_support import config_file, run_cli

MODEL = ["--model", "meta-llama/Llama-2-7b-hf"]
#: 7B with ZeRO-2 at micro batch 2: ~52 GiB per GPU, so it fits an 80 GB A100 and not a 40 GB one.
CONFIG = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}


run = run_cli


@pytest.fixture
def config(tmp_path):
    return config_file(tmp_path, CONFIG)


def _estimate(config: str, *flags: str) -> dict:
    code, text, _ = run(["estimate", *MODEL, "--config", config, *flags, "--format", "json"])
    assert code == 0
    return json.loads(text)


@pytest.mark.parametrize("gpu, fits", [("NVIDIA A100 80GB", True), ("NVIDIA A100 40GB", False)])
def test_estimate_sizes_against_the_gpu_fit_sizes_against(config, gpu, fits):
    data = _estimate(config, "--gpu", gpu)
    assert data["gpu"] == gpu
    assert data["hardware"]["gpu_memory_bytes"] == GPU_BY_NAME[gpu].memory_bytes
    assert data["fits"]["gpu"] is fits
    fit_code, fit_text, _ = run(["fit", config, *MODEL, "--gpu", gpu, "--format", "json"])
    verdict = json.loads(fit_text)
    assert (verdict["fits"], verdict["gpu_bytes"], verdict["gpu_memory_bytes"]) == (
        data["fits"]["all"], data["totals"]["gpu_bytes"], data["hardware"]["gpu_memory_bytes"])
    assert fit_code == (0 if fits else 1)


def test_estimate_text_names_the_gpu_and_its_verdict(config):
    code, text, _ = run(["estimate", *MODEL, "--config", config, "--gpu", "A100 40GB"])
    assert code == 0
    assert "Setup: 1 node(s) x 8 GPU(s) (NVIDIA A100 40GB);" in text
    assert f"of {GPU_BY_NAME['NVIDIA A100 40GB'].memory_gib:.2f} GiB -> DOES NOT FIT" in text


def test_estimate_says_what_the_gpu_cannot_do_as_fit_does(config):
    data = _estimate(config, "--gpu", "V100 32GB")  # bf16 on a GPU without bf16 arithmetic
    fit_notes = json.loads(run(["fit", config, *MODEL, "--gpu", "V100 32GB", "--format", "json"])[1])["notes"]
    said = [note for note in fit_notes if "no bf16 arithmetic" in note]
    assert said and set(said) <= set(data["notes"])


def test_estimate_gpu_memory_overrides_the_gpu_and_says_so(config):
    data = _estimate(config, "--gpu", "H100", "--gpu-memory", "40")
    assert data["gpu"] is None and data["hardware"]["gpu_memory_bytes"] == 40 * 2**30
    assert "--gpu-memory 40 GiB is used instead of --gpu NVIDIA H100 80GB's memory" in data["notes"]


def test_estimate_default_is_the_default_gpu(config):
    assert _estimate(config)["hardware"]["gpu_memory_bytes"] == GPU_BY_NAME["NVIDIA A100 80GB"].memory_bytes


def test_estimate_unknown_gpu_names_the_near_ones():
    code, _, err = run(["estimate", *MODEL, "--gpu", "A100-SXM4-80GB"])
    assert code == 2
    assert "argument --gpu: 'A100-SXM4-80GB' is not one GPU of the catalog (did you mean NVIDIA A100 80GB?" in err


def test_estimate_params_tables_refuse_a_gpu():
    code, _, err = run(["estimate", "--params", "7B", "--gpu", "H100"])
    assert code == 2 and "--gpu does not apply here" in err
