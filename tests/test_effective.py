"""``core.effective``: what a config means, and every consumer reading it the same way as real DeepSpeed.

The differential part parses the corpus and a seeded set of generated configs with DeepSpeed 0.19.8's own
``DeepSpeedConfig`` once per session (one pass, many assertions) and asks every consumer (validator rules,
memory estimator, ``precision_mode``, the app's stage reading and the optimizer page's backend) for stage,
precision, optimizer class and offload devices.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from types import MethodType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core
from core.effective import effective, optimizer_backend, pydantic_bool
from core.memory import TrainingSettings
from core.precision import precision_mode
from core.rules.context import Context
from core.rules.initialize import model_dtype
from core.rules.optim import _backend as validator_backend
from core.schema.optimizer import OPTIMIZERS
from tests.conftest import corpus_files
from tests.fuzz_strategies import FUZZ_SETTINGS, any_config

_TRUE_SPELLINGS = (True, 1, "true", "True", "on", "yes", "y", "1", "t")
_FALSE_SPELLINGS = (False, 0, "false", "False", "off", "no", "n", "0", "f")


# ------------------------------------------------------------------------------------------ unit tests
@pytest.mark.parametrize(("config", "stage"), [
    ({}, 0),
    ({"zero_optimization": True}, 1),  # the legacy form (read_zero_config_deprecated)
    ({"zero_optimization": False}, 0),
    ({"zero_optimization": {}}, 0),
    ({"zero_optimization": {"stage": 3}}, 3),
    ({"zero_optimization": {"stage": "2"}}, 2),
    ({"zero_optimization": {"stage": 2.0}}, 2),
    ({"zero_optimization": {"stage": "auto"}}, 0),
    ({"zero_optimization": {"stage": 7}}, 0),
])
def test_stage(config, stage):
    assert effective(config).stage == stage
    assert Context(config).stage == stage


_INT_SPELLINGS = ("3", " 3 ", "+3", "3.0", "3.00", "0_3", "1_000", "1.5", "3.", ".0", "5e8", "0x3", "3_", "", "-2")


@pytest.mark.deepspeed
@pytest.mark.parametrize("spelling", _INT_SPELLINGS)
def test_lax_int_reads_a_string_as_deepspeeds_pydantic_does(spelling):
    """The stage (and every int the rules read) as DeepSpeed 0.19.8's DeepSpeedZeroConfig reads it: "3.0" is
    stage 3 there, so it is stage 3 here."""
    zero_config = pytest.importorskip("deepspeed.runtime.zero.config")
    from pydantic import ValidationError

    from core.rules.context import lax_int

    try:
        theirs = zero_config.DeepSpeedZeroConfig(module_granularity_threshold=spelling).module_granularity_threshold
    except ValidationError:
        theirs = None
    assert lax_int(spelling) == theirs
    if theirs in (0, 1, 2, 3):
        assert effective({"zero_optimization": {"stage": spelling}}).stage == theirs


@pytest.mark.parametrize("spelling", _TRUE_SPELLINGS)
def test_pydantic_sections_read_lax_true(spelling):
    meaning = effective({"fp16": {"enabled": spelling}, "zero_optimization": {"overlap_comm": spelling}})
    assert meaning.fp16 and meaning.precision == "fp16" and meaning.overlap_comm


@pytest.mark.parametrize("spelling", _FALSE_SPELLINGS)
def test_pydantic_sections_read_lax_false(spelling):
    meaning = effective({"bf16": {"enabled": spelling}, "zero_optimization": {"stage": 3, "overlap_comm": spelling}})
    assert not meaning.bf16 and meaning.precision == "fp32" and not meaning.overlap_comm


def test_auto_is_off_to_deepspeed_but_shown_as_chosen():
    meaning = effective({"fp16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "overlap_comm": "auto"}})
    assert meaning.precision == "fp32" and meaning.precision_mode == "fp16" and meaning.fp16_auto
    assert meaning.overlap_comm  # dropped "auto": the stage-3 default


def test_legacy_bfloat16_only_when_bf16_absent_or_null():
    assert effective({"bfloat16": {"enabled": True}}).precision == "bf16"
    assert effective({"bf16": None, "bfloat16": {"enabled": True}}).precision == "bf16"
    assert effective({"bf16": {"enabled": False}, "bfloat16": {"enabled": True}}).precision == "fp32"


def test_torch_autocast_is_a_python_truth_value():
    assert effective({"torch_autocast": {"enabled": "false"}}).precision == "torch_autocast"
    assert effective({"torch_autocast": {"enabled": 0}}).precision == "fp32"


@pytest.mark.parametrize(("config", "backend", "cls"), [
    ({"optimizer": {"type": "AdamW"}}, "gpu", "deepspeed.ops.adam.FusedAdam"),
    ({"optimizer": {"type": "adam"}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
     "cpu", "deepspeed.ops.adam.DeepSpeedCPUAdam"),
    # torch_adam is checked before the offload device, and as a Python truth value
    ({"optimizer": {"type": "AdamW", "params": {"torch_adam": "false"}},
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}}, "torch", "torch.optim.AdamW"),
    # the CPU optimizer follows the device whatever the stage (zero_use_cpu_optimizer)
    ({"optimizer": {"type": "Lion"}, "zero_optimization": {"offload_optimizer": {"device": "cpu"}}},
     "cpu", "deepspeed.ops.lion.DeepSpeedCPULion"),
    ({"optimizer": {"type": "Adagrad"}, "zero_optimization": {"stage": 1, "cpu_offload": True}},
     "cpu", "deepspeed.ops.adagrad.DeepSpeedCPUAdagrad"),
    ({"optimizer": {"type": "Lamb"}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
     "gpu", "deepspeed.ops.lamb.FusedLamb"),
    ({"optimizer": {"type": "SGD"}}, None, "torch.optim.SGD"),
])
def test_optimizer_class(config, backend, cls):
    meaning = effective(config)
    assert meaning.optimizer_backend == backend
    assert meaning.optimizer_class == cls


@pytest.mark.parametrize(("name", "params", "states"), [
    ("muadam", {}, 2), ("MuAdamW", {}, 2), ("musgd", {"momentum": 0.9}, 1), ("MuSGD", {}, 0),
    ("Lion", {}, 1), ("Adagrad", {}, 1), ("AdamW", {}, 2), ("SGD", {"momentum": 0.9}, 1), ("RMSprop", {}, 1),
])
def test_optimizer_states_come_from_the_schema(name, params, states):
    assert effective({"optimizer": {"type": name, "params": params}}).optimizer_states == states
    settings = TrainingSettings.from_ds_config({"optimizer": {"type": name, "params": params}})
    assert settings.optimizer_states == states
    assert not any("unknown to the estimator" in note for note in settings.notes)


def test_every_deepspeed_optimizer_has_a_state_count():
    assert all(spec.state_tensors in (1, 2) for spec in OPTIMIZERS.values())


def test_top_level_flags_are_python_truth_values():
    assert effective({"zero_allow_untested_optimizer": "false"}).zero_allow_untested_optimizer
    assert not effective({"zero_allow_untested_optimizer": 0}).zero_allow_untested_optimizer


def test_pydantic_bool_drops_auto_and_rejected_values():
    assert pydantic_bool({"x": "auto"}, "x", True) is True
    assert pydantic_bool({"x": "maybe"}, "x", False) is False
    assert pydantic_bool({}, "x", True) is True


# ----------------------------------------------------------------------------------------- hypothesis
@FUZZ_SETTINGS
@given(config=any_config, enabled=st.sampled_from(_TRUE_SPELLINGS + _FALSE_SPELLINGS + ("auto", None)))
def test_consumers_agree_on_any_config(config, enabled):
    """For any config, the validator, the estimator and precision_mode read the same stage and precision."""
    if enabled is not None:
        config = {**config, "fp16": {"enabled": enabled}}
    meaning = effective(config)
    ctx = Context(config)
    settings = TrainingSettings.from_ds_config(config)
    assert ctx.stage == settings.stage == meaning.stage
    assert model_dtype(ctx) == (meaning.precision if meaning.precision in ("fp16", "bf16") else "fp32")
    # the estimator reads an "auto" section as on, as the Precision page shows it (the HF Trainer fills it)
    shown = meaning.precision_mode if meaning.precision_mode in ("fp16", "bf16") else "fp32"
    assert settings.precision == shown
    assert precision_mode(config) == meaning.precision_mode
    if not (meaning.fp16_auto or meaning.bf16_auto):
        assert meaning.precision_mode == meaning.precision
        assert settings.precision == model_dtype(ctx)


# ------------------------------------------------------------------------------- against real DeepSpeed
def _generated_configs(count: int) -> list[dict[str, Any]]:
    """Seeded configs that vary every reading effective makes (stage forms, bool spellings, devices ...)."""
    rng, extra = random.Random(20261123), random.Random(20261125)
    bools = (*_TRUE_SPELLINGS, *_FALSE_SPELLINGS, "auto")
    out: list[dict[str, Any]] = []
    for _ in range(count):
        cfg: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1}
        form = rng.choice(("absent", "legacy", "dict", "dict", "dict"))
        if form == "legacy":
            cfg["zero_optimization"] = rng.choice((True, False))
        elif form == "dict":
            zero: dict[str, Any] = {}
            if rng.random() < 0.9:
                zero["stage"] = rng.choice((0, 1, 2, 3, 3, "2", "3", 2.0, "auto"))
            if rng.random() < 0.5:
                zero["overlap_comm"] = rng.choice(bools)
            if rng.random() < 0.3:
                zero["contiguous_gradients"] = rng.choice(bools)
            if rng.random() < 0.5:
                zero["offload_optimizer"] = {"device": rng.choice(("none", "cpu", "nvme"))}
            elif rng.random() < 0.2:
                zero["cpu_offload"] = rng.choice((True, False, "yes"))
            if rng.random() < 0.4:
                zero["offload_param"] = {"device": rng.choice(("none", "cpu", "nvme"))}
            cfg["zero_optimization"] = zero
        precision = rng.choice(("fp16", "bf16", "bfloat16", "torch_autocast", "none", "both-off"))
        if precision in ("fp16", "bf16", "bfloat16", "torch_autocast"):
            cfg[precision] = {"enabled": rng.choice(bools)}
        elif precision == "both-off":
            cfg["fp16"] = {"enabled": rng.choice(_FALSE_SPELLINGS)}
            cfg["bf16"] = {"enabled": rng.choice(bools)}
        if rng.random() < 0.8:
            name = rng.choice(("Adam", "adamw", "AdamW", "Lion", "Adagrad", "Lamb", "MuAdamW", "SGD", "Muon"))
            params: dict[str, Any] = {"lr": 1e-3}
            if rng.random() < 0.4:
                params["torch_adam"] = rng.choice((True, False, "false", 0, 1))
            cfg["optimizer"] = {"type": name, "params": params}
        if rng.random() < 0.3:
            cfg["zero_allow_untested_optimizer"] = rng.choice((True, False, "false", 0, 1, "yes"))
        _vary_autotp_and_master_weights(cfg, extra, bools)
        out.append(cfg)
    return out


def _vary_autotp_and_master_weights(cfg: dict[str, Any], rng: random.Random, bools: tuple[Any, ...]) -> None:
    """AutoTP's size in the spellings pydantic reads (and one it rejects), and the 16-bit master-weight flags in
    whichever precision section the config has (drawn from their own generator: the configs above stay as they
    were)."""
    if rng.random() < 0.3:
        cfg["tensor_parallel"] = {"autotp_size": rng.choice((2, 2.0, "2", "4", 4.0, " 8", "auto", 1, 0, 2.5))}
    section = next((cfg[k] for k in ("fp16", "bf16", "bfloat16") if isinstance(cfg.get(k), dict)), None)
    if section is not None and effective(cfg).stage >= 1 and rng.random() < 0.4:
        prefix = "fp16" if section is cfg.get("fp16") else "bf16"
        section[f"{prefix}_master_weights_and_grads"] = rng.choice(bools)
        if prefix == "bf16" and rng.random() < 0.5:
            section["bf16_optimizer_states"] = rng.choice(bools)


def _for_parsing(config: dict[str, Any]) -> dict[str, Any]:
    """The config with a batch DeepSpeed accepts at world size 1 (the readings compared do not depend on it)."""
    cfg = copy.deepcopy(config)
    for key in ("train_batch_size", "gradient_accumulation_steps"):
        cfg.pop(key, None)
    cfg["train_micro_batch_size_per_gpu"] = 1
    return cfg


@dataclass(frozen=True)
class Reading:
    """What DeepSpeed itself made of a config."""

    stage: int
    fp16: bool
    bf16: bool
    torch_autocast: bool
    torch_autocast_dtype: str | None
    offload_optimizer: str
    offload_param: str
    overlap_comm: bool
    contiguous_gradients: bool
    optimizer_name: str | None
    optimizer_backend: str | None
    zero_allow_untested_optimizer: bool
    autotp_size: int
    fp16_master_weights_and_grads: bool
    bf16_master_weights_and_grads: bool
    bf16_optimizer_states: bool


def _deepspeed_backend(ds_config: Any, engine_cls: type) -> str | None:
    """The backend ``_configure_basic_optimizer`` picks, asked of DeepSpeed's own engine methods (no model)."""
    name = ds_config.optimizer_name
    fake = SimpleNamespace(_config=ds_config, zenflow=False)
    fake.zero_use_cpu_optimizer = MethodType(engine_cls.zero_use_cpu_optimizer, fake)
    fake.bf16_optimizer_states = lambda: False
    cpu = fake.zero_use_cpu_optimizer()
    if name in ("adam", "adamw"):
        params = dict(ds_config.optimizer_params or {})
        cls, _ = engine_cls.get_optimizer_configuration(fake, params, True)
        return "torch" if cls.__module__.startswith("torch.optim") else "cpu" if "CPU" in cls.__name__ else "gpu"
    if name in ("adagrad", "lion"):
        return "cpu" if cpu else "gpu"
    if name in ("lamb", "muon", "muadam", "muadamw", "musgd"):
        return "gpu"
    return None


