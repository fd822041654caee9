"""The JSON Schema (``dsconfig schema``) on the 30 Nov hunt's cases, where an editor's verdict and ``validate``'s
differed: "auto" accepted in sections DeepSpeed reads with dict.get (it keeps the string and fails, or reads it as
on), pydantic's lax strings for bools and floats refused, no lower bound on the micro batch and the accumulation
steps, ``tensor_parallel.dtype`` (no JSON value stands) and ``autotp_size: "2"`` accepted, an "auto" Accelerate
refuses accepted for the HF target (a plain string key, ``bfloat16.enabled``, the whole ``optimizer.params``), and
defaults the same schema refuses. Each deepspeed-target row's verdict is the real DeepSpeed 0.19.8 parser's
(``DeepSpeedConfig``), checked by the deepspeed test below."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from core import validate
from core.jsonschema import json_schema
from tests.test_jsonschema import _release_verdicts

_B = {"train_micro_batch_size_per_gpu": 1}
_Z2 = {"stage": 2}
#: (label, config, whether DeepSpeed 0.19.8's parser accepts it)
PARSER_ROWS: list[tuple[str, dict[str, Any], bool]] = [
    ("tag_validation auto", {**_B, "checkpoint": {"tag_validation": "auto"}}, False),
    ("torch_autocast dtype auto", {**_B, "torch_autocast": {"enabled": True, "dtype": "auto"}}, False),
    ("flops_profiler enabled auto", {**_B, "flops_profiler": {"enabled": "auto"}}, False),
    ("bf16 enabled 'true'", {**_B, "bf16": {"enabled": "true"}}, True),
    ("overlap_comm 'true'", {**_B, "zero_optimization": {**_Z2, "overlap_comm": "true"}}, True),
    ("overlap_comm 'Off'", {**_B, "zero_optimization": {**_Z2, "overlap_comm": "Off"}}, True),
    ("overlap_comm 1", {**_B, "zero_optimization": {**_Z2, "overlap_comm": 1}}, True),
    ("overlap_comm 'maybe'", {**_B, "zero_optimization": {**_Z2, "overlap_comm": "maybe"}}, False),
    ("overlap_comm 2", {**_B, "zero_optimization": {**_Z2, "overlap_comm": 2}}, False),
    ("fp16 loss_scale '0'", {**_B, "fp16": {"loss_scale": "0"}}, True),
    ("offload ratio ' 1e0 '", {**_B, "zero_optimization": {"stage": 3, "offload_optimizer": {
        "device": "cpu", "ratio": " 1e0 "}}}, True),
    ("offload ratio 'half'", {**_B, "zero_optimization": {"stage": 3, "offload_optimizer": {
        "device": "cpu", "ratio": "half"}}}, False),
    ("micro batch 0", {"train_micro_batch_size_per_gpu": 0}, False),
    ("micro batch -2", {"train_micro_batch_size_per_gpu": -2}, False),
    ("accumulation 0", {**_B, "gradient_accumulation_steps": 0}, False),
    ("tensor_parallel dtype bf16", {**_B, "tensor_parallel": {"autotp_size": 2, "dtype": "bf16"}}, False),
    ("tensor_parallel dtype auto", {**_B, "tensor_parallel": {"dtype": "auto"}}, True),
]
#: (label, config, target, verdict) the validator gives for a reason the parser alone does not see
VALIDATOR_ROWS: list[tuple[str, dict[str, Any], str, bool]] = [
    # deepspeed.initialize compares it with a number first (TypeError); DeepSpeedConfig alone parses it
    ("autotp_size '2'", {**_B, "tensor_parallel": {"autotp_size": "2"}}, "deepspeed", False),
    # Accelerate: "`tensorboard.output_path` not found in kwargs"
    ("hf tensorboard output_path auto", {
        "train_micro_batch_size_per_gpu": "auto", "zero_optimization": _Z2,
        "tensorboard": {"enabled": True, "output_path": "auto"}}, "hf", False),
    # transformers and Accelerate fill bf16.enabled, not its old spelling
    ("hf bfloat16 enabled auto", {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": _Z2,
                                  "bfloat16": {"enabled": "auto"}}, "hf", False),
    ("hf bf16 enabled auto", {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": _Z2,
                              "bf16": {"enabled": "auto"}}, "hf", True),
    # the Trainer fills values inside params: a whole "auto" crashes it (AttributeError: 'str' ... 'get')
    ("hf optimizer params auto", {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": _Z2,
                                  "optimizer": {"type": "AdamW", "params": "auto"}}, "hf", False),
    ("hf optimizer lr auto", {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": _Z2,
                              "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}, "hf", True),
]


def _editor(target: str) -> jsonschema.Draft202012Validator:
    schema = json_schema("0.19.8", target)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def editors() -> dict[str, jsonschema.Draft202012Validator]:
    return {target: _editor(target) for target in ("deepspeed", "hf")}


@pytest.mark.parametrize(("label", "config", "target", "accepted"),
                         [(label, config, "deepspeed", ok) for label, config, ok in PARSER_ROWS] + VALIDATOR_ROWS,
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_schema_and_validate_give_one_verdict(editors, label, config, target, accepted):
    errors = [e.message[:120] for e in editors[target].iter_errors(config)]
    report = validate(config, version="0.19.8", target=target)
    assert report.ok == accepted, [(f.code, f.path) for f in report.findings if f.severity == "error"]
    assert (not errors) == accepted, errors


@pytest.mark.deepspeed
def test_the_recorded_verdicts_are_deepspeeds():
    verdicts = _release_verdicts("0.19.8", [config for _, config, _ in PARSER_ROWS])
    if isinstance(verdicts, str):
        pytest.fail(verdicts)
    wrong = [f"{label}: recorded {accepted}, DeepSpeed {verdict['accepted']} {str(verdict.get('message'))[:120]}"
             for (label, _, accepted), verdict in zip(PARSER_ROWS, verdicts, strict=True)
             if bool(verdict["accepted"]) != accepted]
    assert not wrong, "\n".join(wrong)


def _property(schema: dict[str, Any], section: str, key: str) -> dict[str, Any]:
    return schema["$defs"][section]["properties"][key]


def test_an_auto_deepspeed_keeps_is_marked_with_the_validators_warning(editors):
    """``activation_checkpointing.cpu_checkpointing: "auto"``: DeepSpeed keeps the string and reads it as on; the
    validator warns (auto.kept), and an editor shows that warning instead of "filled in by the HF Trainer"."""
    config = {**_B, "activation_checkpointing": {"cpu_checkpointing": "auto"}}
    assert editors["deepspeed"].is_valid(config)
    assert [f.code for f in validate(config).findings] == ["auto.kept"]
    branches = _property(json_schema("0.19.8"), "ActivationCheckpointingConfig", "cpu_checkpointing")["anyOf"]
    auto = next(b for b in branches if b.get("const") == "auto")
    assert "keeps the string" in auto["deprecationMessage"]


def test_no_default_is_one_the_same_schema_refuses():
    """An editor offers a property's default: none of them may be a value the schema (and validate) then flag."""
    for target in ("deepspeed", "hf"):
        schema = json_schema("0.19.8", target)
        assert "default" not in schema["properties"]["optimizer"]
        stages = _property(schema, "PipelineConfig", "stages")
        defaults = [b.get("default") for b in [stages, *stages.get("anyOf", ())] if "default" in b]
        if target == "hf":
            assert "auto" not in defaults  # Accelerate refuses DeepSpeed's own "auto" here
        else:
            assert defaults == ["auto"]


