"""Edits that replace much of the state at once (a preset, a way to fit, a fix from the headline), with undo."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from core import fit
from ui import app_state

#: Session key of the state before the last big edit (a ``Snapshot``).
UNDO = "undo_state"
#: The context values a way to fit may change (recomputation, GPU count, the HF Trainer's batch arguments).
WAY_CONTEXT_KEYS = ("recompute", "nodes", "gpus_per_node", "hf_micro_batch", "hf_grad_accum")


#: Session keys of the messages a page shows after its big edit; any later big edit, or its undo, makes them stale.
BIG_EDIT_MESSAGES = ("start_message", "presets_message", "plan_message")
#: Widgets that show a context value under a key of their own (not ``ctx:``): forgotten when an undo puts the
#: context back, so that they show it instead of writing their old choice over it.
CONTEXT_MIRRORS = ("start_model",)


@dataclass(frozen=True)
class Snapshot:
    """The state before a big edit, which its undo puts back."""

    label: str
    config: dict[str, Any]
    baseline: dict[str, Any]
    context: dict[str, Any]
    #: what the widgets held beside the config (``app_state.note``: a section's values while it is switched off, the
    #: value an "auto" replaced), which a load forgets and the undo brings back with the config
    notes: dict[str, Any]
    #: the edit brought in the user's own config (an import): nothing undoes past it
    own: bool
    #: the edit replaced the whole config (a preset, an import): a load right after it undoes to before both
    load: bool


def remember(label: str, *, own: bool = False, load: bool = False) -> None:
    """Keep the current state so that the next big edit (described by ``label``) can be undone; ``own`` says the
    edit brings in the user's own config (an import), ``load`` that it replaces the whole config.

    When a load follows a load with nothing edited in between (two presets one after the other), the state kept is
    still the one from before both: undo then goes back to the user's own config, not to the first preset. An
    import is the user's own config: an edit after it undoes to it, never past it; any edit that is not a load (a
    fix, a way to fit, a Plan row) undoes to the state just before it."""
    for key in BIG_EDIT_MESSAGES:
        st.session_state.pop(key, None)
    earlier = st.session_state.get(UNDO)
    # the context is compared by whether the user changed it since, not with the context kept before the earlier
    # edit: that edit may have changed it itself (an HF preset loaded switches the target to hf)
    if (load and earlier is not None and earlier.load and not earlier.own
            and not st.session_state.get(app_state.EDITS_SINCE_UNDO, 0)
            and not st.session_state.get(app_state.CONTEXT_EDITED_SINCE_UNDO)):
        first = earlier.label.partition(" (after ")[2].removesuffix(")") or earlier.label  # the chain's first edit
        st.session_state[UNDO] = replace(earlier, label=f"{label} (after {first})", own=own)
        return
    st.session_state[UNDO] = Snapshot(
        label, copy.deepcopy(app_state.get_config()), copy.deepcopy(app_state.get_baseline()),
        copy.deepcopy(app_state.get_context()), copy.deepcopy(st.session_state.get(app_state.PATH_NOTES, {})),
        own, load)
    st.session_state[app_state.EDITS_SINCE_UNDO] = 0
    st.session_state[app_state.CONTEXT_EDITED_SINCE_UNDO] = frozenset()


def undo() -> None:
    """Put back the state before the last big edit: its config, baseline and notes, and the context it had, except
    what the user changed by hand since (a model or GPU picked on Start after a preset load stays)."""
    saved: Snapshot | None = st.session_state.pop(UNDO, None)
    if saved is None:
        return
    by_hand = st.session_state.get(app_state.CONTEXT_EDITED_SINCE_UNDO) or frozenset()
    now = app_state.get_context()
    st.session_state[app_state.CONTEXT] = {**saved.context, **{k: now[k] for k in by_hand if k in now}}
    st.session_state[app_state.BASELINE] = saved.baseline
    app_state.replace_config(saved.config)
    st.session_state[app_state.PATH_NOTES] = copy.deepcopy(saved.notes)
    for key in (*BIG_EDIT_MESSAGES, *CONTEXT_MIRRORS):
        st.session_state.pop(key, None)


#: Session key: a page drew its own undo button in this run (beside its "loaded" message); the headline, drawn after
#: the page, then draws none, so the screen does not show two identical buttons.
UNDO_DRAWN = "undo_drawn_this_run"


def undo_button(key: str) -> None:
    """"Undo <last big edit>" when there is one: a page's beside its message, else the headline's."""
    saved: Snapshot | None = st.session_state.get(UNDO)
    if key == "headline" and st.session_state.pop(UNDO_DRAWN, False):
        return
    if saved is not None:
        if key != "headline":
            st.session_state[UNDO_DRAWN] = True
        edits = st.session_state.get(app_state.EDITS_SINCE_UNDO, 0)
        since = f" and the {edits} edit{'s' if edits > 1 else ''} made since" if edits else ""
        by_hand = sorted(st.session_state.get(app_state.CONTEXT_EDITED_SINCE_UNDO) or ())
        kept = f" What you changed on Start since stays ({', '.join(by_hand)})." if by_hand else ""
        st.button(f"Undo: {saved.label}{since}", key=f"undo:{key}", on_click=undo, icon=":material/undo:",
                  help="Puts back the config as it was before it"
                  + (": the later edits go too." if edits else ".") + kept)


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
