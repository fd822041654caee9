"""The training precision a config selects, and switching it: which of fp16 / bf16 / torch_autocast is on.

DeepSpeed turns mixed precision on with ``<section>.enabled`` in one of three sections (``bfloat16`` is
the legacy spelling of ``bf16``, read only when ``bf16`` is absent); none enabled means fp32. Switching
changes only the ``enabled`` flags, so every other key of every section (loss-scale settings of a
switched-off fp16, say) is kept for when the user switches back; what the flags themselves were (an HF
``"auto"``, a section a switch created) the caller remembers (``Before``) and hands back to a later switch.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.effective import Effective, effective

#: The precision modes, in the order the app offers them ("fp32": no mixed-precision section enabled).
PRECISION_MODES: tuple[str, ...] = ("fp32", "fp16", "bf16", "torch_autocast")
#: The sections whose ``enabled`` a switch sets (``bfloat16``: the legacy spelling of ``bf16``).
SECTIONS: tuple[str, ...] = ("fp16", "bf16", "bfloat16", "torch_autocast")


@dataclass(frozen=True)
class Before:
    """The part of a precision section a switch changes, as it was before: absent (``present`` False); the
    ``enabled`` of an object (``{"enabled": v}``, or ``{}`` when it had none); or a value that is not an object."""

    present: bool
    value: Any = None


def before_switch(config: Mapping[str, Any], section: str) -> Before:
    """What a switch would change of ``section`` in ``config``, as it is now."""
    if section not in config:
        return Before(False)
    value = config[section]
    if isinstance(value, Mapping):
        return Before(True, {"enabled": copy.deepcopy(value["enabled"])} if "enabled" in value else {})
    return Before(True, copy.deepcopy(value))


def changed_path(section: str, before: Before) -> str:
    """The path a switch changed of a section that was ``before``: the ``enabled`` of an object, else the section
    (a caller keeps ``before`` only while that path holds what the switch wrote)."""
    return f"{section}.enabled" if before.present and isinstance(before.value, Mapping) else section


def bf16_section(config: Mapping[str, Any]) -> str:
    """The section that holds the bf16 settings: ``bfloat16`` when only the legacy spelling is used."""
    return effective(config).bf16_section


def precision_mode(config: Mapping[str, Any], version: str = "0.19.8") -> str:
    """The mode the config selects, booleans read as DeepSpeed ``version`` reads them (``1``, ``"true"``, ``"on"``
    are on; before 0.19 a section read with dict.get takes any non-empty string as on); ``"auto"`` counts as on
    (the HF Trainer fills it) after a section written on; the first enabled one wins when several are."""
    return effective(config, version).precision_mode


def autocast_compute(meaning: Effective) -> str:
    """The dtype torch_autocast runs the matmuls in: its ``dtype``, else PyTorch's CUDA autocast default, fp16
    (DeepSpeed passes no dtype then)."""
    return meaning.torch_autocast_dtype or "fp16"


def compute_precision(config: Mapping[str, Any], version: str = "0.19.8") -> str:
    """The dtype the matmuls run in: the precision mode (``precision_mode``), or torch_autocast's dtype. What a GPU
    must support (``GPU.precision_problem``) and what the planner costs."""
    meaning = effective(config, version)
    mode = meaning.precision_mode
    return autocast_compute(meaning) if mode == "torch_autocast" else mode


def auto_flag_reading(config: Mapping[str, Any], path: str, version: str = "0.19.8") -> bool | None:
    """What the app reads an ``"auto"`` at ``path`` as when it is a precision section's ``enabled``: on in the
    section of the mode the config selects (``precision_mode``), off in the others; None for any other path."""
    section, _, key = path.partition(".")
    if section not in SECTIONS or key != "enabled":
        return None
    mode = precision_mode(config, version)
    return section == (bf16_section(config) if mode == "bf16" else mode)


def with_precision_mode(config: Mapping[str, Any], mode: str, version: str = "0.19.8",
                        before: Mapping[str, Before] | None = None) -> dict[str, Any]:
    """A copy of ``config`` in which only ``mode`` is enabled as DeepSpeed ``version`` reads the flags (before 0.19
    a flag ``"false"`` is on, and is turned off); sections that were not on are not created.

    ``before`` is for a caller that remembers (the app): per section, what it was before earlier switches changed
    it (``before_switch``; only sections still holding what a switch wrote). With it, even empty, each section
    keeps its flag, or gets back the remembered one, wherever ``mode`` stays the only one selected with it, so a
    switch and back gives the config back ("auto" flags kept, no section the switch created left behind).
    Raises ``ValueError`` for an unknown mode.
    """
    if mode not in PRECISION_MODES:
        raise ValueError(f"precision mode must be one of {', '.join(PRECISION_MODES)}, got {mode!r}.")
    out = copy.deepcopy(dict(config))
    if before is not None:
        before = {section: before.get(section, before_switch(config, section)) for section in SECTIONS}
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
    return out if before is None else _restore(out, mode, version, before)


def _restore(config: dict[str, Any], mode: str, version: str, before: Mapping[str, Before]) -> dict[str, Any]:
    """``config`` with every section as it was ``before``, all at once when ``mode`` stays the only one selected
    (torch_autocast may stay on beside fp16 or bf16: the config had them so, and DeepSpeed runs autocast over
    either), else each one that keeps ``mode`` the only one selected."""
    restored = config
    for section in SECTIONS:
        restored = _restored(restored, section, before[section])
    if _only(restored, mode, version, beside=("torch_autocast",)):
        return restored
    for section in SECTIONS:
        trial = _restored(config, section, before[section])
        if _only(trial, mode, version):
            config = trial
    return config


def _only(config: Mapping[str, Any], mode: str, version: str, beside: tuple[str, ...] = ()) -> bool:
    """Whether ``config`` selects ``mode`` with no other section on as DeepSpeed reads it, but those ``beside`` (an
    "auto" beside is not on: the Trainer fills it from the flag that agrees)."""
    read = effective(config, version)
    on = {name for name, flag in (("fp16", read.fp16), ("bf16", read.bf16), ("torch_autocast", read.torch_autocast))
          if flag}
    return read.precision_mode == mode and on <= {mode, *beside}


def _restored(config: dict[str, Any], section: str, before: Before) -> dict[str, Any]:
    """A copy of ``config`` with ``section`` as it was ``before`` (``config`` itself when it cannot be: a section
    the switch created or replaced, and the user has written keys into since, stays)."""
    current = config.get(section)
    if not isinstance(current, Mapping):
        return config
    out = dict(config)
    if before.present and isinstance(before.value, Mapping):
        if "enabled" in before.value:
            out[section] = {**current, "enabled": copy.deepcopy(before.value["enabled"])}
        else:
            out[section] = {k: v for k, v in current.items() if k != "enabled"}
    elif set(current) <= {"enabled"}:
        if before.present:
            out[section] = copy.deepcopy(before.value)
        else:
            del out[section]
    else:
        return config
    return out


def _same(a: Before, b: Before) -> bool:
    # as JSON: 0, 0.0 and false are different flags to give back
    return a.present == b.present and json.dumps(a.value, sort_keys=True, default=repr) == json.dumps(
        b.value, sort_keys=True, default=repr)


def remembered_after(config: Mapping[str, Any], out: Mapping[str, Any],
                     before: Mapping[str, Before]) -> dict[str, Before]:
    """What to remember after a switch from ``config`` (with ``before`` remembered) to ``out``: per section it
    changed and did not give back, what it was before the first switch."""
    kept: dict[str, Before] = {}
    for section in SECTIONS:
        was = before.get(section, before_switch(config, section))
        if not _same(before_switch(out, section), was):
            kept[section] = was
    return kept
