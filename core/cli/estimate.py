"""``dsconfig estimate``: DeepSpeed-style ZeRO tables from counts, or the full memory estimate for a model.

dsconfig estimate --params 2851e6 --largest-layer 32e6 --gpus-per-node 8
dsconfig estimate --model meta-llama/Llama-2-7b-hf --config ds_config.json --micro-batch 4 --seq-len 4096
dsconfig estimate --hf-config config.json --config ds.json --format json
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from core import memory, models
from core.cli import versions as cli_versions
from core.cli.common import (
    EXIT_OK,
    FORMAT_HELP,
    RECOMPUTE_HELP,
    SEQ_LEN_HELP,
    UsageError,
    attention_flag_help,
    catalog_gpu,
    catalog_model,
    config_caveats,
    config_micro_batch,
    default_seq_len,
    gib,
    gib_or_zero,
    gpu_count,
    gpu_notes,
    guarded,
    hf_config_model,
    json_errors,
    json_report,
    micro_batch_when_unsaid,
    one_stdin_reader,
    positive,
    positive_int,
    read_sizing_config,
    seq_len,
    sized_batch,
)
from core.hardware import DEFAULT_CPU_RAM_GIB, DEFAULT_GPU, GPU, GPU_BY_NAME
from core.memory.result import gib_used
from core.precision import compute_precision
from core.versions import RELEASES, resolve_version

_SUFFIX = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


#: The largest parameter count --params and --largest-layer take: 500x the largest published models, and short of
#: the counts whose millions DeepSpeed's tables print as float noise.
MAX_PARAMS = 1e15


def _too_many(text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"parameter count too large: {text!r} (at most 1e15, a quadrillion)")


def parse_count(text: str) -> int | float:
    """A parameter count: ``2851e6``, ``7.5B``, ``2851M``, ``1_000_000``, ``1,000,000``; ints stay ints (DeepSpeed
    parity). A comma only groups thousands (``7,5B`` is refused, not read as 75B); the count is a whole number."""
    raw = text.strip().replace("_", "")
    examples = "examples: 7.5B, 2851M, 2851e6"
    match = re.fullmatch(r"([0-9,]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)", raw)
    if not match:
        raise argparse.ArgumentTypeError(f"not a parameter count: {text!r} ({examples})")
    number, suffix = match.groups()
    if "," in number:
        if not re.fullmatch(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?", number):
            raise argparse.ArgumentTypeError(
                f"not a parameter count: {text!r} (a comma only groups thousands, as in 1,000,000; a decimal "
                f"point is a dot: {number.replace(',', '.')}{suffix})")
        number = number.replace(",", "")
    if re.fullmatch(r"[0-9]+", number) and not suffix:
        if int(number) > MAX_PARAMS:
            raise _too_many(text)
        return int(number)
    value = float(number) * _SUFFIX[suffix.lower()]
    if not math.isfinite(value) or value > MAX_PARAMS:  # DeepSpeed's "{n}M" of 1e30 is 999999999999999983222784M
        raise _too_many(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole number of parameters: {text!r} is {value:g} ({examples})")
    return value


def add_release_flag(p: argparse.ArgumentParser, what: str = "read the config as") -> None:
    """Add ``--deepspeed-version`` (dest ``deepspeed_version``, None unless given: ``resolve_version`` makes it the
    installed DeepSpeed, else the newest), as every command that reads a config as one release has it."""
    p.add_argument("--deepspeed-version", type=cli_versions.release, default=None, metavar="RELEASE",
                   help=f"{what} this DeepSpeed release, {RELEASES[0]} … {RELEASES[-1]} (default: the installed "
                   "DeepSpeed, else the newest)")


#: The GPUs per node of the full estimate when --gpus-per-node is not given.
DEFAULT_GPUS_PER_NODE = 8


def add_gpu_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--gpu NAME`` and ``--gpu-memory GIB`` (None unless given: ``sized_gpu`` reads them), as every command
    that sizes a config against one GPU (estimate, fit) has them."""
    p.add_argument("--gpu", default=None, type=catalog_gpu, metavar="NAME",
                   help=f"a GPU of the catalog (a unique part of its name is enough; default {DEFAULT_GPU}), or "
                   "--gpu-memory")
    p.add_argument("--gpu-memory", type=gib, default=None, metavar="GIB",
                   help="GPU memory in GiB, as PyTorch reports it, instead of --gpu")


