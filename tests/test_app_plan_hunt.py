"""The Plan page's "Use this config" (AppTest bug hunt): the loaded config is the row it ranked (accepted, fitting,
costed as ranked), what it changed on the Start page is said, and tiny step times are not shown as zero."""

from __future__ import annotations

import math

import pytest
from app_support import app, html_tables

from core.models import get_config, get_spec
from core.perf.recommend import adopt_candidate, build_config
from core.schema.base import DEFAULT_VERSION

PAGE = "pages/plan.py"
LLAMA7 = "meta-llama/Llama-2-7b-hf"


def _model(name: str) -> dict:
    spec = get_spec(name)
    return dict(model=name, model_config=get_config(name), total_params=spec.total_params,
                largest_layer_params=spec.largest_layer_params)


def _headline(at) -> list[str]:
    return [m.value for m in at.markdown
            if "Fits**" in m.value or "fit**" in m.value or "Refused" in m.value or "Accepted" in m.value]


def _message(at) -> str:
    return next(s.value for s in at.success if s.value.startswith("Loaded rank"))


def _predicted_step(at) -> float:
    at.switch_page("pages/zero.py").run()
    assert not at.exception, at.exception
    shown = next(m for m in at.metric if m.label == "Predicted step time").value  # "1.234 s" or "194 ms"
    return float(shown.removesuffix(" ms")) / 1e3 if shown.endswith(" ms") else float(shown.removesuffix(" s"))


def _same_step(shown: float, row: float) -> bool:
    """The table's 3 decimals against the metric's 3 significant figures: equal within both roundings."""
    return abs(shown - row) <= 0.5 * 10 ** (math.floor(math.log10(row)) - 2) + 0.0005


ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1},
           "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
SEQUENCE_PARALLEL = {"train_batch_size": 64, "sequence_parallel_size": 2, "zero_optimization": {"stage": 1},
                     "bf16": {"enabled": True}}


OVERRIDE_WORDS = "the planner ranks data parallelism over every GPU with these batch keys, which they would override"


@pytest.mark.parametrize(("config", "key", "version", "why"), [
    (SEQUENCE_PARALLEL, "sequence_parallel_size", "0.19.7", OVERRIDE_WORDS),
    (ELASTIC, "elasticity", "0.19.7", OVERRIDE_WORDS),
    (ELASTIC, "elasticity", "0.19.8", "DeepSpeed 0.19.8 refuses any config containing it; the row writes the batch "
                                      "keys directly instead"),
    ({**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "enabled": False}}, "elasticity", "0.19.8",
     "DeepSpeed 0.19.8 refuses any config containing it; the row writes the batch keys directly instead"),
], ids=["sequence-parallel", "elastic-0.19.7", "elastic-0.19.8", "elastic-off-0.19.8"])
def test_a_used_row_is_accepted_and_fits_as_ranked_with_sequence_parallelism_or_elasticity(config, key, version, why):
    """Kept sequence parallelism halved the data-parallel ranks (refused: 256 != 2 x 16 x 4) and kept elastic
    training chose its own batch (refused, and "Does not fit 114.9 GiB" for a row that fits): both go, said.
    0.19.8 does not run elastic training but refuses any config with an ``elasticity`` section, on or off: it was
    kept, and the loaded row was refused (removed.enabled-section); it goes too, said with that release's reason."""
    at = app(config, PAGE, version=version, **_model(LLAMA7))
    row_gib = html_tables(at)[0]["GPU GiB"].iloc[0]
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    assert key not in at.session_state["config"]
    verdict, fit = _headline(at)
    assert "**Accepted**" in verdict, verdict
    assert "**Fits**" in fit and f"GPU {float(row_gib):.1f} of" in fit, (fit, row_gib)
    assert f"your {key} removed ({why})" in _message(at)


def test_the_batch_overriding_keys_are_refused_on_sight_as_each_releases_profile_says():
    """Adoption asks the schema whether a release refuses ``elasticity`` / ``sequence_parallel_size`` on sight (perf
    does not import core.versions); the release profiles' own list must agree, release by release."""
    from core import versions
    from core.perf.recommend import _OVERRIDING_KEYS, _refused_on_sight

    for version in versions.RELEASES:
        for key in (*_OVERRIDING_KEYS, "amp"):
            assert _refused_on_sight(key, version) == (key in versions.removed_top_level_keys(version)), (version, key)
    assert _refused_on_sight("elasticity", "0.19.8") and not _refused_on_sight("elasticity", "0.19.7")


