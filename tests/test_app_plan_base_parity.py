"""The Plan page ranks the session's config with each candidate loaded, as `dsconfig plan --base` does, and says so."""

from __future__ import annotations

import io
import json

from app_support import app, html_tables

from core.cli import main

#: ZeRO keys the candidates do not decide (buckets, overlap off): they change each row's speed and memory
TUNED = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
         "bf16": {"enabled": True},
         "zero_optimization": {"stage": 2, "reduce_bucket_size": 1000, "allgather_bucket_size": 1000,
                               "overlap_comm": False}}


def test_the_plan_pages_rows_are_the_clis_with_the_session_config_as_base(tmp_path):
    """The page costed rows with the session config's ZeRO keys (62.3 GiB, 5.560 s) while nothing on it said so, and
    `dsconfig plan` without --base printed 64.3 GiB, 5.551 s for the same inputs."""
    at = app(TUNED, "pages/plan.py")
    at.selectbox(key="plan_gpu").set_value("NVIDIA H100 80GB").run()
    assert any("--base" in c.value and "your config with that candidate loaded" in c.value for c in at.caption)
    page = html_tables(at)[0].head(3)
    path = tmp_path / "base.json"
    path.write_text(json.dumps(TUNED))
    out = io.StringIO()
    main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB", "--format", "json",
          "--global-batch", str(at.number_input(key="plan_batch").value),
          "--seq-len", str(at.number_input(key="plan_seq").value), "--base", str(path), "--top", "3"], out=out)
    rows = json.loads(out.getvalue())["rows"][:3]
    for (_, shown), row in zip(page.iterrows(), rows, strict=True):
        assert float(shown["Step s"]) == round(row["step_seconds"], 3)
        assert int(shown["Micro batch"]) == row["micro_batch"] and float(shown["GPU GiB"]) <= row["gpu_peak_gib"] + 0.05
