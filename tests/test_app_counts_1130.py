"""Counts said one way on every page, and an import DeepSpeed refuses is said where the user is looking (a browser
hunt of 30 Nov 2026: "1 error(s)" in the sidebar, "1 errors" on Review, and a green "Imported a config" above a
config the headline, off-screen, called refused); one Undo button on a screen, not two."""

from __future__ import annotations

from app_support import app

from ui.fields import counted

BAD = '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}'


def test_counted_says_one_and_many():
    assert [counted(n, "error") for n in (0, 1, 2)] == ["0 errors", "1 error", "2 errors"]
    # GPUs ÷ model-parallel ranks may not divide (the Batch page's data-parallel GPUs): said as a number, one plural
    assert [counted(n, "GPU") for n in (1.0, 8.0, 1.5)] == ["1 GPU", "8 GPUs", "1.5 GPUs"]


def test_the_batch_page_counts_data_parallel_gpus_as_every_page_does():
    at = app(None, "pages/batch.py")
    assert not at.exception, at.exception
    said = [c.value for c in at.caption if "data-parallel GPU" in c.value]
    assert said and said[0].startswith(("On 1 data-parallel GPU: ", "On 8 data-parallel GPUs: ")), said


def test_an_import_deepspeed_refuses_is_a_warning_that_says_so_and_counts_agree():
    at = app(None, "pages/start.py")
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").input(BAD).run()
    at.button(key="start_import").click().run()
    assert not at.exception, at.exception
    warned = [w.value for w in at.warning if "Imported a config" in w.value]
    assert warned and "would refuse it as it is: 1 error**" in warned[0], warned
    assert not [s.value for s in at.success if "Imported a config" in s.value]
    assert any(m.value.startswith("**1 error**, 0 warnings") for m in at.sidebar.markdown)
    at.switch_page("pages/review.py").run()
    assert any(m.value.startswith("**1 error** · **0 warnings** · ") for m in at.markdown)


def test_an_accepted_import_stays_a_success():
    at = app(None, "pages/start.py")
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").input('{"train_micro_batch_size_per_gpu": 4}').run()
    at.button(key="start_import").click().run()
    assert [s.value for s in at.success if "Imported a config" in s.value]


def test_one_undo_button_after_a_load_not_two():
    """Start showed "Undo: load of …" beside its message and again in the headline: two identical buttons."""
    at = app(None, "pages/presets.py")
    at.selectbox(key="presets_selected").set_value("zero2-bf16").run()
    at.button(key="presets_load").click().run()
    undo = [b for b in at.button if b.label.startswith("Undo")]
    assert len(undo) == 1 and undo[0].key == "undo:presets", [b.key for b in undo]
    at.switch_page("pages/batch.py").run()  # no message there: the headline's button
    assert [b.key for b in at.button if b.label.startswith("Undo")] == ["undo:headline"]
