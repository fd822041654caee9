"""Bad-input catalogue through the CLI: every row is a file (or argument) someone could really pass.

Each row states the exit code (2 unreadable, 1 errors found, 0 accepted) and the message fragments that
must be shown. No row may ever print a traceback, in-process or through a real ``python -m core``.
Rows that expose a core bug are marked ``xfail(strict=True)`` with the reason, so they flip when fixed.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import random
import subprocess
import sys
import traceback
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from core.cli import main
from core.io import MAX_CONFIG_BYTES
from core.schema import DeepSpeedConfig
from core.schema.walk import SchemaField, unique_fields

ROOT = Path(__file__).resolve().parent.parent
BATCH = '"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1'
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


@dataclass(frozen=True)
class Row:
    id: str
    content: str | bytes
    code: int
    fragments: tuple[str, ...]
    xfail: str | None = None


def _deep(levels: int, open_: str, close: str, inner: str = "1") -> str:
    return open_ * levels + inner + close * levels


ROWS: list[Row] = [
    # --- syntax
    Row("broken-json", '{"train_batch_size": 8,,}', 2, ("not valid JSON", "line 1")),
    Row("unclosed-object", '{"train_batch_size": 8', 2, ("not valid JSON",)),
    Row("missing-colon", '{"train_batch_size" 8}', 2, ("not valid JSON", "line 1")),
    # DeepSpeed's hjson reads comments; a syntax error after one must still be located where it is.
    Row("broken-after-comment", '// the 7B run\n{"train_batch_size": 8,, }', 2, ("not valid JSON", "line 2")),
    # DeepSpeed reads configs with hjson, which accepts a trailing comma: so does dsconfig.
    Row("trailing-comma", '{"train_batch_size": 8,}', 0, ("OK", "train_batch_size=8")),
    Row("duplicate-keys", '{\n  "train_batch_size": 8,\n  "train_batch_size": 16\n}', 2,
        ("train_batch_size", "twice", "line 3")),
    Row("duplicate-nested-keys", '{"zero_optimization": {"stage": 1, "stage": 2}}', 2, ("'stage'", "twice")),
    # --- not an object
    Row("list-not-object", '[{"train_batch_size": 8}]', 2, ("a list", "JSON object")),
    Row("bare-string", '"ds_config.json"', 2, ("a string", "JSON object")),
    Row("bare-number", "8", 2, ("a number", "JSON object")),
    Row("null-document", "null", 2, ("null", "JSON object")),
    # --- numbers JSON does not have
    Row("nan", '{"gradient_clipping": NaN}', 2, ("NaN", "finite")),
    Row("infinity", '{"gradient_clipping": Infinity}', 2, ("Infinity", "finite")),
    Row("minus-infinity", '{"gradient_clipping": -Infinity}', 2, ("Infinity", "finite")),
    Row("1e400", '{"gradient_clipping": 1e400}', 2, ("gradient_clipping", "finite")),
    Row("int-beyond-float-range-loss-scale", "{" + BATCH + ', "fp16": {"enabled": true, "loss_scale": 1' + "0" * 400
        + "}}", 1, ("fp16.loss_scale",)),
    Row("int-5000-digits", '{"train_batch_size": 1' + "0" * 5000 + "}", 2, ("digits",)),
    Row("int-5000-digits-message", '{"train_batch_size": 1' + "0" * 5000 + "}", 2, ("too large",)),
    # --- size and shape
    Row("deep-10000-objects", _deep(10_000, '{"a": ', "}"), 2, ("deeper",)),
    Row("deep-10000-lists", '{"a": ' + _deep(10_000, "[", "]") + "}", 2, ("deeper",)),
    Row("deep-100-objects", _deep(100, '{"a": ', "}"), 2, ("deeper than 64",)),
    Row("10MB-file", '{"pad": "' + "x" * (10 * 2**20) + '"}', 2, ("MB", "too large", "limit")),
    # --- not text
    Row("png-header", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), 2, ("not UTF-8", "byte 0")),
    Row("random-bytes", random.Random(0).randbytes(4096), 2, ("not UTF-8",)),
    Row("gzip-json", gzip.compress(b'{"train_batch_size": 8}', mtime=0), 2, ("not UTF-8",)),
    Row("utf16-with-bom", '{"train_batch_size": 8}'.encode("utf-16"), 2, ("UTF-16 text", "save it as UTF-8")),
    Row("utf16-le-no-bom", '{"train_batch_size": 8}'.encode("utf-16-le"), 2, ("UTF-16 text", "save it as UTF-8")),
    Row("nul-in-text", '{"train_batch_size": 8}\x00', 2, ("NUL",)),
    Row("utf8-bom-accepted", b'\xef\xbb\xbf{"train_batch_size": 8}', 0, ("OK",)),
    # --- empty
    Row("empty-file", "", 2, ("empty",)),
    Row("whitespace-only", " \n\t\n", 2, ("empty",)),
    # hjson reads a comment-only file as {}: DeepSpeed then has no batch size, and neither do we.
    Row("only-a-comment", "// ds_config for the 7B run\n", 1, ("batch.missing", "train_batch_size")),
    Row("only-a-block-comment", "/* nothing here */", 1, ("batch.missing",)),
    # --- wrong file
    Row("hf-model-config", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}', 1,
        ("batch.missing", "Unknown top-level key `architectures`", "hidden_size")),
    # --- negative and zero sizes
    Row("negative-train-batch", '{"train_batch_size": -8}', 1, ("train_batch_size is -8", "greater than 0")),
    Row("zero-micro-batch", '{"train_micro_batch_size_per_gpu": 0}', 1, ("train_batch_size is 0",)),
    Row("zero-grad-accum", "{" + BATCH.replace('"gradient_accumulation_steps": 1', '"gradient_accumulation_steps": 0')
        + "}", 1, ("greater than 0",)),
    Row("negative-bucket", "{" + BATCH + ', "zero_optimization": {"stage": 2, "reduce_bucket_size": -1}}', 1,
        ("zero_optimization.reduce_bucket_size", "-1")),
    Row("negative-stage", "{" + BATCH + ', "zero_optimization": {"stage": -1}}', 1,
        ("zero_optimization.stage", "0, 1, 2 or 3")),
    Row("zero-loss-scale-window", "{" + BATCH + ', "fp16": {"enabled": true, "loss_scale_window": 0}}', 1,
        ("loss_scale_window",)),
    Row("zero-steps-per-print", "{" + BATCH + ', "steps_per_print": 0}', 1, ("steps_per_print",)),
    # --- unknown enum values
    Row("stage-7", "{" + BATCH + ', "zero_optimization": {"stage": 7}}', 1, ("zero_optimization.stage",)),
    Row("offload-device-gpu", "{" + BATCH + ', "zero_optimization": {"stage": 3, "offload_param": {"device": '
        '"gpu"}}}', 1, ("zero_optimization.offload_param.device", '"gpu"')),
    Row("optimizer-typo", "{" + BATCH + ', "optimizer": {"type": "Adamm", "params": {}}}', 1,
        ("optimizer.type", '"Adamm"')),
    Row("scheduler-unknown", "{" + BATCH + ', "scheduler": {"type": "Cosine", "params": {}}}', 1,
        ("scheduler.type", '"Cosine"')),
    # --- hostile strings: shown verbatim in text, still valid JSON in --format json
    Row("hostile-key", "{" + BATCH + f', "{SCRIPT}": 1}}', 0, (SCRIPT,)),
    Row("hostile-enum-value", "{" + BATCH + f', "zero_optimization": {{"stage": 3, "offload_param": {{"device": '
        f'"{IMG}"}}}}}}', 1, (IMG,)),
    Row("hostile-optimizer", "{" + BATCH + f', "optimizer": {{"type": "{SCRIPT}", "params": {{}}}}}}', 1, (SCRIPT,)),
    Row("lone-surrogate-key", '{"\\ud800": 1, ' + BATCH + "}", 0, ("Unknown top-level key",)),
]


def _params(rows: list[Row]):
    return [
        pytest.param(row, id=row.id, marks=[pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else [])
        for row in rows
    ]


def _write(tmp_path: Path, content: str | bytes, name: str = "ds_config.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def run_cli(argv: list[str], capsys) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr) of ``dsconfig`` in-process; an escaping exception becomes its traceback."""
    out = io.StringIO()
    try:
        code: int | None = main(argv, out=out)
        crash = ""
    except BaseException:  # a crash is the thing under test
        code, crash = None, traceback.format_exc()
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out, captured.err + crash


