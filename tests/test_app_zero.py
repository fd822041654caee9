"""AppTest: the ZeRO & offload page (stage, offload, disabled options, memory charts, fixes)."""

from __future__ import annotations

from app_support import app, click_fix, shown_tables, sidebar_findings, texts

from core import memory as core_memory
from core.models import get_config, get_spec
from core.perf.advice import seconds_text
from ui.widgets import widget_key

SPEC = get_spec("meta-llama/Llama-2-7b-hf")
MODEL = {"model": "meta-llama/Llama-2-7b-hf", "total_params": SPEC.total_params,
         "largest_layer_params": SPEC.largest_layer_params, "model_config": get_config("meta-llama/Llama-2-7b-hf")}


def zero_app(zero: dict, **context):
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero, "keep_me": [1, 2]}
    return app(config, page="pages/zero.py", **(MODEL | context))


STAGE_FITS = "Fits (full estimate, no offload)"
GPU = "GPU, GiB per GPU"


def table(at, column: str):
    """The first dataframe on the page that has ``column``."""
    return next(d for d in shown_tables(at) if column in d.columns)


def test_stage_widget_changes_config_and_charts():
    at = zero_app({"stage": 1, "team_key": "x"}, nodes=1, gpus_per_node=8)
    totals = table(at, STAGE_FITS)
    assert list(totals.loc[totals["Current"] != "", "ZeRO stage"]) == [1]
    options = table(at, "Option")
    assert list(options.loc[options["Current"] != "", "Option"]) == ["ZeRO-1"]
    sweep_before = table(at, "Micro batch").copy()
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 1,
                                          "zero_optimization": {"stage": 3, "team_key": "x"}, "keep_me": [1, 2]}
    totals = table(at, STAGE_FITS)
    assert list(totals.loc[totals["Current"] != "", "ZeRO stage"]) == [3]
    options = table(at, "Option")
    assert list(options.loc[options["Current"] != "", "Option"]) == ["ZeRO-3"]
    sweep_after = table(at, "Micro batch")
    assert (sweep_after[GPU] < sweep_before[GPU]).all()


def test_sweep_axis_switches_and_marks_the_current_value():
    at = zero_app({"stage": 2}, nodes=1, gpus_per_node=8, seq_len=4096)
    at.radio(key="zero_sweep_axis").set_value("seq_len").run()
    sweep = table(at, "Sequence length (tokens)")
    assert list(sweep.loc[sweep["Current"] != "", "Sequence length (tokens)"]) == [4096]
    assert sweep[GPU].is_monotonic_increasing
    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()
    sweep = table(at, "GPUs")
    assert list(sweep.loc[sweep["Current"] != "", "GPUs"]) == [8]
    assert sweep[GPU].is_monotonic_decreasing


def test_figure_follows_the_zero_paper_accounting():
    at = zero_app({"stage": 0}, nodes=2, gpus_per_node=8)
    totals = table(at, STAGE_FITS).set_index("ZeRO stage")["Model states, GiB per GPU"]
    psi = SPEC.total_params / 2**30
    # as shown: GiB to one decimal
    assert totals[0] == round(16 * psi, 1)
    assert totals[1] == round(4 * psi + 12 * psi / 16, 1)
    assert totals[2] == round(2 * psi + 14 * psi / 16, 1)
    assert totals[3] == round(16 * psi / 16, 1)


