"""Elastic training against the real compute_elastic_config (a read-only hunt of 30 Nov 2026): micro batch sizes
that are all booleans passed (DeepSpeed's isinstance(m, int) lets them through, then numpy's lcm refuses them);
version 0.2 with model parallelism named, as the GPU counts to run on, a fallback list DeepSpeed then refuses too."""

from __future__ import annotations

import json
import re

import pytest

import core
from tests.oracle.oracle import deepspeed_verdict, oracle_available, run_under_release

pytestmark = pytest.mark.deepspeed

RELEASE = "0.19.7"  # the newest release with elastic training (0.19.8 removed it)
MP_V02 = {"elasticity": {"enabled": True, "max_train_batch_size": 1000, "micro_batch_sizes": [2, 4], "version": 0.2,
                         "num_gpus_per_node": 8, "model_parallel_size": 2}}
#: compute_elastic_config on each world size, as deepspeed.initialize calls it: the batch, or the exception's name
#: (all counts in one process: each process imports DeepSpeed, ~5 s)
_COMPUTE = """
import json, sys
from deepspeed.elasticity import compute_elastic_config
config, worlds = json.loads(sys.argv[1]), json.loads(sys.argv[2])
answers = {}
for world in worlds:
    try:
        batch, valid, micro = compute_elastic_config(config, "0.19.7", world_size=world, return_microbatch=True)
        answers[world] = {"batch": batch, "micro": micro}
    except Exception as exc:
        answers[world] = {"raised": type(exc).__name__}
print(json.dumps(answers))
"""


@pytest.fixture(autouse=True)
def _release():
    reason = oracle_available(RELEASE)
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize(("micro", "refused"), [([True], True), ([True, 2], False), ([2, 4], False)])
def test_boolean_micro_batch_sizes_are_refused_only_when_all_are(micro, refused):
    config = {"elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": micro}}
    errors = core.validate(config, world_size=8, version=RELEASE).errors
    assert bool(errors) == refused, errors
    assert deepspeed_verdict(config, 8, RELEASE).accepted is not refused
    if refused:
        assert "booleans" in errors[0].message and errors[0].path == "elasticity"


def test_the_gpu_counts_named_for_a_refused_count_are_ones_deepspeed_accepts():
    accepted = core.valid_world_sizes(MP_V02, 1024, RELEASE)
    refused_with_nearest = {}
    for world in (12, 6, 4):
        finding = next(f for f in core.validate(MP_V02, world_size=world, version=RELEASE).errors
                       if f.code == "elasticity.world-size")
        assert f"the GPU counts it accepts with this section: {', '.join(map(str, accepted))}" in finding.message
        nearest = [int(n) for n in re.findall(r"\d+", finding.suggestion.split("nearest: ")[1].split(")")[0])]
        assert nearest and set(nearest) <= set(accepted), (world, nearest)
        refused_with_nearest[world] = nearest
    counts = sorted({count for world, nearest in refused_with_nearest.items() for count in (world, *nearest)})
    real = json.loads(run_under_release(RELEASE, _COMPUTE, json.dumps(MP_V02), json.dumps(counts)))
    for count in counts:
        assert ("raised" in real[str(count)]) is (count in refused_with_nearest), (count, real[str(count)])
