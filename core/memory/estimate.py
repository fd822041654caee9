"""Full memory estimate: per-GPU bytes by component, CPU RAM per node (pinned included) and NVMe bytes.

Inputs are a plain DeepSpeed config dict (read leniently: "auto", missing keys and wrong types fall back to
DeepSpeed's defaults and never raise), a model (``ModelSpec`` or bare parameter counts), the hardware and the
training shape. Each component carries the formula that produced it.

The rooms: ``settings`` reads the config, ``result`` holds the inputs and the answer, and one module per
component group adds its parts: ``states`` (parameters, gradients, master weights, optimizer states),
``activations``, ``buffers`` (step transients, communication buckets, host overheads, GPU allowances).
Data parallelism only: N = gpus_per_node * nodes ranks, no tensor or pipeline parallelism.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from core.batch import parallelism_left_out
from core.memory import buffers, states
from core.memory.activations import ATTENTION_IMPLS, RECOMPUTE_MODES, activation_parts
from core.memory.parts import Inputs, Part
from core.memory.result import GIB, Allowances, Component, Hardware, MemoryEstimate, ModelCounts, Shape
from core.memory.settings import PRECISIONS, TrainingSettings
from core.models.arch import ModelSpec
from core.schema.base import DEFAULT_VERSION

__all__ = ["GIB", "PRECISIONS", "Allowances", "Component", "Hardware", "MemoryEstimate", "ModelCounts", "Shape",
           "TrainingSettings", "estimate", "evaluate_arrays"]

#: The component groups, in the order their parts are listed.
GROUPS = (states.parameters, states.gradients, states.optimizer_states, buffers.step_buffers, buffers.comm_buckets,
          activation_parts, buffers.host_overheads)


#: What a memory estimate of a model given by parameter counts leaves out (its shape is unknown).
COUNTS_ONLY_NOTE = ("Model given by counts only: activations, logits and persistent small parameters are not "
                    "estimated.")


def _parts(model: ModelSpec | ModelCounts, st: TrainingSettings, gpus_per_node, nodes, b, s, shape: Shape,
           allow: Allowances) -> list[Part]:
    """Every part of every group, then the GPU allowances that depend on them."""
    x = Inputs(model, st, shape, allow, gpus_per_node, nodes, b, s)
    parts = [part for group in GROUPS for part in group(x)]
    return parts + buffers.gpu_allowances(parts, allow)


def _check_shape(shape: Shape) -> None:
    if shape.attention not in ATTENTION_IMPLS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION_IMPLS)}, got {shape.attention!r}.")
    if shape.recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {shape.recompute!r}.")
    for name in ("micro_batch", "seq_len"):
        value = getattr(shape, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be a whole number (sequences per GPU, tokens per sequence), got {value!r}.")
    if shape.micro_batch < 1 or shape.seq_len < 1:
        raise ValueError("micro_batch and seq_len must be >= 1.")


def _components(model: ModelSpec | ModelCounts, st: TrainingSettings, hardware: Hardware, shape: Shape,
                allow: Allowances) -> tuple[Component, ...]:
    """The parts as rounded ``Component`` rows, counted exactly in integers; past 2**63 bytes (an absurd micro
    batch or model size) in floats, so the answer is an honest "does not fit"; past float range, a ValueError."""
    try:
        raws = _parts(model, st, hardware.gpus_per_node, hardware.nodes, shape.micro_batch, shape.seq_len, shape,
                      allow)
    except OverflowError:
        raws = None
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            if raws is None:
                raws = _parts(model, st, *(np.asarray(v, dtype=np.float64) for v in (
                    hardware.gpus_per_node, hardware.nodes, shape.micro_batch, shape.seq_len)), shape, allow)
            return tuple(Component(r.name, r.device, round(float(r.value)), r.formula, r.category, r.phase,
                                   r.pinned) for r in raws)
    except OverflowError:
        size = " x ".join(f"{n:.3g}" if n < 1e300 else f"a {len(str(n))}-digit number"
                          for n in (shape.micro_batch, shape.seq_len, model.total_params))
        raise ValueError(
            f"micro batch x sequence length x parameters = {size}: more bytes than can be counted, too large to "
            "estimate; check train_micro_batch_size_per_gpu, the sequence length and the model's sizes"
        ) from None


def estimate(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    hardware: Hardware | None = None,
    shape: Shape | None = None,
    *,
    precision: str | None = None,
    allowances: Allowances | None = None,
    version: str = DEFAULT_VERSION,
) -> MemoryEstimate:
    """Estimate per-GPU, per-node CPU and NVMe memory for training ``model`` with ``ds_config``, read as DeepSpeed
    ``version`` reads it.

    ``precision`` ("fp32" | "fp16" | "bf16") overrides what the config says (e.g. for "auto").
    """
    hardware = hardware or Hardware()
    shape = shape or Shape()
    allow = allowances or Allowances()
    _check_shape(shape)
    if hardware.gpus_per_node < 1 or hardware.nodes < 1:
        raise ValueError("gpus_per_node and nodes must be >= 1.")
    st = TrainingSettings.from_ds_config(ds_config, version)
    if precision is not None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.")
        st = replace(st, precision=precision)
    gpus = hardware.gpus_per_node * hardware.nodes
    degrees = {"sequence_parallel_size": st.sequence_parallel}
    if st.tensor_parallel > 1:
        degrees = {"autotp_size": st.tensor_parallel, **degrees}
    left_out = isinstance(gpus, int) and st.sequence_parallel > 1 and parallelism_left_out(
        gpus, degrees, "sequence parallelism")
    if left_out:
        st = replace(st, sequence_parallel=1, notes=(
            *(n for n in st.notes if not n.startswith("sequence_parallel_size")),
            f"{left_out} (activations sized for whole sequences)."))
    components = _components(model, st, hardware, shape, allow)
    notes = list(st.notes)
    if not isinstance(model, ModelSpec):
        notes.append(COUNTS_ONLY_NOTE)
    if isinstance(model, ModelSpec) and model.defaulted_note:
        notes.append(model.defaulted_note)
    if shape.recompute == "selective" and shape.attention != "eager":
        notes.append("Selective recompute only drops the attention scores, which SDPA/flash never store.")
    if isinstance(model, ModelSpec) and model.position == "relative" and shape.attention != "eager":
        notes.append("T5-style relative position bias needs eager attention: activations estimated for eager.")
    if st.partition_activations:
        notes.append(
            "partition_activations splits checkpoints across tensor-parallel ranks: no effect here "
            "(data parallelism only)."
        )
    name = model.name
    symbols: dict[str, float] = {
        "P": model.total_params,
        "largest_layer": model.largest_layer_params,
        "N": hardware.total_gpus,
        "gpus_per_node": hardware.gpus_per_node,
        "nodes": hardware.nodes,
        "e": st.bytes_per_param,
        "k": st.optimizer_states,
        "b": shape.micro_batch,
        "s": shape.seq_len,
    }
    if st.stage == 3 and st.hpz_partition_size > 1:
        symbols["hpz"] = st.hpz_partition_size
    if isinstance(model, ModelSpec):
        symbols.update(
            h=model.hidden_size,
            L=model.num_layers + model.num_decoder_layers,
            a=model.num_heads,
            kv=model.num_kv_heads,
            d=model.head_dim,
            I=model.intermediate_size,
            V=model.vocab_size,
        )
    est = MemoryEstimate(
        name,
        model.total_params,
        model.largest_layer_params,
        st,
        hardware,
        shape,
        components,
        tuple(notes),
        tuple(symbols.items()),
        states_only=not isinstance(model, ModelSpec),
    )
    if est.cpu_peak_is_model_load:
        est = replace(est, notes=(*est.notes, _model_load_note(est)))
    return est


def _model_load_note(est: MemoryEstimate) -> str:
    """What the CPU RAM peak assumes when model construction sets it (``buffers.host_overheads``)."""
    load, gpn = est.cpu_load_bytes_per_node, est.hardware.gpus_per_node
    note = (f"CPU RAM peaks while the model is built, before deepspeed.initialize: {load / 2**30:.1f} GiB per node, "
            f"every rank holding the whole model in fp32 (4 bytes per parameter x {gpn} ranks per node, as DeepSpeed's "
            "own ZeRO-2 estimator counts it).")
    if est.settings.bytes_per_param < 4:
        note += (f" Loaded in its 16-bit dtype (transformers 5's from_pretrained of a bf16 checkpoint) it needs "
                 f"{load / 2 / 2**30:.1f} GiB; ZeRO-3's zero.Init builds only each rank's partition.")
    return note


def evaluate_arrays(
    ds_config: Mapping[str, Any] | None,
    model: ModelSpec | ModelCounts,
    hardware: Hardware,
    shape: Shape,
    *,
    micro_batch=None,
    seq_len=None,
    gpus_per_node=None,
    nodes=None,
    precision: str | None = None,
    allowances: Allowances | None = None,
    settings: TrainingSettings | None = None,
    components: bool = True,
) -> dict[str, np.ndarray]:
    """Vectorised totals: any of micro_batch / seq_len / gpus_per_node / nodes may be numpy arrays.

    Returns arrays ``gpu_bytes``, ``cpu_bytes_per_node``, ``nvme_bytes_per_node`` and, unless ``components`` is
    False, one ``gpu:<component>`` array per GPU component. ``settings``: ``ds_config`` already read by
    ``TrainingSettings.from_ds_config`` (a caller evaluating one config for several shapes reads it once).
    """
    allow = allowances or Allowances()
    _check_shape(shape)
    st = settings if settings is not None else TrainingSettings.from_ds_config(ds_config)
    if precision is not None:
        st = replace(st, precision=precision)
    b = np.asarray(shape.micro_batch if micro_batch is None else micro_batch, dtype=np.float64)
    s = np.asarray(shape.seq_len if seq_len is None else seq_len, dtype=np.float64)
    gpn = np.asarray(hardware.gpus_per_node if gpus_per_node is None else gpus_per_node, dtype=np.float64)
    nn = np.asarray(hardware.nodes if nodes is None else nodes, dtype=np.float64)
    raws = _parts(model, st, gpn, nn, b, s, shape, allow)
    shape_all = np.broadcast_shapes(b.shape, s.shape, gpn.shape, nn.shape)

    def total(device: str, phase: str, category: str | None = None) -> np.ndarray:
        acc = np.zeros(shape_all)
        for r in raws:
            if r.device == device and r.phase == phase and category in (None, r.category):
                acc = acc + r.value
        return acc

    result = {
        "gpu_bytes": total("gpu", "persistent") + np.maximum(total("gpu", "forward_backward"), total("gpu", "step")),
        # the model built before deepspeed.initialize is moved to the GPUs (or partitioned) before the optimizer
        # creates its offloaded states: the load copy and the states do not coexist, the process overhead does
        "cpu_bytes_per_node": total("cpu", "persistent", "overhead") + np.maximum(
            total("cpu", "load"), total("cpu", "persistent") - total("cpu", "persistent", "overhead")
            + total("cpu", "forward_backward")),
        "nvme_bytes_per_node": total("nvme", "persistent"),
    }
    for r in raws if components else ():
        if r.device == "gpu":
            result[f"gpu:{r.name}"] = np.broadcast_to(np.asarray(r.value, dtype=np.float64), shape_all)
    return result
