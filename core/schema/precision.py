"""PLACEHOLDER: replaced by the full section models."""

from core.schema.base import LenientSection


class BF16Config(LenientSection):
    """placeholder"""


class DataTypesConfig(LenientSection):
    """placeholder"""


class FP16Config(LenientSection):
    """placeholder"""


class TorchAutocastConfig(LenientSection):
    """placeholder"""

