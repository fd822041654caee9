"""PLACEHOLDER: replaced by the full section models."""

from core.schema.base import LenientSection


class OptimizerConfig(LenientSection):
    """placeholder"""


class SchedulerConfig(LenientSection):
    """placeholder"""

