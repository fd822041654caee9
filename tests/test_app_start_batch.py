"""AppTest: the app shell, the sidebar, the Start page and the Batch page."""

from __future__ import annotations

import copy
import json

import pytest
from app_support import ROOT, app, html_tables, sidebar_findings, sidebar_text, texts

from core.hardware import GPUS, find_gpu
from ui import app_state
from ui.widgets import widget_key

BUILT_PAGES = tuple(app_state.PAGES)  # every page the app declares


def test_home_is_start_page_with_sidebar_and_download():
    at = app()
    assert texts(at.title) == ["Start"]
    assert at.expander[0].label == "What is a DeepSpeed config?"
    assert at.sidebar.get("download_button")[0].label == "Download ds_config.json: as written"
    assert texts(at.sidebar.success) == ["No errors or warnings"]


def test_every_page_runs_and_explains_itself():
    at = app()
    for page in BUILT_PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert at.expander, f"{page} has no explanation"
        assert at.sidebar.get("download_button"), page


def test_load_preset_replaces_config_and_baseline():
    at = app()
    at.selectbox(key="start_preset").set_value("zero3-offload-cpu").run()
    at.button(key="start_load_preset").click().run()
    preset = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]
    assert at.session_state["config"] == preset
    assert at.session_state["baseline"] == preset
    assert at.session_state["config"] is not at.session_state["baseline"]


def test_hf_preset_sets_target():
    at = app()
    at.selectbox(key="start_preset").set_value("hf-auto-zero2").run()
    at.button(key="start_load_preset").click().run()
    assert at.session_state["context"]["target"] == "hf"
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == "auto"


def test_paste_hjson_with_comments_and_unknown_keys_is_kept():
    at = app()
    at.radio(key="start_source").set_value("Upload or paste").run()
    text = '{\n  // micro batch\n  train_micro_batch_size_per_gpu: 4\n  my_team_key: {"x": [1, 2]}\n}'
    at.text_area(key="start_paste").input(text).run()
    at.button(key="start_import").click().run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 4, "my_team_key": {"x": [1, 2]}}
    assert not at.error


def test_paste_broken_json_names_line_and_column_and_loses_nothing():
    before = {"train_micro_batch_size_per_gpu": 3}
    at = app(before)
    at.radio(key="start_source").set_value("Upload or paste").run()
    broken = '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": }\n}'
    at.text_area(key="start_paste").input(broken).run()
    at.button(key="start_import").click().run()
    assert len(at.error) == 1
    assert "line 3, column" in at.error[0].value
    assert at.session_state["config"] == before
    assert at.text_area(key="start_paste").value == broken


def test_hardware_and_model_fill_the_context():
    at = app()
    at.number_input(key="ctx:nodes").set_value(2).run()
    at.number_input(key="ctx:gpus_per_node").set_value(4).run()
    at.selectbox(key="ctx:gpu").set_value("NVIDIA V100 32GB").run()
    at.selectbox(key="start_model").set_value("meta-llama/Llama-2-7b-hf").run()
    ctx = at.session_state["context"]
    v100 = find_gpu("NVIDIA V100 32GB")
    assert (ctx["nodes"], ctx["gpus_per_node"], ctx["gpu_memory_gib"]) == (2, 4, v100.memory_gib)
    from core.models import get_spec
    spec = get_spec("meta-llama/Llama-2-7b-hf")
    assert (ctx["total_params"], ctx["largest_layer_params"]) == (spec.total_params, spec.largest_layer_params)
    assert "**8** GPUs (2 × 4)" in at.sidebar.caption[0].value


def test_batch_widget_changes_config_and_keeps_unknown_keys():
    at = app({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1, "team_note": "x"}, "z": 1},
             page="pages/batch.py")
    at.number_input(key=widget_key("gradient_accumulation_steps")).set_value(4).run()
    assert at.session_state["config"] == {
        "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1, "team_note": "x"}, "z": 1,
        "gradient_accumulation_steps": 4,
    }


def test_batch_shows_derived_values():
    at = app({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3}, page="pages/batch.py",
             nodes=1, gpus_per_node=4)
    (table,) = html_tables(at)
    row = table.set_index("Setting").loc["train_batch_size"]
    assert row["Value"] == "24"  # shown as text: a config may hold ints beyond int64
    assert row["Source"] == "derived by DeepSpeed"
    assert table.set_index("Setting").loc["gradient_accumulation_steps", "Source"] == "set in the config"
    assert at.number_input(key=widget_key("train_batch_size")).proto.placeholder == "not set — DeepSpeed derives 24"
    assert any("any (1–512)" in m.value for m in at.markdown)


