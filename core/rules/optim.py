"""Optimizer and scheduler rules, from the registries in ``core.schema.optimizer``.

DeepSpeed only lower-cases ``optimizer.type`` while parsing; names, parameters and
their values are checked when ``deepspeed.initialize`` builds the optimizer and the
scheduler. Those findings carry codes listed in ``INITIALIZE_TIME_CODES``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from core import versions
from core.effective import CPU_ADAM, effective
from core.findings import Finding, Fix, FixOp, brief, join_path
from core.rules import torch_checks
from core.rules.context import Context
from core.rules.fixes import closest_choice, delete_fix, guesser, nearest_whole, set_fix
from core.rules.precision import static_loss_scale
from core.schema.optimizer import (
    FORBIDDEN_OPTIMIZER_PARAMS,
    OPTIMIZERS,
    SCHEDULERS,
    TORCH_OPTIMIZER_PARAMS,
    TORCH_OPTIMIZERS,
    TORCH_SCHEDULER_PARAMS,
    TORCH_SCHEDULERS_NEED_OBJECTS,
    OptimizerSpec,
    Param,
    resolve_optimizer,
)

#: torch.optim optimizers ZeRO supports without ``zero_allow_untested_optimizer`` (zero/utils.py).
_TORCH_ZERO_SUPPORTED = frozenset({"Adam", "AdamW", "Adagrad"})

TORCH_SCHEDULERS: tuple[str, ...] = tuple(TORCH_SCHEDULER_PARAMS)


def _whole_number_for(param: Param, value: Any) -> int | None:
    """The whole number a float was meant as (``nearest_whole``), for a parameter that takes integers;
    None when the parameter takes floats, the float is not finite or beyond 2**53, or the rounded value is out of
    bounds."""
    if "integer" not in param.types or "number" in param.types:
        return None
    whole = nearest_whole(value)
    return whole if whole is not None and param.bound_problem(whole) is None else None


def _float_of_text(value: Any) -> float | None:
    """What Python's ``float()`` makes of a text (" 100", "1e3"), when it is a finite number; else None."""
    if not isinstance(value, str):
        return None
    try:
        read = float(value)
    except ValueError:
        return None
    return read if math.isfinite(read) else None


def _backend(ctx: Context) -> str:
    return ctx.meaning.optimizer_backend or "gpu"


def zenflow_cpu_adam(name: str, version: str, backend: str, zenflow: bool) -> bool:
    """Whether ``optimizer.type`` = ``name`` is built as ``ZenFlowCPUAdam``: ZenFlow on and the optimizer
    offloaded, where DeepSpeedCPUAdam would be (``get_optimizer_configuration``)."""
    spec = resolve_optimizer(name, version)
    return zenflow and backend == "cpu" and isinstance(spec, OptimizerSpec) \
        and spec.implementations.get("cpu") == CPU_ADAM


def zero_tested(name: str, version: str, backend: str, zenflow: bool = False) -> bool:
    """Whether ZeRO runs the optimizer ``optimizer.type`` = ``name`` selects in ``version`` without
    ``zero_allow_untested_optimizer`` (True for a name that selects nothing: another rule reports it). With ZenFlow
    on (``zenflow``) an offloaded Adam is ``ZenFlowCPUAdam``, which the release's own list may lack."""
    if zenflow_cpu_adam(name, version, backend, zenflow):
        return versions.zero_supported_optimizer(version, "ZenFlowCPUAdam") is not False
    spec = resolve_optimizer(name, version)
    if isinstance(spec, OptimizerSpec):
        return spec.zero_supported or backend == "cpu"
    return spec is None or spec in _TORCH_ZERO_SUPPORTED


def untested_with_zero(config: Mapping[str, Any], version: str) -> str | None:
    """The ``optimizer.type`` that ``config`` runs under ZeRO (stage 1-3, as ``version`` reads it) though ZeRO was
    not tested with it and ``zero_allow_untested_optimizer`` is off: what ``deepspeed.initialize`` refuses and
    ``optimizer.untested-with-zero`` reports; None otherwise (no optimizer, "auto", ZeRO off, allowed, tested).
    Make it fit and the Plan page's adoption ask it before they turn ZeRO on."""
    section = config.get("optimizer")
    name = section.get("type") if isinstance(section, Mapping) else None
    meaning = effective(config, version)
    if not isinstance(name, str) or name == "auto" or meaning.stage == 0 or meaning.zero_allow_untested_optimizer \
            or zero_tested(name, version, meaning.optimizer_backend or "gpu", meaning.zenflow):
        return None
    return name


