"""compression_training at deepspeed.initialize in the releases that read it (up to 0.19.6; 0.19.7 on refuse the
section on sight): a read-only hunt of 1 Dec 2026 found configs the validator passed and initialize refuses.

- A group without ``modules`` (the parser's default is the string "*", iterated one character at a time, and "*" is
  no regular expression), or with a pattern that is none, fails when the compression scheduler searches the model's
  module names (``re.search``), even for a technique that is off: ``compression.group-modules``.
- Weight quantization without ``shared_parameters`` fails (KeyError ``quantize_weight_in_forward``), and switched on
  while quantizing in the optimizer step it asserts fp16: ``compression.weight-quantization``.
- A switched-on technique whose ``schedule_offset`` is text or null fails at the first forward pass, where the
  scheduler compares the step with it (TypeError): ``type.as-written``; a bool compares as a number and trains.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.autofix import fix_until_stable
from core.validate import validate
from tests.oracle.initialize import SGD, TINY
from tests.oracle.oracle import oracle_available

#: This module's real-initialize test proves the codes on an old release (0.19.8 refuses the section while parsing,
#: so tests/oracle/initialize_cases.py cannot).
PROVEN_ON_OLDER_RELEASES = frozenset({"compression.group-modules", "compression.weight-quantization",
                                      "compression.sparse-pruning-step"})
RELEASE = "0.19.6"  # the newest release that reads compression_training (0.16.9 agreed when the hunt checked it)

ROWS = {"params": {"dense_ratio": 0.5}}
WQ_GROUP = {"params": {"start_bits": 8, "target_bits": 8}, "modules": ["0"]}
AQ_GROUP = {"params": {"bits": 8}, "modules": ["0"]}

#: label: (compression_training, the finding's (code, path), what initialize raises: (error type, message part))
CASES: dict[str, tuple[dict[str, Any], tuple[str, str] | None, tuple[str, str] | None]] = {
    "group-without-modules": (
        {"row_pruning": {"shared_parameters": {"enabled": False}, "different_groups": {"g": ROWS}}},
        ("compression.group-modules", "compression_training.row_pruning.different_groups.g"),
        ("error", "nothing to repeat")),
    "unbalanced-pattern": (
        {"sparse_pruning": {"shared_parameters": {}, "different_groups": {"g": {**ROWS, "modules": ["0", "(fc"]}}}},
        ("compression.group-modules", "compression_training.sparse_pruning.different_groups.g.modules"),
        ("error", "missing ), unterminated subpattern")),
    "modules-a-number": (
        {"row_pruning": {"shared_parameters": {}, "different_groups": {"g": {**ROWS, "modules": 3}}}},
        ("compression.group-modules", "compression_training.row_pruning.different_groups.g.modules"),
        ("TypeError", "not iterable")),
    "weight-quantization-without-shared": (
        {"weight_quantization": {"different_groups": {}}},
        ("compression.weight-quantization", "compression_training.weight_quantization"),
        ("KeyError", "quantize_weight_in_forward")),
    "weight-quantization-on-without-fp16": (
        {"weight_quantization": {"shared_parameters": {"enabled": True}, "different_groups": {"g": WQ_GROUP}}},
        ("compression.weight-quantization", "compression_training.weight_quantization.shared_parameters.enabled"),
        ("AssertionError", "only supported for FP16")),
    "sparse-pruning-l1-on": (
        {"sparse_pruning": {"shared_parameters": {"enabled": True, "method": "l1", "schedule_offset": 0},
                            "different_groups": {"g": {**ROWS, "modules": ["0"]}}}},
        ("compression.sparse-pruning-step", "compression_training.sparse_pruning.shared_parameters.method"),
        ("step", "KeyError", "schedule_offset_end")),
    "control-sparse-pruning-snip-momentum-on": (
        {"sparse_pruning": {"shared_parameters": {"enabled": True, "method": "snip_momentum", "schedule_offset": 0,
                                                  "schedule_offset_end": 10, "dense_ratio": 0.5},
                            "different_groups": {"g": {**ROWS, "modules": ["0"]}}}}, None, None),
    "control-modules-a-string": (
        {"row_pruning": {"shared_parameters": {}, "different_groups": {"g": {**ROWS, "modules": "0"}}}}, None, None),
    "control-patterns": (
        {"row_pruning": {"shared_parameters": {}, "different_groups": {"g": {**ROWS, "modules": ["0", ".*"]}}}},
        None, None),
    # an as-written schedule_offset: the scheduler compares the step with it at the first forward pass
    "row-pruning-offset-text": (
        {"row_pruning": {"shared_parameters": {"enabled": True, "schedule_offset": "5"},
                         "different_groups": {"g": {**ROWS, "modules": ["0"]}}}},
        ("type.as-written", "compression_training.row_pruning.shared_parameters.schedule_offset"),
        ("step", "TypeError", "not supported between instances")),
    "activation-quantization-offset-null": (
        {"activation_quantization": {"shared_parameters": {"enabled": True, "schedule_offset": None},
                                     "different_groups": {"g": AQ_GROUP}}},
        ("type.as-written", "compression_training.activation_quantization.shared_parameters.schedule_offset"),
        ("step", "TypeError", "not supported between instances")),
    "weight-quantization-offset-text": (
        {"weight_quantization": {"shared_parameters": {"enabled": True, "quantize_weight_in_forward": True,
                                                       "schedule_offset": "0"},
                                 "different_groups": {"g": WQ_GROUP}}},
        ("type.as-written", "compression_training.weight_quantization.shared_parameters.schedule_offset"),
        ("step", "TypeError", "not supported between instances")),
    "control-row-pruning-on-offset-later": (
        {"row_pruning": {"shared_parameters": {"enabled": True, "schedule_offset": 5},
                         "different_groups": {"g": {**ROWS, "modules": ["0"]}}}}, None, None),
    "control-row-pruning-offset-true": (  # a bool compares as 1
        {"row_pruning": {"shared_parameters": {"enabled": True, "schedule_offset": True},
                         "different_groups": {"g": {**ROWS, "modules": ["0"]}}}}, None, None),
    "control-offset-text-technique-off": (
        {"row_pruning": {"shared_parameters": {"enabled": False, "schedule_offset": "5"},
                         "different_groups": {"g": {**ROWS, "modules": ["0"]}}}}, None, None),
    "control-weight-quantization-off": (
        {"weight_quantization": {"shared_parameters": {}, "different_groups": {"g": WQ_GROUP}}}, None, None),
}


def _config(section: dict[str, Any]) -> dict[str, Any]:
    return {**TINY, "optimizer": SGD, "bf16": {"enabled": True}, "compression_training": section}


@pytest.mark.parametrize("label", list(CASES))
def test_the_rules_say_what_initialize_does(label):
    section, finding, failure = CASES[label]
    errors = [(f.code, f.path) for f in validate(_config(section), version=RELEASE).errors]
    assert errors == ([finding] if finding else [])
    if failure is not None:
        [message] = [f.message for f in validate(_config(section), version=RELEASE).errors]
        said = ("training fails", "at the first forward pass") if failure[0] == "step" else ("deepspeed.initialize",)
        assert any(words in message for words in said), message


def test_releases_that_refuse_the_section_say_only_that():
    codes = {f.code for f in validate(_config(CASES["group-without-modules"][0]), version="0.19.8").errors}
    assert codes == {"removed.enabled-section"}


def test_the_weight_quantization_fix_adds_what_the_parser_needs_and_keeps_the_technique_off():
    config = _config(CASES["weight-quantization-without-shared"][0])
    fixed = fix_until_stable(config, version=RELEASE).config
    assert fixed["compression_training"]["weight_quantization"]["shared_parameters"] == {}
    assert not validate(fixed, version=RELEASE).errors


@pytest.mark.deepspeed
def test_real_initialize_fails_where_the_rules_say():
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(RELEASE):
        pytest.skip(oracle_available(RELEASE))
    fixed = fix_until_stable(_config(CASES["weight-quantization-without-shared"][0]), version=RELEASE).config
    run = run_initialize_configs({**{label: _config(section) for label, (section, _, _) in CASES.items()},
                                 "fixed": fixed}, RELEASE)
    for label, (_, _, failure) in [*CASES.items(), ("fixed", (None, None, None))]:
        got = run.results[label]
        if failure is None:
            assert not got["raised"] and not got["step"]["raised"], (label, got)
            continue
        *phase, error_type, message = failure
        outcome = got["step"] if phase == ["step"] else got
        assert not phase or not got["raised"], (label, got)  # a step failure: initialize went through
        assert outcome["raised"] and outcome["error_type"] == error_type and message in outcome["message"], (label,
                                                                                                           got)


#: sparse pruning's shared parameters: (shared_parameters, refused by the parse)
SPARSE = [
    ({"method": "l1", "dense_ratio": 5}, False),  # read only for snip_momentum: was a false alarm
    ({"method": "topk", "dense_ratio": -1}, False),
    ({"method": "snip_momentum", "dense_ratio": 5}, True),
    ({"method": "snip_momentum", "dense_ratio": "0.5"}, True),  # compared as written: TypeError
    ({"method": "snip_momentum", "schedule_offset": 100, "schedule_offset_end": 10}, True),
    ({"method": "snip_momentum", "schedule_offset": "5", "schedule_offset_end": 10}, True),
    ({"method": "snip_momentum", "schedule_offset": 10, "schedule_offset_end": None}, True),
    ({"method": "snip_momentum", "schedule_offset": 10, "schedule_offset_end": 100, "dense_ratio": 0.3}, False),
    ({"method": "snip_momentum"}, False),
]


def _sparse(shared: dict[str, Any]) -> dict[str, Any]:
    return {**TINY, "compression_training": {"sparse_pruning": {"shared_parameters": shared, "different_groups": {}}}}


@pytest.mark.parametrize(("shared", "refused"), SPARSE)
def test_sparse_pruning_checks_snip_momentum_only_as_its_parser_does(shared, refused):
    assert bool(validate(_sparse(shared), version=RELEASE).errors) is refused


@pytest.mark.deepspeed
def test_the_sparse_pruning_verdicts_are_the_real_parsers():
    from tests.oracle.oracle import deepspeed_verdict

    if oracle_available(RELEASE):
        pytest.skip(oracle_available(RELEASE))
    for shared, refused in SPARSE:
        assert deepspeed_verdict(_sparse(shared), 1, RELEASE).accepted is not refused, shared