def test_invalid_batch_shows_error_on_page_and_sidebar_and_fix_fixes():
    at = app({"train_batch_size": 7, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1},
             page="pages/batch.py", nodes=1, gpus_per_node=2)
    assert any("batch.product" in e.value for e in at.main.error)
    assert any("do not add up" in text and link == "Fix on Batch size | batch.product at train_batch_size"
               for text, link in sidebar_findings(at))
    fix = next(b for b in at.button if b.label.startswith("Fix:"))
    fix.click().run()
    config = at.session_state["config"]
    assert config["train_batch_size"] == config["train_micro_batch_size_per_gpu"] * \
        config["gradient_accumulation_steps"] * 2
    assert "do not add up" not in sidebar_text(at)
    assert texts(at.sidebar.success) == ["No errors or warnings"]
    # The widget shows the fixed value (its own state was reset).
    assert at.number_input(key=widget_key("train_batch_size")).value == config["train_batch_size"]


def test_batch_lists_valid_world_sizes_and_flags_current():
    at = app({"train_batch_size": 12, "train_micro_batch_size_per_gpu": 2}, page="pages/batch.py",
             nodes=1, gpus_per_node=4)
    markdown = " ".join(m.value for m in at.markdown)
    assert "GPU counts that work with these values** (1–512): 1, 2, 3, 6" in markdown
    assert any("world size 4 is not one of them" in e.value for e in at.error)


@pytest.mark.parametrize("target", ["hf"])
def test_hf_target_offers_auto(target):
    at = app({"train_micro_batch_size_per_gpu": 2}, page="pages/batch.py", target=target)
    toggle = at.toggle(key=widget_key("train_micro_batch_size_per_gpu") + ":auto")
    toggle.set_value(True).run()
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == "auto"
    at.toggle(key=widget_key("train_micro_batch_size_per_gpu") + ":auto").set_value(False).run()
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == 2  # what "auto" replaced (it was lost)
    # a key that was "auto" from the start has no value of the user's to restore: it goes
    at = app({"train_micro_batch_size_per_gpu": "auto"}, page="pages/batch.py", target=target)
    at.toggle(key=widget_key("train_micro_batch_size_per_gpu") + ":auto").set_value(False).run()
    assert "train_micro_batch_size_per_gpu" not in at.session_state["config"]


@pytest.mark.parametrize("key", ["train_batch_size", "train_micro_batch_size_per_gpu"])  # not the last key
def test_an_auto_switched_off_and_on_again_keeps_its_place(key):
    """Switched off, an "auto" the config started with is removed; switched on again it was appended, so the key
    moved to the end of the config."""
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto"}
    at = app(copy.deepcopy(config), page="pages/batch.py", target="hf")
    at.toggle(key=widget_key(key) + ":auto").set_value(False).run()
    assert key not in at.session_state["config"]
    at.toggle(key=widget_key(key) + ":auto").set_value(True).run()
    assert at.session_state["config"] == config and list(at.session_state["config"]) == list(config)


def test_switching_auto_off_restores_each_value_it_replaced():
    """Clipping 0.3 came back as the default 1.0, and lr 3e-5 was deleted (its emptied params pruned)."""
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 0.3,
              "optimizer": {"type": "AdamW", "params": {"lr": 3e-5}}}
    at = app(copy.deepcopy(config), target="hf")
    for page, path in (("precision", "gradient_clipping"), ("optimizer", "optimizer.params.lr")):
        at.switch_page(f"pages/{page}.py").run()
        at.toggle(key=widget_key(path) + ":auto").set_value(True).run()
        at.toggle(key=widget_key(path) + ":auto").set_value(False).run()
        assert not at.exception, at.exception
    assert at.session_state["config"] == config


