"""ZeRO rules: the boolean and null forms, offload, stage-specific keys, bucket sizes, deprecated ZeRO keys."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from core import versions
from core.autofill import ACCELERATE_FILLS, ACCELERATE_NO_ZERO, ACCELERATE_VARIABLES, HF_DEFAULTS
from core.effective import LEGACY_ALLGATHER_KEY, legacy_zero
from core.findings import Finding, Fix, FixOp, brief
from core.rules.context import Context, lax_bool, lax_int, supplied
from core.rules.fixes import delete_fix, set_fix
from core.rules.precision import master_weights_refuse_stage
from core.schema.walk import iter_schema, section_fields
from core.schema.zero import NVME_PATH_EXAMPLE, NVME_SUB_GROUP_SIZE, ZeroConfig

# --------------------------------------------------------------------------------------------
# ZeRO and offload

#: How DeepSpeed prints the NVMe offload device in its messages (``OffloadDeviceEnum.nvme``).
_NVME_ENUM = "OffloadDeviceEnum.nvme"


def _hpz_group(zero: Any, world_size: int) -> int:
    """The size of ZeRO-3's hpZ groups on ``world_size`` GPUs: min(zero_hpz_partition_size, world size), 1 without
    hpZ (``groups._create_zero_param_parallel_group``)."""
    hpz = lax_int(zero.get("zero_hpz_partition_size", 1)) if isinstance(zero, Mapping) else None
    return min(hpz, world_size) if hpz is not None and hpz > 1 else 1


def hpz_fits(zero: Any, stage: int, world_size: int) -> bool:
    """Whether ZeRO-3 builds hpZ's groups on ``world_size`` GPUs: they must tile the world (the group builder asserts
    it); below stage 3 the key is not used."""
    return stage != 3 or world_size % _hpz_group(zero, world_size) == 0


def zero_form(ctx: Context) -> Iterator[Finding]:
    """The deprecated boolean form and null; with the HF target, the section Accelerate requires and its "auto"
    stage."""
    if "zero_optimization" not in ctx.config:
        if ctx.is_hf:
            yield Finding(
                "error", "hf.zero-section", "zero_optimization",
                "The config has no `zero_optimization` section, and the HF Trainer starts DeepSpeed through "
                f"Accelerate's DeepSpeedPlugin, which refuses it: \"{ACCELERATE_NO_ZERO}\"",
                suggestion="Add the section with the stage to train with; {\"stage\": 0} is what plain DeepSpeed "
                "does without one.",
                fix=set_fix("zero_optimization", {"stage": 0}), page="zero",
            )
        return
    value = ctx.config["zero_optimization"]
    legacy = legacy_zero(ctx.config)
    if legacy is not None:
        stage = legacy["stage"]
        ops = [FixOp("set", "zero_optimization", legacy)]
        if "allgather_bucket_size" in legacy:  # the top-level key moves into the section that now reads it
            ops.append(FixOp("delete", LEGACY_ALLGATHER_KEY))
        hf = ctx.is_hf  # Accelerate navigates the section with .get: the boolean form fails there
        yield Finding(
            "error" if hf else "warning", "hf.zero-section" if hf else "deprecated.zero-bool", "zero_optimization",
            f"`\"zero_optimization\": {str(value).lower()}` is the deprecated form; DeepSpeed reads it as stage "
            f"{stage}" + (f" with `allgather_bucket_size` from `{LEGACY_ALLGATHER_KEY}`." if len(ops) > 1 else ".")
            + (" The HF Trainer's Accelerate plugin reads the section with .get and fails on it (AttributeError)."
               if hf else ""),
            suggestion=f"Write {json.dumps(legacy, default=repr)}.",
            fix=Fix(f"Set `zero_optimization` to {brief(legacy)}", tuple(ops)), page="zero",
        )
    elif value is None:
        yield Finding(
            "error", "zero.null", "zero_optimization",
            "`zero_optimization` is null; DeepSpeed fails reading it (it expects an object).",
            suggestion="Write {\"stage\": 0}." if ctx.is_hf else "Remove it, or write {\"stage\": 0}.",
            # with the HF target a removed section is refused too (hf.zero-section)
            fix=set_fix("zero_optimization", {"stage": 0}) if ctx.is_hf else delete_fix("zero_optimization"),
            page="zero",
        )
    elif ctx.is_hf and isinstance(value, dict) and value.get("stage") == "auto":
        stage = HF_DEFAULTS["zero_stage"]
        yield Finding(
            "warning", "hf.auto-stage", "zero_optimization.stage",
            f"`zero_optimization.stage` is \"auto\": the HF Trainer's Accelerate plugin fills it with its zero_stage, "
            f"{stage} unless {ACCELERATE_VARIABLES['zero_optimization.stage']} (`accelerate launch --zero_stage`) "
            "sets another, where plain DeepSpeed would use 0. This studio's memory and speed figures read it as "
            "stage 0.",
            suggestion=f"Write the stage the run uses ({stage} with Accelerate's defaults), so that the figures "
            "describe it.",
            fix=set_fix("zero_optimization.stage", stage), page="zero",
        )


#: DeepSpeed's optimizer classes that keep the step in their parameter groups (``group['step']``), which the
#: elastic ZeRO-1/2 state dict saves; the others keep it per parameter (``state['step']``), as torch.optim's do.
GROUP_STEP_OPTIMIZERS = ("deepspeed.ops.adam.FusedAdam", "deepspeed.ops.lion.FusedLion")


def _step_per_parameter(optimizer_class: str | None) -> bool:
    """Whether ``optimizer_class`` (``Effective.optimizer_class``) is known to keep its step per parameter only: a
    torch.optim class or one of DeepSpeed's other than ``GROUP_STEP_OPTIMIZERS`` (None, a client optimizer: unknown)."""
    return optimizer_class is not None and optimizer_class.startswith(("torch.optim.", "deepspeed.ops.")) \
        and optimizer_class not in GROUP_STEP_OPTIMIZERS


