"""End-to-end tests in a real headless Chromium against ``streamlit run app.py``.

Screenshots of every page go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import ARTIFACTS, CHROMIUM, ROOT, chromium_browser, stage_button, streamlit_server

import core
from ui import app_state

# one worker runs the module: its server and browser start once per session
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]

PRESETS = ROOT / "presets"

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with streamlit_server("streamlit-e2e.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian's chromium package; make test installs it)")
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1800}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    open_app(tab, server)
    yield tab
    context.close()


# ------------------------------------------------------------------ helpers

def open_app(tab, url: str) -> None:
    tab.goto(url)
    tab.locator('[data-testid="stSidebarNav"]').wait_for()
    # Every page starts with its title; the first session of a fresh server takes a few seconds (imports).
    tab.locator("h1").first.wait_for(timeout=90_000)
    idle(tab)


def paste(tab, text: str) -> None:
    """Import ``text`` through the Start page's paste box."""
    tab.get_by_text("Upload or paste", exact=True).click()
    idle(tab)
    area = tab.get_by_role("textbox", name="…or paste it here")
    area.fill(text)
    area.press("Control+Enter")
    idle(tab)
    tab.get_by_role("button", name="Import").click()
    tab.get_by_text("Imported a config").wait_for()
    idle(tab)


def idle(tab) -> None:
    """Wait until Streamlit has finished the current rerun."""
    tab.wait_for_timeout(300)
    tab.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')"
    )
    tab.wait_for_timeout(200)


def select(tab, label: str, option: str, nth: int = 0) -> None:
    box = tab.get_by_role("combobox", name=label, exact=True).nth(nth)
    box.scroll_into_view_if_needed()
    box.click()
    # type to filter: a long list near the bottom of the window may not render the wanted option otherwise
    tab.keyboard.type(option.strip("()"))
    tab.get_by_role("option").filter(has_text=option).first.click()
    playwright_api.expect(box).to_have_value(re.compile(re.escape(option)))
    idle(tab)


def number(tab, label: str, value) -> None:
    box = tab.get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    idle(tab)
    playwright_api.expect(box).to_have_value(str(value))


def nav(tab, title: str) -> None:
    tab.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).click()
    tab.locator("h1").filter(has_text=title).wait_for()
    idle(tab)


def record_timing(name: str, seconds: float) -> None:
    """Append a measured duration to test-artifacts/e2e-timings.json (for BENCHMARKS.md)."""
    path = ARTIFACTS / "e2e-timings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault(name, []).append(round(seconds, 3))
    path.write_text(json.dumps(data, indent=2))


def shot(tab, name: str) -> None:
    """Screenshot of the whole page (the app scrolls inside its main block, so grow the viewport to fit)."""
    size = tab.viewport_size
    tab.wait_for_timeout(500)
    height = tab.evaluate(
        "() => Math.max(...[...document.querySelectorAll('main, section, div')].map(e => e.scrollHeight))")
    tab.set_viewport_size({"width": size["width"], "height": min(max(height + 80, size["height"]), 12_000)})
    tab.wait_for_timeout(1000)  # let vega-lite finish drawing the charts
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    tab.set_viewport_size(size)


def download(tab) -> dict:
    idle(tab)  # the button's file is replaced on every rerun; click the final one
    with tab.expect_download() as info:
        sidebar = tab.locator('[data-testid="stSidebar"]')
        sidebar.get_by_role("button", name="Download ds_config.json: as written").click()
    path = info.value.path()
    return core.load_config(Path(path).read_text(encoding="utf-8"))


def review_json(tab) -> dict:
    nav(tab, "Review & export")
    return json.loads(tab.locator('[data-testid="stCode"]').first.inner_text())


def load_preset(tab, name: str) -> None:
    select(tab, "Preset", f"({name})")
    tab.get_by_role("button", name="Load this preset").click()
    tab.get_by_text("Loaded the preset").wait_for()
    idle(tab)


def preset_config(name: str) -> dict:
    return json.loads((PRESETS / f"{name}.json").read_text())["config"]


# ------------------------------------------------------------------ tests

