"""Export forms of a config: minimal (only what differs from defaults), explicit (every default of the
sections in use written out), a diff against a baseline, and ready-to-paste launch snippets.

Pure functions (data in, data out); the schema (``core.schema``) says what the defaults are.
"""

from __future__ import annotations

import copy
import difflib
import enum
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from core.autofill import AUTO, HF_TRAINER_FIELDS
from core.findings import delete_path, get_path, join_path, set_path, split_path
from core.io import dump_config
from core.rules.context import Context
from core.schema import DEFAULT_VERSION, DeepSpeedConfig
from core.schema.base import section_kind
from core.schema.walk import SchemaField, field_exists, section_fields, unique_fields
from core.validate import validate


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _same(value: Any, default: Any) -> bool:
    default = _plain(default)
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    if isinstance(value, int | float) and isinstance(default, int | float):
        return value == default
    return type(value) is type(default) and value == default


def strip_defaults(config: Mapping[str, Any], model: type[BaseModel] = DeepSpeedConfig) -> dict[str, Any]:
    """The config without the values that equal the schema default (unknown keys and "auto" kept).

    Only where DeepSpeed itself fills the default in: at the top level (read key by key with a default)
    and in strict (pydantic) sections. Lenient nested sections are kept as written, because DeepSpeed
    hands some of them on as raw dicts that later code indexes (``data_efficiency``). A section left
    empty is dropped only where the section itself defaults to its defaults (``fp16``); an optional
    section (``offload_param``, default None) stays, as ``{}``, because its presence can matter.
    """
    if model is not DeepSpeedConfig and section_kind(model) == "lenient":
        return copy.deepcopy(dict(config))
    fields = section_fields(model)
    out: dict[str, Any] = {}
    for key, value in config.items():
        field = fields.get(key)
        if field is None:
            out[key] = value
            continue
        if field.model is not None and isinstance(value, Mapping):
            inner = strip_defaults(value, field.model)
            if inner or field.default is None:
                out[key] = inner
            continue
        if field.info.is_required() or not _same(value, field.default):
            out[key] = value
    return out