def offload(ctx: Context) -> Iterator[Finding]:
    """Offload settings DeepSpeed accepts but that do nothing or will fail later."""
    zero = ctx.zero
    stage = ctx.stage
    param_dev, opt_dev = ctx.meaning.offload_param, ctx.meaning.offload_optimizer  # the legacy cpu_offload too
    if param_dev in ("cpu", "nvme") and stage != 3:
        # DeepSpeed refuses compute_grad_norm false at stage 3, and some releases 16-bit master weights there:
        # then the offload goes, not the stage
        why_not_3 = ("compute_grad_norm false" if lax_bool(zero.get("compute_grad_norm", True)) is False
                     else "the 16-bit master weights" if master_weights_refuse_stage(ctx, 3) else None)
        stage3_refused = why_not_3 is not None
        yield Finding(
            "warning", "zero.offload-param-below-3", "zero_optimization.offload_param",
            f"Parameter offload is set but ZeRO stage is {stage}; only stage 3 offloads parameters, so this "
            "does nothing.",
            suggestion=f"Remove offload_param: DeepSpeed {ctx.version} refuses {why_not_3} at stage 3."
            if stage3_refused else "Use stage 3, or remove offload_param.",
            fix=delete_fix("zero_optimization.offload_param") if stage3_refused
            else set_fix("zero_optimization.stage", 3, "Switch to ZeRO stage 3"), page="zero",
        )
    if opt_dev in ("cpu", "nvme") and stage == 0:
        # zero_use_cpu_optimizer() does not look at the stage: the CPU class is built for parameters left on the GPU
        cpu_class = ctx.meaning.optimizer_backend == "cpu"
        yield Finding(
            "warning", "zero.offload-optimizer-stage-0", "zero_optimization.offload_optimizer",
            "Optimizer offload is set but ZeRO is off (stage 0); offload needs ZeRO stage 1, 2 or 3, so nothing "
            "is offloaded." + (
                f" DeepSpeed still builds {(ctx.meaning.optimizer_class or '').rsplit('.', 1)[-1]}, the CPU "
                "implementation (it does not check the stage), while the parameters stay on the GPU: on GPUs its "
                "first step asserts that they are on the CPU and fails; a CPU-only run trains." if cpu_class else ""),
            suggestion="Use ZeRO stage 2 or 3 with optimizer offload.",
            fix=set_fix("zero_optimization.stage", 2, "Switch to ZeRO stage 2"), page="zero",
        )
    if opt_dev == "nvme" and stage in (1, 2):
        bf16_optimizer = ctx.bf16_optimizer(stage)
        cpu_class = ctx.meaning.optimizer_backend == "cpu"
        below = ("With bf16 and an fp32 grad_accum_dtype at ZeRO-1, DeepSpeed picks BF16_Optimizer instead (its "
                 "offload test is the CPU device only): nothing is offloaded"
                 + (", and its CPU Adam steps on the GPU tensors, which fails at the first step on GPUs."
                    if cpu_class else ".") if bf16_optimizer else
                 "Below it the optimizer runs on the CPU with its states in CPU RAM, and nvme_path is unused.")
        yield Finding(
            "warning", "zero.nvme-below-3", "zero_optimization.offload_optimizer.device",
            f"offload_optimizer.device is \"nvme\" at ZeRO stage {stage}; DeepSpeed swaps optimizer states to NVMe "
            f"only at stage 3 (ZeRO-Infinity). {below}",
            suggestion="Write \"cpu\" (what DeepSpeed does), or use ZeRO stage 3 to put the states on NVMe.",
            fix=set_fix("zero_optimization.offload_optimizer.device", "cpu")
            if isinstance(zero.get("offload_optimizer"), dict) else None, page="zero",
        )
    # Only stage 3 swaps to NVMe; below it the other offload findings say what runs and nvme_path is unused.
    for name, dev in (("offload_param", param_dev), ("offload_optimizer", opt_dev)):
        section = zero.get(name)
        if not (stage == 3 and dev == "nvme" and isinstance(section, dict)):
            continue
        path = f"zero_optimization.{name}.nvme_path"
        if ctx.is_hf and section.get("nvme_path") == "auto":
            # accelerate's plugin fills it from its ACCELERATE_DEEPSPEED_* variable, which nothing but the user's
            # own environment sets (`accelerate launch`'s --*_nvme_path flags are not passed on)
            filled = ACCELERATE_FILLS[path]
            yield Finding(
                "warning", "hf.auto-nvme-path", path,
                f"{name}.nvme_path is \"auto\": Accelerate's DeepSpeedPlugin, which the HF Trainer starts DeepSpeed "
                f"through, fills it with \"{filled}\" unless the environment sets "
                f"{ACCELERATE_VARIABLES[path]}, so DeepSpeed swaps into a folder named \"{filled}\" under "
                "the working directory, wherever that disk is, not onto an NVMe drive.",
                suggestion=f"Write the NVMe directory, e.g. {NVME_PATH_EXAMPLE}.",
                fix=set_fix(path, NVME_PATH_EXAMPLE), page="zero",
            )
        # pydantic drops "auto": the path stays None
        elif section.get("nvme_path") in (None, "auto"):
            failure = (f"AssertionError: \"nvme_path\" in DeepSpeed Config cannot be None if remote device is "
                       f"{_NVME_ENUM}" if name == "offload_param"
                       else "TypeError: expected str, bytes or os.PathLike object, not NoneType")
            yield Finding(
                "error", "zero.nvme-without-path", path,
                f"{name} swaps to NVMe at ZeRO stage 3 but has no nvme_path; DeepSpeed accepts the config and "
                f"deepspeed.initialize fails setting up the swap files ({failure}).",
                suggestion=f"Set nvme_path to a directory on a fast local NVMe drive, e.g. {NVME_PATH_EXAMPLE}.",
                fix=set_fix(path, NVME_PATH_EXAMPLE), page="zero",
            )
    if param_dev == "nvme" and stage == 3 and opt_dev in (None, "none"):
        pass  # valid: parameters on NVMe, optimizer on GPU (rare but allowed)
    elastic = lax_bool(zero.get("elastic_checkpoint"))
    if stage in (1, 2) and elastic and not ctx.bf16_optimizer() \
            and _step_per_parameter(ctx.meaning.optimizer_class):
        yield Finding(
            "warning", "zero.elastic-checkpoint-step", "zero_optimization.elastic_checkpoint",
            f"elastic_checkpoint is on and {ctx.meaning.optimizer_class.rpartition('.')[2]} counts its step per "
            "parameter, not in its parameter groups: the ZeRO optimizer's elastic state dict then holds no step, so "
            "save_checkpoint works and resuming fails (engine.load_checkpoint: AssertionError in "
            "_restore_step_from_elastic_checkpoint).",
            suggestion="Remove elastic_checkpoint (the default, rigid checkpoints load at the same data-parallel "
            "size; Universal Checkpointing converts between sizes).",
            fix=delete_fix("zero_optimization.elastic_checkpoint"), page="zero",
        )
    if stage == 3 and elastic:
        yield Finding(
            "warning", "zero.elastic-checkpoint-stage-3", "zero_optimization.elastic_checkpoint",
            "elastic_checkpoint is not supported with ZeRO stage 3 (DeepSpeed warns and ignores it).",
            suggestion="Use Universal Checkpointing instead.", fix=delete_fix("zero_optimization.elastic_checkpoint"),
            page="zero",
        )
    # as written (alias or name); deprecated spellings too: the same setting, and renaming it (a safe fix) must not
    # bring this up
    stage3_only = [
        next(k for k in field.keys if k in zero) for path, field in iter_schema(ZeroConfig)
        if "." not in path and field.meta.stages == (3,) and stage in (1, 2)
        and any(k in zero for k in field.keys) and field.model is None and not field.meta.removed
    ]
    if stage3_only:
        yield Finding(
            "info", "zero.stage3-keys-unused", "zero_optimization",
            f"Stage-3 settings have no effect at stage {stage}: {', '.join(sorted(stage3_only))}.",
            suggestion="Fine to keep if you switch stages; otherwise remove them.", page="zero",
        )
    if not hpz_fits(zero, stage, ctx.world_size):
        hpz, group = lax_int(zero.get("zero_hpz_partition_size", 1)), _hpz_group(zero, ctx.world_size)
        divisors = [d for d in range(2, ctx.world_size) if ctx.world_size % d == 0]
        yield Finding(
            "error", "zero.hpz-partition", "zero_optimization.zero_hpz_partition_size",
            f"zero_hpz_partition_size {hpz} does not divide the {ctx.world_size} GPUs; ZeRO-3 builds the hpZ "
            f"groups and deepspeed.initialize fails (\"{ctx.world_size} is not divisible by {group}\").",
            suggestion="Set it to the number of GPUs per node"
            + (f" (a divisor of {ctx.world_size}: {', '.join(map(str, divisors))})" if divisors else "")
            + ", or 1 to turn hpZ off.",
            fix=set_fix("zero_optimization.zero_hpz_partition_size", 1, "Turn hpZ off (1)"), page="zero",
        )
    rbs = zero.get("reduce_bucket_size")
    rbs_bounds = versions.field_entry(ctx.version, "zero_optimization", "reduce_bucket_size") or {}
    if "gt" in rbs_bounds and rbs is not None and rbs != "auto":
        value = lax_int(rbs)
        if value is not None and value <= 0:
            yield Finding(
                "error", "zero.reduce-bucket-size", "zero_optimization.reduce_bucket_size",
                f"reduce_bucket_size is {brief(rbs)}; DeepSpeed {ctx.version} requires it to be greater than 0.",
                suggestion="The default is 500000000 (5e8) elements.",
                fix=set_fix("zero_optimization.reduce_bucket_size", 500_000_000), page="zero",
            )