def test_adoption_removes_only_what_overrides_the_batch_keys_and_adds_an_optimizer_only_when_none():
    from core.perf.recommend import removed_by_adoption

    candidate = build_config(stage=1, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=2,
                             grad_accum=4, world_size=8, precision="bf16", gpus_per_node=8)
    harmless = {"sequence_parallel_size": 1, "elasticity": {"enabled": False, "max_train_batch_size": 64}}
    adopted = adopt_candidate(harmless, candidate, version="0.19.7")
    assert adopted["sequence_parallel_size"] == 1 and adopted["elasticity"] == harmless["elasticity"]
    assert removed_by_adoption(harmless, adopted) == []
    # 0.19.8 refuses any elasticity section, off or not: it goes there
    assert removed_by_adoption(harmless, adopt_candidate(harmless, candidate, version="0.19.8")) == ["elasticity"]
    assert adopted["optimizer"] == candidate["optimizer"]  # none of the user's: the one the row was costed with
    lamb = {"optimizer": {"type": "Lamb", "params": {"lr": 3e-4}}}
    assert adopt_candidate(lamb, candidate)["optimizer"] == lamb["optimizer"]


def _gpt2_on_v100(at) -> float:
    at.selectbox(key="plan_model").set_value("openai-community/gpt2").run()
    at.selectbox(key="plan_gpu").set_value("NVIDIA V100 16GB").run()
    at.number_input(key="plan_seq").set_value(1024).run()
    at.number_input(key="plan_batch").set_value(64).run()
    assert not at.exception, at.exception
    return float(html_tables(at)[0]["Step s"].iloc[0])


def test_a_used_row_without_an_optimizer_of_the_users_is_costed_as_ranked():
    """Row 1 (ZeRO-0, fp16) at 0.194 s was predicted at 0.228 s once loaded: its AdamW section was dropped, and
    fp16 at stage 0 without FusedAdam runs the unfused fp16 optimizer."""
    at = app(None, PAGE)
    row = _gpt2_on_v100(at)
    at.button(key="plan_use").click().run()
    assert at.session_state["config"]["optimizer"]["type"] == "AdamW"
    assert "its optimizer" in _message(at)
    step = _predicted_step(at)
    assert _same_step(step, row), (step, row)


def test_the_users_optimizer_is_kept_and_ranked_with():
    """With the user's torch Adam (unfused at stage 0 in fp16) the rows were costed with the planner's FusedAdam."""
    user = {"optimizer": {"type": "Adam", "params": {"lr": 3e-4, "torch_adam": True}}, "fp16": {"enabled": True}}
    at = app(user, PAGE)
    row = _gpt2_on_v100(at)
    at.button(key="plan_use").click().run()
    assert at.session_state["config"]["optimizer"] == user["optimizer"]
    step = _predicted_step(at)
    assert _same_step(step, row), (step, row)


def test_a_custom_gpu_is_named_and_every_start_page_change_is_said():
    """The planner silently planned a Custom 24 GiB GPU as an H100, and "Use this config" changed the Start page's
    GPU, memory and attention while its message named only the batch, precision and ZeRO."""
    at = app(None, PAGE, gpu="Custom", gpu_memory_gib=24.0, gpus_per_node=4, **_model("meta-llama/Llama-2-13b-hf"))
    warning = next(w.value for w in at.warning if "not in the planner's catalog" in w.value)
    assert "(Custom, 24 GiB)" in warning and "plans for the NVIDIA H100 80GB (79.1 GiB)" in warning
    at.number_input(key="plan_seq").set_value(1024).run()
    at.number_input(key="plan_nodes").set_value(2).run()
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    ctx = at.session_state["context"]
    message = _message(at)
    changed = message.split("Start page changed to the plan's: ")[1].removesuffix(". Review & export has the file.")
    expected = ["GPU Custom → NVIDIA H100 80GB", f"GPU memory (GiB) 24 → {ctx['gpu_memory_gib']:g}",
                "nodes 1 → 2", "sequence length 2048 → 1024"]  # the attention is the Start page's (sdpa)
    if ctx["recompute"] != "none":
        expected.append(f"recompute none → {ctx['recompute']}")
    assert sorted(changed.split(", ")) == sorted(expected), message
    assert "GPUs per node" not in message and "model " not in changed  # unchanged: not listed
    assert not any("not in the planner's catalog" in w.value for w in at.warning)  # the H100 now


def test_a_tiny_models_step_time_is_not_shown_as_zero():
    at = app(None, PAGE, model=None, model_config=None, total_params=1_000_000, largest_layer_params=100_000)
    at.number_input(key="plan_batch").set_value(8).run()
    steps = html_tables(at)[0]["Step s"].astype(float)
    assert (steps > 0).all(), steps
    fastest = next(i.value for i in at.info if "Fastest fitting" in i.value)
    assert " 0.00 s per step" not in fastest and f"{steps.iloc[0]:g} s per step" in fastest, fastest


