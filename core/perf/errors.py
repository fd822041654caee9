"""The planner's refusal of an input: which parameter, the value given and why, for each surface to name it its way
(the CLI by its flag, the page by its field)."""

from __future__ import annotations

from core.findings import brief


def value_text(value: object) -> str:
    """A value as a message quotes it: a float as ``%g`` (``1e+15``, ``0.1``), anything else as the config writes
    it, cut short."""
    return f"{value:g}" if isinstance(value, float) else brief(value)


class PlanInputError(ValueError):
    """An input ``recommend`` or ``calibrate`` refuses: ``parameter`` (core's name), ``value`` (as given) and
    ``reason`` (what is wrong with it and the fix, to follow the value: ``"cannot be split over 8 GPUs: ..."``)."""

    def __init__(self, parameter: str, value: object, reason: str) -> None:
        super().__init__(parameter, value, reason)  # all three: the error pickles and copies whole
        self.parameter, self.value, self.reason = parameter, value, reason

    def said_as(self, name: str) -> str:
        """The message with the parameter called ``name``, as the user gave it (``--tokens``)."""
        return f"{name} {value_text(self.value)} {self.reason}"

    def __str__(self) -> str:
        return f"{self.parameter}={value_text(self.value)} {self.reason}"


__all__ = ["PlanInputError", "value_text"]