def test_catalogue_has_enough_kinds():
    assert len({row.id for row in ROWS}) == len(ROWS) >= 25


@pytest.mark.parametrize("row", _params(ROWS))
def test_validate_bad_input(row, tmp_path, capsys):
    path = _write(tmp_path, row.content)
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert "Traceback" not in out + err
    assert code == row.code, out + err
    # an unreadable file is exit 2's one message on stderr, said once: the text report does not repeat it
    said = err if code == 2 else out
    for fragment in row.fragments:
        assert fragment in said, f"{fragment!r} missing from:\n{said[:2000]}"
    if code == 2:
        assert err.startswith(f"dsconfig validate: error: {path}") and out == ""  # the unreadable file is named

    code_json, out_json, err_json = run_cli(["validate", str(path), "--format", "json"], capsys)
    assert "Traceback" not in out_json + err_json
    assert code_json == row.code
    data = json.loads(out_json)
    assert data[0]["file"] == str(path) and data[0]["ok"] is (row.code == 0)
    text_in_json = json.dumps(data, ensure_ascii=False)
    for fragment in row.fragments:
        if fragment.startswith("<"):  # hostile strings survive JSON output verbatim
            assert fragment in text_in_json


MIGRATE_ROWS = [r for r in ROWS if r.code == 2 and not r.xfail] + [
    Row("migrate-hostile-key", "{" + BATCH + f', "{SCRIPT}": 1}}', 0, (SCRIPT,)),
]


