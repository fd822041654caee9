"""What every ``dsconfig`` subcommand shares: the exit codes, the one usage error, reading and writing files,
and the argument types."""

from __future__ import annotations

import argparse
import decimal
import json
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from core.batch import (
    BATCH_KEYS,
    GA,
    MB,
    TB,
    BatchResolution,
    batch_suggestions,
    effective_world_size,
    micro_batch_one,
    positive_whole,
    reads_sequence_parallel,
    resolve_batch,
    run_or_written,
    runs_elastic,
    sequence_parallel_degree,
    shown,
)
from core.hardware import GPU, gpu_names
from core.io import (
    MAX_CONFIG_BYTES,
    ConfigLoadError,
    is_strict_json,
    load_config,
    load_config_bytes_and_text,
    load_config_file_and_text,
    too_big,
)

#: 0: done, no errors; 1: the answer is "no" (errors found; the config does not fit: fit; no candidate fits the
#: cluster: plan; no release accepts it); 2: bad usage or unreadable input (a message on stderr, never a
#: traceback); 70: an internal error, a bug of dsconfig's (EX_SOFTWARE of sysexits.h), never a verdict. predict
#: and estimate report numbers: 0 even for a config that does not fit (their output says it; fit gives the verdict).
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70

#: The environment variable that makes an internal error print its traceback too.
DEBUG_ENV = "DSCONFIG_DEBUG"

#: The exit codes, as every command's --help ends with them.
EXIT_CODES_HELP = f"""exit codes:
  0    done: no errors, the config fits (predict and estimate, which report
       numbers: also when it does not fit, which their output says)
  1    the answer is no: errors found (validate, fix, migrate --check,
       presets check; versions: no release accepts it); the config does not
       fit (fit); no candidate fits the cluster (plan, which prints its table
       all the same)
  2    bad usage or unreadable input: one message on stderr; with --format
       json also {{"error": {{"message": ..., "flag": ..., ...}}}} on stdout
       (argparse's usage errors, before the command runs, stay text only)
  70   internal error, a bug of dsconfig's: one message on stderr, and
       {{"error": ...}} on stdout with --format json ({DEBUG_ENV}=1 adds
       the traceback)
  130  interrupted (Ctrl-C); 141: the reader of the output stopped (| head)"""


class UsageError(ValueError):
    """A user-facing problem with the arguments or the input: printed as one message, exit code 2.

    ``position`` is the (line, column) of the input where it went wrong, when the input was a file's text."""

    def __init__(self, message: str, *, position: tuple[int, int] | None = None) -> None:
        super().__init__(message)
        self.position = position


def guarded(command: str, handler: Callable[[], int], err: TextIO | None = None,
            json_out: TextIO | None = None) -> int:
    """Run a subcommand; a ``UsageError`` (or any ``ValueError``, such as a model config DeepSpeed cannot
    describe) becomes ``dsconfig COMMAND: error: …`` on stderr and exit code 2; any other exception (a bug) becomes
    ``dsconfig COMMAND: internal error: …`` and exit code 70, with the traceback only when ``DSCONFIG_DEBUG`` is
    set. With ``json_out`` (``--format json``), the error is also one JSON object on it (:func:`error_report`),
    for a script that reads only standard output. An ``OSError`` (the output could not be written) is left to
    ``main``."""
    err = err or sys.stderr
    position = None
    try:
        return int(handler())
    except ValueError as exc:
        kind, code, message = "usage", EXIT_USAGE, str(exc)
        position = getattr(exc, "position", None)
    except OverflowError as exc:  # a number given so large that the arithmetic on it overflows
        kind, code = "usage", EXIT_USAGE
        message = f"a number given is too large to compute with ({exc}); give realistic sizes and counts"
    except OSError:
        raise
    except Exception as exc:  # a bug: said in one line, never mistaken for a verdict (1) or bad input (2)
        kind, code = "internal", EXIT_INTERNAL
        message = (f"{type(exc).__name__}: {exc}; please report it with the command"
                   + ("" if os.environ.get(DEBUG_ENV) else f" ({DEBUG_ENV}=1 prints the traceback)"))
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc(file=err)
    err.write(f"dsconfig {command}: {'internal error' if kind == 'internal' else 'error'}: {message}\n")
    if json_out is not None:
        json_out.write(error_report(command, kind, message, position))
    return code


