"""core.export: minimal and explicit forms of a config, the diff against a baseline, launch snippets."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core
from core.export import (
    explicit_config,
    key_differences,
    launch_snippets,
    leaf_values,
    strip_defaults,
    unified_diff,
)
from core.presets import BUILTIN_DIR, list_presets
from core.schema import KNOWN_VERSIONS, DeepSpeedConfig
from core.schema.walk import resolve
from tests.fuzz_strategies import any_config

ROOT = Path(__file__).resolve().parents[1]
PRESETS = {p.name: p for p in list_presets([ROOT / "presets"])[0]}


def _errors(report) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in report.errors}


# ------------------------------------------------------------------ strip_defaults

@pytest.mark.parametrize("name", sorted(PRESETS))
def test_strip_defaults_keeps_the_verdict_of_every_preset(name):
    preset = PRESETS[name]
    stripped = strip_defaults(preset.config)
    full = core.validate(preset.config, world_size=8, target=preset.target)
    short = core.validate(stripped, world_size=8, target=preset.target)
    assert short.ok == full.ok
    assert full.batch == short.batch
    assert len(core.dump_config(stripped)) <= len(core.dump_config(preset.config))


def test_strip_defaults_drops_defaults_keeps_unknown_and_optional_sections():
    config = {"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": False}, "gradient_clipping": 1.0,
              "zero_optimization": {"stage": 0, "offload_param": {"device": "none"}}, "custom": None}
    assert strip_defaults(config) == {"train_micro_batch_size_per_gpu": 2,
                                      "zero_optimization": {"offload_param": {}}, "custom": None}


# ------------------------------------------------------------------ explicit_config

@pytest.mark.parametrize("name", sorted(PRESETS))
def test_explicit_config_of_every_preset_means_the_same(name):
    preset = PRESETS[name]
    for version in KNOWN_VERSIONS:
        explicit = explicit_config(preset.config, version=version)
        before = core.validate(preset.config, world_size=8, target=preset.target, version=version)
        after = core.validate(explicit, world_size=8, target=preset.target, version=version)
        assert _errors(after) <= _errors(before)
        assert {f.code for f in after.warnings} <= {f.code for f in before.warnings}
        assert after.batch == before.batch
        assert strip_defaults(explicit, version=version) == strip_defaults(preset.config, version=version)
        assert len(explicit) > len(preset.config)  # the top level always gains its defaults


def test_explicit_config_fills_present_sections_from_the_schema_only():
    config = {"fp16": {"enabled": True}, "zero_optimization": {"stage": 2}, "my_key": {"x": 1}}
    original = copy.deepcopy(config)
    out = explicit_config(config)
    assert config == original  # input untouched
    assert out["my_key"] == {"x": 1}
    # Every default of fp16 comes from the schema, none is lost, the written value stays.
    fp16 = resolve(DeepSpeedConfig, "fp16").model
    assert out["fp16"]["enabled"] is True
    assert out["fp16"]["loss_scale_window"] == resolve(DeepSpeedConfig, "fp16.loss_scale_window").default
    assert set(out["fp16"]) >= {f for f in fp16.model_fields if not fp16.model_fields[f].deprecated} - {
        f for f in fp16.model_fields if fp16.model_fields[f].default is None}
    # Absent sections are not added; stage-3 knobs are not written into a stage-2 file.
    assert "tensorboard" not in out and "bf16" not in out
    assert "offload_param" not in out["zero_optimization"]
    assert not any(k.startswith("stage3_") for k in out["zero_optimization"])
    assert "stage3_max_live_parameters" in explicit_config({"zero_optimization": {"stage": 3}})["zero_optimization"]


def test_explicit_config_keeps_values_under_either_spelling():
    config = {"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 5}}
    zero = explicit_config(config)["zero_optimization"]
    assert zero["stage3_max_live_parameters"] == 5
    assert "max_live_parameters" not in zero


def test_explicit_config_never_adds_a_key_deepspeed_refuses():
    # A deprecated key in use: its replacement is not added beside it (DeepSpeed refuses both together).
    zero = explicit_config({"zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": True}})
    assert "stage3_gather_16bit_weights_on_model_save" not in zero["zero_optimization"]
    assert "gather_16bit_weights_on_model_save" not in zero["zero_optimization"]
    # A default that JSON cannot express (DeepSpeed wants a torch.dtype) is left out; the rest is written.
    tp = explicit_config({"tensor_parallel": {"autotp_size": 2}})["tensor_parallel"]
    assert "dtype" not in tp and "tp_overlap_comm" in tp
    assert not core.validate(explicit_config({"tensor_parallel": {"autotp_size": 2},
                                              "train_micro_batch_size_per_gpu": 1}), world_size=2).errors


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=any_config, version=st.sampled_from(["0.16.0", "0.18.9", "0.19.8"]))
def test_explicit_then_strip_is_strip_for_any_config(config, version):
    """For each release's own defaults (gradient_clipping 0.0 before 0.19.3, 1.0 since)."""
    explicit = explicit_config(config, version=version)
    assert strip_defaults(explicit, version=version) == strip_defaults(config, version=version)
    json.dumps(explicit, allow_nan=False)  # still a JSON document


# ------------------------------------------------------------------ diff and snippets

def test_unified_diff_shows_the_changed_line_only():
    assert unified_diff({"a": 1}, {"a": 1}) == ""
    diff = unified_diff({"gradient_clipping": 1.0, "a": 1}, {"gradient_clipping": 0.3, "a": 1})
    assert '-  "gradient_clipping": 1.0,' in diff and '+  "gradient_clipping": 0.3,' in diff
    assert '"a": 1' not in [line[1:] for line in diff.splitlines() if line[:1] in "+-"]


@pytest.mark.parametrize(("nodes", "gpus", "stage"), [(1, 8, 2), (2, 4, 3), (16, 8, 1)])
def test_launch_snippets_follow_the_hardware(nodes, gpus, stage):
    snippets = launch_snippets({"nodes": nodes, "gpus_per_node": gpus}, stage, file_name="cfg.json")
    assert set(snippets) == {"deepspeed launcher", "HF Trainer", "accelerate launch", "Lightning"}
    launcher = snippets["deepspeed launcher"]
    assert f"--num_gpus {gpus}" in launcher and "--deepspeed_config cfg.json" in launcher
    assert ("--hostfile hostfile" in launcher) == (nodes > 1)
    assert (f"node{nodes} slots={gpus}" in launcher) == (nodes > 1)
    assert f"num_processes: {nodes * gpus}" in snippets["accelerate launch"]
    assert f"zero3_init_flag: {'true' if stage == 3 else 'false'}" in snippets["accelerate launch"]
    assert f"devices={gpus}, num_nodes={nodes}" in snippets["Lightning"]
    assert 'deepspeed="cfg.json"' in snippets["HF Trainer"]


