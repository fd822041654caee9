"""Issue 16 in the app: the headline, "make it fit", honest "auto", share link, HF export, and the new-user defects."""

from __future__ import annotations

import copy
import json
import re
import urllib.parse

from app_support import app, shown_tables, sidebar_text

import core
from core import hardware, presets
from core.memory.result import gib_capacity
from core.models import describe, get_config
from ui import app_state, focus, widgets

LLAMA70 = "meta-llama/Llama-2-70b-hf"
#: The app's first GPU (every test context keeps it), as the catalog has it.
CAP = hardware.GPU_BY_NAME[hardware.DEFAULT_GPU]


def model_context(name: str) -> dict:
    hf = get_config(name)
    spec = describe(hf, name=name)
    return {"model": name, "model_config": hf, "total_params": spec.total_params,
            "largest_layer_params": spec.largest_layer_params}


def preset_config(name: str) -> dict:
    found = {p.name: p for p in presets.list_presets([presets.BUILTIN_DIR])[0]}
    return json.loads(json.dumps(found[name].config))


def headline(at) -> str:
    return "\n".join(m.value for m in at.main.markdown[:4])


def test_share_link_holds_the_config_after_a_later_edit():
    at = app({"train_micro_batch_size_per_gpu": 3}, page="pages/review.py")
    at.button(key="review_share").click().run()
    at.session_state["config"]["train_micro_batch_size_per_gpu"] = 7  # an edit after the link was made
    at.run()
    link = next(c.value for c in at.code if f"?{app_state.SHARE_PARAM}=" in c.value)
    config, _, _ = app_state.decode_state(link.split(f"?{app_state.SHARE_PARAM}=", 1)[1])
    assert config["train_micro_batch_size_per_gpu"] == 7


def test_review_never_says_accepted_without_the_memory_verdict():
    at = app(preset_config("zero1-bf16"), page="pages/review.py", **model_context(LLAMA70))
    accepted = [e.value for e in [*at.success, *at.warning] if "will accept" in e.value]
    assert accepted and all("Does not fit" in text and "GiB" in text for text in accepted)
    assert not any("will accept" in e.value for e in at.success)  # not a green "all good"


def test_headline_on_every_page_says_accepted_and_does_not_fit_with_a_fix():
    # (Start is left out: its model picker re-reads the model from its own widget, which this harness sets first)
    for page in [p for pid, p in app_state.PAGES.items() if pid != "start"]:
        at = app(preset_config("zero1-bf16"), page=page, **model_context(LLAMA70))
        text = headline(at)
        assert "Accepted" in text and "Does not fit" in text, page
        assert f"GPU 630.6 of {gib_capacity(CAP.memory_bytes)} GiB" in text, page
    fit_button = next(b for b in at.button if b.key == "headline_fit")
    fit_button.click().run()
    assert not at.exception
    assert "**Fits**]" in headline(at)
    assert at.session_state["config"]["zero_optimization"]["stage"] == 3
    next(b for b in at.button if b.key == "undo:headline").click().run()
    assert at.session_state["config"]["zero_optimization"]["stage"] == 1


def test_misspelt_section_is_the_headline_problem_with_did_you_mean_and_a_fix():
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}, "bf16": {"enabled": True},
              "gradient_clipping": "1.0x"}
    at = app(config, page="pages/batch.py")
    text = headline(at)
    assert "**Most important:** `zero_optimisation` is not a DeepSpeed section" in text
    assert "did you mean `zero_optimization`?" in text
    at.button(key="headline_fix").click().run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3}
    assert "zero_optimisation" not in at.session_state["config"]
    at = app({"train_micro_batch_size_per_gpu": 1, "bf_16": {"enabled": True}}, page="pages/start.py")
    assert "did you mean `bf16`?" in headline(at)


def test_a_preset_file_imported_as_a_config_is_named_and_unwrapped_with_one_click():
    preset = presets.load_preset("zero2-bf16", [presets.BUILTIN_DIR])
    at = app({"meta": preset.meta, "config": preset.config}, page="pages/start.py")
    assert "config.preset-file" in headline(at)
    at.button(key="headline_fix").click().run()
    assert at.session_state["config"] == preset.config
    assert "config.preset-file" not in headline(at)


