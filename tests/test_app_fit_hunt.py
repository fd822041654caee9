"""AppTest: Make it fit delivers what it promises; the memory sweep agrees with the verdict; headline wording."""

from __future__ import annotations

import re

from app_support import app, html_tables
from streamlit.testing.v1 import AppTest

from core.models import get_config, get_spec

L = "meta-llama/Llama-2-7b-hf"
_SPEC = get_spec(L)
MODEL = dict(model=L, model_config=get_config(L), total_params=_SPEC.total_params,
             largest_layer_params=_SPEC.largest_layer_params)


def verdicts(at: AppTest) -> list[str]:
    """The headline's two sentences: accepted or refused, fits or not."""
    return [m.value for m in at.markdown if any(w in m.value for w in ("Fits**", "fit**", "Refused", "Accepted"))]


def test_make_it_fit_with_elastic_training_makes_it_fit() -> None:
    config = {"elasticity": {"enabled": True, "max_train_batch_size": 4000, "micro_batch_sizes": [16, 32],
                             "min_gpus": 1, "max_gpus": 10000, "version": 0.1, "ignore_non_elastic_batch_info": True},
              "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    at = app(config, "pages/zero.py", version="0.19.7", seq_len=4096, **MODEL)
    assert any("Does not fit" in v and "micro batch 32" in v for v in verdicts(at))
    promised = next(c.value for c in at.caption if c.value.startswith("Make it fit applies"))
    at.button(key="headline_fit").click().run()
    assert not at.exception, at.exception
    after = verdicts(at)
    assert any("**Fits**" in v for v in after), after
    assert not any("Refused" in v for v in after), after
    gib = promised.split("→ GPU ")[1].split(" GiB")[0]
    assert any(f"GPU {gib} of" in v for v in after), (promised, after)


def test_micro_batch_way_on_016_with_sequence_parallel_keeps_the_config_accepted() -> None:
    config = {"train_batch_size": 64, "sequence_parallel_size": 2, "zero_optimization": {"stage": 1},
              "bf16": {"enabled": True}}
    at = app(config, "pages/zero.py", version="0.16.9", seq_len=4096, **MODEL)
    assert any("Accepted" in v for v in verdicts(at))
    at.button(key="zero_fit_0").click().run()
    assert not at.exception, at.exception
    after = verdicts(at)
    assert not any("Refused" in v for v in after), after
    assert any("**Fits**" in v for v in after), after


def _sweep_rows(at: AppTest) -> dict[str, list[str]]:
    table = next(t for t in html_tables(at) if t.columns[0] == "GPUs")
    return {row["GPUs"]: [row["Micro batch"], row["GPU, GiB per GPU"], row["Fits"]] for _, row in table.iterrows()}


def test_zero_page_gpu_count_sweep_agrees_with_the_verdict_on_that_many_gpus() -> None:
    config = {"train_batch_size": 64, "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
    at = app(config, "pages/zero.py", **MODEL)
    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()
    assert not at.exception, at.exception
    rows = _sweep_rows(at)
    assert rows["16"] == ["4", "59.6", "fits"] and rows["64"] == ["1", "16.6", "fits"]
    assert rows["128"] == ["—", "—", "batch does not resolve"]
    held = next(c.value for c in at.caption if c.value.startswith("Held fixed"))
    assert "micro batch DeepSpeed derives" in held and "128" in held
    for nodes, gib in ((2, "59.6"), (8, "16.6")):  # the verdict on that many GPUs (8 per node)
        on = app(config, "pages/zero.py", nodes=nodes, **MODEL)
        assert any(f"**Fits**]: GPU {gib} of" in v for v in verdicts(on)), verdicts(on)


def _most_important(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Most important:**"))


def _edit_links(at: AppTest) -> list[str]:
    return [link.label for link in at.get("page_link") if link.label.startswith("Edit on")]


def test_a_sequence_beyond_the_positions_names_only_the_start_page() -> None:
    gpt2 = get_spec("openai-community/gpt2")
    at = app({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}, "pages/zero.py",
             model="openai-community/gpt2", model_config=get_config("openai-community/gpt2"),
             total_params=gpt2.total_params, largest_layer_params=gpt2.largest_layer_params, seq_len=2048)
    text = _most_important(at)
    assert "Sequence length 2048" in text and "Start page" in text, text
    assert "Precision" not in text, text  # the Precision page cannot change a sequence length
    assert _edit_links(at) == ["Edit on Start"]


def test_a_precision_the_gpu_lacks_names_the_start_and_precision_pages() -> None:
    at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}},
             "pages/zero.py", gpu="NVIDIA V100 32GB", gpu_memory_gib=31.74, **MODEL)
    text = _most_important(at)
    assert "no bf16 arithmetic" in text and "GPU on the Start page" in text, text
    assert "precision on the Precision page" in text, text
    assert _edit_links(at) == ["Edit on Start", "Edit on Precision"]


