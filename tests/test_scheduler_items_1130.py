"""A learning-rate list of a DeepSpeed scheduler holding something other than numbers (``warmup_min_lr: ["auto"]``):
the validator crashed (TypeError: 'float' object is not iterable, found by the hypothesis test of precision
switches), because the fix wrote the default as a list; the real schedulers fail at deepspeed.initialize
(TypeError, checked on 0.16.9 and 0.19.8 in ``tests/oracle/initialize_cases_lr.py``)."""

from __future__ import annotations

import pytest

import core
from core.schema.optimizer import SCHEDULERS

LIST_PARAMS = [(name, param.name) for name, spec in SCHEDULERS.items() for param in spec.params
               if param.item_range is not None and "array" in param.types]


def test_every_list_taking_scheduler_parameter_is_covered():
    assert ("WarmupLR", "warmup_min_lr") in LIST_PARAMS and len(LIST_PARAMS) >= 6


@pytest.mark.parametrize(("scheduler", "key"), LIST_PARAMS)
@pytest.mark.parametrize("item", ["auto", None, "x", {}, [0.1]])
def test_a_non_number_in_a_schedulers_lr_list_is_an_error_whose_fix_clears_it(scheduler, key, item):
    config = {"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
              "scheduler": {"type": scheduler, "params": {key: [item]}}}
    report = core.validate(config, world_size=8)  # used to raise TypeError
    path = f"scheduler.params.{key}"
    found = [f for f in report.findings if f.path == path and f.code == "scheduler.param-type"]
    assert found and found[0].severity == "error", report.findings
    assert "scheduler computes" in found[0].message and "C++ kernel" not in found[0].message
    if found[0].fix is not None:
        fixed = found[0].fix.apply(config)
        assert not [f for f in core.validate(fixed, world_size=8).findings
                    if f.path.startswith(path) and f.severity == "error"]