@pytest.mark.parametrize("row", _params(MIGRATE_ROWS))
def test_migrate_bad_input(row, tmp_path, capsys):
    path = _write(tmp_path, row.content)
    original = path.read_bytes()
    code, out, err = run_cli(["migrate", str(path), "--write"], capsys)
    assert "Traceback" not in out + err
    assert code == row.code
    if row.code == 2:
        assert err.startswith(f"dsconfig migrate: error: {path}: ")
        for fragment in row.fragments:
            assert fragment in err
        assert path.read_bytes() == original  # an unreadable file is never rewritten
    code, out, err = run_cli(["migrate", str(path)], capsys)
    if row.code == 0:
        for fragment in row.fragments:
            assert fragment in out


# ---------------------------------------------------------------- estimate --config reads the same files
# (it used json.loads until 08f69dc: tracebacks on deep nesting, NaN and duplicate keys accepted, HJSON refused)

ESTIMATE_ROWS = [
    *(Row(r.id, r.content, 2 if r.code == 2 else 0, ()) for r in ROWS if not r.xfail),
    Row("int-beyond-float-range", '{"zero_optimization": {"stage": 1' + "0" * 400 + "}}", 0, ()),
]


@pytest.mark.parametrize("row", _params(ESTIMATE_ROWS))
def test_estimate_config_bad_input(row, tmp_path, capsys):
    """What validate refuses as unreadable, estimate refuses too; everything else is estimated leniently."""
    path = _write(tmp_path, row.content)
    code, out, err = run_cli(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--config", str(path)], capsys)
    assert "Traceback" not in out + err
    assert code == row.code, err
    if code == 2:
        assert err.startswith("dsconfig estimate: error: ")
    else:
        assert "GPU" in out


# ---------------------------------------------------------------- wrong types, every field and section


def _annotation_types(annotation) -> set:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_annotation_types(a) for a in typing.get_args(annotation)))
    return {origin or annotation}


def wrong_value(field: SchemaField):
    """A value of the wrong JSON type for ``field``, derived from its annotation."""
    kinds = _annotation_types(field.info.annotation)
    if field.model is not None or field.item_model is not None:
        return "not-an-object"
    if kinds & {int, float} and bool not in kinds:
        return "many"
    if bool in kinds:
        return "yes please"
    if str in kinds:
        return ["not", "text"]
    return {"unexpected": "object"}


def _is_section(model) -> bool:
    return isinstance(model, type) and issubclass(model, BaseModel)


TOP_LEVEL = [f for f in unique_fields(DeepSpeedConfig) if f.name not in
             ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps")]
NESTED = [
    (f, inner)
    for f in TOP_LEVEL if _is_section(f.model)
    for inner in unique_fields(f.model)[:1]
]


def _finding_paths(out_json: str) -> list[str]:
    return [finding["path"] for finding in json.loads(out_json)[0]["findings"]]


@pytest.mark.parametrize("field", TOP_LEVEL, ids=lambda f: f.name)
def test_wrong_type_in_every_top_level_field(field, tmp_path, capsys):
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, field.name: wrong_value(field)}
    path = _write(tmp_path, json.dumps(config))
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert "Traceback" not in out + err
    assert code in (0, 1)
    assert f" {field.name}" in out  # a finding names the field
    code_json, out_json, _ = run_cli(["validate", str(path), "--format", "json"], capsys)
    assert code_json == code
    assert any(p == field.name or p.startswith(field.name + ".") for p in _finding_paths(out_json))