def test_leaf_values_escapes_dotted_keys_and_keeps_lists_and_empty_sections_as_leaves():
    config = {"a": {"b.c": 1, "l": [1, {"x": 2}], "empty": {}}, "top": None}
    assert leaf_values(config) == {"a.b\\.c": 1, "a.l": [1, {"x": 2}], "a.empty": {}, "top": None}
    assert leaf_values({}) == {}


def test_key_differences_lists_changed_added_and_removed_leaves_with_types_distinguished():
    left = {"train_batch_size": 8, "bf16": {"enabled": True}, "gradient_clipping": 1, "x.y": {"z": "a"}}
    right = {"train_batch_size": 8, "bf16": {"enabled": 1}, "gradient_clipping": 1.0, "fp16": {"enabled": False}}
    assert key_differences(left, right) == [
        {"key": "bf16.enabled", "left": "true", "right": "1"},
        {"key": "fp16.enabled", "left": "—", "right": "false"},
        {"key": "gradient_clipping", "left": "1", "right": "1.0"},
        {"key": "x\\.y.z", "left": '"a"', "right": "—"},
    ]
    assert key_differences(left, copy.deepcopy(left)) == []


# ------------------------------------------------------------------ HF Trainer export, judged by transformers

def _trainer_accepts(config: dict, kwargs: dict, world_size: int = 8) -> dict:
    """What the HF Trainer does with the exported pair, with transformers' and accelerate's own code: construct the
    real ``TrainingArguments(deepspeed=config, **kwargs)`` (its ``__post_init__`` runs ``HfTrainerDeepSpeedConfig``
    + ``trainer_config_process`` and builds accelerate's ``DeepSpeedPlugin(hf_ds_config=...)``), then
    ``trainer_config_finalize`` with a model and the step count, as ``deepspeed_init`` does when training starts.
    Returns the config the Trainer hands to DeepSpeed; raises ValueError on a mismatch, like the Trainer.

    ``use_cpu``: this host has no GPU, and the arguments refuse bf16 on a GPU-less host unless told it is the CPU.
    ``world_size`` is a property of the launch (1 here without a launcher), patched to the planned GPU count."""
    import types
    from unittest import mock

    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")  # TrainingArguments with deepspeed= needs it, as in a real launch
    with mock.patch.object(transformers.TrainingArguments, "world_size", new=property(lambda self: world_size)):
        args = transformers.TrainingArguments(output_dir="out", deepspeed=copy.deepcopy(config), use_cpu=True,
                                              report_to="none", **kwargs)
        assert args.deepspeed_plugin is not None and args.deepspeed_plugin.hf_ds_config is args.hf_deepspeed_config
        model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=1024))
        steps = args.max_steps if args.max_steps > 0 else 1000
        args.hf_deepspeed_config.trainer_config_finalize(args, model, steps)
    given = dict(args.hf_deepspeed_config.config)
    given.pop("steps_per_print", None)  # accelerate's plugin silences DeepSpeed's logging with float("inf")
    return given


@pytest.mark.parametrize("version", ["0.18.9", "0.19.8"])
def test_the_explicit_hf_form_trains_where_the_written_one_does(version):
    """Review's "Explicit" download for the HF Trainer: a default written where the Trainer checks the file against
    TrainingArguments (gradient_clipping 0.0 up to 0.18.9, beside max_grad_norm 1.0) made it refuse to start."""
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "zero_optimization": {"stage": 2}, "bf16": {"enabled": "auto"}, "fp16": {"loss_scale": 0}}
    for max_grad_norm in (1.0, 0.3):
        kwargs = {"bf16": True, "max_grad_norm": max_grad_norm}
        _trainer_accepts(config, kwargs)
        explicit = explicit_config(config, version=version, target="hf")
        _trainer_accepts(explicit, kwargs)
        assert "gradient_clipping" not in explicit and "enabled" not in explicit["fp16"]
    assert "gradient_clipping" in explicit_config(config, version=version)  # plain DeepSpeed: every default


EDITED = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8,
          "gradient_clipping": 0.5, "bf16": {"enabled": True},
          "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                                                     "weight_decay": 0.1}},
          "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 12000, "warmup_num_steps": 300}},
          "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
ZERO_BOOL_HF = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": True, "bf16": {"enabled": True}}
PEAK_DIFFERS = {"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}},
                "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 2e-4, "warmup_num_steps": 10}}}


@pytest.mark.parametrize("mode", ["auto", "match"])
@pytest.mark.parametrize("config", [*(p.config for p in list_presets([BUILTIN_DIR])[0]), EDITED, PEAK_DIFFERS,
                                    ZERO_BOOL_HF],
                         ids=[*(p.name for p in list_presets([BUILTIN_DIR])[0]), "edited", "peak-differs", "zero-bool"])
def test_hf_export_is_accepted_by_the_trainer_and_trains_the_same(config, mode):
    from core.autofill import find_auto
    from core.export import hf_trainer_export

    # the config as written: the Trainer refuses any explicit value that its defaults contradict
    out, kwargs, notes = hf_trainer_export(config, mode)
    given = _trainer_accepts(out, kwargs)
    assert find_auto(given) == [], "the Trainer fills every auto"
    missing = object()
    for path in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping",
                 "optimizer.params.lr", "optimizer.params.betas", "optimizer.params.weight_decay",
                 "scheduler.params.total_num_steps", "scheduler.params.warmup_num_steps", "bf16.enabled"):
        before = core.findings.get_path(config, path, missing)
        if before is missing or before == "auto":
            continue
        if config is PEAK_DIFFERS and path == "optimizer.params.lr":
            continue  # WarmupLR overwrites it from the first step: the rates DeepSpeed trains are compared below
        after = core.findings.get_path(given, path)
        assert after == before and type(after) is type(before), (path, before, after)
    if config is PEAK_DIFFERS:
        # the Trainer trained up to 1e-4 (the optimizer's lr) where DeepSpeed trains up to warmup_max_lr 2e-4
        assert given["scheduler"]["params"]["warmup_max_lr"] == 2e-4 == kwargs["learning_rate"] and notes
        assert _deepspeed_rates(given) == _deepspeed_rates(config)
    if mode == "auto":
        assert all(core.findings.get_path(out, p, missing) in ("auto", missing)
                   for p in ("train_micro_batch_size_per_gpu", "optimizer.params.lr", "bf16.enabled"))


def _deepspeed_rates(config: dict, steps: int = 30) -> list[float]:
    """The learning rates the installed DeepSpeed's own scheduler class sets for ``config``'s optimizer lr and
    scheduler, step by step (the scheduler writes its rate into the optimizer when it is built)."""
    import torch
    from deepspeed.runtime import lr_schedules

    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=config["optimizer"]["params"]["lr"])
    scheduler = getattr(lr_schedules, config["scheduler"]["type"])(optimizer, **config["scheduler"]["params"])
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        scheduler.step()
    return rates


