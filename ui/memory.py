"""Memory numbers for the app: thin adapters from the session's context to ``core.memory``.

``core.memory.estimate`` does the work (per-GPU components, CPU RAM per node, NVMe); this module only
builds its inputs (model, hardware, training shape) from the context, and shapes the results into the
tables the charts draw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import altair as alt
import pandas as pd

from core import hardware, memory
from core.autofill import fill_batch_autos, trainer_batch_arguments
from core.batch import (
    BATCH_KEYS,
    MB,
    effective_world_size,
    micro_batch_one,
    positive_whole,
    resolve_batch,
    run_or_written,
)
from core.findings import BatchValues, Report
from core.launchers import job_world_size
from core.models import ModelConfigError, describe
from core.models.arch import ModelSpec
from core.precision import compute_precision
from core.schema.base import DEFAULT_VERSION
from ui import fields
from ui.shared_cache import ConfigKey, config_key, shared_cache

GIB = memory.GIB
#: The one colour scale of "fits" / "does not fit" in every chart.
FIT_LABELS = ("fits", "does not fit")
FIT_COLORS = alt.Scale(domain=list(FIT_LABELS), range=["#2e7d32", "#c62828"])
#: The largest micro batch the memory charts estimate (already exabytes, so "does not fit" stays true): core's.
MAX_MICRO_BATCH = memory.solve.LARGEST_SIZED_MICRO_BATCH


def fit_label(fits: object) -> str:
    """The words for a fit verdict ("—" when unknown)."""
    return "—" if fits is None else FIT_LABELS[0] if bool(fits) else FIT_LABELS[1]


def model_params(context: Mapping[str, Any]) -> tuple[int, int] | None:
    """(total, largest layer) parameter counts from the context, or None when no model is chosen."""
    total, largest = context.get("total_params"), context.get("largest_layer_params")
    if not total or not largest or memory.counts_problem(total, largest):
        return None  # no model (the Start page says why when the counts contradict each other)
    return int(total), int(largest)


def model_for(context: Mapping[str, Any]) -> ModelSpec | memory.ModelCounts | None:
    """The architecture (catalog or uploaded config.json) or, failing that, the bare parameter counts."""
    hf_config = context.get("model_config")
    if isinstance(hf_config, Mapping):
        try:
            return describe(hf_config, name=context.get("model") or None)
        except ModelConfigError:
            pass
    params = model_params(context)
    if params is None:
        return None
    return memory.ModelCounts(params[0], params[1], name=str(context.get("model") or "manual counts"))


def node_storage(context: Mapping[str, Any]) -> dict[str, float]:
    """CPU RAM and NVMe per node in GiB from the Start page (NVMe 0: none, not unlimited), as ``perf.Cluster``
    takes them: the memory figures, the Plan page and the ZeRO page's prediction all judge fitting with these."""
    return {"cpu_ram_gib": float(context.get("cpu_ram_gib") or hardware.DEFAULT_CPU_RAM_GIB),
            "nvme_gib": float(context.get("nvme_gib") or 0)}


def hardware_for(context: Mapping[str, Any]) -> memory.Hardware:
    storage = node_storage(context)
    return memory.Hardware(
        gpus_per_node=int(context["gpus_per_node"]), nodes=int(context["nodes"]),
        gpu_memory_bytes=int(float(context["gpu_memory_gib"]) * GIB),
        cpu_ram_per_node_bytes=int(storage["cpu_ram_gib"] * GIB),
        nvme_bytes_per_node=int(storage["nvme_gib"] * GIB),
    )