@pytest.mark.parametrize(("section", "field"), NESTED, ids=lambda f: f.name)
def test_wrong_type_inside_every_section(section, field, tmp_path, capsys):
    inner = {field.alias or field.name: wrong_value(field)}
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, section.name: inner}
    path = _write(tmp_path, json.dumps(config))
    code, out, err = run_cli(["validate", str(path), "--format", "json"], capsys)
    assert "Traceback" not in out + err
    assert code in (0, 1)
    dotted = f"{section.name}.{field.alias or field.name}"
    # The finding is on the field itself, or on the section when the whole section is refused (removed keys).
    assert any(p == dotted or p.startswith(dotted + ".") or p == section.name for p in _finding_paths(out)), out


@pytest.mark.deepspeed
@pytest.mark.parametrize(
    "field",
    TOP_LEVEL, ids=lambda f: f.name,
)
def test_wrong_type_refused_by_deepspeed_is_an_error(field, tmp_path, capsys):
    """DeepSpeed is the judge: where its own parser refuses the wrong type, dsconfig exits 1."""
    pytest.importorskip("deepspeed")
    from deepspeed.runtime.config import DeepSpeedConfig as RealDeepSpeedConfig

    config = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              field.name: wrong_value(field)}
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            RealDeepSpeedConfig(json.loads(json.dumps(config)))
        refused = False
    except Exception:  # any exception is DeepSpeed refusing the config
        refused = True
    finally:
        logging.disable(logging.NOTSET)
    path = _write(tmp_path, json.dumps(config))
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert "Traceback" not in out + err
    if refused:
        assert code == 1, out
    else:
        assert code in (0, 1)


# ---------------------------------------------------------------- export: preset names and --set values


@pytest.mark.parametrize(
    "name",
    ["../etc/passwd", "/etc/passwd", "..", "dp-bf16/../../x", "a\x00b", "", "dp bf16", "x" * 65, "dp-bf16.json",
     "~/presets/x", "C:\\presets\\x"],
)
@pytest.mark.parametrize("command", [["export", "--preset"], ["presets", "show"]], ids=["export", "presets-show"])
def test_unsafe_preset_names_refused(command, name, capsys):
    code, out, err = run_cli([*command, name], capsys)
    assert "Traceback" not in out + err
    assert code == 2
    assert "invalid preset name" in err
    assert out == ""


