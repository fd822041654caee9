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