def micro_batch_and_assumption(config: Mapping[str, Any], report: Report | None,
                               context: Mapping[str, Any] | None = None) -> tuple[int, str | None]:
    """The micro batch the memory model uses, and what was assumed to get it (None when the config says it).

    The report's, else what the context's release runs (``core.batch.run_or_written``, as the CLI sizes it; one GPU
    and the default release without a context): derived by DeepSpeed when not written; a positive whole number
    (a fraction is not one a data loader takes); for "auto" the HF Trainer's per_device_train_batch_size from the
    context (asked on the Batch page); 1 when nothing says it."""
    if report is not None and report.batch is not None:
        said = report.batch.train_micro_batch_size_per_gpu
        value = positive_whole(said)
    else:
        said = config.get(MB)
        value = run_or_written(dict(config), job_world_size(context or {}), version_of(context or {}), MB)
    if value is not None:
        if value > MAX_MICRO_BATCH:  # DeepSpeed parses any int; the memory model cannot count past float range
            return MAX_MICRO_BATCH, (f"micro batch {MAX_MICRO_BATCH:,} assumed: the config's "
                                     f"({len(str(value))} digits) is too large to estimate")
        return value, None
    hf_value = (context or {}).get("hf_micro_batch")
    # an "auto" micro batch, or a missing one beside an "auto" train_batch_size: the Trainer's per-device batch
    if "per_device_train_batch_size" in trainer_batch_arguments(config) and isinstance(hf_value, int) \
            and hf_value >= 1:
        filled = '"auto" is filled' if said == "auto" else "it is given"
        return hf_value, (f"micro batch {hf_value} assumed: {filled} by the HF Trainer from "
                          "per_device_train_batch_size (set it on the Batch size page)")
    return micro_batch_one(said)


def micro_batch(config: Mapping[str, Any], report: Report | None, context: Mapping[str, Any] | None = None) -> int:
    """The micro batch the memory model uses (see ``micro_batch_and_assumption``)."""
    return micro_batch_and_assumption(config, report, context)[0]


def shape_for(context: Mapping[str, Any], config: Mapping[str, Any], report: Report | None) -> memory.Shape:
    return memory.Shape(
        micro_batch=micro_batch(config, report, context), seq_len=int(context.get("seq_len") or 2048),
        attention=str(context.get("attention") or "sdpa"), recompute=str(context.get("recompute") or "none"),
    )


#: The context entries the memory model reads (model, cluster); the cache keys below are built from these only.
_MODEL_AND_HARDWARE = ("model", "model_config", "total_params", "largest_layer_params", "gpus_per_node", "nodes",
                       "gpu_memory_gib", "cpu_ram_gib", "nvme_gib", "version")


#: (the config's ``ConfigKey``, JSON of the context entries above, shape tuple): what the in-process caches are
#: keyed on (``shared_cache`` keeps the config's digest only).
Keys = tuple[ConfigKey, str, tuple]


def cache_keys(config: Mapping[str, Any], context: Mapping[str, Any], shape: memory.Shape) -> Keys:
    """Hashable stand-ins of (config, context, shape) for the caches: a ``ConfigKey``, JSON text and a tuple."""
    used = {k: context.get(k) for k in _MODEL_AND_HARDWARE}
    return (config_key(config), json.dumps(used, sort_keys=True, default=str),
            (shape.micro_batch, shape.seq_len, shape.attention, shape.recompute))


@shared_cache(maxsize=4)
def parsed(key: ConfigKey) -> dict[str, Any]:
    """The config a cache key stands for, parsed once for all the caches that miss on it (a 1 MB config takes
    tens of milliseconds to parse); shared, so read only."""
    return json.loads(key.text)


def shape_of(key: tuple) -> memory.Shape:
    """The ``memory.Shape`` a key's shape tuple stands for."""
    return memory.Shape(micro_batch=key[0], seq_len=key[1], attention=key[2], recompute=key[3])


class Inputs(NamedTuple):
    """What ``cache_keys`` stand for, rebuilt by a cached function that missed (the config is shared: read only)."""

    config: dict[str, Any]
    context: dict[str, Any]
    model: ModelSpec | memory.ModelCounts
    hardware: memory.Hardware
    shape: memory.Shape


def inputs(keys: Keys) -> Inputs | None:
    """The config, context, model, hardware and shape ``keys`` stand for; None when no model is chosen."""
    config, context_json, shape_key = keys
    context = json.loads(context_json)
    model = model_for(context)
    if model is None:
        return None
    return Inputs(parsed(config), context, model, hardware_for(context), shape_of(shape_key))


def version_of(context: Mapping[str, Any]) -> str:
    """The DeepSpeed release the session validates for, which the memory model reads the config as."""
    return str(context.get("version") or DEFAULT_VERSION)


#: What changes each kind of setup problem: (the input in words, the id of the page that sets it), in the order
#: the headline offers them. ``setup_problems`` builds every problem from this table, so a new kind names its pages.
SETUP_FIXES: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "sequence": (("the sequence length or the model", "start"),),
    "precision": (("the GPU", "start"), ("the precision", "precision")),
    "trainer_batch": (("the Trainer's batch arguments or the batch keys", "batch"),),
})