LAX = {"train_micro_batch_size_per_gpu": 4.0, "gradient_accumulation_steps": 2.0, "bf16": {"enabled": 1},
       "zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}},
       "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000.0, "warmup_num_steps": 10.0}}}


@pytest.mark.parametrize("mode", ["auto", "match"])
@pytest.mark.parametrize("config", [LAX, {**LAX, "bf16": {"enabled": "true"}}, {**LAX, "bf16": {"enabled": "off"},
                                                                                 "fp16": {"enabled": "yes"}}],
                         ids=["one", "true-string", "fp16-yes"])
def test_hf_export_of_values_deepspeed_reads_laxly_trains_the_same(config, mode):
    """bf16 enabled 1 (pydantic's lax bool) was exported as "auto" without bf16=True: the Trainer filled false and
    trained in fp32; a micro batch of 4.0 became "auto" without per_device_train_batch_size: the Trainer's 8. In
    "match" mode the Trainer refused them. The pair must train as DeepSpeed reads the config as written."""
    from core.effective import effective
    from core.export import hf_trainer_export

    out, kwargs, notes = hf_trainer_export(config, mode)
    given = _trainer_accepts(out, kwargs)
    before, after = effective(config), effective(given)
    assert (after.fp16, after.bf16) == (before.fp16, before.bf16)
    assert (given["train_micro_batch_size_per_gpu"], given["gradient_accumulation_steps"]) == (4, 2)
    assert given["scheduler"]["params"]["total_num_steps"] == 1000
    if mode == "match":
        assert any("the form the HF Trainer compares" in n for n in notes)


WARMUP_SCHEDULERS = ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR")


def _no_warmup_params(scheduler: str, warmup: int) -> dict:
    return {"warmup_num_steps": warmup, **({"total_num_steps": 100} if scheduler != "WarmupLR" else {})}


@functools.cache
def _warmup_curves(release: str = "0.18.9") -> dict[str, list[list[float]]]:
    """Per warm-up scheduler, the first 20 learning rates of DeepSpeed ``release``'s own scheduler with
    warmup_num_steps 0 and with 1 (0.18.9 takes 0; one interpreter for all six)."""
    import os
    import subprocess

    from tests.oracle.oracle import release_interpreter

    cases = {name: [_no_warmup_params(name, w) for w in (0, 1)] for name in WARMUP_SCHEDULERS}
    python, env = release_interpreter(release)
    code = ("import json, sys, logging, torch; logging.disable(logging.CRITICAL)\n"
            "from deepspeed.runtime import lr_schedules\n"
            "def curve(name, params):\n"
            "    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-4)\n"
            "    s = getattr(lr_schedules, name)(opt, **params)\n"
            "    rates = []\n"
            "    for _ in range(20):\n"
            "        rates.append(s.get_lr()[0]); s.step()\n"
            "    return rates\n"
            "cases = json.loads(sys.argv[1])\n"
            "print(json.dumps({n: [curve(n, p) for p in ps] for n, ps in cases.items()}))")
    done = subprocess.run([python, "-c", code, json.dumps(cases)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["auto", "match"])
@pytest.mark.parametrize("scheduler", WARMUP_SCHEDULERS)
def test_hf_export_of_no_warmup_is_accepted_and_warms_up_as_deepspeed_did(scheduler, mode):
    """warmup_num_steps 0 (valid up to 0.19.5): the Trainer fills and compares max(1, warmup_steps), so "match" was
    refused; DeepSpeed's schedulers warm up over max(2, n) steps, so the 1 they now get is the same schedule."""
    from core.export import hf_trainer_export

    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
              "scheduler": {"type": scheduler, "params": _no_warmup_params(scheduler, 0)}}
    out, kwargs, notes = hf_trainer_export(config, mode)
    given = _trainer_accepts(out, kwargs)
    assert given["scheduler"]["params"]["warmup_num_steps"] == 1
    assert any("warmup_num_steps 0 is written as 1" in n for n in notes) == (mode == "match")
    with_zero, with_one = _warmup_curves()[scheduler]
    assert with_zero == with_one


def test_the_old_hf_snippet_was_refused_by_the_trainer():
    # what the export wrote before: the config as it is, TrainingArguments without the values
    with pytest.raises(ValueError, match="mismatch"):
        _trainer_accepts(EDITED, {})


def test_hf_snippet_names_every_argument():
    from core.export import hf_trainer_export, launch_snippets

    snippet = launch_snippets({"nodes": 1, "gpus_per_node": 8}, 3, config=EDITED, hf_mode="match")["HF Trainer"]
    for name, value in hf_trainer_export(EDITED, "match")[1].items():
        assert f"{name}={value!r}," in snippet
    assert "max_steps=12000," in snippet and "per_device_train_batch_size=4," in snippet


def test_hf_export_passes_the_planned_trainer_batch_for_auto():
    from core.export import hf_trainer_export

    config = next(p.config for p in list_presets([BUILTIN_DIR])[0] if p.name == "hf-auto-zero3")
    out, kwargs, _ = hf_trainer_export(config, "auto", {"per_device_train_batch_size": 2,
                                                        "gradient_accumulation_steps": 4})
    given = _trainer_accepts(out, kwargs, world_size=8)
    assert (given["train_micro_batch_size_per_gpu"], given["gradient_accumulation_steps"],
            given["train_batch_size"]) == (2, 4, 64)


@pytest.mark.parametrize("mode", ["auto", "match"])
def test_hf_export_of_a_config_without_a_scheduler_keeps_the_learning_rate_constant(mode):
    """DeepSpeed without a scheduler keeps the rate constant; transformers' deepspeed_optim_sched builds the
    Trainer's own scheduler in its place (lr_scheduler_type, "linear" by default), so the export passes
    "constant", and the Trainer's scheduler then keeps the rate."""
    import torch

    transformers = pytest.importorskip("transformers")
    from core.export import hf_trainer_export

    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    out, kwargs, notes = hf_trainer_export(config, mode, world_size=1)
    assert "scheduler" not in _trainer_accepts(out, kwargs, world_size=1)  # the Trainer builds its own
    args = transformers.TrainingArguments(output_dir="out", use_cpu=True, report_to="none", max_steps=100, **kwargs)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-4)
    scheduler = transformers.get_scheduler(args.lr_scheduler_type, optimizer,
                                           num_warmup_steps=args.get_warmup_steps(100), num_training_steps=100)
    rates = []
    for _ in range(100):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates == [1e-4] * 100
    assert any("constant" in note for note in notes)
    with_scheduler = {**config, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}
    assert "lr_scheduler_type" not in hf_trainer_export(with_scheduler, mode, world_size=1)[1]


