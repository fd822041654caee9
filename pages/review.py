"""Review & export: final JSON, all findings with one-click fixes, diff, download, launch snippets, share link."""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

import core
from core import autofill, export, launchers
from core.autofix import fix_until_stable
from core.launchers import job_world_size
from ui import actions, app_state, fields, focus, frame, headline, memory, widgets

frame.begin("Review & export")
widgets.explain(
    "Before you launch",
    """This is the file DeepSpeed will read. Every finding of the validator is listed with its fix where one
is mechanical; the **diff** shows what changed since you imported the file or loaded the preset.
"Only what differs from defaults" drops values equal to DeepSpeed's defaults (same behaviour, shorter
file); "as written" keeps every key you set. Keys the app has no widget for are always kept.
The **shareable link** holds the whole state (config, baseline and context) compressed in the URL;
nothing is stored on the server.""",
    expanded=False,
)

form = widgets.Form.current()
config = form.config
ctx = app_state.get_context()

# ------------------------------------------------------------------ findings
st.subheader("Findings")
report = form.report
counts = report.counts()
st.markdown(" · ".join(f"**{fields.counted(counts[kind], noun)}**" for kind, noun in (
    ("error", "error"), ("warning", "warning"), ("info", "note")))
    + f" (DeepSpeed {form.version}, {form.target}, {fields.counted(job_world_size(ctx), 'GPU')})")
safe = [f for f in report.findings if f.fix is not None and f.fix.safe and f.severity in ("error", "warning")]
UNSAFE_LEFT = "review_unsafe_left"


def _fix_all() -> None:
    result = fix_until_stable(app_state.get_config(), world_size=job_world_size(ctx), target=ctx["target"],
                              version=ctx["version"])
    if result.applied:
        actions.apply_fix(f"applying {len(result.applied)} safe fix{'es' if len(result.applied) > 1 else ''}",
                          result.config)
    st.session_state[UNSAFE_LEFT] = [f"`{f.path or f.code}`: {f.fix.description}" for f in result.skipped if f.fix]


if safe:
    st.button(f"Apply {len(safe)} safe fix{'es' if len(safe) > 1 else ''}", key="review_fix_all", on_click=_fix_all,
              icon=":material/build:", help="Safe fixes keep what DeepSpeed does; the others choose values, so "
              "each has its own button below.")
if st.session_state.get(UNSAFE_LEFT):
    st.info("Not applied, because they change what DeepSpeed does (review each below):\n\n"
            + "\n".join(f"- {fields.safe_text(t)}" for t in st.session_state.pop(UNSAFE_LEFT)))
drawn, rest = fields.drawn_findings(report.findings)
for finding in drawn:
    page = app_state.PAGES.get(finding.page or "")
    {"error": st.error, "warning": st.warning}.get(finding.severity, st.info)(fields.finding_text(finding))
    cols = st.columns([3, 2])
    with cols[0]:
        widgets.fix_button(finding, key_suffix="review")
    if page:
        with cols[1]:
            st.page_link(page, label=f"Edit on {app_state.PAGE_TITLES[finding.page]}", icon=":material/edit:",
                         query_params=focus.link_params(finding, app_state.get_config()))
widgets.show_rest(rest)
if report.findings:
    # the finding-code table's entry of each code on the page (the reference of `dsconfig explain` and
    # docs/rules.md); drawn only while open
    shown_codes = list(dict.fromkeys(f.code for f in report.findings))
    with st.expander(f"What these {len(shown_codes)} finding codes mean", icon=":material/menu_book:",
                     key="review_codes", on_change="rerun") as codes_box:
        if codes_box.open:
            for code in shown_codes:
                st.markdown(fields.code_reference(code))
estimate = memory.current_estimate(config, ctx, report)
fit_text = headline.fit_sentence(estimate, memory.micro_batch_and_assumption(config, report, ctx)[1])
if not report.errors:
    # "accepted" alone would be misleading when the job then runs out of memory: always say both
    accepted = "No findings: DeepSpeed will accept this config." if not report.findings else \
        "No errors: DeepSpeed will accept this config (see the warnings above)."
    show = st.success if estimate is not None and estimate.fits else st.warning
    show(f"{accepted}\n\nMemory: {fit_text}", icon=":material/check_circle:")

# ------------------------------------------------------------------ releases
releases = app_state.releases()
ok_count = sum(v.ok for v in releases.verdicts)
st.markdown(f"**Works with releases:** {fields.safe_text(releases.summary)} "
            f"({ok_count} of {len(releases.verdicts)} profiled DeepSpeed releases accept it).")
