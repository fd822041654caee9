"""Parity of the generated release profiles with the real releases, side by side.

For each release installed for the tests (0.16.9, 0.17.6, 0.18.9, 0.19.6 and 0.19.7 in ``.venv-ds/``, 0.19.5
in ``.venv-ds0195``, 0.19.8 in the main venv), one worker subprocess judges the whole set in one go: every
corpus file as is, a seeded sample of its mutations, and the hand-written edge cases, at two world sizes
(less the configs a release's parser cannot finish, ``parser_cannot_finish``).
The validator, told that release, must not accept anything the release's ``DeepSpeedConfig`` rejects
("missed") nor reject, as a parse-time error, what it accepts ("false-alarm"). Initialize-time failures
(unknown optimizer/scheduler names and keywords) are checked against the release's real class signatures.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from core import versions
from core.validate import validate
from tests.conftest import REPO_ROOT
from tests.oracle.corpus import corpus_entries
from tests.oracle.differential import disagreement_message, run_differential
from tests.oracle.edge_configs import edge_configs
from tests.oracle.mutations import mutate
from tests.oracle.oracle import SIDE_BY_SIDE, SIDE_BY_SIDE_ROOT, WORKER_PYTHONS, oracle_available, parser_cannot_finish
from tests.oracle.release_drift import drift_cases

pytestmark = pytest.mark.deepspeed

RELEASES = (*SIDE_BY_SIDE, "0.19.5", "0.19.8")
PARITY_WORLD_SIZES = (1, 8)
#: every SAMPLE-th mutation of each corpus file (the 0.19.8/0.19.5 suites in test_differential run them all)
SAMPLE = 12


def _cases() -> list[tuple[str, dict]]:
    cases: list[tuple[str, dict]] = []
    for entry in corpus_entries():
        if entry.config is None:
            continue
        cases.append((f"{entry.rel} (as is)", entry.config))
        found = mutate(entry.config, seed=entry.rel)
        cases += [(f"{entry.rel} :: [{m.kind}] {m.label}", m.config) for m in found[::SAMPLE]]
    cases += [(f"edge :: {m.label}", m.config) for m in edge_configs()]
    return cases


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, dict]]:
    found = _cases()
    if not any(label.endswith("(as is)") for label, _ in found):
        pytest.skip("corpus not found")
    return found


def _available(release: str) -> None:
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)


#: False alarms known and not yet fixed, each with its reason (a new one fails the test).
KNOWN_FALSE_ALARMS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("release", RELEASES)
def test_parser_verdicts_agree_with_the_release(release, cases):
    _available(release)
    judgeable = [(label, config) for label, config in cases if not parser_cannot_finish(release, config)]
    comparisons = run_differential(judgeable, PARITY_WORLD_SIZES, release)
    missed = [c for c in comparisons if c.outcome == "missed"]
    assert not missed, f"{len(missed)} false accepts for {release}\n" + disagreement_message(missed)
    unexplained = [c for c in comparisons if c.disagrees and (release, c.label) not in KNOWN_FALSE_ALARMS]
    assert not unexplained, disagreement_message(unexplained)


@pytest.fixture(scope="module")
def drift() -> list[tuple[str, dict]]:
    return drift_cases()


@pytest.mark.parametrize("release", RELEASES)
def test_configs_generated_from_release_drift_agree_with_the_release(release, drift):
    """Configs not in the corpus: values around every key, section, bound, validator, optimizer and
    scheduler that changes between two consecutive releases (read from the profiles), alone, in pairs,
    and switch sections enabled together. No false accept, no unexplained false alarm."""
    _available(release)
    comparisons = run_differential(drift, (1,), release)
    missed = [c for c in comparisons if c.outcome == "missed"]
    assert not missed, f"{len(missed)} false accepts for {release}\n" + disagreement_message(missed)
    unexplained = [c for c in comparisons if c.disagrees]
    assert not unexplained, disagreement_message(unexplained)


# ------------------------------------------------------------------------------ initialize-time failures
_SIGNATURES = """
import importlib, inspect, json, sys
out = {}
for label, dotted in json.loads(sys.argv[1]).items():
    module, _, name = dotted.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except Exception:
        continue
    out[label] = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
