"""The DeepSpeed config schema: the one source of truth for keys, types, defaults and docs."""

from core.schema.base import DEFAULT_VERSION, KNOWN_VERSIONS, FieldMeta, field_meta
from core.schema.root import DeepSpeedConfig

__all__ = ["DEFAULT_VERSION", "KNOWN_VERSIONS", "DeepSpeedConfig", "FieldMeta", "field_meta"]
