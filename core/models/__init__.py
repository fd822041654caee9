"""Model architectures from Hugging Face config.json dicts: descriptions, exact parameter counts, catalog."""

from core.models.arch import ModelConfigError, ModelSpec, ModuleParams, UnsupportedModelError
from core.models.families import SUPPORTED_FAMILIES, count_params, describe

__all__ = [
    "SUPPORTED_FAMILIES",
    "ModelConfigError",
    "ModelSpec",
    "ModuleParams",
    "UnsupportedModelError",
    "count_params",
    "describe",
]

from core.models.catalog import (
    CATALOG,
    catalog_names,
    catalog_table,
    get_config,
    get_spec,
    parse_hf_config,
)

__all__ += ["CATALOG", "catalog_names", "catalog_table", "get_config", "get_spec", "parse_hf_config"]
