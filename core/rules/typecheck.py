"""Type and bound checks: the config through DeepSpeed's pydantic models (every error collected, in plain
words), and the bounds of this release's fields from its profile."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterator
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from core import versions
from core.effective import LEGACY_ALLGATHER_KEY, legacy_zero, switch_on
from core.findings import Finding, brief, get_path, join_path
from core.rules.context import Context, lax_bool, lax_float, lax_int
from core.rules.fixes import delete_fix, plain_default, set_fix, value_fix
from core.rules.structure import ROOT, _exists, _join, _profile_prefix, _strict, page_of
from core.schema.walk import SchemaField, is_strict, resolve, section_fields, section_meta
from core.schema.zero import ZeroConfig


def _prepared(ctx: Context) -> dict[str, Any]:
    """The config as the schema should check it: shapes DeepSpeed special-cases are set aside."""
    data: dict[str, Any] = {}
    for key, value in ctx.config.items():
        field = section_fields(ROOT).get(key)
        if field is None or not _exists(ctx, "", field, key):
            continue
        if key == "zero_optimization" and isinstance(value, bool):
            continue  # the deprecated boolean form; a rule explains it
        if key == "bfloat16" and ctx.config.get("bf16") is not None:
            continue  # only read when bf16 is absent
        data[key] = value
    return data


_BOUND_CODES = {"ge": ("greater_than_equal", "≥"), "gt": ("greater_than", ">"), "le": ("less_than_equal", "≤"),
                "lt": ("less_than", "<")}


def _profile_fields(ctx: Context) -> Iterator[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """(prefix, the config's section, field name, profile entry) for every field of this release's pydantic
    sections that the config holds as an object."""
    for prefix, entry in versions.profile(ctx.version)["sections"].items():
        section = ctx.get(prefix) if "[" not in prefix and "{" not in prefix else None
        if prefix.split(".")[0] == "bfloat16" and ctx.config.get("bf16") is not None:
            continue  # only read when bf16 is absent
        if isinstance(section, dict):
            for name, info in entry["fields"].items():
                yield prefix, section, name, info


def check_profile_bounds(ctx: Context) -> Iterator[Finding]:
    """Bounds of this release's pydantic fields (from its profile) that the schema's own bounds miss."""
    for prefix, section, name, info in _profile_fields(ctx):
        key = info.get("alias", name)
        value = section.get(key, section.get(name))
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        for bound, (code, symbol) in _BOUND_CODES.items():
            if bound in info and isinstance(info[bound], int | float) and not _within(value, {bound: info[bound]}):
                path = _join(prefix, key)
                yield Finding(
                    "error", f"type.{code}", path,
                    f"`{path}` is {brief(value)}: DeepSpeed {ctx.version} requires a value {symbol} "
                    f"{info[bound]}.",
                    f"Allowed: {symbol} {info[bound]}." + (f" Default: {brief(info['default'])}." if "default" in info
                                                           else ""),
                    None, page_of(path),
                )
                break


def check_types(ctx: Context) -> Iterator[Finding]:
    """Types, bounds and the sections' own validators, every error collected."""
    reported: set[str] = set()
    try:
        ROOT.model_validate(_prepared(ctx))
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            finding = _finding_from_error(ctx, error)
            if finding is not None:
                reported.add(finding.path)
                yield finding
    except (ArithmeticError, RecursionError, TypeError, ValueError) as exc:
        # A section's own validator failed outside pydantic's error handling (DeepSpeed's would too).
        yield Finding(
            "error", "type.unreadable", "",
            f"DeepSpeed cannot read this config: {type(exc).__name__}: {exc}.",
            suggestion="Look for absurd values (numbers with hundreds of digits, deeply nested objects).",
        )
    yield from _null_sections(ctx, reported)
    yield from _null_fields(ctx, reported)
    yield from _legacy_allgather_size(ctx)


#: Strings that spell "off" besides pydantic's false strings (``lax_bool``), each a true value to Python.
_MORE_OFF_WORDS = frozenset({"none", "null", "disabled", "disable"})


def truthy_strings(ctx: Context) -> Iterator[Finding]:
    """A boolean written as a string that spells off ("false", "no", "0") where this release reads the key with
    dict.get and uses it as a Python truth value: a non-empty string is true, so the setting is ON, silently
    (pydantic sections parse "false" as false, and the type check covers them)."""
    yield from _truthy_strings(ctx, ctx.config, ROOT, "")


def _truthy_strings(ctx: Context, data: dict[str, Any], model: type[BaseModel], prefix: str) -> Iterator[Finding]:
    fields = section_fields(model)
    lenient = not _strict(ctx, model, prefix)
    for key, value in data.items():
        field = fields.get(key) if isinstance(key, str) else None
        if field is None:
            continue
        path = _join(prefix, key)
        if field.model is not None and isinstance(value, dict):
            yield from _truthy_strings(ctx, value, field.model, path)
        elif (lenient and isinstance(value, str) and (lax_bool(value) is False
                                                       or value.strip().lower() in _MORE_OFF_WORDS) and _is_bool(field)
              and not field.meta.extra.get("as_written")  # used as written, not as a truth value: as_written says
              and _exists(ctx, prefix, field, key)
              and not (prefix == "" and versions.top_level_value_fails(ctx.version, key, value))):
            yield Finding(
                "warning", "type.truthy-string", path,
                f"`{path}` is the string {brief(value)}: DeepSpeed {ctx.version} reads it with dict.get and uses it "
                "as a Python truth value, and a non-empty string is true, so this setting is ON.",
                suggestion="Write false (JSON's boolean, without quotes).",
                fix=set_fix(path, False), page=page_of(path),
            )


#: What the schema's ``as_written`` says, in a message: when DeepSpeed uses the value as written.
_AS_WRITTEN_WHEN = {"initialize": "when deepspeed.initialize builds the engine",
                    "forward": "at the first forward pass",
                    "step": "at the first optimizer step",
                    "profile": "at the profiling step (`profile_step`, the first step by default)",
                    "dataloader": "in torch's DataLoader, which refuses anything but true or false (ValueError: "
                                  "drop_last should be a boolean value), when DeepSpeed builds its own data loader "
                                  "(deepspeed.initialize(training_data=...) or engine.deepspeed_io); a data loader of "
                                  "your own (the HF Trainer's) does not read it"}


def as_written(ctx: Context) -> Iterator[Finding]:
    """A value not of its field's own JSON type where DeepSpeed reads the key with dict.get and uses it as written
    (schema: ``as_written``): pydantic's lax mode reads "1" as 1 and 1 as true, DeepSpeed does not (the pipeline
    engine asserts ``isinstance(..., bool)``, the flops profiler compares the step with ``>=``)."""
    yield from _as_written(ctx, ctx.config, ROOT, "")


def _as_written(ctx: Context, data: dict[str, Any], model: type[BaseModel], prefix: str) -> Iterator[Finding]:
    fields = section_fields(model)
    switch = fields.get("enabled")
    # the section is off (an absent switch takes its default): DeepSpeed never uses its values, except in the sections
    # below it that its own switch alone turns on (``switch_ungated``: random-LTD's scheduler)
    off = switch is not None and not switch_on(data.get("enabled", plain_default(switch)), prefix, ctx.version)
    for key, value in data.items():
        field = fields.get(key) if isinstance(key, str) else None
        if field is None or not _exists(ctx, prefix, field, key):
            continue
        path = _join(prefix, key)
        if field.model is not None and isinstance(value, dict):
            if not off or _holds_ungated(field.model):
                yield from _as_written(ctx, value, field.model, path)
            continue
        if off:
            continue
        when = field.meta.extra.get("as_written")
        if when is None or value == "auto" or _strict(ctx, model, prefix) or _written_as(field, value):
            continue  # "auto": the auto rule explains it
        meant = _meant_value(field, value)
        default = plain_default(field)
        text = (f"`{path}` is {brief(value)}, not {_kind(field)}: DeepSpeed {ctx.version} reads it with dict.get and "
                f"uses it as written, which fails {_AS_WRITTEN_WHEN[when]}")
        # only a data loader DeepSpeed builds reads it: a warning, as the run may bring its own
        severity, code = ("warning", "type.dataloader") if when == "dataloader" else \
            ("error", "type.engine" if when == "initialize" else "type.as-written")
        checked = section_meta(model).get("as_written_check")
        yield Finding(
            severity, code, path,
            text + ("." if when == "dataloader" else f" ({checked})." if checked
                    else " (the pipeline engine asserts it is a bool)." if _is_bool(field) else " (TypeError)."),
            suggestion=f"Write {brief(meant)} without quotes." if meant is not None and meant != value
            else f"Default: {brief(default)}.",
            # no fix when nothing is meant and the default is null, which fails the same way
            fix=set_fix(path, meant) if meant is not None else set_fix(path, default) if default is not None
            else None, page=page_of(path),
        )


@cache
def _holds_ungated(model: type[BaseModel]) -> bool:
    """Whether ``model`` is, or holds, a section that its own switch turns on whatever the switches above it say."""
    if section_meta(model).get("switch_ungated"):
        return True
    return any(field.model is not None and _holds_ungated(field.model) for field in section_fields(model).values())


def _written_as(field: SchemaField, value: Any) -> bool:
    """Whether ``value`` is of the field's own JSON type (a bool is no number, a number no bool)."""
    if value is None and _holds(field, type(None)):
        return True  # null is the field's own "not set"
    if _is_bool(field):
        return isinstance(value, bool)
    if field.meta.extra.get("range_argument") or field.meta.extra.get("int_only"):
        return isinstance(value, int)  # range() takes any int, true and false included, and refuses a float
    if field.meta.extra.get("compared"):
        return isinstance(value, int | float)  # only compared with numbers: true and false compare as 1 and 0
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float)  # DeepSpeed compares and counts with a float as well