def _stage_as_read(raw: object) -> int | None:
    """The stage pydantic's lax mode makes of a ``zero_optimization.stage`` that is not a plain int (true, 3.0,
    "3", " 2 ", "3.0"), or None for an int, "auto" or a value it refuses (another rule reports that)."""
    if isinstance(raw, bool):
        return int(raw)
    number = raw.strip() if isinstance(raw, str) and raw.strip() != "auto" else raw if isinstance(raw, float) else None
    try:
        value = float(number) if number is not None else None
    except ValueError:
        return None
    return int(value) if value is not None and value.is_integer() and 0 <= value <= 3 else None


def stage_not_integer(ctx: Context) -> Iterator[Finding]:
    """``zero_optimization.stage`` written as a bool, float or string DeepSpeed coerces: it runs the coerced stage,
    while the HF Trainer and accelerate compare the raw value with 3 (``HfDeepSpeedConfig.is_zero3``)."""
    raw = ctx.zero.get("stage")
    stage = _stage_as_read(raw)
    if stage is None:
        return
    yield Finding(
        "warning", "zero.stage-not-integer", "zero_optimization.stage",
        f"`zero_optimization.stage` is {brief(raw)}: DeepSpeed {ctx.version} reads it as stage {stage}"
        + (", but the HF Trainer and accelerate read the value as written and compare it with the integers (a string "
           "is no stage to them: \"3\" is not ZeRO-3, so no zero.Init at model loading and no ZeRO-3 checkpoint "
           "handling)." if isinstance(raw, str) else "; other tools reading the file may not."),
        suggestion=f"Write the integer {stage}.", fix=set_fix("zero_optimization.stage", stage), page="zero",
    )


