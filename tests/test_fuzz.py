"""Fuzzing the engine with mutated corpus configs and arbitrary JSON: no unexpected exception, invariants hold.

Quick profile by default (DSCONFIG_FUZZ_EXAMPLES, 200 per property); ``make fuzz-long`` runs the long one.
tests/test_property_validate.py already covers validate/migrate on arbitrary JSON values; this file adds the
corpus mutations, load_config on damaged text, resolve_auto, the memory estimate, the CLI and the stronger
invariants (no key lost by migrate, no input mutated, fixes applicable, estimate == vectorised sweep).
"""

from __future__ import annotations

import io
import json
import math
from functools import cache
from typing import Any

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from core import ConfigLoadError, dump_config, load_config, migrate, validate
from core.autofill import HF_DEFAULTS, TRAINING_VALUES, AutoFillError, resolve_auto
from core.cli import main as cli_main
from core.memory import Hardware, Shape, estimate, evaluate_arrays
from core.models import catalog_names, get_spec
from core.rules.context import TARGETS
from core.schema import DeepSpeedConfig
from core.schema.walk import iter_schema
from tests.fuzz_strategies import (
    FUZZ_SETTINGS,
    VERSIONS,
    any_config,
    corpus_configs,
    json_values,
    mutated_corpus_configs,
)

world_sizes = st.integers(1, 1024)
targets = st.sampled_from(TARGETS)
versions = st.sampled_from(VERSIONS)


def snapshot(value: Any) -> str:
    """Exact picture of a JSON value, key order included (== on dicts ignores order)."""
    return json.dumps(value, sort_keys=False, default=repr)


def key_paths(value: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every dict key path inside ``value`` (through lists, by index)."""
    out: set[tuple[str, ...]] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = (*prefix, str(key))
            out.add(path)
            out |= key_paths(child, path)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out |= key_paths(child, (*prefix, f"[{i}]"))
    return out


@cache
def deprecated_paths() -> frozenset[tuple[str, ...]]:
    """Key paths of deprecated fields (every spelling), read from the schema's ``deprecated`` metadata."""
    found: set[tuple[str, ...]] = set()
    for path, field in iter_schema(DeepSpeedConfig):
        if field.meta.deprecated:
            parent = tuple(path.split("."))[:-1]
            found.update((*parent, key) for key in field.keys)
    return frozenset(found)


# ---------------------------------------------------------------- load_config / dump_config


@FUZZ_SETTINGS
@given(mutated_corpus_configs())
def test_load_dump_identity_on_mutated_corpus(config):
    text = dump_config(config)
    again = load_config(text)
    assert again == config
    assert snapshot(again) == snapshot(config)  # key order kept too
    assert dump_config(again) == text


TEXT_DAMAGE = [*'{}[]",:/#\\\'\n', "NaN", "Infinity", "1e400", "\x00", "\ufeff", "//", "/*", "true", "null", ",,"]


@st.composite
def damaged_texts(draw):
    """The JSON text of a corpus config with a few characters deleted, inserted or replaced."""
    _, config = draw(st.sampled_from(corpus_configs()))
    text = dump_config(config) if draw(st.booleans()) else json.dumps(config, separators=(",", ":"))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = draw(st.sampled_from(TEXT_DAMAGE) | st.text(max_size=3))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 5)):]
        elif op == "insert":
            text = text[:i] + piece + text[i:]
        else:
            text = text[:i] + piece + text[i + len(piece):]
    return text


@FUZZ_SETTINGS
@given(damaged_texts(), st.booleans())
@example('{"train_batch_size": 8,}', False)
@example("{" * 5000 + "}" * 5000, True)
def test_load_config_on_damaged_text(text, as_bytes):
    try:
        config = load_config(text.encode("utf-8", "surrogatepass") if as_bytes else text)
    except ConfigLoadError as exc:
        assert str(exc)
        return
    assert isinstance(config, dict)
    assert load_config(dump_config(config)) == config


@FUZZ_SETTINGS
@given(json_values)
def test_load_config_on_any_json_document(value):
    text = json.dumps(value)
    try:
        config = load_config(text)
    except ConfigLoadError as exc:
        assert not isinstance(value, dict)
        assert "JSON object" in str(exc)
        return
    assert config == value


# ---------------------------------------------------------------- validate


