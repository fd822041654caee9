"""What the Plan page draws from the planner, prepared once per distinct input and kept in-process.

``core.perf.recommend`` ranks ~500 candidates and ``gpu_sweep`` ranks them again per node count; the page then
shaped the result into a table and three charts' rows. As ``st.cache_data`` on the page, every rerun still paid
for hashing the arguments, unpickling the 500-row result and building the cached function itself again (the page
script runs anew each time): ~20 ms of a ~50 ms rerun, plus ~10 ms of pandas for the table and charts. Here each
result is a ``functools.lru_cache`` entry on the (hashable, frozen) model, cluster and settings, shared by the
process's sessions, which only read it; a change to any input is a different key, so nothing stale is shown.
The ranking itself is keyed on what it reads of the session's config (``Reading``), not on the whole config, so
an edit it does not read (a monitoring key, an unknown key) ranks nothing again: only the shown rows' configs are
built anew, in the edited config.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from core.memory.estimate import GIB
from core.memory.result import gib_used
from core.models.arch import ModelSpec
from core.perf import Cluster, gpu_sweep, recommend
from core.perf.advice import decimals_for
from core.perf.recommend import base_reading, ranked_configs
from core.perf.settings import PerfSettings
from core.schema.base import DEFAULT_VERSION
from ui import charts, memory, tables

#: Rows of the ranked table (and the choices of "Use this config").
SHOWN = 20
#: Candidates in the chart of where the time goes.
BROKEN_DOWN = 10
_FORMATS = {"GPU GiB": ".1f", "Tokens/s": ",.0f", "TFLOPs/GPU": ".1f", "MFU": ".0f", "Hours": ".1f",
            "Cost USD": ",.0f"}


@dataclass(frozen=True)
class Settings:
    """The page's inputs to the planner besides the model and the cluster."""

    seq_len: int
    global_batch: int
    tokens: float | None
    price_per_gpu_hour: float | None
    attention: str
    precision: str
    config: str | None = None
    """The session's config as JSON (hashable), which each row is loaded into and ranked as (``recommend``'s
    ``base``: its optimizer, precision sections and other ZeRO keys); None: the planner's own candidates."""
    target: str = "deepspeed"
    """The session's target: for "hf" an adopted optimizer's parameters are "auto"."""
    version: str = DEFAULT_VERSION
    """The session's DeepSpeed release, which every candidate is read as."""

    @property
    def base(self) -> dict[str, Any] | None:
        """``config`` as the config ``recommend`` takes."""
        return json.loads(self.config) if self.config is not None else None

    @property
    def planner_inputs(self) -> dict[str, Any]:
        """What ``recommend`` and ``gpu_sweep`` take from these settings, as keyword arguments."""
        return dict(seq_len=self.seq_len, global_batch=self.global_batch, tokens=self.tokens,
                    price_per_gpu_hour=self.price_per_gpu_hour, attention=self.attention, precision=self.precision,
                    base=self.base, target=self.target, version=self.version)

    @property
    def reading_inputs(self) -> dict[str, Any]:
        """What ``base_reading`` and ``ranked_configs`` take from these settings (the inputs a row's config
        rests on), as keyword arguments."""
        return dict(global_batch=self.global_batch, precision=self.precision, base=self.base, target=self.target,
                    version=self.version)


@dataclass(frozen=True)
class Reading:
    """What the planner reads of the session's config on each cluster size it ranks for
    (``core.perf.recommend.base_reading``): configs read alike rank alike, so a ranking or sweep is cached on this.
    ``config`` is not part of the key: it is the config (JSON) the reading was taken from, in which a ranking
    computed for it is computed."""

    settings: tuple[tuple[PerfSettings, ...], ...]
    config: str | None = field(default=None, compare=False)


def _reading(cluster: Cluster, settings: Settings, node_counts: Iterable[int]) -> Reading:
    """``settings.config`` as the planner reads it on ``cluster`` resized to each of ``node_counts`` that splits the
    global batch (``gpu_sweep`` skips the others)."""
    inputs = settings.reading_inputs  # the config parsed once
    sizes = (replace(cluster, nodes=n) for n in node_counts)
    return Reading(tuple(base_reading(sized, **inputs) for sized in sizes
                         if settings.global_batch % sized.total_gpus == 0), settings.config)


