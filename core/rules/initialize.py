"""Initialize-time rules: combinations DeepSpeed accepts while parsing but refuses when
``deepspeed.initialize`` builds the engine (``runtime/engine.py``, ``zero/stage_1_and_2.py`` of DeepSpeed
0.19.8). Each was reproduced with ``deepspeed.initialize`` on the CPU (tests/test_initialize_failures.py; the Apex
AMP ones, which 0.19.8 never reaches since it refuses ``amp`` while parsing, on 0.16.9 and 0.19.7 in
tests/test_amp_engine.py)."""

from __future__ import annotations

from collections.abc import Iterator

from core import effective, versions
from core.effective import pydantic_bool
from core.findings import Finding, Fix, FixOp, brief, join_path
from core.rules import torch_checks
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
    # a release without the key ignores it (another rule says so): the norm is computed as always
    reads_norm_switch = versions.key_known(ctx.version, "zero_optimization", "compute_grad_norm") is not False
    compute_grad_norm = lax_bool(zero.get("compute_grad_norm", True)) if reads_norm_switch else True
    clipping = lax_float(ctx.config.get("gradient_clipping",
                                        versions.recorded_default(ctx.version, "", "gradient_clipping")[1]))
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
    if compute_grad_norm is False and ctx.stage in (1, 2):
        yield from _compute_grad_norm_refusals(ctx)
    dtype, accum = model_dtype(ctx), _grad_accum_dtype(ctx) or model_dtype(ctx)
    # BF16_Optimizer is picked unless ``zero_cpu_offload()``, which is the CPU device only (NVMe is not)
    cpu_offload = ctx.meaning.offload_optimizer == "cpu"
    if (ctx.stage == 1 and dtype == "bf16" and accum == "fp32" and not cpu_offload
            and compute_grad_norm is False):
        yield Finding(
            "error", "engine.compute-grad-norm-bf16-stage1", "zero_optimization.compute_grad_norm",
            "compute_grad_norm=false does not support ZeRO stage 1 with bf16 parameters and fp32 gradient "
            "accumulation; deepspeed.initialize fails.",
            fix=set_fix("zero_optimization.compute_grad_norm", True), page="zero",
        )
    if ctx.stage == 0 and (refusal := _dtype_mix_refusal(ctx, dtype)):
        removable = _dtype_mix_refusal(ctx, dtype, written=None) is None
        yield Finding(
            "error", "engine.dtype-mix", "data_types.grad_accum_dtype",
            f"Without ZeRO, DeepSpeed {ctx.version} cannot train in {dtype} while accumulating gradients in "
            f"{accum} (\"{refusal}\" at deepspeed.initialize).",
            suggestion="Use ZeRO stage 1 or more" + (", or remove data_types.grad_accum_dtype (the release's "
                                                     "default for this precision trains)." if removable else "."),
            fix=Fix("Remove data_types.grad_accum_dtype", (FixOp("delete", "data_types.grad_accum_dtype"),))
            if removable else None,
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
    if not _manages_accumulation(ctx) and ctx.meaning.deepcompile and versions.key_known(
            ctx.version, "", "managed_gradient_accumulation"):
        yield Finding(
            "error", "engine.managed-accumulation-deepcompile", "managed_gradient_accumulation",
            "managed_gradient_accumulation is false while DeepCompile is on (compile.deepcompile); "
            "deepspeed.initialize fails (\"managed_gradient_accumulation=False is not supported with DeepCompile\").",
            suggestion="Remove managed_gradient_accumulation (DeepSpeed then manages accumulation), or turn "
            "compile.deepcompile off.",
            fix=delete_fix("managed_gradient_accumulation"), page="batch",
        )
    # the engine raises only where it configures ZeRO's optimizer (_configure_zero_optimizer): stage 1 or more
    if lax_bool(zero.get("legacy_stage1")) is True and ctx.stage >= 1:
        yield Finding(
            "error", "engine.legacy-stage1", "zero_optimization.legacy_stage1",
            "legacy_stage1 (the old ZeRO stage 1) is no longer supported; deepspeed.initialize fails.",
            fix=Fix("Remove legacy_stage1", (FixOp("delete", "zero_optimization.legacy_stage1"),)), page="zero",
        )


def _dtype_mix_refusal(ctx: Context, dtype: str, written: str | bool | None = True) -> str | None:
    """The error ``deepspeed.initialize`` of the release raises without ZeRO for the trained ``dtype`` and the
    written ``data_types.grad_accum_dtype`` (``written=None``: as if it were not written), from the release's
    ``_do_optimizer_sanity_check`` (``versions.optimizer_wrapper``); None when it trains. Releases differ:
    0.16.0-0.18.4 wrap bf16 with an fp32 accumulation in BF16_Optimizer and 0.16.0-0.17.5 refuse a bf16 one; later
    ones the reverse."""
    accum = _grad_accum_dtype(ctx) if written is True else None
    if written is True and accum is None:
        return None
    outcome = versions.optimizer_wrapper(ctx.version, dtype, accum, 0)
    if outcome is None:  # a profile without the probe: the newest releases' rule
        mixed = accum is not None and accum != dtype
        return "unsupported mix of model_dtype and grad_accum_dtype" if mixed else None
    error, _, message = outcome.partition(": ")
    return message if message and error.endswith("Error") else None


def _compute_grad_norm_refusals(ctx: Context) -> Iterator[Finding]:
    """``compute_grad_norm`` false beside what ZeRO-1/2's optimizer refuses without the norm in the release (its
    assertions, ``versions.zero_optimizer_check``): optimizer offload (to the CPU or NVMe) and ZenFlow."""
    beside = [(where, check) for on, where, fragment in (
        (ctx.meaning.offload_optimizer in ("cpu", "nvme"), "zero_optimization.offload_optimizer",
         "does not support optimizer offload"),
        (ctx.meaning.zenflow, "zero_optimization.zenflow", "does not support ZenFlow"),
    ) if on and (check := versions.zero_optimizer_check(ctx.version, ctx.stage, fragment))]
    if beside:
        yield Finding(
            "error", "engine.compute-grad-norm-offload", "zero_optimization.compute_grad_norm",
            f"compute_grad_norm is false beside {' and '.join(where for where, _ in beside)}; ZeRO stage "
            f"{ctx.stage}'s optimizer refuses it at deepspeed.initialize ("
            + "; ".join(f'"{check}"' for _, check in beside) + ").",
            suggestion=f"Set compute_grad_norm back to true, or remove {' and '.join(w for w, _ in beside)}.",
            fix=set_fix("zero_optimization.compute_grad_norm", True), page="zero",
        )


def autocast_combinations(ctx: Context) -> Iterator[Finding]:
    """What ``deepspeed.initialize`` of the release refuses beside ``torch_autocast`` switched on (the assertions of
    its ``runtime/torch_autocast.py``, ``versions.torch_autocast_check``): fp16 or bf16 switched on too (0.17.2-0.18.2),
    ZeRO's quantized weights (every release with the section), a 16-bit communication_data_type (0.17.2-0.17.5)."""
    m = ctx.meaning
    if not m.torch_autocast or versions.key_known(ctx.version, "", "torch_autocast") is not True:
        return
    comm = ctx.config.get("communication_data_type")
    beside = (
        (m.fp16, "fp16.enabled", "torch autocast and fp16", set_fix("fp16.enabled", False)),
        (m.bf16, f"{m.bf16_section}.enabled", "torch autocast and bfloat16",
         set_fix(f"{m.bf16_section}.enabled", False)),
        (pydantic_bool(ctx.zero, "zero_quantized_weights", False), "zero_optimization.zero_quantized_weights",
         "torch autocast and zero quantized weights", set_fix("zero_optimization.zero_quantized_weights", False)),
        (comm is not None and canonical_dtype(comm) in ("fp16", "bf16"), "communication_data_type",
         "Communication data type must be float32", delete_fix("communication_data_type")),
    )
    for on, path, fragment, fix in beside:
        check = versions.torch_autocast_check(ctx.version, fragment) if on else None
        if check:
            yield Finding(
                "error", "engine.autocast-conflict", path,
                f"torch_autocast is on and so is {path}; DeepSpeed {ctx.version} refuses the pair at "
                f"deepspeed.initialize (\"{check}\").",
                suggestion=f"Use one of them: turn torch_autocast off, or {fix.description[0].lower()}"
                           f"{fix.description[1:]}.",
                fix=fix, page="precision",
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


def reduce_scatter_on(ctx: Context) -> bool:
    """``zero_optimization.reduce_scatter`` as DeepSpeed reads it (a pydantic bool, on by default)."""
    return effective.pydantic_bool(ctx.zero, "reduce_scatter", True)


#: Top-level keys ``deepspeed.initialize`` reads itself (every release 0.16-0.19.8): with both present it builds a
#: (data_parallel, sequence_parallel) device mesh of that shape (``dist.initialize_mesh_device``). DeepSpeed's
#: parser does not know data_parallel_size: the key check leaves it to ``sequence_mesh`` when both are written.
MESH_KEYS = ("data_parallel_size", "sequence_parallel_size")


def sequence_mesh(ctx: Context) -> Iterator[Finding]:
    """data_parallel_size beside sequence_parallel_size: the mesh they make must be the job's GPUs. A bigger one
    fails on every rank (RuntimeError), a smaller one on the ranks outside it (IndexError), and sizes that are no
    whole numbers fail building it (ValueError/TypeError); checked with 2-rank gloo jobs."""
    if not all(key in ctx.config for key in MESH_KEYS):
        return
    dp, sp = (ctx.config[key] for key in MESH_KEYS)
    bad = next((key for key, value in zip(MESH_KEYS, (dp, sp), strict=True)
                if isinstance(value, bool) or not isinstance(value, int) or value < 1), None)
    world = ctx.world_size
    if bad is not None:
        yield Finding(
            "error", "engine.sequence-mesh", bad,
            f"`{bad}` is {brief(ctx.config[bad])}: with data_parallel_size and sequence_parallel_size both written, "
            "deepspeed.initialize builds a device mesh of (data_parallel_size, sequence_parallel_size) ranks from "
            "them as written, and torch refuses a size that is no positive whole number.",
            suggestion="Write both as whole numbers whose product is the GPU count, or remove data_parallel_size "
            "(DeepSpeed then builds no mesh and derives the data-parallel ranks).",
            fix=delete_fix("data_parallel_size") if bad == "data_parallel_size" else None, page="advanced",
        )
        return
    if dp * sp == world:
        return
    bigger = dp * sp > world
    failure = (f"RuntimeError: Mesh should not be bigger than default world size {world}, but found {dp * sp} ranks!"
               if bigger else "IndexError on the ranks outside the mesh")
    meant = world // sp if world % sp == 0 else None
    yield Finding(
        "error", "engine.sequence-mesh", "data_parallel_size",
        f"data_parallel_size {dp} × sequence_parallel_size {sp} is a device mesh of {dp * sp} ranks, but the job has "
        f"{world} GPU{'' if world == 1 else 's'}: deepspeed.initialize builds that mesh when both keys are written "
        f"and fails ({failure}).",
        suggestion=(f"Set data_parallel_size to {meant} ({world} GPUs ÷ sequence_parallel_size {sp}), or remove it: "
                    if meant else "Remove data_parallel_size: ") + "DeepSpeed then derives the data-parallel ranks.",
        fix=set_fix("data_parallel_size", meant) if meant else delete_fix("data_parallel_size"), page="advanced",
    )


def predivide_factor_path(ctx: Context) -> str:
    """How the run reaches ``gradient_predivide_factor``: "unread" (ZeRO-1's reduce-scatter, no BF16_Optimizer:
    nothing reads it, any value trains), "compared" (ZeRO-2/3 with reduce_scatter on: initialize refuses any value
    but 1, ``engine.predivide-reduce-scatter``), else "divided" (the all-reduce divides by it at the first step)."""
    if ctx.stage in (1, 2, 3) and reduce_scatter_on(ctx) and not ctx.bf16_optimizer():
        return "unread" if ctx.stage == 1 else "compared"
    return "divided"


#: The parts of the ZeRO-2/3 optimizers' assertions on gradient scaling with reduce_scatter on that every release
#: words the same way (the profile's ``zero_optimizer_checks`` hold the whole messages).
PREDIVIDE_CHECK = "gradient_predivide_factor != 1.0 is not yet supported"
PRESCALE_CHECK = "pre-scale gradients is not yet supported"


def _zero_check(ctx: Context, fragment: str) -> str | None:
    """The release's ZeRO-optimizer assertion containing ``fragment`` for the config's stage, as it reads when it
    fails (its ``{}`` filled with "ZeRO-2"); None when the release has no such check for that stage."""
    text = versions.zero_optimizer_check(ctx.version, ctx.stage, fragment)
    return None if text is None else text.replace("{}", f"ZeRO-{ctx.stage}")


def gradient_scaling_reduce_scatter(ctx: Context) -> Iterator[Finding]:
    """``gradient_predivide_factor`` other than 1 and ``prescale_gradients`` on, which the ZeRO-2 and ZeRO-3
    optimizers refuse at ``deepspeed.initialize`` while ``reduce_scatter`` is on (its default); stage 1 and
    ``reduce_scatter: false`` take both."""
    if ctx.stage not in (2, 3) or not reduce_scatter_on(ctx):
        return
    where = f"with ZeRO stage {ctx.stage} and zero_optimization.reduce_scatter on" + (
        "" if "reduce_scatter" in ctx.zero else " (its default)")
    factor = ctx.config.get("gradient_predivide_factor", 1.0)
    # any value but 1 (a string too: misc.step-number leaves it to this check); prescale_gradients is read with
    # get_scalar_param and used as a Python truth value ("false" and "auto" are on: type.truthy-string and auto.kept
    # say so besides)
    prescale = ctx.config.get("prescale_gradients", False)
    refused = (
        # compared as written, as DeepSpeed compares it: a string is no 1.0 either ("auto": the auto rule)
        ("error", "engine.predivide-reduce-scatter", "gradient_predivide_factor", factor, PREDIVIDE_CHECK,
         factor != 1.0 and factor != "auto",
         "the default 1.0", "so that ZeRO all-reduces the gradients and divides them by the factor first"),
        ("error", "engine.prescale-reduce-scatter", "prescale_gradients", prescale, PRESCALE_CHECK,
         bool(prescale), "ZeRO then averages the gradients after reducing them", ""),
    )
    for severity, code, key, value, fragment, on, removed, kept in refused:
        if on and (check := _zero_check(ctx, fragment)):
            yield Finding(
                severity, code, key, f"{key} is {brief(value)} {where}; deepspeed.initialize fails (\"{check}\").",
                suggestion=f"Remove {key} ({removed}), or set zero_optimization.reduce_scatter to false"
                + (f" {kept}." if kept else "."),
                fix=delete_fix(key), page="precision",
            )


#: The parts of ZeRO optimizers' assertions on a config value that every release words the same way.
ALLGATHER_ALIGNMENT_CHECK = "allgather_bucket_size must be a multiple of nccl_start_alignment_factor"
MUON_REDUCE_SCATTER_CHECK = "Muon and reduce scatter cannot be used together"


def zero_optimizer_values(ctx: Context) -> Iterator[Finding]:
    """Values the ZeRO optimizer of the config's stage refuses when ``deepspeed.initialize`` builds it (its assertions
    in the release's profile, ``versions.zero_optimizer_check``): an odd ``allgather_bucket_size`` at stage 1-2 (its
    all-gather buffers are aligned to 2 elements), and Muon at stage 3 with ``reduce_scatter`` on (its default)."""
    size = lax_int(ctx.zero.get("allgather_bucket_size"))
    if size is not None and size % 2 and (check := _zero_check(ctx, ALLGATHER_ALIGNMENT_CHECK)):
        yield Finding(
            "error", "engine.allgather-bucket-alignment", "zero_optimization.allgather_bucket_size",
            f"allgather_bucket_size is {size}, an odd number; ZeRO stage {ctx.stage} aligns its all-gather buffers "
            f"to 2 elements and deepspeed.initialize fails (\"{check.replace('{}', '2')}\").",
            suggestion=f"Use an even size, e.g. {size + 1}.",
            fix=set_fix("zero_optimization.allgather_bucket_size", size + 1), page="zero",
        )
    muon = (ctx.meaning.optimizer_class or "").endswith("MuonWithAuxAdam")
    if muon and reduce_scatter_on(ctx) and (check := _zero_check(ctx, MUON_REDUCE_SCATTER_CHECK)):
        yield Finding(
            "error", "engine.muon-reduce-scatter", "zero_optimization.reduce_scatter",
            f"The Muon optimizer with ZeRO stage {ctx.stage} and zero_optimization.reduce_scatter on"
            + ("" if "reduce_scatter" in ctx.zero else " (its default)")
            + f"; deepspeed.initialize fails (\"{check}\").",
            suggestion="Set zero_optimization.reduce_scatter to false (ZeRO-3 then all-reduces the gradients), or use "
            "ZeRO stage 2.",
            fix=set_fix("zero_optimization.reduce_scatter", False), page="zero",
        )


def torch_scheduler_on_a_wrapper(ctx: Context) -> Iterator[Finding]:
    """A scheduler of ``torch.optim.lr_scheduler`` named in the config, which the engine builds on its own optimizer
    (``_scheduler_from_config(self.optimizer)``): where that is a DeepSpeed wrapper (a ZeRO optimizer at stage 1-3,
    the fp16/bf16 optimizer without ZeRO: ``versions.optimizer_wrapper``), torch refuses it ("... is not an
    Optimizer", TypeError). DeepSpeed's own schedulers take any optimizer."""
    from core.rules.optim import TORCH_SCHEDULERS
    from core.schema.optimizer import SCHEDULERS

    section = ctx.config.get("scheduler")
    name = section.get("type") if isinstance(section, dict) else None
    if not isinstance(name, str) or name in SCHEDULERS or name not in TORCH_SCHEDULERS:
        return
    if ctx.stage >= 1:
        wrapper = "the ZeRO optimizer"
    else:
        outcome = versions.optimizer_wrapper(ctx.version, model_dtype(ctx), _grad_accum_dtype(ctx), 0)
        if outcome in (None, "none") or "Error" in outcome:
            return  # the optimizer itself (fp32), or an error another rule reports (engine.dtype-mix)
        wrapper = f"the {model_dtype(ctx)} optimizer wrapper"
    yield Finding(
        "error", "engine.torch-scheduler-wrapped", "scheduler.type",
        f"scheduler.type is torch's {name}, which DeepSpeed builds on the optimizer it trains with: here {wrapper} "
        f"(ZeRO stage {ctx.stage}, {model_dtype(ctx)}), not a torch Optimizer, so deepspeed.initialize fails "
        f"(\"... is not an Optimizer\", TypeError).",
        suggestion="Use one of DeepSpeed's schedulers (WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle), or build "
        f"{name} in Python on the engine's optimizer (engine.optimizer) and step it yourself.",
        page="optimizer",
    )


def zenflow_offload(ctx: Context) -> Iterator[Finding]:
    """A ZenFlow section without ZeRO-1/2 optimizer offload, in the releases that read ``zero_optimization.zenflow``
    (0.17.5 on): at stage 1-2 the ZenFlow ZeRO optimizer raises "Zenflow must be used with cpu offload" at
    ``deepspeed.initialize`` (NVMe counts: below stage 3 it offloads to the CPU); at stage 0 there is no ZeRO
    optimizer, and the engine's ZenFlow step fails at the first step asking the plain optimizer for ZenFlow's state
    (AttributeError). ``null`` (and "auto") leave ZenFlow off; any object, ``{}`` too, turns it on."""
    if ctx.stage == 3 or not isinstance(ctx.zero.get("zenflow"), dict):
        return
    if versions.key_known(ctx.version, "zero_optimization", "zenflow") is not True:
        return  # refused as an unknown key where the release has no ZenFlow (keys.not-in-version)
    path = "zero_optimization.zenflow"
    if ctx.stage == 0:
        yield Finding(
            "error", "engine.zenflow-without-offload", path,
            "zero_optimization.zenflow is set without ZeRO (stage 0); ZenFlow drives the ZeRO-1/2 optimizer offloaded "
            "to the CPU, and without it training fails at the first step (AttributeError: the optimizer has no "
            "`zenflow_need_update`).",
            suggestion="Use ZeRO stage 1 or 2 with \"offload_optimizer\": {\"device\": \"cpu\"}, or remove zenflow.",
            fix=delete_fix(path), page="zero",
        )
        return
    offload = ctx.zero.get("offload_optimizer")
    refused = offload not in (None, "auto") and not isinstance(offload, dict)  # the type check reports it
    if ctx.meaning.offload_optimizer in ("cpu", "nvme") or refused:
        return
    # at the offload section, the missing piece: a generic type error of the zenflow section stays visible
    yield Finding(
        "error", "engine.zenflow-without-offload", "zero_optimization.offload_optimizer",
        f"zero_optimization.zenflow is set at ZeRO stage {ctx.stage} without optimizer offload; ZenFlow updates "
        "the parameters on the CPU, and deepspeed.initialize fails (\"Zenflow must be used with cpu offload\").",
        suggestion="Add \"offload_optimizer\": {\"device\": \"cpu\"} to zero_optimization, or remove zenflow.",
        fix=set_fix("zero_optimization.offload_optimizer.device", "cpu") if isinstance(offload, dict)
        else set_fix("zero_optimization.offload_optimizer", {"device": "cpu"}), page="zero",
    )


def zenflow_optimizer_params(ctx: Context) -> Iterator[Finding]:
    """ZenFlow at ZeRO-1/2 with the optimizer offloaded builds its own torch AdamW (``ZenFlowSelectiveAdamW``)
    with ``optimizer.params`` as keyword arguments, as written (every release with ZenFlow): a key torch's AdamW
    does not take (DeepSpeed's ``bias_correction``, ``adam_w_mode``, ``torch_adam``, ``fp32_optimizer_states``)
    raises TypeError at ``deepspeed.initialize``, and so does an optimizer section without ``params`` (None is
    passed with ``**``). Torch's AdamW keywords come from the recorded torch checks."""
    if not ctx.meaning.zenflow or ctx.stage not in (1, 2) or ctx.meaning.offload_optimizer not in ("cpu", "nvme"):
        return
    section = ctx.config.get("optimizer")
    if not isinstance(section, dict) or not isinstance(section.get("type"), str) or section["type"] == "auto":
        return  # no optimizer section (a client optimizer) or one the optimizer rules report
    params = section.get("params")
    why = (f"ZenFlow (ZeRO stage {ctx.stage}, optimizer offloaded) builds its own torch.optim.AdamW with "
           "optimizer.params as keyword arguments")
    if not isinstance(params, dict):
        if params is None:
            yield Finding(
                "error", "engine.zenflow-optimizer-params", "optimizer.params",
                f"{why}; without optimizer.params deepspeed.initialize fails (TypeError: argument after ** must be "
                "a mapping).",
                suggestion="Add \"params\": {} (or the learning rate and betas) to the optimizer section.",
                fix=set_fix("optimizer.params", {}), page="optimizer",
            )
        return  # a params value of another type is reported by the optimizer rules
    accepted = sorted(torch_checks.defaults("AdamW"))
    for key in params:
        if key in accepted:
            continue
        path = join_path("optimizer.params", key)
        yield Finding(
            "error", "engine.zenflow-optimizer-params", path,
            f"{why}, and torch's AdamW has no `{key}`: deepspeed.initialize fails (TypeError: unexpected keyword "
            f"argument '{key}').",
            suggestion=f"Remove `{key}` (torch's AdamW takes: {', '.join(accepted)}), or remove zenflow.",
            fix=delete_fix(path), page="optimizer",
        )


def partial_offload_optimizer(ctx: Context) -> Iterator[Finding]:
    """ZeRO-3 partial optimizer offload (``offload_optimizer.ratio`` below 1) with an optimizer other than
    DeepSpeedCPUAdam: the stage-3 optimizer asserts "Hybrid Optimizer Only Supports DeepSpeedCPUAdam" at
    ``deepspeed.initialize`` (the releases whose profile records the check). The class is ``core.effective``'s
    reading; a client optimizer or "auto" is not known here."""
    meaning = ctx.meaning
    if ctx.stage != 3 or meaning.offload_optimizer not in ("cpu", "nvme") \
            or meaning.optimizer_class in (None, effective.CPU_ADAM):
        return
    section = ctx.zero.get("offload_optimizer")
    raw = section.get("ratio", 1.0) if isinstance(section, dict) else 1.0
    ratio = None if raw == "auto" else lax_float(raw)  # pydantic float: "0.5" is 0.5; "auto" the default
    if ratio is None or not 0 <= ratio < 1:  # out of bounds: the parser refuses it (typecheck)
        return
    check = versions.zero_optimizer_check(ctx.version, 3, "Hybrid Optimizer Only Supports")
    if check is None:
        return
    yield Finding(
        "error", "engine.partial-offload-optimizer", "zero_optimization.offload_optimizer.ratio",
        f"offload_optimizer.ratio is {brief(raw)}: ZeRO-3 keeps part of the optimizer step on the GPU, which it "
        f"supports only with DeepSpeedCPUAdam, and this config builds {meaning.optimizer_class}; "
        f"deepspeed.initialize fails (\"{check}\").",
        suggestion="Use optimizer type Adam or AdamW without torch_adam (DeepSpeed then builds DeepSpeedCPUAdam), "
        "or remove ratio to offload the whole optimizer.",
        fix=delete_fix("zero_optimization.offload_optimizer.ratio"), page="zero",
    )


def autotp_fits(size: int, world_size: int, version: str) -> bool:
    """Whether DeepSpeed ``version`` builds AutoTP's groups of ``size`` on ``world_size`` GPUs: it reads
    ``autotp_size`` and it is above 1, then only a multiple of it (``autotp_world_size``)."""
    if size <= 1 or versions.key_known(version, "tensor_parallel", "autotp_size") is not True:
        return True
    return world_size % size == 0


def autotp_world_size(ctx: Context) -> Iterator[Finding]:
    """``tensor_parallel.autotp_size`` that does not divide the GPUs, in the releases that read it: ``deepspeed.
    initialize`` lays the ranks out as a (GPUs // autotp_size) x autotp_size mesh (``groups._init_tp_mesh_device``).
    With fewer GPUs than autotp_size the mesh is empty and initialize fails (AssertionError, proven on one rank);
    otherwise the mesh leaves the remainder out, and DeepSpeed's other group builder asserts divisibility
    (``_ensure_divisibility``)."""
    size = ctx.meaning.autotp_size
    if ctx.meaning.autotp_size_string or autotp_fits(size, ctx.world_size, ctx.version):
        return
    path = "tensor_parallel.autotp_size"
    if ctx.world_size < size:
        why = ("tensor parallelism needs at least that many; deepspeed.initialize cannot build the tensor-parallel "
               "groups and fails (AssertionError)")
    else:
        left = ctx.world_size % size
        why = (f"{size} does not divide it. DeepSpeed arranges the GPUs in tensor-parallel groups of {size}, which "
               f"leaves {left} GPU(s) outside every group, and its group builder asserts that autotp_size divides the "
               "world size")
    yield Finding(
        "error", "engine.autotp-world-size", path,
        f"`{path}` is {size} but the job runs on {ctx.world_size} GPU(s): {why}.",
        suggestion=f"Set autotp_size to a divisor of {ctx.world_size} (1 turns AutoTP off), or run on a multiple of "
        f"{size} GPUs.",
        page="advanced",
    )
