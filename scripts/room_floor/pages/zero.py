"""ZeRO page of the floor app: the stage control and the two captions the room driver reads, nothing else."""

import streamlit as st

from core.models import get_spec

st.title("ZeRO & offload")
st.session_state.setdefault("stage", 2)
STAGES = {0: "disabled", 1: "optimizer states", 2: "gradients", 3: "weights"}  # labelled as the app labels them
stage = st.segmented_control("stage", list(STAGES), format_func=lambda s: f"{s} — {STAGES[s]}", required=True,
                             key="stage")
st.caption(f"Current config: ZeRO-{stage}")
model = st.session_state.get("model")
if model:
    st.caption(f"{model} ({get_spec(model).total_params / 1e9:.2f} B parameters)")
