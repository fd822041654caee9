"""Mixed precision: ``fp16``, ``bf16`` (alias ``bfloat16``), ``torch_autocast`` and ``data_types``.

``fp16`` and ``bf16`` mirror ``deepspeed/runtime/precision_config.py`` of DeepSpeed 0.19.8 (strict
pydantic sections, same validators and messages); ``torch_autocast`` and ``data_types`` are read
with ``dict.get`` in ``deepspeed/runtime/config.py`` (lenient).
"""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from pydantic import ConfigDict, ValidationInfo, field_validator, model_validator

from core.schema.base import META_KEY, LenientSection, Section, ds_field

#: Every string ``deepspeed.runtime.config.DtypeEnum`` accepts for a dtype (case-sensitive).
DtypeName = Literal[
    "torch.float16",
    "fp16",
    "float16",
    "half",
    "torch.float32",
    "fp32",
    "float32",
    "float",
    "torch.int8",
    "int8",
    "torch.bfloat16",
    "bf16",
    "bfloat16",
]
DTYPE_NAMES: tuple[str, ...] = get_args(DtypeName)


def canonical_dtype(name: object) -> str | None:
    """ "fp16", "bf16", "fp32" or "int8" for any spelling DeepSpeed's DtypeEnum accepts, else None."""
    if not isinstance(name, str) or name not in DTYPE_NAMES:
        return None
    for canonical, spellings in (
        ("fp16", ("float16", "half")),
        ("bf16", ("bfloat16",)),
        ("fp32", ("float32", "float")),
        ("int8", ()),
    ):
        if name in (canonical, f"torch.{spellings[0]}" if spellings else f"torch.{canonical}", *spellings):
            return canonical
    return None


#: The three the docs name for ``data_types`` and ``torch_autocast``.
_MAIN_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32")

_SPELLINGS = "Accepted spellings (case-sensitive): " + ", ".join(DTYPE_NAMES) + "."
_DTYPE_NOTE = _SPELLINGS + " Anything else fails with \"'x' is not a valid DtypeEnum\" when the engine starts."
_AUTOCAST_DTYPE_NOTE = (
    _SPELLINGS + " Anything else fails with \"'x' is not a valid DtypeEnum\" while DeepSpeed parses the config."
)


def _dtype_field(*, description: str, raises: str = "engine", doc_note: str = _DTYPE_NOTE, **extra: Any) -> Any:
    """An optional dtype chosen from the three the docs name (unset: the field's own fallback, in ``description``);
    a wrong spelling fails where ``raises`` says (the engine's start by default)."""
    return ds_field(None, choices=_MAIN_DTYPES, widget="select", raises=raises, description=description,
                    doc_note=doc_note, **extra)