@FUZZ_SETTINGS
@given(any_config, world_sizes, targets, versions)
def test_validate_total_and_pure(config, world_size, target, version):
    before = snapshot(config)
    report = validate(config, world_size=world_size, target=target, version=version)
    assert snapshot(config) == before, "validate mutated its input"
    assert report.ok is (not report.errors)
    assert (report.version, report.target, report.world_size) == (version, target, world_size)
    for finding in report.findings:
        assert finding.severity in ("error", "warning", "info") and finding.code and finding.message
    json.loads(json.dumps(report.to_dict(), default=str))
    for finding in report.findings:
        if finding.fix is None:
            continue
        fixed = finding.fix.apply(config)
        assert snapshot(config) == before, f"fix of {finding.code} mutated the config"
        validate(fixed, world_size=world_size, target=target, version=version)  # must not raise


@FUZZ_SETTINGS
@given(any_config, world_sizes, targets, versions)
def test_fix_removes_its_finding(config, world_size, target, version):
    report = validate(config, world_size=world_size, target=target, version=version)
    for finding in report.findings:
        if finding.fix is None:
            continue
        after = validate(finding.fix.apply(config), world_size=world_size, target=target, version=version)
        assert (finding.code, finding.path) not in {(f.code, f.path) for f in after.findings}, (
            f"applying the fix {finding.fix.description!r} left {finding.code} at {finding.path}"
        )


def test_fix_inside_list_item():
    config = {"train_micro_batch_size_per_gpu": 1,
              "tensor_parallel": {"partition_config": {"layer_specs": [{"activation_checkpoint_interval": 2}]}}}
    finding = next(f for f in validate(config).findings if f.fix is not None and "[0]" in f.path)
    assert (finding.code, finding.path) not in {(f.code, f.path) for f in validate(finding.fix.apply(config)).findings}


def test_no_auto_default_when_the_default_is_auto():
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"zenflow": {"select_strategy": "auto"}}}
    assert "auto.default" not in validate(config).codes()  # "auto" is the default itself: nothing to say


def test_fix_under_empty_key():
    config = {"train_micro_batch_size_per_gpu": 1, "compression_training": {"row_pruning": {"different_groups": {
        "": {"activation_checkpoint_interval": 2}}}}}
    # compression_training only exists in 0.19.5 (0.19.8 refuses the whole section).
    report = validate(config, version="0.19.5")
    finding = next(f for f in report.findings if f.fix is not None and ".." in f.path)
    after = validate(finding.fix.apply(config), version="0.19.5")
    assert (finding.code, finding.path) not in {(f.code, f.path) for f in after.findings}


def test_batch_fix_with_sequence_parallel():
    """The batch fix uses the data-parallel size (GPUs / sequence_parallel_size), not the GPU count (regression)."""
    config = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "sequence_parallel_size": 2}
    finding = next(f for f in validate(config, world_size=4).findings if f.code == "batch.product")
    assert "batch.product" not in validate(finding.fix.apply(config), world_size=4).codes()


@FUZZ_SETTINGS
@given(any_config, st.integers(1, 64), targets, versions)
def test_cli_validate_json_output_is_data(tmp_path_factory, config, world_size, target, version):
    path = tmp_path_factory.mktemp("cli") / "ds_config.json"
    path.write_text(dump_config(config), encoding="utf-8")
    out = io.StringIO()
    code = cli_main(["validate", str(path), "--format", "json", "--world-size", str(world_size),
                     "--target", target, "--deepspeed-version", version], out=out)
    data = json.loads(out.getvalue())
    report = validate(config, world_size=world_size, target=target, version=version)
    assert code == (0 if report.ok else 1)
    assert data[0]["ok"] is report.ok
    assert [f["code"] for f in data[0]["findings"]] == [f.code for f in report.findings]


# ---------------------------------------------------------------- migrate


@FUZZ_SETTINGS
@given(any_config, targets, versions)
def test_migrate_keeps_keys_and_validity(config, target, version):
    before = snapshot(config)
    new, changes = migrate(config)
    assert snapshot(config) == before, "migrate mutated its input"
    lost = key_paths(config) - key_paths(new)
    deprecated = deprecated_paths()
    for path in lost:
        owner = next((path[:i] for i in range(1, len(path) + 1) if path[:i] in deprecated), None)
        assert owner is not None, f"migrate lost {'.'.join(path)}, which is not a deprecated key"
        assert any(owner[-1] in change for change in changes), f"{'.'.join(owner)} vanished without a change note"
    assert load_config(dump_config(new)) == new
    if changes:
        event("migrate changed something")
    if validate(config, target=target, version=version).ok:
        assert validate(new, target=target, version=version).ok, f"migrate broke a valid config: {changes}"
    again, changes_again = migrate(new)
    assert changes_again == [] and again == new, "migrate is not idempotent"