def _device(offload: Any) -> str:
    """An offload section's device as a string ("none" when the section is absent)."""
    return "none" if offload is None else str(getattr(offload.device, "value", offload.device))


def _reading(parsed: Any, engine_cls: type) -> Reading:
    zero = parsed.zero_config
    return Reading(
        stage=int(parsed.zero_optimization_stage),
        fp16=bool(parsed.float16_config.enabled),
        bf16=bool(parsed.bfloat16_config.enabled),
        torch_autocast=bool(parsed.torch_autocast_enabled),
        torch_autocast_dtype={"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32",
                              "torch.int8": "int8"}.get(str(parsed.torch_autocast_dtype)),
        offload_optimizer=_device(zero.offload_optimizer),
        offload_param=_device(zero.offload_param),
        overlap_comm=bool(zero.overlap_comm),
        contiguous_gradients=bool(zero.contiguous_gradients),
        optimizer_name=parsed.optimizer_name,
        optimizer_backend=_deepspeed_backend(parsed, engine_cls),
        # read with get_scalar_param, then `assert self.zero_allow_untested_optimizer()` at initialize
        zero_allow_untested_optimizer=bool(parsed.zero_allow_untested_optimizer),
        autotp_size=int(parsed.tensor_parallel_config.autotp_size),
        fp16_master_weights_and_grads=bool(parsed.float16_config.fp16_master_weights_and_grads),
        bf16_master_weights_and_grads=bool(parsed.bfloat16_config.bf16_master_weights_and_grads),
        bf16_optimizer_states=bool(parsed.bfloat16_config.bf16_optimizer_states),
    )


