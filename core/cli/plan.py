"""``dsconfig plan`` (rank configs by predicted speed) and ``dsconfig predict`` (one config's step-time breakdown).

dsconfig plan --model meta-llama/Llama-2-7b-hf --gpu "NVIDIA H100 80GB" --nodes 2 --network 3200 \\
    --seq-len 4096 --global-batch 256 --tokens 2e9 --price 2.5
dsconfig predict ds_config.json --model meta-llama/Llama-2-7b-hf --gpu "NVIDIA A100 80GB" --nodes 2 \\
    --seq-len 4096 [--micro-batch 2 (a config whose micro batch is "auto" or unsaid)] \\
    [--calibrate-step 1.9 | --log train.log]

Predictions come from an analytical model (core/perf): trust them to about 20-30% for large dense models, less
for small models and unusual setups; calibrate with one measured step for better figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from core import models
from core.batch import BATCH_KEYS, TB, run_or_written
from core.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    FORMAT_HELP,
    MAX_CPU_ADAM_PARAMS_PER_S,
    MAX_NETWORK_GBIT_S,
    MAX_NVME_GBYTE_S,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_TOKENS,
    RECOMPUTE_HELP,
    SEQ_LEN_HELP,
    UsageError,
    attention_flag_help,
    catalog_gpu,
    catalog_model,
    config_micro_batch,
    default_seq_len,
    gib,
    gib_or_zero,
    gpu_count,
    guarded,
    hf_batch,
    hf_config_model,
    json_errors,
    json_report,
    micro_batch_when_unsaid,
    one_stdin_reader,
    positive,
    positive_int,
    read_sizing_config,
    read_stdin,
    refused_caveat,
    seq_len,
    sized_batch,
)
from core.cli.estimate import add_release_flag
from core.fit import fit_numbers, short_of
from core.hardware import DEFAULT_CPU_RAM_GIB, GPU_BY_NAME, gpu_names
from core.io import MAX_LOG_BYTES, decode_log, read_log_tail
from core.memory import ATTENTION_IMPLS, GIB, RECOMPUTE_MODES, Shape
from core.memory import estimate as memory_estimate
from core.memory.result import gib_used
from core.perf import (
    NETWORKS,
    CalibrationError,
    Cluster,
    PlanInputError,
    calibrate,
    gpu_sweep,
    parse_log,
    predict,
    recommend,
    step_seconds_from_log,
    step_source,
)
from core.perf.advice import COMPACT_FROM, decimals_for, percent_text, seconds_text, share_text
from core.perf.calibrate import rates_used
from core.perf.hardware import CPU_ADAM_PARAMS_PER_S, DEFAULT_NETWORK_GBIT_S, NVME_GBYTE_S_DEFAULT
from core.perf.recommend import (
    DEFAULT_MEMORY_HEADROOM,
    adoption_notes,
    adoption_removals,
    hardware_for,
    margin_caveat,
    usable_gpu_bytes,
)
from core.versions import resolve_version

#: The core planner's parameters (``PlanInputError.parameter`` of recommend and calibrate) as the flags of plan and
#: predict that give them: a refused input is named by its flag.
FLAGS = {"seq_len": "--seq-len", "global_batch": "--global-batch", "precision": "--precision", "tokens": "--tokens",
         "price_per_gpu_hour": "--price", "measured_step_seconds": "--calibrate-step"}


def _flag_named(refusal: PlanInputError) -> str:
    """A planner refusal as the user gave its input: by the flag, or core's own words for a parameter no flag
    gives."""
    flag = FLAGS.get(refusal.parameter)
    return refusal.said_as(flag) if flag else str(refusal)


def network_gbit(text: str) -> float:
    """argparse type: --network, Gbit/s per node: a number, or a preset of ``core.perf.NETWORKS`` by its name or
    a part of it that only presets of one speed have, any case (``"DGX H100"``, ``"EFA p5"``, ``ndr``)."""
    try:
        float(text)
    except ValueError:
        wanted = " ".join(text.split()).lower()
        matches = {name: gbit for name, gbit in NETWORKS.items() if wanted and wanted in name.lower()}
        if len(set(matches.values())) == 1:
            return next(iter(matches.values()))
        hint = (f"it matches {', '.join(matches)}" if matches else
                f"presets: {', '.join(NETWORKS)}")
        raise argparse.ArgumentTypeError(f"{text!r} is neither Gbit/s per node (e.g. 3200) nor one network preset "
                                         f"({hint})") from None
    return positive(float, at_most=MAX_NETWORK_GBIT_S)(text)


def _common(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("model (one of)")
    src.add_argument("--model", metavar="NAME", help="a catalog model name (dsconfig estimate --list-models)")
    src.add_argument("--hf-config", type=Path, metavar="FILE", help="a Hugging Face config.json")
    hw = p.add_argument_group("cluster")
    hw.add_argument("--gpu", required=True, metavar="NAME", type=catalog_gpu,
                    help=f"one of: {', '.join(gpu_names())} (a part only one has is enough, e.g. H100)")
    hw.add_argument("--gpus-per-node", type=gpu_count, default=8, metavar="N",
                    help="GPUs per node (default %(default)s)")
    hw.add_argument("--nodes", type=gpu_count, default=1, metavar="N", help="nodes (default %(default)s)")
    hw.add_argument("--network", type=network_gbit, metavar="GBIT",
                    help="inter-node Gbit/s per node, all NICs together, e.g. 3200, or a preset by its name or a "
                    "part only it has (e.g. \"DGX H100\"): "
                    + ", ".join(f"{k} = {v:g}" for k, v in NETWORKS.items())
                    + " (default: the GPU's reference system)")
    hw.add_argument("--cpu-adam", type=positive(float, at_most=MAX_CPU_ADAM_PARAMS_PER_S), metavar="PARAMS_PER_S",
                    help="CPU optimizer updates per second per node, for optimizer offload (default "
                    f"{CPU_ADAM_PARAMS_PER_S:.3g}".replace("e+0", "e") + ")")
    hw.add_argument("--nvme-bandwidth", type=positive(float, at_most=MAX_NVME_GBYTE_S), metavar="GB_S",
                    help=f"NVMe GB/s per node, for NVMe offload (default {NVME_GBYTE_S_DEFAULT:g})")
    hw.add_argument("--nvme", type=gib_or_zero, default=0, metavar="GIB",
                    help="NVMe capacity per node in GiB (default 0: none, so NVMe offload does not fit; as fit)")
    hw.add_argument("--cpu-ram", type=gib, metavar="GIB",
                    help=f"CPU RAM per node in GiB (default {DEFAULT_CPU_RAM_GIB:g})")
    p.add_argument("--seq-len", type=seq_len, default=None, metavar="TOKENS", help=SEQ_LEN_HELP)
    p.add_argument("--attention", choices=ATTENTION_IMPLS, default="flash", help=attention_flag_help())
    p.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``plan`` and ``predict``; handlers are stored as ``handler`` (they return the exit code)."""
    p = subparsers.add_parser("plan", help="rank ZeRO/offload/batch choices by predicted speed on a cluster",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p)
    p.add_argument("--global-batch", type=positive_int, required=True, metavar="SEQUENCES",
                   help="sequences per optimizer step, all GPUs together (a multiple of the GPU count)")
    p.add_argument("--precision", choices=("bf16", "fp16", "fp32"),
                   help="default: bf16, or fp16 on GPUs without bf16 (V100, T4)")
    p.add_argument("--tokens", type=positive(float, at_most=MAX_TOKENS), metavar="TOKENS",
                   help="tokens to train, e.g. 2e9 (adds the hours each row takes for them)")
    p.add_argument("--price", type=positive(float, at_most=MAX_PRICE_PER_GPU_HOUR), metavar="USD",
                   help="price per GPU-hour (with --tokens: adds the cost of training them)")
    p.add_argument("--top", type=positive_int, default=15, metavar="N", help="rows to print (default %(default)s)")
    p.add_argument("--sweep", action="store_true", help="also print time and cost against the node count")
    p.add_argument("--base", type=Path, metavar="FILE",
                   help="a DeepSpeed config each candidate is loaded into and ranked as (its optimizer, precision "
                   "sections and other ZeRO keys kept, as the app's Plan page does with the session's config)")
    add_release_flag(p, "read each candidate as")
    p.set_defaults(handler=run_plan)

    p = subparsers.add_parser("predict", help="predict one config's step time, throughput and bottleneck",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", type=Path, metavar="CONFIG", help="ds_config.json")
    _common(p)
    p.add_argument("--micro-batch", type=positive_int, metavar="N",
                   help='the micro batch when the config says "auto" or nothing (default: the config\'s, as fit reads '
                        "it); refused when the config writes another")
    p.add_argument("--gradient-accumulation-steps", type=positive_int, metavar="N",
                   help='the HF Trainer\'s --gradient_accumulation_steps: fills "auto" batch keys as the Trainer '
                        "does (refused when the config writes values that disagree)")
    p.add_argument("--recompute", choices=RECOMPUTE_MODES, default="none", help=RECOMPUTE_HELP)
    add_release_flag(p)
    cal = p.add_mutually_exclusive_group()
    cal.add_argument("--calibrate-step", type=positive(float), metavar="SECONDS",
                     help="a measured optimizer-step time in seconds: fit the model's constants to it first")
    cal.add_argument("--log", type=Path, metavar="FILE",
                     help="a DeepSpeed training log to read the step time from (- for stdin)")
    p.set_defaults(handler=run_predict)


def _model(args: argparse.Namespace) -> models.ModelSpec:
    if (args.model is None) == (args.hf_config is None):
        raise UsageError("give exactly one of --model or --hf-config")
    if args.model is not None:
        return catalog_model(args.model)
    return hf_config_model(args.hf_config, "give a catalog model with --model instead (dsconfig estimate "
                                           "--list-models)")


def _cluster(args: argparse.Namespace) -> Cluster:
    return Cluster(args.gpu, args.gpus_per_node, args.nodes, inter_node_gbit_s=args.network,
                   nvme_gbyte_s=args.nvme_bandwidth, cpu_adam_params_per_s=args.cpu_adam,
                   cpu_ram_gib=None if args.cpu_ram is None else args.cpu_ram / GIB, nvme_gib=args.nvme / GIB)


def _model_notes(spec: models.ModelSpec) -> list[str]:
    """What the model's sizes assumed (a config.json that leaves sizes out), as estimate says it."""
    return [spec.defaulted_note] if isinstance(spec, models.ModelSpec) and spec.defaulted_note else []


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows for JSON: pandas stores a missing number (a sweep size where nothing fits) as NaN, which
    is not JSON; it is null here."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")


