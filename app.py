"""DeepSpeed Config Studio: the Streamlit app. Run with ``streamlit run app.py``."""

from __future__ import annotations

import streamlit as st

from ui import app_state

app_state.init_state()
share_error = app_state.restore_from_query()

pages = [
    st.Page(app_state.PAGES[pid], title=app_state.PAGE_TITLES[pid], icon=app_state.PAGE_ICONS[pid],
            default=pid == "start", url_path=pid)
    for pid in app_state.PAGES
]
current = st.navigation(pages)
if share_error:
    st.error(f"The shared link could not be restored: {share_error}")
# Each page draws its own sidebar (ui.frame.end) after its widgets.
current.run()