def _not_object(code: str, key: str, section: Any, suggestion: str | None) -> Finding:
    """The error for an ``optimizer`` or ``scheduler`` section that is not an object."""
    return Finding(
        "error", code, key,
        f"`{key}` is {brief(section)}; DeepSpeed fails reading it (it expects an object with type and params).",
        suggestion=suggestion, fix=delete_fix(key), page="optimizer",
    )


def _params_not_object(ctx: Context, section: str, params: Any, example: str) -> Finding:
    """The error for an ``optimizer`` or ``scheduler`` section whose ``params`` is not an object (``"auto"``
    included: the HF Trainer fills keys inside it, never a whole section)."""
    path = f"{section}.params"
    hf = (" The HF Trainer fails before that: it fills the \"auto\" values inside params and calls .get on it "
          "(AttributeError).") if ctx.is_hf else ""
    # DeepSpeedConfig reads the optimizer's params (its lr); the scheduler's only reach cls(optimizer, **params)
    when = "fails reading it" if section == "optimizer" else "fails building the scheduler in deepspeed.initialize"
    return Finding(
        "error", f"{section}.params-not-object", path,
        f"{path} is {brief(params)}; DeepSpeed {when} (it expects an object of keyword arguments such as "
        f"{example}).{hf}",
        suggestion="Write the parameters as an object" + (" (each may be \"auto\")" if ctx.is_hf else "")
        + ", or {} for the defaults.",
        fix=set_fix(path, {}), page="optimizer",
    )


def optimizer(ctx: Context) -> Iterator[Finding]:
    """optimizer.type and optimizer.params as DeepSpeed parses and then builds them."""
    if "optimizer" not in ctx.config:
        return
    section = ctx.config["optimizer"]
    if not isinstance(section, dict):
        yield _not_object("optimizer.not-object", "optimizer", section,
                          "Remove it to pass your own optimizer, or write {\"type\": \"AdamW\", \"params\": {...}}.")
        return
    name = section.get("type")
    params = section.get("params")
    # DeepSpeed only reads optimizer.params when optimizer.type is set.
    if name is not None and params is not None and not isinstance(params, dict):
        yield _params_not_object(ctx, "optimizer", params, "{\"lr\": 0.0001}")
    if name is not None and isinstance(params, dict):
        yield from _forbidden_params(params)
    if name is None and ctx.is_hf:
        yield _hf_dummy_section(ctx, "optimizer")
        return
    if name is None:
        if params:
            yield Finding(
                "warning", "optimizer.no-type", "optimizer.type",
                "optimizer.params is set but optimizer.type is not, so DeepSpeed builds no optimizer and "
                "ignores the params.",
                suggestion="Set optimizer.type (e.g. AdamW).", fix=set_fix("optimizer.type", "AdamW"),
                page="optimizer",
            )
        return
    if name == "auto":
        return  # the "auto" rule reports it
    if not isinstance(name, str):
        yield Finding(
            "error", "optimizer.type-not-string", "optimizer.type",
            f"optimizer.type is {brief(name)}; DeepSpeed calls .lower() on it and fails. Write the name as a string.",
            fix=set_fix("optimizer.type", "AdamW"), page="optimizer",
        )
        return
    spec = resolve_optimizer(name, ctx.version)
    if spec is None:
        other = OPTIMIZERS.get(name.lower())
        releases = [r for r in versions.RELEASES if other and other.exists_in(r)]
        why = (f" It exists in DeepSpeed {releases[0]} – {releases[-1]} but not in {ctx.version}."
               if releases else "")
        # a real optimizer of other releases is no misspelling: the nearest name is another algorithm, whose
        # parameters differ (OneBitAdam's freeze_step is no NAdam parameter)
        known = [s.display_name for s in OPTIMIZERS.values() if s.exists_in(ctx.version)] + list(TORCH_OPTIMIZERS)
        guess = None if releases else closest_choice(name, known)
        if releases:
            advice = (f"Validate for a release that has it (DeepSpeed {releases[-1]}), or choose another optimizer "
                      "(AdamW, Adam, Lamb, Lion) and the parameters it takes.")
        elif guess:
            advice = f"Did you mean {brief(guess)}?"
        else:
            advice = "Use AdamW, Adam, Lamb, Lion, Adagrad or a torch.optim class name such as SGD."
        yield Finding(
            "error", "optimizer.unknown", "optimizer.type",
            f"DeepSpeed {ctx.version} does not know the optimizer {brief(name)}: it is neither one of DeepSpeed's "
            f"own (any case) nor a torch.optim class (exact case).{why} deepspeed.initialize fails "
            f"(\"{name} is not a supported DeepSpeed Optimizer\").",
            suggestion=advice,
            fix=set_fix("optimizer.type", guess) if guess else None, page="optimizer",
        )
        return
    if isinstance(params, dict):
        yield from _optimizer_params(ctx, name, spec, params)
    if isinstance(spec, OptimizerSpec) and spec.requires_dynamic_loss_scale and (found := static_loss_scale(ctx)):
        scale, path, why = found
        from_fp16 = path == "fp16.loss_scale"
        yield Finding(
            "error", "optimizer.lamb-static-loss-scale", path,
            f"{spec.display_name} needs dynamic loss scaling, but the loss scale is {scale:g} (static)"
            + (f": {why}" if why else "") + "; deepspeed.initialize fails (\"DeepSpeed lamb optimizer requires "
            "dynamic loss scaling\").",
            suggestion="" if from_fp16 else "Use another optimizer (AdamW, Lion), or fp16 with dynamic loss scaling.",
            fix=set_fix("fp16.loss_scale", 0, "Use dynamic loss scaling (loss_scale 0)") if from_fp16 else None,
            page="precision",
        )
    if ctx.stage > 0 and not zero_tested(name, ctx.version, _backend(ctx), ctx.meaning.zenflow) \
            and not ctx.meaning.zero_allow_untested_optimizer:
        what = (f"ZenFlowCPUAdam (what DeepSpeed {ctx.version} builds for {name} with ZenFlow and the optimizer "
                "offloaded)" if zenflow_cpu_adam(name, ctx.version, _backend(ctx), ctx.meaning.zenflow)
                else f"the {name} optimizer")
        yield Finding(
            "error", "optimizer.untested-with-zero", "zero_allow_untested_optimizer",
            f"ZeRO has not been tested with {what}; deepspeed.initialize refuses it unless "
            "zero_allow_untested_optimizer is true.",
            suggestion="Use AdamW/Adam, or set zero_allow_untested_optimizer: true to accept the risk.",
            fix=set_fix("zero_allow_untested_optimizer", True), page="optimizer",
        )


