"""Bug hunt of 29 November (b): values of dict.get sections that DeepSpeed uses as written, random-LTD's required
keys, switches that gate nothing, fixes that wrote the opposite of a "true" string, and top-level sections that
are not objects."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from core.findings import get_path, set_path
from core.schema import DeepSpeedConfig
from core.schema.walk import resolve
from core.validate import validate
from tests.oracle.initialize import single_rank_env
from tests.oracle.oracle import oracle_available
from ui import fields

BASE = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}


def _cfg(**extra: Any) -> dict[str, Any]:
    return {**BASE, **extra}


def _found(config: dict[str, Any], version: str = "0.19.8") -> list[tuple[str, str, str]]:
    return [(f.severity, f.code, f.path) for f in validate(config, version=version).findings
            if f.severity != "info"]


def _finding(config: dict[str, Any], code: str, version: str = "0.19.8"):
    return next(f for f in validate(config, version=version).findings if f.code == code)


# ---- 1. numbers written as text where DeepSpeed computes with them as written


@pytest.mark.parametrize(("key", "value", "number"), [
    ("profile_step", "1", 1), ("recompute_fwd_factor", "0.5", 0.5), ("top_modules", "3", 3), ("module_depth", "2", 2),
])
def test_a_flops_profiler_number_written_as_text_is_an_error_with_the_number_as_fix(key, value, number):
    config = _cfg(flops_profiler={"enabled": True, key: value})
    finding = _finding(config, "type.as-written")
    assert (finding.severity, finding.path) == ("error", f"flops_profiler.{key}")
    assert "step" in finding.message and "TypeError" in finding.message
    assert finding.fix is not None and finding.fix.apply(config)["flops_profiler"][key] == number


def test_the_profile_step_fails_at_the_first_optimizer_step():
    finding = _finding(_cfg(flops_profiler={"enabled": True, "profile_step": "1"}), "type.as-written")
    assert "at the first optimizer step" in finding.message


def test_flops_profiler_text_is_not_an_error_with_the_profiler_off_and_numbers_are_fine():
    for off in (_cfg(flops_profiler={"enabled": False, "profile_step": "1", "top_modules": "3"}),
                _cfg(flops_profiler={"profile_step": "1", "top_modules": "3"})):  # off by default
        assert [f for f in _found(off) if f[0] == "error"] == []
    on = _cfg(flops_profiler={"enabled": True, "profile_step": 2, "recompute_fwd_factor": 1, "module_depth": -1})
    assert [f for f in _found(on) if f[0] == "error"] == []


def test_flops_profiler_text_that_is_no_number_is_one_error_not_also_a_warning():
    found = _found(_cfg(flops_profiler={"enabled": True, "profile_step": "soon"}))
    assert [f for f in found if f[2] == "flops_profiler.profile_step"] == [
        ("error", "type.as-written", "flops_profiler.profile_step")]


def test_activation_checkpoint_interval_as_text_fails_at_initialize():
    config = _cfg(pipeline={"activation_checkpoint_interval": "2"})
    finding = _finding(config, "type.engine")
    assert finding.path == "pipeline.activation_checkpoint_interval" and finding.severity == "error"
    assert "initialize" in finding.message
    assert finding.fix.apply(config)["pipeline"]["activation_checkpoint_interval"] == 2


# ---- 2. pipe_partitioned / grad_partitioned: exactly true or false


@pytest.mark.parametrize("value", ["true", 1, 0, "false"])
@pytest.mark.parametrize("key", ["pipe_partitioned", "grad_partitioned"])
def test_a_pipeline_partition_switch_that_is_not_a_bool_is_an_initialize_error(key, value):
    config = _cfg(pipeline={key: value})
    finding = _finding(config, "type.engine")
    assert (finding.severity, finding.path) == ("error", f"pipeline.{key}")
    assert finding.fix.apply(config)["pipeline"][key] is (value in ("true", 1))


@pytest.mark.parametrize("value", [True, False])
def test_a_pipeline_partition_switch_that_is_a_bool_is_fine(value):
    assert _found(_cfg(pipeline={"pipe_partitioned": value, "grad_partitioned": value,
                                 "activation_checkpoint_interval": 2})) == []


# ---- 3. random-LTD without the keys its scheduler reads


@pytest.mark.parametrize("outer", [
    {"enabled": True, "data_routing": {"enabled": True}}, {}, {"enabled": False, "data_routing": {"enabled": False}},
])
def test_random_ltd_on_without_its_keys_is_an_error_whatever_the_enclosing_switches(outer):
    routing = {**outer.get("data_routing", {}), "random_ltd": {"enabled": True}}
    finding = _finding(_cfg(data_efficiency={**outer, "data_routing": routing}), "data-efficiency.random-ltd-keys")
    assert finding.severity == "error"
    assert finding.path == "data_efficiency.data_routing.random_ltd.total_layer_num"
    for key in ("total_layer_num", "random_ltd_layer_num", "random_ltd_schedule"):
        assert f"`{key}`" in finding.message


def test_random_ltd_schedule_keys_and_a_layer_token_schedule_without_its_switch():
    ltd = {"enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1,
           "random_ltd_schedule": {"min_value": 2}, "layer_token_lr_schedule": {"total_layer_tokens": 10}}
    finding = _finding(_cfg(data_efficiency={"data_routing": {"random_ltd": ltd}}), "data-efficiency.random-ltd-keys")
    assert finding.path == "data_efficiency.data_routing.random_ltd.random_ltd_schedule.max_value"
    for key in ("max_value", "schedule_config", "schedule_type", "layer_token_lr_schedule.enabled"):
        assert key in finding.message


def test_random_ltd_off_or_complete_is_not_flagged():
    complete = {"enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1, "random_ltd_schedule": None}
    for ltd in ({"enabled": False}, complete):
        codes = [f[1] for f in _found(_cfg(data_efficiency={"data_routing": {"random_ltd": ltd}}))]
        assert "data-efficiency.random-ltd-keys" not in codes


# ---- 3 and 4. the Advanced page: a switch DeepSpeed reads whatever its enclosing sections say stays editable


def _form(config: dict[str, Any]) -> fields.Form:
    return fields.Form(config=config, report=validate(config), target="deepspeed", version="0.19.8", stage=0)


@pytest.mark.parametrize(("section", "child"), [
    ("data_efficiency.data_sampling.curriculum_learning", "curriculum_metrics"),
    ("data_efficiency.data_routing.random_ltd", "total_layer_num"),
])
def test_a_switch_deepspeed_reads_regardless_of_data_efficiency_is_not_disabled_by_it(section, child):
    config = _cfg()
    set_path(config, f"{section}.enabled", True)
    form = _form(config)
    assert fields.switched_off(section, config) is None
    for name in ("enabled", child):
        field = resolve(DeepSpeedConfig, f"{section}.{name}")
        assert fields.disabled_reason(field, form, f"{section}.{name}") is None, name
    # its own switch off still disables its fields, and data_efficiency's other fields still follow data_efficiency
    set_path(config, f"{section}.enabled", False)
    assert fields.switched_off(section, config) == f"`{section}` is off: turn on `enabled` first."
    assert fields.switched_off("data_efficiency.data_sampling", config) is not None


def test_the_curriculum_error_is_shown_on_an_editable_widget():
    config = _cfg(data_efficiency={"data_sampling": {"curriculum_learning": {"enabled": True}}})
    form = _form(config)
    path = "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics"
    assert form.findings_at(path)
    assert fields.disabled_reason(resolve(DeepSpeedConfig, path), form, path) is None


# ---- 6. a fix for a "true" string writes true


@pytest.mark.parametrize(("config", "code", "path"), [
    (_cfg(wall_clock_breakdown="true"), "misc.wall-clock-breakdown", "wall_clock_breakdown"),
    (_cfg(flops_profiler={"enabled": "true"}), "misc.wall-clock-breakdown", "flops_profiler.enabled"),
    (_cfg(checkpoint={"parallel_write": {"pipeline_stage": "true"}}), "checkpoint.pipeline-stage",
     "checkpoint.parallel_write.pipeline_stage"),
])
def test_the_fix_of_a_true_string_writes_true(config, code, path):
    finding = _finding(config, code)
    assert finding.path == path
    assert get_path(finding.fix.apply(config), path) is True
    off = json.loads(json.dumps(config).replace('"true"', '"no"'))
    assert get_path(_finding(off, code).fix.apply(off), path) is False


# ---- 8. a top-level section that is not an object and that DeepSpeed reads nothing from


@pytest.mark.parametrize("value", ["auto", []])
def test_timers_that_is_not_an_object_is_said_to_be_ignored_not_to_fail(value):
    finding = _finding(_cfg(timers=value), "type.section-ignored")
    assert finding.severity == "warning" and "fails" not in finding.message and "defaults" in finding.message
    assert "type.unchecked" not in [f[1] for f in _found(_cfg(timers=value))]


def test_a_top_level_section_whose_non_object_value_fails_is_still_an_error():
    assert ("error", "type.model_type", "timers") in _found(_cfg(timers=5))


# ---- the real DeepSpeed: the pipeline engine (a PipelineModule; tests/oracle's cases use a plain model)

_PIPELINE_WORKER = textwrap.dedent("""
    import contextlib, io, json, sys, torch, deepspeed
    import deepspeed.ops
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    from deepspeed.pipe import PipelineModule
    deepspeed.init_distributed(dist_backend="gloo")
    out = {}
    for label, pipeline in json.loads(sys.argv[1]).items():
        model = PipelineModule(layers=[torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)], num_stages=1,
                               loss_fn=torch.nn.MSELoss())
        cfg = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "pipeline": pipeline}
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=1e-3), config=cfg)
            out[label] = None
        except Exception as exc:
            out[label] = type(exc).__name__
    print(json.dumps(out))
