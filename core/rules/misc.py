"""Everything else DeepSpeed checks while parsing: removed keys, checkpointing, data types, data efficiency,
autotuning, compile passes, and other top-level values."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from core import versions
from core.batch import reads_sequence_parallel
from core.effective import switch_on
from core.findings import Finding, Fix, brief, get_path, is_number, join_path
from core.rules.context import Context, lax_bool, lax_float, switched_on
from core.rules.fixes import closest_choice, delete_fix, set_fix
from core.rules.initialize import predivide_factor_path
from core.schema.advanced import CheckpointConfig, CheckpointWriterConfig, DataSamplingConfig
from core.schema.base import field_meta, version_tuple
from core.schema.root import DeepSpeedConfig
from core.schema.walk import field_exists, section_fields
from core.schema.zero import ZeroConfig

ISSUE_8489 = "https://github.com/deepspeedai/DeepSpeed/issues/8489"


# --------------------------------------------------------------------------------------------
# Removed keys (DeepSpeed 0.19.8 rejects them on sight)


def removed_keys(ctx: Context) -> Iterator[Finding]:
    """Keys DeepSpeed removed: an error in the releases that reject them (from the generated profiles)."""
    for key, reason in versions.removed_top_level_keys(ctx.version).items():
        if key in ctx.config:
            field = section_fields(DeepSpeedConfig).get(key)
            yield _removed(ctx, "", key, reason, field.meta.page if field else None)
    if not isinstance(ctx.config.get("zero_optimization"), dict):
        return
    for key in ctx.zero:
        reason = removed_zero_reason(ctx.version, key) if isinstance(key, str) else None
        if reason is not None:
            yield _removed(ctx, "zero_optimization", key, reason, "zero")


def removed_zero_reason(version: str, key: str) -> str | None:
    """Why DeepSpeed ``version`` refuses the ZeRO key ``key`` on sight (an earlier release read it, this one no
    longer does), or None; the validator and the JSON Schema both ask this."""
    if versions.key_known(version, "zero_optimization", key) is not False:
        return None
    _added, removed = versions.history("zero_optimization", key)
    if not removed or version_tuple(version) < version_tuple(removed):
        return None
    field = section_fields(ZeroConfig).get(key)
    return (field.meta.extra.get("removed_message") if field else None) or (
        f"`{key}` was removed in DeepSpeed {removed}; the ZeRO section rejects it as an unknown key.")


def _removed(ctx: Context, prefix: str, key: str, reason: str, page: str | None) -> Finding:
    path = join_path(prefix, key)
    if switched_on(prefix, key, get_path(ctx.config, path)):
        # Earlier releases ran this; removing it loads the config but trains without what it asked for.
        return Finding(
            "error", "removed.enabled-section", path,
            f"DeepSpeed {ctx.version} refuses any config containing `{path}`, and this one is switched on: "
            f"{reason} Removing it lets the config load, but training then runs without it.",
            suggestion=f"Remove `{path}` and set up its replacement (see {ISSUE_8489}), or validate for the "
            "DeepSpeed release you run.",
            fix=delete_fix(path), page=page,
        )
    return Finding(
        "error", "removed.key", path,
        f"DeepSpeed {ctx.version} refuses any config containing `{path}` — even a disabled one: {reason}",
        suggestion=f"Remove `{path}` (see {ISSUE_8489}), or validate for the DeepSpeed release you run.",
        fix=delete_fix(path), page=page,
    )


def compression_shared_parameters(ctx: Context) -> Iterator[Finding]:
    """compression_training.shared_parameters: releases that read compression_training take it, by mistake, for
    weight quantization's shared parameters when deciding whether to read the MoQ eigenvalue settings; switched on
    it stops some releases' parse (the profile's probe says which, and how)."""
    section = ctx.config.get("compression_training")
    shared = section.get("shared_parameters") if isinstance(section, dict) else None
    if not isinstance(shared, dict) or not _reads_compression(ctx):
        return
    path = "compression_training.shared_parameters"
    suggestion = (f"Remove `{path}`. To quantize weights, write these settings in "
                  "`compression_training.weight_quantization.shared_parameters`, with its `different_groups`.")
    failure = None
    if shared.get("enabled"):  # read with get_scalar_param and tested with `if`: any truthy value switches it on
        quantize = ctx.config.get("quantize_training")
        eigen = quantize.get("eigenvalue") if isinstance(quantize, dict) else None
        failure = versions.compression_shared_failure(
            ctx.version, eigenvalue=bool(isinstance(eigen, dict) and eigen.get("enabled")))
        # where the block alone goes through, the release reads quantize_training and its eigenvalue with .keys/.get
        if failure is None and quantize is not None and not isinstance(quantize, dict):
            failure = f"AttributeError: quantize_training is {brief(quantize)}, not an object"
        elif failure is None and isinstance(quantize, dict) and "eigenvalue" in quantize \
                and not isinstance(eigen, dict):
            failure = f"AttributeError: quantize_training.eigenvalue is {brief(eigen)}, not an object"
    if failure is not None:
        yield Finding(
            "error", "compression.shared-parameters-fails", path,
            f"`{path}` is switched on; DeepSpeed {ctx.version} reads this block (by mistake, as weight "
            f"quantization's shared parameters) and then stops: {failure}.",
            suggestion=suggestion, fix=delete_fix(path), page="advanced",
        )
    else:
        yield Finding(
            "warning", "compression.shared-parameters", path,
            f"`{path}` configures no compression technique: DeepSpeed {ctx.version} reads it only (by mistake, as "
            "weight quantization's shared parameters) to decide whether to read the MoQ eigenvalue settings.",
            suggestion=suggestion, fix=delete_fix(path), page="advanced",
        )


def _reads_compression(ctx: Context) -> bool:
    """Whether DeepSpeed ``ctx.version`` reads compression_training (0.19.7 on refuse it on sight)."""
    return "compression_training" not in versions.removed_top_level_keys(ctx.version) \
        and bool(versions.key_known(ctx.version, "", "compression_training"))


def compression_initialize(ctx: Context) -> Iterator[Finding]:
    """What deepspeed.initialize does with compression_training in the releases that read it: its compression
    scheduler (``compression_scheduler.make_init``) searches the model's module names with each entry of every
    group's ``modules`` (``re.search(key_word, name)``; the parser's default is the string "*", iterated character by
    character), and ``engine.quantize_training`` reads weight quantization's ``quantize_weight_in_forward``, which
    the parser leaves out when that technique has no ``shared_parameters``, and asserts fp16 when the technique is
    on and quantizes in the optimizer step."""
    section = ctx.config.get("compression_training")
    if not isinstance(section, dict) or not _reads_compression(ctx):
        return
    for technique, content in section.items():
        groups = content.get("different_groups") if isinstance(content, dict) else None
        if technique == "layer_reduction" or not isinstance(groups, dict):
            continue
        for name, group in groups.items():
            if not isinstance(group, dict):
                continue
            problem = _module_scope_problem(group.get("modules", "*"))
            if problem:
                path = f"compression_training.{technique}.different_groups.{join_path('', name)}"
                yield Finding(
                    "error", "compression.group-modules", f"{path}.modules" if "modules" in group else path,
                    f"Group `{name}` of `{technique}`: its `modules` {problem}; deepspeed.initialize searches the "
                    f"model's module names with each entry (re.search) when it builds the compression scheduler, "
                    "even for a technique that is off, and fails.",
                    suggestion="Write `modules` as a list of regular expressions of module names, e.g. "
                    '["attention.self", "fc"]; `*` alone is no regular expression (use ".*").',
                    page="advanced",
                )
    yield from _sparse_pruning_step(ctx, section.get("sparse_pruning"))
    quantization = section.get("weight_quantization")
    if not isinstance(quantization, dict):
        return
    path = "compression_training.weight_quantization"
    shared = quantization.get("shared_parameters")
    if "shared_parameters" not in quantization:
        yield Finding(
            "error", "compression.weight-quantization", path,
            f"`{path}` has no `shared_parameters`: DeepSpeed {ctx.version}'s parser then leaves out "
            "`quantize_weight_in_forward`, which deepspeed.initialize reads (KeyError).",
            suggestion='Add `"shared_parameters": {}` (weight quantization stays off), or remove the technique.',
            fix=set_fix(f"{path}.shared_parameters", {}, "Add an empty `shared_parameters`"),
            page="advanced",
        )
    elif isinstance(shared, dict) and shared.get("enabled") and not shared.get("quantize_weight_in_forward") \
            and not ctx.meaning.fp16:
        yield Finding(
            "error", "compression.weight-quantization", f"{path}.shared_parameters.enabled",
            f"Weight quantization is on (`enabled` {brief(shared.get('enabled'))}, read as a truth value) and "
            f"quantizes in the optimizer step (`quantize_weight_in_forward` off), which DeepSpeed {ctx.version} "
            "supports only with fp16: deepspeed.initialize fails (\"MoQ ... weight quantization is only supported "
            "for FP16\").",
            suggestion="Turn fp16 on, set `quantize_weight_in_forward` to true, or turn weight quantization off.",
            page="advanced",
        )


def _sparse_pruning_step(ctx: Context, technique: Any) -> Iterator[Finding]:
    """Sparse pruning switched on (``enabled`` read as a truth value) with l1 or topk: the compression scheduler's
    step tests ``schedule_offset <= step <= schedule_offset_end``, and the parser writes ``schedule_offset_end`` only
    for snip_momentum, so training fails with KeyError once it reaches ``schedule_offset``."""
    shared = technique.get("shared_parameters") if isinstance(technique, dict) else None
    if not isinstance(shared, dict) or not shared.get("enabled") or shared.get("method", "l1") not in ("l1", "topk"):
        return
    offset = shared.get("schedule_offset", 1000)
    yield Finding(
        "error", "compression.sparse-pruning-step", "compression_training.sparse_pruning.shared_parameters.method",
        f"Sparse pruning is on with method {brief(shared.get('method', 'l1'))}: DeepSpeed {ctx.version}'s compression "
        "scheduler compares each step with `schedule_offset_end`, which its parser writes only for snip_momentum, "
        f"so training fails (KeyError 'schedule_offset_end') when it reaches step {brief(offset)} "
        "(`schedule_offset`).",
        suggestion='Use "method": "snip_momentum" (with its dense_ratio and schedule_offset_end), or turn sparse '
        "pruning off.",
        page="advanced",
    )


def _module_scope_problem(modules: Any) -> str | None:
    """Why DeepSpeed's ``for key_word in modules: re.search(key_word, name)`` fails on ``modules``, or None."""
    if not isinstance(modules, str | list | dict):
        return f"is {brief(modules)}, which is not iterable (TypeError)"
    for key_word in modules:
        if not isinstance(key_word, str):
            return f"holds {brief(key_word)}, which is no pattern (TypeError)"
        error = _regex_error(key_word)
        if error is not None:
            shown = f"is the string {brief(modules)}, read one character at a time, and {brief(key_word)}" \
                if isinstance(modules, str) else f"holds {brief(key_word)}, which"
            return f"{shown} is no regular expression ({error})"
    return None