def _forbidden_params(params: dict[str, Any]) -> Iterator[Finding]:
    for key, message in FORBIDDEN_OPTIMIZER_PARAMS.items():
        if key in params:
            value = params[key]
            crash = not isinstance(value, int | float)  # DeepSpeed compares it with 0 while parsing
            yield Finding(
                "error", "optimizer.max-grad-norm-type" if crash else "optimizer.max-grad-norm",
                join_path("optimizer.params", key),
                f"{message}. " + ("DeepSpeed compares it with 0 while parsing and fails on "
                                  f"{brief(value)}." if crash else "deepspeed.initialize fails (ValueError)."),
                suggestion=f"Remove it and set gradient_clipping: {value if not crash else 1.0}.",
                fix=Fix("Move it to gradient_clipping", (
                    FixOp("delete", join_path("optimizer.params", key)),
                    FixOp("set", "gradient_clipping", value if not crash else 1.0),
                )),
                page="optimizer",
            )


def _torch_optimizer_params(name: str, params: dict[str, Any]) -> Iterator[Finding]:
    accepted = TORCH_OPTIMIZER_PARAMS.get(name, ())
    guess_for = guesser(params, accepted)
    for key, value in params.items():
        if key in FORBIDDEN_OPTIMIZER_PARAMS or value == "auto":
            continue
        path = join_path("optimizer.params", key)
        if key not in accepted:
            guess = guess_for(key)
            yield Finding(
                "error", "optimizer.unknown-param", path,
                f"torch.optim.{name} has no parameter `{key}`; deepspeed.initialize fails (unexpected keyword "
                "argument).",
                suggestion=f"Did you mean `{guess}`?" if guess else f"{name} takes: {', '.join(accepted)}.",
                fix=delete_fix(path), page="optimizer",
            )
        elif key == "lr" and isinstance(value, bool):
            yield Finding(  # Python's bool is an int: torch trains with 0 or 1
                "warning", "optimizer.param-bool", path,
                f"`{path}` is {str(value).lower()}; torch.optim.{name} reads it as the number {int(value)}.",
                suggestion="Write a number.", page="optimizer",
            )
        elif key == "lr" and not isinstance(value, int | float):
            yield Finding(
                "error", "optimizer.param-type", path,
                f"`{path}` is {brief(value)}; torch.optim.{name} needs a number and deepspeed.initialize fails.",
                page="optimizer",
            )