@pytest.fixture(scope="session")
def deepspeed_readings() -> dict[str, Any]:
    """One parse pass over the corpus and the generated configs with DeepSpeed 0.19.8's DeepSpeedConfig."""
    pytest.importorskip("deepspeed")
    from tests.oracle import ds0195_worker

    config_cls = ds0195_worker._deepspeed_config_class()
    with ds0195_worker._quiet():
        from deepspeed.runtime.engine import DeepSpeedEngine
    corpus: list[dict[str, Any]] = []
    for path in corpus_files():
        try:
            corpus.append(core.load_config(path.read_text(encoding="utf-8")))
        except ValueError:
            continue
    generated = _generated_configs(400)
    readings: dict[str, list[tuple[dict[str, Any], Reading]]] = {"corpus": [], "generated": []}
    rejected = 0
    for kind, configs in (("corpus", corpus), ("generated", generated)):
        for config in configs:
            try:
                with ds0195_worker._quiet():
                    parsed = config_cls(_for_parsing(config), 1)
            except Exception:  # DeepSpeed rejects it: nothing to compare (the validator's parity tests judge it)
                rejected += 1
                continue
            readings[kind].append((config, _reading(parsed, DeepSpeedEngine)))
    return {**readings, "rejected": rejected, "corpus_total": len(corpus),
            "parse": lambda config: _reading(config_cls(_for_parsing(config), 1), DeepSpeedEngine)}