def json_errors(args: argparse.Namespace, out: TextIO) -> TextIO | None:
    """Where a command's error goes as JSON too: ``out`` when it prints ``--format json``, else nowhere."""
    return out if getattr(args, "format", None) == "json" else None


def error_report(command: str, kind: str, message: str, position: tuple[int, int] | None = None) -> str:
    """An error of a ``--format json`` command as the one JSON object it prints in place of its result:
    ``{"error": {"command", "kind" ("usage": exit 2, or "internal": exit 70), "message" (as on stderr), "flag" (the
    flag the message starts with, else null), "line", "column" (where an unreadable file breaks, as validate's
    entries say it, else null)}}``."""
    flag = re.match(r"--[a-z][a-z0-9-]*", message)
    line, column = position or (None, None)
    return json_report({"error": {"command": command, "kind": kind, "message": message,
                                  "flag": flag.group() if flag else None, "line": line, "column": column}})


#: What --hf-config must hold, in load errors.
HF_CONFIG_DOCUMENT = "a model's config.json (Hugging Face)"


def catalog_model(name: str) -> Any:
    """The catalog model ``--model`` names (a ``core.models.ModelSpec``); a name the catalog does not have is a
    UsageError that names the flag (and, in a JSON error, is its ``flag``), with the close names."""
    from core import models

    try:
        return models.get_spec(name)
    except models.ModelConfigError as exc:
        raise UsageError(f"--model: {exc} (dsconfig estimate --list-models lists the catalog)") from None


def hf_config_model(path: Path, instead: str) -> Any:
    """The model the --hf-config file at ``path`` describes (a ``core.models.ModelSpec``); a file that is not one
    is a UsageError naming it, with ``instead``: what the command offers in its place (its flags)."""
    from core import models

    return models.describe(read_config_file(path, "--hf-config", HF_CONFIG_DOCUMENT), name=str(path),
                           source=f"--hf-config {path}", instead=instead)


def read_config_file(path: str | Path, what: str = "", document: str = "a DeepSpeed config") -> Any:
    """Read and parse a config file (``-``: standard input); failures become a ``UsageError`` naming it.
    ``document`` names what the file must be (a model's config.json for --hf-config)."""
    return read_config_and_text(path, what, document)[0]


def read_config_and_text(path: str | Path, what: str = "", document: str = "a DeepSpeed config",
                         ) -> tuple[Any, str]:
    """``read_config_file`` and the text it parsed (what a diff of the file must start from)."""
    config, text, _ = read_config_text_and_bytes(path, what, document)
    return config, text


def read_config_text_and_bytes(path: str | Path, what: str = "", document: str = "a DeepSpeed config",
                               ) -> tuple[Any, str, bytes | None]:
    """``read_config_and_text``, and for standard input the bytes it read (None for a file, which can be read
    again): checks of the bytes themselves (a byte-order mark) cannot read standard input twice."""
    try:
        if str(path) == "-":
            data = read_stdin(MAX_CONFIG_BYTES + 1, f"{what} -" if what else "-", document)
            if len(data) > MAX_CONFIG_BYTES:  # only the limit and one more were read: say "more than"
                raise ConfigLoadError(too_big(len(data), at_least=True))
            if isinstance(data, str):  # a text stream put in its place (tests, embedding)
                return load_config(data, document), data, None
            return (*load_config_bytes_and_text(data, document), data)  # the bytes get a file's encoding checks
        return (*load_config_file_and_text(path, document), None)
    except ConfigLoadError as exc:
        text = str(exc) if str(path) != "-" else f"-: {exc}"
        position = (exc.line, exc.column or 1) if exc.line is not None else None
        raise UsageError(f"{what} {text}" if what else text, position=position) from None