def _torch_refused(cls: str, params: dict[str, Any], flagged: set[str], kind: str = "optimizer") -> list[Finding]:
    """What torch's ``cls`` constructor (an optimizer, or with ``kind="scheduler"`` an LR scheduler) refuses in
    ``params`` (the keyword arguments DeepSpeed passes), one finding per parameter; a key in ``flagged`` already
    has an error and is not judged again."""
    if not torch_checks.known(cls, kind):
        return []
    module = "torch.optim" if kind == "optimizer" else "torch.optim.lr_scheduler"
    defaults = torch_checks.defaults(cls, kind)
    found: dict[str, Finding] = {}
    for refusal in torch_checks.refusals(cls, {k: v for k, v in params.items() if k not in flagged}, kind):
        culprits = [k for k in refusal.reads if k in params]
        path = join_path(f"{kind}.params", culprits[0]) if culprits else f"{kind}.params"
        if path in found:
            continue
        values = ", ".join(f"`{k}` = {brief(params[k])}" if k in params else f"`{k}` = {brief(defaults[k])} (default)"
                           for k in refusal.reads if k in params or k in defaults)
        found[path] = Finding(
            "error", f"{kind}.torch-raises", path,
            f"deepspeed.initialize builds {module}.{cls} with {values}, and its constructor raises "
            f"{refusal.error}: {refusal.message.splitlines()[0].rstrip('.')}.",
            suggestion=f"Change {', '.join(f'`{k}`' for k in culprits) or 'the parameters'}"
            + (f" (torch's default: {', '.join(f'`{k}` = {brief(defaults[k])}' for k in culprits if k in defaults)})."
               if any(k in defaults for k in culprits) else "."),
            page="optimizer",
        )
    if kind == "optimizer" and (closure := torch_checks.step_without_closure(cls)) is not None:
        found["optimizer.type"] = Finding(
            "error", "optimizer.torch-step-raises", "optimizer.type",
            f"torch.optim.{cls}'s step needs a closure that computes the loss again, and DeepSpeed's engine.step() "
            f"calls optimizer.step() without one: the first optimizer step raises {closure.error}: "
            f"{closure.message.rstrip('.')}.",
            suggestion="Use an optimizer that steps without a closure (AdamW, SGD, ...); "
            f"{cls} needs its own training loop around the optimizer.", page="optimizer",
        )
    if kind == "optimizer":
        for refusal in torch_checks.step_refusals(cls, {k: v for k, v in params.items() if k not in flagged}):
            key = refusal.reads[0]
            path = join_path("optimizer.params", key)
            if path in found:
                continue
            value = params[key]
            # a whole float where the class counts with an int (torch's Muon refuses ns_steps 5.0): the int was meant
            whole = int(value) if torch_checks.step_probe(value) in (1.0, -1.0) and isinstance(value, float) and \
                type(defaults.get(key)) is int else None
            meant = whole if whole is not None else defaults.get(key)
            found[path] = Finding(
                "error", "optimizer.torch-step-raises", path,
                f"`{path}` is {brief(value)}: torch.optim.{cls}'s constructor accepts it"
                + (" (Python's bool is an int)" if isinstance(value, bool) else "")
                + f", but its first optimizer step raises {refusal.error}: {refusal.message.rstrip('.')}"
                + (f" (DeepSpeed reads it as {whole} when it loads this file itself, a path given to "
                   "deepspeed.initialize or the launcher; a config passed as a dict, as the HF Trainer and Accelerate "
                   "pass it, keeps the float)." if whole is not None else "."),
                suggestion=f"Write {whole}." if whole is not None else f"Write a number (torch's default: "
                f"{brief(defaults[key])})." if key in defaults else "Write a number.",
                fix=set_fix(path, meant) if key in defaults else None, page="optimizer",
            )
    return list(found.values())


