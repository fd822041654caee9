"""``dsconfig presets list|show`` and ``dsconfig export --preset NAME``.

``register(subparsers)`` adds the commands to an argparse sub-parser set; each handler is called as
``handler(args, out)`` and returns the exit code (0 ok, 1 the exported config has errors, 2 bad input).
Bad input is reported as one line on stderr, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from core.autofill import HF_DEFAULTS, TRAINING_VALUES, find_auto, needed_training_values, resolve_auto
from core.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    UsageError,
    add_world_sizes_flag,
    gpu_count,
    guarded,
    json_errors,
    write_text,
)
from core.cli.estimate import add_release_flag
from core.findings import split_path
from core.io import ConfigLoadError, parse_json_value
from core.presets import (
    Preset,
    PresetError,
    decode_preset,
    env_search_path,
    facets,
    hidden_by,
    list_presets,
    load_preset,
    meta_problems,
    read_preset_bytes,
    read_reference,
    search_path,
)
from core.versions import resolve_version

__all__ = ["UsageError", "parse_value", "register", "set_path"]


#: A value that begins as JSON does (an object, a list, a string, a number): when it does not parse, it was meant to.
_MEANT_AS_JSON = re.compile(r"\s*([{\[\"]|[-+]?[\d.]*\d[\d.]*([eE][-+]?\d*)?\s*$)")


def parse_value(text: str) -> Any:
    """A --set/--resolve-auto value: JSON when it parses (numbers, true, null, lists ...), else the text.

    What the config loader refuses is refused with a UsageError, in its words: NaN, Infinity, numbers that overflow
    to infinity (1e400) or have more than 4300 digits, duplicate keys in an object.
    """
    try:
        return parse_json_value(text)
    except ConfigLoadError as exc:
        try:
            json.loads(text, parse_constant=lambda name: None)
        except json.JSONDecodeError as bad:
            if _MEANT_AS_JSON.match(text):  # an object, list or number that does not parse is a typo, not text
                raise UsageError(f"{text.strip()!r} is not valid JSON ({bad.msg} at column {bad.colno}): write "
                                 "objects and strings with double quotes and numbers with a digit before the point "
                                 "(0.0001); a plain word needs no quotes") from None
            return text  # not JSON: the text itself (cpu, a path ...)
        except (ValueError, RecursionError):
            pass  # JSON the loader refuses (a number too long to convert)
        raise UsageError(str(exc)) from None


def _split_assignment(item: str, option: str) -> tuple[str, Any]:
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"{option} expects KEY=VALUE, got {item!r}")
    try:
        return key, parse_value(value)
    except UsageError as exc:
        raise UsageError(f"{option} {key}: {exc}") from None


def set_path(config: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in ``config`` (in place), creating missing objects; refuse to descend into non-objects.

    Paths are split like finding paths (``core.findings.split_path``: ``\\.`` is a literal dot). Unlike
    ``core.findings.set_path`` a non-object parent is an error, not replaced: on the command line that is
    almost always a typo.
    """
    # split_path drops empty keys; a path with one ("a..b", ".a", "") is refused here instead
    segments = dotted.replace("\\\\", "__").replace("\\.", "_").split(".")
    parts = split_path(dotted)
    if not parts or any(not segment for segment in segments) or any(isinstance(p, int) for p in parts):
        raise UsageError(f"--set: {dotted!r} is not a dotted key path like zero_optimization.stage")
    node = config
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            where = ".".join(parts[: i + 1])
            raise UsageError(f"--set {dotted}: {where} is {json.dumps(child)}, not an object, so it has no keys")
        node = child
    node[parts[-1]] = value


def _print_findings(report: Any, err: TextIO) -> None:
    for finding in report.findings:
        err.write(f"{finding.severity}: {finding.path or '(config)'}: {finding.message}\n")
        if finding.suggestion:
            err.write(f"  → {finding.suggestion}\n")


# ---------------------------------------------------------------- handlers


def _guard(handler):
    def run(args: argparse.Namespace, out: TextIO) -> int:
        # UsageError, PresetError and AutoFillError are ValueErrors: one line on stderr, exit code 2
        return guarded(args.command, lambda: handler(args, out), json_out=json_errors(args, out))

    run.__doc__ = handler.__doc__
    return run


def _folders(args: argparse.Namespace) -> list[Path]:
    return env_search_path()


