"""Plan: which config is fastest on this cluster, how long training takes and what it costs (``core.perf``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from core import hardware, models
from core.autofill import find_auto
from core.batch import batch_run
from core.effective import effective
from core.launchers import job_world_size
from core.memory import ATTENTION_IMPLS, attention_help
from core.memory.estimate import GIB
from core.memory.result import gib_capacity
from core.perf import NETWORKS, Cluster, advice, batch_split_problem
from core.perf.hardware import CPU_ADAM_PARAMS_PER_S, DEFAULT_NETWORK_GBIT_S, FALLBACK_NETWORK_GBIT_S, Efficiency
from core.perf.recommend import adopt_candidate, adoption_notes, adoption_removals, kept_by_adoption
from core.precision import compute_precision
from core.schema.root import empty_config
from ui import actions, app_state, charts, frame, plan_charts, plan_view, tables, widgets
from ui import memory as ui_memory
from ui import perf as ui_perf

frame.begin("Plan")
_eff, _cpu_adam = Efficiency(), CPU_ADAM_PARAMS_PER_S
_h100, _a100 = (Cluster(g).compute_efficiency for g in ("NVIDIA H100 80GB", "NVIDIA A100 80GB"))
widgets.explain(
    "How the planner works and how far to trust it",
    f"""The planner predicts the time of one optimizer step for every ZeRO stage, offload choice, ZeRO++,
micro-batch / accumulation split and recomputation mode, checks each against the memory model, and ranks
the ones that fit, fastest first.

