"""``dsconfig plan`` and ``dsconfig predict``."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from core.cli import main
from core.hardware import GPU_BY_NAME
from core.memory.result import gib_capacity, gib_used
from core.perf.advice import decimals_for
from core.validate import validate
from core.versions import resolve_version

FIXTURE_LOG = Path(__file__).with_name("test_perf_deepspeed_cpu.log")
CLUSTER = ["--gpu", "NVIDIA A100 80GB", "--gpus-per-node", "8", "--nodes", "2"]


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
                                "train_batch_size": 128, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "overlap_comm": True}}))
    return path


def test_plan_text_ranks_and_prints_the_best_config():
    code, text = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--network", "200", "--seq-len",
                      "2048", "--global-batch", "64", "--tokens", "1e9", "--price", "2.5", "--top", "5"])
    assert code == 0
    assert "candidates fit" in text and "Best:" in text and '"zero_optimization"' in text
    assert "200 Gbit/s per node" in text
    assert len([line for line in text.splitlines() if line.startswith("  ") and line[:3].strip().isdigit()]) == 5


def test_plan_text_shows_a_short_runs_hours_and_cost_instead_of_zero():
    """1e6 tokens at ~1e6 tokens/s: the one-decimal hours and whole-dollar cost read 0.0 and 0 on every row."""
    code, text = run(["plan", "--model", "openai-community/gpt2", *CLUSTER, "--seq-len", "1024",
                      "--global-batch", "64", "--tokens", "1e6", "--price", "2.5", "--top", "3"])
    assert code == 0
    rows = [line.split() for line in text.splitlines() if line.startswith("  ") and line[:3].strip().isdigit()]
    assert len(rows) == 3
    for row in rows:
        hours, cost = float(row[-2]), float(row[-1].replace(",", ""))
        assert 0 < hours < 0.01 and cost == pytest.approx(hours * 16 * 2.5, rel=0.05)
    assert decimals_for([309.5, 0.0], 1) == 1 and decimals_for([0.000309], 1) == 5 and decimals_for([], 0) == 0


def test_plan_json_rows_are_valid_configs_with_time_and_cost():
    code, text = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--seq-len", "2048",
                      "--global-batch", "64", "--tokens", "1e9", "--price", "2", "--format", "json", "--sweep"])
    assert code == 0
    data = json.loads(text)
    rows = data["rows"]
    assert rows[0]["fits"] and rows[0]["step_seconds"] <= rows[1]["step_seconds"]
    assert rows[0]["cost"] == pytest.approx(rows[0]["hours"] * 16 * 2)
    assert validate(rows[0]["config"], world_size=16).ok
    assert data["gpu_sweep"] and data["min_gpus"] >= 8


def test_plan_json_says_what_its_hours_and_cost_assumed():
    """The rows carried hours and cost while the JSON named neither the GPU, the node and GPU counts, the tokens,
    the price nor the node's CPU RAM and NVMe (cluster was the rates alone): each row's figures are now
    reproducible from the JSON itself, and the text says the same."""
    argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB", "--nodes", "2",
            "--global-batch", "256", "--tokens", "2e9", "--price", "2.5", "--top", "3"]
    code, text = run([*argv, "--format", "json"])
    data = json.loads(text)
    cluster, assumed = data["cluster"], data["assumptions"]
    assert code == 0 and cluster["gpu"] == "NVIDIA H100 80GB"
    assert cluster["gpu_memory_gib"] == GPU_BY_NAME["NVIDIA H100 80GB"].memory_gib
    assert (cluster["nodes"], cluster["gpus_per_node"], cluster["total_gpus"]) == (2, 8, 16)
    assert cluster["cpu_ram_gib_per_node"] == 512 and cluster["nvme_gib_per_node"] == 0
    assert cluster["inter_node_gbit_s"] == 3200 and assumed["cluster"] == cluster
    assert assumed["tokens"] == 2e9 and assumed["price_per_gpu_hour"] == 2.5
    for row in data["rows"]:
        assert row["hours"] == pytest.approx(assumed["tokens"] / row["tokens_per_second"] / 3600)
        assert row["cost"] == pytest.approx(row["hours"] * cluster["total_gpus"] * assumed["price_per_gpu_hour"])
    head = run(argv)[1].splitlines()
    assert "512 GiB of CPU RAM and no NVMe each" in head[0]
    assert head[3] == "hours: 2e+09 tokens to train at the row's tok/s; cost: hours x 16 GPUs x 2.5 USD per GPU-hour"


def test_predict_prints_the_breakdown(config_file):
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER,
                      "--seq-len", "2048"])
    assert code == 0
    assert "Critical path:" in text and "ZeRO-3 parameter all-gather" in text and "Bottleneck:" in text


def test_predict_json_names_the_gpu_the_gpu_count_and_the_shape(config_file):
    """The step time depends on the GPU, its count and the shape, which the JSON gave only inside prose (the
    text's first line has them): they are fields now, matching the text."""
    argv = ["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100 80", "--nodes", "2",
            "--recompute", "full", "--attention", "eager"]
    code, text = run([*argv, "--format", "json"])
    data = json.loads(text)
    assert code == 0
    assert {k: data["cluster"][k] for k in ("gpu", "gpus_per_node", "nodes", "total_gpus")} == {
        "gpu": "NVIDIA A100 80GB", "gpus_per_node": 8, "nodes": 2, "total_gpus": 16}
    assert data["cluster"]["inter_node_gbit_s"] == 1600
    assert data["cluster"]["gpu_memory_gib"] == GPU_BY_NAME["NVIDIA A100 80GB"].memory_gib
    assert data["shape"] == {"micro_batch": 2, "seq_len": 2048, "attention": "eager", "recompute": "full"}
    first = run(argv)[1].splitlines()[0]
    assert first.startswith("meta-llama/Llama-2-7b-hf on 2 x 8 NVIDIA A100 80GB (1600 Gbit/s per node, the GPU's "
                            "reference system: --network to change); micro batch 2 x 4 accumulation, seq 2048, "
                            "eager attention, recompute full")


def test_predict_calibrates_to_a_measured_step(config_file):
    args = ["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--seq-len", "2048",
            "--format", "json"]
    _, plain = run(args)
    before = json.loads(plain)["step_seconds"]
    code, text = run([*args, "--calibrate-step", str(before * 1.5)])
    data = json.loads(text)
    assert code == 0 and data["calibration"]["reached"]
    assert data["step_seconds"] == pytest.approx(before * 1.5, rel=0.01)


def test_predict_reads_a_deepspeed_log(config_file):
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER,
                      "--seq-len", "2048", "--log", str(FIXTURE_LOG), "--format", "json"])
    assert code == 0
    calibration = json.loads(text)["calibration"]
    assert calibration["measured_step_seconds"] == pytest.approx(0.20387)
    # which series, how many steps, what was dropped: the user can check it against the log
    assert calibration["measured_from"].startswith(f"read from --log {FIXTURE_LOG}, the wall-clock timers")
    assert re.search(r"the median of \d+ steps, the first of \d+ dropped as warm-up", calibration["measured_from"])


