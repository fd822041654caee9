"""Seconds of the collectives the step-time model charges: ring collectives over the ZeRO group and ZeRO++'s
quantized gradient reduction (qgZ)."""

from __future__ import annotations

from core.perf.hardware import Cluster

#: qgZ sends int4 gradients: a quarter of the bytes of the 16-bit gradients the plain reduce-scatter sends.
QGZ_WIRE_FRACTION = 0.25


def ring_seconds(bytes_total: float, factor: float, ranks: int, gpus_per_node: int, cl: Cluster, intra_only=False,
                 rings_per_node: int = 1) -> float:
    """Seconds for a ring collective moving ``factor`` x (ranks-1)/ranks x bytes per GPU (1: reduce-scatter or
    all-gather, 2: all-reduce) over ``ranks`` GPUs filled node by node, while ``rings_per_node`` such rings
    (one per tensor-parallel rank in the node) cross each node's network at once and share it. A node's members of
    the ring sit every ``cl.gpus_per_node // gpus_per_node`` devices (a tensor-parallel group's between them), and
    the devices they span set the link (``Cluster.intra_ring_bytes_s``)."""
    if ranks <= 1 or bytes_total <= 0:
        return 0.0
    volume = factor * (ranks - 1) / ranks * bytes_total
    link = cl.efficiency.link
    in_node = min(ranks, gpus_per_node)
    span = max(1, cl.gpus_per_node // gpus_per_node) * (in_node - 1) + 1
    t = volume / (cl.intra_ring_bytes_s(span) * link) if in_node > 1 else 0.0
    if ranks > gpus_per_node and not intra_only:
        t = max(t, volume * rings_per_node / (cl.inter_bytes_s * link))
    return t


def qgz_reduce_seconds(wire_bytes: float, ranks: int, gpus_per_node: int, nodes: int, cl: Cluster,
                       rings_per_node: int = 1) -> float:
    """Seconds of ZeRO++'s quantized gradient reduction of ``wire_bytes`` of gradients over ``ranks`` GPUs
    (``zero_quantized_gradients``; DeepSpeed's ``all_to_all_quant_reduce`` in runtime/comm/coalesced_collectives):
    the gradients, quantized to int4 (``QGZ_WIRE_FRACTION`` of the bytes), go through an all-to-all inside the
    node (costed as a one-pass ring over the node's GPUs, never the network), then each GPU sends the node's
    reduced share, (nodes-1)/nodes of its int4 bytes, across nodes, while ``rings_per_node`` such exchanges (one
    per tensor-parallel rank) share the node's network. The quantization kernels' own HBM traffic is
    ``ZEROPP_QGZ_BYTES_PER_PARAM``, charged separately."""
    int4 = wire_bytes * QGZ_WIRE_FRACTION
    t = ring_seconds(int4, 1, min(gpus_per_node, ranks), gpus_per_node, cl, intra_only=True)
    if ranks > gpus_per_node:
        t += int4 * (nodes - 1) / nodes * rings_per_node / (cl.inter_bytes_s * cl.efficiency.link)
    return t
