"""Make it fit: ranked ways out of an out-of-memory config, each with its memory after the change and its patch.

Pure functions over ``core.memory`` (the estimate and its solvers): data in, data out. A way changes either
the config (a JSON merge patch: nested dicts merge, other values replace) or the job around it (the context:
activation recomputation is a model setting, the GPU count a launcher setting), never both silently.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core import memory
from core.autofill import AutoFillError, as_accelerate_passes, find_auto, trainer_batch, trainer_batch_arguments
from core.batch import (
    BATCH_KEYS,
    GA,
    MB,
    TB,
    batch_run,
    effective_world_size,
    micro_and_accum_of,
    number_text,
    positive_whole,
    reads_sequence_parallel,
    runs_elastic,
    sequence_parallel_degree,
)
from core.effective import Effective, effective, legacy_offload_keys
from core.findings import brief
from core.memory import Hardware, ModelCounts, Shape
from core.memory.result import gib_capacity, gib_margin, gib_used
from core.memory.settings import TrainingSettings
from core.memory.solve import LARGEST_SIZED_MICRO_BATCH
from core.models.arch import ModelSpec
from core.rules.initialize import autotp_fits
from core.rules.optim import untested_with_zero
from core.rules.precision import MASTER_WEIGHTS_KEYS, without_refused_master_weights
from core.rules.zero import hpz_fits
from core.schema.zero import NVME_PATH_EXAMPLE, NVME_SUB_GROUP_SIZE
from core.validate import validate
from core.versions import NEWEST

#: Ways in the order they cost speed (cheapest first); ``ways_to_fit`` ranks fitting ways by it.
KINDS = ("no_offload", "micro_batch", "recompute", "zero_stage", "offload_device", "offload_optimizer",
         "offload_param", "gpus", "combined")


@dataclass(frozen=True)
class Way:
    """One way to change the job, with the memory it leads to."""

    kind: str
    title: str
    detail: str
    gpu_bytes: int
    cpu_bytes_per_node: int
    nvme_bytes_per_node: int
    fits: bool
    short: tuple[str, ...] = ()
    """What still does not fit after the change: "GPU", "CPU RAM", "NVMe"."""
    config_patch: dict[str, Any] = field(default_factory=dict)
    """A merge patch for the DeepSpeed config (``apply_patch``)."""
    context_patch: dict[str, Any] = field(default_factory=dict)
    """Changes outside the config: ``recompute`` (the model's activation checkpointing), ``nodes`` and
    ``gpus_per_node`` (the launcher)."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "detail": self.detail, "gpu_bytes": self.gpu_bytes,
                "cpu_bytes_per_node": self.cpu_bytes_per_node, "nvme_bytes_per_node": self.nvme_bytes_per_node,
                "fits": self.fits, "short": list(self.short), "config_patch": self.config_patch,
                "context_patch": self.context_patch}


