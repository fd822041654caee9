"""Start of the floor app: the same labels as the app's Start page, which the room driver clicks."""

import streamlit as st

from core.models import get_spec
from core.models.catalog import catalog_names
from core.presets import env_search_path, list_presets

st.title("Start")
found, _ = list_presets(env_search_path())
titles = {p.name: p.title for p in found}
preset = st.selectbox("Preset", list(titles), format_func=lambda n: f"{titles[n]} ({n})")
if st.button("Load this preset"):
    st.session_state["stage"] = next(p for p in found if p.name == preset).config["zero_optimization"]["stage"]
    st.session_state["loaded"] = preset
if "loaded" in st.session_state:  # worded as the app's Start page words it: the driver reads "(name)"
    st.success(f"Loaded the preset **{titles[st.session_state['loaded']]}** ({st.session_state['loaded']}).")
model = st.selectbox("Model from the catalog", catalog_names(), index=None)
if model:
    st.session_state["model"] = model
    st.caption(f"{model} ({get_spec(model).total_params / 1e9:.2f} B parameters)")
