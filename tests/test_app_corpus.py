"""AppTest over the real-world corpus: every page renders every readable corpus config, never fails, never
changes the config by rendering it."""

from __future__ import annotations

import copy

import pytest
from app_support import ROOT, app

import core
from core.models import get_config, get_spec
from ui import app_state

CORPUS = ROOT.parent / "shared" / "corpus"

MODEL = "meta-llama/Llama-2-7b-hf"
PAGES = tuple(app_state.PAGES)  # every page the app declares


def _readable() -> list:
    out = []
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name not in ("SOURCES.tsv", "README.md"))
    for path in files:
        try:
            out.append(pytest.param(core.load_config(path.read_bytes()), id=path.parent.name + "/" + path.name))
        except core.ConfigLoadError:
            continue
    return out


CONFIGS = _readable()
pytestmark = pytest.mark.slow


@pytest.mark.skipif(not CONFIGS, reason="the shared corpus is not available")
@pytest.mark.parametrize("config", CONFIGS)
def test_every_page_renders_a_corpus_config_untouched(config):
    spec = get_spec(MODEL)  # a model in the context, so the memory charts are drawn too
    at = app(copy.deepcopy(config), model=MODEL, model_config=get_config(MODEL), total_params=spec.total_params,
             largest_layer_params=spec.largest_layer_params)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert at.session_state["config"] == config, page
