"""Batch size: the three batch values, the world size, what DeepSpeed derives, valid GPU counts."""

from __future__ import annotations

import streamlit as st

import core
from core import autofill
from core.batch import BATCH_KEYS, GA, MB
from core.elasticity import elastic_section
from core.launchers import job_world_size
from ui import app_state, fields, frame, tables, widgets
from ui import memory as ui_memory


def shown_count(value: object) -> str:
    """A batch count as the page writes it: a whole float as an integer (a derived 4.0 is 4), a fraction short."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)


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
world = job_world_size(ctx)

st.subheader("World size")
cols = st.columns(3)
widgets.cluster_widgets(cols)
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
widgets.render_section("", form, only=[n for n in fields.page_fields("batch") if n not in trio], columns=3)

autos = [k for k in BATCH_KEYS if form.config.get(k) == "auto"]
# what DeepSpeed gets: under the HF Trainer / accelerate a missing accumulation is written as 1
config_used = autofill.as_accelerate_passes(form.config) if form.target == "hf" else form.config
if autos:
    st.subheader('What the HF Trainer fills into "auto"')
    st.caption('The Trainer replaces "auto" with its TrainingArguments at launch; give the values you will pass, '
               "so the batch and the memory estimate are computed with them.")
    given = autofill.trainer_batch_arguments(form.config)
    cols = st.columns(2)
    with cols[0]:
        widgets.context_widget(st.number_input, "hf_micro_batch", "per_device_train_batch_size", step=1,
                               disabled="per_device_train_batch_size" not in given)
    with cols[1]:
        widgets.context_widget(st.number_input, "hf_grad_accum", "gradient_accumulation_steps (TrainingArguments)",
                               step=1, disabled="gradient_accumulation_steps" not in given)
    config_used = autofill.fill_batch_autos(form.config, int(ctx["hf_micro_batch"]), int(ctx["hf_grad_accum"]))
    if form.target != "hf":
        st.warning('The target is plain DeepSpeed, which does not fill "auto": it fails on these values. Switch '
                   "the target to the HF Trainer on Start, or write numbers.", icon=":material/warning:")

st.subheader("What DeepSpeed will use")
elastic = elastic_section(form.config, ctx["version"]) is not None
batch, unresolved = ui_memory.trainer_batch(form.config, ctx) if autos else (form.report.batch, "")
if batch is not None:
    rows = []
    # under the HF Trainer accelerate writes a missing accumulation as 1, and DeepSpeed derives nothing from it
    accelerate_writes = form.target == "hf" and not elastic and form.config.get(GA) is None and GA not in form.config
    for key in BATCH_KEYS:
        value = getattr(batch, key)
        source = ("filled by the HF Trainer" if key in autos else "computed by elastic training" if elastic
                  else f"written as {autofill.ACCELERATE_ACCUMULATION} by accelerate (missing in the config)"
                  if key == GA and accelerate_writes
                  else "derived by DeepSpeed" if key in batch.derived or key not in form.config
                  else "set in the config")
        rows.append({"Setting": key, "Value": shown_count(value),
                     "Source": source})  # text: ints may exceed int64
    tables.small_table(rows)
    derived = "" if elastic else ", ".join(f"`{k}`" for k in BATCH_KEYS if k not in autos and k not in form.config
                                           and not (k == GA and accelerate_writes))
    st.caption(
        f"On {fields.counted(batch.world_size, 'data-parallel GPU')}: "
        f"{shown_count(batch.train_batch_size)} = "
        f"{shown_count(batch.train_micro_batch_size_per_gpu)} × {shown_count(batch.gradient_accumulation_steps)} × "
        f"{batch.world_size:g}."
        + (f" Derived: {derived}." if derived else "")
        + (" Elastic training computes all three and ignores the batch keys." if elastic else "")
        + (f' "auto" filled as the Trainer would: {", ".join(f"`{k}`" for k in autos)}.' if autos else "")
        + (f" gradient_accumulation_steps is not in the config: accelerate writes it as "
           f"{autofill.ACCELERATE_ACCUMULATION} (DeepSpeed does not derive it), so pass gradient_accumulation_steps="
           f"{autofill.ACCELERATE_ACCUMULATION} to TrainingArguments, or write the accumulation."
           if accelerate_writes else "")
    )
elif autos:
    # the config alone is valid (the validator has no Trainer values); with the ones given it is not
    why = unresolved.rstrip(".") + "."
    accum = shown_count(config_used[GA]) + (" (what accelerate writes for the missing key)" if GA not in form.config
                                            else "")
    st.error(f"With per_device_train_batch_size {shown_count(config_used.get(MB))} and gradient_accumulation_steps "
             f"{accum}, the batch does not resolve on {fields.counted(world, 'GPU')}: {why} The HF Trainer refuses "
             "this at launch (\"train_batch_size … vs hf train_batch_size (calculated) …\"): give TrainingArguments "
             "whose per-device batch × accumulation × data-parallel GPUs is the written train_batch_size, or make "
             'train_batch_size "auto" too.', icon=":material/error:")
else:
    st.warning("The batch values do not resolve for this world size; see the errors above and in the headline.")

valid = core.valid_world_sizes(config_used, 512, ctx["version"])
if valid == list(range(1, 513)):
    st.markdown("**GPU counts that work with these values:** any (1–512); the global batch follows the GPU count.")
elif valid:
    shown = ", ".join(str(w) for w in valid[:40]) + (" …" if len(valid) > 40 else "")
    ok = world in valid
    st.markdown(f"**GPU counts that work with these values** (1–512): {shown}")
    # as severe as the validator says at this world size: DeepSpeed takes a fractional data-parallel size
    # (sequence_parallel_size not dividing the GPUs) with a warning, and refuses a batch that does not resolve
    accepted_with = [f.message for f in form.report.warnings if f.code == "misc.sequence-parallel"]
    batch_errors = [f for f in form.report.errors if f.path in (*BATCH_KEYS, "sequence_parallel_size")
                    or f.code.startswith("elasticity.")]
    if not ok and accepted_with and not batch_errors:
        st.warning(f"The current world size {world} is not one of them; DeepSpeed starts, but "
                   f"{accepted_with[0][0].lower()}{accepted_with[0][1:]}", icon=":material/warning:")
    elif not ok:
        st.error(f"The current world size {world} is not one of them.", icon=":material/error:")
else:
    st.markdown("**No GPU count from 1 to 512 works with these values.**")

widgets.page_findings(form, "batch")
st.page_link(app_state.PAGES["precision"], label="Next: precision →", icon=":material/arrow_forward:")
frame.end()
