"""The sizing commands say what their numbers assume: the network they defaulted to, the rates a calibration
fitted, whole nodes beside a GPU count, and the micro batch a written train_batch_size leaves to "auto"."""

from __future__ import annotations

import io
import json

import pytest

from core.cli import main

LLAMA = ["--model", "meta-llama/Llama-2-7b-hf"]


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def _config(tmp_path, config: dict) -> str:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_the_network_says_it_is_the_gpus_default(tmp_path):
    """plan and predict printed "(3200 Gbit/s per node, ...)" without saying that the figure was the H100's
    catalog default, not something the user gave."""
    config = _config(tmp_path, {"train_micro_batch_size_per_gpu": 1})
    for argv in (["plan", *LLAMA, "--gpu", "H100", "--global-batch", "64", "--top", "1"],
                 ["predict", config, *LLAMA, "--gpu", "H100"]):
        header = run(argv)[1].splitlines()[0]
        assert "(3200 Gbit/s per node, the GPU's reference system: --network to change" in header, header
        header = run([*argv, "--network", "800"])[1].splitlines()[0]
        assert "(800 Gbit/s per node" in header and "reference system" not in header, header
    header = run(["predict", config, *LLAMA, "--gpu", "L4"])[1].splitlines()[0]
    assert "(100 Gbit/s per node, one NIC, as in PCIe-card servers: --network to change)" in header


@pytest.mark.parametrize(("offload", "cpu_adam"), [(False, False), (True, True)], ids=["on-gpu", "offloaded"])
def test_a_calibration_prints_only_the_rates_the_step_depends_on(offload, cpu_adam, tmp_path):
    """After --calibrate-step, predict printed "CPU-Adam 1.78e+09 parameters/s per node" for a config whose
    optimizer runs on the GPU, where the measured step says nothing about the CPU optimizer."""
    zero = {"stage": 2, **({"offload_optimizer": {"device": "cpu"}} if offload else {})}
    config = _config(tmp_path, {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
                                "bf16": {"enabled": True}, "zero_optimization": zero})
    argv = ["predict", config, *LLAMA, "--gpu", "H100", "--calibrate-step", "3"]
    line = next(x for x in run(argv)[1].splitlines() if x.startswith("calibrated to"))
    assert "compute efficiency" in line and "link efficiency" in line
    assert ("CPU-Adam rate not fitted: this config's step does not depend on it" in line) is not cpu_adam
    assert (" parameters/s per node" in line) is cpu_adam
    uses = json.loads(run([*argv, "--format", "json"])[1])["calibration"]["step_uses"]
    assert uses == {"link": True, "cpu_adam": cpu_adam}
    if not offload:  # one GPU: no collectives, and no link efficiency to fit either
        line = next(x for x in run([*argv, "--gpus-per-node", "1"])[1].splitlines() if x.startswith("calibrated"))
        assert "(link efficiency and CPU-Adam rate not fitted: this config's step does not depend on them)" in line


def test_the_memory_floor_says_the_whole_nodes_it_takes():
    """The sweep's "memory floor ... 36 GPUs" did not say that 36 GPUs of 8-GPU nodes are 5 nodes."""
    from core.cli.plan import _gpus_in_nodes

    assert _gpus_in_nodes(36, 8) == "36 GPUs, 5 nodes of 8"
    assert _gpus_in_nodes(16, 8) == "16 GPUs" and _gpus_in_nodes(1, 8) == "1 GPU, 1 node of 8"
    text = run(["plan", "--model", "meta-llama/Llama-2-70b-hf", "--gpu", "A100 40", "--global-batch", "64",
                "--cpu-ram", "32", "--sweep", "--top", "1"])[1]
    assert "at most 95% of GPU memory as above: 36 GPUs, 5 nodes of 8)" in text


