"""Defaults of sections a release reads with ``dict.get`` come from that release's own parse (the profile's
``dict_section_defaults``, recorded by ``scripts/profile_extract.py``): DeepSpeed 0.16.9 reads
``bf16.immediate_grad_update`` with the default true, where the schema (the newest release's pydantic model) says
false, and the Precision page showed false for 0.16.9."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from app_support import app

from core import versions
from tests.conftest import REPO_ROOT

_REAL = """
import json
from deepspeed.runtime.config import DeepSpeedConfig
parsed = DeepSpeedConfig({"train_batch_size": 1, "bf16": {"enabled": True}, "aio": {}})
print(json.dumps({"immediate_grad_update": parsed.bfloat16_immediate_grad_update, "aio": parsed.aio_config}))
"""


@pytest.mark.deepspeed
def test_0_16_9s_recorded_dict_defaults_are_what_its_parse_uses():
    root = REPO_ROOT / ".venv-ds" / "0.16.9"
    assert root.is_dir(), f"{root} is installed by `make test-install`"
    done = subprocess.run([sys.executable, "-c", _REAL], capture_output=True, text=True, timeout=300, check=True,
                          env={**os.environ, "PYTHONPATH": str(root)})
    real = json.loads(done.stdout.strip().splitlines()[-1])
    assert versions.recorded_default("0.16.9", "bf16", "immediate_grad_update") == (True,
                                                                                    real["immediate_grad_update"])
    assert real["immediate_grad_update"] is True
    assert real["aio"] and all(versions.recorded_default("0.16.9", "aio", key) == (True, value)
                               for key, value in real["aio"].items())


def test_a_pydantic_release_keeps_its_models_default_and_an_unread_key_has_none():
    assert versions.recorded_default("0.19.8", "bf16", "immediate_grad_update") == (True, False)
    assert versions.recorded_default("0.16.9", "bf16", "not_a_key") == (False, None)
    assert versions.recorded_default("0.16.9", "checkpoint.parallel_write", "pipeline_stage") == (True, False)


@pytest.mark.parametrize(("version", "default"), [("0.16.9", True), ("0.19.8", False)])
def test_the_precision_page_shows_the_releases_immediate_grad_update_default(version, default):
    at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}}, page="pages/precision.py",
             version=version)
    widget = at.checkbox(key="cfg:bf16.immediate_grad_update")
    assert widget.value is default and f"Default: `{json.dumps(default)}`" in widget.help
    assert at.session_state["config"]["bf16"] == {"enabled": True}  # shown, not written


def test_keys_a_release_reads_only_behind_its_switch_are_not_dated_later():
    """0.16.x reads fp16's loss-scale keys only with fp16 on (its parse of an empty section reads ``enabled`` alone),
    and the help of every such widget said "Added in DeepSpeed 0.17.1" on 0.16.9."""
    assert versions.history("fp16", "loss_scale") == (None, None)
    assert versions.history("fp16", "auto_cast") == (None, None)
    assert versions.history("bf16", "check_grad_overflow")[0] is not None  # 0.16.x ignores it when offered
    at = app({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True}}, page="pages/precision.py",
             version="0.16.9")
    helps = {w.key: w.help for w in [*at.number_input, *at.checkbox] if w.key and w.key.startswith("cfg:fp16.")}
    assert "cfg:fp16.loss_scale" in helps and "cfg:fp16.initial_scale_power" in helps
    assert not [key for key, text in helps.items() if "Added in DeepSpeed" in text], helps
