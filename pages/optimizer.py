"""Optimizer & scheduler page: not built yet."""

import streamlit as st

from ui import frame

frame.begin("Optimizer & scheduler")
st.info("This page is not built yet; edit these settings in the JSON on the Start page (import).")
frame.end()
