"""An optimizer or scheduler section without a type, for the HF Trainer: transformers only asks whether the key is
there and leaves the optimizer / scheduler to DeepSpeed, which builds none without a type, so the real Trainer fails
(a hunt: the validator said OK with a warning). Judged by a real ``Trainer.train()`` on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from core import validate

BASE = {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto", "gradient_accumulation_steps": "auto",
        "zero_optimization": {"stage": 2}}
CASES = {
    "optimizer-params-no-type": ({**BASE, "optimizer": {"params": {"lr": "auto"}}}, "hf.optimizer-no-type",
                                 "requires an optimizer"),
    "scheduler-params-no-type": ({**BASE, "scheduler": {"params": {"warmup_num_steps": "auto"}}},
                                 "hf.scheduler-no-type", "get_last_lr"),
    "empty-scheduler": ({**BASE, "scheduler": {}}, "hf.scheduler-no-type", "get_last_lr"),
    "control": (BASE, None, None),
}
#: The codes the real Trainer proves here (tests/test_initialize_failures.py counts them as proven).
PROVEN_WITH_TRAINER = frozenset({"hf.optimizer-no-type", "hf.scheduler-no-type"})

WORKER = textwrap.dedent("""
    import json, os, sys, warnings, logging
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    cfg = json.loads(sys.argv[1])
    args = TrainingArguments(output_dir=sys.argv[2], deepspeed=cfg, max_steps=2, per_device_train_batch_size=2,
                             report_to=[], save_strategy="no", use_cpu=True, bf16=True)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=64, n_positions=16))

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            x = torch.randint(0, 64, (8,))
            return {"input_ids": x, "labels": x}

    try:
        Trainer(model=model, args=args, train_dataset=Data()).train()
        print("RESULT" + json.dumps({"ok": True}))
    except Exception as exc:
        print("RESULT" + json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}))
""")


def test_the_validator_says_what_the_trainer_does():
    for config, code, _ in CASES.values():
        codes = {f.code for f in validate(config, target="hf").findings if f.severity == "error"}
        assert codes == ({code} if code else set()), (config, codes)
    # plain DeepSpeed only ignores the params (no optimizer is built): a warning there
    plain = validate({"train_micro_batch_size_per_gpu": 1, "optimizer": {"params": {"lr": 1e-3}}})
    assert {f.code for f in plain.findings} >= {"optimizer.no-type"} and not plain.errors


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_the_real_trainer(case, tmp_path):
    pytest.importorskip("transformers")
    from tests.oracle.initialize import single_rank_env

    config, code, fragment = CASES[case]
    proc = subprocess.run([sys.executable, "-c", WORKER, json.dumps(config), str(tmp_path)], capture_output=True,
                          text=True, timeout=900, env=single_rank_env(), check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, proc.stderr[-3000:]
    got = json.loads(lines[-1][len("RESULT"):])
    if code is None:
        assert got["ok"], got
    else:
        assert not got["ok"] and fragment in got["error"], got
