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
from tests.oracle.oracle import oracle_available
from tests.oracle.release_drift import drift_cases
from tests.test_versions_differential import KNOWN_FALSE_ALARMS, RELEASES

pytestmark = [pytest.mark.deepspeed, pytest.mark.long]


#: CI proves each minor line and the newest patch of the installed releases; 0.19.5 and 0.19.6, the neighbours of
#: 0.19.7, are proven by ``make releases-all`` (DSCONFIG_ALL_RELEASES=1): about 300 CPU-seconds of CI's budget.
ALL_RELEASES = os.environ.get("DSCONFIG_ALL_RELEASES") == "1"
PROVED = RELEASES if ALL_RELEASES else tuple(release for release in RELEASES if release not in ("0.19.5", "0.19.6"))
#: Members of each group CI tries: the two shortest (154 tiny trainings with their repairs over the four releases
#: instead of 202, BENCHMARKS.md "CI time"); ``make releases-all`` tries three, as ``scripts/versions_parity.py`` does.
CI_TRIES = TRIES if ALL_RELEASES else 2


@pytest.mark.parametrize("release", PROVED)
def test_configs_rejected_but_parsed_fail_in_the_release(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    cases = drift_cases() + [(f"edge :: {m.label}", m.config) for m in edge_configs()]
    proofs = prove(release, cases, tries=CI_TRIES)
    trains = [p.describe() for p in proofs if p.status == "accepted" and (release, p.label) not in KNOWN_FALSE_ALARMS]
    assert not trains, f"{release}: the validator rejects configs that train:\n" + "\n".join(trains)
    assert any(p.status == "proven" for p in proofs), f"{release}: nothing proven: {proofs}"
    machine = [p.describe() for p in proofs if p.status == "machine"]
    if machine:  # not proof either way: shown in the test report
        print(f"{release}: {len(machine)} groups fail for a reason of this machine:\n" + "\n".join(machine))
