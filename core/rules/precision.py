"""Precision rules: fp16/bf16 (and the old `bfloat16` spelling), master weights, torch_autocast, and the
communication data types."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from core import versions
from core.effective import Effective, effective
from core.findings import Finding, Fix, FixOp, brief
from core.rules import torch_checks
from core.rules.context import Context, lax_bool, lax_float
from core.rules.fixes import delete_fix, set_fix
from core.schema.optimizer import OptimizerSpec, resolve_optimizer
from core.schema.precision import FP16_LOSS_SCALE_KEYS, canonical_dtype

# --------------------------------------------------------------------------------------------
# Precision


def _on(ctx: Context, section: str) -> bool:
    """``fp16``/``bf16`` enabled as this release reads it (core.effective: pydantic's lax bool, or where the
    release reads the section with dict.get the Python truth of the raw value, "auto" included)."""
    return bool(getattr(ctx.meaning, section))


def fp16_and_bf16_both_on(meaning: Effective, hf: bool) -> bool:
    """Whether fp16 and bf16 are both enabled in the config ``meaning`` reads (as its release reads it), once the
    HF Trainer has filled an "auto" ``enabled`` when ``hf`` (target hf): from --fp16 / --bf16, which
    TrainingArguments never lets both be on, so an "auto" section is not the second of two enabled ones (older
    releases read a raw "auto" as on, but they never see it under the Trainer). DeepSpeed refuses both on."""

    def on(section: str) -> bool:
        return not (hf and getattr(meaning, f"{section}_auto")) and bool(getattr(meaning, section))

    return on("fp16") and on("bf16")


def _power_fails(value: Any) -> bool:
    """Whether Python's ``2**value`` fails (not a number, a float overflow) or cannot finish (a huge int)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value > 2**24
    try:
        2**value  # only whether it raises matters
    except (TypeError, OverflowError):
        return True
    return False


#: The part of the ZeRO optimizers' master-weights assertion every release words the same way.
MASTER_WEIGHTS_CHECK = "Offload with DeepSpeedCPUAdam"


def _master_weights_check(ctx: Context, meaning: Effective, stage: int) -> str | None:
    """The release's assertion that the config (read as ``meaning``) fails at ``stage``: 16-bit master weights
    without ZeRO-Offload and DeepSpeedCPUAdam (``Effective.master_weights_refused``), where the release's ZeRO
    optimizer checks it and runs (BF16_Optimizer, which takes its place, is not given the flags); None otherwise,
    and when the optimizer class is not known here (a client optimizer, or "auto")."""
    if not meaning.master_weights_refused or meaning.optimizer_class is None:
        return None
    if ctx.bf16_optimizer(stage):
        return None
    return versions.zero_optimizer_check(ctx.version, stage, MASTER_WEIGHTS_CHECK)


def _refused_at_stage(ctx: Context, stage: int) -> bool:
    """Whether the config's 16-bit master weights would be refused at ``deepspeed.initialize`` at ``stage``."""
    zero = ctx.config.get("zero_optimization")
    patched = {**ctx.config, "zero_optimization": {**(zero if isinstance(zero, dict) else {}), "stage": stage}}
    return _master_weights_check(ctx, effective(patched, ctx.version), stage) is not None


