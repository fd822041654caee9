"""The planner's prediction for the session's config (``core.perf.predict``), drawn beside the memory numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from core import autofill, perf
from core.perf import advice
from ui import memory, tables
from ui.shared_cache import shared_cache


def network_for(context: Mapping[str, Any]) -> float | None:
    """The network per node a Plan row was used with (``network_gbit_s``) while the session's GPU is still the
    one it was ranked for (``network_gpu``); None: the GPU's catalog network."""
    network = context.get("network_gbit_s")
    return float(network) if network and context.get("network_gpu") == context.get("gpu") else None


def cluster_for(context: Mapping[str, Any], network: float | None = None) -> perf.Cluster | None:
    """The cluster of the session's GPU, node count and GPUs per node (``network`` Gbit/s per node, None: the
    catalog's; catalog links), or None for a GPU the planner has no datasheet for (a custom GPU)."""
    try:
        return perf.Cluster(str(context.get("gpu")), int(context["gpus_per_node"]), int(context["nodes"]),
                            inter_node_gbit_s=network, **memory.node_storage(context))
    except (ValueError, KeyError, TypeError):
        return None


@shared_cache(maxsize=256)
def _step_view(keys: memory.Keys, gpu: str, network: float | None, trainer_accum: int | None = None
               ) -> tuple[perf.Cluster, perf.StepEstimate, tables.Table] | None:
    """The prediction and its breakdown table for ``memory.cache_keys`` of the session, its GPU and network,
    computed once per distinct input and shared by the process's sessions (they only read it).
    ``trainer_accum``: for the HF target, the Trainer's gradient_accumulation_steps an "auto" one is filled with
    (its micro batch is the shape's), as the memory figures and ``dsconfig predict`` read them."""
    found = memory.inputs(keys)
    cluster = None if found is None else cluster_for({**found.context, "gpu": gpu}, network)
    if found is None or cluster is None:
        return None
    config = found.config if trainer_accum is None else autofill.fill_batch_autos(
        found.config, found.shape.micro_batch, trainer_accum)
    estimate = perf.predict(config, found.model, cluster, found.shape, version=memory.version_of(found.context))
    breakdown = tables.prepare(pd.DataFrame({
        "Part": list(estimate.breakdown), "Seconds": list(estimate.breakdown.values()),
        "Share": [s / estimate.step_seconds for s in estimate.breakdown.values()],
    }), {"Seconds": ".4f", "Share": ".0%"})
    return cluster, estimate, breakdown


def step_panel(keys: memory.Keys, context: Mapping[str, Any], short_of: tuple[str, ...] = (),
               tight: str | None = None) -> None:
    """Predicted step time, throughput and bottleneck of the current config, with its breakdown on demand;
    ``keys`` are ``memory.cache_keys`` of the session's config, context and shape; ``short_of`` what the memory
    estimate beside it says does not fit ("GPU", "CPU RAM", "NVMe"), which qualifies the prediction; ``tight``
    the sentence saying it fits the GPU but not the Plan page's margin (``core.perf.recommend.margin_caveat``)."""
    if cluster_for(context) is None:
        st.caption("ℹ️ No step-time prediction: the planner has no datasheet for a custom GPU (pick a catalog GPU "
                   "on the Start page).")
        return
    try:
        trainer_accum = int(context.get("hf_grad_accum") or 1) if context.get("target") == "hf" else None
        view = _step_view(keys, str(context.get("gpu")), network_for(context), trainer_accum)
    except ValueError as exc:  # e.g. a train_batch_size beyond float range: no step to predict
        st.caption(f"ℹ️ No step-time prediction: {exc}")
        return
    if view is None:
        return
    cluster, estimate, breakdown = view
    st.metric("Predicted step time", advice.seconds_text(estimate.step_seconds),
              help=f"One optimizer step ({estimate.gradient_accumulation_steps} micro-step(s) of "
                   f"{estimate.micro_batch} sequences per GPU), the planner's estimate. "
                   + advice.assumptions_text(cluster))
    if short_of:
        st.warning(f"The config does not fit ({', '.join(short_of)} memory, beside): this is the speed it would "
                   "run at if it did, and the advice below holds only for a change that fits.",
                   icon=":material/memory:")
    st.caption(f"{estimate.tokens_per_second:,.0f} tokens/s on the cluster, {estimate.tflops_per_gpu:.0f} "
               f"TFLOPs per GPU (MFU {advice.percent_text(estimate.mfu)}). **Bottleneck:** {estimate.bottleneck}")
    # beside the figure it qualifies, not in the popover; ``tight``: it fits, but not with the Plan page's margin
    for caveat in ([tight[0].upper() + tight[1:] + "."] if tight else []) + list(estimate.caveats):
        st.warning(caveat, icon=":material/warning:")
    with st.popover("Where the step time goes", icon=":material/speed:"):
        tables.draw(breakdown)
        if estimate.hidden:
            st.caption("Hidden behind compute: " + ", ".join(f"{k} {advice.seconds_text(v)}"
                                                             for k, v in estimate.hidden.items()))
        st.caption("Assumed: " + advice.assumptions_text(cluster) + " The Plan page ranks every stage and offload "
                   "option by this model.")
        for note in estimate.notes:
            st.caption(f"ℹ️ {note}")