HF_AUTO_ADAMW = {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}}


def test_an_hf_target_gets_an_optimizer_the_trainer_fills_and_it_is_costed_as_ranked():
    """For the HF Trainer the adopted AdamW wrote lr 1e-4, which the Trainer refuses against its --learning_rate
    (default 5e-5); now every parameter is "auto", as the hf-auto presets write them, and the row's step holds."""
    from core.autofill import resolve_auto
    from core.validate import validate

    at = app(None, PAGE, target="hf")
    row = _gpt2_on_v100(at)
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    config = at.session_state["config"]
    assert config["optimizer"] == HF_AUTO_ADAMW
    filled = resolve_auto(config, learning_rate=5e-5, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                          weight_decay=0.0)  # the Trainer's defaults: no disagreement raised
    assert filled["optimizer"]["params"] == {"lr": 5e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}
    findings = validate(config, target="hf", world_size=8).findings
    assert not [f for f in findings if (f.path or "").startswith("optimizer")], findings
    assert 'its optimizer (its parameters "auto"' in _message(at)
    step = _predicted_step(at)
    assert _same_step(step, row), (step, row)


def test_an_hf_target_is_told_the_trainer_arguments_the_loaded_row_needs():
    """The loaded row writes its batch keys and precision, which the HF Trainer compares with its arguments (its
    default per-device batch is 8) and refuses when they differ: the message now says which arguments to pass."""
    from core.autofill import AutoFillError, resolve_auto

    at = app(None, PAGE, target="hf")
    _gpt2_on_v100(at)
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    config = at.session_state["config"]
    micro, accum = config["train_micro_batch_size_per_gpu"], config["gradient_accumulation_steps"]
    mode = "fp16" if config.get("fp16", {}).get("enabled") is True else "bf16"
    assert (f"Run the HF Trainer with --per_device_train_batch_size {micro} --gradient_accumulation_steps {accum} "
            f"--{mode}: it refuses a config its arguments contradict") in _message(at)
    world = at.session_state["context"]["gpus_per_node"] * at.session_state["context"]["nodes"]
    said = {"per_device_train_batch_size": micro, "gradient_accumulation_steps": accum, mode: True,
            "world_size": world, "learning_rate": 5e-5, "weight_decay": 0.0, "adam_beta1": 0.9, "adam_beta2": 0.999,
            "adam_epsilon": 1e-8}
    resolve_auto(config, **said)  # the arguments said: accepted
    with pytest.raises(AutoFillError):  # another per-device batch (the Trainer's default is 8): refused
        resolve_auto(config, **{**said, "per_device_train_batch_size": micro + 1})
    plain = app(None, PAGE)
    _gpt2_on_v100(plain)
    plain.button(key="plan_use").click().run()
    assert "Run the HF Trainer" not in _message(plain)


def test_a_deepspeed_target_still_gets_a_written_optimizer():
    candidate = build_config(stage=1, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=2,
                             grad_accum=4, world_size=8, precision="bf16", gpus_per_node=8)
    assert adopt_candidate({}, candidate)["optimizer"] == candidate["optimizer"]
    assert adopt_candidate({}, candidate, target="hf")["optimizer"] == HF_AUTO_ADAMW
    lamb = {"optimizer": {"type": "Lamb", "params": {"lr": 3e-4}}}
    assert adopt_candidate(lamb, candidate, target="hf")["optimizer"] == lamb["optimizer"]


#: bf16 master weights with bf16 optimizer states: the pair 0.19.x runs without an optimizer offload (master weights
#: alone need DeepSpeedCPUAdam there, and adoption removes them from a row without it)
BF16_MASTER = {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
               "zero_optimization": {"stage": 2}}


@pytest.mark.parametrize("version", ["0.16.9", DEFAULT_VERSION])
def test_rows_are_ranked_as_loaded_in_the_sessions_release_and_a_used_row_fits_as_ranked(version):
    """The rows were the bare candidates, without the user's bf16 section that "Use this config" keeps: on the
    newest release a row said 64.3 GiB and the loaded config 59.3 (bf16 master weights). Each row is now the config
    as loaded, read as the session's release: 0.16.9 ignores bf16_master_weights_and_grads (fp32 master weights),
    so its row is the larger one, where reading it as the newest release would have said 59.3. (With the states in
    bf16 the newest release runs the master weights without an offload, so the loaded row keeps them.)"""
    at = app(BF16_MASTER, PAGE, version=version, **_model(LLAMA7))
    row_gib = html_tables(at)[0]["GPU GiB"].iloc[0]
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["bf16"]["bf16_master_weights_and_grads"] is True
    _, fit = _headline(at)
    assert "**Fits**" in fit and f"GPU {float(row_gib):.1f} of" in fit, (fit, row_gib)
    other = "0.16.9" if version == DEFAULT_VERSION else DEFAULT_VERSION
    assert html_tables(app(BF16_MASTER, PAGE, version=other, **_model(LLAMA7)))[0]["GPU GiB"].iloc[0] != row_gib


