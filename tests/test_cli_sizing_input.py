"""Input problems of the sizing commands (plan, predict, fit, estimate): each is said in the words of the flag or
key the user wrote, with the fix, and never as an empty reason or an internal field."""

from __future__ import annotations

import io
import json
import re

import pytest

from core.cli import main
from core.perf import parse_log

MODEL = ["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100"]


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.mark.parametrize(("value", "shown", "example"), [(2.5, "2.5", "2"), (True, "true (DeepSpeed reads it as 1)",
                                                                              "1")])
@pytest.mark.parametrize("command", ["predict", "fit", "estimate"])
def test_a_micro_batch_deepspeed_accepts_but_that_is_not_whole_is_named_with_the_fix(value, shown, example, command,
                                                                                     tmp_path, capsys):
    """It said "the config's batch keys do not work on 8 GPUs (); DeepSpeed refuses it": an empty reason, and
    DeepSpeed runs it (validate: batch.not-integer, a warning)."""
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": value}))
    argv = ([command, "--config", str(path), *MODEL[:2]] if command == "estimate" else [command, str(path), *MODEL])
    code, out = run(argv)
    said = out if command == "estimate" else capsys.readouterr().err
    assert code == (0 if command == "estimate" else 2)
    assert f"train_micro_batch_size_per_gpu is {shown}; DeepSpeed accepts it" in said
    assert "whole number >= 1" in said and "batch.not-integer" in said and f"e.g. {example}" in said
    assert "--micro-batch" in said and "()" not in said and "DeepSpeed refuses" not in said