def master_weights_offload(ctx: Context) -> Iterator[Finding]:
    """16-bit master weights the ZeRO optimizer refuses at initialize without ZeRO-Offload and DeepSpeedCPUAdam
    (``Effective.master_weights_refused``), in the releases whose ZeRO optimizer checks it and reads the flag."""
    m = ctx.meaning
    check = _master_weights_check(ctx, m, ctx.stage)
    if check is None:
        return
    if m.fp16_master_weights_and_grads:  # read as the release reads it (dict.get releases: only with fp16 on)
        owner, key = "fp16", "fp16_master_weights_and_grads"
    else:
        owner, key = m.bf16_section, "bf16_master_weights_and_grads"
        if versions.key_known(ctx.version, "bf16", key) is not True:
            return  # a release without bf16 master weights ignores the key (the key check says so)
    has = ("the optimizer is not offloaded" if m.offload_optimizer == "none"
           else f"the optimizer is offloaded but is {str(m.optimizer_class).rsplit('.', 1)[-1]}")
    label = f"ZeRO-{ctx.stage}"
    # the sentence that says what is needed (0.16-0.18 wrote several into one message)
    sentence = [part for part in re.split(r"\.\s*", check) if MASTER_WEIGHTS_CHECK in part][-1]
    said = sentence.strip().replace("{}", label, 1).replace("{}", "…")
    ways = ['offload the optimizer to the CPU (zero_optimization.offload_optimizer.device "cpu") with Adam or '
            "AdamW (torch_adam off), so that DeepSpeed builds DeepSpeedCPUAdam"]
    if key.startswith("bf16") and not m.bf16_optimizer_states and m.offload_optimizer == "none" \
            and versions.key_known(ctx.version, "bf16", "bf16_optimizer_states"):
        ways.append(f"keep the optimizer states in bf16 on the GPU ({owner}.bf16_optimizer_states true)")
    ways.append(f"turn {key} off")
    yield Finding(
        "error", "precision.master-weights-offload", f"{owner}.{key}",
        f"{owner}.{key} needs {label} Offload with DeepSpeedCPUAdam in DeepSpeed {ctx.version}, and {has}: "
        f"deepspeed.initialize stops (\"{said}\").",
        suggestion="Either " + "; or ".join(ways) + ".", page="precision",
    )


def _master_weight_flags(ctx: Context) -> Iterator[tuple[str, str, str, frozenset[int] | None]]:
    """(section, key, the release's label, the stages its own check allows) of each 16-bit master-weights or
    optimizer-states flag the config switches on, read as the release reads it."""
    read = ctx.meaning.bf16_section  # the old spelling `bfloat16` when `bf16` is not set
    checks = (
        ("fp16", "fp16_master_weights_and_grads", "Fp16_master_weights_and_grads"),
        (read, "bf16_master_weights_and_grads", "Bf16_master_weights_and_grads"),
        (read, "bf16_optimizer_states", "bf16_optimizer_states"),
    )
    for section, key, label in checks:
        if section == "fp16":  # read as the release reads it (dict.get releases: only with fp16 on)
            on = ctx.meaning.fp16_master_weights_and_grads
        else:
            value = ctx.get(f"{section}.{key}")
            lenient = versions.section_strict(ctx.version, section) is False
            on = bool(value) if lenient else lax_bool(value)  # dict.get releases use the truth value: "false" is on
        if isinstance(ctx.config.get(section), dict) and on:
            allowed = versions.supported_stages(ctx.version, label)  # this release's own check, if it has one
            yield section, key, label, frozenset(allowed) if allowed else None


def master_weights_refuse_stage(ctx: Context, stage: int) -> bool:
    """Whether the config's 16-bit master weights or optimizer states would be refused at ZeRO ``stage`` (the
    release's config check of the stages, or its ZeRO optimizer's without CPU-Adam offload): a fix that moves the
    config to that stage must not be offered."""
    return (any(allowed and stage not in allowed for *_, allowed in _master_weight_flags(ctx))
            or _refused_at_stage(ctx, stage))


def master_weights_stage(ctx: Context) -> Iterator[Finding]:
    """16-bit master weights or optimizer states at a ZeRO stage the release's own config check refuses
    (``precision.master-weights-stage``)."""
    stage = ctx.stage
    for section, key, label, allowed in _master_weight_flags(ctx):
        if allowed and stage not in allowed:
            names = " or ".join(map(str, sorted(allowed)))
            staged = set_fix("zero_optimization.stage", min(allowed), f"Set ZeRO stage {min(allowed)}")
            # at that stage the ZeRO optimizer may refuse the flag in turn (no CPU Adam offload): no fix then
            refused = _refused_at_stage(ctx, min(allowed))
            yield Finding(
                "error", "precision.master-weights-stage", f"{section}.{key}",
                f"DeepSpeed {ctx.version} supports {label} only with ZeRO stage {names}; this config uses "
                f"stage {stage}.",
                suggestion=f"Use ZeRO stage {min(allowed)}"
                + (" with the optimizer offloaded to the CPU as DeepSpeedCPUAdam (which that stage needs for it)"
                   if refused else "") + ", or turn this option off.",
                fix=None if refused else staged, page="precision",
            )