def test_switching_to_warmup_cosine_adapts_the_params_and_keeps_step_counts_integers():
    config = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
              "scheduler": {"type": "WarmupLR",
                            "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-4, "warmup_num_steps": 100}}}
    at = app(config, page="pages/optimizer.py", train_steps=12000)
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupCosineLR").run()
    assert at.session_state["config"]["scheduler"] == {
        "type": "WarmupCosineLR", "params": {"warmup_num_steps": 100, "total_num_steps": 12000}}
    assert not at.error
    assert not any("params.params" in e.value for e in [*at.error, *at.warning])
    box = at.number_input(key="cfg:scheduler.params.total_num_steps")
    box.set_value(20000).run()
    steps = at.session_state["config"]["scheduler"]["params"]["total_num_steps"]
    assert steps == 20000 and isinstance(steps, int)
    exported = next(c.value for c in at.switch_page("pages/review.py").run().code if '"total_num_steps"' in c.value)
    assert '"total_num_steps": 20000' in exported


def test_switching_the_scheduler_away_and_back_restores_its_params_and_not_set_removes_the_type():
    """WarmupDecayLR's total_num_steps 1000 came back as the chart's 10000 after a switch to WarmupLR and back;
    "not set" wrote "type": null after params instead of removing it. "Not set" now takes the params with it (no type,
    no scheduler; the HF Trainer took the params left as one to build), and they come back with the type."""
    config = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
              "scheduler": {"type": "WarmupDecayLR",
                            "params": {"warmup_max_lr": 1e-3, "warmup_num_steps": 100, "total_num_steps": 1000}}}
    at = app(copy.deepcopy(config), page="pages/optimizer.py", train_steps=10000)
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupLR").run()
    assert "total_num_steps" not in at.session_state["config"]["scheduler"]["params"]
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupDecayLR").run()
    assert at.session_state["config"]["scheduler"] == config["scheduler"]
    at.selectbox(key="cfg:scheduler.type").select_index(0).run()  # "not set"
    assert not at.exception
    assert "scheduler" not in at.session_state["config"]
    at.selectbox(key="cfg:scheduler.type").set_value("WarmupDecayLR").run()
    assert at.session_state["config"]["scheduler"] == config["scheduler"]


def test_upload_and_paste_the_last_one_given_wins_and_the_page_says_which():
    at = app()
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.file_uploader(key="start_upload").upload("mine.json", b'{"train_micro_batch_size_per_gpu": 2}',
                                                 "application/json").run()
    assert any("uploaded file **mine.json**" in c.value for c in at.caption)
    at.text_area(key="start_paste").input('{"train_micro_batch_size_per_gpu": 5}').run()
    assert any("**pasted text**" in c.value for c in at.caption)
    at.button(key="start_import").click().run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 5}
    at.file_uploader(key="start_upload").upload("other.json", b'{"train_micro_batch_size_per_gpu": 3}',
                                                 "application/json").run()
    at.button(key="start_import").click().run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 3}


def test_loading_a_preset_over_edits_keeps_the_hf_target_and_offers_undo():
    edited = {"train_micro_batch_size_per_gpu": 6, "gradient_clipping": 0.3}
    at = app(edited, target="hf")
    at.selectbox(key="start_preset").set_value("zero2-bf16").run()
    at.button(key="start_load_preset").click().run()
    assert at.session_state["context"]["target"] == "hf"
    assert at.session_state["config"] == preset_config("zero2-bf16")
    assert any("your target stays hf" in s.value for s in at.success)
    at.button(key="undo:start").click().run()
    assert at.session_state["config"] == edited
    assert at.session_state["context"]["target"] == "hf"


