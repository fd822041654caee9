"""AppTest: Monitoring, Advanced and Review & export pages; the export helpers; the shareable link."""

from __future__ import annotations

import copy
import json

from app_support import APP, ROOT, app, sidebar_findings
from streamlit.testing.v1 import AppTest

import core
from core import export
from core.effective import effective
from core.presets import list_presets
from ui import app_state, fields
from ui.widgets import widget_key

PRESETS = {p.name: p for p in list_presets([ROOT / "presets"])[0]}


# ------------------------------------------------------------------ monitoring

def test_monitoring_widgets_write_their_sections():
    at = app({"train_micro_batch_size_per_gpu": 1, "tensorboard": {"job_name": "run1"}}, page="pages/monitoring.py")
    at.checkbox(key=widget_key("tensorboard.enabled")).check().run()
    at.number_input(key=widget_key("steps_per_print")).set_value(50).run()
    at.checkbox(key=widget_key("wall_clock_breakdown")).check().run()
    assert at.session_state["config"] == {
        "train_micro_batch_size_per_gpu": 1, "tensorboard": {"job_name": "run1", "enabled": True},
        "steps_per_print": 50, "wall_clock_breakdown": True,
    }


def test_switched_off_sections_disable_their_other_fields_until_enabled():
    at = app({"train_micro_batch_size_per_gpu": 1, "wandb": {"enabled": False, "project": "p"}},
             page="pages/monitoring.py")
    for path in ("tensorboard.output_path", "flops_profiler.profile_step", "comms_logger.verbose", "wandb.project"):
        widget = next(w for w in at.main if getattr(w, "key", None) == widget_key(path))
        section = path.split(".")[0]
        assert widget.disabled, path
        assert f"`{section}` is off: turn on `enabled` first." in widget.help
        assert not at.checkbox(key=widget_key(f"{section}.enabled")).disabled
    assert any("`wandb.project` is set but `wandb` is off" in c.value for c in at.caption)
    at.checkbox(key=widget_key("tensorboard.enabled")).check().run()
    assert not at.text_input(key=widget_key("tensorboard.output_path")).disabled
    assert at.text_input(key=widget_key("wandb.project")).disabled


def test_switched_off_reads_the_schema_at_every_level():
    assert fields.switched_off("tensorboard", {}) == "`tensorboard` is off: turn on `enabled` first."
    assert fields.switched_off("tensorboard", {"tensorboard": {"enabled": True}}) is None
    assert fields.switched_off("fp16", {"fp16": {"enabled": "auto"}}) is None  # HF fills it in
    assert fields.switched_off("fp16", {"fp16": {"enabled": "true"}}) is None  # as pydantic reads it
    assert fields.switched_off("zero_optimization", {}) is None  # no switch in the schema
    # A section whose switch defaults to on, and an enclosing switch that is off.
    assert fields.switched_off("weight_quantization", {}) is None
    nested = {"data_efficiency": {"enabled": False, "data_sampling": {"enabled": True}}}
    assert fields.switched_off("data_efficiency.data_sampling", nested) == (
        "`data_efficiency` is off: turn on `enabled` first.")
    assert fields.switched_off("no_such_section", {}) is None


def test_switched_off_reads_the_switch_as_the_chosen_release_does():
    """0.16.0 reads the fp16 section with dict.get: "false" is a true value there, so fp16 is on and its fields
    matter; the newest release reads it with pydantic (off). The Precision page's fields follow the release."""
    written = {"fp16": {"enabled": "false"}}
    assert fields.switched_off("fp16", written) == "`fp16` is off: turn on `enabled` first."
    assert fields.switched_off("fp16", written, "0.16.0") is None
    assert fields.switched_off("fp16", {"fp16": {"enabled": False}}, "0.16.0") == (
        "`fp16` is off: turn on `enabled` first.")
    assert effective(written, "0.16.0").fp16 and not effective(written).fp16  # the same reading as core.effective
    config = {"train_batch_size": 8, "fp16": {"enabled": "false", "loss_scale": 0}}
    at = app(config, page="pages/precision.py", version="0.16.0")
    assert not at.number_input(key=widget_key("fp16.loss_scale")).disabled
    assert not any("`fp16` is off" in c.value for c in at.caption)


