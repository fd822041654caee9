"""The exported JSON Schema accepts what DeepSpeed accepts and is usable by editors."""

from __future__ import annotations

import jsonschema
import pytest

from core import load_config, validate
from core.io import ConfigLoadError
from core.jsonschema import json_schema
from tests.conftest import corpus_files


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_has_descriptions_and_aliases():
    schema = json_schema()
    zero = schema["$defs"]["ZeroConfig"]["properties"]
    assert "stage3_prefetch_bucket_size" in zero and "prefetch_bucket_size" in zero
    assert "description" in schema["properties"]["train_batch_size"]
    assert zero["cpu_offload"]["deprecationMessage"].startswith("Deprecated")


def test_removed_key_rejected_in_0198_but_not_0195():
    v198 = jsonschema.Draft202012Validator(json_schema("0.19.8"))
    v195 = jsonschema.Draft202012Validator(json_schema("0.19.5"))
    assert not v198.is_valid({"amp": {"enabled": True}})
    assert v195.is_valid({"amp": {"enabled": True}})


def test_schema_rejects_strict_mistakes(validator):
    assert not validator.is_valid({"zero_optimization": {"stage": 5}})
    assert not validator.is_valid({"zero_optimization": {"stage": 2, "bogus": 1}})
    assert not validator.is_valid({"zero_optimization": {"offload_param": {"device": "CPU"}}})
    assert validator.is_valid({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"}})


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_schema_accepts_configs_the_validator_accepts(path, validator):
    """Wherever our validator finds no error, the JSON Schema agrees (it may be stricter, never looser
    on strict sections: see test_schema_rejects_strict_mistakes)."""
    try:
        config = load_config(path.read_bytes())
    except ConfigLoadError:
        return
    report = validate(config, target="hf")
    if report.ok:
        errors = [e.message for e in validator.iter_errors(config)]
        hf_validator = jsonschema.Draft202012Validator(json_schema(target="hf"))
        assert hf_validator.is_valid(config), errors


@pytest.mark.parametrize(("config", "refused_by"), [
    ({"zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}, {"0.19.8"}),  # > 0 since 0.19.8; 0.19.5 took 0
    ({"fp16": {"enabled": True, "loss_scale": -1}}, {"0.19.8", "0.19.5"}),
    ({"zero_optimization": {"stage": 2, "reduce_bucket_size": 5}, "fp16": {"enabled": True, "loss_scale": 0}}, set()),
])
def test_an_editor_checks_the_bounds_each_release_checks(config, refused_by):
    """Bounds the release's own pydantic models check (from its profile), and the schema's own minimums, are JSON
    Schema keywords: they were only in ``x-ds`` or looser (minimum 0 where 0.19.8 requires > 0), so VS Code
    accepted what DeepSpeed and ``validate`` refuse."""
    config = {"train_batch_size": 8, **config}
    for version in ("0.19.8", "0.19.5"):
        editor = jsonschema.Draft202012Validator(json_schema(version))
        assert (not editor.is_valid(config)) == (version in refused_by)
        assert validate(config, version=version).ok == (version not in refused_by)
