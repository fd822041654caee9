"""Bug hunt of 29 November (c): contiguous activation checkpointing without partitioned activations or
number_checkpoints stops deepspeed.checkpointing.configure (the Megatron path)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from core.validate import validate
from tests.oracle.initialize import single_rank_env
from tests.oracle.oracle import oracle_available

BASE = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
CODE = "activation-checkpointing.contiguous"

#: activation_checkpointing sections, with what deepspeed.checkpointing.configure does with each (None: no error).
SECTIONS: dict[str, tuple[dict[str, Any], str | None]] = {
    "alone": ({"contiguous_memory_optimization": True},
              "Contiguous Checkpointing is only available with partitioned activations"),
    "without-number": ({"contiguous_memory_optimization": True, "partition_activations": True},
                       "Must specify the number of layers with contiguous memory checkpointing"),
    "complete": ({"contiguous_memory_optimization": True, "partition_activations": True, "number_checkpoints": 4},
                 None),
    "off": ({"contiguous_memory_optimization": False}, None),
}


def _findings(section: dict[str, Any], version: str = "0.19.8") -> list:
    return [f for f in validate({**BASE, "activation_checkpointing": section}, version=version).findings
            if f.code == CODE]


@pytest.mark.parametrize("version", ["0.16.9", "0.19.8"])
@pytest.mark.parametrize("label", list(SECTIONS))
def test_the_warning_names_what_configure_asserts(label, version):
    section, message = SECTIONS[label]
    found = _findings(section, version)
    if message is None:
        assert found == []
        return
    (finding,) = found
    assert finding.severity == "warning" and finding.path == "activation_checkpointing.contiguous_memory_optimization"
    assert message in finding.message and "deepspeed.checkpointing" in finding.message


def test_a_false_string_is_on_as_dict_get_reads_it():
    assert _findings({"contiguous_memory_optimization": "false"})


_WORKER = textwrap.dedent("""
    import json, sys, deepspeed
    deepspeed.init_distributed(dist_backend="gloo")
    out = {}
    for label, cfg in json.loads(sys.argv[1]).items():
        try:
            deepspeed.checkpointing.configure(None, deepspeed_config=cfg)
            out[label] = None
        except AssertionError as exc:
            out[label] = str(exc)
    print(json.dumps(out))
""")


@pytest.mark.deepspeed
def test_deepspeed_checkpointing_configure_asserts_what_the_warning_says():
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    configs = {label: {**BASE, "activation_checkpointing": section} for label, (section, _) in SECTIONS.items()}
    proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(configs)], capture_output=True, text=True,
                          timeout=600, env=single_rank_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for label, (_, message) in SECTIONS.items():
        assert (got[label] is None) == (message is None), (label, got[label])
        assert message is None or message in got[label], (label, got[label])
