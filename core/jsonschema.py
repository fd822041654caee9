"""The JSON Schema of ``ds_config.json``, generated from the pydantic schema, for editors (VS Code)."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from typing import Any

from pydantic import BaseModel

from core import versions
from core.batch import BATCH_KEYS
from core.findings import join_path
from core.rules.misc import removed_zero_reason
from core.rules.structure import _exists_in, _profile_prefix
from core.schema.base import DEFAULT_VERSION, META_KEY, version_tuple
from core.schema.root import DeepSpeedConfig
from core.schema.walk import SchemaField, is_strict, iter_schema, nested_model, section_fields, unique_fields

SCHEMA_ID = "https://deepspeed-config-studio.local/ds_config.schema.json"


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    if model.__name__ in seen:
        return seen
    seen[model.__name__] = model
    for field in unique_fields(model):
        inner = field.model or nested_model(field.info.annotation)
        if inner is not None:
            _models(inner, seen)
    return seen


def json_schema(version: str = DEFAULT_VERSION, target: str = "deepspeed") -> dict[str, Any]:
    """A draft 2020-12 JSON Schema of the config for DeepSpeed ``version`` and ``target``.

    Every spelling DeepSpeed accepts is a property (``stage3_*`` aliases and the plain names),
    ``"auto"`` is allowed where DeepSpeed or the HF Trainer accepts it, keys of other versions are
    marked, and deprecated keys carry VS Code's ``deprecationMessage``. Which keys ``version`` has, which of its
    sections refuse unknown keys and its numeric bounds come from its generated profile, as for ``validate``; what
    the validator refuses by a rule rather than by the type (null, a string outside the choices DeepSpeed checks,
    an empty string, 0, the deprecated boolean ZeRO form it only warns about) is asked of ``validate`` itself
    (``_refusals``), and pydantic sections take numeric strings for integers as DeepSpeed's lax pydantic does.
    """
    schema = copy.deepcopy(DeepSpeedConfig.model_json_schema(by_alias=True, mode="validation"))
    defs = schema.setdefault("$defs", {})
    models = _models(DeepSpeedConfig, {})
    _adjust(schema, DeepSpeedConfig, version, target, defs)
    for name, model in models.items():
        if name in defs and model is not DeepSpeedConfig:
            own = _own_defs_for_old_spellings(schema, name, model, version, target)
            _adjust(defs[name], model, version, target, defs,
                    prefixes=tuple(p for p in _prefixes().get(model, ()) if p not in own))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = f"DeepSpeed config (ds_config.json) for DeepSpeed {version}, target {target}"
    return schema


def _own_defs_for_old_spellings(
    schema: dict[str, Any], name: str, model: type[BaseModel], version: str, target: str,
) -> tuple[str, ...]:
    """A top-level section that shares its model with another one (``bfloat16``, the old spelling of ``bf16``) gets
    a definition of its own, judged at its own path (the HF Trainer fills ``bf16.enabled``, not
    ``bfloat16.enabled``), when that differs from the shared one; returns the sections that got one."""
    defs = schema["$defs"]
    own = []
    shared: dict[str, Any] | None = None  # the definition judged at every path, once
    for prefix in _prefixes().get(model, ())[1:]:
        prop = schema["properties"].get(prefix)
        refs = [b for b in ([prop, *prop.get("anyOf", ())] if prop else ()) if b.get("$ref") == f"#/$defs/{name}"]
        if "." in prefix or not refs:
            continue
        if shared is None:
            shared = copy.deepcopy(defs[name])
            _adjust(shared, model, version, target, defs)
        alone = copy.deepcopy(defs[name])
        _adjust(alone, model, version, target, defs, prefixes=(prefix,))
        if alone != shared:
            defs[f"{name}__{prefix}"] = alone
            for branch in refs:
                branch["$ref"] = f"#/$defs/{name}__{prefix}"
            own.append(prefix)
    return tuple(own)


def _adjust(
    node: dict[str, Any], model: type[BaseModel], version: str, target: str, defs: dict[str, Any],
    prefixes: tuple[str, ...] | None = None,
) -> None:
    """One section of the schema as DeepSpeed ``version`` reads it (at ``prefixes``, else every path of its model):
    which of its keys that release has, whether it refuses unknown keys, and its numeric bounds all come from the
    release's profile (``core.versions``), asked through the functions the validator asks
    (``core.rules.structure``), never from ``added=``/``removed=``."""
    props: dict[str, Any] = node.get("properties", {})
    prefixes = _prefixes().get(model, ()) if prefixes is None else prefixes
    strict = _release_strict(version, model, prefixes)
    if is_strict(model) and not strict:
        node["additionalProperties"] = True  # a dict.get section in this release: unknown keys are ignored
    elif strict and target != "hf" and node.get("additionalProperties") is False:
        # DeepSpeed's config models drop "auto" values before they check the keys: an unknown key holding "auto"
        # is dropped (the validator warns, keys.unknown-auto), any other value is refused. (The HF Trainer refuses
        # an "auto" it does not fill: auto.not-filled.)
        node["additionalProperties"] = {
            "const": "auto", "description": f"Not a key of this section: DeepSpeed {version} drops it when it is "
            "\"auto\" and refuses it otherwise."}
    for field in unique_fields(model):
        key = field.alias or field.name
        if key not in props:
            continue
        original = props[key]
        props[key] = _absent(version, prefixes, field, key, strict) or _present(
            copy.deepcopy(original), version, model, prefixes, field, strict, target, defs, key)
        if field.alias and field.name not in props:
            # the HF Trainer fills "auto" under one spelling only (stage3_prefetch_bucket_size, not the plain name)
            props[field.name] = copy.deepcopy(props[key]) if target != "hf" else (
                _absent(version, prefixes, field, field.name, strict)
                or _present(copy.deepcopy(original), version, model, prefixes, field, strict, target, defs,
                            field.name))
    if strict and prefixes:
        _profile_only_keys(props, version, model, prefixes)
    if "enabled" in props and _enabled_required(version, target, prefixes):
        node["required"] = sorted({*node.get("required", ()), "enabled"})


def _enabled_required(version: str, target: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``validate`` refuses this section without its ``enabled`` key and takes it with one (``amp``,
    ``progressive_layer_drop`` and legacy curriculum learning up to 0.19.7: DeepSpeed pops the key without a
    default, KeyError)."""
    return bool(prefixes) and "" not in prefixes and all(
        _probe(version, target, prefix, "{}")[0] and not _probe(version, target, prefix, '{"enabled": false}')[0]
        for prefix in prefixes)