def _disagreements(config: dict[str, Any], ds: Reading) -> list[str]:
    """Every consumer's reading that differs from DeepSpeed's (an empty list: all agree)."""
    from ui import app_state

    meaning = effective(config)
    ctx = Context(config)
    settings = TrainingSettings.from_ds_config(config)
    ds_precision = "fp16" if ds.fp16 else "bf16" if ds.bf16 else "torch_autocast" if ds.torch_autocast else "fp32"
    ds_dtype = ds_precision if ds_precision in ("fp16", "bf16") else "fp32"
    checks: dict[str, tuple[Any, Any]] = {
        "effective.stage": (meaning.stage, ds.stage),
        "validator.stage": (ctx.stage, ds.stage),
        "estimator.stage": (settings.stage, ds.stage),
        "app_state.zero_stage": (app_state.zero_stage(config), ds.stage),
        "effective.precision": (meaning.precision, ds_precision),
        "validator.model_dtype": (model_dtype(ctx), ds_dtype),
        "effective.torch_autocast_dtype": (meaning.torch_autocast_dtype, ds.torch_autocast_dtype),
        "effective.offload_optimizer": (meaning.offload_optimizer, ds.offload_optimizer),
        "effective.offload_param": (meaning.offload_param, ds.offload_param),
        "effective.overlap_comm": (meaning.overlap_comm, ds.overlap_comm),
        "estimator.overlap_comm": (settings.overlap_comm, ds.overlap_comm),
        "effective.contiguous_gradients": (meaning.contiguous_gradients, ds.contiguous_gradients),
        "estimator.contiguous_gradients": (settings.contiguous_gradients, ds.contiguous_gradients),
        "effective.zero_allow_untested_optimizer": (meaning.zero_allow_untested_optimizer,
                                                     ds.zero_allow_untested_optimizer),
        "effective.autotp_size": (meaning.autotp_size, ds.autotp_size),
        "effective.fp16_master_weights_and_grads": (meaning.fp16_master_weights_and_grads,
                                                     ds.fp16_master_weights_and_grads),
        "effective.bf16_master_weights_and_grads": (meaning.bf16_master_weights_and_grads,
                                                     ds.bf16_master_weights_and_grads),
        "effective.bf16_optimizer_states": (meaning.bf16_optimizer_states, ds.bf16_optimizer_states),
    }
    from pathlib import Path

    from core import fit, perf
    from core.presets import Preset, facets

    facet = facets(Preset("x", {}, dict(config), Path("x.json"), builtin=False))
    planner = perf.read_settings(config, 8)
    checks.update({
        "presets.facets.stage": (facet["stage"], ds.stage),
        "presets.facets.offload": (facet["offload"], "nvme" if "nvme" in (ds.offload_optimizer, ds.offload_param)
                                   else "cpu" if "cpu" in (ds.offload_optimizer, ds.offload_param) else "none"),
        "planner.stage": (planner.stage, ds.stage),
        "planner.overlap_comm": (planner.memory.overlap_comm, ds.overlap_comm),
        # AutoTP on (size > 1) and dividing the 8 GPUs (else the planner notes it and ignores it)
        "planner.tp": (planner.tp, ds.autotp_size if ds.autotp_size > 1 and 8 % ds.autotp_size == 0 else 1),
        # FusedAdam: an Adam/AdamW section on the GPU without torch_adam (what the fp16/bf16 wrapper checks)
        "planner.fused_optimizer": (planner.fused_optimizer,
                                    ds.optimizer_name in ("adam", "adamw") and ds.optimizer_backend == "gpu"),
        # the fit advisor's ZeRO-stage ways start above the stage DeepSpeed would run, ZeRO-3 among them (a stage
        # that saves nothing, stage 1 for a stateless SGD, is no way out and is not offered)
        "fit.stages_above": (_fit_stages_start_above(fit, config, ds.stage), True),
    })
    if not (meaning.fp16_auto or meaning.bf16_auto):
        # an "auto" section is estimated as on, as the Precision page shows it (the HF Trainer fills it): DeepSpeed
        # reads the unfilled string as off, so only the configs without one compare
        checks["estimator.precision"] = (settings.precision, ds_dtype)
        checks["planner.precision"] = (planner.memory.precision, ds_dtype)
    if not (meaning.fp16_auto or meaning.bf16_auto):
        checks["presets.facets.precision"] = (facet["precision"], ds_precision)
    if ds.stage > 0 and meaning.optimizer_name in ("lamb", "muadamw"):  # untested with ZeRO: DeepSpeed asserts
        untested = any(f.code == "optimizer.untested-with-zero" for f in core.validate(config).findings)
        checks["validator.untested-with-zero"] = (untested, not ds.zero_allow_untested_optimizer)
    if not (meaning.fp16_auto or meaning.bf16_auto):  # "auto" is shown as the choice the HF Trainer fills
        checks["precision_mode"] = (precision_mode(config), ds_precision)
    # the estimator places bytes: offload only counts where DeepSpeed uses it (optimizer: stage >= 1, params: 3)
    if ds.stage >= 1:
        # below stage 3 DeepSpeedZeroOptimizer offloads to the CPU for any device but none (stage_1_and_2.py:
        # cpu_offload = device != none): no NVMe swapper, so "nvme" runs as CPU offload
        runs = "cpu" if ds.stage < 3 and ds.offload_optimizer == "nvme" else ds.offload_optimizer
        checks["estimator.offload_optimizer"] = (settings.offload_optimizer, runs)
    if ds.stage == 3:
        checks["estimator.offload_param"] = (settings.offload_param, ds.offload_param)
    if ds.optimizer_name is not None:
        checks["effective.optimizer_name"] = (meaning.optimizer_name, ds.optimizer_name)
    if ds.optimizer_backend is not None:
        checks["effective.optimizer_backend"] = (meaning.optimizer_backend, ds.optimizer_backend)
        checks["validator.optimizer_backend"] = (validator_backend(ctx), ds.optimizer_backend)
        checks["optimizer_page.backend"] = (optimizer_backend(config, ds.optimizer_name), ds.optimizer_backend)
    return [f"{name}: ours {ours!r}, DeepSpeed {theirs!r}" for name, (ours, theirs) in checks.items() if ours != theirs]


