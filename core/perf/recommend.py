"""Rank every ZeRO stage / offload / ZeRO++ / micro-batch / recomputation choice by predicted speed, and sweep
the GPU count (time and cost against cluster size)."""

from __future__ import annotations

import copy
import json
import numbers
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from core.batch import BATCH_KEYS, reads_sequence_parallel, runs_elastic
from core.effective import effective, legacy_offload_keys, section_enabled
from core.findings import Finding, delete_path, get_path, join_path, set_path
from core.fit import apply_patch
from core.memory.estimate import COUNTS_ONLY_NOTE, GIB, Hardware, ModelCounts, Shape, evaluate_arrays
from core.memory.result import MemoryEstimate, gib_capacity, gib_used
from core.memory.settings import TrainingSettings
from core.memory.solve import MAX_MICRO_BATCH_SEARCH, min_gpus, zero_options
from core.models.arch import ModelSpec
from core.perf.errors import PlanInputError
from core.perf.hardware import Cluster
from core.perf.predict import predict
from core.perf.settings import PerfSettings, read_settings
from core.precision import with_precision_mode
from core.rules.optim import untested_with_zero
from core.rules.precision import MASTER_WEIGHTS_KEYS, without_refused_master_weights
from core.schema.base import DEFAULT_VERSION, version_tuple
from core.schema.precision import FP16_LOSS_SCALE_KEYS
from core.schema.root import DeepSpeedConfig
from core.schema.walk import field_exists, section_fields
from core.schema.zero import NVME_PATH_EXAMPLE, NVME_SUB_GROUP_SIZE
from core.validate import validate

#: Fraction of GPU memory a recommended config may plan to use: the rest absorbs what the memory model cannot
#: see (allocator spikes, NCCL buffers growing with the cluster, library versions).
DEFAULT_MEMORY_HEADROOM = 0.05


def usable_gpu_bytes(hardware: Hardware, headroom: float = DEFAULT_MEMORY_HEADROOM) -> float:
    """The GPU memory a planned config may use: the GPU's, less ``headroom`` of it."""
    return hardware.gpu_memory_bytes * (1 - headroom)


def margin_caveat(estimate: MemoryEstimate, planner: str) -> str | None:
    """For a config that fits the whole GPU but peaks above the planner's margin (``usable_gpu_bytes``), the
    sentence saying so beside its step time (``dsconfig predict``, the ZeRO page); else None. ``planner`` names
    the planner as the reader knows it ("dsconfig plan", "the Plan page")."""
    usable = usable_gpu_bytes(estimate.hardware)
    if not estimate.fits or estimate.gpu_bytes <= usable:
        return None
    return (f"fits, with a peak of {gib_used(estimate.gpu_bytes, usable)} GiB of the GPU's "
            f"{gib_capacity(estimate.hardware.gpu_memory_bytes)} GiB, but above {1 - DEFAULT_MEMORY_HEADROOM:.0%} of "
            f"it ({gib_capacity(usable)} GiB), the margin {planner} keeps for what the memory model does not count "
            f"(allocator spikes, NCCL buffers): {planner} would mark it as not fitting")


def fits_rule(gpu_memory_gib: float, headroom: float = DEFAULT_MEMORY_HEADROOM) -> str:
    """How the planner decides "fits", in words: what ``plan`` prints beside every fits verdict and its sweep, and
    the limit the commands that judge against the whole GPU (fit, estimate, predict) differ by."""
    capacity = gib_capacity(gpu_memory_gib * GIB)
    if headroom == 0:
        return (f"fits = peak GPU memory within the GPU's {capacity} GiB, and the offloaded states within the node's "
                "CPU RAM and NVMe")
    usable = gib_capacity(gpu_memory_gib * GIB * (1 - headroom))
    return (f"fits = peak GPU memory at most {1 - headroom:.0%} of the GPU's {capacity} GiB "
            f"({usable} GiB: a {headroom:.0%} margin for what the memory model does not "
            "count, such as allocator spikes and NCCL buffers), and the offloaded states within the node's CPU RAM "
            f"and NVMe; dsconfig fit, estimate and predict judge a config against the whole {capacity} GiB")

COLUMNS = (
    "stage", "offload_optimizer", "offload_param", "zeropp", "micro_batch", "gradient_accumulation_steps",
    "recompute", "fits", "gpu_peak_gib", "step_seconds", "tokens_per_second", "tflops_per_gpu", "mfu",
    "bottleneck", "config",
)


def hardware_for(cluster: Cluster) -> Hardware:
    """The memory model's view of the cluster."""
    from core.hardware import GPU_BY_NAME

    nvme = int(cluster.nvme_gib * GIB) if cluster.nvme_gib is not None else None
    return Hardware(cluster.gpus_per_node, cluster.nodes, GPU_BY_NAME[cluster.gpu].memory_bytes,
                    int(cluster.node_cpu_ram_gib * GIB), nvme)


#: The optimizer section of a candidate built for a config without one.
DEFAULT_OPTIMIZER: Mapping[str, Any] = {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.0}}


#: The ZeRO switches every candidate at stage >= 1 turns on (``build_config``) and is costed with: adopting a row over
#: a config that turned them off turns them on, and the notes say so.
_CANDIDATE_SWITCHES = ("overlap_comm", "contiguous_gradients")


