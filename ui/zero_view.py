"""What the ZeRO page draws from the memory model, prepared once per distinct input and kept in-process.

A rerun of the ZeRO page used to rebuild the same pandas frames, HTML tables and Arrow rows from the same numbers
on every click (about a third of its server time, BENCHMARKS.md issue 15). Each function here is a pure result
of hashable keys (a digest of the config's JSON, the context entries the memory model reads, the training shape,
and what the page marks as current), cached with ``functools.lru_cache`` or ``ui.shared_cache.shared_cache`` and
shared by every session of the process; a change to any input is a different key, so nothing stale is shown. The
results are shared: callers only read them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import memory as core_memory
from core.batch import positive_whole, runs_elastic
from core.memory.result import GIB, gib_used
from ui import charts, memory, tables, zero_charts
from ui.shared_cache import shared_cache

SWEEP_COLUMNS = {"micro_batch": "Micro batch", "seq_len": "Sequence length (tokens)", "total_gpus": "GPUs"}
#: Columns of the chart of every option (drawn on demand).
OPTION_COLUMNS = ["option", "category", "gib", "cpu_gib", "total_gib", "verdict", "current"]


@functools.lru_cache(maxsize=64)
def capacity(gib: float) -> bytes:
    """The one-row ``capacity`` dataset of every chart (the red line at the GPU's memory)."""
    return charts.arrow(pd.DataFrame({"capacity": [gib]}))


@dataclass(frozen=True)
class StageView:
    """The paper's Figure 1 for this model and GPU count: the chart's rows and the table of stage totals."""

    figure: bytes
    totals: tables.Table


@functools.lru_cache(maxsize=256)
def stage_view(total_params: int, world: int, stage: int, verdicts: tuple[tuple[int, bool | None], ...]) -> StageView:
    """``verdicts``: (stage, fits without offload) from the full estimate of every option."""
    figure = memory.zero_figure(total_params, world)
    figure["current"] = figure["stage"] == stage
    totals = figure.groupby("stage", as_index=False)["gib_per_gpu"].sum()
    fits = dict(verdicts)
    return StageView(charts.arrow(figure), tables.prepare(pd.DataFrame({
        "ZeRO stage": totals["stage"],
        "Model states, GiB per GPU": totals["gib_per_gpu"],
        "Fits (full estimate, no offload)": [memory.fit_label(fits.get(int(s))) for s in totals["stage"]],
        "Current": ["◀ current" if s == stage else "" for s in totals["stage"]],
    }), {"Model states, GiB per GPU": ".1f"}))


@dataclass(frozen=True)
class OptionsView:
    """Every stage × offload option: the table, and each stage's verdict without offload."""

    table: tables.Table
    verdicts: tuple[tuple[int, bool | None], ...]
    options: pd.DataFrame
    """``memory.options_table`` (shared: read only); kept rather than its keys, which carry the config's text."""
    current_label: str

    def chart_rows(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The rows of the chart of every option, by category and per option (drawn on demand only)."""
        options = self.options.copy()
        options["current"] = options["option"] == self.current_label
        options["verdict"] = options["fits"].map(memory.fit_label)
        options["category"] = options["category"].map(zero_charts.category_label)
        return options[OPTION_COLUMNS], options.drop_duplicates("option")[OPTION_COLUMNS]


def _gib_texts(gibs: pd.Series, capacity: int | None) -> list[str]:
    """GiB figures as the headline writes them (``gib_used``: rounded toward the verdict against ``capacity``),
    so a table row never reads 79.1 of 79.15 GiB "does not fit" beside a headline's 79.2."""
    return ["—" if pd.isna(gib) else gib_used(gib * GIB, capacity) for gib in gibs]


@shared_cache(maxsize=256)
def options_view(keys: memory.Keys, current_label: str) -> OptionsView | None:
    """``keys``: ``memory.options_keys`` of the config; ``current_label``: ``memory.current_option`` of it."""
    found = memory.options_table(*keys)
    if found is None:
        return None
    totals = found.drop_duplicates("option")
    verdicts = tuple((int(r.stage), r.fits) for r in totals.itertuples()
                     if r.option == memory.option_label(int(r.stage), "none", "none"))
    hardware = memory.inputs(keys).hardware
    table = tables.prepare(pd.DataFrame({
        "Option": totals["option"], "GPU, GiB per GPU": _gib_texts(totals["total_gib"], hardware.gpu_memory_bytes),
        "CPU RAM, GiB per node": _gib_texts(totals["cpu_gib"], hardware.cpu_ram_per_node_bytes),
        "NVMe, GiB per node": _gib_texts(totals["nvme_gib"], hardware.nvme_bytes_per_node),
        "Fits": [memory.fit_label(f) for f in totals["fits"]],
        "Current": ["◀ current" if o == current_label else "" for o in totals["option"]],
    }))
    return OptionsView(table, verdicts, found, current_label)


@dataclass(frozen=True)
class EstimateView:
    """The full estimate of the config, the rows of its chart of GPU components at the peak, and the table of
    every component with its formula."""

    estimate: core_memory.MemoryEstimate
    peak: bytes
    components: tables.Table


@shared_cache(maxsize=256)
def estimate_view(keys: memory.Keys) -> EstimateView | None:
    """``keys``: ``memory.cache_keys`` of the config, context and shape; None without a model."""
    found = memory.inputs(keys)
    if found is None:
        return None
    estimate = core_memory.estimate(found.config, found.model, found.hardware, found.shape,
                                    version=memory.version_of(found.context))
    # the columns of ``MemoryEstimate.components_frame`` read from the components directly (it converts each
    # component with ``dataclasses.asdict``, a tenth of this function)
    parts = pd.DataFrame({
        "name": [c.name for c in estimate.components], "device": [c.device for c in estimate.components],
        "formula": [c.formula for c in estimate.components],
        "category": [zero_charts.category_label(c.category) for c in estimate.components],
        "phase": [c.phase for c in estimate.components],
        "gib": [c.bytes / core_memory.GIB for c in estimate.components]})
    transient = "step" if estimate.gpu_peak_phase == "optimizer step" else "forward_backward"
    peak = parts[(parts["device"] == "gpu") & parts["phase"].isin(["persistent", transient])]
    components = tables.prepare(parts[["name", "device", "phase", "gib", "formula"]].rename(columns={
        "name": "Component", "device": "Where", "phase": "When", "gib": "GiB", "formula": "Formula"}), {"GiB": ".1f"})
    return EstimateView(estimate, charts.arrow(peak[["name", "gib", "category", "phase", "formula"]]), components)


@dataclass(frozen=True)
class SweepView:
    """Memory against one axis: the chart's rows, the table, and what the sweep holds fixed, in words."""

    rows: bytes
    table: tables.Table
    held: str = ""


#: The verdict of a GPU count where DeepSpeed refuses the batch (no memory is drawn for it).
NO_BATCH = "batch does not resolve"


def batch_source(config: Mapping[str, Any], version: str) -> str:
    """Where the GPU-count sweep's micro batch comes from, in words: elastic training's pick, the written
    ``train_micro_batch_size_per_gpu`` (DeepSpeed uses it on every count), or DeepSpeed's division of
    train_batch_size (by the accumulation, when written) over the data-parallel ranks."""
    if runs_elastic(config, version):
        return "the micro batch elastic training picks there"
    micro = positive_whole(config.get("train_micro_batch_size_per_gpu"))
    if micro is not None:
        return f"the micro batch the config writes (train_micro_batch_size_per_gpu {micro}) on every count"
    accum = " and gradient_accumulation_steps" if "gradient_accumulation_steps" in config else ""
    return f"the micro batch DeepSpeed derives there from train_batch_size{accum} (÷ the data-parallel ranks)"


def _held(axis: str, shape: tuple, derived: bool, refused: list[int], elastic: bool = False, source: str = "") -> str:
    """What a sweep along ``axis`` keeps as it is (``shape``: the key's shape tuple), in words; ``elastic``: elastic
    training sets the batch (and refuses the GPU counts it cannot use), not the batch keys; ``source``:
    ``batch_source`` of the config, said when the batch keys resolve (``derived``)."""
    micro, seq_len = shape[0], shape[1]
    if axis == "micro_batch":
        return f"Held fixed: sequence length {seq_len}, the GPU count and the rest of the config."
    if axis == "seq_len":
        return f"Held fixed: micro batch {micro}, the GPU count and the rest of the config."
    said = (f"Held fixed: sequence length {seq_len} and the config. Each GPU count is sized with {source}, as the "
            "Micro batch column shows."
            if derived else f"Held fixed: micro batch {micro}, sequence length {seq_len} and the rest of the config "
            + ("(elastic training refuses this cluster's GPU count)." if elastic else
               "(the batch keys do not resolve on this cluster, or say \"auto\")."))
    if refused:
        counts = ", ".join(str(c) for c in refused)
        whose = "Elastic training refuses" if elastic else "DeepSpeed refuses the batch keys on"
        said += f" {whose} {counts} GPUs ({NO_BATCH}): no memory is shown there."
    return said


@shared_cache(maxsize=256)
def sweep_view(keys: memory.Keys, axis: str, now: int) -> SweepView:
    """``keys``: ``memory.cache_keys`` of the config (a model chosen); ``now``: the current value on ``axis``."""
    values = tuple(memory.sweep_values(axis, json.loads(keys[1]), now))
    sweep = memory.sweep_table(*keys, axis, values).copy()
    sweep["current"] = sweep[axis] == now
    sweep["verdict"] = sweep["fits"].map(memory.fit_label)
    columns = {SWEEP_COLUMNS[axis]: sweep[axis]}
    refused: list[int] = []
    derived = elastic = False
    source = ""
    if axis == "total_gpus":
        config, version = memory.parsed(keys[0]), memory.version_of(json.loads(keys[1]))
        elastic, source = runs_elastic(config, version), batch_source(config, version)
        resolves = sweep["batch_resolves"].astype(bool)
        sweep.loc[~resolves, "verdict"] = NO_BATCH
        refused = [int(c) for c in sweep.loc[~resolves, axis]]
        derived = bool(sweep["batch_derived"].all())
        columns["Micro batch"] = [str(m) if ok else "—" for m, ok in zip(sweep["micro_batch"], resolves, strict=True)]
        drawn = sweep[resolves]
    else:
        drawn = sweep
    return SweepView(charts.arrow(drawn[[axis, "gpu_gib", "verdict"]]), tables.prepare(pd.DataFrame({
        **columns, "GPU, GiB per GPU": _gib_texts(sweep["gpu_gib"], memory.inputs(keys).hardware.gpu_memory_bytes),
        "Fits": sweep["verdict"], "Current": ["◀ current" if c else "" for c in sweep["current"]],
    })), _held(axis, keys[2], derived, refused, elastic, source))
