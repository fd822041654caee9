"""Fill a config's ``"auto"`` values the way the Hugging Face Trainer does.

Mirrors ``HfTrainerDeepSpeedConfig.trainer_config_process`` and ``trainer_config_finalize`` in
``transformers/integrations/deepspeed.py``: the same keys, the same values and the same
mismatch check for keys that are *not* "auto" but disagree with the training values. Between the two,
``TrainingArguments`` hands the config to Accelerate's ``DeepSpeedPlugin``, which refuses a config without a
``zero_optimization`` section and fills the "auto" ZeRO stage, offload devices, NVMe paths and 16-bit save flag
with its own settings (``accelerate.utils.dataclasses.DeepSpeedPlugin.__post_init__``); that step is mirrored
too. The training values are named like ``TrainingArguments`` fields, plus ``world_size``, ``hidden_size``,
``num_training_steps`` (which the Trainer takes from the launcher, the model config and the data) and
``zero_stage`` (Accelerate's).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from core.batch import BATCH_KEYS, GA, MB, TB, reads_sequence_parallel, sequence_parallel_degree
from core.findings import brief, get_path, join_index, join_path
from core.versions import NEWEST

AUTO = "auto"


class AutoFillError(ValueError):
    """An "auto" value that cannot be filled, a bad training value, or values that disagree with the config."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():  # 1e3 or 4096.0, as the CLI's count flags read them
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AutoFillError(f"{name} must be a positive integer, got {value!r}", name)
    return value


def _number(name: str, value: Any) -> float:
    try:
        finite = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    except OverflowError:  # an integer beyond float range (JSON allows any number of digits)
        finite = False
    if not finite:
        raise AutoFillError(f"{name} must be a finite number, got {brief(value)}", name)
    return value


def _non_negative_number(name: str, value: Any) -> float:
    if _number(name, value) < 0:
        raise AutoFillError(f"{name} must be >= 0, got {value!r}", name)
    return value