def test_plan_price_without_tokens_is_a_usage_error_naming_both_flags(capsys):
    """--price without --tokens was ignored: no cost column, no note, and the JSON assumptions listed the price."""
    code, out = run(["plan", *MODEL, "--global-batch", "64", "--price", "2.5"])
    assert code == 2 and out == ""
    assert "--price 2.5 needs --tokens: the cost is that of training --tokens tokens" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "message"), [
    (["--cpu-ram", "1e308"], "argument --cpu-ram: expected a size in GiB up to"),
    (["--cpu-ram", "1e-300"], "argument --cpu-ram: expected a size in GiB of at least one byte"),
    (["--cpu-adam", "1e20"], "argument --cpu-adam: expected a number up to"),
    (["--nvme-bandwidth", "1e308"], "argument --nvme-bandwidth: expected a number up to"),
    (["--tokens", "1e308", "--price", "2"], "argument --tokens: expected a number up to"),
    (["--tokens", "1e9", "--price", "1e308"], "argument --price: expected a number up to"),
    (["--global-batch", "7"], "--global-batch 7 cannot be split over 8 GPUs: pick a multiple of 8 (e.g. 8) or "
                              "another number of GPUs"),
    (["--nodes", "2", "--network", "1e-300", "--tokens", "1e15", "--price", "1e6"],
     "--tokens 1e+15 gives a training time beyond floating-point range at the predicted speed: give the tokens"),
])
def test_plan_names_the_flag_of_a_value_out_of_range(flags, message, capsys):
    """These said Cluster.cpu_ram_gib, global_batch=7, tokens= x price_per_gpu_hour=: the planner's names."""
    code, _ = run(["plan", *MODEL, "--global-batch", "64", *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert "Cluster." not in err and "global_batch=" not in err and "tokens=" not in err and "Traceback" not in err


@pytest.mark.parametrize(("flags", "nodes", "network", "kwargs", "said"), [
    (["--global-batch", "12"], 1, None, {"global_batch": 12}, "--global-batch 12"),
    (["--global-batch", "64", "--nodes", "2", "--network", "1e-300", "--tokens", "1e15"], 2, 1e-300,
     {"global_batch": 64, "tokens": 1e15}, "--tokens 1e+15"),
    # hours just within floating-point range, their cost beyond it
    (["--global-batch", "64", "--nodes", "2", "--network", "1e-292", "--tokens", "1e15", "--price", "1e6"], 2,
     1e-292, {"global_batch": 64, "tokens": 1e15, "price_per_gpu_hour": 1e6}, "--price 1e+06"),
])
def test_plan_says_recommends_refusal_with_its_flag_in_text_and_json(flags, nodes, network, kwargs, said, capsys):
    """recommend's refusal (PlanInputError) is said with the flag that gave the parameter and recommend's own
    reason, on stderr and as the JSON error's flag (only tokens= refusals were recognised, by their message)."""
    from core.models import get_spec
    from core.perf import Cluster, PlanInputError, recommend

    with pytest.raises(PlanInputError) as refused:
        recommend(get_spec("meta-llama/Llama-2-7b-hf"), Cluster("NVIDIA H100 80GB", 8, nodes,
                                                                 inter_node_gbit_s=network), seq_len=2048, **kwargs)
    message = f"{said} {refused.value.reason}"
    code, _ = run(["plan", *MODEL, *flags])
    assert code == 2 and f"dsconfig plan: error: {message}\n" in capsys.readouterr().err
    code, text = run(["plan", *MODEL, *flags, "--format", "json"])
    error = json.loads(text)["error"]
    assert code == 2 and (error["flag"], error["message"], error["kind"]) == (said.split()[0], message, "usage")
    capsys.readouterr()


def test_predict_names_the_measured_step_of_a_refused_calibration_as_given(tmp_path, capsys):
    """It said 'measured_step_seconds=0.1 is faster than …', calibrate's parameter."""
    from tests.test_perf_cli import FIXTURE_LOG

    path = tmp_path / "c.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}))
    code, _ = run(["predict", str(path), *MODEL, "--calibrate-step", "0.1"])
    err = capsys.readouterr().err
    assert code == 0 and "not calibrated, --calibrate-step 0.1 is faster than" in err
    code, text = run(["predict", str(path), *MODEL, "--calibrate-step", "0.1", "--format", "json"])
    assert json.loads(text)["calibration"]["refused"].startswith("--calibrate-step 0.1 is faster than this config")
    code, text = run(["predict", str(path), *MODEL, "--log", str(FIXTURE_LOG), "--format", "json"])
    refused = json.loads(text)["calibration"]["refused"]
    assert code == 0 and refused.startswith(f"the step time read from --log {FIXTURE_LOG} (0.204 s) is faster")
    assert "measured_step_seconds" not in refused + capsys.readouterr().err


@pytest.mark.parametrize(("batch_keys", "fix"), [
    ({}, "the config does not give on 8 GPUs: write the run's train_batch_size"),
    ({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"},
     "pass the run's --micro-batch N and --gradient-accumulation-steps N"),
])
def test_predict_log_with_throughput_but_no_batch_says_the_batch_is_missing(batch_keys, fix, tmp_path, capsys):
    """A log with the throughput timer's samples/s and a config without a global batch said "no step times found
    (enable wall_clock_breakdown, …)", although the log has what is needed but the batch."""
    from tests.test_perf_cli import FIXTURE_LOG

    # the real DeepSpeed log without its wall-clock timers, nor the printout of its config (whose train_batch_size
    # gives the samples/s their batch: core.perf.parse_log's logged_config)
    lines = [line for line in FIXTURE_LOG.read_text().splitlines(keepends=True) if "time (ms)" not in line]
    printed = tmp_path / "printed.log"
    printed.write_text("".join(lines))
    log = tmp_path / "throughput.log"
    log.write_text("".join(line for line in lines if not re.search(r"\[config\.py:\d+:print\]", line)))
    config = tmp_path / "c.json"
    config.write_text(json.dumps(batch_keys))
    code, _ = run(["predict", str(config), *MODEL, "--log", str(log)])
    err = capsys.readouterr().err
    assert code == 2 and "samples/s become a step time only with the global batch" in err and fix in err
    assert "--calibrate-step" in err and "wall_clock_breakdown" not in err
    if batch_keys:  # the flags said make it work
        code, text = run(["predict", str(config), *MODEL, "--log", str(log), "--micro-batch", "2",
                          "--gradient-accumulation-steps", "4", "--format", "json"])
        assert code == 0 and json.loads(text)["calibration"]["measured_step_seconds"] > 0
    # with the printout, the run's own batch (8 samples per step) converts them
    flags = ["--micro-batch", "2", "--gradient-accumulation-steps", "4"] if batch_keys else []
    code, text = run(["predict", str(config), *MODEL, "--log", str(printed), *flags, "--format", "json"])
    samples = parse_log(printed.read_text()).samples_per_second
    assert code == 0 and json.loads(text)["calibration"]["measured_step_seconds"] == pytest.approx(8 / samples[0])


@pytest.mark.parametrize("command", ["fit", "predict", "estimate"])
def test_a_preset_file_is_sized_with_its_config_and_said(command, capsys):
    """A preset file ({"meta": ..., "config": ...}) was sized as an empty config: fp32, micro batch 1, and fit said
    DOES NOT FIT; predict's caveat said DeepSpeed refuses it and "the numbers assume it is fixed"."""
    from core.presets import BUILTIN_DIR

    preset = str(BUILTIN_DIR / "zero2-bf16.json")
    argv = ([command, "--config", preset, *MODEL[:2]] if command == "estimate" else [command, preset, *MODEL])
    code, out = run([*argv, "--format", "json"])
    assert code == 0, capsys.readouterr().err
    data = json.loads(out)
    micro = data["micro_batch"] if command == "fit" else data["shape"]["micro_batch"]
    precision = {"fit": lambda: data["precision"], "estimate": lambda: data["settings"]["precision"],
                 "predict": lambda: data["memory"]["assumptions"]}[command]()
    assert micro == 4 and "bf16" in precision
    assert "config.preset-file" not in out and "refuses" not in out
    assert "is a Config Studio preset file" in capsys.readouterr().err


def test_plan_and_predict_say_the_model_sizes_a_config_json_left_out(tmp_path):
    """A config.json of {"model_type": "llama"} was planned as the transformers default (6.7B) without a word;
    estimate says it (ModelSpec.defaulted_note)."""
    hf = tmp_path / "m.json"
    hf.write_text('{"model_type": "llama"}')
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2}))
    said = "does not give hidden_size, num_hidden_layers"
    plan = ["plan", "--hf-config", str(hf), "--gpu", "H100", "--global-batch", "64"]
    predict = ["predict", str(config), "--hf-config", str(hf), "--gpu", "H100"]
    for argv in (plan, predict):
        code, text = run(argv)
        assert code == 0 and f"note: The model's config.json {said}" in text
    code, text = run([*plan, "--format", "json"])
    assert any(said in note for note in json.loads(text)["assumptions"]["notes"])
    code, text = run([*predict, "--format", "json"])
    assert any(said in note for note in json.loads(text)["notes"])


