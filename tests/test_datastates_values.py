"""``datastates_ckpt`` written as a value that is neither a switch nor settings (2, [], "x"): DeepSpeed turns
DataStates checkpointing on for any value but false (``DeepSpeedDataStatesConfig``: ``enabled = value is not
False``) and keeps the value as its settings. The validator said "DeepSpeed uses the section's defaults"
(type.section-ignored) and offered a *safe* removal, which turned DataStates off: a change of meaning (a
differential hunt of 30 Nov 2026, comparing each safe-fixed config's parsed DeepSpeedConfig with the original's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.autofix import fix_until_stable
from core.validate import validate

B = {"train_micro_batch_size_per_gpu": 1}
ODD = [2, [], "x"]


@pytest.mark.parametrize("value", ODD, ids=repr)
def test_a_value_that_is_no_switch_is_said_to_turn_datastates_on_and_no_safe_fix_removes_it(value):
    report = validate({**B, "datastates_ckpt": value})
    codes = {f.code: f for f in report.findings}
    assert "type.section-ignored" not in codes
    assert "turns DataStates checkpointing ON" in codes["misc.datastates-on"].message
    fixed = fix_until_stable({**B, "datastates_ckpt": value}, version="0.19.8", target="deepspeed",
                             severities=("error", "warning", "info")).config
    assert fixed.get("datastates_ckpt", "removed") == value


@pytest.mark.deepspeed
def test_deepspeed_turns_datastates_on_for_such_values():
    script = ("import json, sys\nfrom deepspeed.runtime.config import DeepSpeedConfig\n"
              "out = []\nfor value in json.loads(sys.argv[1]):\n"
              "    c = DeepSpeedConfig({'train_micro_batch_size_per_gpu': 1, 'datastates_ckpt': value})\n"
              "    out.append([c.datastates_config.enabled, c.datastates_config.config])\n"
              "print(json.dumps(out))\n")
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29611", "RANK": "0", "WORLD_SIZE": "1",
           "LOCAL_RANK": "0"}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(ODD)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[True, value] for value in ODD]