def _first_preset(capsys) -> str:
    code, out, _ = run_cli(["presets", "list", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    entries = data if isinstance(data, list) else data.get("presets", [])
    return next(e["name"] for e in entries if e.get("target", "deepspeed") == "deepspeed")


EXPORT_ROWS = [
    Row("set-not-assignment", "train_batch_size", 2, ("KEY=VALUE",)),
    Row("set-into-non-object", "train_batch_size=8\ntrain_batch_size.x=1", 2, ("not an object",)),
    Row("set-empty-path", ".=1", 2, ("dotted key path",)),
    Row("set-nan", "gradient_clipping=NaN", 2, ("gradient_clipping", "NaN")),
    Row("set-nan-in-strict-section", "zero_optimization.reduce_bucket_size=NaN", 2,
        ("zero_optimization.reduce_bucket_size", "NaN")),
    Row("set-stage-7", "zero_optimization.stage=7", 1, ("zero_optimization.stage",)),
    Row("set-hostile", f"optimizer.type={SCRIPT}", 1, (SCRIPT,)),
]


@pytest.mark.parametrize("row", _params(EXPORT_ROWS))
def test_export_bad_set_values(row, capsys):
    preset = _first_preset(capsys)
    sets = [arg for value in str(row.content).split("\n") for arg in ("--set", value)]
    code, out, err = run_cli(["export", "--preset", preset, *sets], capsys)
    assert "Traceback" not in out + err
    assert code == row.code, err
    for fragment in row.fragments:
        assert fragment in err
    assert out == ""  # nothing exported


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400"])
def test_export_force_with_non_finite_value(value, capsys):
    preset = _first_preset(capsys)
    code, out, err = run_cli(["export", "--preset", preset, "--set", f"gradient_clipping={value}", "--force"],
                             capsys)
    assert "Traceback" not in out + err
    assert code in (1, 2)
    assert "gradient_clipping" in err


# ---------------------------------------------------------------- a real process: stderr too

SUBPROCESS_ROWS = ["broken-json", "10MB-file", "png-header", "deep-10000-objects", "hostile-enum-value", "nan",
                   "lone-surrogate-key"]


def _row(row_id: str) -> Row:
    return next(r for r in ROWS if r.id == row_id)


@pytest.mark.parametrize("command", ["validate", "migrate"])
@pytest.mark.parametrize(
    "row_id",
    SUBPROCESS_ROWS,
)
def test_real_process_never_prints_a_traceback(row_id, command, tmp_path):
    row = _row(row_id)
    path = _write(tmp_path, row.content)
    proc = subprocess.run([sys.executable, "-m", "core", command, str(path)], cwd=ROOT, capture_output=True,
                          timeout=120, check=False)
    stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stdout + stderr
    if command == "validate":
        assert proc.returncode == row.code
        for fragment in row.fragments:  # exit 2's message on stderr only, as a CI log shows it once
            assert fragment in (stderr if row.code == 2 else stdout)
        if row.code == 2:
            assert stdout == ""
    else:
        assert proc.returncode == (2 if row.code == 2 else 0)
        if row.code == 2:
            assert stderr.startswith(f"dsconfig {command}: error: ") and row.fragments[0] in stderr


def test_real_process_stdin_and_limit():
    """The size limit also holds for standard input (read is bounded, not the whole stream)."""
    proc = subprocess.run([sys.executable, "-m", "core", "validate", "-"], cwd=ROOT, capture_output=True,
                          input=b'{"pad": "' + b"x" * (MAX_CONFIG_BYTES + 10) + b'"}', timeout=120, check=False)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text
    assert proc.returncode == 2 and "MB" in text


def test_real_process_migrate_write_to_stdin_is_refused_before_reading_or_printing():
    """``migrate - --write`` cannot write anywhere: the refusal is all it prints, whatever standard input holds."""
    proc = subprocess.run([sys.executable, "-m", "core", "migrate", "-", "--write"], cwd=ROOT, capture_output=True,
                          input=b'{"zero_optimization": {"stage": 2, "cpu_offload": true}}', timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().splitlines()[-1] == "dsconfig migrate: error: --write needs files, not standard input"
    assert "migrated" not in proc.stderr.decode()


# ---------------------------------------------------------------- outputs that cannot be written


@pytest.mark.parametrize("command", ["validate", "fix", "migrate", "versions"])
def test_real_process_with_standard_input_closed_says_so(command):
    """A CI step or cron job may start dsconfig with no standard input at all (Python's sys.stdin is None): reading
    ``-`` printed a traceback and exited 1, which a lint step reads as "the config has errors"."""
    proc = subprocess.run([sys.executable, "-m", "core", command, "-"], cwd=ROOT, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False,
                          preexec_fn=lambda: os.close(0))
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text
    assert proc.returncode == 2 and "cannot read standard input: it is closed" in text


@pytest.mark.parametrize(("argv", "where"), [
    (["validate", "{config}"], "/dev/full"), (["validate", "{config}"], "closed"),
    (["explain"], "/dev/full"), (["schema"], "/dev/full")])
def test_real_process_output_that_cannot_be_written_is_exit_2_not_the_verdict(argv, where, tmp_path):
    """A valid config's verdict written to a full disk, or with standard output closed: one line on stderr and exit
    2 (the output is lost), never a traceback and exit 1 ("errors found")."""
    config = tmp_path / "ok.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1}')
    args = [a.format(config=config) for a in argv]
    if where == "/dev/full":
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                                  timeout=120, check=False)
    else:
        proc = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, stderr=subprocess.PIPE, timeout=120,
                              check=False, stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr
    assert proc.returncode == 2
    assert stderr.startswith(f"dsconfig {args[0]}: error: cannot write the output")


def test_schema_output_into_missing_folder(tmp_path, capsys):
    target = tmp_path / "no-such-folder" / "schema.json"
    code, out, err = run_cli(["schema", "-o", str(target)], capsys)
    assert "Traceback" not in out + err
    assert code == 2 and str(target) in err


def test_migrate_write_to_unwritable_file(tmp_path, capsys, monkeypatch):
    path = _write(tmp_path, '{"zero_optimization": {"stage": 2, "cpu_offload": true}}')

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    code, out, err = run_cli(["migrate", str(path), "--write"], capsys)
    assert "Traceback" not in out + err
    assert code == 2 and "Permission denied" in err


def test_export_output_into_missing_folder(tmp_path, capsys):
    target = tmp_path / "no-such-folder" / "ds_config.json"
    code, out, err = run_cli(["export", "--preset", _first_preset(capsys), "-o", str(target)], capsys)
    assert "Traceback" not in out + err
    assert code == 2 and "cannot write" in err and not target.exists()


# ---------------------------------------------------------------- sizing commands: arguments and huge batches

LLAMA = ["--model", "meta-llama/Llama-2-7b-hf"]
H100 = ["--gpu", "NVIDIA H100 80GB"]
OK_CONFIG = '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}'
#: Micro batches DeepSpeed parses (any positive int) whose activations exceed 2**63 bytes, and float range.
HUGE_MICRO = '{"train_micro_batch_size_per_gpu": 100000000000000000000, "gradient_accumulation_steps": 1}'
TB_AND_GA = '{"train_batch_size": 64, "gradient_accumulation_steps": 2}'
#: No batch keys: --micro-batch gives the micro batch (a config that writes one refuses a different --micro-batch)
NO_BATCH = '{"zero_optimization": {"stage": 2}}'
BEYOND_FLOAT_MICRO = '{"train_micro_batch_size_per_gpu": 1' + "0" * 400 + ', "gradient_accumulation_steps": 1}'

#: (id, argv with {cfg} for the config file, config text, exit code, fragments of stderr)
SIZING_ROWS = [
    ("estimate-empty-model-name", ["estimate", "--model", ""], OK_CONFIG, 2, ("Unknown model ''",)),
    ("plan-empty-model-name", ["plan", "--model", "", *H100, "--global-batch", "8"], OK_CONFIG, 2,
     ("Unknown model ''",)),
    ("estimate-params-with-config", ["estimate", "--params", "7e9", "--config", "{cfg}"], "{", 2,
     ("--config goes with --model or --hf-config",)),
    ("estimate-buffer-factor-nan", ["estimate", "--params", "7e9", "--buffer-factor", "nan"], OK_CONFIG, 2,
     ("--buffer-factor", "positive")),
    ("estimate-buffer-factor-negative", ["estimate", "--params", "7e9", "--buffer-factor", "-1"], OK_CONFIG, 2,
     ("--buffer-factor", "positive")),
    # more than 2**63 bytes: an answer all the same (was an OverflowError)
    ("estimate-huge-micro-batch", ["estimate", *LLAMA, "--config", "{cfg}"], HUGE_MICRO, 0,
     ("micro batch 100000000000000000000", "DOES NOT FIT")),
    ("fit-huge-micro-batch", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], HUGE_MICRO, 1, ("DOES NOT FIT (GPU)",)),
    ("estimate-micro-batch-beyond-float", ["estimate", *LLAMA, "--config", "{cfg}"], BEYOND_FLOAT_MICRO, 2,
     ("train_micro_batch_size_per_gpu", "too large to estimate")),
    # a train_batch_size of 10**30: the micro-batch way searches a bounded range and the speed of the ways is
    # not predicted for 10**29 micro-steps (was: "Maximum allowed size exceeded", then an OverflowError)
    # an int in e-notation is read exactly (was int(float(text)): 2.5e0 silently became 2, 1e30 became
    # 1000000000000000019884624838656)
    ("plan-global-batch-fraction-e-notation", ["plan", *LLAMA, *H100, "--global-batch", "8.5e0"], OK_CONFIG, 2,
     ("--global-batch", "'8.5e0'")),
    ("predict-micro-batch-fraction-e-notation", ["predict", "{cfg}", *LLAMA, *H100, "--micro-batch", "2.5e0"],
     OK_CONFIG, 2, ("--micro-batch", "'2.5e0'")),
    ("predict-micro-batch-1e30-exact", ["predict", "{cfg}", *LLAMA, *H100, "--micro-batch", "1e30"], NO_BATCH, 0,
     ("micro batch 1" + "0" * 30 + " x",)),
    # tokens per step beyond float range (was: OverflowError)
    ("plan-global-batch-1e308", ["plan", *LLAMA, *H100, "--global-batch", "1e308"], OK_CONFIG, 2,
     ("too many to predict",)),
    # train_batch_size 64 and accumulation 2 on 8 GPUs: DeepSpeed runs micro batch 4 (predict refused the config,
    # fit and estimate sized micro batch 1, 4x less activation memory)
    ("predict-derived-micro-batch", ["predict", "{cfg}", *LLAMA, *H100], TB_AND_GA, 0,
     ("micro batch 4 x 2 accumulation",)),
    ("fit-derived-micro-batch", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], TB_AND_GA, 1, (", micro batch 4, 2048",)),
    ("estimate-derived-micro-batch", ["estimate", *LLAMA, "--config", "{cfg}"], TB_AND_GA, 0, ("micro batch 4,",)),
    ("predict-negative-micro-batch", ["predict", "{cfg}", *LLAMA, *H100],
     '{"train_micro_batch_size_per_gpu": -1}', 2, ("train_micro_batch_size_per_gpu is -1", "--micro-batch")),
    ("fit-huge-train-batch", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], '{"train_batch_size": 1' + "0" * 30 + "}",
     1, ()),
]


