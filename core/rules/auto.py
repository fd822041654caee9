"""The "auto" rule: fine where the HF Trainer / Accelerate fill it in, otherwise what DeepSpeed makes of it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from core import versions
from core.autofill import ACCELERATE_OVERWRITES, ACCELERATE_PLUGIN_PATHS, scheduler_peak, walk_auto
from core.findings import Finding, brief, join_path, shown, split_path
from core.rules.context import Context
from core.rules.fixes import delete_fix, set_fix
from core.rules.initialize import autotp_size_string, predivide_factor_path
from core.rules.structure import page_of
from core.schema.root import DeepSpeedConfig
from core.schema.walk import default_in, field_exists, is_strict

# --------------------------------------------------------------------------------------------
# "auto"


def hf_fills(path: str) -> bool:
    """Whether the HF Trainer / Accelerate replace "auto" at this path: the Trainer's keys (the schema's ``hf_auto``,
    under the spelling they write: ``stage3_prefetch_bucket_size``, not its other name ``prefetch_bucket_size``),
    the plugin's (``ACCELERATE_PLUGIN_PATHS``) and the ones it overwrites whatever they hold. Accelerate refuses
    every other "auto" (``auto.not-filled``); the HF target's JSON Schema asks this too."""
    from core.schema.optimizer import HF_FILLED_PARAMS
    from core.schema.walk import resolve

    if path in ACCELERATE_PLUGIN_PATHS or path in ACCELERATE_OVERWRITES:
        return True
    section, _, rest = path.partition(".params.")
    if rest and section in HF_FILLED_PARAMS:
        return rest in HF_FILLED_PARAMS[section]
    if path.removesuffix(".params") in HF_FILLED_PARAMS:
        return False  # the Trainer fills values inside params (fill_match calls params.get), never params itself
    field = resolve(DeepSpeedConfig, path)
    if not (field and field.meta.hf_auto):
        return False
    # transformers and accelerate fill one literal path (fill_only / fill_match find it by that name): not under a
    # section's old spelling (`bfloat16.enabled` is not `bf16.enabled`), not by a key's other name
    parts = path.split(".")
    sections = (resolve(DeepSpeedConfig, ".".join(parts[:i])) for i in range(1, len(parts)))
    if any(section is not None and section.meta.deprecated for section in sections):
        return False
    return field.alias is None or parts[-1] == field.alias


def _filled_list(path: str) -> str | None:
    """The path of the list holding the item at ``path`` when the HF Trainer fills that whole list ("betas"),
    else None."""
    keys = split_path(path)
    if not keys or not isinstance(keys[-1], int):
        return None
    whole = path[:path.rindex("[")]
    return whole if hf_fills(whole) else None


def _hf_list_item(path: str, items: list[Any]) -> Finding:
    """"auto" as an item of a list the HF Trainer fills only as a whole value (``optimizer.params.betas``)."""
    return Finding(
        "error", "auto.not-filled", path,
        f"`{path}` is {shown(items)}: the HF Trainer replaces only a whole \"auto\" value, never an item of a list, "
        "so it compares this list with its TrainingArguments, finds them different and refuses the config (and "
        "DeepSpeed would see the string \"auto\").",
        suggestion=f"Set `{path}` to \"auto\" (the Trainer fills the whole list), or write numbers.",
        fix=set_fix(path, "auto"), page=page_of(path),
    )


def _unread_params(config: dict[str, Any], path: str) -> bool:
    """Whether ``path`` is under ``optimizer.params`` / ``scheduler.params`` of a section without a type:
    DeepSpeed reads the params only with the type (``get_optimizer_params`` / ``get_scheduler_params``)."""
    section, _, rest = path.partition(".")
    if section not in ("optimizer", "scheduler") or not rest.startswith("params."):
        return False
    value = config.get(section)
    return isinstance(value, dict) and value.get("type") is None


def _scheduler_sets_lr(ctx: Context) -> bool:
    """Whether an "auto" learning rate never reaches a computation: DeepSpeed's fused optimizer classes take
    any lr without checking it, and a DeepSpeed scheduler whose learning-rate parameters (``*_lr``, from this
    release's profile: given, or defaulting to a number) all have values writes the lr into the optimizer when
    it is built (OneCycle, LRRangeTest, WarmupDecayLR; WarmupLR once ``warmup_max_lr`` is set). Schedulers
    scaling the optimizer's own lr (WarmupCosineLR's ratios, torch's) read the string and fail."""
    cls = ctx.meaning.optimizer_class or ""
    if ctx.meaning.optimizer_backend != "gpu" or not cls.startswith("deepspeed."):
        return False
    section = ctx.config.get("scheduler")
    name = section.get("type") if isinstance(section, dict) else None
    given = section.get("params") if isinstance(section, dict) else None
    signature = versions.profile(ctx.version)["schedulers"].get(name) if isinstance(name, str) else None
    if not signature or not isinstance(given, dict):
        return False
    own = [key for key in signature if key.endswith("_lr")]
    return bool(own) and all(given.get(key, signature[key].get("default")) not in (None, "auto") for key in own)