# ---------------------------------------------------------------- resolve_auto


def _training_value(name: str):
    check = TRAINING_VALUES[name].__name__
    good = {
        "_positive_int": st.integers(1, 4096),
        "_number": st.floats(-10, 10, allow_nan=False),
        "_non_negative_number": st.floats(0, 2000, allow_nan=False),
        "_flag": st.booleans(),
        "_zero_stage": st.integers(0, 3),
    }[check]
    bad = st.sampled_from([0, -1, "auto", None, 1.5, float("nan"), float("inf"), [], "1", True])
    return st.one_of(good, good, good, bad)


training_values = st.one_of(
    st.just({}),
    st.just({**HF_DEFAULTS, "hidden_size": 4096, "num_training_steps": 1000}),
    st.fixed_dictionaries({}, optional={name: _training_value(name) for name in TRAINING_VALUES}),
)


@FUZZ_SETTINGS
@given(any_config, training_values)
def test_resolve_auto_raises_only_autofill_error(config, values):
    before = snapshot(config)
    try:
        result = resolve_auto(config, **values)
    except AutoFillError as exc:
        assert str(exc)
        assert exc.param is None or exc.param in TRAINING_VALUES
        event("AutoFillError")
        return
    finally:
        assert snapshot(config) == before, "resolve_auto mutated its input"
    # Only "auto" values change (objects around them keep their other keys), plus the checkpoint flag
    # save_on_each_node adds.
    for path in key_paths(config):
        old = _at(config, path)
        if isinstance(old, dict) or old == "auto" or (path[0] == "checkpoint" and values.get("save_on_each_node")):
            continue
        assert _at(result, path) == old, f"resolve_auto changed {'.'.join(path)}"
    json.loads(dump_config(result))


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.startswith("["):
            value = value[int(key[1:-1])]
        else:
            return None
    return value


@pytest.mark.parametrize("checkpoint", [[1], "dir", None])
def test_resolve_auto_checkpoint_not_object(checkpoint):
    with pytest.raises(AutoFillError):
        resolve_auto({"checkpoint": checkpoint}, save_on_each_node=True)


# ---------------------------------------------------------------- memory estimate

MODEL_NAMES = tuple(catalog_names())


@cache
def _spec(name: str):
    return get_spec(name)


@FUZZ_SETTINGS
@given(any_config, st.sampled_from(MODEL_NAMES), st.integers(1, 8), st.integers(1, 4), st.integers(1, 16),
       st.sampled_from([128, 2048, 8192]))
def test_memory_estimate_never_raises_on_junk_config(config, model, gpus, nodes, micro_batch, seq_len):
    spec = _spec(model)
    hardware = Hardware(gpus_per_node=gpus, nodes=nodes)
    shape = Shape(micro_batch=micro_batch, seq_len=seq_len)
    before = snapshot(config)
    est = estimate(config, spec, hardware, shape)
    assert snapshot(config) == before, "estimate mutated its input"
    assert est.gpu_bytes > 0 and est.cpu_bytes_per_node >= 0 and est.nvme_bytes_per_node >= 0
    assert all(isinstance(c.bytes, int) and c.bytes >= 0 for c in est.components)
    assert isinstance(est.fits, bool)
    json.dumps(est.to_dict(), default=str)
    # The vectorised path the charts use agrees with the scalar estimate at the same point.
    arrays = evaluate_arrays(config, spec, hardware, shape)
    assert math.isclose(float(arrays["gpu_bytes"]), est.gpu_bytes, rel_tol=1e-9, abs_tol=len(est.components))


@pytest.mark.parametrize("zero", [{"stage": 10**400}, {"stage": 2, "reduce_bucket_size": 10**400},
                                  {"stage": 3, "sub_group_size": -(10**400)}])
def test_memory_estimate_int_beyond_float_range(zero):
    """Integers past the float range (valid JSON) fall back like any unusable value (regression)."""
    est = estimate({"zero_optimization": zero}, _spec(MODEL_NAMES[0]))
    assert math.isfinite(est.gpu_bytes) and est.gpu_bytes > 0
