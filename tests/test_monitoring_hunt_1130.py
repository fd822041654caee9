""""auto" in monitoring and gradient settings (a read-only hunt of 30 Nov 2026, confirmed with deepspeed.initialize
on 0.16.9 and 0.19.8: the cases in ``tests/oracle/initialize_cases_lr.py``): warnings where DeepSpeed fails, and a
comms logger that "auto" leaves on said to be off."""

from __future__ import annotations

import pytest

import core

B = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4}


@pytest.mark.parametrize(("config", "code", "path"), [
    ({"gradient_predivide_factor": "auto"}, "auto.fails", "gradient_predivide_factor"),
    ({"gradient_predivide_factor": "auto", "zero_optimization": {"stage": 2}}, "auto.fails",
     "gradient_predivide_factor"),
    ({"prescale_gradients": "auto", "zero_optimization": {"stage": 3}}, "engine.prescale-reduce-scatter",
     "prescale_gradients"),
    ({"flops_profiler": {"enabled": True, "profile_step": "auto"}}, "auto.fails", "flops_profiler.profile_step"),
    ({"flops_profiler": {"enabled": True, "module_depth": "auto"}}, "auto.fails", "flops_profiler.module_depth"),
    ({"flops_profiler": {"enabled": True, "top_modules": "auto"}}, "auto.fails", "flops_profiler.top_modules"),
    ({"flops_profiler": {"enabled": True, "recompute_fwd_factor": "auto"}}, "auto.fails",
     "flops_profiler.recompute_fwd_factor"),
])
def test_an_auto_deepspeed_fails_on_is_an_error(config, code, path):
    errors = core.validate({**B, **config}, world_size=1).errors
    assert (code, path) in [(f.code, f.path) for f in errors], errors


def test_prescale_auto_without_zero_trains_and_is_only_the_auto_warning():
    found = core.validate({**B, "prescale_gradients": "auto"}, world_size=1).findings
    assert [(f.code, f.severity) for f in found] == [("auto.kept", "warning")]


def test_a_comms_logger_whose_enabled_is_auto_is_said_to_be_on():
    found = {f.code: f for f in core.validate({**B, "comms_logger": {"enabled": "auto"}}, world_size=1).findings}
    assert "misc.comms-logger-on" in found and "enabled` is \"auto\"" in found["misc.comms-logger-on"].message
    # under the HF Trainer, Accelerate refuses the "auto" first: that error, not the logger's warning
    hf = {f.code for f in core.validate({**B, "comms_logger": {"enabled": "auto"}}, world_size=1, target="hf").findings}
    assert "auto.not-filled" in hf and "misc.comms-logger-on" not in hf


@pytest.mark.parametrize(("value", "code"), [(None, "removed.key"), (False, "removed.key"), (0, "removed.key"),
                                             (True, "removed.enabled-section"), ("yes", "removed.enabled-section")])
def test_a_removed_flag_is_switched_on_by_its_truth_value(value, code):
    """sparse_gradients: null on 0.19.8 was "switched on" (null differs from the default false); the releases that
    read it test its truth value, so null is off. The refusal is the same; the code and words say which."""
    found = [f.code for f in core.validate({**B, "sparse_gradients": value}, world_size=1, version="0.19.8").errors]
    assert found == [code]