@pytest.mark.parametrize("command", ["plan", "predict", "estimate"])
def test_hf_config_problems_name_the_file_the_document_and_the_commands_own_way_out(command, tmp_path, capsys):
    """An empty --hf-config was "the config is empty; a DeepSpeed config is …"; a ds_config.json given as one was
    "config.json has no 'model_type'; … or enter the parameter counts by hand", a way only the app offers."""
    config = tmp_path / "c.json"
    config.write_text("{}")
    argv = {"plan": ["plan", "--gpu", "H100", "--global-batch", "64"],
            "predict": ["predict", str(config), "--gpu", "H100"], "estimate": ["estimate"]}[command]
    empty = tmp_path / "empty.json"
    empty.write_text("")
    code, _ = run([*argv, "--hf-config", str(empty)])
    err = capsys.readouterr().err
    assert code == 2 and f"--hf-config {empty}: the file is empty; a model's config.json (Hugging Face)" in err
    assert "DeepSpeed config" not in err
    ds_config = tmp_path / "ds_config.json"
    ds_config.write_text('{"train_batch_size": 8}')
    way = ("--params and --largest-layer" if command == "estimate" else "a catalog model with --model")
    for text, said in (('{"train_batch_size": 8}', "has no 'model_type'"), ('{"model_type": "foo"}', "'foo'")):
        ds_config.write_text(text)
        code, _ = run([*argv, "--hf-config", str(ds_config)])
        err = capsys.readouterr().err
        assert code == 2 and f"--hf-config {ds_config}" in err and said in err and way in err
        assert "by hand" not in err and "Traceback" not in err


def test_predict_reads_the_log_from_standard_input_unless_the_config_is_read_there(tmp_path, monkeypatch, capsys):
    """--log - failed with "No such file or directory" while CONFIG - reads standard input."""
    from tests.test_perf_cli import FIXTURE_LOG

    config = tmp_path / "c.json"
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}))
    monkeypatch.setattr("sys.stdin", io.StringIO(FIXTURE_LOG.read_text()))
    code, text = run(["predict", str(config), *MODEL, "--log", "-", "--format", "json"])
    assert code == 0 and json.loads(text)["calibration"]["measured_step_seconds"] == pytest.approx(0.20387)
    assert "--log -" in json.loads(text)["calibration"]["refused"]
    monkeypatch.setattr("sys.stdin", io.StringIO(config.read_text()))
    code, _ = run(["predict", "-", *MODEL, "--log", "-"])
    err = capsys.readouterr().err
    assert code == 2 and "CONFIG - and --log - both read standard input" in err and "file path" in err
    monkeypatch.setattr("sys.stdin", None)
    code, _ = run(["predict", str(config), *MODEL, "--log", "-"])
    assert code == 2 and "--log -: cannot read standard input: it is closed" in capsys.readouterr().err


def _sizing_parsers():
    import argparse

    from core.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.choices[name] for name in ("plan", "predict", "fit", "estimate")}


