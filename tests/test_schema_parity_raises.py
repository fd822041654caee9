"""What DeepSpeed 0.19.8 rejects while parsing against what the schema and the rules reject: fields marked
raises="config" (rejected by both), raises="engine" (parsed, failing later) and rule-checked fields."""

from __future__ import annotations

import copy
import typing
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from core.schema.base import field_meta
from core.schema.root import DeepSpeedConfig

ds_config_mod = pytest.importorskip("deepspeed.runtime.config")

pytestmark = pytest.mark.deepspeed

# --------------------------------------------------------------------------------------------------
# raises="config": lenient fields DeepSpeed 0.19.8 rejects while parsing
# --------------------------------------------------------------------------------------------------

#: For every lenient field marked raises="config" (current sections): a config fragment with a bad value.
_RAISES_CASES: dict[str, dict[str, Any]] = {
    "torch_autocast.dtype": {"torch_autocast": {"dtype": "bogus"}},
    "data_types.keep_in_fp32_modules": {"data_types": {"keep_in_fp32_modules": "x"}},
    "optimizer.type": {"optimizer": {"type": 1}},
    "checkpoint.tag_validation": {"checkpoint": {"tag_validation": "bogus"}},
    "checkpoint.parallel_write": {"checkpoint": {"parallel_write": None}},
    "checkpoint.writer": {"checkpoint": {"writer": "fast"}},
    "checkpoint.parallel_write.pipeline_stage": {"checkpoint": {"parallel_write": {"pipeline_stage": "yes"}}},
    "checkpoint.writer.type": {"checkpoint": {"writer": {"type": "slow"}}},
    "checkpoint.writer.data_parallel": {"checkpoint": {"writer": {"data_parallel": "bogus"}}},
    "data_efficiency.data_sampling": {"data_efficiency": {"data_sampling": "on"}},
    "data_efficiency.data_sampling.curriculum_learning": {
        "data_efficiency": {"data_sampling": {"curriculum_learning": "on"}}
    },
    "data_efficiency.data_sampling.dynamic_batching": {
        "data_efficiency": {"data_sampling": {"dynamic_batching": "on"}}
    },
    "data_efficiency.data_sampling.dynamic_batching.min_batch_size": {
        "data_efficiency": {"data_sampling": {"dynamic_batching": {"min_batch_size": "x"}}}
    },
    "data_efficiency.data_sampling.dynamic_batching.max_batch_size": {
        "data_efficiency": {"data_sampling": {"dynamic_batching": {"max_batch_size": "x"}}}
    },
    "data_efficiency.data_sampling.dynamic_batching.max_tokens": {
        "data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": True, "max_tokens": "x"}}}
    },
    "data_efficiency.data_routing": {"data_efficiency": {"data_routing": "on"}},
    "autotuning.model_info": {"autotuning": {"model_info": -1}},
    "data_efficiency.data_routing.random_ltd": {"data_efficiency": {"data_routing": {"random_ltd": "on"}}},
    "tensor_parallel.dtype": {"tensor_parallel": {"dtype": "bf16"}},
    "expert_parallel.load_balance_coeff": {"expert_parallel": {"load_balance_coeff": 0.01}},
}

#: DeepSpeed failures that depend on a value's truthiness or on another key, not on its type: the schema
#: types them for editors, and a validator rule (not a type error) reports them.
_RULE_CASES: dict[str, dict[str, Any]] = {
    "optimizer.params": {"optimizer": {"type": "Adam", "params": "on"}},  # only read when type is set
    "flops_profiler.enabled": {"flops_profiler": {"enabled": "maybe"}},
    # iterated when written: null fails, a string passes (its characters are strings) and fails at initialize
    "torch_autocast.lower_precision_safe_modules": {"torch_autocast": {"lower_precision_safe_modules": None}},
    "autotuning.results_dir": {"autotuning": {"results_dir": ""}},
    "autotuning.exps_dir": {"autotuning": {"exps_dir": None}},
}


@pytest.mark.parametrize("path", sorted(_RULE_CASES))
def test_rule_checked_fields_are_rejected_by_deepspeed_and_the_validator(path):
    from core import validate

    fragment = _RULE_CASES[path]
    assert _deepspeed_0198_rejects(fragment) is not None
    report = validate({"train_batch_size": 1, **fragment})
    assert any(f.path == path for f in report.errors), [(f.code, f.path) for f in report.findings]


#: Lenient section validators that reproduce a DeepSpeed error (the section is flagged raises="config").
_SECTION_RAISES_CASES: list[dict[str, Any]] = [
    {"data_efficiency": {"data_sampling": {"curriculum_learning": {"enabled": True}}}},
    {"data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": True}}}},
]


def _deepspeed_0198_rejects(fragment: dict[str, Any]) -> str | None:
    try:
        # deepcopy: DeepSpeed mutates nested sections (it adds data_routing: {} etc.)
        ds_config_mod.DeepSpeedConfig({"train_batch_size": 1, **copy.deepcopy(fragment)})
    except Exception as exc:  # DeepSpeed raises many types here: AssertionError, ValueError, TypeError...
        return f"{type(exc).__name__}: {exc}"
    return None


def test_raises_config_markers_are_exactly_the_tested_fields():
    ours = {p for p in _paths_marked(DeepSpeedConfig, "config") if not p.startswith("zero_optimization")}
    assert ours == set(_RAISES_CASES)


@pytest.mark.parametrize("path", sorted(_RAISES_CASES))
def test_raises_config_fields_are_rejected_by_deepspeed_and_by_the_schema(path):
    fragment = _RAISES_CASES[path]
    assert _deepspeed_0198_rejects(fragment) is not None, f"DeepSpeed 0.19.8 accepts {fragment}"
    with pytest.raises(ValidationError) as info:
        DeepSpeedConfig.model_validate(fragment)
    located = {".".join(str(p) for p in e["loc"] if isinstance(p, str)) for e in info.value.errors()}
    assert any(path.startswith(loc) or loc.startswith(path) for loc in located), (path, located)