def _candidate(r: Any, rank: str = "") -> str:
    """A candidate's short name (a row of the ranking, from ``itertuples``)."""
    return (f"{rank}Z{r.stage}{'++' if r.zeropp else ''} {r.offload_optimizer}/{r.offload_param} "
            f"mb{r.micro_batch} {r.recompute}")


def step_decimals(seconds: Iterable[float]) -> int:
    """Decimals for step times: 3, or as many as show a tiny model's 0.00014 s with two significant digits."""
    return decimals_for(seconds, 3)


@dataclass(frozen=True)
class Ranking:
    """The ranking and what the page draws of it: ``shown`` (the first fitting rows, with their configs), its
    table and the rows of the breakdown chart (None when nothing fits), and the rows of the speed-memory chart."""

    candidates: int
    fitting: int
    gpu_memory_gib: float
    memory_headroom: float
    shown: pd.DataFrame
    table: tables.Table | None
    parts: bytes | None
    speed_memory: bytes
    notes: tuple[str, ...] = ()
    """What the best row's prediction assumed (``recommend``'s ``attrs["notes"]``)."""
    caveats: tuple[str, ...] = ()
    """Where measurements say the best row's figure is optimistic (``recommend``'s ``attrs["caveats"]``)."""

    @property
    def usable_gib(self) -> float:
        """The GPU memory a row may use: the GPU's, less the headroom the verdict keeps free."""
        return self.gpu_memory_gib * (1 - self.memory_headroom)

    @functools.cached_property
    def limit(self) -> bytes:
        """The speed-memory chart's ``limit`` rows: ``usable_gib``, built once per (cached) ranking."""
        return charts.arrow(pd.DataFrame({"gib": [self.usable_gib]}))


@functools.lru_cache(maxsize=64)
def ranking(model: ModelSpec, cluster: Cluster, settings: Settings) -> Ranking:
    """``core.perf.recommend`` of the page's inputs, and what the page draws of it: ranked once per distinct reading
    of the session's config (``_ranked``), the shown rows' configs built in this config."""
    ranked = _ranked(model, cluster, replace(settings, config=None), _reading(cluster, settings, [cluster.nodes]))
    # the cached ranking's rows are in the config it was first computed in: each row's config is this one's
    shown = ranked.shown.assign(config=ranked_configs(ranked.shown, cluster, **settings.reading_inputs))
    return replace(ranked, shown=shown)


