"""A section given as a string or list where DeepSpeed tests ``KEY in section`` (a hunt: `"timers": "throughput"`
passed as "the section's defaults" while DeepSpeed's get_timers_config then reads "throughput"["throughput"] and
fails). The releases' own parsers judge; what each release does is read from it (the profiles'
``top_level_member_probes``)."""

from __future__ import annotations

import pytest

from core import validate
from core.versions import profile
from tests.oracle.oracle import deepspeed_verdicts, oracle_available

VALUES = ["throughput", ["throughput"], "no_throughput_timer", ["x", "throughput"], "x", [], ["x"], "thru"]
RELEASES = ["0.19.8", "0.16.9"]


def test_every_profile_says_which_keys_fail():
    assert profile("0.19.8")["top_level_member_probes"]["string"]["timers"] == ["throughput"]


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", RELEASES)
def test_the_validator_refuses_what_the_release_refuses(version):
    if (missing := oracle_available(version)) is not None:
        pytest.fail(missing)
    configs = [{"train_micro_batch_size_per_gpu": 1, "timers": value} for value in VALUES]
    verdicts = deepspeed_verdicts([(config, 1) for config in configs], version)
    for config, verdict in zip(configs, verdicts, strict=True):
        errors = [f.code for f in validate(config, version=version).findings
                  if f.severity == "error" and f.path == "timers"]
        assert bool(errors) == (not verdict.accepted), (config["timers"], verdict.describe(), errors)
    assert sum(not v.accepted for v in verdicts) == 4  # the four holding "throughput"


def test_the_throughput_timer_is_profiled_as_the_pydantic_model_it_is():
    """The profiles found a release's pydantic sections by probing top-level keys only, so the throughput timer
    (``DeepSpeedThroughputTimerConfig``, built from ``timers.throughput`` alone) was read as a dict section, and
    "auto" there was said to be kept as a string (a true value) while DeepSpeed drops it and uses the default."""
    for version in RELEASES:
        section = profile(version)["sections"]["timers.throughput"]
        assert section["model"] == "DeepSpeedThroughputTimerConfig" and set(section["fields"]) == {"enabled",
                                                                                                  "synchronized"}
    config = {"train_micro_batch_size_per_gpu": 1, "timers": {"throughput": {"enabled": "auto"}}}
    findings = [(f.severity, f.code) for f in validate(config).findings if f.path.startswith("timers")]
    assert findings == [("info", "auto.default")]


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", RELEASES)
def test_auto_in_the_throughput_timer_is_the_default_to_the_release(version):
    if (missing := oracle_available(version)) is not None:
        pytest.fail(missing)
    configs = [{"train_micro_batch_size_per_gpu": 1, "timers": {"throughput": {"enabled": "auto"}}},
               {"train_micro_batch_size_per_gpu": 1, "timers": {"throughput": {"enabled": "auto", "x": 1}}}]
    accepted, refused = deepspeed_verdicts([(config, 1) for config in configs], version)
    assert accepted.accepted and not refused.accepted
    assert not validate(configs[0], version=version).errors
    assert [f.code for f in validate(configs[1], version=version).errors] == ["keys.unknown"]