def _regex_error(pattern: str) -> re.error | None:
    """Why ``re.compile`` refuses ``pattern``, or None when it compiles."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return exc
    return None


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
            fix=set_fix("compile.passes", [p for p in passes if p != "autotp"]), page="advanced",
        )


# --------------------------------------------------------------------------------------------
# Checkpoint, data types, data efficiency, autotuning, misc parse-time checks


def checkpoint(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("checkpoint")
    if not isinstance(section, dict):
        return
    if "tag_validation" in section:
        yield from _choice(section["tag_validation"], CheckpointConfig, "tag_validation", "checkpoint",
                           "checkpoint.tag-validation")
    parallel = section.get("parallel_write")
    if isinstance(parallel, dict) and "pipeline_stage" in parallel and parallel["pipeline_stage"] not in (True, False):
        yield Finding(
            "error", "checkpoint.pipeline-stage", "checkpoint.parallel_write.pipeline_stage",
            f"checkpoint.parallel_write.pipeline_stage is {brief(parallel['pipeline_stage'])}; it must be true or "
            "false.",
            fix=_bool_fix("checkpoint.parallel_write.pipeline_stage", parallel["pipeline_stage"]), page="advanced",
        )
    writer = section.get("writer")
    if isinstance(writer, dict) and field_exists(section_fields(CheckpointConfig)["writer"], "checkpoint", ctx.version):
        for key in ("type", "data_parallel"):
            if writer.get(key) is not None:
                yield from _choice(writer[key], CheckpointWriterConfig, key, "checkpoint.writer", "checkpoint.writer")


def _choice(value: Any, section: type[BaseModel], key: str, prefix: str, code: str) -> Iterator[Finding]:
    """A value DeepSpeed upper-cases and looks up among the field's choices (the schema's list): the error, with
    the choice the user most likely meant, else the field's default (removing the key when that is unset)."""
    info = section.model_fields[key]
    choices = field_meta(info).choices or ()
    if isinstance(value, str) and value.upper() in (c.upper() for c in choices):
        return
    path = f"{prefix}.{key}"
    guess = closest_choice(value, choices) if isinstance(value, str) else None
    if guess is not None:
        fix = set_fix(path, guess)
        suggestion = f"Did you mean {brief(guess)}? Case does not matter."
    elif info.default is not None:
        fix = set_fix(path, info.default)
        suggestion = f"Use one of {', '.join(choices)} (case does not matter); {brief(info.default)} is the default."
    else:
        fix = delete_fix(path)
        suggestion = (f"Use one of {', '.join(choices)} (case does not matter), or remove it to keep DeepSpeed's "
                      "default.")
    yield Finding(
        "error", code, path,
        f"{path} is {brief(value)}; DeepSpeed accepts {', '.join(choices)} (in any case) and stops on anything else.",
        suggestion=suggestion, fix=fix, page="advanced",
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
            f"data_types.keep_in_fp32_modules is {brief(value)}; DeepSpeed requires \"auto\" or a list of name "
            "patterns.",
            fix=set_fix("data_types.keep_in_fp32_modules", "auto"), page="advanced",
        )
    elif isinstance(value, list) and ctx.meaning.precision in ("fp16", "bf16"):
        yield from _keep_in_fp32_pattern(value)


