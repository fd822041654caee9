"""The ZeRO page and the deprecated offload booleans: what DeepSpeed does with them is said beside the widget that
shows the section (which is absent, so "none")."""

from __future__ import annotations

import pytest
from app_support import app

from ui.widgets import widget_key


@pytest.mark.parametrize(("legacy", "section"), [("cpu_offload", "offload_optimizer"),
                                                 ("cpu_offload_param", "offload_param")])
def test_a_legacy_offload_boolean_is_said_beside_the_device_and_its_fix_rewrites_it(legacy, section):
    """`cpu_offload: true` offloads the optimizer in every release (DeepSpeed maps it to offload_optimizer.device
    cpu), but the page showed the device "none" with no word of the old key."""
    at = app({"zero_optimization": {"stage": 3, legacy: True}}, "pages/zero.py")
    assert not at.exception, at.exception
    device = at.selectbox(key=widget_key(f"zero_optimization.{section}.device"))
    said = [c.value for c in at.caption if f"`zero_optimization.{legacy}: true`" in c.value]
    assert said and f"`{section}.device: cpu`" in said[0] and "Offloaded to the CPU" in said[0], device.value
    fix = next(b for b in at.button if b.key.startswith("fix:") and b.key.endswith(f"zero_optimization.{legacy}"))
    fix.click().run()
    assert not at.exception, at.exception
    zero = at.session_state["config"]["zero_optimization"]
    assert legacy not in zero and zero[section]["device"] == "cpu"
    assert at.selectbox(key=widget_key(f"zero_optimization.{section}.device")).value == "cpu"
    assert not [c for c in at.caption if "Offloaded to the CPU" in c.value]


def test_a_false_legacy_boolean_says_nothing():
    at = app({"zero_optimization": {"stage": 3, "cpu_offload": False}}, "pages/zero.py")
    assert not at.exception, at.exception
    assert not [c for c in at.caption if "Offloaded to the CPU" in c.value]