def test_hf_export_adds_the_zero_section_accelerate_requires():
    from core.export import hf_trainer_export

    config = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}}
    with pytest.raises(ValueError, match="ZeRO optimization config"):
        _trainer_accepts(config, {"per_device_train_batch_size": 2, "bf16": True})  # as written: refused
    out, kwargs, notes = hf_trainer_export(config, "match")
    assert out["zero_optimization"] == {"stage": 0} and any("zero_optimization" in n for n in notes)
    assert _trainer_accepts(out, kwargs)["train_micro_batch_size_per_gpu"] == 2


# ------------------------------------------------------------------ accelerate and Lightning, judged by their code

LAUNCH_CONTEXT = {"nodes": 2, "gpus_per_node": 4, "train_steps": 1000, "model_config": {"hidden_size": 1024}}
PLANNED_TRAINER = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}
NO_ZERO = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
#: Only the global batch (DeepSpeed derives 2 x 1 on 8 GPUs) and a lax bool: the exports held the batch to the HF
#: Trainer's default 8 ("cannot be resolved", the bucket "auto" left for the launcher), and Lightning ran fp32.
BATCH_ONLY = {"train_batch_size": 16, "bf16": {"enabled": 1},
              "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
#: the deprecated boolean form, stage 1 to DeepSpeed: the HF Trainer, accelerate and Lightning call .get on it
ZERO_BOOL = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "zero_optimization": True,
             "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
#: an "auto" stage: accelerate fills it from `accelerate config`, the HF Trainer's Accelerate with 2
AUTO_STAGE = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": "auto", "offload_optimizer": {"device": "auto"}}}
LAUNCH_CASES = [*(p.config for p in list_presets([BUILTIN_DIR])[0]), EDITED, PEAK_DIFFERS, NO_ZERO, BATCH_ONLY,
                ZERO_BOOL, AUTO_STAGE]
LAUNCH_IDS = [*(p.name for p in list_presets([BUILTIN_DIR])[0]), "edited", "peak-differs", "no-zero", "batch-only",
              "zero-bool", "auto-stage"]


@pytest.mark.parametrize("accelerate_stage", [None, "3"])
def test_the_accelerate_file_leaves_the_stage_to_accelerate_config(accelerate_stage, monkeypatch):
    """accelerate fills an "auto" stage and offload device from `accelerate config`; the exported file wrote the
    HF Trainer's 2 (resolve_auto now fills Accelerate's default), which would override a configured stage 3."""
    pytest.importorskip("accelerate")
    from accelerate.utils import DeepSpeedPlugin

    from core.export import accelerate_export, launch_values

    for name in [n for n in os.environ if n.startswith("ACCELERATE_")]:
        monkeypatch.delenv(name)
    if accelerate_stage:
        monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", accelerate_stage)
    out, notes = accelerate_export(AUTO_STAGE, launch_values(LAUNCH_CONTEXT, PLANNED_TRAINER))
    assert out["zero_optimization"] == {"stage": "auto", "offload_optimizer": {"device": "auto"}}
    assert not any("zero_optimization.stage" in note for note in notes)
    plugin = DeepSpeedPlugin(hf_ds_config=copy.deepcopy(out))
    assert plugin.deepspeed_config["zero_optimization"]["stage"] == int(accelerate_stage or 2)


#: an "auto" stage, offload device and 16-bit save next to an "auto" bucket size, exported before a model is chosen
AUTO_STAGE_AND_BUCKET = {**AUTO_STAGE, "zero_optimization": {
    **AUTO_STAGE["zero_optimization"], "reduce_bucket_size": "auto",
    "stage3_gather_16bit_weights_on_model_save": "auto"}}


@pytest.mark.parametrize("accelerate_stage", [None, "3"])
def test_without_a_model_only_the_hidden_size_buckets_lose_their_auto(accelerate_stage, monkeypatch):
    """An "auto" bucket size needs the model's hidden size; the exports used to remove every "auto" of the ZeRO
    section with it, the stage included, so DeepSpeed ran ZeRO stage 0 where accelerate would fill 2 or 3."""
    pytest.importorskip("accelerate")
    from accelerate.utils import DeepSpeedPlugin

    from core.export import accelerate_export, launch_values, lightning_export

    for name in [n for n in os.environ if n.startswith("ACCELERATE_")]:
        monkeypatch.delenv(name)
    if accelerate_stage:
        monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", accelerate_stage)
    values = launch_values({k: v for k, v in LAUNCH_CONTEXT.items() if k != "model_config"}, PLANNED_TRAINER)
    assert "hidden_size" not in values
    out, notes = accelerate_export(AUTO_STAGE_AND_BUCKET, values)
    assert out["zero_optimization"] == {"stage": "auto", "offload_optimizer": {"device": "auto"},
                                        "stage3_gather_16bit_weights_on_model_save": "auto"}
    assert [n for n in notes if "needs hidden_size" in n] == [
        'Removed "auto" `zero_optimization.reduce_bucket_size` (it needs hidden_size, which the app does not know): '
        "DeepSpeed's default applies."]
    plugin = DeepSpeedPlugin(hf_ds_config=copy.deepcopy(out))
    assert plugin.deepspeed_config["zero_optimization"]["stage"] == int(accelerate_stage or 2)
    lightning, _, _ = lightning_export(AUTO_STAGE_AND_BUCKET, values, 8)
    assert lightning["zero_optimization"] == {"stage": 2, "offload_optimizer": {"device": "none"},
                                              "stage3_gather_16bit_weights_on_model_save": False}


def test_without_a_step_count_only_the_scheduler_step_counts_lose_their_auto():
    """"auto" learning rates come from the Trainer's learning rate, not from the number of steps."""
    from core.export import lightning_export

    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
              "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_max_lr": "auto", "warmup_min_lr": "auto",
                                                                "total_num_steps": "auto", "warmup_num_steps": "auto"}}}
    out, _, notes = lightning_export(config, {"world_size": 8}, 8)
    assert out["scheduler"]["params"] == {"warmup_max_lr": 5e-05, "warmup_min_lr": 0}
    assert sum("needs num_training_steps" in n for n in notes) == 2


def test_an_auto_precision_trains_in_the_precision_the_estimate_assumed():
    """bf16.enabled "auto" is estimated as bf16 ("as if --bf16 is passed"), but the Accelerate and Lightning files
    wrote the HF Trainer's default, false: the job trained in fp32 with 58% more GPU memory than the app showed.
    Both now write it on (accelerate with deepspeed_config_file refuses a mixed_precision of its own, so the file
    must say it), and Lightning's Trainer precision matches."""
    pytest.importorskip("accelerate")
    from accelerate.utils import DeepSpeedPlugin

    from core.export import accelerate_export, launch_values, lightning_export
    from core.memory import Hardware, Shape, estimate
    from core.models import get_spec

    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": "auto"},
              "zero_optimization": {"stage": 2}}
    values = launch_values({"nodes": 1, "gpus_per_node": 8}, {})
    accelerate, notes = accelerate_export(config, values)
    lightning, kwargs, _ = lightning_export(config, values, 8)
    assert accelerate["bf16"] == lightning["bf16"] == {"enabled": True} and kwargs["precision"] == "bf16-mixed"
    assert any("`bf16.enabled` = true" in note for note in notes)
    plugin = DeepSpeedPlugin(hf_ds_config=copy.deepcopy(accelerate))
    assert plugin.deepspeed_config["bf16"]["enabled"] is True
    model = get_spec("meta-llama/Llama-3.2-1B")
    sizes = {estimate(c, model, Hardware(8, 1), Shape(4, 2048)).gpu_bytes for c in (config, accelerate, lightning)}
    assert len(sizes) == 1  # one reading: the exported job needs what the app showed
    off = {**config, "bf16": {"enabled": False}}
    assert accelerate_export(off, values)[0]["bf16"] == {"enabled": False}


