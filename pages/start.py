"""Start: where the config comes from, what it is for, the hardware and the model."""

from __future__ import annotations

import copy

import streamlit as st

import core
from core import hardware, memory, presets, versions
from core.io import MAX_CONFIG_BYTES, MAX_CONFIG_MB, is_strict_json
from core.launchers import job_world_size
from core.models import ModelConfigError, catalog_names, describe, get_config, parse_hf_config
from core.schema.root import empty_config
from ui import actions, app_state, fields, frame, preset_cache, widgets

#: Where the memory typed for the Custom GPU is kept while a catalog GPU is chosen (ui.app_state.kept).
CUSTOM_MEMORY = "start_custom_gpu_memory_gib"

frame.begin("Start")
widgets.explain(
    "What is a DeepSpeed config?",
    """A `ds_config.json` tells DeepSpeed how to train your model: how many samples each GPU processes
at once (the **micro batch**), in which number format (**precision**), with which **optimizer** and
learning-rate **scheduler**, and how to split the training state over the GPUs (**ZeRO**) so that
models larger than one GPU's memory fit.

Start from a vetted **preset**, **import** a file you already have (JSON or HJSON with comments), or
start **blank**. Then tell the app what the config is for — plain DeepSpeed or the Hugging Face
Trainer / Accelerate, how many GPUs of which kind, and which model — so it can check the batch
arithmetic and estimate memory. Nothing you import is lost: keys the app has no widget for are kept
and exported unchanged.""",
)

# ------------------------------------------------------------------ where the config comes from
st.subheader("1. Begin from")
SOURCES = ["Preset", "Upload or paste", "Blank"]
source = st.radio("Source", SOURCES, index=app_state.kept_index("start_source", SOURCES), horizontal=True,
                  key="start_source", label_visibility="collapsed")
app_state.keep("start_source")


def _load(config: dict, label: str, *, own: bool = False) -> None:
    # the target stays the user's choice; what was there before can be restored with one click
    actions.remember(label, own=own, load=True)
    app_state.replace_config(config, baseline=True)


def _load_preset(preset: presets.Preset) -> None:
    _load(copy.deepcopy(preset.config), f"load of {preset.name}")
    note = actions.keep_target(preset.target, "below")
    st.session_state["start_message"] = (f"Loaded the preset **{fields.md_escape(preset.title)}** "
                                         f"({fields.md_escape(preset.name)}).{note}")


#: Session key: which input was given last ("upload" or "paste"); that one is imported.
LAST_INPUT = "start_last_input"


def import_source() -> str | None:
    """The input the Import button reads: the one given last, else the only one there is."""
    uploaded = st.session_state.get("start_upload") is not None
    pasted = bool((st.session_state.get("start_paste") or "").strip())
    last = st.session_state.get(LAST_INPUT)
    if (last == "upload" and uploaded) or (last == "paste" and pasted):
        return last
    return "upload" if uploaded else "paste" if pasted else None


def _import() -> None:
    uploaded = st.session_state.get("start_upload")
    raw = uploaded.getvalue() if import_source() == "upload" else st.session_state.get("start_paste", "")
    try:
        loaded = core.load_config(raw)
    except core.ConfigLoadError as exc:
        # The pasted text stays in its box and the current config is untouched.
        st.session_state["start_error"] = f"Could not import: {exc}"
        st.session_state.pop("start_message", None)
        return
    st.session_state.pop("start_error", None)
    _load(loaded, "import", own=True)  # the user's own config: a load after it undoes to it
    st.session_state["start_message"] = (
        f"Imported a config with {len(loaded)} top-level keys; it is the baseline the Review page compares against."
    )
    errors = app_state.report().errors  # once per distinct input: the headline and the sidebar ask it again
    if errors:
        st.session_state["start_message"] += (
            f"\n\n**DeepSpeed {app_state.get_context()['version']} would refuse it as it is: "
            f"{fields.counted(len(errors), 'error')}**, the first in the headline above.")
    if not is_strict_json(raw):
        st.session_state["start_message"] += (
            "\n\n**Not strict JSON** (comments, trailing commas, unquoted keys or a byte-order mark): DeepSpeed "
            "reads it, but strict JSON readers refuse it — the HF Trainer's `json.load` and Accelerate among them. "
            "Every export of this app is strict JSON: use the downloaded file.")


