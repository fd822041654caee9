"""AutoEP (``expert_parallel``, DeepSpeed 0.19.6 on): what ``validate_autoep_config`` refuses when
deepspeed.initialize builds the engine. DeepSpeed reads the section with ``dict.get`` and checks it only with
``enabled`` on as a Python truth value, so nothing here applies to a section that is off.

The values each choice key accepts are read from the release (the profile's ``autoep_choices``: its
``config.KEY not in (...)`` tests, 0.19.6 without ``fused_weighted_sum``); the types of single values are the
schema's (``as_written="initialize"``, reported by the type checks); this module adds the names that must be direct
attribute names and the combinations the function refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from core import versions
from core.effective import switch_on
from core.findings import Finding, brief
from core.rules.context import Context
from core.rules.fixes import set_fix
from core.schema.advanced import ExpertParallelConfig
from core.schema.walk import section_fields

SECTION = "expert_parallel"


def autoep_initialize(ctx: Context) -> Iterator[Finding]:
    """The checks of ``validate_autoep_config`` beyond single values' types, for a section that is on."""
    section = ctx.config.get(SECTION)
    if not isinstance(section, dict) or not versions.key_known(ctx.version, "", SECTION) \
            or not switch_on(section.get("enabled", False), SECTION, ctx.version):
        return
    yield from _choices(ctx, section)
    yield from _attribute_names(ctx, section)
    yield from _combinations(ctx, section)


def _known(ctx: Context, key: str) -> bool:
    return versions.key_known(ctx.version, SECTION, key) is not False


def _checks(ctx: Context, *phrases: str) -> bool:
    """Whether this release's AutoEP raises a message holding all ``phrases`` (the profile's ``autoep_checks``, read
    from its source; True when the profile does not say)."""
    messages = versions.profile(ctx.version).get("autoep_checks")
    return messages is None or any(all(p in message for p in phrases) for message in messages)


def _choices(ctx: Context, section: dict[str, Any]) -> Iterator[Finding]:
    for key, allowed in versions.autoep_choices(ctx.version).items():
        if not isinstance(section.get(key), str) or section[key] in allowed:
            continue  # left out, or not text: the type check says what DeepSpeed makes of it
        names = [a for a in allowed if a is not None]
        close = [a for a in names if isinstance(section[key], str) and a.lower() == section[key].strip().lower()]
        yield Finding(
            "error", "expert-parallel.choice", f"{SECTION}.{key}",
            f"`{SECTION}.{key}` is {brief(section[key])}; DeepSpeed {ctx.version}'s AutoEP accepts "
            f"{', '.join(map(brief, names))}{' or null' if None in allowed else ''} and deepspeed.initialize fails "
            f"(ValueError: {key} must be one of ...).",
            suggestion=f"Write one of {', '.join(map(brief, names))}.",
            fix=set_fix(f"{SECTION}.{key}", close[0]) if close else None, page="advanced",
        )


def _attribute_names(ctx: Context, section: dict[str, Any]) -> Iterator[Finding]:
    """Names DeepSpeed looks up with getattr on the model or its MoE block: a non-empty string without dots."""
    for key, field in section_fields(ExpertParallelConfig).items():
        value = section.get(key)
        if not field.meta.extra.get("attribute_name") or not isinstance(value, str) or not _known(ctx, key):
            continue  # null: the preset's; another type: the type check says so
        problem = "is empty" if value == "" else "holds a dot" if "." in value else None
        if problem:
            yield Finding(
                "error", "expert-parallel.attribute-name", f"{SECTION}.{key}",
                f"`{SECTION}.{key}` {problem} ({brief(value)}): AutoEP reads it as a direct attribute name (no path, "
                f"no pattern) and deepspeed.initialize fails (ValueError: {key} must be "
                f"{'a non-empty string' if value == '' else 'a direct attribute name (no dots)'}).",
                suggestion="Write the child's own attribute name, e.g. \"experts\" rather than \"mlp.experts\"; "
                "or leave it out to use the preset's.",
                page="advanced",
            )


