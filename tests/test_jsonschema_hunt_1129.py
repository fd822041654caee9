"""The JSON Schema (``dsconfig schema``) on the hunt's cases: it accepted what DeepSpeed refuses (null where a rule
refuses it, strings outside a checked choice list, an empty results_dir, sequence_parallel_size 0) and refused what
DeepSpeed accepts (an unknown key holding "auto" in a pydantic section, "auto" for a ZeRO offload sub-section, the
deprecated ``"zero_optimization": true``, a numeric string where pydantic reads a number). Each row's verdict is
the real DeepSpeed's parser's (``DeepSpeedConfig``), checked against the installed releases by the deepspeed tests.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import jsonschema
import pytest

from core import load_config, validate
from core.io import ConfigLoadError
from core.jsonschema import json_schema
from core.versions import version_tuple
from tests.conftest import corpus_files
from tests.test_jsonschema import INSTALLED, _release_verdicts

_B = {"train_micro_batch_size_per_gpu": 1}
_Z3 = {"stage": 3}

#: (label, config, the releases whose DeepSpeedConfig accepts it) for every installed release.
ALL = frozenset(INSTALLED)
#: the releases that divide by sequence_parallel_size outside a try (0.17-0.18 catch the error; 0.16.9 too)
SP_DIVIDED = frozenset(r for r in INSTALLED if version_tuple(r) >= (0, 19, 6))
WRITER = frozenset(r for r in INSTALLED if version_tuple(r) >= (0, 17, 1))  # reads checkpoint.writer
ROWS: list[tuple[str, dict[str, Any], frozenset[str]]] = [
    # refused by the schema, accepted by DeepSpeed
    ("unknown bf16 key holding auto", {**_B, "bf16": {"enabled": True, "initial_scale_power": "auto"}}, ALL),
    ("unknown ZeRO key holding auto", {**_B, "zero_optimization": {"stage": 2, "bogus": "auto"}}, ALL),
    ("unknown offload key holding auto",
     {**_B, "zero_optimization": {**_Z3, "offload_optimizer": {"device": "cpu", "bogus": "auto"}}}, ALL),
    ("offload_optimizer auto", {**_B, "zero_optimization": {**_Z3, "offload_optimizer": "auto"}}, ALL),
    ("offload_param auto", {**_B, "zero_optimization": {**_Z3, "offload_param": "auto"}}, ALL),
    ("zero_optimization true", {**_B, "zero_optimization": True}, ALL),
    ("zero_optimization false", {**_B, "zero_optimization": False}, ALL),
    ("stage '1'", {**_B, "zero_optimization": {"stage": "1"}}, ALL),
    ("stage ' +1 '", {**_B, "zero_optimization": {"stage": " +1 "}}, ALL),
    ("stage '2.0'", {**_B, "zero_optimization": {"stage": "2.0"}}, ALL),
    ("reduce_bucket_size '500_000_000'", {**_B, "zero_optimization": {**_Z3, "reduce_bucket_size": "500_000_000"}},
     ALL),
    ("gradient_allreduce_op SUM", {**_B, "gradient_allreduce_op": "SUM"}, ALL),
    ("communication_data_type FP16", {**_B, "communication_data_type": "FP16"}, ALL),
    ("communication_data_type null", {**_B, "communication_data_type": None}, ALL),
    ("tag_validation warn", {**_B, "checkpoint": {"tag_validation": "warn"}}, ALL),
    ("writer type fast", {**_B, "checkpoint": {"writer": {"type": "fast"}}}, ALL),
    ("bf16 null", {**_B, "bf16": None}, ALL - {"0.16.9"}),  # 0.16.9 calls .get on it
    # a name DeepSpeed looks up among torch's schedulers too, later: its choices only sample it (left open)
    ("scheduler StepLR", {**_B, "scheduler": {"type": "StepLR", "params": {"step_size": 1}}}, ALL),
    ("sequence_parallel_size 0 (caught before 0.19.6)", {**_B, "sequence_parallel_size": 0}, ALL - SP_DIVIDED),
    ("sequence_parallel_size null", {**_B, "sequence_parallel_size": None}, ALL - SP_DIVIDED),
    # the schema kept these out, DeepSpeed too
    ("unknown bf16 key", {**_B, "bf16": {"enabled": True, "initial_scale_power": 3}}, frozenset({"0.16.9"})),
    ("unknown ZeRO key holding AUTO", {**_B, "zero_optimization": {"stage": 2, "bogus": "AUTO"}}, frozenset()),
    ("stage '5'", {**_B, "zero_optimization": {"stage": "5"}}, frozenset()),
    ("stage '1e0'", {**_B, "zero_optimization": {"stage": "1e0"}}, frozenset()),
    ("reduce_bucket_size '5e8'", {**_B, "zero_optimization": {**_Z3, "reduce_bucket_size": "5e8"}}, frozenset()),
    # accepted by the schema, refused by DeepSpeed
    ("bfloat16 null", {**_B, "bfloat16": None}, frozenset()),
    ("gradient_allreduce_op null", {**_B, "gradient_allreduce_op": None}, frozenset()),
    ("gradient_allreduce_op max", {**_B, "gradient_allreduce_op": "max"}, frozenset()),
    ("communication_data_type fp8", {**_B, "communication_data_type": "fp8"}, frozenset()),
    ("communication_data_type auto", {**_B, "communication_data_type": "auto"}, frozenset()),
    ("seq_parallel_communication_data_type fp8", {**_B, "seq_parallel_communication_data_type": "fp8"}, frozenset()),
    ("tag_validation Sometimes", {**_B, "checkpoint": {"tag_validation": "Sometimes"}}, frozenset()),
    ("tag_validation null", {**_B, "checkpoint": {"tag_validation": None}}, frozenset()),
    ("writer type bogus", {**_B, "checkpoint": {"writer": {"type": "bogus"}}}, ALL - WRITER),
    ("autotuning results_dir empty", {**_B, "autotuning": {"results_dir": ""}}, frozenset()),
]
#: keys a release does not read (gradient_allreduce_op before 0.19.8; the schema marks those apart)
_KEY_RELEASES = {"gradient_allreduce_op": frozenset({"0.19.8"})}


def _rows_for(release: str) -> list[tuple[str, dict[str, Any], bool]]:
    return [(label, config, release in accepted) for label, config, accepted in ROWS
            if all(release in _KEY_RELEASES.get(key, ALL) for key in config)]


@cache
def _editor(release: str, target: str = "deepspeed") -> jsonschema.Draft202012Validator:
    schema = json_schema(release, target)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("release", INSTALLED)
def test_schema_gives_deepspeeds_verdict_and_the_validators(release):
    """Each row as DeepSpeed ``release``'s parser judged it (recorded above), and as ``validate`` judges it."""
    wrong = []
    for label, config, accepted in _rows_for(release):
        schema_ok = _editor(release).is_valid(config)
        validate_ok = validate(config, version=release).ok
        if schema_ok != accepted or validate_ok != accepted:
            errors = [e.message[:100] for e in _editor(release).iter_errors(config)]
            wrong.append(f"{label}: DeepSpeed {accepted}, schema {schema_ok} {errors[:2]}, validate {validate_ok}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", INSTALLED)