st.caption(" ".join(f":green[{v.version}]" if v.ok else f":red[~~{v.version}~~]" for v in releases.verdicts),
           help="Each profiled release's validator verdict; struck through: refused (see `dsconfig versions`).")

# ------------------------------------------------------------------ the file
st.subheader("ds_config.json")
VARIANTS = {
    "As written": lambda c: c,
    "Only what differs from defaults": lambda c: export.strip_defaults(c, version=ctx["version"], target=ctx["target"]),
    "Explicit (every default of the sections in use)": lambda c: export.explicit_config(c, version=ctx["version"],
                                                                                     target=ctx["target"]),
}
variant = st.radio("Form", list(VARIANTS), index=app_state.kept_index("review_variant", list(VARIANTS)),
                   horizontal=True, key="review_variant",
                   help="All three mean the same to DeepSpeed: the minimal file omits what DeepSpeed fills in "
                        "anyway, the explicit one writes out every default of the sections the file uses.")
app_state.keep("review_variant")
final = VARIANTS[variant](config)
text = core.dump_config(final)
widgets.code_preview(text, language="json")
# labelled by its form: the sidebar's button downloads the config as written, whatever form is chosen here
st.download_button(f"Download ds_config.json: {variant[0].lower()}{variant[1:]}", data=text,
                   file_name="ds_config.json", mime="application/json", key="review_download", type="primary",
                   icon=":material/download:")

def _box_start(guess: Any, low: int, high: int | None = None) -> int | None:
    """The value an integer box starts from, or None (the box asks for it) when it cannot hold the guess
    (``fields.fits``): the config's own value (a micro batch of 0 or -2, 1e30) is then one the validator reports,
    not a crash here."""
    return guess if fields.fits(guess, fields.FieldKind("int"), low, high) else None


def _float_start(guess: object) -> float | None:
    """The value a number box starts from: a finite number, else None (the box asks for it)."""
    if isinstance(guess, bool) or not isinstance(guess, int | float):
        return None
    try:
        value = float(guess)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


#: The Trainer's batch arguments, the context keys the Batch page keeps them in, and the config key each fills.
HF_BATCH_ARGUMENTS = (("per_device_train_batch_size", "hf_micro_batch", "train_micro_batch_size_per_gpu"),
                      ("gradient_accumulation_steps", "hf_grad_accum", "gradient_accumulation_steps"))
# the Trainer's batch arguments where the config says "auto": the values the Batch page and the memory use, which
# the launch files and the "auto" values resolved below both take
trainer_values = {name: int(ctx[key]) for name, key, _ in HF_BATCH_ARGUMENTS
                  if ctx.get(key) and name in autofill.trainer_batch_arguments(final)}
autos = autofill.find_auto(config)
if autos:
    with st.expander(f'Resolve the {len(autos)} "auto" values as the HF Trainer would', icon=":material/auto_fix:"):
        st.caption("For a plain DeepSpeed launch (or to see what the Trainer will use): give the training values "
                   "the Trainer would take from TrainingArguments, the launcher and the model.")
        # what the launch files below are resolved with (the one source: core.launchers), so this file and
        # theirs agree: the Trainer's batch the Batch page set, the cluster, steps and model, the precision the
        # memory figures assume, and the config's own values
        guesses = launchers.export_training_values(config, launchers.with_assumed_precision(
            config, launchers.launch_values(ctx, trainer_values)), ctx["version"])
        values: dict = {}
        needed = autofill.needed_training_values(config)
        cols = st.columns(3)
        for i, name in enumerate(needed):
            check = autofill.TRAINING_VALUES[name]
            default = guesses.get(name)
            with cols[i % 3]:
                key = f"review_auto_{name}"
                if check is autofill.TRAINING_VALUES["fp16"]:
                    values[name] = st.checkbox(name, value=app_state.kept(key, bool(default)), key=key)
                elif check is autofill.TRAINING_VALUES["world_size"]:
                    values[name] = st.number_input(name, value=app_state.kept(key, _box_start(default, 1)),
                                                   min_value=1, step=1, key=key, placeholder="required")
                elif check is autofill.TRAINING_VALUES["zero_stage"]:
                    values[name] = st.number_input(
                        name, value=app_state.kept(key, _box_start(default, 0, 3)), min_value=0, max_value=3, step=1,
                        key=key, help="Accelerate's ZeRO stage for an \"auto\" stage: what `accelerate launch "
                        "--zero_stage` set (ACCELERATE_DEEPSPEED_ZERO_STAGE), else 2")
                else:
                    values[name] = st.number_input(name, value=app_state.kept(key, _float_start(default)), format="%g",
                                                   key=key, placeholder="required")
                app_state.keep(key)
        given = {k: v for k, v in values.items() if v is not None}
        try:
            resolved = autofill.resolve_auto(config, version=ctx["version"], **given)
        except autofill.AutoFillError as exc:
            st.error(f"Cannot resolve yet: {exc}", icon=":material/error:")
        else:
            left = autofill.find_auto(resolved)
            if left:
                st.caption("Still \"auto\" (the Trainer leaves these alone): " + ", ".join(f"`{p}`" for p in left))
            resolved_text = core.dump_config(resolved)
            widgets.code_preview(resolved_text, language="json")
            st.download_button("Download the resolved ds_config.json", data=resolved_text,
                               file_name="ds_config.resolved.json", mime="application/json",
                               key="review_download_resolved", icon=":material/download:")

