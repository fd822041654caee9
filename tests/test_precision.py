"""core.precision: which precision a config selects, and switching it by the enabled flags only."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core
from core.effective import effective
from core.precision import (
    PRECISION_MODES,
    bf16_section,
    precision_mode,
    remembered_after,
    with_precision_mode,
)
from core.schema import KNOWN_VERSIONS
from tests.fuzz_strategies import FUZZ_SETTINGS, any_config


@pytest.mark.parametrize(("config", "mode"), [
    ({}, "fp32"),
    ({"fp16": {"enabled": False}, "bf16": {"enabled": False}}, "fp32"),
    ({"fp16": {"enabled": True}}, "fp16"),
    ({"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}, "fp16"),  # HF's template: first wins
    ({"bf16": {"enabled": True}}, "bf16"),
    ({"bfloat16": {"enabled": True}}, "bf16"),
    ({"bf16": {"enabled": False}, "bfloat16": {"enabled": True}}, "fp32"),  # DeepSpeed ignores bfloat16 here
    ({"torch_autocast": {"enabled": True, "dtype": "bfloat16"}}, "torch_autocast"),
    ({"fp16": {"enabled": 1}}, "fp16"),  # pydantic lax bool, as DeepSpeed reads it (issue 13)
    ({"fp16": {"enabled": "yes"}, "bf16": {"enabled": "off"}}, "fp16"),
    ({"torch_autocast": {"enabled": "false"}}, "torch_autocast"),  # get_scalar_param: a truthy string
    ({"fp16": True, "bf16": None}, "fp32"),  # not sections: nothing enabled
])
def test_precision_mode(config, mode):
    assert precision_mode(config) == mode


def test_switching_changes_enabled_flags_only_and_keeps_key_order():
    config = {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "loss_scale_window": 500}, "x": 1}
    before = copy.deepcopy(config)
    out = with_precision_mode(config, "bf16")
    assert config == before  # the input is not touched
    assert out == {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": False, "loss_scale_window": 500},
                   "x": 1, "bf16": {"enabled": True}}
    assert list(out) == ["train_micro_batch_size_per_gpu", "fp16", "x", "bf16"]
    back = with_precision_mode(out, "fp16")
    assert back["fp16"] == {"enabled": True, "loss_scale_window": 500} and back["bf16"] == {"enabled": False}
    assert with_precision_mode(back, "fp32") == {**back, "fp16": {"enabled": False, "loss_scale_window": 500}}


def test_switching_keeps_the_legacy_bfloat16_spelling_and_leaves_sections_that_were_off():
    out = with_precision_mode({"bfloat16": {"enabled": False}, "fp16": {"enabled": False}}, "bf16")
    assert out == {"bfloat16": {"enabled": True}, "fp16": {"enabled": False}}
    assert bf16_section(out) == "bfloat16"
    ignored = {"bf16": {"enabled": False}, "bfloat16": {"enabled": True}}
    assert with_precision_mode(ignored, "fp16")["bfloat16"] == {"enabled": True}
    assert with_precision_mode({}, "fp32") == {}  # nothing created to say "off"


def test_a_non_section_value_is_replaced_only_when_that_mode_is_chosen():
    assert with_precision_mode({"fp16": None}, "bf16") == {"fp16": None, "bf16": {"enabled": True}}
    assert with_precision_mode({"fp16": 3}, "fp16") == {"fp16": {"enabled": True}}


def test_unknown_mode_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="fp32, fp16, bf16, torch_autocast"):
        with_precision_mode({}, "int8")


@pytest.mark.parametrize("mode", PRECISION_MODES)
def test_switching_reads_the_flags_as_the_release_does(mode):
    """Before 0.19 fp16 and bf16 are read with dict.get, so "false" is on: it was left there (lax_bool reads it as
    off), and fp32 could not be chosen; torch_autocast.enabled "false" is on in every release."""
    config = {"fp16": {"enabled": "false"}, "bf16": {"enabled": "no"}, "torch_autocast": {"enabled": "false"}}
    for version in ("0.16.0", "0.19.8"):
        out = with_precision_mode(config, mode, version)
        assert precision_mode(out, version) == mode, version
    old = with_precision_mode({"fp16": {"enabled": "false"}}, "fp32", "0.16.0")
    assert old == {"fp16": {"enabled": False}}
    assert with_precision_mode({"fp16": {"enabled": "false"}}, "fp32", "0.19.8") == {"fp16": {"enabled": "false"}}


@FUZZ_SETTINGS
@given(config=any_config, mode=st.sampled_from(PRECISION_MODES), version=st.sampled_from(KNOWN_VERSIONS))
def test_any_config_switched_selects_that_mode_and_never_has_two_precisions(config, mode, version):
    out = with_precision_mode(config, mode, version)
    assert precision_mode(out, version) == mode
    codes = {f.code for f in core.validate(out).findings}
    assert "precision.fp16-and-bf16" not in codes


def _switch(config, mode, before, version="0.19.8"):
    """A switch as the app makes it, with what the switches before it remembered: (config, memory after it)."""
    out = with_precision_mode(config, mode, version, before)
    return out, remembered_after(config, out, before)


HF_TEMPLATE = {"fp16": {"enabled": "auto", "loss_scale": 0}, "bf16": {"enabled": "auto"}}


#: (config, the modes switched to one after another, back to the config's own last, DeepSpeed release): the app's
#: AppTest makes the same switches with the radio.
SWITCHES_AND_BACK = [
    (HF_TEMPLATE, ["bf16", "fp16"], "0.19.8"),
    (HF_TEMPLATE, ["fp32", "bf16", "torch_autocast", "fp16"], "0.19.8"),
    ({"fp16": {"enabled": True}}, ["bf16", "fp16"], "0.19.8"),
    ({"bfloat16": {"enabled": True}}, ["fp16", "bf16"], "0.19.8"),
    ({"train_micro_batch_size_per_gpu": 1}, ["bf16", "fp32"], "0.19.8"),
    ({"fp16": {"enabled": True}, "bf16": {"enabled": False}}, ["bf16", "fp16"], "0.19.8"),  # written: stays
    ({"fp16": {"loss_scale": 0}}, ["fp16", "fp32"], "0.19.8"),  # no enabled key, and none left behind
    ({"fp16": 3, "x": 1}, ["fp16", "fp32"], "0.19.8"),
    ({"fp16": {"enabled": "false"}, "bf16": {"enabled": 0}}, ["bf16", "fp16"], "0.16.0"),  # "false" is on there
    # torch_autocast on beside bf16 or fp16 (DeepSpeed runs autocast over either) came back off
    ({"bf16": {"enabled": True}, "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}}, ["fp32", "bf16"],
     "0.19.8"),
    ({"bf16": {"enabled": True}, "torch_autocast": {"enabled": True}}, ["torch_autocast", "fp16", "bf16"], "0.19.8"),
    ({"fp16": {"enabled": True}, "torch_autocast": {"enabled": True}}, ["bf16", "fp16"], "0.19.8"),
]


@pytest.mark.parametrize(("config", "modes", "version"), SWITCHES_AND_BACK)
def test_a_switch_and_back_gives_the_config_back(config, modes, version):
    """fp16 -> bf16 -> fp16 turned HF's "auto" flags into true and false, and left a section the switch created
    ("bf16": {"enabled": false}) behind; a switch now gives back what the switches before it changed."""
    out, before = copy.deepcopy(config), {}
    for mode in modes:
        out, before = _switch(out, mode, before, version)
        assert precision_mode(out, version) == mode
    assert json.dumps(out) == json.dumps(config)  # the same keys, values and types, in the same order
    assert before == {}  # nothing left to give back


def test_a_switch_keeps_an_auto_flag_that_needs_no_change_and_the_plain_switch_writes_booleans():
    assert with_precision_mode(HF_TEMPLATE, "bf16", before={}) == {
        "fp16": {"enabled": "auto", "loss_scale": 0}, "bf16": {"enabled": True}}  # the Trainer fills fp16 false
    assert with_precision_mode(HF_TEMPLATE, "bf16") == {
        "fp16": {"enabled": False, "loss_scale": 0}, "bf16": {"enabled": True}}


def test_a_section_the_user_wrote_is_never_removed():
    written = {"fp16": {"enabled": True}, "bf16": {"enabled": False}}
    out, before = _switch(written, "bf16", {})
    assert _switch(out, "fp16", before)[0] == written
    out, before = _switch({"fp16": {"enabled": True}}, "bf16", {})
    out["bf16"]["immediate_grad_update"] = True  # the user writes into the section the switch created
    assert _switch(out, "fp16", before)[0] == {
        "fp16": {"enabled": True}, "bf16": {"enabled": False, "immediate_grad_update": True}}


@FUZZ_SETTINGS
@given(config=any_config, modes=st.lists(st.sampled_from(PRECISION_MODES), min_size=1, max_size=4),
       version=st.sampled_from(KNOWN_VERSIONS))
def test_any_chain_of_switches_back_to_the_first_mode_gives_the_config_back(config, modes, version):
    """Each switch selects its mode alone (or gives the config back: torch_autocast on beside fp16 or bf16); back at
    the first mode the config is as it was, unless it had fp16 and bf16 both on (a switch turns one of them off)."""
    first = precision_mode(config, version)
    chain = [first]
    for mode in [*modes, first]:
        if mode != chain[-1]:  # the radio calls back only on a change
            chain.append(mode)
    out, before = config, {}
    for mode in chain[1:]:
        out, before = _switch(out, mode, before, version)
        read = effective(out, version)
        assert read.precision_mode == mode
        on = {m for m, on in (("fp16", read.fp16), ("bf16", read.bf16), ("torch_autocast", read.torch_autocast))
              if on}
        assert on <= {mode} or (on <= {mode, "torch_autocast"} and json.dumps(out) == json.dumps(config))
    read = effective(config, version)
    if not (read.fp16 and read.bf16):
        assert json.dumps(out) == json.dumps(config)


def test_fp16_loss_scaling_keys_are_listed_once_for_the_rule_and_the_planner():
    """The rule ``precision.loss-scale-unused`` and the planner's adoption each wrote the list of fp16's loss-scaling
    keys: both read the schema's now, which names every fp16 field except the switches and master weights."""
    from core.perf.recommend import FP16_LOSS_SCALE_KEYS as ADOPTION_KEYS
    from core.schema.precision import FP16_LOSS_SCALE_KEYS, FP16Config
    from core.validate import validate

    assert set(FP16_LOSS_SCALE_KEYS) == set(FP16Config.model_fields) - {
        "enabled", "auto_cast", "fp16_master_weights_and_grads"}
    assert ADOPTION_KEYS is FP16_LOSS_SCALE_KEYS
    scaling = {key: FP16Config.model_fields[key].default for key in FP16_LOSS_SCALE_KEYS}
    finding = next(f for f in validate({"fp16": {"enabled": False, **scaling}}).findings
                   if f.code == "precision.loss-scale-unused")
    assert f"({', '.join(FP16_LOSS_SCALE_KEYS)})" in finding.message
