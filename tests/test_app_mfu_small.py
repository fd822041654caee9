"""An MFU under 1% reads as the CLI says it (0.1%), not 0%, on the ZeRO page."""

from __future__ import annotations

import io
import json
from pathlib import Path

from app_support import app

from core.cli import main
from core.models import get_config, get_spec

#: ZeRO-3 with the optimizer and parameters on the CPU, 128 tokens per sequence: an MFU of about 0.1%
FULL_OFFLOAD = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                                      "offload_param": {"device": "cpu", "pin_memory": True}}}
LLAMA = "meta-llama/Llama-2-7b-hf"


def test_the_zero_page_says_an_mfu_under_one_percent_as_the_cli_does(tmp_path: Path):
    spec = get_spec(LLAMA)
    at = app(FULL_OFFLOAD, "pages/zero.py", gpu="NVIDIA H100 80GB", gpus_per_node=8, nodes=1, seq_len=128,
             model=LLAMA, model_config=get_config(LLAMA), total_params=spec.total_params,
             largest_layer_params=spec.largest_layer_params, attention="flash", recompute="none")
    caption = next(c.value for c in at.caption if "MFU" in c.value)
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(FULL_OFFLOAD))
    out = io.StringIO()
    main(["predict", str(path), "--model", LLAMA, "--gpu", "NVIDIA H100 80GB", "--seq-len", "128",
          "--attention", "flash"], out=out)
    cli_mfu = out.getvalue().split("MFU: ", 1)[1].split()[0]
    assert cli_mfu != "0%" and f"(MFU {cli_mfu})" in caption, (cli_mfu, caption)