def read_sizing_config(path: str | Path, command: str, what: str = "") -> dict[str, Any]:
    """The DeepSpeed config a sizing command (fit, predict, estimate) reads from ``path``: a preset file's
    ``config`` (``core.presets.is_preset_document``, validate's config.preset-file), said in a note on stderr, else
    the file's object itself."""
    from core.presets import is_preset_document

    config = read_config_file(path, what)
    if not is_preset_document(config):
        return config
    given = f"{what} {path}" if what else str(path)
    sys.stderr.write(f"dsconfig {command}: note: {given} is a Config Studio preset file ({{\"meta\": ..., "
                     "\"config\": ...}): sized with the DeepSpeed config under its \"config\" key\n")
    return config["config"]


def one_stdin_reader(readers: dict[str, Any]) -> None:
    """Refuse, before anything is read, two of a command's inputs given as ``-`` (``readers``: each input's name
    as the user gave it, CONFIG or a flag, and its value): standard input holds one document, and the second
    reader would find it empty."""
    given = [name for name, value in readers.items() if value is not None and str(value) == "-"]
    if len(given) > 1:
        names = " and ".join(f"{name} -" for name in given)
        raise UsageError(f"{names} {'both' if len(given) == 2 else 'all'} read standard input, which holds one of "
                         f"them: give {'one' if len(given) == 2 else 'all but one'} of them as a file path")


def read_stdin(limit: int, given: str, what: str) -> bytes | str:
    """Up to ``limit`` bytes of standard input (its characters when a text stream without bytes was put in its
    place); a closed or unreadable one is a UsageError naming ``given`` (the argument that said ``-``) and asking
    for ``what`` as a file path."""
    if sys.stdin is None:  # started with standard input closed (a CI step or cron job without one)
        raise UsageError(f"{given}: cannot read standard input: it is closed; give {what} as a file path, or pipe "
                         "it in")
    raw = getattr(sys.stdin, "buffer", None)
    try:
        return sys.stdin.read(limit) if raw is None else raw.read(limit)
    except OSError as exc:  # e.g. standard input redirected from a directory
        raise UsageError(f"{given}: cannot read standard input ({exc.strerror or exc}); give {what} as a file "
                         "path, or pipe it in") from None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def json_report(data: Any) -> str:
    """``data`` as the strict JSON (RFC 8259) a ``--format json`` prints, newline-terminated: a number beyond float
    range (a derived 1e308 × 10) becomes the string "Infinity" (or "-Infinity", "NaN"), which every parser reads;
    anything else JSON has no type for is written as its ``str``."""
    return json.dumps(_finite(data), indent=2, default=str, allow_nan=False) + "\n"