def sized_gpu(args: argparse.Namespace) -> tuple[GPU | None, int, list[str]]:
    """The catalog GPU sized for (``--gpu``, default ``DEFAULT_GPU``; None with ``--gpu-memory``), its memory in
    bytes (``--gpu-memory`` when given) and a note when ``--gpu-memory`` overrides a ``--gpu`` also given."""
    if args.gpu_memory is None:
        gpu = GPU_BY_NAME[args.gpu or DEFAULT_GPU]  # catalog_gpu made it a catalog name
        return gpu, gpu.memory_bytes, []
    said = [] if args.gpu is None else [f"--gpu-memory {args.gpu_memory / memory.GIB:g} GiB is used instead of "
                                        f"--gpu {args.gpu}'s memory"]
    return None, args.gpu_memory, said
#: The tables' additional_buffer_factor when --buffer-factor is not given: DeepSpeed's default, as the tables have it.
DEEPSPEED_BUFFER_FACTOR = inspect.signature(memory.zero2_all_cold_table).parameters["additional_buffer_factor"].default
#: The largest --buffer-factor: a hundred times the CPU memory the tables count is far past any allowance, and short of
#: the products that overflow.
MAX_BUFFER_FACTOR = 100.0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``estimate`` subcommand; its handler is stored as ``handler`` (returns the exit code)."""
    p = subparsers.add_parser(
        "estimate",
        help="estimate GPU/CPU/NVMe memory (DeepSpeed tables or the full picture)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("model (one of)")
    src.add_argument("--params", type=parse_count, help="total parameters: DeepSpeed's ZeRO-2/3 tables only")
    src.add_argument("--largest-layer", type=parse_count, help="largest layer's parameters (adds the ZeRO-3 table)")
    src.add_argument("--model", metavar="NAME", help="a catalog model name (see --list-models)")
    src.add_argument("--hf-config", type=Path, metavar="FILE", help="a Hugging Face config.json")
    src.add_argument("--list-models", action="store_true", help="list the catalog models and exit")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="DeepSpeed config JSON (stage, offload, precision, buckets...)")
    hw = p.add_argument_group("hardware")
    hw.add_argument("--gpus-per-node", type=gpu_count, default=None, metavar="N",
                    help=f"GPUs per node (default 1 with --params, else {DEFAULT_GPUS_PER_NODE})")
    hw.add_argument("--nodes", type=gpu_count, default=1, metavar="N", help="nodes (default %(default)s)")
    add_gpu_flags(hw)
    hw.add_argument("--cpu-ram", type=gib, default=int(DEFAULT_CPU_RAM_GIB * memory.GIB), metavar="GIB",
                    help=f"CPU RAM per node in GiB (default {DEFAULT_CPU_RAM_GIB:g})")
    hw.add_argument("--nvme", type=gib_or_zero, default=0, metavar="GIB",
                    help="NVMe capacity per node in GiB (default 0: none, as on the app's Start page)")
    hw.add_argument("--buffer-factor", type=positive(float, at_most=MAX_BUFFER_FACTOR),
                    default=DEEPSPEED_BUFFER_FACTOR, metavar="FACTOR",
                    help="with --params: the DeepSpeed tables' additional_buffer_factor, a multiplier on the CPU "
                    "memory they count (default %(default)s, DeepSpeed's)")
    shape = p.add_argument_group("training shape")
    shape.add_argument(
        "--micro-batch",
        type=positive_int,
        default=None,
        metavar="N",
        help="default: the config's micro batch (written, or derived from train_batch_size); 8, the HF "
             "Trainer's default, when it is \"auto\"; else 1",
    )
    shape.add_argument("--seq-len", type=seq_len, default=None, metavar="TOKENS", help=SEQ_LEN_HELP)
    shape.add_argument("--attention", choices=memory.ATTENTION_IMPLS, default="sdpa", help=attention_flag_help())
    shape.add_argument("--recompute", choices=memory.RECOMPUTE_MODES, default="none", help=RECOMPUTE_HELP)
    shape.add_argument(
        "--precision",
        choices=("fp32", "fp16", "bf16"),
        default=None,
        help='override the config\'s fp16/bf16 (e.g. when it says "auto")',
    )
    p.add_argument("--options", action="store_true", help="also list every ZeRO stage/offload option")
    add_release_flag(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)
    # each flag only one path reads, with the default it is compared with (read from the parser: written once)
    p.set_defaults(handler=run, unread_defaults={dest: p.get_default(dest)
                                                 for dest in (*_PARAMS_UNREAD, _FULL_UNREAD)})
    return p


def _model(args: argparse.Namespace) -> models.ModelSpec:
    if args.model is not None:
        return catalog_model(args.model)
    return hf_config_model(args.hf_config, "give the counts with --params and --largest-layer instead")


def _ds_tables(args: argparse.Namespace, out: TextIO) -> int:
    gpn = args.gpus_per_node or 1
    if args.params == 0:  # parse_count already refuses a negative count
        raise UsageError("--params is 0: give the model's parameter count (e.g. --params 7B)")
    if args.largest_layer == 0:
        raise UsageError("--largest-layer is 0: give the parameters of the model's largest layer (e.g. "
                         "--largest-layer 200M), or leave it out for the ZeRO-2 table only")
    if args.format == "json":
        data: dict[str, Any] = {
            "zero2": memory.zero2_all_cold_table(args.params, gpn, args.nodes, args.buffer_factor).to_dict("records")
        }
        if args.largest_layer is not None:
            data["zero3"] = memory.zero3_all_cold_table(
                args.params, args.largest_layer, gpn, args.nodes, args.buffer_factor
            ).to_dict("records")
        out.write(json_report(data))
        return EXIT_OK
    out.write(memory.render_zero2_all_cold(args.params, gpn, args.nodes, args.buffer_factor))
    if args.largest_layer is not None:
        out.write(
            "\n" + memory.render_zero3_all_cold(args.params, args.largest_layer, gpn, args.nodes, args.buffer_factor)
        )
    # on stderr: standard output is DeepSpeed's printout verbatim, whose unit this names
    sys.stderr.write("dsconfig estimate: note: GB in these tables means GiB (2^30 bytes), as DeepSpeed prints it\n")
    return EXIT_OK


def _fmt(n: float) -> str:
    return f"{n / memory.GIB:10.2f} GiB"


def _render(est: memory.MemoryEstimate, version: str, gpu: GPU | None, out: TextIO) -> None:
    hw, sh, st = est.hardware, est.shape, est.settings
    out.write(f"Model: {est.model_name}: {est.total_params:,} params, largest layer {est.largest_layer_params:,}\n")
    out.write(
        f"Setup: {hw.nodes} node(s) x {hw.gpus_per_node} GPU(s){f' ({gpu.name})' if gpu else ''}; "
        f"ZeRO stage {st.stage}, {st.precision}, "
        f"{st.optimizer} ({st.optimizer_states} states); offload optimizer={st.offload_optimizer}, "
        f"param={st.offload_param}; read as DeepSpeed {version}\n"
    )
    out.write(
        f"Shape: micro batch {sh.micro_batch}, seq len {sh.seq_len}, attention {sh.attention}, "
        f"recompute {sh.recompute}\n\n"
    )
    for device in ("gpu", "cpu", "nvme"):
        comps = [c for c in est.components if c.device == device]
        if not comps:
            continue
        out.write({"gpu": "Per GPU", "cpu": "CPU RAM per node", "nvme": "NVMe per node"}[device] + ":\n")
        for c in comps:
            pin = " pinned" if c.pinned else ""
            out.write(f"  {c.name:55s} {_fmt(c.bytes)}  [{c.phase}{pin}]\n")
    out.write("\n")
    out.write(
        f"GPU peak ({est.gpu_peak_phase}): {gib_used(est.gpu_bytes, hw.gpu_memory_bytes, 2)} GiB of "
        f"{_fmt(hw.gpu_memory_bytes).strip()} -> {'fits' if est.fits_gpu else 'DOES NOT FIT'}\n"
    )
    out.write(
        f"CPU RAM per node: {gib_used(est.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes, 2)} GiB (pinned "
        f"{_fmt(est.cpu_pinned_bytes_per_node).strip()}) of {_fmt(hw.cpu_ram_per_node_bytes).strip()} -> "
        f"{'fits' if est.fits_cpu else 'DOES NOT FIT'}\n"
    )
    if est.nvme_bytes_per_node:
        cap = "unknown capacity" if hw.nvme_bytes_per_node is None else _fmt(hw.nvme_bytes_per_node).strip()
        out.write(
            f"NVMe per node: {gib_used(est.nvme_bytes_per_node, hw.nvme_bytes_per_node, 2)} GiB of {cap} -> "
            f"{'fits' if est.fits_nvme else 'DOES NOT FIT'}\n"
        )
    for note in est.notes:
        out.write(f"note: {note}\n")


def _full(args: argparse.Namespace, out: TextIO) -> int:
    spec = _model(args)
    default_seq_len(args, spec)
    ds_config: Any = {}
    if args.config is not None:
        ds_config = read_sizing_config(args.config, "estimate", "--config")
    gpu, gpu_bytes, gpu_said = sized_gpu(args)
    hw = memory.Hardware(args.gpus_per_node or DEFAULT_GPUS_PER_NODE, args.nodes, gpu_bytes, args.cpu_ram, args.nvme)
    version = resolve_version(args.deepspeed_version)
    refused = None
    try:
        written = config_micro_batch(ds_config, hw.total_gpus, args.micro_batch, version, override=True)
        micro_batch = args.micro_batch or written
        if micro_batch is None:  # nothing says it: assumed, and the notes say so when a config was given
            micro_batch, said = micro_batch_when_unsaid(ds_config, hw.total_gpus, version)
            refused = said if args.config is not None else None
        if args.micro_batch and written is not None and written != args.micro_batch:
            # estimate sizes what it is asked, but says that DeepSpeed would run the config's own
            refused = (f"--micro-batch {args.micro_batch} replaces the config's micro batch of {written} on "
                       f"{hw.total_gpus} GPUs (written, or derived from train_batch_size), which DeepSpeed runs")
    except UsageError as exc:  # estimate stays lenient (it sizes what is written) but says what it assumed
        micro_batch, refused = 1, f"{exc}; estimated at an assumed micro batch of 1"
    shape = memory.Shape(micro_batch, args.seq_len, args.attention, args.recompute)
    caveats = [] if args.config is None else config_caveats(ds_config, hw.total_gpus, version, args.precision)
    ds_config, resized = sized_batch(ds_config, hw.total_gpus, args.micro_batch, version)
    caveats += [resized] if resized else []
    est = memory.estimate(ds_config, spec, hw, shape, precision=args.precision, version=version)
    if refused:
        est = dataclasses.replace(est, notes=(refused, *est.notes))
    if isinstance(spec, models.ModelSpec) and (cannot := spec.sequence_problem(shape.seq_len)):
        est = dataclasses.replace(est, notes=(cannot + "; sized as if it could", *est.notes))  # as predict says
    computes_in = args.precision or (compute_precision(ds_config, version) if args.config is not None
                                     else est.settings.precision)  # torch_autocast: its dtype, as fit says
    est = dataclasses.replace(est, notes=(*gpu_said, *gpu_notes(gpu, computes_in), *est.notes))  # as fit
    table = (memory.options_table(ds_config, spec, hw, shape, precision=args.precision, version=version)
             if args.options else None)
    if args.format == "json":
        data = {**est.to_dict(), "gpu": gpu.name if gpu else None, "deepspeed_version": version, "caveats": caveats}
        if table is not None:
            data["options"] = json.loads(table.to_json(orient="records"))
        out.write(json_report(data))
        return EXIT_OK
    _render(est, version, gpu, out)
    for caveat in caveats:
        out.write(f"caveat: {caveat}\n")
    if table is not None:
        out.write("\nAll ZeRO options (GPU peak per GPU, largest micro batch that fits):\n")
        for row in table.itertuples():
            out.write(
                f"  stage {row.stage}  optimizer->{row.offload_optimizer:4s} params->{row.offload_param:4s} "
                f"{_fmt(row.gpu_bytes)}  {'fits' if row.fits else 'no  '}  max micro batch "
                f"{row.max_micro_batch}\n"
            )
    return EXIT_OK


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Handle ``dsconfig estimate``; returns 0, or 2 with a message on stderr for bad input."""
    out = out or sys.stdout
    return guarded("estimate", lambda: _estimate(args, out), err, json_errors(args, out))