def _blank() -> None:
    _load(empty_config(), "blank start")
    st.session_state["start_message"] = "Started from a blank config."


if source == "Preset":
    found, problems = preset_cache.listing(presets.env_search_path())
    for problem in problems:
        st.warning(fields.md_escape(problem))  # it quotes a team file's text: shown as text
    if found:
        names = [p.name for p in found]
        titles = {p.name: p.title for p in found}
        name = st.selectbox("Preset", names, index=app_state.kept_index("start_preset", names),
                            format_func=lambda n: f"{titles[n]} ({n})", key="start_preset")
        app_state.keep("start_preset")
        preset = next(p for p in found if p.name == name)
        # a team's preset file is text, not Markdown: no links, images or HTML from it reach the page
        st.markdown(fields.md_escape(preset.meta.get("description", "")))
        cols = st.columns(2)
        cols[0].markdown(f"**When to use:** {fields.md_escape(preset.meta.get('when_to_use', '—'))}")
        cols[1].markdown(f"**When not to:** {fields.md_escape(preset.meta.get('when_not_to_use', '—'))}")
        st.caption(f"Target: {fields.md_escape(preset.target)} · verified with DeepSpeed "
                   f"{fields.md_escape(', '.join(preset.verified_with) or '—')}")
        st.button("Load this preset", type="primary", key="start_load_preset", icon=":material/input:",
                  on_click=_load_preset, args=(preset,))
    else:
        st.info("No presets found.")
elif source == "Upload or paste":
    # One limit for both ways in (core.io's, also the CLI's), said in the labels before anyone tries; the
    # browser itself refuses a larger file or longer text, so it is never sent, parsed or echoed.
    st.file_uploader(f"ds_config.json (JSON or HJSON, up to {MAX_CONFIG_MB} MB)", type=["json", "hjson", "txt", "conf"],
                     max_upload_size=MAX_CONFIG_MB,
                     key="start_upload", on_change=lambda: st.session_state.update({LAST_INPUT: "upload"}))
    st.text_area(f"…or paste it here (up to {MAX_CONFIG_MB} MB)", app_state.kept("start_paste", ""), key="start_paste",
                 height=200,
                 max_chars=MAX_CONFIG_BYTES,
                 placeholder='{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}',
                 on_change=lambda: st.session_state.update({LAST_INPUT: "paste"}))
    app_state.keep("start_paste")
    chosen = import_source()
    if chosen == "upload":
        st.caption(f"Import will read the uploaded file **{fields.safe_text(st.session_state['start_upload'].name)}**"
                   " (given last; paste again to use the text instead).")
    elif chosen == "paste":
        st.caption("Import will read the **pasted text** (given last; upload again to use a file instead).")
    st.button("Import", type="primary", key="start_import", icon=":material/upload:", on_click=_import)
    if st.session_state.get("start_error"):
        st.error(st.session_state["start_error"], icon=":material/error:")
else:
    st.markdown("A blank config holds only a micro batch of 1 and 1 accumulation step.")
    st.button("Start blank", type="primary", key="start_blank", on_click=_blank)
if st.session_state.get("start_message"):
    message = st.session_state["start_message"]
    # a loaded config DeepSpeed refuses is no success: said where the user is looking, not only in the headline
    if "would refuse it" in message:
        st.warning(message, icon=":material/warning:")
    else:
        st.success(message, icon=":material/check:")
    actions.undo_button("start")
elif source == "Preset" and app_state.get_config() == empty_config():
    st.caption("Nothing is loaded yet: the builder holds a blank config until you press **Load this preset**.")

# ------------------------------------------------------------------ target and version
st.subheader("2. Runtime")
ctx = app_state.get_context()
cols = st.columns(2)
with cols[0]:
    widgets.context_widget(st.radio, "target", "Target", options=list(app_state.TARGETS),
                           format_func=app_state.TARGET_LABELS.get,
                           help='With the HF Trainer / Accelerate, many values may be "auto".')