def test_compare_takes_the_current_config_and_shows_auto_as_auto():
    mine = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}
    at = app(mine, page="pages/presets.py", target="hf", hf_micro_batch=4, **model_context("meta-llama/Llama-3.2-1B"))
    at.selectbox(key="presets_left").set_value("(current config)").run()
    at.selectbox(key="presets_right").set_value("hf-auto-zero3").run()
    diff = next(d for d in shown_tables(at) if "Key" in d.columns and "Why" not in d.columns)
    row = diff[diff["Key"] == "train_micro_batch_size_per_gpu"].iloc[0]
    assert row["(current config)"] == "2" and row["hf-auto-zero3"] == '"auto"'
    totals = next(d for d in shown_tables(at) if "Config" in d.columns).set_index("Config")
    assert totals.loc["hf-auto-zero3", "Micro batch (as written)"] == '"auto"'
    assert totals.loc["hf-auto-zero3", "Micro batch used"] == "4 (assumed)"
    assert totals.loc["(current config)", "Micro batch used"] == "2"
    assert any("micro batch 4 assumed" in c.value for c in at.caption)


def test_batch_page_with_hf_auto_computes_with_the_trainer_values():
    at = app(preset_config("hf-auto-zero3"), page="pages/batch.py", target="hf", nodes=2, gpus_per_node=8,
             **model_context("meta-llama/Llama-3.2-1B"))
    assert not any("No GPU count" in m.value for m in at.markdown)
    assert any("any (1–512)" in m.value for m in at.markdown)
    at.number_input(key="ctx:hf_micro_batch").set_value(4).run()
    at.number_input(key="ctx:hf_grad_accum").set_value(2).run()
    table = next(d for d in shown_tables(at) if "Setting" in d.columns).set_index("Setting")
    assert table.loc["train_batch_size", "Value"] == 128  # 4 × 2 × 16 GPUs
    assert table.loc["train_micro_batch_size_per_gpu", "Source"] == "filled by the HF Trainer"
    # the memory model uses (and says) the assumed micro batch
    assert "micro batch 4 assumed" in headline(at) and "micro batch 4," in headline(at)


def test_zero_page_tables_agree_and_label_in_gib():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
    at = app(config, page="pages/zero.py", nodes=1, gpus_per_node=8, gpu_memory_gib=24.0,
             **model_context("meta-llama/Llama-2-7b-hf"))
    stages = next(d for d in shown_tables(at) if "ZeRO stage" in d.columns).set_index("ZeRO stage")
    options = next(d for d in shown_tables(at) if "Option" in d.columns).set_index("Option")
    for stage in range(4):
        assert stages.loc[stage, "Fits (full estimate, no offload)"] == options.loc[f"ZeRO-{stage}", "Fits"]
    assert set(options["Fits"]) <= {"fits", "does not fit"}
    for frame in shown_tables(at):
        assert not any(c in frame.columns for c in ("gib_per_gpu", "total_gib", "fits", "gpu_gib")), frame


def test_zero_page_make_it_fit_applies_a_way_and_nvme_zero_is_no_nvme():
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"},
                                    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}
    at = app(config, page="pages/zero.py", nvme_gib=0.0, **model_context("meta-llama/Llama-2-7b-hf"))
    assert "**Does not fit**] (NVMe)" in headline(at)
    at = app(preset_config("zero1-bf16"), page="pages/zero.py", **model_context("meta-llama/Meta-Llama-3-8B"),
             gpu_memory_gib=40.0, gpu="Custom")
    assert "Does not fit" in headline(at)
    at.button(key="zero_fit_0").click().run()
    assert not at.exception
    assert "**Fits**]" in headline(at)


def test_offload_knobs_hidden_until_a_device_is_chosen():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}, page="pages/zero.py")
    keys = {w.key for w in at.number_input}
    assert "cfg:zero_optimization.offload_optimizer.buffer_count" not in keys
    at.selectbox(key="cfg:zero_optimization.offload_optimizer.device").set_value("cpu").run()
    assert "cfg:zero_optimization.offload_optimizer.buffer_count" in {w.key for w in at.number_input}


