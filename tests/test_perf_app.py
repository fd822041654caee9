"""The Plan page (AppTest): inputs, the ranked table, charts, "use this config", bad input."""

from __future__ import annotations

import math

import pytest
from app_support import app, shown_tables

from core.hardware import GPU_BY_NAME
from core.memory.result import gib_capacity
from core.perf import batch_split_problem
from core.validate import validate
from ui import app_state
from ui.perf import network_for

PAGE = "pages/plan.py"


def ranked(at):
    return next(d for d in shown_tables(at) if "Rank" in d.columns)


def test_plan_ranks_fitting_configs_and_draws_the_charts():
    at = app(page=PAGE)
    at.selectbox(key="plan_gpu").set_value("NVIDIA H100 80GB").run()
    at.number_input(key="plan_nodes").set_value(2).run()
    assert not at.exception, at.exception
    table = ranked(at)
    assert len(table) > 3 and list(table["Rank"][:3]) == [1, 2, 3]
    assert list(table["Step s"]) == sorted(table["Step s"])
    assert {"Hours", "Cost USD", "MFU"} <= set(table.columns)
    assert any("Fastest fitting" in i.value for i in at.info)
    assert len(at.get("vega_lite_chart")) == 2  # breakdown, time and cost vs GPUs; every candidate's on demand
    at.session_state["plan_speed_chart"] = True  # its expander opened
    at.run()
    assert len(at.get("vega_lite_chart")) == 3  # and speed vs memory
    # its dashed line is where the verdict puts it: the H100's capacity (PyTorch's 79.1 GiB) less the 5% kept free
    usable = gib_capacity(0.95 * GPU_BY_NAME["NVIDIA H100 80GB"].memory_gib * 2**30)  # 75.14 GiB
    assert any(f"Dashed line: {usable} GiB" in c.value for c in at.caption), [c.value for c in at.caption]


def test_a_short_run_shows_its_hours_and_cost_instead_of_zero():
    """A million tokens train in seconds: one decimal read 0.0 hours and 0 USD on every row."""
    at = app(page=PAGE)
    at.number_input(key="plan_tokens").set_value(0.001).run()
    table = ranked(at)
    assert (table["Hours"] > 0).all() and (table["Cost USD"] > 0).all(), table[["Hours", "Cost USD"]]
    assert table["Hours"].iloc[0] < 0.05  # one decimal read 0.0


def test_use_this_config_loads_the_row_into_the_builder():
    at = app(page=PAGE)
    at.number_input(key="plan_nodes").set_value(2).run()
    at.selectbox(key="plan_row").set_value(2).run()
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    config = at.session_state["config"]
    ctx = at.session_state["context"]
    assert ctx["nodes"] == 2 and ctx["gpus_per_node"] == 8
    assert config["train_batch_size"] == 256 and "zero_optimization" in config
    assert validate(config, world_size=16).ok
    assert any("Loaded rank 2" in s.value for s in at.success)
    assert any(b.label.startswith("Undo") for b in at.button)


def test_use_this_config_keeps_the_users_optimizer_scheduler_and_own_keys():
    """It replaced the whole config with the planner's (AdamW at 1e-4, clipping 1.0): the user's optimizer,
    scheduler, monitoring and unknown keys were lost. Now only the batch, precision and ZeRO change, and it says
    what it kept."""
    user = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 32, "fp16": {"enabled": True},
            "gradient_clipping": 0.5, "optimizer": {"type": "Lamb", "params": {"lr": 3e-4}},
            "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 5000, "warmup_num_steps": 100}},
            "tensorboard": {"enabled": True, "output_path": "runs/"}, "my_team_key": {"owner": "alice"},
            "zero_optimization": {"stage": 2, "reduce_bucket_size": 50_000_000}}
    at = app(config=user, page=PAGE)
    assert next(s for s in at.selectbox if s.label == "Precision").value == "fp16"  # the config's, to start
    next(s for s in at.selectbox if s.label == "Precision").set_value("bf16").run()
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    config = at.session_state["config"]
    for key in ("gradient_clipping", "optimizer", "scheduler", "tensorboard", "my_team_key"):
        assert config[key] == user[key], key
    assert config["zero_optimization"]["reduce_bucket_size"] == 50_000_000
    assert config["fp16"]["enabled"] is False and config["bf16"] == {"enabled": True}
    message = next(s.value for s in at.success if "Loaded rank 1" in s.value)
    assert "your gradient_clipping, optimizer, scheduler, tensorboard, my_team_key kept" in message