@pytest.mark.parametrize(("argv", "content", "code", "fragments"), [r[1:] for r in SIZING_ROWS],
                         ids=[r[0] for r in SIZING_ROWS])
def test_sizing_commands_bad_input(argv, content, code, fragments, tmp_path, capsys):
    path = _write(tmp_path, content)
    got, out, err = run_cli([str(path) if a == "{cfg}" else a for a in argv], capsys)
    assert "Traceback" not in out + err, err
    assert got == code, (got, err)
    for fragment in fragments:
        assert fragment in out + err, out + err


@pytest.mark.parametrize("command", [["fix", "{cfg}"], ["schema"]], ids=["fix", "schema"])
def test_output_dash_is_standard_output(command, tmp_path, capsys, monkeypatch):
    """``-o -`` prints, as ``export -o -`` does and ``-`` means standard input (was: a file named "-")."""
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, OK_CONFIG)
    code, out, err = run_cli([str(path) if a == "{cfg}" else a for a in command] + ["-o", "-"], capsys)
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    assert json.loads(out)


#: Every count flag of every subcommand: (id, argv before the flag, the flag). Each reads a whole number the same way
#: (``2e0`` is 2, ``2.5`` is refused) and the GPU and node counts share one bound (they parsed three ways: ``2e3``
#: was refused by estimate and fit but read by plan, and plan took 10**30 nodes).
COUNT_FLAGS = [
    ("estimate-nodes", ["estimate", *LLAMA], "--nodes", True),
    ("estimate-gpus-per-node", ["estimate", *LLAMA], "--gpus-per-node", True),
    ("fit-gpus", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], "--gpus", True),
    ("fit-gpus-per-node", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], "--gpus-per-node", True),
    ("plan-nodes", ["plan", *LLAMA, *H100, "--global-batch", "64"], "--nodes", True),
    ("plan-gpus-per-node", ["plan", *LLAMA, *H100, "--global-batch", "64"], "--gpus-per-node", True),
    ("predict-nodes", ["predict", "{cfg}", *LLAMA, *H100], "--nodes", True),
    ("validate-world-size", ["validate", "{cfg}"], "--world-size", True),
    ("versions-world-size", ["versions", "{cfg}"], "--world-size", True),
    ("estimate-micro-batch", ["estimate", *LLAMA], "--micro-batch", False),
    ("fit-micro-batch", ["fit", "{cfg}", *LLAMA, "--gpu", "H100"], "--micro-batch", False),
    ("plan-top", ["plan", *LLAMA, *H100, "--global-batch", "64"], "--top", False),
]


