"""Initialize-time rules: combinations DeepSpeed accepts while parsing but refuses when
``deepspeed.initialize`` builds the engine (``runtime/engine.py``, ``zero/stage_1_and_2.py`` of DeepSpeed
0.19.8). Each was reproduced with ``deepspeed.initialize`` on the CPU (tests/test_initialize_failures.py; the Apex
AMP ones, which 0.19.8 never reaches since it refuses ``amp`` while parsing, on 0.16.9 and 0.19.7 in
tests/test_amp_engine.py)."""

from __future__ import annotations

from collections.abc import Iterator

from core import effective, versions
from core.findings import Finding, Fix, FixOp, brief
from core.rules.context import Context, lax_bool, lax_float, lax_int
from core.rules.fixes import delete_fix, set_fix
from core.schema.precision import canonical_dtype


def model_dtype(ctx: Context) -> str:
    """The dtype DeepSpeed trains in: fp16, bf16 or fp32 (from the enabled flags, fp16 first)."""
    precision = ctx.meaning.precision
    return precision if precision in ("fp16", "bf16") else "fp32"


def _grad_accum_dtype(ctx: Context) -> str | None:
    value = ctx.get("data_types.grad_accum_dtype")
    return None if value is None else canonical_dtype(value)


def _overlap_comm(ctx: Context) -> bool:
    return ctx.meaning.overlap_comm


def _manages_accumulation(ctx: Context) -> bool:
    """``managed_gradient_accumulation`` as the engine reads it: ``get_scalar_param``, tested with ``not``, so only a
    falsy value (false, 0, null) turns it off and ``"false"`` leaves it on."""
    return bool(ctx.config.get("managed_gradient_accumulation", True))


def engine_combinations(ctx: Context) -> Iterator[Finding]:
    """Mixes of precision, gradient accumulation and ZeRO options the engine refuses."""
    zero = ctx.zero
    compute_grad_norm = lax_bool(zero.get("compute_grad_norm", True))
    clipping = lax_float(ctx.config.get("gradient_clipping", 1.0))
    if compute_grad_norm is False and ctx.stage in (1, 2) and clipping is not None and clipping > 0:
        yield Finding(
            "error", "engine.compute-grad-norm-clipping", "zero_optimization.compute_grad_norm",
            f"compute_grad_norm is false but gradient_clipping is {clipping:g}"
            + (" (the default)" if "gradient_clipping" not in ctx.config else "")
            + "; clipping needs the norm, and deepspeed.initialize fails (\"compute_grad_norm=false requires "
            "gradient_clipping=0\").",
            suggestion="Set gradient_clipping to 0, or compute_grad_norm back to true.",
            fix=set_fix("gradient_clipping", 0.0), page="zero",
        )
    dtype, accum = model_dtype(ctx), _grad_accum_dtype(ctx) or model_dtype(ctx)
    cpu_offload = ctx.meaning.offload_optimizer in ("cpu", "nvme")
    if (ctx.stage == 1 and dtype == "bf16" and accum == "fp32" and not cpu_offload
            and compute_grad_norm is False):
        yield Finding(
            "error", "engine.compute-grad-norm-bf16-stage1", "zero_optimization.compute_grad_norm",
            "compute_grad_norm=false does not support ZeRO stage 1 with bf16 parameters and fp32 gradient "
            "accumulation; deepspeed.initialize fails.",
            fix=set_fix("zero_optimization.compute_grad_norm", True), page="zero",
        )
    if ctx.stage == 0 and dtype != accum and accum in ("fp16", "bf16", "fp32"):
        yield Finding(
            "error", "engine.dtype-mix", "data_types.grad_accum_dtype",
            f"Without ZeRO, DeepSpeed cannot train in {dtype} while accumulating gradients in {accum} "
            "(\"unsupported mix of model_dtype and grad_accum_dtype\" at deepspeed.initialize).",
            suggestion="Use ZeRO stage 1 or more, or remove data_types.grad_accum_dtype.",
            fix=Fix("Remove data_types.grad_accum_dtype", (FixOp("delete", "data_types.grad_accum_dtype"),)),
            page="precision",
        )
    param_dtype = ctx.get("data_types.param_dtype")
    read = versions.key_known(ctx.version, "data_types", "param_dtype") is not False  # before 0.19.2: ignored
    if read and param_dtype is not None and canonical_dtype(param_dtype) not in (None, dtype):
        yield Finding(
            "error", "engine.param-dtype-conflict", "data_types.param_dtype",
            f"data_types.param_dtype is {brief(param_dtype)} but the enabled precision trains in {dtype}; "
            "deepspeed.initialize refuses the conflict.",
            suggestion="Enable the matching fp16/bf16 flag, or remove data_types.param_dtype.",
            fix=Fix("Remove data_types.param_dtype", (FixOp("delete", "data_types.param_dtype"),)),
            page="precision",
        )
    if not _manages_accumulation(ctx) and ctx.stage < 2 and _overlap_comm(ctx):
        yield Finding(
            "error", "engine.managed-accumulation-overlap", "managed_gradient_accumulation",
            "managed_gradient_accumulation=false supports ZeRO overlap_comm only with ZeRO stage 2; "
            "deepspeed.initialize fails.",
            fix=set_fix("zero_optimization.overlap_comm", False), page="batch",
        )
    if lax_bool(zero.get("legacy_stage1")) is True:
        yield Finding(
            "error", "engine.legacy-stage1", "zero_optimization.legacy_stage1",
            "legacy_stage1 (the old ZeRO stage 1) is no longer supported; deepspeed.initialize fails.",
            fix=Fix("Remove legacy_stage1", (FixOp("delete", "zero_optimization.legacy_stage1"),)), page="zero",
        )


