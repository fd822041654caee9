"""What every page does first and last: make sure the session exists, then draw the sidebar.

Pages call these themselves (rather than relying on ``app.py`` alone) because Streamlit runs a file of
``pages/`` directly, without ``app.py``, when it still believes the app uses the old ``pages/``-folder
navigation (the first run of a fresh server on a deep link, and every ``AppTest`` rerun).
"""

from __future__ import annotations

import streamlit as st

import app_state
from ui import sidebar, widgets


def begin(title: str) -> None:
    """Page setup: session defaults and the title."""
    st.set_page_config(page_title=f"{title} · DeepSpeed Config Studio", page_icon=":material/memory:",
                       layout="wide")
    app_state.init_state()
    st.title(title)


def end() -> None:
    """Page end: the sidebar, drawn last so it reflects everything the page changed in this run."""
    sidebar.render(app_state.report())


__all__ = ["begin", "end", "widgets"]