""")

_PIPELINES = {"control": {"pipe_partitioned": True, "grad_partitioned": False, "activation_checkpoint_interval": 1},
              "pipe-true-string": {"pipe_partitioned": "true"}, "pipe-one": {"pipe_partitioned": 1},
              "grad-zero": {"grad_partitioned": 0}, "interval-string": {"activation_checkpoint_interval": "2"},
              "pipe-auto": {"pipe_partitioned": "auto"}, "interval-auto": {"activation_checkpoint_interval": "auto"},
              # range() refuses a float and takes a bool (an int): 2.0 was let through, false was an error (hunt 12-01)
              "interval-float": {"activation_checkpoint_interval": 2.0},
              "control-interval-false": {"activation_checkpoint_interval": False},
              "control-interval-true": {"activation_checkpoint_interval": True}}


@pytest.mark.deepspeed
def test_the_pipeline_engine_refuses_what_the_validator_flags():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    env = single_rank_env()
    proc = subprocess.run([sys.executable, "-c", _PIPELINE_WORKER, json.dumps(_PIPELINES)], capture_output=True,
                          text=True, timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"control": None, "pipe-true-string": "AssertionError", "pipe-one": "AssertionError",
                   "grad-zero": "AssertionError", "interval-string": "TypeError", "pipe-auto": "AssertionError",
                   "interval-auto": "TypeError", "interval-float": "TypeError", "control-interval-false": None,
                   "control-interval-true": None}
    for label, pipeline in _PIPELINES.items():
        errors = [f[1] for f in _found(_cfg(pipeline=pipeline)) if f[0] == "error"]
        expected = [] if label.startswith("control") else ["auto.fails"] if "auto" in label else ["type.engine"]
        assert errors == expected, label