def test_monitoring_wrong_type_is_shown_as_raw_json_with_the_error():
    at = app({"train_micro_batch_size_per_gpu": 1, "steps_per_print": "often"}, page="pages/monitoring.py")
    raw = at.text_area(key=widget_key("steps_per_print"))
    assert raw.value == '"often"'
    assert any("steps_per_print" in e.value for e in [*at.main.error, *at.main.warning])
    raw.input("25").run()
    assert at.session_state["config"]["steps_per_print"] == 25
    assert at.number_input(key=widget_key("steps_per_print")).value == 25


# ------------------------------------------------------------------ advanced

def test_advanced_generated_widgets_and_raw_editor():
    config = {"train_micro_batch_size_per_gpu": 1, "activation_checkpointing": {"partition_activations": True},
              "my_tool": {"a": 1}}
    at = app(config, page="pages/advanced.py")
    assert "`activation_checkpointing` (set)" in [e.label for e in at.expander]
    at.checkbox(key=widget_key("activation_checkpointing.cpu_checkpointing")).check().run()
    assert at.session_state["config"]["activation_checkpointing"] == {
        "partition_activations": True, "cpu_checkpointing": True}
    raw = at.text_area(key=widget_key("raw:activation_checkpointing"))
    assert json.loads(raw.value) == {"partition_activations": True, "cpu_checkpointing": True}
    raw.input('{"number_checkpoints": 4, "team_flag": true}').run()
    assert at.session_state["config"]["activation_checkpointing"] == {"number_checkpoints": 4, "team_flag": True}
    assert at.session_state["config"]["my_tool"] == {"a": 1}
    assert at.number_input(key=widget_key("activation_checkpointing.number_checkpoints")).value == 4


def test_advanced_raw_editor_rejects_broken_json_and_keeps_config():
    config = {"train_micro_batch_size_per_gpu": 1, "checkpoint": {"tag_validation": "Warn"}}
    at = app(config, page="pages/advanced.py")
    at.text_area(key=widget_key("raw:checkpoint")).input('{\n  "tag_validation": \n}').run()
    assert any("line 3, column 1" in e.value for e in at.error)
    assert at.session_state["config"] == config


def test_advanced_removed_section_is_shown_only_when_present_with_error():
    at = app({"train_micro_batch_size_per_gpu": 1}, page="pages/advanced.py")
    assert not any("nebula" in e.label for e in at.expander)
    at = app({"train_micro_batch_size_per_gpu": 1, "nebula": {"enabled": True}}, page="pages/advanced.py")
    assert any(e.label == "`nebula` (set) 🛑" for e in at.expander)
    assert any("nebula" in e.value for e in at.main.error)
    assert any("`nebula`" in text and link.startswith("Fix on Advanced") for text, link in sidebar_findings(at))


# ------------------------------------------------------------------ review & export

def test_review_lists_findings_and_apply_all_applies_the_safe_fixes_and_lists_the_rest():
    cfg = dict(PRESETS["zero3-offload-cpu"].config, train_batch_size=7, fp16={"enabled": True},
               amp={"enabled": False}, bfloat16={"enabled": True})
    at = app(json.loads(json.dumps(cfg)), page="pages/review.py")
    errors = {e.value.split("**")[1] for e in at.main.error}
    assert {"batch.product", "precision.fp16-and-bf16", "removed.key"} <= errors
    at.button(key="review_fix_all").click().run()
    fixed = at.session_state["config"]
    assert "amp" not in fixed and "bfloat16" not in fixed  # safe: removed/ignored keys
    assert fixed["train_batch_size"] == 7 and fixed["fp16"] == {"enabled": True}  # unsafe: left for the user
    assert core.validate(fixed, world_size=8).codes() & {"removed.key", "deprecated.bfloat16-ignored"} == set()
    listed = " ".join(i.value for i in at.main.info)
    assert "Not applied" in listed and "train_batch_size" in listed and "Keep bf16, disable fp16" in listed
    assert {e.value.split("**")[1] for e in at.main.error} == {"batch.product", "precision.fp16-and-bf16"}


