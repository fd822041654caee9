"""Solvers (largest micro batch, smallest GPU count, which options fit) and vectorised sweeps for charts."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from core.batch import batch_run
from core.effective import legacy_offload_keys
from core.memory.estimate import (
    GIB,
    Allowances,
    Hardware,
    ModelCounts,
    Shape,
    estimate,
    evaluate_arrays,
)
from core.memory.settings import TrainingSettings
from core.models.arch import ModelSpec
from core.schema.base import DEFAULT_VERSION

SWEEP_AXES = ("micro_batch", "seq_len", "total_gpus")
#: The largest micro batch ``max_micro_batch`` tries (a config's micro batch may be any integer; the search
#: evaluates every candidate at once, so its range is bounded). The app accepts HF micro batches up to this too.
MAX_MICRO_BATCH_SEARCH = 65_536
#: The largest micro batch the sweeps, ``core.fit`` and the app's charts size (2**53 - 1): DeepSpeed parses any
#: integer, and train_batch_size 10**400 derives a micro batch no float holds.
LARGEST_SIZED_MICRO_BATCH = 2**53 - 1


def _fits(res: dict[str, np.ndarray], hardware: Hardware) -> np.ndarray:
    ok = (res["gpu_bytes"] <= hardware.gpu_memory_bytes) & (
        res["cpu_bytes_per_node"] <= hardware.cpu_ram_per_node_bytes
    )
    if hardware.nvme_bytes_per_node is not None:
        ok &= res["nvme_bytes_per_node"] <= hardware.nvme_bytes_per_node
    return ok


def max_micro_batch(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware,
                    shape: Shape, *, limit: int = 4096, precision: str | None = None,
                    allowances: Allowances | None = None, version: str = DEFAULT_VERSION) -> int:
    """Largest micro batch per GPU (1..limit, searched up to ``MAX_MICRO_BATCH_SEARCH``) that fits GPU, CPU and
    NVMe, the config read as DeepSpeed ``version`` reads it; 0 if even 1 does not fit."""
    batches = np.arange(1, min(limit, MAX_MICRO_BATCH_SEARCH) + 1)
    res = evaluate_arrays(
        ds_config, model, hardware, shape, micro_batch=batches, precision=precision, allowances=allowances,
        settings=TrainingSettings.from_ds_config(ds_config, version),
    )
    ok = np.broadcast_to(_fits(res, hardware), batches.shape)
    return int(batches[ok].max()) if ok.any() else 0


def zero_options() -> Iterator[tuple[int, str, str]]:
    """Every (stage, offload_optimizer, offload_param) combination DeepSpeed supports."""
    yield 0, "none", "none"
    for stage in (1, 2):
        for opt in ("none", "cpu"):
            yield stage, opt, "none"
    for opt in ("none", "cpu", "nvme"):
        for param in ("none", "cpu", "nvme"):
            yield 3, opt, param


def with_zero_option(
    ds_config: Mapping[str, Any] | None, stage: int, offload_optimizer: str, offload_param: str
) -> dict[str, Any]:
    """A copy of the config with the ZeRO stage and offload devices replaced."""
    cfg = copy.deepcopy(dict(ds_config)) if isinstance(ds_config, Mapping) else {}
    zero = cfg.get("zero_optimization")
    zero = dict(zero) if isinstance(zero, Mapping) else {}
    zero["stage"] = stage
    for key, dev in (("offload_optimizer", offload_optimizer), ("offload_param", offload_param)):
        sec = zero.get(key)
        sec = dict(sec) if isinstance(sec, Mapping) else {}
        sec["device"] = dev
        zero[key] = sec
    for legacy in legacy_offload_keys():
        zero.pop(legacy, None)  # DeepSpeed refuses a deprecated offload key next to the section that replaces it
    cfg["zero_optimization"] = zero
    return cfg


def options_table(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
                  *, precision: str | None = None, allowances: Allowances | None = None,
                  batch_limit: int = 4096, version: str = DEFAULT_VERSION) -> pd.DataFrame:
    """One row per ZeRO stage / offload option: memory totals, whether it fits, and its largest micro batch, each
    option's config read as DeepSpeed ``version`` reads it."""
    rows = []
    for stage, opt, param in zero_options():
        cfg = with_zero_option(ds_config, stage, opt, param)
        est = estimate(cfg, model, hardware, shape, precision=precision, allowances=allowances, version=version)
        rows.append(
            {
                "stage": stage,
                "offload_optimizer": opt,
                "offload_param": param,
                "gpu_bytes": est.gpu_bytes,
                "cpu_bytes_per_node": est.cpu_bytes_per_node,
                "cpu_pinned_bytes_per_node": est.cpu_pinned_bytes_per_node,
                "nvme_bytes_per_node": est.nvme_bytes_per_node,
                "gpu_gib": est.gpu_bytes / GIB,
                "fits_gpu": est.fits_gpu,
                "fits_cpu": est.fits_cpu,
                "fits_nvme": est.fits_nvme,
                "fits": est.fits,
                "max_micro_batch": max_micro_batch(
                    cfg, model, hardware, shape, limit=batch_limit, precision=precision, allowances=allowances,
                    version=version,
                ),
            }
        )
    return pd.DataFrame(rows)