def _keep_in_fp32_pattern(patterns: list[str]) -> Iterator[Finding]:
    """keep_in_fp32_modules patterns that are no regular expression together: under fp16/bf16 deepspeed.initialize
    compiles them the way keep_in_fp32.keep_in_fp32_pattern does (each ``*`` as ``.*``, the distinct ones sorted
    and joined with ``|``) and fails on re.error."""
    joined = "|".join(sorted({name.replace("*", ".*") for name in patterns}))
    if not joined:
        return
    error = _regex_error(joined)
    if error is not None:
        bad = [name for name in patterns if _regex_error(name.replace("*", ".*")) is not None]
        yield Finding(
            "error", "data-types.keep-in-fp32-pattern", "data_types.keep_in_fp32_modules",
            f"data_types.keep_in_fp32_modules {brief(patterns)} is no regular expression once DeepSpeed turns each "
            f"`*` into `.*` and joins the patterns with `|` ({error}); under fp16/bf16 deepspeed.initialize compiles "
            "it and fails (re.error).",
            suggestion=(f"Correct {', '.join(map(repr, bad))}" if bad else "Correct the patterns")
            + ": they are regular expressions matched anywhere in a buffer's name (escape a literal `(`, `+` or "
            "`?` with a backslash), and `*` stands for any characters.",
            page="advanced",
        )



