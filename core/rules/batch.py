"""Batch rules: the batch triangle for the GPU count, batch value types, sequence parallelism and
DeepSpeed 0.19.5's elasticity (which computes the batch itself)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from core import versions
from core.batch import (
    BATCH_KEYS,
    GA,
    MB,
    TB,
    batch_suggestions,
    effective_world_size,
    positive_whole,
    reads_sequence_parallel,
    resolve_batch,
    shown,
)
from core.findings import Finding, Fix, FixOp, brief
from core.rules.context import Context, lax_int
from core.rules.fixes import delete_fix, set_fix

# --------------------------------------------------------------------------------------------
# Batch triangle


def _hf_never_matches(ctx: Context, values: dict[str, Any], auto_key: str) -> Iterator[Finding]:
    """The HF Trainer fills ``auto_key`` and then checks a written train_batch_size: an error when no whole value
    of it can satisfy that check (transformers' ``trainer_config_finalize`` mismatch)."""
    other_key = MB if auto_key == GA else GA
    tb, other = positive_whole(values[TB]), positive_whole(values[other_key])
    ranks = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    if tb is None or other is None or not float(ranks).is_integer():
        return
    step = other * int(ranks)
    if tb % step == 0:
        return
    gpus = f"{ctx.world_size} GPU{'s' if ctx.world_size != 1 else ''}"
    yield Finding(
        "error", "hf.batch-never-matches", TB,
        f"train_batch_size {tb} is not {other_key} ({other}) × {auto_key} × {int(ranks)} data-parallel ranks "
        f"for any whole {auto_key}: the HF Trainer fills the \"auto\" {auto_key} from TrainingArguments and "
        f"then refuses the written train_batch_size on {gpus}.",
        suggestion=f"Set train_batch_size to \"auto\" (the Trainer computes it), or to a multiple of {step}.",
        fix=set_fix(TB, "auto"), page="batch",
    )


def batch_triangle(ctx: Context) -> Iterator[Finding]:
    """train_batch_size = micro batch × accumulation × world size, exactly as DeepSpeed checks it."""
    values = {k: ctx.config.get(k) for k in BATCH_KEYS}
    autos = [k for k, v in values.items() if v == "auto"]
    if autos:
        if ctx.is_hf and len(autos) == 1 and autos[0] != TB:
            yield from _hf_never_matches(ctx, values, autos[0])
        return  # the "auto" rule reports these; arithmetic on "auto" is meaningless
    elastic = ctx.config.get("elasticity")
    if versions.key_known(ctx.version, "", "elasticity") and isinstance(elastic, dict) and elastic.get("enabled"):
        return  # DeepSpeed 0.19.5's elastic training computes the batch values itself
    result = resolve_batch(ctx.config, effective_world_size(ctx.config, ctx.world_size, ctx.version))
    w = ctx.world_size
    gpus = f"{w} GPU{'s' if w != 1 else ''}"
    if result.ok:
        for key in BATCH_KEYS:
            value = values[key]
            if (isinstance(value, float) and not value.is_integer()) or isinstance(value, bool):
                fixes = _trio_fixes(ctx)
                options = "; ".join(f.description[4:] for f in fixes)
                yield Finding(
                    "warning", "batch.not-integer", key,
                    f"`{key}` is {shown(value)}; DeepSpeed accepts it but data loaders need a whole number.",
                    suggestion=f"Whole numbers that work on {gpus}: {options}." if options
                    else "Use a positive integer.",
                    fix=fixes[0] if fixes else None, page="batch",
                )
        return
    fixes = _trio_fixes(ctx)
    options = "; ".join(f.description[4:] for f in fixes)
    suggestion = (f"Values that work on {gpus}: {options}." if options else
                  f"Write positive whole numbers with train_batch_size = micro batch × accumulation × {gpus}.")
    if result.problem == "missing":
        yield Finding(
            "error", "batch.missing", TB, f"The batch size is not set: {result.message}.",
            suggestion="Set train_micro_batch_size_per_gpu (and gradient_accumulation_steps), or "
            "train_batch_size.",
            fix=set_fix(MB, 1, "Set train_micro_batch_size_per_gpu to 1"), page="batch",
        )
        return
    if result.problem == "type":
        return  # reported by batch_types with the field named
    derived = ", ".join(result.derived)
    how = f" (DeepSpeed derives {derived} from the others)" if derived else ""
    if result.problem == "product":
        message = (
            f"The batch sizes do not add up on {gpus}: {result.message}{how}. "
            "DeepSpeed stops with \"Check batch related parameters\"."
        )
    else:
        message = f"With {gpus}, {result.message}{how}. DeepSpeed stops at start-up."
    yield Finding(
        "error", f"batch.{result.problem}", TB, message, suggestion, fixes[0] if fixes else None, page="batch"
    )


def _trio_fixes(ctx: Context) -> list[Fix]:
    """Up to three complete batch trios that work for the data-parallel GPU count, closest to the config first."""
    data_parallel = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    if not (data_parallel >= 1 and float(data_parallel).is_integer()):
        return []  # suggestions need a whole data-parallel size (GPUs ÷ sequence_parallel_size)
    return [
        Fix("Use " + ", ".join(f"{k}={v}" for k, v in trio.items()), tuple(FixOp("set", k, v) for k, v in trio.items()))
        for trio in batch_suggestions(ctx.config, int(data_parallel))[:3]
    ]


def batch_types(ctx: Context) -> Iterator[Finding]:
    """Batch values DeepSpeed cannot compute with (strings, lists, ...)."""
    for key in BATCH_KEYS:
        value = ctx.config.get(key)
        if value is None or value == "auto" or isinstance(value, int | float):
            continue
        item = value[0] if isinstance(value, list) and len(value) == 1 else value  # [8] -> 8
        as_int = lax_int(item)
        fix = set_fix(key, as_int) if as_int and as_int > 0 else None
        yield Finding(
            "error", "batch.type", key,
            f"`{key}` is {brief(value)}, not a number; DeepSpeed fails doing arithmetic with it.",
            suggestion="Write a positive integer without quotes.", fix=fix, page="batch",
        )


def sequence_parallel(ctx: Context) -> Iterator[Finding]:
    """sequence_parallel_size divides the world size; a value DeepSpeed cannot divide by stops it."""
    if "sequence_parallel_size" not in ctx.config or not reads_sequence_parallel(ctx.version):
        return
    sp = ctx.config["sequence_parallel_size"]
    if not isinstance(sp, int | float) or sp <= 0:  # True is 1 to DeepSpeed's division
        yield Finding(
            "error", "misc.sequence-parallel-invalid", "sequence_parallel_size",
            f"sequence_parallel_size is {brief(sp)}; DeepSpeed divides the GPU count by it, so it must be a "
            "positive number.",
            suggestion="Remove it, or set the sequence-parallel degree (e.g. 2).",
            fix=delete_fix("sequence_parallel_size"), page="batch",
        )


def elasticity(ctx: Context) -> Iterator[Finding]:
    """Elasticity, in the releases that read it: it takes over the batch size and refuses explicit batch keys."""
    section = ctx.config.get("elasticity")
    if not versions.key_known(ctx.version, "", "elasticity") or not isinstance(section, dict) \
            or not section.get("enabled"):
        return
    if not section.get("ignore_non_elastic_batch_info") and any(k in ctx.config for k in BATCH_KEYS):
        yield Finding(
            "error", "elasticity.batch-keys", "elasticity.ignore_non_elastic_batch_info",
            "Elastic training is enabled and computes the batch size itself, but the config also sets "
            f"batch keys; DeepSpeed {ctx.version} refuses that (ElasticityConfigError).",
            suggestion="Remove the batch keys, or set elasticity.ignore_non_elastic_batch_info: true.",
            fix=set_fix("elasticity.ignore_non_elastic_batch_info", True), page="batch",
        )
