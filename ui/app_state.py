"""The app's session state: one config dict, the baseline it is compared with, and the context.

Everything lives in ``st.session_state`` under the keys below (one browser tab = one session, so two
users never see each other's config). Nothing here is module-level mutable state: the constants are
read-only and every function reads or writes the session it is called in.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import zlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar

import streamlit as st

import core
from core import hardware, memory, models, versions
from core.autofill import HF_DEFAULTS
from core.findings import Report, get_path
from core.io import parse_json_value
from core.launchers import job_world_size
from core.rules.context import TARGETS, Context
from core.schema import KNOWN_VERSIONS
from core.schema.root import empty_config
from core.versions.matrix import WorksWith, works_with

#: Session-state keys.
CONFIG = "config"
BASELINE = "baseline"
CONTEXT = "context"
#: Prefix of the keys of every widget bound to a config path (cleared when the config is replaced).
WIDGET_PREFIX = "cfg:"
#: Query parameter holding the shareable state.
SHARE_PARAM = "s"
#: Session key remembering which shared state was already restored (so edits are not overwritten).
RESTORED = "restored_share"

TARGET_LABELS: Mapping[str, str] = MappingProxyType(
    {"deepspeed": "Plain DeepSpeed (deepspeed.initialize)", "hf": "HF Trainer / Accelerate (\"auto\" allowed)"}
)
VERSIONS: tuple[str, ...] = KNOWN_VERSIONS

#: App page id → page file. Finding.page values are the ids (plus "review").
PAGES: Mapping[str, str] = MappingProxyType({
    "start": "pages/start.py",
    "batch": "pages/batch.py",
    "precision": "pages/precision.py",
    "optimizer": "pages/optimizer.py",
    "zero": "pages/zero.py",
    "monitoring": "pages/monitoring.py",
    "advanced": "pages/advanced.py",
    "review": "pages/review.py",
    "presets": "pages/presets.py",
    "plan": "pages/plan.py",
})
PAGE_TITLES: Mapping[str, str] = MappingProxyType({
    "start": "Start",
    "batch": "Batch size",
    "precision": "Precision",
    "optimizer": "Optimizer & scheduler",
    "zero": "ZeRO & offload",
    "monitoring": "Monitoring",
    "advanced": "Advanced",
    "review": "Review & export",
    "presets": "Presets",
    "plan": "Plan",
})
PAGE_ICONS: Mapping[str, str] = MappingProxyType({
    "start": ":material/flag:",
    "batch": ":material/stacks:",
    "precision": ":material/tune:",
    "optimizer": ":material/trending_down:",
    "zero": ":material/memory:",
    "monitoring": ":material/monitoring:",
    "advanced": ":material/settings:",
    "review": ":material/download:",
    "presets": ":material/library_books:",
    "plan": ":material/speed:",
})

#: Name of the "not in the catalog" choice (memory typed by hand); the catalog is ``core.hardware``.
CUSTOM_GPU = "Custom"


#: (min, max) of the numeric context values: the widgets' limits, and what a shared link may carry.
CONTEXT_LIMITS: Mapping[str, tuple[Any, Any]] = MappingProxyType({
    "nodes": (1, 4096),
    "gpus_per_node": (1, 64),
    "gpu_memory_gib": (1.0, 1024.0),
    "cpu_ram_gib": (1.0, 65536.0),
    "nvme_gib": (0.0, 1_000_000.0),
    "total_params": (1, 2**53 - 1),
    "largest_layer_params": (1, 2**53 - 1),
    "seq_len": (1, 1_048_576),
    "train_steps": (1, 2_000_000),
    "hf_micro_batch": (1, 65_536),
    "hf_grad_accum": (1, 65_536),
    "network_gbit_s": (1.0, 100_000.0),
})


def default_context() -> dict[str, Any]:
    """A fresh context: what the config is for (runtime, version, hardware, model, training shape)."""
    return {
        "target": "deepspeed",
        "version": versions.default_version(),  # the installed DeepSpeed, as the CLI's default
        "nodes": 1,
        "gpus_per_node": 8,
        "gpu": hardware.DEFAULT_GPU,
        "gpu_memory_gib": hardware.GPU_BY_NAME[hardware.DEFAULT_GPU].memory_gib,
        "cpu_ram_gib": hardware.DEFAULT_CPU_RAM_GIB,
        "nvme_gib": 0.0,
        "model": None,
        "model_config": None,
        "total_params": None,
        "largest_layer_params": None,
        "seq_len": 2048,
        "attention": "sdpa",
        "recompute": "none",
        "train_steps": 10_000,
        # TrainingArguments values the HF Trainer fills "auto" batch keys with (per_device_train_batch_size,
        # gradient_accumulation_steps); asked on the Batch page, used wherever "auto" needs a number.
        "hf_micro_batch": HF_DEFAULTS["per_device_train_batch_size"],
        "hf_grad_accum": HF_DEFAULTS["gradient_accumulation_steps"],
        # the network per node a Plan row was ranked on, and for which GPU (ui.perf.network_for); None: the
        # GPU's catalog network
        "network_gbit_s": None,
        "network_gpu": None,
    }


def init_state() -> None:
    """Create the session keys on the first run of a session (never overwrites)."""
    ss = st.session_state
    if CONFIG not in ss:
        ss[CONFIG] = empty_config()
    if BASELINE not in ss:
        ss[BASELINE] = copy.deepcopy(ss[CONFIG])
    if CONTEXT not in ss:
        ss[CONTEXT] = default_context()


def get_config() -> dict[str, Any]:
    """The config being edited (the live dict in the session)."""
    return st.session_state[CONFIG]


def get_context() -> dict[str, Any]:
    return st.session_state[CONTEXT]


def get_baseline() -> dict[str, Any]:
    return st.session_state[BASELINE]


def clear_widgets() -> None:
    """Forget every config-bound widget's own state, so widgets re-read the config on the next run."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith((WIDGET_PREFIX, "ctx:"))]:
        del st.session_state[key]


