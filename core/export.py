"""Export forms of a config: minimal (only what differs from defaults), explicit (every default of the
sections in use written out), a diff against a baseline; the launchers' exports and snippets are in
``core.launchers`` (imported here too).

Pure functions (data in, data out); the release's profile (``core.versions``) and the schema (``core.schema``)
say what the defaults are.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from core.autofill import HF_TRAINER_FIELDS
from core.effective import Effective, effective
from core.findings import delete_path, join_path, plain, split_path
from core.io import dump_config
from core.launchers import (  # noqa: F401 — the launch exports, here too for callers of core.export
    HF_MODES,
    LauncherExports,
    accelerate_export,
    hf_snippet,
    hf_trainer_export,
    hf_training_arguments,
    launch_snippets,
    launch_values,
    launcher_exports,
    lightning_export,
    resolved_export,
    variant_name,
)
from core.rules.context import Context
from core.schema import DEFAULT_VERSION, DeepSpeedConfig
from core.schema.base import section_kind
from core.schema.walk import field_exists, release_default, section_fields, unique_fields
from core.validate import validate

_MISSING = object()


def _same(value: Any, default: Any) -> bool:
    default = plain(default)
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    if isinstance(value, int | float) and isinstance(default, int | float):
        return value == default
    return type(value) is type(default) and value == default


def _section_items(config: Mapping[str, Any], model: type[BaseModel]) -> list[tuple[str, Any, Any]] | None:
    """Each key of a section with its schema field (None for keys the schema does not know); None for a lenient
    nested section, which DeepSpeed hands on as written."""
    if model is not DeepSpeedConfig and section_kind(model) == "lenient":
        return None
    fields = section_fields(model)
    return [(key, value, fields.get(key)) for key, value in config.items()]


def strip_defaults(config: Mapping[str, Any], model: type[BaseModel] = DeepSpeedConfig,
                   version: str = DEFAULT_VERSION, prefix: str = "", target: str = "deepspeed") -> dict[str, Any]:
    """The config without the values that equal DeepSpeed ``version``'s default (unknown keys and "auto" kept):
    the release's own default where its profile records it (``gradient_clipping`` is 0.0 up to 0.18.9, 1.0 from
    0.19.0), else the schema's. ``prefix``: the path of the section ``config`` is (for the recursion).

    Only where DeepSpeed itself fills the default in: at the top level (read key by key with a default)
    and in strict (pydantic) sections. Lenient nested sections are kept as written, because DeepSpeed
    hands some of them on as raw dicts that later code indexes (``data_efficiency``). A section left
    empty is dropped only where the section itself defaults to its defaults (``fp16``); an optional
    section (``offload_param``, default None) stays, as ``{}``, because its presence can matter, and so does
    one whose mere presence DeepSpeed reads (``comms_logger``: the schema's ``presence_matters``). A section
    DeepSpeed reads instead of another only while that one is absent keeps the other (``bf16`` before
    ``bfloat16``: the reading of ``core.effective`` must not change). For the HF ``target`` a written
    ``zero_optimization`` stays, with its stage: Accelerate's DeepSpeedPlugin refuses a config without the section.
    """
    items = _section_items(config, model)
    if items is None:
        return copy.deepcopy(dict(config))
    out: dict[str, Any] = {}
    for key, value, field in items:
        if field is None:
            out[key] = value
            continue
        if field.model is not None and isinstance(value, Mapping):
            inner = strip_defaults(value, field.model, version, join_path(prefix, key))
            if inner or field.default is None or field.meta.extra.get("presence_matters"):
                out[key] = inner
            continue
        has_default, default = release_default(field, prefix, version)
        if has_default:
            differs = not _same(value, default)
        else:  # no default worth writing: the schema's (e.g. None) for the newest release, else keep the value
            differs = version != DEFAULT_VERSION or not _same(value, field.default)
        if field.info.is_required() or differs:
            out[key] = value
    if model is DeepSpeedConfig:
        out = _same_reading(config, out)
        zero = config.get("zero_optimization")
        if target == "hf" and isinstance(zero, Mapping):
            kept = {"stage": zero["stage"]} if "stage" in zero else {}
            out = {**out, "zero_optimization": {**kept, **out.get("zero_optimization", {})}}
            out = {key: out[key] for key in config if key in out}  # the file's key order
    return out


def _reading(config: Mapping[str, Any]) -> Effective:
    return replace(effective(config), stage_written=None)  # the written spelling may go; the meaning may not


def _same_reading(config: Mapping[str, Any], stripped: dict[str, Any]) -> dict[str, Any]:
    """``stripped`` with the top-level sections of ``config`` it changed put back (one if one is enough, else all)
    so that DeepSpeed reads it as it reads ``config``: a section of defaults can still matter by being there
    (``"bf16": {"enabled": false}`` shadows a legacy ``bfloat16``, read only when ``bf16`` is absent)."""
    want = _reading(config)
    if _reading(stripped) == want:
        return stripped
    changed = [key for key, value in config.items() if stripped.get(key, _MISSING) is not value]
    # one section put back is the usual mend; if none does it alone, every changed one goes back as written
    mends = [{key: config[key]} for key in changed] + [{key: config[key] for key in changed}]
    out = next((o for o in ({**stripped, **mend} for mend in mends) if _reading(o) == want), dict(config))
    return {key: out[key] for key in config if key in out}  # the file's key order


def explicit_config(config: Mapping[str, Any], version: str = DEFAULT_VERSION,
                    target: str = "deepspeed") -> dict[str, Any]:
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

    For the HF ``target`` no default is written where the HF Trainer checks the file against TrainingArguments
    (``HF_TRAINER_FIELDS``: its ``fill_match`` refuses ``gradient_clipping`` 0.0 beside ``max_grad_norm`` 1.0,
    where the file without the key trains).
    """
    added: list[str] = []
    out = _fill(config, version, DeepSpeedConfig, Context(dict(config)).stage, "", added)
    if target == "hf":
        for path in [a for a in added if a in HF_TRAINER_FIELDS]:
            delete_path(out, path)
            added.remove(path)
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
    items = _section_items(config, model)
    if items is None:
        return copy.deepcopy(dict(config))
    out: dict[str, Any] = {}
    for key, value, field in items:
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
        has_default, default = release_default(field, prefix, version)
        if has_default:
            key = field.alias or field.name
            out[key] = default
            added.append(join_path(prefix, key))
    return out


def unified_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the two configs as exported JSON ("" when they are equal)."""
    return text_diff(dump_config(dict(before)), dump_config(dict(after)), "baseline/ds_config.json",
                     "current/ds_config.json")


def text_diff(before: str, after: str, fromfile: str, tofile: str) -> str:
    """A unified diff of two texts that ``patch`` applies ("" when they are equal): a last line without its newline
    is followed by diff's "\\ No newline at end of file" instead of running into the next line."""
    out = []
    for line in difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                     fromfile, tofile):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


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
