"""PLACEHOLDER: replaced by the full section models."""

from core.schema.base import LenientSection


class AmpConfig(LenientSection):
    """placeholder"""


class CompressionTrainingConfig(LenientSection):
    """placeholder"""


class CurriculumLearningLegacyConfig(LenientSection):
    """placeholder"""


class EigenvalueConfig(LenientSection):
    """placeholder"""


class ElasticityConfig(LenientSection):
    """placeholder"""


class NebulaConfig(LenientSection):
    """placeholder"""


class ProgressiveLayerDropConfig(LenientSection):
    """placeholder"""


class QuantizeTrainingConfig(LenientSection):
    """placeholder"""


class SparseAttentionConfig(LenientSection):
    """placeholder"""