#: Session key: what widgets remember about a config path beside the config (a JSON text the user typed and the
#: app refused, with its error; the value an "auto" replaced), by the widget's key, each with the value the path
#: held then (``note``).
PATH_NOTES = "path_notes"
_ABSENT = object()


def _as_text(value: Any) -> str:
    """A config value as JSON text, to tell whether it changed (``1``, ``1.0`` and ``true`` differ)."""
    return json.dumps(value, sort_keys=True, default=repr)


def _held(path: str) -> str | None:
    """The value at ``path`` of the config as JSON text (None when absent), to tell whether it changed."""
    value = get_path(get_config(), path, _ABSENT)
    return None if value is _ABSENT else _as_text(value)


def note(key: str, path: str, data: Any) -> None:
    """Remember ``data`` for widget ``key`` while ``path`` keeps the value it holds now and the config is not
    replaced (a load, an import, an undo)."""
    st.session_state.setdefault(PATH_NOTES, {})[key] = (path, _held(path), data)


def recall(key: str, default: Any = None) -> Any:
    """What ``note`` remembered for widget ``key``, while it holds; a note whose path changed since is dropped."""
    notes = st.session_state.get(PATH_NOTES, {})
    if key not in notes:
        return default
    path, held, data = notes[key]
    if _held(path) != held:
        del notes[key]
        return default
    return data


def forget(key: str, default: Any = None) -> Any:
    """Drop the note of widget ``key``; what it remembered while it held, else ``default``."""
    data = recall(key, default)
    st.session_state.get(PATH_NOTES, {}).pop(key, None)
    return data


#: Session key: values of page inputs that are not part of the config or context (the Plan page's cluster and
#: budget, the Presets page's save form). Streamlit drops a widget's state when a run does not draw it, i.e. on
#: every visit to another page; the page keeps them here and gives them back as the widgets' defaults.
KEPT_INPUTS = "kept_inputs"


