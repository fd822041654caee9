"""core.autofix.fix_until_stable, ``dsconfig fix``, ``dsconfig explain`` and the generated docs/rules.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core import validate
from core.autofix import fix_until_stable
from core.cli import main
from core.io import load_config
from core.rules.codes import CODES
from core.rules.explain import markdown

ROOT = Path(__file__).resolve().parent.parent

#: Two safe fixes (a removed key, the boolean ZeRO form), two unsafe ones (the batch product on 2 GPUs,
#: fp16 with bf16), and keys no fix may touch: an unknown one, an int and a float.
MIXED = {"train_batch_size": 7, "train_micro_batch_size_per_gpu": 1, "zero_optimization": True,
         "amp": {"enabled": False}, "my_key": {"n": 3}, "gradient_clipping": 1.0, "steps_per_print": 10,
         "fp16": {"enabled": True}, "bf16": {"enabled": True}}


def test_safe_fixes_only_by_default_and_the_rest_listed():
    result = fix_until_stable(MIXED, world_size=2)
    assert [f.code for f in result.applied] == ["removed.key", "deprecated.zero-bool"]
    assert all(f.fix and f.fix.safe for f in result.applied)
    assert {f.code for f in result.skipped} == {"batch.product", "precision.fp16-and-bf16"}
    assert "amp" not in result.config and result.config["zero_optimization"] == {"stage": 1}
    assert result.config["train_batch_size"] == 7 and result.config["my_key"] == {"n": 3}
    assert not result.report.ok and result.report == validate(result.config, world_size=2)
    assert MIXED["amp"] == {"enabled": False}  # the input is not modified


def test_unsafe_fixes_everything_and_keeps_unknown_keys_and_number_types():
    result = fix_until_stable(MIXED, world_size=2, unsafe=True)
    assert result.report.ok and not result.skipped
    assert result.config["my_key"] == {"n": 3}
    assert isinstance(result.config["steps_per_print"], int) and isinstance(result.config["gradient_clipping"], float)
    tb = result.config["train_batch_size"]
    assert tb == result.config["train_micro_batch_size_per_gpu"] * result.config["gradient_accumulation_steps"] * 2


def test_a_clean_config_comes_back_equal_and_each_fix_is_applied_once():
    clean = {"train_micro_batch_size_per_gpu": 1}
    result = fix_until_stable(clean)
    assert result.config == clean and result.config is not clean and not result.applied
    odd = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": -1.0}
    result = fix_until_stable(odd, unsafe=True)
    assert [f.code for f in result.applied] == ["misc.negative-clipping"] and result.config["gradient_clipping"] == 1.0


def _run(tmp_path, *argv):
    out = tmp_path / "out.txt"
    with out.open("w") as stream:
        code = main(list(argv), out=stream)
    return code, out.read_text()


def test_cli_fix_prints_the_fixed_config_and_exits_1_while_errors_are_left(tmp_path, capsys):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(MIXED))
    code, text = _run(tmp_path, "fix", str(path), "--world-size", "2")
    assert code == 1
    fixed = load_config(text)
    assert "amp" not in fixed and fixed["train_batch_size"] == 7 and fixed["my_key"] == {"n": 3}
    err = capsys.readouterr().err
    assert "fixed (safe): removed.key amp" in err and "not applied (unsafe, use --unsafe): batch.product" in err
    assert json.loads(path.read_text()) == MIXED  # printing never writes the file


def test_cli_fix_unsafe_in_place_and_diff(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(MIXED, indent=2) + "\n")  # already in dsconfig's layout: the diff is the fixes alone
    code, diff = _run(tmp_path, "fix", str(path), "--world-size", "2", "--diff")
    assert code == 1 and '-  "amp": {' in diff and '+  "zero_optimization": {' in diff
    assert '-  "train_batch_size"' not in diff
    code, _ = _run(tmp_path, "fix", str(path), "--world-size", "2", "--unsafe", "-o", str(path))
    assert code == 0
    assert validate(json.loads(path.read_text()), world_size=2).ok
    code, _ = _run(tmp_path, "fix", str(path), "--diff", "-o", "x.json")
    assert code == 2  # --diff and -o exclude each other


def test_cli_fix_unreadable_file_is_exit_2_without_traceback(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{nope")
    assert _run(tmp_path, "fix", str(path))[0] == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_validate_shows_each_fix_and_its_safety(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(MIXED))
    code, text = _run(tmp_path, "validate", str(path), "--world-size", "2")
    assert code == 1
    assert "fix (safe): Remove `amp`" in text and "fix (unsafe): Keep bf16, disable fp16" in text
    assert f"2 safe fix(es): `dsconfig fix {path}`" in text


def test_cli_explain_one_code_and_the_list(tmp_path, capsys):
    code, text = _run(tmp_path, "explain", "removed.key")
    assert code == 0
    assert text.startswith("removed.key — ") and "fix: safe" in text and "Fix (safe): Remove `amp`" in text
    code, text = _run(tmp_path, "explain", "type.int_parsing")
    assert code == 0 and text.startswith("type.<pydantic error type>")
    code, listing = _run(tmp_path, "explain")
    assert code == 0 and len(listing.splitlines()) == len(CODES)
    assert _run(tmp_path, "explain", "no.such-code")[0] == 2
    assert "dsconfig explain" in capsys.readouterr().err


def test_docs_rules_md_is_generated_from_the_table_and_up_to_date():
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert text == markdown(), "run: python scripts/gen_rules_doc.py"
    for code in CODES:
        assert f"### `{code}`" in text


def test_python_m_core_fix(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": false}')
    done = subprocess.run([sys.executable, "-m", "core", "fix", str(path)], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}}


def test_a_rename_fix_keeps_the_key_where_it_was():
    """``bfloat16`` -> ``bf16`` and a misspelt key renamed in its section stay in place; the rest keeps its order."""
    config = {"train_batch_size": 8, "bfloat16": {"enabled": True}, "zero_optimization": {
        "stage": 3, "stage3_gather_fp16_weights_on_model_save": True, "overlap_comm": True}, "steps_per_print": 10}
    result = fix_until_stable(config)
    assert [f.code for f in result.applied] == ["deprecated.key", "deprecated.key"]
    assert list(result.config) == ["train_batch_size", "bf16", "zero_optimization", "steps_per_print"]
    assert list(result.config["zero_optimization"]) == [
        "stage", "stage3_gather_16bit_weights_on_model_save", "overlap_comm"]


def test_cli_fix_diff_shows_exactly_what_fix_writes(tmp_path):
    """The diff starts from the file as it is (4-space indent, 1e-8), not from a re-dump that hides the reformatting."""
    path = tmp_path / "ds.json"
    original = '{\n    "bfloat16": {"enabled": true},\n    "optimizer": {"params": {"eps": 1e-8}}\n}\n'
    path.write_text(original)
    _, diff = _run(tmp_path, "fix", str(path), "--diff")
    _, written = _run(tmp_path, "fix", str(path))
    lines = [line for line in diff.splitlines(keepends=True) if not line.startswith(("---", "+++", "@@"))]
    assert "".join(line[1:] for line in lines if line[0] in " -") == original
    assert "".join(line[1:] for line in lines if line[0] in " +") == written


def test_auto_not_filled_without_a_default_value_is_removed_not_set_to_none():
    """data_types.grad_accum_dtype's default is None: the advice is not "Default: None." and the fix removes the
    key (steps_per_print, the earlier example, is overwritten by accelerate whatever it holds)."""
    config = {"train_micro_batch_size_per_gpu": 1, "data_types": {"grad_accum_dtype": "auto"},
              "zero_optimization": {"stage": 0}}
    finding = next(f for f in validate(config, target="hf").findings if f.code == "auto.not-filled")
    assert "None" not in finding.suggestion and finding.fix is not None
    fixed = fix_until_stable(config, target="hf", unsafe=True)
    assert fixed.config == {"train_micro_batch_size_per_gpu": 1, "data_types": {}, "zero_optimization": {"stage": 0}}
    assert fixed.report.ok


def test_a_rename_never_overwrites_a_key_the_config_has():
    """``zero_optimisation`` beside ``zero_optimization``: renaming it would replace the section DeepSpeed reads
    (stage 1 became stage 3, and `fix` reported 0 errors). A typo of a key that is set, a misspelt optimizer
    parameter beside the real one, and two typos of one absent key behave the same way: the value that is there
    stays."""
    cases = [
        ({"train_batch_size": 8, "zero_optimisation": {"stage": 3}, "zero_optimization": {"stage": 1}},
         {"train_batch_size": 8, "zero_optimization": {"stage": 1}}),
        ({"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 50_000_000,
                                                       "stage3_prefetch_bucket_siz": 1}},
         {"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 50_000_000}}),
        ({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.001, "lrr": 5}}},
         {"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.001}}}),
        ({"train_batch_size": 8,
          "zero_optimization": {"stage": 2, "reduce_bucket_siz": 1000, "reduce_bucket_sze": 2000}},
         {"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": 1000}}),
    ]
    for config, fixed in cases:
        result = fix_until_stable(config, unsafe=True)
        assert result.config == fixed
        assert result.report.ok
    finding = next(f for f in validate(cases[0][0]).findings if f.path == "zero_optimisation")
    assert finding.fix.ops[0].op == "delete"
    assert finding.suggestion.startswith("`zero_optimization` is already set (to a section)")


def test_a_default_is_shown_as_json_writes_it():
    """An enum default was shown as Python's repr: 'Default: <ZeroStage.disabled: 0>.'"""
    finding = next(f for f in validate({"train_batch_size": 8, "zero_optimization": {"stage": 4}}).findings
                   if f.path == "zero_optimization.stage")
    assert "<" not in finding.suggestion + finding.fix.description
    assert finding.suggestion.endswith("Default: 0.") and finding.fix.ops[0].value == 0
    assert type(finding.fix.ops[0].value) is int


