"""The child of ``scripts/gen_profiles.py``: reads one DeepSpeed release, importable in this process (its
unpacked source first on ``sys.path``), and prints its profile as one line of JSON.

    python scripts/profile_extract.py 0.19.8      # with PYTHONPATH=<unpacked deepspeed-0.19.8>

What it reads is listed in gen_profiles.py's docstring.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import json
import os
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

# Where each optimizer name of DEEPSPEED_OPTIMIZERS is implemented (engine._configure_basic_optimizer);
# classes a release does not have are skipped. "gpu" is the default path, "cpu" ZeRO-Offload.
OPTIMIZER_CLASSES: dict[str, dict[str, str]] = {
    "adam": {"gpu": "deepspeed.ops.adam.FusedAdam", "cpu": "deepspeed.ops.adam.DeepSpeedCPUAdam"},
    "adamw": {"gpu": "deepspeed.ops.adam.FusedAdam", "cpu": "deepspeed.ops.adam.DeepSpeedCPUAdam"},
    "lamb": {"gpu": "deepspeed.ops.lamb.FusedLamb"},
    "adagrad": {"gpu": "torch.optim.Adagrad", "cpu": "deepspeed.ops.adagrad.DeepSpeedCPUAdagrad"},
    "lion": {"gpu": "deepspeed.ops.lion.FusedLion", "cpu": "deepspeed.ops.lion.DeepSpeedCPULion"},
    "onebitadam": {"gpu": "deepspeed.runtime.fp16.onebit.adam.OnebitAdam"},
    "zerooneadam": {"gpu": "deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam"},
    "onebitlamb": {"gpu": "deepspeed.runtime.fp16.onebit.lamb.OnebitLamb"},
    "muadam": {"gpu": "mup.MuAdam"},
    "muadamw": {"gpu": "mup.MuAdamW"},
    "musgd": {"gpu": "mup.MuSGD"},
    "muon": {"gpu": "deepspeed.runtime.zero.muon.muon_optimizer.MuonWithAuxAdam"},
}
# Keywords the engine passes itself, never from optimizer.params.
_ENGINE_KEYWORDS = {"self", "params", "deepspeed", "model_params", "optimizer", "adamw_mode", "adam_w_mode",
                    "fp32_optimizer_states", "overlap_step"}
_PROBE = "__dsconfig_probe__"



@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


class _Recorder(dict):
    """A dict that remembers every key looked up in it. With a ``prefix`` (a section's recorder) it records
    dotted paths below the section, and a missing key read with an empty dict as its default (or set to an empty
    dict) gives a recorder of that subsection, so the parse's reads inside it are seen too (``copy.copy`` keeps
    recording)."""

    def __init__(self, data: dict, seen: set[str], prefix: str | None = None,
                 defaults: dict[str, list[Any]] | None = None) -> None:
        super().__init__(data)
        self.seen = seen
        self.prefix = prefix
        #: with a prefix: every default a missing key was read with (``get(KEY, DEFAULT)``), per dotted path
        self.defaults = {} if defaults is None else defaults

    def __bool__(self) -> bool:
        # a section that holds something: a parse that reads nothing from an empty one (``if not param_dict:
        # return defaults``, AutoEP's expert_parallel) still shows which keys it reads
        return True

    def _see(self, key) -> None:
        self.seen.add(key if self.prefix is None or not isinstance(key, str) else self.prefix + key)

    def get(self, key, default=None):
        self._see(key)
        if self.prefix is not None and isinstance(key, str) and not super().__contains__(key):
            if isinstance(default, dict) and not default:
                return _Recorder({}, self.seen, f"{self.prefix}{key}.", self.defaults)
            self.defaults.setdefault(self.prefix + key, []).append(default)
        return super().get(key, default)

    def __getitem__(self, key):
        self._see(key)
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        # a parse that fills in a missing subsection (param_dict[KEY] = {}) then reads it: keep recording there
        if self.prefix is not None and isinstance(key, str) and isinstance(value, dict) and not value \
                and not isinstance(value, _Recorder):
            value = _Recorder({}, self.seen, f"{self.prefix}{key}.", self.defaults)
        super().__setitem__(key, value)

    def __contains__(self, key):
        self._see(key)
        return super().__contains__(key)

    def keys(self):
        recorder = self

        class _Keys(set):
            def __contains__(self, key):
                recorder._see(key)
                return super().__contains__(key)

        return _Keys(super().keys())


def _config_class():
    with _quiet():
        from deepspeed.runtime.config import DeepSpeedConfig
    return DeepSpeedConfig


def _parse(config: dict) -> Exception | None:
    cls = _config_class()
    try:
        with _quiet():
            cls(config)
    except Exception as exc:
        return exc
    return None


def _static_keys(module: Any) -> set[str]:
    """Constants named in get_*_param(param_dict, X) / param_dict.get(X) / X in param_dict calls."""
    tree = ast.parse(inspect.getsource(module))
    keys: set[str] = set()

    def resolve(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and isinstance(getattr(module, node.id, None), str):
            return getattr(module, node.id)
        return None

    # Only membership tests on the whole config (``X in param_dict`` / ``X in config``): keys read under a
    # condition the recording dict cannot meet (e.g. ``sequence_parallel_size`` with torch.distributed up).
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In) for op in node.ops):
            text = ast.unparse(node.comparators[0])
            if text in ("param_dict", "param_dict.keys()", "config", "config.keys()"):
                key = resolve(node.left)
                if key:
                    keys.add(key)
    return keys


def _scalar_defaults(module: Any) -> dict[str, Any]:
    """The default of every top-level key read with ``get_scalar_param(param_dict, KEY, DEFAULT)`` (what DeepSpeed
    uses when the config leaves the key out), where KEY and DEFAULT are constants; a key read with two different
    defaults is left out."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, list[Any]] = {}

    def value(node: ast.AST) -> tuple[bool, Any]:
        if isinstance(node, ast.Constant):
            return True, node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return True, -node.operand.value
        if isinstance(node, ast.Name) and hasattr(module, node.id):
            return True, getattr(module, node.id)
        return False, None

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_scalar_param"
                and len(node.args) == 3 and ast.unparse(node.args[0]) == "param_dict"):
            continue
        (has_key, key), (has_default, default) = value(node.args[1]), value(node.args[2])
        if has_key and isinstance(key, str) and has_default and (default is None or isinstance(
                default, bool | int | float | str)):
            found.setdefault(key, []).append(default)
    return {key: defaults[0] for key, defaults in sorted(found.items())
            if all(d == defaults[0] and type(d) is type(defaults[0]) for d in defaults)}


