"""What every page does first and last: make sure the session exists, then draw the sidebar.

Pages call these themselves (rather than relying on ``app.py`` alone) because Streamlit runs a file of
``pages/`` directly, without ``app.py``, when it still believes the app uses the old ``pages/``-folder
navigation (the first run of a fresh server on a deep link, and every ``AppTest`` rerun).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from ui import actions, app_state, headline, preload, sidebar, tables, widgets

#: Session key: this session's first run has left the ``pages/``-folder navigation (``_leave_folder_navigation``).
_NAVIGATION_FIXED = "_navigation_fixed"
#: Session key of this run's headline slot (a container under the title, filled by ``end``).
_SLOT = "_headline_slot"


def _leave_folder_navigation() -> None:
    """On a fresh server whose first visit is a deep link (``/zero``), Streamlit runs the page as an old
    ``pages/``-folder app: the sidebar lists the files (``app``, ``advanced``, ``batch`` …) and ``app.py`` never
    runs, for that session and every later one, until someone opens ``/``. ``st.navigation`` turns that mode off
    process-wide; this page does the same and reruns, so the session gets ``app.py``'s navigation on the page it
    asked for (the rerun keeps the page: both modes name it by its URL path). Once per session: ``AppTest`` sets
    the mode again before each of its runs, and a rerun on every one of them would run every page twice there."""
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        if not st.session_state.get(_NAVIGATION_FIXED):
            st.session_state[_NAVIGATION_FIXED] = True
            st.rerun()


def begin(title: str) -> None:
    """Page setup: session defaults, the title and the slot of the headline (filled in ``end``)."""
    _leave_folder_navigation()
    st.set_page_config(page_title=f"{title} · DeepSpeed Config Studio", page_icon=":material/memory:",
                       layout="wide")
    app_state.init_state()
    st.session_state.pop(app_state.REPLACED, None)  # this run draws everything anew
    st.session_state.pop(actions.UNDO_DRAWN, None)
    st.title(title)
    st.session_state[_SLOT] = st.container()


def end() -> None:
    """Page end: the headline and the sidebar, drawn last so they reflect everything the page changed in this
    run (the headline still appears at the top, in the slot ``begin`` left)."""
    slot = st.session_state.pop(_SLOT, None)
    st.session_state.pop(app_state.REPLACED, None)  # the headline and the sidebar below read the config as it is
    with slot if slot is not None else st.container():
        headline.render()
    sidebar.render(app_state.report())
    tables.draw_style()
    with st.sidebar:
        preload.render()


__all__ = ["begin", "end", "widgets"]