def _json_default(field: SchemaField) -> tuple[bool, Any]:
    """(True, the default as JSON data) when the field has a default worth writing out, else (False, None)."""
    if field.info.is_required():
        return False, None
    default = _plain(field.default)
    if default is None:
        return False, None  # "not set" is not a value one can write; null may mean something else
    try:
        json.dumps(default, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, copy.deepcopy(default)


def explicit_config(config: Mapping[str, Any], version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """The config with every default of every section it uses written out (the opposite of ``strip_defaults``).

    Which sections: the top level, and every section the config already has (a dict under a section key),
    recursively. A section the config does not have is not added, even with its defaults: an absent
    section already *is* its defaults, adding ``tensorboard``/``wandb``/``flops_profiler`` … to every file
    would bury what the user chose, and an optional section (``offload_param``, default None) switches
    behaviour on by merely being present. So only sections present in the file are completed.

    Which fields: those that exist in DeepSpeed ``version``, are not deprecated (writing a deprecated key
    would earn a warning the file did not have) nor replace a deprecated key the section already uses
    (DeepSpeed refuses both together), apply to the config's ZeRO stage (stage-3 knobs are not written
    into a stage-2 file, where they would be flagged as unused) and have a JSON default other than None
    (a None default means "not set", which has no written form). Finally a default the validator rejects
    where the file had no error (``tensor_parallel.dtype``: DeepSpeed wants a torch.dtype, which JSON
    cannot express) is left out again, so the explicit file is never worse than the file as written.

    Values already written, under any spelling (name or alias), are kept as they are; defaults are added
    after them under the spelling DeepSpeed documents (the alias, else the name). Unknown keys are kept.
    Lenient sections (which DeepSpeed hands on as raw dicts) are kept as written, mirroring
    ``strip_defaults``. The input is not modified.
    """
    added: list[str] = []
    out = _fill(config, version, DeepSpeedConfig, Context(dict(config)).stage, "", added)
    if not added:
        return out
    before = {(f.code, f.path) for f in validate(dict(config), version=version).errors}
    for _ in range(3):
        new = [f.path for f in validate(out, version=version).errors if (f.code, f.path) not in before]
        drop = {a for p in new for a in added if a == p or a.startswith(p + ".")}
        if new and not drop:  # the error is about a written key: drop what was added beside it
            drop = {a for p in new for a in added if _parent(a) == _parent(p)}
        if not drop:
            break
        for path in drop:
            delete_path(out, path)
        added = [a for a in added if a not in drop]
    return out


def _parent(path: str) -> str:
    keys = split_path(path)
    out = ""
    for key in keys[:-1]:
        out = join_path(out, key)
    return out


def _fill(config: Mapping[str, Any], version: str, model: type[BaseModel], stage: int, prefix: str,
          added: list[str]) -> dict[str, Any]:
    """``explicit_config`` of one section (``prefix`` is its path); the paths of the defaults it writes
    are appended to ``added``."""
    if model is not DeepSpeedConfig and section_kind(model) == "lenient":
        return copy.deepcopy(dict(config))
    fields = section_fields(model)
    out: dict[str, Any] = {}
    for key, value in config.items():
        field = fields.get(key)
        if field is not None and field.model is not None and isinstance(value, Mapping):
            out[key] = _fill(value, version, field.model, stage, join_path(prefix, key), added)
        else:
            out[key] = copy.deepcopy(value)
    replaced = {f.meta.replaced_by for f in unique_fields(model)
                if f.meta.deprecated and f.meta.replaced_by and any(k in config for k in f.keys)}
    for field in unique_fields(model):
        if field.model is not None or any(k in config for k in field.keys):
            continue
        if field.meta.deprecated or not field_exists(field, prefix, version) or replaced & set(field.keys):
            continue
        if field.meta.stages is not None and stage not in field.meta.stages:
            continue
        has_default, default = _json_default(field)
        if has_default:
            key = field.alias or field.name
            out[key] = default
            added.append(join_path(prefix, key))
    return out


def unified_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the two configs as exported JSON ("" when they are equal)."""
    lines = difflib.unified_diff(
        dump_config(dict(before)).splitlines(keepends=True), dump_config(dict(after)).splitlines(keepends=True),
        fromfile="baseline/ds_config.json", tofile="current/ds_config.json",
    )
    return "".join(lines)


def leaf_values(config: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted path (``core.findings.join_path``, dots in keys escaped) → leaf value; lists and empty
    sections are leaves."""
    if not isinstance(config, Mapping) or (prefix and not config):
        return {prefix: config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(leaf_values(value, join_path(prefix, str(key))))
    return out


def key_differences(left: Mapping[str, Any], right: Mapping[str, Any]) -> list[dict[str, str]]:
    """The leaves whose values differ between two configs, sorted by path: ``{"key", "left", "right"}``
    with the values as JSON ("—" where absent). ``1``, ``1.0`` and ``true`` count as different."""
    a, b = leaf_values(left), leaf_values(right)
    missing = object()
    rows = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, missing), b.get(key, missing)
        if va != vb or type(va) is not type(vb):
            rows.append({"key": key, "left": "—" if va is missing else json.dumps(va),
                         "right": "—" if vb is missing else json.dumps(vb)})
    return rows


#: How the HF Trainer export keeps the config and TrainingArguments in agreement.
HF_MODES = ("auto", "match")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def hf_training_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    """The TrainingArguments that agree with the config's explicit values (what the HF Trainer checks)."""
    args: dict[str, Any] = {}
    micro, accum = config.get("train_micro_batch_size_per_gpu"), config.get("gradient_accumulation_steps")
    if isinstance(micro, int) and not isinstance(micro, bool):
        args["per_device_train_batch_size"] = micro
    if isinstance(accum, int) and not isinstance(accum, bool):
        args["gradient_accumulation_steps"] = accum
    if _number(config.get("gradient_clipping")):
        args["max_grad_norm"] = config["gradient_clipping"]
    lr = get_path(config, "optimizer.params.lr")
    peak = get_path(config, "scheduler.params.warmup_max_lr")
    if _number(lr) or _number(peak):
        args["learning_rate"] = lr if _number(lr) else peak
    betas = get_path(config, "optimizer.params.betas")
    if isinstance(betas, list) and len(betas) == 2 and all(_number(b) for b in betas):
        args["adam_beta1"], args["adam_beta2"] = betas
    for path, name in (("optimizer.params.eps", "adam_epsilon"), ("optimizer.params.weight_decay", "weight_decay")):
        if _number(get_path(config, path)):
            args[name] = get_path(config, path)
    warmup = get_path(config, "scheduler.params.warmup_num_steps")
    total = get_path(config, "scheduler.params.total_num_steps")
    if isinstance(warmup, int) and not isinstance(warmup, bool):
        args["warmup_steps"] = warmup
    if _number(total) and float(total).is_integer():
        args["max_steps"] = int(total)
    for section in ("fp16", "bf16"):
        if get_path(config, f"{section}.enabled") is True:
            args[section] = True
    return args


def hf_trainer_export(config: Mapping[str, Any], mode: str = "auto", trainer_values: Mapping[str, Any] | None = None,
                      ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(config, TrainingArguments keyword arguments, notes) that the HF Trainer accepts together.

    ``mode`` "auto": every field the Trainer fills that the config sets becomes "auto", and the arguments carry
    the values (same training, one place to change them). "match": the config keeps its values and the
    arguments repeat them. Either way train_batch_size becomes "auto" (the Trainer computes it from the GPU
    count it is launched on), and a warm-up peak that differs from the learning rate follows the learning rate
    (the Trainer requires them equal), which a note says. ``trainer_values`` are TrainingArguments for what
    the config does not say (its "auto" batch: e.g. the per-device batch the memory estimate assumed)."""
    if mode not in HF_MODES:
        raise ValueError(f"mode must be one of {', '.join(HF_MODES)}, got {mode!r}")
    args = hf_training_arguments(config)
    for name, value in (trainer_values or {}).items():
        args.setdefault(name, value)  # what the config leaves to the Trainer ("auto"), as the user plans it
    out = copy.deepcopy(dict(config))
    notes: list[str] = []
    missing = object()
    for path in HF_TRAINER_FIELDS:
        value = get_path(out, path, missing)
        if value is missing or value == AUTO:
            continue
        if mode == "auto" or path == "train_batch_size":
            set_path(out, path, AUTO)
    peak = get_path(config, "scheduler.params.warmup_max_lr")
    if _number(peak) and "learning_rate" in args and peak != args["learning_rate"]:
        set_path(out, "scheduler.params.warmup_max_lr", AUTO)
        notes.append(f"scheduler.params.warmup_max_lr {peak:g} differed from the learning rate "
                     f"{args['learning_rate']:g}; the HF Trainer requires them equal, so it now follows learning_rate.")
    return out, args, notes


def hf_snippet(args: Mapping[str, Any], file_name: str = "ds_config.json") -> str:
    """Python for the HF Trainer with these TrainingArguments (the DeepSpeed file passed by name)."""
    lines = ['    output_dir="out",', f'    deepspeed="{file_name}",']
    lines += [f"    {name}={value!r}," for name, value in args.items()]
    return ("from transformers import Trainer, TrainingArguments\n\n"
            "args = TrainingArguments(\n" + "\n".join(lines) + "\n)\n"
            "trainer = Trainer(model=model, args=args, train_dataset=train_dataset)\n"
            "trainer.train()")


def launch_snippets(context: Mapping[str, Any], stage: int, file_name: str = "ds_config.json",
                    config: Mapping[str, Any] | None = None, hf_mode: str = "auto",
                    trainer_values: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Ready-to-paste launch commands for the config, by launcher (the HF one with the TrainingArguments
    ``hf_trainer_export`` gives for ``config``)."""
    nodes, gpus = int(context["nodes"]), int(context["gpus_per_node"])
    world = nodes * gpus
    if nodes > 1:
        hosts = "\n".join(f"node{i + 1} slots={gpus}" for i in range(nodes))
        deepspeed = (
            f"# hostfile (one line per node)\ncat > hostfile <<'EOF'\n{hosts}\nEOF\n\n"
            f"deepspeed --hostfile hostfile --num_nodes {nodes} --num_gpus {gpus} \\\n"
            f"    train.py --deepspeed --deepspeed_config {file_name}"
        )
    else:
        deepspeed = f"deepspeed --num_gpus {gpus} train.py --deepspeed --deepspeed_config {file_name}"
    hf_args = hf_trainer_export(config, hf_mode, trainer_values)[1] if config is not None else {}
    hf = (hf_snippet(hf_args, file_name)
          + f"\n\n# launch: deepspeed --num_gpus {gpus} train.py   (or torchrun --nproc_per_node {gpus} train.py)")
    accelerate = (
        "# accelerate.yaml\n"
        "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: DEEPSPEED\n"
        "deepspeed_config:\n"
        f"  deepspeed_config_file: {file_name}\n"
        f"  zero3_init_flag: {'true' if stage == 3 else 'false'}\n"
        f"num_machines: {nodes}\n"
        f"num_processes: {world}\n"
        "machine_rank: 0\n\n"
        "accelerate launch --config_file accelerate.yaml train.py"
    )
    lightning = (
        "from lightning.pytorch import Trainer\n"
        "from lightning.pytorch.strategies import DeepSpeedStrategy\n\n"
        f'trainer = Trainer(accelerator="gpu", devices={gpus}, num_nodes={nodes},\n'
        f'                  strategy=DeepSpeedStrategy(config="{file_name}"))\n'
        "trainer.fit(model)"
    )
    return {"deepspeed launcher": deepspeed, "HF Trainer": hf, "accelerate launch": accelerate,
            "Lightning": lightning}