def _exported_files(config: dict, tmp_path: Path) -> dict[str, str]:
    """Write every file the launch tabs offer into ``tmp_path`` under the names the snippets use; the snippets."""
    from core.export import accelerate_export, launch_values, lightning_export, variant_name

    snippets = launch_snippets(LAUNCH_CONTEXT, 0, config=config, trainer_values=PLANNED_TRAINER)
    values = launch_values(LAUNCH_CONTEXT, PLANNED_TRAINER)
    (tmp_path / "ds_config.json").write_text(core.dump_config(config))
    (tmp_path / variant_name("ds_config.json", "accelerate")).write_text(
        core.dump_config(accelerate_export(config, values)[0]))
    (tmp_path / variant_name("ds_config.json", "lightning")).write_text(
        core.dump_config(lightning_export(config, values, 8)[0]))
    # the hostfile the deepspeed launcher's snippet writes (a heredoc), which the other multi-node launches read
    written = re.search(r"cat > (\S+) <<'EOF'\n(.*?)\nEOF\n", snippets["deepspeed launcher"], re.S)
    (tmp_path / written[1]).write_text(written[2] + "\n")
    return snippets


def _deepspeed_runner_ranks(command: list[str]) -> int:
    """How many ranks DeepSpeed's own launcher (``deepspeed.launcher.runner``) starts for ``deepspeed ARGS``, read
    with its argument parser, ``fetch_hostfile`` and its node and GPU filters; 0 when it finds no hostfile."""
    from deepspeed.launcher.runner import fetch_hostfile, parse_args, parse_inclusion_exclusion

    args = parse_args([*command[1:], "train.py"])
    pool = fetch_hostfile(args.hostfile)
    if not pool:
        return 0
    active = parse_inclusion_exclusion(pool, args.include, args.exclude)
    if args.num_nodes > 0:
        active = dict(list(active.items())[:args.num_nodes])
    return sum(min(len(slots), args.num_gpus) if args.num_gpus > 0 else len(slots) for slots in active.values())


@pytest.mark.deepspeed
def test_every_multi_node_launch_starts_every_node(tmp_path, monkeypatch):
    """A hunt: on 2 nodes the accelerate file had no hostfile (accelerate handed DeepSpeed's launcher
    `--hostfile None`, which trains on the local node only) and the HF launch line started one node."""
    snippets = _exported_files(NO_ZERO, tmp_path)
    monkeypatch.chdir(tmp_path)
    world = LAUNCH_CONTEXT["nodes"] * LAUNCH_CONTEXT["gpus_per_node"]
    for name in ("deepspeed launcher", "HF Trainer"):
        line = next(line for line in snippets[name].splitlines() if "deepspeed --" in line)
        command = line.split("deepspeed ", 1)[1].split(" train.py")[0].rstrip(" \\").split()
        assert _deepspeed_runner_ranks(["deepspeed", *command]) == world, (name, line)


@pytest.mark.deepspeed
@pytest.mark.parametrize("config", LAUNCH_CASES, ids=LAUNCH_IDS)
def test_accelerate_snippet_is_accepted_by_accelerate_launch(config, tmp_path, monkeypatch):
    """The accelerate.yaml of the snippet goes through accelerate's own launcher code (parser, validation, the
    environment ``deepspeed_launcher`` builds), then the training process's ``DeepSpeedPlugin()`` reads it; the
    config it hands DeepSpeed has no "auto" left and DeepSpeed's own parser accepts it at the launch's GPU count."""
    pytest.importorskip("accelerate")
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    from core.autofill import find_auto
    from tests.oracle.oracle import deepspeed_verdict

    snippet = _exported_files(config, tmp_path)["accelerate launch"]
    yaml_text, command = snippet.split("\n\n")
    (tmp_path / "accelerate.yaml").write_text(yaml_text.split("\n", 1)[1] + "\n")
    assert command == "accelerate launch --config_file accelerate.yaml train.py"
    monkeypatch.chdir(tmp_path)
    args = launch_command_parser().parse_args(command.split()[2:])
    args, defaults, mixed_precision_from_config = _validate_launch_command(args)
    assert args.use_deepspeed and args.num_processes == 8 and args.num_machines == 2
    # what accelerate's launch_command does before deepspeed_launcher
    fields = list(defaults.deepspeed_config) + ["mixed_precision"] * bool(mixed_precision_from_config)
    args.deepspeed_fields_from_accelerate_config = ",".join(fields)
    runner, env = prepare_deepspeed_cmd_env(args)
    assert _deepspeed_runner_ranks(runner[:runner.index("train.py")]) == args.num_processes, runner
    for name, value in env.items():
        if name.startswith("ACCELERATE_"):
            monkeypatch.setenv(name, value)
    plugin = DeepSpeedPlugin()
    given = {k: v for k, v in plugin.deepspeed_config.items() if k != "steps_per_print"}
    assert find_auto(given) == []
    assert plugin.zero3_init_flag == (plugin.zero_stage == 3)
    verdict = deepspeed_verdict(given, world_size=8)
    assert verdict.accepted, verdict.describe()
    for path in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "optimizer.params.lr"):
        before = core.findings.get_path(config, path, None)
        if before is not None and before != "auto":
            assert core.findings.get_path(given, path) == before