def test_new_user_journey(page):
    load_preset(page, "zero2-bf16")
    select(page, "Model from the catalog", "meta-llama/Llama-2-7b-hf")
    page.get_by_text("6.74 B parameters").wait_for()
    shot(page, "journey-1-start")

    nav(page, "ZeRO & offload")
    current = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="Current config:")
    before = current.inner_text()
    assert "ZeRO-2" in before
    # Timed (recorded, never asserted): widget change → updated memory chart caption in the browser.
    option = stage_button(page, 3)
    started = time.perf_counter()
    option.click()
    page.wait_for_function("() => document.body.innerText.includes('Current config: ZeRO-3')")
    record_timing("zero page: stage 2→3 until the memory caption updates (s)", time.perf_counter() - started)
    idle(page)
    select(page, "device", "cpu", nth=0)  # offload_optimizer (left)
    select(page, "device", "cpu", nth=1)  # offload_param (right)
    page.wait_for_function("() => document.body.innerText.includes('Current config: ZeRO-3 opt→cpu param→cpu')")
    after = current.inner_text()
    gib = [float(m) for m in re.findall(r"— ([\d.]+) GiB per GPU", before + after)]
    assert len(gib) == 2 and gib[1] < gib[0], (before, after)
    shot(page, "journey-2-zero3-offload")

    nav(page, "Batch size")
    number(page, "train_batch_size", 7)
    page.get_by_text("do not add up").first.wait_for()
    assert page.locator('[data-testid="stSidebar"]').get_by_text("do not add up").count() >= 1
    shot(page, "journey-3-batch-error")
    page.get_by_role("button", name=re.compile("^Fix: Use")).first.click()
    page.locator('[data-testid="stSidebar"]').get_by_text("No errors or warnings").wait_for()

    config = download(page)
    assert core.validate(config, world_size=8).ok
    assert config["zero_optimization"]["stage"] == 3
    assert config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert config["zero_optimization"]["offload_param"]["device"] == "cpu"
    tb, mb, ga = (config[k] for k in ("train_batch_size", "train_micro_batch_size_per_gpu",
                                      "gradient_accumulation_steps"))
    assert tb == mb * ga * 8
    untouched = {k: v for k, v in preset_config("zero2-bf16").items()
                 if k not in ("zero_optimization", "train_batch_size", "train_micro_batch_size_per_gpu",
                              "gradient_accumulation_steps")}
    assert {k: config[k] for k in untouched} == untouched


HJSON = """{
  // written by hand, with comments
  train_micro_batch_size_per_gpu: 2
  gradient_accumulation_steps: 4
  bf16: { enabled: true }
  zero_optimization: {
    stage: 2
    team_extension: {"owner": "infra", "tags": ["a", "b"]}   // unknown to DeepSpeed
  }
  my_launcher_settings: {"retries": 3}
}"""


def test_pages_first_visits_find_their_elements_code_already_loaded(page):
    # ui.preload imports every element module the app uses while the first page is idle; before it, the first
    # visit of Review fetched and compiled a 1.5 MB highlighter (and Optimizer, Monitoring, Presets their widgets)
    page.wait_for_function("() => window.__dsPreload === 'drawn'", timeout=60_000)
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url.rsplit("/", 1)[-1]))
    load_preset(page, "zero3-offload-cpu")
    for title in ("Optimizer & scheduler", "Monitoring", "Review & export", "Presets", "ZeRO & offload", "Plan"):
        nav(page, title)
    assert not [name for name in fetched if name.endswith(".js")], fetched


def test_import_with_comments_and_unknown_keys_exports_unchanged(page):
    paste(page, HJSON)
    shot(page, "import-1-start")
    nav(page, "Advanced")
    shot(page, "import-2-advanced")
    assert download(page) == core.load_config(HJSON)


def test_share_link_restores_state_in_a_fresh_context(page, browser, server):
    load_preset(page, "zero3-offload-cpu")
    nav(page, "Batch size")
    number(page, "gradient_accumulation_steps", 2)
    expected = review_json(page)
    page.get_by_role("button", name="Create a shareable link").click()
    link_box = page.locator('[data-testid="stCode"]').filter(has_text="?s=")
    link_box.wait_for()
    link = link_box.inner_text().strip()
    assert link.startswith(server)

    fresh = browser.new_context(viewport={"width": 1400, "height": 1800})
    try:
        tab = fresh.new_page()
        tab.set_default_timeout(30_000)
        open_app(tab, link)
        assert review_json(tab) == expected
        shot(tab, "share-restored-review")
    finally:
        fresh.close()



