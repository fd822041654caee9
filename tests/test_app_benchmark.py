"""Benchmarks (no timed asserts): the rerun time of every page under AppTest against a trivial page.

Run with ``pytest tests/test_app_benchmark.py --benchmark-only``; the table goes into BENCHMARKS.md.
"""

from __future__ import annotations

import json

import pytest
from app_support import ROOT, app
from streamlit.testing.v1 import AppTest

from core.models import get_config, get_spec
from ui import app_state

pytestmark = pytest.mark.slow

PAGES = tuple(app_state.PAGES)  # every page the app declares
MODEL = "meta-llama/Llama-2-7b-hf"


@pytest.fixture(scope="module")
def seeded() -> tuple[dict, dict]:
    spec = get_spec(MODEL)
    config = json.loads((ROOT / "presets" / "zero3-offload-cpu.json").read_text())["config"]
    context = {"model": MODEL, "model_config": get_config(MODEL), "total_params": spec.total_params,
               "largest_layer_params": spec.largest_layer_params}
    return config, context


def test_bench_trivial_page(benchmark, tmp_path):
    script = tmp_path / "trivial.py"
    script.write_text('import streamlit as st\n\nst.title("trivial")\nst.number_input("x", value=1)\n')
    at = AppTest.from_file(str(script), default_timeout=30).run()
    benchmark.pedantic(at.run, rounds=10, iterations=1, warmup_rounds=1)
    assert not at.exception


@pytest.mark.parametrize("page", PAGES)
def test_bench_page_rerun(benchmark, seeded, page):
    config, context = seeded
    at = app(json.loads(json.dumps(config)), page=f"pages/{page}.py", **context)
    benchmark.extra_info["page"] = page
    benchmark.pedantic(at.run, rounds=10, iterations=1, warmup_rounds=1)
    assert not at.exception
    assert at.title[0].value  # the page itself ran, not an error screen