def sub_group_zero(ctx: Context) -> Iterator[Finding]:
    """``sub_group_size`` 0 at stage 3: not "off" but one sub-group per parameter tensor."""
    if ctx.stage != 3 or lax_int(ctx.zero.get("sub_group_size")) != 0:
        return
    nvme = ctx.meaning.offload_optimizer == "nvme"
    yield Finding(
        "info", "zero.sub-group-zero", "zero_optimization.sub_group_size",
        "`sub_group_size` 0 does not turn sub-grouping off: ZeRO-3 closes a sub-group as soon as it holds 0 or "
        "more elements, so every parameter tensor is its own sub-group. That holds the least optimizer memory at "
        "once, at the price of one optimizer step per tensor (one CPU-Adam call per tensor with optimizer offload, "
        "one swap per tensor on NVMe).",
        suggestion="Keep it if that is the aim. For fewer, larger steps " + (
            f"write {NVME_SUB_GROUP_SIZE:,} (small enough to keep the pinned NVMe swap buffers small)" if nvme
            else "remove it (the default, 1e9 elements, is one sub-group up to a billion parameters per GPU)") + ".",
        fix=set_fix("zero_optimization.sub_group_size", NVME_SUB_GROUP_SIZE) if nvme
        else delete_fix("zero_optimization.sub_group_size"), page="zero",
    )