def _optimizer_params(ctx: Context, name: str, spec: OptimizerSpec | str, params: dict[str, Any]) -> Iterator[Finding]:
    if not isinstance(spec, OptimizerSpec):
        findings = list(_torch_optimizer_params(spec, params))
        flagged = {f.path.split(".", 2)[-1] for f in findings if f.severity == "error"}
        refused = _torch_refused(spec, params, flagged)
        errors = {f.path for f in refused}  # an error on the key says more than its warning (a bool lr torch refuses)
        yield from (f for f in findings if f.path not in errors)
        yield from refused
        return
    backend = _backend(ctx)
    accepted = {p.name: p for p in spec.params_for(backend)}  # type: ignore[arg-type]
    everything = {p.name: p for p in spec.params}
    # The constructor keywords of this release's class, from its profile (None: no signature recorded).
    keywords = versions.optimizer_keywords(ctx.version, spec.name, backend)
    # A key DeepSpeed pops off the params in this release; one it does not pop reaches the constructor
    # (fp32_optimizer_states before 0.19: FusedAdam and torch's AdamW raise TypeError on it).
    consumed = {k for k, p in accepted.items()
                if p.consumed and versions.optimizer_param_popped(ctx.version, k) is not False}
    if keywords is not None:
        accepted = {k: p for k, p in accepted.items() if k in keywords or k in consumed}
    else:  # torch's class (torch_adam) or one that picks its keys: none takes what DeepSpeed means to consume
        accepted = {k: p for k, p in accepted.items() if not p.consumed or k in consumed}
    refused: dict[str, Finding] = {}
    if ctx.meaning.torch_optimizer is not None:  # torch's constructor checks the values DeepSpeed passes on
        passed = {k: v for k, v in params.items() if k in accepted and k not in consumed}
        refused = {f.path: f for f in _torch_refused(ctx.meaning.torch_optimizer, passed, set())}
    guess_for = guesser(params, accepted)
    for key, value in params.items():
        if key in FORBIDDEN_OPTIMIZER_PARAMS or value == "auto":
            continue
        path = join_path("optimizer.params", key)
        param = accepted.get(key)
        if param is None:
            if not spec.params_complete or (keywords is not None and key in keywords):
                continue
            if versions.optimizer_picks_params(ctx.version, spec.name):
                yield Finding(
                    "warning", "keys.unknown-ignored", path,
                    f"Unknown key `{key}` in `optimizer.params`: DeepSpeed {ctx.version} builds {spec.display_name} "
                    "from the parameters it knows and silently ignores the others.",
                    suggestion=f"Accepted: {', '.join(sorted(accepted))}.", fix=delete_fix(path), page="optimizer",
                )
                continue
            if key in everything:
                where = {"gpu": "the fused GPU", "cpu": "the CPU (offload)", "torch": "the torch.optim"}[backend]
                message = (f"`{key}` is not accepted by {where} implementation of {spec.display_name} that this "
                           "config selects; deepspeed.initialize fails (TypeError).")
            else:
                message = (f"{spec.display_name} has no parameter `{key}`; deepspeed.initialize fails "
                           "(unexpected keyword argument).")
            guess = guess_for(key)
            yield Finding(
                "error", "optimizer.unknown-param", path, message,
                suggestion=f"Did you mean `{guess}`?" if guess else f"Accepted: {', '.join(sorted(accepted))}.",
                fix=Fix(f"Rename to `{guess}`", (FixOp("move", path, to=f"optimizer.params.{guess}"),))
                if guess and guess not in params else delete_fix(path),
                page="optimizer",
            )
            continue
        found = _param_value(param, value, path, "optimizer", (spec.name, backend, key) in _CPP_BOOL_PARAMS,
                             class_name=ctx.meaning.optimizer_class)
        if path in refused:  # torch's own refusal says more than the schema's bound or type; keep their fix
            fix = next((f.fix for f in found if f.fix is not None), None)
            if fix is not None and refused[path].fix is None:
                refused[path] = replace(refused[path], fix=fix)
            continue
        yield from found
    yield from refused.values()


#: Boolean parameters a CPU optimizer hands to its C++ kernel as a ``bool`` (``DeepSpeedCPUAdam.step`` passes
#: ``group["bias_correction"]`` to ``adam_update``): pybind converts a number or null there and refuses
#: anything else (TypeError at the first optimizer step). ``adam_w_mode`` of ``Adam`` reaches ``create_adam`` the
#: same way at deepspeed.initialize (AdamW's is forced to true: ``name == ADAMW_OPTIMIZER or adam_w_mode``). Every
#: other boolean parameter is used as a Python truth value (``1 if group["bias_correction"] else 0`` in the fused
#: kernels, ``if amsgrad:``, torch.optim).
_CPP_BOOL_PARAMS = frozenset({("adam", "cpu", "bias_correction"), ("adamw", "cpu", "bias_correction"),
                              ("adam", "cpu", "adam_w_mode")})