def _meant_value(field: SchemaField, value: Any) -> Any:
    """What a value of the wrong type most likely meant (pydantic's lax reading), or None."""
    if _is_bool(field):
        return lax_bool(value)
    number = lax_int(value) if _holds(field, int) and not _holds(field, float) else lax_float(value)
    return number if number is not None and math.isfinite(number) else None


def _kind(field: SchemaField) -> str:
    whole = field.meta.extra.get("range_argument") or field.meta.extra.get("int_only")
    return "true or false" if _is_bool(field) else "a whole number" if whole else "a number"


def _is_bool(field: SchemaField) -> bool:
    """Whether the field holds a boolean (``bool`` or ``bool | None``)."""
    return _holds(field, bool)


def _holds(field: SchemaField, kind: type) -> bool:
    """Whether the field's type is ``kind`` or a union with it (``int | None``)."""
    annotation = field.info.annotation
    return annotation is kind or (typing.get_origin(annotation) in (typing.Union, types.UnionType)
                                  and kind in typing.get_args(annotation))


def _legacy_allgather_size(ctx: Context) -> Iterator[Finding]:
    """With ``"zero_optimization": true`` DeepSpeed passes the top-level ``allgather_size`` to its ZeRO model
    as ``allgather_bucket_size``, which checks it like the field itself."""
    section = legacy_zero(ctx.config)
    if section is None or "allgather_bucket_size" not in section:
        return
    field = section_fields(ZeroConfig)["allgather_bucket_size"]
    try:
        ZeroConfig.model_validate(section)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            value = section["allgather_bucket_size"]
            yield Finding(
                "error", f"type.{error['type']}", LEGACY_ALLGATHER_KEY,
                f"`{LEGACY_ALLGATHER_KEY}` is {brief(value)}: with `\"zero_optimization\": true` DeepSpeed reads "
                f"it as `zero_optimization.allgather_bucket_size`, and {error['msg'][0].lower()}{error['msg'][1:]}.",
                _hint(field), None, "zero",
            )


