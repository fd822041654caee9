"""The browser tab while a config at the size limit is pasted, typed into and imported (issue 15, item 4).

Usage: ``python scripts/paste_test.py [--mb 0.99]`` (``make load-paste``). For two shapes of config just under
the limit (many top-level keys; one long string) it fills the paste box at once (as a paste or a drop does),
types two characters at its end, then applies and imports it, and reports for each step its time and the
tab's animation-frame gaps (count, p50, p95, max in ms): a gap is how long the tab could not paint or react.
Starts and stops the server and the browser itself. Timings only, no assertions; figures go in BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import load_test as lt  # noqa: E402
from e2e_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

#: Records the gap between consecutive animation frames from now on.
HEART = """() => { window.__gaps = []; let last = performance.now();
  const beat = () => { const now = performance.now(); window.__gaps.push(now - last); last = now;
                       window.__raf = requestAnimationFrame(beat); };
  window.__raf = requestAnimationFrame(beat); }"""
#: Stops recording; [frames, p50, p95, max] of the gaps in ms.
STOP = """() => { cancelAnimationFrame(window.__raf); const g = window.__gaps.slice().sort((a, b) => a - b);
  const at = q => Math.round(g[Math.min(g.length - 1, Math.floor(g.length * q))]);
  return [g.length, at(0.5), at(0.95), Math.round(g[g.length - 1])]; }"""


async def _timed(tab, step) -> tuple[float, list[int]]:
    """(seconds, frame gaps) of ``await step()``."""
    await tab.evaluate(HEART)
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started, await tab.evaluate(STOP)


def config_of(kind: str, size: int) -> str:
    """A valid config of about ``size`` bytes: many top-level keys, or one long string."""
    if kind == "keys":
        cfg: dict = {"train_micro_batch_size_per_gpu": 1}
        length, i = len(json.dumps(cfg)), 0
        while length + len(f', "custom_key_{i:06d}": {i}') <= size:
            cfg[f"custom_key_{i:06d}"] = i
            length += len(f', "custom_key_{i:06d}": {i}')
            i += 1
        return json.dumps(cfg)
    return json.dumps({"train_micro_batch_size_per_gpu": 1, "note": "x" * (size - 60)})
async def one_config(tab, url: str, kind: str, size: int) -> None:
    """Paste, type into and import one config of ``kind``; print the three steps' times and frame gaps."""
    await tab.goto(url)
    await tab.locator('[data-testid="stSidebarNav"]').wait_for()
    await lt._idle(tab)
    await tab.get_by_text("Upload or paste", exact=True).click()
    await lt._idle(tab)
    area = tab.get_by_role("textbox", name="…or paste it here")
    text = config_of(kind, size - 200)

    async def type_two() -> None:
        for char in "  ":
            await area.press("End")
            await area.type(char)

    async def apply_and_import() -> None:
        await area.press("Control+Enter")
        await lt._idle(tab)
        await tab.get_by_role("button", name="Import", exact=True).click()
        await tab.get_by_text("Imported a config").first.wait_for()
        await lt._idle(tab)

    fill, fill_gaps = await _timed(tab, lambda: area.fill(text))
    typed, typed_gaps = await _timed(tab, type_two)
    imported, import_gaps = await _timed(tab, apply_and_import)
    print(f"{kind:>6} config, {len(text) / 1e6:.2f} MB (frame gaps: count, p50, p95, max ms)")
    print(f"  paste (fill at once):  {fill * 1e3:6.0f} ms   {fill_gaps}")
    print(f"  one keystroke at end:  {typed / 2 * 1e3:6.0f} ms   {typed_gaps}")
    print(f"  apply + import:        {imported * 1e3:6.0f} ms   {import_gaps}")


async def main(mb: float) -> None:
    with streamlit_server() as url:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            tab = await (await browser.new_context(viewport={"width": 1280, "height": 1400})).new_page()
            tab.set_default_timeout(120_000)
            for kind in ("keys", "string"):
                await one_config(tab, url, kind, int(mb * 1e6))
            await browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=0.99, help="config size in MB (the limit is core.io.MAX_CONFIG_MB)")
    asyncio.run(main(parser.parse_args().mb))