def _param_value(param: Param, value: Any, path: str, kind: str, cpp_bool: bool = False, checked: bool = True,
                 release: str = "", class_name: str | None = None) -> Iterator[Finding]:
    """Type, length, choice and bound findings of one optimizer/scheduler parameter. ``checked=False``: the
    release's scheduler does not check this parameter and uses any number as it is, so a number of the wrong
    kind or out of range is a warning (type.unchecked), not an initialize-time error."""
    default = param.default_for(class_name)  # torch.optim.AdamW's weight_decay is 0.01, not 0
    if isinstance(value, bool) and not param.type_ok(value) and param.type_ok(int(value)):
        # Python's bool is an int: the optimizer trains with 0 or 1, a scheduler's isinstance(value, int) passes
        yield Finding(
            "warning", f"{kind}.param-bool", path,
            f"`{path}` is {str(value).lower()}; the {kind} reads it as the number {int(value)}"
            + (" and trains with it." if kind == "optimizer" else "."),
            suggestion="Write a number" + (f" (default {brief(default)})." if default is not None else "."),
            fix=set_fix(path, default) if default is not None else None, page="optimizer",
        )
        if kind == "optimizer":
            return
        value = int(value)
    elif kind == "optimizer" and "boolean" in param.types and not param.type_ok(value) and not (
        cpp_bool and not (value is None or isinstance(value, int | float))
    ):
        yield Finding(
            "warning", "optimizer.param-truthy", path,
            f"`{path}` is {brief(value)}, not true or false; DeepSpeed passes it on and the optimizer uses its "
            f"truth value, so it counts as {str(bool(value)).lower()}.",
            suggestion="Write true or false.", fix=set_fix(path, bool(value)), page="optimizer",
        )
        return
    if param.float_read and (read := _float_of_text(value)) is not None:
        meant = int(read) if read.is_integer() else read
        yield Finding(
            "warning", f"{kind}.param-text", path,
            f"`{path}` is the text {brief(value)}; DeepSpeed {release} reads it with float() as {brief(read)}.",
            suggestion=f"Write the number {brief(meant)}.", fix=set_fix(path, meant), page="optimizer",
        )
        if param.bound_problem(read) is None:
            return
        value = read  # judged as the number DeepSpeed reads
    number = isinstance(value, int | float) and not isinstance(value, bool)
    whole = _whole_number_for(param, value)
    if whole is not None:
        suggestion, fix = f"Write {whole}.", set_fix(path, whole)
    else:
        suggestion = f"Default: {brief(default)}." if default is not None else param.description
        fix = set_fix(path, default) if default is not None else None
    if not checked and number and (not param.type_ok(value) or param.bound_problem(value)):
        yield Finding(
            "warning", "type.unchecked", path,
            f"`{path}` is {brief(value)} ({param.bound_problem(value) or 'expected ' + ' or '.join(param.types)}); "
            f"DeepSpeed {release} does not check it and uses the number as it is.",
            suggestion=suggestion, fix=fix, page="optimizer",
        )
        return
    if not param.type_ok(value):
        if whole is not None and whole == value:
            # DeepSpeed opens a config path with hjson, which reads 1000.0 as the integer 1000; a dict keeps it.
            message = (
                f"`{path}` is {brief(value)}; it must be an integer. DeepSpeed reads it as {whole} when it loads this "
                "file itself (a path given to deepspeed.initialize or the launcher), but a config passed as a "
                "dict (the HF Trainer, Accelerate, deepspeed.initialize(config=dict)) keeps the float and "
                "deepspeed.initialize fails."
            )
        else:
            message = f"`{path}` is {brief(value)}; it must be {' or '.join(param.types)}. deepspeed.initialize fails."
        yield Finding("error", f"{kind}.param-type", path, message, suggestion=suggestion, fix=fix, page="optimizer")
        return
    if param.length is not None and isinstance(value, list | tuple) and len(value) != param.length:
        yield Finding(
            "error", f"{kind}.param-type", path,
            f"`{path}` has {len(value)} values; it must have {param.length}.",
            fix=set_fix(path, list(default)) if default is not None else None, page="optimizer",
        )
        return
    if param.item_range is not None and isinstance(value, list | tuple) and (bad := next(
            ((i, v) for i, v in enumerate(value) if not isinstance(v, int | float)),  # a bool converts, as 1.0
            None)):
        yield Finding(
            "error", f"{kind}.param-type", path,
            f"`{path}[{bad[0]}]` is {brief(bad[1])}; every value must be a number. "
            + ("DeepSpeed passes them to the optimizer's C++ kernel, which refuses anything else (TypeError: at the "
               "first step for the fused Adam, at deepspeed.initialize for the CPU Adam of ZeRO-Offload)."
               if kind == "optimizer" else
               "The scheduler computes each parameter group's learning rate from it, and deepspeed.initialize "
               "fails (TypeError)."),
            suggestion=f"Default: {brief(default)}." if default is not None else "",
            # a list default (betas) is written as a list; a number (a scheduler's lr) stands for every group
            fix=set_fix(path, list(default) if isinstance(default, list | tuple) else default)
            if default is not None else None, page="optimizer",
        )
        return
    if param.meta.choices and value not in param.meta.choices:
        yield Finding(
            "warning", f"{kind}.param-choice", path,
            f"`{path}` is {brief(value)}; expected one of {', '.join(map(brief, param.meta.choices))}.",
            fix=set_fix(path, default) if default is not None else None, page="optimizer",
        )
    problem = param.bound_problem(value)
    if problem and not checked:  # a list of numbers, one out of range: as for one number above
        yield Finding(
            "warning", "type.unchecked", path,
            f"`{path}` is {brief(value)} ({problem}); DeepSpeed {release} does not check it and uses the numbers as "
            "they are.", suggestion=suggestion, fix=fix, page="optimizer",
        )
    elif problem:
        yield Finding(
            "error" if kind == "scheduler" else "warning",
            f"{kind}.param-range", path, f"{problem}.",
            suggestion=f"Default: {brief(default)}." if default is not None else "",
            fix=set_fix(path, default) if default is not None else None, page="optimizer",
        )