def data_efficiency(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("data_efficiency")
    if not isinstance(section, dict):
        return
    yield from _random_ltd_keys(ctx, section)
    yield from _random_ltd_first_forward(ctx, section)
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
    read = field_exists(section_fields(DataSamplingConfig)["dynamic_batching"], "data_efficiency.data_sampling",
                        ctx.version)  # releases before dynamic batching ignore the section
    if read and isinstance(dynamic, dict) and dynamic.get("enabled") and "max_tokens" not in dynamic:
        yield Finding(
            "error", "data-efficiency.max-tokens", "data_efficiency.data_sampling.dynamic_batching.max_tokens",
            "Dynamic batching is enabled but max_tokens is not set; DeepSpeed stops.", page="advanced",
        )


#: Keys RandomLTDScheduler reads with ``config[key]`` when deepspeed.initialize builds it (random_ltd on):
#: ``__init__`` reads the first three, ``reset_to_init`` the schedule's four when the schedule is not null.
_RANDOM_LTD_KEYS = ("total_layer_num", "random_ltd_layer_num", "random_ltd_schedule")
_RANDOM_LTD_SCHEDULE_KEYS = ("min_value", "max_value", "schedule_config", "schedule_type")


_RANDOM_LTD = "data_efficiency.data_routing.random_ltd"


def _random_ltd_on(section: dict[str, Any]) -> dict[str, Any] | None:
    """data_efficiency's random_ltd section when its own ``enabled`` is truthy (the engine reads it with dict.get and
    builds the scheduler on it alone, whatever the switches above it say), else None."""
    routing = section.get("data_routing")
    ltd = routing.get("random_ltd") if isinstance(routing, dict) else None
    return ltd if isinstance(ltd, dict) and ltd.get("enabled") else None


def _random_ltd_keys(ctx: Context, section: dict[str, Any]) -> Iterator[Finding]:
    """Random-LTD switched on without what its scheduler reads: the engine builds the scheduler whenever
    ``random_ltd.enabled`` is truthy (dict.get), whatever ``data_efficiency.enabled`` and ``data_routing.enabled``
    say, and stops with a KeyError."""
    ltd = _random_ltd_on(section)
    if ltd is None:
        return
    prefix = _RANDOM_LTD
    missing = [key for key in _RANDOM_LTD_KEYS if key not in ltd]
    schedule = ltd.get("random_ltd_schedule")
    if isinstance(schedule, dict):
        missing += [f"random_ltd_schedule.{key}" for key in _RANDOM_LTD_SCHEDULE_KEYS if key not in schedule]
    lr_schedule = ltd.get("layer_token_lr_schedule")
    if isinstance(lr_schedule, dict) and "enabled" not in lr_schedule:
        missing.append("layer_token_lr_schedule.enabled")  # the user's object replaces the default {enabled: false}
    if missing:
        names = ", ".join(f"`{key}`" for key in missing)
        yield Finding(
            "error", "data-efficiency.random-ltd-keys", f"{prefix}.{missing[0]}",
            f"Random-LTD is on (`{prefix}.enabled`) but {names} {'is' if len(missing) == 1 else 'are'} not set: "
            f"deepspeed.initialize builds its scheduler, which reads {'it' if len(missing) == 1 else 'them'}, and "
            f"stops (KeyError: '{missing[0].rpartition('.')[2]}'), whether or not `data_efficiency.enabled` and "
            "`data_routing.enabled` are on.",
            suggestion="Set the model's layer count, the number of token-dropping layers and the kept-token "
            "schedule (see DeepSpeed's data efficiency tutorial), or turn random-LTD off.",
            page="advanced",
        )


def _random_ltd_first_forward(ctx: Context, section: dict[str, Any]) -> Iterator[Finding]:
    """Random-LTD switched on with what its scheduler (RandomLTDScheduler, every release) stops on: a truthy
    ``layer_token_lr_schedule.enabled`` in deepspeed.initialize (NotImplementedError, unconditionally), and at the
    first forward pass (``update_seq``, which engine.forward calls) a null schedule, or, while the kept length is
    below ``max_value``, a schedule type other than fixed_linear, a schedule_config that is no object or lacks
    require_steps / seq_per_step, or one of those that is no number or 0 (it divides by them). Values the scheduler
    computes with at every forward pass (the layer counts, min_value, max_value) are the schema's ``as_written``."""
    ltd = _random_ltd_on(section)
    if ltd is None:
        return
    prefix = _RANDOM_LTD
    lr_schedule = ltd.get("layer_token_lr_schedule")
    if isinstance(lr_schedule, dict) and lr_schedule.get("enabled"):
        path = f"{prefix}.layer_token_lr_schedule.enabled"
        yield Finding(
            "error", "data-efficiency.random-ltd-layer-token-lr", path,
            f"`{path}` is {brief(lr_schedule['enabled'])}, which DeepSpeed reads as on: its random-LTD scheduler "
            "does not implement the layer-token learning-rate schedule and raises NotImplementedError whenever it is "
            "on, so deepspeed.initialize stops.",
            suggestion="Set it to false (JSON's boolean) and schedule the learning rate with the `scheduler` section.",
            fix=set_fix(path, False), page="advanced",
        )
    if "random_ltd_schedule" not in ltd:
        return  # _random_ltd_keys
    problem = _random_ltd_schedule_problem(ltd["random_ltd_schedule"])
    if problem is not None:
        key, failure = problem
        path = f"{prefix}.random_ltd_schedule" + (f".{key}" if key else "")
        yield Finding(
            "error", "data-efficiency.random-ltd-schedule", path,
            f"Random-LTD is on and its kept-token schedule stops the first forward pass (DeepSpeed's "
            f"RandomLTDScheduler.update_seq): {failure}.",
            suggestion="Write the schedule as DeepSpeed's data efficiency tutorial does: schedule_type "
            "\"fixed_linear\", numeric min_value < max_value, and a schedule_config with require_steps and "
            "seq_per_step as positive numbers.",
            page="advanced",
        )


def _random_ltd_schedule_problem(schedule: Any) -> tuple[str, str] | None:
    """(key under random_ltd_schedule, "" for itself; DeepSpeed's failure) of the first thing in ``schedule`` that
    RandomLTDScheduler fails on at the first forward pass, or None."""
    if schedule is None:
        return "", ("random_ltd_schedule is null, so the scheduler keeps no kept-token length and fails reading it "
                    "(KeyError: 'current_value')")
    if not isinstance(schedule, dict) or any(key not in schedule for key in _RANDOM_LTD_SCHEDULE_KEYS):
        return None  # _random_ltd_keys, or a type the type checks report
    low, high = schedule["min_value"], schedule["max_value"]
    if not (is_number(low) and is_number(high)) or low >= high:
        return None  # the schema's as_written reports a wrong type; min_value >= max_value never runs the schedule
    kind = schedule["schedule_type"]
    if kind != "fixed_linear":
        return "schedule_type", (f"schedule_type is {brief(kind)}; the scheduler knows only \"fixed_linear\" and "
                                 "raises RuntimeError('Unsupported random LTD schedule type')")
    params = schedule["schedule_config"]
    if not isinstance(params, dict):
        return "schedule_config", (f"schedule_config is {brief(params)}, not an object with require_steps and "
                                   "seq_per_step (TypeError)")
    for key, use in (("require_steps", "divides the step by it"), ("seq_per_step", "rounds the length to a multiple "
                                                                                  "of it")):
        if key not in params:
            return f"schedule_config.{key}", f"schedule_config has no {key} (KeyError: '{key}')"
        value = params[key]
        if value == "auto":
            continue  # the "auto" rule
        if not is_number(value):
            return f"schedule_config.{key}", (f"{key} is {brief(value)}, not a number, and the scheduler {use} "
                                              "(TypeError)")
        if value == 0:
            return f"schedule_config.{key}", f"{key} is 0, and the scheduler {use} (ZeroDivisionError)"
    return None


#: What the legacy CurriculumScheduler asserts its schedule_config holds, per schedule type ("custom" needs none).
_LEGACY_SCHEDULE_KEYS = {"fixed_discrete": ("difficulty", "max_step"),
                         "fixed_root": ("total_curriculum_step", "difficulty_step", "root_degree"),
                         "fixed_linear": ("total_curriculum_step", "difficulty_step"), "custom": ()}


def legacy_curriculum(ctx: Context) -> Iterator[Finding]:
    """The legacy top-level curriculum_learning switched on (dict.get: any truthy ``enabled``) without what
    deepspeed.initialize's CurriculumScheduler asserts, in the releases that read the key (up to 0.19.7)."""
    section = ctx.config.get("curriculum_learning")
    if not isinstance(section, dict) or not section.get("enabled") \
            or versions.key_known(ctx.version, "", "curriculum_learning") is not True:
        return
    problem = _legacy_curriculum_problem(section)
    if problem is None:
        return
    key, in_initialize, failure = problem
    path = f"curriculum_learning.{key}"
    yield Finding(
        "error", "curriculum.legacy-schedule", path,
        f"Legacy curriculum learning is on, and DeepSpeed {ctx.version} stops"
        + (" building its scheduler in deepspeed.initialize" if in_initialize else "") + f": {failure}.",
        suggestion="Set curriculum_type, min_difficulty, max_difficulty, schedule_type (fixed_linear, fixed_root, "
        "fixed_discrete or custom) and the schedule_config it needs, or move to "
        "data_efficiency.data_sampling.curriculum_learning.",
        page="advanced",
    )


def progressive_layer_drop(ctx: Context) -> Iterator[Finding]:
    """Progressive layer drop switched on (dict.get: any truthy ``enabled``) without theta or gamma, in the releases
    that read the section (up to 0.19.7): the engine reads both with ``pld_params[key]`` when deepspeed.initialize
    builds ProgressiveLayerDrop (KeyError); DeepSpeed has no defaults for them."""
    section = ctx.config.get("progressive_layer_drop")
    if not isinstance(section, dict) or not section.get("enabled") \
            or versions.key_known(ctx.version, "", "progressive_layer_drop") is not True:
        return
    missing = [key for key in ("theta", "gamma") if key not in section]
    if missing:
        yield Finding(
            "error", "progressive-layer-drop.keys", f"progressive_layer_drop.{missing[0]}",
            f"Progressive layer drop is on but {' and '.join(f'`{key}`' for key in missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set: DeepSpeed {ctx.version} has no default and "
            f"deepspeed.initialize stops reading {'it' if len(missing) == 1 else 'them'} (KeyError: "
            f"'{missing[0]}').",
            suggestion="Set theta (the final keep probability, e.g. 0.5) and gamma (how fast it decays, e.g. 0.001), "
            "or turn progressive layer drop off; the model's forward must also take the progressive_layer_drop and "
            "pld_theta keyword arguments DeepSpeed then passes.",
            page="advanced",
        )


def _legacy_curriculum_problem(section: dict[str, Any]) -> tuple[str, bool, str] | None:
    """The first check of the legacy CurriculumScheduler that ``section`` fails: (key, whether deepspeed.initialize
    fails building the scheduler, else the first forward pass; DeepSpeed's failure)."""
    for key in ("min_difficulty", "max_difficulty", "schedule_type"):
        if key not in section:
            return key, True, f"AssertionError: Curriculum learning requires the config '{key}'"
    kind = section["schedule_type"]
    required = _LEGACY_SCHEDULE_KEYS.get(kind) if isinstance(kind, str) else None
    if required is None:
        return "schedule_type", True, (f"RuntimeError: Unsupported curriculum schedule type ({brief(kind)}; it "
                                       f"knows {', '.join(_LEGACY_SCHEDULE_KEYS)})")
    if not required:
        return None
    schedule = section.get("schedule_config")
    if not isinstance(schedule, dict):
        return "schedule_config", True, ("KeyError: 'schedule_config'" if "schedule_config" not in section else
                                         f"schedule_config is {brief(schedule)}, not an object with "
                                         f"{', '.join(required)}")
    for key in required:
        if key not in schedule:
            return f"schedule_config.{key}", True, (f"AssertionError: Curriculum learning with {kind} schedule "
                                                    f"requires the schedule_config '{key}'")
    if kind == "fixed_discrete":
        difficulty, max_step = schedule["difficulty"], schedule["max_step"]
        if not (isinstance(difficulty, list) and isinstance(max_step, list) and max_step
                and len(difficulty) == len(max_step) + 1):
            return "schedule_config.max_step", True, ("AssertionError: fixed_discrete needs non-empty lists, with "
                                                      "one difficulty more than max_step")
    elif not is_number(step := schedule["difficulty_step"]):  # __init__ warns unless `difficulty_step % 8 == 0`
        return "schedule_config.difficulty_step", True, (
            f"difficulty_step is {brief(step)}, not a number, and it computes difficulty_step % 8 (TypeError: "
            + ("not all arguments converted during string formatting)" if isinstance(step, str) else
               "unsupported operand type(s) for %)"))
    problem = _legacy_first_forward(section, kind, schedule)
    if problem is not None:
        return problem[0], False, problem[1]
    if "curriculum_type" not in section:
        return "curriculum_type", False, ("KeyError: 'curriculum_type' at the first training forward pass, where the "
                                          "engine reads it to decide whether to pass curriculum_seqlen")
    return None


def _legacy_first_forward(section: dict[str, Any], kind: str, schedule: Any) -> tuple[str, str] | None:
    """What the legacy CurriculumScheduler's ``update_difficulty`` (engine.forward, before the model runs) fails on:
    it compares min_difficulty with max_difficulty, and while min is below max computes the schedule's difficulty,
    dividing by total_curriculum_step and root_degree and taking the result modulo difficulty_step (fixed_discrete:
    comparing the step with max_step's entries). (key, failure), or None."""
    low, high = section["min_difficulty"], section["max_difficulty"]
    forward = "at the first forward pass"
    try:
        below = low < high
    except TypeError:
        return "min_difficulty", (f"min_difficulty {brief(low)} and max_difficulty {brief(high)} are compared "
                                  f"{forward} (TypeError: '<' not supported between them): write both as numbers")
    if not below:
        return None  # the difficulty starts at its maximum: the schedule is never computed
    if not (is_number(low) and is_number(high)):
        key = "min_difficulty" if not is_number(low) else "max_difficulty"
        return key, (f"{key} is {brief(section[key])}, not a number, and the difficulty is computed with it {forward} "
                     "(TypeError: unsupported operand type(s))")
    if kind == "custom":
        return None
    if kind == "fixed_discrete":
        bad = next((step for step in schedule["max_step"] if not is_number(step)), None)
        return None if bad is None else ("schedule_config.max_step", (
            f"max_step holds {brief(bad)}, not a number, and the step is compared with it {forward} (TypeError: '>' "
            "not supported between them)"))
    divisors = [("total_curriculum_step", "the step is divided by it", "float division by zero"),
                ("difficulty_step", "the difficulty is taken modulo it", "modulo by zero")]
    if kind == "fixed_root":
        divisors.append(("root_degree", "1 is divided by it", "float division by zero"))
    for key, use, by_zero in divisors:
        value = schedule[key]
        if not is_number(value) or value == 0:
            return f"schedule_config.{key}", (f"{key} is {brief(value)}, and {use} {forward} " + (
                f"(ZeroDivisionError: {by_zero})" if is_number(value) else "(TypeError: unsupported operand type(s))"))
    return None


def contiguous_checkpointing(ctx: Context) -> Iterator[Finding]:
    """activation_checkpointing.contiguous_memory_optimization needs partition_activations and
    number_checkpoints: ``deepspeed.checkpointing.configure(mpu, deepspeed_config=...)`` (the Megatron path) asserts
    both. A warning: it only matters where activation checkpointing is set up through deepspeed.checkpointing, whose
    keyword arguments may supply what the config lacks."""
    section = ctx.config.get("activation_checkpointing")
    if not isinstance(section, dict) or not _on(ctx, section, "contiguous_memory_optimization"):
        return
    prefix = "activation_checkpointing"
    if not _on(ctx, section, "partition_activations"):
        missing, message = "partition_activations", (
            "Contiguous Checkpointing is only available with partitioned activations")
    elif section.get("number_checkpoints") is None:
        missing, message = "number_checkpoints", (
            "Must specify the number of layers with contiguous memory checkpointing")
    else:
        yield from _contiguous_buffers(section["number_checkpoints"], prefix)
        return
    yield Finding(
        "warning", "activation-checkpointing.contiguous", f"{prefix}.contiguous_memory_optimization",
        f"`{prefix}.contiguous_memory_optimization` is on without `{prefix}.{missing}`: where activation "
        "checkpointing is set up through deepspeed.checkpointing.configure (Megatron-style models), DeepSpeed "
        f"stops there (AssertionError: \"{message}\") unless its arguments supply it.",
        suggestion=f"Set `{prefix}.{missing}`" + (" to true" if missing == "partition_activations" else
                                                  " (the number of checkpointed layers)")
        + ", or turn contiguous_memory_optimization off.",
        page="advanced",
    )


def _contiguous_buffers(count: Any, prefix: str) -> Iterator[Finding]:
    """number_checkpoints with contiguous memory on: checkpointing.py sizes its buffer lists with ``range(count)``
    and indexes them by layer, so text or a float fails (TypeError) and 0 or less leaves no buffer (IndexError) at
    the first checkpointed forward pass ("auto": the "auto" rule)."""
    if count == "auto" or (isinstance(count, int) and count > 0):  # a bool is an int: true is 1 buffer
        return
    failure = "IndexError: list index out of range" if isinstance(count, int) else \
        f"TypeError: '{type(count).__name__}' object cannot be interpreted as an integer"
    yield Finding(
        "warning", "activation-checkpointing.contiguous", f"{prefix}.number_checkpoints",
        f"`{prefix}.number_checkpoints` is {brief(count)} with contiguous_memory_optimization on: where activation "
        "checkpointing is set up through deepspeed.checkpointing.configure (Megatron-style models), DeepSpeed keeps "
        f"one contiguous buffer per checkpointed layer and fails at the first checkpointed forward pass ({failure}).",
        suggestion="Set it to the number of checkpointed layers (a whole number), or turn "
        "contiguous_memory_optimization off.",
        page="advanced",
    )


def _on(ctx: Context, section: dict[str, Any], key: str) -> bool:
    """Whether the switch ``key`` of activation_checkpointing is on as this release reads it."""
    return key in section and switch_on(section[key], "activation_checkpointing", ctx.version)


def autotuning(ctx: Context) -> Iterator[Finding]:
    section = ctx.config.get("autotuning")
    if not isinstance(section, dict):
        return
    for key in ("results_dir", "exps_dir"):
        if key in section and not section[key]:
            yield Finding(
                "error", "autotuning.empty-dir", f"autotuning.{key}",
                f"autotuning.{key} is empty; DeepSpeed stops (\"{key} cannot be empty\").",
                fix=set_fix(f"autotuning.{key}", f"autotuning_{key.split('_')[0]}"), page="advanced",
            )


def misc(ctx: Context) -> Iterator[Finding]:
    """Other parse-time failures and warnings of DeepSpeed."""
    vocab = ctx.config.get("vocabulary_size")
    try:
        misaligned = bool(vocab and vocab % 8 != 0)  # exactly DeepSpeed's check, run while parsing
    except TypeError:
        yield Finding(
            "error", "misc.vocabulary-size-type", "vocabulary_size",
            f"vocabulary_size is {brief(vocab)}; DeepSpeed computes `vocabulary_size % 8` while reading the config "
            "and fails on anything but a number.",
            suggestion="Write the vocabulary size as a whole number, or remove it.", fix=delete_fix("vocabulary_size"),
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
            f"steps_per_print is {brief(spp)}; DeepSpeed computes `step % steps_per_print` during training and "
            "fails on anything but a positive whole number (0 divides by zero at the first step).",
            suggestion="Use e.g. 10, or remove it to print nothing periodically.",
            fix=set_fix("steps_per_print", 10), page="monitoring",
        )
    if isinstance(spp, int | float) and not isinstance(spp, bool) and spp != 0 and (
        spp < 0 or (isinstance(spp, float) and not spp.is_integer())
    ):
        yield Finding(
            "warning", "misc.steps-per-print-odd", "steps_per_print",
            f"steps_per_print is {brief(spp)}; it is meant to be a positive whole number of steps.",
            fix=set_fix("steps_per_print", 10), page="monitoring",
        )
    yield from _step_numbers(ctx)
    yield from _datastates_on(ctx)
    yield from _comms_logger_on(ctx)
    ep = ctx.config.get("expert_parallel")
    if isinstance(ep, dict) and ep.get("load_balance_coeff") is not None:
        yield Finding(
            "error", "misc.load-balance-coeff", "expert_parallel.load_balance_coeff",
            "expert_parallel.load_balance_coeff is not supported by DeepSpeed's AutoEP build; it stops.",
            fix=delete_fix("expert_parallel.load_balance_coeff"), page="advanced",
        )
    aio = ctx.config.get("aio")
    if isinstance(aio, dict) and aio.get("use_gds"):  # a Python truth value: aio_config asserts CUDA on any
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
            fix=set_fix("gradient_clipping", 1.0), page="precision",
        )
    for key in ("sequence_parallel_size",):
        sp = ctx.config.get(key)
        if isinstance(sp, int) and not isinstance(sp, bool) and sp > 0 and ctx.world_size % sp \
                and reads_sequence_parallel(ctx.version):
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
            f"`{culprit}` is {brief(value)}; DeepSpeed combines wall_clock_breakdown and flops_profiler.enabled "
            "with `|` while reading the config and fails on anything but true/false.",
            fix=_bool_fix(culprit, value), page="monitoring",
        )


