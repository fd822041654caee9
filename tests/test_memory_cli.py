"""core.cli.estimate: the ``estimate`` subcommand, tested through its own ArgumentParser."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import hardware, memory, models
from core.cli import estimate as cli_estimate
from tests.fuzz_strategies import result_or_refusal


def _run(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="dsconfig")
    cli_estimate.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["estimate", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = args.handler(args, out, err)
    return code, out.getvalue(), err.getvalue()


def test_params_prints_deepspeed_tables_verbatim():
    stage12 = pytest.importorskip("deepspeed.runtime.zero.stage_1_and_2")
    stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")
    code, out, _ = _run(["--params", "2851e6", "--largest-layer", "32e6", "--gpus-per-node", "8"])
    assert code == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        stage12.estimate_zero2_model_states_mem_needs_all_cold(2851e6, 8, 1)
        print()
        stage3.estimate_zero3_model_states_mem_needs_all_cold(2851e6, 32e6, 8, 1)
    assert out == buf.getvalue()


def test_params_json_has_both_tables():
    code, out, _ = _run(
        ["--params", "7.5B", "--largest-layer", "100M", "--gpus-per-node", "4", "--nodes", "2", "--format", "json"]
    )
    data = json.loads(out)
    assert code == 0 and len(data["zero2"]) == 2 and len(data["zero3"]) == 6
    cpu, gpu, _ = memory.estimate_zero3_model_states_mem_needs(7.5e9, 1e8, 4, 2)
    assert (data["zero3"][0]["cpu_bytes"], data["zero3"][0]["gpu_bytes"]) == (cpu, gpu)


def test_model_with_config_json_every_component_in_bytes(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(
        json.dumps(
            {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}
        )
    )
    code, out, _ = _run(
        [
            "--model",
            "mistralai/Mistral-7B-v0.1",
            "--config",
            str(ds),
            "--micro-batch",
            "2",
            "--seq-len",
            "4096",
            "--attention",
            "flash",
            "--recompute",
            "full",
            "--format",
            "json",
        ]
    )
    assert code == 0
    data = json.loads(out)
    expected = memory.estimate(
        json.loads(ds.read_text()),
        models.get_spec("mistralai/Mistral-7B-v0.1"),
        memory.Hardware(8, 1),
        memory.Shape(2, 4096, "flash", "full"),
    )
    assert data["totals"]["gpu_bytes"] == expected.gpu_bytes
    assert [c["bytes"] for c in data["components"]] == [c.bytes for c in expected.components]
    assert all(isinstance(c["bytes"], int) and c["formula"] for c in data["components"])


def test_text_report_and_options(tmp_path):
    code, out, _ = _run(["--model", "openai-community/gpt2", "--gpu-memory", "16", "--options", "--precision", "bf16"])
    assert code == 0
    assert "Per GPU:" in out and "GPU peak" in out and out.count("stage 3") == 9


def test_hf_config_file_and_unsupported_family(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(models.get_config("Qwen/Qwen2.5-0.5B")))
    code, out, _ = _run(["--hf-config", str(cfg), "--format", "json"])
    assert (
        code == 0 and json.loads(out)["total_params"] == models.count_params(models.get_config("Qwen/Qwen2.5-0.5B"))[0]
    )
    cfg.write_text(json.dumps({"model_type": "mamba", "hidden_size": 768}))
    code, _, err = _run(["--hf-config", str(cfg)])
    assert code == 2 and "not supported" in err and "--params" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "exactly one of"),
        (["--params", "1e9", "--model", "openai-community/gpt2"], "exactly one of"),
        (["--model", "no/such-model"], "Unknown model"),
        (["--hf-config", "/nonexistent/config.json"], "--hf-config /nonexistent/config.json: no such file"),
        (["--model", "openai-community/gpt2", "--config", "/nonexistent/ds.json"],
         "--config /nonexistent/ds.json: no such file"),
        (["--params", "0"], "--params is 0"),
        (["--params", "0B", "--format", "json"], "--params is 0"),
    ],
)
def test_bad_input_exit_2_with_message(argv, message):
    code, _, err = _run(argv)
    assert code == 2 and message in err


def test_invalid_json_config_names_position(tmp_path):
    bad = tmp_path / "ds.json"
    bad.write_text('{"zero_optimization": {"stage": 3,,}}')  # a trailing comma alone is valid HJSON
    code, _, err = _run(["--model", "openai-community/gpt2", "--config", str(bad)])
    assert code == 2 and "not valid JSON" in err and "line 1" in err
    bad.write_text("[1, 2]")
    code, _, err = _run(["--model", "openai-community/gpt2", "--config", str(bad)])
    assert code == 2 and "JSON object" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--params", "lots"],
        ["--model", "x", "--micro-batch", "0"],
        ["--model", "x", "--attention", "xformers"],
        ["--model", "x", "--gpu-memory", "-1"],
    ],
)
def test_argparse_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        _run(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_list_models():
    code, out, _ = _run(["--list-models"])
    assert code == 0 and out.split() == models.catalog_names()


@given(st.text(max_size=20))
def test_parse_count_only_raises_argument_type_error(text):
    value = result_or_refusal(argparse.ArgumentTypeError, cli_estimate.parse_count, text)
    assert value is None or value >= 0


@pytest.mark.parametrize(
    ("text", "value"),
    [("2851e6", 2851e6), ("7.5B", 7.5e9), ("2851M", 2851e6), ("1_000", 1000), ("12345", 12345), ("32e6", 32e6),
     ("1,000,000", 1_000_000), ("1,000.5M", 1_000.5e6)],
)
def test_parse_count_examples(text, value):
    parsed = cli_estimate.parse_count(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(("text", "said"), [
    ("7,5B", "a comma only groups thousands, as in 1,000,000; a decimal point is a dot: 7.5B"),  # was 75B
    ("1,,0", "a comma only groups thousands"),  # was 10
    ("12,34", "a comma only groups thousands"),
    ("0.5", "not a whole number of parameters"),
    ("1e-5", "not a whole number of parameters"),
    ("7.5", "not a whole number of parameters"),
])
def test_parse_count_refuses_what_is_no_whole_count(text, said):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(said)):
        cli_estimate.parse_count(text)


def test_a_largest_layer_of_zero_is_refused():
    code, _, err = _run(["--params", "7B", "--largest-layer", "0"])
    assert code == 2 and "--largest-layer is 0" in err


def test_micro_batch_defaults_to_the_config(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": 6, "zero_optimization": {"stage": 2}}))
    _, out, _ = _run(["--model", "openai-community/gpt2", "--config", str(ds), "--format", "json"])
    assert json.loads(out)["shape"]["micro_batch"] == 6
    # "auto": the HF Trainer's default per_device_train_batch_size, as the app assumes (it sized 1, silently)
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto"}))
    _, out, _ = _run(["--model", "openai-community/gpt2", "--config", str(ds), "--format", "json"])
    assert json.loads(out)["shape"]["micro_batch"] == 8
    assert any('micro batch 8 assumed: "auto" is filled by the HF Trainer' in n for n in json.loads(out)["notes"])
    _, out, _ = _run(
        ["--model", "openai-community/gpt2", "--config", str(ds), "--micro-batch", "3", "--format", "json"]
    )
    assert json.loads(out)["shape"]["micro_batch"] == 3


def test_a_largest_layer_beyond_the_model_is_refused():
    code, _, err = _run(["--params", "7e9", "--largest-layer", "8e9"])
    assert code == 2 and "--largest-layer 8,000,000,000 is more than the whole model's --params 7,000,000,000" in err


def test_every_command_assumes_the_same_cpu_ram_as_the_app():
    """estimate assumed 1024 GiB per node, fit 512, plan and predict 1024: the same input got different verdicts."""
    import argparse

    from core.cli import estimate as cli_estimate
    from core.cli import fit as cli_fit
    from core.hardware import DEFAULT_CPU_RAM_GIB
    from core.memory import GIB
    from core.perf import Cluster
    from core.perf.recommend import hardware_for
    from ui.app_state import default_context

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli_estimate.register(sub)
    cli_fit.register(sub)
    for command, extra in (("estimate", ["--params", "7e9"]),
                           ("fit", ["ds.json", "--model", "meta-llama/Llama-2-7b-hf"])):
        assert parser.parse_args([command, *extra]).cpu_ram == DEFAULT_CPU_RAM_GIB * GIB, command
    assert hardware_for(Cluster("NVIDIA H100 80GB")).cpu_ram_per_node_bytes == DEFAULT_CPU_RAM_GIB * GIB
    assert default_context()["cpu_ram_gib"] == DEFAULT_CPU_RAM_GIB


def _main(argv: list[str]) -> tuple[int, str, str]:
    """The whole ``dsconfig`` command line (stderr captured)."""
    from core.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv, out)
    return code, out.getvalue(), err.getvalue()


def test_estimate_says_it_assumed_a_micro_batch_for_refused_batch_keys_and_fit_refuses_a_contradiction(tmp_path):
    """estimate printed a fitting estimate at an assumed micro batch of 1 for train_batch_size 12 on 8 GPUs, which
    fit, predict and DeepSpeed refuse; fit --micro-batch 2 on a config that writes 4 estimated 2, and its ways
    (patches without the micro batch) then ran at 4 and did not fit."""
    refused = tmp_path / "tb12.json"
    refused.write_text(json.dumps({"train_batch_size": 12, "zero_optimization": {"stage": 2}}))
    code, out, _ = _main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--config", str(refused)])
    assert code == 0 and "note: the config's batch keys do not work on 8 GPUs (train_batch_size 12" in out
    assert "assumed micro batch of 1" in out
    assert _main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--config", str(refused),
                 "--micro-batch", "2"])[0] == 0
    written = tmp_path / "micro4.json"
    written.write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}))
    code, _, err = _main(["fit", str(written), "--model", "openai-community/gpt2-xl", "--gpus", "4",
                           "--micro-batch", "2"])
    assert code == 2 and "micro batch of 4" in err
    assert _main(["fit", str(written), "--model", "openai-community/gpt2-xl", "--gpus", "4", "--micro-batch", "4"])[0] \
        in (0, 1)
    auto = tmp_path / "auto.json"
    auto.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}))
    assert _main(["fit", str(auto), "--model", "openai-community/gpt2-xl", "--gpus", "4", "--micro-batch", "2"])[0] \
        in (0, 1)


def test_an_hf_config_that_is_not_an_object_is_named_as_one_and_predict_json_has_the_nvme_figure(tmp_path):
    """A --hf-config holding a list was reported as "a DeepSpeed config must be a JSON object"; predict's JSON
    said memory.short ["NVMe"] without the NVMe figure fit's JSON gives."""
    listed = tmp_path / "config.json"
    listed.write_text("[1, 2]")
    for argv in (["estimate", "--hf-config", str(listed)],
                 ["plan", "--hf-config", str(listed), "--gpu", "H100", "--global-batch", "8"]):
        code, _, err = _main(argv)
        assert code == 2 and "a model's config.json (Hugging Face) must be a JSON object" in err, err
    nvme = tmp_path / "nvme.json"
    nvme.write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"},
                                                      "offload_param": {"device": "nvme"}}}))
    code, out, _ = _main(["predict", str(nvme), "--model", "openai-community/gpt2", "--gpu", "H100",
                          "--format", "json"])
    shown = json.loads(out)["memory"]
    assert shown["short"] == ["NVMe"] and shown["nvme_bytes_per_node"] > 0 and "attention" in shown["assumptions"]