def test_explain_suggests_the_code_that_was_meant(capsys):
    """A misspelt code, a code in capitals and a family name got 'no finding code' and nothing more."""
    assert main(["explain", "REMOVED.KEY"]) == 0 and capsys.readouterr().out.startswith("removed.key — ")
    assert main(["explain", "removed.kye"]) == 2
    assert "(did you mean removed.key?)" in capsys.readouterr().err
    assert main(["explain", "batch"]) == 2
    assert "did you mean batch.ga-positive, batch.mb-positive" in capsys.readouterr().err
    assert main(["explain", "zzz"]) == 2 and "did you mean" not in capsys.readouterr().err


def test_a_misspelt_type_code_is_not_taken_for_the_pydantic_family(capsys):
    """type.unchekced printed the type.<pydantic error type> entry and exited 0: any code starting with "type." was
    taken for the family; only a pydantic error type is one of it."""
    assert main(["explain", "type.unchekced"]) == 2
    assert "(did you mean type.unchecked?)" in capsys.readouterr().err
    assert main(["explain", "type.int-parsing"]) == 2
    assert "(did you mean type.int_parsing?)" in capsys.readouterr().err
    assert main(["explain", "type.int_parsing"]) == 0
    assert capsys.readouterr().out.startswith("type.<pydantic error type> — ")