def _present(
    prop: dict[str, Any], version: str, model: type[BaseModel], prefixes: tuple[str, ...], field: SchemaField,
    strict: bool, target: str, defs: dict[str, Any], spelling: str,
) -> dict[str, Any]:
    """The property schema of a key ``version`` reads, written as ``spelling``."""
    meta = field.meta
    xds = prop.get(META_KEY, {})
    if meta.deprecated:
        replacement = f" Use `{meta.replaced_by}` instead." if meta.replaced_by else ""
        prop["deprecationMessage"] = f"Deprecated.{replacement}"
    if prop.get("description"):
        prop["markdownDescription"] = prop["description"] + (f"\n\n*Note:* {meta.doc_note}" if meta.doc_note else "")
    if is_strict(model) and not strict and field.model is None:
        # read with dict.get by this release: it checks no value while parsing (the validator only warns)
        kept = ("title", "description", "markdownDescription", "deprecationMessage", "default", META_KEY)
        return {k: prop[k] for k in kept if k in prop}
    _bounds(prop, version, model, prefixes, field, xds)
    _refusals(prop, version, target, prefixes, field)
    paths = tuple(join_path(prefix, spelling) for prefix in prefixes)
    if strict and is_strict(model):
        _lax_strings(prop, defs, lambda value: any(_probe(version, target, path, json.dumps(value))[0]
                                                   for path in paths))
    if field.model is None and _default_refused(prop, version, target, paths):
        # DeepSpeed refuses even the field's own default when it is written (tensor_parallel.dtype wants a
        # torch.dtype object): no JSON value but the "auto" it drops can stand here
        prop = {**{k: prop[k] for k in _OUTER if k in prop}, "not": {}}
    auto = _auto_branch(version, target, paths, field)
    # "auto" where a section belongs: only a sub-section of a section this release parses with pydantic drops it
    if auto is not None and (field.model is None or (strict and is_strict(model))):
        return {"anyOf": [prop, auto], **{k: prop[k] for k in _OUTER if k in prop}}
    if field.model is None and auto is None:
        reason = next((error for path in paths for error in _probe(version, target, path, '"auto"')[0]), None)
        if reason and "not" not in prop:
            prop["not"] = {"const": "auto", "description": reason}
    if "default" in prop and any(_probe(version, target, path, json.dumps(prop["default"]))[0] for path in paths):
        del prop["default"]  # an editor would offer a value it then flags
    return prop