#: Layouts with part of each node's GPUs that ``min_gpus`` tries at most (8 GPUs a node: all 1,024 node counts).
PARTIAL_LAYOUTS = 1 << 16


def min_gpus(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
             *, max_nodes: int = 1024, precision: str | None = None,
             allowances: Allowances | None = None, gpus_multiple_of: int = 1,
             version: str = DEFAULT_VERSION,
             micro_batch_at: Callable[[int], int | None] | None = None) -> Hardware | None:
    """Smallest cluster of this hardware's nodes that fits: 1..gpus_per_node GPUs on one node, else the fewest
    nodes, with as many GPUs on each as fit (whole nodes when they fit; fewer per node when the node's CPU RAM
    or NVMe holds less than a whole node's ranks need).

    Only GPU counts that are multiples of ``gpus_multiple_of`` are tried (e.g. ``sequence_parallel_size``, whose
    groups must be whole). The config is read as DeepSpeed ``version`` reads it. ``micro_batch_at``: the micro
    batch each GPU count runs (e.g. train_batch_size alone divided over the ranks), None to leave a count out; else
    ``shape``'s at every count.
    Returns the fitting ``Hardware``
    (same GPU/CPU/NVMe sizes) or None if ``max_nodes`` nodes are not enough.
    """
    per_node = hardware.gpus_per_node
    # one node from 1 GPU up; then each node count from whole nodes down (the CPU RAM and NVMe of a node hold
    # its ranks' share: fewer ranks per node can fit where whole nodes do not), as far as PARTIAL_LAYOUTS allows
    # (a node of thousands of GPUs is no real machine, and its layouts would take gigabytes), whole nodes beyond
    partial_until = min(max_nodes, 1 + PARTIAL_LAYOUTS // per_node)
    gpn = np.concatenate([np.arange(1, per_node + 1), np.tile(np.arange(per_node, 0, -1), max(partial_until - 1, 0)),
                          np.full(max(max_nodes - partial_until, 0), per_node)])
    nodes = np.concatenate([np.ones(per_node), np.repeat(np.arange(2, partial_until + 1), per_node),
                            np.arange(partial_until + 1, max_nodes + 1)])
    if gpus_multiple_of > 1:
        keep = (gpn * nodes) % gpus_multiple_of == 0
        gpn, nodes = gpn[keep], nodes[keep]
        if not gpn.size:
            return None
    micro = None
    if micro_batch_at is not None:
        counts = (gpn * nodes).astype(np.int64)
        at = {int(count): micro_batch_at(int(count)) for count in np.unique(counts)}
        keep = np.array([at[int(count)] is not None for count in counts], dtype=bool)
        gpn, nodes, counts = gpn[keep], nodes[keep], counts[keep]
        if not gpn.size:
            return None
        micro = np.array([at[int(count)] for count in counts], dtype=np.float64)
    res = evaluate_arrays(
        ds_config, model, hardware, shape, micro_batch=micro, gpus_per_node=gpn, nodes=nodes, precision=precision,
        allowances=allowances,
        settings=TrainingSettings.from_ds_config(ds_config, version),
    )
    ok = np.broadcast_to(_fits(res, hardware), gpn.shape)
    if not ok.any():
        return None
    i = int(np.argmax(ok))
    return replace(hardware, gpus_per_node=int(gpn[i]), nodes=int(nodes[i]))


def _axis_kwargs(axis: str, values: np.ndarray, hardware: Hardware) -> dict[str, np.ndarray]:
    if axis == "micro_batch":
        return {"micro_batch": values}
    if axis == "seq_len":
        return {"seq_len": values}
    if axis == "total_gpus":
        # fill nodes first up to gpus_per_node, then whole nodes (values are rounded up to whole nodes)
        gpn = np.where(values <= hardware.gpus_per_node, values, hardware.gpus_per_node)
        nodes = np.where(values <= hardware.gpus_per_node, 1, np.ceil(values / hardware.gpus_per_node))
        return {"gpus_per_node": gpn, "nodes": nodes}
    raise ValueError(f"sweep axis must be one of {', '.join(SWEEP_AXES)}, got {axis!r}.")


def batch_per_count(ds_config: Mapping[str, Any] | None, hardware: Hardware, counts: Sequence[int] | np.ndarray,
                    version: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The micro batch DeepSpeed ``version`` runs at each GPU count (``core.batch.batch_run``: derived from the batch
    keys, e.g. train_batch_size ÷ GPUs, or elastic training's) and whether the batch resolves there at all (0 where
    not); None when the batch is held fixed: it does not resolve on ``hardware``'s own count either ("auto", which
    the HF Trainer fills with its per-device batch, or keys DeepSpeed refuses, which a rule reports)."""
    config = dict(ds_config) if isinstance(ds_config, Mapping) else {}
    if batch_run(config, hardware.total_gpus, version) is None:
        return None
    runs = [batch_run(config, int(count), version) for count in counts]
    resolves = np.array([run is not None for run in runs], dtype=bool)
    micro = np.array([min(run[1], LARGEST_SIZED_MICRO_BATCH) if run is not None else 0 for run in runs],
                     dtype=np.float64)
    return micro, resolves


def _evaluate_axis(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware,
                   shape: Shape, axis: str, values: Sequence[int] | np.ndarray, precision: str | None,
                   allowances: Allowances | None, version: str
                   ) -> tuple[np.ndarray, dict[str, np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
    """The axis values as evaluated (floats), ``evaluate_arrays`` over them and, along the GPU count,
    ``batch_per_count`` (None when the micro batch is held fixed), the config read as DeepSpeed ``version`` reads
    it: a GPU count beyond one node is rounded up to whole nodes, and the count returned is the one evaluated, so a
    row is never labelled with another count than the one it sizes. Each GPU count is sized with the micro batch
    DeepSpeed derives for it (a fixed train_batch_size gives each GPU less with more GPUs); a count where the batch
    does not resolve is sized at micro batch 1, for the callers to mark, not show."""
    vals = np.asarray(values, dtype=np.float64)
    kwargs = _axis_kwargs(axis, vals, hardware)
    batch = None
    if axis == "total_gpus":
        vals = kwargs["gpus_per_node"] * kwargs["nodes"]
        batch = batch_per_count(ds_config, hardware, vals, version)
        if batch is not None:
            kwargs["micro_batch"] = np.where(batch[1], batch[0], 1.0)
    return vals, evaluate_arrays(ds_config, model, hardware, shape, precision=precision, allowances=allowances,
                                 settings=TrainingSettings.from_ds_config(ds_config, version), **kwargs), batch


def sweep_totals(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
                 axis: str, values: Sequence[int] | np.ndarray, *, precision: str | None = None,
                 allowances: Allowances | None = None, version: str = DEFAULT_VERSION) -> pd.DataFrame:
    """Totals against one axis (vectorised), the config read as DeepSpeed ``version`` reads it: columns axis,
    gpu_bytes, cpu_bytes_per_node, nvme_bytes_per_node, gpu_gib, gpu_limit_gib, fits. Along ``total_gpus`` also
    micro_batch (the one each count is sized with), batch_resolves (False where DeepSpeed refuses the batch on that
    count: its bytes are NaN and fits None) and batch_derived (False when the micro batch is held at the shape's:
    the batch keys do not resolve on ``hardware``'s count either, or say "auto")."""
    vals, res, batch = _evaluate_axis(ds_config, model, hardware, shape, axis, values, precision, allowances, version)
    n = vals.shape
    frame = pd.DataFrame(
        {
            axis: vals.astype(np.int64),
            "gpu_bytes": np.broadcast_to(res["gpu_bytes"], n),
            "cpu_bytes_per_node": np.broadcast_to(res["cpu_bytes_per_node"], n),
            "nvme_bytes_per_node": np.broadcast_to(res["nvme_bytes_per_node"], n),
        }
    )
    frame["gpu_gib"] = frame["gpu_bytes"] / GIB
    frame["gpu_limit_gib"] = hardware.gpu_memory_bytes / GIB
    frame["fits"] = np.broadcast_to(_fits(res, hardware), n)
    if axis == "total_gpus":
        resolves = np.ones(n, dtype=bool) if batch is None else batch[1]
        frame["micro_batch"] = np.full(n, shape.micro_batch, dtype=np.int64) if batch is None \
            else batch[0].astype(np.int64)
        frame["batch_resolves"] = resolves
        frame["batch_derived"] = batch is not None
        refused = ~resolves
        if refused.any():
            frame[["gpu_bytes", "cpu_bytes_per_node", "nvme_bytes_per_node", "gpu_gib"]] = frame[
                ["gpu_bytes", "cpu_bytes_per_node", "nvme_bytes_per_node", "gpu_gib"]].astype(np.float64)
            frame.loc[refused, ["gpu_bytes", "cpu_bytes_per_node", "nvme_bytes_per_node", "gpu_gib"]] = np.nan
            frame["fits"] = frame["fits"].astype(object)
            frame.loc[refused, "fits"] = None
    return frame


def sweep(ds_config: Mapping[str, Any] | None, model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
          axis: str, values: Sequence[int] | np.ndarray, *, precision: str | None = None,
          allowances: Allowances | None = None, version: str = DEFAULT_VERSION) -> pd.DataFrame:
    """Per-GPU bytes by component against one axis, long format (axis, component, bytes, gib) for altair, the
    config read as DeepSpeed ``version`` reads it. Along ``total_gpus`` each count is sized with the micro batch
    DeepSpeed derives for it; counts where the batch does not resolve are left out."""
    vals, res, batch = _evaluate_axis(ds_config, model, hardware, shape, axis, values, precision, allowances, version)
    keep = np.ones(vals.shape, dtype=bool) if batch is None else batch[1]
    parts = []
    for key, arr in res.items():
        if key.startswith("gpu:"):
            parts.append(
                pd.DataFrame(
                    {axis: vals.astype(np.int64)[keep], "component": key[4:],
                     "bytes": np.broadcast_to(arr, vals.shape)[keep]}
                )
            )
    frame = pd.concat(parts, ignore_index=True)
    frame["gib"] = frame["bytes"] / GIB
    return frame
