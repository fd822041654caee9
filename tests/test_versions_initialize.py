"""Every config the project rejects while a release's parser accepts it really fails in that release.

For each release installed for the tests, the generated drift configs and the edge configs that the
release's ``DeepSpeedConfig`` accepts and the validator rejects are grouped by their errors; one config
per group and its repair (the flagged keys taken out) run through that release's real
``deepspeed.initialize``, two optimizer steps and the LR schedule on the CPU (``tests/oracle/initialize_proof.py``). The
config must fail; its repair must train, so the failure is what the validator flagged and not the
machine's; a config whose repair fails too must fail for a reason of the config. A failure of the machine
(an op with no CPU build in that release, fp16 on a CPU without it) cannot prove anything here: it is
listed, not counted. The whole corpus with its mutations is
``scripts/versions_parity.py --prove`` (figures in BENCHMARKS.md).
"""

from __future__ import annotations

import os

import pytest

from tests.oracle.edge_configs import edge_configs
from tests.oracle.initialize_proof import TRIES, prove
from tests.oracle.ops_cache import PREBUILT_OPS
from tests.oracle.oracle import oracle_available
from tests.oracle.release_drift import drift_cases
from tests.test_versions_differential import KNOWN_FALSE_ALARMS, RELEASES
from tests.test_zenflow_optimizer import ZENFLOW_REFUSING

pytestmark = [pytest.mark.deepspeed, pytest.mark.long]


#: CI proves each minor line and the newest patch of the installed releases; 0.19.5 and 0.19.6, the neighbours of
#: 0.19.7, are proven by ``make releases-all`` (DSCONFIG_ALL_RELEASES=1): about 300 CPU-seconds of CI's budget.
ALL_RELEASES = os.environ.get("DSCONFIG_ALL_RELEASES") == "1"
PROVED = RELEASES if ALL_RELEASES else tuple(release for release in RELEASES if release not in ("0.19.5", "0.19.6"))
#: Members of each group CI tries: the two shortest (154 tiny trainings with their repairs over the four releases
#: instead of 202, BENCHMARKS.md "CI time"); ``make releases-all`` tries three, as ``scripts/versions_parity.py`` does.
CI_TRIES = TRIES if ALL_RELEASES else 2


def builds_ops(release: str) -> bool:
    """Whether ``release``'s proof may run members that JIT-build a C++ optimizer op (CPU-Adam for an offloaded
    optimizer, fused Adam): under ``make releases-all``, and in CI for the releases whose ops the install builds
    (``PREBUILT_OPS``) or whose CPU-Adam CI builds anyway (the ZenFlow refusal's release). A cold CPU-Adam build was
    ~100 of the ~130 worker-seconds of each older release's proof, for the two groups (an offloaded optimizer) that
    need it; CI proves those on 0.17.6 and calls them "deferred" on the others (BENCHMARKS.md "CI time")."""
    return ALL_RELEASES or release in PREBUILT_OPS or release in ZENFLOW_REFUSING


@pytest.mark.parametrize("release", PROVED)
def test_configs_rejected_but_parsed_fail_in_the_release(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    cases = drift_cases() + [(f"edge :: {m.label}", m.config) for m in edge_configs()]
    proofs = prove(release, cases, tries=CI_TRIES, builds_ops=builds_ops(release))
    trains = [p.describe() for p in proofs if p.status == "accepted" and (release, p.label) not in KNOWN_FALSE_ALARMS]
    assert not trains, f"{release}: the validator rejects configs that train:\n" + "\n".join(trains)
    assert any(p.status == "proven" for p in proofs), f"{release}: nothing proven: {proofs}"
    machine = [p.describe() for p in proofs if p.status == "machine"]
    if machine:  # not proof either way: shown in the test report
        print(f"{release}: {len(machine)} groups fail for a reason of this machine:\n" + "\n".join(machine))
    deferred = [p.describe() for p in proofs if p.status == "deferred"]
    assert not deferred or not builds_ops(release), deferred
    if deferred:
        print(f"{release}: {len(deferred)} groups need a C++ op this run does not build (make releases-all):\n"
              + "\n".join(deferred))


@pytest.mark.parametrize(("config", "builds"), [
    ({"optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}, False),  # torch's AdamW
    ({"optimizer": {"type": "SGD", "params": {"lr": 1e-3}}}, False),  # torch.optim.SGD
    ({}, False),  # no optimizer: none is built
    ({"optimizer": {"type": "Adam", "params": {"lr": 1e-3}}}, True),  # fused Adam
    ({"optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, True),  # CPU-Adam
])
def test_which_configs_build_a_cpp_op(config, builds):
    from tests.oracle.initialize_proof import builds_an_op

    assert builds_an_op(config, "0.18.9") is builds