_OUTER = ("description", "markdownDescription", "deprecationMessage")


def _default_refused(prop: dict[str, Any], version: str, target: str, paths: tuple[str, ...]) -> bool:
    """Whether ``validate`` refuses the field's own default written out (JSON-able, not null, not "auto")."""
    default = prop.get("default")
    return (paths != () and default is not None and default != "auto" and isinstance(default, str | int | float)
            and all(_probe(version, target, path, json.dumps(default))[0] for path in paths))


def _auto_branch(version: str, target: str, paths: tuple[str, ...], field: SchemaField) -> dict[str, Any] | None:
    """The schema of ``"auto"`` at these paths as ``validate`` judges it, or None where it refuses it: for the HF
    target where neither the Trainer nor Accelerate fills it (Accelerate refuses every other "auto":
    auto.not-filled), for DeepSpeed where its parser keeps the string and fails with it (a section it reads with
    dict.get: ``checkpoint.tag_validation``). Where the validator only warns (DeepSpeed keeps the string, and a
    switch reads it as on: auto.kept) an editor marks it with that warning."""
    if not paths:
        return None
    verdicts = [_probe(version, target, path, '"auto"') for path in paths]
    if any(errors for errors, _ in verdicts):
        return None
    warned = " ".join(sorted({w for _, warnings in verdicts for w in warnings}))
    if warned:
        return {"const": "auto", "description": warned, "deprecationMessage": warned}
    if target == "hf":
        return {"const": "auto", "description": "Filled in by the HF Trainer / Accelerate."}
    if field.default == "auto":
        return {"const": "auto", "description": "DeepSpeed's own default: it works the value out itself."}
    return {"const": "auto", "description": "DeepSpeed drops \"auto\" here and uses the default."}


def _release_strict(version: str, model: type[BaseModel], prefixes: tuple[str, ...]) -> bool:
    """Whether ``version`` refuses unknown keys in this section: a pydantic model with ``extra="forbid"`` in its
    profile, else what the schema says for sections no release parses with pydantic (``structure._strict``)."""
    if not is_strict(model):
        return False
    answers = [versions.section_strict(version, _profile_prefix(p)) for p in prefixes if p]
    return all(answer is None or answer for answer in answers)


def _absent(
    version: str, prefixes: tuple[str, ...], field: SchemaField, key: str, strict: bool
) -> dict[str, Any] | None:
    """None when ``version`` reads ``key`` of this section (its profile, else the schema; ``structure._exists_in``);
    else the property schema that says what that release does with it: refuses it on sight (a removed top-level
    key, a removed ZeRO key), refuses it as an unknown key unless it is "auto" (a strict section), or ignores it."""
    reads = not prefixes or any(_exists_in(version, prefix, field, key) for prefix in prefixes)
    if reads and ("" not in prefixes or key not in versions.removed_top_level_keys(version)):
        return None
    removed_message = _removed_message(version, prefixes, key)
    if removed_message is not None:
        return {"not": {}, "description": removed_message, "deprecationMessage": removed_message}
    added, removed = next((h for h in (versions.history(_profile_prefix(p), key) for p in prefixes) if any(h)),
                          (field.meta.added, field.meta.removed))
    if added and version_tuple(version) < version_tuple(added):
        when = f"added in DeepSpeed {added}"
    elif removed:
        when = f"removed in DeepSpeed {removed}"
    else:
        when = "not read by this release"
    if strict:
        message = f"Not in DeepSpeed {version} ({when}): it rejects the key as unknown."
        # DeepSpeed's config models drop "auto" values before they check the keys
        return {"const": "auto", "description": message, "deprecationMessage": message}
    message = f"Not in DeepSpeed {version} ({when}): it ignores the key."
    return {"description": message, "deprecationMessage": message}


def _removed_message(version: str, prefixes: tuple[str, ...], key: str) -> str | None:
    """DeepSpeed ``version``'s message when it refuses ``key`` on sight, as the validator decides
    (``core.rules.misc``): a top-level key its profile lists as removed, or a ZeRO key it no longer reads."""
    if "" in prefixes:
        return versions.removed_top_level_keys(version).get(key)
    if "zero_optimization" in prefixes:
        return removed_zero_reason(version, key)
    return None