def _jsonable(value: Any) -> Any:
    import enum
    from pathlib import PurePath

    from pydantic import BaseModel

    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, BaseModel):
        return {k: _jsonable(getattr(value, k)) for k in type(value).model_fields}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    return repr(value)


def _type_text(annotation: Any) -> str:
    text = repr(annotation) if not isinstance(annotation, type) else annotation.__name__
    for noise in ("typing.", "pydantic.types.", "deepspeed.", "pathlib.", "<class '", "'>"):
        text = text.replace(noise, "")
    return text


def _nested_models(annotation: Any) -> list[tuple[str, type]]:
    """(container, model) for the pydantic models an annotation holds: "" direct, "list", "dict"."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    out: list[tuple[str, type]] = []
    for arg in args:
        for container, model in _nested_models(arg):
            if origin in (list, tuple, set):
                out.append(("list", model))
            elif origin is dict:
                out.append(("dict", model))
            else:
                out.append((container, model))
    return out


def _model_profile(model: type, sections: dict[str, Any], path: str) -> None:
    from pydantic_core import PydanticUndefined

    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        entry: dict[str, Any] = {"type": _type_text(info.annotation)}
        if info.alias and info.alias != name:
            entry["alias"] = info.alias
        if info.default is not PydanticUndefined:
            entry["default"] = _jsonable(info.default)
        elif info.default_factory is not None:
            with contextlib.suppress(Exception):
                entry["default"] = _jsonable(info.default_factory())
        else:
            entry["required"] = True
        for meta in info.metadata:
            for bound in ("ge", "gt", "le", "lt"):
                value = getattr(meta, bound, None)
                if value is not None:
                    entry[bound] = _jsonable(value)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("deprecated"):
            entry["deprecated"] = True
            if extra.get("new_param"):
                entry["new_param"] = extra["new_param"]
        fields[name] = entry
        for container, nested in _nested_models(info.annotation):
            sub = f"{path}.{info.alias or name}" + {"": "", "list": "[]", "dict": "{}"}[container]
            if sub not in sections:
                _model_profile(nested, sections, sub)
    decorators = model.__pydantic_decorators__
    checked = sorted({f for d in decorators.field_validators.values() for f in d.info.fields if f in fields})
    messages: set[str] = set()
    for group in (decorators.field_validators, decorators.model_validators):
        for decorator in group.values():
            with contextlib.suppress(OSError, TypeError, SyntaxError):
                messages.update(_messages(inspect.getsource(decorator.func)))
    sections[path] = {"model": model.__name__, "extra": model.model_config.get("extra") or "ignore",
                      "fields": fields, "field_validators": checked,
                      "model_validators": bool(decorators.model_validators),
                      "validator_messages": sorted(messages)}


def _pydantic_roots(top_keys: set[str], dict_reads: dict[str, list[str]] | None = None) -> dict[str, type]:
    """Which section builds which pydantic model: a probe key makes the model name itself. A top-level key the
    release reads with ``dict.get`` is probed again at each key its parse looks up (``dict_reads``): the throughput
    timer is a model built from ``timers.throughput`` alone."""
    roots: dict[str, type] = {}
    for key in sorted(top_keys):
        model = _probed_model(key.split("."))
        if model is not None:
            roots[key] = model
    for key, reads in sorted((dict_reads or {}).items()):
        for read in reads:
            model = _probed_model([key, *read.split(".")])
            if model is not None:
                roots[f"{key}.{read}"] = model
    return roots


def _probed_model(path: list[str]) -> type | None:
    """The pydantic model the parse builds from the object at ``path``, named by its refusal of a probe key."""
    from deepspeed.runtime.config_utils import DeepSpeedConfigModel
    from pydantic import BaseModel, ValidationError

    def all_models(cls: type) -> list[type]:
        out = [cls]
        for sub in cls.__subclasses__():
            out += all_models(sub)
        return out

    section: dict[str, Any] = {_PROBE: 1}
    for part in reversed(path[1:]):
        section = {part: section}
    error = _parse({"train_batch_size": 1, path[0]: section})
    if not isinstance(error, ValidationError):
        return None
    if not any(e["type"] == "extra_forbidden" and _PROBE in map(str, e["loc"]) for e in error.errors()):
        return None
    loc = next(tuple(map(str, e["loc"])) for e in error.errors() if _PROBE in map(str, e["loc"]))
    candidates = [m for m in all_models(DeepSpeedConfigModel) + all_models(BaseModel)
                  if m.__name__ == error.title and _PROBE not in m.model_fields]
    model = candidates[0] if candidates else None
    # A model built from the whole config (the monitors) names the section in the location.
    for part in loc[:-1]:
        fields = {(i.alias or n): i for n, i in model.model_fields.items()} if model else {}
        nested = _nested_models(fields[part].annotation) if part in fields else []
        model = nested[0][1] if nested else None
    return model


def _signature(dotted: str) -> dict[str, Any] | None:
    module_name, _, name = dotted.rpartition(".")
    try:
        with _quiet():
            cls = getattr(importlib.import_module(module_name), name)
    except Exception:
        return None
    params: dict[str, Any] = {}
    var_kw = False
    for param in inspect.signature(cls.__init__).parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_kw = True
            continue
        if param.name in _ENGINE_KEYWORDS or param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        default = None if param.default is inspect.Parameter.empty else _jsonable(param.default)
        params[param.name] = {"default": default} if param.default is not inspect.Parameter.empty else {
            "required": True}
    return {"class": dotted, "params": params, "var_keyword": var_kw}


def _unread_params(source: str, params: dict[str, Any]) -> list[str]:
    """Constructor parameters of a class whose value the class never uses: every use of the name only
    stores it (``self.x = ...``, possibly through a helper method taking the same name) into attributes that
    nothing of the class reads (e.g. OneCycle's stair counts before 0.19.5)."""
    tree = ast.parse(textwrap.dedent(source))
    loaded = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
              and isinstance(node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Load)}
    parents: dict[ast.AST, ast.AST] = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    method_params = {f.name: {a.arg for a in f.args.args} for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}

    def harmless(use: ast.Name) -> bool:
        node: ast.AST = use
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                # handed on to a helper method whose parameter has the same name (its uses are checked too)
                return use.id in method_params.get(node.func.attr, set())
            if isinstance(node, ast.Assign):
                stored = [t.attr for t in node.targets if isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name) and t.value.id == "self"]
                return bool(stored) and len(stored) == len(node.targets) and not set(stored) & loaded
            if isinstance(node, ast.stmt):
                return False
        return False

    unread = []
    for name in params:
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        if uses and all(harmless(use) for use in uses):
            unread.append(name)
    return sorted(unread)