def _number_text(value: float, decimals: int, grouped: bool = False) -> str:
    """``value`` with ``decimals`` (thousands grouped when ``grouped``), or as ``3.1e+17`` where that would be
    beyond ``COMPACT_FROM`` or read 0."""
    if value and (abs(value) >= COMPACT_FROM or round(value, decimals) == 0):
        return f"{value:.3g}"
    return f"{value:{',' if grouped else ''}.{decimals}f}"


def _sweep_text(sweep: pd.DataFrame) -> str:
    """The sweep as a text table formatted as the ranked one (times with their unit, yes/no, the same decimals,
    units in the headers), "-" where nothing fits at a size."""
    columns = ["nodes", "GPUs", "fits", "stage", "offload(opt/param)", "zero++", "micro", "recompute", "step",
               "tok/s", "TFLOPs/GPU"]
    hours_decimals = decimals_for(sweep["hours"].dropna(), 1) if "hours" in sweep else 0
    cost_decimals = decimals_for(sweep["cost"].dropna(), 0) if "cost" in sweep else 0
    columns += ["hours"] * ("hours" in sweep) + ["cost USD"] * ("cost" in sweep)
    rows = []
    for row in sweep.itertuples():
        cells = [str(row.nodes), str(row.total_gpus), "yes" if row.fits else "NO"]
        if not row.fits:
            rows.append(cells + ["-"] * (len(columns) - len(cells)))
            continue
        cells += [str(int(row.stage)), f"{row.offload_optimizer}/{row.offload_param}", "yes" if row.zeropp else "no",
                  str(int(row.micro_batch)), row.recompute, seconds_text(row.step_seconds),
                  _number_text(row.tokens_per_second, 0), _number_text(row.tflops_per_gpu, 1)]
        if "hours" in sweep:
            cells.append(_number_text(row.hours, hours_decimals))
        if "cost" in sweep:
            cells.append(_number_text(row.cost, cost_decimals, grouped=True))
        rows.append(cells)
    widths = [max(len(text) for text in column) for column in zip(columns, *rows, strict=True)]
    return "\n".join(" ".join(f"{text:>{width}}" for text, width in zip(line, widths, strict=True))
                     for line in [columns, *rows])


