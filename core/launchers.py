"""Exports for the launchers that read a DeepSpeed config: the HF Trainer (with matching TrainingArguments),
accelerate and Lightning (each with the changes its own checks require), and ready-to-paste launch snippets.

Pure functions (data in, data out); tests/test_export.py feeds every export to the library's own code.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from core.autofill import (
    ACCELERATE_ACCUMULATION,
    ACCELERATE_FILLS,
    ACCELERATE_LAUNCH_FLAGS,
    ACCELERATE_PLUGIN_PATHS,
    ACCELERATE_VARIABLES,
    AUTO,
    FILLED_FROM,
    HF_DEFAULTS,
    HF_TRAINER_FIELDS,
    TRAINING_VALUES,
    AutoFillError,
    find_auto,
    resolve_auto,
    scheduler_peak,
)
from core.batch import (
    BATCH_KEYS,
    batch_run,
    effective_world_size,
    positive_whole,
    reads_sequence_parallel,
    runs_elastic,
    sequence_parallel_degree,
    whole,
)
from core.effective import effective
from core.findings import brief, delete_path, get_path, is_number, set_path, split_path
from core.migrate import zero_section_form
from core.rules.context import Context, lax_bool
from core.schema.base import DEFAULT_VERSION
from core.schema.optimizer import SCHEDULERS
from core.schema.root import DeepSpeedConfig
from core.schema.walk import release_default, resolve

#: How the HF Trainer export keeps the config and TrainingArguments in agreement.
HF_MODES = ("auto", "match")


def _short(value: float | Fraction) -> str:
    """A number in a note, compactly (an integer beyond float range as written, a fraction beyond it too)."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            value = value.numerator
        elif abs(value) > 2**53:
            return str(value)
        else:
            value = float(value)
    return str(value) if isinstance(value, int) and abs(value) > 2**53 else f"{value:g}"


#: Trainer-filled counts the config may write as a whole float, which the Trainer's arguments need as ints.
_COUNTS = ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "scheduler.params.warmup_num_steps",
           "scheduler.params.total_num_steps")


def hf_training_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    """The TrainingArguments that agree with the config's explicit values (what the HF Trainer checks), each read
    as DeepSpeed reads it: ``"bf16": {"enabled": 1}`` is bf16 (``core.effective``), a micro batch of 4.0 is 4."""
    args: dict[str, Any] = {}
    micro = whole(config.get("train_micro_batch_size_per_gpu"))
    accum = whole(config.get("gradient_accumulation_steps"))
    if micro is not None:
        args["per_device_train_batch_size"] = micro
    if accum is not None:
        args["gradient_accumulation_steps"] = accum
    if is_number(config.get("gradient_clipping")):
        args["max_grad_norm"] = config["gradient_clipping"]
    lr = get_path(config, "optimizer.params.lr")
    peak = get_path(config, "scheduler.params.warmup_max_lr")
    if is_number(lr) or is_number(peak):
        args["learning_rate"] = lr if is_number(lr) else peak
    betas = get_path(config, "optimizer.params.betas")
    if isinstance(betas, list) and len(betas) == 2 and all(is_number(b) for b in betas):
        args["adam_beta1"], args["adam_beta2"] = betas
    for path, name in (("optimizer.params.eps", "adam_epsilon"), ("optimizer.params.weight_decay", "weight_decay")):
        if is_number(get_path(config, path)):
            args[name] = get_path(config, path)
    warmup = get_path(config, "scheduler.params.warmup_num_steps")
    total = get_path(config, "scheduler.params.total_num_steps")
    if whole(warmup) is not None:
        # the Trainer fills and compares max(1, warmup_steps); DeepSpeed warms up over max(2, n) steps, so 0 and 1
        # are the same schedule
        args["warmup_steps"] = max(1, whole(warmup))
    if whole(total) is not None:
        args["max_steps"] = whole(total)
    reading = effective(config)
    for section, enabled in (("fp16", reading.fp16), ("bf16", reading.bf16)):
        if enabled:
            args[section] = True
    return args


#: The config key each derived Trainer batch argument fills.
_HF_BATCH_KEYS = {"per_device_train_batch_size": "train_micro_batch_size_per_gpu",
                  "gradient_accumulation_steps": "gradient_accumulation_steps"}


