"""NVMe offload and doc-only keys against the real DeepSpeed (a read-only hunt of 1 Dec 2026):

- a key the docs mention but DeepSpeed's pydantic section refuses (``cpu_offload_params``, fp16's
  ``initial_loss_scale_power``, bf16's ``check_overflow``) written as "auto" was an error; the section drops "auto"
  values before it checks its keys, so DeepSpeed accepts the config and ignores the key;
- the memory model read a boolean in an offload count as the default (``buffer_count: true`` as 5 buffers,
  ``max_in_cpu: false`` as 1e9 parameters held in CPU memory); pydantic's lax int reads them as 1 and 0.
"""

from __future__ import annotations

import pytest

import core
from core.memory.settings import TrainingSettings
from tests.oracle.oracle import deepspeed_verdict, oracle_available

B = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
DOC_ONLY = [({"zero_optimization": {"stage": 3, "cpu_offload_params": "auto"}}, "zero_optimization.cpu_offload_params"),
            ({"fp16": {"enabled": False, "initial_loss_scale_power": "auto"}}, "fp16.initial_loss_scale_power"),
            ({"bf16": {"enabled": True, "check_overflow": "auto"}}, "bf16.check_overflow")]


@pytest.mark.parametrize(("extra", "path"), DOC_ONLY, ids=[path for _extra, path in DOC_ONLY])
def test_a_doc_only_key_written_as_auto_is_ignored_not_refused(extra, path):
    report = core.validate({**B, **extra}, world_size=1)
    assert not report.errors
    [finding] = [f for f in report.warnings if f.path == path]
    assert finding.code == "keys.doc-only" and "ignores it" in finding.message and '"auto" is dropped' in \
        finding.message
    written = {**B, **{k: {**v, path.split(".")[1]: True} for k, v in extra.items()}}
    assert [f.code for f in core.validate(written, world_size=1).errors if f.path == path]  # any other value: refused


@pytest.mark.deepspeed
@pytest.mark.parametrize("release", ["0.19.8", "0.16.9"])
def test_deepspeed_accepts_them(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    for extra, path in DOC_ONLY:
        assert deepspeed_verdict({**B, **extra}, 1, release).accepted, (release, path)


@pytest.mark.parametrize(("section", "key", "value", "read"), [
    ("offload_param", "buffer_count", True, 1), ("offload_param", "max_in_cpu", False, 0),
    ("offload_param", "buffer_size", True, 1), ("offload_optimizer", "buffer_count", True, 1),
    ("offload_param", "buffer_count", "7", 7)])
def test_offload_counts_are_read_as_pydantic_reads_an_int(section, key, value, read):
    config = {"zero_optimization": {"stage": 3, section: {"device": "nvme", "nvme_path": "/nvme", key: value}}}
    settings = TrainingSettings.from_ds_config(config, "0.19.8")
    assert getattr(settings, f"{section}_{key}") == read
    zero_config = pytest.importorskip("deepspeed.runtime.zero.config")
    parsed = zero_config.DeepSpeedZeroConfig(**config["zero_optimization"])
    assert getattr(getattr(parsed, section), key) == read