@pytest.mark.parametrize(("config", "version", "key"), [
    ({**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "enabled": 0}}, "0.19.7", "elasticity"),
    ({**ELASTIC, "elasticity": {**ELASTIC["elasticity"], "enabled": None}}, "0.19.7", "elasticity"),
    (SEQUENCE_PARALLEL, "0.16.9", "sequence_parallel_size"),
])
def test_what_the_release_does_not_act_on_is_kept_and_not_said_removed(config, version, key):
    """Elasticity with "enabled": 0 or null is off as DeepSpeed reads it, and 0.16.x ignores sequence_parallel_size:
    neither overrides the row's batch keys, yet both were removed 'since they would override' them."""
    at = app(config, PAGE, version=version, **_model(LLAMA7))
    row_gib = html_tables(at)[0]["GPU GiB"].iloc[0]
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"][key] == config[key]
    assert "removed" not in _message(at)
    verdict, fit = _headline(at)
    assert "**Accepted**" in verdict, verdict
    assert "**Fits**" in fit and f"GPU {float(row_gib):.1f} of" in fit, (fit, row_gib)


def test_an_optimizer_value_that_is_kept_is_not_said_loaded():
    """A non-object optimizer (here a bare name) is kept by adoption, which replaces only a missing or null one, but
    the message said it loaded the row's optimizer."""
    at = app({"optimizer": "AdamW", "bf16": {"enabled": True}}, PAGE, **_model(LLAMA7))
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["optimizer"] == "AdamW"
    assert "its optimizer" not in _message(at)


FP16_SCALING = {"fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000,
                         "hysteresis": 2, "min_loss_scale": 1}}


@pytest.mark.parametrize("version", ["0.19.7", DEFAULT_VERSION])
def test_a_bf16_row_loaded_into_an_fp16_config_leaves_no_loss_scaling_behind_and_says_so(version):
    """Loading a bf16 row switched fp16 off but kept its loss-scaling keys: the validator then warned that they do
    nothing and advised "Enable fp16 or remove them", where enabling fp16 beside the row's bf16 is wrong. They are
    taken out now, named in the message; the fp16 section stays, off."""
    from core.validate import validate

    at = app(FP16_SCALING, PAGE, version=version, **_model(LLAMA7))
    next(s for s in at.selectbox if s.label == "Precision").set_value("bf16").run()  # it starts at the config's
    before = validate(FP16_SCALING, world_size=8, version=version).findings
    assert not [f for f in before if f.code == "precision.loss-scale-unused"]  # fp16 on: they mean something
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    config = at.session_state["config"]
    assert config["fp16"] == {"enabled": False} and config["bf16"] == {"enabled": True}
    findings = validate(config, world_size=8, version=version).findings
    assert not [f for f in findings if f.path == "fp16" or f.code.startswith("precision.")], findings
    assert ("your fp16.loss_scale, fp16.initial_scale_power, fp16.loss_scale_window, fp16.hysteresis and "
            "fp16.min_loss_scale removed (fp16 loss scaling, which does nothing now that the row trains in bf16 "
            "with fp16 off)") in _message(at)
    verdict, _fit = _headline(at)
    assert "**Accepted**" in verdict, verdict


def test_an_fp16_row_keeps_the_loss_scaling_it_trains_with():
    from core.perf.recommend import adoption_removals

    candidate = build_config(stage=2, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=2,
                             grad_accum=4, world_size=8, precision="fp16", gpus_per_node=8)
    adopted = adopt_candidate(FP16_SCALING, candidate)
    assert adopted["fp16"] == FP16_SCALING["fp16"]
    assert adoption_removals(FP16_SCALING, adopted) == []
    fp32 = build_config(stage=2, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=2,
                        grad_accum=4, world_size=8, precision="fp32", gpus_per_node=8)
    assert adopt_candidate(FP16_SCALING, fp32)["fp16"] == {"enabled": False}  # fp32: off, and nothing to scale


def _counted(calls: dict[str, int], name: str, function):
    """``function``, counting its calls in ``calls[name]``."""
    def counted(*args, **kwargs):
        calls[name] += 1
        return function(*args, **kwargs)
    return counted