def _bool_fix(path: str, value: Any) -> Fix:
    """Set ``path`` to the boolean ``value`` spells ("true" → true), else false."""
    return set_fix(path, lax_bool(value) is True)


def _datastates_on(ctx: Context) -> Iterator[Finding]:
    """A ``datastates_ckpt`` written to mean off that turns DataStates checkpointing on: DeepSpeed's
    ``DeepSpeedDataStatesConfig`` sets ``enabled = value is not False``, so only the JSON ``false`` leaves it off;
    ``null``, ``{}``, ``{"enabled": false}``, ``0`` or ``"false"`` all switch it on (the releases that read the key,
    0.18.1 on)."""
    if "datastates_ckpt" not in ctx.config or versions.key_known(ctx.version, "", "datastates_ckpt") is not True:
        return
    value = ctx.config["datastates_ckpt"]
    if value is False:
        return
    if isinstance(value, dict):
        if value and ("enabled" not in value or lax_bool(value["enabled"]) is True):
            return  # DataStates settings, or switched on as written: meant on
        how = "an empty object" if not value else f"an object whose `enabled` is {brief(value['enabled'])}"
    elif value is None or lax_bool(value) is False:
        how = "null" if value is None else brief(value)
    elif value is True:
        return
    else:  # 2, [], "x": not a switch nor settings; DataStates is on and gets the value as its settings
        yield Finding(
            "warning", "misc.datastates-on", "datastates_ckpt",
            f"`datastates_ckpt` is {brief(value)}, neither false nor an object of DataStates settings: DeepSpeed "
            f"{ctx.version} turns DataStates checkpointing ON for any value but `false` and hands {brief(value)} to "
            "DataStates as its settings.",
            suggestion="Write `\"datastates_ckpt\": false` to keep DataStates off, or an object with its settings "
            "to use it.",
            page="advanced",
        )
        return
    yield Finding(
        "warning", "misc.datastates-on", "datastates_ckpt",
        f"`datastates_ckpt` is {how}, which reads as off but turns DataStates checkpointing ON: DeepSpeed "
        f"{ctx.version} enables it for any value but `false` (`value is not False`), and its keys are not read to "
        "decide. Checkpoints are then saved through DataStates (without the datastates package, DeepSpeed logs an "
        "error and falls back to torch.save).",
        suggestion="To keep DataStates off, remove `datastates_ckpt` or write `\"datastates_ckpt\": false`; to use it, "
        "write its settings without a false `enabled`.",
        fix=set_fix("datastates_ckpt", False), page="advanced",
    )


