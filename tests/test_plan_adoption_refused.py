"""Plan adoption of a row into a config whose own keys the row's stage or offload makes DeepSpeed refuse (a hunt:
the #1 row of a bf16 + fp32-accumulation ZeRO-1 config was stage 0 with grad_accum_dtype kept, which 0.19.8's
initialize refuses; an offload ratio kept below stage 3, prescale_gradients with ZeRO-2's reduce-scatter and ZenFlow
without offload likewise). The validator's rules, proven on the real releases' initialize elsewhere
(tests/test_initialize_failures.py), judge here; the parser-time one is judged by the real parser too."""

from __future__ import annotations

import io
import json

import pytest

from core.cli import main
from core.models import get_spec
from core.perf.hardware import Cluster
from core.perf.recommend import adopt_candidate, adoption_removals, recommend
from core.validate import validate
from tests.oracle.oracle import deepspeed_verdicts, oracle_available

GPT2 = get_spec("openai-community/gpt2")
H100X8 = Cluster("NVIDIA H100 80GB", 8)
BF16 = {"bf16": {"enabled": True}}
#: base config, the key a row must drop, the validator's code for it, the rows that must drop it
CASES = {
    "grad-accum-fp32": ({**BF16, "data_types": {"grad_accum_dtype": "fp32"}, "zero_optimization": {"stage": 1}},
                        "data_types.grad_accum_dtype", "engine.dtype-mix", lambda row: row.stage == 0),
    "offload-ratio": ({**BF16, "zero_optimization": {"stage": 3, "offload_optimizer": {
                          "device": "cpu", "pin_memory": True, "ratio": 0.3}}},
                      "zero_optimization.offload_optimizer.ratio", "type.value_error",
                      lambda row: row.stage in (1, 2) and row.offload_optimizer != "none"),
    "prescale": ({**BF16, "prescale_gradients": True}, "prescale_gradients", "engine.prescale-reduce-scatter",
                 lambda row: row.stage in (2, 3)),
    "zenflow": ({**BF16, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                                               "zenflow": {"topk_ratio": 0.1}}},
                "zero_optimization.zenflow", "engine.zenflow-without-offload",
                lambda row: row.stage in (0, 1, 2) and row.offload_optimizer == "none"),
}


def _errors(config: dict, version: str = "0.19.8") -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in validate(config, world_size=8, version=version).findings
            if f.severity == "error"]


@pytest.mark.parametrize("case", list(CASES))
def test_every_row_is_accepted_and_says_what_it_dropped(case):
    base, key, code, drops = CASES[case]
    assert _errors({**base, "train_batch_size": 64}) == []
    rows = recommend(GPT2, H100X8, seq_len=1024, global_batch=64, base=base)
    dropped = 0
    for row in rows.drop_duplicates(["stage", "offload_optimizer", "offload_param", "zeropp"]).itertuples():
        assert _errors(row.config) == [], (row.stage, row.offload_optimizer, row.offload_param)
        assert adopt_candidate(base, row.config) == row.config  # adopting again gives it back
        said = {path: why for paths, why in adoption_removals(base, row.config) for path in paths}
        if drops(row):
            dropped += 1
            assert key in said and code in said[key], said
        else:
            assert key not in said
    assert dropped


def test_a_release_that_trains_it_keeps_it():
    """0.16.9 builds BF16_Optimizer for bf16 + fp32 accumulation without ZeRO: the row keeps the key."""
    base = CASES["grad-accum-fp32"][0]
    row = recommend(GPT2, H100X8, seq_len=1024, global_batch=64, base=base, version="0.16.9").query("stage == 0")
    config = row.iloc[0].config
    assert config["data_types"] == {"grad_accum_dtype": "fp32"} and _errors(config, "0.16.9") == []
    assert adoption_removals(base, config, "0.16.9") == []


@pytest.mark.deepspeed
def test_the_real_parser_takes_the_rows_it_refused():
    if (missing := oracle_available()) is not None:
        pytest.fail(missing)
    base = CASES["offload-ratio"][0]
    rows = recommend(GPT2, H100X8, seq_len=1024, global_batch=64, base=base)
    configs = [r.config for r in rows.drop_duplicates(["stage", "offload_optimizer", "offload_param"]).itertuples()]
    verdicts = deepspeed_verdicts([(config, 8) for config in configs])
    assert all(v.accepted for v in verdicts), [v.describe() for v in verdicts if not v.accepted]
    # and the key as it was kept before: the parser refuses it
    kept = next(c for c in configs if c["zero_optimization"]["stage"] == 2 and
                c["zero_optimization"].get("offload_optimizer", {}).get("device") == "cpu")
    kept = {**kept, "zero_optimization": {**kept["zero_optimization"], "offload_optimizer": {
        **kept["zero_optimization"]["offload_optimizer"], "ratio": 0.3}}}
    assert "Partial offloading" in deepspeed_verdicts([(kept, 8)])[0].describe()


def test_the_cli_plan_says_it(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(CASES["grad-accum-fp32"][0]))
    out = io.StringIO()
    code = main(["plan", "--model", "openai-community/gpt2", "--gpu", "H100", "--seq-len", "1024",
                 "--global-batch", "64", "--base", str(path), "--top", "3"], out=out)
    assert code == 0
    assert "data_types.grad_accum_dtype" in out.getvalue() and "engine.dtype-mix" in out.getvalue()