def apply_patch(config: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` with ``patch`` merged in (dicts merge recursively; ``None`` deletes a key)."""
    out = copy.deepcopy(dict(config))
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = apply_patch(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _ranks(config: Mapping[str, Any], gpus: int, version: str) -> float:
    """Data-parallel ranks of ``gpus`` GPUs, as DeepSpeed ``version``'s batch check counts them."""
    return effective_world_size(dict(config), gpus, version)


def _run_shape(config: Mapping[str, Any], gpus: int, shape: Shape, version: str) -> Shape | None:
    """``shape`` with the micro batch DeepSpeed ``version`` runs ``config`` with on ``gpus`` GPUs (``batch_run``:
    elastic training's, else the batch keys'), the one the headline sizes; ``shape`` as given when the keys do not
    resolve ("auto": the HF Trainer's; else a rule reports them); None when elastic training refuses the count."""
    run = batch_run(dict(config), gpus, version)
    if run is None:
        return None if runs_elastic(config, version) else shape
    return replace(shape, micro_batch=min(run[1], LARGEST_SIZED_MICRO_BATCH))


def _estimate(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape, *,
              version: str) -> memory.MemoryEstimate:
    """``memory.estimate`` with the micro batch DeepSpeed would run on this cluster (``_run_shape``): a change the
    batch keys or elastic training follow must be sized with the batch they give, not the one before it."""
    run = _run_shape(config, hardware.total_gpus, shape, version) or shape
    return memory.estimate(config, model, hardware, run, version=version)


def _smallest(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
              version: str, max_nodes: int = 1024) -> Hardware | None:
    """``memory.min_gpus`` of ``config`` (read as DeepSpeed ``version`` reads it) over the GPU counts that
    ``sequence_parallel_size`` divides (DeepSpeed needs whole data-parallel ranks), or None when none fits or no
    count gives whole ranks. Each count is sized with the micro batch ``_batch_on`` leaves it (a written
    train_batch_size kept with a smaller one where it divides), not the one run on ``hardware``; a count that would
    change a written train_batch_size is taken only when no count keeps it."""
    here = (_run_shape(config, hardware.total_gpus, shape, version) or shape).micro_batch
    trainer_held = _trainer_held_batch(config, version) is not None
    written = trainer_held or _written_global_batch(config, version) is not None
    # the micro batch run now, once, not per count: the Trainer's per-device batch where it fills it, else the
    # batch keys' (None: they do not resolve on these GPUs)
    pair = None if trainer_held or not written else micro_and_accum_of(dict(config), hardware.total_gpus, version)
    micro_run = here if trainer_held else pair[0] if pair is not None else None

    meaning = effective(dict(config), version)
    zero = config.get("zero_optimization")

    def micro_at(count: int, keep_batch: bool) -> int | None:
        # a count AutoTP or hpZ cannot build their groups on is no way out (deepspeed.initialize fails there)
        if not (autotp_fits(meaning.autotp_size, count, version) and hpz_fits(zero, meaning.stage, count)):
            return None
        kept = None if micro_run is None else _kept_batch(config, micro_run, count, version)
        if kept is None:
            return None if keep_batch and written else here
        return min(kept[0], LARGEST_SIZED_MICRO_BATCH)

    # the counts that keep a written global batch first; only when none fits, those that change it (the way says)
    found = None
    for keep_batch in (True, False) if written else (False,):
        found = memory.min_gpus(config, model, hardware, shape, max_nodes=max_nodes,
                                gpus_multiple_of=_sp_multiple(config, version), version=version,
                                micro_batch_at=lambda count, keep=keep_batch: micro_at(count, keep))
        if found is not None:
            break
    if found is None or not float(_ranks(config, found.total_gpus, version)).is_integer():
        return None
    if runs_elastic(config, version):  # elastic training picks another micro batch there, or refuses the count
        run = _run_shape(config, found.total_gpus, shape, version)
        if run is None or not memory.estimate(config, model, found, run, version=version).fits:
            return None
    return found


def _gpus(count: int) -> str:
    """``count`` GPUs in words: "1 GPU", "8 GPUs"."""
    return f"{count} GPU{'' if count == 1 else 's'}"


def _sp_multiple(config: Mapping[str, Any], version: str) -> int:
    """What a GPU count must be a multiple of for ``config``'s sequence-parallel groups (1 without them)."""
    return (sequence_parallel_degree(dict(config)) or 1) if reads_sequence_parallel(version) else 1


def _no_whole_ranks(config: Mapping[str, Any], gpus: int, version: str) -> str:
    """Why ``gpus`` GPUs give no whole number of data-parallel ranks, in words ("" when they do): DeepSpeed's batch
    check divides them by sequence_parallel_size, and its sequence-parallel groups need a multiple of it."""
    if float(_ranks(config, gpus, version)).is_integer():
        return ""
    sp = config.get("sequence_parallel_size")
    said = f"sequence_parallel_size {sp} does not divide the {_gpus(gpus)}, so they make no whole number of " \
           "data-parallel ranks"
    multiple = _sp_multiple(config, version)
    if multiple > 1:
        counts = [c for c in (gpus // multiple * multiple, (gpus // multiple + 1) * multiple) if c]
        said += (f" (DeepSpeed builds its sequence-parallel groups only on a multiple of {multiple} GPUs: "
                 + " or ".join(str(c) for c in counts) + ")")
    return said


def _layout(hardware: Hardware) -> tuple[int, int]:
    return hardware.nodes, hardware.gpus_per_node


def _cluster_change(found: Hardware, hardware: Hardware, multiple: int = 1) -> str:
    """``found`` against the current cluster in words, with why it leaves GPUs of its nodes idle when it does: no
    more GPUs per node give a multiple of ``multiple`` (sequence_parallel_size, ``_sp_multiple``), or a node's host
    memory holds fewer ranks."""
    if found.total_gpus != hardware.total_gpus:
        said = f"{_gpus(found.total_gpus)} instead of {hardware.total_gpus}"
    else:
        said = (f"the same {_gpus(found.total_gpus)} on {found.nodes} nodes × {found.gpus_per_node} instead of "
                f"{hardware.nodes} × {hardware.gpus_per_node}")
    more = range(found.gpus_per_node + 1, hardware.gpus_per_node + 1)
    if found.nodes > 1 and more and not any(found.nodes * g % multiple == 0 for g in more):
        said += (f"; {found.gpus_per_node} of each node's {hardware.gpus_per_node} GPUs: more per node make no "
                 f"multiple of sequence_parallel_size {multiple}")
    elif found.nodes > 1 and more:
        said += (f"; {found.gpus_per_node} of each node's {hardware.gpus_per_node} GPUs: the ranks of a whole node "
                 "need more CPU RAM or NVMe than a node has")
    return said


#: What a way that changes the GPU count says when it cannot carry a written train_batch_size along.
_CHANGE_BATCH = " an explicit train_batch_size must then be changed to match."


def _written_global_batch(config: Mapping[str, Any], version: str) -> int | None:
    """The train_batch_size ``config`` writes and DeepSpeed ``version`` holds the job to: a whole positive one, no
    batch key "auto" (the HF Trainer fills those) and no elastic training (which ignores the batch keys); else None."""
    tb = positive_whole(config.get("train_batch_size"))
    if tb is None or "auto" in (config.get(k) for k in BATCH_KEYS) or runs_elastic(config, version):
        return None
    return tb


def _trainer_held_batch(config: Mapping[str, Any], version: str) -> tuple[int, dict[str, int]] | None:
    """(train_batch_size, the batch keys written beside it) when the HF Trainer holds the job to a written
    train_batch_size: a whole one beside a written micro batch of which it or the accumulation is "auto". The
    Trainer fills those from TrainingArguments and refuses the job when micro batch x accumulation x data-parallel
    ranks differs (``hf.batch-never-matches``); a missing accumulation is accelerate's 1. None otherwise, and under
    elastic training (which ignores the keys) or sequence parallelism (where no written number passes the Trainer
    and DeepSpeed both: a rule of its own)."""
    tb = positive_whole(config.get(TB))
    if tb is None or config.get(MB) is None or "auto" not in (config.get(MB), config.get(GA)) \
            or runs_elastic(config, version) or _sp_multiple(config, version) > 1:
        return None
    passed = as_accelerate_passes(config)
    fixed = {key: positive_whole(passed[key]) for key in (MB, GA) if passed.get(key) != "auto"}
    if any(count is None for count in fixed.values()):
        return None  # not a count: the batch rules say so
    return tb, {key: count for key, count in fixed.items() if count is not None}


def _kept_batch(config: Mapping[str, Any], micro_run: int, new_gpus: int, version: str) -> tuple[int, int] | None:
    """(micro batch, accumulation) that keep ``config``'s written train_batch_size on ``new_gpus`` GPUs: the largest
    micro batch up to ``micro_run`` (the one run on the current GPUs) that divides the batch per data-parallel rank
    (a smaller micro batch needs less memory, so what fitted still fits), or the one the written key leaves when the
    HF Trainer fills the other (``_trainer_held_batch``). None when no train_batch_size holds the job
    (``_written_global_batch``), or the batch does not divide over the new ranks at all."""
    held = _trainer_held_batch(config, version)
    tb = held[0] if held is not None else _written_global_batch(config, version)
    fixed = held[1] if held is not None else {}
    ranks = _ranks(config, new_gpus, version)
    if tb is None or not float(ranks).is_integer():  # float: SP not dividing is a rule's
        return None
    step = int(ranks) * (fixed.get(MB) or 1) * (fixed.get(GA) or 1)
    if tb % step:
        return None
    if MB in fixed:  # the Trainer fills the accumulation
        return fixed[MB], tb // step
    if GA in fixed:  # the Trainer fills the micro batch
        return tb // step, fixed[GA]
    per_rank = tb // int(ranks)  # integer arithmetic: a train_batch_size of 10**400 is no float
    top = min(micro_run, per_rank)
    # a micro batch is at most a few thousand in any real config: past that, 1 (which always divides) is the answer
    micro = next((m for m in range(top, max(top - 10_000, 0), -1) if per_rank % m == 0), 1)
    return micro, per_rank // micro


def _batch_on(config: Mapping[str, Any], gpus: int, new_gpus: int, version: str,
              original: Mapping[str, Any] | None = None, *,
              trainer_micro: int = 1) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The batch keys that make ``config`` (after a way's own changes) valid on ``new_gpus`` GPUs instead of
    ``gpus``, and what they do in words: with a written train_batch_size the same global batch when it divides over
    the new ranks (``_kept_batch``: nothing to write when DeepSpeed derives that itself, e.g. from
    train_batch_size alone), else the global batch grows with the GPU count (a written train_batch_size kept as it
    was made DeepSpeed refuse the job); nothing when DeepSpeed derives the global batch or a key is "auto".
    The words compare with ``original`` when given (the user's config, before the way's other changes). With
    elastic training on, DeepSpeed ignores the batch keys: nothing to write, the words say what it computes. Nothing
    to write or say on as many GPUs (another layout of them). Returns (config patch, context patch, words): the
    context patch holds the TrainingArguments batch the HF Trainer needs (``_trainer_batch_on``; ``trainer_micro``
    is its per-device batch now)."""
    if new_gpus == gpus:
        return {}, {}, ""
    if runs_elastic(config, version):
        run = batch_run(dict(config), new_gpus, version)
        return {}, {}, ("" if run is None else f" elastic training computes the batch on {_gpus(new_gpus)}: "
                        f"train_batch_size {run[0]}, micro batch {run[1]}, gradient accumulation {run[2]}.")
    if (held := _trainer_held_batch(config, version)) is not None:
        return _trainer_batch_on(config, held[0], gpus, new_gpus, version, trainer_micro)
    tb = _written_global_batch(config, version)
    if tb is None:
        return {}, {}, ("" if config.get("train_batch_size") is None else _CHANGE_BATCH)
    trio = micro_and_accum_of(dict(config), gpus, version)
    ranks = _ranks(config, new_gpus, version)
    if trio is None or not float(ranks).is_integer():  # not float(ranks): SP does not divide the GPUs, a rule says
        return {}, {}, _CHANGE_BATCH
    kept = _kept_batch(config, trio[0], new_gpus, version)
    if kept is not None:
        was = micro_and_accum_of(dict(original), gpus, version) if original is not None else None
        (was_micro, was_accum), (micro, accum) = was or trio, kept
        changes = [f"{what} {before} → {after}" for what, before, after in
                   (("micro batch", was_micro, micro), ("gradient accumulation", was_accum, accum)) if before != after]
        derived = batch_run(dict(config), new_gpus, version) == (tb, micro, accum)
        said = f" train_batch_size stays {tb}" + (f": {', '.join(changes)}" if changes else "") + (
            f" (DeepSpeed derives {'them' if len(changes) > 1 else 'it'} on {_gpus(new_gpus)})."
            if derived and changes else ".")
        return ({} if derived else {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accum},
                {}, said)
    micro, accum = trio
    new_tb = micro * accum * int(ranks)
    return ({"train_batch_size": new_tb, "train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accum},
            {}, f" {tb} does not divide over {int(ranks)} data-parallel ranks: train_batch_size "
            f"{tb} → {new_tb}, the global batch {'grows' if new_tb > tb else 'shrinks'} with the GPU count.")


#: The TrainingArguments that fill an "auto" batch key, and the context key (the Batch page's) that holds each.
_TRAINER_CONTEXT = {"per_device_train_batch_size": "hf_micro_batch", "gradient_accumulation_steps": "hf_grad_accum"}


def _trainer_batch_on(config: Mapping[str, Any], tb: int, gpus: int, new_gpus: int, version: str,
                      trainer_micro: int) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``_batch_on`` for the train_batch_size ``tb`` the HF Trainer holds the job to (``_trainer_held_batch``): where
    it divides over the new ranks, the TrainingArguments that keep it (the context patch: the largest per-device batch
    up to ``trainer_micro`` when the micro batch is "auto"); else train_batch_size "auto", which the Trainer computes
    as micro batch x accumulation x ranks (a written one it would refuse there)."""
    ranks = _ranks(config, new_gpus, version)
    kept = _kept_batch(config, max(trainer_micro, 1), new_gpus, version)
    if kept is None:
        verb = "grows" if new_gpus > gpus else "shrinks"
        return ({TB: "auto"}, {},
                f" train_batch_size {tb} is no micro batch × accumulation × {number_text(ranks)} data-parallel ranks "
                f"the HF Trainer can fill: train_batch_size {tb} → \"auto\" (the Trainer computes it), the global "
                f"batch {verb} with the GPU count.")
    arguments = trainer_batch_arguments(config)
    values = dict(zip(("per_device_train_batch_size", "gradient_accumulation_steps"), kept, strict=True))
    context = {_TRAINER_CONTEXT[name]: values[name] for name in arguments}
    passed = " and ".join(f"{name}={values[name]}" for name in arguments)
    return {}, context, f" train_batch_size stays {tb}: pass {passed} to TrainingArguments."


def _trainer_shape(shape: Shape, context: Mapping[str, Any]) -> Shape:
    """``shape`` with the per-device batch a way passes to the HF Trainer (``hf_micro_batch``), when it does."""
    return replace(shape, micro_batch=context["hf_micro_batch"]) if "hf_micro_batch" in context else shape


def _then(said: str) -> str:
    """The end of a GPU-count way's first sentence: ``said`` (what happens to the batch) after a semicolon, or a full
    stop when nothing happens to it."""
    return f";{said}" if said else "."


def _sentence(said: str) -> str:
    """``said`` as a sentence of its own: capitalised, unless it begins with a config key (``train_batch_size``)."""
    said = said.strip()
    return said if "_" in said.split(" ", 1)[0] else said[0].upper() + said[1:]


def _batch_follows(config: Mapping[str, Any], gpus: int, new_gpus: int, version: str) -> str:
    """What happens to a derived global batch (no train_batch_size written) on ``new_gpus`` instead of ``gpus``;
    nothing on as many GPUs."""
    if new_gpus == gpus:
        return ""
    verb = "grows" if new_gpus > gpus else "shrinks"
    trio = micro_and_accum_of(dict(config), gpus, version)
    if trio is None:
        return f" the global batch {verb} with the GPU count."
    per_gpu = trio[0] * trio[1]
    before, after = _ranks(config, gpus, version), _ranks(config, new_gpus, version)
    if not float(after).is_integer():
        return f" the global batch {verb} with the GPU count."
    if not float(before).is_integer():
        return (f" the global batch becomes {per_gpu * int(after)}: {per_gpu} per data-parallel rank × {int(after)} "
                f"ranks ({_gpus(gpus)} made no whole number of them: sequence_parallel_size "
                f"{config.get('sequence_parallel_size')} does not divide {gpus}).")
    return f" the global batch {verb} with the GPU count ({per_gpu * int(before)} → {per_gpu * int(after)})."


def _way(kind: str, title: str, detail: str, config: Mapping[str, Any], model: ModelSpec | ModelCounts,
         hardware: Hardware, shape: Shape, config_patch: dict[str, Any] | None = None,
         context_patch: dict[str, Any] | None = None, *, version: str) -> Way:
    patch, said = _applicable(config, config_patch or {}, version)
    est = _estimate(apply_patch(config, patch), model, hardware, shape, version=version)
    return _from_estimate(kind, title, detail + said, est, patch, context_patch or {})


#: Why DeepSpeed refuses a master-weights key, by the validator's code; ``{it}`` is "it" or "them".
_REFUSED_BECAUSE = {
    "precision.master-weights-stage": "does not support {it} at ZeRO-{stage}",
    "precision.master-weights-offload": "runs {it} at ZeRO-{stage} only with the optimizer offloaded to the CPU as "
                                        "DeepSpeedCPUAdam, which this way does not do",
    "precision.bf16-optimizer-states": "refuses {it} at ZeRO-{stage} without bf16_master_weights_and_grads",
}


def _applicable(config: Mapping[str, Any], patch: Mapping[str, Any], version: str) -> tuple[dict[str, Any], str]:
    """``patch`` plus the removal (``None``) of the 16-bit master-weights keys the validator refuses in the config it
    makes (``core.rules.precision.refused_master_weights``: ZeRO-3 or no CPU-Adam offload where the release does not
    run them), and what it removes and why, in words ("" when nothing). A way sizes and costs the config as it will
    be applied, without them (the master weights are then fp32). Removals already in ``patch`` are decided again, so
    composing ways' patches (the combined way) removes only what the composed config needs removed."""
    bare: dict[str, Any] = {}
    for key, value in patch.items():
        if key in MASTER_WEIGHTS_KEYS and isinstance(value, Mapping):
            kept = {k: v for k, v in value.items() if not (v is None and k in MASTER_WEIGHTS_KEYS[key])}
            if kept:  # an empty section left by composed removals merges nothing
                bare[key] = kept
        else:
            bare[key] = value
    patched = apply_patch(config, bare)
    removed = without_refused_master_weights(patched, version, "deepspeed")[1]
    if not removed:
        return bare, ""
    for path in removed:
        section, _, key = path.partition(".")
        part = bare.get(section)
        bare[section] = {**(part if isinstance(part, Mapping) else {}), key: None}
    stage = effective(patched, version).stage
    said = ""
    for code in dict.fromkeys(removed.values()):
        paths = [path for path, why in removed.items() if why == code]
        it = "it" if len(paths) == 1 else "them"
        because = _REFUSED_BECAUSE.get(code, "refuses {it} at ZeRO-{stage}").format(it=it, stage=stage)
        said += (f" The change also removes {' and '.join(paths)}: DeepSpeed {version} {because} (sized and costed "
                 f"without {it}).")
    return bare, said


def fit_numbers(estimate: memory.MemoryEstimate) -> str:
    """GPU, CPU RAM and NVMe use against capacity, with the margin, in GiB with one decimal (a capacity with two
    where one would round it)."""
    hw = estimate.hardware

    def part(used: int, cap: int, what: str) -> str:
        return f"{what} {gib_used(used, cap)} of {gib_capacity(cap)} GiB ({gib_margin(used, cap)})"

    parts = [part(estimate.gpu_bytes, hw.gpu_memory_bytes, "GPU"),
             part(estimate.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes, "CPU RAM per node")]
    if estimate.nvme_bytes_per_node:
        parts.append(part(estimate.nvme_bytes_per_node, hw.nvme_bytes_per_node or 0, "NVMe per node"))
    return "; ".join(parts)


def short_of(est: memory.MemoryEstimate) -> tuple[str, ...]:
    """The resources an estimate does not fit: "GPU", "CPU RAM", "NVMe"."""
    return tuple(name for name, ok in (("GPU", est.fits_gpu), ("CPU RAM", est.fits_cpu), ("NVMe", est.fits_nvme))
                 if not ok)


def _from_estimate(kind: str, title: str, detail: str, est: memory.MemoryEstimate, config_patch: dict[str, Any],
                   context_patch: dict[str, Any]) -> Way:
    return Way(kind, title, detail, est.gpu_bytes, est.cpu_bytes_per_node, est.nvme_bytes_per_node, est.fits,
               short_of(est), dict(config_patch), dict(context_patch))


def _micro_batch_title(micro: Any, accum: Any) -> str:
    """The micro-batch way's title (also the combined way's rung, retitled when the GPU count changes it)."""
    return f"Micro batch {micro} with {accum} accumulation steps"


def _micro_batch_way(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                     shape: Shape, trainer_accum: int, version: str) -> Way | None:
    """The largest smaller micro batch that fits, with the accumulation that keeps the global batch.

    With an "auto" micro batch (the HF Trainer fills it) the change goes to TrainingArguments instead:
    ``shape.micro_batch`` is the Trainer's per-device batch and ``trainer_accum`` its accumulation. With elastic
    training on, the change goes to what it reads (``_elastic_micro_batch_way``)."""
    if runs_elastic(config, version):
        return _elastic_micro_batch_way(config, model, hardware, shape, version)
    world = hardware.total_gpus
    ranks = _ranks(config, world, version)  # data-parallel: sequence-parallel ranks share one sample
    trainer = config.get("train_micro_batch_size_per_gpu") == "auto"
    accum_auto = config.get("gradient_accumulation_steps") == "auto"  # the HF Trainer's, from TrainingArguments
    if trainer:
        micro = shape.micro_batch
        accum = positive_whole(config.get("gradient_accumulation_steps")) or trainer_accum
    else:
        written = (positive_whole(config.get("train_micro_batch_size_per_gpu")),
                   positive_whole(config.get("gradient_accumulation_steps")))
        micro, accum = micro_and_accum_of(dict(config), world, version) or written
        accum = accum or (trainer_accum if accum_auto else 1)
    if micro is None or micro < 2:
        return None
    per_gpu = micro * accum  # samples per GPU per optimizer step: what must stay the same
    largest = memory.max_micro_batch(config, model, hardware, shape, limit=micro - 1, version=version)
    # the largest that fits and keeps the global batch; when none fits, 1 still saves the most activations
    new_micro = next((m for m in range(min(largest, micro - 1), 0, -1) if per_gpu % m == 0), 1)
    new_accum = per_gpu // new_micro
    misfit = _no_whole_ranks(config, world, version)
    if misfit:  # no global batch to keep: say what each rank keeps, and why the count is wrong
        kept = f"each GPU still takes {per_gpu} samples per optimizer step"
    else:
        on = _gpus(world) + (f" ({int(ranks)} data-parallel ranks)" if ranks != world else "")
        kept = f"the global batch stays {per_gpu * int(ranks)} on {on}"  # integer: exact at any size
    detail = (f"micro batch {micro} → {new_micro}, gradient accumulation {accum} → {new_accum}: {kept}; each "
              f"optimizer step takes {new_accum} smaller passes." + (f" {_sentence(misfit)}." if misfit else ""))
    patch: dict[str, Any] = {}
    context: dict[str, Any] = {}
    if trainer:
        detail += (f" The config says \"auto\": pass per_device_train_batch_size={new_micro} and "
                   f"gradient_accumulation_steps={new_accum} to TrainingArguments.")
        context = {"hf_micro_batch": new_micro, "hf_grad_accum": new_accum}
        if positive_whole(config.get("gradient_accumulation_steps")):
            patch["gradient_accumulation_steps"] = new_accum
    elif accum_auto:
        detail += (f" The accumulation says \"auto\": pass gradient_accumulation_steps={new_accum} to "
                   "TrainingArguments.")
        patch = {"train_micro_batch_size_per_gpu": new_micro}
        context = {"hf_grad_accum": new_accum}
    else:
        patch = {"train_micro_batch_size_per_gpu": new_micro, "gradient_accumulation_steps": new_accum}
    return _way("micro_batch", _micro_batch_title(new_micro, new_accum), detail,
                config, model, hardware, replace(shape, micro_batch=new_micro), patch, context, version=version)


#: The single micro batch sizes ``_elastic_micro_batch_way`` tries below the largest that fits, at most.
_ELASTIC_TRIES = 64


def _elastic_micro_batch_way(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                             shape: Shape, version: str) -> Way | None:
    """Elastic training ignores the batch keys and picks its micro batch from ``elasticity.micro_batch_sizes``: the
    way limits that list to the sizes that fit (or, when none of them does, the largest single size that fits and
    that elastic training accepts on these GPUs). Elastic training then computes its own global batch and
    accumulation, which the words say; None when it refuses these GPUs now or with every list tried."""
    world = hardware.total_gpus
    now = batch_run(dict(config), world, version)
    if now is None or now[1] < 2:
        return None
    batch, micro, accum = now
    section = config["elasticity"]
    sizes = [m for m in section.get("micro_batch_sizes") or () if positive_whole(m) is not None]
    largest = memory.max_micro_batch(config, model, hardware, shape, limit=micro - 1, version=version)
    kept = [m for m in sizes if m <= largest]
    tries = ([kept] if kept else []) + [[m] for m in range(max(largest, 1), 0, -1)][:_ELASTIC_TRIES]
    for listed in tries:
        patch = {"elasticity": {"micro_batch_sizes": listed}}
        run = batch_run(apply_patch(config, patch), world, version)
        if run is None:
            continue
        new_batch, new_micro, new_accum = run
        detail = (f"elasticity.micro_batch_sizes {sizes} → {listed}: elastic training, which ignores the batch keys, "
                  f"then runs micro batch {micro} → {new_micro}, gradient accumulation {accum} → {new_accum} on "
                  f"{_gpus(world)}; its global batch (train_batch_size) "
                  + (f"stays {batch}." if new_batch == batch else f"{batch} → {new_batch}."))
        return _way("micro_batch", _micro_batch_title(new_micro, new_accum), detail, config, model, hardware,
                    replace(shape, micro_batch=new_micro), patch, version=version)
    return None


def ways_to_fit(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                shape: Shape, *, max_nodes: int = 1024, trainer_accum: int = 1,
                version: str = NEWEST) -> list[Way]:
    """Ways out of an out-of-memory job, ranked: those that fit first (cheapest in speed first), then the
    rest by GPU memory. Each single change starts from the current job; "combined" stacks the single
    config changes in cost order until the job fits. Empty when the job already fits. ``trainer_accum`` is
    the HF Trainer's gradient_accumulation_steps, used when the config's micro batch is "auto"; the config and
    each changed one are read as DeepSpeed ``version`` reads them."""
    current = _estimate(config, model, hardware, shape, version=version)  # the micro batch every way is sized with
    if current.fits:
        return []
    ways: list[Way] = []
    micro = _micro_batch_way(config, model, hardware, shape, trainer_accum, version)
    if micro is not None:
        ways.append(micro)
    if isinstance(model, ModelSpec) and shape.recompute != "full":
        ways.append(_way(
            "recompute", "Activation recomputation (full)",
            "Recompute each layer's activations in the backward pass (gradient checkpointing: "
            "`model.gradient_checkpointing_enable()`, or `gradient_checkpointing=True` in TrainingArguments); "
            "about a third more compute.",
            config, model, hardware, replace(shape, recompute="full"), context_patch={"recompute": "full"},
            version=version))
    meaning = effective(config, version)
    stage, opt, param = meaning.stage, meaning.offload_optimizer, meaning.offload_param
    legacy = _legacy_offload(config)
    # the next stage, and ZeRO-3 (which partitions everything) when the next is not it
    for target in sorted({stage + 1, 3}) if stage < 3 else ():
        partitioned = ("optimizer states", "optimizer states and gradients",
                       "optimizer states, gradients and parameters")[target - 1]
        ways.append(_way(
            "zero_stage", f"ZeRO stage {target}",
            f"Partition the {partitioned} over the {_gpus(hardware.total_gpus)}; "
            + ("a little more communication." if target < 3 else "parameters are gathered layer by layer."),
            config, model, hardware, shape, {"zero_optimization": {"stage": target}}, version=version))
    if opt == "none":
        new_stage = max(stage, 1)
        ways.append(_way(
            "offload_optimizer", "Offload the optimizer to CPU RAM" + (" (with ZeRO-1)" if stage == 0 else ""),
            "Optimizer states and the optimizer step move to the CPU (DeepSpeed's CPU-Adam for Adam and AdamW); "
            "limited by PCIe and CPU speed.",
            config, model, hardware, shape,
            {"zero_optimization": {**legacy, "stage": new_stage,
                                   "offload_optimizer": {"device": "cpu", "pin_memory": True}}}, version=version))
    if param == "none":
        ways.append(_way(
            "offload_param", "ZeRO-3 with parameters " + ("offloaded to CPU RAM (the optimizer stays on NVMe)"
                                                          if opt == "nvme" else "and optimizer offloaded to CPU RAM"),
            "Parameters live in CPU RAM and are fetched layer by layer: the least GPU memory, the slowest.",
            config, model, hardware, shape,
            {"zero_optimization": {**legacy, "stage": 3,
                                   "offload_optimizer": {"device": opt if opt != "none" else "cpu", "pin_memory": True},
                                   "offload_param": {"device": "cpu", "pin_memory": True}}}, version=version))
    ways += _host_ways(config, model, hardware, shape, current, meaning, version)
    # the batch keys these ways add leave the master weights as they are: only the stage and offload decide those
    as_is, as_is_said = _applicable(config, {}, version)
    smallest = _smallest(apply_patch(config, as_is), model, hardware, shape, version, max_nodes)
    sp = _sp_multiple(config, version)
    if smallest is not None and _layout(smallest) != _layout(hardware):
        nodes = f"{smallest.nodes} node{'s' if smallest.nodes > 1 else ''} × {smallest.gpus_per_node}"
        batch_patch, batch_context, batch_said = _batch_on(config, hardware.total_gpus, smallest.total_gpus, version,
                                                           trainer_micro=shape.micro_batch)
        est = _estimate(apply_patch(config, {**as_is, **batch_patch}), model, smallest,
                        _trainer_shape(shape, batch_context), version=version)
        ways.append(_from_estimate(
            "gpus", f"{_gpus(smallest.total_gpus)} ({nodes})",
            f"The smallest cluster of these GPUs that fits as configured ({_cluster_change(smallest, hardware, sp)})"
            + _then(batch_said or _batch_follows(config, hardware.total_gpus, smallest.total_gpus, version))
            + as_is_said, est, {**as_is, **batch_patch},
            {"nodes": smallest.nodes, "gpus_per_node": smallest.gpus_per_node, **batch_context}))
    if stage < 3:
        stage3, stage3_said = _applicable(config, {"zero_optimization": {"stage": 3}}, version)
        enough = _smallest(apply_patch(config, stage3), model, hardware, shape, version, max_nodes)
        if enough is not None and _layout(enough) != _layout(hardware):
            batch_patch, batch_context, batch_said = _batch_on(config, hardware.total_gpus, enough.total_gpus,
                                                               version, trainer_micro=shape.micro_batch)
            est = _estimate(apply_patch(config, {**stage3, **batch_patch}), model, enough,
                            _trainer_shape(shape, batch_context), version=version)
            ways.append(_from_estimate(
                "gpus", f"ZeRO-3 on {_gpus(enough.total_gpus)} ({enough.nodes} × {enough.gpus_per_node})",
                f"The smallest cluster that fits with ZeRO-3 and no offload ({_cluster_change(enough, hardware, sp)})"
                + _then(batch_said or _batch_follows(config, hardware.total_gpus, enough.total_gpus, version))
                + stage3_said, est, {**stage3, **batch_patch},
                {"nodes": enough.nodes, "gpus_per_node": enough.gpus_per_node, **batch_context}))
    combined = _combined(config, model, hardware, shape, ways, version, max_nodes)
    if combined is not None:
        ways.append(combined)
    # a way that fits nothing is worth showing only when it gets closer: adding offload to a job short of CPU RAM
    # alone moves it further away, and was ranked first for its small GPU figure
    now_over = _overshoot(current.gpu_bytes, current.cpu_bytes_per_node, current.nvme_bytes_per_node, hardware)
    # a config with "auto" in it is for the HF Trainer, which fills those (to DeepSpeed alone each is an error)
    target = "hf" if find_auto(config) else "deepspeed"
    refused_now = frozenset((f.code, f.path) for f in validate(
        dict(config), version=version, world_size=hardware.total_gpus, target=target).errors)
    judged = [_without_new_refusals(_with_untested_optimizer_allowed(way, config, version), config, model, hardware,
                                    shape, version, refused_now, target) for way in ways]
    ways = _distinct([way for way in judged
                      if way is not None and (way.fits or _way_overshoot(way, hardware) < now_over)], config)
    order = {kind: i for i, kind in enumerate(KINDS)}
    order["combined"] = order["gpus"]  # the ways that change the GPU count rank among themselves by the count

    def gpus_after(way: Way) -> int:
        return way.context_patch.get("nodes", hardware.nodes) * way.context_patch.get("gpus_per_node",
                                                                                     hardware.gpus_per_node)

    return sorted(ways, key=lambda w: (not w.fits, order[w.kind] if w.fits else _way_overshoot(w, hardware),
                                       gpus_after(w) if w.fits else 0, _stage_of(w), w.gpu_bytes))


def _distinct(ways: list[Way], config: Mapping[str, Any]) -> list[Way]:
    """``ways`` less each that leaves the job as it is or as an earlier way leaves it: the combined way can climb
    its whole ladder to exactly the config of a single way (ZeRO-3 with both offloads), listed twice otherwise."""
    def change(config_patch: Mapping[str, Any], context_patch: Mapping[str, Any]) -> str:
        return json.dumps([apply_patch(config, config_patch), dict(context_patch)], sort_keys=True, default=repr)

    seen = {change({}, {})}
    kept: list[Way] = []
    for way in ways:
        key = change(way.config_patch, way.context_patch)
        if key not in seen:
            seen.add(key)
            kept.append(way)
    return kept


def _overshoot(gpu_bytes: int, cpu_bytes: int, nvme_bytes: int, hardware: Hardware) -> float:
    """How far over the cluster's memory a job is: the sum over GPU memory, CPU RAM and NVMe (per node) of the
    fraction by which its use exceeds the capacity (0 when it fits)."""
    nvme_cap = hardware.nvme_bytes_per_node
    pairs = [(gpu_bytes, hardware.gpu_memory_bytes), (cpu_bytes, hardware.cpu_ram_per_node_bytes)]
    if nvme_cap is not None and nvme_bytes:
        pairs.append((nvme_bytes, nvme_cap))
    return sum(max(0.0, used / max(cap, 1) - 1.0) for used, cap in pairs)


def _way_overshoot(way: Way, hardware: Hardware) -> float:
    return _overshoot(way.gpu_bytes, way.cpu_bytes_per_node, way.nvme_bytes_per_node, hardware)


def nothing_helps(short: tuple[str, ...]) -> str:
    """What to say when ``ways_to_fit`` finds no change that gets closer, for the resources ``short_of`` names."""
    remedies = {"GPU": "GPUs with more memory or a smaller model", "CPU RAM": "more CPU RAM per node (a node's ranks "
                "share it)", "NVMe": "more NVMe space per node"}
    return ("No change the memory model knows of makes this fit or gets it closer; "
            + " and ".join(remedies[name] for name in short) + " would.")


def _stage_of(way: Way) -> int:
    """The ZeRO stage a ZeRO-stage or no-offload way moves to (0 when it keeps the stage, and for the others): of two
    stages that fit, the lower one runs faster (less communication), so it ranks first."""
    zero = way.config_patch.get("zero_optimization") if way.kind in ("zero_stage", "no_offload") else None
    stage = zero.get("stage") if isinstance(zero, Mapping) else None
    return stage if isinstance(stage, int) else 0


def _with_untested_optimizer_allowed(way: Way, config: Mapping[str, Any], version: str) -> Way:
    """``way`` with ``zero_allow_untested_optimizer`` set when it turns ZeRO on for an optimizer ZeRO was not tested
    with (e.g. torch's SGD): without it ``deepspeed.initialize`` refuses the changed job."""
    name = untested_with_zero(apply_patch(config, way.config_patch), version)
    if name is None:
        return way
    return replace(way, config_patch=apply_patch(way.config_patch, {"zero_allow_untested_optimizer": True}),
                   detail=way.detail + f" ZeRO was not tested with {name}: the change also sets "
                   "zero_allow_untested_optimizer, without which deepspeed.initialize refuses it.")


def _without_new_refusals(way: Way, config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                          shape: Shape, version: str, refused_now: frozenset[tuple[str, str]],
                          target: str = "deepspeed") -> Way | None:
    """``way`` as the validator judges the config it makes, on the GPUs it runs on: unchanged when it adds no error;
    with the keys removed that DeepSpeed refuses only in the changed job (``compute_grad_norm: false`` or
    ``prescale_gradients`` at ZeRO-3: errors whose fix removes the key) or with the switch it needs turned (Muon at
    ZeRO-3: ``reduce_scatter`` false, an error whose fix sets a boolean), said in its detail and sized again; None
    when it adds an error no removal or switch clears (an NVMe offload without a path that ZeRO-3 starts using):
    a way DeepSpeed refuses is no way out. ``refused_now``: (code, path) of the config's own errors, judged for
    ``target`` as the changed config is."""
    nodes = way.context_patch.get("nodes", hardware.nodes)
    per_node = way.context_patch.get("gpus_per_node", hardware.gpus_per_node)
    patch = dict(way.config_patch)
    removed: dict[str, str] = {}
    settled: dict[str, tuple[str, Any]] = {}  # path -> (code, value the fix sets)
    for _ in range(3):
        report = validate(apply_patch(config, patch), version=version, world_size=nodes * per_node, target=target)
        new = [f for f in report.errors if (f.code, f.path) not in refused_now]
        if not new:
            break
        for finding in new:
            ops = list(finding.fix.ops) if finding.fix is not None else []
            if len(ops) != 1 or ops[0].path != finding.path or finding.path in removed or finding.path in settled:
                return None
            if ops[0].op == "delete":
                removed[finding.path] = finding.code
                patch = _with_deletion(patch, finding.path)
            elif ops[0].op == "set" and isinstance(ops[0].value, bool) and \
                    finding.path not in _patched_paths(way.config_patch):
                # a switch the changed job needs (Muon at ZeRO-3: reduce_scatter false), never one the way itself sets
                # nor a value that is the user's to choose (an NVMe path: its fix writes an example)
                settled[finding.path] = (finding.code, ops[0].value)
                patch = _with_value(patch, finding.path, ops[0].value)
            else:
                return None
    else:
        return None
    if not removed and not settled:
        return way
    run_on = replace(hardware, nodes=nodes, gpus_per_node=per_node)
    run_shape = replace(shape, recompute=way.context_patch.get("recompute", shape.recompute))
    est = _estimate(apply_patch(config, patch), model, run_on, run_shape, version=version)
    said = "".join(f" The change also removes {path}: DeepSpeed {version} refuses it in the changed job ({code})."
                   for path, code in removed.items())
    said += "".join(f" The change also sets {path} to {brief(value)}: DeepSpeed {version} refuses the changed job "
                    f"without it ({code})." for path, (code, value) in settled.items())
    return _from_estimate(way.kind, way.title, way.detail + said, est, patch, way.context_patch)


def _patched_paths(patch: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths a config patch sets or removes (its leaves)."""
    paths: set[str] = set()
    for key, value in patch.items():
        path = f"{prefix}{key}"
        paths |= _patched_paths(value, f"{path}.") if isinstance(value, Mapping) and value else {path}
    return paths


def _with_value(patch: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``patch`` that also sets the key at the dotted ``path`` to ``value``."""
    head, _, rest = path.partition(".")
    out = dict(patch)
    if not rest:
        out[head] = value
    else:
        inner = out.get(head)
        out[head] = _with_value(inner if isinstance(inner, Mapping) else {}, rest, value)
    return out


def _with_deletion(patch: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``patch`` that also removes the key at the dotted ``path`` (a ``None`` there, which ``apply_patch`` reads as a
    removal)."""
    return _with_value(patch, path, None)


def _legacy_offload(config: Mapping[str, Any]) -> dict[str, Any]:
    """A ZeRO-section patch that rewrites the deprecated offload keys (``cpu_offload``, ``cpu_offload_param``,
    ``cpu_offload_use_pin_memory``) as ``core.migrate`` does: DeepSpeed refuses them next to an offload section
    ("Cannot provide deprecated parameter ... and replacing parameter ... together"), so a way that writes a
    section starts from their current form (what they meant is kept). Empty when there are none."""
    from core.migrate import migrate

    zero = config.get("zero_optimization")
    if not isinstance(zero, Mapping) or not set(zero) & legacy_offload_keys():
        return {}
    migrated = migrate({"zero_optimization": dict(zero)})[0]["zero_optimization"]
    patch: dict[str, Any] = {key: None for key in zero if key not in migrated}
    patch.update({key: value for key, value in migrated.items() if key not in zero or zero[key] != value})
    return patch


def _host_ways(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
               current: memory.MemoryEstimate, meaning: Effective, version: str) -> list[Way]:
    """When an offloading job is short of CPU RAM or NVMe: offload to CPU RAM instead of NVMe, to NVMe instead of
    CPU RAM (when the nodes have NVMe), or not at all (at this stage, and with ZeRO-3). The other ways only ever
    add offload, so they cannot help there."""
    stage, opt, param = meaning.stage, meaning.offload_optimizer, meaning.offload_param
    short = short_of(current)
    if (opt, param) == ("none", "none") or not ({"CPU RAM", "NVMe"} & set(short)):
        return []
    zero = config.get("zero_optimization")
    zero = zero if isinstance(zero, Mapping) else {}
    legacy = _legacy_offload(config)
    ways: list[Way] = []
    if "nvme" in (opt, param) and "NVMe" in short:
        moved = {name: {"device": "cpu"} for name, device in (("offload_optimizer", opt), ("offload_param", param))
                 if device == "nvme"}
        ways.append(_way(
            "offload_device", "Offload to CPU RAM instead of NVMe",
            "The offloaded " + " and ".join({"offload_optimizer": "optimizer states", "offload_param": "parameters"}[n]
                                            for n in moved)
            + " live in CPU RAM rather than on NVMe: faster, and no NVMe needed, if the RAM holds them.",
            config, model, hardware, shape, {"zero_optimization": moved}, version=version))
    if "cpu" in (opt, param) and "CPU RAM" in short and hardware.nvme_bytes_per_node:
        # ZeRO-Infinity: NVMe offload of either section needs ZeRO-3 (zero.nvme-below-3)
        to_nvme = {name: {"device": "nvme", "nvme_path": NVME_PATH_EXAMPLE}
                   for name, device in (("offload_optimizer", opt), ("offload_param", param)) if device == "cpu"}
        smaller_groups: dict[str, Any] = {}
        said = ""
        # the optimizer's pinned swap buffers hold buffer_count sub-groups: at the default sub_group_size (1e9)
        # they can need more CPU RAM than the states they replace
        sub_group = TrainingSettings.from_ds_config(config, version).sub_group_size
        if "offload_optimizer" in to_nvme and sub_group > NVME_SUB_GROUP_SIZE:
            smaller_groups = {"sub_group_size": NVME_SUB_GROUP_SIZE}
            said = (f" sub_group_size {NVME_SUB_GROUP_SIZE:,}: DeepSpeed's pinned swap buffers hold a few sub-groups "
                    f"of fp32 states, which at {sub_group:,} can take more CPU RAM than they save.")
        ways.append(_way(
            "offload_device", "Offload to NVMe instead of CPU RAM" + (" (ZeRO-3)" if stage < 3 else ""),
            "The offloaded " + " and ".join({"offload_optimizer": "optimizer states", "offload_param": "parameters"}[n]
                                            for n in to_nvme)
            + f" swap to the NVMe drives (ZeRO-Infinity; nvme_path {NVME_PATH_EXAMPLE} stands for your drive's "
            "mount: change it to yours): far less CPU RAM, slower than CPU RAM when the drives are slow."
            + (" ZeRO-3 partitions the parameters too." if stage < 3 else "") + said,
            config, model, hardware, shape,
            {"zero_optimization": {**legacy, **to_nvme, **smaller_groups, **({"stage": 3} if stage < 3 else {})}},
            version=version))
    off = {name: {"device": "none"} for name in ("offload_optimizer", "offload_param")
           if isinstance(zero.get(name), Mapping) or name in legacy}
    stages = [stage] + ([3] if stage < 3 else [])
    for target in stages:
        patch = {"zero_optimization": {**legacy, **off, **({"stage": target} if target != stage else {})}}
        ways.append(_way(
            "no_offload", "No offload" + (f" (ZeRO stage {target})" if target != stage else ""),
            "Optimizer states" + (" and parameters" if param != "none" else "") + " stay on the GPUs"
            + (f", partitioned with ZeRO-{target}" if target != stage else "") + ": no CPU RAM or NVMe for them, "
            "and no PCIe traffic; it needs the GPU memory.",
            config, model, hardware, shape, patch, version=version))
    return ways


#: a climb of the combined way's ladder: rung names, config patch, context patch, shape, and its estimate
_Climb = tuple[list[str], dict[str, Any], dict[str, Any], Shape, memory.MemoryEstimate]


def _compose(config: Mapping[str, Any], rungs: list[tuple[str, dict[str, Any], dict[str, Any]]], shape: Shape,
             version: str) -> tuple[list[str], dict[str, Any], dict[str, Any], Shape]:
    """The names, config patch, context patch and shape of the ladder rungs taken together, in their order; the
    patch removes the master-weights keys the validator refuses in the config they make together (``_applicable``)."""
    patch: dict[str, Any] = {}
    context: dict[str, Any] = {}
    for _, config_step, context_step in rungs:
        patch = apply_patch(patch, config_step)
        context.update(context_step)
    patch = _applicable(config, patch, version)[0]
    trial = replace(shape, recompute=context.get("recompute", shape.recompute),
                    micro_batch=patch.get("train_micro_batch_size_per_gpu",
                                          context.get("hf_micro_batch", shape.micro_batch)))
    # a ZeRO stage the next rung raises is no change of the result ("ZeRO-1, ZeRO-2, ZeRO-3" sets stage 3 only)
    names = [name for (name, step, _), after in zip(rungs, [*rungs[1:], None], strict=True)
             if not (after is not None and _zero_stage_rung(step) and _zero_stage_rung(after[1]))]
    return names, patch, context, trial


def _zero_stage_rung(step: Mapping[str, Any]) -> bool:
    """Whether a ladder rung's config patch only sets the ZeRO stage."""
    zero = step.get("zero_optimization")
    return set(step) == {"zero_optimization"} and isinstance(zero, Mapping) and set(zero) == {"stage"}


def _without_unneeded_rungs(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                            shape: Shape, rungs: list[tuple[str, dict[str, Any], dict[str, Any]]], fitted: _Climb,
                            version: str) -> _Climb:
    """The climbed rungs less those the fit does not need: the rung that made it fit often makes an earlier, costly
    one unnecessary (NVMe in place of CPU RAM with the micro batch as it was). The dearest rungs, last on the
    ladder, are tried first; the rung that fitted stays."""
    kept = list(rungs)
    for index in range(len(rungs) - 2, -1, -1):
        trial_rungs = kept[:index] + kept[index + 1:]
        names, patch, context, trial = _compose(config, trial_rungs, shape, version)
        est = _estimate(apply_patch(config, patch), model, hardware, trial, version=version)
        if est.fits:
            kept, fitted = trial_rungs, (names, patch, context, trial, est)
    return fitted


def _combined(config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware, shape: Shape,
              ways: list[Way], version: str, max_nodes: int = 1024) -> Way | None:
    """When no single change fits these GPUs: climb the ladder (smaller micro batch, recomputation, each ZeRO stage
    up to 3, optimizer offload, parameter offload, then, when host memory is short, the other offload device), stop
    at the first rung that fits and leave out the earlier rungs the fit does not need. When no rung fits these
    GPUs: the rungs up to the one that fits on the fewest GPUs (up to ``max_nodes`` nodes) with those GPUs, else
    every rung, which the detail says does not fit."""
    # a GPU count alone can fit by dividing the batch into micro batches of 1 over many more GPUs: the ladder may
    # still fit on these GPUs, or on far fewer more
    if any(w.fits and w.kind != "gpus" for w in ways):
        return None
    by_kind = {w.kind: w for w in ways}
    meaning = effective(config, version)
    stage = meaning.stage
    ladder: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    if "micro_batch" in by_kind:
        way = by_kind["micro_batch"]
        ladder.append((way.title, way.config_patch, way.context_patch))
    if "recompute" in by_kind:
        ladder.append(("recomputation", {}, {"recompute": "full"}))
    ladder += [(f"ZeRO-{s}", {"zero_optimization": {"stage": s}}, {}) for s in range(stage + 1, 4)]
    legacy = _legacy_offload(config)
    if meaning.offload_optimizer == "none":
        ladder.append(("optimizer offload", {"zero_optimization": {
            **legacy, "stage": max(stage, 3), "offload_optimizer": {"device": "cpu", "pin_memory": True}}}, {}))
    if meaning.offload_param == "none":
        ladder.append(("parameter offload", {"zero_optimization": {**legacy, "stage": 3, "offload_param": {
            "device": "cpu", "pin_memory": True}}}, {}))
    # short of host memory: the offload device the host has room on (NVMe for CPU RAM, or back), last
    ladder += [(way.title[0].lower() + way.title[1:], way.config_patch, way.context_patch)
               for way in ways if way.kind == "offload_device"]
    if len(ladder) < 2:
        return None
    said = ""
    how = ("No single change fits: these changes together, cheapest first, up to the first that fits, less those it "
           "made unneeded.")
    climbed: list[tuple[list[str], dict[str, Any], dict[str, Any], Shape]] = []
    for taken in range(1, len(ladder) + 1):
        names, patch, context, trial = _compose(config, ladder[:taken], shape, version)
        climbed.append((names, patch, context, trial))
        est = _estimate(apply_patch(config, patch), model, hardware, trial, version=version)
        if est.fits:
            names, patch, context, trial, est = _without_unneeded_rungs(
                config, model, hardware, shape, ladder[:taken], (names, patch, context, trial, est), version)
            break
    else:
        # no rung fits these GPUs: the rungs up to the one that needs the fewest GPUs (the cheaper rungs on a tie),
        # not all of them: more GPUs without the offloads run faster than more GPUs with them
        best: tuple[int, int, Hardware] | None = None
        for index, (_, rung_patch, _, rung_shape) in enumerate(climbed):
            found = _smallest(apply_patch(config, rung_patch), model, hardware, rung_shape, version, max_nodes)
            if found is not None and (best is None or found.total_gpus < best[0]):
                best = (found.total_gpus, index, found)
        how = "No change fits, alone or together: these are all of them together, which still do not fit."
        if best is not None:
            how = ("No change fits these GPUs, alone or together: these changes, cheapest first, up to the one that "
                   "fits on the fewest GPUs, and those GPUs.")
            bigger = best[2]
            names, patch, context, trial = climbed[best[1]]
            context = {**context, "nodes": bigger.nodes, "gpus_per_node": bigger.gpus_per_node}
            names = [*names, f"{_gpus(bigger.total_gpus)} ({bigger.nodes} × {bigger.gpus_per_node})"]
            batch_patch, batch_context, batch_said = _batch_on(
                apply_patch(config, patch), hardware.total_gpus, bigger.total_gpus, version, original=config,
                trainer_micro=trial.micro_batch)
            said = batch_said or _batch_follows(apply_patch(config, patch), hardware.total_gpus, bigger.total_gpus,
                                                version)
            patch = apply_patch(patch, batch_patch)
            context = {**context, **batch_context}
            trial = _trainer_shape(trial, batch_context)
            est = _estimate(apply_patch(config, patch), model, bigger, trial, version=version)
            pair = None  # the micro-batch rung's title follows the new count: the keys written, or the Trainer's
            if GA in batch_patch:
                pair = batch_patch[MB], batch_patch[GA]
            elif batch_context:
                written = (_trainer_held_batch(apply_patch(config, patch), version) or (0, {}))[1]
                pair = (batch_context.get("hf_micro_batch", written.get(MB)),
                        batch_context.get("hf_grad_accum", written.get(GA)))
            if pair is not None:
                retitled = _micro_batch_title(*pair)
                names = [retitled if name.startswith("Micro batch ") else name for name in names]
    zero_patch = patch.get("zero_optimization")
    new_stage = zero_patch.get("stage") if isinstance(zero_patch, dict) else None
    if new_stage not in (None, stage) and not any(f"ZeRO-{new_stage}" in name for name in names):
        # the offload rungs move to ZeRO-3 themselves: with the ZeRO rungs left out, the title must still say so
        names.insert(next((i for i, name in enumerate(names) if "offload" in name), len(names)), f"ZeRO-{new_stage}")
    if isinstance(zero_patch, dict) and {"offload_optimizer", "offload_param"} & set(zero_patch):
        # composing the rungs dropped the patch's deletions (None): the deprecated keys must still go
        zero_patch.update({key: None for key, value in legacy.items() if value is None})
    patch, removed_said = _applicable(config, patch, version)  # what the composed patch removes, in words
    return _from_estimate("combined", "Together: " + ", ".join(names),
                          how + (f" {_sentence(said)}" if said else "") + removed_said, est, patch, context)


def way_inputs(way: Way, config: Mapping[str, Any], hardware: Hardware,
               shape: Shape, version: str | None = None) -> tuple[dict[str, Any], Hardware, Shape]:
    """The (config, hardware, shape) the job has after ``way``; given ``version``, with the micro batch that
    release runs the changed config with (elastic training's, or the batch keys')."""
    patched = apply_patch(config, way.config_patch)
    ctx = way.context_patch
    if "nodes" in ctx:
        hardware = replace(hardware, nodes=int(ctx["nodes"]), gpus_per_node=int(ctx["gpus_per_node"]))
    micro = way.config_patch.get("train_micro_batch_size_per_gpu", ctx.get("hf_micro_batch", shape.micro_batch))
    after = replace(shape, micro_batch=micro, recompute=ctx.get("recompute", shape.recompute))
    if version is not None:
        after = _run_shape(patched, hardware.total_gpus, after, version) or after
    return patched, hardware, after


def speed_costs(ways: list[Way], config: Mapping[str, Any], model: ModelSpec | ModelCounts, hardware: Hardware,
                shape: Shape, gpu: str, trainer_accum: int = 1, *, version: str = NEWEST
                ) -> list[float | None]:
    """For each way, its predicted tokens per second per GPU (``core.perf.predict`` on the GPU model ``gpu``)
    relative to the current job's: 1.0 = as fast, 0.5 = each GPU-hour trains half the tokens (per GPU, so a way
    that adds GPUs is not mistaken for a speed-up). None where the planner cannot say (e.g. a custom GPU).
    "auto" batch keys are costed as the HF Trainer fills them: now with ``trainer_accum`` accumulation steps, after
    a way with the accumulation it sets. Each config is read as DeepSpeed ``version`` reads it."""
    from core import perf

    def tokens_per_second(cfg: Mapping[str, Any], hw: Hardware, sh: Shape, accum: int) -> float | None:
        try:
            hf_batch = "auto" in (cfg.get(key) for key in BATCH_KEYS)  # written keys are what DeepSpeed runs
            filled = trainer_batch(cfg, sh.micro_batch, accum, hw.total_gpus, version) if hf_batch else cfg
            cluster = perf.Cluster(gpu=gpu, gpus_per_node=hw.gpus_per_node, nodes=hw.nodes)
            return perf.predict(filled, model, cluster, sh, version=version).tokens_per_second / hw.total_gpus
        except (ValueError, AutoFillError):
            return None

    now = tokens_per_second(config, hardware, shape, trainer_accum)
    out: list[float | None] = []
    for way in ways:
        accum = int(way.context_patch.get("hf_grad_accum", trainer_accum))
        after = tokens_per_second(*way_inputs(way, config, hardware, shape, version), accum)
        out.append(None if now is None or after is None or now <= 0 else after / now)
    return out