def test_fixes_of_unknown_keys_go_together_and_others_one_at_a_time(monkeypatch):
    """1,000 misspelt ZeRO keys were fixed one validation each (and only 100 of them: the cap); unknown-key fixes
    whose paths do not overlap now go in one round. The first rename still goes alone onto its destination, and
    the rest are removed once it exists (never renamed onto it)."""
    from core import autofix

    calls = []
    monkeypatch.setattr(autofix, "validate", lambda *a, **k: calls.append(1) or validate(*a, **k))
    zero = {"stage": 3, **{f"stage3_prefetch_bucket_siz{i}": i for i in range(1000)}}
    result = fix_until_stable({"train_batch_size": 8, "zero_optimization": zero}, unsafe=True)
    assert result.report.ok and len(result.applied) == 1000
    assert len(calls) <= 12
    assert result.config["zero_optimization"] == {"stage": 3, "stage3_prefetch_bucket_size": 0}


def test_parameters_the_optimizer_and_scheduler_do_not_take_are_fixed_together_and_the_cap_is_said(
        monkeypatch, tmp_path, capsys):
    """150 unknown optimizer params took one round each: fix stopped at the 100-round cap, listed the other 50 as
    "not applied (no effect)", and a second run applied them (its output differed from the first's)."""
    from core import autofix

    calls = []
    monkeypatch.setattr(autofix, "validate", lambda *a, **k: calls.append(1) or validate(*a, **k))
    config = {"train_micro_batch_size_per_gpu": 1,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, **{f"p{i}": i for i in range(150)}}},
              "scheduler": {"type": "WarmupLR", "params": {f"q{i}": i for i in range(150)}}}
    result = fix_until_stable(config, unsafe=True)
    assert result.report.ok and len(result.applied) == 300 and not result.stopped
    assert len(calls) <= 6
    assert result.config["optimizer"]["params"] == {"lr": 1e-4} and result.config["scheduler"]["params"] == {}
    assert fix_until_stable(result.config, unsafe=True).applied == ()
    monkeypatch.setattr(autofix, "MAX_ROUNDS", 1)
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": 3, "cpu_offload": True},
                                "bfloat16": {"enabled": True}}))  # two fixes that go one round each
    stopped = fix_until_stable(json.loads(path.read_text()), unsafe=True)
    assert stopped.stopped and stopped.skipped
    _run(tmp_path, "fix", "--unsafe", str(path))
    assert "stopped after 1 rounds of fixes; run dsconfig fix again on the output" in capsys.readouterr().err


