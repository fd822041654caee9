"""PLACEHOLDER: replaced by the full section models."""

from core.schema.base import LenientSection


class CometConfig(LenientSection):
    """placeholder"""


class CommsLoggerConfig(LenientSection):
    """placeholder"""


class CSVMonitorConfig(LenientSection):
    """placeholder"""


class FlopsProfilerConfig(LenientSection):
    """placeholder"""


class TensorBoardConfig(LenientSection):
    """placeholder"""


class WandbConfig(LenientSection):
    """placeholder"""

