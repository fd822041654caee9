"""core.autofill against transformers' own HfTrainerDeepSpeedConfig and, for the whole pipeline, a real
``TrainingArguments`` (which hands the config to Accelerate's ``DeepSpeedPlugin``).

Most tests run transformers' real ``fill_match`` / ``trainer_config_process`` / ``trainer_config_finalize`` on a
subclass that adds the five helpers of ``accelerate.utils.deepspeed.HfDeepSpeedConfig`` (find_config_node,
get_value, is_true, is_zero3 and the stage read in __init__), with the arguments in a namespace carrying
``TrainingArguments.get_warmup_steps``: fast, and free to use any training value (``world_size`` is not a field).
The Accelerate step (the "auto" stage and offload settings) is checked against the real ``TrainingArguments``.
Every filling decision is transformers' or Accelerate's code.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.autofill import (
    HF_DEFAULTS,
    TRAINING_VALUES,
    AutoFillError,
    find_auto,
    needed_training_values,
    resolve_auto,
    switch_scheduler,
)
from core.presets import BUILTIN_DIR, list_presets
from core.validate import validate

hf_ds = pytest.importorskip("transformers.integrations.deepspeed")
transformers = pytest.importorskip("transformers")


class TrainerConfig(hf_ds.HfTrainerDeepSpeedConfig):
    """transformers' HfTrainerDeepSpeedConfig with accelerate's HfDeepSpeedConfig helpers (see module doc)."""

    def __init__(self, config):
        self.config = copy.deepcopy(config)
        self._dtype = None
        self.mismatches = []
        self._stage = self.get_value("zero_optimization.stage", -1)

    def find_config_node(self, ds_key_long):
        config = self.config
        nodes = ds_key_long.split(".")
        ds_key = nodes.pop()
        for node in nodes:
            config = config.get(node)
            if config is None:
                return None, ds_key
        return config, ds_key

    def get_value(self, ds_key_long, default=None):
        config, ds_key = self.find_config_node(ds_key_long)
        if config is None:
            return default
        return config.get(ds_key, default)

    def is_true(self, ds_key_long):
        value = self.get_value(ds_key_long)
        return False if value is None else bool(value)

    def is_zero3(self):
        return self._stage == 3


def hf_resolve(config: dict, values: dict) -> dict:
    """What the HF Trainer makes of ``config`` for these training values (raises ValueError like it)."""
    args = types.SimpleNamespace(**{k: v for k, v in values.items() if k not in ("hidden_size", "num_training_steps")})
    args.get_warmup_steps = functools.partial(transformers.TrainingArguments.get_warmup_steps, args)
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=values["hidden_size"]))
    ds = TrainerConfig(config)
    ds.trainer_config_process(args, auto_find_batch_size=values.get("auto_find_batch_size", False))
    ds.trainer_config_finalize(args, model, values["num_training_steps"])
    return ds.config


def full_values(**over):
    return {**HF_DEFAULTS, "hidden_size": 64, "num_training_steps": 100, "fp16_full_eval": False,
            "bf16_full_eval": False, "save_on_each_node": False, **over}


HF_PRESETS = [p for p in list_presets([BUILTIN_DIR])[0] if find_auto(p.config)]


def test_defaults_match_training_arguments():
    fields = {f.name: f.default for f in dataclasses.fields(transformers.TrainingArguments)}
    for name, value in HF_DEFAULTS.items():
        if name in ("world_size", "zero_stage"):
            continue  # a property (1 without a launcher) and Accelerate's plugin setting, not fields
        assert fields[name] == value, name
    assert set(HF_DEFAULTS) - {"world_size", "zero_stage"} <= set(fields)


def test_the_zero_stage_default_is_accelerates(clean_environment):
    from accelerate.utils import DeepSpeedPlugin

    assert DeepSpeedPlugin(hf_ds_config={"zero_optimization": {}}).zero_stage == HF_DEFAULTS["zero_stage"]


@pytest.mark.parametrize("preset", HF_PRESETS, ids=lambda p: p.name)
@pytest.mark.parametrize("values", [
    full_values(),
    full_values(world_size=8, per_device_train_batch_size=4, gradient_accumulation_steps=2, bf16=True,
                learning_rate=3e-4, warmup_steps=0.1, num_training_steps=1234, hidden_size=4096),
    full_values(fp16=True, warmup_steps=50, hidden_size=768, weight_decay=0.1, max_grad_norm=0.5),
    full_values(save_on_each_node=True, bf16_full_eval=True, warmup_steps=0.0),
])
def test_presets_resolve_like_transformers(preset, values):
    ours = resolve_auto(preset.config, **values)
    assert ours == hf_resolve(preset.config, values)
    assert find_auto(ours) == []


def test_hidden_size_buckets():
    cfg = {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                                 "stage3_param_persistence_threshold": "auto"}}
    out = resolve_auto(cfg, hidden_size=4096)
    assert out["zero_optimization"] == {"stage": 3, "reduce_bucket_size": 4096 * 4096,
                                        "stage3_prefetch_bucket_size": int(0.9 * 4096 * 4096),
                                        "stage3_param_persistence_threshold": 40960}
    # below stage 3 the Trainer fills only the reduce bucket and leaves the stage-3 keys "auto"
    cfg2 = {"zero_optimization": {**cfg["zero_optimization"], "stage": 2}}
    out2 = resolve_auto(cfg2, hidden_size=10)
    assert out2["zero_optimization"]["reduce_bucket_size"] == 100
    assert find_auto(out2) == ["zero_optimization.stage3_prefetch_bucket_size",
                               "zero_optimization.stage3_param_persistence_threshold"]
    assert out2 == hf_resolve(cfg2, full_values(hidden_size=10))


def test_input_not_mutated():
    preset = HF_PRESETS[0]
    before = copy.deepcopy(preset.config)
    out = resolve_auto(preset.config, **full_values())
    assert preset.config == before
    out["optimizer"]["params"]["lr"] = 123
    assert preset.config == before  # deep copy


@pytest.mark.parametrize(("key", "needs"), [
    ("train_micro_batch_size_per_gpu", "per_device_train_batch_size"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps"),
    ("gradient_clipping", "max_grad_norm"),
    ("optimizer.params.lr", "learning_rate"),
    ("optimizer.params.eps", "adam_epsilon"),
    ("optimizer.params.weight_decay", "weight_decay"),
    ("scheduler.params.warmup_max_lr", "learning_rate"),
    ("scheduler.params.total_num_steps", "num_training_steps"),
    ("fp16.enabled", "fp16"),
    ("bf16.enabled", "bf16"),
    ("zero_optimization.reduce_bucket_size", "hidden_size"),
])
def test_missing_value_named(key, needs):
    parts = key.split(".")
    cfg: dict = {}
    node = cfg
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = "auto"
    values = {k: v for k, v in full_values().items() if k != needs}
    with pytest.raises(AutoFillError) as info:
        resolve_auto(cfg, **values)
    assert info.value.param == needs
    assert needs in str(info.value) and key in str(info.value)
    assert needed_training_values(cfg) == [needs]


def test_train_batch_size_needs_all_three():
    with pytest.raises(AutoFillError, match="world_size"):
        resolve_auto({"train_batch_size": "auto"}, per_device_train_batch_size=2, gradient_accumulation_steps=1)
    assert resolve_auto({"train_batch_size": "auto"}, world_size=4, per_device_train_batch_size=2,
                        gradient_accumulation_steps=3) == {"train_batch_size": 24}


def test_warmup_steps_ratio_and_minimum():
    cfg = {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}}
    assert resolve_auto(cfg, warmup_steps=0.1, num_training_steps=95)["scheduler"]["params"][
        "warmup_num_steps"] == math.ceil(9.5)
    assert resolve_auto(cfg, warmup_steps=0, num_training_steps=95)["scheduler"]["params"]["warmup_num_steps"] == 1
    assert resolve_auto(cfg, warmup_steps=30, num_training_steps=95)["scheduler"]["params"]["warmup_num_steps"] == 30


def test_mismatch_refused_like_transformers():
    cfg = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    values = full_values(per_device_train_batch_size=8, learning_rate=1e-4)
    with pytest.raises(ValueError, match="mismatch"):
        hf_resolve(cfg, values)
    with pytest.raises(AutoFillError, match="train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=8"):
        resolve_auto(cfg, **values)
    # auto_find_batch_size: the Trainer does not insist on the micro batch
    values["auto_find_batch_size"] = True
    assert resolve_auto(cfg, **values) == hf_resolve(cfg, values)


@pytest.mark.parametrize(("name", "value"), [
    ("world_size", 0), ("world_size", 1.5), ("world_size", True), ("learning_rate", "1e-4"),
    ("learning_rate", float("nan")), ("learning_rate", 10**400), ("fp16", 1), ("hidden_size", -4),
    ("warmup_steps", -1), ("bogus", 1),
])
def test_bad_training_values_named(name, value):
    with pytest.raises(AutoFillError) as info:
        resolve_auto({}, **{name: value})
    assert info.value.param == name and name in str(info.value)


def test_not_a_config():
    with pytest.raises(AutoFillError, match="JSON object"):
        resolve_auto(["auto"])  # type: ignore[arg-type]


def test_find_auto_paths():
    assert find_auto({"a": "auto", "b": {"c": ["x", "auto", {"d": "auto"}]}}) == ["a", "b.c[1]", "b.c[2].d"]


# ---------------------------------------------------------------- property: any config shape, any values

auto_or = st.sampled_from(["auto", 1, 2, 0.5, None, True])
configs = st.fixed_dictionaries({}, optional={
    "train_batch_size": auto_or, "train_micro_batch_size_per_gpu": auto_or, "gradient_accumulation_steps": auto_or,
    "gradient_clipping": auto_or,
    "optimizer": st.fixed_dictionaries({"type": st.just("AdamW")}, optional={"params": st.fixed_dictionaries(
        {}, optional={"lr": auto_or, "betas": st.sampled_from(["auto", [0.9, 0.999], [0.8, 0.9]]), "eps": auto_or,
                      "weight_decay": auto_or})}),
    "scheduler": st.fixed_dictionaries({"type": st.just("WarmupDecayLR")}, optional={"params": st.fixed_dictionaries(
        {}, optional={"warmup_min_lr": auto_or, "warmup_max_lr": auto_or, "warmup_num_steps": auto_or,
                      "total_num_steps": auto_or})}),
    "fp16": st.fixed_dictionaries({}, optional={"enabled": auto_or}),
    "bf16": st.fixed_dictionaries({}, optional={"enabled": auto_or}),
    "zero_optimization": st.fixed_dictionaries({"stage": st.sampled_from([0, 1, 2, 3])}, optional={
        "reduce_bucket_size": auto_or, "stage3_prefetch_bucket_size": auto_or,
        "stage3_param_persistence_threshold": auto_or}),
    "checkpoint": st.just({"tag_validation": "Warn"}),
})
values_st = st.fixed_dictionaries({
    "world_size": st.integers(1, 64), "per_device_train_batch_size": st.integers(1, 8),
    "gradient_accumulation_steps": st.integers(1, 8), "max_grad_norm": st.sampled_from([0.5, 1.0, 1]),
    "learning_rate": st.sampled_from([1e-4, 0.5, 2]), "adam_beta1": st.sampled_from([0.9, 0.8]),
    "adam_beta2": st.sampled_from([0.999, 0.9]), "adam_epsilon": st.sampled_from([1e-8, 0.5]),
    "weight_decay": st.sampled_from([0.0, 0.5, 1]), "fp16": st.booleans(), "bf16": st.booleans(),
    "fp16_full_eval": st.booleans(), "bf16_full_eval": st.booleans(), "save_on_each_node": st.booleans(),
    "auto_find_batch_size": st.booleans(), "hidden_size": st.integers(1, 9000),
    "num_training_steps": st.integers(1, 10_000), "warmup_steps": st.sampled_from([0, 0.05, 0.5, 1, 10, 99.5]),
})


@given(cfg=configs, values=values_st)
@settings(max_examples=400, deadline=None)
def test_property_same_as_transformers(cfg, values):
    try:
        expected = hf_resolve(cfg, values)
    except ValueError as exc:
        assert "mismatch" in str(exc)
        with pytest.raises(AutoFillError, match="disagree"):
            resolve_auto(cfg, **values)
        return
    assert resolve_auto(cfg, **values) == expected


def test_training_value_names_are_trainer_names():
    fields = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    extra = set(TRAINING_VALUES) - fields
    assert extra == {"world_size", "hidden_size", "num_training_steps", "zero_stage"}


def test_auto_train_batch_size_under_sequence_parallelism_is_what_deepspeed_checks():
    """With sequence_parallel_size 2 on 8 GPUs DeepSpeed checks micro × accumulation × 4; the resolver wrote the
    Trainer's own 8 × micro × accumulation, which the product's validator and DeepSpeed then refused."""
    import core
    from tests.oracle.oracle import deepspeed_verdict

    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "sequence_parallel_size": 2}
    resolved = resolve_auto(config, world_size=8, per_device_train_batch_size=2, gradient_accumulation_steps=3)
    assert resolved["train_batch_size"] == 2 * 3 * 4
    assert not [f for f in core.validate(resolved, world_size=8).findings if f.severity == "error"]
    assert deepspeed_verdict(resolved, world_size=8).accepted
    with pytest.raises(AutoFillError, match="does not divide world_size 7") as raised:
        resolve_auto(config, world_size=7, per_device_train_batch_size=2, gradient_accumulation_steps=3)
    assert raised.value.param == "world_size"
    # without sequence parallelism (or a degree of 1) it stays the Trainer's product
    without = {k: v for k, v in config.items() if k != "sequence_parallel_size"}
    for plain in (without, {**config, "sequence_parallel_size": 1}):
        assert resolve_auto(plain, world_size=8, per_device_train_batch_size=2,
                            gradient_accumulation_steps=3)["train_batch_size"] == 48


# ---------------------------------------------------------------- the whole pipeline: TrainingArguments + Accelerate


@pytest.fixture
def clean_environment(monkeypatch):
    """TrainingArguments writes ACCELERATE_* variables into os.environ; they must not leak into other tests,
    and none set outside may steer Accelerate's defaults here."""
    import os

    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith("ACCELERATE_")]:
        monkeypatch.delenv(name)
    yield monkeypatch
    os.environ.clear()
    os.environ.update(saved)


