"""The MI250X's intra-node rings: 200 GB/s between the two GCDs of a package, the single 50 GB/s Infinity Fabric link
between packages once a ring spans more than one (core/perf/hardware.py's module docstring cites both)."""

from __future__ import annotations

import pytest

from core.hardware import GPU_BY_NAME
from core.memory import Shape
from core.models import get_spec
from core.perf import GPU_PERF, Cluster, Efficiency, predict
from core.perf.advice import assumptions_text
from core.perf.collectives import ring_seconds

MI250X = "AMD MI250X 128GB"
PERF = GPU_PERF[MI250X]
LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
GATHER = "ZeRO-3 parameter all-gather (forward)"
#: no per-call or per-hop latency: what is left of a collective is its bytes over the link
NO_LATENCY = Efficiency(collective_latency_s=0.0, ring_hop_latency_s=0.0)


def zero3(world: int) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "train_batch_size": world,
            "bf16": {"enabled": True}, "zero_optimization": {"stage": 3, "overlap_comm": False}}


def test_a_ring_over_more_gcds_than_a_package_runs_at_the_link_between_packages():
    assert GPU_BY_NAME[MI250X].devices == 2
    assert Cluster(MI250X, 2).intra_bytes_s == PERF.intra_node_gbyte_s * 1e9 == 200e9
    for gcds in range(3, 9):
        assert Cluster(MI250X, gcds).intra_bytes_s == PERF.intra_node_gbyte_s_across_packages * 1e9 == 50e9
    nbytes, link = 1e9, Efficiency().link
    assert ring_seconds(nbytes, 1, 8, 8, Cluster(MI250X, 8)) == pytest.approx(7 / 8 * nbytes / (50e9 * link))
    assert ring_seconds(nbytes, 1, 2, 2, Cluster(MI250X, 2)) == pytest.approx(1 / 2 * nbytes / (200e9 * link))


def test_zero3_all_gather_over_a_full_node_is_slower_than_over_one_package_per_node_by_the_link_ratio():
    """8 ranks either way: 8 GCDs of one node ring over the 50 GB/s links between packages, 2 GCDs on each of 4
    nodes (a network too fast to matter) over their package's 200 GB/s."""
    one_node = predict(zero3(8), LLAMA7, Cluster(MI250X, 8, 1, efficiency=NO_LATENCY), Shape(1, 2048, "flash"))
    packages = Cluster(MI250X, 2, 4, inter_node_gbit_s=1e6, efficiency=NO_LATENCY)
    per_package = predict(zero3(8), LLAMA7, packages, Shape(1, 2048, "flash"))
    ratio = PERF.intra_node_gbyte_s / PERF.intra_node_gbyte_s_across_packages
    assert ratio == 4
    assert one_node.breakdown[GATHER] == pytest.approx(ratio * per_package.breakdown[GATHER])


def test_a_tensor_parallel_pair_stays_in_its_package_and_its_data_parallel_ring_does_not():
    """autotp 2 on 8 GCDs: each pair is one package's GCDs; the ring of one tensor-parallel rank over the node's
    4 data-parallel ranks (GCDs 0, 2, 4, 6) crosses packages."""
    cl, nbytes, link = Cluster(MI250X, 8), 1e9, Efficiency().link
    assert ring_seconds(nbytes, 2, 2, 8, cl) == pytest.approx(2 * 1 / 2 * nbytes / (200e9 * link))
    assert ring_seconds(nbytes, 1, 4, 4, cl) == pytest.approx(3 / 4 * nbytes / (50e9 * link))


def test_an_explicit_intra_node_bandwidth_wins_inside_and_across_packages():
    cl = Cluster(MI250X, 8, intra_node_gbyte_s=120.0)
    assert cl.intra_ring_bytes_s(2) == cl.intra_ring_bytes_s(8) == cl.intra_bytes_s == 120e9
    assert cl.resolved()["intra_node_gbyte_s"] == 120
    fixed = Cluster(MI250X, 8, 1, intra_node_gbyte_s=120.0, efficiency=NO_LATENCY)
    default = Cluster(MI250X, 8, 1, efficiency=NO_LATENCY)
    shape = Shape(1, 2048, "flash")
    assert predict(zero3(8), LLAMA7, fixed, shape).breakdown[GATHER] == pytest.approx(
        50 / 120 * predict(zero3(8), LLAMA7, default, shape).breakdown[GATHER])


def test_the_displayed_gpu_to_gpu_figure_is_the_one_a_full_node_ring_uses():
    for gcds, shown in ((2, 200), (8, 50)):
        cl = Cluster(MI250X, gcds, 1, efficiency=NO_LATENCY)
        assert cl.resolved()["intra_node_gbyte_s"] == shown
        assert cl.described()["intra_node_gbyte_s"] == shown
        assert f"{shown:g} GB/s GPU-to-GPU" in assumptions_text(cl)
        est = predict(zero3(gcds), LLAMA7, cl, Shape(1, 2048, "flash"))
        assert est.assumptions["intra_node_gbyte_s"] == est.cluster["intra_node_gbyte_s"] == shown
        nbytes = 1e9
        assert ring_seconds(nbytes, 1, gcds, gcds, cl) == pytest.approx(
            (gcds - 1) / gcds * nbytes / (shown * 1e9 * cl.efficiency.link))


def test_gpus_of_one_device_per_package_keep_one_figure():
    for name, perf in GPU_PERF.items():
        if perf.intra_node_gbyte_s_across_packages is None:
            cl = Cluster(name, 8)
            assert cl.intra_ring_bytes_s(2) == cl.intra_ring_bytes_s(8) == perf.intra_node_gbyte_s * 1e9
