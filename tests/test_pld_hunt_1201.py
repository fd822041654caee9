"""Progressive layer drop (read up to 0.19.7) as the engine reads it (a read-only hunt, 1 Dec 2026).

Switched on, deepspeed.initialize builds ``ProgressiveLayerDrop(theta=pld_params['theta'],
gamma=pld_params['gamma'])``: DeepSpeed has no default for either (the schema's 1.0 and 0.001 were read as if it
had, so a missing one passed), and each optimizer step computes the keep probability with them as written (text or
null: TypeError). Proven with the real 0.19.7's initialize (``check_real_run``, in the legacy curriculum's run).
"""

from __future__ import annotations

import pytest

from core.validate import validate
from tests.oracle.initialize import SGD, TINY

CODE = "progressive-layer-drop.keys"
#: This module's real-initialize test proves the code on the last release that reads the section (0.19.8 refuses
#: it while parsing, so tests/oracle/initialize_cases.py cannot).
PROVEN_ON_OLDER_RELEASES = frozenset({CODE})

#: label: (progressive_layer_drop, the (code, path) errors the validator reports)
CASES: dict[str, tuple[dict, set[tuple[str, str]]]] = {
    "complete": ({"enabled": True, "theta": 0.5, "gamma": 0.001}, set()),
    "no-theta": ({"enabled": True, "gamma": 0.001}, {(CODE, "progressive_layer_drop.theta")}),
    "no-gamma": ({"enabled": True, "theta": 0.5}, {(CODE, "progressive_layer_drop.gamma")}),
    "off-as-text": ({"enabled": "false"}, {(CODE, "progressive_layer_drop.theta")}),  # a non-empty string is on
    "theta-as-text": ({"enabled": True, "theta": "0.5", "gamma": 0.001},
                      {("type.as-written", "progressive_layer_drop.theta")}),
    "gamma-null": ({"enabled": True, "theta": 0.5, "gamma": None},
                   {("type.as-written", "progressive_layer_drop.gamma")}),
    "off": ({"enabled": False}, set()),
}


def _config(section: dict) -> dict:
    return {**TINY, "optimizer": SGD, "progressive_layer_drop": section}


@pytest.mark.parametrize("version", ["0.16.9", "0.19.7"])
@pytest.mark.parametrize("label", CASES)
def test_the_validator_says_what_the_engine_reads(label, version):
    section, expected = CASES[label]
    errors = {(f.code, f.path) for f in validate(_config(section), version=version).errors}
    assert errors == expected, label


#: The labels run through the real 0.19.7 (in tests/test_advanced_hunt_1129d.py's run of the same release, one
#: DeepSpeed import for both legacy sections): ``check_real_run`` judges their outcomes.
REAL_RUN = ("complete", "no-theta", "no-gamma", "off-as-text", "off")


def real_run_configs() -> dict[str, dict]:
    return {f"pld-{label}": _config(CASES[label][0]) for label in REAL_RUN}


def check_real_run(results: dict[str, dict]) -> None:
    """The missing keys stop 0.19.7's initialize with the KeyError the rule names; the complete section initializes
    (its first forward then passes progressive_layer_drop= and pld_theta= to the model, which the oracle's plain
    model does not take: the failure the suggestion warns of)."""
    for label in ("no-theta", "no-gamma", "off-as-text"):
        outcome = results[f"pld-{label}"]
        key = next(path for code, path in CASES[label][1]).rpartition(".")[2]
        assert outcome["raised"] and outcome["error_type"] == "KeyError" and key in outcome["message"], outcome
    assert not results["pld-complete"]["raised"]
    assert "progressive_layer_drop" in (results["pld-complete"]["step"] or {}).get("message", "")
    assert not results["pld-off"]["raised"] and not results["pld-off"]["step"]["raised"]