def _assert_messages(cls: type) -> list[str]:
    """The assertion/raise messages of DeepSpeedConfig's own checks, as text with {…} placeholders."""
    return _messages(inspect.getsource(cls))


def _messages(source: str) -> list[str]:
    """The assert/raise messages in ``source`` (a class or function), as text with {…} placeholders."""
    tree = ast.parse(textwrap.dedent(source))
    out: list[str] = []

    def text(node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        if isinstance(node, ast.BinOp):
            left, right = text(node.left), text(node.right)
            return (left or "{}") + (right or "{}") if left or right else None
        if isinstance(node, ast.Call) and node.args:
            return text(node.args[0]) if not isinstance(node.func, ast.Attribute) else text(node.func.value)
        return None

    for node in ast.walk(tree):
        message = text(node.msg) if isinstance(node, ast.Assert) else (
            text(node.exc) if isinstance(node, ast.Raise) else None)
        if message:
            out.append(" ".join(message.split()))
    return sorted(set(out))


def _optimizers_picking_params(engine: Any, config_module: Any) -> list[str]:
    """Optimizer names whose branch of the engine's ``_configure_basic_optimizer`` never passes
    ``**optimizer_parameters`` to a constructor: the engine picks the keys it knows (Muon's param groups)
    and ignores the rest."""
    source = inspect.getsource(engine.DeepSpeedEngine._configure_basic_optimizer)
    tree = ast.parse(textwrap.dedent(source))
    picked = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and "optimizer_name()" in ast.unparse(node.test.left)):
            continue
        compared = node.test.comparators[0]
        name = getattr(config_module, compared.id, None) if isinstance(compared, ast.Name) else None
        if not isinstance(name, str):
            continue
        splats = any(isinstance(call, ast.Call) and any(k.arg is None and ast.unparse(k.value) == "optimizer_parameters"
                                                        for k in call.keywords)
                     for stmt in node.body for call in ast.walk(stmt))
        if not splats:
            picked.append(name)
    return sorted(set(picked))