@pytest.mark.parametrize("command", ["plan", "predict", "fit", "estimate"])
def test_every_sizing_flag_has_help_with_its_default(command):
    """--gpus-per-node, --nodes, --format, --recompute, --seq-len, --cpu-adam, --nvme-bandwidth … had no help, or no
    default or unit in it."""
    parser = _sizing_parsers()[command]
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        text = parser._get_formatter()._expand_help(action) if action.help else ""
        assert text, f"{command} {action.option_strings[0]} has no help"
        if action.default not in (None, False):
            assert "default" in text, f"{command} {action.option_strings[0]}: {text}"
    text = " ".join(parser.format_help().split())  # as wrapped at any width
    if command in ("plan", "predict"):
        from core.perf.hardware import NVME_GBYTE_S_DEFAULT

        assert "(default 1.8e9)" in text and f"(default {NVME_GBYTE_S_DEFAULT:g})" in text
        assert "Gbit/s per node, all NICs together, e.g. 3200" in text


@pytest.mark.parametrize(("given", "gbit"), [("8x400G NDR (DGX H100)", 3200), ("dgx h100", 3200), ("p4d", 400),
                                             ("4x100G", 400), ("1600", 1600)])
def test_network_takes_a_preset_name_or_a_part_only_it_has(given, gbit):
    """--network's help listed presets ("8x400G NDR (DGX H100)=3200") that the flag refused."""
    args = _sizing_parsers()["plan"].parse_args(["--gpu", "H100", "--global-batch", "8", "--network", given])
    assert args.network == gbit


def test_network_refuses_an_ambiguous_or_unknown_preset(capsys):
    code, _ = run(["plan", *MODEL, "--global-batch", "64", "--network", "hdr"])
    err = capsys.readouterr().err
    assert code == 2 and "it matches 1x200G HDR, 8x200G HDR (DGX A100)" in err


@pytest.mark.parametrize(("given", "meant"), [
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB"), ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB"),
    ("RTX4090", "NVIDIA RTX 4090 24GB"), ("Tesla V100-SXM2-16GB", "NVIDIA V100 16GB"), ("Tesla T4", "NVIDIA T4 16GB"),
    ("AMD Instinct MI300X", "AMD MI300X 192GB"),
])
@pytest.mark.parametrize("command", ["plan", "fit"])
def test_a_gpu_named_as_nvidia_smi_prints_it_gets_a_did_you_mean(given, meant, command, capsys):
    """They got only the whole catalog list."""
    argv = (["plan", "--model", "openai-community/gpt2", "--global-batch", "8"] if command == "plan"
            else ["fit", "c.json", "--model", "openai-community/gpt2"])
    code, _ = run([*argv, "--gpu", given])
    err = capsys.readouterr().err
    assert code == 2 and f"{given!r} is not one GPU of the catalog (did you mean {meant}? pick one of:" in err


def test_a_gpu_name_sharing_no_number_with_the_catalog_gets_no_guess(capsys):
    code, _ = run(["plan", "--model", "openai-community/gpt2", "--global-batch", "8", "--gpu", "TPU v5"])
    err = capsys.readouterr().err
    assert code == 2 and "did you mean" not in err and "pick one of: NVIDIA H100 80GB" in err


@pytest.mark.parametrize("command", ["plan", "predict", "estimate"])
def test_a_bad_size_in_an_hf_config_names_the_file_given(command, tmp_path, capsys):
    """A bad size in --hf-config m.json was "llama config.json: 'hidden_size' must be an integer": the file's name
    was never said (and a missing size offered "or enter the parameter counts by hand", the app's way out); the
    sizes' messages now start with "--hf-config m.json (llama)", as describe's own do."""
    from core.models.arch import ConfigReader, ModelConfigError

    config = tmp_path / "c.json"
    config.write_text("{}")
    hf = tmp_path / "m.json"
    argv = {"plan": ["plan", "--gpu", "H100", "--global-batch", "64"],
            "predict": ["predict", str(config), "--gpu", "H100"], "estimate": ["estimate"]}[command]
    for text, said in (('{"model_type": "llama", "hidden_size": "x"}', "'hidden_size' must be an integer, got 'x'"),
                       ('{"model_type": "gpt2", "n_embd": 768, "n_head": 5}', "'n_embd' (768) must be a multiple"),
                       ('{"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3}',
                        "'num_experts_per_tok' (3) is more than")):
        hf.write_text(text)
        code, _ = run([*argv, "--hf-config", str(hf)])
        err = capsys.readouterr().err
        model_type = json.loads(text)["model_type"]
        assert code == 2 and f"error: --hf-config {hf} ({model_type}): {said}" in err, err
        assert "config.json" not in err
    # a size with no default (none is missing from a family today): the command's way out, through describe
    way = "give a catalog model with --model instead"
    with pytest.raises(ModelConfigError) as given:
        ConfigReader({}, "llama", "--hf-config m.json", way).int("hidden_size")
    assert str(given.value) == ("--hf-config m.json (llama): 'hidden_size' is missing; add it (a positive integer) "
                                f"or {way}.")
    with pytest.raises(ModelConfigError) as app:
        ConfigReader({}, "llama").int("hidden_size")
    assert str(app.value).startswith("config.json (llama): 'hidden_size' is missing")
    assert str(app.value).endswith(" or enter the total and largest-layer parameter counts by hand.")