def _fit_stages_start_above(fit, config: dict[str, Any], ds_stage: int) -> bool:
    """Whether the fit advisor's ZeRO-stage ways start above the stage DeepSpeed runs: the next stage up, ZeRO-3
    beside it, none at stage 3. The next stage may be left out only when it saves no GPU memory (stage 1 for a
    stateless SGD in fp32): a way that gets the job no closer is not offered; a stage the validator refuses the
    job at (new errors) may be left out too: a way DeepSpeed refuses is no way out."""
    from core import memory
    from core.memory import Hardware, ModelCounts, Shape

    hardware = Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=1 << 30, cpu_ram_per_node_bytes=1 << 40)
    model, shape = ModelCounts(7_000_000_000, 200_000_000), Shape(1, 512)
    ways = fit.ways_to_fit(config, model, hardware, shape)
    stages = {w.config_patch["zero_optimization"]["stage"] for w in ways if w.kind == "zero_stage"}
    if ds_stage == 3:
        return not stages
    if stages and min(stages) <= ds_stage:
        return False
    if 3 not in stages:
        # offered only when the validator takes the ZeRO-3 job (an NVMe offload without a path that ZeRO-3 starts
        # using, AutoTP or Muon's reduce_scatter refused there: a way DeepSpeed refuses is no way out)
        return _refused_above(fit, config, 3)
    if min(stages) == ds_stage + 1:
        return True
    if _refused_above(fit, config, ds_stage + 1):
        return True
    next_stage = fit.apply_patch(config, {"zero_optimization": {"stage": ds_stage + 1}})
    return (memory.estimate(next_stage, model, hardware, shape).gpu_bytes
            >= memory.estimate(config, model, hardware, shape).gpu_bytes)


