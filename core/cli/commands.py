"""``dsconfig``: the parser and ``main``, and the config commands: validate, fix, explain, migrate, schema.

Exit codes (``core.cli.common.EXIT_CODES_HELP``, the end of every --help): 0 done, 1 the answer is no (errors
found; fit: does not fit; plan: nothing fits), 2 unreadable input or bad usage, 70 an internal error (a bug),
130 interrupted, 141 the reader stopped reading.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from core.cli import estimate as cli_estimate
from core.cli import fit as cli_fit
from core.cli import plan as cli_plan
from core.cli import presets as cli_presets
from core.cli import versions as cli_versions
from core.cli.common import (
    EXIT_CODES_HELP,
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_world_sizes_flag,
    gpu_count,
    guarded,
    json_errors,
    json_report,
    read_config_and_text,
    read_config_file,
    read_config_text_and_bytes,
    rewrite_config_file,
    write_text,
)
from core.findings import SEVERITY_ORDER
from core.io import dump_config, strict_json_problem
from core.source_map import Position, at, key_positions, locate
from core.versions import default_version_note, resolve_version


def _summary(name: str, report: Any) -> str:
    counts = report.counts()
    status = "OK" if report.ok else "FAILED"
    return (f"{name}: {status} — {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info "
            f"(DeepSpeed {report.version}, target {report.target}, {report.world_size} GPU(s))\n")


def _print_finding(name: str, finding: Any, where: Callable[[str], Position | None], out: TextIO,
                   marker: str = "") -> None:
    """One finding of the text report: severity, code, path and place (then ``marker``), message, suggestion, fix."""
    position = where(finding.path)
    place = f"  {at(name, position)}" if position else ""
    out.write(f"  {finding.severity:<7} {finding.code:<32} {finding.path or '(config)'}{place}{marker}\n")
    out.write(f"          {finding.message}\n")
    if finding.suggestion:
        out.write(f"          → {finding.suggestion}\n")
    if finding.fix is not None:
        out.write(f"          fix ({'safe' if finding.fix.safe else 'unsafe'}): {finding.fix.description}\n")


def _batch_text(b: Any) -> str:
    """The batch trio as the text report writes it."""
    return (f"train_batch_size={b.train_batch_size} = micro {b.train_micro_batch_size_per_gpu} × accumulation "
            f"{b.gradient_accumulation_steps} × {b.world_size:g} GPU(s)")


def _print_report(name: str, report: Any, where: Callable[[str], Position | None], out: TextIO) -> None:
    out.write(_summary(name, report))
    for finding in report.findings:
        _print_finding(name, finding, where, out)
    safe = Counter(f.severity == "info" for f in report.findings if f.fix is not None and f.fix.safe)
    if safe[False]:
        out.write(f"  {safe[False]} safe fix(es): `dsconfig fix {name}` applies them; `dsconfig explain CODE` "
                  "explains a code\n")
    if safe[True]:
        out.write(f"  {safe[True]} safe fix(es) of info findings: `dsconfig fix --info {name}` applies them\n")
    if report.batch is not None:
        out.write(f"  batch: {_batch_text(report.batch)}\n")


#: GitHub Actions' annotation levels (workflow commands ::error, ::warning, ::notice).
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _github_data(text: str) -> str:
    """A workflow command's message, escaped as the runner reads it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_annotation(level: str, file: str, position: Position | None, title: str, message: str) -> str:
    fields = [("file", file)] + ([("line", str(position[0])), ("col", str(position[1]))] if position else [])
    properties = ",".join(f"{key}={_github_data(value).replace(':', '%3A').replace(',', '%2C')}"
                          for key, value in [*fields, ("title", title)])
    return f"::{level} {properties}::{_github_data(message)}\n"


def _print_github(name: str, report: Any, where: Callable[[str], Position | None], out: TextIO) -> None:
    out.write(_summary(name, report))
    for finding in report.findings:
        message = finding.message + (f" → {finding.suggestion}" if finding.suggestion else "")
        out.write(_github_annotation(_GITHUB_LEVEL[finding.severity], name, where(finding.path),
                                     f"dsconfig {finding.code}", message))


def _sizes_text(sizes: Sequence[int]) -> str:
    return f"{', '.join(str(w) for w in sizes)} GPU{'s' if sizes != [1] else ''}"


