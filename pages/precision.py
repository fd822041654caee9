"""Precision: fp32 / fp16 (loss scaling) / bf16 / torch.autocast, communication dtype, gradient clipping."""

from __future__ import annotations

import streamlit as st

from core import hardware, precision
from ui import app_state, fields, frame, widgets

frame.begin("Precision")
widgets.explain(
    "Number formats and mixed precision",
    """Training in **fp32** stores every number in 4 bytes. **Mixed precision** runs the model in a 2-byte
format and keeps a 4-byte master copy of the weights for the optimizer: about half the activation
memory and much faster matrix maths on tensor cores.

* **bf16** has the same range as fp32 (fewer digits), so nothing over- or underflows: the default on
  A100/H100 and newer.
* **fp16** has a small range, so DeepSpeed multiplies the loss by a **loss scale** to keep small
  gradients from turning into zero, and skips steps whose gradients overflow (dynamic loss scaling).
  Use it on V100-class GPUs.
* **torch.autocast** leaves the weights in fp32 and lets PyTorch pick the precision per operator.

**Gradient clipping** caps the size of the whole gradient so one bad batch cannot wreck training.""",
)

form = widgets.Form.current()
config = form.config
# Under the config-widget prefix so that replacing the config (a fix, an import) resets it too.
MODE_KEY = f"{app_state.WIDGET_PREFIX}precision_mode"
MODE_LABELS = {"fp32": "fp32 (no mixed precision)", "fp16": "fp16 + loss scaling", "bf16": "bf16",
               "torch_autocast": "torch.autocast"}


def _before_key(section: str) -> str:
    return f"{MODE_KEY}:{section}"


@app_state.counted_edit
def _on_mode() -> None:
    config = app_state.get_config()
    # what each section was before earlier switches, while it still holds what they wrote (app_state.note): a
    # switch back gives it back ("auto" flags; a section a switch created is removed)
    before = {section: was for section in precision.SECTIONS
              if (was := app_state.recall(_before_key(section))) is not None}
    out = precision.with_precision_mode(config, st.session_state[MODE_KEY], app_state.get_context()["version"],
                                        before)
    app_state.rewrite_config(out)
    remembered = precision.remembered_after(config, out, before)
    for section in precision.SECTIONS:
        if section in remembered:
            was = remembered[section]
            app_state.note(_before_key(section), precision.changed_path(section, was), was)
        else:
            app_state.forget(_before_key(section))


mode = precision.precision_mode(config, app_state.get_context()["version"])
if st.session_state.get(MODE_KEY) != mode:  # the config changed under it (fp16.enabled unticked below): follow it
    st.session_state[MODE_KEY] = mode
st.radio("Training precision", precision.PRECISION_MODES,
         format_func=MODE_LABELS.get, horizontal=True, key=MODE_KEY, on_change=_on_mode,
         help="Sets `enabled` in the chosen section and turns the others off; the details are below.")

gpu = hardware.find_gpu(app_state.get_context().get("gpu"))
gpu_problem = None if gpu is None else gpu.precision_problem(precision.compute_precision(
    config, app_state.get_context()["version"]))
if gpu_problem:
    st.warning(f"{gpu_problem}.", icon=":material/warning:")

if mode == "fp16":
    with st.container(border=True):
        widgets.render_section("fp16", form)
elif mode == "bf16":
    with st.container(border=True):
        widgets.render_section(precision.bf16_section(config), form)
if mode == "torch_autocast" or "torch_autocast" in config:
    # on beside fp16 or bf16 (DeepSpeed runs autocast over either from 0.18.3; 0.17.2-0.18.2 refuse the pair, which
    # engine.autocast-conflict reports), or off with settings kept: editable here too
    with st.container(border=True):
        widgets.render_section("torch_autocast", form)

st.subheader("Gradients and communication")
widgets.render_section("", form, only=[n for n in fields.page_fields("precision")
                                       if n not in ("fp16", "bf16", "bfloat16", "torch_autocast")], columns=3)

widgets.page_findings(form, "precision")
st.page_link(app_state.PAGES["optimizer"], label="Next: optimizer & scheduler →", icon=":material/arrow_forward:")
frame.end()