def test_review_explains_each_finding_code_from_the_code_table_while_open():
    from core.rules import codes

    cfg = {"train_micro_batch_size_per_gpu": 1, "train_batch_size": 7, "amp": {"enabled": False}}
    at = app(cfg, page="pages/review.py")
    shown = {f.code for f in core.validate(cfg, world_size=8).findings}
    assert "removed.key" in shown and len(shown) >= 2
    assert not any("When:" in m.value for m in at.markdown)  # closed: nothing drawn
    at.session_state["review_codes"] = True  # what opening the expander does
    at.run()
    entries = [m.value for m in at.markdown if "*When:*" in m.value]
    assert len(entries) == len(shown)
    for code in shown:
        entry = codes.lookup(code)
        text = next(e for e in entries if e.startswith(f"**{code}**"))
        assert entry.summary.split(".")[0] in text and codes.FAILS[entry.fails] in text


def test_review_diff_against_baseline_and_download_matches():
    base = PRESETS["zero2-bf16"].config
    at = app(json.loads(json.dumps(base)), page="pages/review.py")
    at.session_state["baseline"] = json.loads(json.dumps(base))
    at.run()
    assert any("No changes" in c.value for c in at.caption)
    at.session_state["config"]["gradient_clipping"] = 0.3
    at.run()
    diff = next(c.value for c in at.code if c.language == "diff")
    assert '+  "gradient_clipping": 0.3' in diff
    assert f'-  "gradient_clipping": {json.dumps(base["gradient_clipping"])}' in diff
    assert at.code[0].value == core.dump_config(at.session_state["config"]).rstrip("\n")


def test_review_minimal_variant_drops_defaults_only():
    config = {"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": False}, "gradient_clipping": 1.0,
              "zero_optimization": {"stage": 0, "offload_param": {"device": "none"}}, "custom": None}
    at = app(config, page="pages/review.py")
    at.radio(key="review_variant").set_value("Only what differs from defaults").run()
    assert json.loads(at.code[0].value) == {"train_micro_batch_size_per_gpu": 2,
                                            "zero_optimization": {"offload_param": {}}, "custom": None}


def test_review_explicit_variant_writes_out_the_defaults_of_the_sections_in_use():
    config = {"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": True}, "custom": [1]}
    at = app(copy.deepcopy(config), page="pages/review.py", version="0.19.5")
    at.radio(key="review_variant").set_value("Explicit (every default of the sections in use)").run()
    shown = json.loads(at.code[0].value)
    assert shown == export.explicit_config(config, version="0.19.5")
    assert set(shown["fp16"]) > {"enabled"} and shown["custom"] == [1]
    assert "tensorboard" not in shown
    assert at.session_state["config"] == config  # the form shown is not written back


def test_launch_snippets_follow_the_hardware():
    at = app({"train_micro_batch_size_per_gpu": 1}, page="pages/review.py", nodes=2, gpus_per_node=4)
    codes = [c.value for c in at.code]
    assert any("--hostfile hostfile --num_nodes 2 --num_gpus 4" in c and "node2 slots=4" in c for c in codes)
    # no scheduler in the config: the Trainer is told to keep the rate constant, as DeepSpeed does
    assert any('TrainingArguments(\n    output_dir="out",\n    deepspeed="ds_config.json",\n'
               '    per_device_train_batch_size=1,\n    lr_scheduler_type="constant",\n)' in c for c in codes)
    # accelerate requires a zero_optimization section: its own file, offered for download beside the snippet
    assert any("deepspeed_config_file: ds_config.accelerate.json" in c and "num_processes: 8" in c for c in codes)
    assert any('"zero_optimization": {\n    "stage": 0\n  }' in c for c in codes)
    # Lightning gets its own file: DeepSpeed's gradient_clipping written (Lightning would write 0.0)
    assert any('DeepSpeedStrategy(config="ds_config.lightning.json")' in c for c in codes)


