"""Streamlit helpers of the app (these modules import streamlit; ``core`` never does)."""