def bf16_optimizer_states(ctx: Context) -> Iterator[Finding]:
    """bf16 optimizer states without bf16 master weights above stage 0 (``precision.bf16-optimizer-states``)."""
    read = ctx.meaning.bf16_section
    states_check = "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled."
    read_bf16 = ctx.config.get(read)
    if isinstance(read_bf16, dict) and lax_bool(read_bf16.get("bf16_optimizer_states")) and ctx.stage != 0 \
            and not lax_bool(read_bf16.get("bf16_master_weights_and_grads")) \
            and versions.has_check(ctx.version, states_check):
        yield Finding(
            "error", "precision.bf16-optimizer-states", f"{read}.bf16_optimizer_states",
            states_check, fix=set_fix(f"{read}.bf16_master_weights_and_grads", True), page="precision",
        )


def refused_master_weights(config: Mapping[str, Any], version: str, target: str = "deepspeed") -> dict[str, str]:
    """The 16-bit master-weights keys of ``config`` that DeepSpeed ``version`` refuses (dotted path -> finding
    code): what the rules ``master_weights_offload``, ``master_weights_stage`` and ``bf16_optimizer_states`` report,
    asked of them, so that whoever removes such keys (the planner's adoption) and the validator agree."""
    ctx = Context(config=dict(config), target=target, version=version)
    findings = [*master_weights_offload(ctx), *master_weights_stage(ctx), *bf16_optimizer_states(ctx)]
    return {finding.path: finding.code for finding in findings}


#: The 16-bit master-weights keys ``refused_master_weights`` can report, per precision section.
MASTER_WEIGHTS_KEYS: dict[str, tuple[str, ...]] = {
    "fp16": ("fp16_master_weights_and_grads",),
    "bf16": ("bf16_master_weights_and_grads", "bf16_optimizer_states"),
    "bfloat16": ("bf16_master_weights_and_grads", "bf16_optimizer_states")}


def without_refused_master_weights(config: dict[str, Any], version: str,
                                   target: str = "deepspeed") -> tuple[dict[str, Any], dict[str, str]]:
    """``config`` without the master-weights keys the validator refuses (``refused_master_weights``), and what went
    (dotted path -> the finding code that refused it). Asked again after each removal: taking
    ``bf16_master_weights_and_grads`` out can leave ``bf16_optimizer_states`` refused without it. The Plan page's
    adoption and Make it fit's ways both remove them so."""
    removed: dict[str, str] = {}
    while refused := refused_master_weights(config, version, target):
        progress = False
        for path, code in refused.items():
            section, _, key = path.partition(".")
            values = config.get(section)
            if isinstance(values, Mapping) and key in values:
                config = {**config, section: {k: v for k, v in values.items() if k != key}}
                removed[path] = code
                progress = True
        if not progress:
            break  # refused for a reason no removal of ours changes: the validator says so
    return config, removed