def test_version_choice_hides_or_disables_fields_the_version_lacks():
    key = widget_key("managed_gradient_accumulation")
    at = app({"train_micro_batch_size_per_gpu": 1})
    at.selectbox(key="ctx:version").set_value("0.19.3").run()
    assert at.session_state["context"]["version"] == "0.19.3"
    at.switch_page("pages/batch.py").run()
    assert not [c for c in at.checkbox if c.key == key]  # not in 0.19.3 (read since 0.19.4) and not set: hidden
    at.session_state["config"]["managed_gradient_accumulation"] = False
    at.run()
    managed = at.checkbox(key=key)  # set in the config: shown, disabled, with the reason
    assert managed.disabled
    assert "Not available in DeepSpeed 0.19.3 (added in 0.19.4)." in managed.help
    at.switch_page("pages/start.py").run()
    at.selectbox(key="ctx:version").set_value("0.19.8").run()
    at.switch_page("pages/batch.py").run()
    assert not at.checkbox(key=key).disabled


def test_manual_parameter_counts_give_a_model_states_only_estimate():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.number_input(key="ctx:total_params").set_value(13_000_000_000).run()
    at.number_input(key="ctx:largest_layer_params").set_value(200_000_000).run()
    ctx = at.session_state["context"]
    assert (ctx["total_params"], ctx["largest_layer_params"], ctx["model_config"]) == (13_000_000_000, 200_000_000,
                                                                                        None)
    fit = [*at.sidebar.success, *at.sidebar.error]
    assert any("GiB per GPU" in e.value for e in fit)


def test_upload_a_config_file_and_a_broken_one():
    at = app({"train_micro_batch_size_per_gpu": 9})
    at.radio(key="start_source").set_value("Upload or paste").run()
    good = b'{"train_micro_batch_size_per_gpu": 2, /* c */ "zero_optimization": {"stage": 1}, "mine": true}'
    at.file_uploader(key="start_upload").upload("ds_config.json", b"{\n  \"a\": [1,,2]\n}", "application/json").run()
    at.button(key="start_import").click().run()
    assert any("line 2, column" in e.value for e in at.error)
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 9}
    at.file_uploader(key="start_upload").upload("ds_config.json", good, "application/json").run()
    at.button(key="start_import").click().run()
    assert not at.error
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1},
                                          "mine": True}
    assert at.session_state["baseline"] == at.session_state["config"]


def test_upload_a_model_config_json_sets_the_architecture():
    from core.models import get_config, get_spec
    at = app()
    at.radio(key="start_model_source").set_value("Upload config.json").run()
    hf = json.dumps(get_config("Qwen/Qwen2.5-0.5B")).encode()
    at.file_uploader(key="start_hf_config").upload("config.json", hf, "application/json").run()
    ctx = at.session_state["context"]
    spec = get_spec("Qwen/Qwen2.5-0.5B")
    assert (ctx["model"], ctx["total_params"], ctx["largest_layer_params"]) == (
        "config.json", spec.total_params, spec.largest_layer_params)
    assert ctx["model_config"] == get_config("Qwen/Qwen2.5-0.5B")
    at.file_uploader(key="start_hf_config").upload("config.json", b'{"model_type": "nope"}', "application/json").run()
    assert any("Could not read the model config" in e.value for e in at.error)
    assert at.session_state["context"]["total_params"] == spec.total_params


def test_a_total_without_the_largest_layer_asks_for_it():
    """Typing the total first (or a shared link with only the total) crashed the Start page on its caption."""
    at = app({"train_micro_batch_size_per_gpu": 1})
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.number_input(key="ctx:total_params").set_value(7_000_000_000).run()
    assert not at.exception, at.exception
    assert any("enter **Largest layer's parameters** too" in c.value for c in at.caption)
    token = app_state.encode_state({"train_micro_batch_size_per_gpu": 1}, {"total_params": 7_000_000_000}, {})
    shared = app()
    shared.query_params["s"] = token
    shared.run()
    assert not shared.exception, shared.exception


def test_looking_at_counts_by_hand_keeps_the_catalog_models_architecture():
    """Clicking "Parameter counts by hand" and back dropped the architecture (activations no longer counted);
    only typing a count does, and the count then describes no named model."""
    def fit(at):
        return [e.value for e in [*at.sidebar.success, *at.sidebar.error] if "GiB per GPU" in e.value]

    at = app({"train_micro_batch_size_per_gpu": 4})
    at.selectbox(key="start_model").set_value("meta-llama/Llama-2-7b-hf").run()
    before = fit(at)
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    assert fit(at) == before
    at.radio(key="start_model_source").set_value("Catalog").run()
    ctx = at.session_state["context"]
    assert ctx["model"] == "meta-llama/Llama-2-7b-hf" and ctx["model_config"] is not None
    assert fit(at) == before and "model states only" not in before[0]
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.number_input(key="ctx:total_params").set_value(13_000_000_000).run()
    ctx = at.session_state["context"]
    assert (ctx["model"], ctx["model_config"], ctx["total_params"]) == (None, None, 13_000_000_000)