def test_clearing_a_number_field_removes_the_key_and_typing_it_back_restores_it(page):
    """An emptied number box means "not set" (DeepSpeed's default): the key leaves the exported file."""
    load_preset(page, "zero2-bf16")
    assert preset_config("zero2-bf16")["gradient_clipping"] == 1.0
    nav(page, "Precision")
    box = page.get_by_role("spinbutton", name="gradient_clipping", exact=True)
    box.fill("")
    box.press("Enter")
    idle(page)
    playwright_api.expect(box).to_have_value("")  # empty, showing the "not set" placeholder
    expected = {k: v for k, v in preset_config("zero2-bf16").items() if k != "gradient_clipping"}
    assert review_json(page) == expected
    assert download(page) == expected
    nav(page, "Precision")
    number(page, "gradient_clipping", 0.5)
    assert review_json(page) == {**expected, "gradient_clipping": 0.5}

def test_a_value_the_app_sets_shows_in_the_browser_and_the_next_click_keeps_it(page):
    """A widget whose value the app changes (a preset's target, the GPU's memory, an undone import) shows the new
    value at once, and the next unrelated click does not send the old one back. With ``value=`` widgets the
    browser kept the old value and the next click silently put it back (Streamlit 1.67)."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    load_preset(page, "hf-auto-zero2")  # written for the HF Trainer: the target becomes hf
    target = page.locator('[data-testid="stRadio"]').filter(has_text="Target")
    playwright_api.expect(target.get_by_role("radio", name=re.compile("HF Trainer"))).to_be_checked()
    select(page, "GPU", "AMD MI250X 128GB")
    playwright_api.expect(page.get_by_role("spinbutton", name="GPU memory (GiB)")).to_have_value("63.98")
    page.locator('[data-testid="stNumberInput"]').filter(has_text="Nodes").locator("button").last.click()
    idle(page)
    sidebar.get_by_text("Target hf · DeepSpeed").filter(has_text="(2 × 8)").wait_for()
    playwright_api.expect(page.get_by_role("spinbutton", name="GPU memory (GiB)")).to_have_value("63.98")

    paste(page, json.dumps({"train_batch_size": 16, "zero_optimization": {"stage": 1}}))
    nav(page, "ZeRO & offload")
    playwright_api.expect(stage_button(page, 1)).to_have_attribute("aria-checked", "true")
    page.get_by_role("button", name=re.compile("^Undo: import")).first.click()
    idle(page)
    playwright_api.expect(stage_button(page, 2)).to_have_attribute("aria-checked", "true")
    select(page, "device", "cpu")  # any other change: the stage control must not send its old 1 back
    config = download(page)
    assert config["zero_optimization"]["stage"] == 2, config["zero_optimization"]
    assert config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def test_an_undone_plan_row_takes_its_model_back_in_the_browser_and_the_next_click_keeps_it(page):
    """Undoing a Plan row that set the model popped the Start page's model picker, which the browser kept showing
    with the row's model; the next click on Start sent that model back and the undo was silently reversed."""
    picker = page.get_by_role("combobox", name="Model from the catalog", exact=True)
    none = picker.input_value()  # no model: what the picker shows for "— none —"
    assert "Llama" not in none
    nav(page, "Plan")
    page.get_by_role("button", name="Use this config").click()
    idle(page)
    nav(page, "Start")
    playwright_api.expect(picker).to_have_value(re.compile("Llama"))
    page.get_by_role("button", name=re.compile("^Undo: plan row")).first.click()
    idle(page)
    playwright_api.expect(picker).to_have_value(none)
    page.locator('[data-testid="stNumberInput"]').filter(has_text="Nodes").locator("button").last.click()
    idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("(2 × 8)").wait_for()
    playwright_api.expect(picker).to_have_value(none)
    assert sidebar.get_by_text("choose a model on Start").count() == 1


def test_two_sessions_do_not_see_each_others_config(browser, server):
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1800}) for _ in range(2)]
    try:
        a, b = (c.new_page() for c in contexts)
        for tab in (a, b):
            tab.set_default_timeout(30_000)
            open_app(tab, server)
        load_preset(a, "zero3-offload-cpu")
        assert review_json(b) == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
        assert review_json(a) == preset_config("zero3-offload-cpu")
    finally:
        for c in contexts:
            c.close()


PAGES = tuple(app_state.PAGE_TITLES.values())  # every page the app declares, by its title


