"""sequence_parallel_size in a config DeepSpeed is given as a file path: 0.17.0-0.18.5 hand the path to
DeepSpeedConfig unread, which looks for the key in the path string and checks the batch over every GPU, while a dict
divides the GPUs by sequence_parallel_size (a hunt found `validate` saying OK where 0.17.6 failed at initialize)."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from core import validate, versions

SP = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
      "sequence_parallel_size": 2}


def _found(config: dict, version: str, world: int = 2):
    return [f for f in validate(config, world_size=world, version=version).findings
            if f.code == "batch.sequence-parallel-path"]


def test_the_releases_that_pass_the_path_through_are_read_from_their_code():
    passes = [v for v in versions.RELEASES if not versions.path_config_divides_by_sequence_parallel(v)]
    assert passes[0] == "0.17.0" and passes[-1] == "0.18.5" and "0.18.6" not in passes


def test_a_path_fails_the_batch_check_a_dict_passes():
    (finding,) = _found(SP, "0.17.6")
    assert finding.severity == "warning"
    assert "Check batch related parameters" in finding.message and "path string" in finding.message
    assert not [f for f in validate(SP, world_size=2, version="0.17.6").findings if f.severity == "error"]
    assert not _found(SP, "0.18.6") and not _found(SP, "0.19.8") and not _found(SP, "0.16.9")
    assert not _found({**SP, "sequence_parallel_size": 1}, "0.17.6")
    fixed = finding.fix.apply(SP)
    assert fixed == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                     "sequence_parallel_size": 2}
    assert not _found(fixed, "0.17.6")


def test_a_derived_micro_batch_that_differs_is_said():
    config = {"train_batch_size": 8, "gradient_accumulation_steps": 1, "sequence_parallel_size": 2}
    (finding,) = _found(config, "0.17.6", world=4)
    assert "micro batch 2 and accumulation 1, not the 4.0 and 1 of a dict" in finding.message
    assert finding.fix.apply(config) == {"gradient_accumulation_steps": 1, "sequence_parallel_size": 2,
                                              "train_micro_batch_size_per_gpu": 4}


def test_nothing_is_said_when_both_ways_train_the_same_or_for_the_hf_target():
    assert not _found({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
                       "sequence_parallel_size": 2}, "0.17.6", world=4)
    assert not [f for f in validate(SP, world_size=2, version="0.17.6", target="hf").findings
                if f.code == "batch.sequence-parallel-path"]


WORKER = textwrap.dedent("""
    import json, sys, warnings, logging
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    import torch, deepspeed
    import deepspeed.comm as dist
    import deepspeed.comm.torch as ds_comm_torch
    ds_comm_torch.build_shm_op = lambda: None
    deepspeed.init_distributed(dist_backend="gloo")
    real = dist.get_world_size
    # two GPUs as the batch check counts them (the rank count DeepSpeedConfig reads)
    dist.get_world_size = lambda *a, **k: 2 if not a and not k else real(*a, **k)
    path = sys.argv[1]
    out = {}
    for how in ("path", "dict"):
        model = torch.nn.Linear(4, 4)
        config = path if how == "path" else json.load(open(path))
        try:
            deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
            out[how] = "ok"
        except Exception as exc:  # past the batch check, one CPU rank cannot build two ranks' groups: not the batch
            out[how] = f"{type(exc).__name__}: {exc}"[:300]
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.parametrize("release", ["0.17.6", "0.19.8"])
def test_real_initialize_with_a_path_and_a_dict(release, tmp_path):
    from tests.oracle.initialize import single_rank_env
    from tests.oracle.oracle import OracleUnavailable, release_interpreter

    try:
        python, extra = release_interpreter(release)
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({**SP, "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}}}))
    proc = subprocess.run([python, "-c", WORKER, str(path)], capture_output=True, text=True, timeout=900,
                          env={**single_rank_env(), **extra}, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, proc.stderr[-3000:]
    got = json.loads(lines[-1][len("RESULT"):])
    batch_check = "Check batch related parameters"
    assert batch_check not in got["dict"], got
    assert bool(_found(SP, release)) == (batch_check in got["path"]), got