def _warn_meta(preset: Preset) -> None:
    """A team preset's missing or malformed metadata, on stderr (what ``presets check`` reports; the listing shows
    a missing target as the default, deepspeed)."""
    if preset.builtin:
        return  # the built-in folder's are vetted by the tests
    for problem in meta_problems(preset.meta, vetted=False):  # presets check takes the folder
        sys.stderr.write(_printable(f"dsconfig: warning: {preset.path}: {problem} (dsconfig presets check "
                                    f"{preset.path.parent})") + "\n")


def _loaded(name: str, folders: list[Path]) -> Preset:
    """``load_preset``, saying on stderr which files of that name in later folders it hides."""
    preset = load_preset(name, folders)
    for line in hidden_by(preset, folders):
        sys.stderr.write(f"dsconfig: warning: {_printable(line)}\n")
    return preset


@_guard
def cmd_presets_list(args: argparse.Namespace, out: TextIO) -> int:
    """List the presets of the built-in folder and of DSCONFIG_PRESETS_PATH."""
    presets, problems = list_presets(_folders(args))
    for problem in problems:
        sys.stderr.write(f"dsconfig: warning: {_printable(problem)}\n")
    for preset in presets:
        _warn_meta(preset)
    if args.format == "json":
        rows = [{"name": p.name, "title": p.title, "path": str(p.path), **facets(p)} for p in presets]
        out.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    width = max((len(p.name) for p in presets), default=4)
    out.write(f"{'NAME':<{width}}  {'TARGET':<9} {'STAGE':<5} {'OFFLOAD':<7} {'PRECISION':<9} TITLE\n")
    for p in presets:
        f = facets(p)
        origin = "" if p.builtin else f"  [{p.path.parent}]"
        out.write(f"{p.name:<{width}}  {f['runtime']:<9} {f['stage']!s:<5} {f['offload']:<7} {f['precision']:<9} "
                  f"{_printable(p.title)}{_printable(origin)}\n")
    return EXIT_OK