def test_screenshot_every_page(page):
    load_preset(page, "zero3-offload-cpu")
    select(page, "Model from the catalog", "meta-llama/Meta-Llama-3-8B")
    for i, title in enumerate(PAGES):
        nav(page, title)
        assert not page.locator('[data-testid="stException"]').count(), title
        shot(page, f"page-{i + 1}-{title.split()[0].lower()}")


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)], ids=["phone", "laptop"])
def test_headline_visible_without_scrolling_on_phone_and_laptop(browser, server, width, height):
    """The verdict (accepted · fits · most important problem · its fix) is at the top of the main area, so a
    phone (sidebar hidden) shows it on arrival; charts keep a drawable size. Screenshots for a look by eye."""
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        from core.models import describe, get_config

        name = "meta-llama/Llama-2-70b-hf"
        spec = describe(get_config(name), name=name)
        context_values = {**app_state.default_context(), "model": name, "model_config": get_config(name),
                          "total_params": spec.total_params, "largest_layer_params": spec.largest_layer_params}
        config = preset_config("zero1-bf16")
        token = app_state.encode_state(config, context_values, config)
        tab.goto(f"{server}/?{app_state.SHARE_PARAM}={token}")
        tab.locator("h1").first.wait_for(timeout=90_000)
        idle(tab)
        if width < 600:  # the phone layout hides the navigation in the collapsed sidebar
            tab.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button'
                        ).first.click()
        tab.locator('[data-testid="stSidebarNav"] a').filter(has_text="ZeRO & offload").click()
        tab.locator("h1").filter(has_text="ZeRO & offload").wait_for()
        idle(tab)
        if width < 600:
            collapse = tab.locator('[data-testid="stSidebarCollapseButton"]')
            if collapse.count() and collapse.first.is_visible():
                collapse.locator("button").first.click() if collapse.locator("button").count() else \
                    collapse.first.click()
            tab.wait_for_timeout(800)
        box = tab.locator(".st-key-headline")
        box.wait_for()
        playwright_api.expect(box).to_contain_text("Accepted")
        playwright_api.expect(box).to_contain_text("Does not fit")
        playwright_api.expect(box).to_contain_text("Most important")
        top = box.bounding_box()
        assert top is not None and top["y"] + min(top["height"], 200) <= height, top  # on screen on arrival
        # and not covered (by the sidebar on a phone): the element at its centre belongs to it
        covered = tab.evaluate("""([x, y]) => !document.elementFromPoint(x, y).closest('.st-key-headline')""",
                               [top["x"] + top["width"] / 2, top["y"] + 20])
        assert not covered
        assert tab.get_by_role("button", name="Make it fit").first.is_visible()
        tab.wait_for_timeout(1000)
        tab.screenshot(path=str(ARTIFACTS / f"headline-{width}x{height}.png"))
        charts = tab.locator('[data-testid="stVegaLiteChart"]')
        assert charts.count() >= 2
        for i in range(charts.count()):
            size = charts.nth(i).bounding_box()
            assert size is not None and size["width"] >= min(300, width - 60) and size["height"] >= 120, (i, size)
        shot(tab, f"zero-{width}x{height}")
    finally:
        context.close()


def test_a_deep_link_as_a_fresh_servers_first_visit_gets_the_apps_navigation(browser):
    """The first visit of a freshly started server is a link to a page (``/presets``): Streamlit would run it as
    an old ``pages/``-folder app, listing the files (app, advanced, batch …) in the sidebar, for every session
    until someone opened ``/``. The page gets the app's own navigation, stays on the page it was asked for, and a
    second session's deep link does too."""
    titles = list(app_state.PAGE_TITLES.values())
    nav_js = "() => [...document.querySelectorAll('[data-testid=stSidebarNav] a')].map(a => a.innerText.trim())"
    with streamlit_server("streamlit-e2e-deep-link.log") as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1800})
        try:
            for path, title in (("/presets", "Presets"), ("/zero", "ZeRO & offload")):
                tab = context.new_page()
                tab.set_default_timeout(30_000)
                tab.goto(url + path)
                tab.locator("h1").filter(has_text=title).wait_for(timeout=90_000)
                tab.wait_for_function(f"() => ({nav_js})().length === {len(titles)}")
                links = tab.evaluate(nav_js)
                assert [link.splitlines()[-1] for link in links] == titles, links
                assert tab.url.endswith(path)
        finally:
            context.close()