def test_sidebar_did_you_mean_is_in_the_text():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}}, page="pages/zero.py")
    assert any("`zero_optimisation`" in m.value and "Did you mean `zero_optimization`?" in m.value
               for m in at.sidebar.markdown)


def test_a_sidebar_finding_names_its_field_once():
    from core.findings import Finding
    from ui.sidebar import finding_label

    named = Finding("error", "hf.never-matches", "bf16.enabled", '`bf16.enabled` is "true"; the Trainer refuses it.')
    assert finding_label(named).count("bf16.enabled") == 1
    unnamed = Finding("warning", "zero.null", "zero_optimization", "The section is null.")
    assert "`zero_optimization`: The section is null." in finding_label(unnamed)


def test_every_table_on_every_page_has_human_column_labels():
    import re

    config = preset_config("zero3-offload-cpu")
    config["scheduler"] = {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 10}}
    seen = 0
    for page in app_state.PAGES.values():
        at = app(config, page=page, **model_context("meta-llama/Llama-3.2-1B"))
        for frame in shown_tables(at):
            seen += 1
            raw = [c for c in frame.columns if re.fullmatch(r"[a-z0-9_]+", str(c))]
            assert not raw, (page, list(frame.columns))
    assert seen >= 8


def test_import_with_a_trailing_comma_warns_that_strict_readers_refuse_it():
    at = app()
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").input('{"train_micro_batch_size_per_gpu": 4,}').run()
    at.button(key="start_import").click().run()
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 4}
    assert any("Not strict JSON" in s.value and "json.load" in s.value for s in at.success)
    at.text_area(key="start_paste").input('{"train_micro_batch_size_per_gpu": 4}').run()
    at.button(key="start_import").click().run()
    assert not any("Not strict JSON" in s.value for s in at.success)


def test_make_it_fit_list_shows_the_speed_cost():
    at = app(preset_config("zero1-bf16"), page="pages/zero.py", **model_context(LLAMA70))
    costs = [c.value for c in at.caption if "tokens per second per GPU" in c.value]
    assert len(costs) == sum(1 for b in at.button if (b.key or "").startswith("zero_fit_")) > 3


def follow(at, link) -> None:
    """Open a page link as the browser would: its page with its query parameters."""
    at.query_params.clear()
    for pair in link.proto.query_string.split("&"):
        name, _, value = pair.partition("=")
        at.query_params[name] = urllib.parse.unquote_plus(value)
    page = next(p for p in ("start", "batch", "precision", "optimizer", "zero", "monitoring", "advanced", "presets",
                            "review", "plan") if link.proto.page.endswith(p))
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception


def landing_box(at) -> list:
    """The elements inside the box a finding's link landed on (``ui.focus``), [] when there is none."""
    def blocks(node):  # containers, columns, tabs, expanders …
        for child in getattr(node, "children", {}).values():
            if hasattr(child, "children"):
                yield child
                yield from blocks(child)
    box = next((b for b in blocks(at.main) if type(b).__name__ == "Block" and focus.BOX_KEY in str(b.proto)), None)
    return [] if box is None else list(box.children.values())


def fix_link(at, where, path: str):
    return next(e for e in where if type(e).__name__ == "PageLink" and f"focus={urllib.parse.quote_plus(path)}"
                in e.proto.query_string)


def test_a_fix_link_lands_on_the_finding_and_the_widget_of_its_field():
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}}
    at = app(config)
    link = fix_link(at, at.sidebar, "zero_optimisation")
    assert "zero" in link.proto.page and "field=zero_optimization.stage" in link.proto.query_string
    follow(at, link)
    focused = [m.value for m in at.main.markdown if "You came here to fix" in m.value]
    assert focused and "Did you mean `zero_optimization`?" in focused[0]
    # the widget the user changes is in the landing box, which says so (and the browser scrolls to it)
    box = landing_box(at)
    # the stage is one row of buttons (a ButtonGroup in AppTest); only that field's widget is in the box
    assert [(type(e).__name__, e.key) for e in box if (getattr(e, "key", None) or "").startswith(
        widgets.widget_key(""))] == [("ButtonGroup", widgets.widget_key("zero_optimization.stage"))]
    assert "The field you came to change" in box[0].value
    at.button(key="focus_fix").click().run()
    assert at.session_state["config"]["zero_optimization"] == {"stage": 3}


