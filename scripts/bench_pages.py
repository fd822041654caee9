"""Server time of every app page (``streamlit.testing.v1.AppTest``), for issue 15's figures in BENCHMARKS.md.

Usage: ``python scripts/bench_pages.py [--reruns 10] [--no-limit]``. Prints, per page, the median rerun time
for Llama-2-7B on 8 GPUs with the preset ``zero3-offload-cpu`` (as ``tests/test_app_benchmark.py`` seeds it),
a trivial one-line page for scale, the ZeRO page's rerun after a stage flip, and then the time of switching to
each page with a config just under the size limit of each shape (tens of thousands of top-level keys, one long
string, deep nesting with thousands of small sections). Timings only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from app_support import app  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.io import MAX_CONFIG_BYTES  # noqa: E402
from core.models import get_config, get_spec  # noqa: E402
from ui import app_state  # noqa: E402
from ui.widgets import widget_key  # noqa: E402

MODEL = "meta-llama/Llama-2-7b-hf"


def _context() -> dict:
    spec = get_spec(MODEL)
    return {"model": MODEL, "model_config": get_config(MODEL), "total_params": spec.total_params,
            "largest_layer_params": spec.largest_layer_params}


def _median_ms(run, reruns: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(reruns):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def limit_configs() -> dict[str, dict]:
    """A config just under the size limit of each shape."""
    keys: dict = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}}
    keys.update({f"k{i:06d}": i for i in range((MAX_CONFIG_BYTES - 30_000) // 18)})
    string = {"train_micro_batch_size_per_gpu": 1, "note": "x" * (MAX_CONFIG_BYTES - 100)}
    deep: dict = {"train_micro_batch_size_per_gpu": 1}
    node = deep
    for level in range(60):
        node[f"level{level}"] = {}
        node = node[f"level{level}"]
    text = "x" * ((MAX_CONFIG_BYTES - 2_000) // 2_500 - 60)
    deep.update({f"s{i:04d}": {"a": i, "b": [i, i + 1], "c": text} for i in range(2_500)})
    shapes = {"many top-level keys": keys, "one long string": string, "deep + small sections": deep}
    for name, config in shapes.items():
        size = len(json.dumps(config))
        if not MAX_CONFIG_BYTES * 0.9 < size <= MAX_CONFIG_BYTES:
            raise ValueError(f"the {name} config is {size} bytes, not just under the limit")
    return shapes


def main(argv: list[str] | None = None) -> int:
    """Print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=10, help="reruns per page (median)")
    parser.add_argument("--no-limit", action="store_true", help="skip the configs at the size limit")
    parser.add_argument("--limit-only", action="store_true", help="only the configs at the size limit")
    args = parser.parse_args(argv)
    if not args.limit_only:
        reruns(args.reruns)
    if not args.no_limit:
        at_the_limit()
    return 0


def reruns(count: int) -> None:
    """Print the median rerun of every page, a trivial page and the ZeRO stage flip."""
    preset = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial.py"
        trivial.write_text('import streamlit as st\n\nst.title("trivial")\nst.number_input("x", value=1)\n')
        at = AppTest.from_file(str(trivial), default_timeout=30).run()
        print(f"{'trivial one-line page':28s} {_median_ms(at.run, count):7.1f} ms", flush=True)
    for page in app_state.PAGES:
        at = app(json.loads(json.dumps(preset)), page=f"pages/{page}.py", **_context())
        print(f"{app_state.PAGE_TITLES[page]:28s} {_median_ms(at.run, count):7.1f} ms", flush=True)
    at = app(json.loads(json.dumps(preset)), page="pages/zero.py", **_context())
    stage = [2, 3]

    def flip() -> None:
        stage.reverse()
        at.button_group(key=widget_key("zero_optimization.stage")).set_value(stage[0]).run()

    print(f"{'ZeRO page, stage flip':28s} {_median_ms(flip, count):7.1f} ms", flush=True)


def at_the_limit() -> None:
    """Print the time of switching to every page with a config at the size limit of each shape."""
    for shape, config in limit_configs().items():
        at = app(config, **_context())
        at.default_timeout = 300
        row = []
        for page in app_state.PAGES:
            started = time.perf_counter()
            at.switch_page(f"pages/{page}.py").run()
            row.append(f"{app_state.PAGE_TITLES[page]} {time.perf_counter() - started:.2f}")
            if at.exception:
                row[-1] += " (exception)"
        print(f"size limit, {shape}: " + ", ".join(row) + " s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
