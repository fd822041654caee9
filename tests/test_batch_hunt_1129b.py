"""Batch findings proven against the code that runs them: the HF Trainer's own batch check under sequence
parallelism (transformers' trainer_config_process/finalize), its refusal of a config without a micro batch or
train_batch_size, DeepSpeed's data loader on a float micro batch, and the GPU counts DeepSpeed accepts where
sequence parallelism makes the data-parallel size fractional or elastic training lists data-parallel sizes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from core.cli import main
from core.validate import validate
from tests.oracle.oracle import deepspeed_verdict, deepspeed_verdicts, oracle_available
from tests.test_autofill import full_values, hf_resolve


def _findings(config: dict, world_size: int, target: str = "deepspeed", version: str | None = None) -> dict:
    report = validate(config, world_size=world_size, target=target, **({"version": version} if version else {}))
    return {f.code: f for f in report.findings}


def _trainer(config: dict, world_size: int, micro: int, accum: int) -> str | dict:
    """What transformers' own DeepSpeed integration makes of ``config``: the config, or its refusal's text."""
    try:
        return hf_resolve(config, full_values(world_size=world_size, per_device_train_batch_size=micro,
                                              gradient_accumulation_steps=accum))
    except ValueError as exc:
        return str(exc)


# ------------------------------------------------------------------ 1. HF Trainer with sequence parallelism
SP_HF = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
         "sequence_parallel_size": 2, "zero_optimization": {"stage": 0}}


@pytest.mark.deepspeed
def test_a_written_train_batch_size_with_sequence_parallelism_passes_the_trainer_or_deepspeed_never_both():
    """validate --target hf said OK for train_batch_size 32 = 4 × 2 × (8 GPUs ÷ 2): transformers checks it over
    TrainingArguments.world_size (every process, 64) and refuses it; DeepSpeed checks the data-parallel ranks."""
    refusal = _trainer(SP_HF, 8, 4, 2)
    assert isinstance(refusal, str) and "ds train_batch_size=32 vs hf train_batch_size (calculated)=64" in refusal
    assert not isinstance(_trainer({**SP_HF, "train_batch_size": 64}, 8, 4, 2), str)  # the Trainer's number
    plain = {k: v for k, v in SP_HF.items() if k != "zero_optimization"}
    assert deepspeed_verdict(plain, 8).accepted  # DeepSpeed's number is 32 ...
    assert not deepspeed_verdict({**plain, "train_batch_size": 64}, 8).accepted  # ... and it refuses 64
    for tb in (32, 64):
        found = _findings({**SP_HF, "train_batch_size": tb}, 8, "hf")
        assert "batch.product" in found, (tb, found)
        finding = found["batch.product"]
        assert finding.severity == "error" and finding.fix is not None and '"auto"' in finding.suggestion
        assert "all 8 GPUs" in finding.message and "4 data-parallel ranks" in finding.message
    auto = {**SP_HF, "train_batch_size": "auto"}  # the fix: the Trainer accepts it, accelerate writes 32
    assert not isinstance(_trainer(auto, 8, 4, 2), str)
    assert not [f for f in validate(auto, world_size=8, target="hf").findings if f.code.startswith(("batch.", "hf."))]
    found = _findings({**SP_HF, "train_micro_batch_size_per_gpu": "auto"}, 8, "hf")
    assert found["hf.batch-never-matches"].severity == "error"
    # the plain DeepSpeed target counts the data-parallel ranks, as DeepSpeed does
    assert not [f for f in validate(plain, world_size=8).findings if f.severity == "error"]


def test_fit_takes_the_per_device_batch_the_trainer_accepts_under_sequence_parallelism(tmp_path: Path):
    """fit derived the "auto" micro batch over GPUs ÷ sequence_parallel_size (64 ÷ 4 ÷ 2 = 8) and then refused
    its own pick ("ds train_batch_size=64 vs hf ... 128"): the Trainer's per-device batch is 64 ÷ (8 × 2) = 4."""
    config = {**SP_HF, "train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"}
    assert isinstance(_trainer(config, 8, 8, 2), str) and not isinstance(_trainer(config, 8, 4, 2), str)
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    out = io.StringIO()
    code = main(["fit", str(path), "--model", "openai-community/gpt2", "--gpus", "8",
                 "--gradient-accumulation-steps", "2"], out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "micro batch 4 assumed" in text and "hf.batch-never-matches" in text


@pytest.mark.deepspeed
def test_the_hf_batch_a_sizing_command_runs_is_the_one_accelerate_hands_deepspeed():
    """hf_batch (fit and plan with --gradient-accumulation-steps) checked the Trainer's filled train_batch_size 64
    over GPUs ÷ sequence_parallel_size, found 1 accumulation step and refused --gradient-accumulation-steps 2:
    accelerate replaces it by micro × accumulation × data-parallel ranks (Accelerator._prepare_deepspeed)."""
    from core.cli.common import hf_batch

    config = {**SP_HF, "train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto"}
    filled = hf_batch(config, 4, 2, 8, "0.19.8")
    assert {k: filled[k] for k in ("train_batch_size", "train_micro_batch_size_per_gpu",
                                   "gradient_accumulation_steps")} == {"train_batch_size": 32,
                                                                      "train_micro_batch_size_per_gpu": 4,
                                                                      "gradient_accumulation_steps": 2}
    assert deepspeed_verdict({k: v for k, v in filled.items() if k != "zero_optimization"}, 8).accepted


# ------------------------------------------------------------------ 2. no micro batch and no train_batch_size
@pytest.mark.deepspeed
@pytest.mark.parametrize("target", ["hf", "deepspeed"])
def test_an_auto_accumulation_alone_is_no_batch_size(target: str):
    """{"gradient_accumulation_steps": "auto"} passed with target hf; the Trainer fills only "auto" keys, so
    DeepSpeed gets neither a micro batch nor train_batch_size and asserts."""
    config = {"gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 0}}
    given = _trainer(config, 8, 4, 2)
    assert isinstance(given, dict) and "train_micro_batch_size_per_gpu" not in given and "train_batch_size" \
        not in given
    verdict = deepspeed_verdict({"gradient_accumulation_steps": given["gradient_accumulation_steps"]}, 8)
    assert not verdict.accepted and "Either train_batch_size or train_micro_batch_size_per_gpu" in verdict.message
    found = _findings(config, 8, target)
    assert found["batch.missing"].severity == "error"


# ------------------------------------------------------------------ 3. a float micro batch and DeepSpeed's loader
def _loader_refuses(config: dict, world_size: int) -> tuple[object, str | None]:
    """The micro batch DeepSpeed's config ends with, and what DeepSpeed's own data loader (the one
    deepspeed.initialize(..., training_data=...) builds with it) says: None when it yields a batch."""
    import torch

    from tests.oracle.ds0195_worker import _deepspeed_config_class, _quiet

    with _quiet():
        parsed = _deepspeed_config_class()(config, world_size)
        from deepspeed.runtime.dataloader import DeepSpeedDataLoader
    micro = parsed.train_micro_batch_size_per_gpu
    data = torch.utils.data.TensorDataset(torch.randn(64, 4))
    try:
        loader = DeepSpeedDataLoader(data, batch_size=micro, pin_memory=False, local_rank=0, tput_timer=None,
                                     data_parallel_world_size=1, data_parallel_rank=0)
        next(iter(loader))
    except ValueError as exc:
        return micro, str(exc)
    return micro, None


@pytest.mark.deepspeed
@pytest.mark.parametrize(("config", "world_size"), [
    ({"train_batch_size": 32, "gradient_accumulation_steps": 2, "sequence_parallel_size": 2}, 8),
    ({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8.0}, 1),
    ({"train_batch_size": 16, "gradient_accumulation_steps": 2.0}, 2),
])
def test_a_float_micro_batch_is_a_warning_where_deepspeeds_data_loader_refuses_it(config: dict, world_size: int):
    micro, refusal = _loader_refuses(config, world_size)
    assert isinstance(micro, float) and refusal and "batch_size should be a positive integer value" in refusal
    finding = _findings(config, world_size)["batch.not-integer"]
    assert finding.severity == "warning" and finding.path == "train_micro_batch_size_per_gpu"
    assert "training_data=" in finding.message and "DataLoader" in finding.message
    assert finding.fix is not None
    fixed = {**config, **{op.path: op.value for op in finding.fix.ops}}
    micro, refusal = _loader_refuses(fixed, world_size)
    assert refusal is None and isinstance(micro, int)
    assert "batch.not-integer" not in _findings(fixed, world_size)
    # the HF Trainer builds its loader from per_device_train_batch_size, not from the config
    assert "batch.not-integer" not in _findings({**config, "zero_optimization": {"stage": 0}}, world_size, "hf")


# ------------------------------------------------------------------ 4. a fractional data-parallel size
@pytest.mark.deepspeed
@pytest.mark.parametrize(("config", "world_size", "ranks", "counts"), [
    ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 2}, 3,
     "1.5 data-parallel ranks (3 GPUs ÷ sequence_parallel_size 2)", (2, 4)),
    ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
      "sequence_parallel_size": 3}, 8, "2.6667 data-parallel ranks (8 GPUs ÷ sequence_parallel_size 3)", (12,)),
])
def test_a_fractional_data_parallel_size_is_said_in_ranks_and_the_suggested_gpu_counts_start(
        config: dict, world_size: int, ranks: str, counts: tuple[int, ...]):
    """The message said "× 1.5 GPUs" (and 2.6666666666666665) and the suggestion "× 3 GPUs", which DeepSpeed
    refuses: it divides the GPUs by sequence_parallel_size."""
    finding = _findings(config, world_size)["batch.product"]
    assert ranks in finding.message and "6666666" not in finding.message + finding.suggestion
    named = tuple(int(n) for n in re.findall(r"\d+", finding.suggestion.split("nearest: ")[1].split(")")[0]))
    assert named == counts
    verdicts = deepspeed_verdicts([(config, world_size)] + [(config, n) for n in counts])
    assert not verdicts[0].accepted and all(v.accepted for v in verdicts[1:]), verdicts