def test_a_scheduler_param_link_lands_on_that_param_widget():
    config = {"train_micro_batch_size_per_gpu": 1,
              "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}}
    at = app(config, page="pages/review.py")
    link = fix_link(at, at.main, "scheduler.params.total_num_steps")
    assert "field=scheduler.params.total_num_steps" in link.proto.query_string
    follow(at, link)
    assert "optimizer" in link.proto.page
    keys = [getattr(e, "key", None) for e in landing_box(at)]
    assert widgets.widget_key("scheduler.params.total_num_steps") in keys
    assert sum(1 for k in keys if (k or "").startswith(widgets.widget_key(""))) == 1  # that widget only
    at.query_params.clear()
    at.switch_page("pages/optimizer.py").run()  # without the link's parameters: no box
    assert landing_box(at) == []


def test_review_shows_which_releases_accept_the_config():
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}, page="pages/review.py")
    strip = next(m.value for m in at.main.markdown if m.value.startswith("**Works with releases:**"))
    assert "works with" in strip and "profiled DeepSpeed releases accept it" in strip


def test_first_visit_says_the_shown_preset_is_not_loaded_yet():
    at = app()
    assert any("Nothing is loaded yet" in c.value for c in at.caption)
    at.button(key="start_load_preset").click().run()
    assert not any("Nothing is loaded yet" in c.value for c in at.caption)


def test_auto_micro_batch_way_changes_the_trainer_value_not_the_config():
    config = preset_config("hf-auto-zero3")
    at = app(config, page="pages/zero.py", target="hf", **model_context("meta-llama/Meta-Llama-3-8B"))
    titles = [m.value for m in at.main.markdown if m.value.startswith("**") and "Micro batch" in m.value]
    assert titles, "a smaller per-device batch is offered"
    index = next(i for i, m in enumerate(
        [m.value for m in at.main.markdown if m.value.startswith(("**1.", "**2.", "**3.", "**4.", "**5.", "**6.",
                                                                  "**7."))]) if "Micro batch" in m)
    at.button(key=f"zero_fit_{index}").click().run()
    assert at.session_state["config"] == config
    assert at.session_state["context"]["hf_micro_batch"] < 8


def test_hf_snippet_passes_the_assumed_trainer_batch_for_auto():
    at = app(preset_config("hf-auto-zero3"), page="pages/review.py", target="hf", hf_micro_batch=2, hf_grad_accum=4)
    snippet = next(c.value for c in at.code if "TrainingArguments(" in c.value)
    assert "per_device_train_batch_size=2," in snippet and "gradient_accumulation_steps=4," in snippet


def test_zero_page_metrics_say_over_capacity_in_gib_with_one_decimal():
    at = app(preset_config("zero1-bf16"), page="pages/zero.py", **model_context(LLAMA70))
    metrics = {m.label: m for m in at.metric}
    gpu, cpu = metrics["Peak per GPU"], metrics["CPU RAM per node"]
    over = re.fullmatch(r"-(\d+\.\d) GiB over capacity", gpu.proto.delta)
    assert gpu.value == "630.6 GiB" and over and abs(float(over[1]) - (630.6 - CAP.memory_gib)) <= 0.1
    assert re.fullmatch(r"\d+\.\d GiB", cpu.value) and cpu.proto.delta.endswith(("GiB free", "GiB over capacity"))