@dataclass(frozen=True)
class SetupProblem:
    """A problem of the Start page's setup (``setup_problems``): its kind (a key of ``SETUP_FIXES``), the sentence
    without its full stop, and what changes it: (the input in words, the page id that sets it)."""

    kind: str
    message: str
    changed_by: tuple[tuple[str, str], ...]

    @property
    def pages(self) -> tuple[str, ...]:
        """The ids of the pages that change it, each once, in order."""
        return tuple(dict.fromkeys(page for _, page in self.changed_by))


def _setup_problem(kind: str, message: str | None) -> SetupProblem | None:
    return SetupProblem(kind, message, SETUP_FIXES[kind]) if message else None


def setup_problems(config: Mapping[str, Any], context: Mapping[str, Any]) -> list[SetupProblem]:
    """What makes the run fail on the Start page's setup though DeepSpeed accepts the config and it fits: a
    sequence longer than the model's learned positions, a precision the GPU lacks (the headline and the sidebar
    show them; the ZeRO and Precision pages say them where they are set)."""
    problems = []
    model = model_for(context)
    if isinstance(model, ModelSpec):
        problems.append(_setup_problem("sequence", model.sequence_problem(int(context.get("seq_len") or 2048))))
    gpu = hardware.find_gpu(context.get("gpu"))
    if gpu is not None:
        problems.append(_setup_problem("precision",
                                       gpu.precision_problem(compute_precision(config, version_of(context)))))
    if context.get("target") == "hf" and (why := trainer_batch(config, context)[1]):
        (micro, accum), world = _trainer_values(context), job_world_size(context)
        problems.append(_setup_problem("trainer_batch", (
            f"With per_device_train_batch_size {micro} and gradient_accumulation_steps {accum} (TrainingArguments, "
            f"on the Batch size page), the batch does not resolve on {fields.counted(world, 'GPU')} "
            f"({why.rstrip('.')}): the HF Trainer refuses this at launch")))
    return [problem for problem in problems if problem is not None]


def trainer_batch(config: Mapping[str, Any], context: Mapping[str, Any]) -> tuple[BatchValues | None, str | None]:
    """The batch trio DeepSpeed runs once the HF Trainer fills the config's "auto" batch keys with the Batch
    page's TrainingArguments (``hf_micro_batch``, ``hf_grad_accum``), or (None, why it does not resolve); (None,
    None) when no batch key is "auto". The validator judges the config alone, which some Trainer values make
    work, so these are the session's own."""
    if not any(config.get(key) == "auto" for key in BATCH_KEYS):
        return None, None
    filled = fill_batch_autos(dict(config), *_trainer_values(context))
    res = resolve_batch(filled, effective_world_size(filled, job_world_size(context), version_of(context)))
    if res.ok:
        return BatchValues(res.train_batch_size, res.micro_batch, res.grad_accum, res.world_size, res.derived), None
    return None, res.message


def _trainer_values(context: Mapping[str, Any]) -> tuple[int, int]:
    """The Batch page's per_device_train_batch_size and gradient_accumulation_steps."""
    return int(context.get("hf_micro_batch") or 1), int(context.get("hf_grad_accum") or 1)


def current_estimate(config: Mapping[str, Any], context: Mapping[str, Any],
                     report: Report | None = None) -> memory.MemoryEstimate | None:
    """The full estimate for the session's config, or None when no model is chosen."""
    # not cached: one estimate takes well under a millisecond, less than the JSON key of a large config would
    model = model_for(context)
    if model is None:
        return None
    return memory.estimate(config, model, hardware_for(context), shape_for(context, config, report),
                           version=version_of(context))


def option_label(stage: int, offload_optimizer: str, offload_param: str) -> str:
    text = f"ZeRO-{stage}"
    if offload_optimizer != "none":
        text += f" opt→{offload_optimizer}"
    if offload_param != "none":
        text += f" param→{offload_param}"
    return text


def current_option(config: Mapping[str, Any], stage: int) -> str:
    """The option table's label of what the config runs, as the memory model reads it (NVMe optimizer offload
    below stage 3 is CPU offload: DeepSpeed has no NVMe swapper there)."""
    settings = memory.TrainingSettings.from_ds_config(config)
    opt = settings.offload_optimizer if stage >= 1 else "none"
    param = settings.offload_param if stage == 3 else "none"
    return option_label(stage, opt, param)


