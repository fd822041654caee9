"""What monitoring and debugging settings cost the step, in the planner.

- A ``comms_logger`` section turns DeepSpeed's logger on by its presence (``DeepSpeedCommsConfig``:
  ``comms_logger_enabled = 'comms_logger' in ds_config``, whatever ``enabled`` says), and ``deepspeed.comm``'s
  ``timed_op`` then synchronises the device after every collective, so no communication overlaps compute.
  ``predict`` costed such a config as if its collectives overlapped, and said nothing of the logger.
- ``wall_clock_breakdown`` (also on with the flops profiler), ``memory_breakdown`` and progressive layer drop are
  not costed; ``predict`` now names them as not modelled, as the issue asks of everything it ignores.
"""

from __future__ import annotations

import inspect
import re

import pytest

from core.effective import effective
from core.memory import Shape
from core.models import get_spec
from core.perf import Cluster, predict
from core.perf.advice import duration_text

SPEC = get_spec("meta-llama/Llama-2-7b-hf")
SLOW = Cluster("NVIDIA A100 80GB", 8, 8, inter_node_gbit_s=100)
SHAPE = Shape(4, 2048, "flash")


def _config(stage: int, **extra) -> dict:
    return {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
            "zero_optimization": {"stage": stage, "overlap_comm": True}, **extra}


@pytest.mark.parametrize("section", [{"enabled": True}, {"enabled": False}, {}, {"enabled": "auto"}])
def test_the_logger_is_on_whenever_the_section_is_there_as_every_release_reads_it(section):
    assert effective(_config(3, comms_logger=section)).comms_logger
    assert not effective(_config(3)).comms_logger


#: What the readings here rest on, in the installed DeepSpeed's source: (module, object, a line of its source).
SOURCE_READINGS = [
    ("deepspeed.comm.config", "DeepSpeedCommsConfig.__init__",
     "self.comms_logger_enabled = 'comms_logger' in ds_config"),
    ("deepspeed.comm.comm", "timed_op", "get_accelerator().synchronize()"),
    ("deepspeed.runtime.config", "DeepSpeedConfig._initialize_params",
     "get_wall_clock_breakdown(param_dict) | self.flops_profiler_config.enabled"),
    ("deepspeed.runtime.engine", "DeepSpeedEngine._forward_prologue",
     'see_memory_usage("Engine before forward", force=self.memory_breakdown())'),
    ("deepspeed.runtime.utils", "see_memory_usage", "gc.collect()"),
]


@pytest.mark.parametrize(("module", "name", "line"), SOURCE_READINGS, ids=[r[1] for r in SOURCE_READINGS])
def test_the_readings_match_the_release_source(module, name, line):
    found = pytest.importorskip(module)
    for part in name.split("."):
        found = getattr(found, part)
    assert line in inspect.getsource(found)


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_with_the_logger_no_collective_hides_behind_compute(stage):
    quiet = predict(_config(stage), SPEC, SLOW, SHAPE)
    logged = predict(_config(stage, comms_logger={"enabled": False}), SPEC, SLOW, SHAPE)
    assert logged.step_seconds > quiet.step_seconds
    assert not any(name.endswith("(exposed)") for name in logged.breakdown)
    assert any(name.endswith("(exposed)") for name in quiet.breakdown)
    # the collectives are the same work, all of it on the critical path now
    compute = "forward + backward compute"
    assert logged.breakdown[compute] == pytest.approx(quiet.breakdown[compute])
    assert any("comms_logger is present" in note for note in logged.notes)
    assert not any("comms_logger" in note for note in quiet.notes)


def test_the_bottleneck_says_what_removing_the_section_saves():
    config = _config(3, comms_logger={"enabled": True})
    logged = predict(config, SPEC, SLOW, SHAPE)
    without = predict({k: v for k, v in config.items() if k != "comms_logger"}, SPEC, SLOW, SHAPE)
    assert "The communication logger" in logged.bottleneck
    figures = re.search(r"\((\S+ \S+) → (\S+ \S+) per step\)", logged.bottleneck.split("communication logger")[1])
    assert figures.groups() == (duration_text(logged.step_seconds), duration_text(without.step_seconds))
    assert "communication logger" not in without.bottleneck


def test_one_gpu_has_no_collective_and_no_logger_advice():
    one = Cluster("NVIDIA A100 80GB", 1, 1)
    logged = predict(_config(2, comms_logger={"enabled": True}), SPEC, one, Shape(1, 512, "flash"))
    assert "communication logger" not in logged.bottleneck


@pytest.mark.parametrize(("extra", "named"), [
    ({"wall_clock_breakdown": True}, True), ({"wall_clock_breakdown": 1}, True),
    ({"wall_clock_breakdown": False}, False), ({}, False),
    ({"flops_profiler": {"enabled": True}}, True),  # DeepSpeedConfig: wall_clock_breakdown | flops_profiler.enabled
])
def test_wall_clock_breakdown_is_named_as_not_modelled_when_the_engine_runs_its_timers(extra, named):
    """engine.step logs the micro timers after every micro-step when wall_clock_breakdown is on, which synchronises
    the host with the device: not costed, so named."""
    notes = predict(_config(2, **extra), SPEC, SLOW, SHAPE).notes
    assert any(n.startswith("Not modelled: wall_clock_breakdown") for n in notes) is named


@pytest.mark.parametrize(("section", "named"), [({"enabled": True}, True), ({"enabled": False}, False), ({}, False)])
def test_progressive_layer_drop_is_named_as_not_modelled_where_a_release_runs_it(section, named):
    notes = predict(_config(2, progressive_layer_drop=section), SPEC, SLOW, SHAPE, version="0.17.6").notes
    assert any(n.startswith("Not modelled: progressive layer drop") for n in notes) is named


@pytest.mark.parametrize(("value", "named"), [(True, True), (False, False)])
def test_memory_breakdown_is_named_as_not_modelled(value, named):
    """engine.forward/backward/step call see_memory_usage(force=memory_breakdown): gc.collect() on rank 0."""
    notes = predict(_config(2, memory_breakdown=value), SPEC, SLOW, SHAPE).notes
    assert any(n.startswith("Not modelled: memory_breakdown") for n in notes) is named