def test_validate_counts_only_the_fixes_fix_applies_and_info_fixes_need_info(tmp_path, capsys):
    """validate advertised "1 safe fix(es): `dsconfig fix FILE` applies them" for an info finding that fix never
    applied ("0 fix(es) applied"), and showed the default as <ZeroStage.disabled: 0>, the enum the fix stored."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": "auto"}}))
    code, text = _run(tmp_path, "validate", str(path))
    assert code == 0 and "safe fix(es): `dsconfig fix" not in text
    assert f"1 safe fix(es) of info findings: `dsconfig fix --info {path}` applies them" in text
    assert "uses the default (0)." in text and "fix (safe): Set `zero_optimization.stage` to 0" in text
    assert "ZeroStage" not in text
    assert load_config(_run(tmp_path, "fix", str(path))[1])["zero_optimization"]["stage"] == "auto"
    fixed = load_config(_run(tmp_path, "fix", "--info", str(path))[1])
    assert fixed["zero_optimization"]["stage"] == 0 and type(fixed["zero_optimization"]["stage"]) is int
    finding = next(f for f in validate({"zero_optimization": {"stage": "auto"}}).findings if f.code == "auto.default")
    assert [op.value for op in finding.fix.ops] == [0] and type(finding.fix.ops[0].value) is int


def test_a_config_nested_past_the_loaders_limit_is_refused_by_fix_and_migrate():
    """From Python, 600 levels reached json.dumps and deepcopy as a RecursionError (the loader refuses > 64)."""
    import pytest

    from core import migrate

    deep: dict = {}
    node = deep
    for _ in range(600):
        node["a"] = {}
        node = node["a"]
    for call in (fix_until_stable, lambda c: migrate(c)):
        with pytest.raises(ValueError, match="nests deeper than 64 levels"):
            call({"train_micro_batch_size_per_gpu": 1, "x": deep})
    assert fix_until_stable({"train_micro_batch_size_per_gpu": 1, "x": {"a": {"b": 1}}}).report.ok
