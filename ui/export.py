"""Export helpers of the Review page: minimal form, diff against the baseline, launch snippets."""

from __future__ import annotations

import copy
import difflib
import enum
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from core import dump_config
from core.schema import DeepSpeedConfig
from core.schema.base import section_kind
from core.schema.walk import section_fields


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


def unified_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the two configs as exported JSON ("" when they are equal)."""
    lines = difflib.unified_diff(
        dump_config(dict(before)).splitlines(keepends=True), dump_config(dict(after)).splitlines(keepends=True),
        fromfile="baseline/ds_config.json", tofile="current/ds_config.json",
    )
    return "".join(lines)


def launch_snippets(context: Mapping[str, Any], stage: int, file_name: str = "ds_config.json") -> dict[str, str]:
    """Ready-to-paste launch commands for the config, by launcher."""
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
    hf = (
        "from transformers import Trainer, TrainingArguments\n\n"
        f'args = TrainingArguments(output_dir="out", deepspeed="{file_name}")\n'
        "trainer = Trainer(model=model, args=args, train_dataset=train_dataset)\n"
        "trainer.train()\n\n"
        f"# launch: deepspeed --num_gpus {gpus} train.py   (or torchrun --nproc_per_node {gpus} train.py)"
    )
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
