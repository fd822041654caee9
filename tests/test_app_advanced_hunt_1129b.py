"""The Advanced page with random-LTD or the data-efficiency curriculum switched on while data_efficiency is off:
DeepSpeed acts on their own switches (and stops on what they lack), so their widgets stay editable and the
error is shown where it can be fixed, not under "data_efficiency is off"."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import app

from ui.widgets import widget_key

BASE = {"train_micro_batch_size_per_gpu": 1}
OFF = "`data_efficiency` is off"


def _section_captions(at: Any, section: str) -> list[str]:
    """The captions drawn right under the section's own header (up to the next header)."""
    out: list[str] = []
    inside = False
    for element in at.main:
        kind = type(element).__name__
        if kind == "Markdown" and str(element.value).startswith("**`"):
            inside = str(element.value).startswith(f"**`{section}`**")
        elif inside and kind == "Caption":
            out.append(str(element.value))
    return out


@pytest.mark.parametrize(("data_efficiency", "section", "children"), [
    ({"data_routing": {"random_ltd": {"enabled": True}}}, "data_efficiency.data_routing.random_ltd",
     ("enabled", "total_layer_num", "random_ltd_layer_num")),
    ({"data_sampling": {"curriculum_learning": {"enabled": True}}}, "data_efficiency.data_sampling.curriculum_learning",
     ("enabled", "curriculum_metrics")),
])
def test_a_switch_deepspeed_reads_whatever_data_efficiency_says_stays_editable(data_efficiency, section, children):
    at = app({**BASE, "data_efficiency": data_efficiency}, page="pages/advanced.py")
    for child in children:
        widget = next(w for w in at.main if getattr(w, "key", None) == widget_key(f"{section}.{child}"))
        assert not widget.disabled, child
    assert not [c for c in _section_captions(at, section) if OFF in c]
    assert [c for c in _section_captions(at, "data_efficiency.data_sampling") if OFF in c]  # the rest still follows it
