"""``validate``: every finding about a config, for a world size, a target runtime and a DeepSpeed version."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from core import versions
from core.autofill import as_accelerate_passes
from core.batch import BATCH_KEYS, effective_world_size, resolve_batch
from core.effective import legacy_zero_keys
from core.findings import SEVERITY_ORDER, BatchValues, Finding, Fix, FixOp, Report, get_path
from core.rules.codes import INITIALIZE_TIME_CODES, lookup
from core.rules.context import TARGETS, Context
from core.rules.registry import RULES

__all__ = ["INITIALIZE_TIME_CODES", "validate"]


def validate(
    config: Any,
    *,
    world_size: int = 1,
    target: str = "deepspeed",
    version: str | None = None,
) -> Report:
    """Check a config the way DeepSpeed ``version`` would on ``world_size`` GPUs, and more.

    ``target`` is "deepspeed" (the config goes to ``deepspeed.initialize`` as it is) or
    "hf" (the HF Trainer / Accelerate fill in "auto" values first). ``version`` is any release with a
    profile (``core.versions.RELEASES``); None means the installed DeepSpeed, else the newest.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, not {target!r}")
    version = versions.resolve_version(version)
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive integer, not {world_size!r}")
    if not isinstance(config, dict):
        finding = Finding(
            "error", "config.not-object", "",
            f"A DeepSpeed config must be a JSON object ({{...}}), not {type(config).__name__}.",
            suggestion="Start from {\"train_micro_batch_size_per_gpu\": 1}.",
        )
        return Report((finding,), None, version, target, world_size)
    ctx = Context(config=config, world_size=world_size, target=target, version=version)
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for rule in RULES:
        for finding in rule(ctx):
            key = (finding.code, finding.path)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    findings = _with_fix_safety(_without_overwrites(
        _drop_shadowed_type_errors(_drop_unread_sections(findings, version, config)), config))
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    return Report(tuple(findings), _batch_values(ctx), version, target, world_size)


def _without_overwrites(findings: list[Finding], config: dict[str, Any]) -> list[Finding]:
    """A fix that renames or moves a key onto one the config already has would overwrite the value there (the
    one DeepSpeed reads, e.g. ``zero_optimisation`` renamed onto ``zero_optimization``): it removes the key
    instead, and the suggestion says which value stays."""
    out = []
    for finding in findings:
        ops = finding.fix.ops if finding.fix else ()
        kept = get_path(config, ops[0].to, _ABSENT) if len(ops) == 1 and ops[0].op == "move" and ops[0].to else _ABSENT
        if kept is not _ABSENT:
            dest = ops[0].to
            shown = json.dumps(kept) if kept is None or isinstance(kept, str | int | float | bool) else "a section"
            finding = replace(finding, fix=Fix(f"Remove `{finding.path}`", (FixOp("delete", finding.path),)),
                              suggestion=f"`{dest}` is already set (to {shown}): remove `{finding.path}` to keep "
                                         f"that value, or copy what you meant from it into `{dest}` by hand.")
        out.append(finding)
    return out


#: A path's absence (a None value is a value).
_ABSENT = object()


def _with_fix_safety(findings: list[Finding]) -> list[Finding]:
    """Each fix says whether it is safe, as the finding-code table says for its code."""
    out = []
    for finding in findings:
        entry = lookup(finding.code)
        safe = bool(entry and entry.fix_safe)
        if finding.fix is not None and finding.fix.safe != safe:
            finding = replace(finding, fix=replace(finding.fix, safe=safe))
        out.append(finding)
    return out


def _drop_unread_sections(findings: list[Finding], version: str, config: dict[str, Any]) -> list[Finding]:
    """Rules about a section this release does not read at all say nothing true (the key is reported)."""
    from core.schema.root import DeepSpeedConfig
    from core.schema.walk import section_fields

    root = {k: v for k, v in section_fields(DeepSpeedConfig).items() if k not in legacy_zero_keys(config)}

    def unread(finding: Finding) -> bool:
        top = finding.path.split(".")[0].split("[")[0]
        return (top in root and not finding.code.startswith(("keys.", "removed."))
                and versions.key_known(version, "", top) is False
                and top not in versions.removed_top_level_keys(version))

    return [f for f in findings if not unread(f)]


def _drop_shadowed_type_errors(findings: list[Finding]) -> list[Finding]:
    """A generic type error where a specific rule already explains the same path is noise."""
    specific = [f.path for f in findings if f.severity == "error" and not f.code.startswith("type.")]

    def shadowed(path: str) -> bool:  # the same path, a key below it, or an item of a list the rule explains
        return any(p == path or p.startswith(path + ".") or path.startswith(p + "[") for p in specific)

    return [f for f in findings if not (f.code.startswith("type.") and shadowed(f.path))]


def _batch_values(ctx: Context) -> BatchValues | None:
    config, world_size, version = ctx.config, ctx.world_size, ctx.version
    if ctx.elastic_section is not None:  # elastic training's values replace the batch keys
        elastic = ctx.elastic
        if elastic is None or not elastic.world_size_ok:
            return None
        return BatchValues(elastic.train_batch_size, elastic.micro_batch, elastic.gradient_accumulation_steps,
                           effective_world_size(config, world_size, version), tuple(BATCH_KEYS))
    if any(config.get(k) == "auto" for k in BATCH_KEYS):
        return None
    passed = as_accelerate_passes(config) if ctx.is_hf else config  # accelerate writes a missing accumulation
    resolution = resolve_batch(passed, effective_world_size(config, world_size, version))
    if not resolution.ok:
        return None
    derived = (*resolution.derived, *(k for k in BATCH_KEYS if k in passed and k not in config))
    return BatchValues(
        resolution.train_batch_size, resolution.micro_batch, resolution.grad_accum, resolution.world_size, derived,
    )
