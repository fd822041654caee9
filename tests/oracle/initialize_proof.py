"""Proof that a config the project rejects although a release's parser accepts it really fails there.

For one DeepSpeed release: the configs whose ``DeepSpeedConfig`` verdict is "accepted" while the validator
reports errors (outcomes "initialize-time" and "false-alarm") are grouped by their errors (code and path);
the shortest config of each group is run through that release's real ``deepspeed.initialize`` on a tiny
model on the CPU, then two optimizer steps and the LR schedule, with its *repair*: the same config with exactly the
flagged keys taken out (or, for an optimizer or scheduler the release cannot build, that section replaced
with one it can). The rejection is proven when the config fails and its repair trains: the only difference
is what the validator flagged, so the failure is the config's and not the machine's. When the host lacks a
half precision the config enables (fp16 on most x86 CPUs: DeepSpeed's accelerator says so), both runs use
the worker's stand-in with a precision the host has, as the other initialize tests do.
When the repair fails too, the config still fails for a reason of its own ("fails") unless the error is the
machine's (``MACHINE_FAILURES``: an op with no CPU build, a half precision the host lacks, a missing optional
package), which is reported as "machine" and never counted as proof. Each group's shortest members (up to
``TRIES``) are tried in the same run; one member that trains makes the group "accepted", else one proof
makes it "proven". A run that may not build DeepSpeed's C++ optimizer ops (``builds_ops=False``: CI, for a
release whose ops the install does not build) tries only members whose optimizer is torch's, and reports a group
that has none as "deferred".
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.effective import effective
from tests.oracle.differential import Comparison, run_differential
from tests.oracle.initialize import run_initialize_configs

Signature = tuple[tuple[str, str], ...]
#: What the repair puts in place of an optimizer / scheduler section the release cannot build.
SAFE_OPTIMIZER = {"type": "AdamW", "params": {"lr": 0.001, "torch_adam": True}}  # torch's AdamW: no op to build


@dataclass(frozen=True)
class Proof:
    """One group's evidence. ``status``: "proven" (the config fails, its repair trains), "fails" (the config
    and its repair both fail for a reason of the config: something else in it is wrong as well), "machine"
    (the failure is this CPU machine's: not counted as proof), "accepted" (the config trains: the validator's
    error is wrong)."""

    signature: Signature
    label: str
    status: str
    """"proven", "fails", "machine", "accepted" or "deferred" (every member needs an op this run may not build)."""
    failure: str
    repair_failure: str
    size: int

    def describe(self) -> str:
        errors = ", ".join(f"{code} @ {path or '<root>'}" for code, path in self.signature)
        if self.status == "deferred":
            return f"[deferred] {errors} ({self.size} configs) e.g. {self.label}: each needs a C++ op not built here"
        return (f"[{self.status}] {errors} ({self.size} configs) e.g. {self.label}\n    config: {self.failure}\n"
                f"    repair: {self.repair_failure or 'trains'}")


def _delete(config: dict[str, Any], path: str) -> None:
    parts = path.split(".")
    node: Any = config
    for part in parts[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def with_an_optimizer(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with an optimizer section when it builds none (no section, or one without a type): the
    caller of ``deepspeed.initialize`` would pass its own optimizer then (without one, ZeRO and ``backward``
    refuse to run at all)."""
    section = config.get("optimizer")
    if "optimizer" in config and not (isinstance(section, dict) and section.get("type") is None):
        return config
    return {**config, "optimizer": copy.deepcopy(SAFE_OPTIMIZER)}