#: Top-level sections whose null the precision rules report (precision.null).
_NULL_REPORTED_ELSEWHERE = frozenset({"fp16", "bf16"})


def _null_sections(ctx: Context, reported: set[str]) -> Iterator[Finding]:
    """A top-level section set to null that the schema lets through but this release's parser fails on
    (the profile's probe: it calls ``.get`` / ``.keys()`` on it)."""
    for key, value in ctx.config.items():
        field = section_fields(ROOT).get(key)
        if value is not None or field is None or field.model is None or key in reported \
                or key in _NULL_REPORTED_ELSEWHERE:
            continue
        if key == "bfloat16" and ctx.meaning.bf16_section != "bfloat16":
            continue  # only read when bf16 is absent
        if versions.top_level_value_fails(ctx.version, key, None):
            yield Finding(
                "error", "type.model_type", key,
                f"`{key}` is null; DeepSpeed {ctx.version} fails when it reads it (it expects an object).",
                "Write it as a JSON object, or remove it to use the defaults.", None, page_of(key),
            )


_PYDANTIC_TYPE_CODES = {"bool": "bool_type", "int": "int_type", "float": "float_type", "str": "string_type"}


def _null_fields(ctx: Context, reported: set[str]) -> Iterator[Finding]:
    """A null where this release's pydantic field takes a plain bool/int/float/str (from its profile), when
    the schema allows null (another release's field is Optional)."""
    for prefix, section, name, info in _profile_fields(ctx):
        key = info.get("alias", name)
        path = _join(prefix, key)
        code = _PYDANTIC_TYPE_CODES.get(info.get("type", ""))
        if code is None or key not in section or section[key] is not None or path in reported:
            continue
        yield Finding(
            "error", f"type.{code}", path,
            f"`{path}` is null; DeepSpeed {ctx.version} requires a {info['type']} here.",
            f"Default: {brief(info['default'])}." if "default" in info else "", None, page_of(path),
        )


