"""``fp16.fp16_master_weights_and_grads`` as each installed DeepSpeed release reads it, and the memory model after it.

Up to 0.17.0 DeepSpeed reads the ``fp16`` section with ``dict.get`` and the key only when ``fp16.enabled`` is on
(``get_fp16_master_weights_and_grads_enabled`` returns False otherwise), as a Python truth value; from 0.17.1
``DeepSpeedFP16Config`` reads it as a pydantic bool whatever ``enabled`` says. ``core.effective`` must read it as the
release does: each installed release's own ``DeepSpeedConfig`` is asked here, in a subprocess, over fp16 on/off and
the key's spellings. The memory model sizes the master weights from that reading: a disabled fp16 section's key on
0.16.9 leaves them (and the optimizer states) fp32.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from core import memory
from core.effective import effective
from core.memory.result import Hardware, Shape
from core.models import get_spec
from core.validate import validate
from tests.conftest import REPO_ROOT
from tests.oracle.oracle import IN_PROCESS_VERSION, SIDE_BY_SIDE, oracle_available, release_interpreter

RELEASES = (*SIDE_BY_SIDE, IN_PROCESS_VERSION)
KEY = "fp16_master_weights_and_grads"

#: what the release's own parser hands the engine (DeepSpeedEngine.fp16_master_weights_and_gradients)
_READ = """
import contextlib, io, json, logging, sys, warnings
warnings.simplefilter("ignore")
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from deepspeed.runtime.config import DeepSpeedConfig
logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL + 1)
out = []
for config in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        parsed = DeepSpeedConfig(config)
    fp16 = getattr(parsed, "float16_config", None)
    value = fp16.fp16_master_weights_and_grads if fp16 is not None else parsed.fp16_master_weights_and_gradients
    out.append(bool(value))
print(json.dumps(out))
"""


def _configs() -> list[dict[str, Any]]:
    """fp16 on/off (ZeRO-2, which every release allows the key at) × the key absent, on, off, and "false"."""
    configs = []
    for enabled in (True, False):
        for value in ("absent", True, False, "false", 1):
            fp16: dict[str, Any] = {"enabled": enabled}
            if value != "absent":
                fp16[KEY] = value
            configs.append({"train_batch_size": 1, "zero_optimization": {"stage": 2}, "fp16": fp16})
    return configs


def _release_reads(release: str, configs: list[dict[str, Any]]) -> list[bool]:
    python, extra = release_interpreter(release)
    done = subprocess.run([python, "-c", _READ, json.dumps(configs)], capture_output=True, text=True, timeout=600,
                          cwd=REPO_ROOT, env={**os.environ, **extra}, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", RELEASES)
def test_fp16_master_weights_read_as_the_release_reads_it(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    configs = _configs()
    real = _release_reads(release, configs)
    ours = [effective(config, release).fp16_master_weights_and_grads for config in configs]
    wrong = [(config["fp16"], mine, theirs) for config, mine, theirs in zip(configs, ours, real, strict=True)
             if mine != theirs]
    assert not wrong, f"DeepSpeed {release} (fp16 section, ours, DeepSpeed's): {wrong}"
    # the cases that tell the releases apart are in the set
    assert True in real and False in real


def test_disabled_fp16_section_master_weights_by_release():
    """The releases that read fp16 with dict.get ignore the key with fp16 off; the pydantic ones read it."""
    off = {"bf16": {"enabled": True}, "fp16": {"enabled": False, KEY: True}, "zero_optimization": {"stage": 1}}
    assert not effective(off, "0.16.9").fp16_master_weights_and_grads
    assert effective(off, "0.16.9").master_dtype == "fp32"
    assert not effective(off, "0.17.0").fp16_master_weights_and_grads
    assert effective(off, "0.17.1").fp16_master_weights_and_grads
    assert effective(off, "0.19.8").master_dtype == "fp16"
    # on with fp16 enabled, and as a Python truth value there ("false" is on)
    on = {"fp16": {"enabled": True, KEY: "false"}, "zero_optimization": {"stage": 2}}
    assert effective(on, "0.16.9").fp16_master_weights_and_grads
    assert not effective(on, "0.19.8").fp16_master_weights_and_grads


def test_memory_of_a_disabled_fp16_sections_key_on_0169_is_the_fp32_master_figure():
    """bf16 + ZeRO-1 with ``fp16.fp16_master_weights_and_grads`` true in a disabled fp16 section: 0.16.9 never reads
    the key, so the estimate is the one without it (fp32 master weights and states), with no note that
    deepspeed.initialize refuses the config."""
    base = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
            "zero_optimization": {"stage": 1}}
    with_key = {**base, "fp16": {"enabled": False, KEY: True}}
    without = {**base, "fp16": {"enabled": False}}
    model, hardware = get_spec("meta-llama/Llama-2-7b-hf"), Hardware(gpus_per_node=8, nodes=1)

    def estimate(config: dict[str, Any]):
        return memory.estimate(config, model, hardware, Shape(2, 2048), version="0.16.9")

    keyed, plain = estimate(with_key), estimate(without)
    assert (keyed.settings.master_bytes, keyed.settings.state_bytes) == (4, 4)
    assert keyed.gpu_bytes == plain.gpu_bytes and keyed.components == plain.components
    assert not any("refuses" in note for note in keyed.notes)


@pytest.mark.parametrize(("version", "config", "code"), [
    # 0.17.1+ read the key in a disabled fp16 section: FusedAdam without offload is refused
    ("0.19.8", {"bf16": {"enabled": True}, "fp16": {"enabled": False, KEY: True}, "zero_optimization": {"stage": 1},
                "optimizer": {"type": "AdamW"}}, "precision.master-weights-offload"),
    # offloaded DeepSpeedCPUAdam passes the ZeRO optimizer's check, but 0.16.9's config check allows only ZeRO-2
    ("0.16.9", {"fp16": {"enabled": True, KEY: True}, "optimizer": {"type": "AdamW"},
                "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}}},
     "precision.master-weights-stage"),
])
def test_memory_says_initialize_refuses_master_weights_where_the_validator_does(version, config, code):
    settings = memory.TrainingSettings.from_ds_config(config, version)
    assert settings.master_bytes == 2
    errors = {f.code for f in validate(config, version=version).errors}
    assert code in errors
    said = [note for note in settings.notes if "refuses this config" in note]
    assert len(said) == 1 and code in said[0] and f"DeepSpeed {version}" in said[0]


def test_memory_does_not_say_refused_where_the_release_runs_the_master_weights():
    """ZeRO-2 with the optimizer offloaded as DeepSpeedCPUAdam: every release keeps fp16 master weights and runs."""
    config = {"train_batch_size": 8, "fp16": {"enabled": True, KEY: True}, "optimizer": {"type": "AdamW"},
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    for version in ("0.16.9", "0.19.8"):
        settings = memory.TrainingSettings.from_ds_config(config, version)
        assert settings.master_bytes == 2 and not any("refuses" in note for note in settings.notes)
        assert not validate(config, version=version).errors