@dataclass
class _Group:
    """One finding as it is on some of the GPU counts validated (the same words on each)."""

    finding: Any
    sizes: list[int] = field(default_factory=list)


def _grouped(reports: Sequence[Any]) -> list[_Group]:
    """The findings of one config validated on several GPU counts, each distinct finding once with the counts it
    is on, errors first."""
    groups: dict[tuple[Any, ...], _Group] = {}
    for report in reports:
        for f in report.findings:
            key = (f.severity, f.code, f.path, f.message, f.suggestion, f.fix.description if f.fix else None)
            groups.setdefault(key, _Group(f)).sizes.append(report.world_size)
    return sorted(groups.values(), key=lambda g: SEVERITY_ORDER[g.finding.severity])


def _print_many(name: str, reports: Sequence[Any], where: Callable[[str], Position | None], out: TextIO) -> None:
    """The text report of one config on several GPU counts: where it fails, then each finding once, marked with the
    counts it is on when not all."""
    sizes = [r.world_size for r in reports]
    failing = [r.world_size for r in reports if not r.ok]
    groups = _grouped(reports)
    counts = Counter(g.finding.severity for g in groups)
    first = reports[0]
    if failing:
        passing = [w for w in sizes if w not in failing]
        status = (f"FAILED on {_sizes_text(failing)}" + (f", OK on {_sizes_text(passing)}" if passing else ""))
    else:
        status = f"OK on {_sizes_text(sizes)}"
    out.write(f"{name}: {status} — {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info "
              f"(DeepSpeed {first.version}, target {first.target})\n")
    for group in groups:
        only = f"  [on {_sizes_text(group.sizes)}]" if len(group.sizes) < len(sizes) else ""
        _print_finding(name, group.finding, where, out, only)
    for report in reports:
        shown = _batch_text(report.batch) if report.batch is not None else "does not resolve (see the errors)"
        out.write(f"  batch on {_sizes_text([report.world_size])}: {shown}\n")


def _print_github_many(name: str, reports: Sequence[Any], where: Callable[[str], Position | None],
                       out: TextIO) -> None:
    sizes = [r.world_size for r in reports]
    failing = [r.world_size for r in reports if not r.ok]
    out.write(f"{name}: " + (f"FAILED on {_sizes_text(failing)}" if failing else f"OK on {_sizes_text(sizes)}")
              + "\n")
    for group in _grouped(reports):
        finding = group.finding
        only = f" (on {_sizes_text(group.sizes)})" if len(group.sizes) < len(sizes) else ""
        message = finding.message + (f" → {finding.suggestion}" if finding.suggestion else "")
        out.write(_github_annotation(_GITHUB_LEVEL[finding.severity], name, where(finding.path),
                                     f"dsconfig {finding.code}{only}", message))


def _readable_by_hf(path: str, text: str, stdin_bytes: bytes | None = None) -> None:
    """UsageError unless the HF Trainer and Accelerate can read the file: they ``json.load`` it as UTF-8, so
    comments, trailing commas, unquoted keys (HJSON, which DeepSpeed reads) and a byte-order mark fail there.
    ``stdin_bytes``: what standard input held (its decoded text has lost the byte-order mark)."""
    raw = stdin_bytes if stdin_bytes is not None else text.encode() if path == "-" else Path(path).read_bytes()
    problem = strict_json_problem(raw)
    if problem is not None:
        message, line, column = problem
        raise UsageError(
            f"{path}: the HF Trainer and Accelerate cannot read it: their json.load fails ({message}: line {line} "
            f"column {column}); DeepSpeed itself reads it. Save it as strict JSON (no comments, trailing commas, "
            "unquoted keys or byte-order mark), as dsconfig's and the app's exports are.", position=(line, column))


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from core.validate import validate

    results: list[dict[str, Any]] = []
    worst = EXIT_OK
    sizes = list(dict.fromkeys(args.world_size or [1]))  # as given, each once
    if args.files.count("-") > 1:  # the second read of standard input finds it empty
        raise UsageError("standard input (-) can be read only once: give - once")
    for path in args.files:
        try:
            config, text, stdin_bytes = read_config_text_and_bytes(path)
            if args.target == "hf":
                _readable_by_hf(path, text, stdin_bytes)
        except UsageError as exc:
            worst = EXIT_USAGE
            # exit 2's one message on stderr, as every command writes it. The text report does not repeat it: a
            # terminal or a CI log shows both streams, so it was read twice. JSON and GitHub annotations keep an
            # entry in their place on stdout: a program reads those, and one not finding the file would fail.
            sys.stderr.write(f"dsconfig validate: error: {exc}\n")
            if args.format == "json":
                # the keys of a checked file's entry too, so that a reader of r["findings"] does not fail on it
                line, column = exc.position or (None, None)
                results.append({"file": path, "ok": False, "unreadable": True, "message": str(exc), "line": line,
                                "column": column, "counts": dict.fromkeys(SEVERITY_ORDER, 0), "findings": []})
            elif args.format == "github":
                out.write(_github_annotation("error", path, exc.position, "dsconfig unreadable", str(exc)))
            continue
        reports = [validate(config, world_size=w, target=args.target, version=args.deepspeed_version)
                   for w in sizes]
        if not all(r.ok for r in reports) and worst == EXIT_OK:
            worst = EXIT_ERRORS
        # the text is read for where each key is only when there is a finding to place
        where = functools.partial(locate, key_positions(text) if any(r.findings for r in reports) else {})

        if args.format == "json":
            for report in reports:  # one result per file and GPU count (each says its world_size)
                data = report.to_dict()
                for finding, item in zip(report.findings, data["findings"], strict=True):
                    item["line"], item["column"] = where(finding.path) or (None, None)
                results.append({"file": path, **data})
        elif len(reports) > 1:
            (_print_github_many if args.format == "github" else _print_many)(path, reports, where, out)
        elif args.format == "github":
            _print_github(path, reports[0], where, out)
        else:
            _print_report(path, reports[0], where, out)
    if args.format == "json":
        out.write(json_report(results))
    return worst


def cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    from core.migrate import left_behind, migrate
    from core.presets import is_preset_document

    # refused before standard input is read or anything is printed
    if (args.write or args.check) and "-" in args.files:
        raise UsageError(f"{'--write' if args.write else '--check'} needs files, not standard input")
    if not (args.write or args.check) and len(args.files) > 1:
        raise UsageError("printing the result takes one FILE; give --write or --check for several")
    stale = unreadable = 0
    for name in args.files:
        try:
            config = read_config_file(name)
        except UsageError as exc:
            if not (args.write or args.check):
                raise  # the one file printed: nothing else to carry on with
            sys.stderr.write(f"dsconfig migrate: error: {exc}\n")  # the other files are still checked or written
            unreadable += 1
            continue
        # a preset file ({"meta": ..., "config": ...}): its config is migrated, the rest kept as it is
        preset = is_preset_document(config)
        new, changes = migrate(config["config"] if preset else config)
        left = left_behind(new)
        if preset:
            new = {**config, "config": new}
            changes = [f"in the preset's config: {change}" for change in changes]
            left = [f"in the preset's config: {why}" for why in left]
        if args.write and changes:
            try:  # written first, so that "migrated" is said only of a file that was
                rewrite_config_file(name, dump_config(new))
            except (UsageError, OSError) as exc:
                why = exc if isinstance(exc, UsageError) else f"{name}: cannot write it: {exc.strerror or exc}"
                sys.stderr.write(f"dsconfig migrate: error: {why}\n")  # the other files are still written
                unreadable += 1
                continue
        for change in changes:
            sys.stderr.write(f"{'would migrate' if args.check else 'migrated'}: {name}: {change}\n")
        for why in left:
            sys.stderr.write(f"cannot migrate: {name}: {why}\n")
        if not changes and not left:
            sys.stderr.write(f"{name}: nothing to migrate\n")
        stale += bool(changes or left)
        if args.write and changes:
            sys.stderr.write(f"wrote {name}\n")
        elif not (args.write or args.check):
            out.write(dump_config(new))
    if args.check and stale:
        sys.stderr.write(f"{stale} file(s) with deprecated keys: `dsconfig migrate --write FILE` rewrites them "
                         "(those it cannot migrate are said above)\n")
    if unreadable:
        return EXIT_USAGE
    return EXIT_ERRORS if args.check and stale else EXIT_OK


#: The severities whose fixes ``dsconfig fix`` applies, without and with ``--info``.
FIXED_SEVERITIES = {False: ("error", "warning"), True: ("error", "warning", "info")}