def _hf_dummy_section(ctx: Context, section: str) -> Finding:
    """An optimizer or scheduler section without a type for the HF Trainer: transformers' ``deepspeed_optim_sched``
    only asks whether the key is there, hands DeepSpeed a DummyOptim / DummyScheduler for it, and DeepSpeed, which
    builds none without a type, trains with neither."""
    failure = ("deepspeed.initialize fails (\"zero stage N requires an optimizer\"; without ZeRO the first backward: "
               "\"must provide optimizer during init in order to use backward\")" if section == "optimizer" else
               "the first step fails (\"'DummyScheduler' object has no attribute 'get_last_lr'\")")
    return Finding(
        "error", f"hf.{section}-no-type", f"{section}.type",
        f"The {section} section has no type. The HF Trainer sees the section and leaves the {section} to DeepSpeed "
        f"(a placeholder in its place), DeepSpeed builds none without a type, and {failure}.",
        suggestion=f"Remove the {section} section (the Trainer then builds its own from TrainingArguments), or set "
                   f"{section}.type.",
        fix=delete_fix(section), page="optimizer",
    )


def scheduler(ctx: Context) -> Iterator[Finding]:
    """scheduler.type and scheduler.params as the engine builds them: cls(optimizer, **params)."""
    if "scheduler" not in ctx.config:
        return
    section = ctx.config["scheduler"]
    if not isinstance(section, dict):
        yield _not_object("scheduler.not-object", "scheduler", section, None)
        return
    name = section.get("type")
    if name is None and ctx.is_hf:
        yield _hf_dummy_section(ctx, "scheduler")
        return
    if name is None or name == "auto":
        if section.get("params"):
            yield Finding(
                "warning", "scheduler.no-type", "scheduler.type",
                "scheduler.params is set but scheduler.type is not, so DeepSpeed builds no scheduler.",
                fix=set_fix("scheduler.type", "WarmupLR"), page="optimizer",
            )
        return
    if not isinstance(name, str) or (name not in SCHEDULERS and name not in TORCH_SCHEDULERS):
        guess = closest_choice(str(name), list(SCHEDULERS) + list(TORCH_SCHEDULERS))
        yield Finding(
            "error", "scheduler.unknown", "scheduler.type",
            f"DeepSpeed does not recognize the LR scheduler {brief(name)} (names are case-sensitive); "
            "deepspeed.initialize fails.",
            suggestion=f"Did you mean {brief(guess)}?" if guess else f"Use one of {', '.join(SCHEDULERS)}.",
            fix=set_fix("scheduler.type", guess) if guess else None, page="optimizer",
        )
        return
    if name in TORCH_SCHEDULERS_NEED_OBJECTS:
        yield Finding(
            "error", "scheduler.needs-objects", "scheduler.type",
            f"torch's {name} needs Python objects (functions or schedulers) as arguments, which a JSON config "
            "cannot hold; deepspeed.initialize fails.",
            suggestion="Build this scheduler in Python and pass it to deepspeed.initialize(lr_scheduler=...).",
            page="optimizer",
        )
        return
    spec = SCHEDULERS.get(name)
    params = section.get("params")
    if "params" not in section or params is None:
        yield Finding(
            "error", "scheduler.params-missing", "scheduler.params",
            f"scheduler.params is {'missing' if 'params' not in section else 'null'}; the engine calls "
            f"{name}(optimizer, **params) and fails.",
            suggestion="Write the parameters, or {} for the defaults.", fix=set_fix("scheduler.params", {}),
            page="optimizer",
        )
        params = {}
    if not isinstance(params, dict):
        yield _params_not_object(ctx, "scheduler", params, "{\"warmup_num_steps\": 1000}")
        return
    if spec is None:
        yield from _torch_scheduler_params(name, params)
        return
    guess_for = guesser(params, [p.name for p in spec.params])
    for key, value in params.items():
        path = join_path("scheduler.params", key)
        param = spec.param(key)
        if param is None:
            guess = guess_for(key)
            yield Finding(
                "error", "scheduler.unknown-param", path,
                f"{name} has no parameter `{key}`; deepspeed.initialize fails (unexpected keyword argument).",
                suggestion=f"Did you mean `{guess}`?" if guess else
                f"{name} takes: {', '.join(p.name for p in spec.params)}.",
                fix=Fix(f"Rename to `{guess}`", (FixOp("move", path, to=f"scheduler.params.{guess}"),))
                if guess and guess not in params else delete_fix(path),
                page="optimizer",
            )
        elif key == "warmup_max_lr" and value is None and name in ("WarmupLR", "WarmupDecayLR"):
            yield from _null_peak(ctx.version, name, path)
        elif value != "auto" and key not in versions.scheduler_unread(ctx.version, name):
            checks = versions.scheduler_checks(ctx.version, name)
            checked = checks is None or any(check.startswith(f"{key} must") for check in checks)
            yield from _param_value(param, value, path, "scheduler", checked=checked, release=ctx.version)
    for required in spec.required:
        if required not in params:
            yield Finding(
                "error", "scheduler.missing-param", f"scheduler.params.{required}",
                f"{name} needs `{required}`, which is not set; deepspeed.initialize fails.",
                suggestion=spec.param(required).description if spec.param(required) else "",
                page="optimizer",
            )
    if name in ("WarmupDecayLR", "WarmupCosineLR"):
        total, warm = params.get("total_num_steps"), params.get("warmup_num_steps", 1000)
        if isinstance(total, int | float) and isinstance(warm, int | float) and total < warm:
            yield Finding(
                "warning", "scheduler.total-below-warmup", "scheduler.params.total_num_steps",
                f"total_num_steps ({total}) is below warmup_num_steps ({warm}): training ends during warm-up.",
                page="optimizer",
            )


