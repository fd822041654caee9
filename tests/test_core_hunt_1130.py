"""Bugs a bug hunt found in the engine: the float micro batch a file path does not have, model configs with whole
floats that transformers refuses, and Adam betas that are strings or outside [0, 1)."""

from __future__ import annotations

import json

import pytest

from core.validate import validate

# ---- 2. batch.not-integer: a file DeepSpeed loads itself has no float micro batch


@pytest.mark.deepspeed
@pytest.mark.parametrize(("config", "world_size"), [
    ({"train_micro_batch_size_per_gpu": 4.0, "gradient_accumulation_steps": 2.0}, 8),
    ({"train_batch_size": 16, "gradient_accumulation_steps": 2.0}, 2),
])
def test_a_whole_float_micro_batch_is_a_float_only_when_the_config_is_passed_as_a_dict(config, world_size, tmp_path):
    """The message said "DeepSpeed ends with micro batch 4.0, a float" for a file, but DeepSpeed opens a path with
    hjson, which reads 4.0 as 4: only a config passed as a dict keeps the float. It now says both."""
    from tests.oracle.ds0195_worker import _deepspeed_config_class, _quiet

    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config))
    with _quiet():
        from_dict = _deepspeed_config_class()(dict(config), world_size).train_micro_batch_size_per_gpu
        from_file = _deepspeed_config_class()(str(path), world_size).train_micro_batch_size_per_gpu
    assert isinstance(from_dict, float) and type(from_file) is int and from_file == from_dict
    finding = next(f for f in validate(config, world_size=world_size).findings if f.code == "batch.not-integer")
    assert "as a dict" in finding.message and f"micro batch {from_dict}, a float" in finding.message
    assert "hjson" in finding.message and f"the micro batch is {from_file} and the loader works" in finding.message


def test_a_float_micro_batch_derived_over_sequence_parallel_ranks_is_a_float_from_a_file_too():
    """GPUs ÷ sequence_parallel_size is a float division whatever the file holds: no "file path" nuance there."""
    config = {"train_batch_size": 32, "gradient_accumulation_steps": 2, "sequence_parallel_size": 2}
    finding = next(f for f in validate(config, world_size=8).findings if f.code == "batch.not-integer")
    assert "hjson" not in finding.message and "DeepSpeed ends with micro batch 4.0, a float" in finding.message


# ---- 3. a model config.json with whole-number floats for integer sizes


def _hf_verdicts(config: dict, tmp_path) -> tuple[str | None, str | None]:
    """What transformers' AutoConfig.from_pretrained and the app's reader (parse_hf_config, then describe) say of
    ``config`` written as a model directory's config.json: None where each accepts it, else its error."""
    transformers = pytest.importorskip("transformers")
    from core.models import ModelConfigError, describe, parse_hf_config

    (tmp_path / "config.json").write_text(json.dumps(config))
    try:
        transformers.AutoConfig.from_pretrained(str(tmp_path))
        theirs = None
    except Exception as exc:  # transformers' own validation error, whatever its class
        theirs = f"{type(exc).__name__}: {exc}"
    try:
        describe(parse_hf_config((tmp_path / "config.json").read_bytes()))
        ours = None
    except ModelConfigError as exc:
        ours = str(exc)
    return theirs, ours


LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 11008, "vocab_size": 32000}


@pytest.mark.parametrize(("key", "value"), [("hidden_size", 4096.0), ("num_hidden_layers", 2.0)])
def test_a_whole_float_size_that_transformers_refuses_is_refused(key, value, tmp_path):
    """4096.0 was read as 4096 and the model sized, while transformers refuses it (Field 'hidden_size' expected int,
    got float); 4096.5 was already refused."""
    theirs, ours = _hf_verdicts({**LLAMA, key: value}, tmp_path)
    assert theirs is not None and key in theirs and "float" in theirs
    assert ours is not None and f"'{key}' must be an integer, got {value!r}" in ours and f"write {int(value)}" in ours


def test_the_same_config_with_integers_is_accepted_by_both(tmp_path):
    assert _hf_verdicts(LLAMA, tmp_path) == (None, None)


# ---- 5. Adam betas outside [0, 1): DeepSpeed's own Adam trains with them silently


def _adamw(betas, **more) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
            "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "betas": betas}}, **more}


@pytest.mark.parametrize(("betas", "element"), [
    ([1.5, 0.9], "betas[0] is 1.5"), ([0.9, 1.5], "betas[1] is 1.5"), ([-0.5, 0.999], "betas[0] is -0.5"),
    ([1.0, 1.0], "betas[0] is 1.0"),
])
def test_a_beta_outside_zero_one_is_a_warning_naming_the_element(betas, element):
    """With DeepSpeed's default FusedAdam (no torch_adam) [1.5, 0.9] got no finding."""
    found = [f for f in validate(_adamw(betas)).findings if f.path == "optimizer.params.betas"]
    assert [(f.code, f.severity) for f in found] == [("optimizer.param-range", "warning")]
    assert found[0].message.startswith(f"{element}, outside [0, 1)") and "diverges" in found[0].message
    assert "never decays" in found[0].message and "without an error" in found[0].message


@pytest.mark.parametrize("betas", [[0.9, 0.95], [0.0, 0.5]])
def test_betas_inside_zero_one_get_no_finding(betas):
    assert not [f for f in validate(_adamw(betas)).findings if f.path == "optimizer.params.betas"]


def test_torchs_adam_keeps_its_own_error_for_a_beta_out_of_range():
    config = _adamw([1.5, 0.9])
    config["optimizer"]["params"]["torch_adam"] = True
    found = [f for f in validate(config).findings if f.path == "optimizer.params.betas"]
    assert [(f.code, f.severity) for f in found] == [("optimizer.torch-raises", "error")]


# what the warning claims (DeepSpeed 0.19.8's fused Adam and CPU Adam build and step with such betas) is proven by
# the initialize cases control-adam-beta-out-of-range and control-cpu-adam-beta-out-of-range


@pytest.mark.parametrize(("betas", "element"), [(["0.9", "0.95"], 0), ([0.9, None], 1), ([0.9, [0.95]], 1)])
def test_a_beta_that_is_not_a_number_is_an_error_naming_the_element(betas, element):
    """DeepSpeed's fused Adam hands betas to its kernel at the first step, which refuses a string (TypeError
    "incompatible function arguments": the initialize case adam-betas-strings); CPU Adam's create_adam at
    initialize."""
    (finding,) = [f for f in validate(_adamw(betas)).findings if f.path == "optimizer.params.betas"]
    assert (finding.code, finding.severity) == ("optimizer.param-type", "error")
    assert f"betas[{element}]" in finding.message
    assert finding.fix.ops[0].value == [0.9, 0.999]