@pytest.mark.parametrize("command", ["predict", "fit", "estimate"])
def test_an_auto_micro_batch_follows_the_written_train_batch_size(command, tmp_path):
    """{"train_batch_size": 16, "train_micro_batch_size_per_gpu": "auto"} on 8 GPUs was sized at micro batch 8
    (the HF Trainer's default), 64 sequences per step against the written 16; it is micro batch 2, the one
    per-device batch the Trainer accepts, and said."""
    config = _config(tmp_path, {"train_batch_size": 16, "train_micro_batch_size_per_gpu": "auto",
                                "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}})
    argv = {"predict": ["predict", config, *LLAMA, "--gpu", "H100"],
            "fit": ["fit", config, *LLAMA, "--gpu", "H100", "--gpus", "8"],
            "estimate": ["estimate", *LLAMA, "--config", config]}[command]
    text = run(argv)[1]
    assert "micro batch 2 assumed" in text and "which must be 2 for the written train_batch_size 16 on 8 GPUs" in text
    micro = {"predict": lambda d: d["shape"]["micro_batch"], "fit": lambda d: d["micro_batch"],
             "estimate": lambda d: d["shape"]["micro_batch"]}[command]
    assert micro(json.loads(run([*argv, "--format", "json"])[1])) == 2
    if command == "predict":
        assert "micro batch 2 x 1 accumulation" in text
        # with the Trainer's accumulation given: 16 = micro 1 x 2 x 8 GPUs
        path = tmp_path / "ds.json"
        path.write_text(json.dumps({"train_batch_size": 16, "train_micro_batch_size_per_gpu": "auto",
                                    "gradient_accumulation_steps": "auto"}))
        text = run([*argv, "--gradient-accumulation-steps", "2"])[1]
        assert "micro batch 1 x 2 accumulation" in text
    # a train_batch_size no per-device batch gives: the Trainer's default, and the contradiction said
    (tmp_path / "ds.json").write_text(json.dumps({"train_batch_size": 12, "train_micro_batch_size_per_gpu": "auto"}))
    assert "no per-device batch gives the written train_batch_size 12 on 8 GPUs" in run(argv)[1]


def test_the_sweep_table_is_formatted_as_the_ranked_one_with_units():
    """The sweep printed pandas' raw floats without units (3.102028, 49.632454, 1.462525e+00, True); it now
    prints as the ranked table: times with their unit, yes/NO, the ranked table's decimals, units in the headers."""
    text = run(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100", "--global-batch", "64", "--tokens",
                "1e9", "--price", "2", "--top", "4", "--sweep"])[1]
    table = text.split("(best fitting config each):\n")[1].split("\nLeft out")[0].splitlines()
    assert table[0].split() == ["nodes", "GPUs", "fits", "stage", "offload(opt/param)", "zero++", "micro",
                                "recompute", "step", "tok/s", "TFLOPs/GPU", "hours", "cost", "USD"]
    first = table[1].split()
    assert first[:3] == ["1", "8", "yes"] and first[5] in ("yes", "no") and first[9] in ("s", "ms")
    assert first[10].isdigit() and len(first[11].split(".")[1]) == 1  # tok/s whole, TFLOPs one decimal
    assert not any(word in line for line in table for word in ("True", "False", "e+0", "nan"))


def test_huge_values_are_printed_compactly(tmp_path):
    """--network 1e-9 and --cpu-adam 1e-9 (accepted) printed '80016189440.502 s' steps, 18-digit hours and
    31-digit costs, and tok/s of 0; such values are now in scientific notation, in every table and in predict."""
    from core.cli.plan import _number_text
    from core.perf.advice import seconds_text as _seconds_text

    assert _seconds_text(8.0016e10) == "8e+10 s" and _seconds_text(1.4625) == "1.462 s"
    assert _number_text(1.7e17, 1) == "1.7e+17" and _number_text(2.7e24, 0, grouped=True) == "2.7e+24"
    assert _number_text(1.6e-6, 0) == "1.6e-06" and _number_text(89620.4, 0) == "89620"
    assert _number_text(0.0, 1) == "0.0" and _number_text(12345.6, 0, grouped=True) == "12,346"
    slow = ["--nodes", "2", "--network", "1e-9", "--cpu-adam", "1e-9"]
    text = run(["plan", *LLAMA, "--gpu", "H100", "--global-batch", "64", *slow, "--tokens", "1e15", "--price",
                "1e6", "--top", "3", "--sweep"])[1]
    config = _config(tmp_path, {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
                                "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})
    text += run(["predict", config, *LLAMA, "--gpu", "H100", *slow])[1]
    numbers = [word for line in text.splitlines() if not line.lstrip().startswith(('"', "{", "}"))
               for word in line.replace(",", "").split() if word.replace(".", "").isdigit()]
    assert numbers and max(len(word) for word in numbers) <= 9, max(numbers, key=len)
    assert "e+" in text and "tokens/s: 0 " not in text