def test_an_edit_the_planner_does_not_read_ranks_nothing_again_and_one_it_reads_does(monkeypatch):
    """The ranking (~500 candidates, 100+ ms) and the node sweep (a ranking per size, 200+ ms) were cached on the
    whole session config: any edit anywhere computed them again. They are keyed on what the planner reads of the
    config now: a monitoring or unknown key computes nothing again, bf16 master weights (memory) does."""
    from ui import plan_view

    calls: dict[str, int] = {"recommend": 0, "gpu_sweep": 0}
    for name in calls:
        monkeypatch.setattr(plan_view, name, _counted(calls, name, getattr(plan_view, name)))
    for cached in (plan_view.ranking, plan_view._ranked, plan_view.node_sweep, plan_view._swept):
        cached.cache_clear()
    config = {"bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
    at = app(config, PAGE, **_model(LLAMA7))
    table = html_tables(at)[0]
    assert calls == {"recommend": 1, "gpu_sweep": 1}
    edited = {**config, "tensorboard": {"enabled": True, "output_path": "runs/"}, "my_team_key": {"owner": "alice"}}
    at.session_state["config"] = edited
    at.run()
    assert not at.exception, at.exception
    assert calls == {"recommend": 1, "gpu_sweep": 1}  # not computed again
    assert html_tables(at)[0].equals(table)
    at.session_state["config"] = {**edited, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}
    at.run()
    assert not at.exception, at.exception
    assert calls == {"recommend": 2, "gpu_sweep": 2}  # read: computed again
    assert not html_tables(at)[0]["GPU GiB"].equals(table["GPU GiB"])


def test_a_ranking_cached_for_another_config_shows_each_row_as_loaded_into_this_one():
    """The cached ranking is shared by configs read alike: its rows' configs (the "Its ds_config" view, what "Use
    this config" loads) must still be the ones recommend gives for the config at hand, not the first one's."""
    import json

    from core.perf import Cluster, recommend
    from ui import plan_view

    cluster = Cluster("NVIDIA H100 80GB", 8, 2)
    spec = get_spec(LLAMA7)
    first = {"bf16": {"enabled": True}, "zero_optimization": {"stage": 2, "reduce_bucket_size": 50_000_000},
             "elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [1]}}
    second = {**first, "wandb": {"enabled": True, "project": "p"}, "my_team_key": 1}

    def settings(config: dict) -> plan_view.Settings:
        return plan_view.Settings(1024, 64, 2e9, 2.5, "flash", "bf16", json.dumps(config), "deepspeed", "0.19.7")

    hits = plan_view._ranked.cache_info().hits
    plan_view.ranking(spec, cluster, settings(first))
    shown = plan_view.ranking(spec, cluster, settings(second)).shown
    assert plan_view._ranked.cache_info().hits == hits + 1  # the first config's ranking
    expected = recommend(spec, cluster, fitting_only=True, **settings(second).planner_inputs)
    assert list(shown["config"]) == list(expected["config"].head(len(shown)))
    assert all(c["my_team_key"] == 1 and "elasticity" not in c for c in shown["config"])
    json.dumps(list(shown["config"]))  # plain values, as the session stores them


def test_a_row_that_cannot_keep_the_configs_master_weights_loads_accepted_without_them_as_costed():
    """bf16 master weights in the session config: "Use this config" loaded ZeRO-1 without an optimizer offload with
    them kept, which 0.19.8 refuses (precision.master-weights-offload). They go now, said with why, and the loaded
    config is accepted at the GPU memory and step time its row showed."""
    config = {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}
    at = app(config, PAGE, version=DEFAULT_VERSION, **_model(LLAMA7))
    table = html_tables(at)[0]
    row_gib, row_step = table["GPU GiB"].iloc[0], float(table["Step s"].iloc[0])
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    loaded = at.session_state["config"]
    assert loaded["bf16"] == {"enabled": True} and loaded["zero_optimization"].get("offload_optimizer") is None
    verdict, fit = _headline(at)
    assert "**Accepted**" in verdict, verdict
    assert "**Fits**" in fit and f"GPU {float(row_gib):.1f} of" in fit, (fit, row_gib)
    assert (f"your bf16.bf16_master_weights_and_grads removed (16-bit master weights, which DeepSpeed "
            f"{DEFAULT_VERSION} runs at ZeRO-{loaded['zero_optimization']['stage']} only with the optimizer offloaded "
            "to the CPU as DeepSpeedCPUAdam, which this row does not do)") in _message(at)
    step = _predicted_step(at)
    assert _same_step(step, row_step), (step, row_step)
