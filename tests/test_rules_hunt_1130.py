"""A CLI hunt's findings in the rules: a key the release lacks, set to false, is not "switched on"."""

from __future__ import annotations

from core import validate


def _message(config: dict, version: str) -> str:
    (finding,) = [f for f in validate(config, version=version).findings if f.code == "keys.not-in-version-on"]
    return finding.message + " " + finding.suggestion


def test_a_false_value_the_release_lacks_is_said_as_its_value_not_switched_on():
    """compute_grad_norm false on 0.19.6: the message said "it is switched on" and "remove it knowing the feature is
    off" while false turns a default behaviour off."""
    zero = {"stage": 2, "compute_grad_norm": False}
    said = _message({"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero}, "0.19.6")
    assert "switched on" not in said and "feature is off" not in said
    assert "its value false asks for something" in said and "their default is true" in said


def test_an_enabled_section_the_release_lacks_is_still_switched_on():
    said = _message({"train_micro_batch_size_per_gpu": 1, "torch_autocast": {"enabled": True}}, "0.17.1")
    assert "it is switched on" in said