@functools.lru_cache(maxsize=64)
def _ranked(model: ModelSpec, cluster: Cluster, inputs: Settings, reading: Reading) -> Ranking:
    """The ranking of ``inputs`` (their ``config`` None) for a config read as ``reading``, computed in
    ``reading.config``."""
    table = recommend(model, cluster, **replace(inputs, config=reading.config).planner_inputs)
    fitting = table[table["fits"]]
    shown = fitting.head(SHOWN).reset_index(drop=True)
    usable = table.attrs["usable_gpu_memory_gib"] * GIB
    view, parts = None, None
    if not shown.empty:
        frame = pd.DataFrame({
            "Rank": range(1, len(shown) + 1), "Stage": shown["stage"],
            "Offload optimizer": shown["offload_optimizer"], "Offload params": shown["offload_param"],
            "ZeRO++": shown["zeropp"], "Micro batch": shown["micro_batch"],
            "Accumulation": shown["gradient_accumulation_steps"], "Recompute": shown["recompute"],
            # each fitting peak shown at or below the limit the caption gives (75.19 is 75.1, not 75.2)
            "GPU GiB": [float(gib_used(peak * GIB, usable)) for peak in shown["gpu_peak_gib"]],
            "Step s": shown["step_seconds"].round(step_decimals(shown["step_seconds"])),
            "Tokens/s": shown["tokens_per_second"].round(0), "TFLOPs/GPU": shown["tflops_per_gpu"].round(1),
        })
        mfu_decimals = decimals_for(shown["mfu"] * 100, 0)  # a row at 0.1% must not read 0 (the CLI says 0.1%)
        frame["MFU"] = (shown["mfu"] * 100).round(mfu_decimals)
        formats = {**_FORMATS, "Step s": f".{step_decimals(shown['step_seconds'])}f", "MFU": f".{mfu_decimals}f"}
        for column, source, least in (("Hours", "hours", 1), ("Cost USD", "cost", 0)):
            if source in shown:  # a short run's 0.0003 hours must not read 0.0
                decimals = decimals_for(shown[source], least)
                frame[column] = shown[source].round(decimals)
                formats[column] = f",.{decimals}f"
        view = tables.prepare(frame, formats)
        parts = charts.arrow(pd.DataFrame([
            {"Candidate": _candidate(r, f"#{i + 1} "), "Part": name, "Seconds": sec}
            for i, r in enumerate(shown.head(BROKEN_DOWN).itertuples()) for name, sec in r.breakdown.items()
        ]))
    speed_memory = charts.arrow(pd.DataFrame({
        "Candidate": [_candidate(r) for r in table.itertuples()],
        "gpu_peak_gib": table["gpu_peak_gib"], "tokens_per_second": table["tokens_per_second"],
        "step_seconds": table["step_seconds"], "Fits": table["fits"].map(memory.fit_label),
    }))
    return Ranking(len(table), len(fitting), table.attrs["gpu_memory_gib"], table.attrs["memory_headroom"], shown,
                   view, parts, speed_memory, tuple(table.attrs["notes"]), tuple(table.attrs["caveats"]))


@dataclass(frozen=True)
class NodeSweep:
    """Time and cost against the node count: the chart's rows (None when nothing fits or no tokens are given),
    whether any size fits, and the smallest GPU count that does."""

    rows: bytes | None
    any_fits: bool
    min_gpus: int | None
    skipped: tuple[int, ...] = ()
    """GPU counts left out: they do not divide the global batch."""
    memory_min_gpus: int | None = None
    """The memory model's floor (``core.perf.gpu_sweep``'s ``memory_min_gpus``): fewest GPUs anything fits on."""


@functools.lru_cache(maxsize=64)
def node_sweep(model: ModelSpec, cluster: Cluster, settings: Settings, node_counts: tuple[int, ...]) -> NodeSweep:
    """``core.perf.gpu_sweep`` of the page's inputs at ``node_counts``, and the rows of its chart: swept once per
    distinct reading of the session's config at those sizes (``_swept``; nothing of it depends on the config
    otherwise: no configs, and the memory floor it does not show)."""
    return _swept(model, cluster, replace(settings, config=None), node_counts,
                  _reading(cluster, settings, node_counts))


@functools.lru_cache(maxsize=64)
def _swept(model: ModelSpec, cluster: Cluster, inputs: Settings, node_counts: tuple[int, ...],
           reading: Reading) -> NodeSweep:
    """The sweep of ``inputs`` (their ``config`` None) for a config read as ``reading``, swept in
    ``reading.config``."""
    sweep = gpu_sweep(model, cluster, node_counts=list(node_counts),
                      **replace(inputs, config=reading.config).planner_inputs)
    usable = sweep[sweep["fits"]] if not sweep.empty else sweep
    said = {"skipped": tuple(int(s["total_gpus"]) for s in sweep.attrs.get("skipped", ())),
            "memory_min_gpus": sweep.attrs.get("memory_min_gpus")}
    if usable.empty or "hours" not in usable:
        return NodeSweep(None, not usable.empty, sweep.attrs.get("min_gpus"), **said)
    long = pd.concat([
        usable.assign(Metric="training hours", Value=usable["hours"]),
        *([usable.assign(Metric="cost (USD)", Value=usable["cost"])] if "cost" in usable else []),
    ])
    return NodeSweep(charts.arrow(long[["total_gpus", "stage", "micro_batch", "Metric", "Value"]]), True,
                     sweep.attrs.get("min_gpus"), **said)
