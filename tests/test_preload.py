"""``ui.preload``: the browser loads the code of every kind of element the app draws while the tab is idle, so a
page's first visit does not wait for it (issue 15). The AppTest half checks the list against what the pages really
draw; ``tests/test_e2e.py`` checks in Chromium that a page's first visit then loads no script module."""

from __future__ import annotations

import pytest
from app_support import app

from core.models import get_config, get_spec
from core.presets import BUILTIN_DIR, list_presets
from ui import app_state, preload

SPEC = get_spec("meta-llama/Llama-2-7b-hf")
MODEL = {"model": "meta-llama/Llama-2-7b-hf", "total_params": SPEC.total_params,
         "largest_layer_params": SPEC.largest_layer_params, "model_config": get_config("meta-llama/Llama-2-7b-hf")}
PRESETS = {p.name: p.config for p in list_presets([BUILTIN_DIR])[0]}
#: configs that between them draw every kind of element: a plain one, offload with a finding, HF "auto" values,
#: and one with errors (an unknown section, a stage outside the choices)
CONFIGS = {"zero2-bf16": PRESETS["zero2-bf16"], "zero3-offload-cpu": PRESETS["zero3-offload-cpu"],
           "hf-auto-zero3": PRESETS["hf-auto-zero3"],
           "errors": {**PRESETS["zero2-bf16"], "zero_optimisation": {"stage": 3}, "zero_optimization": {"stage": 7}}}


def _kinds(node, found: set[str]) -> set[str]:
    kind = getattr(node, "type", None)
    if kind:
        found.add(kind)
    children = getattr(node, "children", None)
    for child in (children.values() if isinstance(children, dict) else ()):
        _kinds(child, found)
    return found


def test_every_listed_module_is_in_this_streamlit():
    # a Streamlit upgrade that renames or merges a module shows here, not as a silently slower first visit
    missing = [prefix for kinds in preload.ELEMENT_MODULES.values() for prefix in kinds
               if preload.module_file(prefix) is None]
    assert not missing, missing
    assert len(preload.modules()) == len({p for kinds in preload.ELEMENT_MODULES.values() for p in kinds})


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_kind_of_element_a_page_draws_is_listed(name):
    drawn: dict[str, set[str]] = {}
    for page_id, page in app_state.PAGES.items():
        at = app(dict(CONFIGS[name]), page=page, **MODEL)
        for kind in _kinds(at.main, set()) | _kinds(at.sidebar, set()):
            drawn.setdefault(kind, set()).add(page_id)
    unlisted = {kind: sorted(pages) for kind, pages in drawn.items() if kind not in preload.ELEMENT_MODULES}
    assert not unlisted, f"add these kinds of element to ui.preload.ELEMENT_MODULES: {unlisted}"


def test_the_script_in_the_sidebar_names_every_module_and_no_user_data():
    at = app(dict(PRESETS["zero2-bf16"]), **MODEL)
    scripts = [e.proto.body for e in at.sidebar if getattr(e, "type", None) == "html"
               and "__dsPreload" in e.proto.body]
    assert len(scripts) == 1
    assert all(f'"{name}"' in scripts[0] for name in preload.modules())
    assert "Llama" not in scripts[0] and "zero_optimization" not in scripts[0]