def test_predict_names_the_series_and_batch_a_log_was_read_with(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1,
                                  "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}))
    log = tmp_path / "train.log"
    log.write_text("".join(f"[INFO] [timer.py:264:stop] epoch=0/micro_step={i * 4}/global_step={i}, "
                           f"RunningAvgSamplesPerSec=60.0, CurrSamplesPerSec={rate}, MemAllocated=11.2GB, "
                           "MaxMemAllocated=20.5GB\n" for i, rate in enumerate((30.0, 32.0, 34.0), start=1)))
    code, text = run(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB",
                      "--gpus-per-node", "8", "--nodes", "8", "--log", str(log)])
    assert code == 0, text
    line = next(line for line in text.splitlines() if line.startswith("calibrated to a measured"))
    assert (f"read from --log {log}, the throughput timer: 64 samples per step (this config's train_batch_size) at "
            "the median 32 samples/s of 3 reports") in line
    code, text = run(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB",
                      "--gpus-per-node", "8", "--nodes", "8", "--calibrate-step", "2.5"])
    assert "calibrated to a measured 2.500 s (given with --calibrate-step; uncalibrated" in text



def test_predict_reads_a_utf16_log_from_standard_input_as_from_a_file(config_file, monkeypatch):
    """A log piped in as UTF-16 (PowerShell) was decoded as UTF-8: no step time found."""
    data = b"\xff\xfe" + FIXTURE_LOG.read_text(encoding="utf-8").encode("utf-16-le")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER,
                      "--seq-len", "2048", "--log", "-", "--format", "json"])
    assert code == 0
    assert json.loads(text)["calibration"]["measured_step_seconds"] == pytest.approx(0.20387)