#: One value of each JSON kind that is not an object, tried as every top-level key the release reads; each kind
#: empty too, since a section may be read under `if not value` (expert_parallel: defaults for any falsy value).
TOP_LEVEL_PROBES: dict[str, Any] = {"null": None, "list": ["x"], "string": "x", "number": -1, "bool": True,
                                    "empty list": [], "empty string": "", "zero": 0, "false": False}


def _top_level_probes(top_keys: set[str]) -> dict[str, list[str]]:
    """Per kind of non-object value: the top-level keys whose parse fails with it (a section read with
    ``.get`` or a pydantic model fails on ``null``; one read only under a switch does not)."""
    return {kind: sorted(k for k in top_keys if _parse({"train_batch_size": 1, k: value}) is not None)
            for kind, value in TOP_LEVEL_PROBES.items()}


def _top_level_member_probes(dict_reads: dict[str, list[str]] | None = None) -> dict[str, dict[str, list[str]]]:
    """Per kind (string, list): the keys of each section read with ``KEY in param_dict[SECTION]`` that make the parse
    fail when a non-object section holds them: such a test is true of a string containing the key or a list
    holding it, and the read that follows (``param_dict[SECTION][KEY]``) then fails (timers: ``"throughput"``),
    where the plain probe (``TOP_LEVEL_PROBES``) goes through. ``dict_reads``: the profile's ``dict_section_reads``
    (read from this release's profile when not given, for ``--fields``)."""
    if dict_reads is None:
        profile = Path(__file__).resolve().parent.parent / "core" / "versions" / "profiles" / f"{sys.argv[1]}.json"
        dict_reads = json.loads(profile.read_text())["dict_section_reads"]
    probes: dict[str, dict[str, list[str]]] = {}
    for kind, wrap in (("string", str), ("list", lambda key: [key])):
        found: dict[str, list[str]] = {}
        for section, reads in sorted(dict_reads.items()):
            if _parse({"train_batch_size": 1, section: TOP_LEVEL_PROBES[kind]}) is not None:
                continue  # fails with any such value: the plain probe says so
            keys = sorted({read.split(".")[0] for read in reads})
            failing = [key for key in keys if _parse({"train_batch_size": 1, section: wrap(key)}) is not None]
            if failing:
                found[section] = failing
        probes[kind] = found
    return probes


# get_quantize_enabled reads compression_training.shared_parameters (not weight_quantization's) to decide whether
# the MoQ eigenvalue settings are read: what each release does when that block is switched on, alone and with
# quantize_training.eigenvalue switched on too.
COMPRESSION_SHARED_PROBES: dict[str, dict[str, Any]] = {
    "alone": {"compression_training": {"shared_parameters": {"enabled": True}}},
    "eigenvalue": {"compression_training": {"shared_parameters": {"enabled": True}},
                   "quantize_training": {"eigenvalue": {"enabled": True}}},
}


#: The ZeRO optimizers a config's stage picks: their own assertions (e.g. what master weights in 16 bits need)
#: run at ``deepspeed.initialize``, not while the config is parsed.
ZERO_OPTIMIZERS = {"1_2": ("deepspeed.runtime.zero.stage_1_and_2", "DeepSpeedZeroOptimizer"),
                   "3": ("deepspeed.runtime.zero.stage3", "DeepSpeedZeroOptimizer_Stage3")}


def _optimizer_params_popped(engine: Any) -> list[str]:
    """The keys ``DeepSpeedEngine`` pops from ``optimizer.params`` before it builds the optimizer
    (``optimizer_parameters.pop(KEY, ...)``): ``torch_adam`` and ``adam_w_mode`` in every release,
    ``fp32_optimizer_states`` from 0.19; a key not popped reaches the optimizer's constructor."""
    tree = ast.parse(inspect.getsource(engine))
    popped: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop" \
                and ast.unparse(node.func.value) == "optimizer_parameters" and node.args:
            key = node.args[0]
            value = key.value if isinstance(key, ast.Constant) else getattr(engine, key.id, None) \
                if isinstance(key, ast.Name) else None
            if isinstance(value, str):
                popped.add(value)
    return sorted(popped)


def _zero_supported_optimizers() -> list[str] | None:
    """The names of the torch and DeepSpeed optimizer classes ZeRO runs without ``zero_allow_untested_optimizer``
    (``ZERO_SUPPORTED_OPTIMIZERS``, matched by exact type; apex's and muon's join it when they are installed, so
    they are left out): ``ZenFlowCPUAdam`` joined it in 0.19.3, and ZenFlow's optimizer is refused before."""
    from deepspeed.runtime.zero import utils

    classes = getattr(utils, "ZERO_SUPPORTED_OPTIMIZERS", None)
    if classes is None:
        return None
    return sorted({c.__name__ for c in classes if c.__module__.split(".")[0] in ("torch", "deepspeed")})


def _torch_autocast_checks() -> list[str] | None:
    """The assert/raise messages of ``runtime/torch_autocast.py`` (what ``deepspeed.initialize`` refuses beside
    ``torch_autocast``: fp16 and bf16 in 0.17.2-0.18.2, ZeRO's quantized weights in every release with it); None
    before the section existed (0.17.2)."""
    try:
        module = importlib.import_module("deepspeed.runtime.torch_autocast")
    except ImportError:
        return None
    return _messages(inspect.getsource(module))


