"""The finding-code table (core.rules.codes): complete, every entry real, and the one source of the
initialize-time codes and of each fix's safety."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core import validate
from core.effective import effective
from core.rules import codes
from core.rules.codes import CODES, INITIALIZE_TIME_CODES, lookup
from tests.fuzz_strategies import corpus_configs

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ({}, {"world_size": 64, "target": "hf"}, {"world_size": 8, "version": "0.19.5"},
            {"world_size": 3, "version": "0.16.9"})
#: Codes no known config triggers (a test in test_validate.py forces each).
DEFENSIVE = {"type.unreadable"}


def _literal_codes() -> set[str]:
    """Every code written as a literal second argument of ``Finding(...)`` in core/."""
    found = set()
    for path in (ROOT / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding" and len(node.args) > 1:
                arg = node.args[1]
                values = [arg] if isinstance(arg, ast.Constant) else (
                    [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [])
                found |= {v.value for v in values if isinstance(v, ast.Constant)}
    return found


@pytest.mark.parametrize("entry", [c for c in CODES.values() if c.code not in DEFENSIVE], ids=lambda c: c.code)
def test_every_entry_example_gets_its_code(entry):
    config = [] if entry.code == "config.not-object" else entry.example
    report = validate(config, **entry.example_settings())
    hits = [f for f in report.findings if lookup(f.code) is entry]
    assert hits, f"{entry.code}: its example gets {sorted(report.codes())}"
    assert entry.severity in {f.severity for f in hits}
    for finding in hits:
        assert finding.severity in (entry.severity, entry.other_severity)
        if finding.fix is not None:
            assert entry.fix_safe is not None, f"{entry.code} offers a fix but the table says it has none"
            assert finding.fix.safe is entry.fix_safe


@pytest.mark.parametrize("entry", [c for c in CODES.values() if c.fix_safe is not None and c.example is not None],
                         ids=lambda c: c.code)
def test_an_entry_with_a_fix_shows_it_on_its_example(entry):
    """``dsconfig explain`` announces the fix: the example is one the fix applies to."""
    report = validate(entry.example, **entry.example_settings())
    assert any(f.fix is not None for f in report.findings if lookup(f.code) is entry), entry.code


def test_examples_exist_except_for_defensive_codes():
    assert {c.code for c in CODES.values() if c.example is None} == DEFENSIVE | {"config.not-object"}


def test_every_literal_code_in_core_has_an_entry():
    literal = _literal_codes()
    assert len(literal) > 80
    assert not {c for c in literal if lookup(c) is None}


def test_every_code_emitted_on_the_corpus_has_an_entry_and_its_severity():
    seen: set[str] = set()
    for _name, config in corpus_configs():
        for settings in SETTINGS:
            for finding in validate(config, **settings).findings:
                entry = lookup(finding.code)
                assert entry is not None, finding.code
                assert finding.severity in (entry.severity, entry.other_severity), finding.code
                if finding.fix is not None:
                    assert finding.fix.safe is bool(entry.fix_safe)
                seen.add(finding.code)
    assert len(seen) > 30


def test_initialize_time_codes_come_from_the_table():
    derived = {c.code for c in CODES.values() if c.severity == "error" and c.fails in ("initialize", "training")}
    assert derived == INITIALIZE_TIME_CODES
    assert len(INITIALIZE_TIME_CODES) == 65
    assert validate.__module__ == "core.validate"
    import core
    assert core.INITIALIZE_TIME_CODES is INITIALIZE_TIME_CODES


def test_entries_are_complete_and_families_resolve():
    for entry in CODES.values():
        assert entry.fails in codes.FAILS
        assert entry.summary.endswith(".") and entry.why.endswith((".", ")"))
    assert lookup("type.int_parsing") is CODES["type.<pydantic error type>"]
    assert lookup("type.engine") is CODES["type.engine"]
    assert lookup("nonsense.code") is None


def _meaning(config, version):
    e = effective(config, version)
    return (e.stage, e.precision, e.offload_optimizer, e.offload_param, e.overlap_comm, e.contiguous_gradients,
            e.optimizer_class, e.optimizer_states)


@pytest.mark.parametrize("entry", [c for c in CODES.values() if c.fix_safe], ids=lambda c: c.code)
def test_safe_fixes_preserve_what_deepspeed_does(entry):
    settings = {"world_size": 1, "target": "deepspeed", **entry.example_settings()}
    report = validate(entry.example, **settings)
    finding = next(f for f in report.findings if f.code == entry.code and f.fix is not None)
    fixed = finding.fix.apply(entry.example)
    assert fixed != entry.example
    assert _meaning(fixed, settings["version"]) == _meaning(entry.example, settings["version"])
    after = validate(fixed, **settings)
    assert entry.code not in after.codes() or len(after.findings) < len(report.findings)
    assert after.codes() <= report.codes(), "a safe fix introduced a new finding"


@pytest.mark.parametrize("config, path, written", [
    ({"train_micro_batch_size_per_gpu": 1, "communication_data_type": True}, "communication_data_type", "true"),
    ({"train_micro_batch_size_per_gpu": 1, "optimizer": None}, "optimizer", "null"),
    ({"train_micro_batch_size_per_gpu": 1, "steps_per_print": False}, "steps_per_print", "false"),
    ({"train_micro_batch_size_per_gpu": 1, "wall_clock_breakdown": {"enabled": True}}, "wall_clock_breakdown",
     '{"enabled": true}'),
    ({"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "Nope"}}, "scheduler.type", '"Nope"'),
])
def test_messages_quote_values_as_the_file_writes_them(config, path, written):
    """Messages printed Python's reprs (True, None, {'enabled': True}, 'Nope') for values the user wrote in JSON."""
    import core

    finding = next(f for f in core.validate(config).findings if f.path == path)
    assert written in finding.message, finding.message
    for python in ("True", "False", "None", "'"):
        assert python not in finding.message.replace("DeepSpeed's", ""), finding.message


@pytest.mark.parametrize("monitor", ["tensorboard", "wandb", "csv_monitor", "comet"])
@pytest.mark.parametrize("target", ["deepspeed", "hf"])
def test_a_monitor_written_auto_is_dropped_as_deepspeed_drops_it(monitor, target):
    """The monitors are keyword arguments of DeepSpeedMonitorConfig, which drops "auto": DeepSpeed accepts the
    config with the defaults; the product called it an error ("DeepSpeed fails when it reads it")."""
    import core
    from tests.oracle.oracle import deepspeed_verdict

    config = {"train_batch_size": 8, monitor: "auto", "zero_optimization": {"stage": 0}}  # the HF target needs one
    assert deepspeed_verdict(config, world_size=1).accepted
    findings = core.validate(config, target=target).findings
    if target == "hf":  # accelerate, under the Trainer too, refuses every "auto" it does not fill
        from accelerate.utils import DeepSpeedPlugin

        with pytest.raises(ValueError, match=f"`{monitor}` not found in kwargs"):
            DeepSpeedPlugin(hf_ds_config=dict(config)).deepspeed_config_process(must_match=False)
        assert [(f.code, f.severity) for f in findings] == [("auto.not-filled", "error")], findings
        return
    assert [(f.code, f.severity) for f in findings] == [("auto.default", "info")], findings
    assert deepspeed_verdict({"train_batch_size": 8, monitor: "x"}, world_size=1).accepted is False
    assert any(f.severity == "error" for f in core.validate({"train_batch_size": 8, monitor: "x"}).findings)