def test_predict_refuses_a_calibration_it_cannot_reproduce(config_file, capsys):
    """The fixture log is a tiny CPU model's: 0.2 s is faster than a 7B step can run on 16 A100s. The prediction is
    printed uncalibrated, with a warning that says why and what to check (it used to print constants clamped at
    their bounds as if calibrated)."""
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER,
                      "--seq-len", "2048", "--log", str(FIXTURE_LOG), "--format", "json"])
    data = json.loads(text)
    assert code == 0 and data["calibration"]["reached"] is False
    assert data["step_seconds"] == pytest.approx(data["calibration"]["uncalibrated_step_seconds"])
    assert "faster than this config can run" in data["calibration"]["refused"]
    assert "not calibrated" in capsys.readouterr().err
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER,
                      "--seq-len", "2048", "--calibrate-step", "1e9"])
    assert code == 0 and "calibrated to a measured" not in text
    assert "slower than this config runs even with every rate at" in capsys.readouterr().err


@pytest.mark.parametrize("batch_keys", [{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4},
                                        {"train_batch_size": 128, "gradient_accumulation_steps": 4},
                                        {"train_batch_size": 128.0, "train_micro_batch_size_per_gpu": 2}])
def test_predict_reads_the_throughput_timer_with_the_batch_deepspeed_derives(batch_keys, tmp_path):
    """The throughput timer divides DeepSpeed's train_batch_size (ThroughputTimer(batch_size=train_batch_size()))
    by the step time; without a written integer train_batch_size the log measured nothing."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({**batch_keys, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}))
    log = tmp_path / "train.log"
    log.write_text("[INFO] [timer.py:264:stop] epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=60.0, "
                   "CurrSamplesPerSec=64.0, MemAllocated=11.2GB, MaxMemAllocated=20.5GB\n")
    code, text = run(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--log", str(log),
                      "--format", "json"])
    assert code == 0, text
    assert json.loads(text)["calibration"]["measured_step_seconds"] == pytest.approx(128 / 64.0)


def test_plan_json_sweep_is_strict_json_where_a_size_does_not_fit():
    """70B on A100 40GB with 32 GiB of host RAM per node fits on 8 nodes only: the sizes that do not fit have
    empty columns, which were written as NaN (not JSON: jq and JSON.parse refuse it)."""
    code, text = run(["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "NVIDIA A100 40GB", "--global-batch",
                      "64", "--cpu-ram", "32", "--sweep", "--format", "json", "--top", "1"])
    assert code == 1  # nothing fits on the one node asked about (the sweep finds 8)

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    data = json.loads(text, parse_constant=refuse)
    fits = [row["fits"] for row in data["gpu_sweep"]]
    assert True in fits and False in fits
    assert all(row["step_seconds"] is None for row in data["gpu_sweep"] if not row["fits"])
    # the integer columns stay integers next to the empty rows (pandas made them floats: "stage": 3.0)
    assert all(type(row[key]) is int for row in data["gpu_sweep"] if row["fits"] for key in ("stage", "micro_batch"))
    code, text = run(["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "NVIDIA A100 40GB", "--global-batch",
                      "64", "--cpu-ram", "32", "--sweep", "--top", "1"])
    sweep = text.split("node count")[1].split("Smallest")[0].splitlines()[2:]
    assert code == 1 and sweep and not any("NaN" in line or ".0 " in line for line in sweep)
    assert any(line.split()[2] == "yes" and line.split()[3] == "3" for line in sweep)
    assert any(line.split()[2:4] == ["NO", "-"] for line in sweep)


def test_gpu_is_read_as_fit_reads_it(capsys):
    """plan and predict take the name in any case, or a part only one GPU has (core.cli.common.catalog_gpu)."""
    code, text = run(["plan", "--model", "openai-community/gpt2", "--gpu", "h100", "--global-batch", "8"])
    assert code == 0 and text.startswith("openai-community/gpt2 on 1 x 8 NVIDIA H100 80GB")
    # a whole word before a part of one: "L4" also occurs in "L40S", which made the L4 impossible to name
    code, text = run(["plan", "--model", "openai-community/gpt2", "--gpu", "L4", "--global-batch", "8"])
    assert code == 0 and text.startswith("openai-community/gpt2 on 1 x 8 NVIDIA L4 24GB")


def test_a_fractional_count_is_asked_for_as_a_whole_number(capsys):
    code, _ = run(["predict", "x.json", "--model", "openai-community/gpt2", "--gpu", "H100", "--nodes", "0.5"])
    assert code == 2 and "--nodes: expected a positive whole number, got '0.5'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100", "--global-batch", "8"],
         "it matches NVIDIA A100 80GB, NVIDIA A100 40GB"),
        (["predict", "x.json", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "TPU v5"], "pick one of: NVIDIA H100"),
        (["plan", "--model", "nope/nope", "--gpu", "NVIDIA H100 80GB", "--global-batch", "8"], "Unknown model"),
        (["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB", "--global-batch", "12"],
         "multiple of 8"),
        (["plan", "--gpu", "NVIDIA H100 80GB", "--global-batch", "8"], "exactly one of --model"),
        # a cost beyond float range: was "Infinity" in --format json (not JSON), "inf" in the table; then named
        # recommend's parameters (tokens=1e+308 x price_per_gpu_hour=1e+300), now the flag
        (["plan", "--model", "openai-community/gpt2", "--gpu", "NVIDIA H100 80GB", "--global-batch", "8",
          "--tokens", "1e308", "--price", "1e300", "--format", "json"], "argument --tokens: expected a number up to"),
    ],
)
def test_bad_input_is_a_clear_message(argv, message, capsys):
    code, _ = run(argv)
    assert code == 2
    assert message in capsys.readouterr().err


def test_predict_bad_files(tmp_path, capsys):
    missing = tmp_path / "missing.json"
    code, _ = run(["predict", str(missing), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB"])
    assert code == 2 and "missing.json" in capsys.readouterr().err
    no_micro = tmp_path / "c.json"
    no_micro.write_text("{}")
    empty_log = tmp_path / "empty.log"
    empty_log.write_text("nothing here\n")
    code, _ = run(["predict", str(no_micro), "--micro-batch", "1", "--model", "meta-llama/Llama-2-7b-hf", "--gpu",
                   "NVIDIA H100 80GB", "--log", str(empty_log)])
    assert code == 2 and "no step times" in capsys.readouterr().err
    code, _ = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB", "--global-batch",
                   "-3"])
    assert code == 2


@pytest.mark.parametrize("command", ["plan", "predict", "estimate", "fit"])
def test_attention_choices_say_what_each_one_is(command, capsys):
    from core.memory.activations import ATTENTION_KINDS

    out = io.StringIO()
    assert main([command, "--help"], out=out) == 0
    text = " ".join((out.getvalue() + capsys.readouterr().out).split())  # argparse wraps the help
    for name in ATTENTION_KINDS:
        assert f"{name}: " in text, (command, name)
    assert "flash-attn 1.x or its Triton kernel" in text


def test_plan_says_what_the_prediction_assumed():
    """bf16 asked for on a V100 (no bf16 tensor cores): the plan says it is emulated at the fp32 rate, as predict
    does (was: a bf16 config recommended without a word); a GPU with bf16 gets no such note."""
    argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpus-per-node", "8", "--global-batch", "8",
            "--precision", "bf16"]
    code, text = run([*argv, "--gpu", "NVIDIA V100 32GB"])
    assert code == 0 and "note: NVIDIA V100 32GB has no bf16 tensor cores" in text
    code, text = run([*argv, "--gpu", "NVIDIA V100 32GB", "--format", "json"])
    assert any("no bf16 tensor cores" in n for n in json.loads(text)["assumptions"]["notes"])
    code, text = run([*argv, "--gpu", "NVIDIA H100 80GB"])
    assert code == 0 and "bf16 tensor cores" not in text


def test_plan_huge_global_batch_answers_quickly():
    """--global-batch 8e10 listed 1e10 micro-batch candidates (minutes of CPU); the candidates stop at the memory
    search's bound, so the largest micro batch in the table is at most that bound."""
    from core.memory.solve import MAX_MICRO_BATCH_SEARCH

    code, text = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB",
                      "--global-batch", "8e10", "--format", "json", "--top", "2000"])
    assert code == 0
    rows = json.loads(text)["rows"]
    assert rows and max(r["micro_batch"] for r in rows) <= MAX_MICRO_BATCH_SEARCH