def cmd_fix(args: argparse.Namespace, out: TextIO) -> int:
    from core.autofix import MAX_ROUNDS, fix_until_stable
    from core.export import text_diff

    config, text = read_config_and_text(args.file)
    result = fix_until_stable(config, unsafe=args.unsafe, world_size=args.world_size, target=args.target,
                              version=args.deepspeed_version, severities=FIXED_SEVERITIES[args.info])
    for finding in result.applied:
        kind = "safe" if finding.fix and finding.fix.safe else "unsafe"
        sys.stderr.write(f"fixed ({kind}): {finding.code} {finding.path or '(config)'}: "
                         f"{finding.fix.description if finding.fix else ''}\n")
    withheld = {(finding.code, finding.path): codes for finding, codes in result.withheld}
    for finding in result.skipped:
        if (finding.code, finding.path) in withheld:
            why = f"it would add the error {', '.join(withheld[finding.code, finding.path])}"
        elif finding.fix and not finding.fix.safe and not args.unsafe:
            why = "unsafe, use --unsafe"
        elif result.stopped:
            why = f"stopped after {MAX_ROUNDS} rounds of fixes; run dsconfig fix again on the output"
        else:
            why = "tried, it did not resolve the finding"
        sys.stderr.write(f"not applied ({why}): {finding.code} {finding.path or '(config)'}: "
                         f"{finding.fix.description if finding.fix else ''}\n")
    left = result.report
    sys.stderr.write(f"{args.file}: {len(result.applied)} fix(es) applied; {len(left.errors)} error(s), "
                     f"{len(left.warnings)} warning(s) left\n")
    before, after = text, dump_config(result.config)  # the diff shows the reformatting the write does too
    if args.diff:
        out.write(text_diff(before, after, args.file, f"{args.file} (fixed)"))
    elif args.output and args.output != "-":  # -o -: standard output, as for export
        same = args.file != "-" and Path(args.output).resolve() == Path(args.file).resolve()
        (rewrite_config_file if same else write_text)(args.output, after)
        sys.stderr.write(f"wrote {args.output}\n")
    else:
        out.write(after)
    return EXIT_OK if left.ok else EXIT_ERRORS


def cmd_explain(args: argparse.Namespace, out: TextIO) -> int:
    from core.rules import explain
    from core.rules.codes import lookup

    if args.code is None:
        out.write(explain.index())
        return EXIT_OK
    entry = lookup(args.code) or lookup(args.code.lower())
    if entry is not None and entry.family and not _in_family(entry.prefix, args.code.lower()):
        entry = None  # "type.unchekced" is a typo, not one of the pydantic error types the family stands for
    if entry is None:
        underscored = args.code.lower().replace("-", "_")
        hint = (f" (did you mean {underscored}?)" if lookup(underscored) and _in_family("type.", underscored)
                else _code_hint(args.code))
        raise UsageError(f"no finding code {args.code!r}{hint}; `dsconfig explain` lists them all")
    out.write(explain.text(entry))
    return EXIT_OK


def _in_family(prefix: str, code: str) -> bool:
    """Whether ``code`` is one of the codes a family entry stands for: ``type.`` and a pydantic error type."""
    import typing

    from pydantic_core import core_schema

    return code.startswith(prefix) and code[len(prefix):] in typing.get_args(core_schema.ErrorType)


def _code_hint(text: str) -> str:
    """The codes a mistyped one may have meant: those of a family (``batch``), else the closest spellings."""
    import difflib

    from core.rules.codes import CODES

    wanted = text.lower().rstrip(".")
    family = sorted(code for code in CODES if code.startswith(wanted + "."))
    close = family[:8] or difflib.get_close_matches(wanted, list(CODES), n=3, cutoff=0.75)
    more = f" and {len(family) - 8} more" if len(family) > 8 else ""
    return f" (did you mean {', '.join(close)}{more}?)" if close else ""


