"""PLACEHOLDER: replaced by the full section models."""

from core.schema.base import LenientSection


class ActivationCheckpointingConfig(LenientSection):
    """placeholder"""


class AioConfig(LenientSection):
    """placeholder"""


class AutotuningConfig(LenientSection):
    """placeholder"""


class CheckpointConfig(LenientSection):
    """placeholder"""


class CompileConfig(LenientSection):
    """placeholder"""


class DataEfficiencyConfig(LenientSection):
    """placeholder"""


class DataStatesConfig(LenientSection):
    """placeholder"""


class ExpertParallelConfig(LenientSection):
    """placeholder"""


class HybridEngineConfig(LenientSection):
    """placeholder"""


class PipelineConfig(LenientSection):
    """placeholder"""


class TensorParallelConfig(LenientSection):
    """placeholder"""


class TimersConfig(LenientSection):
    """placeholder"""


class WeightQuantizationConfig(LenientSection):
    """placeholder"""

