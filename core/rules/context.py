"""What every rule sees: the config and the validation settings, with lax readers
that interpret values the way DeepSpeed's pydantic models would."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from core.findings import get_path

if TYPE_CHECKING:
    from core.effective import Effective
    from core.elasticity import ElasticBatch

Target = Literal["deepspeed", "hf"]
TARGETS: tuple[str, ...] = ("deepspeed", "hf")

_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def supplied(section: Mapping[str, Any], key: str) -> bool:
    """Whether a DeepSpeedConfigModel built from ``section`` receives ``key``: present and not "auto" (its
    ``__init__`` drops "auto" keyword arguments before validating, so "auto" is as if the key were absent)."""
    return key in section and section[key] != "auto"


def lax_bool(value: Any) -> bool | None:
    """A bool as pydantic's lax mode reads it; None when it would be rejected. Unlike its int and float parsing,
    pydantic's bool does not strip whitespace: " true " is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    return None


#: A string pydantic's lax int accepts: ASCII digits (underscores between them, as int() allows), an optional sign,
#: and a decimal point only when nothing but zeros follow it ("3.0" is 3, "3.5" and "3." are refused).
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")


def lax_int(value: Any) -> int | None:
    """An int as pydantic's lax mode reads it; None when it would be rejected."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        return int(value.strip().split(".")[0])
    return None


def lax_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an int beyond the float range
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value)
        except (ValueError, OverflowError):
            return None
    return None


@dataclass(frozen=True)
class Context:
    """The config under validation and the settings it is validated for."""

    config: dict[str, Any]
    world_size: int = 1
    target: str = "deepspeed"
    version: str = "0.19.8"

    def get(self, path: str, default: Any = None) -> Any:
        return get_path(self.config, path, default)

    def has(self, path: str) -> bool:
        sentinel = object()
        return get_path(self.config, path, sentinel) is not sentinel

    @property
    def zero(self) -> dict[str, Any]:
        value = self.config.get("zero_optimization")
        return value if isinstance(value, dict) else {}

    @cached_property
    def meaning(self) -> Effective:
        """What the config means to DeepSpeed (stage, precision, optimizer class, ...), read once."""
        from core.effective import effective  # core.effective reads values with this module's lax readers

        return effective(self.config, self.version)

    def bf16_optimizer(self, stage: int | None = None) -> bool:
        """Whether the release wraps the optimizer in BF16_Optimizer at ``stage`` (None: the config's own), with the
        config's precision, written ``data_types.grad_accum_dtype`` and optimizer offload
        (``core.effective.uses_bf16_optimizer``)."""
        from core.effective import uses_bf16_optimizer
        from core.schema.precision import canonical_dtype

        accum_fp32 = canonical_dtype(self.get("data_types.grad_accum_dtype")) == "fp32"
        return uses_bf16_optimizer(self.stage if stage is None else stage, self.meaning.precision, accum_fp32,
                                   self.meaning.offload_optimizer, self.version)

    @cached_property
    def elastic_section(self) -> Mapping[str, Any] | None:
        """The ``elasticity`` section this release acts on (None when off or not read), read once."""
        from core.elasticity import elastic_section

        return elastic_section(self.config, self.version)

    @cached_property
    def elastic(self) -> ElasticBatch | None:
        """What elastic training computes for this world size and release (None when it is off), computed once."""
        from core.elasticity import elastic_batch_for

        return elastic_batch_for(self.config, self.world_size, self.version)

    @property
    def stage(self) -> int:
        """The ZeRO stage DeepSpeed would use (0 when unset, unreadable or "auto")."""
        return self.meaning.stage

    @property
    def is_hf(self) -> bool:
        return self.target == "hf"


def switched_on(prefix: str, key: str, value: Any) -> bool:
    """Whether ``value`` of ``key`` at ``prefix`` asks for something, in the releases that read the key: a section
    with a true ``enabled`` (or, without one, any non-empty section), else a value other than what leaving the
    key out means there (the newest reading release's recorded default, a flag's by its truth value: null or 0 is
    off; a true value when none is recorded).
    "auto" is as if absent (DeepSpeed's config models drop it). Removing a key that is switched on loads the
    config in a release that refuses the key, but trains without what it asked for."""
    from core import versions

    if value == "auto":
        return False
    if isinstance(value, dict):
        return bool(value.get("enabled")) if "enabled" in value else bool(value)
    found, default = versions.newest_default(prefix, key)
    if found and isinstance(default, bool):  # a flag, read as a truth value (get_scalar_param and `if`): null is off
        return bool(value) != default
    return value != default if found else bool(value)