def test_offload_changes_the_estimate_to_core_memorys_numbers():
    at = zero_app({"stage": 3}, nodes=1, gpus_per_node=4, gpu_memory_gib=40.0, cpu_ram_gib=256.0, seq_len=1024)
    before = table(at, "Option")
    at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("cpu").run()
    at.selectbox(key=widget_key("zero_optimization.offload_param.device")).set_value("cpu").run()
    config = at.session_state["config"]
    assert config["zero_optimization"] == {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                           "offload_param": {"device": "cpu"}}
    options = table(at, "Option")
    current = options.loc[options["Current"] != ""].iloc[0]
    assert current["Option"] == "ZeRO-3 opt→cpu param→cpu"
    expected = core_memory.estimate(
        config, SPEC, core_memory.Hardware(4, 1, 40 * 2**30, 256 * 2**30), core_memory.Shape(1, 1024))
    assert current[GPU] == round(expected.gpu_bytes / 2**30, 1)
    assert current["CPU RAM, GiB per node"] == round(expected.cpu_bytes_per_node / 2**30, 1)
    assert current[GPU] < before.loc[before["Current"] != ""].iloc[0][GPU]
    assert any(f"{expected.gpu_bytes / 2**30:.1f} GiB per GPU" in c.value for c in at.caption)
    assert any(f"Fits: {expected.gpu_bytes / 2**30:.1f} of 40 GiB per GPU" in s.value for s in at.sidebar.success)


def test_sidebar_says_when_it_does_not_fit():
    at = zero_app({"stage": 0}, nodes=1, gpus_per_node=8, gpu_memory_gib=24.0)
    assert any(e.value.startswith("Does not fit (GPU)") for e in at.sidebar.error)


def open_knobs(at):
    """Open the "Buckets, stage-3 knobs, …" expander, whose widgets are drawn only while it is open."""
    at.session_state["zero_knobs"] = True
    at.run()
    return at


def test_knobs_are_drawn_only_while_open_or_when_one_has_a_finding():
    at = zero_app({"stage": 3})
    prefetch = widget_key("zero_optimization.stage3_prefetch_bucket_size")
    assert prefetch not in {w.key for w in at.number_input}
    assert open_knobs(at).number_input(key=prefetch).value is not None
    at = zero_app({"stage": 3, "stage3_prefetch_bucket_size": -1})
    # the widget with the finding is there to fix it (as raw JSON, the value being out of range)
    assert at.text_area(key=prefetch).value == "-1"


def test_stage3_options_disabled_with_reason_below_stage3():
    at = open_knobs(zero_app({"stage": 2}))
    device = at.selectbox(key=widget_key("zero_optimization.offload_param.device"))
    assert device.disabled
    assert "Only has an effect with ZeRO stage 3; the current stage is 2." in device.help
    knob = at.number_input(key=widget_key("zero_optimization.stage3_prefetch_bucket_size"))
    assert knob.disabled
    assert not at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).disabled
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()
    assert not at.selectbox(key=widget_key("zero_optimization.offload_param.device")).disabled
    assert not at.number_input(key=widget_key("zero_optimization.stage3_prefetch_bucket_size")).disabled


def test_alias_spelling_is_written_as_documented():
    at = open_knobs(zero_app({"stage": 3}))
    at.number_input(key=widget_key("zero_optimization.stage3_max_live_parameters")).set_value(123).run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3, "stage3_max_live_parameters": 123}


def test_invalid_stage_shows_error_on_page_and_sidebar():
    at = zero_app({"stage": 5})
    assert any("zero_optimization.stage" in e.value and "5" in e.value for e in at.main.error)
    assert any("`zero_optimization.stage`" in text and link.startswith("Fix on ZeRO & offload")
               for text, link in sidebar_findings(at))
    # a value outside the choices is shown as it is, in a drop-down that offers the choices too
    assert at.selectbox(key=widget_key("zero_optimization.stage")).value == 5
    at.selectbox(key=widget_key("zero_optimization.stage")).set_value(2).run()
    assert at.button_group(key=widget_key("zero_optimization.stage")).value == 2
    assert not any("type.enum" in e for e in texts(at.main.error))


def test_param_offload_below_stage3_fix_switches_stage():
    at = zero_app({"stage": 2, "offload_param": {"device": "cpu"}})
    assert any("zero.offload-param-below-3" in w.value for w in at.main.warning)
    click_fix(at, "Fix: Switch to ZeRO stage 3")
    assert at.session_state["config"]["zero_optimization"]["stage"] == 3
    assert at.button_group(key=widget_key("zero_optimization.stage")).value == 3
    assert not any("zero.offload-param-below-3" in w.value for w in at.main.warning)


