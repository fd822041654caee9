"""What Accelerate's DeepSpeedPlugin fills an "auto" with, and from which environment variable, judged by the real
plugin (a hunt: an "auto" NVMe path under the HF target was reported as a missing path that fails at initialize,
while accelerate writes "none" and DeepSpeed swaps into a folder of that name; the stage's message named
`accelerate config`, which refuses a stage beside a DeepSpeed config file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import validate
from core.autofill import ACCELERATE_FILLS, ACCELERATE_VARIABLES

pytest.importorskip("accelerate")

BASE = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8}
NVME_AUTO = {**BASE, "zero_optimization": {
    "stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "auto"},
    "offload_param": {"device": "nvme", "nvme_path": "auto"}}}
NVME_PATHS = ["zero_optimization.offload_optimizer.nvme_path", "zero_optimization.offload_param.nvme_path"]


def _value(config: dict, dotted: str):
    node = config
    for key in dotted.split("."):
        node = node[key]
    return node


@pytest.fixture
def clean_environment(monkeypatch):
    for name in (*ACCELERATE_VARIABLES.values(), "ACCELERATE_CONFIG_DS_FIELDS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _filled(config: dict) -> dict:
    from accelerate.utils import DeepSpeedPlugin

    return DeepSpeedPlugin(hf_ds_config=config).hf_ds_config.config


def test_an_auto_nvme_path_becomes_a_folder_named_none_and_the_validator_says_so(clean_environment):
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    filled = _filled(NVME_AUTO)
    for path in NVME_PATHS:
        assert _value(filled, path) == ACCELERATE_FILLS[path] == "none"
    read = DeepSpeedZeroConfig(**filled["zero_optimization"])
    assert read.offload_param.nvme_path == Path("none") == read.offload_optimizer.nvme_path

    findings = validate(NVME_AUTO, target="hf").findings
    assert sorted((f.severity, f.code, f.path) for f in findings if "nvme" in f.code) == [
        ("warning", "hf.auto-nvme-path", path) for path in NVME_PATHS]
    # plain DeepSpeed drops the "auto": the path is missing there and initialize fails
    assert sorted(f.path for f in validate(NVME_AUTO).findings if f.code == "zero.nvme-without-path") == NVME_PATHS


def test_a_missing_nvme_path_stays_an_error_under_the_hf_target(clean_environment):
    config = {**BASE, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    assert "nvme_path" not in _filled(config)["zero_optimization"]["offload_param"]
    assert [f.code for f in validate(config, target="hf").findings if "nvme" in f.code] == ["zero.nvme-without-path"]


@pytest.mark.parametrize("path", sorted(ACCELERATE_VARIABLES))
def test_each_fill_is_read_from_the_variable_the_studio_names(clean_environment, path):
    written = {"zero_optimization.stage": ("3", 3),
               "zero_optimization.stage3_gather_16bit_weights_on_model_save": ("true", True)}
    set_to, filled_with = written.get(path, ("cpu" if path.endswith("device") else "/nvme0",) * 2)
    clean_environment.setenv(ACCELERATE_VARIABLES[path], set_to)
    config = {**NVME_AUTO, "zero_optimization": {
        "stage": "auto", "stage3_gather_16bit_weights_on_model_save": "auto",
        "offload_optimizer": {"device": "auto", "nvme_path": "auto"},
        "offload_param": {"device": "auto", "nvme_path": "auto"}}}
    assert _value(_filled(config), path) == filled_with
    assert "ACCELERATE_DEEPSPEED_ZERO_STAGE" in " ".join(
        f.message for f in validate({**BASE, "zero_optimization": {"stage": "auto"}}, target="hf").findings)


def test_accelerate_config_cannot_set_the_stage_beside_a_config_file(clean_environment):
    from accelerate.utils import DeepSpeedPlugin

    # `accelerate launch` lists the accelerate config file's deepspeed_config keys here
    clean_environment.setenv("ACCELERATE_CONFIG_DS_FIELDS", "deepspeed_config_file,zero_stage")
    with pytest.raises(ValueError, match="will be ignored"):
        DeepSpeedPlugin(hf_ds_config={**BASE, "zero_optimization": {"stage": "auto"}})
    message = next(f.message for f in validate({**BASE, "zero_optimization": {"stage": "auto"}}, target="hf").findings
                   if f.code == "hf.auto-stage")
    assert "accelerate config" not in message and "--zero_stage" in message


def _launch_environment(*flags: str) -> dict[str, str]:
    """The ACCELERATE_* variables `accelerate launch --use_deepspeed ... FLAGS train.py` hands the training process,
    built by accelerate's own launcher code."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    args = launch_command_parser().parse_args(
        ["--use_deepspeed", "--num_processes", "2", "--deepspeed_config_file", "ds_config.json", *flags, "train.py"])
    args = _validate_launch_command(args)[0]
    args.deepspeed_fields_from_accelerate_config = ""
    return {k: v for k, v in prepare_deepspeed_cmd_env(args)[1].items() if k.startswith("ACCELERATE_")}


@pytest.mark.parametrize("path", sorted(ACCELERATE_VARIABLES))
def test_accelerate_launch_sets_a_variable_only_for_the_paths_the_studio_says(clean_environment, path):
    from core.autofill import ACCELERATE_LAUNCH_FLAGS

    setting = {"zero_optimization.stage": "3",
               "zero_optimization.stage3_gather_16bit_weights_on_model_save": "true"}.get(
        path, "cpu" if path.endswith("device") else "/nvme0")
    flag = ACCELERATE_LAUNCH_FLAGS.get(path, "--" + path.split(".")[1] + "_nvme_path")
    environment = _launch_environment(flag, setting)
    assert (ACCELERATE_VARIABLES[path] in environment) == (path in ACCELERATE_LAUNCH_FLAGS), environment


def test_the_accelerate_export_says_an_auto_nvme_path_becomes_none(clean_environment):
    from core.launchers import accelerate_export

    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "auto"},
                                    "offload_param": {"device": "none", "nvme_path": "auto"}}}
    out, notes = accelerate_export(config, {"world_size": 2})
    assert _value(_filled(out), NVME_PATHS[0]) == "none"
    assert [note.split(" ", 1)[0] for note in notes if "nvme_path" in note] == [NVME_PATHS[0]]
    assert "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH" in " ".join(notes)