def _null_peak(version: str, name: str, path: str) -> Iterator[Finding]:
    """A null warmup_max_lr: the optimizer's lr where the release reads it so, else refused at initialize."""
    from core.lr_schedules import null_peak_is_lr

    if not null_peak_is_lr(version):
        yield Finding(
            "error", "scheduler.param-type", path,
            f"`{path}` is null; DeepSpeed {version}'s {name} does not read it as the optimizer's lr (0.17.2 and "
            "later do) and subtracts it: deepspeed.initialize fails (TypeError).",
            suggestion="Give the peak learning rate, or leave the key out for the release's default.",
            fix=delete_fix(path), page="optimizer",
        )


def _torch_scheduler_params(name: str, params: dict[str, Any]) -> Iterator[Finding]:
    accepted, required = TORCH_SCHEDULER_PARAMS[name]
    yield from _torch_refused(name, {k: v for k, v in params.items() if k in accepted}, set(), "scheduler")
    guess_for = guesser(params, accepted)
    for key in params:
        if key not in accepted:
            path = join_path("scheduler.params", key)
            guess = guess_for(key)
            yield Finding(
                "error", "scheduler.unknown-param", path,
                f"torch's {name} has no parameter `{key}`; deepspeed.initialize fails (unexpected keyword argument).",
                suggestion=f"Did you mean `{guess}`?" if guess else f"{name} takes: {', '.join(accepted)}.",
                fix=delete_fix(path), page="optimizer",
            )
    for key in required:
        if key not in params:
            yield Finding(
                "error", "scheduler.missing-param", join_path("scheduler.params", key),
                f"torch's {name} needs `{key}`, which is not set; deepspeed.initialize fails.", page="optimizer",
            )