def precision(ctx: Context) -> Iterator[Finding]:
    """fp16/bf16 exclusivity, master-weights options, loss-scale keys without fp16."""
    fp16 = ctx.config.get("fp16")
    bf16 = ctx.config.get("bf16")
    if "fp16" in ctx.config and fp16 is None:
        yield Finding("error", "precision.null", "fp16", "`fp16` is null; DeepSpeed fails reading it.",
                      "Remove it or write {\"enabled\": false}.", delete_fix("fp16"), "precision")
    if "bf16" in ctx.config and bf16 is None and versions.section_strict(ctx.version, "bf16") is False:
        yield Finding("error", "precision.null", "bf16",
                      f"`bf16` is null; DeepSpeed {ctx.version} reads it with dict.get and fails.",
                      "Remove it or write {\"enabled\": false}.", delete_fix("bf16"), "precision")
    if fp16_and_bf16_both_on(ctx.meaning, ctx.is_hf):
        yield Finding(
            "error", "precision.fp16-and-bf16", "bf16.enabled",
            "fp16 and bf16 are both enabled; DeepSpeed allows only one (\"bfloat16 and fp16 modes cannot be "
            "simultaneously enabled\").",
            suggestion="Use bf16 on Ampere (A100) or newer GPUs, fp16 on older ones.",
            fix=set_fix("fp16.enabled", False, "Keep bf16, disable fp16"), page="precision",
        )
    yield from master_weights_stage(ctx)
    yield from bf16_optimizer_states(ctx)
    lenient_fp16 = versions.section_strict(ctx.version, "fp16") is False
    power = fp16.get("initial_scale_power") if isinstance(fp16, dict) else None
    if lenient_fp16 and _on(ctx, "fp16") and "initial_scale_power" in fp16 and _power_fails(power):
        yield Finding(
            "error", "precision.scale-power", "fp16.initial_scale_power",
            f"fp16.initial_scale_power is {brief(power)}: DeepSpeed {ctx.version} computes 2**initial_scale_power "
            "while it reads the config (get_initial_dynamic_scale), which fails or never finishes with this value.",
            suggestion="The default is 16 (a loss scale of 65536).", fix=set_fix("fp16.initial_scale_power", 16),
            page="precision",
        )
    if isinstance(fp16, dict) and not ctx.meaning.fp16:
        # Lamb's check reads loss_scale with fp16 off (optimizer.lamb-static-loss-scale): not unused then
        read = requires_dynamic_loss_scale(ctx) and (found := static_loss_scale(ctx)) and found[1] == "fp16.loss_scale"
        scale_keys = [k for k in FP16_LOSS_SCALE_KEYS if k in fp16 and not (read and k == "loss_scale")]
        if scale_keys and fp16.get("enabled") != "auto":
            yield Finding(
                "warning", "precision.loss-scale-unused", "fp16",
                f"fp16 loss-scaling keys ({', '.join(scale_keys)}) are set but fp16 is off, so they do nothing.",
                suggestion="Enable fp16 or remove them.", page="precision",
            )


def requires_dynamic_loss_scale(ctx: Context) -> bool:
    """Whether the config's optimizer is one the engine refuses with a static loss scale (Lamb)."""
    section = ctx.config.get("optimizer")
    name = section.get("type") if isinstance(section, dict) else None
    spec = resolve_optimizer(name, ctx.version) if isinstance(name, str) else None
    return isinstance(spec, OptimizerSpec) and spec.requires_dynamic_loss_scale