def test_nvme_offload_shows_aio_settings_and_path_fix():
    at = zero_app({"stage": 3})
    assert not any(k.key and k.key.startswith(widget_key("aio.")) for k in at.number_input)
    at.selectbox(key=widget_key("zero_optimization.offload_optimizer.device")).set_value("nvme").run()
    assert any(k.key and k.key.startswith(widget_key("aio.")) for k in [*at.number_input, *at.checkbox])
    click_fix(at, "Fix: Set `zero_optimization.offload_optimizer.nvme_path`")
    assert at.session_state["config"]["zero_optimization"]["offload_optimizer"]["nvme_path"] == "/local_nvme"


def test_without_model_the_page_asks_for_one():
    at = app({"zero_optimization": {"stage": 2}}, page="pages/zero.py")
    assert any("Choose a model" in i.value for i in at.info)
    assert not shown_tables(at)


def test_deprecated_top_level_key_of_the_page_is_shown_only_when_present():
    at = zero_app({"stage": 2})
    assert not [n for n in at.number_input if n.key == widget_key("allgather_size")]
    at = app({"zero_optimization": {"stage": 2}, "allgather_size": 1000}, page="pages/zero.py")
    field = at.number_input(key=widget_key("allgather_size"))
    assert field.value == 1000
    assert "Deprecated: use `zero_optimization.allgather_bucket_size`." in field.help


def _step_metric(at):
    return next(m for m in at.metric if m.label == "Predicted step time")


def test_predicted_step_time_and_bottleneck_beside_the_memory_numbers():
    from core import memory as mem
    from core import perf

    context = {"nodes": 2, "gpus_per_node": 8, "gpu": "NVIDIA A100 80GB", "seq_len": 4096}
    at = zero_app({"stage": 2}, **context)
    cluster = perf.Cluster("NVIDIA A100 80GB", 8, 2, cpu_ram_gib=float(at.session_state["context"]["cpu_ram_gib"]))
    shape = mem.Shape(1, 4096, at.session_state["context"]["attention"], at.session_state["context"]["recompute"])
    spec = get_spec("meta-llama/Llama-2-7b-hf")
    expected = {stage: perf.predict({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": stage}},
                                    spec, cluster, shape) for stage in (2, 3)}
    assert _step_metric(at).value == seconds_text(expected[2].step_seconds)  # as `dsconfig predict` writes it
    assert any(expected[2].bottleneck in c.value for c in at.caption)
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(3).run()
    assert _step_metric(at).value == seconds_text(expected[3].step_seconds)
    assert expected[3].breakdown != expected[2].breakdown  # the stage changes what is communicated
    assert any(expected[3].bottleneck in c.value for c in at.caption)
    breakdown = table(at, "Share")
    assert abs(breakdown["Seconds"].sum() - expected[3].step_seconds) < 1e-3  # shown to 4 decimals
    assert any("ZeRO-3 parameter all-gather" in part for part in breakdown["Part"])


def test_no_step_prediction_for_a_custom_gpu_says_why():
    at = zero_app({"stage": 2}, gpu="Custom", gpu_memory_gib=48.0)
    assert not [m for m in at.metric if m.label == "Predicted step time"]
    assert any("no datasheet for a custom GPU" in c.value for c in at.caption)


def test_a_zero3_step_with_little_work_says_so_beside_the_step_time():
    """ZeRO-3 at 512 tokens per GPU: the published runs of that kind were slower than the model, and the page
    says so as a warning next to the figure (it was one caption among the breakdown's notes, in a popover)."""
    context = {"nodes": 1, "gpus_per_node": 8, "gpu": "NVIDIA H100 80GB", "seq_len": 512}
    at = zero_app({"stage": 3}, **context)
    assert _step_metric(at)
    warned = [w.value for w in at.warning if "lower bound" in w.value]
    assert len(warned) == 1 and "ZeRO-3 with 512 tokens per GPU per micro-step" in warned[0]
    assert not any("lower bound" in c.value for c in at.caption)  # not repeated in the popover
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(2).run()
    assert not [w for w in at.warning if "lower bound" in w.value]
    at = zero_app({"stage": 3}, **(context | {"seq_len": 4096}))
    assert not [w for w in at.warning if "lower bound" in w.value]


def test_nvme_optimizer_offload_below_stage_3_marks_the_cpu_row_current():
    """DeepSpeed has no NVMe swapper below stage 3 and the estimate sizes CPU offload: the options table marked
    no row current, while the caption named an option the table does not have ("ZeRO-2 opt→nvme")."""
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}
    at = app(config, page="pages/zero.py", **MODEL)
    table = next(d for d in shown_tables(at) if "Option" in d.columns)
    assert list(table.loc[table["Current"] != "", "Option"]) == ["ZeRO-2 opt→cpu"]
    assert any(c.value.startswith("Current config: ZeRO-2 opt→cpu — ") for c in at.caption)


