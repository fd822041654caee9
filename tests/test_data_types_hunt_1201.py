"""data_types against the real DeepSpeed (a read-only hunt of 1 Dec 2026; each verdict proven by a case in
tests/oracle/initialize_cases.py):

- "auto" in grad_accum_dtype, param_dtype or buffer_dtype was a warning ("kept"); the engine reads each with
  ``DtypeEnum(value)``, which refuses "auto" as any other spelling: now the same error as a misspelling.
- a misspelt buffer_dtype was an error in fp32 training, which trains: the engine reads it only under fp16/bf16.
- keep_in_fp32_modules patterns that are no regular expression together passed; under fp16/bf16 initialize
  compiles them and fails (``data-types.keep-in-fp32-pattern``).
"""

from __future__ import annotations

import pytest

import core
from core.autofix import fix_until_stable

BF16 = {"bf16": {"enabled": True}}


def _errors(data_types, precision=None, version="0.19.8", target="deepspeed"):
    config = {"train_batch_size": 8, **(precision or {}), "data_types": data_types}
    return [(f.code, f.path) for f in core.validate(config, world_size=1, version=version, target=target).errors]


@pytest.mark.parametrize("key", ["grad_accum_dtype", "param_dtype", "buffer_dtype"])
def test_auto_is_refused_as_any_other_spelling(key):
    assert _errors({key: "auto"}, BF16) == _errors({key: "fp64"}, BF16) == [("type.engine", f"data_types.{key}")]


def test_auto_where_the_release_has_no_such_key_stays_a_warning():
    assert _errors({"param_dtype": "auto"}, BF16, version="0.17.6") == []
    assert _errors({"grad_accum_dtype": "auto"}, BF16, version="0.17.6") == [("type.engine",
                                                                             "data_types.grad_accum_dtype")]


def test_the_hf_target_reports_auto_once_as_accelerate_refuses_it():
    found = _errors({"grad_accum_dtype": "auto"}, BF16, target="hf")
    assert [code for code, path in found if path.startswith("data_types")] == ["auto.not-filled"]


@pytest.mark.parametrize("value", ["fp64", "auto"])
def test_a_misspelt_buffer_dtype_is_an_error_only_where_the_engine_reads_it(value):
    assert _errors({"buffer_dtype": value}, BF16) == [("type.engine", "data_types.buffer_dtype")]
    assert _errors({"buffer_dtype": value}, {"fp16": {"enabled": True}}) == [("type.engine",
                                                                                "data_types.buffer_dtype")]
    report = core.validate({"train_batch_size": 8, "data_types": {"buffer_dtype": value}}, world_size=1)
    assert not report.errors
    [warning] = [f for f in report.warnings if f.path == "data_types.buffer_dtype"]
    assert "reads it only under fp16/bf16" in warning.message


@pytest.mark.parametrize(("patterns", "refused"), [
    (["(bias"], True), (["+x"], True), (["(x", "y)"], False), (["e_score_correction_bias", "rotary*inv_freq"], False),
    ([], False)])
def test_keep_in_fp32_patterns_are_compiled_as_deepspeed_compiles_them(patterns, refused):
    assert bool(_errors({"keep_in_fp32_modules": patterns}, BF16)) is refused
    assert not _errors({"keep_in_fp32_modules": patterns})  # fp32 training compiles nothing


def test_the_fixes_leave_no_data_types_error():
    for data_types in ({"grad_accum_dtype": "auto"}, {"buffer_dtype": "auto"}, {"param_dtype": "auto"}):
        config = {"train_batch_size": 8, **BF16, "data_types": data_types}
        fixed = fix_until_stable(config, world_size=1, unsafe=True).config
        assert not [f for f in core.validate(fixed, world_size=1).errors if f.path.startswith("data_types")], fixed