def static_loss_scale(ctx: Context) -> tuple[float, str, str] | None:
    """The loss scale the engine compares with 0 for Lamb's "requires dynamic loss scaling" (``dynamic_loss_scale()``)
    when it is static: (scale, the path that sets it, why the release reads it), else None. fp16 on: its loss_scale.
    fp16 off: still its loss_scale in the releases that read it then (0.17 on, ``loss_scale_probes``), and under bf16
    a static 1.0 in those that set one (0.16). Unrecorded: as the newest releases."""
    fp16 = ctx.config.get("fp16")
    written = lax_float(fp16.get("loss_scale", 0)) if isinstance(fp16, dict) else 0.0
    read_when_off = versions.loss_scale_probe(ctx.version, "fp16_off")
    if ctx.meaning.fp16 or read_when_off is None or read_when_off == 128:
        why = "" if ctx.meaning.fp16 else f"DeepSpeed {ctx.version} reads it even when fp16 is off"
        return (written, "fp16.loss_scale", why) if written not in (None, 0.0) else None
    bf16_scale = versions.loss_scale_probe(ctx.version, "bf16")
    if ctx.meaning.bf16 and isinstance(bf16_scale, int | float) and bf16_scale != 0:
        return (float(bf16_scale), f"{ctx.meaning.bf16_section}.enabled",
                f"with bf16 on and fp16 off, DeepSpeed {ctx.version} sets a static loss scale of {bf16_scale:g}")
    return None


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
                f"torch_autocast.dtype {brief(value)} is not a dtype DeepSpeed knows; it fails reading the config.",
                suggestion="Use \"bf16\" or \"fp16\".", fix=set_fix("torch_autocast.dtype", "bf16"), page="precision",
            )
    # get_lower_precision_safe_modules iterates a written value (null included, enabled or not) and wants strings;
    # a string or an object passes there (its characters / keys are strings) and fails only at initialize.
    modules = section.get("lower_precision_safe_modules")
    if "lower_precision_safe_modules" in section and not (isinstance(modules, list | tuple | dict | str)
                                                          and all(isinstance(m, str) for m in modules)):
        yield Finding(
            "error", "precision.autocast-modules", "torch_autocast.lower_precision_safe_modules",
            f"lower_precision_safe_modules must be a list of module class names (strings), not {brief(modules)}.",
            suggestion="Write e.g. [\"torch.nn.Linear\"], or remove the key to use the default modules.",
            page="precision",
        )
        return
    # with autocast on, deepspeed.initialize imports each name as "package.Class" (rsplit on the last dot), iterating
    # the value as written: a string's characters, an object's keys
    bare = [m for m in modules or () if isinstance(m, str) and "." not in m]
    check = versions.torch_autocast_check(ctx.version, "Failed to import lower precision safe module")
    if bare and ctx.meaning.torch_autocast and check:
        failure = check.replace("{}", f"{bare[0]}", 1).replace("{}", "not enough values to unpack")
        whole = isinstance(modules, str)
        yield Finding(
            "error", "precision.autocast-module-name", "torch_autocast.lower_precision_safe_modules",
            (f"lower_precision_safe_modules is the string {brief(modules)}, not a list: deepspeed.initialize imports "
             f"each of its characters as \"package.Class\" and fails (\"{failure}\")." if whole else
             f"lower_precision_safe_modules holds {', '.join(map(brief, bare))}, a class name without its module"
             + (" (an object's keys are its entries)" if isinstance(modules, dict) else "")
             + f"; deepspeed.initialize imports each entry as \"package.Class\" and fails (\"{failure}\")."),
            suggestion=(f"Write it as a list: [{brief(modules)}]." if whole else
                        "Write the full import path, e.g. \"torch.nn.Linear\"."),
            fix=set_fix("torch_autocast.lower_precision_safe_modules", [modules]) if whole else None,
            page="precision",
        )
    if not (ctx.meaning.torch_autocast and check and isinstance(modules, list | tuple)):
        return
    judged = [j for m in modules if isinstance(m, str) and "." in m and (j := torch_checks.nn_module_name(m))]
    path = "torch_autocast.lower_precision_safe_modules"
    for fails in (True, False):  # one finding for the entries torch lacks, one for `nn.` names
        these = [j for j in judged if j.fails is fails]
        if not these:
            continue
        meant = {j.entry: j.meant for j in these if j.meant}
        names = ", ".join(brief(j.entry) for j in these)
        failure = check.replace("{}", these[0].entry, 1).replace("{}", "...")
        yield Finding(
            "error" if fails else "warning",
            "precision.autocast-module-missing" if fails else "precision.autocast-module-nn",
            path,
            (f"lower_precision_safe_modules names {names}, which torch {versions.torch_checks()['torch']} does not "
             f"have there; deepspeed.initialize imports each entry and fails (\"{failure}\")." if fails else
             f"lower_precision_safe_modules names {names}: deepspeed.initialize imports the module `nn`, not torch's "
             f"`torch.nn` (the name it is usually imported as), and fails (\"{failure}\") unless your code has a "
             "package named nn."),
            suggestion=" ".join(filter(None, (
                "Write " + ", ".join(f"{brief(new)} for {brief(old)}" for old, new in meant.items()) + "."
                if meant else "",
                "" if len(meant) == len(these) else
                "Name a torch.nn class (e.g. \"torch.nn.Linear\") or your own module's import path."))),
            # one set per item, so that the two findings' fixes compose
            fix=Fix("Write " + ", ".join(brief(new) for new in meant.values()),
                    tuple(FixOp("set", f"{path}[{i}]", meant[m]) for i, m in enumerate(modules)
                          if isinstance(m, str) and m in meant)) if meant else None,
            page="precision",
        )


