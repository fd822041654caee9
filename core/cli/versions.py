"""``dsconfig versions``: which DeepSpeed releases a config works with (the verdicts come from
``core.versions.matrix.works_with``).

    dsconfig versions ds_config.json [--world-size N[,N...]] [--target hf] [--format json]

prints, for every profiled release, ok or the first error, and one summary line such as
"works with 0.17.2 – 0.19.6; 0.19.7 removed `zero_optimization.mics_shard_size`". With several GPU counts a
release is ok when it works on each, and an error names the count it is for.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from core import versions
from core.cli.common import EXIT_ERRORS, EXIT_OK, add_world_sizes_flag, json_report, read_config_file
from core.versions.matrix import works_with


def release(text: str) -> str:
    """argparse type: a profiled DeepSpeed release (the message names the range and the nearest)."""
    try:
        return versions.check_version(text.strip())
    except ValueError as exc:
        # core's way to add a release is a developer's (scripts/ is not shipped); a user picks one of the profiled
        said = str(exc).split(" To add a release:")[0]
        raise argparse.ArgumentTypeError(f"{said} Leave the flag out (the installed DeepSpeed, else the newest) or "
                                         f"give a release, e.g. the newest, {versions.NEWEST}") from None


def checked_on(counts: list[int], given: bool) -> str:
    """The GPU counts a verdict was checked on, in words (the batch and elasticity checks depend on them), and
    when none was given, that 1 is the default and how to check another."""
    gpus = ", ".join(str(n) for n in counts) + (" GPU" if counts == [1] else " GPUs")
    return f"checked on {gpus}" + ("" if given else ", the default (--world-size N checks the count you run on)")


def cmd_versions(args: argparse.Namespace, out: TextIO) -> int:
    """Print every release's verdict on the config and a summary saying the GPU count(s) checked; 1 when none
    works."""
    config = read_config_file(args.file)
    counts = list(dict.fromkeys(args.world_size or [1]))
    given = args.world_size is not None
    result = works_with(config, world_size=counts, target=args.target)
    if args.format == "json":
        out.write(json_report({"world_sizes": counts, "world_size_given": given, **result.as_json()}))
    else:
        for verdict in result.verdicts:
            on = f"on {verdict.world_size} GPU(s): " if verdict.world_size is not None else ""
            line = "ok" if verdict.ok else f"{on}{verdict.code} at {verdict.path or '(config)'}: {verdict.message}"
            out.write(f"{verdict.version:<8} {line}\n")
        out.write(f"{args.file}: {result.summary}; {checked_on(counts, given)}\n")
    return EXIT_OK if any(v.ok for v in result.verdicts) else EXIT_ERRORS  # 1: none works


def register(sub: Any) -> None:
    """Add ``dsconfig versions`` to the CLI's subcommands."""
    p = sub.add_parser("versions", help="which DeepSpeed releases a config works with")
    p.add_argument("file", metavar="FILE", help="config file (JSON or HJSON); - for stdin")
    add_world_sizes_flag(p, "a release must work on each (default 1)")
    p.add_argument("--target", choices=("deepspeed", "hf"), default="deepspeed")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_versions)