class FP16Config(Section):
    """fp16 mixed precision: 16-bit weights and activations, fp32 master weights, and a loss scale that
    keeps small gradients from underflowing. Needs a GPU (not supported on CPU)."""

    model_config = ConfigDict(
        json_schema_extra={
            META_KEY: {
                "kind": "strict",
                "doc_only": {
                    "initial_loss_scale_power": "The early docs name the key `initial_loss_scale_power` in their "
                    "description; the real key is `initial_scale_power` (the other spelling is rejected).",
                },
            }
        }
    )

    enabled: bool = ds_field(
        False,
        hf_auto=True,
        description="Train in fp16 mixed precision. Halves weight/activation memory and uses tensor cores "
        "on V100-class GPUs; prefer `bf16` on Ampere or newer (no loss scaling needed). Cannot be combined "
        "with `bf16`.",
    )
    auto_cast: bool = ds_field(
        False, description="Cast the model inputs to fp16 automatically in the engine's forward."
    )
    loss_scale: float = ds_field(
        0.0,
        widget="number",
        minimum=0.0,
        description="0 selects dynamic loss scaling (recommended): the scale starts at "
        "2^`initial_scale_power` and adapts to overflows. Any positive value is a fixed (static) scale.",
    )
    initial_scale_power: int = ds_field(
        16,
        description="Dynamic loss scaling starts at 2^this. Too high wastes the first steps on overflows "
        "(they are skipped), too low risks gradient underflow.",
        doc_note="The docs give 32 as the default; DeepSpeed uses 16.",
    )
    loss_scale_window: int = ds_field(
        1000,
        unit="steps",
        description="Steps without overflow before the dynamic loss scale is doubled. Must be > 0 with "
        "dynamic loss scaling.",
    )
    hysteresis: int = ds_field(
        2, description="Overflows tolerated before the dynamic loss scale is lowered (delayed shift)."
    )
    consecutive_hysteresis: bool = ds_field(
        False,
        description="Refill the hysteresis after every step that does not overflow (so only consecutive "
        "overflows lower the scale).",
    )
    min_loss_scale: int = ds_field(
        1,
        description="Lower bound of the dynamic loss scale. Must be > 0 with dynamic loss scaling.",
        doc_note="The docs give 1000 as the default; DeepSpeed uses 1.",
    )
    fp16_master_weights_and_grads: bool = ds_field(
        False,
        description="Keep the master weights and gradients in fp16 instead of fp32: saves memory, loses "
        "precision. Only with ZeRO stage 1, 2 or 3 (and DeepSpeed's CPU-Adam).",
    )

    # The validators below reproduce DeepSpeedFP16Config's, with the same messages.
    @field_validator("loss_scale", mode="before")
    @classmethod
    def _validate_loss_scale(cls, v: Any) -> float:
        if isinstance(v, bool):
            raise ValueError("fp16.loss_scale must be a number, not bool")
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValueError("fp16.loss_scale must be a number") from None
        except OverflowError:  # DeepSpeed's own validator lets this escape; either way the config is refused
            raise ValueError("fp16.loss_scale must be a finite number (not inf/-inf/nan)") from None
        if not math.isfinite(v):
            raise ValueError("fp16.loss_scale must be a finite number (not inf/-inf/nan)")
        if v < 0:
            raise ValueError("fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)")
        return v

    @field_validator("loss_scale_window", "min_loss_scale", mode="before")
    @classmethod
    def _reject_non_integer_scale_params(cls, v: Any, info: ValidationInfo) -> Any:
        field = f"fp16.{info.field_name}"
        if isinstance(v, bool):
            raise ValueError(f"{field} must be an integer, not bool")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{field} must be a finite number (not inf/-inf/nan)")
        try:
            int(v)
        except (TypeError, ValueError):
            raise ValueError(f"{field} must be an integer") from None
        return v

    @model_validator(mode="after")
    def _validate_dynamic_loss_scale_params(self) -> FP16Config:
        if self.enabled and self.loss_scale == 0:
            if self.loss_scale_window <= 0:
                raise ValueError(
                    "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)"
                )
            if self.min_loss_scale <= 0:
                raise ValueError("fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)")
        return self


#: fp16's loss-scaling keys: they do nothing unless fp16 trains (the validator's ``precision.loss-scale-unused``;
#: the planner's adoption of a bf16 or fp32 row takes them out).
FP16_LOSS_SCALE_KEYS: tuple[str, ...] = ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                                         "min_loss_scale", "consecutive_hysteresis")


