"""The training precision a config selects, and switching it: which of fp16 / bf16 / torch_autocast is on.

DeepSpeed turns mixed precision on with ``<section>.enabled`` in one of three sections (``bfloat16`` is
the legacy spelling of ``bf16``, read only when ``bf16`` is absent); none enabled means fp32. Switching
changes only the ``enabled`` flags, so every other key of every section (loss-scale settings of a
switched-off fp16, say) is kept for when the user switches back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.effective import effective

#: The precision modes, in the order the app offers them ("fp32": no mixed-precision section enabled).
PRECISION_MODES: tuple[str, ...] = ("fp32", "fp16", "bf16", "torch_autocast")


def bf16_section(config: Mapping[str, Any]) -> str:
    """The section that holds the bf16 settings: ``bfloat16`` when only the legacy spelling is used."""
    return effective(config).bf16_section


def precision_mode(config: Mapping[str, Any], version: str = "0.19.8") -> str:
    """The mode the config selects, booleans read as DeepSpeed ``version`` reads them (``1``, ``"true"``, ``"on"``
    are on; before 0.19 a section read with dict.get takes any non-empty string as on); ``"auto"`` counts as on
    (the HF Trainer fills it) after a section written on; the first enabled one wins when several are."""
    return effective(config, version).precision_mode


def with_precision_mode(config: Mapping[str, Any], mode: str, version: str = "0.19.8") -> dict[str, Any]:
    """A copy of ``config`` in which only ``mode`` is enabled as DeepSpeed ``version`` reads the flags (before 0.19
    a flag ``"false"`` is on, and is turned off); sections that were not on are not created.

    Raises ``ValueError`` for an unknown mode.
    """
    if mode not in PRECISION_MODES:
        raise ValueError(f"precision mode must be one of {', '.join(PRECISION_MODES)}, got {mode!r}.")
    out = copy.deepcopy(dict(config))
    read = effective(out, version)
    # a legacy ``bfloat16`` beside ``bf16`` is ignored by DeepSpeed: left alone; "auto" counts as on (precision_mode)
    on = {"fp16": read.fp16 or read.fp16_auto, read.bf16_section: read.bf16 or read.bf16_auto,
          "torch_autocast": read.torch_autocast}
    target = read.bf16_section if mode == "bf16" else mode
    for section, enabled in on.items():
        current = out.get(section)
        if section == target:
            out[section] = {**current, "enabled": True} if isinstance(current, Mapping) else {"enabled": True}
        elif enabled and isinstance(current, Mapping):
            out[section] = {**current, "enabled": False}
    return out