#: Sections every release up to 0.19.7 reads by popping "enabled" without a default (KeyError without it).
ENABLED_ROWS = [
    ("amp without enabled", {"train_batch_size": 8, "amp": {"opt_level": "O1"}}, False),
    ("amp with enabled", {"train_batch_size": 8, "amp": {"enabled": False, "opt_level": "O1"}}, True),
    ("pld without enabled", {"train_batch_size": 8, "progressive_layer_drop": {"theta": 0.5}}, False),
    ("pld with enabled", {"train_batch_size": 8, "progressive_layer_drop": {"enabled": False, "theta": 0.5}}, True),
]


@pytest.mark.parametrize("release", ["0.16.9", "0.19.7"])
def test_a_section_older_releases_read_only_with_its_enabled_key_requires_it(release):
    schema = json_schema(release)
    jsonschema.Draft202012Validator.check_schema(schema)
    editor = jsonschema.Draft202012Validator(schema)
    for label, config, accepted in ENABLED_ROWS:
        assert validate(config, version=release).ok == accepted, label
        assert editor.is_valid(config) == accepted, label


@pytest.mark.deepspeed
def test_the_enabled_rows_are_deepspeed_0169s_verdicts():
    verdicts = _release_verdicts("0.16.9", [config for _, config, _ in ENABLED_ROWS])
    if isinstance(verdicts, str):
        pytest.fail(verdicts)
    assert [bool(v["accepted"]) for v in verdicts] == [accepted for _, _, accepted in ENABLED_ROWS], verdicts