#: Configs whose parsed ``loss_scale`` (what Lamb's "requires dynamic loss scaling" check reads) tells how a release
#: reads it: with fp16 off (0.16 only with fp16 on; later releases always) and under bf16 (0.16: a static 1.0).
LOSS_SCALE_PROBES: dict[str, dict[str, Any]] = {
    "fp16_off": {"fp16": {"enabled": False, "loss_scale": 128}},
    "bf16": {"bf16": {"enabled": True}},
}


def _loss_scale_probes() -> dict[str, Any]:
    """Per ``LOSS_SCALE_PROBES`` config, the loss scale the engine's ``dynamic_loss_scale()`` compares with 0 (the
    parsed config's ``loss_scale``, ``float16_config.loss_scale`` from 0.17), or the error's type."""
    out: dict[str, Any] = {}
    for label, config in LOSS_SCALE_PROBES.items():
        try:
            with _quiet():
                parsed = _config_class()({"train_batch_size": 1, **config})
            fp16 = getattr(parsed, "float16_config", None)
            out[label] = fp16.loss_scale if fp16 is not None else parsed.loss_scale
        except Exception as exc:  # the outcome is what is recorded
            out[label] = type(exc).__name__
    return out


def _allgather_sequential_prefetch() -> bool:
    """Whether the engine sets ZeRO-3's ``prefetch_bucket_size`` to 1 when ``stage3_allgather_sequential`` is on
    (``if self.zero_allgather_sequential(): ... prefetch_bucket_size = 1`` before it builds the stage-3 optimizer,
    from 0.18.x); before, the written prefetch bucket is used as it is."""
    tree = ast.parse(inspect.getsource(importlib.import_module("deepspeed.runtime.engine")))
    return any(isinstance(node, ast.If) and "zero_allgather_sequential()" in ast.unparse(node.test)
               and any(isinstance(n, ast.Assign) and ast.unparse(n.targets[0]).endswith("prefetch_bucket_size")
                       for n in ast.walk(node))
               for node in ast.walk(tree))


def _path_config_sequence_parallel() -> bool | None:
    """Whether ``deepspeed.initialize(config=<a file path>)`` divides the GPUs by ``sequence_parallel_size`` as it does
    for a dict. ``DeepSpeedConfig`` tests ``"sequence_parallel_size" in config`` on what it was given: a path string
    has no such key, so the batch is checked over every GPU, unless ``initialize`` reads the file into a dict first
    (``load_ds_config``, from 0.18.x) or the test reads the parsed dict. None where the config class never reads
    ``sequence_parallel_size``."""
    import deepspeed
    from deepspeed.runtime import config as config_module

    tree = ast.parse(inspect.getsource(config_module))
    tests = [node for node in ast.walk(tree) if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
             and node.left.value == "sequence_parallel_size" and isinstance(node.ops[0], ast.In)]
    if not tests:
        return None
    if "load_ds_config(" in inspect.getsource(deepspeed.initialize):
        return True
    return all(ast.unparse(node.comparators[0]) != "config" for node in tests)


#: The dtypes ``_do_optimizer_sanity_check`` is probed with: the trained dtype (from the fp16/bf16 switches)
#: and ``data_types.grad_accum_dtype`` (None: not written, the release's own default).
WRAPPER_MODEL_DTYPES = ("fp32", "fp16", "bf16")
WRAPPER_ACCUM_DTYPES = (None, "fp32", "fp16", "bf16")


def _optimizer_wrappers() -> dict[str, str] | None:
    """What ``DeepSpeedEngine._do_optimizer_sanity_check`` (after ``get_data_types``) picks, per trained dtype x
    ``data_types.grad_accum_dtype`` (``"-"``: not written) x ZeRO stage 0-3, without pipeline, Apex AMP or
    offload, keyed ``"bf16/fp32/0"``: the wrapper's name (``"bf16"`` is BF16_Optimizer, ``"ddp_bf16"``,
    ``"fp16"``, ``"zero_optimization"``, ``"none"`` for the plain optimizer) or the error it raises
    (``"NotImplementedError: ..."``). Called on a stand-in engine that answers only what a config decides;
    None when the release asks it anything else."""
    import deepspeed.runtime.engine as engine
    from deepspeed.runtime.engine import DeepSpeedEngine

    class _Unanswered(Exception):
        pass

    # the optimizer class is another question (``zero_supported_optimizers``); this one asks for ranks
    supported, engine.is_zero_supported_optimizer = engine.is_zero_supported_optimizer, lambda optimizer: True
    try:
        return _wrapper_outcomes(DeepSpeedEngine, _Unanswered)
    finally:
        engine.is_zero_supported_optimizer = supported