#: Session key: the default each kept widget was last drawn with (``kept``).
KEPT_DEFAULTS = "kept_defaults"


def kept(key: str, default: Any) -> Any:
    """The value widget ``key`` had when its page last drew it, when the user had changed it from the default it
    was drawn with; else ``default`` (a default that follows the config or the cluster, and has changed since,
    is not shadowed by a value nobody chose)."""
    defaults = st.session_state.setdefault(KEPT_DEFAULTS, {})
    store = st.session_state.get(KEPT_INPUTS, {})
    value = store.get(key, default)
    if key in store and key in defaults and store[key] == defaults[key]:
        value = default
        # a widget drawn on the last run too keeps its own state whatever default it is drawn with: an untouched one
        # is set to the new default (the Plan page's global batch after a change of GPU count)
        if st.session_state.get(key, _ABSENT) == defaults[key] != default:
            st.session_state[key] = default
    defaults[key] = default
    return value


def kept_index(key: str, options: list[Any], default: int = 0) -> int:
    """A selectbox's index: its kept value's, when that is still one of ``options``; else ``default``."""
    value = kept(key, options[default] if 0 <= default < len(options) else None)
    return options.index(value) if value in options else default


def keep(*keys: str) -> None:
    """Remember the current values of the widgets ``keys`` (drawn in this run) for the next visit (``kept``)."""
    store = st.session_state.setdefault(KEPT_INPUTS, {})
    store.update({key: st.session_state[key] for key in keys if key in st.session_state})


#: Session key: widget edits made since the last undoable action (its undo reverts them too, and says so).
EDITS_SINCE_UNDO = "edits_since_undo"
#: Session key: the context keys (target, release, cluster, model) the user changed by hand since the last
#: undoable action, a frozenset; its undo keeps them.
CONTEXT_EDITED_SINCE_UNDO = "context_edited_since_undo"


def context_edited(before: dict[str, Any]) -> None:
    """Note the context keys that differ from ``before`` as changed by the user by hand (a widget), not as part of a
    big edit (a preset's target, a Plan row's cluster)."""
    now = get_context()
    changed = {key for key in {*before, *now} if before.get(key, _ABSENT) != now.get(key, _ABSENT)}
    st.session_state[CONTEXT_EDITED_SINCE_UNDO] = frozenset(
        st.session_state.get(CONTEXT_EDITED_SINCE_UNDO) or ()) | changed


P = ParamSpec("P")


def counted_edit(callback: Callable[P, None]) -> Callable[P, None]:
    """A widget's callback that edits the config, counted as an edit (``EDITS_SINCE_UNDO``) when it changed the
    config (a refused or unchanged value is not an edit)."""

    @functools.wraps(callback)
    def counted(*args: P.args, **kwargs: P.kwargs) -> None:
        before = _as_text(get_config())
        callback(*args, **kwargs)
        if _as_text(get_config()) != before:
            st.session_state[EDITS_SINCE_UNDO] = st.session_state.get(EDITS_SINCE_UNDO, 0) + 1

    return counted


#: Session-state prefix of a scheduler type's params from before the user switched away from it (restored when
#: they switch back; forgotten when another config is loaded).
SCHEDULER_PARAMS_KEY = "scheduler_params:"


def replace_config(config: dict[str, Any], *, baseline: bool = False) -> None:
    """Replace the edited config by another (a load, a preset, a shared link, an undo); with ``baseline`` it is also
    the new baseline. The widgets re-read it and forget what they noted about the one before (``note``)."""
    if baseline:
        st.session_state[BASELINE] = copy.deepcopy(config)
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(SCHEDULER_PARAMS_KEY)]:
            del st.session_state[key]
    st.session_state.pop(PATH_NOTES, None)
    rewrite_config(config)


