"""A CLI hunt's findings in the rules: a key the release lacks, set to false, is not "switched on"."""

from __future__ import annotations

from core import validate


def _message(config: dict, version: str) -> str:
    (finding,) = [f for f in validate(config, version=version).findings if f.code == "keys.not-in-version-on"]
    return finding.message + " " + finding.suggestion


def test_a_false_value_the_release_lacks_is_said_as_its_value_not_switched_on():
    """compute_grad_norm false on 0.19.6: the message said "it is switched on" and "remove it knowing the feature is
    off" while false turns a default behaviour off."""
    zero = {"stage": 2, "compute_grad_norm": False}
    said = _message({"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero}, "0.19.6")
    assert "switched on" not in said and "feature is off" not in said
    assert "its value false asks for something" in said and "their default is true" in said


def test_an_enabled_section_the_release_lacks_is_still_switched_on():
    said = _message({"train_micro_batch_size_per_gpu": 1, "torch_autocast": {"enabled": True}}, "0.17.1")
    assert "it is switched on" in said


def test_migrate_migrates_a_preset_files_config_and_keeps_its_meta(tmp_path):
    """`dsconfig migrate --check` said "nothing to migrate" of a preset file whose config has a deprecated key, while
    validate, fit and estimate read that config."""
    import json
    from pathlib import Path

    from tests.cli_support import run_cli

    preset = json.loads((Path(__file__).resolve().parent.parent / "presets" / "zero2-offload-cpu.json").read_text())
    zero = preset["config"]["zero_optimization"]
    zero.pop("offload_optimizer")
    zero["cpu_offload"] = True
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    code, _, err = run_cli(["migrate", "--check", str(path)])
    assert code == 1 and "would migrate" in err and "in the preset's config" in err, err
    code, out, _ = run_cli(["migrate", str(path)])
    migrated = json.loads(out)
    assert code == 0 and migrated["meta"] == preset["meta"] and list(migrated) == list(preset)
    assert "cpu_offload" not in migrated["config"]["zero_optimization"]
    assert migrated["config"]["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def _unknown_key_fix(config: dict, path: str):
    (finding,) = [f for f in validate({"train_micro_batch_size_per_gpu": 1, **config}).findings if f.path == path]
    return finding.fix


def test_an_unknown_key_is_not_moved_into_a_deprecated_key_but_renamed_to_its_replacement():
    """zero_optimization.allgather_size was "moved" to the top-level allgather_size, which DeepSpeed deprecates in
    favour of zero_optimization.allgather_bucket_size (a hunt of 30 Nov 2026)."""
    fix = _unknown_key_fix({"zero_optimization": {"stage": 2, "allgather_size": 5e8}},
                           "zero_optimization.allgather_size")
    assert [(op.op, op.to) for op in fix.ops] == [("move", "zero_optimization.allgather_bucket_size")]


def test_a_key_that_is_a_field_of_several_sections_gets_no_guessed_move():
    """`type` in fp16 could be the optimizer's, the scheduler's or a checkpoint writer's: "Move fp16.type to
    optimizer.type" would set the optimizer to "bfloat16"."""
    assert _unknown_key_fix({"fp16": {"enabled": True, "type": "bfloat16"}}, "fp16.type") is None
    assert _unknown_key_fix({"bf16": {"enabled": True, "params": {"lr": 1}}}, "bf16.params") is None
    fix = _unknown_key_fix({"zero_optimization": {"stage": 2, "ratio": 0.5}}, "zero_optimization.ratio")
    assert [(op.op, op.to) for op in fix.ops] == [("move", "zero_optimization.offload_optimizer.ratio")]