def _refused_above(fit, config: dict[str, Any], stage: int) -> bool:
    """Whether the validator refuses ``config`` at ZeRO ``stage`` with an error it does not have as written."""
    from core.validate import validate

    own = {(f.code, f.path) for f in validate(config, world_size=8).errors}
    moved = fit.apply_patch(config, {"zero_optimization": {"stage": stage}})
    return any((f.code, f.path) not in own for f in validate(moved, world_size=8).errors)


@pytest.mark.deepspeed
@pytest.mark.parametrize("kind", ["corpus", "generated"])
def test_every_consumer_reads_configs_as_deepspeed_does(deepspeed_readings, kind):
    pairs = deepspeed_readings[kind]
    assert len(pairs) >= (25 if kind == "corpus" else 200), f"too few {kind} configs parsed: {len(pairs)}"
    failures = [(config, problems) for config, ds in pairs if (problems := _disagreements(config, ds))]
    assert not failures, f"{len(failures)} of {len(pairs)} {kind} configs read differently:\n" + "\n".join(
        f"{config}\n    {'; '.join(problems)}" for config, problems in failures[:10]
    )


@pytest.mark.deepspeed
@pytest.mark.parametrize("config", [
    # issue 12: the estimator read the legacy form as stage 0
    {"zero_optimization": True, "optimizer": {"type": "AdamW"}},
    # issue 13: precision_mode read 1 / "yes" as off
    {"fp16": {"enabled": 1}},
    {"bf16": {"enabled": "yes"}},
    # issue 12: the optimizer page put torch_adam first but ignored that it is a Python truth value, and the
    # validator put the offload device first (and required stage > 0)
    {"optimizer": {"type": "AdamW", "params": {"torch_adam": "false"}},
     "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
    {"optimizer": {"type": "Lion"}, "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}},
    # the estimator read overlap_comm / pin_memory spellings other than true/false as the default
    {"zero_optimization": {"stage": 2, "overlap_comm": "true", "contiguous_gradients": "off"}},
    # the validator read the top-level "false" as false; DeepSpeed's assert sees a non-empty string
    {"zero_allow_untested_optimizer": "false", "optimizer": {"type": "Lamb"}, "zero_optimization": {"stage": 1}},
    # the planner ignored an autotp_size written as a float or a string (pydantic reads both as 2; for a string
    # deepspeed.initialize fails before it parses, which the planner notes)
    {"tensor_parallel": {"autotp_size": 2.0}},
    {"tensor_parallel": {"autotp_size": "2"}},
    # the estimator ignored the 16-bit master-weight flags (read as pydantic bools, also in `bfloat16`)
    {"bfloat16": {"enabled": True, "bf16_master_weights_and_grads": "on", "bf16_optimizer_states": 1},
     "zero_optimization": {"stage": 2}},
])
def test_fixed_disagreements_against_deepspeed(deepspeed_readings, config):
    assert _disagreements(config, deepspeed_readings["parse"](config)) == []


_Z = {"train_micro_batch_size_per_gpu": 1}


@pytest.mark.parametrize("zero", [
    {"stage": 3, "cpu_offload": True, "offload_optimizer": "auto"},
    {"stage": 3, "cpu_offload": "auto", "offload_optimizer": {"device": "cpu"}},
    {"stage": 3, "cpu_offload_param": True, "offload_param": "auto"},
    {"stage": 3, "stage3_gather_fp16_weights_on_model_save": "auto", "gather_16bit_weights_on_model_save": True},
    {"stage": 2, "cpu_offload": "auto"},
    {"stage": 2, "cpu_offload": None},
], ids=["legacy-true-new-auto", "legacy-auto-new-cpu", "param-legacy-true-new-auto", "gather-legacy-auto",
        "legacy-auto-alone", "legacy-null-alone"])
def test_a_deprecated_key_or_its_replacement_written_auto_is_read_fixed_and_migrated_as_deepspeed_reads_it(
        zero, deepspeed_readings):
    """DeepSpeedConfigModel drops "auto" keyword arguments before its deprecation check, so a pair with one "auto"
    is not "both set": the product called it an error, read the offload as none where DeepSpeed uses the CPU, and
    its fix (remove the deprecated key) turned CPU offload off. migrate said DeepSpeed refuses "auto" and null."""
    from core.autofix import fix_until_stable
    from core.migrate import left_behind, migrate

    config = {**_Z, "zero_optimization": zero}
    parse = deepspeed_readings["parse"]
    ds = parse(config)  # raises if DeepSpeed refuses it
    assert _disagreements(config, ds) == []
    assert not [f for f in core.validate(config).findings if f.severity == "error"]
    for changed in (fix_until_stable(config, unsafe=True).config, migrate(config)[0]):
        after = parse(changed)
        assert (after.offload_optimizer, after.offload_param) == (ds.offload_optimizer, ds.offload_param), changed
    assert left_behind(migrate(config)[0]) == []