st.subheader("Changes since import / preset")
diff = export.unified_diff(app_state.get_baseline(), config)
if diff:
    widgets.code_preview(diff, language="diff")
else:
    st.caption("No changes: the config is what you imported or loaded.")

# ------------------------------------------------------------------ launch
st.subheader("Launch")
HF_MODE_LABELS = {"auto": '"auto" in the config, values in TrainingArguments',
                  "match": "values in the config, repeated in TrainingArguments"}
hf_mode = st.radio("HF Trainer export", list(HF_MODE_LABELS), format_func=HF_MODE_LABELS.get, horizontal=True,
                   index=app_state.kept_index("review_hf_mode", list(HF_MODE_LABELS)), key="review_hf_mode",
                   help="The HF Trainer refuses to start when the config's batch, learning rate, clipping, "
                        "warm-up or precision differ from its TrainingArguments: either leave them to the Trainer "
                        '("auto") or pass the same values both ways.')
app_state.keep("review_hf_mode")
# each launcher's file once, for its snippet and for the file shown under it
exports = export.launcher_exports(final, ctx, hf_mode, trainer_values)
LAUNCHER_FILES = {"accelerate launch": ("accelerate", *exports.accelerate),
                  "Lightning": ("lightning", exports.lightning[0], exports.lightning[2])}
snippets = export.launch_snippets(ctx, form.stage, config=final, hf_mode=hf_mode, trainer_values=trainer_values,
                                  exports=exports)
for tab, (name, snippet) in zip(st.tabs(list(snippets)), snippets.items(), strict=True):
    with tab:
        st.code(snippet, language="bash" if name in ("deepspeed launcher", "accelerate launch") else "python")
        if name == "HF Trainer":
            hf_config, _, hf_notes = exports.hf
            for note in hf_notes:
                st.warning(note, icon=":material/warning:")
            hf_text = core.dump_config(hf_config)
            st.caption("The ds_config.json that goes with these TrainingArguments (train_batch_size is left to "
                       "the Trainer, which computes it from the GPU count it is launched on):")
            widgets.code_preview(hf_text, language="json")
            st.download_button("Download ds_config.json for the HF Trainer", data=hf_text,
                               file_name="ds_config.json", mime="application/json", key="review_download_hf",
                               icon=":material/download:")
        elif name in LAUNCHER_FILES:
            launcher, own, notes = LAUNCHER_FILES[name]
            if own == final:
                st.caption("This launcher reads the ds_config.json above as it is.")
                continue
            for note in notes:
                st.info(note, icon=":material/info:")
            own_name = export.variant_name("ds_config.json", launcher)
            own_text = core.dump_config(own)
            st.caption(f"The {own_name} the snippet above reads (what changed, and why, is listed above):")
            widgets.code_preview(own_text, language="json")
            st.download_button(f"Download {own_name}", data=own_text, file_name=own_name, mime="application/json",
                               key=f"review_download_{launcher}", icon=":material/download:")

# ------------------------------------------------------------------ share
st.subheader("Share")


st.button("Create a shareable link", key="review_share", icon=":material/link:",
          on_click=lambda: st.session_state.update(review_share_on=True),
          help="Once created, the link is rebuilt from the current state on every change: it always holds what "
               "you see.")
if st.session_state.get("review_share_on"):
    token = app_state.encode_state(app_state.get_config(), app_state.get_context(), app_state.get_baseline())
    base = (st.context.url or "").rstrip("/")
    st.code(f"{base}/?{app_state.SHARE_PARAM}={token}", language=None, wrap_lines=True)
    st.caption(f"{len(token)} characters. Anyone opening it gets a copy of this state in their own session.")
    if len(token) > 8000:
        st.warning("This link is long; some proxies and chat tools cut URLs above about 8,000 characters. "
                   "Share the downloaded file instead if the link does not open.")
frame.end()