def test_a_figure_from_counts_by_hand_says_activations_are_left_out():
    """Sidebar, headline and Review named a micro batch and a sequence length for a figure without activations."""
    at = app({"train_micro_batch_size_per_gpu": 4})
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.number_input(key="ctx:total_params").set_value(6_738_415_616).run()
    at.number_input(key="ctx:largest_layer_params").set_value(131_072_000).run()
    fit = [e.value for e in [*at.sidebar.success, *at.sidebar.error] if "GiB per GPU" in e.value]
    assert len(fit) == 1 and "model states only: no activations for a model given by parameter counts" in fit[0]
    at.switch_page("pages/review.py").run()
    assert not at.exception, at.exception
    shown = [*texts(at.success), *texts(at.warning), *texts(at.error), *texts(at.markdown)]
    assert any("Memory:" in s and "model states only" in s for s in shown)


def test_trainer_values_that_do_not_add_up_are_named_on_the_batch_page():
    """train_batch_size 96 with "auto" micro batch and accumulation and Trainer values 3 x 5 on 8 GPUs: the page said
    "see the errors above and in the headline", where there were none (the Trainer refuses 96 against 120)."""
    config = {"train_batch_size": 96, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}
    at = app(config, page="pages/batch.py", target="hf", hf_micro_batch=3, hf_grad_accum=5, nodes=1, gpus_per_node=8)
    assert not at.exception, at.exception
    assert not any("see the errors above" in w.value for w in at.warning)
    error = next(e.value for e in at.error if "per_device_train_batch_size 3" in e.value)
    assert "gradient_accumulation_steps 5" in error and "on 8 GPUs" in error and "96" in error


def test_a_largest_layer_beyond_the_total_is_refused_and_kept():
    """The app took total 1,000,000 with a largest layer of 70,000,000,000 and said "Does not fit … 139.6 GiB", a
    figure from the impossible input (the CLI refuses it). Both inputs stay as typed."""
    at = app({"train_micro_batch_size_per_gpu": 1})
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.number_input(key="ctx:total_params").set_value(1_000_000).run()
    at.number_input(key="ctx:largest_layer_params").set_value(70_000_000_000).run()
    assert not at.exception, at.exception
    assert any("**Largest layer's parameters** 70,000,000,000 is more than **Total parameters** 1,000,000" in e.value
               for e in at.error)
    assert (at.session_state["context"]["total_params"], at.session_state["context"]["largest_layer_params"]) == (
        1_000_000, 70_000_000_000)
    from ui import memory as ui_memory

    assert ui_memory.model_for(at.session_state["context"]) is None  # no figure from it


def _gpt2_context(**extra):
    from core.models import get_config, get_spec

    spec = get_spec("openai-community/gpt2")
    return {"model": "openai-community/gpt2", "total_params": spec.total_params,
            "largest_layer_params": spec.largest_layer_params, "model_config": get_config("openai-community/gpt2"),
            **extra}


def test_a_sequence_the_model_cannot_run_is_the_headlines_problem_and_the_sidebars():
    """gpt2 (1,024 learned positions) at 8,192 tokens: the headline said "Fits" and "Nothing to fix", the sidebar
    "No errors or warnings"; only the ZeRO page's speed note said the model cannot run it (transformers fails
    the forward: IndexError)."""
    at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}, page="pages/batch.py",
             **_gpt2_context(seq_len=8192))
    most = [m.value for m in at.markdown if m.value.startswith("**Most important:**")]
    assert most and "beyond the model's 1024 learned positions" in most[0]
    assert any("beyond the model's 1024 learned positions" in e.value for e in at.sidebar.error)
    at.session_state["context"]["seq_len"] = 1024
    at.run()
    assert not any("learned positions" in m.value for m in at.markdown)


def test_bf16_on_a_gpu_without_bf16_is_the_headlines_problem_on_every_page():
    at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}, page="pages/batch.py",
             **_gpt2_context(seq_len=1024, gpu="NVIDIA V100 32GB",
                           gpu_memory_gib=find_gpu("NVIDIA V100 32GB").memory_gib))
    most = [m.value for m in at.markdown if m.value.startswith("**Most important:**")]
    assert most and "has no bf16 arithmetic" in most[0] and ".." not in most[0]
    assert any("has no bf16 arithmetic" in e.value and ".." not in e.value for e in at.sidebar.error)