def test_predict_refuses_a_step_beyond_float_range(tmp_path, capsys):
    """--cpu-adam 1e-300 with an offloaded optimizer: the step was "Infinity" in --format json (not JSON) and a
    300-digit number of seconds in the text."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
                                  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}))
    code, text = run(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA A100 80GB",
                      "--cpu-adam", "1e-300", "--format", "json"])
    assert code == 2 and "Infinity" not in text
    assert "CPU optimizer step takes longer than a number can hold" in capsys.readouterr().err


def test_predict_fills_an_auto_accumulation_as_the_hf_trainer_does(tmp_path, capsys):
    """A fully-"auto" HF config: --gradient-accumulation-steps fills gradient_accumulation_steps (and the "auto"
    train_batch_size: 2 x 4 x 16 GPUs) as the Trainer does; written values that disagree are refused."""
    auto = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto", "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}
    path = tmp_path / "hf.json"
    path.write_text(json.dumps(auto))
    base = ["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--seq-len", "1024",
            "--micro-batch", "2", "--format", "json"]
    code, text = run(base)
    one = json.loads(text)
    assert code == 0 and one["gradient_accumulation_steps"] == 1
    assert any("1 micro-step" in n for n in one["notes"])
    code, text = run([*base, "--gradient-accumulation-steps", "4"])
    four = json.loads(text)
    assert code == 0 and four["gradient_accumulation_steps"] == 4
    assert four["tokens_per_step"] == 2 * 4 * 16 * 1024 and not any("micro-step" in n for n in four["notes"])
    assert four["step_seconds"] > one["step_seconds"]
    for written, message in (({"gradient_accumulation_steps": 8}, "gradient_accumulation_steps=8 vs hf"),
                             ({"train_batch_size": 64}, "train_batch_size=64 vs hf"),
                             ({"train_micro_batch_size_per_gpu": 1}, "train_micro_batch_size_per_gpu=1 vs hf"),
                             # no accumulation or global batch key: the Trainer fills neither, DeepSpeed derives 1
                             ({"gradient_accumulation_steps": None, "train_batch_size": None}, "runs 1 accumulation")):
        path.write_text(json.dumps({k: v for k, v in {**auto, **written}.items() if v is not None}))
        code, _ = run([*base, "--gradient-accumulation-steps", "4"])
        assert code == 2 and message in capsys.readouterr().err, written
    path.write_text(json.dumps({**auto, "gradient_accumulation_steps": 4}))  # the same value is accepted
    code, text = run([*base, "--gradient-accumulation-steps", "4"])
    assert code == 0 and json.loads(text)["gradient_accumulation_steps"] == 4


def test_predict_says_the_network_and_attention_it_assumed(config_file):
    """The network alone changes a 2-node ZeRO-3 step ~7x: the text names the one assumed (the GPU's default)."""
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER])
    first = text.splitlines()[0]
    assert code == 0 and "(1600 Gbit/s per node, the GPU's reference system: --network to change)" in first
    assert "flash attention, recompute none" in first
    code, text = run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER, "--network",
                      "100", "--attention", "eager"])
    assert "(100 Gbit/s per node)" in text.splitlines()[0] and "eager attention" in text.splitlines()[0]