def test_schema_agrees_with_the_real_release(release):
    """The real DeepSpeed ``release``'s parser gives the recorded verdicts and the schema for it agrees; for 0.19.8,
    every corpus file that DeepSpeed parses passes both targets' schemas too."""
    rows = _rows_for(release)
    real = _release_verdicts(release, [config for _, config, _ in rows])
    if isinstance(real, str):
        pytest.skip(real)
    wrong = []
    for (label, config, accepted), verdict in zip(rows, real, strict=True):
        schema_ok = _editor(release).is_valid(config)
        if bool(verdict["accepted"]) != accepted or schema_ok != accepted:
            wrong.append(f"{label}: recorded {accepted}, schema {schema_ok}, DeepSpeed {release} {verdict['accepted']} "
                         f"{str(verdict.get('message'))[:120]}")
    if release == "0.19.8":
        corpus = _accepted_corpus()
        assert len(corpus) > 40
        # for the HF target, an "auto" neither the Trainer nor accelerate fills is refused (auto.not-filled)
        wrong += [f"{name} ({target}): {[e.message[:100] for e in _editor(release, target).iter_errors(config)][:2]}"
                  for name, config in corpus for target in ("deepspeed", "hf")
                  if _editor(release, target).is_valid(config) == (target == "hf" and _unfilled_auto(config))]
    assert not wrong, "\n".join(wrong)