def test_an_upload_missing_sizes_says_on_start_which_it_took_from_the_defaults():
    """`{"model_type": "llama"}` was shown as "6.74 B parameters" with no word that every size was assumed; only
    the ZeRO page said so."""
    at = app({"train_micro_batch_size_per_gpu": 1})
    at.radio(key="start_model_source").set_value("Upload config.json").run()
    at.file_uploader(key="start_hf_config").upload("config.json", b'{"model_type": "llama"}',
                                                   "application/json").run()
    assert not at.exception, at.exception
    assert any("does not give hidden_size, num_hidden_layers" in w.value for w in at.warning)


def test_the_custom_gpus_memory_comes_back_after_looking_at_a_catalog_gpu():
    at = app({"train_micro_batch_size_per_gpu": 1})
    at.selectbox(key="ctx:gpu").set_value("Custom").run()
    at.number_input(key="ctx:gpu_memory_gib").set_value(96.0).run()
    at.selectbox(key="ctx:gpu").set_value("NVIDIA H100 80GB").run()
    assert at.session_state["context"]["gpu_memory_gib"] == find_gpu("NVIDIA H100 80GB").memory_gib
    at.selectbox(key="ctx:gpu").set_value("Custom").run()
    assert at.session_state["context"]["gpu_memory_gib"] == 96.0
    assert at.number_input(key="ctx:gpu_memory_gib").value == 96.0


def test_a_sequence_parallel_size_not_dividing_the_gpus_is_a_warning_on_the_batch_page_as_in_the_validator():
    """SP 3 on 8 GPUs: DeepSpeed parses it (a data-parallel size of 2.67) and the validator warns; the Batch page
    said it in red ("not one of them"). A batch that cannot resolve stays an error."""
    at = app({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "sequence_parallel_size": 3},
             page="pages/batch.py")
    assert not [e.value for e in at.error if "world size 8" in e.value]
    warning = next(w.value for w in at.warning if "world size 8 is not one of them" in w.value)
    assert "DeepSpeed starts, but sequence_parallel_size 3 does not divide the 8 GPUs" in warning
    refused = app({"train_batch_size": 12, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2},
                  page="pages/batch.py")
    assert any("world size 8 is not one of them" in e.value for e in refused.error)


def test_elastic_training_shows_the_batch_it_computes_and_the_gpu_counts_its_search_accepts():
    """DeepSpeed 0.19.7 with elasticity on: the batch comes from elastic training's search, not the batch keys, and
    only the GPU counts the search calls valid start (64 does not; 8 does)."""
    elastic = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                              "version": 0.1}}
    at = app(elastic, page="pages/batch.py", version="0.19.7", nodes=1, gpus_per_node=8)
    (table,) = html_tables(at)
    rows = table.set_index("Setting")
    assert rows.loc["train_batch_size", "Value"] == "1680"
    assert set(rows["Source"]) == {"computed by elastic training"}
    markdown = " ".join(m.value for m in at.markdown)
    assert "(1–512): 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 15, 20" in markdown and ", 64," not in markdown
    refused = app(elastic, page="pages/batch.py", version="0.19.7", nodes=8, gpus_per_node=8)
    assert any("elasticity.world-size" in e.value for e in refused.main.error)
    assert any("world size 64 is not one of them" in e.value for e in refused.error)


def test_a_gpu_of_several_devices_says_how_to_count_it_on_its_own_line():
    """The MI250X's counting rule was in the drop-down's label, which the narrow column cut off."""
    mi250x = next(g for g in GPUS if g.devices > 1)
    at = app({"train_micro_batch_size_per_gpu": 1})
    assert not [c.value for c in at.caption if "GCDs" in c.value]
    at.selectbox(key="ctx:gpu").set_value(mi250x.name).run()
    said = [c.value for c in at.caption if "GCDs" in c.value]
    assert said == [f"One {mi250x.name} is {mi250x.devices} devices (GCDs) of {mi250x.memory_gib:g} GiB, one "
                    f"DeepSpeed rank each: count GPUs per node in GCDs ({mi250x.devices} per package)."]
    assert at.session_state["context"]["gpu_memory_gib"] == mi250x.memory_gib
