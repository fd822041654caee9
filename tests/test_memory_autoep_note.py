"""AutoEP's expert parallelism, which the memory model does not size, is named in its notes (a read-only hunt of
30 Nov 2026: a Mixtral estimate with ``expert_parallel.autoep_size`` 8 was the same as without, with no note).

What the config means (``core.effective.Effective.autoep_size``) is checked against DeepSpeed 0.19.8's own parse
(``parse_autoep_config``: ``enabled`` and ``autoep_size`` by a raw ``dict.get``, so ``"false"`` is on) and the
engine's test (``_configure_expert_parallel``: ``if not autoep_config.enabled: return``).
"""

from __future__ import annotations

import pytest

from core import memory as m
from core.effective import effective

MIXTRAL = m.ModelCounts(46_702_792_704, 1_879_048_192)
VARIANTS = [
    ({"enabled": True, "autoep_size": 8}, 8),
    ({"enabled": "false", "autoep_size": 4}, 4),  # dict.get: a non-empty string is on
    ({"enabled": False, "autoep_size": 8}, 1),
    ({"autoep_size": 8}, 1),  # enabled defaults to False
    ({"enabled": True}, 1),
    ({"enabled": True, "autoep_size": True}, 1),
]


@pytest.mark.parametrize(("section", "size"), VARIANTS)
def test_the_estimate_names_autoep_when_deepspeed_turns_it_on(section, size):
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2},
              "expert_parallel": section}
    assert effective(config).autoep_size == size
    est = m.estimate(config, MIXTRAL, m.Hardware(gpus_per_node=8), m.Shape())
    said = [n for n in est.notes if n.startswith("expert_parallel.autoep_size")]
    assert said == ([] if size == 1 else [said[0]]) and (size == 1 or f"1/{size} of each MoE layer" in said[0])


def test_a_release_without_autoep_reads_no_expert_parallelism():
    assert effective({"expert_parallel": {"enabled": True, "autoep_size": 8}}, "0.16.9").autoep_size == 1


@pytest.mark.deepspeed
@pytest.mark.parametrize(("section", "size"), VARIANTS)
def test_autoep_size_is_what_deepspeed_parses(section, size):
    from tests.oracle import ds0195_worker

    config_cls = ds0195_worker._deepspeed_config_class()
    with ds0195_worker._quiet():
        parsed = config_cls({"train_micro_batch_size_per_gpu": 1, "expert_parallel": section}, 1)
    autoep = parsed.expert_parallel_config
    ds_size = autoep.autoep_size if autoep.enabled and isinstance(autoep.autoep_size, int) and not isinstance(
        autoep.autoep_size, bool) and autoep.autoep_size > 1 else 1
    assert ds_size == size