#: Control characters a team file's text may hold (escape sequences that retitle, clear or recolour a terminal),
#: other than the newline and tab text keeps.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: object) -> str:
    """``text`` for a terminal: control characters written as escapes (``\\x1b``), as lone surrogates are."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def _show_text(p: Preset, out: TextIO) -> None:
    m = p.meta
    out.write(_printable(f"{p.title}  ({p.name}{'' if p.builtin else ', ' + str(p.path)})") + "\n\n")
    for key, label in (("description", None), ("when_to_use", "When to use"), ("when_not_to_use", "When not to"),
                       ("hardware", "Hardware")):
        if m.get(key):
            out.write(f"{label + ': ' if label else ''}{_printable(m[key])}\n\n")
    out.write(_printable(f"Target runtime: {p.target}; verified with DeepSpeed {', '.join(p.verified_with) or '-'}")
              + "\n")
    if p.justifications:
        out.write("\nWhy each choice:\n")
        for j in p.justifications:
            out.write("  " + _printable(f"{j.get('key')}: {j.get('why')}  [{j.get('doc')} § {j.get('section')}]")
                      + "\n")
    problems = meta_problems(m, vetted=p.builtin)  # a team file's malformed metadata is named, not a traceback
    if problems:
        out.write("\n" + "".join(f"problem: {_printable(problem)}\n" for problem in problems))
    out.write("\nConfig:\n" + json.dumps(p.config, indent=2) + "\n")


@_guard
def cmd_presets_show(args: argparse.Namespace, out: TextIO) -> int:
    """Show one preset: metadata, justifications and config."""
    preset = _loaded(args.name, _folders(args))
    if args.format == "json":
        out.write(json.dumps({"name": preset.name, "path": str(preset.path), "builtin": preset.builtin,
                              "meta": preset.meta, "config": preset.config}, indent=2) + "\n")
    else:
        _show_text(preset, out)
    return EXIT_OK


def _preset_text(path: Path) -> str:
    """The text of a preset file read and decoded as the loader reads it (UTF-8, UTF-16 or UTF-32), for the
    positions of its problems; "" (problems then name the file alone) if it cannot be read again."""
    try:
        return decode_preset(read_preset_bytes(path))
    except (PresetError, ValueError):  # changed since it was listed; UnicodeDecodeError is a ValueError
        return ""


def _not_a_preset_folder(folder: Path) -> str | None:
    """Why ``presets check FOLDER`` has nothing to check there (a file, nothing, a folder without a .json file),
    with the fix; None when it has preset files (each is then checked, or reported as skipped)."""
    if folder.is_file():
        return (f"{folder} is a file: presets check takes folders of presets; give the folder that holds it "
                f"({folder.parent})")
    try:
        with os.scandir(folder) as entries:
            if any(entry.name.endswith(".json") for entry in entries):
                return None
    except FileNotFoundError:
        return f"{folder}: no such folder of presets"
    except OSError as exc:
        return f"{folder}: cannot list it ({exc.strerror or exc})"
    return f"{folder} has no preset files (*.json): give the folder that holds the team's presets"


@_guard
def cmd_presets_check(args: argparse.Namespace, out: TextIO) -> int:
    """Check that every preset in the folders is vetted; exit 1 on any problem (for a team's CI)."""
    from core.preset_vetting import vetting_problems
    from core.source_map import at, key_positions, locate

    folders = [Path(f) for f in args.folders] if args.folders else _folders(args)
    for folder in folders if args.folders else ():  # a CI job pointed at a wrong folder must not pass
        if problem := _not_a_preset_folder(folder):
            raise UsageError(problem)
    reference = None
    if args.reference:
        if not Path(args.reference).is_dir():
            raise UsageError(f"--reference {args.reference}: no such folder")
        reference = read_reference(Path(args.reference))
    if args.folders:  # a team file named like a built-in preset is never used: list it after the built-ins
        given = {folder.resolve() for folder in folders}
        presets, unreadable = list_presets(search_path(folders))  # a folder given twice ("team", "team/") once
        presets = [p for p in presets if p.path.parent.resolve() in given]
    else:
        presets, unreadable = list_presets(folders)
    lines = [f"{problem}" for problem in unreadable]
    failing = 0
    for preset in presets:
        try:
            problems = vetting_problems(preset, world_sizes=args.world_size or (1,), reference=reference)
        except ValueError as exc:  # one preset the checker cannot follow must not hide the others
            failing += 1
            lines.append(f"{preset.path}: cannot check this preset: {exc}")
            continue
        failing += bool(problems)
        positions = key_positions(_preset_text(preset.path)) if problems else {}
        lines += [f"{at(str(preset.path), locate(positions, problem.path))}: {problem.message}"
                  for problem in problems]
    for line in lines:
        out.write(_printable(line) + "\n")
    out.write(f"{len(presets)} preset(s) checked: {len(presets) - failing} vetted, {failing} with problems"
              f"{f', {len(unreadable)} file(s) skipped' if unreadable else ''}\n")
    return EXIT_ERRORS if failing or unreadable else EXIT_OK


def build_export(preset: Preset, sets: list[str], resolve: list[str] | None, world_size: int | None,
                 version: str | None = None) -> tuple[dict[str, Any], str, list[str], int | None]:
    """The exported config, its target, notes for stderr and the GPU count it was made for (--world-size, or the
    world_size --resolve-auto resolved with; pure: no I/O); "auto" values are resolved for a job on DeepSpeed
    ``version`` (None: the newest), whose reading of sequence_parallel_size sets the train batch."""
    config = json.loads(json.dumps(preset.config))
    for item in sets:
        key, value = _split_assignment(item, "--set")
        set_path(config, key, value)
    target = preset.target
    notes: list[str] = []
    if resolve is not None:
        values: dict[str, Any] = {}
        for item in resolve:
            key, value = _split_assignment(item, "--resolve-auto")
            if key not in TRAINING_VALUES:
                raise UsageError(f"--resolve-auto: unknown training value {key!r}; known: {', '.join(TRAINING_VALUES)}")
            # each value is checked first (world_size=0 is the error to report), and kept as read (1e3 is 1000)
            try:
                values[key] = TRAINING_VALUES[key](key, value)
            except ValueError as exc:
                raise UsageError(f"--resolve-auto {item}: {exc}") from None
        if world_size is not None and values.setdefault("world_size", world_size) != world_size:
            raise UsageError(f"--world-size {world_size} and --resolve-auto world_size={values['world_size']} "
                             "disagree: give one")
        needed = needed_training_values(config)
        missing = [name for name in needed if name not in values and name not in HF_DEFAULTS]
        if missing:  # values with no Trainer default (the model's, the run's length): all named at once
            raise UsageError("--resolve-auto needs " + ", ".join(missing) + " for this preset's \"auto\" values "
                             "(no Trainer default): add " + " ".join(f"{name}=VALUE" for name in missing))
        defaulted = {name: HF_DEFAULTS[name] for name in needed if name not in values and name in HF_DEFAULTS}
        if defaulted:
            notes.append("the HF Trainer's defaults filled what --resolve-auto did not give: "
                         + ", ".join(f"{name}={json.dumps(value)}" for name, value in defaulted.items()))
        config = resolve_auto(config, version=version, **defaulted, **values)
        left = find_auto(config)
        if left:
            notes.append(f'still "auto" (the HF Trainer leaves these too; DeepSpeed uses its defaults): '
                         f"{', '.join(left)}")
        target = "deepspeed"
        world_size = values.get("world_size", world_size)
    return config, target, notes, world_size


@_guard
def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    """Export a preset, optionally changed with --set and with "auto" resolved, after validating it."""
    from core.io import dump_config
    from core.validate import validate

    preset = _loaded(args.preset, _folders(args))
    _warn_meta(preset)
    resolve = None if args.resolve_auto is None else [v for group in args.resolve_auto for v in group]
    version = resolve_version(args.deepspeed_version)  # the installed DeepSpeed unless given, as validate's
    config, target, notes, world_size = build_export(preset, args.set or [], resolve, args.world_size, version)
    for note in notes:
        sys.stderr.write(f"dsconfig: note: {note}\n")
    report = validate(config, world_size=world_size or 1, target=target, version=version)
    _print_findings(report, sys.stderr)
    if not report.ok and not args.force:
        sys.stderr.write(f"dsconfig: not exported: {len(report.errors)} error(s) (use --force to export anyway)\n")
        return EXIT_ERRORS
    text = dump_config(config)
    if args.output and args.output != "-":
        write_text(args.output, text)
        sys.stderr.write(f"dsconfig: wrote {args.output} (target {target})\n")
    else:
        out.write(text)
    return EXIT_OK if report.ok else EXIT_ERRORS


# ---------------------------------------------------------------- registration


def register(subparsers: Any) -> None:
    """Add ``presets`` (list, show) and ``export`` to an ``argparse`` sub-parser set."""
    p = subparsers.add_parser("presets", help="list and show the vetted presets (and DSCONFIG_PRESETS_PATH folders)")
    sub = p.add_subparsers(dest="presets_command", required=True, metavar="ACTION")
    q = sub.add_parser("list", help="list every preset")
    q.add_argument("--format", choices=("text", "json"), default="text")
    q.set_defaults(handler=cmd_presets_list)
    q = sub.add_parser("show", help="show a preset's metadata and config")
    q.add_argument("name", metavar="NAME")
    q.add_argument("--format", choices=("text", "json"), default="text")
    q.set_defaults(handler=cmd_presets_show)
    q = sub.add_parser("check", help="check that every preset is vetted (exit 1 if not): metadata, releases, "
                       "justifications, and no validation error on each release it names")
    q.add_argument("folders", nargs="*", metavar="FOLDER",
                   help="folders of presets (default: the built-in folder and DSCONFIG_PRESETS_PATH)")
    add_world_sizes_flag(q, "each preset is validated for each (default 1)")
    q.add_argument("--reference", metavar="DIR",
                   help="DeepSpeed's documentation: also check each justification's doc file and section heading")
    q.set_defaults(handler=cmd_presets_check)

    p = subparsers.add_parser("export", help="write a preset as ds_config.json, optionally changed and resolved")
    p.add_argument("--preset", required=True, metavar="NAME", help="preset name (see: dsconfig presets list)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="change a key, e.g. --set zero_optimization.stage=3 (VALUE parsed as JSON when possible)")
    p.add_argument("--world-size", type=gpu_count, default=None, metavar="N",
                   help="GPU count to validate for (and world_size for --resolve-auto)")
    p.add_argument("--resolve-auto", action="append", nargs="*", metavar="KEY=VALUE",
                   help="fill \"auto\" as the HF Trainer would, from training values such as "
                        "per_device_train_batch_size=4 learning_rate=2e-5 bf16=true hidden_size=4096 "
                        "num_training_steps=1000 warmup_steps=100; the result targets plain DeepSpeed")
    add_release_flag(p, "validate the export for")
    p.add_argument("--force", action="store_true", help="export even if the result has errors (exit code 1)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: standard output)")
    p.set_defaults(handler=cmd_export)
