"""ZeRO page of the floor app: the stage control and the two captions the room driver reads, nothing else."""

import streamlit as st

from core.models import get_spec
from ui import fields

STAGE = fields.field_for("zero_optimization.stage")
STAGE_KIND = fields.field_kind(STAGE)

st.title("ZeRO & offload")
st.session_state.setdefault("stage", 2)
# the choices and their labels are the app's own (the schema's), so the driver clicks the same buttons
stage = st.segmented_control("stage", list(STAGE_KIND.choices), required=True, key="stage",
                             format_func=lambda s: fields.choice_label(s, STAGE, fields.plain_default(STAGE)))
st.caption(f"Current config: ZeRO-{stage}")
model = st.session_state.get("model")
if model:
    st.caption(f"{model} ({get_spec(model).total_params / 1e9:.2f} B parameters)")