def _unfilled_auto(config: dict) -> bool:
    """Whether ``config`` holds an "auto" that neither the HF Trainer nor accelerate fills (accelerate refuses it)."""
    from core.autofill import walk_auto
    from core.rules.auto import hf_fills

    return any(not hf_fills(path) for path, _ in walk_auto(config))


def test_hf_target_keeps_the_verdicts_except_what_accelerate_refuses():
    """The HF target's schema agrees with ``validate(target="hf")`` on the same rows (with the ZeRO section Accelerate
    requires): the HF Trainer refuses the boolean ZeRO form (hf.zero-section) and an "auto" it does not fill, in
    an unknown key too (auto.not-filled)."""
    editor = _editor("0.19.8", "hf")
    for label, config, accepted in _rows_for("0.19.8"):
        config = {"zero_optimization": {"stage": 0}, **config}
        expected = (accepted and not isinstance(config["zero_optimization"], bool) and "unknown" not in label
                    and not _unfilled_auto(config))
        assert editor.is_valid(config) == expected, label
        assert validate(config, version="0.19.8", target="hf").ok == expected, label


def test_choices_are_case_insensitive_patterns_without_inline_flags():
    """Editors compile ``pattern`` as ECMA-262 (no ``(?i)``): each letter is a class, and the choices stay as
    examples for completion."""
    prop = json_schema("0.19.8")["properties"]["communication_data_type"]
    strings = [b for b in prop["anyOf"] if b.get("type") == "string"]
    assert strings and strings[0]["examples"] == ["fp32", "fp16", "bf16"]
    pattern = strings[0]["pattern"]
    assert "(?i" not in pattern
    assert all(re.search(pattern, s) for s in ("fp32", "FP16", "Bf16"))
    assert not any(re.search(pattern, s) for s in ("fp8", "auto", "fp32 "))


def _accepted_corpus() -> list[tuple[str, Any]]:
    from tests.oracle import ds0195_worker

    out = []
    for path in corpus_files():
        try:
            config = load_config(path.read_bytes())
        except ConfigLoadError:
            continue
        if ds0195_worker.evaluate(config, 1)["accepted"]:
            out.append((f"{path.parent.name}/{path.name}", config))
    return out


def _error_paths(errors: Any) -> list[list[Any]]:
    """Every error's path, with those inside ``anyOf`` branches."""
    out = []
    for error in errors:
        out.append(list(error.absolute_path))
        out.extend(_error_paths(error.context))
    return out


def test_the_corpus_file_with_a_string_stage_has_no_error_there():
    """A template of DeepSpeed's autotuning tests: DeepSpeed reads its ``"stage": "1"`` as 1 (the file's lists and
    "auto" batch sizes are refused, as DeepSpeed refuses them)."""
    path = next(p for p in corpus_files() if p.name == "deepspeed__autotuning__tests__ds_config.json")
    config = load_config(path.read_bytes())
    assert config["zero_optimization"]["stage"] == "1"
    for target in ("deepspeed", "hf"):
        paths = _error_paths(_editor("0.19.8", target).iter_errors(config))
        assert ["zero_optimization", "reduce_bucket_size"] in paths
        assert ["zero_optimization", "stage"] not in paths, paths