def test_a_batch_that_cannot_be_split_is_explained():
    """In recommend's words (core.perf.batch_split_problem, which the CLI says too), the inputs kept."""
    at = app(page=PAGE)
    at.number_input(key="plan_batch").set_value(100).run()
    at.number_input(key="plan_gpn").set_value(3).run()
    assert not at.exception, at.exception
    reason = batch_split_problem(100, 3)
    assert reason == "cannot be split over 3 GPUs: pick a multiple of 3 (e.g. 99 or 102) or another number of GPUs"
    assert [e.value for e in at.error] == [f"A global batch of 100 sequences {reason}."]
    assert not [d for d in shown_tables(at) if "Rank" in d.columns]
    assert (at.number_input(key="plan_batch").value, at.number_input(key="plan_gpn").value) == (100, 3)
    at.number_input(key="plan_batch").set_value(99).run()
    assert not at.error and len(ranked(at)) > 0


def test_a_sequence_beyond_the_models_learned_positions_is_refused_not_ranked():
    """GPT-2 has 1024 learned positions: the page ranked configs at 2048 with a caption ("costed as if it could"),
    and the validator then refused the config it loaded."""
    at = app(page=PAGE)
    at.selectbox(key="plan_model").set_value("openai-community/gpt2").run()
    at.number_input(key="plan_seq").set_value(2048).run()
    assert not at.exception, at.exception
    assert any("beyond the model's 1024 learned positions" in e.value and "at most 1024 tokens" in e.value
               for e in at.error), [e.value for e in at.error]
    assert not [d for d in shown_tables(at) if "Rank" in d.columns]
    at.number_input(key="plan_seq").set_value(1024).run()
    assert not at.error and len(ranked(at)) > 3


def test_the_first_sequence_length_is_one_the_start_pages_model_can_run():
    """As `dsconfig plan` starts: GPT-2 chosen on Start (1024 learned positions) opens the Plan page at 1024
    tokens, ranked, instead of at the Start page's 2048 and an error; a RoPE model keeps 2048."""
    at = app(page=PAGE, model="openai-community/gpt2")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key="plan_seq").value == 1024 and len(ranked(at)) > 3
    assert "the model learns 1,024 positions" in at.number_input(key="plan_seq").help
    assert app(page=PAGE, model="meta-llama/Llama-3.2-1B").number_input(key="plan_seq").value == 2048


def test_nothing_fits_is_said_in_words():
    at = app(page=PAGE)
    at.selectbox(key="plan_model").set_value("meta-llama/Llama-3.1-405B").run()
    at.selectbox(key="plan_gpu").set_value("NVIDIA T4 16GB").run()
    at.number_input(key="plan_gpn").set_value(1).run()
    at.number_input(key="plan_batch").set_value(4).run()
    assert not at.exception, at.exception
    assert any("Nothing fits" in e.value for e in at.error)


def test_first_global_batch_splits_over_the_start_pages_cluster():
    """3 nodes x 8 GPUs on Start: the Plan page opened with 256, which 24 GPUs cannot split (an error before any
    input); it offers 264, the smallest multiple of 24 from 256, and ranks."""
    at = app(page=PAGE, nodes=3, gpus_per_node=8)
    assert at.number_input(key="plan_batch").value == 264
    assert not at.error, [e.value for e in at.error]
    assert len(ranked(at)) > 0


def test_suggested_global_batch_is_one_the_widget_takes():
    """4096 nodes x 64 GPUs and a global batch of 1,000,000: the example multiple was 1,048,576, above the widget's
    maximum; it is now the nearest multiple the widget accepts."""
    at = app(page=PAGE)
    at.number_input(key="plan_batch").set_value(1_000_000).run()
    at.number_input(key="plan_nodes").set_value(4096).run()
    at.number_input(key="plan_gpn").set_value(64).run()
    message = next(e.value for e in at.error if "cannot be split over 262144 GPUs" in e.value)
    assert "pick a multiple of 262144 (e.g. 786432) or another number of GPUs" in message