def _comms_logger_on(ctx: Context) -> Iterator[Finding]:
    """A ``comms_logger`` written to mean off that logs every collective: DeepSpeed's ``DeepSpeedCommsConfig`` sets
    ``comms_logger_enabled = 'comms_logger' in ds_config`` and ``CommsLogger.configure`` takes its ``enabled`` from
    that, never from the section's own ``enabled`` (0.16.9-0.19.8); each logged op then synchronises the device."""
    value = ctx.config.get("comms_logger")
    # "auto": plain DeepSpeed drops it and reads the default, false (auto.default), and the logger is on all the same
    if not isinstance(value, dict):
        return  # absent, or something the type check refuses
    enabled = value.get("enabled")
    meant_off = not value or enabled == "auto" or ("enabled" in value and lax_bool(enabled) is False)
    if not meant_off or (ctx.is_hf and enabled == "auto"):
        return  # absent, settings meant on, something the type check refuses, or an "auto" Accelerate refuses
    how = "an empty object" if not value else f"an object whose `enabled` is {brief(value['enabled'])}"
    yield Finding(
        "warning", "misc.comms-logger-on", "comms_logger",
        f"`comms_logger` is {how}, which reads as off but turns the communication logger ON: DeepSpeed "
        f"{ctx.version} switches it on whenever the `comms_logger` key is present (`'comms_logger' in ds_config`) and "
        "never reads its `enabled`. Every collective is then timed and synchronised, which slows training.",
        suggestion="To keep the logger off, remove `comms_logger`; to use it, set `enabled` to true.",
        fix=delete_fix("comms_logger"), page="monitoring",
    )