def _plan(args: argparse.Namespace, out: TextIO) -> int:
    if args.price is not None and args.tokens is None:  # a cost per step or per hour would be another column
        raise UsageError(f"--price {args.price:g} needs --tokens: the cost is that of training --tokens tokens "
                         "(e.g. --tokens 2e9)")
    one_stdin_reader({"--hf-config": args.hf_config, "--base": args.base})
    base = None if args.base is None else read_sizing_config(args.base, "plan", "--base")
    spec, cluster = _model(args), _cluster(args)
    default_seq_len(args, spec)
    version = resolve_version(args.deepspeed_version)
    args.precision = args.precision or ("bf16" if GPU_BY_NAME[cluster.gpu].bf16 else "fp16")
    try:
        table = recommend(spec, cluster, seq_len=args.seq_len, global_batch=args.global_batch,
                          precision=args.precision, tokens=args.tokens, price_per_gpu_hour=args.price,
                          attention=args.attention, base=base, version=version)
        sweep = gpu_sweep(spec, cluster, seq_len=args.seq_len, global_batch=args.global_batch, tokens=args.tokens,
                          price_per_gpu_hour=args.price, precision=args.precision,
                          attention=args.attention, base=base, version=version) if args.sweep else None
    except PlanInputError as exc:  # recommend names its parameters (global_batch): here they are the flags
        raise UsageError(_flag_named(exc)) from None
    table.attrs["notes"] = [*_model_notes(spec), *_base_notes(args.base, base, table, version, args.top),
                            *table.attrs["notes"]]
    verdict = EXIT_OK if table["fits"].any() else EXIT_ERRORS  # 1: nothing fits on the cluster asked about
    if args.format == "json":
        rows = _records(table.drop(columns=["breakdown"]).head(args.top))
        data: dict[str, Any] = {"model": spec.name, "cluster": cluster.described(), "deepspeed_version": version,
                                "base": None if args.base is None else str(args.base), "assumptions": table.attrs,
                                "candidates": len(table), "fitting": int(table["fits"].sum()), "rows": rows}
        if sweep is not None:
            data["gpu_sweep"] = _records(sweep)
            data["min_gpus"] = sweep.attrs.get("min_gpus")
            data["memory_min_gpus"] = sweep.attrs.get("memory_min_gpus")
            data["gpu_sweep_skipped"] = sweep.attrs["skipped"]
        out.write(json_report(data))
        return verdict
    out.write(f"{spec.name} on {cluster.nodes} x {cluster.gpus_per_node} {cluster.gpu} "
              f"({_network_text(args, cluster)}; {_node_storage(cluster)} each), seq "
              f"{args.seq_len}, global batch {args.global_batch}, {args.precision}, {args.attention} attention, "
              f"{'loaded into --base ' + str(args.base) + ', ' if args.base is not None else ''}"
              f"read as DeepSpeed {version}\n")
    out.write(f"{int(table['fits'].sum())} of {len(table)} candidates fit; fastest first.\n")
    out.write(f"{table.attrs['fits_rule']}.\n")
    if args.tokens is not None:
        out.write(f"hours: {args.tokens:g} tokens to train at the row's tok/s"
                  + (f"; cost: hours x {cluster.total_gpus} GPUs x {args.price:g} USD per GPU-hour"
                     if args.price is not None else "") + "\n")
    out.write("\n")
    shown = table.head(args.top)
    hours_decimals = decimals_for(shown["hours"], 1) if "hours" in table else 0
    cost_decimals = decimals_for(shown["cost"], 0) if "cost" in table else 0
    hours_width, cost_width = max(6, hours_decimals + 5), max(8, cost_decimals + 6)
    extra = f" {'hours':>{hours_width}}" if "hours" in table else ""
    extra += f" {'cost':>{cost_width}}" if "cost" in table else ""
    out.write(f"{'#':>3} stage offload(opt/param) zero++ micro accum recompute  fits  GiB/GPU       step  tok/s     "
              f"TFLOPs  MFU{extra}\n")
    usable = table.attrs["usable_gpu_memory_gib"] * GIB  # each peak shown on its side of the rule's limit
    for i, row in enumerate(shown.itertuples(), 1):
        offload = f"{row.offload_optimizer}/{row.offload_param}"
        line = (f"{i:>3} {row.stage:>5} {offload:>18} {'yes' if row.zeropp else 'no':>6} "
                f"{row.micro_batch:>5} {row.gradient_accumulation_steps:>5} {row.recompute:>9} "
                f"{'yes' if row.fits else 'NO':>5} {gib_used(row.gpu_peak_gib * GIB, usable):>8} "
                f"{seconds_text(row.step_seconds):>10} "
                f"{_number_text(row.tokens_per_second, 0):>9} {_number_text(row.tflops_per_gpu, 1):>7} "
                f"{percent_text(row.mfu):>4}")
        if "hours" in table:
            line += f" {_number_text(row.hours, hours_decimals):>{hours_width}}"
        if "cost" in table:
            line += f" {_number_text(row.cost, cost_decimals, grouped=True):>{cost_width}}"
        out.write(line + "\n")
    best = table.iloc[0]
    if best["fits"]:
        out.write(f"\nBest: {best['bottleneck']}\n")
        out.write("Its ds_config (dsconfig plan --format json prints every row's):\n")
        out.write(json.dumps(best["config"], indent=2) + "\n")
    else:
        out.write(f"\nNothing fits on {cluster.total_gpus} GPUs with {_node_storage(cluster)} per node (the "
                  "offloading candidates above count them): add nodes (--nodes), "
                  "shorten the sequence (--seq-len), or give the nodes' real CPU RAM (--cpu-ram GIB) and NVMe "
                  "(--nvme GIB), which the CPU and NVMe offload candidates need.\n")
    if sweep is not None:
        out.write("\nTime and cost against the node count (best fitting config each):\n")
        out.write(_sweep_text(sweep) + "\n")
        if skipped := sweep.attrs["skipped"]:
            nodes = [s["nodes"] for s in skipped]
            out.write(f"Left out: {', '.join(map(str, nodes))} node{'' if nodes == [1] else 's'} "
                      f"({', '.join(str(s['total_gpus']) for s in skipped)} GPUs): their GPU count does not divide "
                      f"the global batch of {args.global_batch}\n")
        smallest, floor = sweep.attrs.get("min_gpus"), sweep.attrs.get("memory_min_gpus")
        out.write((f"Smallest fitting cluster in the sweep: {smallest} GPUs" if smallest is not None
                   else "Nothing fits at any size in the sweep")
                  + " (memory floor with ZeRO-3, micro batch 1, full recompute and the offload that needs fewest, "
                  + f"at most {1 - sweep.attrs['memory_headroom']:.0%} of GPU memory as above: "
                  + (f"{_gpus_in_nodes(floor, cluster.gpus_per_node)})\n" if floor is not None
                     else "no GPU count fits, up to 1,024 nodes)\n"))
    for caveat in table.attrs["caveats"]:
        out.write(f"caveat (fastest fitting config): {caveat}\n")
    for note in table.attrs["notes"]:
        out.write(f"note: {note}\n")
    out.write("\nPredictions are analytical (core/perf); see README 'Planner' for what they assume.\n")
    return verdict


