"""AppTest over the real-world corpus: every page renders every readable corpus config, never fails, never
changes the config by rendering it.

CI renders a covering slice (``covering``): the fewest configs, picked greedily, that between them hold every key
path, every value type at each path and every text, boolean and null value of the whole corpus (68 of 148 configs,
~100 of CI's worker-seconds saved); ``make app-corpus`` (DSCONFIG_FULL_CORPUS=1) renders them all."""

from __future__ import annotations

import copy
import json
import os

import pytest
from app_support import ROOT, app

import core
from core.models import get_config, get_spec
from ui import app_state

CORPUS = ROOT.parent / "shared" / "corpus"

MODEL = "meta-llama/Llama-2-7b-hf"
PAGES = tuple(app_state.PAGES)  # every page the app declares


def _features(node: object, prefix: str = "") -> set[tuple[str, str]]:
    """What rendering ``node`` exercises: each key path with its value's type, and each text, boolean or null value."""
    found: set[tuple[str, str]] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            found.add((path, type(value).__name__))
            if isinstance(value, str | bool) or value is None:
                found.add((path, json.dumps(value)))
            found |= _features(value, path)
    return found


def covering(configs: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The configs, in their order, that a greedy set cover picks to hold every feature (``_features``) of all."""
    features = [_features(config) for _, config in configs]
    left = set().union(*features) if features else set()
    picked: set[int] = set()
    while left:
        best = max(range(len(configs)), key=lambda i: len(features[i] & left))
        picked.add(best)
        left -= features[best]
    return [configs[i] for i in sorted(picked)]


def _readable() -> list:
    out = []
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name not in ("SOURCES.tsv", "README.md"))
    for path in files:
        try:
            out.append((path.parent.name + "/" + path.name, core.load_config(path.read_bytes())))
        except core.ConfigLoadError:
            continue
    chosen = out if os.environ.get("DSCONFIG_FULL_CORPUS") == "1" else covering(out)
    return [pytest.param(config, id=name) for name, config in chosen]


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


def test_the_covering_slice_holds_every_feature_of_the_whole():
    whole = [({"a": {"b": 1, "c": "x"}}), {"a": {"b": "auto"}}, {"a": {"b": 2}}, {"d": None}]
    picked = covering([(str(i), config) for i, config in enumerate(whole)])
    assert [name for name, _ in picked] == ["0", "1", "3"]  # {"a": {"b": 2}} adds nothing to the first
    assert set().union(*(_features(config) for _, config in picked)) == set().union(*map(_features, whole))