#: Top-level numbers DeepSpeed reads as written (``get_scalar_param``) and computes with at the first optimizer
#: step: ``if self.gradient_clipping() > 0.0`` (``_take_model_step``) and ``1.0 / gradient_predivide_factor``
#: (the gradient all-reduce, engine and ZeRO-1/2 optimizer).
_STEP_NUMBERS = {"gradient_clipping": ("compares it with 0.0", 1.0),
                 "gradient_predivide_factor": ("divides the gradients by it", 1.0)}


def _divides_by_predivide_factor(ctx: Context) -> str | None:
    """Where DeepSpeed computes ``1.0 / gradient_predivide_factor`` (a Python division: 0 raises
    ZeroDivisionError) at the first gradient all-reduce, or None where it never does. The engine's all-reduce does
    it without ZeRO and under BF16_Optimizer (bf16 ZeRO-1 accumulating in fp32); ZeRO-1/2 only with
    ``reduce_scatter`` off. With it on, ZeRO-2 and ZeRO-3 refuse any factor but 1 at initialize
    (``engine.predivide-reduce-scatter``); ZeRO-3 without it divides the gradient tensors, which gives inf, not an
    exception."""
    if predivide_factor_path(ctx) != "divided" or ctx.stage == 3:
        return None
    if ctx.stage == 0 or ctx.bf16_optimizer():
        return "at the first gradient all-reduce" + (" without ZeRO" if ctx.stage == 0 else " (BF16_Optimizer)")
    return f"in ZeRO stage {ctx.stage}'s gradient all-reduce (zero_optimization.reduce_scatter is false)"