def test_predict_and_plan_print_the_small_work_caveat(tmp_path):
    """ZeRO-3 at 512 tokens per GPU: predict prints the caveat on its figure (and its JSON holds it), plan prints
    the fastest fitting row's; ZeRO-2 has none."""
    def predict_text(stage: int, fmt: str = "text") -> str:
        path = tmp_path / f"z{stage}.json"
        path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                    "bf16": {"enabled": True}, "zero_optimization": {"stage": stage}}))
        code, text = run(["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu",
                          "NVIDIA H100 80GB", "--seq-len", "512", "--format", fmt])
        assert code == 0
        return text

    caveats = [line for line in predict_text(3).splitlines() if line.startswith("caveat: ZeRO-3 with 512 tokens")]
    assert len(caveats) == 1 and "lower bound" in caveats[0]
    assert json.loads(predict_text(3, "json"))["caveats"] == [caveats[0].removeprefix("caveat: ")]
    assert "caveat" not in predict_text(2)
    code, text = run(["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "NVIDIA H100 80GB", "--nodes", "4",
                      "--seq-len", "512", "--global-batch", "32"])
    assert code == 0 and "caveat (fastest fitting config): ZeRO-3 with 512 tokens per GPU" in text


def test_predict_says_when_the_config_does_not_fit(tmp_path):
    """A step time for Llama-2-70B with CPU offload on a node with too little RAM came without a word, while fit
    and estimate said DOES NOT FIT for the same input."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                                      "offload_param": {"device": "cpu"}}}))
    argv = ["predict", str(path), "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "NVIDIA A100 80GB"]
    code, text = run([*argv, "--cpu-ram", "256"])
    assert code == 0
    caveat = next(line for line in text.splitlines() if line.startswith("caveat: does not fit (CPU RAM)"))
    assert "CPU RAM per node " in caveat and "of 256.0 GiB (" in caveat
    assert "GiB over); the step time assumes it runs" in caveat
    data = json.loads(run([*argv, "--cpu-ram", "256", "--format", "json"])[1])
    assert data["memory"]["fits"] is False and data["memory"]["short"] == ["CPU RAM"]
    assert data["caveats"][0] == caveat.removeprefix("caveat: ")
    assert "does not fit" not in run([*argv, "--cpu-ram", "4096"])[1]
    # short of NVMe: the caveat shows the NVMe figure too (as the app's headline does)
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"},
                                                      "offload_param": {"device": "nvme"}}}))
    text = run([*argv, "--cpu-ram", "4096"])[1]
    caveat = next(line for line in text.splitlines() if line.startswith("caveat: does not fit (NVMe)"))
    assert "NVMe per node " in caveat and "of 0.0 GiB (" in caveat


@pytest.mark.parametrize(("config", "code"), [
    ({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}, "fp16": {"enabled": True},
      "bf16": {"enabled": True}}, "precision.fp16-and-bf16"),
    ({"train_micro_batch_size_per_gpu": 2, "zero_optimization": "yes"}, "type.model_type"),
])
def test_predict_says_first_when_deepspeed_refuses_the_config(config, code, tmp_path):
    """A step time for a config DeepSpeed refuses to parse (fp16 and bf16 both on; a ZeRO section that is a
    string) came with no caveat; the refusal is now the first one, naming the validator's code, in text and JSON."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    argv = ["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB"]
    status, text = run(argv)
    assert status == 0
    caveats = [line for line in text.splitlines() if line.startswith("caveat: ")]
    version = resolve_version(None)
    assert caveats[0].startswith(f"caveat: DeepSpeed {version} refuses this config as written") and code in caveats[0]
    data = json.loads(run([*argv, "--format", "json"])[1])
    assert data["caveats"][0] == caveats[0].removeprefix("caveat: ")