def write_text(path: str | Path, text: str) -> None:
    """Write a file; failures become a ``UsageError`` naming it."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write it ({exc.strerror or exc})") from None


def rewrite_config_file(path: str | Path, text: str) -> None:
    """Write ``text`` (strict JSON) over the config file ``path``. When the file held what strict JSON cannot keep
    (comments, trailing commas, unquoted keys: HJSON), its original text is kept beside it as ``PATH.orig`` first,
    and a warning says so: an in-place rewrite would lose it silently."""
    target = Path(path)
    try:
        original = target.read_bytes()
        # a byte-order mark is no content (the loader skips it), and the rewrite writes none
        strict = is_strict_json(original.decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        original, strict = None, True
    if original is not None and not strict:
        backup = target.with_name(target.name + ".orig")
        if backup.exists():
            raise UsageError(f"{path} has comments or other HJSON syntax that the rewrite (strict JSON) drops, and "
                             f"{backup} exists already: move it away, or write the result elsewhere")
        try:  # the bytes as they were: line endings and all
            backup.write_bytes(original)
        except OSError as exc:
            raise UsageError(f"{backup}: cannot write it ({exc.strerror or exc})") from None
        sys.stderr.write(f"warning: {path} has comments or other HJSON syntax that strict JSON cannot keep; its "
                         f"original text is saved as {backup}\n")
    write_text(path, text)


def config_micro_batch(config: dict[str, Any], gpus: int, given: int | None, version: str, *,
                       override: bool) -> int | None:
    """The micro batch the config runs with on ``gpus`` GPUs as DeepSpeed ``version`` reads it (written, derived,
    or elastic training's: ``core.batch.run_or_written``); None when it says "auto" or nothing. Batch keys DeepSpeed
    refuses there are a UsageError unless ``given`` (--micro-batch) replaces them; without ``override`` a ``given``
    that contradicts the config is one too (a command whose ways patch the config must estimate the micro batch
    the config will run with)."""
    if given and _refused_batch(config, gpus, version) is not None:
        return None  # --micro-batch stands in for the keys DeepSpeed refuses (sized_batch says what is sized)
    resolved = run_or_written(config, gpus, version, MB)
    elastic = runs_elastic(config, version)
    if resolved is None and elastic and not given:
        raise UsageError(f"elastic training (the config's enabled elasticity section, which DeepSpeed {version} "
                         f"acts on) refuses {gpus} GPUs: pick a GPU count it accepts (dsconfig validate "
                         f"--deepspeed-version {version} --world-size {gpus} says why) or pass --micro-batch")
    if resolved is None and not elastic and not given and "auto" not in (config.get(k) for k in BATCH_KEYS):
        # "auto" is the HF Trainer's to fill, and nothing written is assumed: both are said where they are used
        batch = resolve_batch(config, effective_world_size(config, gpus, version))
        written = f"{MB} is {shown(config[MB])}; " if MB in config else ""  # what the refusal may name derived
        if batch.ok:  # DeepSpeed runs it, but the micro batch is a fraction or a boolean (batch.not-integer)
            trios = batch_suggestions(config, gpus)
            example = f", e.g. {trios[0][MB]}" if trios else ""
            raise UsageError(f"{written}DeepSpeed accepts it, but data loaders and this sizing need a micro batch "
                             f"that is a whole number >= 1 (dsconfig validate: batch.not-integer): write one in "
                             f"the config{example}, or pass --micro-batch N")
        if batch.problem != "missing":  # keys are written, and DeepSpeed refuses them
            raise UsageError(f"{written}the config's batch keys do not work on {gpus} GPUs ({batch.message}); "
                             f"DeepSpeed refuses it: fix them (dsconfig validate --world-size {gpus} suggests "
                             "trios that work) or pass --micro-batch")
    if resolved is not None and given and given != resolved and not override:
        if elastic:
            raise UsageError(f"--micro-batch {given}: elastic training runs the config with a micro batch of "
                             f"{resolved} on {gpus} GPUs (its pick from elasticity.micro_batch_sizes; DeepSpeed "
                             f"{version} ignores the batch keys); --micro-batch is for a config that says \"auto\" "
                             "or nothing. Change elasticity.micro_batch_sizes in the config instead.")
        raise UsageError(f"--micro-batch {given}: the config runs with a micro batch of {resolved} on {gpus} GPUs "
                         "(written, or derived from train_batch_size); --micro-batch is for a config that says "
                         "\"auto\" or nothing. Change train_micro_batch_size_per_gpu in the config instead.")
    return resolved


def _refused_batch(config: dict[str, Any], gpus: int, version: str) -> BatchResolution | None:
    """How DeepSpeed ``version`` refuses the batch keys of ``config`` on ``gpus`` GPUs (none written counts too);
    None when it accepts them, they say "auto" (the HF Trainer's to fill), or elastic training, which ignores
    them, computes the batch."""
    if "auto" in (config.get(k) for k in BATCH_KEYS) or runs_elastic(config, version):
        return None
    batch = resolve_batch(config, effective_world_size(config, gpus, version))
    return None if batch.ok else batch


def sized_batch(config: dict[str, Any], gpus: int, given: int | None, version: str) -> tuple[dict[str, Any],
                                                                                                str | None]:
    """``config`` as a sizing command sizes it when --micro-batch ``given`` stands in for batch keys DeepSpeed
    ``version`` refuses on ``gpus`` GPUs, and a caveat saying so: the micro batch given, the written
    gradient_accumulation_steps kept (an unresolved trio would time one micro-step), train_batch_size derived.
    ``config`` itself and None otherwise."""
    batch = _refused_batch(config, gpus, version) if given else None
    if batch is None or given is None:
        return config, None
    accum = positive_whole(config.get(GA))
    sized = {key: value for key, value in config.items() if key != TB} | {MB: given, GA: accum or 1}
    if batch.problem == "missing":  # nothing to replace; the refusal itself is refused_caveat's
        return sized, None
    written = f"the written accumulation {accum}" if accum else "accumulation 1"
    return sized, (f"DeepSpeed {version} refuses the config's batch keys on {gpus} GPUs ({batch.message}): sized "
                   f"as --micro-batch {given} × {written} on {gpus} GPUs (train_batch_size "
                   f"{run_or_written(sized, gpus, version, TB)}); write batch keys that agree to run it")


def micro_batch_words(config: dict[str, Any]) -> str:
    """What the config writes as its micro batch, in words, for a line saying --micro-batch replaced it."""
    written = config.get(MB)
    return "the config writes no micro batch" if written is None else f"the config writes {shown(written)}"


def hf_batch(config: dict[str, Any], micro: int, grad_accum: int, world_size: int, version: str) -> dict[str, Any]:
    """``config`` with its batch keys as the HF Trainer fills them for ``--gradient-accumulation-steps``
    (core.autofill: "auto" filled, written values that disagree refused as the Trainer refuses them); an
    accumulation the written keys make DeepSpeed ``version`` run otherwise is refused too, never sized silently."""
    from core.autofill import AutoFillError, trainer_batch

    try:
        filled = trainer_batch(config, micro, grad_accum, world_size, version)
    except AutoFillError as exc:
        raise UsageError(f"--gradient-accumulation-steps {grad_accum} with micro batch {micro} on {world_size} GPUs: "
                         f"{exc}") from None
    filled = _accelerate_sequence_parallel_batch(filled, world_size, version)
    batch = resolve_batch(filled, effective_world_size(filled, world_size, version))
    runs = (positive_whole(batch.grad_accum) if batch.ok else None) or 1  # an unresolved trio is timed as 1
    if runs != grad_accum:
        raise UsageError(f"--gradient-accumulation-steps {grad_accum}: DeepSpeed runs {runs} accumulation step(s) "
                         "with this config's batch keys (the HF Trainer fills only \"auto\" ones); write "
                         "gradient_accumulation_steps as \"auto\"")
    return filled


def _accelerate_sequence_parallel_batch(filled: dict[str, Any], world_size: int, version: str) -> dict[str, Any]:
    """``filled`` (the Trainer's batch keys) as DeepSpeed ``version`` gets them under sequence parallelism: the
    Trainer checked train_batch_size over every process, and accelerate (``Accelerator._prepare_deepspeed``, with
    the ParallelismConfig sequence parallelism needs under the Trainer) replaces it by micro batch × accumulation ×
    the data-parallel ranks (GPUs ÷ sequence_parallel_size) DeepSpeed checks."""
    from core.autofill import as_accelerate_passes

    sp = sequence_parallel_degree(filled) if reads_sequence_parallel(version) else None
    micro, accum = positive_whole(filled.get(MB)), positive_whole(as_accelerate_passes(filled).get(GA))
    if sp is None or world_size % sp or micro is None or accum is None:
        return filled
    return {**filled, TB: micro * accum * (world_size // sp)}


def micro_batch_when_unsaid(config: dict[str, Any], gpus: int, version: str,
                            grad_accum: int | None = None) -> tuple[int, str]:
    """The micro batch a sizing command uses on ``gpus`` GPUs when neither the config nor --micro-batch gives one,
    and the words saying so (as the app says them). For "auto", the HF Trainer's per_device_train_batch_size: the
    one a written train_batch_size leaves (DeepSpeed ``version``'s derivation, ``run_or_written``, with the Trainer's
    accumulation: ``grad_accum`` (--gradient-accumulation-steps) or its default 1 for an "auto" one; the Trainer
    refuses any other), else its default (8, as the app's Batch page starts); 1 when nothing is written."""
    from core.autofill import HF_DEFAULTS

    written = config.get(MB)
    if written == "auto":
        default = HF_DEFAULTS["per_device_train_batch_size"]
        total = config.get(TB)
        if positive_whole(total) is not None:  # written: it decides the per-device batch
            accum = config.get(GA)
            if accum == "auto":
                accum = grad_accum or HF_DEFAULTS["gradient_accumulation_steps"]
            trainer = {key: value for key, value in {TB: total, GA: accum}.items() if value is not None}
            # the Trainer checks train_batch_size over every process (TrainingArguments.world_size), never over
            # GPUs ÷ sequence_parallel_size as DeepSpeed does: its view has no sequence parallelism
            view = {key: value for key, value in config.items() if key != "sequence_parallel_size"}
            micro = run_or_written({**view, **trainer, MB: None}, gpus, version, MB)
            if micro is not None:
                return micro, (f'micro batch {micro} assumed: "auto" is filled by the HF Trainer from '
                               f"per_device_train_batch_size, which must be {micro} for the written "
                               f"train_batch_size {shown(total)} on {gpus} GPUs (the Trainer refuses any other)")
            return default, (f'micro batch {default} assumed: "auto" is filled by the HF Trainer from '
                             f"per_device_train_batch_size, whose default it is, but no per-device batch gives the "
                             f"written train_batch_size {shown(total)} on {gpus} GPUs: the Trainer refuses the "
                             "config (--micro-batch sets another)")
        return default, (f'micro batch {default} assumed: "auto" is filled by the HF Trainer from '
                         "per_device_train_batch_size, whose default it is (--micro-batch sets another)")
    micro, said = micro_batch_one(written)
    return micro, f"{said} (--micro-batch sets another)"


def positive_int(text: str) -> int:
    """argparse type: a whole number ≥ 1 (``2e3`` is 2000), as every count flag of every subcommand reads it."""
    return positive(int)(text)


#: The most GPUs (or nodes, or GPUs per node) a count flag takes: far beyond any cluster, and short of the counts
#: whose arithmetic (world sizes, rings) stops meaning anything.
MAX_GPUS = 1_000_000


def gpu_count(text: str) -> int:
    """argparse type: a number of GPUs or nodes, 1 … ``MAX_GPUS``, the same for every subcommand."""
    return positive(int, at_most=MAX_GPUS)(text)


def gpu_counts(text: str) -> list[int]:
    """argparse type: one GPU count or several separated by commas (``8,16,64``), each as :func:`gpu_count`."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r}: write GPU counts separated by commas, e.g. 8,16,64")
    return [gpu_count(part) for part in parts]


def add_world_sizes_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``--world-size N[,N...]``: one GPU count or several, comma-separated or the flag repeated (``None`` when
    not given); ``what`` ends the help text."""
    parser.add_argument("--world-size", type=gpu_counts, action="extend", default=None, metavar="N[,N...]",
                        help=f"GPU count(s), e.g. 8 or 8,16,64 (or the flag repeated): {what}")


def catalog_gpu(text: str) -> str:
    """argparse type: the catalog name of the GPU ``text`` names: its name (any case) or a part only it has
    (``H100`` when one H100 is listed, ``a100 80``)."""
    names = gpu_names()
    wanted = " ".join(text.split()).lower()
    exact = [name for name in names if name.lower() == wanted]
    # whole words before parts of words: "L4" is the L4, not also the L40S
    words = [name for name in names if wanted and f" {wanted} " in f" {name.lower()} "]
    matches = exact or words or ([name for name in names if wanted in name.lower()] if wanted else [])
    if len(matches) == 1:
        return matches[0]
    close = _close_gpus(wanted, names)
    hint = (f"it matches {', '.join(matches)}" if matches else
            (f"did you mean {' or '.join(close)}? " if close else "") + f"pick one of: {', '.join(names)}")
    raise argparse.ArgumentTypeError(f"{text!r} is not one GPU of the catalog ({hint})")


def _gpu_words(name: str) -> set[str]:
    """A GPU name's words, letters and digits apart ("A100-SXM4-80GB": a, 100, sxm, 4, 80, gb)."""
    return set(re.findall(r"[a-z]+|[0-9]+", name.lower()))


def _close_gpus(wanted: str, names: Sequence[str]) -> list[str]:
    """The catalog GPUs a name the catalog does not have may mean (as nvidia-smi prints them: "NVIDIA
    A100-SXM4-80GB", "Tesla T4", "RTX4090"): those sharing the most words with it, a number among them (the model
    or the memory); none when they share none."""
    words = _gpu_words(wanted)
    shared = {name: words & _gpu_words(name) for name in names}
    best = max((len(common) for common in shared.values() if any(w.isdigit() for w in common)), default=0)
    return [name for name, common in shared.items() if best and len(common) == best
            and any(w.isdigit() for w in common)][:3]


#: The longest sequence a --seq-len takes (2**30 tokens): far beyond any model, and short of the numbers whose
#: activations overflow the arithmetic.
MAX_SEQ_LEN = 2**30


def seq_len(text: str) -> int:
    """argparse type: a sequence length in tokens, 1 … ``MAX_SEQ_LEN`` (``4e3`` is 4000), the same for every
    subcommand."""
    return positive(int, at_most=MAX_SEQ_LEN)(text)


#: The sequence length a sizing command assumes when --seq-len is not given.
DEFAULT_SEQ_LEN = 2048

#: The help of the flags every sizing command (fit, estimate, plan, predict) has; ``%(default)s`` is argparse's
#: default of the flag, so that no default is written twice.
FORMAT_HELP = ("text (for reading) or json (for scripts: an error inside the command is printed as "
               '{"error": {"message": ..., "flag": ...}} on stdout too; a usage error argparse reports before the '
               "command runs stays text on stderr); default %(default)s")
RECOMPUTE_HELP = ("gradient (activation) checkpointing in the model, not a ds_config key: full recomputes each "
                  "layer in the backward pass (the least activation memory), selective only the attention core; "
                  "default %(default)s")
SEQ_LEN_HELP = (f"tokens per sequence (default {DEFAULT_SEQ_LEN}, or the model's learned positions when fewer, "
                "e.g. 1024 for GPT-2)")


def default_seq_len(args: argparse.Namespace, spec: Any) -> None:
    """Fill ``args.seq_len`` when not given: the default, or a learned position table's length when shorter (a
    model cannot run beyond it); every sizing and planning command the same."""
    from core import models

    if args.seq_len is None:
        known = isinstance(spec, models.ModelSpec)
        args.seq_len = spec.runnable_sequence(DEFAULT_SEQ_LEN) if known else DEFAULT_SEQ_LEN


def attention_flag_help() -> str:
    """--attention's help: every implementation with what it is, and the flag's default."""
    from core.memory import attention_help

    return attention_help().replace("%", "%%") + "; default %(default)s"


def positive(kind: type, at_most: float | None = None) -> Callable[[str], Any]:
    """argparse type: a finite number > 0 of ``kind`` (int accepts ``2e3`` and ``4096.0``, exactly: ``1e30`` is
    10**30 and ``2.5e0`` or ``2.5`` is refused, not truncated), and no more than ``at_most`` when given."""

    def parse(text: str) -> Any:
        try:
            if kind is int and ("e" in text.lower() or "." in text):
                exact = decimal.Decimal(text)
                # no farther than floats go (what int(float(text)) accepted)
                if not exact.is_finite() or exact != exact.to_integral_value() or exact.adjusted() > 308:
                    raise ValueError(text)
                value = int(exact)
            else:
                value = kind(text)
        except (ValueError, OverflowError, decimal.InvalidOperation):
            what = "a positive whole number" if kind is int else "a positive number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        if at_most is not None and value > at_most:
            limit = int(at_most) if float(at_most).is_integer() else at_most
            raise argparse.ArgumentTypeError(f"expected a number up to {limit:,}, got {text!r}")
        return value

    return parse


#: The largest size in GiB a size flag takes (2**30 GiB, an exbibyte): beyond any node, and far from overflowing.
MAX_GIB = float(2**30)

#: The most each rate or amount flag of plan and predict takes: far beyond any machine or training run, and short
#: of the numbers whose arithmetic overflows (or that a calibration's scaled rates push past what the planner's
#: Cluster accepts, 1e15).
MAX_NETWORK_GBIT_S = 1e6  # --network, Gbit/s per node: a petabit
MAX_NVME_GBYTE_S = 1e6  # --nvme-bandwidth, GB/s per node: a petabyte per second
MAX_CPU_ADAM_PARAMS_PER_S = 1e12  # --cpu-adam, parameters/s per node: 500x a 64-core node's 1.8e9
MAX_TOKENS = 1e15  # --tokens: a quadrillion, 60x the largest published training run
MAX_PRICE_PER_GPU_HOUR = 1e6  # --price, USD


def gib_or_zero(text: str) -> int:
    """argparse type: a size in GiB that may be 0 (no NVMe), returned in bytes."""
    try:
        zero = float(text) == 0
    except ValueError:
        zero = False  # gib says what is wrong with it
    return 0 if zero else gib(text)


def gib(text: str) -> int:
    """argparse type: a size in GiB, returned in bytes."""
    from core.memory import GIB

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in GiB, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive size in GiB, got {text!r}")
    if value > MAX_GIB:
        raise argparse.ArgumentTypeError(f"expected a size in GiB up to {MAX_GIB:.0e} (an exbibyte), got {text!r}")
    if int(value * GIB) == 0:
        raise argparse.ArgumentTypeError(f"expected a size in GiB of at least one byte, got {text!r}")
    return int(value * GIB)


def _target(config: dict[str, Any]) -> str:
    """Who reads ``config`` before DeepSpeed does: the HF Trainer ("hf") when it has "auto" values, else nobody."""
    from core.autofill import find_auto

    return "hf" if find_auto(config) else "deepspeed"


def refused_caveat(config: dict[str, Any], world_size: int, version: str) -> str | None:
    """What makes DeepSpeed ``version`` (or, with "auto" values, the HF Trainer) refuse ``config`` on ``world_size``
    GPUs, as a caveat for a number computed as if it ran (the validator's errors); None when nothing does."""
    from core.validate import validate

    target = _target(config)
    report = validate(config, world_size=world_size, target=target, version=version)
    errors = [f for f in report.findings if f.severity == "error"]
    if not errors:
        return None
    listed = "; ".join(f"{f.code} at {f.path or '<root>'}" for f in errors[:3])
    more = f" and {len(errors) - 3} more" if len(errors) > 3 else ""
    runner = f"the HF Trainer (with DeepSpeed {version})" if target == "hf" else f"DeepSpeed {version}"
    hf = " --target hf" if target == "hf" else ""  # what was checked here: without it validate reads "auto" raw
    return (f"{runner} refuses this config as written ({len(errors)} error(s): {listed}{more}); the numbers assume "
            f"it is fixed (dsconfig validate{hf} --deepspeed-version {version} --world-size {world_size} FILE says "
            "how)")


def config_caveats(config: dict[str, Any], gpus: int, version: str, precision: str | None = None) -> list[str]:
    """What fit and estimate say before their numbers about ``config`` itself: what makes DeepSpeed ``version``
    refuse it on ``gpus`` GPUs (as predict says it), and the precision sized when fp16 and bf16 are both on and
    ``precision`` (estimate's --precision) does not choose one."""
    from core.effective import effective
    from core.rules.precision import fp16_and_bf16_both_on

    caveats = [refusal] if (refusal := refused_caveat(config, gpus, version)) else []
    meaning = effective(config, version)
    if precision is None and fp16_and_bf16_both_on(meaning, hf=_target(config) == "hf"):
        caveats.append(f"fp16 and bf16 are both enabled, which DeepSpeed refuses: sized as {meaning.precision_mode}; "
                       "disable the one you do not train in")
    return caveats


def gpu_notes(gpu: GPU | None, precision: str) -> list[str]:
    """What a sizing command says about the GPU it sized for: training in ``precision`` it cannot do well
    (``GPU.precision_problem``, as predict and the app say it), and how to count a package of several devices."""
    if gpu is None:
        return []
    notes = [f"{problem}." for problem in (gpu.precision_problem(precision),) if problem]
    counting = gpu.counting_note()  # the app's Start page says it in these words
    return notes + ([counting] if counting else [])
