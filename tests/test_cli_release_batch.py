"""estimate, fit and predict size the micro batch that the --deepspeed-version release runs: its data-parallel
count (0.16.x ignores sequence_parallel_size) and elastic training, which ignores the batch keys."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core import fit, memory
from core.cli import main
from core.models import get_spec

LLAMA3 = ["--model", "meta-llama/Meta-Llama-3-8B"]

#: 64 = micro × 2 × data-parallel ranks: 0.16.9 ignores sequence_parallel_size (16 ranks: micro 2), later
#: releases divide the 16 GPUs by it (8 ranks: micro 4)
SEQUENCE_PARALLEL = {"train_batch_size": 64, "gradient_accumulation_steps": 2, "sequence_parallel_size": 2,
                     "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}

#: elastic training on 8 GPUs picks micro batch 6 × 35 accumulation (global 1680) and ignores the written 8
ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1, "ignore_non_elastic_batch_info": True},
           "train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def config_file(tmp_path: Path, config: dict) -> str:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize(("release", "micro"), [("0.16.9", 2), ("0.19.7", 4)])
def test_sequence_parallel_batch_is_read_as_the_release_reads_it(release, micro, tmp_path):
    """fit said micro batch 4 for 0.16.9, which runs 2 (it ignores sequence_parallel_size)."""
    path = config_file(tmp_path, SEQUENCE_PARALLEL)
    text = run(["fit", path, *LLAMA3, "--gpus", "16", "--deepspeed-version", release])[1]
    assert f", micro batch {micro}, " in text
    text = run(["estimate", *LLAMA3, "--config", path, "--nodes", "2", "--deepspeed-version", release])[1]
    assert f"Shape: micro batch {micro}, " in text
    text = run(["predict", path, *LLAMA3, "--gpu", "H100", "--nodes", "2", "--deepspeed-version", release])[1]
    assert f"micro batch {micro} x 2 accumulation" in text


def test_elastic_training_decides_the_micro_batch(tmp_path):
    """All three sized the ignored train_micro_batch_size_per_gpu 8 (predict: "8 x 1"); elastic training runs
    6 x 35 on 8 GPUs."""
    path = config_file(tmp_path, ELASTIC)
    release = ["--deepspeed-version", "0.19.7"]
    text = run(["fit", path, *LLAMA3, *release])[1]
    assert ", micro batch 6, " in text
    text = run(["estimate", *LLAMA3, "--config", path, *release])[1]
    assert "Shape: micro batch 6, " in text
    text = run(["predict", path, *LLAMA3, "--gpu", "H100", *release])[1]
    assert "micro batch 6 x 35 accumulation" in text
    # 0.19.8 removed elasticity: the batch keys decide again
    assert "micro batch 8 x 1 accumulation" in run(["predict", path, *LLAMA3, "--gpu", "H100",
                                                     "--deepspeed-version", "0.19.8"])[1]


def test_a_micro_batch_flag_contradicting_elastic_training_names_it(tmp_path, capsys):
    path = config_file(tmp_path, ELASTIC)
    code, _ = run(["fit", path, *LLAMA3, "--micro-batch", "8", "--deepspeed-version", "0.19.7"])
    error = capsys.readouterr().err
    assert code == 2 and "elastic training runs the config with a micro batch of 6" in error
    assert "elasticity.micro_batch_sizes" in error


def test_elastic_training_refusing_the_gpu_count_is_said(tmp_path, capsys):
    """It was sized at the ignored micro batch 8 as if it ran."""
    path = config_file(tmp_path, {**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "min_gpus": 16}})
    code, _ = run(["fit", path, *LLAMA3, "--deepspeed-version", "0.19.7"])
    error = capsys.readouterr().err
    assert code == 2 and "elastic training" in error and "refuses 8 GPUs" in error


def test_current_job_is_sized_with_the_batch_its_ways_are():
    """ways_to_fit judged the current job at the micro batch given (8: 143.6 GiB) while elastic training runs 6
    (112.6 GiB), which fits 120 GiB: it listed ways out of a job that fits."""
    spec = get_spec("meta-llama/Meta-Llama-3-8B")
    hw = memory.Hardware(8, 1, 120 * memory.GIB, 512 * memory.GIB, 0)
    assert fit.ways_to_fit(ELASTIC, spec, hw, memory.Shape(8, 2048, "sdpa", "none"), version="0.19.7") == []


def test_a_log_s_samples_per_second_are_timed_with_elastic_training_s_global_batch(tmp_path):
    """predict --log turned 40 samples/s into 1.6 s steps (the batch keys' 8 × 8 GPUs); elastic training's
    optimizer step is 1680 samples: 42 s."""
    path = config_file(tmp_path, ELASTIC)
    log = tmp_path / "train.log"
    log.write_text("epoch=0/micro_step=350/global_step=10, RunningAvgSamplesPerSec=40.0, CurrSamplesPerSec=40.0\n")
    data = json.loads(run(["predict", path, *LLAMA3, "--gpu", "H100", "--deepspeed-version", "0.19.7", "--log",
                           str(log), "--format", "json"])[1])
    assert data["calibration"]["measured_step_seconds"] == pytest.approx(42.0)


@pytest.mark.parametrize("command", ["predict", "fit"])
@pytest.mark.parametrize("release", ["0.16.9", "0.19.8"])
def test_trainer_accumulation_flag_fills_auto_keys_as_the_release_reads_them(command, release, tmp_path, capsys):
    """An all-"auto" config with sequence_parallel_size 2: the HF Trainer's train batch was filled as the newest
    release reads the key (2 x 2 x 8 / 2 = 16), so on 0.16.9, which counts all 8 GPUs, DeepSpeed ran 1 accumulation
    step and --gradient-accumulation-steps 2 was refused, telling the user to write "auto" where it already was."""
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "sequence_parallel_size": 2,
              "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    code, _ = run([command, config_file(tmp_path, config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100",
                   "--micro-batch", "2", "--gradient-accumulation-steps", "2", "--deepspeed-version", release])
    assert code == 0, capsys.readouterr().err