def _combinations(ctx: Context, section: dict[str, Any]) -> Iterator[Finding]:
    get = section.get
    autoep = get("autoep_size", 1)
    tensor_parallel = ctx.config.get("tensor_parallel")
    tensor_parallel = tensor_parallel if isinstance(tensor_parallel, dict) else {}
    autotp = tensor_parallel.get("autotp_size")
    folded_tp = isinstance(autotp, int) and not isinstance(autotp, bool) and autotp > 1
    problems: list[tuple[str, str, str]] = []  # (key, what DeepSpeed says, what to do)
    if _checks(ctx, "comm_max_tokens_per_rank must be a positive integer when") \
            and get("comm_backend", "comm") == "deepep" and get("comm_max_tokens_per_rank", 0) == 0:
        problems.append(("comm_max_tokens_per_rank", "comm_max_tokens_per_rank must be a positive integer when "
                         "comm_backend='deepep'", "Write the largest number of tokens one rank routes (normally "
                         "train_micro_batch_size_per_gpu x the longest padded sequence)."))
    if _checks(ctx, 'gate_up_impl="fused" runs') and get("gate_up_impl", "separate") == "fused" \
            and not get("use_grouped_mm", True):
        problems.append(("gate_up_impl", 'gate_up_impl="fused" runs the gate and up projections as one '
                         "torch._grouped_mm, but use_grouped_mm=false selects the sequential expert loop",
                         "Set use_grouped_mm to true, or leave gate_up_impl out."))
    if _checks(ctx, 'row_weighting_impl="fused" only runs') and get("row_weighting_impl", "auto") == "fused":
        if get("comm_backend", "comm") != "deepep":
            problems.append(("row_weighting_impl", 'row_weighting_impl="fused" only runs inside the DeepEP route',
                             'Set comm_backend to "deepep", or leave row_weighting_impl out.'))
        elif autoep == 1:
            problems.append(("row_weighting_impl", 'row_weighting_impl="fused" only runs when DeepEP dispatch is '
                             "active (autoep_size > 1)", "Raise autoep_size, or leave row_weighting_impl out."))
    accepted = versions.autoep_choices(ctx.version)
    if get("combine_impl", "auto") == "fused_weighted_sum" and "fused_weighted_sum" in accepted.get("combine_impl", ()):
        if folded_tp and _checks(ctx, "does not support folded tensor parallelism"):
            problems.append(("combine_impl", 'combine_impl="fused_weighted_sum" does not support folded tensor '
                             f"parallelism (tensor_parallel.autotp_size={autotp})",
                             "Set tensor_parallel.autotp_size to 1, or leave combine_impl out."))
        if _checks(ctx, 'cannot be used with comm_backend="deepep"') and get("comm_backend", "comm") == "deepep" \
                and isinstance(autoep, int) and autoep > 1:
            problems.append(("combine_impl", 'combine_impl="fused_weighted_sum" cannot be used with '
                             'comm_backend="deepep", which already restores and reduces the routed rows',
                             'Set comm_backend to "comm", or leave combine_impl out.'))
    if _checks(ctx, "async_split_plan does not support AutoEP+AutoTP") and get("async_split_plan") is True \
            and folded_tp \
            and isinstance(autoep, int) and autoep > 1:
        problems.append(("async_split_plan", "expert_parallel.async_split_plan does not support AutoEP+AutoTP "
                         "folding yet", "Set tensor_parallel.autotp_size to 1, or turn async_split_plan off."))
    if folded_tp and _checks(ctx, "AutoEP does not currently support AutoTP"):
        problems.append(("enabled", f"AutoEP does not currently support AutoTP (tensor_parallel.autotp_size="
                         f"{autotp})", "Set tensor_parallel.autotp_size to 1, or use a release that folds AutoEP "
                         "into AutoTP (0.19.3 on)."))
    if isinstance(autoep, int) and not isinstance(autoep, bool) and autoep > 0 and not folded_tp \
            and ctx.world_size % autoep and _checks(ctx, "autoep_size", "must divide the stage size"):
        # the stage is the world size over the pipeline stages, so what does not divide the world divides no stage
        problems.append(("autoep_size", f"autoep_size={autoep} must divide the stage size (the job runs on "
                         f"{ctx.world_size} GPU(s), over the pipeline stages)",
                         f"Set autoep_size to a divisor of the GPUs per pipeline stage (of {ctx.world_size} here)."))
    expert_groups, limited_groups = get("num_expert_groups"), get("num_limited_groups")
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (expert_groups, limited_groups)) \
            and limited_groups > expert_groups and _checks(ctx, "must be <= num_expert_groups"):
        problems.append(("num_limited_groups", f"num_limited_groups ({brief(limited_groups)}) must be <= "
                         f"num_expert_groups ({brief(expert_groups)})",
                         "A token routes to at most all the expert groups: lower num_limited_groups."))
    tp_preset, ep_preset = tensor_parallel.get("preset_model"), get("preset_model")
    if tp_preset is not None and ep_preset is not None and tp_preset != ep_preset \
            and _checks(ctx, "expert_parallel.preset_model must match"):
        problems.append(("preset_model", "tensor_parallel.preset_model and expert_parallel.preset_model must match "
                         f"({brief(tp_preset)} against {brief(ep_preset)})",
                         "Name the same model in both sections, or leave one out."))
    for key, said, advice in problems:
        yield Finding(
            "error", "expert-parallel.combination", f"{SECTION}.{key}",
            f"AutoEP is on and deepspeed.initialize fails in DeepSpeed {ctx.version}: {said} (ValueError).",
            suggestion=advice, page="advanced",
        )