def _base_notes(path: Path | None, base: dict[str, Any] | None, table: pd.DataFrame, version: str,
                shown: int) -> list[str]:
    """What loading the candidates into --base took out of it and why, and what it added or changed (an NVMe
    placeholder path, zero_allow_untested_optimizer, sub_group_size), as the app's Plan page says it after "Use
    this config" (``adoption_removals``, ``adoption_notes``): over the ``shown`` rows printed, since some apply to
    some rows only (master weights a row without CPU offload cannot keep, paths of NVMe rows)."""
    if table.empty:
        return []
    rows = list(table["config"].head(shown))
    removed: dict[tuple[tuple[str, ...], str], int] = {}
    changed: dict[str, int] = {}
    for config in rows:
        for group in (adoption_removals(base, config, version) if base is not None else ()):
            removed[group] = removed.get(group, 0) + 1  # (paths, why): a reason per ZeRO stage, say
        for note in adoption_notes(base or {}, config, version):
            changed[note] = changed.get(note, 0) + 1

    def rows_said(n: int) -> str:
        return "every candidate shown" if n == len(rows) else f"{n} of the {len(rows)} candidates shown"

    given = f"--base {path}" if base is not None else "the candidates' configs"
    return [*(f"{given}: {', '.join(paths)} taken out of {rows_said(n)}: {why}" for (paths, why), n in removed.items()),
            *(f"{given}: {note} ({rows_said(n)})" for note, n in changed.items())]