with cols[1]:
    widgets.context_widget(st.selectbox, "version", "DeepSpeed version", options=list(app_state.VERSIONS),
                           help="Validation follows this release's parser.")
    if (note := versions.default_version_note()) is not None:
        st.caption(f"ℹ️ {note[0].upper()}{note[1:]}: choose another here.")

# ------------------------------------------------------------------ hardware
st.subheader("3. Hardware")
cols = st.columns([1, 1, 2.2, 1])  # the GPU's label ("AMD MI250X 128GB — 63.98 GiB per GCD") needs the width
widgets.cluster_widgets(cols)
with cols[2]:
    gpu_options = [*hardware.gpu_names(), app_state.CUSTOM_GPU]


    def _gpu_label(name: str) -> str:
        gpu = hardware.find_gpu(name)
        if gpu is None:
            return "Custom size"
        per = " per GCD" if gpu.devices > 1 else ""
        return f"{name} — {gpu.memory_gib:g} GiB{per}"


    def _on_gpu() -> None:
        name = st.session_state["ctx:gpu"]
        context = app_state.get_context()
        before = dict(context)
        gpu = hardware.find_gpu(name)
        store = st.session_state.setdefault(app_state.KEPT_INPUTS, {})
        if context["gpu"] == app_state.CUSTOM_GPU:  # leaving Custom: its memory comes back with it
            store[CUSTOM_MEMORY] = context["gpu_memory_gib"]
        context["gpu"] = name
        if gpu is not None:
            context["gpu_memory_gib"] = gpu.memory_gib
        elif name == app_state.CUSTOM_GPU and CUSTOM_MEMORY in store:
            context["gpu_memory_gib"] = store[CUSTOM_MEMORY]
        st.session_state.pop(widgets.CONTEXT_PREFIX + "gpu_memory_gib", None)  # re-seeded from the context
        app_state.context_edited(before)

    widgets.seed("ctx:gpu", ctx["gpu"] if ctx["gpu"] in gpu_options else gpu_options[0],
                 keep=lambda held: held in gpu_options)
    st.selectbox("GPU", gpu_options, index=gpu_options.index(ctx["gpu"]) if ctx["gpu"] in gpu_options else 0,
                 format_func=_gpu_label, key="ctx:gpu", on_change=_on_gpu,
                 help="The memory shown is the total PyTorch reports for one device (what an out-of-memory error "
                 "calls total capacity), a little below the name's figure.")
    chosen_gpu = hardware.find_gpu(ctx["gpu"])
    if chosen_gpu is not None and (counting := chosen_gpu.counting_note()):
        st.caption(f"{counting}.")  # the label is cut to the column's width: the counting rule gets its own line
with cols[3]:
    widgets.context_widget(st.number_input, "gpu_memory_gib", "GPU memory (GiB)", step=1.0,
                           disabled=ctx["gpu"] != app_state.CUSTOM_GPU)
cols = st.columns(4)
with cols[0]:
    widgets.context_widget(st.number_input, "cpu_ram_gib", "CPU RAM per node (GiB)", step=16.0)
with cols[1]:
    widgets.context_widget(st.number_input, "nvme_gib", "NVMe per node (GiB)", step=100.0)
with cols[2]:
    st.metric("World size (GPUs)", job_world_size(ctx))

# ------------------------------------------------------------------ model
st.subheader("4. Model and training shape")
MODEL_SOURCES = ["Catalog", "Upload config.json", "Parameter counts by hand"]
model_source = st.radio("Model", MODEL_SOURCES, index=app_state.kept_index("start_model_source", MODEL_SOURCES),
                        horizontal=True, key="start_model_source")
app_state.keep("start_model_source")


def _set_model(name: str | None, total: int | None, largest: int | None, hf_config: dict | None = None) -> None:
    before = dict(ctx)
    ctx.update(model=name, total_params=total, largest_layer_params=largest, model_config=hf_config)
    app_state.context_edited(before)
    for key in ("ctx:total_params", "ctx:largest_layer_params"):
        st.session_state.pop(key, None)