@pytest.mark.parametrize("fragment", _SECTION_RAISES_CASES)
def test_lenient_section_validators_match_deepspeed_errors(fragment):
    theirs = _deepspeed_0198_rejects(fragment)
    assert theirs is not None
    with pytest.raises(ValidationError) as info:
        DeepSpeedConfig.model_validate(fragment)
    assert any(e["msg"].removeprefix("Value error, ") in theirs for e in info.value.errors()), (theirs, info.value)
    complete = {"curriculum_metrics": {}} if "curriculum_learning" in str(fragment) else {"max_tokens": 8}
    section = fragment["data_efficiency"]["data_sampling"]
    fixed = {"data_efficiency": {"data_sampling": {k: {**v, **complete} for k, v in section.items()}}}
    assert _deepspeed_0198_rejects(fixed) is None
    DeepSpeedConfig.model_validate(fixed)




#: For every field marked raises="engine": a bad value DeepSpeed 0.19.8 still accepts while parsing.
_ENGINE_CASES: dict[str, dict[str, Any]] = {
    "data_types.grad_accum_dtype": {"data_types": {"grad_accum_dtype": "xyz"}},
    "data_types.param_dtype": {"data_types": {"param_dtype": "xyz"}},
    "data_types.buffer_dtype": {"data_types": {"buffer_dtype": "xyz"}},
    "pipeline.pipe_partitioned": {"pipeline": {"pipe_partitioned": "x"}},
    "pipeline.grad_partitioned": {"pipeline": {"grad_partitioned": "x"}},
    "tensor_parallel.partition_config.layer_specs.patterns": {
        "tensor_parallel": {"partition_config": {"layer_specs": [{"patterns": 3}]}}
    },
    "tensor_parallel.partition_config.layer_specs.partition_type": {
        "tensor_parallel": {"partition_config": {"layer_specs": [{"partition_type": "diagonal"}]}}
    },
    **{
        f"expert_parallel.{key}": {"expert_parallel": {key: value}}
        for key, value in (
            ("validate_folding_routing", "x"),
            ("async_split_plan", "x"),
            ("preset_model", "no-such-model"),
            ("score_apply", "x"),
            ("combine_impl", "x"),
            ("row_weighting_impl", "x"),
            ("gate_up_impl", "x"),
            ("comm_backend", "x"),
            ("comm_num_sm", 0),
            ("comm_qp_margin", -1),
            ("comm_max_tokens_per_rank", -1),
            ("num_expert_groups", 0),
            ("num_limited_groups", 0),
            ("score_func", "x"),
            ("expert_activation", "no-such-activation"),
            ("autoep_size", 0),
            ("expert_tensor_parallel_size", 2),
            ("routed_scaling_factor", "x"),
            ("has_shared_experts", "x"),
            *((name, "a.b") for name in ("expert_w1", "expert_w2", "expert_w3", "num_experts_attr", "top_k_attr",
                                         "router_pattern", "expert_pattern", "shared_experts_pattern",
                                         "shared_experts_gate_pattern")),
        )
    },
}


def _paths_marked(model: type[BaseModel], kind: str, prefix: str = "") -> set[str]:
    def models_in(annotation: Any) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in models_in(arg)]

    out: set[str] = set()
    for name, info in model.model_fields.items():
        meta = field_meta(info)
        path = f"{prefix}.{name}" if prefix else name
        if meta.exists_in("0.19.8") and meta.extra.get("raises") == kind:
            out.add(path)
        for sub in models_in(info.annotation):
            if sub is not model:
                out |= _paths_marked(sub, kind, path)
    return out


def test_raises_engine_markers_are_exactly_the_tested_fields():
    assert _paths_marked(DeepSpeedConfig, "engine") == set(_ENGINE_CASES)


@pytest.mark.parametrize("path", sorted(_ENGINE_CASES))
def test_raises_engine_fields_pass_deepspeeds_config_parsing(path):
    assert _deepspeed_0198_rejects(_ENGINE_CASES[path]) is None


def test_deepspeed_reads_an_integral_float_as_an_integer_from_a_file_and_keeps_the_float_from_a_dict(tmp_path):
    """What the scheduler.param-type message for 1000.0 says: hjson (DeepSpeed's file loader) gives an int."""
    import json

    from core import validate

    config = {"train_batch_size": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1000.0}}}
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    from_file = ds_config_mod.DeepSpeedConfig(str(path)).scheduler_params["warmup_num_steps"]
    from_dict = ds_config_mod.DeepSpeedConfig(copy.deepcopy(config)).scheduler_params["warmup_num_steps"]
    assert type(from_file) is int and from_file == 1000
    assert type(from_dict) is float
    finding = next(f for f in validate(config).findings if f.path == "scheduler.params.warmup_num_steps")
    assert "reads it as 1000 when it loads this file itself" in finding.message and "as a dict" in finding.message
    assert finding.fix.apply(config)["scheduler"]["params"]["warmup_num_steps"] == 1000


def test_deepspeed_ignores_comment_keys_at_the_top_level_and_rejects_them_in_a_strict_section():
    """keys.comment is an info where DeepSpeed ignores the key; the fix's destination (the top level) loads."""
    top = {"train_batch_size": 1, "_comment": "x", "//": "y", "description": "z"}
    ds_config_mod.DeepSpeedConfig(copy.deepcopy(top))  # accepted
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        ds_config_mod.DeepSpeedConfig({"train_batch_size": 1, "zero_optimization": {"stage": 2, "_comment": "x"}})
