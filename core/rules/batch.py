"""Batch rules: the batch triangle for the GPU count, batch value types, sequence parallelism and
elasticity (which computes the batch itself, in the releases up to 0.19.7)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from core import versions
from core.autofill import ACCELERATE_ACCUMULATION, as_accelerate_passes
from core.batch import (
    BATCH_KEYS,
    GA,
    MB,
    TB,
    batch_suggestions,
    effective_world_size,
    number_text,
    positive_whole,
    reads_sequence_parallel,
    resolve_batch,
    sequence_parallel_degree,
    shown,
    valid_world_sizes,
    whole,
)
from core.elasticity import elastic_batch, keeps_oversized_elastic_base
from core.findings import Finding, Fix, FixOp, brief
from core.rules.context import Context, lax_int
from core.rules.fixes import delete_fix, set_fix

# --------------------------------------------------------------------------------------------
# Batch triangle


def _hf_never_matches(ctx: Context, values: dict[str, Any]) -> Iterator[Finding]:
    """The HF Trainer fills an "auto" micro batch or accumulation and then checks a written train_batch_size: an
    error when no whole values of them can satisfy that check (transformers' ``trainer_config_finalize``
    mismatch), with the other key as DeepSpeed gets it (a missing accumulation is accelerate's 1)."""
    tb = positive_whole(values[TB])
    ranks = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    if tb is None or not float(ranks).is_integer():
        return
    passed = as_accelerate_passes(ctx.config)
    fixed = {key: passed.get(key) for key in (MB, GA) if passed.get(key) is not None and passed.get(key) != "auto"}
    counts = {key: positive_whole(value) for key, value in fixed.items()}
    if any(count is None for count in counts.values()):
        return  # not a count: batch_types reports it
    step = math.prod(counts.values()) * int(ranks)
    if tb % step == 0:
        return
    free = [key for key in (MB, GA) if key not in fixed]
    factors = [f"{key} ({counts[key]}{_ACCELERATE_ONE if key not in ctx.config else ''})" if key in fixed else key
               for key in (MB, GA)]
    filled = " and ".join(f'"auto" {key}' if values[key] == "auto" else f"{key} DeepSpeed derives" for key in free)
    gpus = _gpus(ctx.world_size)
    yield Finding(
        "error", "hf.batch-never-matches", TB,
        f"train_batch_size {tb} is not {' × '.join(factors)} × {int(ranks)} data-parallel ranks for any whole "
        f"{' and '.join(free)}: the HF Trainer fills the {filled} from TrainingArguments and then refuses the "
        f"written train_batch_size on {gpus}.",
        suggestion=f"Set train_batch_size to \"auto\" (the Trainer computes it), or to a multiple of {step}.",
        fix=set_fix(TB, "auto"), page="batch",
    )


#: How a message says that accelerate wrote the accumulation.
_ACCELERATE_ONE = ": accelerate writes a missing one as 1"


def _hf_accumulation_missing(ctx: Context) -> Finding | None:
    """Target hf: train_batch_size and the micro batch written, the accumulation not: plain DeepSpeed derives it,
    but accelerate (under the HF Trainer too) writes a missing one as 1 first, so DeepSpeed refuses the batch
    unless that derivation is 1 anyway."""
    if GA in ctx.config:
        return None
    plain = resolve_batch(ctx.config, effective_world_size(ctx.config, ctx.world_size, ctx.version))
    accum = positive_whole(plain.grad_accum)
    if not plain.ok or GA not in plain.derived or accum is None or accum == ACCELERATE_ACCUMULATION:
        return None
    tb, mb = shown(plain.train_batch_size), shown(plain.micro_batch)
    ranks = number_text(plain.world_size)
    return Finding(
        "error", "hf.batch-accumulation-missing", GA,
        f"gradient_accumulation_steps is not set: plain DeepSpeed derives {accum} (train_batch_size {tb} ÷ micro "
        f"batch {mb} ÷ {ranks} data-parallel ranks), but under the HF Trainer / accelerate the DeepSpeed plugin "
        f"writes a missing gradient_accumulation_steps as {ACCELERATE_ACCUMULATION}, so DeepSpeed checks {tb} = "
        f"{mb} × {ACCELERATE_ACCUMULATION} × {ranks} and stops (\"Check batch related parameters\").",
        suggestion=f"Write gradient_accumulation_steps {accum} and pass gradient_accumulation_steps={accum} to "
        "TrainingArguments, or set it to \"auto\" and pass it there.",
        fix=set_fix(GA, accum, f"Set gradient_accumulation_steps to {accum} (for {ranks} data-parallel "
                    f"rank{'s' if plain.world_size != 1 else ''})"), page="batch",
    )


def batch_triangle(ctx: Context) -> Iterator[Finding]:
    """train_batch_size = micro batch × accumulation × world size, exactly as DeepSpeed checks it (for the HF
    target, with the accumulation accelerate writes when it is missing, and the Trainer's own check)."""
    values = {k: ctx.config.get(k) for k in BATCH_KEYS}
    if ctx.elastic_section is not None:
        return  # elastic training computes the batch values itself (the elasticity rule checks them)
    if values[TB] is None and values[MB] is None:
        yield _missing(ctx)
        return
    split = _hf_sequence_parallel(ctx, values)
    if split is not None:
        yield split
        return
    autos = [k for k, v in values.items() if v == "auto"]
    if autos:
        if ctx.is_hf and TB not in autos:
            yield from _hf_never_matches(ctx, values)
        return  # the "auto" rule reports these; arithmetic on "auto" is meaningless
    missing = _hf_accumulation_missing(ctx) if ctx.is_hf else None
    if missing is not None:
        yield missing
        return
    ranks = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    result = resolve_batch(ctx.config, ranks, _ranks_label(ctx, ranks))
    gpus = _gpus(ctx.world_size)
    if result.ok:
        yield from _not_integer(ctx, values, result.micro_batch, ranks)
        return
    fixes = _trio_fixes(ctx)
    options = "; ".join(f.description[4:] for f in fixes)
    if options:
        suggestion = f"Values that work on {_ranks_text(ctx.world_size, ranks)}: {options}."
    elif ranks == ctx.world_size:
        suggestion = f"Write positive whole numbers with train_batch_size = micro batch × accumulation × {gpus}."
    else:
        suggestion = _sequence_parallel_suggestion(ctx, ranks)
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


def _missing(ctx: Context) -> Finding:
    """Neither train_batch_size nor the micro batch: DeepSpeed asserts, whatever the accumulation says (the HF
    Trainer fills only "auto" keys, so it adds neither)."""
    hf = (" The HF Trainer fills only keys written as \"auto\": it adds no micro batch to a config without one."
          if ctx.is_hf else "")
    return Finding(
        "error", "batch.missing", TB,
        "The batch size is not set: neither train_batch_size nor train_micro_batch_size_per_gpu is set, and "
        "DeepSpeed stops (\"Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided\")."
        + hf,
        suggestion="Set train_micro_batch_size_per_gpu (and gradient_accumulation_steps), or train_batch_size"
        + (' (with the HF Trainer, "auto" takes per_device_train_batch_size).' if ctx.is_hf else "."),
        fix=set_fix(MB, 1, "Set train_micro_batch_size_per_gpu to 1"), page="batch",
    )


def _hf_sequence_parallel(ctx: Context, values: dict[str, Any]) -> Finding | None:
    """Target hf with sequence parallelism: the Trainer checks a written train_batch_size against micro batch ×
    accumulation × every process (``TrainingArguments.world_size``), DeepSpeed against the data-parallel ranks
    (GPUs ÷ sequence_parallel_size), so no written number satisfies both."""
    sp = sequence_parallel_degree(ctx.config) if ctx.is_hf and reads_sequence_parallel(ctx.version) else None
    tb = values[TB]
    if sp is None or isinstance(tb, bool) or not isinstance(tb, int | float):
        return None
    passed = as_accelerate_passes(ctx.config)
    counts = [positive_whole(passed.get(key)) for key in (MB, GA)]
    ranks = ctx.world_size / sp
    trainer = deepspeed = ""
    verdict = "whatever the Trainer fills, one of them refuses it"
    if None not in counts:
        product = math.prod(c for c in counts if c is not None)
        trainer, deepspeed = f" = {product * ctx.world_size}", f" = {number_text(product * ranks)}"
        verdict = (f"the Trainer refuses {shown(tb)} (\"ds train_batch_size={shown(tb)} vs hf train_batch_size "
                   f"(calculated)={product * ctx.world_size}\")" if tb != product * ctx.world_size else
                   f"DeepSpeed refuses {shown(tb)} unless accelerate replaces it (it does under TrainingArguments("
                   f"parallelism_config=ParallelismConfig(sp_backend=\"deepspeed\", sp_size={sp}))), and then "
                   f"trains with train_batch_size {number_text(product * ranks)}, not the written {shown(tb)}")
    return Finding(
        "error", "hf.batch-never-matches" if "auto" in (values[MB], values[GA]) else "batch.product", TB,
        f"train_batch_size {shown(tb)} with sequence_parallel_size {sp}: the HF Trainer checks it against micro "
        f"batch × accumulation × all {_gpus(ctx.world_size)} (TrainingArguments.world_size counts every process)"
        f"{trainer}, DeepSpeed against micro batch × accumulation × {number_text(ranks)} data-parallel ranks "
        f"(GPUs ÷ sequence_parallel_size){deepspeed}; no written number passes both: {verdict}.",
        suggestion="Set train_batch_size to \"auto\": the Trainer and accelerate then write micro batch × "
        "accumulation × data-parallel ranks, which DeepSpeed checks.",
        fix=set_fix(TB, "auto"), page="batch",
    )


def _not_integer(ctx: Context, values: dict[str, Any], micro: Any, ranks: float) -> Iterator[Finding]:
    """Batch values DeepSpeed accepts but a data loader does not: a fraction or a boolean written, or a micro batch
    DeepSpeed ends with as a float (written 4.0, or derived with float arithmetic, e.g. over GPUs ÷
    sequence_parallel_size), which torch's DataLoader refuses when DeepSpeed builds one."""
    warned = False
    for key in BATCH_KEYS:
        value = values[key]
        if (isinstance(value, float) and not value.is_integer()) or isinstance(value, bool):
            warned = warned or key == MB
            yield _not_integer_finding(
                ctx, key, f"`{key}` is {shown(value)}; DeepSpeed accepts it but data loaders need a whole number.")
    if warned or ctx.is_hf or not isinstance(micro, float):
        return  # the HF Trainer builds its data loader from per_device_train_batch_size, an int
    if MB in ctx.config:
        how = f"train_micro_batch_size_per_gpu is written as {shown(micro)}"
    else:
        operands = [f"{key} {shown(values[key])}" for key in (TB, GA) if values[key] is not None]
        if ranks != ctx.world_size:
            operands.append(f"{number_text(ranks)} data-parallel ranks ({_gpus(ctx.world_size)} ÷ "
                            f"sequence_parallel_size {shown(ctx.config.get('sequence_parallel_size'))}, a float)")
        how = f"DeepSpeed derives it with float arithmetic from {', '.join(operands)}"
    refused = (f"It trains with it, but when DeepSpeed builds the data loader (deepspeed.initialize(..., "
               f"training_data=...)), or you pass the value to a DataLoader, torch refuses it (\"batch_size should be "
               f"a positive integer value, but got batch_size={shown(micro)}\").")
    if MB in ctx.config or (ranks == ctx.world_size and all(
            whole(values[key]) is not None for key in (TB, GA) if values[key] is not None)):
        # only whole numbers written as floats: DeepSpeed opens a config path with hjson, which reads 4.0 as 4
        yield _not_integer_finding(
            ctx, MB,
            f"Passed as a dict (deepspeed.initialize(config=dict), e.g. a config your script builds or reads with "
            f"json), DeepSpeed ends with micro batch {shown(micro)}, a float ({how}). {refused} Given as a file "
            f"path (deepspeed.initialize(config=path) or the launcher's --deepspeed_config), DeepSpeed reads the "
            f"file with hjson, which reads whole numbers such as 4.0 as integers: the micro batch is "
            f"{shown(int(micro))} and the loader works.")
        return
    yield _not_integer_finding(ctx, MB, f"DeepSpeed ends with micro batch {shown(micro)}, a float ({how}). {refused}")


def _not_integer_finding(ctx: Context, key: str, message: str) -> Finding:
    fixes = _trio_fixes(ctx)
    ranks = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    options = "; ".join(f.description[4:] for f in fixes)
    return Finding(
        "warning", "batch.not-integer", key, message,
        suggestion=f"Whole numbers that work on {_ranks_text(ctx.world_size, ranks)}: {options}." if options
        else "Use a positive integer.",
        fix=fixes[0] if fixes else None, page="batch",
    )


def _ranks_label(ctx: Context, ranks: float) -> str:
    """What the batch product's message calls the ``ranks`` DeepSpeed multiplies by."""
    if ranks == ctx.world_size:
        return "GPUs"
    return f"data-parallel ranks ({_gpus(ctx.world_size)} ÷ sequence_parallel_size " \
           f"{shown(ctx.config.get('sequence_parallel_size'))})"


def _sequence_parallel_suggestion(ctx: Context, ranks: float) -> str:
    """Where GPUs ÷ sequence_parallel_size is not whole: DeepSpeed checks the batch over the data-parallel ranks,
    so the way out is a GPU count the degree divides (the nearest where these batch values work)."""
    sp = sequence_parallel_degree(ctx.config)
    how = ("positive whole numbers with train_batch_size = micro batch × accumulation × data-parallel ranks "
           "(GPUs ÷ sequence_parallel_size)")
    if sp is None:
        return f"Write {how}."
    counts = tuple(valid_world_sizes(ctx.config, max(1024, 2 * ctx.world_size), ctx.version))
    if counts:
        return (f"Run on a GPU count sequence_parallel_size {sp} divides, where these values work"
                f"{_nearest_text(counts, ctx.world_size)}, or write {how}.")
    below = ctx.world_size // sp * sp
    near = " or ".join(str(c) for c in (below, below + sp) if c > 0)
    return f"Write {how}, and run on a GPU count sequence_parallel_size {sp} divides ({near} GPUs)."


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
    fallback = versions.world_size_when_sequence_parallel_fails(ctx.version, sp)
    if fallback is not None:
        yield Finding(
            "warning", "misc.sequence-parallel-swallowed", "sequence_parallel_size",
            f"sequence_parallel_size is {brief(sp)}: DeepSpeed {ctx.version} fails to divide the GPU count by it, "
            f"catches that, and checks the batch as on {_gpus(fallback)}: train_batch_size then counts "
            f"{number_text(fallback)} of the {_gpus(ctx.world_size)} that all train, so each optimizer step sees more "
            "samples than it says.",
            suggestion="Remove it (no sequence parallelism), or set the sequence-parallel degree (e.g. 2).",
            fix=delete_fix("sequence_parallel_size"), page="batch",
        )
        return
    if not isinstance(sp, int | float) or sp <= 0:  # True is 1 to DeepSpeed's division
        yield Finding(
            "error", "misc.sequence-parallel-invalid", "sequence_parallel_size",
            f"sequence_parallel_size is {brief(sp)}; DeepSpeed divides the GPU count by it, so it must be a "
            "positive number.",
            suggestion="Remove it, or set the sequence-parallel degree (e.g. 2).",
            fix=delete_fix("sequence_parallel_size"), page="batch",
        )


def sequence_parallel_path(ctx: Context) -> Iterator[Finding]:
    """sequence_parallel_size in a config DeepSpeed is given as a file path, in the releases whose
    ``deepspeed.initialize`` hands the path to ``DeepSpeedConfig`` unread (0.17.x): it looks for the key in the path
    string, so it checks and derives the batch over every GPU, not GPUs ÷ sp, where a dict (the HF Trainer's,
    accelerate's, a script's) divides. Said when that changes the verdict or the micro batch / accumulation."""
    sp = sequence_parallel_degree(ctx.config)
    if (sp is None or ctx.is_hf or ctx.elastic_section is not None or not reads_sequence_parallel(ctx.version)
            or versions.path_config_divides_by_sequence_parallel(ctx.version)):
        return
    values = {k: ctx.config.get(k) for k in BATCH_KEYS}
    if "auto" in values.values():
        return
    as_dict = resolve_batch(ctx.config, effective_world_size(ctx.config, ctx.world_size, ctx.version))
    as_path = resolve_batch(ctx.config, ctx.world_size)
    if not as_dict.ok:
        return  # batch_triangle reports the config as DeepSpeed reads it from a dict
    same = as_path.ok and (as_path.micro_batch, as_path.grad_accum) == (as_dict.micro_batch, as_dict.grad_accum)
    if same:
        return  # only the derived train_batch_size differs, which trains the same
    gpus = _gpus(ctx.world_size)
    outcome = (f"it derives micro batch {shown(as_path.micro_batch)} and accumulation {shown(as_path.grad_accum)}, "
               f"not the {shown(as_dict.micro_batch)} and {shown(as_dict.grad_accum)} of a dict"
               if as_path.ok else f"{as_path.message}, and deepspeed.initialize stops (\"Check batch related "
                                  "parameters\")")
    fix = None
    if MB not in ctx.config or GA not in ctx.config:  # write the dict's micro batch and accumulation, drop the total
        fix = Fix(f"Write micro batch {shown(as_dict.micro_batch)} and accumulation {shown(as_dict.grad_accum)} "
                  "instead of train_batch_size",
                  (FixOp("set", MB, positive_whole(as_dict.micro_batch) or as_dict.micro_batch),
                   FixOp("set", GA, positive_whole(as_dict.grad_accum) or as_dict.grad_accum), FixOp("delete", TB)))
    elif TB in ctx.config:
        fix = delete_fix(TB)
    yield Finding(
        "warning", "batch.sequence-parallel-path", "sequence_parallel_size",
        "Given as a file path (the launcher's --deepspeed_config, or deepspeed.initialize(config=\"ds_config.json\")), "
        f"DeepSpeed {ctx.version} checks the batch over all {gpus}, not {gpus} ÷ sequence_parallel_size {sp}: it "
        f"looks for sequence_parallel_size in the path string rather than in the file. On {gpus} {outcome}. Passed "
        "as a dict (the HF Trainer, accelerate, or a script that loads the file) it divides, as checked above.",
        suggestion="Pass the loaded dict (deepspeed.initialize(config=json.load(open(path)))), or write the micro "
                   "batch and accumulation without train_batch_size (then both ways train the same), or use a "
                   "release that reads the file first (0.18.6 on).",
        fix=fix, page="batch",
    )


def elasticity(ctx: Context) -> Iterator[Finding]:
    """Elasticity, in the releases that read it: it takes over the batch size, refuses explicit batch keys, and
    accepts only the world sizes its batch search calls valid (``core.elasticity``)."""
    section = ctx.elastic_section
    if section is None:
        return
    # under the HF Trainer accelerate's DeepSpeedPlugin writes a missing accumulation before DeepSpeed reads the
    # config, so even a config that writes no batch key reaches DeepSpeed with one
    received = as_accelerate_passes(ctx.config) if ctx.is_hf else ctx.config
    if not section.get("ignore_non_elastic_batch_info") and any(k in received for k in BATCH_KEYS):
        written = any(k in ctx.config for k in BATCH_KEYS)
        yield Finding(
            "error", "elasticity.batch-keys", "elasticity.ignore_non_elastic_batch_info",
            "Elastic training is enabled and computes the batch size itself, but "
            + ("the config also sets batch keys" if written else
               "the config reaches DeepSpeed with a batch key: under the HF Trainer / accelerate, accelerate writes "
               f"gradient_accumulation_steps {ACCELERATE_ACCUMULATION} into a config without one")
            + f"; DeepSpeed {ctx.version} refuses that (ElasticityConfigError).",
            suggestion=("Remove the batch keys, or set elasticity.ignore_non_elastic_batch_info: true." if written
                        else "Set elasticity.ignore_non_elastic_batch_info: true (the HF Trainer runs elastic "
                        "training only with it), and pass the Trainer the micro batch and accumulation elastic "
                        "training computes (the HF Trainer export does): DeepSpeed trains with those."),
            fix=set_fix("elasticity.ignore_non_elastic_batch_info", True), page="batch",
        )
    result = ctx.elastic
    if result is None:
        return  # the section's own values are wrong: the schema names them
    ranks = effective_world_size(ctx.config, ctx.world_size, ctx.version)
    on = _ranks_text(ctx.world_size, ranks)
    valid = _counts_text(result.valid_world_sizes)
    if result.refusal == "world-size":
        fix = _elastic_batch_fix(ctx, section, ranks)
        # the search lists data-parallel sizes; DeepSpeed checks GPUs ÷ sequence_parallel_size against them
        sp = (sequence_parallel_degree(ctx.config) if reads_sequence_parallel(ctx.version) else None) or 1
        gpu_counts = tuple(c * sp for c in result.valid_world_sizes)
        in_gpus = f" (GPU counts: {_counts_text(gpu_counts)}, with sequence_parallel_size {sp})" if sp > 1 else ""
        # the counts that really pass: version 0.2 with model parallelism lists, for a GPU count its search does not
        # accept, a fallback of that count's data-parallel size, which the check then refuses as well
        accepted = tuple(valid_world_sizes(ctx.config, max(1024, 2 * ctx.world_size), ctx.version))
        listed = (f"accepts it only on these data-parallel sizes: {valid}{in_gpus}; {on} is not one of them"
                  if set(gpu_counts) <= set(accepted) else
                  f"refuses {on} (its list of valid sizes for it, {valid}, is a fallback the GPU count is then checked "
                  f"against); the GPU counts it accepts with this section: {_counts_text(accepted) or 'none'}")
        yield Finding(
            "error", "elasticity.world-size", "elasticity",
            f"Elastic training picks train_batch_size {result.train_batch_size}, and DeepSpeed {ctx.version} "
            + (listed if valid else "finds no data-parallel size it accepts")
            + ", so DeepSpeed stops at start-up (ElasticityIncompatibleWorldSize).",
            suggestion=(f"Run on a GPU count it accepts{_nearest_text(accepted, ctx.world_size)}, or "
                        + (f"{fix.description[0].lower()}{fix.description[1:]}, which makes {on} valid." if fix else
                           "change elasticity.max_train_batch_size, micro_batch_sizes, min_gpus or max_gpus.")),
            fix=fix, page="batch",
        )
        return
    if result.refusal is not None:
        shown_micro = ", ".join(str(m) for m in section.get("micro_batch_sizes", []))
        if result.train_batch_size == 0:
            why = (f"max_train_batch_size {brief(section.get('max_train_batch_size'))} is less than one micro batch "
                   f"({shown_micro}) for each of the {number_text(ranks)} data-parallel ranks")
        elif result.refusal == "micro-batch":
            why = f"none of the micro batch sizes ({shown_micro}) divides each rank's share of it"
        else:
            why = "which is not a whole number of micro batches and accumulation steps for each rank"
        fix = _elastic_batch_fix(ctx, section, ranks)
        yield Finding(
            "error", "elasticity.no-batch", "elasticity.max_train_batch_size",
            f"Elastic training picks train_batch_size {result.train_batch_size} on {on}: {why}; DeepSpeed "
            f"{ctx.version} stops at start-up.",
            suggestion=(f"{fix.description}." if fix else "Raise elasticity.max_train_batch_size, or add a micro "
                        f"batch size that divides {result.train_batch_size} ÷ {number_text(ranks)}."),
            fix=fix, page="batch",
        )
        return
    written = {k: ctx.config[k] for k in BATCH_KEYS if k in ctx.config}
    computed = {TB: result.train_batch_size, MB: result.micro_batch, GA: result.gradient_accumulation_steps}
    replaced = [f"{k} {brief(v)} → {computed[k]}" for k, v in written.items() if v != computed[k]]
    if replaced:
        yield Finding(
            "warning", "elasticity.overrides", "elasticity",
            f"Elastic training replaces the written batch values on {on}: {'; '.join(replaced)} "
            "(ignore_non_elastic_batch_info lets it do so silently).",
            suggestion="Remove the batch keys, so the config says what runs.",
            fix=Fix("Remove the batch keys", tuple(FixOp("delete", k) for k in written)), page="batch",
        )
    yield Finding(
        "info", "elasticity.batch", "elasticity",
        f"Elastic training sets train_batch_size {result.train_batch_size}, micro batch {result.micro_batch} and "
        f"accumulation {result.gradient_accumulation_steps} on {on}; the data-parallel sizes it accepts: {valid}.",
        page="batch",
    )


def _gpus(count: float) -> str:
    """``8 GPUs``, ``1 GPU``: a GPU count in a message."""
    return f"{number_text(count)} GPU{'s' if count != 1 else ''}"


def _ranks_text(world_size: int, ranks: float) -> str:
    """``8 GPUs``, or ``8 GPUs (4 data-parallel ranks after sequence parallelism)`` where DeepSpeed divides them."""
    gpus = _gpus(world_size)
    if ranks == world_size:
        return gpus
    return f"{gpus} ({number_text(ranks)} data-parallel ranks after sequence parallelism)"


def _counts_text(counts: tuple[int, ...], shown: int = 16) -> str:
    if len(counts) <= shown:
        return ", ".join(str(c) for c in counts)
    return ", ".join(str(c) for c in counts[:shown]) + f", … ({len(counts)} in all, up to {counts[-1]})"


def _nearest_text(counts: tuple[int, ...], pivot: float) -> str:
    """`` (nearest: 8 or 12 GPUs)``: the GPU counts of ``counts`` either side of ``pivot``."""
    below = [c for c in counts if c < pivot]
    above = [c for c in counts if c > pivot]
    near = [str(x) for x in (below[-1:] + above[:1])]
    return f" (nearest: {' or '.join(near)} GPUs)" if near else ""


#: How far from the written max_train_batch_size the fix looks for one that makes the world size valid (a third
#: of refused world sizes get a fix within it, a sixth within 32), and up to which batch it looks at all.
_ELASTIC_FIX_SEARCH = 256
_ELASTIC_FIX_LARGEST = 20_000


def _elastic_batch_fix(ctx: Context, section: Any, ranks: float) -> Fix | None:
    """The max_train_batch_size nearest the written one (not above it first) whose elastic batch accepts this
    world size, searched within ``_ELASTIC_FIX_SEARCH``; None when there is none."""
    largest = section.get("max_train_batch_size")
    if not isinstance(largest, int) or isinstance(largest, bool) or largest > _ELASTIC_FIX_LARGEST:
        return None  # beyond it each try costs milliseconds: the suggestion names the valid counts instead
    micro = section.get("micro_batch_sizes")
    if not (isinstance(micro, list) and micro and all(isinstance(m, int) and 0 < m <= largest for m in micro)) \
            or math.lcm(*micro) > 1000 * _ELASTIC_FIX_LARGEST:
        return None  # an oversized least common multiple is a candidate in some releases, and a long search
    keep = keeps_oversized_elastic_base(ctx.version)
    for delta in range(1, _ELASTIC_FIX_SEARCH + 1):
        for value in (largest - delta, largest + delta):
            if value < 1:
                continue
            found = elastic_batch({**section, "max_train_batch_size": value}, ranks, keep_oversized_base=bool(keep))
            if found is not None and found.world_size_ok:
                return set_fix("elasticity.max_train_batch_size", value)
    return None