def trainer_pipeline(config: dict, **arguments) -> dict:
    """What a real ``TrainingArguments(deepspeed=config)`` and ``trainer_config_finalize`` hand DeepSpeed, without
    the two keys Accelerate adds that are not "auto" fills (steps_per_print; gradient_accumulation_steps when
    the config has none)."""
    args = transformers.TrainingArguments(output_dir="unused", deepspeed=copy.deepcopy(config), report_to=[],
                                          **arguments)
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=64))
    args.hf_deepspeed_config.trainer_config_finalize(args, model, 100)
    out = copy.deepcopy(args.hf_deepspeed_config.config)
    out.pop("steps_per_print")
    if "gradient_accumulation_steps" not in config:
        out.pop("gradient_accumulation_steps")
    return out


PIPELINE_CONFIGS = {
    "auto-stage": {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": "auto"}},
    "auto-stage-and-buckets": {"zero_optimization": {
        "stage": "auto", "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
        "stage3_param_persistence_threshold": "auto", "stage3_gather_16bit_weights_on_model_save": "auto"}},
    "auto-offload": {"zero_optimization": {
        "stage": 3, "offload_optimizer": {"device": "auto", "nvme_path": "auto"},
        "offload_param": {"device": "auto", "nvme_path": "auto"}}},
    "written-stage-kept": {"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}}},
}


@pytest.mark.parametrize("accelerate_stage", [None, "3"], ids=["default", "accelerate-config-3"])
@pytest.mark.parametrize("name", PIPELINE_CONFIGS)
def test_the_whole_trainer_pipeline_fills_like_resolve_auto(name, accelerate_stage, clean_environment):
    """The HF Trainer starts DeepSpeed through Accelerate's plugin: an "auto" ZeRO stage is its zero_stage
    (2, or what ``accelerate config`` wrote), not DeepSpeed's default 0, and "auto" offload settings are its
    "none"s."""
    if accelerate_stage:
        clean_environment.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", accelerate_stage)
    config = PIPELINE_CONFIGS[name]
    values = full_values(hidden_size=64, num_training_steps=100, per_device_train_batch_size=4,
                         zero_stage=int(accelerate_stage or HF_DEFAULTS["zero_stage"]))
    expected = trainer_pipeline(config, per_device_train_batch_size=4)
    assert resolve_auto(config, **values) == expected
    if config["zero_optimization"]["stage"] == "auto":
        assert expected["zero_optimization"]["stage"] == int(accelerate_stage or 2)


def test_accelerate_refuses_a_config_without_a_zero_section_with_the_words_recorded(clean_environment):
    from core.autofill import ACCELERATE_NO_ZERO

    with pytest.raises(ValueError) as refused:
        trainer_pipeline({"train_micro_batch_size_per_gpu": "auto"})
    assert str(refused.value) == ACCELERATE_NO_ZERO
    with pytest.raises(AttributeError):  # the boolean form: Accelerate navigates the section with .get
        trainer_pipeline({"zero_optimization": True})


@pytest.mark.parametrize("zero", [{"stage": 0}, {}])
def test_the_minimal_form_for_the_trainer_keeps_the_zero_section(zero, clean_environment):
    """The Review page's "only what differs from defaults" form: a ZeRO section of defaults is dropped for plain
    DeepSpeed, but Accelerate refuses the file without one, so the HF form keeps it (with the written stage)."""
    from core.export import strip_defaults

    config = {"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"}, "zero_optimization": zero}
    assert "zero_optimization" not in strip_defaults(config)
    minimal = strip_defaults(config, target="hf")
    assert minimal["zero_optimization"] == ({"stage": 0} if zero else {})
    trainer_pipeline(minimal)  # accepted
    assert not validate(minimal, target="hf").errors


def test_auto_stage_needs_accelerates_zero_stage():
    with pytest.raises(AutoFillError) as missing:
        resolve_auto({"zero_optimization": {"stage": "auto"}})
    assert missing.value.param == "zero_stage"
    assert "zero_stage" in needed_training_values({"zero_optimization": {"stage": "auto"}})
    with pytest.raises(AutoFillError, match="ZeRO stage"):
        resolve_auto({"zero_optimization": {"stage": "auto"}}, zero_stage=4)


def test_trainer_schedule_fills_only_the_sections_that_draw_the_schedule():
    from core.autofill import trainer_schedule

    config = next(p.config for p in HF_PRESETS if p.name == "hf-auto-zero2")
    filled, used = trainer_schedule(config, 500)
    assert set(filled) == {"optimizer", "scheduler"} and find_auto(filled) == []
    expected = resolve_auto({k: config[k] for k in ("optimizer", "scheduler")},
                            **{**HF_DEFAULTS, "num_training_steps": 500})
    assert filled == expected
    assert "learning_rate=5e-05" in used and "num_training_steps=500" in used
    assert not any(name.startswith("adam_") for name in used)  # filled, but they do not draw the learning rate


@pytest.mark.parametrize(("written", "auto_key", "gpus"), [
    ({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 16}, "gradient_accumulation_steps", 4),
    ({"train_batch_size": 48, "gradient_accumulation_steps": 4}, "train_micro_batch_size_per_gpu", 8),
    ({"train_batch_size": 128, "train_micro_batch_size_per_gpu": 16}, "gradient_accumulation_steps", 4),
])
def test_a_written_global_batch_no_auto_value_can_match_is_an_error_for_the_hf_target(written, auto_key, gpus):
    """The validator's verdict equals the real transformers' for every value the Trainer could fill in (1..16)."""
    pytest.importorskip("transformers")
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    from core.validate import validate

    config = {**written, auto_key: "auto", "zero_optimization": {"stage": 2}}
    flagged = "hf.batch-never-matches" in validate(config, world_size=gpus, target="hf").codes()
    some_value_trains = False
    for value in range(1, 17):
        hf = HfTrainerDeepSpeedConfig(copy.deepcopy(config))
        args = {"train_micro_batch_size_per_gpu": written.get("train_micro_batch_size_per_gpu", value),
                "gradient_accumulation_steps": written.get("gradient_accumulation_steps", value)}
        hf.fill_match("train_micro_batch_size_per_gpu", args["train_micro_batch_size_per_gpu"], "per_device")
        hf.fill_match("gradient_accumulation_steps", args["gradient_accumulation_steps"], "accum")
        hf.fill_match("train_batch_size", args["train_micro_batch_size_per_gpu"]
                      * args["gradient_accumulation_steps"] * gpus, "train_batch_size (calculated)")
        some_value_trains |= not hf.mismatches
    assert flagged == (not some_value_trains)


def test_a_first_scheduler_gets_its_step_count_as_a_switch_does():
    """With no scheduler (or one without params) WarmupDecayLR came without total_num_steps, which it requires,
    while switching to it from WarmupLR filled it. Its peak is the optimizer's lr: DeepSpeed's default
    warmup_max_lr (0.001) would replace it (tests/test_scheduler_peak_lr.py); WarmupLR follows the lr from 0.17.2."""
    optimizer = {"optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
    assert switch_scheduler(optimizer, "WarmupDecayLR", 5000)["scheduler"] == {
        "type": "WarmupDecayLR", "params": {"total_num_steps": 5000, "warmup_max_lr": 1e-4}}
    typed = {**optimizer, "scheduler": {"type": "WarmupDecayLR"}}  # as the app writes the type before switching
    assert switch_scheduler(typed, "WarmupDecayLR", 5000)["scheduler"]["params"] == {"total_num_steps": 5000,
                                                                                     "warmup_max_lr": 1e-4}
    assert switch_scheduler(optimizer, "WarmupLR", 5000)["scheduler"] == {"type": "WarmupLR", "params": {}}
    kept = {"scheduler": {"type": "WarmupLR", "params": [1]}}
    assert switch_scheduler(kept, "WarmupDecayLR", 5000) == {"scheduler": {"type": "WarmupDecayLR", "params": [1]}}
    assert switch_scheduler({"scheduler": {"type": "WarmupLR"}}, None) == {}
    assert switch_scheduler({}, None) == {}


def test_no_scheduler_type_takes_its_params_away():
    """A scheduler set back to "not set" left its params: DeepSpeed builds no scheduler without a type, and the HF
    Trainer takes any "scheduler" key as one to build (hf.scheduler-no-type), a hunt of 30 Nov 2026."""
    params = {"warmup_max_lr": "auto", "warmup_num_steps": "auto"}
    assert switch_scheduler({"scheduler": {"type": "WarmupLR", "params": params}}, None, target="hf") == {}
    assert switch_scheduler({"scheduler": {"params": params, "team_note": 1}}, None) == {"scheduler": {"team_note": 1}}


def test_a_scheduler_switched_away_and_back_gets_its_params_back_in_their_order():
    """WarmupDecayLR -> WarmupLR -> WarmupDecayLR appended the remembered total_num_steps after warmup_num_steps."""
    params = {"warmup_min_lr": 0, "warmup_max_lr": 3e-5, "total_num_steps": 1000, "warmup_num_steps": 100}
    config = {"scheduler": {"type": "WarmupDecayLR", "params": params}}
    away = switch_scheduler(config, "WarmupLR", 5000)
    assert "total_num_steps" not in away["scheduler"]["params"]
    back = switch_scheduler(away, "WarmupDecayLR", 5000, remembered=params)
    assert back == config and list(back["scheduler"]["params"]) == list(params)
    # a key the other type added stays where it is; the remembered ones go before the next remembered key it has
    away["scheduler"]["params"] = {"warmup_min_lr": 0, "warmup_type": "linear", "warmup_num_steps": 100}
    back = switch_scheduler(away, "WarmupDecayLR", 5000, remembered=params)
    assert list(back["scheduler"]["params"]) == ["warmup_min_lr", "warmup_type", "warmup_max_lr", "total_num_steps",
                                                 "warmup_num_steps"]


def test_needed_training_values_under_sequence_parallelism():
    """The probe ran as the Trainer's single process, which sequence_parallel_size 2 cannot divide: every probe
    failed on world_size, so only the batch values were asked for and gradient_clipping's max_grad_norm never was
    (the Review page then said it could not resolve, with no box to give it in)."""
    from core.autofill import needed_training_values

    config = {"train_batch_size": "auto", "gradient_clipping": "auto", "sequence_parallel_size": 2}
    assert needed_training_values(config) == ["world_size", "per_device_train_batch_size",
                                              "gradient_accumulation_steps", "max_grad_norm"]


@pytest.mark.parametrize("new_type", ["WarmupLR", "LRRangeTest", "OneCycle", "WarmupDecayLR", "WarmupCosineLR"])
def test_switching_to_a_scheduler_writes_its_params_even_when_none_are_filled(new_type):
    """Choosing WarmupLR (whose parameters all have defaults) for a config without a scheduler wrote
    {"type": "WarmupLR"} alone, which DeepSpeed refuses (it calls the scheduler with **params): the Optimizer page
    then showed scheduler.params-missing for a choice the page itself made."""
    from core.validate import validate

    out = switch_scheduler({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW",
                                                                              "params": {"lr": 1e-4}}},
                           new_type, train_steps=100)
    assert isinstance(out["scheduler"].get("params"), dict)
    assert "scheduler.params-missing" not in {f.code for f in validate(out, world_size=1).findings}