def _zero_stage(name: str, value: Any) -> int:
    if isinstance(value, bool) or value not in (0, 1, 2, 3):
        raise AutoFillError(f"{name} must be a ZeRO stage, 0, 1, 2 or 3, got {value!r}", name)
    return int(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise AutoFillError(f"{name} must be true or false, got {value!r}", name)
    return value


#: Accepted training values and their checks (names as in TrainingArguments where one exists).
TRAINING_VALUES: dict[str, Callable[[str, Any], Any]] = {
    "world_size": _positive_int,
    "per_device_train_batch_size": _positive_int,
    "gradient_accumulation_steps": _positive_int,
    "max_grad_norm": _number,
    "learning_rate": _number,
    "adam_beta1": _number,
    "adam_beta2": _number,
    "adam_epsilon": _number,
    "weight_decay": _number,
    "fp16": _flag,
    "bf16": _flag,
    "fp16_full_eval": _flag,
    "bf16_full_eval": _flag,
    "save_on_each_node": _flag,
    "auto_find_batch_size": _flag,
    "hidden_size": _positive_int,
    "num_training_steps": _positive_int,
    "warmup_steps": _non_negative_number,
    "zero_stage": _zero_stage,
}

#: The TrainingArguments defaults of the fields above (transformers 5.x); world_size 1 is a single process.
#: Not applied by ``resolve_auto``: pass ``**HF_DEFAULTS`` explicitly to mean "the Trainer's defaults".
HF_DEFAULTS: dict[str, Any] = {
    "world_size": 1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "max_grad_norm": 1.0,
    "learning_rate": 5e-05,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-08,
    "weight_decay": 0.0,
    "fp16": False,
    "bf16": False,
    "fp16_full_eval": False,
    "bf16_full_eval": False,
    "save_on_each_node": False,
    "warmup_steps": 0,
    # Accelerate's DeepSpeedPlugin (not a TrainingArguments field): ACCELERATE_DEEPSPEED_ZERO_STAGE, which
    # `accelerate launch --zero_stage` sets, else 2 (`accelerate config` refuses a zero_stage beside a config file)
    "zero_stage": 2,
}

#: What Accelerate's DeepSpeedPlugin fills an "auto" with, besides the stage, when nothing (``accelerate
#: config``, its ACCELERATE_DEEPSPEED_* variables) sets it: its own defaults, strings as it writes them.
ACCELERATE_FILLS: dict[str, Any] = {
    "zero_optimization.offload_optimizer.device": "none",
    "zero_optimization.offload_param.device": "none",
    "zero_optimization.offload_optimizer.nvme_path": "none",
    "zero_optimization.offload_param.nvme_path": "none",
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": False,
}

#: The environment variable Accelerate's DeepSpeedPlugin reads each of its fills from. ``accelerate launch`` sets the
#: stage's and the devices' from its flags; nothing of accelerate's sets the NVMe paths' (its --*_nvme_path flags are
#: not passed on, and ``accelerate config`` refuses them beside a DeepSpeed config file).
ACCELERATE_VARIABLES: dict[str, str] = {
    "zero_optimization.stage": "ACCELERATE_DEEPSPEED_ZERO_STAGE",
    "zero_optimization.offload_optimizer.device": "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE",
    "zero_optimization.offload_param.device": "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE",
    "zero_optimization.offload_optimizer.nvme_path": "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH",
    "zero_optimization.offload_param.nvme_path": "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH",
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL",
}

#: The ``accelerate launch`` flag that sets each of those variables; the NVMe paths have flags that are not passed on.
ACCELERATE_LAUNCH_FLAGS: dict[str, str] = {
    "zero_optimization.stage": "--zero_stage",
    "zero_optimization.offload_optimizer.device": "--offload_optimizer_device",
    "zero_optimization.offload_param.device": "--offload_param_device",
    "zero_optimization.stage3_gather_16bit_weights_on_model_save": "--zero3_save_16bit_model",
}

#: Keys Accelerate's DeepSpeedPlugin overwrites whatever the config says (``__post_init__``: ``steps_per_print`` set
#: to infinity to silence DeepSpeed's log), so an "auto" there never reaches DeepSpeed.
ACCELERATE_OVERWRITES: tuple[str, ...] = ("steps_per_print",)

#: The paths Accelerate's plugin fills from its own settings (``ACCELERATE_VARIABLES``, which ``accelerate launch``'s
#: flags set): a config for ``accelerate launch`` keeps these "auto", so that the launch's settings decide.
ACCELERATE_PLUGIN_PATHS: tuple[str, ...] = ("zero_optimization.stage", *ACCELERATE_FILLS)

#: Accelerate's refusal of a config without a ZeRO section (``DeepSpeedPlugin.__post_init__``), word for word.
ACCELERATE_NO_ZERO = "Please specify the ZeRO optimization config in the DeepSpeed config."

#: Flags that default to False when not given (they only ever turn something on).
_OPTIONAL_FLAGS = ("fp16_full_eval", "bf16_full_eval", "save_on_each_node", "auto_find_batch_size")

#: The ZeRO buffer sizes the Trainer fills from the model's hidden size (``trainer_config_finalize``).
HIDDEN_SIZE_KEYS = (
    "zero_optimization.reduce_bucket_size",
    "zero_optimization.stage3_prefetch_bucket_size",
    "zero_optimization.stage3_param_persistence_threshold",
)

#: The scheduler's step counts the Trainer fills from the number of training steps (``trainer_config_finalize``).
TOTAL_STEPS_KEY = "scheduler.params.total_num_steps"
WARMUP_STEPS_KEY = "scheduler.params.warmup_num_steps"

#: Which "auto" values each training value that only the model or the run knows fills: without it, these (and
#: no others) cannot be filled.
FILLED_FROM: dict[str, tuple[str, ...]] = {
    "hidden_size": HIDDEN_SIZE_KEYS,
    "num_training_steps": (TOTAL_STEPS_KEY, WARMUP_STEPS_KEY),
}


@dataclass
class _Filler:
    """The working state: a private copy of the config, the training values and the mismatches found."""

    config: dict[str, Any]
    values: dict[str, Any]
    mismatches: list[str]

    def node(self, dotted: str) -> tuple[Any, str]:
        parts = dotted.split(".")
        key = parts.pop()
        node: Any = self.config
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return None, key
        return node, key

    def get(self, dotted: str, default: Any = None) -> Any:
        node, key = self.node(dotted)
        return node.get(key, default) if isinstance(node, dict) else default

    def is_auto(self, dotted: str) -> bool:
        return self.get(dotted) == AUTO

    def need(self, dotted: str, *names: str) -> list[Any]:
        missing = [n for n in names if n not in self.values]
        if missing:
            raise AutoFillError(
                f'{dotted} is "auto" and needs the training value{"s" if len(missing) > 1 else ""} '
                f"{', '.join(missing)} (as the HF Trainer takes it from TrainingArguments/the model)",
                missing[0],
            )
        return [self.values[n] for n in names]

    def fill(self, dotted: str, names: tuple[str, ...], compute: Callable[..., Any], hf_key: str,
             must_match: bool = True, filled: Callable[..., Any] | None = None) -> None:
        """transformers' ``fill_match``: replace "auto" (with ``filled`` when what finally reaches DeepSpeed
        differs from what the Trainer computes), else record a disagreement with ``compute``."""
        node, key = self.node(dotted)
        if not isinstance(node, dict):
            return
        if node.get(key) == AUTO:
            node[key] = (filled or compute)(*self.need(dotted, *names))
            return
        if not must_match or any(n not in self.values for n in names):
            return
        hf_val = compute(*(self.values[n] for n in names))
        ds_val = node.get(key)
        if ds_val is not None and ds_val != hf_val:
            self.mismatches.append(f"- ds {dotted}={ds_val} vs hf {hf_key}={hf_val}")

    def fill_only(self, dotted: str, value: Any) -> None:
        node, key = self.node(dotted)
        if isinstance(node, dict) and node.get(key) == AUTO:
            node[key] = value


def _warmup_steps(warmup_steps: float, num_training_steps: int) -> int:
    """``TrainingArguments.get_warmup_steps``: a count if >= 1, else a ratio of the training steps."""
    return int(warmup_steps) if warmup_steps >= 1 else math.ceil(num_training_steps * warmup_steps)


def resolve_auto(config: Mapping[str, Any], *, version: str | None = None, **training_values: Any) -> dict[str, Any]:
    """A copy of ``config`` with its "auto" values filled as the HF Trainer would fill them for a job on DeepSpeed
    ``version`` (None: the newest release), whose reading of ``sequence_parallel_size`` decides the "auto"
    train_batch_size (``core.batch.reads_sequence_parallel``).

    Training values (all optional; an "auto" that needs a missing one raises AutoFillError naming it):
    world_size, per_device_train_batch_size, gradient_accumulation_steps, max_grad_norm,
    learning_rate, adam_beta1, adam_beta2, adam_epsilon, weight_decay, fp16, bf16, fp16_full_eval,
    bf16_full_eval, save_on_each_node, auto_find_batch_size, hidden_size, num_training_steps,
    warmup_steps (a count, or a ratio of num_training_steps if < 1), zero_stage (Accelerate's: the "auto" ZeRO
    stage; the Trainer's default is 2, ``HF_DEFAULTS``). Non-"auto" keys that disagree
    with given values raise AutoFillError, as the Trainer does. "auto" values the Trainer leaves alone
    (e.g. stage-3 buckets below stage 3) stay "auto"; ``find_auto`` lists them. ``config`` is not modified.
    """
    if not isinstance(config, Mapping):
        raise AutoFillError(f"the config must be a JSON object, not {type(config).__name__}", None)
    values: dict[str, Any] = {}
    for name, value in training_values.items():
        check = TRAINING_VALUES.get(name)
        if check is None:
            raise AutoFillError(
                f"unknown training value {name!r}; known: {', '.join(TRAINING_VALUES)}", name
            )
        values[name] = check(name, value)  # as read: 1e3 steps is 1000
    for flag in _OPTIONAL_FLAGS:
        values.setdefault(flag, False)
    filler = _Filler(copy.deepcopy(dict(config)), values, [])
    _process(filler, version)
    _accelerate(filler)
    _finalize(filler)
    if filler.mismatches:
        raise AutoFillError(
            "these DeepSpeed config values disagree with the training values (the HF Trainer refuses them; "
            "set them to \"auto\" or change the training values):\n" + "\n".join(filler.mismatches),
            None,
        )
    return filler.config


def _process(f: _Filler, version: str | None = None) -> None:
    """``trainer_config_process``, for a job on DeepSpeed ``version``."""
    auto_batch = f.values["auto_find_batch_size"]
    f.fill("train_micro_batch_size_per_gpu", ("per_device_train_batch_size",), lambda v: v,
           "per_device_train_batch_size", not auto_batch)
    f.fill("gradient_accumulation_steps", ("gradient_accumulation_steps",), lambda v: v,
           "gradient_accumulation_steps")
    f.fill("train_batch_size", ("world_size", "per_device_train_batch_size", "gradient_accumulation_steps"),
           lambda w, m, g: w * m * g, "train_batch_size (calculated)", not auto_batch,
           filled=_sequence_parallel_batch(f.config, version))
    f.fill("gradient_clipping", ("max_grad_norm",), lambda v: v, "max_grad_norm")
    f.fill("optimizer.params.lr", ("learning_rate",), lambda v: v, "learning_rate")
    f.fill("optimizer.params.betas", ("adam_beta1", "adam_beta2"), lambda b1, b2: [b1, b2],
           "adam_beta1+adam_beta2")
    f.fill("optimizer.params.eps", ("adam_epsilon",), lambda v: v, "adam_epsilon")
    f.fill("optimizer.params.weight_decay", ("weight_decay",), lambda v: v, "weight_decay")
    f.fill_only("scheduler.params.warmup_min_lr", 0)
    f.fill("scheduler.params.warmup_max_lr", ("learning_rate",), lambda v: v, "learning_rate")
    if f.values["save_on_each_node"]:
        checkpoint = f.config.get("checkpoint", {})
        if not isinstance(checkpoint, dict):
            raise AutoFillError(
                f"save_on_each_node sets checkpoint.use_node_local_storage, but `checkpoint` is {checkpoint!r}, "
                "not an object; write it as {} or remove it",
                "save_on_each_node",
            )
        f.config["checkpoint"] = checkpoint
        checkpoint["use_node_local_storage"] = True
    f.fill("fp16.enabled", ("fp16", "fp16_full_eval"), lambda a, b: a or b, "fp16|fp16_full_eval")
    f.fill("bf16.enabled", ("bf16", "bf16_full_eval"), lambda a, b: a or b, "bf16|bf16_full_eval")


def _accelerate(f: _Filler) -> None:
    """Accelerate's ``DeepSpeedPlugin.__post_init__`` on the config ``TrainingArguments`` hands it: the "auto"
    stage and offload settings take the plugin's values. Its refusals (no ZeRO section; the boolean form, which
    it reads with ``.get``) are the validator's to report (``hf.zero-section``): the fills here apply only to a
    section. It also sets ``steps_per_print`` to infinity, to silence DeepSpeed's log, and a missing
    ``gradient_accumulation_steps`` to 1 (``as_accelerate_passes``); neither is an "auto", so neither is written
    here."""
    if not isinstance(f.config.get("zero_optimization"), dict):
        return
    f.fill("zero_optimization.stage", ("zero_stage",), lambda v: v, "zero_stage", must_match=False)
    for path, value in ACCELERATE_FILLS.items():
        f.fill_only(path, value)


#: What accelerate's ``DeepSpeedPlugin.__post_init__`` writes for a missing ``gradient_accumulation_steps`` (under
#: the HF Trainer too, which builds that plugin in ``TrainingArguments``): DeepSpeed then checks train_batch_size
#: against it rather than deriving the accumulation from train_batch_size as it does for a plain launch.
ACCELERATE_ACCUMULATION = 1


def as_accelerate_passes(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (a shallow copy) with the batch keys as accelerate hands them to DeepSpeed, under the HF Trainer
    or ``accelerate launch``: a missing ``gradient_accumulation_steps`` is written as 1 (a null one stays: the
    plugin checks for the key)."""
    out = dict(config)
    out.setdefault(GA, ACCELERATE_ACCUMULATION)
    return out


def _sequence_parallel_batch(config: dict[str, Any],
                             version: str | None = None) -> Callable[[int, int, int], int] | None:
    """The train_batch_size that reaches DeepSpeed ``version`` under sequence parallelism: the Trainer computes
    GPUs × micro × accumulation, and accelerate (``Accelerator._prepare_deepspeed``, with the ``ParallelismConfig``
    that sequence parallelism needs under the Trainer) replaces it by micro × accumulation × the data-parallel
    ranks the release counts (GPUs ÷ sequence_parallel_size), which DeepSpeed checks. None without sequence
    parallelism, or in a release that ignores ``sequence_parallel_size`` (0.16.x: it counts every GPU, and has no
    Ulysses module for accelerate either, so the Trainer's product is the batch it checks)."""
    sp = sequence_parallel_degree(config) if reads_sequence_parallel(version) else None
    if sp is None:
        return None

    def batch(world: int, micro: int, accum: int) -> int:
        if world % sp:
            raise AutoFillError(
                f"train_batch_size is \"auto\" and sequence_parallel_size {sp} does not divide world_size {world}: "
                "the data-parallel ranks (GPUs ÷ sequence_parallel_size) must be whole; change one of them",
                "world_size",
            )
        return micro * accum * (world // sp)

    return batch


def _finalize(f: _Filler) -> None:
    """``trainer_config_finalize``."""
    auto_keys = [k for k in HIDDEN_SIZE_KEYS if f.is_auto(k)]
    if auto_keys:
        if "hidden_size" not in f.values:
            raise AutoFillError(
                f'{", ".join(auto_keys)} {"is" if len(auto_keys) == 1 else "are"} "auto" and need the model\'s '
                "hidden_size (the HF Trainer reads config.hidden_size); pass hidden_size or set an integer",
                "hidden_size",
            )
        h = f.values["hidden_size"]
        f.fill_only("zero_optimization.reduce_bucket_size", h * h)
        if f.get("zero_optimization.stage", -1) == 3:
            f.fill_only("zero_optimization.stage3_prefetch_bucket_size", int(0.9 * h * h))
            f.fill_only("zero_optimization.stage3_param_persistence_threshold", 10 * h)
    f.fill(TOTAL_STEPS_KEY, ("num_training_steps",), lambda v: v, "num_training_steps (calculated)")
    f.fill(WARMUP_STEPS_KEY, ("warmup_steps", "num_training_steps"),
           lambda w, n: max(1, _warmup_steps(w, n)), "warmup_steps")


def scheduler_peak(config: Mapping[str, Any], version: str | None = None) -> float | None:
    """The written ``scheduler.params.warmup_max_lr`` when the scheduler trains up to it whatever the optimizer's
    lr: DeepSpeed's WarmupLR and WarmupDecayLR (the schedulers whose signature in DeepSpeed ``version``'s profile
    takes warmup_max_lr) write their own rate into the optimizer from its construction on (``WarmupLR.__init__``
    and ``get_lr`` in runtime/lr_schedules.py), so the optimizer's lr never trains; WarmupCosineLR scales the
    optimizer's lr instead and takes no warmup_max_lr. None otherwise."""
    from core import versions
    from core.schema.base import DEFAULT_VERSION

    section = config.get("scheduler")
    params = section.get("params") if isinstance(section, Mapping) else None
    peak = params.get("warmup_max_lr") if isinstance(params, Mapping) else None
    if isinstance(peak, bool) or not isinstance(peak, int | float):
        return None
    name = section.get("type")
    signature = versions.profile(version or DEFAULT_VERSION)["schedulers"].get(name) if isinstance(name, str) else None
    return peak if signature and "warmup_max_lr" in signature else None


def _written_training_values(part: Mapping[str, Any]) -> dict[str, Any]:
    """The TrainingArguments a config's written optimizer/scheduler values stand for (its lr is the run's
    learning_rate, its warm-up the run's warmup_steps ...): the Trainer checks the written ones against them, so a
    chart of the "auto" ones assumes arguments that agree with what is written, not the Trainer's defaults."""
    values: dict[str, Any] = {}
    for path, names in HF_TRAINER_FIELDS.items():
        if not path.startswith(("optimizer.", "scheduler.")) or path == "scheduler.params.total_num_steps":
            continue  # the run's length is the chart's step count
        written = get_path(part, path, None)
        numbers = written if isinstance(written, list) else [written]
        if len(numbers) != len(names) or any(isinstance(n, bool) or not isinstance(n, int | float) for n in numbers):
            continue
        for name, number in zip(names, numbers, strict=True):
            values.setdefault(name, number)  # the optimizer's lr first; a warm-up peak that differs stays refused
    return values


def trainer_schedule(config: Mapping[str, Any], num_training_steps: int,
                     **training_values: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``optimizer`` and ``scheduler`` sections with their "auto" values filled as the HF Trainer fills them
    for a run of ``num_training_steps`` (``training_values`` given, else ``HF_DEFAULTS``), for drawing the schedule
    before the run; and the training values that filled something, as ``name=value`` (what the curve assumed).
    Raises AutoFillError when the sections' own values disagree with them."""
    part = {key: copy.deepcopy(config[key]) for key in ("optimizer", "scheduler") if key in config}
    values = {**HF_DEFAULTS, **_written_training_values(part), **training_values,
              "num_training_steps": num_training_steps}
    filled = resolve_auto(part, **values)
    used = []
    for path in find_auto(part):
        if not path.startswith("scheduler.") and path != "optimizer.params.lr":
            continue  # filled too, but not what draws the learning rate
        for name in HF_TRAINER_FIELDS.get(path, ()):
            shown = "num_training_steps" if name == "max_steps" else name
            if shown in values and f"{shown}={values[shown]}" not in used:
                used.append(f"{shown}={values[shown]}")
    return filled, used


def trainer_batch(config: Mapping[str, Any], micro_batch: int, grad_accum: int, world_size: int,
                  version: str | None = None) -> dict[str, Any]:
    """``config`` with only its batch keys as the HF Trainer fills them for a per-device batch of ``micro_batch``
    and ``grad_accum`` accumulation steps on ``world_size`` GPUs, for a job on DeepSpeed ``version`` (None: the
    newest) ("auto" filled; written values that disagree raise AutoFillError, as the Trainer refuses them); every
    other "auto" stays."""
    # sequence_parallel_size goes along: it decides the "auto" train_batch_size where the release reads it
    batch = {key: config[key] for key in (*BATCH_KEYS, "sequence_parallel_size") if key in config}
    return {**config, **resolve_auto(batch, version=version, world_size=world_size,
                                     per_device_train_batch_size=micro_batch, gradient_accumulation_steps=grad_accum)}


def walk_auto(config: Any) -> Iterator[tuple[str, Any]]:
    """(path, the object or list that holds it) of every "auto" value in ``config``, in document order, list items
    included (``a[0]``; paths in ``core.findings.join_path`` form: a ``.`` in a key is escaped). The one walk
    behind ``find_auto`` and the validator's "auto" rule: it runs once per release there, over configs of up to
    1 MB, so a path is built only for a container to descend into or an "auto" found."""
    stack: list[tuple[str, Any, Iterator[tuple[Any, Any]]]] = [("", config, _entries(config))]
    while stack:
        prefix, node, entries = stack[-1]
        for key, value in entries:
            kind = value.__class__
            if kind in _SCALARS:  # most values (and cheaper than isinstance against Mapping, an ABC)
                continue
            if isinstance(value, str):
                if value == AUTO:
                    yield (join_index(prefix, key) if isinstance(node, list) else join_path(prefix, key)), node
            elif value and isinstance(value, Mapping | list):
                path = join_index(prefix, key) if isinstance(node, list) else join_path(prefix, key)
                stack.append((path, value, _entries(value)))
                break
        else:
            stack.pop()


_SCALARS = frozenset({int, float, bool, type(None)})


def _entries(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, Mapping):
        return iter(node.items())
    return iter(enumerate(node)) if isinstance(node, list) else iter(())


def find_auto(config: Any) -> list[str]:
    """Paths (``core.findings.join_path`` form: a ``.`` in a key is escaped) of every "auto" value left in
    ``config``, list items included (``a[0]``)."""
    return [path for path, _ in walk_auto(config)]


def needed_training_values(config: Mapping[str, Any]) -> list[str]:
    """The training values ``resolve_auto`` needs for this config's "auto" keys (for forms and CLI help)."""
    needed: list[str] = []
    # a GPU count sequence parallelism divides: the Trainer's single process would make every probe fail on it
    sp = sequence_parallel_degree(dict(config)) if isinstance(config, Mapping) else None
    probe = {**HF_DEFAULTS, "world_size": sp or 1, "hidden_size": 1, "num_training_steps": 1}
    for name in [*probe]:
        trial = {k: v for k, v in probe.items() if k != name}
        try:
            resolve_auto(config, **trial)
        except AutoFillError as exc:
            if exc.param == name:
                needed.append(name)
    return needed


#: Config paths the HF Trainer fills from (or checks against) TrainingArguments, and the argument(s) each
#: comes from (``trainer_config_process`` / ``trainer_config_finalize``; train_batch_size is world size ×
#: per-device batch × accumulation, total_num_steps the run's length). ``warmup_min_lr`` is not here: the
#: Trainer fills an "auto" one with 0 and never checks it.
HF_TRAINER_FIELDS: dict[str, tuple[str, ...]] = {
    "train_micro_batch_size_per_gpu": ("per_device_train_batch_size",),
    "gradient_accumulation_steps": ("gradient_accumulation_steps",),
    "train_batch_size": ("world_size", "per_device_train_batch_size", "gradient_accumulation_steps"),
    "gradient_clipping": ("max_grad_norm",),
    "optimizer.params.lr": ("learning_rate",),
    "optimizer.params.betas": ("adam_beta1", "adam_beta2"),
    "optimizer.params.eps": ("adam_epsilon",),
    "optimizer.params.weight_decay": ("weight_decay",),
    "scheduler.params.warmup_max_lr": ("learning_rate",),
    "scheduler.params.warmup_num_steps": ("warmup_steps",),
    "scheduler.params.total_num_steps": ("max_steps",),
    "fp16.enabled": ("fp16",),
    "bf16.enabled": ("bf16",),
}


def switch_scheduler(config: Mapping[str, Any], new_type: Any, train_steps: int | None = None,
                     remembered: Mapping[str, Any] | None = None, *, target: str = "deepspeed",
                     version: str = NEWEST) -> dict[str, Any]:
    """A copy of ``config`` whose scheduler (created when there is none) is ``new_type`` (None: no type, the key
    removed), with its params adapted (created too when there are none): parameters the new scheduler does not take
    are dropped (DeepSpeed would fail on them), the ones it takes from ``remembered`` (what this type had before the
    user switched away) come back, and a required ``total_num_steps`` still missing is filled from ``train_steps``
    (an integer, as DeepSpeed wants a step count). A missing peak learning rate (``SCHEDULER_PEAK_LR``:
    WarmupLR's and WarmupDecayLR's ``warmup_max_lr``, OneCycle's ``cycle_max_lr``) is the optimizer's numeric
    ``lr`` when DeepSpeed ``version`` (the newest profiled release unless given) would not follow that lr itself:
    the scheduler writes its peak into the optimizer, and the release default is 0.001 (WarmupDecayLR in every
    release, WarmupLR before 0.17.2; OneCycle has none and fails). OneCycle's required ``cycle_min_lr`` is left for
    the user (the validator names it): DeepSpeed documents no ratio to the peak. For ``target`` "hf" the
    parameters the Trainer fills from TrainingArguments that are still missing are "auto" instead (it refuses a
    total_num_steps other than its own step count, a missing warm-up would be DeepSpeed's 1000 steps, not
    ``warmup_steps``, and it fills warmup_max_lr with ``learning_rate``). Parameters both schedulers take are
    kept, as are the ones written or remembered; a type DeepSpeed does not define keeps its params."""
    from core.lr_schedules import scheduler_param_default
    from core.schema.optimizer import SCHEDULER_PEAK_LR, SCHEDULERS

    out = copy.deepcopy(dict(config))
    if "scheduler" not in out and new_type is not None:
        out["scheduler"] = {}
    scheduler = out.get("scheduler")
    if not isinstance(scheduler, dict):
        return out
    if new_type is None:
        # no type, no scheduler: its params go too (the Trainer takes a "scheduler" key as one to build, and DeepSpeed
        # builds none without a type); a section left empty goes
        scheduler.pop("type", None)
        scheduler.pop("params", None)
        if not scheduler:
            del out["scheduler"]
        return out
    scheduler["type"] = new_type
    spec = SCHEDULERS.get(new_type) if isinstance(new_type, str) else None
    params = scheduler.get("params", {})  # none yet (a first scheduler): the new one's are filled all the same
    if spec is None or not isinstance(params, dict):
        return out  # params that are not an object are the user's to correct (the validator names them)
    accepted = {p.name for p in spec.params}
    adapted = _with_remembered({k: v for k, v in params.items() if k in accepted},
                               {k: v for k, v in (remembered or {}).items() if k in accepted})
    if target == "hf":
        for path in HF_TRAINER_FIELDS:
            name = path.removeprefix("scheduler.params.")
            if name != path and name in accepted:
                adapted.setdefault(name, AUTO)
    else:
        if ("total_num_steps" in accepted and "total_num_steps" not in adapted
                and isinstance(train_steps, int) and not isinstance(train_steps, bool) and train_steps >= 1):
            adapted["total_num_steps"] = train_steps
        peak = SCHEDULER_PEAK_LR.get(new_type)
        lr = get_path(out, "optimizer.params.lr")
        if peak in accepted and peak not in adapted and isinstance(lr, int | float) and not isinstance(lr, bool) \
                and math.isfinite(lr):
            found, default = scheduler_param_default(new_type, peak, version)
            if not found or default is not None:  # required, or a number of its own: not the optimizer's lr
                adapted[peak] = lr
    scheduler["params"] = adapted  # even empty: DeepSpeed calls the scheduler with **params, None fails
    return out


def _with_remembered(params: dict[str, Any], remembered: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the ``remembered`` ones it lacks added, each before the next remembered key it has (the order
    they had before the switch away), else at the end."""
    order = list(params)
    names = list(remembered)
    for at, key in enumerate(names):
        if key in params:
            continue
        later = next((order.index(n) for n in names[at + 1:] if n in order), len(order))
        order.insert(later, key)
    return {k: params[k] if k in params else copy.deepcopy(remembered[k]) for k in order}


def trainer_batch_arguments(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The Trainer batch arguments ``config`` leaves to TrainingArguments (what the Batch page asks for and the
    HF export passes): ``per_device_train_batch_size`` for an "auto" micro batch, or for a missing one beside an
    "auto" train_batch_size (the Trainer computes that as GPUs × per-device batch × accumulation, so the micro
    batch DeepSpeed derives from it is the per-device batch); ``gradient_accumulation_steps`` for an "auto" one
    only: a written one must equal the argument, and a missing one is accelerate's 1 (``as_accelerate_passes``)."""
    out = []
    if config.get(MB) == AUTO or (config.get(TB) == AUTO and config.get(MB) is None):
        out.append("per_device_train_batch_size")
    if config.get(GA) == AUTO:
        out.append("gradient_accumulation_steps")
    return tuple(out)


def fill_batch_autos(config: Mapping[str, Any], per_device_train_batch_size: int,
                     gradient_accumulation_steps: int) -> dict[str, Any]:
    """A copy of ``config`` with its batch keys as the HF Trainer and accelerate hand them to DeepSpeed: the
    arguments ``trainer_batch_arguments`` names filled in, a missing accumulation as accelerate's 1, and an "auto"
    train_batch_size removed (the Trainer writes world size × the two, exactly what DeepSpeed derives when it is
    absent, for whatever GPU count it runs on)."""
    out = as_accelerate_passes(copy.deepcopy(dict(config)))
    given = trainer_batch_arguments(config)
    if "per_device_train_batch_size" in given:
        out[MB] = _positive_int("per_device_train_batch_size", per_device_train_batch_size)
    if "gradient_accumulation_steps" in given:
        out[GA] = _positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    if out.get(TB) == AUTO:
        del out[TB]
    return out