def options_keys(config: Mapping[str, Any], context: Mapping[str, Any], report: Report | None = None) -> Keys:
    """The cache keys of ``options_table`` for the session's config.

    Every option replaces the stage and the offload devices, so configs that differ only in those share one
    key: a stage flip on the ZeRO page computes none of the 14 estimates again."""
    base = _with_zero_option(config, 0, "none", "none")
    return cache_keys(base, context, shape_for(context, config, report))


def _with_zero_option(config: Mapping[str, Any], stage: int, offload_optimizer: str,
                      offload_param: str) -> dict[str, Any]:
    """``core.memory.with_zero_option`` without copying the rest of the config: it only replaces the ZeRO section,
    and a deep copy of a 1 MB config for each of 14 options was most of the ZeRO page's time at the size limit."""
    zero = memory.with_zero_option({"zero_optimization": config.get("zero_optimization")}, stage, offload_optimizer,
                                   offload_param)
    return {**config, **zero}


@shared_cache(maxsize=256)
def options_table(config: ConfigKey, context_json: str, shape_key: tuple) -> pd.DataFrame | None:
    """Per-GPU bytes by category for every ZeRO stage / offload option (long format, GiB), plus totals; None
    without a model. Cached in-process on ``options_keys`` (shared by a room's sessions; an in-process LRU, so a
    hit does not unpickle the frame as ``st.cache_data`` would): the frame is shared, callers must not edit it."""
    found = inputs((config, context_json, shape_key))
    if found is None:
        return None
    rows = []
    for stage, opt, param in memory.zero_options():
        est = memory.estimate(_with_zero_option(found.config, stage, opt, param), found.model, found.hardware,
                              found.shape, version=version_of(found.context))
        label = option_label(stage, opt, param)
        # each total sums the components again: once per option, not once per category
        totals = {"total_gib": est.gpu_bytes / GIB, "cpu_gib": est.cpu_bytes_per_node / GIB,
                  "nvme_gib": est.nvme_bytes_per_node / GIB, "fits": est.fits}
        for category, size in sorted(est.gpu_peak_by_category().items()):
            rows.append({"option": label, "stage": stage, "category": category, "gib": size / GIB, **totals})
    return pd.DataFrame(rows)


#: Chart labels of the parts of ``core.memory.PaperBreakdown`` (the paper's Figure 1 accounting).
PAPER_LABELS = (("parameters", "parameters (16-bit)"), ("gradients", "gradients (16-bit)"),
                ("optimizer_states", "optimizer states (fp32)"))


def zero_figure(total_params: int, world_size: int, stages: tuple[int, ...] = (0, 1, 2, 3)) -> pd.DataFrame:
    """Per-GPU GiB of each component under each ZeRO stage (the paper's Figure 1 for this model and GPU count),
    from ``core.memory.zero_paper_breakdown``, in long format for the chart."""
    rows = [{"stage": row.stage, "component": label, "gib_per_gpu": getattr(row, part) / GIB}
            for row in memory.zero_paper_breakdown(total_params, world_size, stages=stages)
            for part, label in PAPER_LABELS]
    return pd.DataFrame(rows)


@shared_cache(maxsize=256)
def sweep_table(config: ConfigKey, context_json: str, shape: tuple, axis: str, values: tuple[int, ...]) -> pd.DataFrame:
    """``core.memory.sweep_totals`` of a config along ``axis`` at ``values`` (needs a model), on the keys of
    ``cache_keys``; the frame is shared, callers must not edit it."""
    found = inputs((config, context_json, shape))
    if found is None:
        raise ValueError("the memory sweep needs a model: choose one on the Start page")
    return memory.sweep_totals(found.config, found.model, found.hardware, found.shape, axis, list(values),
                               version=version_of(found.context))


def sweep_values(axis: str, context: Mapping[str, Any], current: int) -> list[int]:
    """The x values of a sweep chart around the current value."""
    if axis == "micro_batch":
        return sorted({1, 2, 4, 8, 16, 32, 64, current})
    if axis == "seq_len":
        return sorted({512, 1024, 2048, 4096, 8192, 16384, 32768, current})
    per_node = int(context["gpus_per_node"])
    world = int(context["nodes"]) * per_node
    # one node's GPUs, then whole nodes (a job of 8 GPUs on nodes of 6 would be sized as 2 nodes, 12 GPUs)
    return sorted({g for g in (1, 2, 4, 8) if g < per_node} | {per_node * n for n in (1, 2, 4, 8, 16, 32)} | {world})
