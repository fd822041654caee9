"""Where a page switch and a change cost the browser its time: Chrome DevTools' own counters per step.

Usage: ``python scripts/bench_browser.py [--rounds 5] [--changes 10] [--pages ...]``. One headless
Chromium session loads the preset ``zero2-bf16`` and Llama-2-7B (as ``make load-one``), flips the ZeRO stage
``--changes`` times, then visits every page ``--rounds`` times from the sidebar. For every step it reads
``Performance.getMetrics`` over the Chrome DevTools Protocol before and after, and prints per page (median over
the visits): the time until the page's last DOM change (as ``scripts/load_test.py`` times it), the renderer's
script, layout and style-recalculation time and all its main-thread task time during the step, the DOM node
count afterwards, and how many vega views and canvases the page holds. ``--idle S`` also measures what an idle
tab on the ZeRO page costs the renderer over S seconds. Timings only, no assertions; figures go in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import load_test as lt  # noqa: E402
from e2e_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

from ui.app_state import PAGE_TITLES  # noqa: E402

#: DevTools counters summed over a step (seconds), reported in ms
DURATIONS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
#: Arms the step's timer: the mousedown starts it; the text ``want`` shown (in an h1 when ``heading``) marks it
#: shown; the last DOM change after that is when it was drawn.
ARM_JS = """([want, heading]) => { window.__changeStart = null; window.__changeShown = null; window.__lastChange = null;
  document.addEventListener('mousedown', () => { window.__changeStart = performance.now(); },
                            {once: true, capture: true});
  const shown = () => heading ? [...document.querySelectorAll('h1')].some(h => h.textContent.includes(want))
                              : document.body.textContent.includes(want);
  const observer = new MutationObserver(() => {
    if (window.__changeShown === null && shown()) window.__changeShown = performance.now();
    if (window.__changeShown !== null) window.__lastChange = performance.now();
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true}); }"""
COUNT_JS = """() => ({nodes: document.getElementsByTagName('*').length,
  vega: document.querySelectorAll('.vega-embed').length, canvas: document.querySelectorAll('canvas').length,
  markdown: document.querySelectorAll('[data-testid="stMarkdownContainer"]').length,
  cells: document.querySelectorAll('td, th').length})"""


async def _metrics(cdp) -> dict[str, float]:
    return {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}


async def _step(tab, cdp, action, done_js: str) -> dict[str, float]:
    """Run ``action`` (which arms the page's timer and clicks), wait for ``done_js``; the step's figures."""
    before = await _metrics(cdp)
    await action()
    await tab.wait_for_function(done_js, polling=lt.POLL_MS)
    shown = await tab.evaluate("() => (window.__lastChange ?? window.__changeShown) - window.__changeStart")
    after = await _metrics(cdp)
    row = {name: (after[name] - before[name]) * 1000 for name in DURATIONS}
    row["shown"] = shown
    row.update(await tab.evaluate(COUNT_JS))
    await lt._idle(tab)
    return row


def _print(label: str, rows: list[dict[str, float]]) -> None:
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    worst = max(r["shown"] for r in rows)
    print(f"{label:26s} shown {med['shown']:5.0f} (max {worst:5.0f}) | task {med['TaskDuration']:5.0f} "
          f"script {med['ScriptDuration']:5.0f} layout {med['LayoutDuration']:4.0f} "
          f"style {med['RecalcStyleDuration']:4.0f} ms | nodes {med['nodes']:5.0f} vega {med['vega']:.0f} "
          f"canvas {med['canvas']:.0f} markdown {med['markdown']:.0f} cells {med['cells']:.0f}", flush=True)


async def prepare(tab, url: str) -> None:
    """Open the app in ``tab``, load the preset ``zero2-bf16`` and choose Llama-2-7B (as ``make load-one``)."""
    await tab.goto(url)
    await tab.locator("h1").first.wait_for()
    await lt._idle(tab)
    box = tab.get_by_role("combobox", name="Preset", exact=True)
    await box.click()
    await tab.get_by_role("option").filter(has_text="(zero2-bf16)").first.click()
    await lt._idle(tab)
    await tab.get_by_role("button", name="Load this preset").click()
    await tab.get_by_text("Loaded the preset").wait_for()
    await lt._idle(tab)
    model = "meta-llama/Llama-2-7b-hf"
    await tab.get_by_role("combobox", name="Model from the catalog", exact=True).click()
    await tab.keyboard.type(model)
    await tab.get_by_role("option").filter(has_text=model).first.click()
    await tab.get_by_text("B parameters").first.wait_for()
    await lt._idle(tab)


async def stage_options(tab, changes: int) -> AsyncIterator[tuple[int, Any]]:
    """For each of ``changes`` ZeRO stage flips (2 -> 3 -> 2 ...): yields the stage and its button in the stage
    control, shown and not yet clicked."""
    stage = 2
    for _ in range(changes):
        stage = 3 if stage == 2 else 2
        option = lt.stage_button(tab, stage)
        await option.wait_for()
        yield stage, option


async def run(url: str, rounds: int, changes: int, idle: float, pages: list[str]) -> None:
    """Measure one session's stage flips and page switches (see the module docstring)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1280, "height": 1400})
        tab = await context.new_page()
        tab.set_default_timeout(120_000)
        cdp = await context.new_cdp_session(tab)
        await cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
        await prepare(tab, url)

        async def visit(title: str) -> dict[str, float]:
            async def go() -> None:
                await tab.evaluate(ARM_JS, [title, True])
                await tab.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
            return await _step(tab, cdp, go, lt.DRAWN_JS)

        first = await visit("ZeRO & offload")
        _print("first chart page (ZeRO)", [first])
        await tab.get_by_text("Current config: ZeRO-2").first.wait_for()
        flips = []
        async for stage, option in stage_options(tab, changes):
            async def flip(option=option, stage=stage) -> None:
                await tab.evaluate(ARM_JS, [f"Current config: ZeRO-{stage}", False])
                await option.click()
            flips.append(await _step(tab, cdp, flip, lt.DRAWN_JS))
        if flips:
            _print("stage flip (ZeRO page)", flips)
        if idle:
            before = await _metrics(cdp)
            started = time.perf_counter()
            await asyncio.sleep(idle)
            after = await _metrics(cdp)
            per_s = {n: (after[n] - before[n]) * 1000 / (time.perf_counter() - started) for n in DURATIONS}
            print(f"idle ZeRO tab, per second: task {per_s['TaskDuration']:.1f} ms, script "
                  f"{per_s['ScriptDuration']:.1f} ms", flush=True)
        visits: dict[str, list[dict[str, float]]] = {}
        for _ in range(rounds):
            for title in pages:
                visits.setdefault(title, []).append(await visit(title))
        for title, rows in visits.items():
            _print(title, rows)
        await browser.close()


def main(argv: list[str] | None = None) -> int:
    """Start the server, run the measurement, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="visits of every page")
    parser.add_argument("--changes", type=int, default=10, help="stage flips on the ZeRO page")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of an idle ZeRO tab to measure (0: none)")
    parser.add_argument("--pages", default=",".join(PAGE_TITLES.values()),
                        help="comma-separated page titles to visit (default: every page)")
    args = parser.parse_args(argv)
    if CHROMIUM is None:
        print("Chromium is not on PATH (install Debian's chromium package)", file=sys.stderr)
        return 2
    with streamlit_server("streamlit-bench-browser.log") as url:
        asyncio.run(run(url, args.rounds, args.changes, args.idle, args.pages.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