def _wrapper_outcomes(engine_class: type, unanswered: type[Exception]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for model in WRAPPER_MODEL_DTYPES:
        for accum in WRAPPER_ACCUM_DTYPES:
            for stage in range(4):
                answers = {
                    "fp16_enabled": model == "fp16", "bfloat16_enabled": model == "bf16", "amp_enabled": False,
                    "zero_optimization": stage > 0, "zero_optimization_stage": stage, "zero_cpu_offload": False,
                    "zero_allow_untested_optimizer": False, "zero_compute_grad_norm": True,
                }

                class _StandIn:
                    pipeline_parallelism = False
                    global_rank = 0
                    _config = type("Config", (), {"grad_accum_dtype": accum})()
                    get_data_types = engine_class.get_data_types
                    check = engine_class._do_optimizer_sanity_check

                    def __getattr__(self, name: str, answers: dict = answers) -> Any:
                        if name in answers:
                            return lambda: answers[name]
                        raise unanswered(name)

                try:
                    with _quiet():
                        picked = _StandIn().check(None)
                    outcome = "none" if picked is None else str(picked)
                except unanswered:
                    return None
                except Exception as exc:  # the outcome is what is recorded
                    outcome = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                out[f"{model}/{accum or '-'}/{stage}"] = outcome
    return out


def _zero_optimizer_checks() -> dict[str, list[str]]:
    """Per ZeRO optimizer (stages 1-2, stage 3): the assert/raise messages of its class."""
    out = {}
    for stages, (module, name) in ZERO_OPTIMIZERS.items():
        with _quiet():
            cls = getattr(importlib.import_module(module), name)
        out[stages] = sorted(set(_messages(inspect.getsource(cls))))
    return out


def _dict_section_reads(top_keys: set[str], roots: dict[str, type]) -> tuple[dict[str, list[str]],
                                                                           dict[str, dict[str, Any]]]:
    """Per top-level section the release reads with ``dict.get`` (not a pydantic model): the keys its parse looks
    up in that section when the section holds nothing it knows (the recorder counts as non-empty), as dotted paths
    below it (``data_sampling.dynamic_batching``)
    so the keys read whatever the values; keys read only behind a switch are not seen. Sections whose parse never
    looks inside are left out. Second, per section, the default each key is read with when it is missing (bf16's
    ``immediate_grad_update`` is true in 0.16.x), where it is a JSON scalar and the same at every read."""
    reads: dict[str, list[str]] = {}
    defaults: dict[str, dict[str, Any]] = {}
    for key in sorted(top_keys - set(roots)):
        seen: set[str] = set()
        read_with: dict[str, list[Any]] = {}
        _parse({"train_batch_size": 1, key: _Recorder({}, seen, "", read_with)})
        if names := sorted(k for k in seen if isinstance(k, str)):
            reads[key] = names
        same = {path: values[0] for path, values in sorted(read_with.items())
                if (values[0] is None or isinstance(values[0], bool | int | float | str))
                and all(v == values[0] and type(v) is type(values[0]) for v in values)}
        if same:
            defaults[key] = same
    return reads, defaults


def _dict_section_probes(top_keys: set[str], roots: dict[str, type]) -> dict[str, list[str]]:
    """Per top-level section this release reads with ``dict.get`` while other releases build it with pydantic
    (fp16 and bf16 before 0.17.1): the keys of those models (``DSCONFIG_PROBE_KEYS``, from ``gen_profiles``) that
    this release does not look up when the section holds all of them at their defaults with ``enabled`` true.
    Those it ignores whatever their values; keys read only when present (fp16's dynamic loss-scale arguments,
    read when any of them is given) are read here."""
    offered: dict[str, dict[str, Any]] = json.loads(os.environ.get("DSCONFIG_PROBE_KEYS", "{}"))
    ignored: dict[str, list[str]] = {}
    for key in sorted((top_keys - set(roots)) & set(offered)):
        seen: set[str] = set()
        _parse({"train_batch_size": 1, key: _Recorder({**offered[key], "enabled": True}, seen, "")})
        ignored[key] = sorted(set(offered[key]) - seen)
    return ignored


#: Dynamic batching switched on without ``max_tokens``: releases that read dynamic batching stop here.
DYNAMIC_BATCHING_PROBE: dict[str, Any] = {"data_efficiency": {"enabled": True, "data_sampling": {
    "enabled": True, "dynamic_batching": {"enabled": True}}}}


def _outcome(config: dict) -> str | None:
    """None when the parse succeeds, else "ErrorType: first line of the message"."""
    exc = _parse(config)
    if exc is None:
        return None
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


def _compression_shared_probes() -> dict[str, str | None]:
    return {name: _outcome({"train_batch_size": 1, **config}) for name, config in COMPRESSION_SHARED_PROBES.items()}


#: An elastic section whose micro batches' least common multiple (12) is above its largest batch (10): releases
#: differ in whether that base is still a candidate batch size; ``core.elasticity.keeps_oversized_base`` reads
#: which from what the release computes here.
ELASTIC_PROBE: dict[str, Any] = {"enabled": True, "max_train_batch_size": 10, "micro_batch_sizes": [4, 6],
                                 "version": 0.1}


def _elastic_probe(release: str) -> dict[str, Any] | None:
    """The release's ``compute_elastic_config`` on ``ELASTIC_PROBE``: its batch and valid GPU counts (None when the
    release has no elasticity module)."""
    try:
        with _quiet():
            from deepspeed.elasticity.elasticity import compute_elastic_config
    except ImportError:
        return None
    with _quiet():
        batch, valid = compute_elastic_config({"elasticity": dict(ELASTIC_PROBE)}, release)[:2]
    return {"section": ELASTIC_PROBE, "batch": int(batch), "valid_gpus": [int(g) for g in valid]}


#: sequence_parallel_size values DeepSpeedConfig cannot divide the world size by: zero, and not a number.
SEQUENCE_PARALLEL_PROBES: dict[str, Any] = {"zero": 0, "not-a-number": "2"}


def _sequence_parallel_probes() -> dict[str, Any]:
    """The world size DeepSpeedConfig settles on, as rank 0 of 8 (its ``dist`` answering so), when
    ``sequence_parallel_size`` cannot divide it: a number where the release catches the error (some fall back to
    1), else the error's type."""
    import deepspeed.runtime.config as config_module

    class _EightRanks:
        @staticmethod
        def get_rank(group: Any = None) -> int:
            return 0

        @staticmethod
        def get_world_size(group: Any = None) -> int:
            return 8

    out: dict[str, Any] = {}
    for label, value in SEQUENCE_PARALLEL_PROBES.items():
        real, config_module.dist = config_module.dist, _EightRanks()
        try:
            with _quiet():
                parsed = config_module.DeepSpeedConfig({"train_micro_batch_size_per_gpu": 1,
                                                        "sequence_parallel_size": value})
            out[label] = parsed.world_size
        except Exception as exc:  # the outcome is what is recorded
            out[label] = type(exc).__name__
        finally:
            config_module.dist = real
    return out


def _autoep_choices() -> dict[str, list[Any]] | None:
    """Per ``expert_parallel`` key, the values AutoEP's ``validate_autoep_config`` accepts when the section is on: its
    ``config.KEY not in CHOICES`` tests, CHOICES a tuple it spells out (``valid_score_apply = (...)``) or a module-level
    collection (``PRESET_MODELS``, ``EXPERT_ACTIVATIONS``); None for a release without AutoEP."""
    try:
        module = importlib.import_module("deepspeed.module_inject.auto_ep_config")
    except ImportError:
        return None
    function = getattr(module, "validate_autoep_config", None)
    if function is None:
        return None
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    local: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                local[node.targets[0].id] = ast.literal_eval(node.value)
    # `config.KEY is not None and config.KEY not in ...`: null passes (recorded as a choice)
    nullable = {value.left.attr for node in ast.walk(tree) if isinstance(node, ast.BoolOp)
                for value in node.values
                if isinstance(value, ast.Compare) and isinstance(value.ops[0], ast.IsNot)
                and isinstance(value.left, ast.Attribute) and isinstance(value.comparators[0], ast.Constant)
                and value.comparators[0].value is None}
    choices: dict[str, list[Any]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.NotIn)
                and isinstance(node.left, ast.Attribute) and isinstance(node.left.value, ast.Name)
                and node.left.value.id == "config"):
            continue
        right = node.comparators[0]
        if isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and right.args:
            right = right.args[0]  # tuple(EXPERT_ACTIVATIONS)
        if isinstance(right, ast.Name):
            values = local[right.id] if right.id in local else getattr(module, right.id, None)
        else:
            try:
                values = ast.literal_eval(right)
            except ValueError:
                continue
        if values is not None:
            choices[node.left.attr] = [_jsonable(v) for v in values] + ([None] if node.left.attr in nullable else [])
    return choices