def auto_values(ctx: Context) -> Iterator[Finding]:
    """"auto": fine where the HF Trainer fills it in (target hf); otherwise what DeepSpeed makes of it."""
    from core.schema.walk import resolve

    lists_seen: set[str] = set()
    for path, _parent in walk_auto(ctx.config):
        field = resolve(DeepSpeedConfig, path)
        if field is not None and not field_exists(field, path.rpartition(".")[0], ctx.version):
            continue  # the key does not exist in this version: reported as such
        if field is not None and field.meta.extra.get("auto_invalid") and not ctx.is_hf:
            continue  # a wrong value there like any other spelling: the type check reports it
        section_dropped = field is not None and field.meta.extra.get("auto_dropped", False)
        if field is not None and field.model is not None and not is_strict(field.owner) and not section_dropped:
            continue  # "auto" where a section belongs: DeepSpeed fails reading it (a type error says so)
        if field is not None and field.default == "auto" and not ctx.is_hf:
            continue  # "auto" is DeepSpeed's own default value: nothing to explain (Accelerate still refuses it)
        behaviour = field.meta.auto if field else ("kept" if path.split(".")[0] in ("optimizer", "scheduler")
                                                    else "default")
        # A pydantic section drops "auto" whoever passes the config on, so there it means the default; a section
        # this release reads with dict.get (or a top-level key) keeps the string, a true value where a flag is read
        dropped = field is not None and behaviour == "default" and (section_dropped or (
            is_strict(field.owner) and versions.section(ctx.version, path.rpartition(".")[0]) is not None))
        if field is not None and behaviour == "default" and not dropped:
            behaviour = "kept"
        if ctx.is_hf and hf_fills(path):
            continue
        if ctx.is_hf and isinstance(_parent, list):
            whole = _filled_list(path)
            if whole is not None:
                if whole not in lists_seen:
                    lists_seen.add(whole)
                    yield _hf_list_item(whole, _parent)
                continue
        if path == "tensor_parallel.autotp_size" and autotp_size_string(ctx):
            continue  # compared with a number before DeepSpeed's parser drops "auto": its own rule says so
        if path == "gradient_predivide_factor" and predivide_factor_path(ctx) == "unread":
            continue  # ZeRO-1's reduce-scatter never reads it: the run trains
        if _unread_params(ctx.config, path):
            continue  # no type: DeepSpeed builds nothing from these params (optimizer/scheduler.no-type say so)
        # what this release uses when the key is left out
        release_default = default_in(field, path, ctx.version) if field is not None else None
        if ctx.is_hf:
            # accelerate (under the Trainer too) fills or refuses every "auto" left in the dict before DeepSpeed
            # reads it (DeepSpeedPlugin.deepspeed_config_process -> fill_match), whatever DeepSpeed would do with it
            yield Finding(
                "error", "auto.not-filled", path,
                f"`{path}` is \"auto\", but neither the HF Trainer nor Accelerate fills this key in, and Accelerate "
                f"refuses every \"auto\" it leaves (\"`{path}` not found in kwargs. Please specify `{path}` without "
                "`auto`\") before DeepSpeed sees the config.",
                suggestion="Write an explicit value." + (
                    "" if field is None else f" Default: {brief(release_default)}."
                    if field.default not in (None, "auto") else " Or remove the key: DeepSpeed then uses its default"
                    + (' (its own "auto", worked out without Accelerate).' if field.default == "auto" else ".")),
                fix=None if field is None else set_fix(path, release_default)
                if field.default not in (None, "auto") else delete_fix(path),
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
                suggestion="Write the value" + (f" (default {brief(release_default)})"
                                                 if field and field.default is not None
                                                 else "") + ", or choose the HF target if the HF Trainer fills it in.",
                fix=set_fix(path, release_default) if field and field.default is not None else None,
                page=field.meta.page if field else None,
            )
        elif behaviour == "kept" and path == "optimizer.params.lr" and _scheduler_sets_lr(ctx):
            yield Finding(
                "warning", "auto.kept", path,
                f"`{path}` is \"auto\": plain DeepSpeed passes the string to {ctx.meaning.optimizer_class}, which "
                f"keeps it, and then the {ctx.config['scheduler']['type']} scheduler sets the learning rate from "
                "its own parameters before the first step, so training runs; without that scheduler it fails.",
                suggestion="Write the value, or choose the HF target if the HF Trainer fills it in.",
                page="optimizer",
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
                f"`{path}` is \"auto\": plain DeepSpeed {ctx.version} keeps the string \"auto\" as the value: a "
                "switch reads it as on (any non-empty string is true), and a number breaks when it is used in "
                "training.",
                suggestion="Write the value, or choose the HF target if the HF Trainer fills it in.",
                page=field.meta.page if field else "optimizer",
            )
        else:
            key = path.rpartition(".")[2]
            beside = next((k for k in (field.keys if field else ()) if k != key and isinstance(_parent, dict)
                           and k in _parent and _parent[k] != "auto"), None)
            if beside is not None:  # the field's other spelling is written: DeepSpeed drops "auto" and uses it
                prefix = path.rpartition(".")[0]
                yield Finding(
                    "info", "auto.default", path,
                    f"`{path}` is \"auto\": DeepSpeed drops it and uses `{join_path(prefix, beside)}` "
                    f"({shown(_parent[beside])}), the same setting under its other name.",
                    suggestion=f"Remove `{path}`; `{join_path(prefix, beside)}` holds the value.",
                    fix=delete_fix(path), page=field.meta.page if field else None,
                )
                continue
            default = release_default if field and field.model is None else None
            yield Finding(
                "info", "auto.default", path,
                f"`{path}` is \"auto\": "
                + ("the HF Trainer does not fill this key in, and " if ctx.is_hf else "plain ")
                + "DeepSpeed drops it and uses the default"
                + (f" ({shown(default)})." if default is not None else "."),
                suggestion="Write the value explicitly to make the config self-explanatory.",
                fix=set_fix(path, default) if default is not None else None,
                page=field.meta.page if field else None,
            )


