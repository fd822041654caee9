"""``dsconfig plan --deepspeed-version`` and ``--base``: the candidates ranked as a release reads them, loaded into
the user's config as the app's Plan page loads them."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import config_file, run_cli

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA A100 80GB", "--seq-len", "4096",
        "--global-batch", "64"]
#: bf16 master weights and optimizer states: 0.16.x never reads the keys (fp32 master weights), 0.19.8 keeps them
#: in bf16, so its candidates need less memory and rank differently.
BF16_STATES = {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}


run = run_cli


@pytest.fixture
def base(tmp_path):
    return config_file(tmp_path, BF16_STATES, "base.json")


def _json(argv: list[str]) -> dict:
    code, text, _ = run([*argv, "--format", "json"])
    assert code == 0
    return json.loads(text)


def test_plan_ranks_the_base_as_the_release_reads_it(base):
    old = _json([*PLAN, "--base", base, "--deepspeed-version", "0.16.9", "--top", "1000"])
    new = _json([*PLAN, "--base", base, "--deepspeed-version", "0.19.8", "--top", "1000"])
    assert (old["deepspeed_version"], new["deepspeed_version"]) == ("0.16.9", "0.19.8")
    assert old["base"] == new["base"] == base

    def fitting(rows, stages):
        return sum(r["fits"] for r in rows if r["stage"] in stages)

    # bf16 master weights free memory under the ZeRO optimizers in 0.19.8 only ...
    assert fitting(old["rows"], (1, 2, 3)) < fitting(new["rows"], (1, 2, 3))
    # ... while without ZeRO 0.16.9's BF16_Optimizer splits the fp32 states over the GPUs (0.19.8 keeps them whole)
    assert fitting(old["rows"], (0,)) > fitting(new["rows"], (0,)) == 0
    assert old["rows"][0]["gpu_peak_gib"] > new["rows"][0]["gpu_peak_gib"]
    assert [r["micro_batch"] for r in old["rows"]] != [r["micro_batch"] for r in new["rows"]]
    assert new["rows"][0]["config"]["bf16"] == BF16_STATES["bf16"]  # the base's keys kept in each row


def test_plan_sweep_reads_the_release_too(base):
    argv = [*PLAN, "--base", base, "--sweep", "--top", "1"]
    old = _json([*argv, "--deepspeed-version", "0.16.9"])["gpu_sweep"][0]
    new = _json([*argv, "--deepspeed-version", "0.19.8"])["gpu_sweep"][0]
    assert old["step_seconds"] != new["step_seconds"]


def test_plan_text_says_the_release_and_the_base(base):
    code, text, _ = run([*PLAN, "--base", base, "--deepspeed-version", "0.16.9", "--top", "1"])
    assert code == 0
    assert f"loaded into --base {base}, read as DeepSpeed 0.16.9\n" in text.splitlines(keepends=True)[0]


def test_plan_says_what_the_base_lost(tmp_path):
    path = config_file(tmp_path, {"sequence_parallel_size": 2, "bf16": {"enabled": True}}, "sp.json")
    text = run([*PLAN, "--base", path, "--deepspeed-version", "0.19.8", "--top", "1"])[1]
    assert ("sequence_parallel_size taken out of every candidate shown: the planner ranks data parallelism over every "
            "GPU" in text)
    # 0.16.x ignores the key: nothing to take out, and the rows keep it
    data = _json([*PLAN, "--base", path, "--deepspeed-version", "0.16.9", "--top", "1"])
    assert data["rows"][0]["config"]["sequence_parallel_size"] == 2
    assert not any("taken out" in note for note in data["assumptions"]["notes"])


def test_plan_refuses_an_unknown_release_as_fit_does(base):
    code, _, err = run([*PLAN, "--deepspeed-version", "0.1"])
    fit_code, _, fit_err = run(["fit", base, "--model", "meta-llama/Llama-2-7b-hf", "--deepspeed-version", "0.1"])
    assert code == fit_code == 2
    said = fit_err.splitlines()[-1].split("error: ", 1)[1]
    assert "has no DeepSpeed validation profile" in said
    assert err.splitlines()[-1] == f"dsconfig plan: error: {said}"


def test_plan_base_and_hf_config_cannot_both_read_stdin():
    code, _, err = run(["plan", "--hf-config", "-", "--base", "-", "--gpu", "NVIDIA A100 80GB", "--global-batch", "8"])
    assert code == 2 and "both read standard input" in err


def test_plan_notes_say_why_each_base_key_went_and_from_how_many_rows(tmp_path):
    """The note said every removal was a key DeepSpeed "would let override the candidate's batch keys": wrong for an
    elasticity section 0.19.8 refuses outright, silent on fp16 loss scaling a bf16 row drops, and "every candidate"
    for master weights only the rows without a CPU optimizer offload lose."""
    elastic = config_file(tmp_path, {"elasticity": {"enabled": True, "max_train_batch_size": 64,
                                                    "micro_batch_sizes": [2, 4]},
                                     "fp16": {"enabled": False, "loss_scale": 0}}, "elastic.json")
    text = run([*PLAN, "--base", elastic, "--deepspeed-version", "0.19.8", "--top", "5"])[1]
    assert ("elasticity taken out of every candidate shown: DeepSpeed 0.19.8 refuses any config containing it"
            in text)
    assert "fp16.loss_scale taken out of every candidate shown: fp16 loss scaling" in text
    assert "override" not in text
    master = config_file(tmp_path, {"fp16": {"enabled": False, "fp16_master_weights_and_grads": True}}, "mw.json")
    data = _json([*PLAN, "--base", master, "--top", "40"])
    notes = [note for note in data["assumptions"]["notes"] if "fp16_master_weights_and_grads taken out" in note]
    kept = [row for row in data["rows"] if "fp16_master_weights_and_grads" in row["config"].get("fp16", {})]
    lost = len(data["rows"]) - len(kept)
    assert notes and 0 < lost < len(data["rows"])
    assert sum(int(note.split(" taken out of ")[1].split(" of the ")[0]) for note in notes) == lost


def test_plan_notes_say_what_loading_adds_too(tmp_path):
    """The app's Plan page says what "Use this config" adds (zero_allow_untested_optimizer for an optimizer ZeRO
    was not tested with, a placeholder NVMe path); the CLI's --base note said only what went."""
    lamb = config_file(tmp_path, {"bf16": {"enabled": True}, "optimizer": {"type": "Lamb", "params": {"lr": 1e-4}}},
                       "lamb.json")
    data = _json([*PLAN, "--base", lamb, "--top", "5"])
    allowed = [row for row in data["rows"] if row["config"].get("zero_allow_untested_optimizer") is True]
    notes = [note for note in data["assumptions"]["notes"] if "zero_allow_untested_optimizer set to true" in note]
    assert allowed and len(notes) == 1 and notes[0].startswith(f"--base {lamb}: ")
    said = "every candidate shown" if len(allowed) == len(data["rows"]) else f"{len(allowed)} of the"
    assert said in notes[0]
