"""Key checks from the schema: unknown and misplaced keys, keys of another DeepSpeed version, alias clashes
(types and bounds are in ``core.rules.typecheck``)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import replace
from functools import cache, lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from core import versions
from core.effective import legacy_zero_keys
from core.findings import Finding, Fix, FixOp, brief, get_path, join_index, join_path
from core.rules.context import Context, switched_on
from core.rules.fixes import MAX_SUGGESTED_PER_SECTION
from core.rules.initialize import MESH_KEYS
from core.schema.base import version_tuple
from core.schema.optimizer import OPTIMIZERS, SCHEDULERS, TORCH_OPTIMIZER_PARAMS, TORCH_SCHEDULER_PARAMS
from core.schema.root import DeepSpeedConfig
from core.schema.walk import (
    SchemaField,
    field_exists,
    is_open,
    is_strict,
    key_index,
    resolve,
    section_fields,
    section_meta,
)

ROOT = DeepSpeedConfig

# Common misspellings that difflib alone ranks poorly.
_SPELLING = {"optimisation": "optimization", "optimiser": "optimizer", "-": "_"}


def _normalise(key: str) -> str:
    out = key.strip().lower()
    for wrong, right in _SPELLING.items():
        out = out.replace(wrong, right)
    return out


def did_you_mean(key: str, candidates: list[str] | tuple[str, ...]) -> str | None:
    """The closest known key to a misspelt one (None when nothing is close)."""
    return _suggestion(_normalise(key), tuple(candidates))


# Bounded: the keys are the user's. The same unknown key is looked up once per release when a config is checked
# against all 36 (``core.versions.matrix.works_with``), and most releases share their candidates: difflib was a
# third of that check for a config with thousands of unknown keys.
@lru_cache(maxsize=4096)
def _suggestion(norm: str, candidates: tuple[str, ...]) -> str | None:
    return _closest(norm, _by_normalised(candidates))


@cache
def _by_normalised(candidates: tuple[str, ...]) -> dict[str, str]:
    # the same candidate list comes back for every unknown key of a section: normalise it once
    return {_normalise(c): c for c in candidates}


def _closest(norm: str, by_norm: dict[str, str]) -> str | None:
    if norm in by_norm:
        return by_norm[norm]
    match = difflib.get_close_matches(norm, list(by_norm), n=1, cutoff=0.75)
    return by_norm[match[0]] if match else None


@cache
def _known_keys(version: str, prefix: str, model: type[BaseModel]) -> tuple[str, ...]:
    """The key spellings of ``model`` that release ``version`` reads at ``prefix`` (asked once per section)."""
    return tuple(k for k, f in section_fields(model).items() if _exists_in(version, prefix, f, k))


def _join(prefix: str, key: str) -> str:
    return join_path(prefix, key)


def page_of(path: str) -> str | None:
    """The app page of the top-level section holding ``path`` (None for a key no page shows)."""
    top = path.split(".")[0]
    field = section_fields(ROOT).get(top)
    return field.meta.page if field else None


def _version_label(version: str) -> str:
    return f"DeepSpeed {version}"


def preset_file(ctx: Context) -> Iterator[Finding]:
    """A preset file (metadata + config) given where a ds_config belongs: DeepSpeed reads neither key."""
    from core.presets import PRESET_KEYS, is_preset_document

    if not is_preset_document(ctx.config):
        return
    inner = ctx.config["config"]
    # the fix lifts the config out of the wrapper; a config that itself holds `meta` or `config` would collide
    fix = None if PRESET_KEYS & set(inner) else Fix(
        "Keep only the `config` object",
        (*(FixOp("move", join_path("config", key), to=join_path("", key)) for key in inner),
         FixOp("delete", "config"), FixOp("delete", "meta")))
    yield Finding(
        "error", "config.preset-file", "config",
        "This is a Config Studio preset file ({\"meta\": ..., \"config\": ...}), not a DeepSpeed config: "
        "DeepSpeed ignores both top-level keys and would run with none of the settings under `config`.",
        suggestion="Give DeepSpeed the object under `config` (the fix below does; `dsconfig export --preset NAME` "
        "writes it too, with the preset's folder on DSCONFIG_PRESETS_PATH), or open the preset on the Presets page.",
        fix=fix,
    )


def check_keys(ctx: Context) -> Iterator[Finding]:
    """Unknown keys at any depth, misplaced keys, keys of another version, alias clashes."""
    yield from _walk_keys(ctx, ctx.config, ROOT, "")


def _exists(ctx: Context, prefix: str, field: SchemaField, key: str) -> bool:
    """Whether DeepSpeed ``ctx.version`` reads this key: its generated profile says, where it can."""
    return _exists_in(ctx.version, prefix, field, key)


def _exists_in(version: str, prefix: str, field: SchemaField, key: str) -> bool:
    known = versions.key_known(version, _profile_prefix(prefix), key)
    return field_exists(field, prefix, version) if known is None else known


def _profile_prefix(prefix: str) -> str:
    # a list item or dict value of a section ("a.b[2]", "a.b.name") is profiled under the section
    return prefix.split("[")[0]


def _strict(ctx: Context, model: type[BaseModel], prefix: str) -> bool:
    """A pydantic section in this release (profile), else what the schema says."""
    strict = versions.section_strict(ctx.version, _profile_prefix(prefix))
    return is_strict(model) if strict is None else strict and is_strict(model)




def _walk_keys(ctx: Context, data: dict[str, Any], model: type[BaseModel], prefix: str) -> Iterator[Finding]:
    fields = section_fields(model)
    strict = _strict(ctx, model, prefix)
    unknown = 0
    for key, value in data.items():
        path = _join(prefix, key)
        field = fields.get(key)
        if field is None:
            if not isinstance(key, str):
                continue
            if versions.key_known(ctx.version, _profile_prefix(prefix), key):
                continue  # this release reads a key the schema does not describe
            if not prefix and key == EDITOR_SCHEMA_KEY:
                continue  # the editor's pointer to `dsconfig schema` (README); DeepSpeed ignores top-level unknowns
            if not prefix and key in MESH_KEYS and all(k in data for k in MESH_KEYS):
                continue  # deepspeed.initialize reads it beside sequence_parallel_size (initialize.sequence_mesh)
            if not is_open(model):
                unknown += 1
                yield _unknown_key(ctx, key, path, prefix, model, value, strict,
                                   suggest=unknown <= MAX_SUGGESTED_PER_SECTION)
            continue
        if not prefix and key == "bfloat16" and data.get("bf16") is not None:
            continue  # DeepSpeed ignores `bfloat16` when `bf16` is set (reported by a rule)
        if not prefix and key in legacy_zero_keys(data):
            continue  # the boolean zero_optimization reads it; the type check judges its value
        # a documented key DeepSpeed ignores, unless this release's recorded reads show it reads it (aio.thread_count
        # before 0.16.4)
        ignored = field.meta.extra.get("ignored") and not versions.key_known(ctx.version, _profile_prefix(prefix), key)
        if not ignored and not _exists(ctx, prefix, field, key):
            yield from _wrong_version(ctx, field, path, strict and value != "auto", prefix, key)
            continue
        if field.alias and key == field.name and field.alias in data and "auto" not in (value, data[field.alias]):
            yield Finding(
                "error", "keys.alias-clash", path,
                f"`{field.name}` and its alias `{field.alias}` are both set in {prefix or 'the config'}; "
                "DeepSpeed reads the alias and rejects the other spelling as an unknown key.",
                suggestion=f"Keep one of them (the value of `{field.alias}` is the one DeepSpeed reads).",
                fix=Fix(f"Remove `{path}`", (FixOp("delete", path),)),
                page=page_of(path),
            )
        if ignored:
            new = field.meta.replaced_by
            new_field = fields.get(new) if new else None
            if new_field is None or not _exists(ctx, prefix, new_field, new):
                new = None  # the replacement is not read by this release either
            yield Finding(
                "warning", "keys.ignored", path,
                f"`{path}` appears in the DeepSpeed docs, but DeepSpeed {ctx.version} ignores it."
                + (f" {field.meta.doc_note}" if field.meta.doc_note and new else ""),
                suggestion=f"Use `{new}` instead." if new else "Remove it.",
                fix=Fix(f"Rename to `{new}`", (FixOp("move", path, to=_join(prefix, new)),))
                if new and new not in data else None,
                page=page_of(path),
            )
        if field.model is not None and isinstance(value, dict):
            yield from _walk_keys(ctx, value, field.model, path)
        elif field.item_model is not None and field.container == "list" and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield from _walk_keys(ctx, item, field.item_model, join_index(path, index))
        elif field.item_model is not None and field.container == "dict" and isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    yield from _walk_keys(ctx, item, field.item_model, _join(path, str(name)))


def _wrong_version(
    ctx: Context, field: SchemaField, path: str, strict: bool, prefix: str, key: str
) -> Iterator[Finding]:
    """A key the schema knows that ``ctx.version`` does not read (``strict``: its section rejects it; a key
    whose value is "auto" never is: DeepSpeed's config models drop those before checking)."""
    if prefix == "" and key in versions.removed_top_level_keys(ctx.version):
        return  # top-level removed keys get their own rule with DeepSpeed's message
    added, removed = versions.history(_profile_prefix(prefix), key)
    if prefix == "zero_optimization" and removed and version_tuple(ctx.version) >= version_tuple(removed):
        return  # reported by the removed-keys rule
    if added is None and removed is None:
        added, removed = field.meta.added, field.meta.removed
    if added and version_tuple(ctx.version) < version_tuple(added):
        when = f"was added in DeepSpeed {added}"
    elif removed:
        when = f"was removed in DeepSpeed {removed}"
    else:
        when = f"is not read by DeepSpeed {ctx.version}"
    # switched on (the value asks for what the releases that read the key do): removing it is not "safe", whether
    # this release refuses the key or ignores it (the config may be meant for one of those releases)
    value = get_path(ctx.config, path)
    on = switched_on(_profile_prefix(prefix), key, value)
    said = f"`{path}` {when}; {_version_label(ctx.version)} " + (
        "rejects it as an unknown key" if strict else "silently ignores it")
    if on:
        found, default = versions.newest_default(_profile_prefix(prefix), key)
        # "on" is what the value asks for, which may be false (compute_grad_norm false skips a default behaviour)
        asks = ("it is switched on" if isinstance(value, dict) or (value is True and not found) else
                f"its value {brief(value)} asks for something the releases that read it do"
                + (f" (their default is {brief(default)})" if found else ""))
        said += f", and {asks}: " + (
            "removing it lets this release load the config, but training then runs without what it asks for."
            if strict else "with this release training runs without what it asks for.")
    yield Finding(
        "error" if strict else "warning", "keys.not-in-version-on" if on else "keys.not-in-version", path,
        said if on else f"{said}.",
        suggestion="Validate for the DeepSpeed version you will run (one that has it), or remove it knowing this "
        "release then runs without what it asks for." if on else "Remove it, or validate for the DeepSpeed version you "
        "will run.",
        fix=Fix(f"Remove `{path}`", (FixOp("delete", path),)), page=page_of(path),
    )


def _unknown_key(
    ctx: Context, key: str, path: str, prefix: str, model: type[BaseModel], value: Any, strict: bool,
    suggest: bool = True,
) -> Finding:
    doc_only = section_meta(model).get("doc_only", {})
    if key in doc_only:
        dropped = strict and value == "auto"  # a pydantic section drops "auto" values before it checks its keys
        strict = strict and not dropped
        # removing a switched-on one loads the config but drops what it asks for: its own code, an unsafe fix
        on = strict and switched_on(_profile_prefix(prefix), key, value)
        return Finding(
            "error" if strict else "warning", "keys.doc-only-on" if on else "keys.doc-only", path,
            f"`{key}` {'in `' + prefix + '`' if prefix else 'at the top level'} is mentioned in the DeepSpeed "
            f"docs, but DeepSpeed {'rejects' if strict else 'ignores'} it"
            + (' (its value "auto" is dropped before the section is checked)' if dropped else "")
            + f": {doc_only[key]}"
            + (" Its value asks for something: removing it loads the config without that." if on else ""),
            suggestion="Write what it means under the key DeepSpeed reads (above), or remove it."
            if on else "Remove it.",
            fix=Fix(f"Remove `{path}`", (FixOp("delete", path),)), page=page_of(path),
        )
    if is_comment_key(key):
        return _comment_key(ctx, key, path, prefix, strict)
    guess = did_you_mean(key, _known_keys(ctx.version, prefix, model)) if suggest else None
    moved_to = _destination(key, prefix, guess)
    misfit = None if moved_to is None else _misfit(moved_to[1], value)
    if prefix == "":
        return _unknown_top_level(key, guess, moved_to, misfit)
    found = _unknown_nested(key, path, prefix, value, strict, guess, moved_to, misfit)
    if moved_to is not None and moved_to[0] == "move" and moved_to[1].startswith("fp16.") and not ctx.meaning.fp16:
        # moved into an fp16 section that is off, the key would do nothing there either (bf16's loss scaling)
        return replace(found, suggestion=f"`{key}` is an fp16 setting (`{moved_to[1]}`) and fp16 is off, so it does "
                       "nothing there either: remove it.", fix=Fix(f"Remove `{path}`", (FixOp("delete", path),)))
    return found


#: The top-level key a JSON editor reads the config's JSON Schema from (``dsconfig schema``, README): not a
#: setting, and DeepSpeed ignores unknown top-level keys, so it gets no finding.
EDITOR_SCHEMA_KEY = "$schema"

#: Keys people write as comments in JSON, which has none ("_comment", "//", "# note", "description").
_COMMENT_NAMES = frozenset({"comment", "comments", "note", "notes", "description", "desc", "remark", "remarks"})


def is_comment_key(key: str) -> bool:
    """Whether ``key`` is a comment by the usual JSON conventions (never a misspelt setting to rename)."""
    return key.startswith(("_", "#", "//")) or key.strip().lower() in _COMMENT_NAMES


def _comment_key(ctx: Context, key: str, path: str, prefix: str, strict: bool) -> Finding:
    if not strict:
        where = f"in `{prefix}`" if prefix else "at the top level"
        return Finding(
            "info", "keys.comment", path,
            f"`{key}` {where} looks like a comment: DeepSpeed ignores keys it does not know here, so it changes "
            "nothing.", page=page_of(path),
        )
    # A strict section rejects it like any unknown key; the top level ignores it, so the comment can live there
    # (under a name of its own when the top level already has that key).
    dest = next((name for name in (key, f"{key}_{prefix.replace('.', '_')}") if name not in ctx.config), None)
    fix = (Fix(f"Move `{path}` to the top level", (FixOp("move", path, to=_join("", dest)),)) if dest
           else Fix(f"Remove `{path}`", (FixOp("delete", path),)))
    return Finding(
        "error", "keys.unknown", path,
        f"Unknown key `{key}` in `{prefix}`: it looks like a comment, but this section rejects keys it does not "
        "know (\"Extra inputs are not permitted\").",
        suggestion="Keep comments at the top level, where DeepSpeed ignores unknown keys.", fix=fix,
        page=page_of(path),
    )


# Bounded: the keys are the user's. Checked against all 36 releases (``core.versions.matrix.works_with``), a config
# with thousands of unknown top-level keys got the same warning built 36 times for each.
@lru_cache(maxsize=4096)
def _unknown_top_level(key: str, guess: str | None, moved_to: tuple[str, str] | None, misfit: str | None) -> Finding:
    return _unknown_nested(key, _join("", key), "", None, False, guess, moved_to, misfit)


@cache
def _constructor_keywords(section: str) -> frozenset[str]:
    """Every keyword an optimizer (``section`` "optimizer") or scheduler ("scheduler") the schema knows takes in
    its ``params``: DeepSpeed's own classes and torch's."""
    if section == "optimizer":
        own = {p.name for spec in OPTIMIZERS.values() for p in spec.params}
        return frozenset(own.union(*TORCH_OPTIMIZER_PARAMS.values()))
    own = {p.name for spec in SCHEDULERS.values() for p in spec.params}
    return frozenset(own.union(*(names for names, _ in TORCH_SCHEDULER_PARAMS.values())))


def _destination(key: str, prefix: str, guess: str | None) -> tuple[str, str] | None:
    """Where a fix would put an unknown key: ("move", path) when it is a field of another section, or a keyword of
    the optimizer or scheduler written beside ``params`` instead of inside it (``optimizer.lr``), ("rename", path)
    when it looks like a misspelt field of its own section, else None."""
    if prefix in ("optimizer", "scheduler") and key in _constructor_keywords(prefix):
        return "move", _join(f"{prefix}.params", key)
    # Where else this key is a field; never "move" a key into itself or one of its own parents, nor into a deprecated
    # key (the top-level allgather_size is zero_optimization.allgather_bucket_size now), and only where there is one
    # such place: `type` or `params` in fp16 could be the optimizer's, the scheduler's or a checkpoint writer's.
    elsewhere = [
        p for p in key_index(ROOT).get(key, ())
        if p != prefix and not (prefix + ".").startswith(_join(p, key) + ".") and _current_field(_join(p, key))
    ]
    if len(elsewhere) == 1:
        return "move", _join(elsewhere[0], key)
    return ("rename", _join(prefix, guess)) if guess else None


def _current_field(path: str) -> bool:
    """``path`` is a field of the schema that is not deprecated."""
    field = resolve(ROOT, path)
    return field is not None and not field.meta.deprecated


#: Values up to this size (as JSON text) have their ``_misfit`` remembered; a larger one is judged each time.
_MISFIT_CACHED_CHARS = 4096


def _misfit(dest: str, value: Any) -> str | None:
    """Why the schema refuses ``value`` at ``dest`` (its section validated with that key alone), or None when it
    takes it: a rename that puts an object where a number belongs turns an ignored key into an error."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return _schema_refusal(dest, value)
    return _schema_refusal(dest, value) if len(text) > _MISFIT_CACHED_CHARS else _misfit_of_json(dest, text)


# Bounded in entries and (above) in size. ``works_with`` checks the same config against all 36 releases: validating
# each misspelt key's value for each of them made it 2.6x slower for a config of 2,000 unknown keys.
@lru_cache(maxsize=1024)
def _misfit_of_json(dest: str, text: str) -> str | None:
    return _schema_refusal(dest, json.loads(text))


def _schema_refusal(dest: str, value: Any) -> str | None:
    parent, _, key = dest.rpartition(".")
    owner = ROOT if parent == "" else getattr(resolve(ROOT, parent), "model", None)
    if owner is None:
        return None
    try:
        owner.model_validate({key: value})
    except ValidationError as exc:
        # inside a section only its own shape counts: a misspelt key within it gets its own finding once moved
        in_value = getattr(resolve(ROOT, dest), "model", None) is None
        error = next((e for e in exc.errors(include_url=False)
                      if e["loc"] == (key,) or (in_value and e["loc"][:1] == (key,))), None)
        if error is None:
            return None
        # pydantic names the schema's class ("instance of OptimizerConfig"); the user wrote JSON
        return "it takes an object ({...})" if error["type"] in ("model_type", "dict_type") else error["msg"]
    except (ArithmeticError, RecursionError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _unknown_nested(key: str, path: str, prefix: str, value: Any, strict: bool, guess: str | None,
                    moved_to: tuple[str, str] | None, misfit: str | None) -> Finding:
    shown = key or '""'  # an empty key would read as nothing between the backticks
    where = f"in `{prefix}`" if prefix else "at the top level"
    fix = None
    if moved_to is not None:
        how, dest = moved_to
        if how == "move":
            parent = dest.rpartition(".")[0]
            suggestion = (f"`{shown}` belongs in `{parent}`: move it to `{dest}`." if parent
                          else f"`{shown}` is a top-level setting: move it out of `{prefix}` to the top level of the "
                          "config.")
            fix = Fix(f"Move `{path}` to `{dest}`", (FixOp("move", path, to=dest),))
        else:
            suggestion = f"Did you mean `{guess}`?"
            fix = Fix(f"Rename `{path}` to `{dest}`", (FixOp("move", path, to=dest),))
        if misfit is not None:  # no fix: moved as it is, the value would be refused there
            suggestion += f" Its value does not fit there as it is ({misfit.rstrip('.')}): rewrite it in that form."
            fix = None
    else:
        suggestion = "Check the spelling against the DeepSpeed documentation, or remove it."
    if prefix == "":
        message = (
            f"Unknown top-level key `{shown}`: DeepSpeed silently ignores it, so whatever it was meant to "
            "configure is not configured."
        )
        return Finding("warning", "keys.unknown-top-level", path, message, suggestion, fix, page_of(guess or key))
    if strict and value == "auto":
        message = (f"Unknown key `{shown}` {where}: DeepSpeed drops keys whose value is \"auto\" before it checks "
                   "this section, so it is ignored.")
        return Finding("warning", "keys.unknown-auto", path, message, suggestion, fix, page_of(path))
    if strict:
        message = f"Unknown key `{shown}` {where}: DeepSpeed rejects the config (\"Extra inputs are not permitted\")."
        return Finding("error", "keys.unknown", path, message, suggestion, fix, page_of(path))
    message = f"Unknown key `{shown}` {where}: DeepSpeed silently ignores it."
    return Finding("warning", "keys.unknown-ignored", path, message, suggestion, fix, page_of(path))