# --------------------------------------------------------------------------------------------
# Values the HF Trainer compares and can never match

#: The precision flags transformers' ``HfTrainerDeepSpeedConfig.trainer_config_process`` compares with a
#: TrainingArguments bool (``fill_match("fp16.enabled", args.fp16 or args.fp16_full_eval)``). DeepSpeed reads
#: "true" or "on" as on, but Python's ``!=`` tells them from any bool, so the Trainer refuses the config ("Please
#: correct the following DeepSpeed config values that mismatch TrainingArguments values"). The numeric keys it
#: compares (batch, clipping, lr, betas, ...) need numbers for DeepSpeed itself, whose own rules report them.
_TRAINER_FLAGS = ("fp16.enabled", "bf16.enabled")


def hf_never_matches(ctx: Context) -> Iterator[Finding]:
    """Target hf: written values the Trainer compares with TrainingArguments and can never find equal (a string
    "true" for fp16.enabled, two different learning rates), so it refuses the config whatever the arguments."""
    if not ctx.is_hf:
        return
    for path in _TRAINER_FLAGS:
        value = ctx.get(path)
        if value is None or value == "auto" or (isinstance(value, int | float) and value in (0, 1)):
            continue  # unset (or its section is no object), filled by the Trainer, or equal to a bool
        yield Finding(
            "error", "hf.never-matches", path,
            f"`{path}` is {brief(value)}; the HF Trainer compares it with a TrainingArguments flag (true or false), "
            "which it can never equal, so the Trainer refuses the config whatever its arguments (\"mismatch "
            "TrainingArguments values\").",
            suggestion='Set it to "auto" (the Trainer fills it from --fp16 / --bf16) or write true or false.',
            fix=set_fix(path, "auto"), page=page_of(path),
        )
    lr, peak = ctx.get("optimizer.params.lr"), ctx.get("scheduler.params.warmup_max_lr")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lr, peak))
    if numbers and lr != peak:
        trained = scheduler_peak(ctx.config, ctx.version)  # the scheduler overwrites the optimizer's lr
        yield Finding(
            "error", "hf.never-matches", "scheduler.params.warmup_max_lr",
            f"optimizer.params.lr is {brief(lr)} and scheduler.params.warmup_max_lr is {brief(peak)}; the HF Trainer "
            "compares both with one TrainingArguments value (learning_rate), so one of them always mismatches and "
            "the Trainer refuses the config."
            + (f" {ctx.config['scheduler']['type']} overwrites the optimizer's lr from the first step, so "
               f"DeepSpeed trains up to {brief(peak)}." if trained is not None else ""),
            suggestion=(f"Set optimizer.params.lr to {brief(peak)} (what trains) and pass learning_rate={brief(peak)}, "
                        'or set both to "auto" and pass it.' if trained is not None else
                        'Set both to "auto" (the Trainer fills them with --learning_rate), or write the same value.'),
            fix=(set_fix("optimizer.params.lr", peak) if trained is not None
                 else set_fix("scheduler.params.warmup_max_lr", "auto")), page="optimizer",
        )
