"""Values DeepSpeed hands on as written to code that checks their type or counts with them (a read-only hunt,
1 Dec 2026).

- ``dataloader_drop_last`` reaches torch's DataLoader unchanged when DeepSpeed builds its own data loader
  (``deepspeed.initialize(training_data=...)``), and torch's BatchSampler refuses anything but a bool. "false" was
  said to switch the setting ON (a truth value), 1 or "yes" went unremarked: each stops the first batch.
- ``pipeline.activation_checkpoint_interval`` goes to ``range()`` in PipelineModule: 2.0 failed initialize
  (TypeError) while the validator was silent, and ``false``, which range() takes as 0, was an error.
- ``activation_checkpointing.number_checkpoints`` with contiguous memory on sizes one buffer list with ``range()``
  and indexes it per checkpointed layer (deepspeed.checkpointing.configure, the Megatron path): text or a float
  fails (TypeError), 0 or less too (IndexError); the validator was silent or said only that the value is unchecked.
Judged here by the real 0.19.8, in one run (the pipeline cases are in tests/test_advanced_hunt_1129b.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from core.validate import validate
from tests.oracle.initialize import single_rank_env
from tests.oracle.oracle import oracle_available

BASE = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
        "optimizer": {"type": "SGD", "params": {"lr": 0.01}}}
DROP_LAST = [True, False, "true", "false", 1, 0, None, "yes"]

_WORKER = textwrap.dedent("""
    import contextlib, io, json, sys, torch, deepspeed
    import deepspeed.ops
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    from torch.utils.data import TensorDataset
    from deepspeed.runtime.activation_checkpointing import checkpointing
    deepspeed.init_distributed(dist_backend="gloo")
    request = json.loads(sys.argv[1])

    out = {"dataloader": {}, "checkpointing": {}}
    data = TensorDataset(torch.randn(7, 4), torch.randn(7, 2))
    for label, config in request["dataloader"].items():
        model = torch.nn.Linear(4, 2)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                engine, _, loader, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                            training_data=data, config=config)
                out["dataloader"][label] = ["batches", sum(1 for _ in loader)]
        except Exception as exc:
            out["dataloader"][label] = [type(exc).__name__, str(exc)[:200]]

    class OneRank:  # the model-parallel unit Megatron passes: one rank, no groups
        def get_model_parallel_rank(self): return 0
        def get_model_parallel_world_size(self): return 1
        def get_model_parallel_group(self): return None
        def get_data_parallel_rank(self): return 0
        def get_data_parallel_world_size(self): return 1
        def get_data_parallel_group(self): return None

    for label, config in request["checkpointing"].items():
        try:
            checkpointing.reset()
            checkpointing.configure(OneRank(), deepspeed_config=config)
            torch.manual_seed(0)
            layers = torch.nn.ModuleList([torch.nn.Linear(16, 16) for _ in range(3)])
            for _ in range(2):
                x = torch.randn(4, 16) @ torch.nn.Parameter(torch.randn(16, 16))
                for layer in layers:
                    x = checkpointing.checkpoint(lambda t, layer=layer: torch.nn.functional.gelu(layer(t)), x)
                x.sum().backward()
                checkpointing.reset()
            out["checkpointing"][label] = None
        except Exception as exc:
            out["checkpointing"][label] = type(exc).__name__
    print(json.dumps(out))
""")

#: number_checkpoints for three checkpointed layers -> what DeepSpeed raises (None: it trains)
NUMBER_CHECKPOINTS = {"3": ("3", "TypeError"), "4.5": (4.5, "TypeError"), "0": (0, "IndexError"),
                      "-1": (-1, "IndexError"), "control-3": (3, None), "control-100": (100, None)}


def _drop_last_configs() -> dict[str, dict]:
    return {repr(value): {**BASE, "dataloader_drop_last": value} for value in DROP_LAST}


def _checkpointing_configs() -> dict[str, dict]:
    return {label: {**BASE, "activation_checkpointing": {"partition_activations": True,
                                                          "contiguous_memory_optimization": True,
                                                          "number_checkpoints": value}}
            for label, (value, _) in NUMBER_CHECKPOINTS.items()}


@pytest.fixture(scope="module")
def real() -> dict[str, dict]:
    """Both parts in one run of the real 0.19.8 (one DeepSpeed import)."""
    reason = oracle_available("0.19.8")
    if reason:
        pytest.skip(reason)
    request = {"dataloader": _drop_last_configs(), "checkpointing": _checkpointing_configs()}
    proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(request)], capture_output=True,
                          text=True, timeout=600, env=single_rank_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])




@pytest.mark.parametrize("value", DROP_LAST, ids=repr)
def test_a_drop_last_that_is_not_a_bool_is_a_warning_that_names_deepspeeds_data_loader(value):
    findings = [f for f in validate({**BASE, "dataloader_drop_last": value}).findings
                if f.path == "dataloader_drop_last"]
    if isinstance(value, bool):
        assert findings == []
        return
    assert [(f.code, f.severity) for f in findings] == [("type.dataloader", "warning")]
    assert "training_data" in findings[0].message and "is ON" not in findings[0].message
    meant = findings[0].fix.apply({**BASE, "dataloader_drop_last": value})["dataloader_drop_last"]
    assert isinstance(meant, bool)


@pytest.mark.deepspeed
def test_deepspeeds_data_loader_refuses_every_value_the_validator_warns_about(real):
    configs = _drop_last_configs()
    got = real["dataloader"]
    for value in DROP_LAST:
        warned = any(f.code == "type.dataloader" for f in validate(configs[repr(value)]).findings)
        if isinstance(value, bool):  # 7 samples in batches of 2: the last one dropped or kept
            assert got[repr(value)] == ["batches", 3 if value else 4] and not warned
        else:
            assert got[repr(value)][0] == "ValueError" and "drop_last should be a boolean" in got[repr(value)][1]
            assert warned


@pytest.mark.deepspeed
def test_contiguous_buffers_need_a_positive_whole_number_of_checkpoints(real):
    configs = _checkpointing_configs()
    assert real["checkpointing"] == {label: raised for label, (_, raised) in NUMBER_CHECKPOINTS.items()}
    for label, (_, raised) in NUMBER_CHECKPOINTS.items():
        warned = [f for f in validate(configs[label]).findings if f.code == "activation-checkpointing.contiguous"
                  and f.path == "activation_checkpointing.number_checkpoints"]
        assert bool(warned) == (raised is not None), label
        assert not warned or raised in warned[0].message


@pytest.mark.parametrize(("value", "host_note"), [("false", True), ("auto", True), (True, True), (False, False)])
def test_gds_written_as_text_is_read_as_on_like_deepspeed_reads_it(value, host_note):
    """aio_config asserts a CUDA accelerator whenever use_gds is a truthy value ("GDS currently only supported for
    CUDA accelerator" on any other host, every release): the string "false" is on, and the host note says so."""
    codes = {f.code for f in validate({**BASE, "aio": {"use_gds": value}}).findings if f.path == "aio.use_gds"}
    assert ("misc.gds" in codes) == host_note
