"""Undo of big edits across pages: loads in a row come back to the user's own config, and a page's "loaded" message
goes with the edit it describes."""

from __future__ import annotations

import copy

from app_support import app

MINE = {"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 7,
        "zero_optimization": {"stage": 2, "reduce_bucket_size": 123456789}, "my_team_key": {"keep": True}}


def _undo_labels(at) -> list[str]:
    return [b.label for b in at.button if b.label.startswith("Undo")]


def _load(at, name: str) -> None:
    at.selectbox(key="presets_selected").set_value(name).run()
    at.button(key="presets_load").click().run()
    assert not at.exception, at.exception


def test_presets_loaded_one_after_another_undo_to_the_users_own_config():
    at = app(config=dict(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    _load(at, "zero2-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero2-bf16 (after load of zero3-bf16)"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == MINE
    assert not _undo_labels(at)


def test_an_edit_between_two_loads_is_what_the_second_undo_restores():
    at = app(config=dict(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    at.session_state["edits_since_undo"] = 1  # a widget edit of the loaded preset (ui.app_state.counted_edit)
    edited = dict(at.session_state["config"])
    _load(at, "zero2-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero2-bf16"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == edited


def test_loads_after_an_hf_preset_still_undo_to_the_users_own_config_and_context():
    """The HF preset switches the target to hf as part of its load: the chain compared the context kept from before
    that load with the one after it, and undo came back to the HF preset instead (a hunt of 30 Nov 2026)."""
    at = app(config=dict(MINE), page="pages/presets.py")
    before = copy.deepcopy(at.session_state["context"])
    _load(at, "hf-auto-zero2")
    assert at.session_state["context"]["target"] == "hf" != before["target"]
    _load(at, "zero3-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero3-bf16 (after load of hf-auto-zero2)"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == MINE and at.session_state["context"] == before


def test_a_context_changed_by_hand_between_two_loads_is_what_the_second_undo_restores():
    at = _on_page_after_a_load("pages/start.py")
    at.selectbox(key="ctx:gpu").set_value("NVIDIA H100 80GB").run()
    changed = copy.deepcopy(at.session_state["context"])
    _second_load_and_undo(at)
    assert at.session_state["context"] == changed


def test_undo_of_a_plan_row_takes_its_loaded_message_away():
    at = app(page="pages/plan.py")
    before = dict(at.session_state["config"])
    at.selectbox(key="plan_row").set_value(2).run()
    at.button(key="plan_use").click().run()
    assert any("Loaded rank 2" in s.value for s in at.success)
    next(b for b in at.button if b.label.startswith("Undo")).click().run()
    assert at.session_state["config"] == before
    assert not any("Loaded rank" in s.value for s in at.success)


def test_the_plan_pages_inputs_survive_a_visit_to_another_page():
    """Streamlit drops a widget's state on a run that does not draw it; the page keeps what was typed
    (ui.app_state.kept) and gives it back."""
    at = app(page="pages/plan.py")
    typed = {"plan_model": "meta-llama/Llama-2-13b-hf", "plan_gpu": "NVIDIA H100 80GB", "plan_attention": "sdpa"}
    numbers = {"plan_nodes": 2, "plan_batch": 512, "plan_tokens": 50.0, "plan_price": 4.0,
               "plan_network_NVIDIA H100 80GB": 400.0}
    for key, value in typed.items():
        at.selectbox(key=key).set_value(value).run()
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value).run()
    at.switch_page("pages/start.py").run()
    at.switch_page("pages/plan.py").run()
    assert not at.exception, at.exception
    assert {k: at.selectbox(key=k).value for k in typed} == typed
    assert {k: at.number_input(key=k).value for k in numbers} == numbers


def test_the_save_form_and_the_chosen_preset_survive_a_visit_to_another_page(tmp_path, monkeypatch):
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    at = app(page="pages/presets.py")
    at.text_input(key="presets_save_title").set_value("Our 7B recipe")
    at.text_area(key="presets_save_description").set_value("What the team learnt")
    at.selectbox(key="presets_selected").set_value("zero3-bf16")
    at.run()
    at.switch_page("pages/review.py").run()
    at.switch_page("pages/presets.py").run()
    assert at.text_input(key="presets_save_title").value == "Our 7B recipe"
    assert at.text_area(key="presets_save_description").value == "What the team learnt"
    assert at.selectbox(key="presets_selected").value == "zero3-bf16"


def test_the_plan_page_says_which_cpu_ram_and_nvme_it_judged_offloading_rows_with():
    """Offloading rows fit only with the Start page's CPU RAM and NVMe; when nothing fits, giving NVMe is one way."""
    at = app(page="pages/plan.py")
    at.selectbox(key="plan_model").set_value("meta-llama/Llama-2-70b-hf").run()
    at.number_input(key="plan_batch").set_value(8).run()
    caption = next(c.value for c in at.caption if "candidates fit" in c.value)
    assert "512 GiB of CPU RAM and no NVMe per node" in caption
    assert any("NVMe per node on the Start page" in e.value for e in at.error), [e.value for e in at.error]
    # NVMe alone is not enough: ZeRO-3 offload keeps the reduced bf16 gradient partition in CPU RAM (140 GB per
    # node for 70B on 8 GPUs, stage3.py grad_partitions_flat_buffer on self.device = "cpu", NVMe offload too)
    roomy = app(page="pages/plan.py", nvme_gib=4000.0, cpu_ram_gib=1024.0)
    roomy.selectbox(key="plan_model").set_value("meta-llama/Llama-2-70b-hf").run()
    roomy.number_input(key="plan_batch").set_value(8).run()
    assert not roomy.error and any("1024 GiB of CPU RAM and 4000 GiB of NVMe" in c.value for c in roomy.caption)


def test_every_pages_own_choices_survive_a_visit_to_another_page():
    """Start's sources, pasted text and preset, Presets' filters and comparison, Review's form and HF mode, and the
    ZeRO page's sweep axis went back to their first option after a visit to another page (found by a QA pass)."""
    at = app(page="pages/start.py")
    at.selectbox(key="start_model").set_value("meta-llama/Llama-3.2-1B").run()  # the ZeRO page's sweep needs one
    at.radio(key="start_model_source").set_value("Parameter counts by hand").run()
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").set_value('{"train_micro_batch_size_per_gpu": 2}').run()
    at.switch_page("pages/presets.py").run()
    at.multiselect(key="presets_filter_stage").set_value(["3"]).run()
    at.selectbox(key="presets_left").set_value("zero3-bf16").run()
    at.selectbox(key="presets_right").set_value("dp-bf16").run()
    at.switch_page("pages/review.py").run()
    variant = "Only what differs from defaults"
    at.radio(key="review_variant").set_value(variant).run()
    at.radio(key="review_hf_mode").set_value("match").run()
    at.switch_page("pages/zero.py").run()
    at.radio(key="zero_sweep_axis").set_value("seq_len").run()
    at.switch_page("pages/monitoring.py").run()
    for page in ("pages/start.py", "pages/presets.py", "pages/review.py", "pages/zero.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        if page == "pages/start.py":
            assert at.radio(key="start_source").value == "Upload or paste"
            assert at.text_area(key="start_paste").value == '{"train_micro_batch_size_per_gpu": 2}'
            assert at.radio(key="start_model_source").value == "Parameter counts by hand"
        elif page == "pages/presets.py":
            assert at.multiselect(key="presets_filter_stage").value == ["3"]
            assert (at.selectbox(key="presets_left").value, at.selectbox(key="presets_right").value) == (
                "zero3-bf16", "dp-bf16")
        elif page == "pages/review.py":
            assert (at.radio(key="review_variant").value, at.radio(key="review_hf_mode").value) == (variant, "match")
        else:
            assert at.radio(key="zero_sweep_axis").value == "seq_len"


def test_review_resolve_auto_keeps_typed_values_and_follows_an_untouched_guess():
    """The "resolve auto" boxes lost what was typed on a page switch. A box nobody typed in still follows its
    guess (the world size from the Start page's cluster); one the user typed keeps the user's value."""
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "train_batch_size": "auto", "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}
    at = app(config=config, page="pages/review.py", target="hf")
    assert at.number_input(key="review_auto_world_size").value == 8
    at.number_input(key="review_auto_learning_rate").set_value(3e-4).run()
    at.switch_page("pages/start.py").run()
    at.session_state["context"]["nodes"] = 2
    at.switch_page("pages/review.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="review_auto_learning_rate").value == 3e-4
    assert at.number_input(key="review_auto_world_size").value == 16
    at.number_input(key="review_auto_world_size").set_value(4).run()
    at.switch_page("pages/start.py").run()
    at.switch_page("pages/review.py").run()
    assert at.number_input(key="review_auto_world_size").value == 4


def test_an_auto_toggle_gives_back_the_users_value_after_an_unrelated_edit():
    """A precision switch (an edit that rewrites the config) made the micro batch's toggle forget the 4 that "auto"
    replaced: switching it off deleted the key."""
    at = app(config={"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}}, page="pages/batch.py",
             target="hf")
    at.toggle(key="cfg:train_micro_batch_size_per_gpu:auto").set_value(True).run()
    at.switch_page("pages/precision.py").run()
    at.radio(key="cfg:precision_mode").set_value("fp16").run()
    at.switch_page("pages/batch.py").run()
    at.toggle(key="cfg:train_micro_batch_size_per_gpu:auto").set_value(False).run()
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == 4


def test_an_auto_toggle_forgets_the_value_it_replaced_when_the_config_is_replaced():
    at = app(config={"train_micro_batch_size_per_gpu": 4}, page="pages/batch.py", target="hf")
    at.toggle(key="cfg:train_micro_batch_size_per_gpu:auto").set_value(True).run()
    at.switch_page("pages/presets.py").run()
    _load(at, "hf-auto-zero2")
    at.switch_page("pages/batch.py").run()
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == "auto"
    at.toggle(key="cfg:train_micro_batch_size_per_gpu:auto").set_value(False).run()
    assert at.session_state["config"].get("train_micro_batch_size_per_gpu") != 4


def _second_load_and_undo(at) -> None:
    """Load zero2-bf16 after an edit made since the first load, and undo it: the edit is what comes back."""
    at.switch_page("pages/presets.py").run()
    _load(at, "zero2-bf16")
    assert _undo_labels(at)[0] == "Undo: load of zero2-bf16"
    next(b for b in at.button if b.label.startswith("Undo")).click().run()


def _on_page_after_a_load(page: str):
    """A session with the user's config and zero3-bf16 loaded over it, on ``page``."""
    at = app(config=dict(MINE), page="pages/presets.py")
    _load(at, "zero3-bf16")
    at.switch_page(page).run()
    return at


def test_a_precision_switch_between_two_loads_is_an_edit_the_second_undo_restores():
    at = _on_page_after_a_load("pages/precision.py")
    at.radio(key="cfg:precision_mode").set_value("fp16").run()
    assert _undo_labels(at)[0] == "Undo: load of zero3-bf16 and the 1 edit made since"
    edited = copy.deepcopy(at.session_state["config"])
    _second_load_and_undo(at)
    assert at.session_state["config"] == edited


def test_a_refused_or_unchanged_value_is_not_counted_as_an_edit():
    at = _on_page_after_a_load("pages/optimizer.py")
    at.text_area(key="cfg:optimizer.params.betas").set_value("[0.9,").run()
    assert _undo_labels(at)[0] == "Undo: load of zero3-bf16"
    at.text_area(key="cfg:optimizer.params.betas").set_value("[0.9,0.999]").run()  # the value it holds
    assert _undo_labels(at)[0] == "Undo: load of zero3-bf16"
    at.text_area(key="cfg:optimizer.params.betas").set_value("[0.9, 0.99]").run()
    assert _undo_labels(at)[0] == "Undo: load of zero3-bf16 and the 1 edit made since"