class BF16Config(Section):
    """bfloat16 mixed precision: same range as fp32, so no loss scaling. Needs Ampere (A100) or newer
    GPUs, or a CPU."""

    model_config = ConfigDict(
        json_schema_extra={
            META_KEY: {
                "kind": "strict",
                "doc_only": {
                    "check_overflow": "Not a key: DeepSpeed rejects it. The key is `check_grad_overflow`.",
                },
            }
        }
    )

    enabled: bool = ds_field(
        False,
        hf_auto=True,
        description="Train in bf16 mixed precision. Halves weight/activation memory like fp16 without "
        "loss scaling. Cannot be combined with `fp16`.",
    )
    immediate_grad_update: bool = ds_field(
        False,
        description="Apply each gradient to the fp32 master copy as soon as it is produced instead of at "
        "the end of the step: lower peak memory, some extra overhead.",
    )
    check_grad_overflow: bool = ds_field(
        True,
        description="Check gradients for inf/NaN before the optimizer step and skip the step if found. "
        "Costs a reduction per step; turn off only if you are sure overflows cannot happen.",
    )
    bf16_master_weights_and_grads: bool = ds_field(
        False,
        description="Keep the master weights and gradients in bf16 instead of fp32 (ZeRO stage 1, 2 or 3 "
        "only): saves 6 bytes per parameter, loses update precision.",
    )
    bf16_optimizer_states: bool = ds_field(
        False,
        description="Also keep the optimizer states in bf16 (ZeRO stage 1, 2 or 3, and only with "
        "`bf16_master_weights_and_grads`).",
    )


class TorchAutocastConfig(LenientSection):
    """Mixed precision with ``torch.autocast`` instead of DeepSpeed's fp16/bf16 engines: weights stay
    fp32, operators run in the lower precision PyTorch's autocast policy chooses."""

    enabled: bool = ds_field(
        False,
        description="Run forward under `torch.autocast`. Do not combine with `fp16`/`bf16` (they cast the "
        "model itself).",
    )
    dtype: DtypeName | None = _dtype_field(
        raises="config",
        description="Lower-precision dtype for autocast, e.g. `bfloat16` or `float16`. Unset: PyTorch's "
        "autocast default (fp16 on CUDA).",
        doc_note=_AUTOCAST_DTYPE_NOTE,
    )
    lower_precision_safe_modules: list[str] | None = ds_field(
        None,
        description="Fully qualified module classes whose gradients/parameters are communicated in the "
        "lower precision (e.g. `torch.nn.Linear`). Unset: Linear and Conv1d/2d/3d.",
        doc_note='Each element must be a string, else DeepSpeed raises "Invalid module names for torch autocast"; '
        "a written null fails too (rule precision.autocast-modules).",
    )


class DataTypesConfig(LenientSection):
    """Data types of gradient accumulation, parameters and buffers (FSDP-style mixed precision policy)."""

    # the engine reads each with DtypeEnum(value), which refuses "auto" as it refuses any other spelling:
    # auto_invalid sends "auto" to the type check with the rest
    grad_accum_dtype: DtypeName | None = _dtype_field(
        description="Dtype of the gradient accumulation buffer. Unset: the model dtype. `fp32` with bf16 "
        "training is more accurate across many accumulation steps and costs 2 extra bytes per parameter.",
        auto_invalid=True,
    )
    param_dtype: DtypeName | None = _dtype_field(
        description="Cast the parameters to this dtype. Unset: the mixed-precision dtype (fp16/bf16).",
        auto_invalid=True,
    )
    buffer_dtype: DtypeName | None = _dtype_field(
        description="Cast the module buffers to this dtype. Unset: buffers keep the dtype they were loaded "
        "with (e.g. fp32 rotary `inv_freq`); setting it can change results. Read only under fp16/bf16.",
        auto_invalid=True,
        engine_reads_under_half=True,  # engine._mixed_precision_dtypes runs only with fp16 or bf16 on
    )
    keep_in_fp32_modules: Literal["auto"] | list[str] = ds_field(
        "auto",
        auto="kept",
        raises="config",
        description="Buffers kept in fp32 under bf16/fp16 training. `auto`: the model's transformers "
        "`_keep_in_fp32_modules_strict` (and `_keep_in_fp32_modules` under fp16); a list gives name "
        "patterns; `[]` keeps nothing.",
        doc_note='Anything other than "auto" or a list of strings is rejected by DeepSpeed 0.19.8; '
        "0.19.5 does not read the key.",
        added="0.19.8",
    )