def test_the_zero_page_predicts_a_used_row_on_the_plans_network():
    """A row used on the Plan page is predicted on the ZeRO page with the network it was ranked on (the ZeRO
    page used the GPU's catalog network, so a row ranked at 100 Gbit/s showed another step time there)."""
    at = app(page=PAGE)
    at.selectbox(key="plan_gpu").set_value("NVIDIA H100 80GB").run()
    at.number_input(key="plan_nodes").set_value(2).run()
    at.number_input(key="plan_network_NVIDIA H100 80GB").set_value(100.0).run()
    step = ranked(at)["Step s"].iloc[0]
    at.button(key="plan_use").click().run()
    assert at.session_state["context"]["network_gbit_s"] == 100.0
    at.switch_page("pages/zero.py").run()
    assert not at.exception, at.exception
    metric = next(m for m in at.metric if m.label == "Predicted step time")
    # the table rounds to 3 decimals and the metric to 3 significant figures: equal within both roundings
    shown = float(metric.value.removesuffix(" s"))
    assert abs(shown - step) <= 0.5 * 10 ** (math.floor(math.log10(step)) - 2) + 0.0005
    assert "100 Gbit/s network per node" in metric.help
    # another GPU chosen later is predicted on its own catalog network again
    ctx = at.session_state["context"]
    assert network_for(ctx) == 100.0 and network_for({**ctx, "gpu": "NVIDIA A100 80GB"}) is None
    # a shared link carries it: the receiver's ZeRO page predicts on the same network
    token = app_state.encode_state(at.session_state["config"], ctx, at.session_state["config"])
    shared = app_state.decode_state(token)[1]
    assert (shared["network_gbit_s"], shared["network_gpu"]) == (100.0, "NVIDIA H100 80GB")


@pytest.mark.parametrize(("network", "gpu"), [("fast", "NVIDIA H100 80GB"), (1e9, "NVIDIA H100 80GB"),
                                              (True, "NVIDIA H100 80GB"), (100.0, "My GPU"), (100.0, ["x"])])
def test_a_shared_links_network_is_kept_only_when_it_is_a_network_for_a_catalog_gpu(network, gpu):
    ctx = app_state.clean_context({"gpu": "NVIDIA H100 80GB", "network_gbit_s": network, "network_gpu": gpu})
    assert network_for(ctx) is None


def test_the_page_says_what_the_prediction_assumed_as_the_cli_does():
    """bf16 on a V100 is emulated at the fp32 rate: dsconfig plan says so (its notes), the page said nothing."""
    at = app(page=PAGE)
    at.selectbox(key="plan_gpu").set_value("NVIDIA V100 32GB").run()
    at.selectbox(key="plan_precision_NVIDIA V100 32GB").set_value("bf16").run()
    assert not at.exception, at.exception
    assert any("no bf16 tensor cores" in c.value for c in at.caption)


def test_the_fastest_fitting_rows_caveat_is_a_warning_beside_it():
    """A 70B model on 32 GPUs with one 512-token sequence each: the fastest fitting row is ZeRO-3 with little work
    per GPU, and the page shows the caveat recommend gives it (as dsconfig plan prints it)."""
    from core.models import get_spec
    from core.perf import Cluster, recommend

    at = app(page=PAGE)
    at.selectbox(key="plan_model").set_value("meta-llama/Llama-2-70b-hf").run()
    at.selectbox(key="plan_gpu").set_value("NVIDIA H100 80GB").run()
    at.number_input(key="plan_nodes").set_value(4).run()
    at.number_input(key="plan_seq").set_value(512).run()
    at.number_input(key="plan_batch").set_value(32).run()
    assert not at.exception, at.exception
    table = recommend(get_spec("meta-llama/Llama-2-70b-hf"), Cluster("NVIDIA H100 80GB", 8, 4),
                      seq_len=512, global_batch=32)
    assert table.attrs["caveats"], "the case must have a ZeRO-3 small-work best row"
    warned = [w.value for w in at.warning if "lower bound" in w.value]
    assert warned == table.attrs["caveats"]


def test_nvme_rows_fit_only_with_the_start_pages_nvme_and_agree_after_use():
    """The planner took NVMe as unlimited: an NVMe row ranked as fitting did not fit after "Use this config"
    (the Start page's NVMe is 0 GiB, none)."""
    def nvme_rows(at):
        return ranked(at)[ranked(at)["Offload params"] == "nvme"]

    for nvme, expected in ((0.0, False), (4000.0, True)):
        at = app(page=PAGE, nvme_gib=nvme)
        at.selectbox(key="plan_model").set_value("meta-llama/Llama-2-13b-hf").run()
        at.selectbox(key="plan_gpu").set_value("NVIDIA V100 32GB").run()
        at.number_input(key="plan_nodes").set_value(2).run()
        rows = nvme_rows(at)
        assert (not rows.empty) == expected, nvme
    at.selectbox(key="plan_row").set_value(int(rows.iloc[0]["Rank"])).run()
    at.button(key="plan_use").click().run()
    assert at.session_state["config"]["zero_optimization"]["offload_param"]["device"] == "nvme"
    assert not at.sidebar.error and any(s.value.startswith("Fits") for s in at.sidebar.success)


