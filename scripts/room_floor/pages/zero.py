"""ZeRO page of the floor app: the stage control and the two captions the room driver reads, nothing else."""

import streamlit as st

from core.models import get_spec
from core.schema.zero import ZeroStage

st.title("ZeRO & offload")
st.session_state.setdefault("stage", 2)
# the schema's stages, labelled as the app's widget labels an enum choice (ui.fields.choice_label: "2 — gradients";
# this page runs without the app's ui package), so the driver clicks the same buttons
stage = st.segmented_control("stage", [s.value for s in ZeroStage], required=True, key="stage",
                             format_func=lambda s: f"{s} — {ZeroStage(s).name.replace('_', ' ')}")
st.caption(f"Current config: ZeRO-{stage}")
model = st.session_state.get("model")
if model:
    st.caption(f"{model} ({get_spec(model).total_params / 1e9:.2f} B parameters)")
