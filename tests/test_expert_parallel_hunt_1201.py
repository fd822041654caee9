"""AutoEP (``expert_parallel``) at deepspeed.initialize: a hunt of 1 Dec 2026 ran ``validate_autoep_config``'s checks
(0.19.6-0.19.8, one rank, a model without MoE layers, which reaches every check of the function) against the
validator, which was silent on most of them and raised false alarms for a section that is off.

- Choice keys (score_apply, combine_impl, ..., preset_model, expert_activation) accept the values the release's own
  function lists, read into its profile (``autoep_choices``): ``expert-parallel.choice``.
- Names looked up with getattr must be non-empty strings without dots: ``expert-parallel.attribute-name``.
- Combinations the function refuses: ``expert-parallel.combination``.
- Values of the wrong type (``"12"``, ``12.0`` for an int, ``"yes"`` for a bool, text for a number): ``type.engine``
  through the schema's ``as_written="initialize"``; bounds (``comm_num_sm`` >= 1) likewise.
- Nothing is checked while ``enabled`` is off (a Python truth value: ``"false"`` is on).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.validate import validate
from core.versions import profile
from tests.oracle.initialize import SGD, TINY
from tests.oracle.oracle import oracle_available

#: This module's real-initialize test proves the codes (initialize_cases.py runs one config per case at 0.19.8 with
#: a model of its own; these need the section on a plain model, several releases).
PROVEN_ON_OLDER_RELEASES = frozenset({"expert-parallel.choice", "expert-parallel.attribute-name",
                                      "expert-parallel.combination"})

ON = {"enabled": True}

#: label: (release, expert_parallel, other top-level keys, the finding's (code, key) or None, DeepSpeed's message part)
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any], tuple[str, str] | None, str | None]] = {
    "score-apply-unknown": ("0.19.8", {**ON, "score_apply": "bogus"}, {},
                           ("expert-parallel.choice", "score_apply"), "score_apply must be one of"),
    "preset-model-capitalised": ("0.19.8", {**ON, "preset_model": "Mixtral"}, {},
                                 ("expert-parallel.choice", "preset_model"), "Unknown preset_model"),
    "gate-up-impl-unknown": ("0.19.8", {**ON, "gate_up_impl": "joint"}, {},
                             ("expert-parallel.choice", "gate_up_impl"), "gate_up_impl must be one of"),
    "fused-weighted-sum-in-0.19.6": ("0.19.6", {**ON, "combine_impl": "fused_weighted_sum"}, {},
                                     ("expert-parallel.choice", "combine_impl"), "combine_impl must be one of"),
    "expert-w1-empty": ("0.19.8", {**ON, "expert_w1": ""}, {},
                        ("expert-parallel.attribute-name", "expert_w1"), "expert_w1 must be a non-empty string"),
    "router-pattern-a-path": ("0.19.8", {**ON, "router_pattern": "mlp.gate"}, {},
                              ("expert-parallel.attribute-name", "router_pattern"), "no dots"),
    "deepep-without-token-budget": ("0.19.7", {**ON, "comm_backend": "deepep"}, {},
                                    ("expert-parallel.combination", "comm_max_tokens_per_rank"),
                                    "comm_max_tokens_per_rank must be a positive integer when comm_backend"),
    "fused-gate-up-without-grouped-mm": ("0.19.8", {**ON, "gate_up_impl": "fused", "use_grouped_mm": False}, {},
                                         ("expert-parallel.combination", "gate_up_impl"), "use_grouped_mm=false"),
    "fused-row-weighting-without-deepep": ("0.19.8", {**ON, "row_weighting_impl": "fused"}, {},
                                           ("expert-parallel.combination", "row_weighting_impl"),
                                           "only runs inside the DeepEP route"),
    "more-limited-than-expert-groups": ("0.19.8", {**ON, "num_expert_groups": 2, "num_limited_groups": 3}, {},
                                        ("expert-parallel.combination", "num_limited_groups"), "must be <="),
    "presets-differ": ("0.19.8", {**ON, "preset_model": "qwen3_moe"}, {"tensor_parallel": {"preset_model": "mixtral"}},
                       ("expert-parallel.combination", "preset_model"), "must match"),
    "autoep-size-over-the-gpus": ("0.19.8", {**ON, "autoep_size": 2}, {},
                                  ("expert-parallel.combination", "autoep_size"), "must divide"),
    "switch-false-as-text-is-on": ("0.19.8", {"enabled": "false", "score_func": "x"}, {},
                                   ("expert-parallel.choice", "score_func"), "score_func must be one of"),
    "comm-num-sm-zero-in-0.19.7": ("0.19.7", {**ON, "comm_num_sm": 0}, {}, ("type.engine", "comm_num_sm"),
                                   "comm_num_sm must be a positive integer"),
    "comm-num-sm-a-float": ("0.19.8", {**ON, "comm_num_sm": 12.0}, {}, ("type.engine", "comm_num_sm"),
                            "comm_num_sm must be a positive integer"),
    "autoep-size-text": ("0.19.8", {**ON, "autoep_size": "1"}, {}, ("type.engine", "autoep_size"),
                         "autoep_size must be a positive integer"),
    "expert-tensor-parallel-2": ("0.19.8", {**ON, "expert_tensor_parallel_size": 2}, {},
                                 ("type.engine", "expert_tensor_parallel_size"), "expert_tensor_parallel_size"),
    "folding-check-yes": ("0.19.6", {**ON, "validate_folding_routing": "yes"}, {},
                          ("type.engine", "validate_folding_routing"), "must be a boolean"),
    "shared-experts-one": ("0.19.8", {**ON, "has_shared_experts": 1}, {}, ("type.engine", "has_shared_experts"),
                           "has_shared_experts must be a boolean when set"),
    "routed-scaling-text": ("0.19.8", {**ON, "routed_scaling_factor": "2.5"}, {},
                            ("type.engine", "routed_scaling_factor"), "must be a number or 'auto'"),
    "expert-groups-text": ("0.19.8", {**ON, "num_expert_groups": "2"}, {}, ("type.engine", "num_expert_groups"),
                           "not supported between instances"),
    # controls: DeepSpeed builds the engine and takes a step
    "control-off-with-bad-values": ("0.19.8", {"enabled": False, "comm_num_sm": 0, "score_apply": None,
                                               "num_expert_groups": 0, "expert_w1": ""}, {}, None, None),
    # (no preset_model: a named preset makes initialize look for its MoE layers, which this model has none of)
    "control-good-values": ("0.19.8", {**ON, "score_apply": "post",
                                       "combine_impl": "fused_weighted_sum", "expert_w3": None,
                                       "has_shared_experts": None, "num_expert_groups": 2.0,
                                       "num_limited_groups": 1, "routed_scaling_factor": 2.5, "top_k": "2"}, {},
                            None, None),
    "control-fused-weighted-sum-in-0.19.7": ("0.19.7", {**ON, "combine_impl": "fused_weighted_sum"}, {}, None, None),
}


def _config(section: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    return {**TINY, "optimizer": SGD, "bf16": {"enabled": True}, **extra, "expert_parallel": section}


@pytest.mark.parametrize("label", list(CASES))
def test_the_rules_say_what_initialize_does(label):
    release, section, extra, finding, _ = CASES[label]
    errors = [(f.code, f.path) for f in validate(_config(section, extra), version=release).errors]
    assert errors == ([(finding[0], f"expert_parallel.{finding[1]}")] if finding else [])


def test_the_choices_are_read_from_each_release():
    assert profile("0.19.1").get("autoep_choices") is None and profile("0.16.9").get("autoep_choices") is None
    assert "fused_weighted_sum" not in profile("0.19.6")["autoep_choices"]["combine_impl"]
    assert "fused_weighted_sum" in profile("0.19.7")["autoep_choices"]["combine_impl"]
    assert None in profile("0.19.8")["autoep_choices"]["preset_model"]  # null: the model's own preset
    assert None not in profile("0.19.8")["autoep_choices"]["score_apply"]


def test_a_choice_in_another_case_is_fixed_to_the_releases_spelling():
    config = _config({**ON, "preset_model": "Mixtral"}, {})
    [error] = validate(config, version="0.19.8").errors
    assert error.fix is not None and error.fix.apply(config)["expert_parallel"]["preset_model"] == "mixtral"


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", sorted({case[0] for case in CASES.values()}))
def test_real_initialize_fails_where_the_rules_say(release):
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    cases = {label: case for label, case in CASES.items() if case[0] == release}
    run = run_initialize_configs({label: _config(section, extra) for label, (_, section, extra, _, _) in
                                  cases.items()}, release)
    for label, (_, _, _, _, message) in cases.items():
        got = run.results[label]
        if message is None:
            assert not got["raised"] and not got["step"]["raised"], (label, got)
        else:
            assert got["raised"] and message in got["message"], (label, got)


def test_which_combinations_a_release_checks_is_read_from_its_source():
    """0.19.2's AutoEP refuses AutoTP outright and has no preset-matching check; 0.19.3 on fold AutoEP into AutoTP
    and check the presets (the profiles' ``autoep_checks``, the messages each release's AutoEP raises)."""
    with_tp = _config({**ON, "preset_model": "qwen3_moe"},
                      {"tensor_parallel": {"autotp_size": 2, "preset_model": "mixtral"}})
    old = [(f.code, f.path) for f in validate(with_tp, version="0.19.2", world_size=2).errors
           if f.code.startswith("expert-parallel")]
    new = [(f.code, f.path) for f in validate(with_tp, version="0.19.8", world_size=2).errors
           if f.code.startswith("expert-parallel")]
    assert old == [("expert-parallel.combination", "expert_parallel.enabled")]
    assert new == [("expert-parallel.combination", "expert_parallel.preset_model")]
    assert any("does not currently support AutoTP" in m for m in profile("0.19.2")["autoep_checks"])
    assert not any("does not currently support AutoTP" in m for m in profile("0.19.8")["autoep_checks"])