def test_two_findings_on_one_path_each_link_lands_on_its_own_finding_and_fix():
    """A micro batch of 1.5 has type.unchecked and batch.not-integer on one path: the link under the second landed
    on the first, and its button applied the other finding's fix."""
    config = {"train_micro_batch_size_per_gpu": 1.5, "gradient_accumulation_steps": 2}
    at = app(config)
    links = [e for e in at.sidebar if type(e).__name__ == "PageLink" and "focus=train_micro_batch_size_per_gpu"
             in e.proto.query_string]
    codes = {urllib.parse.parse_qs(link.proto.query_string)["code"][0]: link for link in links}
    assert {"type.unchecked", "batch.not-integer"} <= set(codes)
    for code in ("batch.not-integer", "type.unchecked"):
        at = app(copy.deepcopy(config))
        follow(at, next(e for e in at.sidebar if type(e).__name__ == "PageLink"
                        and f"code={urllib.parse.quote_plus(code)}" in e.proto.query_string))
        focused = [m.value for m in at.main.markdown if "You came here to fix" in m.value]
        assert focused and code in focused[0], (code, focused)
        expected = next(f for f in core.validate(config, world_size=8).findings if f.code == code)
        assert at.button(key="focus_fix").label == f"Fix: {expected.fix.description}"
        at.button(key="focus_fix").click().run()
        assert at.session_state["config"] == expected.fix.apply(config)


def test_undo_says_when_it_also_reverts_later_edits_and_a_fix_is_undoable():
    """"Undo: load of dp-bf16" also threw away an edit made after the load without saying so; "Apply 1 safe fix"
    was not undoable, and the only undo offered (the import's) reverted the fix and the import together."""
    at = app({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": 2, "cpu_offload": True}, "my_key": 1}, page="pages/review.py")
    before = copy.deepcopy(at.session_state["config"])
    at.button(key="review_fix_all").click().run()
    assert at.session_state["config"] != before
    undo = [b for b in at.button if b.label.startswith("Undo:")]
    assert undo and undo[0].label == "Undo: applying 1 safe fix", [b.label for b in undo]
    at.switch_page("pages/monitoring.py").run()
    at.number_input(key="cfg:steps_per_print").set_value(123).run()
    undo = [b for b in at.button if b.label.startswith("Undo:")]
    assert undo[0].label == "Undo: applying 1 safe fix and the 1 edit made since"
    undo[0].click().run()
    assert at.session_state["config"] == before


def test_the_fit_verdict_says_the_precision_attention_and_recomputation_it_assumed():
    """The sidebar and the headline said "micro batch 4, 4096 tokens" above figures that differ 10x with the
    attention kernel and recomputation, and an HF "auto" precision estimated as fp32 said nothing there."""
    from core.models import get_config, get_spec

    spec = get_spec("meta-llama/Llama-2-7b-hf")
    at = app({"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}},
             page="pages/zero.py", model="meta-llama/Llama-2-7b-hf", total_params=spec.total_params,
             largest_layer_params=spec.largest_layer_params, model_config=get_config("meta-llama/Llama-2-7b-hf"),
             recompute="full")
    at.run()
    said = sidebar_text(at) + "\n".join(m.value for m in at.markdown)
    assert "bf16, micro batch 4" in said and "attention, full recomputation" in said, said


def test_zero_page_figures_near_the_limit_never_contradict_the_verdict():
    """80.002 GiB of 80 read "80.0 GiB", "-0.0 GiB over capacity", "it needs 80.0 GiB per GPU, the GPU has 80.0 GiB"
    in the headline and "80.0 of 80 GiB" in the sidebar, beside "does not fit". 8528 tokens are a hair over the
    A100 80GB's 79.15 GiB (tests/test_memory_cli.py finds the edge); plain rounding would show 79.1 of 79.15."""
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    at = app(config, page="pages/zero.py", **model_context("meta-llama/Llama-2-7b-hf"), seq_len=8528, attention="sdpa")
    gpu = next(m for m in at.metric if m.label == "Peak per GPU")
    assert (gpu.value, gpu.proto.delta) == ("79.2 GiB", "-0.1 GiB over capacity")
    words = " ".join(m.value for m in [*at.markdown, *at.error, *at.caption])
    assert "it needs 79.2 GiB per GPU, the GPU has 79.15 GiB" in words and "79.2 of 79.15 GiB per GPU" in words
    assert "79.1 GiB per GPU" not in words and CAP.memory_gib == 79.15
