"""Issue 16 walked through in a real headless Chromium, as a new user would: the ten defects they hit, the
"smaller" list and what was built against them (headline, make it fit, honest "auto", exports, links).

One test, one browser session per step group, against ``streamlit run app.py``. Each step asserts that its
defect is gone; screenshots of the steps go to ``test-artifacts/answers-*.png``. (The phone and laptop
screenshots with the chart checks are ``tests/test_e2e.py::test_headline_visible_without_scrolling_…``.)
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator

import pytest
from e2e_support import ARTIFACTS, stage_button, streamlit_server
from test_e2e import browser, idle, nav, preset_config, select  # noqa: F401 — browser: the module fixture

from core.models import describe, get_config
from ui import app_state

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_answers")]
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

LLAMA70 = "meta-llama/Llama-2-70b-hf"


@pytest.fixture(scope="module")
def answers_server() -> Iterator[str]:
    with streamlit_server("streamlit-e2e-answers.log") as url:
        yield url


def model_context(name: str, **over) -> dict:
    spec = describe(get_config(name), name=name)
    return {**app_state.default_context(), "model": name, "model_config": get_config(name),
            "total_params": spec.total_params, "largest_layer_params": spec.largest_layer_params, **over}


def open_state(tab, server: str, config: dict, context: dict | None = None) -> None:
    """Open the app as a share link with this state would (the quickest way to a given situation)."""
    token = app_state.encode_state(config, context or app_state.default_context(), config)
    tab.goto(f"{server}/?{app_state.SHARE_PARAM}={token}")
    tab.locator("h1").first.wait_for(timeout=90_000)
    idle(tab)


def main_text(tab) -> str:
    return tab.locator('[data-testid="stMain"]').inner_text()


def headline(tab) -> str:
    box = tab.locator(".st-key-headline")
    box.wait_for()
    return box.inner_text()


def code_blocks(tab) -> list[str]:
    tab.locator('[data-testid="stCode"]').first.wait_for()
    return [c.inner_text() for c in tab.locator('[data-testid="stCode"]').all()]


def radio(tab, option: str) -> None:
    tab.locator('[data-testid="stRadio"] label').filter(has_text=option).first.click()
    idle(tab)


def shot(tab, name: str) -> None:
    tab.screenshot(path=str(ARTIFACTS / f"answers-{name}.png"))


def share_link_config(tab) -> dict:
    link = next(c for c in code_blocks(tab) if f"?{app_state.SHARE_PARAM}=" in c)
    token = urllib.parse.unquote(link.strip().split(f"?{app_state.SHARE_PARAM}=", 1)[1])
    return app_state.decode_state(token)[0]


def test_new_user_walk_through_of_issue_16(browser, answers_server):  # noqa: F811 — the imported fixture
    server = answers_server
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    try:
        # ---- first visit: the preset shown is not loaded yet, and the page says so (smaller)
        tab.goto(server)
        tab.locator("h1").first.wait_for(timeout=90_000)
        idle(tab)
        assert "Nothing is loaded yet" in main_text(tab)
        # the headline is on every page, at the top of the main area (what to build 1)
        assert "Accepted" in headline(tab) or "Refused" in headline(tab)

        # ---- 8. upload, then paste: the last one given wins and the page says which; the limit is in the label
        radio(tab, "Upload or paste")
        # under load the rerun that draws the uploader can start after idle() has looked (CI once read the page
        # before it): wait for the uploader itself, then read its label
        tab.locator('[data-testid="stFileUploader"]').wait_for()
        assert re.search(r"up to \d+ MB", main_text(tab)), "upload limit in the label, not only on hover"
        tab.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            files=[{"name": "mine.json", "mimeType": "application/json",
                    "buffer": b'{"train_micro_batch_size_per_gpu": 2}'}])
        tab.get_by_text("uploaded file mine.json").wait_for()
        paste = tab.get_by_role("textbox", name="…or paste it here")
        # a trailing comma: DeepSpeed reads it, strict JSON readers (the HF Trainer's json.load) do not (smaller)
        paste.fill('{"train_micro_batch_size_per_gpu": 5, "gradient_accumulation_steps": 1,}')
        paste.press("Control+Enter")
        idle(tab)
        tab.get_by_text("Import will read the pasted text").wait_for()
        tab.get_by_role("button", name="Import").click()
        idle(tab)
        success = tab.locator('[data-testid="stMain"] [data-testid="stAlertContentSuccess"]').filter(
            has_text="Imported").inner_text()
        assert "Not strict JSON" in success and "json.load" in success, success

        # ---- 9. loading a preset over my edits keeps the HF target and offers undo
        radio(tab, app_state.TARGET_LABELS["hf"])
        radio(tab, "Preset")
        select(tab, "Preset", "(zero2-bf16)")
        tab.get_by_role("button", name="Load this preset").click()
        tab.get_by_text("Loaded the preset").wait_for()
        idle(tab)
        assert "your target stays hf" in main_text(tab).replace("**", "")
        assert tab.get_by_role("radio", name=app_state.TARGET_LABELS["hf"]).is_checked()
        tab.get_by_role("button", name=re.compile("^Undo: load of zero2-bf16")).first.click()
        idle(tab)
        nav(tab, "Review & export")
        mine = json.loads(code_blocks(tab)[0])
        assert mine == {"train_micro_batch_size_per_gpu": 5, "gradient_accumulation_steps": 1}, mine
        shot(tab, "1-undo")

        # ---- 1. the share link follows later edits
        tab.get_by_role("button", name="Create a shareable link").click()
        idle(tab)
        assert share_link_config(tab)["train_micro_batch_size_per_gpu"] == 5
        nav(tab, "Batch size")
        box = tab.get_by_role("spinbutton", name="train_micro_batch_size_per_gpu", exact=True)
        box.fill("7")
        box.press("Enter")
        idle(tab)
        nav(tab, "Review & export")
        assert share_link_config(tab)["train_micro_batch_size_per_gpu"] == 7

        # ---- 9. Compare takes "my config" as a side; 4. and shows "auto" as "auto"
        nav(tab, "Presets")
        select(tab, "Left", "Your current config")
        select(tab, "Right", "(hf-auto-zero3)")
        # the key differences, an HTML table (ui.tables): the row of the key, cell by cell
        row = tab.locator("table.ds-table tr").filter(has=tab.locator("td", has_text=re.compile(
            "^gradient_accumulation_steps$"))).filter(has_text='"auto"').first
        expect(row).to_contain_text("1")
        assert [c.inner_text() for c in row.locator("td").all()] == ["gradient_accumulation_steps", "1", '"auto"']

        # ---- 4. "auto" is honest: hf-auto-zero3 with the HF target
        hf_auto = preset_config("hf-auto-zero3")
        open_state(tab, server, hf_auto, model_context("meta-llama/Llama-3.2-1B", target="hf"))
        nav(tab, "Batch size")
        text = main_text(tab)
        assert "No GPU count" not in text and "filled by the HF Trainer" in text
        assert "assumed" in headline(tab), "the memory verdict says which micro batch it assumed"
        assert "see errors below" not in text.lower()  # smaller: errors are above

        # ---- 2. the HF export: "auto" or matching TrainingArguments, the user's choice
        edited = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8, "gradient_clipping": 0.5,
                  "bf16": {"enabled": True}, "zero_optimization": {"stage": 2},
                  "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.1}},
                  "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-4,
                                                               "warmup_num_steps": 100}}}
        open_state(tab, server, edited, {**app_state.default_context(), "target": "hf", "train_steps": 12000})

        # ---- 7. switching to WarmupCosineLR: no leftover errors, no "params.params", integer step counts
        nav(tab, "Optimizer & scheduler")
        select(tab, "type", "WarmupCosineLR", nth=1)
        text = main_text(tab)
        assert "params.params" not in text and "warmup_max_lr" not in text, "the old WarmupLR params are gone"
        assert not tab.locator('[data-testid="stMain"] [data-testid="stAlertContentError"]').count()
        nav(tab, "Review & export")
        exported = json.loads(code_blocks(tab)[0])
        # for the HF target the Trainer fills the step count (a written one must equal its own, or it refuses)
        assert exported["scheduler"]["params"]["total_num_steps"] == "auto"
        tab.get_by_role("tab", name="HF Trainer").click()
        snippet = next(c for c in code_blocks(tab) if "TrainingArguments(" in c)
        for argument in ("per_device_train_batch_size=4,", "gradient_accumulation_steps=8,", "max_grad_norm=0.5,",
                         "learning_rate=0.0003,", "weight_decay=0.1,", "bf16=True,"):
            assert argument in snippet, (argument, snippet)
        hf_file = next(json.loads(c) for c in code_blocks(tab)[1:] if c.lstrip().startswith("{")
                       and '"auto"' in c)  # the HF tab's file, after the main file (which has "auto" steps too)
        assert hf_file["train_micro_batch_size_per_gpu"] == "auto" and hf_file["optimizer"]["params"]["lr"] == "auto"
        radio(tab, "values in the config, repeated in TrainingArguments")
        tab.locator('[data-testid="stCode"]').filter(has_text='"gradient_accumulation_steps": 8').first.wait_for()
        # the HF tab's file (after the main file; the Lightning file has no accumulation)
        hf_file = next(json.loads(c) for c in code_blocks(tab)[1:] if c.lstrip().startswith("{")
                       and '"gradient_accumulation_steps": 8' in c)
        assert hf_file["train_micro_batch_size_per_gpu"] == 4 and hf_file["optimizer"]["params"]["lr"] == 3e-4
        tab.get_by_role("tab", name="Lightning").click()
        assert any("accumulate_grad_batches=8" in c for c in code_blocks(tab))
        shot(tab, "2-hf-export")

        # ---- 3. + 6. the Review page never says "will accept" alone; zero1-bf16 on Llama-2-70B does not fit
        open_state(tab, server, preset_config("zero1-bf16"), model_context(LLAMA70))
        nav(tab, "Review & export")
        main = tab.locator('[data-testid="stMain"]')
        assert not main.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="will accept").count()
        verdict = tab.locator('[data-testid="stAlert"]').filter(has_text="will accept").first.inner_text()
        assert "Does not fit" in verdict and "GiB" in verdict, verdict
        assert "Does not fit" in headline(tab) and "630.6" in headline(tab)

        # ---- 5. the ZeRO page agrees with itself, in GiB, no raw column names; 6. ways to make it fit
        nav(tab, "ZeRO & offload")
        # under load the page can look idle between two batches of its rerun: wait for its last part to be drawn
        expect(main).to_contain_text("tokens per second per GPU", timeout=60_000)
        text = main_text(tab)
        for raw in ("gib_per_gpu", "total_gib", "gpu_gib"):
            assert raw not in text, raw
        assert "Make it fit" in text and "tokens per second per GPU" in text
        # offload knobs appear only once a device is chosen (smaller)
        assert not tab.get_by_role("spinbutton", name="buffer_count").count()
        shot(tab, "3-zero-does-not-fit")
        tab.locator(".st-key-headline").get_by_role("button", name="Make it fit").click()
        # wait for the applied way's verdict itself: under load the rerun may not have started when idle() looks
        expect(tab.locator(".st-key-headline")).to_contain_text("Fits", timeout=60_000)
        idle(tab)
        assert "Fits" in headline(tab) and "Does not fit" not in headline(tab)

        # ---- 5. an NVMe of 0 GiB is no NVMe, not unlimited
        nvme = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"},
                                      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}
        open_state(tab, server, nvme, model_context("meta-llama/Llama-2-7b-hf", nvme_gib=0.0))
        assert "Does not fit" in headline(tab) and "NVMe" in headline(tab)

        # ---- 10. zero_optimisation is the headline problem, did-you-mean in the text, the link lands on the widget
        open_state(tab, server, {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}})
        top = headline(tab)
        assert "`zero_optimisation` is not a DeepSpeed section" in top.replace("\n", " ") or \
            "zero_optimisation is not a DeepSpeed section" in top, top
        assert "did you mean" in top and "zero_optimization" in top
        sidebar = tab.locator('[data-testid="stSidebar"]')
        assert "Did you mean zero_optimization?" in sidebar.inner_text().replace("`", "")
        sidebar.get_by_role("link", name=re.compile("^Fix on ZeRO")).first.click()
        tab.locator("h1").filter(has_text="ZeRO & offload").wait_for()
        idle(tab)
        landing = tab.locator(".st-key-focus_widget")
        landing.wait_for()
        expect(landing).to_contain_text("The field you came to change")
        expect(stage_button(landing, 3)).to_be_visible()
        tab.wait_for_timeout(800)  # the box scrolls itself into view
        expect(landing).to_be_in_viewport()
        shot(tab, "4-fix-link-landing")
        tab.get_by_role("button", name=re.compile("^Fix: ")).first.click()
        idle(tab)
        assert "is not a DeepSpeed section" not in headline(tab) and "Undo: Rename zero_optimisation" in headline(tab)
        assert not context.pages[0].locator('[data-testid="stException"]').count()
    finally:
        context.close()