def bfloat16_alias(ctx: Context) -> Iterator[Finding]:
    if "bfloat16" not in ctx.config or (ctx.config["bfloat16"] is None and ctx.config.get("bf16") is None):
        return  # DeepSpeed then reads the null `bfloat16` and fails (the type check says so): no rename hides it
    if ctx.config.get("bf16") is not None:
        yield Finding(
            "warning", "deprecated.bfloat16-ignored", "bfloat16",
            "`bfloat16` is ignored because `bf16` is also set.", fix=delete_fix("bfloat16"), page="precision",
        )
    elif ctx.is_hf and "bf16" not in ctx.config:
        # accelerate's DeepSpeedPlugin.set_mixed_precision always writes a `bf16` section from TrainingArguments
        yield Finding(
            "warning", "deprecated.bfloat16-ignored", "bfloat16",
            "`bfloat16` is never read under the HF Trainer: Accelerate writes its own `bf16` section (from "
            "TrainingArguments' bf16 / mixed precision) before DeepSpeed reads the config, and DeepSpeed reads "
            "`bfloat16` only when `bf16` is absent.",
            suggestion="Set bf16=True in TrainingArguments for bf16; removing `bfloat16` changes nothing.",
            fix=delete_fix("bfloat16"), page="precision",
        )
    else:
        null_bf16 = "bf16" in ctx.config  # a null `bf16` counts as absent: DeepSpeed reads `bfloat16` then
        ops = ((FixOp("delete", "bf16"),) if null_bf16 else ()) + (FixOp("move", "bfloat16", to="bf16"),)
        yield Finding(
            "warning", "deprecated.key", "bfloat16", "`bfloat16` is the old spelling of `bf16`"
            + (" (`bf16` is null, so DeepSpeed reads `bfloat16`)." if null_bf16 else "."),
            fix=Fix("Rename `bfloat16` to `bf16`" + (" in place of the null `bf16`" if null_bf16 else ""), ops),
            page="precision",
        )


# --------------------------------------------------------------------------------------------
# Communication


#: The top-level keys get_communication_data_type reads a dtype from, in the releases whose profile lists them.
COMMUNICATION_DTYPE_KEYS = ("communication_data_type", "seq_parallel_communication_data_type",
                            "seq_parallel_comm_data_type")


def communication(ctx: Context) -> Iterator[Finding]:
    """communication_data_type values and gradient_allreduce_op combinations."""
    for key in COMMUNICATION_DTYPE_KEYS:
        # the sequence-parallel dtype's key was seq_parallel_comm_data_type before 0.16.5: each release's own
        if key not in ctx.config or not versions.key_known(ctx.version, "", key):
            continue
        value = ctx.config[key]
        if value is None or value == "auto":
            continue
        if not isinstance(value, str) or value.lower() not in ("fp32", "fp16", "bf16"):
            yield Finding(
                "error", "comm.dtype", key,
                f"`{key}` is {brief(value)}; DeepSpeed accepts only \"fp32\", \"fp16\" or \"bf16\" and stops "
                "otherwise.",
                suggestion="fp32 is the most accurate; bf16/fp16 halve the traffic.",
                fix=set_fix(key, "fp32"), page="precision",
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
            f"gradient_allreduce_op is {brief(op)}; DeepSpeed accepts only \"mean\" or \"sum\".",
            fix=set_fix("gradient_allreduce_op", "mean"), page="precision",
        )
    elif low == "sum":
        conflicts = []
        if ctx.stage == 3:
            conflicts.append("ZeRO stage 3")
        if isinstance(ctx.zero.get("zenflow"), dict) or ("zenflow" in ctx.zero and ctx.zero["zenflow"] is not None):
            conflicts.append("ZenFlow")
        if ctx.meaning.deepcompile:
            conflicts.append("DeepCompile")
        if conflicts:
            yield Finding(
                "error", "comm.allreduce-sum", "gradient_allreduce_op",
                f"gradient_allreduce_op=\"sum\" is not supported with {conflicts[0]}.",
                fix=set_fix("gradient_allreduce_op", "mean"), page="precision",
            )