def test_share_link_restores_the_whole_state_in_a_fresh_session():
    config = {"train_micro_batch_size_per_gpu": 3, "zero_optimization": {"stage": 2}, "team": {"k": [1]}}
    at = app(config, page="pages/review.py", nodes=4, target="hf")
    at.button(key="review_share").click().run()
    link = next(c.value for c in at.code if f"?{app_state.SHARE_PARAM}=" in c.value)
    token = link.split(f"?{app_state.SHARE_PARAM}=", 1)[1]
    fresh = app_from_link(token)
    assert fresh.session_state["config"] == config
    assert fresh.session_state["context"]["nodes"] == 4
    assert fresh.session_state["context"]["target"] == "hf"
    # A later edit in the fresh session is not overwritten by the link on the next rerun.
    fresh.session_state["config"]["train_micro_batch_size_per_gpu"] = 5
    fresh.run()
    assert fresh.session_state["config"]["train_micro_batch_size_per_gpu"] == 5


def test_broken_share_link_says_so_and_keeps_a_blank_state():
    fresh = app_from_link("not-a-real-state")
    assert any("shared link could not be restored" in e.value for e in fresh.error)
    assert fresh.session_state["config"] == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}


def app_from_link(token: str):
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params[app_state.SHARE_PARAM] = token
    at.run()
    assert not at.exception, at.exception
    return at


def test_review_resolves_auto_like_the_hf_trainer():
    from core import autofill
    config = copy.deepcopy(PRESETS["hf-auto-zero2"].config)
    at = app(copy.deepcopy(config), page="pages/review.py", target="hf", nodes=1, gpus_per_node=4)
    assert any('need the model\'s hidden_size' in e.value for e in at.error)
    at.number_input(key="review_auto_hidden_size").set_value(4096).run()
    at.number_input(key="review_auto_per_device_train_batch_size").set_value(2).run()
    resolved_text = next(c.value for c in at.code if '"train_micro_batch_size_per_gpu": 2' in c.value)
    resolved = json.loads(resolved_text)
    # the "auto" precision as the memory figures and the launch files assume it (fp16 here), not the Trainer's off
    values = dict(autofill.HF_DEFAULTS) | {"world_size": 4, "per_device_train_batch_size": 2, "hidden_size": 4096,
                                           "num_training_steps": 10_000, "fp16": True}
    needed = autofill.needed_training_values(config)
    assert resolved == autofill.resolve_auto(config, **{k: v for k, v in values.items() if k in needed})
    assert resolved["train_batch_size"] == 2 * 1 * 4
    assert core.validate(resolved, world_size=4, target="deepspeed").ok
    assert at.session_state["config"] == config  # resolving is a view; the edited config keeps its "auto"s


