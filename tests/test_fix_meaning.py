"""Safe fixes keep what the config means: the precision DeepSpeed (or the HF Trainer's Accelerate) ends up with
is the same before and after ``dsconfig fix``."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from core.autofix import fix_until_stable
from core.effective import effective
from core.validate import validate

BASE = {"train_micro_batch_size_per_gpu": 1}


def test_a_null_bf16_leaves_bfloat16_in_charge_and_the_safe_fix_keeps_bf16_on():
    config = {**BASE, "bf16": None, "bfloat16": {"enabled": True}}
    assert effective(config).precision == "bf16"  # DeepSpeed reads `bfloat16` when `bf16` is null
    finding = next(f for f in validate(config).findings if f.path == "bfloat16")
    assert finding.code == "deprecated.key" and finding.fix.safe and "null" in finding.message
    fixed = fix_until_stable(copy.deepcopy(config)).config
    assert fixed == {**BASE, "bf16": {"enabled": True}}
    assert effective(fixed).precision == "bf16"


def _accelerate_sections(config: dict, mixed_precision: str) -> dict:
    """The config after accelerate's own DeepSpeedPlugin.set_mixed_precision (the HF Trainer's path)."""
    from accelerate.utils.dataclasses import DeepSpeedPlugin

    ds_config = copy.deepcopy(config)
    plugin = SimpleNamespace(deepspeed_config=ds_config, enable_msamp=False, fill_match=lambda *a, **k: None)
    DeepSpeedPlugin.set_mixed_precision(plugin, mixed_precision)
    return ds_config


@pytest.mark.parametrize("mixed_precision", ["no", "bf16", "fp16"])
def test_under_the_hf_trainer_bfloat16_is_never_read_so_the_safe_fix_removes_it(mixed_precision):
    pytest.importorskip("accelerate")
    config = {**BASE, "bfloat16": {"enabled": True}}
    seen = _accelerate_sections(config, mixed_precision)
    assert "bf16" in seen  # Accelerate wrote its own section: DeepSpeed never reads `bfloat16`
    finding = next(f for f in validate(config, target="hf").findings if f.path == "bfloat16")
    assert finding.code == "deprecated.bfloat16-ignored" and finding.fix.safe
    fixed = fix_until_stable(copy.deepcopy(config), target="hf").config
    assert fixed == BASE
    # what DeepSpeed then reads is the same before and after the fix
    assert effective(_accelerate_sections(fixed, mixed_precision)).precision == effective(seen).precision


_READ_BACK = """
import json, sys, logging
logging.disable(logging.CRITICAL)
from deepspeed.runtime.config import DeepSpeedConfig
parsed = DeepSpeedConfig(json.loads(sys.argv[1]))
def read(obj, names):
    for name in names:
        obj = obj[name] if isinstance(obj, dict) else getattr(obj, name)
    return obj
print(json.dumps({str(name): read(parsed, name if isinstance(name, list) else [name])
                  for name in json.loads(sys.argv[2])}))
"""


def _read_back(version: str, config: dict, names: list) -> dict:
    """What the real DeepSpeed ``version`` holds in the parsed config's attributes ``names``."""
    import json
    import os
    import subprocess

    from tests.oracle.oracle import OracleUnavailable, release_interpreter

    try:
        python, env = release_interpreter(version)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    out = subprocess.run([python, "-c", _READ_BACK, json.dumps(config), json.dumps(names)], capture_output=True,
                         text=True, env={**os.environ, **env}, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.deepspeed
@pytest.mark.parametrize(("version", "config", "names"), [
    ("0.19.8", {"train_batch_size": 8, "checkpoint": {"load_universal": "auto"}, "aio": {"single_submit": "auto"}},
     ["load_universal_checkpoint", ["aio_config", "single_submit"]]),
    ("0.16.9", {"train_batch_size": 8, "bf16": {"enabled": "auto"}}, ["bfloat16_enabled"]),
])
def test_auto_in_a_section_the_release_reads_with_dict_get_is_kept_and_no_fix_turns_it_off(version, config, names):
    kept = _read_back(version, config, names)
    assert set(kept.values()) == {"auto"}  # DeepSpeed holds the string: a switch reads it as on
    report = validate(config, version=version)
    autos = [f for f in report.findings if f.code.startswith("auto.")]
    assert autos and all(f.code == "auto.kept" and f.fix is None for f in autos), [(f.code, f.path) for f in autos]
    fixed = fix_until_stable(copy.deepcopy(config), version=version, severities=("error", "warning", "info")).config
    assert _read_back(version, fixed, names) == kept


@pytest.mark.deepspeed
@pytest.mark.parametrize("version", ["0.19.8", "0.16.9"])
def test_auto_beside_the_same_setting_under_its_other_name_is_removed_not_replaced_by_the_default(version):
    config = {"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto",
                                                           "prefetch_bucket_size": 1}}
    names = [["zero_config", "prefetch_bucket_size"]]
    before = _read_back(version, config, names)
    assert list(before.values()) == [1]  # DeepSpeed drops the "auto" spelling and uses the other
    fixed = fix_until_stable(copy.deepcopy(config), version=version, severities=("error", "warning", "info")).config
    assert fixed["zero_optimization"] == {"stage": 3, "prefetch_bucket_size": 1}
    assert _read_back(version, fixed, names) == before