def _profile_only_keys(props: dict[str, Any], version: str, model: type[BaseModel], prefixes: tuple[str, ...]) -> None:
    """Fields ``version``'s profile has in a strict section that the schema does not describe: the validator
    accepts them (with the release's bounds), so the schema does too."""
    known = section_fields(model)
    for prefix in prefixes:
        entry = versions.section(version, _profile_prefix(prefix))
        for name, info in (entry or {}).get("fields", {}).items():
            for spelling in (name, info.get("alias")):
                if spelling and spelling not in known and spelling not in props:
                    props[spelling] = {
                        "description": f"Read by DeepSpeed {version}; not described by Config Studio.",
                        **{_BOUNDS[b]: info[b] for b in _BOUNDS if isinstance(info.get(b), int | float)},
                    }


@cache
def _prefixes() -> dict[type[BaseModel], tuple[str, ...]]:
    """Where each section model sits in the config (its dotted paths; the root at "")."""
    found: dict[type[BaseModel], tuple[str, ...]] = {DeepSpeedConfig: ("",)}
    for path, field in iter_schema(DeepSpeedConfig):
        if field.model is not None:
            found[field.model] = (*found.get(field.model, ()), path)
    return found


_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
_SCHEMA_BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


def _bounds(
    prop: dict[str, Any], version: str, model: type[BaseModel], prefixes: tuple[str, ...], field: SchemaField,
    xds: dict[str, Any],
) -> None:
    """The numeric bounds ``version`` itself checks, as JSON Schema keywords an editor applies, decided as the
    validator decides (``core.rules.typecheck``): where the release parses the field with pydantic, exactly its
    profile's bounds (0.19.8 requires ``reduce_bucket_size`` > 0 where 0.19.5 took 0; 0.19.6 takes
    ``hybrid_engine.max_out_tokens`` 0), plus the schema's ``x-ds`` minimum when that release's model has a validator
    for the field; where it does not, the schema's own bounds only if the value fails there anyway (a section no
    release parses with pydantic, or a field DeepSpeed's own code refuses), else none."""
    key = field.alias or field.name
    entries = [(p, versions.field_entry(version, _profile_prefix(p), key)) for p in prefixes]
    entries = [(p, entry) for p, entry in entries if entry is not None]
    if entries:
        found = {(b, entry[b]) for _, entry in entries for b in _BOUNDS if isinstance(entry.get(b), int | float)}
        if len({b for b, _ in found}) != len(found):
            found = set()  # two places with different bounds: only what both accept is certain, keep none
        wanted = {_BOUNDS[b]: value for b, value in found}
        validated = all(field.name in (versions.section(version, _profile_prefix(p)) or {}).get(
            "field_validators", ()) for p, _ in entries)
        if validated and "minimum" in xds and not {"minimum", "exclusiveMinimum"} & wanted.keys():
            wanted["minimum"] = xds["minimum"]
    else:
        never_pydantic = all(versions.section_strict(version, _profile_prefix(p)) is None for p in prefixes)
        if (never_pydantic and is_strict(model)) or field.meta.extra.get("raises") in ("config", "engine"):
            return  # the schema's own bounds are the ones that fail
        wanted = {}
    for branch in _numeric_branches(prop):
        for name in _SCHEMA_BOUNDS:
            branch.pop(name, None)
        branch.update(wanted)