def build_config(
    *,
    stage: int,
    offload_optimizer: str,
    offload_param: str,
    zeropp: bool,
    micro_batch: int,
    grad_accum: int,
    world_size: int,
    precision: str,
    gpus_per_node: int,
    nvme_path: str = NVME_PATH_EXAMPLE,
    optimizer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete ds_config for one candidate (``optimizer``'s section, else AdamW; gradient clipping 1.0,
    overlap_comm on)."""
    zero: dict[str, Any] = {"stage": stage}
    if stage >= 1:
        zero.update(dict.fromkeys(_CANDIDATE_SWITCHES, True))
    for key, device in (("offload_optimizer", offload_optimizer), ("offload_param", offload_param)):
        if device == "cpu":
            zero[key] = {"device": "cpu", "pin_memory": True}
        elif device == "nvme":
            zero[key] = {"device": "nvme", "nvme_path": nvme_path, "pin_memory": True}
    if offload_optimizer == "nvme":
        zero["sub_group_size"] = NVME_SUB_GROUP_SIZE
    if zeropp:
        zero.update(zero_quantized_weights=True, zero_quantized_gradients=True,
                    zero_hpz_partition_size=gpus_per_node)
    cfg: dict[str, Any] = {
        "train_batch_size": micro_batch * grad_accum * world_size,
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": grad_accum,
        "optimizer": dict(optimizer) if optimizer is not None else dict(DEFAULT_OPTIMIZER),
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
        "steps_per_print": 100,
    }
    if precision == "bf16":
        cfg["bf16"] = {"enabled": True}
    elif precision == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    return cfg


#: The ZeRO keys a candidate decides: its own value, or removed when the candidate leaves them out (no offload,
#: no ZeRO++). The rest of the user's ZeRO section (bucket sizes, stage-3 thresholds) is kept.
_CANDIDATE_ZERO_KEYS = ("offload_optimizer", "offload_param", "zero_quantized_weights", "zero_quantized_gradients",
                        "zero_hpz_partition_size")


#: The top-level keys ``adopt_candidate`` removes when the release acts on them: the planner ranks data parallelism
#: over every GPU with the candidate's batch keys, which sequence parallelism (fewer data-parallel ranks) and elastic
#: training (its own batch search) would override, and DeepSpeed would then refuse the batch keys or run another batch.
#: A release that refuses one of them on sight (0.19.8: ``elasticity``, even disabled) gets it removed too.
_OVERRIDING_KEYS = ("sequence_parallel_size", "elasticity")

#: Apex AMP, a precision of its own: the row decides the precision, and DeepSpeed stops with AMP beside ZeRO
#: ("Amp and ZeRO are not currently compatible") or beside fp16/bf16, so adoption removes it when it is on (and
#: where the release refuses it on sight, 0.19.8, even off).
_AMP = "amp"

#: The optimizer a candidate gets for the HF Trainer: it fills every "auto" from its TrainingArguments (as the
#: hf-auto presets write it), where a written lr other than --learning_rate makes it refuse the config.
HF_AUTO_PARAMS: Mapping[str, Any] = {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}


def _overrides_batch(config: Mapping[str, Any], key: str, version: str) -> bool:
    """Whether DeepSpeed ``version`` acts on the user's ``key`` (one of ``_OVERRIDING_KEYS``) so that it changes
    what the candidate's batch keys mean: elastic training on as that release reads it, a sequence parallel size
    other than 1 in a release that reads the key (0.16.x ignores it)."""
    if key == "sequence_parallel_size":
        return reads_sequence_parallel(version) and config[key] != 1
    return runs_elastic(config, version)


def _refused_on_sight(key: str, version: str) -> bool:
    """Whether DeepSpeed ``version`` refuses any config containing ``key`` (one of ``_OVERRIDING_KEYS``, or
    ``amp``), switched on or not: the schema says it was removed by then and the release's profile does not read it
    (``elasticity`` and ``amp`` from 0.19.8). The profile's own list of keys refused on sight is in
    ``core.versions``, which perf does not import; ``tests/test_app_plan_hunt.py`` holds the two to agree on these
    keys in every release."""
    field = section_fields(DeepSpeedConfig).get(key)
    return (field is not None and field.meta.removed is not None
            and version_tuple(version) >= version_tuple(field.meta.removed) and not field_exists(field, "", version))


def candidate_optimizer(candidate: Mapping[str, Any], target: str = "deepspeed") -> Any:
    """The optimizer section adoption writes into a config without one: the candidate's, its parameters "auto" for
    the HF Trainer (``target`` "hf"; the type, which the planner costs, stays)."""
    section = candidate.get("optimizer")
    if target == "hf" and isinstance(section, Mapping):
        return {**section, "params": dict(HF_AUTO_PARAMS)}
    return section


def adopt_candidate(config: Mapping[str, Any], candidate: Mapping[str, Any], *, target: str = "deepspeed",
                    version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """``config`` with what a planner candidate (``build_config``) decides: the batch keys, the precision and the
    ZeRO stage, offload and ZeRO++, and its optimizer when ``config`` has none (the planner costs the optimizer;
    ``candidate_optimizer``: "auto" parameters for ``target`` "hf"); the user's optimizer, scheduler, monitoring,
    unknown keys and every other ZeRO key are kept. Legacy offload keys (``cpu_offload``) go, since they would
    override the candidate's offload, and so do sequence parallelism and elastic training where DeepSpeed
    ``version`` acts on them, since they would override its batch keys, or refuses them on sight
    (``_refused_on_sight``); Apex AMP when on or refused on sight, since the candidate decides the precision;
    fp16's loss-scaling keys when the candidate does not train in fp16; and the 16-bit master-weights keys the
    validator's rules refuse with the candidate's stage and offload (``refused_master_weights``).
    ``adoption_removals`` says what went and why. Adopting into ``config`` again what it returned gives it back."""
    patch: dict[str, Any] = {key: candidate[key] for key in BATCH_KEYS}
    if config.get("optimizer") is None and "optimizer" in candidate:
        patch["optimizer"] = candidate_optimizer(candidate, target)
    as_dict = dict(config)
    for key in _OVERRIDING_KEYS:
        if key in config and (_overrides_batch(as_dict, key, version) or _refused_on_sight(key, version)):
            patch[key] = None
    if _AMP in config and (section_enabled(as_dict, _AMP, version) or _refused_on_sight(_AMP, version)):
        patch[_AMP] = None
    cand_zero = candidate["zero_optimization"]
    user_zero = config.get("zero_optimization")
    zero_patch: dict[str, Any] = {key: None for key in (*_CANDIDATE_ZERO_KEYS, *legacy_offload_keys())}
    zero_patch.update(cand_zero)
    if isinstance(user_zero, Mapping):
        zero_patch.update(_kept_zero_tuning(user_zero, cand_zero, version))
    else:
        zero_patch = dict(cand_zero)  # nothing readable to keep
    patch["zero_optimization"] = zero_patch
    mode = effective(candidate, version).precision_mode
    adopted = with_precision_mode(apply_patch(config, patch), mode, version)
    fp16 = adopted.get("fp16")
    if mode != "fp16" and isinstance(fp16, Mapping):  # fp16 is off now (only ``mode`` is on)
        adopted["fp16"] = {key: value for key, value in fp16.items() if key not in FP16_LOSS_SCALE_KEYS}
    adopted = _allowing_untested(without_refused_master_weights(adopted, version, target)[0], version)
    return _with_needed_switches(config, _without_refused_user_keys(config, adopted, version, target)[0], version,
                                 target)


def _allowing_untested(config: dict[str, Any], version: str) -> dict[str, Any]:
    """``config`` with ``zero_allow_untested_optimizer`` set when its optimizer under ZeRO needs it
    (``untested_with_zero``), in place."""
    if untested_with_zero(config, version) is not None:
        config[_UNTESTED_KEY] = True
    return config


def _with_needed_switches(config: Mapping[str, Any], adopted: dict[str, Any], version: str,
                          target: str) -> dict[str, Any]:
    """``adopted`` with the switches its candidate needs that neither it nor ``config`` writes (Muon at ZeRO-3:
    ``reduce_scatter`` false, which DeepSpeed defaults to true and then refuses): ``needed_switches``."""
    switches = needed_switches(config, adopted, version, target)
    if not switches:
        return adopted
    adopted = copy.deepcopy(adopted)
    for path, value, _finding in switches:
        set_path(adopted, path, value)
    return adopted


def needed_switches(config: Mapping[str, Any], adopted: Mapping[str, Any], version: str = DEFAULT_VERSION,
                    target: str = "deepspeed") -> tuple[tuple[str, bool, Finding], ...]:
    """(path, value, finding) for each boolean that ``adopted`` (a candidate loaded into ``config``) leaves at a
    default DeepSpeed ``version`` refuses with the candidate's settings: an error ``config`` does not have, whose
    fix sets that key, absent from ``adopted``, to a boolean. What ``adopt_candidate`` writes and the app says."""
    return _switches(_key_of(config), _key_of(adopted), version, target)


@lru_cache(maxsize=512)
def _switches(config_key: str, adopted_key: str, version: str, target: str) -> tuple[tuple[str, bool, Finding], ...]:
    config, adopted = json.loads(config_key), json.loads(adopted_key)
    own = {(f.code, f.path) for f in validate(config, version=version, target=target).errors}
    found: dict[str, tuple[str, bool, Finding]] = {}
    for _ in range(_REMOVAL_ROUNDS):
        new = {}
        for f in validate(adopted, version=version, target=target).errors:
            ops = list(f.fix.ops) if f.fix is not None else []
            if ((f.code, f.path) not in own and len(ops) == 1 and ops[0].op == "set" and ops[0].path == f.path
                    and isinstance(ops[0].value, bool) and f.path not in found
                    and get_path(adopted, f.path, _NOT_THERE) is _NOT_THERE):
                new[f.path] = (f.path, ops[0].value, f)
        if not new:
            break
        for path, value, _finding in new.values():
            set_path(adopted, path, value)
        found.update(new)
    return tuple(found.values())


def _without_refused_user_keys(config: Mapping[str, Any], adopted: dict[str, Any], version: str,
                               target: str) -> tuple[dict[str, Any], dict[str, Finding]]:
    """``adopted`` without the user's keys that the row's stage, offload or precision make DeepSpeed ``version``
    refuse (a grad_accum_dtype stage 0 refuses, an offload ratio below stage 3, prescale_gradients with ZeRO-2's
    reduce-scatter, ZenFlow without offload), and the validator's finding for each: an error ``config`` does not
    have, at a key ``adopted`` keeps as the user wrote it, whose fix is to remove that key. Asked again after each
    removal (``_refused_keys``)."""
    refused = _refused_keys(_key_of(config), _key_of(adopted), version, target)
    if not refused:
        return adopted, {}
    adopted = copy.deepcopy(adopted)
    for key, _ in refused:
        delete_path(adopted, key, prune=True)
    return adopted, dict(refused)


def _key_of(config: Mapping[str, Any]) -> str:
    """What the refusals are judged on, as a cache key: the keys the schema knows (``_schema_part``) without the
    batch keys, which a row writes for its own GPU count and no refusal here depends on; so one ranking, its GPU-count
    sweep and every micro batch ask once per ZeRO option."""
    part = _schema_part(config, DeepSpeedConfig)
    return json.dumps({key: value for key, value in part.items() if key not in BATCH_KEYS}, sort_keys=True,
                      default=str)


@lru_cache(maxsize=512)
def _refused_keys(config_key: str, adopted_key: str, version: str, target: str) -> tuple[tuple[str, Finding], ...]:
    """(key, finding) for each key ``_without_refused_user_keys`` removes, in order (pure: JSON in, findings out)."""
    config, adopted = json.loads(config_key), json.loads(adopted_key)
    own = {(f.code, f.path) for f in validate(config, version=version, target=target).findings
           if f.severity == "error"}
    removed: dict[str, Finding] = {}
    for _ in range(_REMOVAL_ROUNDS):
        refused = {}
        for f in validate(adopted, version=version, target=target).findings:
            key = _ROW_REMOVES.get(f.code) or (f.path if f.fix is not None and [
                (op.op, op.path) for op in f.fix.ops] == [("delete", f.path)] else None)
            if (f.severity == "error" and key is not None and (f.code, f.path) not in own and key not in BATCH_KEYS
                    and key not in removed and get_path(config, key, _ABSENT) == get_path(adopted, key, _NOT_THERE)):
                refused[key] = f
        if not refused:
            break
        for key, finding in refused.items():
            delete_path(adopted, key, prune=True)
            removed[key] = finding
    return tuple(removed.items())


def _schema_part(node: Mapping[str, Any], model: type) -> dict[str, Any]:
    """``node`` with only the keys the schema knows, at every level of its sections: what the rules that can refuse
    a row read (a team's own keys only meet keys.unknown), so a config at the size limit is judged in milliseconds
    per row."""
    fields = section_fields(model)
    out: dict[str, Any] = {}
    for key, value in node.items():
        field = fields.get(key)
        if field is not None:
            out[key] = _schema_part(value, field.model) if field.model is not None and isinstance(
                value, Mapping) else value
    return out


#: How often ``_without_refused_user_keys`` asks again (a removal can make another key refused; none has yet).
_REMOVAL_ROUNDS = 4
#: Findings whose fix keeps the user's key by changing what the row decides (ZenFlow's: offload the optimizer):
#: the row's choice stands, and the key goes.
_ROW_REMOVES = {"engine.zenflow-without-offload": "zero_optimization.zenflow"}
_ABSENT, _NOT_THERE = object(), object()


#: The offload sections a candidate decides the device of.
_OFFLOAD_KEYS = ("offload_optimizer", "offload_param")


def _user_nvme_path(user_zero: Mapping[str, Any], key: str) -> Any:
    """The ``nvme_path`` the user wrote for NVMe offload: of their ``key`` section when it swaps to NVMe, else of
    their other offload section that does; None when they wrote none."""
    for name in (key, *(k for k in _OFFLOAD_KEYS if k != key)):
        section = user_zero.get(name)
        if isinstance(section, Mapping) and section.get("device") == "nvme" and section.get("nvme_path"):
            return section["nvme_path"]
    return None


def _kept_zero_tuning(user_zero: Mapping[str, Any], cand_zero: Mapping[str, Any], version: str) -> dict[str, Any]:
    """What of the user's ZeRO section the candidate's ZeRO keys (``cand_zero``) give way to: an offload section
    with the candidate's device keeps the user's tuning keys (pin_memory, buffer_count, fast_init, nvme_path, ...),
    one with another device loses them, a candidate's NVMe section takes the user's nvme_path from their other NVMe
    section when this one has none, and the user's sub_group_size stays unless it is larger than the candidate's
    (the NVMe optimizer swap pins buffer_count sub-groups of fp32 states in CPU RAM: the candidate's smaller one is
    what its memory rests on)."""
    kept: dict[str, Any] = {}
    for key in _OFFLOAD_KEYS:
        cand, user = cand_zero.get(key), user_zero.get(key)
        if not isinstance(cand, Mapping):
            continue
        if isinstance(user, Mapping) and user.get("device") == cand.get("device"):
            kept[key] = {**cand, **user}
            continue
        # another device: the user's keys for theirs go (``apply_patch`` merges sections, None removes)
        kept[key] = {**{name: None for name in (user if isinstance(user, Mapping) else ())}, **cand}
        if cand.get("device") == "nvme" and (path := _user_nvme_path(user_zero, key)) is not None:
            kept[key]["nvme_path"] = path
    if "sub_group_size" in cand_zero and "sub_group_size" in user_zero:
        user_groups = TrainingSettings.from_ds_config({"zero_optimization": dict(user_zero)}, version).sub_group_size
        if user_groups <= cand_zero["sub_group_size"]:
            kept["sub_group_size"] = user_zero["sub_group_size"]
    return kept


def adoption_notes(config: Mapping[str, Any], adopted: Mapping[str, Any], version: str = DEFAULT_VERSION) -> list[str]:
    """What ``adopted`` (``adopt_candidate(config, ..., version=version)``) added to or changed in ``config``
    beyond the row's batch keys, precision and ZeRO choice, in words: the app says each (``adoption_removals``
    says what went)."""
    notes: list[str] = []
    for path, value, finding in _switched_by_adoption(config, adopted, version):
        if path == _UNTESTED_KEY:
            continue  # said below, in its own words
        notes.append(f"{path} set to {json.dumps(value)} (DeepSpeed {version} refuses the row with its default: "
                     f"{finding.code}: {_first_sentence(finding.message)})")
    if adopted.get(_UNTESTED_KEY) is True and config.get(_UNTESTED_KEY) is not True:
        section = adopted.get("optimizer")
        name = section.get("type") if isinstance(section, Mapping) else None
        notes.append(f"zero_allow_untested_optimizer set to true (ZeRO was not tested with {name}: without it "
                     "deepspeed.initialize refuses the config)")
    before = config.get("zero_optimization")
    before = before if isinstance(before, Mapping) else {}
    after = adopted.get("zero_optimization")
    after = after if isinstance(after, Mapping) else {}
    placeholder = [key for key in _OFFLOAD_KEYS if isinstance(after.get(key), Mapping)
                   and after[key].get("device") == "nvme" and after[key].get("nvme_path") == NVME_PATH_EXAMPLE]
    kept = sorted({str(after[key]["nvme_path"]) for key in _OFFLOAD_KEYS if isinstance(after.get(key), Mapping)
                   and after[key].get("device") == "nvme" and key not in placeholder})
    if kept:
        notes.append(f"your nvme_path {' and '.join(kept)} kept")
    if placeholder:
        notes.append(f"nvme_path {NVME_PATH_EXAMPLE} written in {' and '.join(placeholder)}: a placeholder, set it to "
                     "your NVMe drive's mount before training")
    switched = [f"{key} {json.dumps(before[key])} → {json.dumps(after[key])}" for key in _CANDIDATE_SWITCHES
                if key in before and key in after and before[key] != after[key]]
    if switched:
        notes.append(f"{' and '.join(switched)}: the row is costed with the gradient reduction overlapped with the "
                     "backward pass into contiguous buckets; write your value back to keep it (the row's speed and "
                     "memory then no longer apply as shown)")
    groups_before, groups_after = before.get("sub_group_size"), after.get("sub_group_size")
    if groups_after is not None and groups_after != groups_before:
        was = ("DeepSpeed's default" if groups_before is None else f"your {groups_before:,}"
               if isinstance(groups_before, numbers.Real) and not isinstance(groups_before, bool)
               else f"your {groups_before!r}")
        notes.append(f"sub_group_size set to {groups_after:,} (was {was}): the NVMe optimizer swap pins a few "
                     "sub-groups of fp32 states in CPU RAM, and the row's memory rests on the smaller one")
    return notes


#: What an optimizer ZeRO was not tested with needs (``untested_with_zero``).
_UNTESTED_KEY = "zero_allow_untested_optimizer"


def _switched_by_adoption(config: Mapping[str, Any], adopted: Mapping[str, Any],
                          version: str) -> tuple[tuple[str, bool, Finding], ...]:
    """The switches ``needed_switches`` wrote into ``adopted``: asked again with the ones ``config`` lacks taken
    out."""
    candidates = [path for path in _bool_leaves(adopted) if get_path(config, path, _ABSENT) is _ABSENT]
    if not candidates:
        return ()
    without = copy.deepcopy(dict(adopted))
    for path in candidates:
        delete_path(without, path)
    return tuple(switch for switch in needed_switches(config, without, version) if switch[0] in candidates
                 and get_path(adopted, switch[0], _NOT_THERE) == switch[1])


def _bool_leaves(node: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted paths of the booleans in ``node``'s sections."""
    paths = []
    for key, value in node.items():
        path = join_path(prefix, key)
        if isinstance(value, bool):
            paths.append(path)
        elif isinstance(value, Mapping):
            paths += _bool_leaves(value, path)
    return paths


def kept_by_adoption(config: Mapping[str, Any], adopted: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """The top-level keys of ``config`` that ``adopted`` (``adopt_candidate(config, candidate)``) has as they were
    and the candidate has no say in (its clipping is not adopted, nor its optimizer over the user's, nor the
    precision sections it does not enable), in the config's order: what the app says it kept."""
    mode = effective(candidate).precision_mode
    decided = {*BATCH_KEYS, "zero_optimization", *(("bf16", "bfloat16") if mode == "bf16" else (mode,))}
    return [key for key in config if key not in decided and adopted.get(key) == config[key]]


def removed_by_adoption(config: Mapping[str, Any], adopted: Mapping[str, Any]) -> list[str]:
    """The top-level keys of ``config`` that ``adopted`` no longer has (sequence parallelism, elastic training),
    in the config's order."""
    return [key for key in config if key not in adopted]


def _master_weights_reasons(config: Mapping[str, Any], adopted: Mapping[str, Any], version: str,
                            target: str) -> dict[str, str]:
    """The master-weights keys of ``config`` that ``adopted`` no longer has, each with the validator's code that
    refused it: adoption asked again on ``adopted`` with them put back."""
    restored = dict(adopted)
    gone = []
    for section, keys in MASTER_WEIGHTS_KEYS.items():
        before, after = config.get(section), adopted.get(section)
        if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
            continue
        back = {key: before[key] for key in keys if key in before and key not in after}
        if back:
            restored[section] = {**after, **back}
            gone += [f"{section}.{key}" for key in back]
    if not gone:
        return {}
    codes = without_refused_master_weights(restored, version, target)[1]
    return {path: codes[path] for path in gone if path in codes}


def adoption_removals(config: Mapping[str, Any], adopted: Mapping[str, Any], version: str = DEFAULT_VERSION,
                      target: str = "deepspeed") -> list[tuple[tuple[str, ...], str]]:
    """What ``adopted`` (``adopt_candidate(config, ..., target=target, version=version)``) took out of ``config``,
    grouped by why: (the dotted paths, in the config's order; the reason in words). What the app says it removed."""
    overriding: list[str] = []
    refused: list[str] = []
    amp: list[str] = []
    row_refuses = _refused_user_key_reasons(config, adopted, version, target)
    for key in removed_by_adoption(config, adopted):
        if any(_under(path, key) for path in row_refuses):
            continue  # said below, with the validator's reason (a section it left empty goes with it)
        if key == _AMP:
            amp.append(key)
        else:
            (refused if _refused_on_sight(key, version) else overriding).append(key)
    before, after = config.get("fp16"), adopted.get("fp16")
    scaling = [f"fp16.{key}" for key in (before if isinstance(before, Mapping) else ())
               if key in FP16_LOSS_SCALE_KEYS and not (isinstance(after, Mapping) and key in after)]
    meaning = effective(adopted, version)
    mode, stage = meaning.precision_mode, meaning.stage
    groups: list[tuple[tuple[str, ...], str]] = []
    if overriding:
        groups.append((tuple(overriding), "the planner ranks data parallelism over every GPU with these batch keys, "
                                          "which they would override"))
    if refused:
        groups.append((tuple(refused), f"DeepSpeed {version} refuses any config containing "
                                       f"{'it' if len(refused) == 1 else 'them'}; the row writes the batch keys "
                                       "directly instead"))
    if amp:
        groups.append((tuple(amp), f"DeepSpeed {version} refuses any config containing it; the row trains in {mode}"
                                   if _refused_on_sight(_AMP, version) else
                                   f"Apex AMP, which the row's {mode} replaces: DeepSpeed stops with AMP beside ZeRO, "
                                   "fp16 or bf16"))
    if scaling:
        groups.append((tuple(scaling), f"fp16 loss scaling, which does nothing now that the row trains in {mode} "
                                       "with fp16 off"))
    reasons = {
        "precision.master-weights-offload": f"16-bit master weights, which DeepSpeed {version} runs at ZeRO-{stage} "
                                            "only with the optimizer offloaded to the CPU as DeepSpeedCPUAdam, which "
                                            "this row does not do",
        "precision.master-weights-stage": f"16-bit master weights or optimizer states, which DeepSpeed {version} does "
                                          f"not support at the row's ZeRO-{stage}",
        "precision.bf16-optimizer-states": f"bf16 optimizer states, which DeepSpeed {version} refuses at ZeRO-{stage} "
                                           "without bf16_master_weights_and_grads",
    }
    master = _master_weights_reasons(config, adopted, version, target)
    for code, words in reasons.items():
        paths = tuple(path for path, why in master.items() if why == code)
        if paths:
            groups.append((paths, words))
    for code in dict.fromkeys(finding.code for finding in row_refuses.values()):
        paths = tuple(path for path, finding in row_refuses.items() if finding.code == code)
        groups.append((paths, f"DeepSpeed {version} refuses {'it' if len(paths) == 1 else 'them'} with the row's "
                              f"settings ({code}: {_first_sentence(row_refuses[paths[0]].message)})"))
    return groups


def _missing_paths(config: Any, adopted: Any, prefix: str = "") -> list[str]:
    """The dotted paths of ``config``'s keys that ``adopted`` has not (the highest missing one of a subtree)."""
    if not (isinstance(config, Mapping) and isinstance(adopted, Mapping)):
        return []
    paths = []
    for key, value in config.items():
        path = join_path(prefix, key)
        paths += [path] if key not in adopted else _missing_paths(value, adopted[key], path)
    return paths


#: What adoption takes out for the row's own choices, said by the other groups of ``adoption_removals``: the
#: candidate's ZeRO keys (its offload sections among them), the keys that override its batch, Apex AMP, fp16's
#: loss scaling and the master-weights keys.
_DECIDED_PATHS = (*(f"zero_optimization.{key}" for key in _CANDIDATE_ZERO_KEYS), *_OVERRIDING_KEYS, _AMP,
                  *(f"fp16.{key}" for key in FP16_LOSS_SCALE_KEYS),
                  *(f"{section}.{key}" for section, keys in MASTER_WEIGHTS_KEYS.items() for key in keys))


def _first_sentence(text: str) -> str:
    return text.split("; ", 1)[0].split(". ", 1)[0].rstrip(".")


def _refused_user_key_reasons(config: Mapping[str, Any], adopted: Mapping[str, Any], version: str,
                              target: str) -> dict[str, Finding]:
    """The keys of ``config`` that adoption removed because the row's settings make DeepSpeed refuse them
    (``_without_refused_user_keys``), each with the finding: asked again on ``adopted`` with the user's missing
    keys put back."""
    missing = [path for path in _missing_paths(config, adopted)
               if path not in _DECIDED_PATHS]
    if not missing:
        return {}
    restored = copy.deepcopy(dict(adopted))
    for path in missing:
        set_path(restored, path, copy.deepcopy(get_path(config, path)))
    removed = _without_refused_user_keys(config, restored, version, target)[1]
    return {path: finding for path, finding in removed.items() if any(_under(path, gone) for gone in missing)}


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def batch_split_problem(global_batch: int, gpus: int, at_most: int | None = None) -> str | None:
    """Why ``global_batch`` sequences cannot be split over ``gpus`` GPUs (each takes a whole number of them), with
    the nearest multiples up to ``at_most`` to pick instead; None when they can. What ``recommend`` refuses."""
    if global_batch % gpus == 0:
        return None
    lower = global_batch // gpus * gpus
    near = [str(n) for n in (lower, lower + gpus) if n and (at_most is None or n <= at_most)]
    examples = f" (e.g. {' or '.join(near)})" if near else ""
    return f"cannot be split over {gpus} GPUs: pick a multiple of {gpus}{examples} or another number of GPUs"


#: The fix for tokens or a price whose training time or cost is beyond floating-point range.
_OVERFLOW_FIX = ("give the tokens to train (e.g. 2e9) and a price per GPU-hour (e.g. 2.5), and the cluster's real "
                 "rates (network, NVMe, CPU optimizer) if its predicted speed is near zero")


Option = tuple[int, str, str, bool]
"""A ZeRO option of the ranking: stage, optimizer offload, parameter offload, ZeRO++."""


def _options(cluster: Cluster, zeropp: bool, nvme: bool) -> list[Option]:
    out = []
    for stage, opt, param in zero_options():
        if not nvme and "nvme" in (opt, param):
            continue
        out.append((stage, opt, param, False))
        if zeropp and stage == 3 and param == "none" and cluster.nodes > 1:
            out.append((stage, opt, param, True))
    return out


def _probe(option: Option, cluster: Cluster, per_gpu: int, precision: str, optimizer: Mapping[str, Any] | None,
           base: Mapping[str, Any] | None, target: str, version: str) -> dict[str, Any]:
    """The candidate config of ``option`` at micro batch 1, loaded into ``base`` when given."""
    stage, opt, param, pp = option
    probe = build_config(stage=stage, offload_optimizer=opt, offload_param=param, zeropp=pp, micro_batch=1,
                         grad_accum=per_gpu, world_size=cluster.total_gpus, precision=precision,
                         gpus_per_node=cluster.gpus_per_node, optimizer=optimizer)
    if base is not None:
        return adopt_candidate(base, probe, target=target, version=version)
    if optimizer is None:
        return probe  # the planner's own AdamW: tested with ZeRO, no switch to set
    # an optimizer section of the caller's: what adopt_candidate does for the user's
    return _with_needed_switches({}, _allowing_untested(probe, version), version, target)


def _probes(cluster: Cluster, global_batch: int, precision: str, zeropp: bool, nvme: bool,
            optimizer: Mapping[str, Any] | None, base: Mapping[str, Any] | None, target: str,
            version: str) -> list[tuple[Option, dict[str, Any]]]:
    """Every option ``recommend`` ranks, with its candidate config at micro batch 1 (``_probe``)."""
    per_gpu = global_batch // cluster.total_gpus
    return [(option, _probe(option, cluster, per_gpu, precision, optimizer, base, target, version))
            for option in _options(cluster, zeropp, nvme)]


def _with_micro_batch(probe: Mapping[str, Any], global_batch: int, micro_batch: int, per_gpu: int) -> dict[str, Any]:
    """A probe's candidate at ``micro_batch``: its batch keys, the rest as it is."""
    return {**probe, "train_batch_size": global_batch, "train_micro_batch_size_per_gpu": micro_batch,
            "gradient_accumulation_steps": per_gpu // micro_batch}


def base_reading(cluster: Cluster, *, global_batch: int, precision: str = "bf16", zeropp: bool = True,
                 nvme: bool = True, optimizer: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None,
                 target: str = "deepspeed", version: str = DEFAULT_VERSION) -> tuple[PerfSettings, ...]:
    """What ``recommend`` with these inputs reads of ``base``: per option it ranks, the candidate loaded into
    ``base``, read as DeepSpeed ``version`` reads it. Its rows' memory and speed rest on ``base`` through this
    alone (``evaluate_arrays`` and ``predict`` are handed these settings and read nothing else of a config), so two
    bases with the same reading rank alike, and their rankings differ only in the ``config`` column
    (``ranked_configs``): a cache of the ranking can be keyed on it."""
    return tuple(read_settings(probe, cluster.total_gpus, version)
                 for _option, probe in _probes(cluster, global_batch, precision, zeropp, nvme, optimizer, base,
                                               target, version))


def ranked_configs(rows: pd.DataFrame, cluster: Cluster, *, global_batch: int, precision: str = "bf16",
                   optimizer: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None,
                   target: str = "deepspeed", version: str = DEFAULT_VERSION) -> list[dict[str, Any]]:
    """The ``config`` column ``recommend`` with these inputs gives ``rows`` (some of its rows: their stage, offload,
    ZeRO++ and micro batch), built for ``base``: a ranking cached on ``base_reading`` made current."""
    per_gpu = global_batch // cluster.total_gpus
    probes: dict[Option, dict[str, Any]] = {}
    configs = []
    for row in rows.itertuples():
        # plain ints and bools: the frame's numpy ones would land in the config (and its JSON)
        option = (int(row.stage), str(row.offload_optimizer), str(row.offload_param), bool(row.zeropp))
        if option not in probes:
            probes[option] = _probe(option, cluster, per_gpu, precision, optimizer, base, target, version)
        configs.append(_with_micro_batch(probes[option], global_batch, int(row.micro_batch), per_gpu))
    return configs


def recommend(
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    *,
    seq_len: int,
    global_batch: int,
    precision: str = "bf16",
    tokens: float | None = None,
    price_per_gpu_hour: float | None = None,
    attention: str = "flash",
    recompute: tuple[str, ...] = ("none", "full"),
    zeropp: bool = True,
    nvme: bool = True,
    memory_headroom: float = DEFAULT_MEMORY_HEADROOM,
    fitting_only: bool = False,
    fastest_only: bool = False,
    optimizer: Mapping[str, Any] | None = None,
    base: Mapping[str, Any] | None = None,
    target: str = "deepspeed",
    version: str = DEFAULT_VERSION,
) -> pd.DataFrame:
    """Every candidate config with its predicted speed and whether it fits, fastest fitting first.

    ``global_batch`` is in sequences per optimizer step; it must split into micro batch x accumulation x GPUs.
    Adds ``hours`` (and ``cost``) when ``tokens`` (and ``price_per_gpu_hour``) are given. The frame's ``attrs``
    record the assumptions (memory headroom, attention kernel, the cluster with its rates, tokens and price).
    ``fitting_only`` leaves out the candidates that do not fit, without predicting them; the frame is then empty
    when nothing fits.
    ``fastest_only`` (which implies ``fitting_only``; what a sweep for the fastest fitting config needs) also
    leaves out, per ZeRO/offload option and recompute mode, the micro batches that are slower than a larger one:
    at a fixed global batch the predicted step never gets slower with a larger micro batch (fewer micro-steps,
    larger GEMMs; ``tests/test_perf.py`` holds the model to it), so they are predicted from the largest fitting
    one down only while the step time stays the same, and the first row is the full ranking's first row.
    An input it refuses (a batch that does not split over the GPUs, tokens whose time overflows) raises
    ``PlanInputError`` naming the parameter. ``optimizer`` is the optimizer section every candidate has (the user's,
    so a used row is costed as ranked), else ``DEFAULT_OPTIMIZER``. ``base``: the config a row is loaded into;
    each candidate is then ``adopt_candidate(base, candidate, target=target, version=version)``, ranked as it
    would be loaded (the user's optimizer, precision sections and other ZeRO keys). Every candidate is read (memory
    and speed) as DeepSpeed ``version`` reads it.
    """
    fitting_only = fitting_only or fastest_only
    if precision not in ("bf16", "fp16", "fp32"):
        raise PlanInputError("precision", precision, "must be bf16, fp16 or fp32")
    for name, value in (("seq_len", seq_len), ("global_batch", global_batch)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise PlanInputError(name, value, "must be a whole number")
        if value < 1:
            raise PlanInputError(name, value, "must be >= 1")
    for name, value in (("tokens", tokens), ("price_per_gpu_hour", price_per_gpu_hour)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0):
            raise PlanInputError(name, value, "must be a number >= 0 (or None)")
    if not 0 <= memory_headroom < 1:
        raise PlanInputError("memory_headroom", memory_headroom, "must be a fraction in [0, 1)")
    world = cluster.total_gpus
    if problem := batch_split_problem(global_batch, world):
        raise PlanInputError("global_batch", global_batch, problem)
    if isinstance(model, ModelSpec) and (problem := model.sequence_reason(seq_len)):
        raise PlanInputError("seq_len", seq_len, problem)  # no config makes it run: nothing to rank
    per_gpu = global_batch // world
    # the micro batches that divide the per-GPU batch, up to the memory search's bound (a global batch of 8e10
    # listed 1e10 candidates)
    micro_batches = [m for m in range(1, min(per_gpu, MAX_MICRO_BATCH_SEARCH) + 1) if per_gpu % m == 0]
    hardware = hardware_for(cluster)
    limit = usable_gpu_bytes(hardware, memory_headroom)
    rows: list[dict[str, Any]] = []
    mb_array = np.asarray(micro_batches, dtype=np.float64)
    for (stage, opt, param, pp), probe in _probes(cluster, global_batch, precision, zeropp, nvme, optimizer, base,
                                                  target, version):
        # the candidates of one option differ only in their batch keys: the config is read once, and each
        # candidate's reading is that one with its own micro batch and accumulation (half of predict's time);
        # evaluate_arrays and predict read nothing else of it (what base_reading rests on)
        probe_settings = read_settings(probe, world, version)
        for rc in recompute:
            shape = Shape(1, seq_len, attention, rc)
            mem = evaluate_arrays(probe, model, hardware, shape, micro_batch=mb_array,
                                  allowances=cluster.memory_allowances, settings=probe_settings.memory,
                                  components=False)
            gpu_bytes = np.broadcast_to(mem["gpu_bytes"], mb_array.shape)
            cpu_bytes = np.broadcast_to(mem["cpu_bytes_per_node"], mb_array.shape)
            nvme_bytes = np.broadcast_to(mem["nvme_bytes_per_node"], mb_array.shape)
            fitting = (gpu_bytes <= limit) & (cpu_bytes <= hardware.cpu_ram_per_node_bytes)
            if hardware.nvme_bytes_per_node is not None:
                fitting &= nvme_bytes <= hardware.nvme_bytes_per_node
            order = [i for i in range(len(micro_batches)) if fitting[i] or not fitting_only]
            group: list[dict[str, Any]] = []
            for i in reversed(order) if fastest_only else order:
                mb = micro_batches[i]
                cfg = _with_micro_batch(probe, global_batch, mb, per_gpu)
                est = predict(cfg, model, cluster, replace(shape, micro_batch=mb), version=version,
                              settings=replace(probe_settings, grad_accum=per_gpu // mb, config_micro_batch=mb))
                if fastest_only and group and est.step_seconds > group[0]["step_seconds"]:
                    break  # slower than a larger micro batch, and so are the smaller ones
                group.append({
                    "stage": stage, "offload_optimizer": opt, "offload_param": param, "zeropp": pp,
                    "micro_batch": mb, "gradient_accumulation_steps": per_gpu // mb, "recompute": rc,
                    "fits": bool(fitting[i]), "gpu_peak_gib": float(gpu_bytes[i]) / GIB,
                    "cpu_gib_per_node": float(cpu_bytes[i]) / GIB,
                    "step_seconds": est.step_seconds, "tokens_per_second": est.tokens_per_second,
                    "tflops_per_gpu": est.tflops_per_gpu, "mfu": est.mfu, "bottleneck": est.bottleneck,
                    "breakdown": est.breakdown, "config": cfg, "notes": est.notes,
                    "caveats": est.caveats,
                })
            rows.extend(reversed(group) if fastest_only else group)  # micro batches in ascending order either way
    frame = pd.DataFrame(rows)
    notes: list[str] = []
    caveats: list[str] = []
    if not frame.empty:  # empty: fitting_only, and nothing fits
        if tokens is not None:
            frame["hours"] = tokens / frame["tokens_per_second"] / 3600
            if not np.isfinite(frame["hours"]).all():
                raise PlanInputError("tokens", tokens, "gives a training time beyond floating-point range at the "
                                     f"predicted speed: {_OVERFLOW_FIX}")
            if price_per_gpu_hour is not None:
                frame["cost"] = frame["hours"] * world * price_per_gpu_hour
                if not np.isfinite(frame["cost"]).all():
                    raise PlanInputError("price_per_gpu_hour", price_per_gpu_hour, "gives a training cost beyond "
                                         f"floating-point range for {tokens:g} tokens on {world} GPUs: {_OVERFLOW_FIX}")
        frame = frame.sort_values(["fits", "step_seconds"], ascending=[False, True],
                                  kind="stable").reset_index(drop=True)
        # what the prediction of the best row assumed (e.g. bf16 emulated on a GPU without it), for every row
        notes = list(frame["notes"].iloc[0])
        notes += _zero3_first_note(frame, cluster.efficiency.overlap)
        # the fastest fitting row's limits, as the page and the CLI recommend it
        fitting_rows = frame[frame["fits"]]
        caveats = list(fitting_rows["caveats"].iloc[0]) if not fitting_rows.empty else []
        if not isinstance(model, ModelSpec):
            # the rows' "fits" and their micro batches rest on the model states alone: said first
            caveats.insert(0, f"{COUNTS_ONLY_NOTE} Every micro batch looks as cheap as micro batch 1, so \"fits\" "
                              "and the ranking of micro batches hold for the model states only: give the model's "
                              "config.json (or a catalog model) to size the activations.")
        frame = frame.drop(columns=["notes", "caveats"])
    frame.attrs.update(
        notes=notes, caveats=caveats,
        memory_headroom=memory_headroom, gpu_memory_gib=hardware.gpu_memory_bytes / GIB,
        usable_gpu_memory_gib=limit / GIB, fits_rule=fits_rule(hardware.gpu_memory_bytes / GIB, memory_headroom),
        attention=attention, version=version,
        seq_len=seq_len, global_batch=global_batch, precision=precision, cluster=cluster.described(),
        tokens=tokens, price_per_gpu_hour=price_per_gpu_hour,
        recompute_note="recompute is the model's gradient checkpointing (e.g. HF gradient_checkpointing_enable); "
        "it is not a ds_config key",
    )
    return frame


def _zero3_first_note(frame: pd.DataFrame, overlap: float) -> list[str]:
    """Why a ZeRO-3 row can rank above a fitting ZeRO-1/2 one, when it does: not what most measurements show."""
    fitting = frame[frame["fits"]]
    if fitting.empty or fitting["stage"].iloc[0] != 3:
        return []
    best = fitting.iloc[0]
    # like with like: a ZeRO-1/2 row that fits only with an offload or a micro batch the ZeRO-3 row does without
    # is slower for that reason (ZeRO-3's memory saving), which the rows themselves show
    same = ["offload_optimizer", "offload_param", "micro_batch", "recompute"]
    lower = fitting[fitting["stage"].isin([1, 2]) & (fitting[same] == best[same]).all(axis=1)]
    if lower.empty:
        return []
    other = lower.iloc[0]
    ahead = other["step_seconds"] / best["step_seconds"] - 1
    if ahead < 0.01:  # a tie within the model's precision is not a ranking worth explaining
        return []
    return [f"ZeRO-3 ranks {ahead:.0%} ahead of the fastest fitting ZeRO-{other['stage']} config: the model hides "
            f"up to {overlap:.0%} of ZeRO-3's parameter gathers behind the compute (Efficiency.overlap), while "
            "ZeRO-1/2 all-gather the updated parameters after the step with nothing to hide behind. The published "
            "runs of the accuracy table that measure both (NVLink V100s) find ZeRO-3 slower; on PCIe GPUs with long "
            "compute, as here, it is untested: measure both before choosing."]


_INT_COLUMNS = ("stage", "micro_batch")


def gpu_sweep(
    model: ModelSpec | ModelCounts,
    cluster: Cluster,
    *,
    seq_len: int,
    global_batch: int,
    node_counts: list[int] | None = None,
    tokens: float | None = None,
    price_per_gpu_hour: float | None = None,
    version: str = DEFAULT_VERSION,
    **kwargs: Any,
) -> pd.DataFrame:
    """Best fitting config per cluster size (whole nodes of ``cluster``): time and cost against GPU count.

    Sizes whose GPU count does not divide ``global_batch`` are skipped and listed in ``attrs["skipped"]`` (nodes,
    total_gpus and the reason); ``min_gpus`` in ``attrs`` is the smallest
    size in the sweep where anything fits, ``memory_min_gpus`` the memory model's ``min_gpus`` for the most frugal
    config (any GPU count, not only whole nodes), with the GPU memory the rows may use (``memory_headroom`` kept
    free, as ``recommend`` keeps it). Every config is read as DeepSpeed ``version`` reads it.
    """
    counts = node_counts or [1, 2, 4, 8, 16, 32, 64]
    rows = []
    skipped = []
    for nodes in counts:
        sized = replace(cluster, nodes=nodes)
        if global_batch % sized.total_gpus:
            skipped.append({"nodes": nodes, "total_gpus": sized.total_gpus,
                            "reason": f"{sized.total_gpus} GPUs do not divide the global batch of {global_batch}"})
            continue
        table = recommend(model, sized, seq_len=seq_len, global_batch=global_batch, tokens=tokens,
                          price_per_gpu_hour=price_per_gpu_hour, fastest_only=True, version=version, **kwargs)
        row = {"nodes": nodes, "total_gpus": sized.total_gpus, "fits": not table.empty}
        for key in ("stage", "offload_optimizer", "offload_param", "zeropp", "micro_batch", "recompute",
                    "step_seconds", "tokens_per_second", "tflops_per_gpu", "hours", "cost"):
            if key in table:
                row[key] = table[key].iloc[0]
            elif table.empty and (key != "hours" or tokens is not None) and (
                    key != "cost" or (tokens is not None and price_per_gpu_hour is not None)):
                row[key] = None  # the columns a fitting size has, empty
        rows.append(row)
    # a size where nothing fits has no stage or micro batch: a nullable integer column keeps the others
    # integers (a plain one turns into floats around the NaN)
    frame = pd.DataFrame(rows)
    frame = frame.astype({key: "Int64" for key in _INT_COLUMNS if key in frame})
    fitting = frame[frame["fits"]] if not frame.empty else frame
    frame.attrs["min_gpus"] = int(fitting["total_gpus"].min()) if not fitting.empty else None
    frame.attrs["skipped"] = skipped
    # the memory model's floor: the most frugal config (ZeRO-3, micro batch 1, full recomputation) on the fewest
    # GPUs, whatever the global batch, with whichever offload needs fewest (offloading to a node with little CPU
    # RAM can need more GPUs than keeping everything on them)
    floors = []
    headroom = kwargs.get("memory_headroom", DEFAULT_MEMORY_HEADROOM)
    node = hardware_for(cluster)
    usable = replace(node, gpu_memory_bytes=int(usable_gpu_bytes(node, headroom)))  # the rows' limit
    for stage, opt, param, _zeropp in _options(cluster, zeropp=False, nvme=kwargs.get("nvme", True)):
        if stage != 3:
            continue
        frugal = build_config(stage=3, offload_optimizer=opt, offload_param=param, zeropp=False, micro_batch=1,
                              grad_accum=1, world_size=1, precision=kwargs.get("precision", "bf16"),
                              gpus_per_node=cluster.gpus_per_node, optimizer=kwargs.get("optimizer"))
        if kwargs.get("base") is not None:
            frugal = adopt_candidate(kwargs["base"], frugal, target=kwargs.get("target", "deepspeed"), version=version)
        floor = min_gpus(frugal, model, usable, Shape(1, seq_len, kwargs.get("attention", "flash"), "full"),
                         allowances=cluster.memory_allowances, version=version)
        if floor is not None:
            floors.append(floor.total_gpus)
    frame.attrs["memory_min_gpus"] = min(floors, default=None)
    frame.attrs["memory_headroom"] = headroom
    return frame