def amp_combinations(ctx: Context) -> Iterator[Finding]:
    """Apex AMP with what the engine refuses next to it: ZeRO, fp16/bf16 without ZeRO (both in
    ``_do_optimizer_sanity_check``), and ``managed_gradient_accumulation`` false (``_do_sanity_check``, where the
    release reads that key). All raise before DeepSpeed looks for apex, so they do not depend on it. Only
    where the release reads ``amp`` (its profile); 0.19.8 refuses the section itself (``removed.*``)."""
    if versions.key_known(ctx.version, "amp", "enabled") is not True:
        return
    section = ctx.config.get("amp")
    if not isinstance(section, dict):
        return
    # get_scalar_param: a plain dict.get used as a truth value, so "false" and "auto" (no Trainer fills it) are on
    if not effective.section_enabled(ctx.config, "amp", ctx.version):
        return
    path = "amp"  # the section: without `enabled` every such release fails to parse it (pops the key)
    if not _manages_accumulation(ctx) and versions.key_known(ctx.version, "", "managed_gradient_accumulation"):
        yield Finding(
            "error", "engine.amp-managed-accumulation", path,
            "Apex AMP is on and managed_gradient_accumulation is off; deepspeed.initialize fails "
            "(\"managed_gradient_accumulation=False is not supported with Apex AMP\").",
            suggestion="Remove managed_gradient_accumulation (DeepSpeed then manages accumulation), or replace amp "
            "with fp16 or bf16.",
            page="precision",
        )
    if ctx.stage >= 1:
        yield Finding(
            "error", "engine.amp-zero", path,
            f"Apex AMP is on with ZeRO stage {ctx.stage}; deepspeed.initialize fails (\"Amp and ZeRO are not "
            "currently compatible, please use (legacy) fp16 mode which performs similar to amp opt_mode=O2\").",
            suggestion="Remove the amp section and enable fp16 or bf16 instead (DeepSpeed's advice: its fp16 "
            "performs like amp O2), or keep amp with ZeRO stage 0.",
            page="precision",
        )
        return
    dtype = model_dtype(ctx)
    if dtype in ("fp16", "bf16"):
        yield Finding(
            "error", "engine.amp-half-precision", path,
            f"Apex AMP is on together with {dtype}; without ZeRO deepspeed.initialize refuses both (\"Cannot enable "
            "both amp with (legacy) fp16 or bfloat16 mode\", or first \"Model data type and gradient accumulation "
            "data type must be equal to use Amp\" where gradients accumulate in another dtype).",
            suggestion=f"Keep one mixed-precision mode: remove the amp section (training then runs in DeepSpeed's "
            f"{dtype}) or turn {dtype} off (amp alone needs NVIDIA Apex installed).",
            page="precision",
        )


def autotp_size_string(ctx: Context) -> str | None:
    """``tensor_parallel.autotp_size`` when it is a string that fails before the config is read: ``deepspeed.
    initialize`` compares it with 0 first (the releases whose profile records it) and the HF Trainer with 1, and
    a string there is a TypeError; None otherwise (numbers, booleans and empty values compare or are skipped)."""
    section = ctx.config.get("tensor_parallel")
    value = section.get("autotp_size") if isinstance(section, dict) else None
    if not isinstance(value, str) or not value:
        return None
    compares = ctx.is_hf or versions.profile(ctx.version).get("initialize_compares_autotp_size", False)
    return value if compares else None


def autotp_size(ctx: Context) -> Iterator[Finding]:
    """A string ``autotp_size`` ("2", "auto"): deepspeed.initialize or the HF Trainer fail comparing it."""
    value = autotp_size_string(ctx)
    if value is None:
        return
    path = "tensor_parallel.autotp_size"
    who = "the HF Trainer compares" if ctx.is_hf else f"deepspeed.initialize (DeepSpeed {ctx.version}) compares"
    number = lax_int(value)
    yield Finding(
        "error", "engine.autotp-size-string", path,
        f"`{path}` is {brief(value)}, a string: {who} it with a number before the config is read, and fails "
        "(TypeError: '>' not supported between 'str' and 'int')"
        + (f"; DeepSpeed's parser alone would read {number}." if number is not None else "; nothing fills it in."),
        suggestion="Write the number without quotes." if number is not None
        else "Write the tensor-parallel degree as a number (e.g. 2), or remove the key to train without AutoTP.",
        fix=set_fix(path, number) if number is not None else delete_fix(path),
    )