def test_the_gpu_count_sweep_of_an_elastic_config_says_elastic_training_refuses_a_count() -> None:
    """Elastic training sets the batch and refuses the GPU counts outside its range; the caption blamed batch keys
    that "do not resolve" (which elastic training ignores)."""
    config = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                             "min_gpus": 1, "max_gpus": 16, "version": 0.1},
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
    at = app(config, "pages/zero.py", version="0.19.7", **MODEL)
    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()
    assert not at.exception, at.exception
    rows = _sweep_rows(at)
    refused = [count for count, row in rows.items() if row[2] == "batch does not resolve"]
    assert refused and "8" not in refused  # the cluster's own 8 GPUs run, the larger counts elastic training refuses
    held = next(c.value for c in at.caption if c.value.startswith("Held fixed"))
    assert f"Elastic training refuses {', '.join(refused)} GPUs" in held and "batch keys" not in held


def _sweep_caption(config: dict) -> str:
    at = app(config, "pages/zero.py", **MODEL)
    at.radio(key="zero_sweep_axis").set_value("total_gpus").run()
    assert not at.exception, at.exception
    return next(c.value for c in at.caption if c.value.startswith("Held fixed"))


def test_the_gpu_count_sweep_says_a_written_micro_batch_is_written_not_derived() -> None:
    """The caption said DeepSpeed "derives" the micro batch from the batch keys even when the config writes it."""
    held = _sweep_caption({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
                           "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}})
    assert "the micro batch the config writes (train_micro_batch_size_per_gpu 2) on every count" in held, held
    assert "derives" not in held, held


def test_the_gpu_count_sweep_says_a_micro_batch_derived_from_train_batch_size_and_accumulation() -> None:
    held = _sweep_caption({"train_batch_size": 128, "gradient_accumulation_steps": 2,
                           "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}})
    assert "DeepSpeed derives there from train_batch_size and gradient_accumulation_steps" in held, held


def test_every_way_with_fp16_master_weights_applies_an_accepted_config_of_the_promised_size() -> None:
    """0.16.9 runs fp16 master weights at ZeRO-2 only, 0.19.8 at ZeRO-3 only with the CPU-Adam offload: the ZeRO-3
    and no-offload ways remove them, say so, and the page then shows the GPU memory the way promised."""
    big = "meta-llama/Llama-2-70b-hf"
    spec = get_spec(big)
    model = dict(model=big, model_config=get_config(big), total_params=spec.total_params,
                 largest_layer_params=spec.largest_layer_params)
    config = {"train_batch_size": 64, "fp16": {"enabled": True, "fp16_master_weights_and_grads": True},
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
              "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
    for version in ("0.16.9", "0.19.8"):
        at = app(config, "pages/zero.py", version=version, seq_len=4096, **model)
        lines = [m.value for m in at.markdown if re.match(r"\*\*\d+\. ", m.value)]
        said = [c.value for c in at.caption if "also removes fp16.fp16_master_weights_and_grads" in c.value]
        keys = [b.key for b in at.button if b.key and b.key.startswith("zero_fit_")]
        assert len(lines) == len(keys) > 1
        removing = 0
        for key, line in zip(keys, lines, strict=True):
            clicked = app(config, "pages/zero.py", version=version, seq_len=4096, **model)
            clicked.button(key=key).click().run()
            assert not clicked.exception, clicked.exception
            after = verdicts(clicked)
            assert any("Accepted" in v for v in after), (version, line, after)
            removing += "fp16_master_weights_and_grads" not in clicked.session_state["config"]["fp16"]
            gib = line.split("— GPU ")[1].split(" GiB")[0]
            assert any(f"GPU {gib} of" in v for v in after), (version, line, after)
        assert removing and len(said) == removing, (version, removing, said)