import deepspeed.runtime.config as c
import deepspeed.runtime.lr_schedules as s
print(json.dumps({"classes": out, "optimizers": sorted(c.DEEPSPEED_OPTIMIZERS),
                  "schedulers": sorted(s.VALID_LR_SCHEDULES)}))
"""

_CLASSES = {
    "adam/gpu": "deepspeed.ops.adam.FusedAdam", "adam/cpu": "deepspeed.ops.adam.DeepSpeedCPUAdam",
    "lamb/gpu": "deepspeed.ops.lamb.FusedLamb", "lion/gpu": "deepspeed.ops.lion.FusedLion",
    "onebitadam/gpu": "deepspeed.runtime.fp16.onebit.adam.OnebitAdam",
    "zerooneadam/gpu": "deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam",
    "onebitlamb/gpu": "deepspeed.runtime.fp16.onebit.lamb.OnebitLamb",
}


def _real_signatures(release: str) -> dict:
    if release in SIDE_BY_SIDE:
        import os
        import sys

        command = [sys.executable]
        env = {**os.environ, "PYTHONPATH": str(SIDE_BY_SIDE_ROOT / release)}
    elif release in WORKER_PYTHONS:
        command, env = [str(WORKER_PYTHONS[release])], None
    else:
        import sys

        command, env = [sys.executable], None
    done = subprocess.run([*command, "-c", _SIGNATURES, json.dumps(_CLASSES)], capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


_ENGINE_ARGS = {"self", "params", "deepspeed", "adamw_mode", "adam_w_mode", "fp32_optimizer_states",
                "max_grad_norm", "model_params", "overlap_step"}


@pytest.mark.parametrize("release", RELEASES)
def test_initialize_time_names_and_keywords_match_the_real_classes(release):
    _available(release)
    real = _real_signatures(release)
    assert sorted(versions.optimizer_names(release)) == real["optimizers"]
    assert sorted(versions.scheduler_names(release)) == real["schedulers"]
    base = {"train_micro_batch_size_per_gpu": 1}
    for label, keywords in real["classes"].items():
        name, backend = label.split("/")
        offload = {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}} if backend == "cpu" \
            else {}
        for keyword in set(keywords) - _ENGINE_ARGS:
            config = {**base, **offload, "optimizer": {"type": name, "params": {keyword: _sample(keyword)}}}
            report = validate(config, version=release)
            unknown = [f for f in report.findings if f.code == "optimizer.unknown-param"]
            assert not unknown, f"{release} {label}: `{keyword}` is a constructor keyword: {unknown}"
        config = {**base, **offload, "optimizer": {"type": name, "params": {"no_such_keyword": 1}}}
        codes = {f.code for f in validate(config, version=release).findings}
        assert "optimizer.unknown-param" in codes, f"{release} {label}: unknown keyword not reported"
    for name in real["optimizers"]:
        report = validate({**base, "optimizer": {"type": name}}, version=release)
        assert "optimizer.unknown" not in {f.code for f in report.findings}, (release, name)
    gone = {"onebitadam", "zerooneadam", "onebitlamb"} - set(real["optimizers"])
    for name in gone:
        report = validate({**base, "optimizer": {"type": name}}, version=release)
        assert "optimizer.unknown" in {f.code for f in report.findings}, (release, name)
    for name in real["schedulers"]:
        report = validate({**base, "scheduler": {"type": name, "params": {}}}, version=release)
        assert "scheduler.unknown" not in {f.code for f in report.findings}, (release, name)


def _sample(keyword: str):
    # a value of the right type for each known keyword; the check is about names, not values
    if keyword in ("betas",):
        return [0.9, 0.999]
    if keyword in ("bias_correction", "eps_inside_sqrt", "amsgrad", "cuda_aware", "torch_adam", "set_grad_none",
                   "fp32_optimizer_states", "use_triton"):
        return False
    if keyword == "comm_backend_name":
        return "nccl"
    if keyword in ("freeze_step", "var_freeze_step", "var_update_scaler", "local_step_scaler", "local_step_clipper"):
        return 10
    return 0.01