@pytest.mark.deepspeed
@pytest.mark.parametrize("config", LAUNCH_CASES, ids=LAUNCH_IDS)
def test_lightning_snippet_is_accepted_by_lightning(config, tmp_path, monkeypatch):
    """The Lightning snippet's Trainer arguments and file go into a real ``lightning.pytorch.Trainer`` with
    ``DeepSpeedStrategy(config=<file>)`` (on the CPU: this host has no GPU), whose ``_format_config`` (the first
    step of its setup) must accept them; DeepSpeed's own parser accepts the config it then holds."""
    pl = pytest.importorskip("lightning.pytorch")
    import ast

    import torch
    from lightning.pytorch.strategies import DeepSpeedStrategy

    from core.autofill import find_auto
    from tests.oracle.oracle import deepspeed_verdict

    snippet = _exported_files(config, tmp_path)["Lightning"]
    call = ast.parse(snippet).body[2].value  # trainer = Trainer(...)
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg != "strategy"}
    strategy_call = next(k.value for k in call.keywords if k.arg == "strategy")
    file_name = ast.literal_eval(strategy_call.keywords[0].value)
    assert kwargs.pop("accelerator") == "gpu" and kwargs.pop("devices") * kwargs.pop("num_nodes") == 8
    monkeypatch.chdir(tmp_path)

    class Tiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)

    trainer = pl.Trainer(accelerator="cpu", devices=1, strategy=DeepSpeedStrategy(config=file_name), logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, **kwargs)
    model = Tiny()
    trainer.strategy.connect(model)
    model.trainer = trainer
    trainer.strategy._format_config()
    given = trainer.strategy.config
    assert find_auto(given) == []
    verdict = deepspeed_verdict(given, world_size=8)
    assert verdict.accepted, verdict.describe()
    if isinstance(config.get("gradient_accumulation_steps"), int):
        assert given["gradient_accumulation_steps"] == config["gradient_accumulation_steps"]
    if config is BATCH_ONLY:
        assert kwargs["precision"] == "bf16-mixed" and given["train_micro_batch_size_per_gpu"] == 2
    # Lightning writes its gradient_clip_val (0.0 unless set) where the config has no clipping: the export keeps
    # what DeepSpeed would clip at (the config's number, else its default 1.0)
    clip = config.get("gradient_clipping")
    assert given["gradient_clipping"] == (clip if isinstance(clip, int | float) else 1.0)


@pytest.mark.deepspeed
def test_the_old_lightning_snippet_was_refused_by_lightning(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.fabric.utilities.exceptions import MisconfigurationException
    from lightning.pytorch.strategies import DeepSpeedStrategy

    trainer = pl.Trainer(accelerator="cpu", devices=1, strategy=DeepSpeedStrategy(config=dict(EDITED)),
                         logger=False, enable_checkpointing=False, enable_progress_bar=False)
    model = pl.LightningModule()
    trainer.strategy.connect(model)
    model.trainer = trainer
    with pytest.raises(MisconfigurationException, match="gradient_accumulation_steps"):
        trainer.strategy._format_config()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=any_config)
def test_launch_exports_never_raise_and_stay_json(config):
    from core.export import accelerate_export, hf_trainer_export, launch_values, lightning_export

    values = launch_values(LAUNCH_CONTEXT, PLANNED_TRAINER)
    launch_snippets(LAUNCH_CONTEXT, 0, config=config, trainer_values=PLANNED_TRAINER)
    for out in (accelerate_export(config, values)[0], lightning_export(config, values, 8)[0],
                hf_trainer_export(config, "auto", PLANNED_TRAINER)[0]):
        json.dumps(out, allow_nan=False)


@pytest.mark.parametrize("config", LAUNCH_CASES, ids=LAUNCH_IDS)
def test_launcher_exports_are_the_exports_and_give_the_same_snippets(config):
    """``launcher_exports`` (what the Review page computes once) is each launcher's own export, and snippets
    drawn from it are the snippets computed from the config."""
    from core.export import (
        HF_MODES,
        accelerate_export,
        hf_trainer_export,
        launch_values,
        launcher_exports,
        lightning_export,
    )

    values = launch_values(LAUNCH_CONTEXT, PLANNED_TRAINER)
    for mode in HF_MODES:
        exports = launcher_exports(config, LAUNCH_CONTEXT, mode, PLANNED_TRAINER)
        assert exports.hf == hf_trainer_export(config, mode, PLANNED_TRAINER, 8)
        assert exports.accelerate == accelerate_export(config, values)
        assert exports.lightning == lightning_export(config, values, 8)
        assert launch_snippets(LAUNCH_CONTEXT, 0, config=config, hf_mode=mode, trainer_values=PLANNED_TRAINER,
                               exports=exports) == launch_snippets(LAUNCH_CONTEXT, 0, config=config, hf_mode=mode,
                                                                   trainer_values=PLANNED_TRAINER)


@pytest.mark.parametrize(("nodes", "gpus", "world"), [(1, 8, 8), (4, 8, 32), (3, 2, 6), (0, 8, 8), (None, 4, 4)])
def test_one_gpu_count_for_every_launcher(nodes, gpus, world):
    """The GPU count the snippets print, the one Lightning's file is derived at and the one the sidebar shows
    are one computation (``job_world_size``); a missing or zero count reads as 1."""
    from core.launchers import job_world_size, launch_values, launcher_exports

    context = LAUNCH_CONTEXT | {"nodes": nodes, "gpus_per_node": gpus}
    assert job_world_size(context) == world == launch_values(context)["world_size"]
    config = {"train_batch_size": 4 * 3 * world, "train_micro_batch_size_per_gpu": 4}
    _, lightning_args, _ = launcher_exports(config, context).lightning
    assert lightning_args["accumulate_grad_batches"] == 3
    if nodes:
        assert f"num_processes: {world}" in launch_snippets(context, 0, config=config)["accelerate launch"]


def test_lightning_export_never_passes_an_unresolved_auto_to_the_trainer():
    """When "auto" cannot be resolved (the training values disagree with train_batch_size), the accumulation "auto"
    is not handed to Lightning's accumulate_grad_batches, which needs a whole number; a note says to set it."""
    from core.export import lightning_export

    config = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "zero_optimization": {"stage": 2}}
    values = {"world_size": 8, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}
    out, kwargs, notes = lightning_export(config, values, 8)
    assert "auto" not in kwargs.values() and "gradient_accumulation_steps" not in out
    assert any("accumulate_grad_batches" in note and "could not be resolved" in note for note in notes)


def test_hf_export_of_a_config_with_only_train_batch_size_says_the_trainer_default_batch_replaces_it():
    """{"train_batch_size": 400} alone: the export makes it "auto" and no argument carries a batch, so the Trainer
    trains with its default per-device batch (64 on 8 GPUs, checked with transformers' own code); a note says so."""
    from core.export import hf_trainer_export

    config = {"train_batch_size": 400, "zero_optimization": {"stage": 1}}
    out, kwargs, notes = hf_trainer_export(config, "match")
    assert _trainer_accepts(out, kwargs)["train_batch_size"] == 64  # not 400: what the note must warn about
    assert any("train_batch_size 400" in note and "per_device_train_batch_size" in note for note in notes)
    planned = hf_trainer_export(config, "match", {"per_device_train_batch_size": 50})[2]
    assert not any("train_batch_size 400" in note for note in planned)


