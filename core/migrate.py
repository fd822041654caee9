"""``migrate``: rewrite deprecated keys into their current form, saying what changed."""

from __future__ import annotations

import copy
from typing import Any

from core.effective import LEGACY_ALLGATHER_KEY, legacy_zero
from core.findings import shown
from core.io import check_depth
from core.rules.context import lax_bool, supplied
from core.schema.walk import section_fields
from core.schema.zero import ZeroConfig


def migrate(config: Any) -> tuple[Any, list[str]]:
    """A new config with deprecated keys replaced, and a list of plain-words changes.

    Never loses a key: a deprecated key whose replacement is already set is left in place
    (the validator reports the clash) rather than overwritten. Non-dict input comes back unchanged; a config
    nested deeper than the loader reads is a ValueError (``core.io.check_depth``).
    """
    if not isinstance(config, dict):
        return config, []
    check_depth(config)
    new = copy.deepcopy(config)
    changes: list[str] = []
    zero_change = zero_section_form(new)
    if zero_change is not None:
        changes.append(zero_change)
    if "bfloat16" in new and new.get("bf16") is None and new["bfloat16"] is not None:
        # a null `bf16` is dropped: DeepSpeed reads `bfloat16` in its place, and it must not overwrite the section;
        # a null `bfloat16` stays (DeepSpeed refuses it where a null `bf16` is not: the rename would hide the error)
        new = {("bf16" if k == "bfloat16" else k): v for k, v in new.items() if k != "bf16"}
        changes.append("bfloat16 → bf16")
    zero = new.get("zero_optimization")
    if isinstance(zero, dict):
        changes.extend(_migrate_zero(zero))
    return new, changes


def zero_section_form(config: dict[str, Any]) -> str | None:
    """Rewrite a boolean ``zero_optimization`` in ``config`` (in place) as the section DeepSpeed builds from it;
    the change in plain words, or None when it is not a boolean."""
    legacy = legacy_zero(config)
    if legacy is None:
        return None
    if "allgather_bucket_size" in legacy:
        del config[LEGACY_ALLGATHER_KEY]
    config["zero_optimization"] = legacy
    return f"zero_optimization: true/false → {{\"stage\": {legacy['stage']}}}"


def left_behind(migrated: Any) -> list[str]:
    """The deprecated keys ``migrate`` left in ``migrated`` (its result), each with why and what to do by hand."""
    if not isinstance(migrated, dict):
        return []
    left = []
    if "bfloat16" in migrated and migrated["bfloat16"] is None and migrated.get("bf16") is None:
        left.append("bfloat16: left in place, because DeepSpeed refuses its null value: remove it, or write a "
                    "bf16 section")
    elif "bfloat16" in migrated:
        left.append("bfloat16: left in place, because bf16 is set too (DeepSpeed reads bf16): remove bfloat16, or "
                    "move what it says into bf16")
    zero = migrated.get("zero_optimization")
    fields = section_fields(ZeroConfig)
    for key in zero if isinstance(zero, dict) else ():
        field = fields.get(key)
        if field is None or key != field.name or not field.meta.deprecated or field.meta.replaced_by is None:
            continue
        new_field = fields[field.meta.replaced_by]
        target = new_field.alias or new_field.name
        if any(supplied(zero, k) for k in new_field.keys):
            left.append(f"zero_optimization.{key}: left in place, because {target} is set too and DeepSpeed refuses "
                        f"both together: remove {key}, or merge it into {target} by hand")
        else:
            left.append(f"zero_optimization.{key}: left in place, because DeepSpeed refuses its value "
                        f"{shown(zero[key])}: write true or false, then migrate again")
    return left


def _migrate_zero(zero: dict[str, Any]) -> list[str]:
    changes: list[str] = []
    fields = section_fields(ZeroConfig)
    for key in list(zero):
        field = fields.get(key)
        if field is None or key != field.name or not field.meta.deprecated:
            continue
        new_name = field.meta.replaced_by
        value = zero[key]
        if new_name is None:  # cpu_offload_use_pin_memory: DeepSpeed ignores it, so dropping it changes nothing
            del zero[key]
            changes.append(
                f"zero_optimization.{key}: removed (DeepSpeed ignores it; `pin_memory` inside offload_param / "
                "offload_optimizer controls pinning)"
            )
            continue
        new_field = fields[new_name]
        if not supplied(zero, key):  # "auto": DeepSpeedConfigModel drops it, the key is as if absent
            del zero[key]
            changes.append(f"zero_optimization.{key}: \"auto\" removed (DeepSpeed drops \"auto\" here, as if the key "
                           "were absent)")
            continue
        if any(supplied(zero, k) for k in new_field.keys):
            continue
        for k in new_field.keys:  # an "auto" replacement is dropped too, so the deprecated key is what DeepSpeed reads
            zero.pop(k, None)
        target_key = new_field.alias or new_field.name
        # cpu_offload / cpu_offload_param become an offload section; others carry the value over.
        replacement = value
        if new_field.model is not None:
            on = lax_bool(value)  # as DeepSpeed reads it: "false" is off, though a non-empty string
            if on is None and value is not None:  # null is allowed (Optional[bool]) and means off
                continue  # DeepSpeed refuses the value: left for the validator to report
            replacement = {"device": "cpu"} if on else None
        items = list(zero.items())
        zero.clear()
        for k, v in items:
            if k == key:
                if replacement is not None:
                    zero[target_key] = replacement
            else:
                zero[k] = v
        became = "removed (it was off)" if replacement is None else f"→ {target_key}: {shown(replacement)}"
        changes.append(f"zero_optimization.{key}: {shown(value)} {became}")
    return changes