def test_predict_of_a_valid_config_has_no_refusal(config_file):
    assert "refuses" not in run(["predict", str(config_file), "--model", "meta-llama/Llama-2-7b-hf", *CLUSTER])[1]


def test_plan_nothing_fits_names_the_flags_that_would_let_something_fit():
    """70B on 8 A100 40GB: the advice said "allow CPU/NVMe offload" though the CPU-offload candidates were ranked
    already, and never named --nvme, with which three rows fit; a sweep where nothing fits printed "None GPUs"."""
    argv = ["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "NVIDIA A100 40GB", "--global-batch", "8",
            "--seq-len", "1024"]
    text = run(argv)[1]
    said = next(line for line in text.splitlines() if line.startswith("Nothing fits"))
    assert "512 GiB of CPU RAM and no NVMe per node" in said and "--nvme GIB" in said and "--cpu-ram GIB" in said
    assert " 0 of " not in run([*argv, "--nvme", "30000"])[1].splitlines()[1]
    swept = run(["plan", "--model", "meta-llama/Llama-3.1-405B", "--gpu", "T4", "--global-batch", "8", "--sweep"])[1]
    assert "None GPUs" not in swept and "Nothing fits at any size in the sweep" in swept


def test_a_model_with_fewer_learned_positions_than_the_default_is_planned_at_its_length(capsys):
    """GPT-2 has 1024 learned positions: without --seq-len the plan assumes 1024 (it used to rank at 2048, which
    the model cannot run); asking for 2048 is refused with the fix."""
    code, text = run(["plan", "--model", "openai-community/gpt2", "--gpu", "h100", "--global-batch", "8"])
    assert code == 0 and ", seq 1024," in text.splitlines()[0]
    code, _ = run(["plan", "--model", "openai-community/gpt2", "--gpu", "h100", "--global-batch", "8",
                   "--seq-len", "2048"])
    assert code == 2 and "use at most 1024 tokens" in capsys.readouterr().err
    code, text = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "h100", "--global-batch", "8"])
    assert code == 0 and ", seq 2048," in text.splitlines()[0]  # RoPE: the default


def test_predict_sizes_an_auto_micro_batch_as_fit_and_the_app_do(tmp_path):
    """predict refused an "auto" micro batch ("pass --micro-batch") while fit, estimate and the app take the HF
    Trainer's default 8 and say so (the README said the command line does)."""
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                                "train_batch_size": "auto", "bf16": {"enabled": "auto"},
                                "zero_optimization": {"stage": 2}}))
    code, text = run(["predict", str(path), "--model", "meta-llama/Llama-3.2-1B", "--gpu", "h100"])
    assert code == 0 and "; micro batch 8 x 1 accumulation," in text
    assert 'caveat: micro batch 8 assumed: "auto" is filled by the HF Trainer' in text


