"""Which DeepSpeed releases a config works with, as data: ``works_with`` validates it for every profiled
release and ``summarise`` says where it works ("works with 0.17.2 – 0.19.6; 0.19.7 removed
`zero_optimization.mics_shard_size`"). ``dsconfig versions`` and the review page's strip print it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core import versions


@dataclass(frozen=True)
class ReleaseVerdict:
    """The validator's verdict for one release: ok, or its first error."""

    version: str
    ok: bool
    code: str | None = None
    path: str | None = None
    message: str | None = None
    #: the GPU count the error is for, when several were checked (None: the only one, or ok on all)
    world_size: int | None = None


@dataclass(frozen=True)
class WorksWith:
    """Verdicts for every release, oldest first, and a one-line summary."""

    verdicts: tuple[ReleaseVerdict, ...]
    summary: str

    def as_json(self) -> dict[str, Any]:
        # "world_size" only where several GPU counts were checked and this one failed
        return {"summary": self.summary,
                "releases": [{k: v for k, v in asdict(verdict).items() if k != "world_size" or v is not None}
                             for verdict in self.verdicts]}


def works_with(
    config: Any, *, world_size: int | Sequence[int] = 1, target: str = "deepspeed",
    releases: tuple[str, ...] | None = None
) -> WorksWith:
    """Validate ``config`` for every release (default: all profiled ones) and summarise where it works. With
    several GPU counts a release works only if it works on each; its verdict is the first count's first error."""
    from core.validate import validate

    counts = [world_size] if isinstance(world_size, int) or not isinstance(world_size, Sequence) \
        else list(dict.fromkeys(world_size))  # validate refuses what is no GPU count (1.5) with its own message
    verdicts = []
    judged = _without_ignored_everywhere(config)
    for version in releases or versions.RELEASES:
        verdict = ReleaseVerdict(version, True)
        for count in counts:
            errors = validate(judged, world_size=count, target=target, version=version).errors
            if errors:
                first = errors[0]
                verdict = ReleaseVerdict(version, False, first.code, first.path, first.message,
                                         count if len(counts) > 1 else None)
                break
        verdicts.append(verdict)
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
    read_by_a_release = versions.top_level_keys_anywhere()

    def read_somewhere(key: Any, value: Any) -> bool:
        if not isinstance(key, str) or key in schema_keys or key in doc_only or value == "auto":
            return True
        if isinstance(value, dict | list):
            return True
        return key in read_by_a_release

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
    if verdict.code in ("removed.key", "removed.enabled-section", "keys.not-in-version") and verdict.path:
        how = "does not have" if verdict.code == "keys.not-in-version" else "removed"
        return f"{verdict.version} {how} `{verdict.path}`"
    on = f" on {verdict.world_size} GPU(s)" if verdict.world_size is not None else ""
    return f"{verdict.version}: {verdict.code} at `{verdict.path or '(config)'}`{on}"


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