def test_a_sequence_the_model_cannot_run_is_refused_under_its_flag(capsys):
    """recommend refused GPT-2 at 4096 tokens with a plain ValueError, so the JSON error's flag was null."""
    from core.models import get_spec
    from core.perf import Cluster, PlanInputError, recommend

    gpt2 = "openai-community/gpt2"
    with pytest.raises(PlanInputError) as refused:
        recommend(get_spec(gpt2), Cluster("NVIDIA H100 80GB"), seq_len=4096, global_batch=8)
    assert refused.value.parameter == "seq_len" and "1024 learned positions" in refused.value.reason
    code, text = run(["plan", "--model", gpt2, "--gpu", "H100", "--seq-len", "4096", "--global-batch", "8",
                      "--format", "json"])
    error = json.loads(text)["error"]
    assert code == 2 and error["flag"] == "--seq-len"
    assert error["message"].startswith("--seq-len 4096 is beyond the model's 1024 learned positions")
    capsys.readouterr()


@pytest.mark.parametrize("argv", [["plan", "--gpu", "H100", "--global-batch", "8"], ["estimate"],
                                  ["fit", "CONFIG", "--gpu", "H100"]])
def test_a_model_the_catalog_does_not_have_is_refused_under_model(argv, tmp_path, capsys):
    """'Unknown model' was the JSON error's message with a null flag in plan, estimate and fit."""
    config = tmp_path / "ds.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1}')
    argv = [str(config) if a == "CONFIG" else a for a in argv]
    code, text = run([*argv, "--model", "gpt2", "--format", "json"])
    error = json.loads(text)["error"]
    assert code == 2 and error["flag"] == "--model"
    assert "Unknown model 'gpt2'" in error["message"] and "openai-community/gpt2" in error["message"]
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "said"), [
    (["plan", *MODEL, "--seq-len", "2048", "--global-batch", "64", "--base", "-"],
     "--base -: cannot read standard input: it is closed; give a DeepSpeed config as a file path"),
    (["estimate", "--hf-config", "-"],
     "--hf-config -: cannot read standard input: it is closed; give a model's config.json (Hugging Face) as a "
     "file path"),
    (["validate", "-"], "error: -: cannot read standard input: it is closed; give a DeepSpeed config as a file path"),
])
def test_closed_standard_input_names_the_flag_that_said_dash_and_the_document_it_wants(argv, said, monkeypatch,
                                                                                       capsys):
    """With standard input closed, ``--base -`` and ``--hf-config -`` were reported as ``-:`` asking for "the
    config", which for --hf-config is the wrong document (a model's config.json, not a DeepSpeed config)."""
    monkeypatch.setattr("sys.stdin", None)
    code, _ = run(argv)
    assert code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize(("model_type", "key"), [("llama", "hidden_size"), ("gpt2", "n_embd"), ("t5", "d_model"),
                                                 ("mistral", "vocab_size")])
def test_a_null_size_in_an_hf_config_is_refused_as_transformers_refuses_it(model_type, key, tmp_path, capsys):
    """``"hidden_size": null`` was read as missing, so Llama's family default (4096) sized a model that
    transformers refuses to build (its config classes type the sizes as int)."""
    import transformers

    from core.models.arch import ModelConfigError
    from core.models.families import describe

    hf_config = {"model_type": model_type, key: None}
    with pytest.raises(Exception) as refused_by_transformers:  # transformers refuses with its own error type
        transformers.AutoConfig.for_model(**hf_config)
    assert key in str(refused_by_transformers.value)
    with pytest.raises(ModelConfigError) as refused:
        describe(hf_config)
    assert f"'{key}' is null; transformers refuses it" in str(refused.value)
    hf = tmp_path / "m.json"
    hf.write_text(json.dumps(hf_config))
    code, _ = run(["estimate", "--hf-config", str(hf)])
    assert code == 2 and f"--hf-config {hf} ({model_type}): '{key}' is null" in capsys.readouterr().err