def deprecated_zero_keys(ctx: Context) -> Iterator[Finding]:
    """cpu_offload, cpu_offload_param, ... : a warning, or an error next to their replacement."""
    zero = ctx.zero
    fields = section_fields(ZeroConfig)
    for key, field in fields.items():
        # "auto" is dropped before DeepSpeed's deprecation check: as if absent
        if key != field.name or not field.meta.deprecated or not supplied(zero, key):
            continue
        path = f"zero_optimization.{key}"
        new = field.meta.replaced_by
        if new is None:
            yield Finding(
                "warning", "deprecated.key", path,
                f"`{key}` is deprecated and ignored; use `pin_memory` inside offload_param / offload_optimizer.",
                fix=delete_fix(path), page="zero",
            )
            continue
        new_field = fields[new]
        present = [k for k in new_field.keys if supplied(zero, k)]
        if present:
            yield Finding(
                "error", "deprecated.with-replacement", path,
                f"`{key}` (deprecated) and its replacement `{present[0]}` are both set; DeepSpeed stops "
                f"(\"Cannot provide deprecated parameter '{key}' and replacing parameter '{new}' together\").",
                suggestion=f"Remove `{key}`.", fix=delete_fix(path), page="zero",
            )
        else:
            yield Finding(
                "warning", "deprecated.key", path,
                f"`{key}` is deprecated; use `{new_field.alias or new}` instead.",
                suggestion="`dsconfig migrate` rewrites it.", fix=_migration_fix(ctx, key), page="zero",
            )


def _migration_fix(ctx: Context, key: str) -> Fix | None:
    from core.migrate import migrate

    new_config, changes = migrate({"zero_optimization": {key: ctx.zero[key]}})
    if not changes:
        return None
    path = f"zero_optimization.{key}"
    ops = [FixOp("delete", path)]
    for new_key, value in new_config.get("zero_optimization", {}).items():  # the one key the old one became
        # moved first, so it takes the old key's place instead of going to the end of the section
        new_path = f"zero_optimization.{new_key}"
        ops = [FixOp("move", path, to=new_path), FixOp("set", new_path, value)]
    return Fix(changes[0], tuple(ops))
