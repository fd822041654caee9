"""Edits that replace much of the state at once (a preset, a way to fit, a fix from the headline), with undo."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import streamlit as st

from core import fit
from ui import app_state

#: Session key of the state before the last big edit: (label, config, baseline, context, whether the edit brought
#: in the user's own config).
UNDO = "undo_state"
#: The context values a way to fit may change (recomputation, GPU count, the HF Trainer's batch arguments).
WAY_CONTEXT_KEYS = ("recompute", "nodes", "gpus_per_node", "hf_micro_batch", "hf_grad_accum")


#: Session keys of the messages a page shows after its big edit; any later big edit, or its undo, makes them stale.
BIG_EDIT_MESSAGES = ("start_message", "presets_message", "plan_message")


def remember(label: str, *, own: bool = False) -> None:
    """Keep the current state so that the next big edit (described by ``label``) can be undone; ``own`` says the
    edit brings in the user's own config (an import).

    When nothing was edited since the previous big edit (two presets loaded one after the other), the state kept
    is still the one from before both: undo then goes back to the user's own config, not to the first preset. An
    import is the user's own config: an edit after it undoes to it, never past it."""
    for key in BIG_EDIT_MESSAGES:
        st.session_state.pop(key, None)
    earlier = st.session_state.get(UNDO)
    # the context is compared by whether the user changed it since, not with the context kept before the earlier
    # edit: that edit may have changed it itself (an HF preset loaded switches the target to hf)
    if (earlier is not None and not earlier[4] and not st.session_state.get(app_state.EDITS_SINCE_UNDO, 0)
            and not st.session_state.get(app_state.CONTEXT_EDITED_SINCE_UNDO)):
        first = earlier[0].partition(" (after ")[2].removesuffix(")") or earlier[0]  # the chain's first edit
        st.session_state[UNDO] = (f"{label} (after {first})", *earlier[1:4], own)
        return
    st.session_state[UNDO] = (label, copy.deepcopy(app_state.get_config()), copy.deepcopy(app_state.get_baseline()),
                              copy.deepcopy(app_state.get_context()), own)
    st.session_state[app_state.EDITS_SINCE_UNDO] = 0
    st.session_state[app_state.CONTEXT_EDITED_SINCE_UNDO] = False


def undo() -> None:
    saved = st.session_state.pop(UNDO, None)
    if saved is None:
        return
    _, config, baseline, context, _ = saved
    st.session_state[app_state.CONTEXT] = context
    st.session_state[app_state.BASELINE] = baseline
    app_state.replace_config(config)
    for key in BIG_EDIT_MESSAGES:
        st.session_state.pop(key, None)


def undo_button(key: str) -> None:
    """"Undo <last big edit>" when there is one."""
    saved = st.session_state.get(UNDO)
    if saved is not None:
        edits = st.session_state.get(app_state.EDITS_SINCE_UNDO, 0)
        since = f" and the {edits} edit{'s' if edits > 1 else ''} made since" if edits else ""
        st.button(f"Undo: {saved[0]}{since}", key=f"undo:{key}", on_click=undo, icon=":material/undo:",
                  help="Puts back the config as it was before it" + (": the later edits go too." if edits else "."))


def apply_way(way: fit.Way) -> None:
    """Apply a way to fit: its config patch and its context changes (recomputation, GPU count)."""
    remember(way.title)
    ctx = app_state.get_context()
    ctx.update({k: v for k, v in way.context_patch.items() if k in WAY_CONTEXT_KEYS})
    app_state.rewrite_config(fit.apply_patch(app_state.get_config(), way.config_patch))


def apply_fix(description: str, fixed: Mapping[str, Any]) -> None:
    remember(description)
    app_state.rewrite_config(dict(fixed))


def keep_target(preset_target: str, where: str) -> str:
    """After loading a preset: an HF preset (its "auto" values need the Trainer) sets the HF target; any other
    preset keeps the user's target (a plain config works under the HF Trainer too). Returns a sentence for
    the user when the two differ."""
    ctx = app_state.get_context()
    if preset_target == "hf" and ctx["target"] != "hf":
        ctx["target"] = "hf"
        st.session_state.pop("ctx:target", None)
        return ' Its "auto" values need the HF Trainer, so the target is now hf.'
    if preset_target != ctx["target"]:
        return (f" It was written for the target {preset_target}; your target stays {ctx['target']} "
                f"(change it {where}).")
    return ""