def rewrite_config(config: dict[str, Any]) -> None:
    """Put an edited copy of the config in its place (a precision or scheduler switch, a fix, a way to fit): the
    widgets re-read it, and what they noted about a path holds while that path keeps its value (``note``)."""
    st.session_state[CONFIG] = config
    clear_widgets()
    st.session_state[REPLACED] = True


#: Session key set when the config is replaced: a fragment whose widget did it asks for a rerun of the whole app
#: (``rerun_app_if_replaced``), since the sidebar and the headline outside it read the config.
REPLACED = "config_replaced"


def rerun_app_if_replaced() -> None:
    """First thing in a fragment: rerun the whole app when one of the fragment's callbacks replaced the config
    (a full run clears the mark in ``ui.frame.begin``)."""
    if st.session_state.pop(REPLACED, False):
        st.rerun(scope="app")


#: Session keys of the last validation and of the last verdict of every release: (what it was computed from,
#: the result).
REPORT_MEMO = "report_memo"
RELEASES_MEMO = "releases_memo"
T = TypeVar("T")


def _memoised(slot: str, compute: Callable[[dict[str, Any], dict[str, Any]], T]) -> T:
    """``compute(config, context)`` for the current config and context, kept in the session under ``slot`` and
    computed again only when the config, GPU count, target or version changed."""
    ctx = get_context()
    config = get_config()
    try:
        key = (json.dumps(config, ensure_ascii=False), job_world_size(ctx), ctx["target"], ctx["version"])
    except (TypeError, ValueError):  # not JSON (never from the app's own widgets): compute without a memo
        key = None
    memo = st.session_state.get(slot)
    if key is not None and memo is not None and memo[0] == key:
        return memo[1]
    result = compute(config, ctx)
    if key is not None:
        st.session_state[slot] = (key, result)
    return result


def report() -> Report:
    """``core.validate`` of the current config for the current context, computed once per distinct input.

    The sidebar, the headline and the page all ask within one rerun, and a page switch or a change elsewhere
    (a chart axis, the model) does not change it; a 1 MB config takes seconds to validate."""
    return _memoised(REPORT_MEMO, lambda config, ctx: core.validate(
        config, world_size=job_world_size(ctx), target=ctx["target"], version=ctx["version"]))


def releases() -> WorksWith:
    """``works_with`` of the current config (its verdict under every profiled release), once per distinct input:
    36 validations, most of the Review page's rerun when computed on every rerun."""
    return _memoised(RELEASES_MEMO, lambda config, ctx: works_with(
        config, world_size=job_world_size(ctx), target=ctx["target"]))


def zero_stage(config: Mapping[str, Any]) -> int:
    """The ZeRO stage of a config as DeepSpeed reads it (0 when absent or unreadable), from core's rules."""
    return Context(dict(config)).stage


# ------------------------------------------------------------------------------ shareable link

#: Largest decoded shared state accepted: the config and its baseline at ``core.load_config``'s size limit each
#: (checked again there), and the context. It bounds what a crafted link can make the server decompress.
MAX_SHARED_BYTES = 2 * core.io.MAX_CONFIG_BYTES + 64 * 1024


