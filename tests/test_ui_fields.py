"""The widgets' field logic (``ui.fields``) without Streamlit: it imports none, and its answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.findings import Finding
from core.schema.optimizer import OPTIMIZERS, SCHEDULERS
from ui import fields

ROOT = Path(__file__).resolve().parent.parent


def test_field_logic_imports_no_streamlit():
    code = "import sys, ui.fields; sys.exit('streamlit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr or "ui.fields imported streamlit"


def test_number_bounds_close_open_integer_bounds_and_leave_open_float_bounds_to_the_validator():
    assert fields.number_bounds("int", gt=0) == (1, None)
    assert fields.number_bounds("int", ge=0, lt=10) == (0, 9)
    assert fields.number_bounds("float", gt=0.0, le=1) == (None, 1.0)
    assert fields.number_bounds("float") == (None, None)


def test_parameters_are_drawn_from_their_registry_entry():
    warmup = next(p for p in SCHEDULERS["WarmupLR"].params if p.name == "warmup_num_steps")
    kind = fields.param_kind(warmup, 1000)
    assert kind.kind == "int" and kind.optional
    assert fields.param_bounds(warmup, kind.kind) == (1, None)
    assert "Default: `1000` steps." in fields.param_help(warmup)
    warmup_type = next(p for p in SCHEDULERS["WarmupLR"].params if p.name == "warmup_type")
    assert fields.param_kind(warmup_type, "log").choices == ("log", "linear")
    betas = next(p for p in OPTIMIZERS["adam"].params if p.name == "betas")
    assert fields.param_kind(betas, [0.9, 0.999]).kind == "json"


def test_a_widget_shows_what_the_config_holds_or_hands_it_to_the_json_editor():
    int_kind = fields.FieldKind("int", optional=True)
    assert fields.fits(5, int_kind, 1, 10) and fields.fits(None, int_kind, 1, 10)
    assert not fields.fits(0, int_kind, 1, 10)  # out of range
    assert not fields.fits(True, int_kind, None, None)  # a bool is not a number here
    assert not fields.fits(2**53, int_kind, None, None)  # the browser cannot hold it exactly
    choice = fields.FieldKind("choice", (0, 1, 2, 3), optional=True)
    assert fields.choice_options(choice, 7) == [None, 0, 1, 2, 3, 7]
    assert fields.choice_options(fields.FieldKind("choice", ("a", "b")), "a") == ["a", "b"]
    assert fields.json_text({"a": 1}) == ('{\n  "a": 1\n}', 84)
    assert fields.json_text(None) == ("", 68)


def test_long_text_is_previewed_with_a_caption():
    short = "x\n" * 10
    assert fields.preview(short) == (short, None)
    shown, caption = fields.preview("\n".join(str(i) for i in range(1000)))
    assert shown.split("\n") == [str(i) for i in range(fields.MAX_SHOWN_LINES)]
    assert caption is not None and "first 400 of 1,000 lines" in caption
    # a config written compact is one line: cut by characters (a 1 MB line was sent to the browser whole)
    shown, caption = fields.preview("[" + "1," * 500_000 + "1]")
    assert len(shown) == fields.MAX_SHOWN_CHARS
    assert caption.startswith(f"The first {fields.MAX_SHOWN_CHARS:,} characters")


def test_findings_in_words_and_the_summary_of_the_undrawn():
    many = [Finding("warning", "UNKNOWN_KEY", f"k{i}", "unknown key", suggestion="remove it") for i in range(25)]
    drawn, rest = fields.drawn_findings(many)
    assert len(drawn) == fields.MAX_DRAWN_PER_CODE and len(rest["UNKNOWN_KEY"]) == 5
    assert fields.finding_text(many[0]) == "**UNKNOWN_KEY** at `k0` — unknown key\n\nremove it"
    assert fields.inline_finding_text(many[0]) == "**UNKNOWN_KEY** — unknown key\n\nremove it"
    assert fields.rest_text("UNKNOWN_KEY", rest["UNKNOWN_KEY"]).startswith("…and **5** more **UNKNOWN_KEY**")
    assert fields.safe_text("\ud800") == "\\ud800"