if model_source == "Catalog":
    names = catalog_names()
    # an undo pops the key (actions.CONTEXT_MIRRORS): re-seeded, the browser shows the model the undo restored
    widgets.seed("start_model", ctx["model"] if ctx["model"] in names else None,
                 keep=lambda held: held is None or held in names)
    choice = st.selectbox("Model from the catalog", [None, *names], key="start_model",
                          index=(names.index(ctx["model"]) + 1) if ctx["model"] in names else 0,
                          format_func=lambda n: "— none —" if n is None else n)
    if choice != ctx["model"] and (choice is not None or ctx["model"] in names):
        if choice is None:
            _set_model(None, None, None)
        else:
            hf_config = get_config(choice)
            spec = describe(hf_config, name=choice)
            _set_model(choice, spec.total_params, spec.largest_layer_params, hf_config)
elif model_source == "Upload config.json":
    hf_file = st.file_uploader("Hugging Face config.json of the model", type=["json"], key="start_hf_config")
    if hf_file is not None:
        try:
            hf_config = parse_hf_config(hf_file.getvalue())
            spec = describe(hf_config, name=hf_file.name)
        except ModelConfigError as exc:
            st.error(f"Could not read the model config: {exc}")
        else:
            if ctx["model"] != hf_file.name or ctx["model_config"] != hf_config:
                _set_model(hf_file.name, spec.total_params, spec.largest_layer_params, hf_config)
            if spec.defaulted_note:  # the counts below assume these sizes: said where they are shown
                st.warning(spec.defaulted_note, icon=":material/warning:")
else:
    def _counts_by_hand() -> None:
        # counts typed by hand describe no architecture (no activation estimate) and no named model any more;
        # merely looking at this option keeps the chosen model
        ctx.update(model=None, model_config=None)

    cols = st.columns(2)
    with cols[0]:
        widgets.context_widget(st.number_input, "total_params", "Total parameters", step=1_000_000,
                               placeholder="e.g. 7000000000", then=_counts_by_hand)
    with cols[1]:
        widgets.context_widget(st.number_input, "largest_layer_params", "Largest layer's parameters",
                               step=1_000_000, help="Usually the embedding: vocab size × hidden size.",
                               then=_counts_by_hand)
counts_problem = (memory.counts_problem(ctx["total_params"], ctx["largest_layer_params"], "**Total parameters**",
                                        "**Largest layer's parameters**")
                  if ctx.get("total_params") and ctx.get("largest_layer_params") else None)
if counts_problem:
    st.error(f"{counts_problem[0].upper()}{counts_problem[1:]}. Change one of them; until then no memory estimate.",
             icon=":material/error:")
elif ctx.get("total_params"):
    largest = ctx.get("largest_layer_params")
    st.caption(f"Model: **{ctx.get('model') or 'by hand'}** — {ctx['total_params'] / 1e9:.2f} B parameters, "
               + (f"largest layer {largest / 1e6:.1f} M." if largest else
                  "largest layer not given: enter **Largest layer's parameters** too for a memory estimate."))
cols = st.columns(4)
with cols[0]:
    widgets.context_widget(st.number_input, "seq_len", "Sequence length (tokens)", step=256)
with cols[1]:
    widgets.context_widget(st.selectbox, "attention", "Attention implementation", options=list(memory.ATTENTION_IMPLS),
                           help=memory.attention_help("\n\n"))
with cols[2]:
    widgets.context_widget(st.selectbox, "recompute", "Activation recompute", options=list(memory.RECOMPUTE_MODES),
                           help="Gradient (activation) checkpointing in the model: `full` recomputes each layer in "
                           "the backward pass and saves most activation memory.")
with cols[3]:
    widgets.context_widget(st.number_input, "train_steps", "Training steps (for the LR chart)", step=1000)

st.page_link(app_state.PAGES["batch"], label="Next: batch size →", icon=":material/arrow_forward:")
frame.end()
