"""Rules about meaning rather than shape: removed keys, the batch triangle, precision,
ZeRO and offload, communication, checkpointing, "auto", deprecations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from core import versions
from core.batch import BATCH_KEYS, MB, TB, batch_suggestions, effective_world_size, resolve_batch
from core.findings import Finding, Fix, FixOp, join_path
from core.rules.context import Context, lax_bool, lax_float, lax_int
from core.schema.base import version_tuple
from core.schema.precision import canonical_dtype
from core.schema.root import DeepSpeedConfig
from core.schema.walk import field_exists, is_strict, iter_schema, section_fields
from core.schema.zero import ZeroConfig

ISSUE_8489 = "https://github.com/deepspeedai/DeepSpeed/issues/8489"


def _delete(path: str) -> Fix:
    return Fix(f"Remove `{path}`", (FixOp("delete", path),))


def _set(path: str, value: Any, description: str | None = None) -> Fix:
    return Fix(description or f"Set `{path}` to {value!r}", (FixOp("set", path, value),))


# --------------------------------------------------------------------------------------------
# Removed keys (DeepSpeed 0.19.8 rejects them on sight)


def removed_keys(ctx: Context) -> Iterator[Finding]:
    """Keys DeepSpeed removed: an error in the releases that reject them (from the generated profiles)."""
    for key, reason in versions.removed_top_level_keys(ctx.version).items():
        if key in ctx.config:
            field = section_fields(DeepSpeedConfig).get(key)
            yield _removed(ctx, key, reason, field.meta.page if field else None)
    if not isinstance(ctx.config.get("zero_optimization"), dict):
        return
    for key in ctx.zero:
        if not isinstance(key, str) or versions.key_known(ctx.version, "zero_optimization", key) is not False:
            continue
        _added, removed = versions.history("zero_optimization", key)
        if removed and version_tuple(ctx.version) >= version_tuple(removed):
            field = section_fields(ZeroConfig).get(key)
            reason = (field.meta.extra.get("removed_message") if field else None) or (
                f"`{key}` was removed in DeepSpeed {removed}; the ZeRO section rejects it as an unknown key.")
            yield _removed(ctx, f"zero_optimization.{key}", reason, "zero")


def _removed(ctx: Context, path: str, reason: str, page: str | None) -> Finding:
    return Finding(
        "error", "removed.key", path,
        f"DeepSpeed {ctx.version} refuses any config containing `{path}` — even a disabled one: {reason}",
        suggestion=f"Remove `{path}` (see {ISSUE_8489}), or validate for the DeepSpeed release you run.",
        fix=_delete(path), page=page,
    )


# --------------------------------------------------------------------------------------------
# Batch triangle


def batch_triangle(ctx: Context) -> Iterator[Finding]:
    """train_batch_size = micro batch × accumulation × world size, exactly as DeepSpeed checks it."""
    values = {k: ctx.config.get(k) for k in BATCH_KEYS}
    autos = [k for k, v in values.items() if v == "auto"]
    if autos:
        return  # the "auto" rule reports these; arithmetic on "auto" is meaningless
    elastic = ctx.config.get("elasticity")
    if versions.key_known(ctx.version, "", "elasticity") and isinstance(elastic, dict) and elastic.get("enabled"):
        return  # DeepSpeed 0.19.5's elastic training computes the batch values itself
    result = resolve_batch(ctx.config, effective_world_size(ctx.config, ctx.world_size))
    if result.ok:
        for key in BATCH_KEYS:
            value = values[key]
            if (isinstance(value, float) and not value.is_integer()) or isinstance(value, bool):
                yield Finding(
                    "warning", "batch.not-integer", key,
                    f"`{key}` is {value!r}; DeepSpeed accepts it but data loaders need a whole number.",
                    suggestion="Use a positive integer.", page="batch",
                )
        return
    w = ctx.world_size
    data_parallel = effective_world_size(ctx.config, w)
    # Suggestions need a whole data-parallel size (GPUs ÷ sequence_parallel_size).
    usable = data_parallel >= 1 and float(data_parallel).is_integer()
    suggestions = batch_suggestions(ctx.config, int(data_parallel)) if usable else []
    fixes = [
        Fix(
            "Use " + ", ".join(f"{k}={v}" for k, v in s.items()),
            tuple(FixOp("set", k, v) for k, v in s.items()),
        )
        for s in suggestions[:3]
    ]
    options = "; ".join(f.description[4:] for f in fixes)
    suggestion = f"Values that work on {w} GPU{'s' if w != 1 else ''}: {options}." if options else ""
    if result.problem == "missing":
        yield Finding(
            "error", "batch.missing", TB, f"The batch size is not set: {result.message}.",
            suggestion="Set train_micro_batch_size_per_gpu (and gradient_accumulation_steps), or "
            "train_batch_size.",
            fix=_set(MB, 1, "Set train_micro_batch_size_per_gpu to 1"), page="batch",
        )
        return
    if result.problem == "type":
        return  # reported by batch_types with the field named
    derived = ", ".join(result.derived)
    how = f" (DeepSpeed derives {derived} from the others)" if derived else ""
    if result.problem == "product":
        message = (
            f"The batch sizes do not add up on {w} GPU{'s' if w != 1 else ''}: {result.message}{how}. "
            "DeepSpeed stops with \"Check batch related parameters\"."
        )
    else:
        message = f"With {w} GPU{'s' if w != 1 else ''}, {result.message}{how}. DeepSpeed stops at start-up."
    yield Finding(
        "error", f"batch.{result.problem}", TB, message, suggestion, fixes[0] if fixes else None, page="batch"
    )


def batch_types(ctx: Context) -> Iterator[Finding]:
    """Batch values DeepSpeed cannot compute with (strings, lists, ...)."""
    for key in BATCH_KEYS:
        value = ctx.config.get(key)
        if value is None or value == "auto" or isinstance(value, int | float):
            continue
        as_int = lax_int(value)
        fix = _set(key, as_int) if as_int and as_int > 0 else None
        yield Finding(
            "error", "batch.type", key,
            f"`{key}` is {value!r}, not a number; DeepSpeed fails doing arithmetic with it.",
            suggestion="Write a positive integer without quotes.", fix=fix, page="batch",
        )


# --------------------------------------------------------------------------------------------
# "auto"


def _walk_auto(config: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        prefix, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                path = join_path(prefix, key)
                if value == "auto" and isinstance(value, str):
                    yield path, node
                else:
                    stack.append((path, value))


def _hf_fills(path: str) -> bool:
    """Whether the HF Trainer / Accelerate replace "auto" at this path."""
    from core.schema.optimizer import HF_FILLED_PARAMS
    from core.schema.walk import resolve

    section, _, rest = path.partition(".params.")
    if rest and section in HF_FILLED_PARAMS:
        return rest in HF_FILLED_PARAMS[section]
    field = resolve(DeepSpeedConfig, path)
    return bool(field and field.meta.hf_auto)


def auto_values(ctx: Context) -> Iterator[Finding]:
    """"auto": fine where the HF Trainer fills it in (target hf); otherwise what DeepSpeed makes of it."""
    from core.schema.walk import resolve

    for path, _parent in _walk_auto(ctx.config):
        field = resolve(DeepSpeedConfig, path)
        if field is not None and not field_exists(field, path.rpartition(".")[0], ctx.version):
            continue  # the key does not exist in this version: reported as such
        if field is not None and field.model is not None and not is_strict(field.owner):
            continue  # "auto" where a section belongs: DeepSpeed fails reading it (a type error says so)
        if field is not None and field.default == "auto":
            continue  # "auto" is the default value itself: nothing to explain
        behaviour = field.meta.auto if field else ("kept" if path.split(".")[0] in ("optimizer", "scheduler")
                                                    else "default")
        # A pydantic section drops "auto" whoever passes the config on, so there it means the default.
        dropped = field is not None and behaviour == "default" and is_strict(field.owner)
        if ctx.is_hf and _hf_fills(path):
            continue
        if ctx.is_hf and not dropped:
            yield Finding(
                "error", "auto.not-filled", path,
                f"`{path}` is \"auto\", but the HF Trainer / Accelerate does not fill this key in, so DeepSpeed "
                "sees the literal string \"auto\".",
                suggestion="Write an explicit value." + (f" Default: {field.default!r}." if field else ""),
                fix=_set(path, field.default) if field and field.default is not None else None,
                page=field.meta.page if field else None,
            )
            continue
        if behaviour == "crash":
            yield Finding(
                "error", "auto.crash", path,
                f"`{path}` is \"auto\": only the HF Trainer / Accelerate replace \"auto\"; plain DeepSpeed "
                "tries to use the string and fails.",
                suggestion="Write the value, or choose the HF target if this config is passed to the HF Trainer.",
                page=field.meta.page if field else "batch",
            )
        elif behaviour == "fails":
            yield Finding(
                "error", "auto.fails", path,
                f"`{path}` is \"auto\": plain DeepSpeed keeps the string and training fails the first time it "
                "uses the value.",
                suggestion="Write the value" + (f" (default {field.default!r})" if field and field.default is not None
                                                 else "") + ", or choose the HF target if the HF Trainer fills it in.",
                fix=_set(path, field.default) if field and field.default is not None else None,
                page=field.meta.page if field else None,
            )
        elif behaviour == "kept" and path.startswith(("optimizer.", "scheduler.")):
            yield Finding(
                "error", "auto.kept-optimizer", path,
                f"`{path}` is \"auto\": plain DeepSpeed passes the string \"auto\" on to the optimizer or "
                "scheduler, and deepspeed.initialize fails.",
                suggestion="Write the value, or choose the HF target if the HF Trainer fills it in.",
                page="optimizer",
            )
        elif behaviour == "kept":
            yield Finding(
                "warning", "auto.kept", path,
                f"`{path}` is \"auto\": plain DeepSpeed keeps the string \"auto\" as the value, which breaks "
                "when it is used in training.",
                suggestion="Write the value, or choose the HF target if the HF Trainer fills it in.",
                page=field.meta.page if field else "optimizer",
            )
        else:
            default = field.default if field else None
            yield Finding(
                "info", "auto.default", path,
                f"`{path}` is \"auto\": "
                + ("the HF Trainer does not fill this key in, and " if ctx.is_hf else "plain ")
                + "DeepSpeed drops it and uses the default"
                + (f" ({default!r})." if default is not None else "."),
                suggestion="Write the value explicitly to make the config self-explanatory.",
                fix=_set(path, default) if default is not None else None,
                page=field.meta.page if field else None,
            )


# --------------------------------------------------------------------------------------------
# Precision


def _on(ctx: Context, section: str) -> bool:
    """``fp16``/``bf16`` enabled as this release reads it: core.effective's reading (pydantic's lax bool), or,
    where the release reads the section with dict.get, the Python truth of the raw value ("auto" is on)."""
    if versions.section_strict(ctx.version, section) is False:
        for key in (section, "bfloat16") if section == "bf16" else (section,):
            value = ctx.config.get(key)
            if isinstance(value, dict):
                return bool(value.get("enabled", False))
        return False
    return bool(getattr(ctx.meaning, section))


def precision(ctx: Context) -> Iterator[Finding]:
    """fp16/bf16 exclusivity, master-weights options, loss-scale keys without fp16."""
    fp16 = ctx.config.get("fp16")
    bf16 = ctx.config.get("bf16")
    if "fp16" in ctx.config and fp16 is None:
        yield Finding("error", "precision.null", "fp16", "`fp16` is null; DeepSpeed fails reading it.",
                      "Remove it or write {\"enabled\": false}.", _delete("fp16"), "precision")
    if "bf16" in ctx.config and bf16 is None and versions.section_strict(ctx.version, "bf16") is False:
        yield Finding("error", "precision.null", "bf16",
                      f"`bf16` is null; DeepSpeed {ctx.version} reads it with dict.get and fails.",
                      "Remove it or write {\"enabled\": false}.", _delete("bf16"), "precision")
    if _on(ctx, "fp16") and _on(ctx, "bf16"):
        yield Finding(
            "error", "precision.fp16-and-bf16", "bf16.enabled",
            "fp16 and bf16 are both enabled; DeepSpeed allows only one (\"bfloat16 and fp16 modes cannot be "
            "simultaneously enabled\").",
            suggestion="Use bf16 on Ampere (A100) or newer GPUs, fp16 on older ones.",
            fix=_set("fp16.enabled", False, "Keep bf16, disable fp16"), page="precision",
        )
    stage = ctx.stage
    checks = (
        ("fp16", "fp16_master_weights_and_grads", "Fp16_master_weights_and_grads"),
        ("bf16", "bf16_master_weights_and_grads", "Bf16_master_weights_and_grads"),
        ("bf16", "bf16_optimizer_states", "bf16_optimizer_states"),
    )
    for section, key, label in checks:
        value = ctx.get(f"{section}.{key}")
        allowed = versions.supported_stages(ctx.version, label)  # this release's own check, if it has one
        if isinstance(ctx.config.get(section), dict) and lax_bool(value) and allowed and stage not in allowed:
            names = " or ".join(map(str, sorted(allowed)))
            yield Finding(
                "error", "precision.master-weights-stage", f"{section}.{key}",
                f"DeepSpeed {ctx.version} supports {label} only with ZeRO stage {names}; this config uses "
                f"stage {stage}.",
                suggestion=f"Use ZeRO stage {min(allowed)} or turn this option off.",
                fix=_set("zero_optimization.stage", min(allowed), f"Set ZeRO stage {min(allowed)}"),
                page="precision",
            )
    if isinstance(bf16, dict) and lax_bool(bf16.get("bf16_optimizer_states")) and stage != 0 and not lax_bool(
        bf16.get("bf16_master_weights_and_grads")
    ):
        yield Finding(
            "error", "precision.bf16-optimizer-states", "bf16.bf16_optimizer_states",
            "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
            fix=_set("bf16.bf16_master_weights_and_grads", True), page="precision",
        )
    if isinstance(fp16, dict) and not ctx.meaning.fp16:
        scale_keys = [k for k in ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                                  "min_loss_scale", "consecutive_hysteresis") if k in fp16]
        if scale_keys and fp16.get("enabled") != "auto":
            yield Finding(
                "warning", "precision.loss-scale-unused", "fp16",
                f"fp16 loss-scaling keys ({', '.join(scale_keys)}) are set but fp16 is off, so they do nothing.",
                suggestion="Enable fp16 or remove them.", page="precision",
            )


def torch_autocast(ctx: Context) -> Iterator[Finding]:
    """torch_autocast.dtype and module names, checked as DeepSpeed does while parsing."""
    section = ctx.config.get("torch_autocast")
    if not isinstance(section, dict):
        return
    if "dtype" in section:
        value = section["dtype"]
        if canonical_dtype(value) is None:
            yield Finding(
                "error", "precision.autocast-dtype", "torch_autocast.dtype",
                f"torch_autocast.dtype {value!r} is not a dtype DeepSpeed knows; it fails reading the config.",
                suggestion="Use \"bf16\" or \"fp16\".", fix=_set("torch_autocast.dtype", "bf16"), page="precision",
            )
    modules = section.get("lower_precision_safe_modules")
    if modules is not None and not (isinstance(modules, list | tuple | dict | str)
                                    and all(isinstance(m, str) for m in modules)):
        yield Finding(
            "error", "precision.autocast-modules", "torch_autocast.lower_precision_safe_modules",
            f"lower_precision_safe_modules must be a list of module class names (strings), not {modules!r}.",
            suggestion="Write e.g. [\"torch.nn.Linear\"].", page="precision",
        )


# --------------------------------------------------------------------------------------------
# Communication


def communication(ctx: Context) -> Iterator[Finding]:
    """communication_data_type values and gradient_allreduce_op combinations."""
    for key in ("communication_data_type", "seq_parallel_communication_data_type"):
        if key not in ctx.config:
            continue
        value = ctx.config[key]
        if value is None or value == "auto":
            continue
        if not isinstance(value, str) or value.lower() not in ("fp32", "fp16", "bf16"):
            yield Finding(
                "error", "comm.dtype", key,
                f"`{key}` is {value!r}; DeepSpeed accepts only \"fp32\", \"fp16\" or \"bf16\" and stops otherwise.",
                suggestion="fp32 is the most accurate; bf16/fp16 halve the traffic.",
                fix=_set(key, "fp32"), page="precision",
            )
    if not versions.key_known(ctx.version, "", "gradient_allreduce_op") or "gradient_allreduce_op" not in ctx.config:
        return
    op = ctx.config["gradient_allreduce_op"]
    low = op.lower() if isinstance(op, str) else op
    if low == "auto":
        return
    if low not in ("mean", "sum"):
        yield Finding(
            "error", "comm.allreduce-op", "gradient_allreduce_op",
            f"gradient_allreduce_op is {op!r}; DeepSpeed accepts only \"mean\" or \"sum\".",
            fix=_set("gradient_allreduce_op", "mean"), page="precision",
        )
    elif low == "sum":
        conflicts = []
        if ctx.stage == 3:
            conflicts.append("ZeRO stage 3")
        if isinstance(ctx.zero.get("zenflow"), dict) or ("zenflow" in ctx.zero and ctx.zero["zenflow"] is not None):
            conflicts.append("ZenFlow")
        compile_section = ctx.config.get("compile")
        if isinstance(compile_section, dict) and lax_bool(compile_section.get("deepcompile")):
            conflicts.append("DeepCompile")
        if conflicts:
            yield Finding(
                "error", "comm.allreduce-sum", "gradient_allreduce_op",
                f"gradient_allreduce_op=\"sum\" is not supported with {conflicts[0]}.",
                fix=_set("gradient_allreduce_op", "mean"), page="precision",
            )


# --------------------------------------------------------------------------------------------
# ZeRO and offload


def zero_form(ctx: Context) -> Iterator[Finding]:
    """The deprecated boolean form and null."""
    if "zero_optimization" not in ctx.config:
        return
    value = ctx.config["zero_optimization"]
    if isinstance(value, bool):
        stage = 1 if value else 0
        yield Finding(
            "warning", "deprecated.zero-bool", "zero_optimization",
            f"`\"zero_optimization\": {str(value).lower()}` is the deprecated form; DeepSpeed reads it as stage "
            f"{stage}.",
            suggestion=f"Write {{\"stage\": {stage}}}.",
            fix=_set("zero_optimization", {"stage": stage}), page="zero",
        )
    elif value is None:
        yield Finding(
            "error", "zero.null", "zero_optimization",
            "`zero_optimization` is null; DeepSpeed fails reading it (it expects an object).",
            suggestion="Remove it, or write {\"stage\": 0}.", fix=_delete("zero_optimization"), page="zero",
        )


def _device(section: Any) -> str | None:
    if isinstance(section, dict):
        device = section.get("device", "none")
        return device if isinstance(device, str) else None
    return None


def offload(ctx: Context) -> Iterator[Finding]:
    """Offload settings DeepSpeed accepts but that do nothing or will fail later."""
    zero = ctx.zero
    stage = ctx.stage
    param_dev = _device(zero.get("offload_param"))
    opt_dev = _device(zero.get("offload_optimizer"))
    if param_dev in ("cpu", "nvme") and stage != 3:
        yield Finding(
            "warning", "zero.offload-param-below-3", "zero_optimization.offload_param",
            f"Parameter offload is set but ZeRO stage is {stage}; only stage 3 offloads parameters, so this "
            "does nothing.",
            suggestion="Use stage 3, or remove offload_param.",
            fix=_set("zero_optimization.stage", 3, "Switch to ZeRO stage 3"), page="zero",
        )
    if opt_dev in ("cpu", "nvme") and stage == 0:
        yield Finding(
            "warning", "zero.offload-optimizer-stage-0", "zero_optimization.offload_optimizer",
            "Optimizer offload is set but ZeRO is off (stage 0); offload needs ZeRO stage 1, 2 or 3.",
            suggestion="Use ZeRO stage 2 or 3 with optimizer offload.",
            fix=_set("zero_optimization.stage", 2, "Switch to ZeRO stage 2"), page="zero",
        )
    for name, dev in (("offload_param", param_dev), ("offload_optimizer", opt_dev)):
        section = zero.get(name)
        if dev == "nvme" and isinstance(section, dict) and not section.get("nvme_path"):
            yield Finding(
                "warning", "zero.nvme-without-path", f"zero_optimization.{name}.nvme_path",
                f"{name} uses NVMe but has no nvme_path; DeepSpeed accepts the config and fails when it "
                "starts swapping.",
                suggestion="Set nvme_path to a directory on a fast local NVMe drive, e.g. /local_nvme.",
                fix=_set(f"zero_optimization.{name}.nvme_path", "/local_nvme"), page="zero",
            )
    if param_dev == "nvme" and stage == 3 and opt_dev in (None, "none"):
        pass  # valid: parameters on NVMe, optimizer on GPU (rare but allowed)
    if stage == 3 and lax_bool(zero.get("elastic_checkpoint")):
        yield Finding(
            "warning", "zero.elastic-checkpoint-stage-3", "zero_optimization.elastic_checkpoint",
            "elastic_checkpoint is not supported with ZeRO stage 3 (DeepSpeed warns and ignores it).",
            suggestion="Use Universal Checkpointing instead.", fix=_delete("zero_optimization.elastic_checkpoint"),
            page="zero",
        )
    stage3_only = [
        path for path, field in iter_schema(ZeroConfig)
        if "." not in path and field.meta.stages == (3,) and stage in (1, 2)
        and any(k in zero for k in field.keys) and field.model is None and not field.meta.deprecated
        and not field.meta.removed
    ]
    if stage3_only:
        yield Finding(
            "info", "zero.stage3-keys-unused", "zero_optimization",
            f"Stage-3 settings have no effect at stage {stage}: {', '.join(sorted(stage3_only))}.",
            suggestion="Fine to keep if you switch stages; otherwise remove them.", page="zero",
        )
    hpz = lax_int(zero.get("zero_hpz_partition_size", 1))
    if hpz and hpz > 1 and ctx.world_size % hpz != 0:
        yield Finding(
            "warning", "zero.hpz-partition", "zero_optimization.zero_hpz_partition_size",
            f"zero_hpz_partition_size {hpz} does not divide the {ctx.world_size} GPUs; ZeRO++ hpZ needs the "
            "secondary partition to be a divisor of the world size (normally the GPUs per node).",
            suggestion="Set it to the number of GPUs per node.", page="zero",
        )
    rbs = zero.get("reduce_bucket_size")
    rbs_bounds = versions.field_entry(ctx.version, "zero_optimization", "reduce_bucket_size") or {}
    if "gt" in rbs_bounds and rbs is not None and rbs != "auto":
        value = lax_int(rbs)
        if value is not None and value <= 0:
            yield Finding(
                "error", "zero.reduce-bucket-size", "zero_optimization.reduce_bucket_size",
                f"reduce_bucket_size is {rbs!r}; DeepSpeed {ctx.version} requires it to be greater than 0.",
                suggestion="The default is 500000000 (5e8) elements.",
                fix=_set("zero_optimization.reduce_bucket_size", 500_000_000), page="zero",
            )


def deprecated_zero_keys(ctx: Context) -> Iterator[Finding]:
    """cpu_offload, cpu_offload_param, ... : a warning, or an error next to their replacement."""
    zero = ctx.zero
    fields = section_fields(ZeroConfig)
    for key, field in fields.items():
        if key != field.name or not field.meta.deprecated or key not in zero:
            continue
        path = f"zero_optimization.{key}"
        new = field.meta.replaced_by
        if new is None:
            yield Finding(
                "warning", "deprecated.key", path,
                f"`{key}` is deprecated and ignored; use `pin_memory` inside offload_param / offload_optimizer.",
                fix=_delete(path), page="zero",
            )
            continue
        new_field = fields[new]
        present = [k for k in new_field.keys if k in zero]
        if present:
            yield Finding(
                "error", "deprecated.with-replacement", path,
                f"`{key}` (deprecated) and its replacement `{present[0]}` are both set; DeepSpeed stops "
                f"(\"Cannot provide deprecated parameter '{key}' and replacing parameter '{new}' together\").",
                suggestion=f"Remove `{key}`.", fix=_delete(path), page="zero",
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
    ops = [FixOp("delete", f"zero_optimization.{key}")]
    for new_key, value in new_config.get("zero_optimization", {}).items():
        ops.append(FixOp("set", f"zero_optimization.{new_key}", value))
    return Fix(changes[0], tuple(ops))


def bfloat16_alias(ctx: Context) -> Iterator[Finding]:
    if "bfloat16" not in ctx.config:
        return
    if ctx.config.get("bf16") is not None:
        yield Finding(
            "warning", "deprecated.bfloat16-ignored", "bfloat16",
            "`bfloat16` is ignored because `bf16` is also set.", fix=_delete("bfloat16"), page="precision",
        )
    else:
        yield Finding(
            "warning", "deprecated.key", "bfloat16", "`bfloat16` is the old spelling of `bf16`.",
            fix=Fix("Rename `bfloat16` to `bf16`", (FixOp("move", "bfloat16", to="bf16"),)), page="precision",
        )


# --------------------------------------------------------------------------------------------
# Checkpoint, data types, data efficiency, autotuning, misc parse-time checks


def checkpoint(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("checkpoint")
    if not isinstance(section, dict):
        return
    mode = section.get("tag_validation")
    if "tag_validation" in section and not (isinstance(mode, str) and mode.upper() in ("WARN", "IGNORE", "FAIL")):
        yield Finding(
            "error", "checkpoint.tag-validation", "checkpoint.tag_validation",
            f"checkpoint.tag_validation is {mode!r}; DeepSpeed accepts \"Warn\", \"Ignore\" or \"Fail\".",
            fix=_set("checkpoint.tag_validation", "Warn"), page="advanced",
        )
    parallel = section.get("parallel_write")
    if isinstance(parallel, dict) and "pipeline_stage" in parallel and parallel["pipeline_stage"] not in (True, False):
        yield Finding(
            "error", "checkpoint.pipeline-stage", "checkpoint.parallel_write.pipeline_stage",
            f"checkpoint.parallel_write.pipeline_stage is {parallel['pipeline_stage']!r}; it must be true or false.",
            fix=_set("checkpoint.parallel_write.pipeline_stage", False), page="advanced",
        )
    writer = section.get("writer")
    if isinstance(writer, dict):
        for key, allowed in (("type", ("MOCK", "PYTHON", "FAST")), ("data_parallel", ("REPLICA", "SOCKET", "MACHINE"))):
            if writer.get(key) is not None:
                value = writer[key]
                if not (isinstance(value, str) and value.upper() in allowed):
                    yield Finding(
                        "error", "checkpoint.writer", f"checkpoint.writer.{key}",
                        f"checkpoint.writer.{key} is {value!r}; expected one of {', '.join(allowed)}.",
                        page="advanced",
                    )


def data_types(ctx: Context) -> Iterator[Finding]:
    if not versions.has_check(ctx.version, 'must be "auto" or a list of name patterns'):
        return  # this release does not check data_types while parsing
    section = ctx.config.get("data_types")
    if not isinstance(section, dict) or "keep_in_fp32_modules" not in section:
        return
    value = section["keep_in_fp32_modules"]
    if value != "auto" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        yield Finding(
            "error", "data-types.keep-in-fp32", "data_types.keep_in_fp32_modules",
            f"data_types.keep_in_fp32_modules is {value!r}; DeepSpeed requires \"auto\" or a list of name patterns.",
            fix=_set("data_types.keep_in_fp32_modules", "auto"), page="advanced",
        )


def data_efficiency(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("data_efficiency")
    if not isinstance(section, dict):
        return
    sampling = section.get("data_sampling")
    if not isinstance(sampling, dict):
        return
    curriculum = sampling.get("curriculum_learning")
    if isinstance(curriculum, dict) and curriculum.get("enabled") and "curriculum_metrics" not in curriculum:
        yield Finding(
            "error", "data-efficiency.curriculum-metrics",
            "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics",
            "Curriculum learning is enabled but curriculum_metrics is not set; DeepSpeed stops.",
            page="advanced",
        )
    dynamic = sampling.get("dynamic_batching")
    if isinstance(dynamic, dict) and dynamic.get("enabled") and "max_tokens" not in dynamic:
        yield Finding(
            "error", "data-efficiency.max-tokens", "data_efficiency.data_sampling.dynamic_batching.max_tokens",
            "Dynamic batching is enabled but max_tokens is not set; DeepSpeed stops.", page="advanced",
        )


def autotuning(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("autotuning")
    if not isinstance(section, dict):
        return
    for key in ("results_dir", "exps_dir"):
        if key in section and not section[key]:
            yield Finding(
                "error", "autotuning.empty-dir", f"autotuning.{key}",
                f"autotuning.{key} is empty; DeepSpeed stops (\"{key} cannot be empty\").",
                fix=_set(f"autotuning.{key}", f"autotuning_{key.split('_')[0]}"), page="advanced",
            )


def misc(ctx: Context) -> Iterator[Finding]:
    """Other parse-time failures and warnings of DeepSpeed."""
    vocab = ctx.config.get("vocabulary_size")
    try:
        misaligned = bool(vocab and vocab % 8 != 0)  # exactly DeepSpeed's check, run while parsing
    except TypeError:
        yield Finding(
            "error", "misc.vocabulary-size-type", "vocabulary_size",
            f"vocabulary_size is {vocab!r}; DeepSpeed computes `vocabulary_size % 8` while reading the config "
            "and fails on anything but a number.",
            suggestion="Write the vocabulary size as a whole number, or remove it.", fix=_delete("vocabulary_size"),
            page="advanced",
        )
        misaligned = False
    if misaligned and isinstance(vocab, int) and not isinstance(vocab, bool):
        yield Finding(
            "warning", "misc.vocabulary-alignment", "vocabulary_size",
            f"vocabulary_size {vocab} is not a multiple of 8; tensor cores are used less efficiently.",
            suggestion=f"Pad the vocabulary to {vocab + (-vocab) % 8}.", page="advanced",
        )
    yield from _wall_clock(ctx)
    spp = ctx.config.get("steps_per_print")
    # Training computes `step % steps_per_print`: 0 divides by zero, a non-number fails; others just print oddly.
    if spp is not None and spp != "auto" and (not isinstance(spp, int | float) or spp == 0):
        yield Finding(
            "error", "misc.steps-per-print", "steps_per_print",
            f"steps_per_print is {spp!r}; DeepSpeed computes `step % steps_per_print` during training and "
            "fails on anything but a positive whole number (0 divides by zero at the first step).",
            suggestion="Use e.g. 10, or remove it to print nothing periodically.",
            fix=_set("steps_per_print", 10), page="monitoring",
        )
    if isinstance(spp, int | float) and not isinstance(spp, bool) and spp != 0 and (
        spp < 0 or (isinstance(spp, float) and not spp.is_integer())
    ):
        yield Finding(
            "warning", "misc.steps-per-print-odd", "steps_per_print",
            f"steps_per_print is {spp!r}; it is meant to be a positive whole number of steps.",
            fix=_set("steps_per_print", 10), page="monitoring",
        )
    ep = ctx.config.get("expert_parallel")
    if isinstance(ep, dict) and ep.get("load_balance_coeff") is not None:
        yield Finding(
            "error", "misc.load-balance-coeff", "expert_parallel.load_balance_coeff",
            "expert_parallel.load_balance_coeff is not supported by DeepSpeed's AutoEP build; it stops.",
            fix=_delete("expert_parallel.load_balance_coeff"), page="advanced",
        )
    aio = ctx.config.get("aio")
    if isinstance(aio, dict) and lax_bool(aio.get("use_gds")):
        yield Finding(
            "info", "misc.gds", "aio.use_gds",
            "aio.use_gds needs NVIDIA GPUDirect Storage on a CUDA machine; DeepSpeed refuses it elsewhere.",
            page="zero",
        )
    clip = lax_float(ctx.config.get("gradient_clipping"))
    if clip is not None and clip < 0:
        yield Finding(
            "warning", "misc.negative-clipping", "gradient_clipping",
            f"gradient_clipping is {clip}; a negative norm makes no sense (0 disables clipping).",
            fix=_set("gradient_clipping", 1.0), page="precision",
        )
    for key in ("sequence_parallel_size",):
        sp = ctx.config.get(key)
        if isinstance(sp, int) and not isinstance(sp, bool) and sp > 0 and ctx.world_size % sp:
            yield Finding(
                "warning", "misc.sequence-parallel", key,
                f"sequence_parallel_size {sp} does not divide the {ctx.world_size} GPUs; the data-parallel size "
                f"becomes {ctx.world_size / sp:g}.",
                page="batch",
            )


def _wall_clock(ctx: Context) -> Iterator[Finding]:
    # DeepSpeed computes `wall_clock_breakdown | flops_profiler.enabled` while parsing.
    wcb = ctx.config.get("wall_clock_breakdown", False)
    profiler = ctx.config.get("flops_profiler")
    enabled = profiler.get("enabled", False) if isinstance(profiler, dict) else False
    if wcb == "auto":
        return  # the "auto" rule reports it
    try:
        wcb | enabled
    except TypeError:
        culprit, value = (("wall_clock_breakdown", wcb) if not isinstance(wcb, bool | int)
                          else ("flops_profiler.enabled", enabled))
        yield Finding(
            "error", "misc.wall-clock-breakdown", culprit,
            f"`{culprit}` is {value!r}; DeepSpeed combines wall_clock_breakdown and flops_profiler.enabled "
            "with `|` while reading the config and fails on anything but true/false.",
            fix=_set(culprit, False), page="monitoring",
        )


def sequence_parallel(ctx: Context) -> Iterator[Finding]:
    """sequence_parallel_size divides the world size; a value DeepSpeed cannot divide by stops it."""
    if "sequence_parallel_size" not in ctx.config:
        return
    sp = ctx.config["sequence_parallel_size"]
    if not isinstance(sp, int | float) or sp <= 0:  # True is 1 to DeepSpeed's division
        yield Finding(
            "error", "misc.sequence-parallel-invalid", "sequence_parallel_size",
            f"sequence_parallel_size is {sp!r}; DeepSpeed divides the GPU count by it, so it must be a "
            "positive number.",
            suggestion="Remove it, or set the sequence-parallel degree (e.g. 2).",
            fix=_delete("sequence_parallel_size"), page="batch",
        )


def compile_passes(ctx: Context) -> Iterator[Finding]:
    """compile.passes: "autotp" only exists from DeepSpeed 0.19.8 on."""
    section = ctx.config.get("compile")
    passes = section.get("passes") if isinstance(section, dict) else None
    passes_type = (versions.field_entry(ctx.version, "compile", "passes") or {}).get("type", "autotp")
    if "autotp" not in passes_type and isinstance(passes, list) and "autotp" in passes:
        yield Finding(
            "error", "compile.pass-not-in-version", "compile.passes",
            f"DeepSpeed {ctx.version} has no \"autotp\" compile pass (it accepts z1, z3, autosp); it rejects "
            "the config.",
            fix=_set("compile.passes", [p for p in passes if p != "autotp"]), page="advanced",
        )


def elasticity(ctx: Context) -> Iterator[Finding]:
    """DeepSpeed 0.19.5 elasticity: it takes over the batch size and refuses explicit batch keys."""
    section = ctx.config.get("elasticity")
    if not versions.key_known(ctx.version, "", "elasticity") or not isinstance(section, dict) \
            or not section.get("enabled"):
        return
    if not section.get("ignore_non_elastic_batch_info") and any(k in ctx.config for k in BATCH_KEYS):
        yield Finding(
            "error", "elasticity.batch-keys", "elasticity.ignore_non_elastic_batch_info",
            "Elastic training is enabled and computes the batch size itself, but the config also sets "
            "batch keys; DeepSpeed 0.19.5 refuses that (ElasticityConfigError).",
            suggestion="Remove the batch keys, or set elasticity.ignore_non_elastic_batch_info: true.",
            fix=_set("elasticity.ignore_non_elastic_batch_info", True), page="batch",
        )


RULES = (
    sequence_parallel, compile_passes, elasticity,
    removed_keys, batch_triangle, batch_types, auto_values, precision, torch_autocast, communication,
    zero_form, offload, deprecated_zero_keys, bfloat16_alias, checkpoint, data_types, data_efficiency,
    autotuning, misc,
)