def test_flags_the_chosen_estimate_does_not_read_are_refused_not_ignored():
    """estimate --params 7e9 --precision fp32 --gpu-memory 40 --seq-len 8192 printed the same tables as without
    them, and --buffer-factor was ignored with --model."""
    code, _, err = _main(["estimate", "--params", "7e9", "--precision", "fp32", "--gpu-memory", "40",
                          "--seq-len", "8192"])
    assert code == 2 and "--gpu-memory, --seq-len, --precision do not apply here" in err
    code, _, err = _main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--buffer-factor", "1.0"])
    assert code == 2 and "--buffer-factor does not apply here" in err
    assert _main(["estimate", "--params", "7e9", "--buffer-factor", "1.0"])[0] == 0
    assert _main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--seq-len", "8192"])[0] == 0


def test_figures_near_the_limit_never_contradict_the_verdict(tmp_path, capsys):
    """79.996 and 80.002 GiB of 80 were both printed as 80.0 (80.00), one "fits", one "DOES NOT FIT", and the
    overrun as "0.0 GiB over"; figures are now rounded toward their verdict."""
    from core.cli import main
    from core.memory.result import gib_margin, gib_used

    gib = 1024**3
    assert (gib_used(79.996 * gib, 80 * gib), gib_used(80.002 * gib, 80 * gib)) == ("79.9", "80.1")
    # a limit that rounds up (95% of the A100's 79.15 is 75.19, shown 75.2): a peak just above it is shown above
    # it, where rounding up to the step gave "75.2" again beside "at most 75.2"
    assert (gib_used(75.195 * gib, 75.1925 * gib), gib_used(75.19 * gib, 75.1925 * gib)) == ("75.3", "75.1")
    assert (gib_margin(80.002 * gib, 80 * gib), gib_margin(79.996 * gib, 80 * gib)) == ("0.1 GiB over",
                                                                                      "0.0 GiB free")
    # 8527 and 8528 tokens straddle the default GPU's capacity (the A100 80GB's 79.15 GiB) by less than 0.01 GiB
    cap = hardware.GPU_BY_NAME[hardware.DEFAULT_GPU].memory_gib
    config = tmp_path / "z2.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}, '
                      '"bf16": {"enabled": true}}')
    for seq, fits in (("8527", True), ("8528", False)):
        main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--config", str(config), "--seq-len", seq])
        used, of, verdict = re.search(r"GPU peak .*: ([\d.]+) GiB of ([\d.]+) GiB -> (.+)",
                                      capsys.readouterr().out).groups()
        assert (float(of), verdict) == (cap, "fits" if fits else "DOES NOT FIT")
        assert (float(used) <= cap) == fits and round(abs(float(used) - cap), 2) <= 0.01
    main(["fit", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpus", "8", "--seq-len", "8528"])
    assert f"GPU {cap + 0.05:.1f} GiB of {cap:.2f} GiB per GPU" in capsys.readouterr().out  # 79.2 of 79.15
    main(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100 80", "--seq-len", "8527",
          "--attention", "sdpa"])
    assert f"fits, with a peak of {cap - 0.05:.1f} GiB of the GPU's {cap:g} GiB" in capsys.readouterr().out