def test_predict_sizes_a_config_without_batch_keys_as_fit_does(tmp_path, capsys):
    """A config with no batch keys (DeepSpeedExamples' hf-transformers ds_config.json): fit and estimate size it at
    micro batch 1 and say so, predict refused it ("train_micro_batch_size_per_gpu is null", for a key that is not
    there). It now assumes the same micro batch through the same helper, and says so in text and JSON."""
    from core.cli.common import micro_batch_when_unsaid
    from core.versions import resolve_version

    config = {"fp16": {"enabled": True}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    argv = ["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100 80"]
    code, text = run(argv)
    micro, said = micro_batch_when_unsaid(config, 8, resolve_version(None))
    assert code == 0 and micro == 1 and "is not set" in said
    assert "; micro batch 1 x 1 accumulation," in text.splitlines()[0] and f"caveat: {said}" in text
    data = json.loads(run([*argv, "--format", "json"])[1])
    assert data["shape"]["micro_batch"] == 1 and said in data["caveats"]
    _, fit_text = run(["fit", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100 80"])
    assert said in fit_text
    # batch keys DeepSpeed refuses are refused as fit refuses them, naming what the config wrote
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": -1}))
    assert run(argv)[0] == 2
    err = capsys.readouterr().err
    assert "train_micro_batch_size_per_gpu is -1; the config's batch keys do not work on 8 GPUs" in err


def test_plan_states_its_fits_margin_and_predict_says_where_plan_would_differ(tmp_path):
    """plan marked a row at 78 GiB of 80 "fits: false" (it keeps 5% free) while fit and predict said the same
    config fits, and neither said which limit it used. plan states its rule in text and JSON; predict keeps fit's
    verdict (the whole GPU) and says, in a caveat and in its JSON, that plan's margin would not let it fit."""
    argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--seq-len", "8192", "--attention",
            "sdpa", "--global-batch", "8", "--top", "200"]
    capacity = GPU_BY_NAME["NVIDIA H100 80GB"].memory_gib  # PyTorch's total, 79.1 GiB
    usable = gib_capacity(0.95 * capacity * 2**30)  # 75.14: one decimal would round the limit
    rule = (f"fits = peak GPU memory at most 95% of the GPU's {capacity:g} GiB ({usable} GiB: a 5% "
            "margin for what the memory model")
    text = run(argv)[1]
    assert text.splitlines()[2].startswith(rule) and "fit, estimate and predict judge a config against the " \
        f"whole {capacity:g} GiB" in text.splitlines()[2]
    data = json.loads(run([*argv, "--format", "json"])[1])
    assert data["assumptions"]["fits_rule"].startswith(rule)
    assert data["assumptions"]["usable_gpu_memory_gib"] == pytest.approx(0.95 * capacity)
    near = next(r for r in data["rows"] if r["stage"] == 2 and r["offload_optimizer"] == "none"
                and r["micro_batch"] == 1 and r["recompute"] == "none")
    assert 0.95 * capacity < near["gpu_peak_gib"] <= capacity and near["fits"] is False
    peak = gib_used(near["gpu_peak_gib"] * 2**30, 0.95 * capacity * 2**30)
    path = tmp_path / "near.json"
    path.write_text(json.dumps(near["config"]))
    predict_argv = ["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--seq-len",
                    "8192", "--attention", "sdpa"]
    said = run(predict_argv)[1]
    assert f"caveat: fits, with a peak of {peak} GiB of the GPU's {capacity:g} GiB, but above " \
        f"95% of it ({usable} GiB), the margin dsconfig plan keeps" in said
    assert float(peak) > float(usable)  # the figures say what the verdict says
    memory = json.loads(run([*predict_argv, "--format", "json"])[1])["memory"]
    assert memory["fits"] is True and memory["fits_with_plan_margin"] is near["fits"]
    assert memory["plan_memory_headroom"] == data["assumptions"]["memory_headroom"] == 0.05
    assert "fits" in run(["fit", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--seq-len",
                          "8192", "--attention", "sdpa"])[1].splitlines()[0]


def test_plan_sweep_memory_floor_keeps_the_rows_margin():
    """The sweep's memory floor judged against the whole GPU (20 GPUs here) while its rows keep 5% free: the floor
    now uses the rows' limit (22 GPUs) and says so."""
    argv = ["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "A100 40", "--cpu-ram", "64", "--seq-len",
            "14336", "--global-batch", "8", "--sweep", "--top", "1"]
    data = json.loads(run([*argv, "--format", "json"])[1])
    assert data["memory_min_gpus"] == 22
    assert "the offload that needs fewest, at most 95% of GPU memory as above: 22 GPUs, 3 nodes of 8)" in run(argv)[1]


def test_predict_shows_small_times_in_their_unit_and_never_a_zero(tmp_path):
    """GPT-2 at 128 tokens: every part of the step is under a millisecond but the host overhead, and the breakdown
    printed them as "0.000 s" (a 0.2% share as 0.2% of nothing); each is now in ms or µs, agreeing with the
    JSON's seconds, and the MFU under 1% is not "0%"."""
    from core.perf.advice import duration_text, percent_text, share_text

    assert [duration_text(x) for x in (4.4381, 0.9996, 0.0123, 0.000697, 2e-7, 0.0)] == [
        "4.438 s", "1.000 s", "12.3 ms", "697 µs", "0.2 µs", "0.000 s"]
    assert (share_text(1e-5, 1.0), share_text(0.002, 1.0), percent_text(0.004), percent_text(0.51)) == (
        "<0.1%", "0.2%", "0.4%", "51%")
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                                "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}))
    argv = ["predict", str(path), "--model", "openai-community/gpt2", "--gpu", "H100", "--seq-len", "128"]
    text = run(argv)[1]
    data = json.loads(run([*argv, "--format", "json"])[1])
    lines = text.split("Critical path:\n")[1].split("\n\n")[0].splitlines()
    assert len(lines) == len(data["breakdown"]) and any(" µs " in line for line in lines)
    unit = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}
    for line in lines:
        *name, value, scale, share = line.split()
        assert float(value) > 0 and share not in ("0.0%", "0%"), line
        assert float(value) * unit[scale] == pytest.approx(data["breakdown"][" ".join(name)], rel=0.01), line
    assert "0.000 s" not in text and "MFU: 0.4%" in text.splitlines()[1]


def test_plan_sweep_says_which_sizes_it_left_out_and_why():
    """--global-batch 24 on 8-GPU nodes: only the 1-node row fits the batch, and the other six sizes vanished from
    the sweep without a word; the text and the JSON now list them with the reason."""
    argv = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "24", "--sweep",
            "--top", "1"]
    data = json.loads(run([*argv, "--format", "json"])[1])
    assert [row["nodes"] for row in data["gpu_sweep"]] == [1]
    assert [(s["nodes"], s["total_gpus"]) for s in data["gpu_sweep_skipped"]] == [
        (2, 16), (4, 32), (8, 64), (16, 128), (32, 256), (64, 512)]
    assert data["gpu_sweep_skipped"][0]["reason"] == "16 GPUs do not divide the global batch of 24"
    assert ("Left out: 2, 4, 8, 16, 32, 64 nodes (16, 32, 64, 128, 256, 512 GPUs): their GPU count does not divide "
            "the global batch of 24") in run(argv)[1]
    data = json.loads(run([*argv[:5], "--global-batch", "512", "--sweep", "--format", "json"])[1])
    assert data["gpu_sweep_skipped"] == [] and len(data["gpu_sweep"]) == 7