def test_review_resolves_each_launchers_file_once(monkeypatch):
    """accelerate's and Lightning's files are computed once per rerun, for the snippet and the file under it (a
    1 MB config took a quarter of the page's time to be resolved twice more)."""
    from core import launchers

    calls = []
    real = launchers.resolved_export
    monkeypatch.setattr(launchers, "resolved_export", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = app({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": "auto"}, page="pages/review.py")
    calls.clear()
    at.run()
    assert not at.exception and len(calls) == 2, calls


def test_resolving_auto_starts_from_the_batch_pages_trainer_values():
    """The resolve box started from the Trainer's defaults (8 x 1) while the Batch page, the memory figures and
    the Trainer snippet used 2 x 4: the resolved file was one the figures did not describe."""
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "train_batch_size": "auto", "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    at = app(config, target="hf", hf_micro_batch=2, hf_grad_accum=4, nodes=1, gpus_per_node=8)
    at.switch_page("pages/review.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="review_auto_per_device_train_batch_size").value == 2
    assert at.number_input(key="review_auto_gradient_accumulation_steps").value == 4
    resolved = next(json.loads(c.value) for c in at.code if '"train_batch_size": 64' in c.value)
    assert (resolved["train_micro_batch_size_per_gpu"], resolved["gradient_accumulation_steps"]) == (2, 4)


def test_review_resolves_an_auto_stage_as_accelerate_does():
    """The HF Trainer starts DeepSpeed through Accelerate, which fills an "auto" ZeRO stage with its zero_stage
    (2 unless `accelerate config` says otherwise); the resolved file said "auto" and, for plain DeepSpeed, ran
    stage 0."""
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": "auto"}, "bf16": {"enabled": True}}
    at = app(copy.deepcopy(config), page="pages/review.py", target="hf", nodes=1, gpus_per_node=1)
    stage = at.number_input(key="review_auto_zero_stage")
    assert stage.value == 2 and stage.max == 3
    resolved = next(json.loads(c.value) for c in at.code if '"stage": 2' in c.value)
    assert resolved["zero_optimization"] == {"stage": 2}
    at.number_input(key="review_auto_zero_stage").set_value(3).run()
    assert not at.exception, at.exception
    assert any(json.loads(c.value).get("zero_optimization") == {"stage": 3}
               for c in at.code if c.value.lstrip().startswith("{") and '"stage": 3' in c.value)


def test_a_field_deepspeed_leaves_to_its_consumer_says_what_not_set_means():
    """comet.online and pipeline.use_reentrant default to None in DeepSpeed, which comet_ml / the checkpointing code
    read as true: "— not set —" did not say so."""
    at = app({"train_batch_size": 8, "comet": {"enabled": True}}, page="pages/monitoring.py")
    online = at.selectbox(key=widget_key("comet.online"))
    assert online.value is None and online.options[0] == "— not set (default: true) —"
    assert fields.unset_value("pipeline.use_reentrant", {}, "0.19.8", None,
                              fields.field_for("pipeline.use_reentrant")) is True
    assert fields.unset_value("comet.project", {}, "0.19.8", None, fields.field_for("comet.project")) is None


def test_the_resolved_auto_values_are_the_launch_files_values_on_each_release():
    """The "resolve auto" box worked out its own training values (the model's width read by hand, no release):
    for a Bloom model (its width is ``n_embed``) it asked for a hidden size the launch files had, and under
    sequence parallelism on 0.16.9 its train_batch_size was half the accelerate file's. It now starts from what
    the exports are resolved with (``core.launchers``), so untouched, its file says what accelerate's says."""
    from core import launchers
    from core.autofill import find_auto
    from core.findings import get_path

    config = {**copy.deepcopy(PRESETS["hf-auto-zero2"].config), "sequence_parallel_size": 2}
    bloom = {"model_type": "bloom", "n_embed": 1024, "n_layer": 4, "n_head": 16, "vocab_size": 1000}
    for release, total in (("0.16.9", 2 * 4 * 8), ("0.19.8", 2 * 4 * 4)):
        at = app(copy.deepcopy(config), page="pages/review.py", target="hf", nodes=1, gpus_per_node=8,
                 version=release, model_config=bloom, hf_micro_batch=2, hf_grad_accum=4, train_steps=500)
        assert not at.error, [e.value for e in at.error]
        box = next(e for e in at.expander if e.label.startswith("Resolve the"))
        resolved = json.loads(box.code[0].value)
        tab = next(t for t in at.tabs if t.label == "accelerate launch")
        accelerate = json.loads(tab.code[1].value)
        exported = launchers.accelerate_export(config, launchers.with_assumed_precision(
            config, launchers.launch_values(at.session_state["context"], {
                "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4})), release)[0]
        assert accelerate == exported
        filled = find_auto(config)
        assert not find_auto(accelerate)  # accelerate's file fills every one of them (none is its plugin's)
        assert {p: get_path(resolved, p) for p in filled} == {p: get_path(accelerate, p) for p in filled}
        assert resolved["train_batch_size"] == total
        assert resolved["zero_optimization"]["reduce_bucket_size"] == 1024 * 1024