def _numeric_branches(prop: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of a property schema that hold a number (the property, its ``anyOf`` / ``oneOf`` members)."""
    found = []
    for branch in [prop, *prop.get("anyOf", ()), *prop.get("oneOf", ())]:
        if branch.get("type") in ("integer", "number") or any(name in branch for name in _SCHEMA_BOUNDS):
            found.append(branch)
    return found


# ------------------------------------------------------------------ values the validator refuses by a rule
#: The config each probe adds one value to: the batch trio set, so that no key's null reads as a missing batch size.
_PROBE_BASE: dict[str, Any] = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1,
                               "gradient_accumulation_steps": 1}
_NOT_A_CHOICE = "not-one-of-the-choices"


def _refusals(prop: dict[str, Any], version: str, target: str, prefixes: tuple[str, ...], field: SchemaField) -> None:
    """What DeepSpeed refuses in a field beyond its type, as the validator decides it by a rule (not by the
    pydantic type the schema is generated from), asked of ``validate`` with the value alone in the config: null
    where a rule refuses it (``bfloat16``, ``sequence_parallel_size`` in 0.19.6+, ``gradient_allreduce_op``), a
    string outside the field's ``choices`` where DeepSpeed checks the value while parsing (``communication_data_type``,
    ``checkpoint.tag_validation``: an ``enum``, or a case-insensitive ``pattern`` where DeepSpeed lower- or
    upper-cases it), an empty string (``autotuning.results_dir``), 0 (``sequence_parallel_size``), and the boolean
    form of a section the validator only warns about (``"zero_optimization": true``, deprecated)."""
    if not prefixes:
        return
    key = field.alias or field.name
    paths = tuple(join_path(prefix, key) for prefix in prefixes)

    def refused(value: Any) -> bool:
        return all(_probe(version, target, path, json.dumps(value))[0] for path in paths)

    branches = prop.get("anyOf", [prop])
    if len(branches) > 1 and any(b.get("type") == "null" for b in branches) and refused(None):
        prop["anyOf"] = branches = [b for b in branches if b.get("type") != "null"]
        if prop.get("default", 0) is None:
            del prop["default"]  # an editor would offer it
    if field.model is not None:
        flags = []
        for flag in (True, False) if "$ref" in prop else ():
            warned = {w for path in paths for w in _probe(version, target, path, json.dumps(flag))[1]}
            message = " ".join(sorted(warned))
            if message and not refused(flag):
                flags.append({"const": flag, "description": message, "deprecationMessage": message})
        if flags:
            prop["anyOf"] = [{"$ref": prop.pop("$ref")}, *flags]
        return
    for branch in branches:
        if branch.get("type") == "string" and not {"enum", "const", "pattern"} & branch.keys():
            _closed_choices(branch, field, refused)
            if "enum" not in branch and "pattern" not in branch and refused(""):
                branch["minLength"] = 1
        elif (branch.get("type") == "integer" and not {"enum", "const", "minimum", "exclusiveMinimum"} & branch.keys()
              and refused(0) and not refused(1)):
            if refused(-1):
                branch["minimum"] = 1
            else:
                branch["not"] = {"const": 0}


def _closed_choices(branch: dict[str, Any], field: SchemaField, refused: Any) -> None:
    """The field's ``choices`` as the only strings, when the validator refuses another one and DeepSpeed looks at
    the value while parsing (not a name it looks up later among classes the choices only sample, like
    ``optimizer.type`` among torch's optimizers: ``auto`` "kept"/"fails" fields). Each choice DeepSpeed reads in any
    case (the validator accepts it case-swapped) matches case-insensitively ("SUM", "FP16", "warn")."""
    choices = field.meta.choices or ()
    if not choices or not all(isinstance(c, str) for c in choices) or field.meta.auto in ("kept", "fails"):
        return
    if not refused(_NOT_A_CHOICE):
        return
    if not any(c.swapcase() != c and not refused(c.swapcase()) for c in choices):
        branch["enum"] = list(choices)
        return
    spellings = [_any_case(c) if not refused(c.swapcase()) else _escape(c) for c in choices]
    branch["pattern"] = "^(?:" + "|".join(spellings) + ")$"
    branch.setdefault("examples", list(choices))


def _any_case(text: str) -> str:
    """A regular expression matching ``text`` in any letter case, without inline flags (ECMA-262 has none)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else _escape(c) for c in text)


def _escape(text: str) -> str:
    """``text`` as a regular expression: only its syntax characters escaped (``re.escape`` also escapes "-", which
    ECMA-262's unicode mode, as editors compile patterns, refuses outside a class)."""
    return re.sub(r"([\\^$.*+?()[\]{}|/])", r"\\\1", text)


