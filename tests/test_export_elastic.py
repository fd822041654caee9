"""Launcher exports of an elastic config (a hunt: every launcher but DeepSpeed's own writes batch keys into the
config DeepSpeed reads, and DeepSpeed 0.16-0.19.7 refuses batch keys beside elastic training unless
ignore_non_elastic_batch_info is on; the exports did not turn it on). Judged by the real 0.19.7 parser after each
library writes what it writes."""

from __future__ import annotations

import pytest

from core.launchers import accelerate_export, hf_trainer_export, lightning_export
from tests.oracle.oracle import deepspeed_verdict, oracle_available
from tests.test_autofill import full_values, hf_resolve

RELEASE = "0.19.7"
ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4], "min_gpus": 1,
                          "max_gpus": 16, "version": 0.1},
           "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}


def _as_each_library_hands_it() -> dict[str, dict]:
    from accelerate.utils import DeepSpeedPlugin

    lightning, kwargs, _ = lightning_export(ELASTIC, {"world_size": 1}, 1, version=RELEASE)
    # what DeepSpeedStrategy._format_batch_size_and_grad_accum_config writes before DeepSpeed reads it
    lightning = {**lightning, "gradient_accumulation_steps": kwargs.get("accumulate_grad_batches", 1)}
    accelerate = DeepSpeedPlugin(hf_ds_config=accelerate_export(ELASTIC, {"world_size": 1}, version=RELEASE)[0])
    config, args, _ = hf_trainer_export(ELASTIC, "auto", None, 1, RELEASE)
    hf = hf_resolve(config, full_values(per_device_train_batch_size=args["per_device_train_batch_size"],
                                        gradient_accumulation_steps=args["gradient_accumulation_steps"], bf16=True))
    return {"Lightning": lightning, "accelerate": accelerate.deepspeed_config, "HF Trainer": hf}


def test_each_export_says_it_turned_the_switch_on():
    for notes in (lightning_export(ELASTIC, {"world_size": 1}, 1, version=RELEASE)[2],
                  accelerate_export(ELASTIC, {"world_size": 1}, version=RELEASE)[1],
                  hf_trainer_export(ELASTIC, "auto", None, 1, RELEASE)[2]):
        assert any(note.startswith("elasticity.ignore_non_elastic_batch_info set to true") for note in notes)
    # where elasticity is not run (0.19.8 removed it) nothing is turned on
    assert "ignore_non_elastic_batch_info" not in lightning_export(
        {**ELASTIC, "train_micro_batch_size_per_gpu": 2}, {"world_size": 1}, 1, version="0.19.8")[0].get(
        "elasticity", {})


@pytest.mark.deepspeed
def test_the_release_takes_what_each_library_hands_it(monkeypatch):
    pytest.importorskip("accelerate")
    if (missing := oracle_available(RELEASE)) is not None:
        pytest.fail(missing)
    for name in ("ACCELERATE_CONFIG_DS_FIELDS", "ACCELERATE_DEEPSPEED_ZERO_STAGE"):
        monkeypatch.delenv(name, raising=False)
    for name, config in _as_each_library_hands_it().items():
        assert deepspeed_verdict(config, 1, RELEASE).accepted, (name, deepspeed_verdict(config, 1, RELEASE).describe())
        refused = {**config, "elasticity": {k: v for k, v in config["elasticity"].items()
                                            if k != "ignore_non_elastic_batch_info"}}
        assert "ElasticityConfigError" in deepspeed_verdict(refused, 1, RELEASE).describe() or not deepspeed_verdict(
            refused, 1, RELEASE).accepted, name


def test_a_removed_auto_the_scheduler_needs_is_not_called_defaulted():
    """A hunt: the note said "DeepSpeed's default applies" of WarmupDecayLR's total_num_steps, which has none
    (TypeError at initialize; the validator's scheduler.missing-param)."""
    import json

    from core import validate
    from core.presets import BUILTIN_DIR

    config = json.loads((BUILTIN_DIR / "hf-auto-zero2.json").read_text())["config"]
    out, notes = accelerate_export(config, {"world_size": 8, "hidden_size": 1024})
    said = {note.split("`")[1]: note for note in notes if note.startswith('Removed "auto"')}
    assert "deepspeed.initialize refuses the file" in said["scheduler.params.total_num_steps"]
    assert "DeepSpeed's default applies" in said["scheduler.params.warmup_num_steps"]
    missing = {f.path for f in validate(out, world_size=8).findings if f.code == "scheduler.missing-param"}
    assert missing == {"scheduler.params.total_num_steps"}
