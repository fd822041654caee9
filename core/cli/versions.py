"""Which DeepSpeed releases a config works with: ``works_with`` (pure) and ``dsconfig versions``.

    dsconfig versions ds_config.json [--world-size N] [--target hf] [--format json]

prints, for every profiled release, ok or the first error, and one summary line such as
"works with 0.17.2 – 0.19.6; 0.19.7 removed `zero_optimization.mics_shard_size`".
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from core import versions
from core.cli.common import EXIT_ERRORS, EXIT_OK, gpu_count, read_config_file


@dataclass(frozen=True)
class ReleaseVerdict:
    """The validator's verdict for one release: ok, or its first error."""

    version: str
    ok: bool
    code: str | None = None
    path: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class WorksWith:
    """Verdicts for every release, oldest first, and a one-line summary."""

    verdicts: tuple[ReleaseVerdict, ...]
    summary: str

    def as_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "releases": [asdict(v) for v in self.verdicts]}


def works_with(
    config: Any, *, world_size: int = 1, target: str = "deepspeed", releases: tuple[str, ...] | None = None
) -> WorksWith:
    """Validate ``config`` for every release (default: all profiled ones) and summarise where it works."""
    from core.validate import validate

    verdicts = []
    judged = _without_ignored_everywhere(config)
    for version in releases or versions.RELEASES:
        report = validate(judged, world_size=world_size, target=target, version=version)
        errors = report.errors
        if errors:
            first = errors[0]
            verdicts.append(ReleaseVerdict(version, False, first.code, first.path, first.message))
        else:
            verdicts.append(ReleaseVerdict(version, True))
    return WorksWith(tuple(verdicts), summarise(verdicts))


def _without_ignored_everywhere(config: Any) -> Any:
    """``config`` without the top-level keys that no release reads: every release ignores them alike (a warning,
    never an error), so they cannot change a verdict, and a config at the size limit can hold tens of thousands
    (validated once per release). Kept: keys the schema or any release knows, "auto" values, anything nested."""
    if not isinstance(config, dict):
        return config
    from core.schema.root import DeepSpeedConfig
    from core.schema.walk import section_fields, section_meta

    schema_keys = section_fields(DeepSpeedConfig)
    doc_only = section_meta(DeepSpeedConfig).get("doc_only", {})

    def read_somewhere(key: Any, value: Any) -> bool:
        if not isinstance(key, str) or key in schema_keys or key in doc_only or value == "auto":
            return True
        if isinstance(value, dict | list):
            return True
        return any(versions.key_known(version, "", key) for version in versions.RELEASES)

    return {key: value for key, value in config.items() if read_somewhere(key, value)}


def _ranges(verdicts: list[ReleaseVerdict]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    start: str | None = None
    last: str | None = None
    for verdict in verdicts:
        if verdict.ok:
            start = start or verdict.version
            last = verdict.version
        elif start is not None:
            out.append((start, last or start))
            start = None
    if start is not None:
        out.append((start, last or start))
    return out


def _reason(verdict: ReleaseVerdict) -> str:
    if verdict.code in ("removed.key", "keys.not-in-version") and verdict.path:
        return f"{verdict.version} {'removed' if verdict.code == 'removed.key' else 'does not have'} `{verdict.path}`"
    return f"{verdict.version}: {verdict.code} at `{verdict.path or '(config)'}`"


def summarise(verdicts: list[ReleaseVerdict] | tuple[ReleaseVerdict, ...]) -> str:
    """"works with 0.17.2 – 0.19.6; 0.19.7 removed `x`" (each boundary where it stops working explained)."""
    verdicts = list(verdicts)
    ranges = _ranges(verdicts)
    if not ranges:
        first = verdicts[0] if verdicts else None
        return "works with no release" + (f" ({_reason(first)})" if first else "")
    text = "works with " + ", ".join(a if a == b else f"{a} – {b}" for a, b in ranges)
    if len(ranges) == 1 and ranges[0] == (verdicts[0].version, verdicts[-1].version):
        return text + " (every profiled release)"
    reasons = []
    index = {v.version: i for i, v in enumerate(verdicts)}
    for start, end in ranges:
        before, after = index[start] - 1, index[end] + 1
        if before >= 0:
            reasons.append(_reason(verdicts[before]))
        if after < len(verdicts):
            reasons.append(_reason(verdicts[after]))
    return text + "; " + "; ".join(dict.fromkeys(reasons))


def release(text: str) -> str:
    """argparse type: a profiled DeepSpeed release (the message names the range and the nearest)."""
    try:
        return versions.check_version(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_versions(args: argparse.Namespace, out: TextIO) -> int:
    config = read_config_file(args.file)
    result = works_with(config, world_size=args.world_size, target=args.target)
    if args.format == "json":
        out.write(json.dumps(result.as_json(), indent=2) + "\n")
    else:
        for verdict in result.verdicts:
            line = "ok" if verdict.ok else f"{verdict.code} at {verdict.path or '(config)'}: {verdict.message}"
            out.write(f"{verdict.version:<8} {line}\n")
        out.write(f"{args.file}: {result.summary}\n")
    return EXIT_OK if any(v.ok for v in result.verdicts) else EXIT_ERRORS  # 1: none works


def register(sub: Any) -> None:
    """Add ``dsconfig versions`` to the CLI's subcommands."""
    p = sub.add_parser("versions", help="which DeepSpeed releases a config works with")
    p.add_argument("file", metavar="FILE", help="config file (JSON or HJSON); - for stdin")
    p.add_argument("--world-size", type=gpu_count, default=1, help="data-parallel GPU count (default 1)")
    p.add_argument("--target", choices=("deepspeed", "hf"), default="deepspeed")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_versions)