def _estimate(args: argparse.Namespace, out: TextIO) -> int:
    if args.list_models:
        given = [flag for flag, name in (("--params", "params"), ("--model", "model"), ("--hf-config", "hf_config"))
                 if getattr(args, name) is not None]
        if given:
            raise UsageError(f"--list-models lists the catalog; it takes no {' or '.join(given)}")
        names = models.catalog_names()
        out.write(json_report(list(names)) if args.format == "json" else "".join(name + "\n" for name in names))
        return EXIT_OK
    sources = [x for x in ("params", "model", "hf_config") if getattr(args, x) is not None]
    if len(sources) != 1:
        raise UsageError("give exactly one of --params, --model or --hf-config")
    if args.largest_layer is not None and args.params is None:
        raise UsageError("--largest-layer goes with --params")
    problem = None if args.largest_layer is None else memory.counts_problem(
        args.params, args.largest_layer, "the whole model's --params", "--largest-layer")
    if problem:
        raise UsageError(problem)
    if args.params is not None and args.config is not None:
        raise UsageError("--config goes with --model or --hf-config: DeepSpeed's --params tables do not read a config")
    # flags the chosen path does not read are refused, not ignored (compared with their defaults: a default
    # repeated changes nothing either way)
    unread = _PARAMS_UNREAD if args.params is not None else (_FULL_UNREAD,)
    given = ["--" + dest.replace("_", "-") for dest in unread if getattr(args, dest) != args.unread_defaults[dest]]
    if given:
        where = ("DeepSpeed's --params tables count model states for a parameter count only"
                 if args.params is not None else "--buffer-factor scales DeepSpeed's --params tables only")
        raise UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply here: {where}; "
                         + ("use --model or --hf-config for the full estimate" if args.params is not None
                            else "remove it"))
    if args.params is not None:
        return _ds_tables(args, out)
    one_stdin_reader({"--hf-config": args.hf_config, "--config": args.config})
    return _full(args, out)


#: The flags (argparse dests) --params does not read, and the one only --params reads.
_PARAMS_UNREAD = ("gpu", "gpu_memory", "cpu_ram", "nvme", "micro_batch", "seq_len", "attention", "recompute",
                  "precision", "options", "deepspeed_version")
_FULL_UNREAD = "buffer_factor"