def repaired(config: dict[str, Any], errors: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """``config`` without what the errors point at: the flagged keys removed; an optimizer or scheduler
    whose name or a missing required argument is at fault replaced (optimizer) or dropped (scheduler)."""
    out = copy.deepcopy(config)
    for _, path, _ in errors:
        section = path.split(".")[0]
        missing = not _has(out, path)  # a required parameter that is not there: nothing to take out
        if section == "optimizer" and (missing or not path.startswith("optimizer.params.")):
            out["optimizer"] = copy.deepcopy(SAFE_OPTIMIZER)
        elif section == "scheduler" and (missing or not path.startswith("scheduler.params.")):
            out.pop("scheduler", None)
        elif path:
            _delete(out, path)
    return out


def _has(config: dict[str, Any], path: str) -> bool:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


#: Words of a failure that is this CPU machine's, not the config's: an op DeepSpeed has no CPU build of, a
#: half precision the processor lacks, a missing optional package, a GPU-only backend.
MACHINE_FAILURES = ("CPU backend", "not supported on your device", "CUDA", "cuda", "NCCL", "nccl",
                    "Error building extension", "ninja", "Please install", "No module named", "Half")


def machine_failure(failure: str) -> bool:
    """Whether ``failure`` (initialize/step error text) is the machine's (see MACHINE_FAILURES)."""
    return any(word in failure for word in MACHINE_FAILURES)


def _failure(result: dict[str, Any]) -> str:
    """"" when the run trained, else where and what it raised (the stand-in's outcome when the host lacks
    the config's half precision)."""
    if result.get("unsupported") and result.get("stand_in") is not None:
        result = result["stand_in"]
    if result["raised"]:
        return f"initialize: {result['error_type']}: {result['message']}"
    step = result.get("step") or {}
    if step.get("raised"):
        return f"step: {step['error_type']}: {step['message']}"
    return ""


def rejected_but_parsed(
    cases: Sequence[tuple[str, dict[str, Any]]], comparisons: Sequence[Comparison]
) -> dict[Signature, list[tuple[Comparison, dict[str, Any]]]]:
    """The cases the parser accepts and the validator rejects (one comparison per case), grouped by the
    (code, path) of the errors."""
    groups: dict[Signature, list[tuple[Comparison, dict[str, Any]]]] = {}
    for (_, config), comparison in zip(cases, comparisons, strict=True):
        if comparison.outcome in ("initialize-time", "false-alarm") and comparison.verdict.accepted:
            signature = tuple(sorted({(code, path) for code, path, _ in comparison.errors}))
            groups.setdefault(signature, []).append((comparison, config))
    return groups


#: Members of a group tried at most, shortest first: another member may prove what the first could not (its
#: failure was the machine's, or it fails for a second reason of its own too).
TRIES = 3
#: The group's status is its most telling try: one that trains refutes the rejection; one proof proves it.
_RANK = {"accepted": 0, "proven": 1, "fails": 2, "machine": 3}


def builds_an_op(config: dict[str, Any], release: str) -> bool:
    """Whether ``deepspeed.initialize`` of ``config`` (or of its repair) under ``release`` JIT-builds a C++ optimizer
    op on the CPU: any DeepSpeed optimizer class (CPU-Adam for an offloaded Adam, fused Adam, ...), as
    ``core.effective`` reads the optimizer; torch's optimizers (``torch_adam``, torch.optim names) build none.
    A cold CPU-Adam build costs about 100 CPU-seconds per release, more than all of a release's tiny trainings."""
    reading = effective(config, release)
    return reading.optimizer_class is not None and reading.torch_optimizer is None


def prove(release: str, cases: Sequence[tuple[str, dict[str, Any]]], limit: int | None = None,
          tries: int = TRIES, builds_ops: bool = True) -> list[Proof]:
    """Judge ``cases`` at world size 1 under ``release``, and prove each rejected-but-parsed group (the
    first ``limit`` groups, all when None) with that release's ``deepspeed.initialize``: its shortest
    ``tries`` members, each with its repair, all in one run of the release (importing DeepSpeed costs more
    than a handful of tiny trainings), the group taking its most telling member's status. With ``builds_ops``
    False only members whose config and repair build no C++ op (``builds_an_op``) are tried; a group without
    one is "deferred"."""
    groups = rejected_but_parsed(cases, run_differential(cases, (1,), release))
    chosen = sorted(groups.items())[:limit] if limit is not None else sorted(groups.items())
    candidates: list[tuple[Signature, list[tuple[Comparison, dict[str, Any], dict[str, Any]]]]] = []
    shortest: dict[Signature, str] = {}  # each group's shortest member, named when the group is deferred
    for signature, members in chosen:
        runs = []
        for comparison, config in sorted(members, key=lambda member: len(json.dumps(member[1]))):
            shortest.setdefault(signature, comparison.label)
            if len(runs) == tries:
                break
            config = with_an_optimizer(config)
            repair = repaired(config, comparison.errors)
            if builds_ops or not (builds_an_op(config, release) or builds_an_op(repair, release)):
                runs.append((comparison, config, repair))
        candidates.append((signature, runs))
    configs: dict[str, dict[str, Any]] = {}
    for i, (_, runs) in enumerate(candidates):
        for attempt, (_, config, repair) in enumerate(runs):
            configs[f"{i}.{attempt}"] = config
            configs[f"{i}.{attempt}-repair"] = repair
    results = run_initialize_configs(configs, release).results if configs else {}
    proofs = []
    for i, (signature, runs) in enumerate(candidates):
        if not runs:
            proofs.append(Proof(signature, shortest[signature], "deferred", "", "", len(groups[signature])))
            continue
        best: Proof | None = None
        for attempt, (comparison, _, _) in enumerate(runs):
            failure = _failure(results[f"{i}.{attempt}"])
            repair_failure = _failure(results[f"{i}.{attempt}-repair"])
            status = ("accepted" if not failure else "proven" if not repair_failure
                      else "machine" if machine_failure(failure) else "fails")
            if best is None or _RANK[status] < _RANK[best.status]:
                best = Proof(signature, comparison.label, status, failure, repair_failure, len(groups[signature]))
        proofs.append(best)
    return proofs
