"""ui.memory.setup_problems: each problem carries the pages that change it, so the headline and the sidebar never
match its sentence to find them."""

from __future__ import annotations

from pathlib import Path

from app_support import app

from core.hardware import find_gpu
from core.models import describe, get_config
from ui import app_state, headline
from ui import memory as ui_memory

ROOT = Path(__file__).resolve().parent.parent
GPT2 = "openai-community/gpt2"


def _both_problems_context() -> dict:
    """gpt2 (1,024 learned positions) at 8,192 tokens on a V100 (no bf16): one problem of each kind."""
    hf = get_config(GPT2)
    spec = describe(hf, name=GPT2)
    v100 = find_gpu("NVIDIA V100 32GB")
    return {**app_state.default_context(), "model": GPT2, "model_config": hf, "total_params": spec.total_params,
            "largest_layer_params": spec.largest_layer_params, "seq_len": 8192, "gpu": v100.name,
            "gpu_memory_gib": v100.memory_gib}


def test_every_kind_names_a_page_the_app_has() -> None:
    for kind, changed_by in ui_memory.SETUP_FIXES.items():
        assert changed_by, kind
        for what, page in changed_by:
            assert what and page in app_state.PAGES, (kind, page)
            assert (ROOT / app_state.PAGES[page]).is_file(), (kind, page)


def test_setup_problems_produces_every_kind_of_the_table_and_no_other() -> None:
    # under the HF Trainer, its default per-device batch of 8 cannot give the written 256 on 8 GPUs
    trainer = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": "auto"}
    problems = ui_memory.setup_problems({"bf16": {"enabled": True}, **trainer},
                                        {**_both_problems_context(), "target": "hf"})
    assert [p.kind for p in problems] == list(ui_memory.SETUP_FIXES)
    for problem in problems:
        assert problem.changed_by == ui_memory.SETUP_FIXES[problem.kind] and problem.pages
        assert problem.message and not problem.message.endswith(".")
    assert not ui_memory.setup_problems({"fp16": {"enabled": True}}, {**_both_problems_context(), "seq_len": 1024})


def test_the_headline_says_where_each_kind_is_changed_as_before() -> None:
    problems = {p.kind: p for p in ui_memory.setup_problems({"bf16": {"enabled": True}}, _both_problems_context())}
    assert headline.setup_advice(problems["sequence"]) == "Change the sequence length or the model on the Start page."
    assert problems["sequence"].pages == ("start",)
    assert headline.setup_advice(problems["precision"]) == \
        "Change the GPU on the Start page or the precision on the Precision page."
    assert problems["precision"].pages == ("start", "precision")


def test_torch_autocast_in_bf16_on_a_gpu_without_bf16_is_a_setup_problem_as_bf16_is():
    """torch_autocast with dtype bf16 runs the matmuls in bf16 (the planner costs it so and predict says the V100
    emulates it), but the setup check asked the precision mode, "torch_autocast", and said nothing."""
    context = {**app_state.default_context(), "gpu": "NVIDIA V100 32GB"}
    for dtype, flagged in (("torch.bfloat16", True), ("bf16", True), ("torch.float16", False), (None, False)):
        section = {"enabled": True, **({"dtype": dtype} if dtype else {})}
        kinds = [problem.kind for problem in ui_memory.setup_problems({"torch_autocast": section}, context)]
        assert ("precision" in kinds) is flagged, dtype


def test_fit_and_estimate_say_a_gpu_lacks_the_autocast_dtype(tmp_path, capsys):
    import json

    from core.cli import main

    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"},
                                "zero_optimization": {"stage": 2}}))
    for argv in (["fit", str(path)], ["estimate", "--config", str(path)]):
        main([*argv, "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA V100 32GB"])
        said = capsys.readouterr()
        assert "V100 32GB has no bf16 arithmetic" in said.out + said.err, argv


def test_the_precision_page_warns_about_autocast_in_bf16_on_a_v100():
    at = app({"torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}}, "pages/precision.py",
             gpu="NVIDIA V100 32GB")
    assert any("V100 32GB has no bf16 arithmetic" in warning.value for warning in at.warning)