def test_the_measured_steps_are_counted_in_words():
    from core.perf import LogSummary, step_source

    assert step_source(LogSummary(step_seconds=(2.0,))).endswith("the log's one step")
    assert step_source(LogSummary(step_seconds=(3.0, 2.0))).endswith("the log's second step, the first dropped as "
                                                                       "warm-up")
    assert step_source(LogSummary(step_seconds=(3.0, 2.0, 2.1))).endswith("the median of 2 steps, the first of 3 "
                                                                            "dropped as warm-up")
    assert step_source(LogSummary(samples_per_second=(8.0,)), 16).endswith("of 1 report")
    assert step_source(LogSummary()) is None


def test_the_critical_path_columns_line_up_with_a_long_part_name(tmp_path):
    """ZeRO-3 with the optimizer offloaded has a part named longer than the 58 columns the names were padded to:
    its time was pushed right, out of the column every other row keeps."""
    path = tmp_path / "z3offload.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 16,
                                "train_batch_size": 128, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "overlap_comm": False,
                                                      "offload_optimizer": {"device": "cpu"}}}))
    text = run(["predict", str(path), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--gpus-per-node", "8",
                "--seq-len", "128"])[1]
    lines = text.split("Critical path:\n")[1].split("\n\n")[0].splitlines()
    assert any(len(line.split("  ")[1]) > 58 for line in lines)  # the long name is there
    assert len({len(line) for line in lines}) == 1, "\n".join(lines)  # name, time and share each in its column
