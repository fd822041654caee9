"""The differential comparison: the validator's findings against DeepSpeed's verdict on the same config."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.oracle.oracle import IN_PROCESS_VERSION, Verdict, deepspeed_verdicts

# --------------------------------------------------------------------------- differential comparison
WORLD_SIZES = (1, 2, 8, 64)


@dataclass(frozen=True)
class Divergence:
    """A known, intended difference between the validator and DeepSpeed-on-this-machine.

    ``applies(config, world_size, verdict)`` says whether a given disagreement is explained by it.
    """

    name: str
    reason: str
    applies: Callable[[dict[str, Any], int, Verdict], bool]


DOCUMENTED_DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        "aio.use_gds",
        "DeepSpeed asserts 'GDS currently only supported for CUDA accelerator' only on a non-CUDA accelerator. "
        "The oracle runs on a CPU machine, so it rejects what a CUDA cluster accepts; the validator judges "
        "for the cluster.",
        lambda config, _ws, verdict: not verdict.accepted and "GDS currently only supported" in (verdict.message or ""),
    ),
)


@dataclass(frozen=True)
class Comparison:
    """One config at one world size: DeepSpeed's verdict against the validator's findings.

    ``outcome`` is one of OUTCOMES: "agree-accept", "agree-reject", "initialize-time" (DeepSpeed's parser
    accepts, the validator's only errors are "fails at initialize" rules), "divergence" (explained by a
    DOCUMENTED_DIVERGENCES entry), or a disagreement: "missed" (DeepSpeed rejects, no error),
    "false-alarm" (DeepSpeed accepts, an error that is not initialize-time), "crash" (validate raised).
    """

    label: str
    world_size: int
    version: str
    verdict: Verdict
    errors: tuple[tuple[str, str, str], ...]  # (code, path, message) of every error finding
    outcome: str
    note: str = ""
    config_json: str = ""

    @property
    def disagrees(self) -> bool:
        return self.outcome in DISAGREEMENTS

    def describe(self) -> str:
        """A multi-line account for an assertion message or a report."""
        errors = "; ".join(f"{code} @ {path or '<root>'} ({message[:100]})" for code, path, message in self.errors)
        errors = errors or "no errors"
        return (
            f"[{self.outcome}] {self.label} | world_size={self.world_size} | deepspeed {self.version}: "
            f"{self.verdict.describe()}\n    validator: {errors}{' | ' + self.note if self.note else ''}"
            f"\n    config: {self.config_json}"
        )


OUTCOMES = ("agree-accept", "agree-reject", "initialize-time", "divergence", "missed", "false-alarm", "crash")
DISAGREEMENTS = frozenset({"missed", "false-alarm", "crash"})


def validator_api() -> tuple[Any, frozenset[str]]:
    """``(validate, INITIALIZE_TIME_CODES)`` from the project's ``core.validate`` module."""
    import importlib

    module = importlib.import_module("core.validate")
    return module.validate, frozenset(module.INITIALIZE_TIME_CODES)


def compare(
    label: str,
    config: dict[str, Any],
    world_size: int,
    verdict: Verdict,
    *,
    version: str = IN_PROCESS_VERSION,
    validate: Any = None,
    initialize_codes: frozenset[str] | None = None,
) -> Comparison:
    """Run the validator (``target="deepspeed"``) on ``config`` and classify it against ``verdict``."""
    shown = json.dumps(config, default=repr)
    shown = shown if len(shown) <= 600 else shown[:600] + " ..."
    if validate is None or initialize_codes is None:
        validate, initialize_codes = validator_api()
    try:
        report = validate(config, world_size=world_size, target="deepspeed", version=version)
    except Exception as exc:  # the validator must never raise on a dict
        return Comparison(
            label, world_size, version, verdict, (), "crash", f"{type(exc).__name__}: {exc}", config_json=shown
        )
    errors = tuple((f.code, f.path, f.message) for f in report.findings if f.severity == "error")
    if report.ok != (not errors):
        return Comparison(
            label, world_size, version, verdict, errors, "crash", "Report.ok disagrees with findings", config_json=shown
        )
    divergence = next((d for d in DOCUMENTED_DIVERGENCES if d.applies(config, world_size, verdict)), None)
    if divergence is not None:
        return Comparison(label, world_size, version, verdict, errors, "divergence", divergence.name, config_json=shown)
    if not verdict.accepted:
        outcome = "agree-reject" if errors else "missed"
    elif not errors:
        outcome = "agree-accept"
    elif all(code in initialize_codes for code, _, _ in errors):
        outcome = "initialize-time"
    else:
        outcome = "false-alarm"
    return Comparison(label, world_size, version, verdict, errors, outcome, config_json=shown)


def run_differential(
    cases: Sequence[tuple[str, dict[str, Any]]],
    world_sizes: Sequence[int] = WORLD_SIZES,
    version: str = IN_PROCESS_VERSION,
) -> list[Comparison]:
    """Every ``(label, config)`` at every world size: DeepSpeed ``version`` against ``core.validate``."""
    validate, initialize_codes = validator_api()
    pairs = [(label, config, ws) for label, config in cases for ws in world_sizes]
    verdicts = deepspeed_verdicts([(config, ws) for _, config, ws in pairs], version)
    return [
        compare(label, config, ws, verdict, version=version, validate=validate, initialize_codes=initialize_codes)
        for (label, config, ws), verdict in zip(pairs, verdicts, strict=True)
    ]


def disagreement_message(comparisons: Sequence[Comparison], limit: int = 60) -> str:
    """All disagreements of a group, with config labels, world sizes, DeepSpeed's error and our findings."""
    bad = [c for c in comparisons if c.disagrees]
    lines = [f"{len(bad)} of {len(comparisons)} comparisons disagree with DeepSpeed:"]
    lines += [c.describe() for c in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more")
    return "\n".join(lines)