def encode_state(config: Mapping[str, Any], context: Mapping[str, Any], baseline: Mapping[str, Any]) -> str:
    """The whole state as compact, zlib-compressed, base64url text (no padding) for a URL."""
    state = {"c": config, "x": context, "b": baseline}
    try:
        data = json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the file) has no UTF-8: written as its JSON escape
        data = json.dumps(state, separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(zlib.compress(data, 9)).decode("ascii").rstrip("=")


class ShareError(ValueError):
    """The shared link is damaged or not ours."""


def decode_state(text: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Inverse of ``encode_state``: (config, context, baseline). Raises ShareError for bad input."""
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        decompressor = zlib.decompressobj()
        raw = decompressor.decompress(packed, MAX_SHARED_BYTES)
        if decompressor.unconsumed_tail:
            raise ShareError("the shared state is too large")
        if not decompressor.eof or decompressor.unused_data:  # cut short (no checksum) or with bytes added
            raise ShareError("the link is incomplete or altered; copy the whole link again")
        # the loader's own JSON reader: a duplicate key is refused, as in a file or a paste
        # an uploaded model config.json may hold Infinity (transformers writes it so); the configs are checked below
        data = parse_json_value(raw.decode("utf-8"), finite=False)
    except ShareError:
        raise
    except core.ConfigLoadError as exc:
        raise ShareError(f"the link's state cannot be read ({exc}); ask for a new link") from None
    except (ValueError, zlib.error, UnicodeDecodeError, RecursionError) as exc:
        raise ShareError(f"the link's state cannot be read ({type(exc).__name__}); ask for a new link") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("c", "x", "b")):
        raise ShareError("the link's state is not a DeepSpeed Config Studio state")
    for key in ("c", "b"):
        try:
            # The same checks as an uploaded file (size, depth, finite numbers), on the compact UTF-8 text, the
            # smallest the app ever wrote (escaped non-ASCII and spaced separators made an accepted config too big).
            core.load_config(json.dumps(data[key], separators=(",", ":"), ensure_ascii=False))
        except (core.ConfigLoadError, RecursionError, ValueError) as exc:
            raise ShareError(f"the link's config cannot be used: {exc}") from None
    return data["c"], clean_context(data["x"]), data["b"]


def _number(value: Any, default: Any, key: str) -> Any:
    low, high = CONTEXT_LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        return default
    if isinstance(low, int):
        return int(value) if float(value).is_integer() else default
    return float(value)


def clean_context(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A context from untrusted data (a shared link): unknown keys dropped, every value of the right type."""
    context = default_context()
    context["target"] = raw.get("target") if raw.get("target") in TARGETS else context["target"]
    context["version"] = raw.get("version") if raw.get("version") in VERSIONS else context["version"]
    for key in CONTEXT_LIMITS:
        context[key] = _number(raw.get(key), context[key], key)
    gpu = raw.get("gpu", context["gpu"])
    context["gpu"] = gpu if hardware.find_gpu(gpu) is not None or gpu == CUSTOM_GPU else CUSTOM_GPU
    if (catalog_gpu := hardware.find_gpu(context["gpu"])) is not None:
        # the Start page holds a catalog GPU's memory fixed (its box disabled); a link cannot say otherwise
        context["gpu_memory_gib"] = catalog_gpu.memory_gib
    network_gpu = raw.get("network_gpu")
    context["network_gpu"] = network_gpu if hardware.find_gpu(network_gpu) is not None else None
    model = raw.get("model")
    context["model"] = model[:200] if isinstance(model, str) else None
    model_config = raw.get("model_config")
    context["model_config"] = model_config if isinstance(model_config, dict) else None
    if context["model"] in models.CATALOG:  # a catalog name means the catalog's model: its architecture, counts
        catalog_config = models.get_config(context["model"])
        spec = models.describe(catalog_config, name=context["model"])
        context.update(model_config=catalog_config, total_params=spec.total_params,
                       largest_layer_params=spec.largest_layer_params)
    for key, allowed in (("attention", memory.ATTENTION_IMPLS), ("recompute", memory.RECOMPUTE_MODES)):
        context[key] = raw.get(key) if raw.get(key) in allowed else context[key]
    return context


def restore_from_query() -> str | None:
    """Restore the state from the shareable-link query parameter once per link; an error text if it is bad."""
    token = st.query_params.get(SHARE_PARAM)
    if not token or st.session_state.get(RESTORED) == token:
        return None
    st.session_state[RESTORED] = token
    try:
        config, context, baseline = decode_state(token)
    except ShareError as exc:
        return str(exc)
    st.session_state[CONTEXT] = context
    st.session_state[BASELINE] = baseline
    replace_config(config)
    return None