def test_minimal_export_keeps_a_section_whose_presence_matters():
    """A bf16 section of defaults shadows the legacy bfloat16 (DeepSpeed reads bfloat16 only when bf16 is
    absent): dropping it turned bf16 training on. comms_logger is read by presence (comms_logger_enabled)."""
    shadowed = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": False}, "bfloat16": {"enabled": True}}
    assert strip_defaults(shadowed) == shadowed
    assert strip_defaults({"bf16": {"enabled": False}, "fp16": {"enabled": False}}) == {}
    assert strip_defaults({"comms_logger": {"enabled": False, "verbose": False}}) == {"comms_logger": {}}
    # the file's key order survives a section put back
    assert list(strip_defaults({"bfloat16": {"enabled": True}, "gradient_clipping": 1.0, "bf16": {}})) == [
        "bfloat16", "bf16"]


def test_launcher_exports_follow_the_batch_deepspeed_derives():
    from core.export import accelerate_export, launch_values

    out, notes = accelerate_export(BATCH_ONLY, launch_values(LAUNCH_CONTEXT))
    assert not any("cannot be resolved" in n for n in notes), notes
    assert out["train_batch_size"] == 16 and out["zero_optimization"]["reduce_bucket_size"] == 1024 * 1024


@pytest.mark.parametrize("config", [{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2},
                                    {"train_batch_size": 32},
                                    {"train_batch_size": 32, "gradient_accumulation_steps": 2}, BATCH_ONLY],
                         ids=["micro-written", "batch-only", "accum-written", "batch-only-lax-bf16"])
@pytest.mark.parametrize("mode", ["auto", "match"])
def test_hf_export_on_a_gpu_count_trains_the_global_batch_deepspeed_derives(config, mode):
    """train_batch_size 32 and a micro batch of 2 on 8 GPUs is accumulation 2 to DeepSpeed; the export made the
    global batch "auto" and passed only per_device_train_batch_size=2, so the Trainer (accumulation 1) trained a
    batch of 16. Judged by transformers' own code on the same GPU count."""
    from core.batch import batch_run
    from core.launchers import launcher_exports
    from core.schema.base import DEFAULT_VERSION
    from tests.oracle.oracle import deepspeed_verdict

    out, kwargs, notes = launcher_exports(config, {"nodes": 2, "gpus_per_node": 4}, mode).hf
    given = _trainer_accepts(out, kwargs, world_size=8)
    assert given["train_batch_size"] == batch_run(dict(config), 8, DEFAULT_VERSION)[0] == config["train_batch_size"]
    assert any("what DeepSpeed derives from train_batch_size" in note for note in notes)
    assert deepspeed_verdict(given, world_size=8).accepted


def test_hf_export_with_sequence_parallelism_trains_the_global_batch_and_says_what_the_trainer_needs():
    """sequence_parallel_size 2 on 8 GPUs: DeepSpeed counts 4 data-parallel ranks. The Trainer computes
    train_batch_size over all 8 processes; accelerate replaces it (``Accelerator._prepare_deepspeed``) by micro ×
    accumulation × ``ParallelismConfig.data_parallel_size`` when the snippet's ParallelismConfig is passed."""
    from accelerate.utils import ParallelismConfig

    from core.launchers import launch_snippets, launcher_exports
    from tests.oracle.oracle import deepspeed_verdict

    config = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2,
              "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    context = {"nodes": 1, "gpus_per_node": 8}
    out, kwargs, notes = launcher_exports(config, context).hf
    assert kwargs["per_device_train_batch_size"] == 2 and kwargs["gradient_accumulation_steps"] == 4
    assert any("ParallelismConfig(sp_backend" in note for note in notes)
    given = _trainer_accepts(out, kwargs, world_size=8)
    assert not deepspeed_verdict(given, world_size=8).accepted  # the Trainer's own 64 alone: DeepSpeed refuses
    snippet = launch_snippets(context, 2, config=config)["HF Trainer"]
    line = next(line.strip().removesuffix(",") for line in snippet.splitlines() if "parallelism_config=" in line)
    parallelism = eval(line.partition("=")[2], {"ParallelismConfig": ParallelismConfig})  # noqa: S307 - our snippet
    given["train_batch_size"] = (given["train_micro_batch_size_per_gpu"] * given["gradient_accumulation_steps"]
                                 * parallelism.data_parallel_size)  # accelerate's last-moment correction
    assert given["train_batch_size"] == 32 and deepspeed_verdict(given, world_size=8).accepted
    yaml_text = launch_snippets(context, 2, config=config)["accelerate launch"]
    assert "parallelism_config_sp_size: 2" in yaml_text and "parallelism_config_dp_replicate_size: 4" in yaml_text
    assert "ParallelismConfig" not in launch_snippets(context, 2, config={**config, "sequence_parallel_size": 1})[
        "HF Trainer"]


@pytest.mark.parametrize(("accum", "kwargs", "said"), [
    (4.0, {"accumulate_grad_batches": 4}, "gradient_accumulation_steps 4 is passed"),
    (True, {}, "gradient_accumulation_steps true could not be resolved"),
    ("4", {}, 'gradient_accumulation_steps "4" could not be resolved'),
])
def test_lightning_gets_a_whole_accumulation_and_notes_quote_json(accum, kwargs, said):
    """The Lightning tab said "gradient_accumulation_steps '4' could not be resolved" and wrote
    accumulate_grad_batches=True into the snippet."""
    from core.launchers import lightning_export

    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": accum,
              "zero_optimization": {"stage": 1}}
    _, given, notes = lightning_export(config, {"world_size": 8}, 8)
    assert given == kwargs and type(given.get("accumulate_grad_batches", 0)) is int
    assert any(said in note for note in notes), notes