def _locate(loc: tuple[Any, ...]) -> tuple[str, SchemaField | None, type[BaseModel]]:
    """Dotted config path, the field and the section that owns it, for a pydantic error location."""
    model: type[BaseModel] | None = ROOT
    owner: type[BaseModel] = ROOT
    parts: list[str] = []
    field: SchemaField | None = None
    dict_key_next = False  # the item after a dict-of-sections field is the entry's own key (a metric's name)
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            continue
        if dict_key_next:
            dict_key_next = False
            parts = [join_path("".join(parts), item)]
            continue
        fields = section_fields(model) if model is not None else {}
        if item in fields:
            owner = model  # type: ignore[assignment]
            field = fields[item]
            parts = [join_path("".join(parts), item)]
            model = field.model or field.item_model
            dict_key_next = field.container == "dict"
        # anything else is a union member tag such as "int" or "function-after[...]"
    return "".join(parts), field, owner


def _section_not_read(ctx: Context, prefix: str) -> bool:
    """Whether a section at or above ``prefix`` is one this release does not read (e.g. checkpoint.writer
    before 0.17.1): what is inside it is never checked there."""
    parts = prefix.split("[")[0].split(".") if prefix else []
    for i in range(1, len(parts) + 1):
        path = ".".join(parts[:i])
        parent, _, key = path.rpartition(".")
        field = resolve(ROOT, path)
        if field is not None and not _exists(ctx, parent, field, key):
            return True
    return False


def _switched_off_and_unread(ctx: Context, prefix: str, key: str) -> bool:
    """Whether ``key`` of the top-level section ``prefix`` is never read because the release reads the section with
    dict.get, reads ``key`` only behind its ``enabled`` switch, and the switch is off as that release reads it."""
    section = ctx.config.get(prefix) if prefix and "." not in prefix else None
    if not isinstance(section, dict) or key == "enabled" or not versions.read_behind_switch(ctx.version, prefix, key):
        return False
    return not ("enabled" in section and switch_on(section["enabled"], prefix, ctx.version))


