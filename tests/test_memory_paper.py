"""core.memory.zero_paper_breakdown: the ZeRO paper's Figure 1 accounting (2 + 2 + K bytes per parameter)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import memory as m


@pytest.mark.parametrize(("stage", "paper_gb"), [(0, "120"), (1, "31.4"), (2, "16.6"), (3, "1.9")])
def test_reproduces_the_papers_figure_1(stage, paper_gb):
    """Figure 1: Ψ = 7.5B parameters, N_d = 64 GPUs, K = 12 (mixed-precision Adam)."""
    rows = {row.stage: row for row in m.zero_paper_breakdown(7_500_000_000, 64, optimizer_state_bytes=12)}
    assert sorted(rows) == [0, 1, 2, 3]
    digits = len(paper_gb.split(".")[1]) if "." in paper_gb else 0
    assert f"{rows[stage].total / 1e9:.{digits}f}" == paper_gb


def test_each_part_is_partitioned_from_its_stage():
    p, n, k = 1_000_000, 8, 12
    rows = {row.stage: row for row in m.zero_paper_breakdown(p, n, k)}
    assert (rows[0].parameters, rows[0].gradients, rows[0].optimizer_states) == (2 * p, 2 * p, k * p)
    assert (rows[1].parameters, rows[1].gradients, rows[1].optimizer_states) == (2 * p, 2 * p, k * p / n)
    assert (rows[2].parameters, rows[2].gradients, rows[2].optimizer_states) == (2 * p, 2 * p / n, k * p / n)
    assert (rows[3].parameters, rows[3].gradients, rows[3].optimizer_states) == (2 * p / n, 2 * p / n, k * p / n)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_agrees_with_the_full_estimates_model_states_for_fp16_adam(stage):
    """The teaching picture and the full estimate count the same model states for fp16 Adam without offload."""
    p, n = 7_000_000_000, 16
    config = {"zero_optimization": {"stage": stage}, "optimizer": {"type": "Adam"}, "fp16": {"enabled": True}}
    est = m.estimate(config, m.ModelCounts(p, 0), m.Hardware(gpus_per_node=n), m.Shape())
    (row,) = m.zero_paper_breakdown(p, n, stages=(stage,))
    assert math.isclose(row.total, est.model_states_gpu_bytes(), rel_tol=1e-9, abs_tol=8)


@given(p=st.integers(1, 10**13), n=st.integers(1, 4096), k=st.integers(0, 32))
def test_more_stages_never_hold_more(p, n, k):
    totals = [row.total for row in m.zero_paper_breakdown(p, n, k)]
    assert totals == sorted(totals, reverse=True)
    assert math.isclose(totals[0], (4 + k) * p)


@pytest.mark.parametrize(("args", "name"), [
    ((0, 8), "total_params"), ((10, 0), "num_gpus"), ((10, 8, -1), "optimizer_state_bytes"),
    ((10, 8, float("nan")), "optimizer_state_bytes"), ((1.5, 8), "total_params"), ((True, 8), "total_params"),
])
def test_bad_arguments_name_the_argument(args, name):
    with pytest.raises(ValueError, match=name):
        m.zero_paper_breakdown(*args)


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="stages"):
        m.zero_paper_breakdown(10, 8, stages=(4,))