def hf_trainer_export(config: Mapping[str, Any], mode: str = "auto", trainer_values: Mapping[str, Any] | None = None,
                      world_size: int | None = None,
                      version: str | None = None) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(config, TrainingArguments keyword arguments, notes) that the HF Trainer accepts together.

    ``mode`` "auto": every field the Trainer fills that the config sets becomes "auto", and the arguments carry
    the values (same training, one place to change them). "match": the config keeps its values and the
    arguments repeat them. Either way train_batch_size becomes "auto" (the Trainer computes it from the GPU
    count it is launched on); on ``world_size`` GPUs the arguments carry the micro batch and accumulation
    DeepSpeed derives from it, so the Trainer trains the same global batch. A warm-up peak that differs from the
    learning rate follows the learning rate (the Trainer requires them equal), which a note says.
    ``trainer_values`` are TrainingArguments for what the config does not say (its "auto" batch: e.g. the
    per-device batch the memory estimate assumed); a batch argument whose key the config lacks is written into it
    too, since accelerate writes a missing accumulation as 1 whatever the argument says. ``version``: the DeepSpeed
    release the job runs (None: the newest), which decides what the batch keys mean (its sequence parallelism, its
    elastic training, which replaces the written micro batch and accumulation)."""
    if mode not in HF_MODES:
        raise ValueError(f"mode must be one of {', '.join(HF_MODES)}, got {mode!r}")
    args = hf_training_arguments(config)
    elastic = runs_elastic(config, version or DEFAULT_VERSION)
    derived = {} if not (elastic or is_number(config.get("train_batch_size"))) else {  # else both count 1
        name: value for name, value in _batch_deepspeed_derives(config, world_size, version).items()
        if elastic or name not in args}  # elastic training ignores the written ones
    args |= derived
    for name, value in (trainer_values or {}).items():
        args.setdefault(name, value)  # what the config leaves to the Trainer ("auto"), as the user plans it
    assumed = [name for name in with_assumed_precision(config, args) if name not in args]
    args |= dict.fromkeys(assumed, True)
    out = copy.deepcopy(dict(config))
    # in the config too: accelerate writes a missing accumulation as 1, which contradicts an argument of 4
    given = {name: value for name, value in (trainer_values or {}).items()
             if name in _HF_BATCH_KEYS and _HF_BATCH_KEYS[name] not in config and args.get(name) == value}
    for name, value in (derived | given).items():
        out[_HF_BATCH_KEYS[name]] = value
    notes: list[str] = []
    missing = object()
    for path in HF_TRAINER_FIELDS:
        value = get_path(out, path, missing)
        if value is missing or value == AUTO:
            continue
        if mode == "auto" or path == "train_batch_size":
            set_path(out, path, AUTO)
            continue
        # "match": the Trainer compares each value with its argument by ==, so a spelling DeepSpeed reads the same
        # way but the Trainer does not ("true", 4.0 is fine, "4" is not a count) is written as the argument is
        canonical = (lax_bool(value) if path.endswith(".enabled") else whole(value) if path in _COUNTS else value)
        if canonical is not None and (type(canonical) is not type(value) or canonical != value):
            set_path(out, path, canonical)
            notes.append(f"{path} {json.dumps(value)} is written as {json.dumps(canonical)}: the same to DeepSpeed, "
                         "and the form the HF Trainer compares with its argument.")
    warmup = whole(get_path(out, "scheduler.params.warmup_num_steps"))
    if warmup is not None and warmup < 1:
        set_path(out, "scheduler.params.warmup_num_steps", 1)
        notes.append(f"scheduler.params.warmup_num_steps {warmup} is written as 1: the HF Trainer fills and compares "
                     "at least 1 warm-up step, and DeepSpeed warms up over max(2, warmup_num_steps) steps, so the "
                     "schedule is the same.")
    _require_zero_section(out, notes)
    notes += [f'{name}=True passed to the Trainer: {name}.enabled is "auto" and the app assumed {name} (the memory '
              f"figures and the other launchers' files), while the Trainer fills \"auto\" from its {name} argument, "
              "false by default, and would train in fp32." for name in assumed]
    total = config.get("train_batch_size")
    if derived:
        source = "elastic training" if elastic else f"train_batch_size {_short(total)}"
        notes.append(", ".join(f"{_HF_BATCH_KEYS[name]} {value}" for name, value in derived.items())
                     + f" written (what DeepSpeed derives from {source} on {world_size} "
                     "GPUs) and passed to the Trainer: without it the Trainer uses its default, and accelerate "
                     f"writes a missing gradient_accumulation_steps as {ACCELERATE_ACCUMULATION}, which trains "
                     "another global batch or makes DeepSpeed refuse the batch sizes.")
    elif is_number(total) and not elastic:
        notes.extend(_trainer_batch_differs(config, args, total, world_size, version))
    sp = sequence_parallel_degree(dict(config)) if reads_sequence_parallel(version) else None
    if sp is not None:
        notes.append(f"sequence_parallel_size {sp}: the HF Trainer runs DeepSpeed's sequence parallelism only with "
                     f"TrainingArguments(parallelism_config=ParallelismConfig(sp_backend=\"deepspeed\", sp_size={sp}, "
                     f"dp_replicate_size=GPUs ÷ {sp})) (transformers' Ulysses guide); accelerate then sets "
                     f"train_batch_size to micro batch × accumulation × GPUs ÷ {sp}. Without it DeepSpeed divides the "
                     "GPUs by sequence_parallel_size and refuses the Trainer's train_batch_size (micro batch × "
                     "accumulation × all GPUs).")
    if "scheduler" not in config and "lr_scheduler_type" not in args:
        # transformers' deepspeed_optim_sched builds the Trainer's own scheduler when the config has none, and its
        # default is "linear" (decay to 0); DeepSpeed without a scheduler keeps the learning rate constant
        args["lr_scheduler_type"] = "constant"
        notes.append('lr_scheduler_type "constant" passed to the Trainer: the config has no scheduler, so '
                     "DeepSpeed keeps the learning rate constant, while the HF Trainer would build its own default "
                     "scheduler (linear decay to 0) in its place.")
    peak = get_path(config, "scheduler.params.warmup_max_lr")
    trained = scheduler_peak(config)
    if trained is not None and args.get("learning_rate") != trained:
        # the scheduler overwrites the optimizer's lr from the first step: the peak is what trains
        lr = args["learning_rate"]
        args["learning_rate"] = trained
        if mode == "match":
            set_path(out, "optimizer.params.lr", trained)
        notes.append(f"learning_rate {_short(trained)} passed (scheduler.params.warmup_max_lr): "
                     f"{config['scheduler']['type']} overwrites the optimizer's lr {_short(lr)} from the first step "
                     "and warms up to warmup_max_lr, and the HF Trainer compares both with learning_rate; "
                     + ('optimizer.params.lr is "auto", filled with it' if mode == "auto" else
                        f"optimizer.params.lr is written as {_short(trained)}")
                     + ", so the Trainer trains the schedule DeepSpeed trains.")
    elif is_number(peak) and "learning_rate" in args and peak != args["learning_rate"]:
        set_path(out, "scheduler.params.warmup_max_lr", AUTO)
        notes.append(f"scheduler.params.warmup_max_lr {_short(peak)} differed from the learning rate "
                     f"{_short(args['learning_rate'])}; the HF Trainer requires them equal, so it now follows "
                     "learning_rate.")
    _elastic_takes_the_batch(out, version, notes, "the HF Trainer fills the batch keys")
    return out, args, notes


def _trainer_batch_differs(config: Mapping[str, Any], args: Mapping[str, Any], total: float,
                           world_size: int | None, version: str | None = None) -> list[str]:
    """The note for a written train_batch_size the export makes "auto" while the Trainer's batch arguments (its
    defaults for what is not passed) give another global batch on ``world_size`` GPUs; without a GPU count, the
    note that the Trainer computes it when its per-device batch is not passed. The ranks are accelerate's: GPUs ÷
    sequence_parallel_size with the ParallelismConfig the export asks for, only where DeepSpeed ``version`` reads
    sequence parallelism (0.16.x has no Ulysses for it, so there the Trainer counts every GPU, as DeepSpeed does)."""
    names = ("per_device_train_batch_size", "gradient_accumulation_steps")
    micro, accum = (args.get(name, HF_DEFAULTS[name]) for name in names)
    if not isinstance(world_size, int) or world_size < 1:
        return [] if "per_device_train_batch_size" in args else [
            f"train_batch_size {_short(total)} is now \"auto\" and the Trainer computes it as "
            "per_device_train_batch_size × gradient_accumulation_steps × GPUs, with its defaults (8 and 1) for what "
            f"is not set; set both so the product is {_short(total)}."]
    ranks = effective_world_size(dict(config), world_size, version)  # accelerate's data-parallel ranks
    # exact: a micro batch of 10**400 times a fractional rank count is no float
    trains = micro * accum * (int(ranks) if float(ranks).is_integer() else Fraction(ranks))
    if trains == total:
        return []
    defaults = [name for name in names if name not in args]
    return [f"train_batch_size {_short(total)} is now \"auto\", and the Trainer computes it from its arguments: "
            f"per_device_train_batch_size {micro} × gradient_accumulation_steps {accum} × {_short(ranks)} "
            f"data-parallel GPUs = {_short(trains)}"
            + (f" ({' and '.join(defaults)}: the Trainer's default{'s' * (len(defaults) > 1)})" if defaults else "")
            + f", so it trains a global batch of {_short(trains)}, not {_short(total)}. Pass arguments whose product "
            f"on {world_size} GPUs is {_short(total)} to train the written batch."]


def _zero_as_section(config: dict[str, Any], notes: list[str]) -> None:
    """The deprecated boolean ``zero_optimization`` as the section DeepSpeed reads it as: the HF Trainer, accelerate
    and Lightning all call ``.get`` on it and fail on a boolean."""
    change = zero_section_form(config)
    if change is not None:
        notes.append(f"{change}: the same to DeepSpeed, and the form the HF Trainer, accelerate and Lightning read "
                     "(they fail on the boolean).")


def _require_zero_section(config: dict[str, Any], notes: list[str]) -> None:
    """accelerate (under the HF Trainer too) refuses a config without a ``zero_optimization`` section; stage 0 is
    what DeepSpeed assumes without one, so writing it changes nothing else. A boolean becomes its section."""
    _zero_as_section(config, notes)
    if "zero_optimization" not in config:
        config["zero_optimization"] = {"stage": 0}
        notes.append('Added "zero_optimization": {"stage": 0} (DeepSpeed\'s default): accelerate, which the HF '
                     "Trainer launches through, refuses a config without that section.")


def _sequence_parallel_sizes(config: Mapping[str, Any] | None, world: int,
                             version: str | None = None) -> tuple[int, int] | None:
    """(sp_size, dp_replicate_size) of accelerate's ``ParallelismConfig`` for the config's sequence parallelism on
    ``world`` GPUs; None without sequence parallelism, in a DeepSpeed ``version`` that ignores it (0.16.x, which
    has no Ulysses module for accelerate either), or when it does not divide the GPUs (a rule reports that)."""
    sp = sequence_parallel_degree(dict(config)) if config is not None and reads_sequence_parallel(version) else None
    return (sp, world // sp) if sp is not None and world % sp == 0 else None


def hf_snippet(args: Mapping[str, Any], file_name: str = "ds_config.json",
               sequence_parallel: tuple[int, int] | None = None) -> str:
    """Python for the HF Trainer with these TrainingArguments (the DeepSpeed file passed by name);
    ``sequence_parallel`` (sp_size, dp_replicate_size) adds the ``ParallelismConfig`` the Trainer needs for it."""
    lines = ['    output_dir="out",', f'    deepspeed="{file_name}",']
    # strings in double quotes like the lines above (json.dumps is a valid Python literal for a str)
    lines += [f"    {name}={json.dumps(value) if isinstance(value, str) else repr(value)},"
              for name, value in args.items()]
    imports = "from transformers import Trainer, TrainingArguments\n"
    if sequence_parallel is not None:
        sp, dp = sequence_parallel
        imports = "from accelerate.utils import ParallelismConfig\n" + imports
        lines.append(f'    parallelism_config=ParallelismConfig(sp_backend="deepspeed", sp_size={sp}, '
                     f"dp_replicate_size={dp}),")
    return (imports + "\n"
            "args = TrainingArguments(\n" + "\n".join(lines) + "\n)\n"
            "trainer = Trainer(model=model, args=args, train_dataset=train_dataset)\n"
            "trainer.train()")


def export_training_values(config: Mapping[str, Any], values: Mapping[str, Any],
                           version: str | None = None) -> dict[str, Any]:
    """The training values the exports fill "auto" with (``resolve_auto`` names): the Trainer's defaults, then
    ``values`` (``launch_values``: what the app assumed), then what the config itself says (its explicit values,
    and the micro batch and accumulation DeepSpeed ``version`` derives from its batch keys), which wins. The
    Review page starts its "resolve auto" boxes from these, so its file and the exports agree."""
    explicit = hf_training_arguments(config)
    if "max_steps" in explicit:
        explicit["num_training_steps"] = explicit.pop("max_steps")
    # an "auto" micro batch is the Trainer's per-device batch; its accumulation, when not given, what DeepSpeed
    # derives from a written train_batch_size (given, it is the Trainer's, and a mismatch is said)
    trainer_micro = None if "gradient_accumulation_steps" in values else values.get("per_device_train_batch_size")
    explicit = _batch_deepspeed_derives(config, values.get("world_size"), version, trainer_micro) | explicit
    given = {**HF_DEFAULTS, **values, **explicit}
    return {k: v for k, v in given.items() if v is not None and k in TRAINING_VALUES}


def resolved_export(config: Mapping[str, Any], values: Mapping[str, Any], launcher_fills: tuple[str, ...] = (),
                    version: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """(config, notes) with every "auto" filled as the HF Trainer would fill it, for launchers that do not fill
    "auto" themselves (Lightning) or only some of them (accelerate: not the optimizer's or scheduler's). The
    "auto"s at ``launcher_fills`` stay: the launcher fills those from its own settings (accelerate's stage).

    ``values`` are training values (``core.autofill.resolve_auto`` names: the Trainer batch the app planned,
    world_size, num_training_steps, hidden_size …); the config's own explicit values and then the Trainer's
    defaults fill the rest. An "auto" that needs a value nobody gave (the model's hidden size for the bucket
    sizes) is removed, so DeepSpeed's default applies. Each filled or removed "auto" gets a note. ``version``: the
    DeepSpeed release whose reading of the batch keys derives the batch (None: the newest)."""
    autos = find_auto(config)
    if not autos:
        return copy.deepcopy(dict(config)), []
    given = export_training_values(config, values, version)
    out = copy.deepcopy(dict(config))
    notes: list[str] = []
    for _ in range(len(autos) + 1):
        try:
            resolved = resolve_auto(out, version=version, **given)
            break
        except AutoFillError as exc:
            # the Trainer would fill these from the model or launch; without the value DeepSpeed's default serves
            needs = [p for p in find_auto(out) if exc.param and _needs(p, exc.param)]
            if not needs:  # the config's own values disagree with each other: say so, keep it as it is
                return copy.deepcopy(dict(config)), [f'The "auto" values cannot be resolved: {exc}']
            for path in needs:
                delete_path(out, path)
                notes.append(f'Removed "auto" `{path}` (it needs {exc.param}, which the app does not know): '
                             + ("the scheduler has no default for it, so deepspeed.initialize refuses the file "
                                "until it is written." if _required_scheduler_param(out, path) else
                                "DeepSpeed's default applies."))
    else:  # pragma: no cover - each round removes at least one "auto"
        raise AutoFillError("could not resolve the \"auto\" values", None)
    kept = [path for path in launcher_fills if get_path(out, path, None) == AUTO]
    for path in kept:
        set_path(resolved, path, AUTO)
    in_lists = []
    for path in find_auto(resolved):  # "auto"s the Trainer leaves alone (stage-3 buckets below stage 3)
        if path in kept:
            continue
        keys = split_path(path) or [""]  # the path of the top-level key "" is "" (core.findings.join_path)
        if isinstance(keys[-1], int):  # removing a list item would shift the ones after it
            in_lists.append(path)
            continue
        if path:
            delete_path(resolved, path)
        else:
            resolved.pop("", None)
        notes.append(f'Removed "auto" `{path}`, which the HF Trainer leaves alone: DeepSpeed\'s default applies.')
    if in_lists:
        notes.append('Kept "auto" in a list as written (the HF Trainer fills no list item either; replace it '
                     "with a value): " + ", ".join(f"`{p}`" for p in in_lists))
    filled = [p for p in autos if p not in kept and get_path(resolved, p, None) not in (None, AUTO)
              and get_path(out, p, None) == AUTO]
    if filled:
        notes.append('"auto" filled as the HF Trainer would (this launcher does not fill it; change any you want '
                     "different): " + ", ".join(f"`{p}` = {json.dumps(get_path(resolved, p))}" for p in filled))
    return resolved, notes


def _batch_deepspeed_derives(config: Mapping[str, Any], world_size: Any, version: str | None = None,
                             trainer_micro: Any = None) -> dict[str, int]:
    """The Trainer batch arguments for the micro batch and accumulation DeepSpeed ``version`` (None: the newest)
    runs the config with on ``world_size`` GPUs (``core.batch.batch_run``): derived from its own batch keys over
    the data-parallel ranks that release counts (``train_batch_size`` 16 on 8 GPUs is 2 x 1), or what elastic
    training computes where the release runs it; so no launcher but the HF Trainer is held to the Trainer's default
    batch of 8. An "auto" micro batch beside a written train_batch_size is ``trainer_micro`` (the Trainer's
    per-device batch, when given), and an "auto" accumulation then derived as DeepSpeed derives a missing one
    (256 on 8 GPUs of 4: 8). {} while another batch key it reads is "auto", or the batch does not resolve."""
    release = version or DEFAULT_VERSION
    as_dict = dict(config)
    if (as_dict.get("train_micro_batch_size_per_gpu") == AUTO and positive_whole(trainer_micro) is not None
            and positive_whole(as_dict.get("train_batch_size")) is not None):
        as_dict["train_micro_batch_size_per_gpu"] = trainer_micro
        if as_dict.get("gradient_accumulation_steps") == AUTO:
            del as_dict["gradient_accumulation_steps"]
    if not isinstance(world_size, int) or world_size < 1 or (
            not runs_elastic(as_dict, release) and AUTO in (as_dict.get(key) for key in BATCH_KEYS)):
        return {}
    run = batch_run(as_dict, world_size, release)
    return {} if run is None else {"per_device_train_batch_size": run[1], "gradient_accumulation_steps": run[2]}


def _required_scheduler_param(config: Mapping[str, Any], path: str) -> bool:
    """Whether ``path`` is a parameter the config's scheduler cannot be built without (WarmupDecayLR's
    total_num_steps)."""
    section = config.get("scheduler")
    spec = SCHEDULERS.get(section.get("type")) if isinstance(section, Mapping) else None
    return spec is not None and path.startswith("scheduler.params.") and path.split(".", 2)[2] in spec.required


def _needs(path: str, param: str) -> bool:
    """Whether the "auto" at ``path`` is one the Trainer fills from ``param``."""
    return path in FILLED_FROM.get(param, ())


def with_assumed_precision(config: Mapping[str, Any], values: Mapping[str, Any]) -> Mapping[str, Any]:
    """``values`` with an "auto" precision section filled on, as the app reads it (the estimate's "as if --bf16 is
    passed"), for launchers whose "auto" would otherwise be the HF Trainer's default, off: the job would train in
    fp32 with more memory than the app showed (accelerate with ``deepspeed_config_file`` refuses a
    ``mixed_precision`` of its own, so the file must say it)."""
    meaning = effective(config)
    if meaning.precision == "fp32" and meaning.precision_mode in ("fp16", "bf16") and \
            meaning.precision_mode not in values:
        return {**values, meaning.precision_mode: True}
    return values


def accelerate_export(config: Mapping[str, Any], values: Mapping[str, Any],
                      version: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """(config, notes) for ``accelerate launch`` with ``deepspeed_config_file``: "auto" resolved (accelerate fills
    only the batch, clipping, buckets and precision, and the optimizer's only through ``DummyOptim``) except the
    stage and offload settings its plugin fills from ``accelerate launch``'s flags (``--zero_stage``, ...), and a
    ``zero_optimization`` section, which accelerate requires. ``version``: the DeepSpeed release (None: the
    newest), as for ``resolved_export``."""
    out, notes = resolved_export(config, with_assumed_precision(config, values), ACCELERATE_PLUGIN_PATHS, version)
    _require_zero_section(out, notes)
    for path, variable in ACCELERATE_VARIABLES.items():
        # an "auto" no flag of the launch can set: accelerate's default is what runs
        if path not in ACCELERATE_LAUNCH_FLAGS and get_path(out, path, None) == "auto" and get_path(
                out, path.rsplit(".", 1)[0] + ".device", None) in ("nvme", "auto"):
            notes.append(f"{path} stays \"auto\": accelerate fills it from {variable}, which `accelerate launch` "
                         f"does not set, else with \"{ACCELERATE_FILLS[path]}\" (DeepSpeed then swaps into a "
                         f"folder of that name). Write the NVMe directory, or export {variable} before launching.")
    if "gradient_accumulation_steps" not in out:  # accelerate writes 1 where DeepSpeed would derive it
        accum = _batch_deepspeed_derives(out, int(values.get("world_size") or 1), version).get(
            "gradient_accumulation_steps")
        if accum is not None and accum != ACCELERATE_ACCUMULATION:  # what accelerate writes anyway
            out["gradient_accumulation_steps"] = accum
            gpus = int(values.get("world_size") or 1)
            ranks = effective_world_size(out, gpus, version)
            over = (f"{ranks:g} data-parallel ranks: {gpus} GPUs / sequence_parallel_size" if ranks != gpus
                    else "GPUs")
            notes.append(f"Added gradient_accumulation_steps {accum} (train_batch_size / micro batch / {over}): "
                         f"accelerate would otherwise write {ACCELERATE_ACCUMULATION} and DeepSpeed would refuse the "
                         "batch sizes.")
    _elastic_takes_the_batch(out, version, notes, "accelerate writes the batch keys it fills, and a missing "
                             f"gradient_accumulation_steps as {ACCELERATE_ACCUMULATION},")
    return out, notes


#: Lightning's Trainer precision for the config's half precision.
_LIGHTNING_PRECISION = {"bf16": "bf16-mixed", "fp16": "16-mixed"}


def lightning_export(config: Mapping[str, Any], values: Mapping[str, Any], world_size: int,
                     version: str | None = None) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(config, Lightning ``Trainer`` keyword arguments, notes) that ``DeepSpeedStrategy(config=...)`` accepts.

    Lightning refuses ``gradient_accumulation_steps`` in the config (it writes the Trainer's
    ``accumulate_grad_batches`` there), so the accumulation moves to the Trainer, and ``train_batch_size`` is
    dropped (DeepSpeed derives it from micro batch × accumulation × GPUs). "auto" is resolved (Lightning fills
    none), and the Trainer's precision follows the config's half precision. A config without
    ``gradient_clipping`` gets DeepSpeed ``version``'s default written (Lightning writes its own 0.0 there)."""
    out, notes = resolved_export(config, with_assumed_precision(config, values), version=version)
    _zero_as_section(out, notes)
    kwargs: dict[str, Any] = {}
    reading = effective(out)  # "enabled": 1 or "true" is on, as DeepSpeed reads it
    for section, precision in _LIGHTNING_PRECISION.items():
        if getattr(reading, section):
            kwargs["precision"] = precision
    derived = _batch_deepspeed_derives(out, world_size, version)
    if "train_micro_batch_size_per_gpu" not in out and "per_device_train_batch_size" in derived:
        # without it Lightning writes the training DataLoader's batch size there, or 1 before it has one
        out["train_micro_batch_size_per_gpu"] = derived["per_device_train_batch_size"]
    micro = out.get("train_micro_batch_size_per_gpu")
    if whole(micro) is not None:
        notes.append(f"train_micro_batch_size_per_gpu {micro}"
                     + (f" added (what DeepSpeed derives on {world_size} GPUs)" if micro != config.get(
                         "train_micro_batch_size_per_gpu") else "")
                     + f": under Lightning the training DataLoader's batch size is what trains (DeepSpeed reads "
                     f"this number for its throughput figures); build it with batch_size={micro}.")
    accum = out.pop("gradient_accumulation_steps", None)
    if accum is None:
        accum = derived.get("gradient_accumulation_steps")
    total = out.pop("train_batch_size", None)
    accum_count = whole(accum)
    if accum is not None and accum_count is None:  # an "auto" resolved_export could not fill, a string, a boolean
        notes.append(f"gradient_accumulation_steps {brief(accum)} could not be resolved: set the Trainer's "
                     "accumulate_grad_batches (a whole number) yourself.")
    elif accum is not None:
        accum = kwargs["accumulate_grad_batches"] = accum_count
        notes.append(f"gradient_accumulation_steps {accum} is passed as the Trainer's accumulate_grad_batches: "
                     "Lightning refuses it in the DeepSpeed config.")
    if total is not None:
        notes.append(f"train_batch_size {total} is left out: DeepSpeed derives it from the micro batch, the "
                     "accumulation and the GPU count Lightning launches.")
    if "gradient_clipping" not in out:
        # Lightning writes the Trainer's gradient_clip_val there, 0.0 (off) unless set, where DeepSpeed clips at
        # its default
        release = version or DEFAULT_VERSION
        known, clip = release_default(resolve(DeepSpeedConfig, "gradient_clipping"), "", release)
        if known:  # every profiled release records it
            out["gradient_clipping"] = clip
            notes.append(f"Added gradient_clipping {clip} (DeepSpeed {release}'s default): Lightning would otherwise "
                         "write the Trainer's gradient_clip_val, 0.0 unless set"
                         + (", and train without clipping." if clip else "."))
    _elastic_takes_the_batch(out, version, notes, "Lightning writes gradient_accumulation_steps and "
                             "train_micro_batch_size_per_gpu")
    return out, kwargs, notes


def _elastic_takes_the_batch(out: dict[str, Any], version: str | None, notes: list[str], writer: str) -> None:
    """Elastic training where DeepSpeed ``version`` runs it refuses batch keys beside it (ElasticityConfigError)
    unless ``ignore_non_elastic_batch_info`` is on, and every launcher but DeepSpeed's own writes them (``writer``
    says which): the export turns it on, since the batch written is what elastic training computes anyway."""
    section = out.get("elasticity")
    release = version or DEFAULT_VERSION
    if not (isinstance(section, dict) and runs_elastic(out, release)) or lax_bool(
            section.get("ignore_non_elastic_batch_info")):
        return
    out["elasticity"] = {**section, "ignore_non_elastic_batch_info": True}
    notes.append(f"elasticity.ignore_non_elastic_batch_info set to true: {writer} into the config DeepSpeed reads, "
                 f"and DeepSpeed {release} refuses batch keys beside elastic training otherwise "
                 "(ElasticityConfigError); elastic training still decides the batch.")


def job_world_size(context: Mapping[str, Any]) -> int:
    """GPUs in the job the app's ``context`` describes: nodes × GPUs per node (at least 1)."""
    return max(1, int(context.get("nodes") or 1)) * max(1, int(context.get("gpus_per_node") or 1))


def launch_values(context: Mapping[str, Any], trainer_values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Training values for ``resolved_export`` from the app's context: the GPU count, the planned step count,
    the model's hidden size when a model is chosen, and the Trainer batch the app assumed (``trainer_values``)."""
    values: dict[str, Any] = {"world_size": job_world_size(context)}
    if context.get("train_steps"):
        values["num_training_steps"] = int(context["train_steps"])
    model = context.get("model_config")
    if isinstance(model, Mapping):
        hidden = model_hidden_size(model)
        if hidden is not None:
            values["hidden_size"] = hidden
    return values | dict(trainer_values or {})


def model_hidden_size(model: Mapping[str, Any]) -> int | None:
    """The hidden size the HF Trainer reads from a model's ``config.json`` (``model.config.hidden_size``, for its
    "auto" bucket sizes): as ``core.models`` reads the families it knows, which follows transformers where a config
    gives the width under two names (Bloom's and Falcon's ``n_embed`` win); for another family the first of the
    usual names it gives. None when there is no positive whole one."""
    from core.models import ModelConfigError, describe

    try:
        return describe(model).hidden_size
    except ModelConfigError:
        pass
    for key in ("hidden_size", "d_model", "n_embd", "n_embed"):
        value = model.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def variant_name(file_name: str, launcher: str) -> str:
    """``ds_config.json`` → ``ds_config.lightning.json``: the file a launcher gets when its config differs."""
    stem, dot, ext = file_name.rpartition(".")
    return f"{stem}.{launcher}.{ext}" if dot else f"{file_name}.{launcher}"


@dataclass(frozen=True)
class LauncherExports:
    """What each launcher gets for one config: ``hf_trainer_export``, ``accelerate_export`` and
    ``lightning_export`` computed once, for the snippets and the files shown beside them (each resolves the
    config's "auto" values on a copy of it: a second time for a 1 MB config was a quarter of the Review page)."""

    hf: tuple[dict[str, Any], dict[str, Any], list[str]]
    accelerate: tuple[dict[str, Any], list[str]]
    lightning: tuple[dict[str, Any], dict[str, Any], list[str]]


def launcher_exports(config: Mapping[str, Any], context: Mapping[str, Any], hf_mode: str = "auto",
                     trainer_values: Mapping[str, Any] | None = None) -> LauncherExports:
    """The three launchers' exports of ``config`` for the app's ``context`` (GPU count, steps, model, and the
    DeepSpeed release, ``version``, whose reading of the batch keys each export follows)."""
    values = launch_values(context, trainer_values)
    version = context.get("version")
    return LauncherExports(hf_trainer_export(config, hf_mode, trainer_values, int(values["world_size"]), version),
                           accelerate_export(config, values, version),
                           lightning_export(config, values, int(values["world_size"]), version))


#: The hostfile the multi-node launch snippets write and read.
HOSTFILE = "hostfile"


def launch_snippets(context: Mapping[str, Any], stage: int, file_name: str = "ds_config.json",
                    config: Mapping[str, Any] | None = None, hf_mode: str = "auto",
                    trainer_values: Mapping[str, Any] | None = None,
                    exports: LauncherExports | None = None) -> dict[str, str]:
    """Ready-to-paste launch commands for the config, by launcher: the HF one with the TrainingArguments
    ``hf_trainer_export`` gives for ``config``; accelerate and Lightning with their own file
    (``variant_name``, from ``accelerate_export`` / ``lightning_export``) where the config needs changes for them.
    ``exports``: ``launcher_exports`` of the same config, context, mode and values, when the caller has them."""
    if config is not None and exports is None:
        exports = launcher_exports(config, context, hf_mode, trainer_values)
    nodes, gpus = int(context["nodes"]), int(context["gpus_per_node"])
    world = job_world_size(context)
    # several nodes: DeepSpeed's launcher starts them all from the first over ssh (pdsh), given a hostfile
    runner = f"deepspeed --hostfile {HOSTFILE} --num_nodes {nodes} --num_gpus {gpus}" if nodes > 1 else \
        f"deepspeed --num_gpus {gpus}"
    hostfile = (f"# {HOSTFILE} (one line per node; run the launch on the first)\ncat > {HOSTFILE} <<'EOF'\n"
                + "\n".join(f"node{i + 1} slots={gpus}" for i in range(nodes)) + "\nEOF\n\n") if nodes > 1 else ""
    deepspeed = (f"{hostfile}{runner} \\\n    train.py --deepspeed --deepspeed_config {file_name}" if nodes > 1
                 else f"{runner} train.py --deepspeed --deepspeed_config {file_name}")
    hf_args = exports.hf[1] if exports is not None else {}
    sequence_parallel = _sequence_parallel_sizes(config, world, context.get("version"))
    torchrun = (f"torchrun --nnodes {nodes} --nproc_per_node {gpus} --node_rank <0..{nodes - 1}> "
                "--rdzv_backend c10d --rdzv_endpoint <first node>:29500 train.py on each node" if nodes > 1
                else f"torchrun --nproc_per_node {gpus} train.py")
    hf = (hf_snippet(hf_args, file_name, sequence_parallel)
          + f"\n\n# launch: {runner} train.py   (or {torchrun})"
          + (f"\n# {HOSTFILE}: one line per node, e.g. \"node1 slots={gpus}\"" if nodes > 1 else ""))
    accelerate_file, lightning_file, lightning_args = file_name, file_name, {}
    if config is not None and exports is not None:
        accelerate_config = exports.accelerate[0]
        if accelerate_config != config:
            accelerate_file = variant_name(file_name, "accelerate")
        stage = Context(accelerate_config).stage  # DeepSpeed's own reading (a junk stage reads as 0)
        lightning_config, lightning_args, _ = exports.lightning
        if lightning_config != config:
            lightning_file = variant_name(file_name, "lightning")
    accelerate = (
        "# accelerate.yaml\n"
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: DEEPSPEED\n"
        "deepspeed_config:\n"
        f"  deepspeed_config_file: {accelerate_file}\n"
        f"  zero3_init_flag: {'true' if stage == 3 else 'false'}\n"
        + (f"  deepspeed_multinode_launcher: pdsh\n  deepspeed_hostfile: {HOSTFILE}   # one line per node, e.g. "
           f"\"node1 slots={gpus}\"; launch on the first\n" if nodes > 1 else "")
        + f"num_machines: {nodes}\n"
        f"num_processes: {world}\n"
        "machine_rank: 0\n"
        + ("" if sequence_parallel is None else
           "parallelism_config:\n"
           "  parallelism_config_sp_backend: deepspeed\n"
           f"  parallelism_config_sp_size: {sequence_parallel[0]}\n"
           f"  parallelism_config_dp_replicate_size: {sequence_parallel[1]}\n")
        + "\naccelerate launch --config_file accelerate.yaml train.py"
    )
    extra = "".join(f" {name}={value!r}," for name, value in lightning_args.items())
    micro = whole(exports.lightning[0].get("train_micro_batch_size_per_gpu")) if exports is not None else None
    lightning = (
        "from lightning.pytorch import Trainer\n"
        "from lightning.pytorch.strategies import DeepSpeedStrategy\n\n"
        + ("" if micro is None else f"# the training DataLoader's batch_size={micro} is the micro batch that trains\n")
        + f'trainer = Trainer(accelerator="gpu", devices={gpus}, num_nodes={nodes},{extra}\n'
        f'                  strategy=DeepSpeedStrategy(config="{lightning_file}"))\n'
        "trainer.fit(model)"
    )
    return {"deepspeed launcher": deepspeed, "HF Trainer": hf, "accelerate launch": accelerate,
            "Lightning": lightning}