def _step_numbers(ctx: Context) -> Iterator[Finding]:
    """A string, null, list or object (or a predivide factor of 0 where DeepSpeed divides by it) where the step
    computes with a number."""
    for key, (use, default) in _STEP_NUMBERS.items():
        if key not in ctx.config or ctx.config[key] == "auto":  # "auto": the auto rule
            continue
        if key == "gradient_predivide_factor" and ctx.config.get("prescale_gradients"):
            continue  # read raw, Python truth: prescaling divides by the world size instead
        value = ctx.config[key]
        if isinstance(value, int | float):
            where = _divides_by_predivide_factor(ctx) if key == "gradient_predivide_factor" and value == 0 else None
            if where is not None:
                yield Finding(
                    "error", "misc.step-number", key,
                    f"{key} is {brief(value)}; DeepSpeed {use} {where} and stops (ZeroDivisionError).",
                    suggestion="1.0 divides nothing before the all-reduce (the default).",
                    fix=set_fix(key, default), page="precision",
                )
            continue
        if key == "gradient_predivide_factor" and predivide_factor_path(ctx) != "divided":
            continue  # ZeRO-1's reduce-scatter never reads it; ZeRO-2/3 refuse it first (predivide-reduce-scatter)
        number = lax_float(value) if isinstance(value, str) else None
        yield Finding(
            "error", "misc.step-number", key,
            f"`{key}` is {brief(value)}, not a number; DeepSpeed keeps it as written and {use} at the first "
            "optimizer step, which stops training (TypeError).",
            suggestion="Write the number without quotes." if number is not None else f"Default: {default}.",
            fix=set_fix(key, number if number is not None and math.isfinite(number) else default),
            page="precision",
        )
