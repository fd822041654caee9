"""``dsconfig fit``: does a config fit, and if not, the ranked ways to make it fit.

dsconfig fit ds_config.json --model meta-llama/Llama-2-70b-hf --gpu "NVIDIA A100 80GB" --gpus 8
dsconfig fit ds_config.json --model meta-llama/Meta-Llama-3-8B --gpu H100 --gpus 16 --gpus-per-node 8 --format json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from core import fit, hardware, memory, models
from core.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    FORMAT_HELP,
    RECOMPUTE_HELP,
    SEQ_LEN_HELP,
    UsageError,
    attention_flag_help,
    catalog_model,
    config_caveats,
    config_micro_batch,
    default_seq_len,
    gib,
    gib_or_zero,
    gpu_count,
    gpu_notes,
    guarded,
    hf_batch,
    json_errors,
    json_report,
    micro_batch_when_unsaid,
    micro_batch_words,
    positive_int,
    read_sizing_config,
    seq_len,
    sized_batch,
)
from core.cli.estimate import add_gpu_flags, add_release_flag, sized_gpu
from core.memory.result import gib_capacity, gib_used
from core.precision import compute_precision
from core.versions import resolve_version


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``fit`` subcommand; its handler is stored as ``handler`` (returns the exit code)."""
    p = subparsers.add_parser("fit", help="does the config fit in memory, and if not, how to make it fit",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", type=Path, help="the DeepSpeed config (JSON or HJSON)")
    p.add_argument("--model", required=True, metavar="NAME",
                   help="a catalog model name (dsconfig estimate --list-models)")
    add_gpu_flags(p)
    p.add_argument("--gpus", type=gpu_count, default=8, metavar="N", help="GPUs in the job (default %(default)s)")
    p.add_argument("--gpus-per-node", type=gpu_count, default=8, metavar="N",
                   help="GPUs per node (default %(default)s)")
    p.add_argument("--cpu-ram", type=gib, default=int(hardware.DEFAULT_CPU_RAM_GIB * memory.GIB), metavar="GIB",
                   help=f"CPU RAM per node in GiB (default {hardware.DEFAULT_CPU_RAM_GIB:g})")
    p.add_argument("--nvme", type=gib_or_zero, default=0, metavar="GIB",
                   help="NVMe capacity per node in GiB (default 0: none, as on the app's Start page)")
    p.add_argument("--micro-batch", type=positive_int, default=None, metavar="N",
                   help='the micro batch when the config says "auto" or nothing (default: the config\'s; 8, the HF '
                        'Trainer\'s default, when it is "auto"; else 1)')
    p.add_argument("--gradient-accumulation-steps", type=positive_int, default=None, metavar="N",
                   help='the HF Trainer\'s --gradient_accumulation_steps, for a config whose accumulation is "auto" '
                        "(default 1, the Trainer's default; said when used)")
    p.add_argument("--seq-len", type=seq_len, default=None, metavar="TOKENS", help=SEQ_LEN_HELP)
    p.add_argument("--attention", choices=memory.ATTENTION_IMPLS, default="sdpa", help=attention_flag_help())
    p.add_argument("--recompute", choices=memory.RECOMPUTE_MODES, default="none", help=RECOMPUTE_HELP)
    add_release_flag(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)
    p.set_defaults(handler=run)
    return p


class _Inputs(NamedTuple):
    """What fit sizes, read from the arguments."""

    config: dict[str, Any]  # as sized: --micro-batch in place of batch keys DeepSpeed refuses (sized_batch)
    spec: Any
    hw: memory.Hardware
    shape: memory.Shape
    assumed: str  # how the micro batch was chosen, for the setup line ("" when the config says it)
    gpu: hardware.GPU | None
    caveats: list[str]
    gpu_said: list[str]  # --gpu-memory in place of --gpu's memory


def _inputs(args: argparse.Namespace, version: str) -> _Inputs:
    written = read_sizing_config(args.config, "fit")
    spec = catalog_model(args.model)
    default_seq_len(args, spec)
    per_node = min(args.gpus_per_node, args.gpus)
    if args.gpus % per_node:
        raise UsageError(f"--gpus {args.gpus} is not a whole number of nodes of --gpus-per-node {per_node}")
    gpu, gpu_bytes, gpu_said = sized_gpu(args)
    hw = memory.Hardware(per_node, args.gpus // per_node, gpu_bytes, args.cpu_ram, args.nvme)
    resolved = config_micro_batch(written, args.gpus, args.micro_batch, version, override=False)
    unsaid, said = micro_batch_when_unsaid(written, args.gpus, version, args.gradient_accumulation_steps)
    micro = args.micro_batch or resolved or unsaid
    assumed = "" if resolved and not args.micro_batch else \
        f" (micro batch given: {micro_batch_words(written)})" if args.micro_batch else f" ({said})"
    if args.gradient_accumulation_steps is not None:  # refused where the config's keys run another, as predict
        hf_batch(written, micro, args.gradient_accumulation_steps, args.gpus, version)
    config, resized = sized_batch(written, args.gpus, args.micro_batch, version)
    caveats = config_caveats(written, args.gpus, version) + ([resized] if resized else [])
    return _Inputs(config, spec, hw, memory.Shape(micro, args.seq_len, args.attention, args.recompute),
                   assumed, gpu, caveats, gpu_said)


def _gib_text(n: float) -> str:
    return f"{gib_capacity(n)} GiB"


def _used_text(used: float, capacity: float) -> str:
    """``used`` against ``capacity`` in GiB, rounded toward the verdict (``core.memory.result.gib_used``)."""
    return f"{gib_used(used, capacity)} GiB"


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Handle ``dsconfig fit``: 0 when it fits, 1 when it does not (ways printed), 2 for bad input."""
    out = out or sys.stdout
    return guarded("fit", lambda: _fit(args, out), err, json_errors(args, out))


def _fit(args: argparse.Namespace, out: TextIO) -> int:
    version = resolve_version(args.deepspeed_version)
    given = _inputs(args, version)
    config, spec, hw, shape, assumed = given.config, given.spec, given.hw, given.shape, given.assumed
    gpu_name = given.gpu.name if given.gpu else None
    est = memory.estimate(config, spec, hw, shape, version=version)
    notes = [*gpu_notes(given.gpu, compute_precision(config, version)), *est.notes]
    if isinstance(spec, models.ModelSpec) and (cannot := spec.sequence_problem(shape.seq_len)):
        notes.insert(0, cannot + "; sized as if it could")  # as predict and the app say it
    notes[:0] = given.gpu_said
    trainer_accum = args.gradient_accumulation_steps or 1
    if config.get("gradient_accumulation_steps") == "auto" and args.gradient_accumulation_steps is None:
        notes.append('gradient_accumulation_steps is "auto": the HF Trainer\'s accumulation is taken as 1 (its '
                     "default) where a way keeps the global batch; pass --gradient-accumulation-steps N with yours")
    ways = fit.ways_to_fit(config, spec, hw, shape, trainer_accum=trainer_accum, version=version)
    speeds = (fit.speed_costs(ways, config, spec, hw, shape, gpu_name, trainer_accum, version=version) if gpu_name
              else [None] * len(ways))
    if args.format == "json":
        out.write(json_report({"fits": est.fits, "short": list(fit.short_of(est)), "gpu_bytes": est.gpu_bytes,
                              "cpu_bytes_per_node": est.cpu_bytes_per_node,
                              "nvme_bytes_per_node": est.nvme_bytes_per_node, "micro_batch": shape.micro_batch,
                              "seq_len": shape.seq_len, "attention": shape.attention, "recompute": shape.recompute,
                              "precision": est.settings.precision,
                              # what the text's first lines state: the cluster, the capacities, the assumptions
                              "model": spec.name, "gpu": gpu_name, "gpus": hw.total_gpus, "nodes": hw.nodes,
                              "gpus_per_node": hw.gpus_per_node, "gpu_memory_bytes": hw.gpu_memory_bytes,
                              "cpu_ram_per_node_bytes": hw.cpu_ram_per_node_bytes,
                              "nvme_bytes_per_node_capacity": hw.nvme_bytes_per_node,
                              "assumptions": est.assumptions, "micro_batch_assumed": assumed[2:-1] or None,
                              "deepspeed_version": version,
                              "trainer_gradient_accumulation_steps": trainer_accum,
                              "ways": [w.to_dict() | {"speed_per_gpu_vs_now": s} for w, s in zip(ways, speeds,
                                                                                                  strict=True)],
                              "caveats": given.caveats, "notes": notes}))
        return EXIT_OK if est.fits else EXIT_ERRORS
    verdict = "fits" if est.fits else f"DOES NOT FIT ({', '.join(fit.short_of(est))})"
    which = gpu_name or f"{_gib_text(hw.gpu_memory_bytes)} GPUs"
    out.write(f"{spec.name} on {hw.total_gpus} × {which} ({hw.nodes} × {hw.gpus_per_node}), "
              f"{est.assumptions}{assumed}, read as DeepSpeed {version}: {verdict}\n")
    out.write(f"  GPU {_used_text(est.gpu_bytes, hw.gpu_memory_bytes)} of {_gib_text(hw.gpu_memory_bytes)} per "
              f"GPU; CPU RAM {_used_text(est.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} of "
              f"{_gib_text(hw.cpu_ram_per_node_bytes)} per node")
    nvme = "" if not est.nvme_bytes_per_node else (
        f"; NVMe {_used_text(est.nvme_bytes_per_node, hw.nvme_bytes_per_node or 0)} of "
        f"{_gib_text(hw.nvme_bytes_per_node) if hw.nvme_bytes_per_node else '0 GiB (none given: --nvme)'}")
    out.write(nvme + "\n")
    for caveat in given.caveats:
        out.write(f"  caveat: {caveat}\n")
    for note in notes:
        out.write(f"  note: {note}\n")
    if ways:
        out.write("\nWays to make it fit (best first):\n")
    elif not est.fits:
        out.write(f"\n{fit.nothing_helps(fit.short_of(est))}\n")
    for i, (way, speed) in enumerate(zip(ways, speeds, strict=True), 1):
        mark = "fits" if way.fits else f"still short of {', '.join(way.short)}"
        pace = "" if speed is None else f"; speed per GPU {speed:.2f}x of now (planner estimate)"
        out.write(f"{i}. {way.title}: GPU {_used_text(way.gpu_bytes, hw.gpu_memory_bytes)}, CPU RAM "
                  f"{_used_text(way.cpu_bytes_per_node, hw.cpu_ram_per_node_bytes)} per node -> {mark}{pace}\n"
                  f"   {way.detail}\n")
        if way.config_patch:
            out.write(f"   config patch: {json.dumps(way.config_patch)}\n")
        if way.context_patch:
            out.write(f"   outside the config: {json.dumps(way.context_patch)}\n")
    return EXIT_OK if est.fits else EXIT_ERRORS