def test_the_zero_pages_prediction_counts_the_trainers_accumulation_as_the_cli_does():
    """HF target, "auto" accumulation: the ZeRO page predicted one micro-step while the memory figures used the Batch
    page's per_device_train_batch_size, so it showed 1/8 of what `dsconfig predict --gradient-accumulation-steps 8`
    prints for the same inputs."""
    import json

    from core import models
    from core.cli import main
    from core.presets import env_search_path, load_preset

    config = load_preset("hf-auto-zero3", env_search_path()).config
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    steps = {}
    for accum in (1, 8):
        at = app(config=config, page="pages/zero.py", target="hf", model="meta-llama/Llama-2-7b-hf",
                 hf_micro_batch=4, hf_grad_accum=accum, gpu="NVIDIA A100 80GB", gpus_per_node=8, nodes=1,
                 seq_len=2048, attention="sdpa")
        at.session_state["context"].update(model_config=models.get_config("meta-llama/Llama-2-7b-hf"),
                                           total_params=spec.total_params,
                                           largest_layer_params=spec.largest_layer_params)
        at.run()
        assert not at.exception, at.exception
        metric = next(m for m in at.metric if m.label == "Predicted step time")
        assert f"{accum} micro-step(s) of 4 sequences" in metric.help
        steps[accum] = float(metric.value.removesuffix(" s"))
    assert steps[8] == pytest.approx(8 * steps[1], rel=0.01)
    import io
    import tempfile
    from contextlib import redirect_stdout

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(config, handle)
    printed = io.StringIO()
    with redirect_stdout(printed):
        main(["predict", handle.name, "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA A100 80GB",
              "--seq-len", "2048", "--attention", "sdpa", "--micro-batch", "4", "--gradient-accumulation-steps", "8",
              "--format", "json"])
    assert json.loads(printed.getvalue())["step_seconds"] == pytest.approx(steps[8], rel=0.01)


def test_a_model_given_by_counts_on_start_is_planned_and_kept():
    """The Plan page offered catalog models only when the Start page had counts, preselected Llama-2-7B, and "Use
    this config" replaced the user's 30B counts with its 6.7B."""
    at = app(page="pages/plan.py", model=None, model_config=None, total_params=30_000_000_000,
             largest_layer_params=600_000_000)
    assert not at.exception, at.exception
    assert at.selectbox(key="plan_model").value == "(the model chosen on Start)"
    at.button(key="plan_use").click().run()
    context = at.session_state["context"]
    assert (context["model"], context["total_params"]) == (None, 30_000_000_000)


def test_the_fastest_row_and_the_loaded_message_name_its_offload():
    """Row 1 offloading the optimizer was summed up as "ZeRO-3 + ZeRO++" alone: its optimizer state lives in CPU
    RAM."""
    at = app(page="pages/plan.py")
    at.selectbox(key="plan_model").set_value("meta-llama/Llama-2-13b-hf").run()
    at.selectbox(key="plan_gpu").set_value("NVIDIA V100 32GB").run()
    at.number_input(key="plan_nodes").set_value(2).run()
    at.number_input(key="plan_gpn").set_value(8).run()
    summary = next(i.value for i in at.info if "Fastest fitting" in i.value)
    at.button(key="plan_use").click().run()
    zero = at.session_state["config"]["zero_optimization"]
    message = next(s.value for s in at.success if "Loaded rank 1" in s.value)
    offloaded = [what for key, what in (("offload_optimizer", "optimizer"), ("offload_param", "parameters"))
                 if isinstance(zero.get(key), dict) and zero[key].get("device") != "none"]
    assert offloaded, "this cluster's fastest fitting row offloads (the case this test is about)"
    for what in offloaded:
        assert f"{what} offloaded to" in summary and f"{what} offloaded to" in message


def test_a_model_given_by_counts_only_is_ranked_with_a_warning_that_activations_are_not_sized():
    """With the Start page's bare parameter counts, every micro batch up to 32 x 2,048 tokens of a 7B model "fitted"
    at the same GPU GiB and the page said nothing; the memory model's note is now the ranking's first warning."""
    at = app(page=PAGE, model="my-7b", total_params=7_000_000_000, largest_layer_params=500_000_000)
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert warnings and "activations" in warnings[0] and "config.json" in warnings[0]
    catalog = app(page=PAGE)  # a catalog model's shape is known: no such warning
    assert not any("counts only" in w.value for w in catalog.warning)
