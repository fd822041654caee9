"""Have the browser load the code of every kind of element the app draws while the tab is idle, before a page
first needs it.

Streamlit's frontend loads the code of most elements (a checkbox, a text area, a code block, the charts ...) only
when a page first shows one, and the browser compiles it while the user waits: in headless Chromium the first
visit of a page with such an element took 200-450 ms more than the next visits (Review, whose code blocks load a
1.5 MB highlighter: 644 against 207 ms; BENCHMARKS.md, issue 15). Once the first page is drawn and the tab is idle,
this imports those modules one idle moment at a time, then draws one chart off-screen so that the chart library's
code is compiled too. Only this fixed script runs (no user data); on another Streamlit layout, where a module's
file is not found, nothing is preloaded and each element loads its code as before.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

#: Every kind of element the pages draw (as ``streamlit.testing`` names it) → the prefixes of the script modules
#: Streamlit loads on its first use (``<prefix>.<hash>.js`` in its static files); () for the ones in its main
#: bundle. ``tests/test_preload.py`` walks every page and fails on a kind that is not listed here.
ELEMENT_MODULES: dict[str, tuple[str, ...]] = {
    "button": ("Button",),
    "button_group": ("ButtonGroup",),
    "checkbox": ("Checkbox",),
    "toggle": ("Checkbox",),
    "code": ("StreamlitSyntaxHighlighter",),
    "dataframe": ("DataFrame",),
    "download_button": ("DownloadButton",),
    "file_uploader": ("FileUploader",),
    "html": ("Html",),
    "json": ("Json",),
    "metric": ("Metric",),
    "multiselect": ("Multiselect",),
    "number_input": ("NumberInput",),
    "page_link": ("PageLink",),
    "radio": ("Radio",),
    "selectbox": ("Selectbox",),
    "text": ("Text",),
    "text_area": ("TextArea",),
    "text_input": ("TextInput",),
    "vega_lite_chart": ("ArrowVegaLiteChart", "loadVegaEmbed"),
    **dict.fromkeys(("caption", "column", "divider", "error", "expander", "flex_container", "info", "main",
                     "markdown", "popover", "sidebar", "subheader", "success", "tab", "tab_container", "title",
                     "warning"), ()),
}

_STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"


def module_file(prefix: str) -> str | None:
    """The file name of one of Streamlit's script modules, or None unless exactly one file matches."""
    found = list(_STATIC_JS.glob(f"{prefix}.*.js"))
    return found[0].name if len(found) == 1 else None


#: A chart shaped like the app's (layered bars, a rule, a legend, a tooltip): drawing it off-screen once makes the
#: browser compile the chart code a first real chart would otherwise compile while the user waits.
_WARM_SPEC = {"data": {"values": [{"a": "x", "b": 1.0}, {"a": "y", "b": 2.0}]}, "layer": [
    {"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"},
                                 "color": {"field": "a", "type": "nominal"}, "tooltip": [{"field": "b"}]}},
    {"mark": {"type": "rule", "strokeDash": [4, 4]}, "encoding": {"y": {"datum": 1.5}}}]}
#: Imports each module, resolved against the app's own entry script as Streamlit's lazy imports resolve them (so both
#: name the same modules and Streamlit's later import finds them loaded), one per idle moment; then draws the
#: warm-up chart into a detached element and discards it. Once per tab, silent on any failure;
#: ``window.__dsPreload`` says how far it got (the browser tests read it).
_SCRIPT = """<script>(() => { const entry = document.querySelector('script[src*="static/js/index"]');
  if (!entry || window.__dsPreload !== undefined) return; window.__dsPreload = "waiting";
  const url = (name) => new URL("./" + name, entry.src).href;
  const idle = () => new Promise((resolve) => {
    if (window.requestIdleCallback) requestIdleCallback(resolve, {timeout: 4000}); else setTimeout(resolve, 200); });
  const run = async () => {
    for (const name of MODULES) { await idle(); await import(url(name)).catch(() => null); }
    window.__dsPreload = "loaded";
    if (!LOADER) return;
    await idle();
    const load = Object.values(await import(url(LOADER))).find((v) => typeof v === "function");
    if (!load) return;
    const {embed, expressionInterpreter} = await load();
    const drawn = await embed(document.createElement("div"), SPEC,
                              {actions: false, ast: true, expr: expressionInterpreter, renderer: "svg"});
    drawn.finalize(); window.__dsPreload = "drawn"; };
  run().catch((e) => { window.__dsPreload = String(e); }); })();
</script>"""


def modules() -> list[str]:
    """The file names of the modules to preload (those found in this Streamlit's static files), without repeats."""
    prefixes = dict.fromkeys(prefix for kind in ELEMENT_MODULES.values() for prefix in kind)
    return [name for name in map(module_file, prefixes) if name is not None]


@functools.cache
def script() -> str | None:
    """The preloading script's HTML, built once per process (finding the modules lists Streamlit's static files,
    ~4 ms a rerun when it was done on each); None when no module was found."""
    names = modules()
    if not names:
        return None
    loader = module_file("loadVegaEmbed")
    return (_SCRIPT.replace("MODULES", json.dumps(names)).replace("LOADER", json.dumps(loader))
            .replace("SPEC", json.dumps(_WARM_SPEC)))


def render() -> None:
    """Draw the (invisible) preloading script; ``ui.frame.end`` draws it in the sidebar of every page."""
    html = script()
    if html is not None:
        st.html(html, unsafe_allow_javascript=True, width="content")