# ------------------------------------------------------------------ 5. elastic training with sequence parallelism
ELASTIC_SP = {"elasticity": {"enabled": True, "max_train_batch_size": 100, "micro_batch_sizes": [5], "version": 0.1},
              "sequence_parallel_size": 2}


@pytest.mark.deepspeed
@pytest.mark.parametrize(("release", "nearest", "listed"), [
    ("0.19.7", (8, 12), [2, 4, 6, 8, 12, 24]),
    ("0.16.9", (6, 12), None),  # it does not read sequence_parallel_size: the sizes are GPU counts
])
def test_elastic_training_with_sequence_parallelism_suggests_gpu_counts_the_release_starts_on(
        release: str, nearest: tuple[int, int], listed: list[int] | None):
    """"Run on a valid count (nearest: 4 or 6)" named data-parallel sizes; 0.19.7 checks GPUs ÷ 2 against them, so
    the GPU counts are 8 or 12 (and 10, 14, 16 stop with ElasticityIncompatibleWorldSize)."""
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    finding = _findings(ELASTIC_SP, 10, version=release)["elasticity.world-size"]
    assert f"(nearest: {nearest[0]} or {nearest[1]} GPUs)" in finding.suggestion
    if listed is None:
        assert "GPU counts:" not in finding.message
        listed = list(nearest)
    else:
        assert [int(n) for n in finding.message.split("GPU counts: ")[1].split(", with")[0].split(", ")] == listed
    refused = [10, 14, 16]
    verdicts = deepspeed_verdicts([(ELASTIC_SP, n) for n in listed + refused], release)
    assert [v.accepted for v in verdicts] == [True] * len(listed) + [False] * len(refused), verdicts
    assert {v.error_type for v in verdicts[len(listed):]} == {"ElasticityIncompatibleWorldSize"}
