"""What one room session costs its tab's main thread, step by step: the room's setup and its stage flips.

Usage: ``python scripts/session_cost.py [--app scripts/room_floor/app.py] [--flips 8] [--runs 1]`` (``make
session-cost``).

One headless-Chromium tab, alone on the machine, walks the path every session of ``make load`` walks (open the
Start page, load the preset ``zero2-bf16``, pick Llama-2-7B, open the ZeRO page, flip the stage), using the room
driver's own steps (``load_test``), and after each step, once the page is idle, reads the renderer's main-thread
task time from DevTools (``Performance.getMetrics`` ``TaskDuration``). In a room all tabs share the machine's
cores, so this is the work each joining session and each flip adds to the queue; ``--app`` runs the same path
against the room's floor (``scripts/room_floor``) for comparison. Idle time on the ZeRO page is measured too (a tab
that costs CPU while nobody clicks would tax every other session).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import load_test  # noqa: E402
from e2e_support import CHROMIUM, CHROMIUM_ARGS, stage_button, streamlit_server  # noqa: E402

MODEL = "meta-llama/Llama-2-7b-hf"
#: Seconds a step's trailing work (late renders, the element preload on the first idle page) gets to finish
#: before its task time is read.
SETTLE_S = 1.5
IDLE_S = 10.0


async def _task_ms(cdp) -> float:
    metrics = await cdp.send("Performance.getMetrics")
    return 1000 * next(m["value"] for m in metrics["metrics"] if m["name"] == "TaskDuration")


async def _one_run(url: str, flips: int) -> tuple[dict[str, float], list[float]]:
    """One fresh browser down the room's path: main-thread ms per setup step (and idle ms per second), and per
    flip."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 1400})
            tab = await context.new_page()
            tab.set_default_timeout(120_000)
            cdp = await context.new_cdp_session(tab)
            await cdp.send("Performance.enable")
            stats = load_test.Stats()
            last = 0.0

            async def spent(settle: float = SETTLE_S) -> float:
                """Main-thread ms since the last reading, read once the page is idle and ``settle`` s later."""
                nonlocal last
                await load_test._idle(tab)
                await asyncio.sleep(settle)
                now = await _task_ms(cdp)
                ms, last = now - last, now
                return ms

            steps: dict[str, float] = {}
            await tab.goto(url)
            await tab.locator("h1").first.wait_for()
            steps["open the Start page (drawn)"] = await spent(settle=0.0)
            steps["the first idle moments (element preload)"] = await spent()
            await load_test._load_preset(tab, "zero2-bf16", stats)
            steps["load the preset"] = await spent()
            await tab.get_by_role("combobox", name="Model from the catalog", exact=True).click()
            await tab.keyboard.type(MODEL)
            await tab.get_by_role("option").filter(has_text=MODEL).first.click()
            steps["pick the model"] = await spent()
            await load_test._nav(tab, "ZeRO & offload", stats)
            await tab.get_by_text("Current config: ZeRO-2").first.wait_for()
            steps["open the ZeRO page"] = await spent()
            steps["setup total"] = sum(steps.values())
            steps["idle on the ZeRO page"] = await spent(settle=IDLE_S) / IDLE_S  # ms per second
            flip_ms: list[float] = []
            stage = 2
            for _ in range(flips):
                stage = 3 if stage == 2 else 2
                await stage_button(tab, stage).click()
                await tab.get_by_text(f"Current config: ZeRO-{stage}").first.wait_for()
                flip_ms.append(await spent())
            return steps, flip_ms
        finally:
            await browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="app.py", help="the main script (default app.py; the floor: "
                                                        "scripts/room_floor/app.py)")
    parser.add_argument("--flips", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1, help="fresh browsers one after another, same server")
    args = parser.parse_args(argv)
    if CHROMIUM is None:
        print("No chromium on PATH (Debian's package chromium).", file=sys.stderr)
        return 2
    with streamlit_server("session-cost.log", app=args.app) as url:
        for run in range(args.runs):
            steps, flips = asyncio.run(_one_run(url, args.flips))
            print(f"{args.app}, run {run + 1}: main-thread task ms per step")
            for name, value in steps.items():
                unit = "ms/s" if name.startswith("idle") else "ms"
                print(f"  {name:42} {value:7.0f} {unit}")
            print(f"  {'stage flip, median of ' + str(len(flips)):42} {statistics.median(flips):7.0f} ms  "
                  f"(each: {', '.join(f'{x:.0f}' for x in flips)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
