"""The exported JSON Schema accepts what DeepSpeed accepts and is usable by editors."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from typing import Any

import jsonschema
import pytest

from core import load_config, validate, versions
from core.findings import join_path
from core.io import ConfigLoadError
from core.jsonschema import json_schema
from core.schema.root import DeepSpeedConfig
from core.schema.walk import json_default, resolve, unique_fields
from tests.conftest import REPO_ROOT, corpus_files


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


# ------------------------------------------------------------------------- per-release facts from the profiles
#: The releases installed for the differential tests (side by side in .venv-ds/, 0.19.8 in the main venv).
INSTALLED = ("0.16.9", "0.17.6", "0.18.9", "0.19.6", "0.19.7", "0.19.8")
_B = {"train_micro_batch_size_per_gpu": 1}
#: QA's rows: (release, config, whether that real DeepSpeed release's parser accepts it).
QA_ROWS = [
    ("0.19.7", {**_B, "zero_optimization": {"stage": 1, "compute_grad_norm": True}}, True),
    ("0.19.7", {**_B, "zero_optimization": {"stage": 1, "parameter_alignment": False}}, True),
    ("0.19.6", {**_B, "gradient_allreduce_op": "sum"}, True),
    ("0.19.6", {**_B, "hybrid_engine": {"enabled": False, "max_out_tokens": 0}}, True),
    ("0.19.7", {**_B, "nebula": {"enabled": False}}, False),
    ("0.19.7", {**_B, "compression_training": {}}, False),
    ("0.19.7", {**_B, "zero_optimization": {"stage": 3, "mics_shard_size": -1}}, False),
    ("0.16.9", {**_B, "zero_optimization": {"stage": 2, "zenflow": None}}, False),
    ("0.16.9", {**_B, "zero_optimization": {"stage": 3, "stage3_allgather_sequential": False}}, False),
    ("0.17.6", {**_B, "bf16": {"enabled": True, "bf16_master_weights_and_grads": False}}, False),
]


def _profile_names(release: str, prefix: str) -> frozenset[str]:
    """The keys ``release`` reads at ``prefix`` ("" the top level), from its profile."""
    data = versions.profile(release)
    if prefix == "":
        return frozenset(data["top_level_keys"])
    fields = data["sections"].get(prefix, {}).get("fields", {})
    return frozenset(n for name, info in fields.items() for n in (name, info.get("alias")) if n)


def _sample_value(release: str, prefix: str, key: str) -> tuple[bool, Any]:
    """A value ``release`` (which reads the key) accepts: its recorded default, else the schema's."""
    found, value = versions.recorded_default(release, prefix, key)
    if found and value is not None:
        return True, value
    field = resolve(DeepSpeedConfig, join_path(prefix, key))
    if field is None:
        return False, None
    if field.model is not None:  # a section: switched off (some need "enabled")
        return True, ({"enabled": False} if "enabled" in field.model.model_fields else {})
    return json_default(field)


def _nested(prefix: str, key: str, value: Any) -> dict[str, Any]:
    config: dict[str, Any] = {key: value}
    for part in reversed(prefix.split(".") if prefix else []):
        config = {part: config}
    if prefix.startswith("zero_optimization"):
        config["zero_optimization"] = {"stage": 3, **config["zero_optimization"]}
    return {**_B, **config}


