"""Batch size: the three batch values, the world size, what DeepSpeed derives, valid GPU counts."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import app_state
import core
from core.batch import BATCH_KEYS
from ui import frame, widgets

frame.begin("Batch size")
widgets.explain(
    "Micro batch, accumulation and the global batch",
    """A **micro batch** (`train_micro_batch_size_per_gpu`) is how many samples one GPU pushes through
the model in one forward and backward pass; it is what activation memory grows with. **Gradient
accumulation** (`gradient_accumulation_steps`) adds up the gradients of several micro batches before
the optimizer takes one step, so the batch the optimizer sees grows without more memory. The
**global batch** (`train_batch_size`) is what one optimizer step sees over all GPUs:

`train_batch_size = micro batch × accumulation steps × data-parallel GPUs`

Give any two (or just the micro batch) and DeepSpeed derives the rest; give all three and they must
add up exactly, or DeepSpeed refuses to start.""",
)

form = widgets.Form.current()
ctx = app_state.get_context()
world = app_state.world_size(ctx)

st.subheader("World size")
cols = st.columns(3)
with cols[0]:
    widgets.context_widget(st.number_input, "nodes", "Nodes", step=1)
with cols[1]:
    widgets.context_widget(st.number_input, "gpus_per_node", "GPUs per node", step=1)
with cols[2]:
    st.metric("GPUs (world size)", world)

st.subheader("Batch values")
if form.target == "hf":
    st.caption('Target is the HF Trainer / Accelerate: each value may be "auto" (filled in from TrainingArguments).')
batch = form.report.batch
trio = list(BATCH_KEYS)
cols = st.columns(3)
for col, key in zip(cols, trio, strict=True):
    with col:
        derived = batch is not None and key in batch.derived
        widgets.render_field(key, form, placeholder=f"not set — DeepSpeed derives {getattr(batch, key)}"
                             if derived else None)
widgets.render_section("", form, only=[n for n in widgets.page_fields("batch") if n not in trio], columns=3)

st.subheader("What DeepSpeed will use")
if batch is not None:
    rows = []
    for key in BATCH_KEYS:
        value = getattr(batch, key)
        rows.append({
            "key": key,
            "value": f"{value:g}" if isinstance(value, float) else str(value),  # text: ints may exceed int64
            "source": "derived by DeepSpeed" if key in batch.derived else "set in the config",
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="batch_resolved")
    derived = ", ".join(f"`{k}`" for k in batch.derived)
    st.caption(
        f"On {batch.world_size:g} data-parallel GPUs: {batch.train_batch_size} = "
        f"{batch.train_micro_batch_size_per_gpu} × {batch.gradient_accumulation_steps} × {batch.world_size:g}."
        + (f" Derived: {derived}." if derived else " All three are set explicitly.")
    )
elif any(form.config.get(k) == "auto" for k in BATCH_KEYS):
    st.info('Some batch values are "auto": the HF Trainer fills them in at launch.')
else:
    st.warning("The batch values do not resolve for this world size; see the errors below.")

valid = core.valid_world_sizes(form.config, 512)
if valid == list(range(1, 513)):
    st.markdown("**GPU counts that work with these values:** any (1–512); the global batch follows the GPU count.")
elif valid:
    shown = ", ".join(str(w) for w in valid[:40]) + (" …" if len(valid) > 40 else "")
    ok = world in valid
    st.markdown(f"**GPU counts that work with these values** (1–512): {shown}")
    if not ok:
        st.error(f"The current world size {world} is not one of them.", icon=":material/error:")
else:
    st.markdown("**No GPU count from 1 to 512 works with these values.**")

widgets.page_findings(form, "batch")
st.page_link(app_state.PAGES["precision"], label="Next: precision →", icon=":material/arrow_forward:")
frame.end()