@pytest.mark.parametrize(("config", "varied"), [
    ({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": "true"}, "zero_optimization": {"stage": 2}},
     [{"bf16": True}, {"bf16": False}]),
    ({**PEAK_DIFFERS, "zero_optimization": {"stage": 2}}, [{"learning_rate": 1e-4}, {"learning_rate": 2e-4}]),
])
def test_hf_never_matches_is_what_the_real_trainer_refuses_whatever_its_arguments(config, varied):
    """hf.never-matches (validator, target hf): transformers refuses the config with each TrainingArguments value
    that could match, and its fix ("auto") gives a config the Trainer takes with one of them."""
    finding = next(f for f in core.validate(config, world_size=8, target="hf").errors
                   if f.code == "hf.never-matches")
    arguments = {"per_device_train_batch_size": 2, "warmup_steps": 10}
    refused = r"- ds (bf16\.enabled|optimizer\.params\.lr|scheduler\.params\.warmup_max_lr)="
    for value in varied:
        with pytest.raises(ValueError, match=refused):
            _trainer_accepts(config, {**arguments, **value})
    fixed = finding.fix.apply(copy.deepcopy(config))
    assert "hf.never-matches" not in core.validate(fixed, world_size=8, target="hf").codes()
    assert _trainer_accepts(fixed, {**arguments, **varied[-1]})
    if "scheduler" in config:  # WarmupLR trains up to warmup_max_lr: the fix keeps that, not the optimizer's lr
        assert _deepspeed_rates(_trainer_accepts(fixed, {**arguments, **varied[-1]})) == _deepspeed_rates(config)


@pytest.mark.parametrize("model", [
    {"model_type": "bloom", "n_embed": 64, "hidden_size": 128, "n_layer": 2, "n_head": 4, "vocab_size": 1000},
    {"model_type": "falcon", "n_embed": 64, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4},
    {"model_type": "gpt2", "n_embd": 64, "hidden_size": 128, "n_layer": 2, "n_head": 4},
    {"model_type": "t5", "d_model": 64, "hidden_size": 128, "num_layers": 2, "num_heads": 4},
    {"model_type": "llama", "num_hidden_layers": 2},
], ids=["bloom", "falcon", "gpt2", "t5", "llama-default-width"])
def test_the_hidden_size_for_auto_buckets_is_the_one_the_trainer_reads_from_the_model(model):
    """The HF Trainer fills "auto" bucket sizes from ``model.config.hidden_size``: where a config.json gives the width
    under two names (or none), that is what transformers makes of it."""
    transformers = pytest.importorskip("transformers")
    from core.export import launch_values

    values = launch_values({"nodes": 1, "gpus_per_node": 8, "model_config": model})
    expected = transformers.AutoConfig.for_model(**model).hidden_size
    assert values["hidden_size"] == expected


@pytest.mark.parametrize("export", ["accelerate", "lightning"])
def test_launcher_exports_remove_the_auto_that_is_there_and_no_other_value(export):
    """A key with a dot ("my_tool.lr": "auto") deleted my_tool.lr, the user's 0.5, and kept the "auto"; an "auto"
    in a list was removed, shifting the items after it (and the notes said both removed and filled)."""
    from core.launchers import accelerate_export, lightning_export

    config = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},
              "my_tool": {"lr": 0.5}, "my_tool.lr": "auto", "custom_list": ["auto", 5]}
    if export == "accelerate":
        out, notes = accelerate_export(config, {"world_size": 1})
    else:
        out, _, notes = lightning_export(config, {"world_size": 1}, 1)
    assert out["my_tool"] == {"lr": 0.5} and "my_tool.lr" not in out
    assert out["custom_list"] == ["auto", 5]
    assert any("Kept \"auto\" in a list" in n and "`custom_list[0]`" in n for n in notes), notes
    assert not any("filled" in n and "custom_list" in n for n in notes), notes
    # the top-level key "" has the path "" (an IndexError once lists were told apart)
    assert "" not in accelerate_export({**config, "": "auto"}, {"world_size": 1})[0]


STARCODER_Z3 = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "bigcode-project__starcoder" / \
    "chat__deepspeed_z3_config_bf16.json"


@pytest.mark.parametrize(("trainer_values", "trains"), [
    ({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}, 16),
    ({"per_device_train_batch_size": 2}, 16),
    ({}, 64),  # the Trainer's defaults, 8 and 1
    ({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2}, 32),
])
def test_hf_export_says_when_the_trainers_arguments_train_another_batch_than_the_written_one(trainer_values, trains):
    """starcoder's ZeRO-3 config writes train_batch_size 32 beside an "auto" micro batch and accumulation: with
    per-device 2 and accumulation 1 on 8 GPUs the export made it "auto" and said nothing, and the Trainer trains 16."""
    if not STARCODER_Z3.is_file():
        pytest.skip(f"{STARCODER_Z3} not found")
    from core.launchers import hf_trainer_export

    config = json.loads(STARCODER_Z3.read_text())
    assert config["train_batch_size"] == 32
    out, kwargs, notes = hf_trainer_export(config, "auto", trainer_values, world_size=8)
    given = _trainer_accepts(out, {**kwargs, "bf16": True}, world_size=8)
    assert given["train_batch_size"] == trains
    said = [n for n in notes if n.startswith("train_batch_size 32 is now")]
    assert bool(said) == (trains != 32)
    if said:
        assert f"= {trains}" in said[0] and f"global batch of {trains}, not 32" in said[0]


def test_only_the_schedulers_that_overwrite_the_optimizers_lr_make_their_peak_the_learning_rate():
    """WarmupCosineLR scales the optimizer's lr (and takes no warmup_max_lr), so its peak is the optimizer's."""
    from core.autofill import scheduler_peak

    for name, peak in (("WarmupLR", 2e-4), ("WarmupDecayLR", 2e-4), ("WarmupCosineLR", None), ("OneCycle", None)):
        config = {**PEAK_DIFFERS, "scheduler": {"type": name, "params": {"warmup_max_lr": 2e-4}}}
        assert scheduler_peak(config) == peak, name


@pytest.mark.parametrize("preset", ["hf-auto-zero2", "hf-auto-zero3"])
def test_hf_export_trains_in_the_precision_the_app_assumed_for_auto(preset):
    """fp16/bf16 "auto": the accelerate and Lightning files were written in half precision (what the memory figures
    assume), but the HF Trainer arguments passed no flag, so the Trainer filled both false and trained in fp32."""
    from core.effective import effective
    from core.launchers import launcher_exports

    config = next(p.config for p in list_presets([BUILTIN_DIR])[0] if p.name == preset)
    assumed = effective(config).precision_mode
    assert assumed in ("fp16", "bf16")
    exports = launcher_exports(config, {"nodes": 1, "gpus_per_node": 8}, "auto",
                               {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4})
    out, kwargs, notes = exports.hf
    assert kwargs[assumed] is True and any(note.startswith(f"{assumed}=True passed") for note in notes)
    given = _trainer_accepts(out, kwargs, world_size=8)
    assert given[assumed]["enabled"] is True
    assert given[assumed]["enabled"] == exports.accelerate[0][assumed]["enabled"]
    assert effective(given).precision == assumed


@pytest.mark.parametrize("mode", ["auto", "match"])
def test_hf_export_writes_an_accumulation_the_caller_passes_for_a_config_without_one(mode):
    """A config with no accumulation key and an accumulation of 4 passed as a Trainer value: the pair carried
    gradient_accumulation_steps=4 while the config lacked the key, accelerate wrote it as 1, and the Trainer handed
    DeepSpeed train_batch_size 128 = 8 GPUs x 4 x 4 beside micro 4 x accumulation 1, which DeepSpeed refuses."""
    from core.export import hf_trainer_export

    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": True}}
    out, kwargs, _ = hf_trainer_export(config, mode, trainer_values={"per_device_train_batch_size": 4,
                                                                     "gradient_accumulation_steps": 4}, world_size=8)
    assert out["gradient_accumulation_steps"] == ("auto" if mode == "auto" else 4)
    given = _trainer_accepts(out, kwargs)
    assert (given["train_micro_batch_size_per_gpu"], given["gradient_accumulation_steps"]) == (4, 4)
    assert given["train_batch_size"] == 4 * 4 * 8  # DeepSpeed's own check: micro x accumulation x GPUs