@cache
def _profile_sample() -> tuple[tuple[str, dict[str, Any]], ...]:
    """One config per key that an installed release reads and one of its neighbours (the next or previous installed
    or profiled release) does not, each set to a value the release reading it accepts, and every top-level key an
    installed release refuses on sight: all derived from the profiles."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, dict[str, Any]]] = []
    for i, release in enumerate(INSTALLED):
        j = versions.RELEASES.index(release)
        neighbours = {INSTALLED[k] for k in (i - 1, i + 1) if 0 <= k < len(INSTALLED)}
        neighbours |= {versions.RELEASES[k] for k in (j - 1, j + 1) if 0 <= k < len(versions.RELEASES)}
        for other in sorted(neighbours):
            sections = {"", *versions.profile(release)["sections"], *versions.profile(other)["sections"]}
            for prefix in sorted(sections):
                mine, theirs = _profile_names(release, prefix), _profile_names(other, prefix)
                for key in sorted(mine ^ theirs):
                    found, value = _sample_value(release if key in mine else other, prefix, key)
                    if found and (prefix, key) not in seen:
                        seen.add((prefix, key))
                        out.append((f"{join_path(prefix, key)} ({release} vs {other})", _nested(prefix, key, value)))
        for key in sorted(versions.removed_top_level_keys(release)):
            if ("", key) not in seen:
                seen.add(("", key))
                found, value = _sample_value(release, "", key)
                out.append((f"{key} (refused by {release})", _nested("", key, value if found else {})))
    return tuple(out)


@cache
def _lenient_sample() -> tuple[tuple[str, dict[str, Any], frozenset[str]], ...]:
    """A string in every field of the sections an installed release reads with ``dict.get`` although another
    release parses them with pydantic (``versions.section_strict`` is False: 0.16.9's fp16/bf16), with the releases
    that do: they check no value there while parsing. (Other releases' value checks are the schema's own types and
    validators, not per-release facts.)"""
    out: dict[str, tuple[str, dict[str, Any], set[str]]] = {}
    for release in INSTALLED:
        for prefix in versions.profile(versions.NEWEST)["sections"]:
            section = resolve(DeepSpeedConfig, prefix)
            if versions.section_strict(release, prefix) is not False or section is None or section.model is None:
                continue
            for field in unique_fields(section.model):
                key = field.alias or field.name
                config = _nested(prefix, key, "x")
                if "." not in prefix and key != "enabled" and "enabled" in section.model.model_fields:
                    config[prefix]["enabled"] = False  # the key's value alone, not a switched-on section
                out.setdefault(join_path(prefix, key), (f"{join_path(prefix, key)} = 'x' (dict.get)", config, set()))
                out[join_path(prefix, key)][2].add(release)
    return tuple((label, config, frozenset(releases)) for label, config, releases in out.values())


def _cases(release: str) -> list[tuple[str, dict[str, Any]]]:
    """QA's rows, the profile sample and the lenient sample for ``release``."""
    return [*((f"QA row {i} for {r}", c) for i, (r, c, _) in enumerate(QA_ROWS)), *_profile_sample(),
            *((label, config) for label, config, releases in _lenient_sample() if release in releases)]


@cache
def _editor(release: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(release)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _verdicts(release: str, config: dict[str, Any]) -> tuple[bool, bool, list[str], list[str]]:
    """(schema accepts, validate finds no error, the schema's errors, validate's errors)."""
    report = validate(config, version=release)
    schema_errors = [e.message[:120] for e in _editor(release).iter_errors(config)]
    errors = [f"{f.code} {f.path}" for f in report.findings if f.severity == "error"]
    return not schema_errors, report.ok, schema_errors, errors


@cache
def _case_verdicts(release: str) -> tuple[tuple[bool, bool, list[str], list[str]], ...]:
    """``_verdicts`` for each of ``_cases(release)``, in order (asked by two tests)."""
    return tuple(_verdicts(release, config) for _, config in _cases(release))


def test_the_profile_sample_covers_added_and_removed_keys():
    labels = " ".join(label for label, _ in _profile_sample())
    assert len(_profile_sample()) > 40
    for key in ("zero_optimization.compute_grad_norm", "zero_optimization.mics_shard_size", "gradient_allreduce_op",
                "zero_optimization.zenflow", "bf16.bf16_master_weights_and_grads", "nebula", "amp"):
        assert key in labels, key


@pytest.mark.parametrize("release", INSTALLED)
def test_schema_for_a_release_agrees_with_validate_for_it(release):
    """`dsconfig schema --deepspeed-version R` takes which keys exist, which sections refuse unknown keys and the
    numeric bounds from R's profile, as `validate(version=R)` does: on QA's rows and on every key added or
    removed around R (from the profiles), the editor's verdict is the validator's."""
    disagreements = []
    for (label, config), (schema_ok, validate_ok, schema_errors, errors) in zip(
            _cases(release), _case_verdicts(release), strict=True):
        if schema_ok != validate_ok:
            disagreements.append(f"{label}: {config}\n  schema: {schema_errors[:2]}\n  validate: {errors}")
    assert not disagreements, f"{len(disagreements)} disagreements for {release}:\n" + "\n".join(disagreements)


@pytest.mark.parametrize(("release", "config", "accepted"), QA_ROWS)
def test_qa_rows_schema_agrees_with_validate_and_the_release(release, config, accepted):
    schema_ok, validate_ok, schema_errors, errors = _verdicts(release, config)
    assert validate_ok == accepted, errors
    assert schema_ok == accepted, schema_errors


def _release_verdicts(release: str, configs: list[dict[str, Any]]) -> list[dict[str, Any]] | str:
    """DeepSpeed ``release``'s parser verdicts on ``configs`` (``tests/oracle/ds0195_worker.py`` under the interpreter
    that imports it, one batch), or why it cannot run here."""
    from tests.oracle.oracle import (
        IN_PROCESS_VERSION,
        WORKER_SCRIPT,
        OracleUnavailable,
        oracle_available,
        release_interpreter,
    )

    if release == IN_PROCESS_VERSION:
        from tests.oracle import ds0195_worker

        return oracle_available(release) or [ds0195_worker.evaluate(config, 1) for config in configs]
    try:
        python, extra = release_interpreter(release)
    except OracleUnavailable as exc:
        return str(exc)
    requests = [{"op": "version"}, {"op": "verdicts", "items": [{"config": c, "world_size": 1} for c in configs]},
                {"op": "quit"}]
    done = subprocess.run([python, str(WORKER_SCRIPT)], input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, timeout=600, cwd=REPO_ROOT, env={**os.environ, **extra})
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(answers) < 2 or answers[0].get("version") != release or not answers[1].get("ok"):
        return f"DeepSpeed {release} cannot judge here: {done.stderr[-500:]}"
    return answers[1]["verdicts"]


_JUDGES: dict[str, Future[list[dict[str, Any]] | str]] = {}


def _real_verdicts(release: str) -> list[dict[str, Any]] | str:
    """``_release_verdicts`` on ``_cases(release)``. The first call starts every installed release (importing one
    DeepSpeed takes seconds; as many at once as there are CPUs), except on an xdist worker, which may run only
    some of the releases' tests."""
    if release not in _JUDGES:
        pool = ThreadPoolExecutor(max(1, min(len(INSTALLED), os.cpu_count() or 1)))
        wanted = (release,) if os.environ.get("PYTEST_XDIST_WORKER") else INSTALLED
        for name in wanted:
            configs = [config for _, config in _cases(name)]
            _JUDGES.setdefault(name, pool.submit(_release_verdicts, name, configs))
        pool.shutdown(wait=False)
    return _JUDGES[release].result()


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", INSTALLED)
def test_schema_for_a_release_agrees_with_that_real_release(release):
    """The real DeepSpeed R's parser (``DeepSpeedConfig``) on the same configs: it gives QA's verdicts on R's rows,
    and wherever it and ``validate(version=R)`` agree, the schema for R agrees too."""
    real = _real_verdicts(release)
    if isinstance(real, str):
        pytest.skip(real)
    rows = {f"QA row {i} for {r}": accepted for i, (r, _, accepted) in enumerate(QA_ROWS) if r == release}
    wrong = []
    for (label, config), verdict, mine in zip(_cases(release), real, _case_verdicts(release), strict=True):
        accepted = bool(verdict["accepted"])
        if label in rows:
            assert accepted == rows[label], (config, verdict)
        schema_ok, validate_ok, schema_errors, errors = mine
        if (label in rows or validate_ok == accepted) and schema_ok != accepted:
            wrong.append(f"{label}: {config}\n  DeepSpeed {release}: {str(verdict.get('message'))[:160]}\n"
                         f"  schema: {schema_errors[:2]}\n  validate: {errors}")
    assert not wrong, f"{len(wrong)} disagreements with DeepSpeed {release}:\n" + "\n".join(wrong)