def _gpus_in_nodes(gpus: int, per_node: int) -> str:
    """A GPU count, and the whole nodes of ``per_node`` it takes when it is not a whole number of them ("36 GPUs,
    5 nodes of 8": the memory floor counts GPUs, a cluster is rented by the node)."""
    nodes = -(-gpus // per_node)
    whole = "" if gpus % per_node == 0 else f", {nodes} node{'s' if nodes != 1 else ''} of {per_node}"
    return f"{gpus} GPU{'s' if gpus != 1 else ''}{whole}"


def _network_text(args: argparse.Namespace, cluster: Cluster) -> str:
    """The network between nodes as the prediction assumed it, and, when --network was not given, where the
    figure comes from (the GPU's reference system, or one 100G NIC for PCIe-card servers) and how to change it."""
    gbit = f"{cluster.resolved()['inter_node_gbit_s']:g} Gbit/s per node"
    if args.network is not None:
        return gbit
    source = ("the GPU's reference system" if cluster.gpu in DEFAULT_NETWORK_GBIT_S
              else "one NIC, as in PCIe-card servers")
    return f"{gbit}, {source}: --network to change"


def _node_storage(cluster: Cluster) -> str:
    """A node's CPU RAM and NVMe as the memory check counts them, in words ("512 GiB of CPU RAM and no NVMe")."""
    node = hardware_for(cluster)
    nvme = ("no NVMe" if node.nvme_bytes_per_node == 0 else "NVMe of unlimited size"
            if node.nvme_bytes_per_node is None else f"{node.nvme_bytes_per_node / GIB:g} GiB of NVMe")
    return f"{node.cpu_ram_per_node_bytes / GIB:g} GiB of CPU RAM and {nvme}"


def _predict(args: argparse.Namespace, out: TextIO) -> int:
    one_stdin_reader({"CONFIG": args.config, "--hf-config": args.hf_config, "--log": args.log})
    config = written = read_sizing_config(args.config, "predict")
    spec, cluster = _model(args), _cluster(args)
    default_seq_len(args, spec)
    version = resolve_version(args.deepspeed_version)
    # the micro batch the config runs with, read as fit reads it: batch keys DeepSpeed refuses are an error unless
    # --micro-batch replaces them, and a --micro-batch contradicting written keys is refused (with
    # --gradient-accumulation-steps the HF Trainer's own comparison below names the clash)
    resolved = config_micro_batch(config, cluster.total_gpus, args.micro_batch, version,
                                  override=args.gradient_accumulation_steps is not None)
    micro, micro_assumed = args.micro_batch or resolved, None
    if micro is None:  # "auto" or not set: assumed as fit, estimate and the app assume it, and said
        micro, micro_assumed = micro_batch_when_unsaid(config, cluster.total_gpus, version,
                                                          args.gradient_accumulation_steps)
    if args.gradient_accumulation_steps is not None:  # on the written keys, as fit: a clash names only those
        config = hf_batch(config, micro, args.gradient_accumulation_steps, cluster.total_gpus, version)
    config, resized = sized_batch(config, cluster.total_gpus, args.micro_batch, version)
    shape = Shape(micro, args.seq_len, args.attention, args.recompute)
    measured = args.calibrate_step
    measured_from = "given with --calibrate-step" if measured is not None else None
    if args.log is not None:
        text, cut = _read_log(args.log)
        if cut:
            sys.stderr.write(f"dsconfig predict: --log {args.log}: {cut}\n")
        # the throughput timer's samples are the logged run's train_batch_size (its config printout), else this
        # config's on this cluster, written or derived
        summary, ours = parse_log(text), run_or_written(config, cluster.total_gpus, version, TB)
        logged_batch, logged_world = (summary.logged_config.get(k) for k in ("train_batch_size", "world_size"))
        global_batch = logged_batch or ours
        if (logged_world is not None and logged_world != cluster.total_gpus) or \
                (logged_batch is not None and ours is not None and logged_batch != ours):
            sys.stderr.write(f"dsconfig predict: warning: --log {args.log}: the logged run trained train_batch_size "
                             f"{logged_batch if logged_batch is not None else '(not printed)'} on "
                             f"{logged_world if logged_world is not None else '(not printed)'} GPU(s); this prediction "
                             f"is for {ours if ours is not None else 'a batch the config does not fix'} on "
                             f"{cluster.total_gpus}: its step time is that run's, so calibrate with a log of the "
                             "same cluster and batch.\n")
        try:
            measured = step_seconds_from_log(summary, global_batch)
            source = step_source(summary, global_batch, "the logged run's train_batch_size" if logged_batch
                                 else "this config's train_batch_size")
            measured_from = f"read from --log {args.log}, {source}" if source else None
        except ValueError as exc:  # core words it without the flags: here the measured step is --calibrate-step
            raise UsageError(f"--log {args.log}: {str(exc).rstrip('.')}, with --calibrate-step SECONDS.") from None
        if measured is None and summary.samples_per_second and global_batch is None:
            raise UsageError(f"--log {args.log}: the log has the throughput timer's samples/s (CurrSamplesPerSec) "
                             "but no step times, and samples/s become a step time only with the global batch, "
                             f"which {_unsaid_batch(config, cluster.total_gpus)}; or give the measured step time "
                             "with --calibrate-step SECONDS")
        if measured is None:
            raise UsageError(f"--log {args.log}: no step times found (enable wall_clock_breakdown, or the "
                              "throughput timer with a batch that resolves on this cluster). DeepSpeed 0.17 and later "
                              "log at WARNING by default and write the throughput timer (and, in 0.17, the "
                              "wall-clock timers) at INFO: raise its logger before training "
                              "(deepspeed.utils.logger.setLevel(logging.INFO))")
    before = predict(config, spec, cluster, shape, version=version)
    refused = None
    if measured is not None:
        try:
            cluster = calibrate(config, spec, cluster, shape, measured_step_seconds=measured, version=version)
        except CalibrationError as exc:
            refused = _measured_named(exc, measured, args)
            sys.stderr.write(f"dsconfig predict: warning: not calibrated, {refused}; the prediction below is "
                             "uncalibrated.\n")
    est = predict(config, spec, cluster, shape, version=version)
    # a step time for a config that cannot run says so, as fit and estimate do for the same input
    mem = memory_estimate(config, spec, hardware_for(cluster), shape, allowances=cluster.memory_allowances,
                          version=version)
    caveats = list(est.caveats)
    caveats[:0] = [said for said in (resized, micro_assumed) if said]
    # the verdict is fit's and estimate's (the whole GPU); where plan's margin would tell it otherwise, that is said
    usable = usable_gpu_bytes(mem.hardware)
    if not mem.fits:  # the app's headline words it the same way (core.fit.fit_numbers)
        caveats.insert(0, f"does not fit ({', '.join(short_of(mem))}): {fit_numbers(mem)}; the step time assumes "
                          "it runs (dsconfig fit lists ways to make it fit)")
    elif (tight := margin_caveat(mem, "dsconfig plan")) is not None:
        caveats.insert(0, tight)
    refusal = refused_caveat(written, cluster.total_gpus, version)
    if refusal:  # first: a config that cannot start makes every other number moot
        caveats.insert(0, refusal)
    notes = [*_model_notes(spec), *est.notes]
    uses = rates_used(config, spec, cluster, shape, version) if measured is not None else {}
    if args.format == "json":
        data = {"model": spec.name, "deepspeed_version": version, **est.to_dict(), "caveats": caveats, "notes": notes,
                "memory": {"fits": mem.fits, "short": list(short_of(mem)), "gpu_bytes": mem.gpu_bytes,
                           "gpu_memory_bytes": mem.hardware.gpu_memory_bytes,
                           "fits_with_plan_margin": mem.fits and mem.gpu_bytes <= usable,
                           "plan_memory_headroom": DEFAULT_MEMORY_HEADROOM,
                           "cpu_bytes_per_node": mem.cpu_bytes_per_node, "nvme_bytes_per_node": mem.nvme_bytes_per_node,
                           "assumptions": mem.assumptions}}
        if measured is not None:
            data["calibration"] = {"measured_step_seconds": measured, "measured_from": measured_from,
                                   "uncalibrated_step_seconds": before.step_seconds,
                                   "efficiency": cluster.efficiency.__dict__,
                                   "cpu_adam_params_per_s": cluster.cpu_adam_rate, "reached": refused is None,
                                   "step_uses": uses,
                                   **({"refused": refused} if refused else {})}
        out.write(json_report(data))
        return EXIT_OK
    out.write(f"{spec.name} on {cluster.nodes} x {cluster.gpus_per_node} {cluster.gpu} "
              f"({_network_text(args, cluster)}); micro batch {micro} x "
              f"{est.gradient_accumulation_steps} accumulation, seq {args.seq_len}, {args.attention} attention, "
              f"recompute {args.recompute}, read as DeepSpeed {version}\n")
    out.write(f"step: {seconds_text(est.step_seconds)}   tokens/s: {_number_text(est.tokens_per_second, 0, True)}   "
              f"TFLOPs/GPU: {_number_text(est.tflops_per_gpu, 1)} (hardware "
              f"{_number_text(est.hardware_tflops_per_gpu, 1)})   MFU: {percent_text(est.mfu)}\n")
    if measured is not None and refused is None:
        fitted = [f"compute efficiency {cluster.efficiency.compute:.2f}"]
        if uses["link"]:
            fitted.append(f"link efficiency {cluster.efficiency.link:.2f}")
        if uses["cpu_adam"]:
            fitted.append(f"CPU-Adam {cluster.cpu_adam_rate:.3g} parameters/s per node")
        unused = [what for key, what in (("link", "link efficiency"), ("cpu_adam", "CPU-Adam rate")) if not uses[key]]
        out.write(f"calibrated to a measured {seconds_text(measured)} ({measured_from}; uncalibrated prediction "
                  f"{seconds_text(before.step_seconds)}): {', '.join(fitted)}"
                  + (f" ({' and '.join(unused)} not fitted: this config's step does not depend on "
                     f"{'it' if len(unused) == 1 else 'them'})" if unused else "")
                  + "\n")
    out.write("\nCritical path:\n")
    width = max((len(name) for name in (*est.breakdown, *est.hidden)), default=0)  # a long part name keeps its row
    for name, sec in sorted(est.breakdown.items(), key=lambda kv: -kv[1]):
        out.write(f"  {name:{max(58, width)}s} {seconds_text(sec):>10}  {share_text(sec, est.step_seconds):>5}\n")
    if est.hidden:
        out.write("Hidden behind compute:\n")
        for name, sec in est.hidden.items():
            out.write(f"  {name:{max(58, width)}s} {seconds_text(sec):>10}\n")
    out.write(f"\nBottleneck: {est.bottleneck}\n")
    for caveat in caveats:
        out.write(f"caveat: {caveat}\n")
    for note in notes:
        out.write(f"note: {note}\n")
    return EXIT_OK


def _read_log(path: Path) -> tuple[str, str | None]:
    """--log's text (``-``: standard input, its first ``MAX_LOG_BYTES`` as of any stream) and a note when cut."""
    if str(path) != "-":
        try:
            return read_log_tail(path)
        except OSError as exc:
            raise UsageError(f"--log {path}: cannot read it ({exc.strerror or exc})") from None
    data = read_stdin(MAX_LOG_BYTES + 1, "--log -", "the log")
    cut = f"read the first {MAX_LOG_BYTES // 2**20} MiB only (a stream)" if len(data) > MAX_LOG_BYTES else None
    if isinstance(data, str):
        return data[:MAX_LOG_BYTES], cut
    text, how = decode_log(data[:MAX_LOG_BYTES])  # as a file is read: UTF-16 from PowerShell, binary named
    return text, "; ".join(note for note in (cut, how) if note) or None


def _unsaid_batch(config: dict[str, Any], gpus: int) -> str:
    """Why ``config`` gives no global batch on ``gpus`` GPUs, and the flags or keys that give it."""
    if "auto" in (config.get(key) for key in BATCH_KEYS):
        return ('the config leaves to the HF Trainer ("auto"): pass the run\'s --micro-batch N and '
                "--gradient-accumulation-steps N, which fill it as the Trainer does")
    return (f"the config does not give on {gpus} GPUs: write the run's train_batch_size (or "
            "train_micro_batch_size_per_gpu and gradient_accumulation_steps) in it")


def _measured_named(refusal: CalibrationError, measured: float, args: argparse.Namespace) -> str:
    """A calibration's refusal with the measured step named as the user gave it (the flag, or the log it was read
    from) instead of calibrate's parameter."""
    if args.log is None:
        return _flag_named(refusal)
    return f"the step time read from --log {args.log} ({measured:.3g} s) {refusal.reason}"


def run_plan(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Handle ``dsconfig plan``: 0, 1 when no candidate fits (the table printed all the same), 2 with a message
    on stderr for bad input."""
    out = out or sys.stdout
    return guarded("plan", lambda: _plan(args, out), json_out=json_errors(args, out))


def run_predict(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Handle ``dsconfig predict``: 0 when the step time was predicted, even of a config that does not fit (a
    report, as estimate: the first caveat says it; ``dsconfig fit`` gives the verdict), or 2 with a message on
    stderr for bad input."""
    out = out or sys.stdout
    return guarded("predict", lambda: _predict(args, out), json_out=json_errors(args, out))


__all__ = ["register", "run_plan", "run_predict"]
