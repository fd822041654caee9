"""The fixes against the real DeepSpeed: every corpus file and a deterministic sample of its mutations, fixed by
``core.autofix.fix_until_stable`` (safe fixes only, and all fixes) at 1 and 8 GPUs, then judged by DeepSpeed
0.19.8's own parser. A safe fix never turns a config DeepSpeed accepts into one it rejects; after an unsafe fix
that does (a misspelt section renamed, so DeepSpeed reads what it hid) the validator reports why; and the
validator's verdict on every fixed config agrees with DeepSpeed's (the comparison of ``test_differential.py``).

``make fix-differential`` (``scripts/fix_differential.py``) runs every mutation; its figures are in BENCHMARKS.md."""

from __future__ import annotations

import pytest

from tests.oracle.differential import disagreement_message
from tests.oracle.fix_differential import fix_cases, run_fix_differential
from tests.oracle.oracle import oracle_available

pytestmark = pytest.mark.deepspeed

#: Every SAMPLE-th mutation of each corpus file (and the file itself); the make target takes them all.
SAMPLE = 16


def test_fixes_never_break_a_config_and_the_fixed_configs_agree_with_deepspeed():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    cases = fix_cases(SAMPLE)
    assert len(cases) > 300, "the corpus sample is too small to mean anything"
    result = run_fix_differential(cases)
    assert not result["broken"], "\n".join(result["broken"][:20])
    assert not result["disagree"], disagreement_message(result["disagree"])
    assert any(kind == "unsafe" for kind, _, _ in result["repaired"]), "no rejected config was repaired"
