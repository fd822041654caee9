"""DeepSpeed Config Studio's engine: schema, validator, batch solver, memory model, presets, I/O."""

from core.autofill import AutoFillError, resolve_auto
from core.batch import resolve_batch, valid_world_sizes
from core.findings import BatchValues, Finding, Fix, FixOp, Report
from core.io import ConfigLoadError, dump_config, load_config
from core.migrate import migrate
from core.validate import INITIALIZE_TIME_CODES, validate

__all__ = [
    "INITIALIZE_TIME_CODES",
    "AutoFillError",
    "BatchValues",
    "ConfigLoadError",
    "Finding",
    "Fix",
    "FixOp",
    "Report",
    "dump_config",
    "load_config",
    "migrate",
    "resolve_auto",
    "resolve_batch",
    "valid_world_sizes",
    "validate",
]