@pytest.mark.parametrize(("before", "flag", "is_gpu_count"), [r[1:] for r in COUNT_FLAGS],
                         ids=[r[0] for r in COUNT_FLAGS])
def test_every_count_flag_reads_a_whole_number_the_same_way(before, flag, is_gpu_count, tmp_path, capsys):
    path = str(_write(tmp_path, NO_BATCH))
    argv = [path if a == "{cfg}" else a for a in before]
    for value, refused in (("2e0", False), ("2.5", True), ("0", True), ("two", True),
                           ("1e30", is_gpu_count), ("1000001", is_gpu_count)):
        code, out, err = run_cli([*argv, flag, value], capsys)
        assert "Traceback" not in out + err, err
        message = f"argument {flag}: expected"
        if refused:
            assert code == 2 and message in err and repr(value) in err, (value, code, err)
        else:
            assert message not in err, (value, err)


def _strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(("config", "world"), [
    ({"train_micro_batch_size_per_gpu": 1e308, "gradient_accumulation_steps": 10}, "8"),
    ({"train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": 1e-308}, "7"),
], ids=["batch-beyond-float", "world-beyond-float"])
def test_validate_json_is_strict_json_when_a_derived_number_leaves_float_range(config, world, tmp_path, capsys):
    """DeepSpeed accepts these; the report derived train_batch_size (or the world size) = inf and printed
    `Infinity`, which strict JSON parsers (Node's JSON.parse, jq) refuse."""
    path = _write(tmp_path, json.dumps(config))
    code, out, err = run_cli(["validate", "--format", "json", "--world-size", world, str(path)], capsys)
    assert "Traceback" not in err and code in (0, 1)
    report = _strict_json(out)
    assert "Infinity" in json.dumps(report)  # said, as a string