def cmd_schema(args: argparse.Namespace, out: TextIO) -> int:
    from core.jsonschema import json_schema

    text = json.dumps(json_schema(resolve_version(args.deepspeed_version), args.target), indent=2) + "\n"
    if args.output and args.output != "-":
        write_text(args.output, text)
    else:
        out.write(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dsconfig`` with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="dsconfig", description="Write, check, size and share DeepSpeed configuration files.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, what: str = "validate against") -> None:
        p.add_argument("--target", choices=("deepspeed", "hf"), default="deepspeed",
                       help="deepspeed: the file goes to deepspeed.initialize as is; hf: the HF Trainer / "
                       "Accelerate fill in \"auto\" first (default: deepspeed)")
        cli_estimate.add_release_flag(p, what)

    p = sub.add_parser("validate", help="check config files; exit 1 on errors, 2 on unreadable input")
    p.add_argument("files", nargs="+", metavar="FILE", help="config files (JSON or HJSON); - for stdin")
    add_world_sizes_flag(p, "each finding is shown once, marked with the counts it is on when not all; exit 1 if "
                            "any count fails (default 1)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text",
                   help="text (each finding with FILE:LINE:COLUMN), json (with line and column), or github: "
                   "annotations on the lines of a pull request in GitHub Actions")
    common(p)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("migrate", help="rewrite deprecated keys into their current form; --check: exit 1 if "
                       "any would change")
    p.add_argument("files", nargs="+", metavar="FILE", help="config files (JSON or HJSON); - for stdin (printing only)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite each FILE in place (default: print the result)")
    mode.add_argument("--check", action="store_true",
                      help="change nothing; exit 1 if a FILE has deprecated keys (for CI and pre-commit)")
    p.set_defaults(handler=cmd_migrate)

    p = sub.add_parser("fix", help="apply the validator's safe fixes until the config is stable; exit 1 if "
                       "errors are left")
    p.add_argument("file", metavar="FILE", help="config file (JSON or HJSON); - for stdin")
    p.add_argument("--unsafe", action="store_true",
                   help="also apply unsafe fixes (they choose values or change what DeepSpeed does)")
    p.add_argument("--info", action="store_true",
                   help='also apply the fixes of info findings (e.g. write the default an "auto" stands for)')
    where = p.add_mutually_exclusive_group()
    where.add_argument("--diff", action="store_true", help="print a unified diff instead of the fixed config")
    where.add_argument("-o", "--output", metavar="OUT", help="write the fixed config to OUT (may be FILE itself)")
    p.add_argument("--world-size", type=gpu_count, default=1, help="data-parallel GPU count (default 1)")
    common(p)
    p.set_defaults(handler=cmd_fix)

    p = sub.add_parser("explain", help="what a finding code means, with an example (no CODE: list every code)")
    p.add_argument("code", nargs="?", metavar="CODE", help="a finding code such as removed.key")
    p.set_defaults(handler=cmd_explain)

    p = sub.add_parser("schema", help="print the JSON Schema of ds_config.json (for VS Code)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    common(p, "write the schema of")
    p.set_defaults(handler=cmd_schema)

    cli_estimate.register(sub)
    cli_presets.register(sub)
    cli_fit.register(sub)
    cli_plan.register(sub)
    cli_versions.register(sub)
    for command in sub.choices.values():  # every command's --help ends with the exit codes, as laid out
        command.epilog = command.epilog or EXIT_CODES_HELP
        if command.formatter_class is argparse.HelpFormatter:  # no description to keep as written: only the epilog
            command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run ``dsconfig`` and return its exit code."""
    for stream in (sys.stdout, sys.stderr):
        # Configs may hold any text (even lone surrogates from "\ud800" escapes): never fail printing it.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    out = out or sys.stdout
    if out is None:  # started with standard output closed: nothing could be printed, not even a verdict
        return _cannot_write(args.command, "standard output is closed")
    if getattr(args, "deepspeed_version", "") is None and (note := default_version_note()) and sys.stderr:
        sys.stderr.write(f"dsconfig {args.command}: note: {note}; choose another with --deepspeed-version\n")
    try:
        return guarded(args.command, lambda: args.handler(args, out), json_out=json_errors(args, out))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader stopped reading (| head): the files after that were never checked, so no verdict can be
        # given; exit as a process killed by SIGPIPE does (141), which `set -o pipefail` reports as a failure
        if out is sys.stdout:
            _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # the output could not be written (a full disk): never the config's exit code
        return _cannot_write(args.command, exc.strerror or str(exc))


#: The exit code of a process that SIGPIPE ended (128 + 13), as a shell reports it.
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point standard output at the null device so that flushing it at exit does not fail a second time."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _cannot_write(command: str, why: str) -> int:
    """Say on stderr (when there is one) that the output could not be written; exit code 2."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError):  # stderr on the same full disk: the exit code still says it
            sys.stderr.write(f"dsconfig {command}: error: cannot write the output ({why}); the result is lost: "
                             "run it again with the output going somewhere writable\n")
    return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
