"""README: "A safe fix never removes a feature that is switched on". For a release that reads a section with
``dict.get`` (0.16.9's bf16, a top-level key it does not know), a switched-on key of later releases is ignored, not
refused, and ``dsconfig fix`` removed it as a safe fix: torch_autocast, bf16 master weights and
sequence_parallel_size were gone from a config validated for the laptop's older DeepSpeed. It is now
``keys.not-in-version-on`` (a warning there) with an unsafe fix, as in the releases that refuse it."""

from __future__ import annotations

import io
import json

from core.cli import main
from core.validate import validate

CONFIG = {"train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
          "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"},
          "sequence_parallel_size": 2}
SWITCHED_ON = {"bf16.bf16_master_weights_and_grads", "bf16.bf16_optimizer_states", "torch_autocast",
               "sequence_parallel_size"}


def test_switched_on_keys_an_older_release_ignores_get_an_unsafe_fix():
    findings = {f.path: f for f in validate(CONFIG, version="0.16.9").findings}
    assert {p for p, f in findings.items() if f.code == "keys.not-in-version-on"} == SWITCHED_ON
    assert all(findings[p].severity == "warning" and not findings[p].fix.safe for p in SWITCHED_ON)
    off = {**CONFIG, "torch_autocast": {"enabled": False}}  # asks for nothing: removing it is safe
    quiet = next(f for f in validate(off, version="0.16.9").findings if f.path == "torch_autocast")
    assert quiet.code == "keys.not-in-version" and quiet.fix.safe


def test_fix_keeps_them(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CONFIG))
    out = io.StringIO()
    main(["fix", str(path), "--deepspeed-version", "0.16.9"], out=out)
    assert json.loads(out.getvalue()) == CONFIG, capsys.readouterr().err
