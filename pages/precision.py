"""Precision: fp32 / fp16 (loss scaling) / bf16 / torch.autocast, communication dtype, gradient clipping."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

import app_state
from core import hardware
from core.findings import get_path, set_path
from ui import frame, widgets

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
MODES = ("fp32", "fp16", "bf16", "torch_autocast")
# Under the config-widget prefix so that replacing the config (a fix, an import) resets it too.
MODE_KEY = f"{app_state.WIDGET_PREFIX}precision_mode"
MODE_LABELS = {"fp32": "fp32 (no mixed precision)", "fp16": "fp16 + loss scaling", "bf16": "bf16",
               "torch_autocast": "torch.autocast"}


def _enabled(section: str) -> bool:
    value = get_path(config, f"{section}.enabled", False)
    return value is True or value == "auto"


def current_mode() -> str:
    on = [m for m in MODES[1:] if _enabled(m)]
    if not on and _enabled("bfloat16"):
        on = ["bf16"]
    return on[0] if on else "fp32"


def _on_mode() -> None:
    chosen = st.session_state[MODE_KEY]
    cfg = app_state.get_config()
    for section in MODES[1:]:
        if section == chosen:
            set_path(cfg, f"{section}.enabled", True)
        elif isinstance(cfg.get(section), Mapping) and cfg[section].get("enabled") not in (None, False):
            set_path(cfg, f"{section}.enabled", False)
    if chosen != "bf16" and isinstance(cfg.get("bfloat16"), Mapping) and cfg["bfloat16"].get("enabled"):
        set_path(cfg, "bfloat16.enabled", False)
    app_state.clear_widgets()


mode = current_mode()
st.radio("Training precision", MODES, index=MODES.index(mode), format_func=MODE_LABELS.get, horizontal=True,
         key=MODE_KEY, on_change=_on_mode,
         help="Sets `enabled` in the chosen section and turns the others off; the details are below.")

gpu = hardware.find_gpu(app_state.get_context().get("gpu"))
if mode == "bf16" and gpu is not None and not gpu.bf16:
    st.warning(f"The {gpu.name} has no bf16 arithmetic: bf16 training is slow or "
               "refused there. Choose fp16 with loss scaling for mixed precision.", icon=":material/warning:")

if mode == "fp16":
    with st.container(border=True):
        widgets.render_section("fp16", form)
elif mode == "bf16":
    with st.container(border=True):
        widgets.render_section("bfloat16" if "bfloat16" in config and "bf16" not in config else "bf16", form)
elif mode == "torch_autocast":
    with st.container(border=True):
        widgets.render_section("torch_autocast", form)

st.subheader("Gradients and communication")
widgets.render_section("", form, only=[n for n in widgets.page_fields("precision")
                                       if n not in ("fp16", "bf16", "bfloat16", "torch_autocast")], columns=3)

widgets.page_findings(form, "precision")
st.page_link(app_state.PAGES["optimizer"], label="Next: optimizer & scheduler →", icon=":material/arrow_forward:")
frame.end()