def _autoep_checks() -> list[str] | None:
    """The messages AutoEP raises while it checks its config (``auto_ep_config`` and, 0.19.3 on, the folding module),
    so a rule can ask whether this release makes a check (0.19.2 refuses AutoTP outright, later ones fold it)."""
    texts: list[str] = []
    for name in ("deepspeed.module_inject.auto_ep_config", "deepspeed.module_inject.auto_ep_folding"):
        try:
            texts.append(inspect.getsource(importlib.import_module(name)))
        except ImportError:
            continue
    return sorted({m for text in texts for m in _messages(text)}) if texts else None


def _initialize_compares_autotp_size(init_source: str) -> bool:
    """Whether ``deepspeed.initialize`` compares ``tensor_parallel.autotp_size`` with a number before the config is
    parsed (``if autotp_size and autotp_size > 0``): a string there ("2", "auto") is a TypeError."""
    for node in ast.walk(ast.parse(init_source)):
        if isinstance(node, ast.FunctionDef) and node.name == "initialize":
            return any(isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == "autotp_size"
                       for n in ast.walk(node))
    return False


def extract(release: str) -> dict[str, Any]:
    """Everything the validator needs from the DeepSpeed importable in this process."""
    import deepspeed

    with _quiet():
        import deepspeed.runtime.config as config_module
        import deepspeed.runtime.lr_schedules as lr_schedules

    found = str(deepspeed.__version__).split("+")[0].strip()
    if found != release:
        raise SystemExit(f"expected DeepSpeed {release}, imported {found} from {deepspeed.__file__}")
    seen: set[str] = set()
    _parse(_Recorder({"train_batch_size": 1}, seen))
    top_keys = {k for k in seen | _static_keys(config_module) if isinstance(k, str)}
    removed = dict(getattr(config_module, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}) or {})
    top_keys -= set(removed)
    roots = _pydantic_roots(top_keys)
    dict_reads, dict_defaults = _dict_section_reads(top_keys, roots)
    sections: dict[str, Any] = {}
    for key, model in sorted(_pydantic_roots(set(), dict_reads).items()) + sorted(roots.items()):
        _model_profile(model, sections, key)
    optimizers = {}
    for name in sorted(getattr(config_module, "DEEPSPEED_OPTIMIZERS", [])):
        classes = {backend: sig for backend, dotted in OPTIMIZER_CLASSES.get(name, {}).items()
                   if (sig := _signature(dotted)) is not None}
        optimizers[name] = classes
    engine_source = Path(importlib.import_module("deepspeed.runtime.engine").__file__).read_text()
    schedulers = {}
    scheduler_facts = {}
    for name in sorted(getattr(lr_schedules, "VALID_LR_SCHEDULES", [])):
        sig = _signature(f"deepspeed.runtime.lr_schedules.{name}")
        schedulers[name] = sig["params"] if sig else {}
        cls = getattr(lr_schedules, name, None)
        if sig and cls is not None:
            # the checks of the base classes run too (WarmupDecayLR calls WarmupLR.__init__)
            own = [c for c in cls.__mro__ if c.__module__ == lr_schedules.__name__]
            checks = sorted({m for c in own for m in _messages(inspect.getsource(c))})
            scheduler_facts[name] = {"checks": checks, "unread": _unread_params(inspect.getsource(cls), sig["params"])}
    # A constant of a membership test that the parse was only seen reading inside a section is that section's key:
    # ``get_sparse_attention_mode(sparsity)`` names its argument ``param_dict`` too ("mode", "attention").
    in_sections = {read.split(".")[-1] for reads in dict_reads.values() for read in reads}
    misread = (top_keys - seen) & in_sections
    top_keys -= misread
    dict_reads = {k: v for k, v in dict_reads.items() if k not in misread}
    dict_defaults = {k: v for k, v in dict_defaults.items() if k not in misread}
    return {
        "schema": SCHEMA_VERSION,
        "release": release,
        "top_level_keys": sorted(top_keys),
        "top_level_defaults": _scalar_defaults(config_module),
        "top_level_probes": _top_level_probes(top_keys),
        "compression_shared_enabled": _compression_shared_probes(),
        "elastic_probe": _elastic_probe(release),
        "dict_section_reads": dict_reads,
        "top_level_member_probes": _top_level_member_probes(dict_reads),
        "dict_section_defaults": dict_defaults,
        "dict_section_ignored": _dict_section_probes(top_keys, roots),
        "zero_optimizer_checks": _zero_optimizer_checks(),
        "zero_supported_optimizers": _zero_supported_optimizers(),
        "torch_autocast_checks": _torch_autocast_checks(),
        "optimizer_wrappers": _optimizer_wrappers(),
        "loss_scale_probes": _loss_scale_probes(),
        "allgather_sequential_prefetch_one": _allgather_sequential_prefetch(),
        "path_config_sequence_parallel": _path_config_sequence_parallel(),
        "optimizer_params_popped": _optimizer_params_popped(importlib.import_module("deepspeed.runtime.engine")),
        "dynamic_batching_without_max_tokens": _outcome({"train_batch_size": 1, **DYNAMIC_BATCHING_PROBE}),
        "sequence_parallel_world_size": _sequence_parallel_probes(),
        "removed_top_level_keys": {k: " ".join(str(v).split()) for k, v in sorted(removed.items())},
        "sections": dict(sorted(sections.items())),
        "optimizers": optimizers,
        "optimizers_picking_params": _optimizers_picking_params(importlib.import_module("deepspeed.runtime.engine"),
                                                                config_module),
        "optimizer_max_grad_norm_refused": "'max_grad_norm' is not supported as an optimizer parameter"
        in engine_source,
        "initialize_compares_autotp_size": _initialize_compares_autotp_size(Path(deepspeed.__file__).read_text()),
        "autoep_choices": _autoep_choices(),
        "autoep_checks": _autoep_checks(),
        "schedulers": schedulers,
        "scheduler_facts": scheduler_facts,
        "checks": _assert_messages(config_module.DeepSpeedConfig),
    }


#: The fields ``gen_profiles.py --fields`` can re-read alone (probes that need no other part of the reading).
FIELD_PROBES = {"torch_autocast_checks": _torch_autocast_checks, "optimizer_wrappers": _optimizer_wrappers,
                "loss_scale_probes": _loss_scale_probes,
                "allgather_sequential_prefetch_one": _allgather_sequential_prefetch,
                "path_config_sequence_parallel": _path_config_sequence_parallel,
                "top_level_member_probes": _top_level_member_probes, "autoep_choices": _autoep_choices,
                "autoep_checks": _autoep_checks}


if __name__ == "__main__":
    if "--fields" in sys.argv:
        import deepspeed  # noqa: F401  (the release on sys.path, as extract() imports it)

        names = sys.argv[sys.argv.index("--fields") + 1].split(",")
        print(json.dumps({"release": sys.argv[1], **{name: FIELD_PROBES[name]() for name in names}}, sort_keys=True))
    else:
        print(json.dumps(extract(sys.argv[1]), sort_keys=True))