**What it assumes.** Matrix multiplies run at the slower of a fraction of the GPU's datasheet peak
({_eff.gemm_fraction:.0%} of the best matmul rate measured for that GPU: {_h100:.0%} of peak on an H100,
{_a100:.0%} on an A100) and its memory bandwidth, so small micro-batches and hidden sizes run below peak;
elementwise kernels move each saved activation five times through memory (composite activations such as
GPT-2's `gelu_new` kernel by kernel); collectives are rings bounded by the slower of NVLink and the node's
network at {_eff.link:.0%} of line rate, plus NCCL's per-hop latency; DeepSpeed's overlapped communication hides
behind compute up to {_eff.overlap:.0%}; ZeRO's hooks cost a fixed host time per module and per gradient; the CPU
optimizer (offload) updates {_cpu_adam / 1e9:.1f}e9 parameters per second per node. The exact figures used for
your cluster are under the ranked table. Pipeline parallelism, torch.compile and MoE expert parallelism are not
modelled.

**How far to trust it.** {advice.trust_text()} Use it to choose between configs that differ a lot; measure the
close ones, then calibrate with `dsconfig predict --calibrate-step` or `--log`.""",
    expanded=False,
)

FROM_START = "(the model chosen on Start)"
#: The Global batch widget's largest value (sequences per optimizer step).
MAX_GLOBAL_BATCH = 1_000_000


#: The context values "Use this config" may change, in the words of its message (model: its name).
_CONTEXT_NAMES = {"model": "model", "gpu": "GPU", "gpu_memory_gib": "GPU memory (GiB)", "nodes": "nodes",
                  "gpus_per_node": "GPUs per node", "seq_len": "sequence length", "attention": "attention",
                  "recompute": "recompute"}


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The context values that differ, as "name old → new" (an unset one reads "unset")."""
    def shown(value: Any) -> str:
        return "unset" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    return [f"{name} {shown(before.get(key))} → {shown(after.get(key))}" for key, name in _CONTEXT_NAMES.items()
            if before.get(key) != after.get(key)]


def _config_global_batch(config: Mapping[str, Any], gpus: int, version: str) -> int | None:
    """The config's train_batch_size as DeepSpeed ``version`` runs it on ``gpus`` GPUs, when it resolves to one the
    planner can split over them; else None, and None for the blank start (its micro batch of 1 is nobody's choice)."""
    if config == empty_config():
        return None
    run = batch_run(dict(config), gpus, version)
    if run is None or run[0] > MAX_GLOBAL_BATCH or batch_split_problem(run[0], gpus, at_most=MAX_GLOBAL_BATCH):
        return None
    return run[0]


def _config_key(config: Mapping[str, Any]) -> str | None:
    """The session's config as JSON for the planner's cache key (each row is ranked as loaded into it), None when
    it has no JSON form (the planner's own candidates then)."""
    try:
        return json.dumps(config, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _listed(names: Sequence[str]) -> str:
    """Names in words: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _optimizer_words(adopted: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    """What the message says of the optimizer: nothing when the user's is kept as it was."""
    if adopted.get("optimizer") == before.get("optimizer"):
        return ""
    if find_auto(adopted.get("optimizer")):
        return (', its optimizer (its parameters "auto": the HF Trainer fills them from its TrainingArguments and '
                "refuses a written learning rate other than --learning_rate)")
    return ", its optimizer"


def _trainer_words(row: Any, target: str) -> str:
    """For the HF Trainer, the arguments to run the loaded row with: it compares the written batch keys and
    precision with its TrainingArguments and refuses a run they contradict."""
    if target != "hf":
        return ""
    mode = effective(row["config"]).precision_mode
    flag = f" --{mode}" if mode in ("bf16", "fp16") else ""
    return (f". Run the HF Trainer with --per_device_train_batch_size {row['micro_batch']} "
            f"--gradient_accumulation_steps {row['gradient_accumulation_steps']}{flag}: it refuses a config its "
            "arguments contradict")


def _option(row: Any) -> str:
    """A ranked row's ZeRO option in words: stage, ZeRO++ and what it offloads (its memory lives there)."""
    offloads = [f"{what} offloaded to {str(row[key]).upper() if row[key] == 'cpu' else 'NVMe'}"
                for key, what in (("offload_optimizer", "optimizer"), ("offload_param", "parameters"))
                if row[key] not in (None, "none")]
    return f"ZeRO-{row['stage']}{' + ZeRO++' if row['zeropp'] else ''}" + "".join(f", {o}" for o in offloads)


# Every widget here is an input of the planner only (the config changes through "Use this config" alone), so a
# change reruns this fragment, not the page's headline and sidebar; using a row reruns the whole app.
@st.fragment
def planner() -> None:
    """The planner's inputs, the ranking, "use this config" and the charts."""
    app_state.rerun_app_if_replaced()
    ctx = app_state.get_context()
    names = models.catalog_names()
    # an uploaded config.json, else the Start page's parameter counts (the planner costs them as 6N, and says so)
    start_model = ui_memory.model_for(ctx) if ctx.get("model") not in names else None
    choices = ([FROM_START] if start_model else []) + names
    default = ctx.get("model") if ctx.get("model") in names else "meta-llama/Llama-2-7b-hf"

    # every default below is the value the user left here on the last visit (app_state.kept), else the Start page's
    cols = st.columns(3)
    first_model = 0 if start_model else choices.index(default)
    model_name = cols[0].selectbox("Model", choices, index=app_state.kept_index("plan_model", choices, first_model),
                                   key="plan_model")
    gpus = hardware.gpu_names()
    first_gpu = gpus.index(ctx["gpu"]) if ctx.get("gpu") in gpus else 0
    gpu = cols[1].selectbox("GPU", gpus, index=app_state.kept_index("plan_gpu", gpus, first_gpu), key="plan_gpu")
    if ctx.get("gpu") not in gpus:  # a custom GPU: the planner has no datasheet (speed, links) for it
        memory_gib = ctx.get("gpu_memory_gib")
        size = f", {memory_gib:g} GiB" if isinstance(memory_gib, int | float) else ""
        st.warning(f"The Start page's GPU ({ctx.get('gpu')}{size}) is not in the planner's catalog: it plans for "
                   f"the {gpu} ({gib_capacity(hardware.GPU_BY_NAME[gpu].memory_gib * GIB)} GiB) chosen here. "
                   "Pick the catalog GPU nearest yours; \"Use this config\" sets it on the Start page.",
                   icon=":material/memory:")
    gpus_per_node = cols[2].number_input("GPUs per node", 1, 64,
                                         app_state.kept("plan_gpn", int(ctx.get("gpus_per_node") or 8)), key="plan_gpn")
    cols = st.columns(4)
    nodes = cols[0].number_input("Nodes", 1, 4096, app_state.kept("plan_nodes", int(ctx.get("nodes") or 1)),
                                 key="plan_nodes")
    default_net = DEFAULT_NETWORK_GBIT_S.get(gpu, FALLBACK_NETWORK_GBIT_S)
    network_key, precision_key = f"plan_network_{gpu}", f"plan_precision_{gpu}"
    network = cols[1].number_input("Network per node (Gbit/s, all NICs)", *app_state.CONTEXT_LIMITS["network_gbit_s"],
                                   app_state.kept(network_key,
                                                  ui_perf.network_for({**ctx, "gpu": gpu}) or float(default_net)),
                                   step=100.0, key=network_key,
                                   help="Presets: " + ", ".join(f"{k} = {v:g}" for k, v in NETWORKS.items()))
    # the Start page's kernel, which the headline and the ZeRO page size with
    first_attention = ATTENTION_IMPLS.index(ctx["attention"] if ctx.get("attention") in ATTENTION_IMPLS else "flash")
    attention = cols[2].selectbox("Attention kernel", ATTENTION_IMPLS, key="plan_attention",
                                  index=app_state.kept_index("plan_attention", ATTENTION_IMPLS, first_attention),
                                  help=attention_help("\n\n"))
    precisions = ["bf16", "fp16", "fp32"] if hardware.GPU_BY_NAME[gpu].bf16 else ["fp16", "fp32", "bf16"]
    # the config's precision, as every other input here starts from the session (a blank config's fp32 is no
    # choice: the GPU's 16-bit format); bf16 only where the GPU has it
    written = compute_precision(app_state.get_config(), ui_memory.version_of(ctx))
    supported = written in precisions and (written != "bf16" or hardware.GPU_BY_NAME[gpu].bf16) \
        and app_state.get_config() != empty_config()
    first_precision = precisions.index(written) if supported else 0
    precision = cols[3].selectbox("Precision", precisions, key=precision_key,
                                  index=app_state.kept_index(precision_key, precisions, first_precision),
                                  help="Starts at your config's. The GPUs without bf16 (V100, T4) train in fp16.")
    spec = start_model if model_name == FROM_START else models.get_spec(model_name)
    cols = st.columns(4)
    start_seq = int(ctx.get("seq_len") or 2048)
    # the Start page's length, or the model's learned positions when fewer (as `dsconfig plan` starts)
    first_seq = spec.runnable_sequence(start_seq) if isinstance(spec, models.ModelSpec) else start_seq
    seq_len = cols[0].number_input("Sequence length", 1, 1_048_576, app_state.kept("plan_seq", first_seq),
                                   key="plan_seq",
                                   help=None if first_seq == start_seq else
                                   f"Started at {first_seq:,}: the model learns {first_seq:,} positions, fewer than "
                                   f"the Start page's {start_seq:,} tokens.")
    job_gpus = int(gpus_per_node * nodes)
    config_batch = _config_global_batch(app_state.get_config(), job_gpus, ui_memory.version_of(ctx))
    # the config's own global batch on these GPUs, else the smallest multiple of their count from 256 sequences
    global_batch = cols[1].number_input(
        "Global batch (sequences per step)", 1, MAX_GLOBAL_BATCH,
        app_state.kept("plan_batch", config_batch or -(-256 // job_gpus) * job_gpus), key="plan_batch",
        help=f"Your config's train_batch_size on {job_gpus} GPUs is {config_batch}." if config_batch else
        "Your config's batch does not resolve on these GPUs (or is \"auto\"): started from 256 sequences.")
    tokens = cols[2].number_input("Tokens to train (billions)", 0.0, 1e6, app_state.kept("plan_tokens", 2.0),
                                  key="plan_tokens", help="0 leaves out the hours and cost columns.")
    price = cols[3].number_input("Price per GPU-hour (USD)", 0.0, 1000.0, app_state.kept("plan_price", 2.5),
                                 key="plan_price", help="0 leaves out the cost column (needs the tokens to train).")
    app_state.keep("plan_model", "plan_gpu", "plan_gpn", "plan_nodes", network_key, "plan_attention", precision_key,
                   "plan_seq", "plan_batch", "plan_tokens", "plan_price")

    cluster = Cluster(gpu, int(gpus_per_node), int(nodes), inter_node_gbit_s=float(network),
                      **ui_memory.node_storage(ctx))  # the Start page's: NVMe rows fit only with its NVMe
    # the nearest multiples it offers are ones the widget takes
    if problem := batch_split_problem(int(global_batch), cluster.total_gpus, at_most=MAX_GLOBAL_BATCH):
        st.error(f"A global batch of {global_batch} sequences {problem}.")
        return
    if isinstance(spec, models.ModelSpec) and (problem := spec.sequence_problem(int(seq_len))):
        st.error(problem + ".")
        return

    # The ranking of ~500 candidates, the node sweep and what the page draws of them, once per distinct input (a
    # rerun for any other widget, or a second visit, only sends them): ui.plan_view.
    # each row is the session's config with the candidate loaded into it, as "Use this config" loads it (the user's
    # optimizer, precision sections and other ZeRO keys), read as the session's release
    settings = plan_view.Settings(int(seq_len), int(global_batch), tokens * 1e9 or None, price or None, attention,
                                  precision, _config_key(app_state.get_config()), ctx.get("target", "deepspeed"),
                                  ui_memory.version_of(ctx))
    ranked = plan_view.ranking(spec, cluster, settings)
    st.subheader("Ranked configs")
    storage = ui_memory.node_storage(ctx)
    nvme = f"{storage['nvme_gib']:g} GiB of NVMe" if storage["nvme_gib"] else "no NVMe"
    capacity = gib_capacity(ranked.gpu_memory_gib * GIB)
    st.caption(f"{ranked.fitting} of {ranked.candidates} candidates fit in {capacity} GiB with "
               f"{ranked.memory_headroom:.0%} kept free; offloading ones also need their CPU RAM and NVMe, judged "
               f"against the Start page's {storage['cpu_ram_gib']:g} GiB of CPU RAM and {nvme} per node. Recompute "
               "is the model's gradient checkpointing (set in your training script, not in the ds_config). Each "
               "row is your config with that candidate loaded, as \"Use this config\" loads it (your optimizer and "
               "other ZeRO keys kept, e.g. bucket sizes): `dsconfig plan --base your_config.json` ranks the same.")
    if ranked.table is None:
        st.error("Nothing fits on this cluster: add GPUs or nodes, shorten the sequence, use a smaller model, or give "
                 f"more CPU RAM or NVMe per node on the Start page (now {storage['cpu_ram_gib']:g} GiB and {nvme}) "
                 "for offloading.")
    else:
        shown = ranked.shown
        tables.draw(ranked.table)
        st.caption("Assumed for this cluster: " + advice.assumptions_text(cluster))
        for note in ranked.notes:  # as dsconfig plan prints them (e.g. bf16 emulated on a V100)
            st.caption(f"ℹ️ {note}")
        best = shown.iloc[0]
        decimals = plan_view.step_decimals(shown["step_seconds"])  # as the table shows it (a tiny model's 0.00014)
        st.info(f"**Fastest fitting:** {_option(best)}, micro batch {best['micro_batch']} x "
                f"{best['gradient_accumulation_steps']} accumulation, recompute {best['recompute']}: "
                f"{best['step_seconds']:.{decimals}f} s per step. Bottleneck: {best['bottleneck']}",
                icon=":material/speed:")
        for caveat in ranked.caveats:
            st.warning(caveat, icon=":material/warning:")

        def _use(rank: int) -> None:
            row = shown.iloc[rank - 1]
            actions.remember(f"plan row {rank}")
            old_ctx = dict(ctx)
            job_gpus_before = job_world_size(old_ctx)
            # the network too: the ZeRO page predicts the loaded config on the cluster it was ranked on
            ctx.update(gpu=gpu, gpu_memory_gib=hardware.GPU_BY_NAME[gpu].memory_gib, nodes=int(nodes),
                       network_gbit_s=float(network), network_gpu=gpu,
                       gpus_per_node=int(gpus_per_node), seq_len=int(seq_len), recompute=row["recompute"],
                       attention=attention)
            if model_name != FROM_START:
                ctx.update(model=model_name, total_params=spec.total_params,
                           largest_layer_params=spec.largest_layer_params, model_config=models.get_config(model_name))
            before = app_state.get_config()
            adopted = adopt_candidate(before, row["config"], target=settings.target, version=settings.version)
            kept = kept_by_adoption(before, adopted, row["config"])
            removals = adoption_removals(before, adopted, settings.version, settings.target)
            notes = adoption_notes(before, adopted, settings.version)
            changed = _changes(old_ctx, ctx)
            batch_before = batch_run(dict(before), job_gpus_before, settings.version)
            batch_after = batch_run(dict(adopted), int(gpus_per_node * nodes), settings.version)
            batch_said = (f"; global batch {batch_before[0] if batch_before else 'unresolved'} → {batch_after[0]} "
                          "sequences per step" if batch_after is not None and (
                              batch_before is None or batch_before[0] != batch_after[0]) else "")
            optimizer = _optimizer_words(adopted, before)
            app_state.replace_config(adopted)
            st.session_state["plan_message"] = (
                f"Loaded rank {rank} into the builder ({_option(row)}, micro batch {row['micro_batch']}): its "
                f"batch size, precision and ZeRO stage, offload and ZeRO++{optimizer}{batch_said}"
                + (f"; your {', '.join(kept[:6])}{' and more' if len(kept) > 6 else ''} kept" if kept else "")
                + "".join(f"; your {_listed(paths)} removed ({why})" for paths, why in removals)
                + "".join(f"; {note}" for note in notes)
                + (f". Start page changed to the plan's: {', '.join(changed)}" if changed else "")
                + _trainer_words(row, settings.target)
                + ". Review & export has the file.")

        cols = st.columns([1, 3])
        rank = cols[0].selectbox("Row", list(range(1, len(shown) + 1)), key="plan_row")
        cols[1].button("Use this config", type="primary", key="plan_use", on_click=_use, args=(rank,),
                       icon=":material/input:")
        if st.session_state.get("plan_message"):
            st.success(st.session_state["plan_message"], icon=":material/check:")
            actions.undo_button("plan")
        # drawn only while open: the JSON viewer is one of the page's heaviest elements in the browser
        with st.expander("Its ds_config", icon=":material/data_object:", key="plan_config_box",
                         on_change="rerun") as config_box:
            if config_box.open:
                st.json(shown.iloc[rank - 1]["config"])

        # ---- charts
        st.subheader("Where the time goes")
        charts.draw(plan_charts.breakdown, {"parts": ranked.parts})

    st.subheader("Speed against memory")
    # drawn on demand: one of every candidate is the page's costliest element in the browser (~110 ms of a switch's
    # ~550 ms main-thread time, BENCHMARKS.md issue 15), and the table above ranks the ones that fit
    with charts.on_demand(f"Chart of all {ranked.candidates} candidates: tokens per second against GPU memory, "
                          "fitting or not", key="plan_speed_chart") as speed_chart_open:
        if speed_chart_open:
            charts.draw(plan_charts.speed_memory, {"candidates": ranked.speed_memory, "limit": ranked.limit})
            st.caption(f"Dashed line: {gib_capacity(ranked.usable_gib * GIB)} GiB, the GPU memory "
                       f"a config may use ({ranked.memory_headroom:.0%} kept free). A point left of it that does not "
                       "fit is short of CPU RAM or NVMe for its offload.")

    st.subheader(f"Time and cost against the GPU count ({int(gpus_per_node)} per node)")
    sweep = plan_view.node_sweep(spec, cluster, settings, tuple(sorted({1, 2, 4, 8, 16, 32, int(nodes)})))
    left_out = (f" Left out: {', '.join(map(str, sweep.skipped))} GPUs, which do not divide the global batch of "
                f"{global_batch}." if sweep.skipped else "")
    floor = ("" if sweep.memory_min_gpus is None else
             f" The memory floor (ZeRO-3, micro batch 1, full recomputation, the offload that needs fewest) is "
             f"{sweep.memory_min_gpus} GPUs.")
    if sweep.rows is None:
        st.caption(("Give the tokens to train to see time and cost against the GPU count." if sweep.any_fits
                    else "No GPU count tried in the sweep fits.") + left_out + floor)
    else:
        charts.draw(plan_charts.time_and_cost, {"sweep": sweep.rows})
        st.caption(f"Smallest cluster in the sweep where something fits: {sweep.min_gpus} GPUs." + left_out)


planner()
frame.end()