@cache
def _probe(version: str, target: str, path: str, value_json: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the messages of the errors ``validate`` finds at ``path`` or below it, of the warnings there) for
    ``value_json`` at the dotted ``path`` of ``_PROBE_BASE``. The batch rules report at ``train_batch_size`` what
    any of the three keys breaks; the base's three agree, so a batch error is the probed batch key's."""
    from core.validate import validate

    config: dict[str, Any] = copy.deepcopy(_PROBE_BASE)
    node = config
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = json.loads(value_json)
    report = validate(config, target=target, version=version)
    here = [f for f in report.findings if f.path == path or f.path.startswith(path + ".")
            or (path in BATCH_KEYS and f.path in BATCH_KEYS)]
    return (tuple(f.message for f in here if f.severity == "error"),
            tuple(f.message for f in here if f.severity == "warning"))


#: What pydantic's lax mode takes for an int from a string: blanks around, a sign, digits with single underscores
#: between them, a zero fraction ("1", " 2 ", "+3", "1_000", "4.0"; not "1e3", "0x10", "5.").
_INT_TAIL = r"(?:\.0+)?\s*$"
#: What it takes for a bool from a string, in any letter case: exactly these words, no blanks around.
_BOOL_WORDS = ("0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes")
#: ... and for a float: Python's float() of the string (blanks around, underscores between digits, an exponent,
#: inf / infinity / nan in any case).
_DIGITS = "[0-9]+(?:_[0-9]+)*"
_FLOAT_STRING = (r"^\s*[+-]?(?:(?:" + _DIGITS + r"(?:\.(?:" + _DIGITS + r")?)?|\." + _DIGITS + r")(?:[eE][+-]?"
                 + _DIGITS + r")?|" + "|".join(_any_case(word) for word in ("infinity", "inf", "nan")) + r")\s*$")
_LAX_NOTE = "DeepSpeed's pydantic config reads this string as the value."


def _lax_strings(prop: dict[str, Any], defs: dict[str, Any], refused: Any) -> None:
    """What else a section the release parses with pydantic takes for a value, in its lax mode, unless ``validate``
    refuses it there (``refused(value)``: ``autotp_size`` is compared with a number before parsing): a numeric string
    for an integer (``"stage": "1"`` is stage 1; an enum of non-negative values keeps the enum, a lower bound of 0
    or 1 keeps the sign or the zero out, other bounds are not checked on the string), a word or 0 / 1 for a bool
    (``"true"``, ``"off"``), a numeric string for a float (``"1e-5"``; bounds not checked on the string)."""
    branches = prop.get("anyOf", [prop])
    added: list[dict[str, Any]] = []
    for branch in branches:
        target = defs.get(branch["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in branch else branch
        kind = target.get("type")
        if kind == "boolean" and not refused("true") and not refused(1):
            added += [{"type": "string", "pattern": "^(?:" + "|".join(_any_case(w) for w in _BOOL_WORDS) + ")$",
                       "description": _LAX_NOTE}, {"enum": [0, 1], "description": _LAX_NOTE}]
        elif kind == "number" and not {"enum", "const"} & target.keys() and not refused(_lax_sample(target)):
            added.append({"type": "string", "pattern": _FLOAT_STRING, "description": _LAX_NOTE})
        elif kind == "integer" and not refused(_lax_sample(target)):
            added += _int_string(target)
    if not added:
        return
    if "anyOf" in prop:
        prop["anyOf"].extend(added)
    else:
        moved = {k: prop.pop(k) for k in list(prop) if k not in (
            "title", "description", "markdownDescription", "deprecationMessage", "default", META_KEY)}
        prop["anyOf"] = [moved, *added]


def _lax_sample(target: dict[str, Any]) -> str:
    """A number this integer or float branch takes, written as a string."""
    enum = target.get("enum")
    if enum:
        return str(enum[0])
    low = target.get("minimum", target.get("exclusiveMinimum", 0))
    return str(max(int(low) + 1, 1) if isinstance(low, int | float) else 1)


def _int_string(target: dict[str, Any]) -> list[dict[str, Any]]:
    """The string branch of an integer branch (see ``_lax_strings``), or none for an enum with negative values."""
    enum = target.get("enum")
    if enum is not None:
        if not all(isinstance(v, int) and v >= 0 for v in enum):
            return []
        digits = "0*(?:" + "|".join(str(v) for v in enum) + ")"
        sign = r"\+?"
    else:
        low = target.get("minimum", target.get("exclusiveMinimum"))
        positive = target.get("minimum", 0) >= 1 or target.get("exclusiveMinimum", -1) >= 0
        sign = r"\+?" if low is not None and low >= 0 else "[+-]?"
        digits = "0*[1-9][0-9]*(?:_[0-9]+)*" if positive else "[0-9]+(?:_[0-9]+)*"
    return [{"type": "string", "pattern": r"^\s*" + sign + digits + _INT_TAIL,
             "description": "The number as a string, which DeepSpeed's pydantic config reads as the number."}]