def test_standard_input_named_twice_is_refused_up_front(capsys):
    """`validate - -` read the config once and then reported the second, empty read as "the config is empty"."""
    code, out, err = run_cli(["validate", "-", "-"], capsys)
    assert code == 2 and "standard input (-) can be read only once" in err and "empty" not in out + err


def test_an_empty_key_is_shown_as_one():
    """The finding read "Unknown top-level key ``": nothing between the backticks."""
    from core.validate import validate

    finding = next(f for f in validate({"train_micro_batch_size_per_gpu": 1, "": 5}).findings
                   if f.code == "keys.unknown-top-level")
    assert 'Unknown top-level key `""`' in finding.message


def test_real_process_whose_reader_stops_early_never_exits_0(tmp_path):
    """`dsconfig validate configs/* | head -1`: the reader closes the pipe after the first FAILED line. The exit
    code was 0 (the clean run's) although errors were found and later files never checked; it is now 141, as
    for a process SIGPIPE ended, so `set -o pipefail` in CI fails the step. No traceback either."""
    failing = [_write(tmp_path, '{"train_batch_size": 8, "zero_optimization": {"stage": 9}}', f"{i:03}.json")
               for i in range(300)]  # ~80 KB of verdicts: more than a pipe holds
    proc = subprocess.Popen([sys.executable, "-m", "core", "validate", *map(str, failing)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(str(failing[0]).encode())
    proc.stdout.close()
    stderr = proc.stderr.read().decode("utf-8", "replace")
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in stderr and "Exception ignored" not in stderr


def test_broken_pipe_in_process_is_141_and_leaves_the_real_stdout_alone(tmp_path):
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    path = _write(tmp_path, '{"train_batch_size": 8}')
    assert main(["validate", str(path)], out=Closed()) == 141


def test_migrate_write_carries_on_past_a_file_it_cannot_rewrite(tmp_path, capsys):
    """An HJSON file whose FILE.orig exists is refused; the files after it were never migrated (the command
    stopped), and "migrated: a.json" was said of the file that was not written."""
    old = '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}'
    first, last = _write(tmp_path, old, "b.json"), _write(tmp_path, old, "c.json")
    hjson_file = tmp_path / "a.json"
    hjson_file.write_text("// team\n{\n  train_batch_size: 8\n  zero_optimization: {stage: 2, cpu_offload: true}\n}\n")
    (tmp_path / "a.json.orig").write_text("kept")
    code, out, err = run_cli(["migrate", "--write", str(first), str(hjson_file), str(last)], capsys)
    assert code == 2 and "Traceback" not in out + err
    assert "a.json.orig exists already" in err and f"migrated: {hjson_file}" not in err
    for written in (first, last):
        assert json.loads(written.read_text())["zero_optimization"] == {
            "stage": 2, "offload_optimizer": {"device": "cpu"}}
    assert "cpu_offload" in hjson_file.read_text()


def test_validate_json_gives_an_unreadable_file_the_keys_of_a_checked_one(tmp_path, capsys):
    """An unreadable file's entry had no findings/counts (r["findings"] raised KeyError in a CI script) and its
    line and column only inside the message."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n "b": }')
    good = _write(tmp_path, '{"train_batch_size": 8}')
    code, out, _err = run_cli(["validate", "--format", "json", str(bad), str(good)], capsys)
    assert code == 2
    unreadable, checked = json.loads(out)
    assert unreadable["unreadable"] and (unreadable["line"], unreadable["column"]) == (2, 7)
    assert {"file", "ok", "counts", "findings"} <= set(unreadable) & set(checked)
    assert unreadable["findings"] == [] and unreadable["ok"] is False