def _finding_from_error(ctx: Context, error: dict[str, Any]) -> Finding | None:
    kind = error["type"]
    if kind == "extra_forbidden":
        return None  # check_keys reports unknown keys with better advice
    path, field, owner = _locate(tuple(error["loc"]))
    value = error.get("input")
    prefix, _, key = path.split("[")[0].rpartition(".") if field is not None and path.endswith("]") \
        else path.rpartition(".")
    key = key.split("[")[0]
    if (field is not None and not _exists(ctx, prefix, field, key)) or _section_not_read(ctx, prefix):
        return None  # a key this version does not have: check_keys reports that instead
    if field is not None and field.meta.extra.get("as_written") and not _strict(ctx, owner, prefix) \
            and not (kind in _BOUND_KINDS and _written_as(field, value)):
        return None  # used as written: as_written says how any value of another type fails (a bound still holds)
    if _switched_off_and_unread(ctx, prefix, key):
        return None  # e.g. fp16's loss-scale keys in 0.16, read only with fp16 on: a wrong type there does nothing
    if kind in _BOUND_KINDS and field is not None:
        entry = versions.field_entry(ctx.version, _profile_prefix(prefix), key)
        if entry is not None and _within(value, {b: entry[b] for b in ("ge", "gt", "le", "lt") if b in entry}):
            return None  # this DeepSpeed release's own bounds accept the value
    message = str(error["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if message.startswith("Assertion failed, "):
        message = message[len("Assertion failed, "):]
    model_level = field is not None and field.model is not None
    if kind in ("value_error", "assertion_error") and _check_not_in_version(
        ctx, path if model_level else prefix, message
    ) and (model_level or _release_type_accepts(ctx, prefix, key, value)):
        return None
    pointed = error.get("ctx") or {}  # a section check that names its key (core.schema.base.pointed_error)
    if "at" in pointed:
        path = f"{path}.{pointed['at']}" if path else pointed["at"]
    raises = _raises(field, owner, kind)
    if raises == "step":
        return None  # read raw and used at the first optimizer step: misc.step_numbers says how it fails
    if raises == "engine" and section_meta(owner).get("engine_checks_when_on") and not _section_on(ctx, prefix):
        return None  # initialize checks the section's values only with its switch on (AutoEP)
    holds_section = field is not None and (field.model is not None or field.item_model is not None)
    auto_invalid = field is not None and field.meta.extra.get("auto_invalid") and not ctx.is_hf
    if value == "auto" and not is_strict(owner) and raises != "config" and not holds_section and not auto_invalid:
        return None  # DeepSpeed keeps "auto" here as a plain value; the "auto" rule explains what follows
    if value == "auto" and field is not None and field.meta.extra.get("auto_dropped"):
        return None  # a keyword argument of a DeepSpeedConfigModel: dropped, the defaults apply (the "auto" rule)
    container_kinds = ("model_type", "dict_type", "model_attributes_type")
    # A top-level section that is not an object makes DeepSpeed fail (it calls .get on it); deeper
    # inside lenient sections DeepSpeed often just carries the value along.
    container = field is not None and field.model is not None and kind in container_kinds and owner is ROOT
    holds_strict = field is not None and field.model is not None and is_strict(field.model)
    strict = _strict(ctx, owner, prefix) or container or holds_strict or field is None or raises == "config"
    shown = brief(value)
    label = f"`{path}`" if path else "The section"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        text = f"{label} must be an object ({{...}}), not {shown}; DeepSpeed fails when it reads it."
        hint = "Write it as a JSON object, or remove it to use the defaults."
    elif kind in ("value_error", "assertion_error"):
        text = f"{label}: {message.rstrip('.')}."
        hint = pointed.get("suggestion") or _hint(field)
    else:
        text = f"{label} is {shown}: {message[0].lower() + message[1:]}."
        hint = _hint(field)
    section_path = path if field is not None and field.model is not None else prefix
    if versions.section_strict(ctx.version, _profile_prefix(section_path)) is False or (
        kind in ("value_error", "assertion_error") and not _release_validates(ctx, section_path, key, field, value)
    ):
        strict = raises = False  # this release does not check this while parsing
    fails = versions.top_level_value_fails(ctx.version, key, value) if container else None
    if fails is False and field is not None and field.meta.extra.get("enabled_by_presence"):
        return None  # not ignored: any value but false switches the feature on (its own rule says so)
    if fails is False:  # this release's own parser, tried with such a value (the profile's probe), goes through
        return Finding(
            "warning", "type.section-ignored", path,
            f"{label} is {shown}, not an object; DeepSpeed {ctx.version} reads none of its settings from it and "
            "uses the section's defaults.",
            "Write it as a JSON object with the settings you mean, or remove it.", delete_fix(path), page_of(path),
        )
    if fails:
        strict = True
    items = get_path(ctx.config, path[:path.rindex("[")], None) if path.endswith("]") else None
    fix = delete_fix(path) if "at" in pointed else value_fix(field, path, value, items if isinstance(items, list)
                                                             else None) if kind not in container_kinds else None
    if strict:
        return Finding("error", f"type.{kind}", path, text, hint, fix, page_of(path))
    if raises == "engine" and field is not None and field.meta.extra.get("engine_reads_under_half") \
            and ctx.meaning.precision not in ("fp16", "bf16"):
        return Finding(
            "warning", "type.unchecked", path,
            f"{text[:-1]} — DeepSpeed {ctx.version} reads it only under fp16/bf16, so this "
            f"{ctx.meaning.precision} config trains; with fp16 or bf16 on, deepspeed.initialize fails on it.",
            hint, fix, page_of(path),
        )
    if raises == "engine":
        return Finding(
            "error", "type.engine", path,
            f"{text[:-1]} — DeepSpeed reads the config but fails when deepspeed.initialize uses this value.",
            hint, fix, page_of(path),
        )
    return Finding(
        "warning", "type.unchecked", path,
        f"{text[:-1]} — DeepSpeed does not check this when it reads the config, so the mistake surfaces "
        "later, in training.",
        hint, fix, page_of(path),
    )


def _section_on(ctx: Context, prefix: str) -> bool:
    """Whether the section at ``prefix`` is switched on as this release reads its ``enabled`` (default off)."""
    section = get_path(ctx.config, prefix, None)
    return isinstance(section, dict) and switch_on(section.get("enabled", False), prefix, ctx.version)


def _release_validates(ctx: Context, section_path: str, key: str, field: SchemaField | None, value: Any) -> bool:
    """Whether this release's pydantic model has a validator that can raise here (profile; True if unknown)."""
    entry = versions.section(ctx.version, _profile_prefix(section_path))
    if entry is None or "field_validators" not in entry:
        return True
    if field is not None and field.meta.extra.get("raises") == "config":
        return True  # the schema says DeepSpeed's own field type refuses this (e.g. a torch.dtype field)
    if entry["model_validators"]:
        return True
    model_level = field is not None and field.model is not None
    if model_level:
        return False
    for name, info in entry["fields"].items():
        if key in (name, info.get("alias")):
            # no validator in this release: only its field type can refuse the value
            return name in entry["field_validators"] or not _passes_type(info.get("type", ""), value)
    return True


def _passes_type(type_text: str, value: Any) -> bool:
    """Whether pydantic's lax mode accepts ``value`` for a simple field type of a profile ("int", "float",
    "bool", "str", optionally Optional[...]); False for anything else (the error is then kept)."""
    if type_text.startswith("Optional[") and type_text.endswith("]"):
        if value is None:
            return True
        type_text = type_text[len("Optional["):-1]
    readers = {"int": lax_int, "float": lax_float, "bool": lax_bool}
    if type_text in readers:
        return readers[type_text](value) is not None and not (type_text == "int" and isinstance(value, float)
                                                               and not value.is_integer())
    return type_text == "str" and isinstance(value, str)


_BOUND_KINDS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _within(value: Any, bounds: dict[str, float]) -> bool:
    if isinstance(value, str):  # pydantic's lax mode reads a numeric string ("1"), then checks the number
        value = lax_float(value)
    if not isinstance(value, int | float):  # bools included: pydantic reads them as 0 / 1
        return False
    checks = {"ge": value >= bounds.get("ge", value), "gt": "gt" not in bounds or value > bounds["gt"],
              "le": value <= bounds.get("le", value), "lt": "lt" not in bounds or value < bounds["lt"]}
    return all(checks.values())


def _check_not_in_version(ctx: Context, section_path: str, message: str) -> bool:
    """Whether the section validator's check ``message`` is one other releases make but ``ctx.version``'s
    does not (read from the generated profiles)."""
    return versions.validator_checks(ctx.version, _profile_prefix(section_path), message) is False


def _release_type_accepts(ctx: Context, prefix: str, key: str, value: Any) -> bool:
    """Whether ``ctx.version``'s own field type lets ``value`` through (True when the profile has no field)."""
    entry = versions.field_entry(ctx.version, _profile_prefix(prefix), key)
    return entry is None or _passes_type(entry.get("type", ""), value)


def _raises(field: SchemaField | None, owner: type[BaseModel], kind: str) -> str | None:
    """"config" when DeepSpeed fails on this while parsing, "engine" when at initialize, else None."""
    model_level = kind in ("value_error", "assertion_error")
    if field is not None:
        if field.meta.extra.get("raises"):
            return field.meta.extra["raises"]
        if field.model is not None and model_level:
            return section_meta(field.model).get("raises")
    return section_meta(owner).get("raises") if model_level else None


def _hint(field: SchemaField | None) -> str:
    if field is None:
        return ""
    info = field.info
    bounds = []
    for meta in info.metadata:
        for name, symbol in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            bound = getattr(meta, name, None)
            if bound is not None:
                bounds.append(f"{symbol} {bound}")
    default = plain_default(field)
    parts = []
    if bounds:
        parts.append("Allowed: " + ", ".join(bounds) + ".")
    if default is not None and not isinstance(default, dict | list):
        parts.append(f"Default: {brief(default)}.")
    return " ".join(parts) or (field.info.description or "")