def test_an_optional_boolean_shows_what_deepspeed_uses_when_unset_and_can_be_unset_again():
    """overlap_comm unset is true at stage 3: its checkbox was drawn unticked, and once ticked could not be unset."""
    at = zero_app({"stage": 3})
    at.session_state["zero_knobs"] = True
    at.run()
    overlap = at.selectbox(key=widget_key("zero_optimization.overlap_comm"))
    assert overlap.value is None and overlap.options[0] == "— not set (default: true) —"
    assert "Default: `true`." in overlap.help
    overlap.set_value(False).run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3, "overlap_comm": False}
    at.selectbox(key=widget_key("zero_optimization.overlap_comm")).select_index(0).run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3}
    at.button_group(key=widget_key("zero_optimization.stage")).set_value(2).run()
    assert at.selectbox(key=widget_key("zero_optimization.overlap_comm")).options[0] == "— not set (default: false) —"


def test_an_optional_boolean_written_as_a_number_is_edited_as_written():
    at = zero_app({"stage": 3, "overlap_comm": 1})
    at.session_state["zero_knobs"] = True
    at.run()
    assert at.text_area(key=widget_key("zero_optimization.overlap_comm")).value == "1"


def test_the_gpu_count_sweep_sizes_each_row_at_the_count_it_names_on_nodes_of_six():
    """With 6 GPUs per node the row "8" showed the memory of 12 GPUs (2 whole nodes) and "16" that of 18: the sweep
    now offers one node's GPUs and whole nodes, and labels each row with the count it sized."""
    at = zero_app({"stage": 3}, nodes=1, gpus_per_node=6)
    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()
    sweep = table(at, "GPUs")
    counts = [int(g) for g in sweep["GPUs"]]
    assert counts == sorted(set(counts)) and all(g < 6 or g % 6 == 0 for g in counts), counts
    config = at.session_state["config"]
    for gpus, shown in zip(counts, sweep[GPU], strict=True):
        hardware = core_memory.Hardware(gpus_per_node=min(gpus, 6), nodes=max(1, gpus // 6))
        estimate = core_memory.estimate(config, SPEC, hardware, core_memory.Shape(1, 2048))
        assert round(estimate.gpu_bytes / core_memory.GIB, 1) == shown, gpus


def test_a_way_that_swaps_to_nvme_says_how_much_nvme_it_uses():
    """A Make-it-fit way showed GPU and CPU RAM only: "Offload to NVMe instead of CPU RAM" hid the NVMe it fills."""
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                    "offload_param": {"device": "cpu"}}}
    at = app(config, page="pages/zero.py", seq_len=1024, cpu_ram_gib=96.0, nvme_gib=2000.0, **MODEL)
    lines = {m.value.split("** — ")[0]: m.value for m in at.markdown if "** — GPU " in m.value}
    nvme_way = next(line for title, line in lines.items() if "Offload to NVMe instead of CPU RAM" in title)
    assert ", NVMe " in nvme_way and " GiB per node: " in nvme_way, nvme_way
    assert all("NVMe " not in line for title, line in lines.items() if "No offload" in title), lines
