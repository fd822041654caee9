"""Published measurements added in the second round (held out: the model was not changed for them).

The same conventions as ``core.perf.measurements`` (every row normalised to seconds per optimizer step):

- the remaining bars of the ZeRO++ blog's Figures 6-8 (49B, 91B and 138B next to the 18B of the first round);
- the training logs that DeepSpeed's own tutorials show (ZeRO stage 1 and 2, ZeRO-Offload, ZeRO++), each a
  screenshot of a real run with its launch flags in the tutorial text;
- the BERT and DistilBERT rows of DeepSpeedExamples' Hugging Face autotuning READMEs (fp32, 16 V100);
- Megatron-LM on DGX-2H V100 (NVIDIA's 2019 paper and its v1.0 blog): the V100 compute of the same GPT code
  DeepSpeed's tutorials use, alone and with tensor parallelism (costed as autotp) and data parallelism;
- A100: the Hugging Face blog's DeepSpeed ZeRO-3 step of Granite 7B on four A100 (2024) and Megatron-DeepSpeed's
  1.3B BERT with ZeRO-1 on 64 A100 (its README), and its long-sequence table (GPT-30B, 32-way tensor and
  sequence parallelism over 4 A100 nodes, 2K-256K tokens, flash-attn 1.0.4's Triton kernel).
"""

from __future__ import annotations

from typing import Any

from core.perf.measurements import _ZEROPP_BLOG, _ZEROPP_ON, Measurement, gpt, hf_autotune_row

# --- ZeRO++ blog, Figures 6-8: the other model sizes ------------------------------------------------------
#: The blog names the sizes only, and the paper (arXiv 2306.10209) leaves layers and hidden sizes to an appendix and
#: evaluation scripts that were never published (https://github.com/deepspeedai/Megatron-DeepSpeed/issues/278, 2023:
#: "the scripts for ZeRO++ nor the appendix ... are available"; still open). Assumed: GPT shapes of 40 layers (the
#: 18B's depth) with the hidden size that gives the parameter count (12 x layers x hidden^2, a multiple of 128,
#: 128-wide heads). Any depth from 40 to 304 layers moves these rows' pred/meas by at most 0.13
#: (scripts/perf_zeropp_check.py), so the assumption does not decide their accuracy.
_ZEROPP_SIZES = {"49b": (10112, 79), "91b": (13824, 108), "138b": (16896, 132)}


def _zeropp_size(size: str, fig: str, gbit: float, tokens: int, value: float, zeropp: bool) -> Measurement:
    hidden, heads = _ZEROPP_SIZES[size]
    what = "ZeRO++" if zeropp else "ZeRO-3 baseline"
    return Measurement(
        f"zeropp-{size}-{'zeropp' if zeropp else 'zero3'}-{gbit:g}g-{tokens}k",
        _ZEROPP_BLOG.format(fig=fig, gbit=gbit, tokens=tokens, what=what, value=value).replace("18B", size.upper()),
        gpt(hidden, 40, heads), gpu="NVIDIA V100 32GB", gpus_per_node=16, nodes=24,
        zero=_ZEROPP_ON if zeropp else {"stage": 3}, micro_batch=tokens, seq_len=1024, metric="megatron_hw_tflops",
        value=value, precision="fp16", attention="eager", recompute="full", inter_node_gbit_s=gbit,
        assumed=f"{size.upper()} as 40 layers x {hidden} hidden (the blog and the paper give the size only; the "
                f"paper's appendix and scripts are unpublished, Megatron-DeepSpeed issue #278); {tokens}K tokens per "
                f"GPU as micro batch {tokens} x 1024 (as 2048 x 1 the 2K rows move by 2% at most); activation "
                "recomputation; Megatron-DeepSpeed's TFLOPs (Megatron's formula with recomputation, as its log prints "
                "them: docs/assets/images/zeropp/ZeRO-baseline.png, 7.65 TFLOPs at 9955.9 ms)")


ZEROPP_SIZE_ROWS: tuple[Measurement, ...] = tuple(
    _zeropp_size(size, fig, gbit, tokens, value, zeropp)
    for fig, gbit, tokens, bars in (
        ("Figure 6", 400.0, 1, {"49b": (23, 36), "91b": (23, 36), "138b": (23, 36)}),
        ("Figure 6", 400.0, 2, {"49b": (36, 51), "91b": (36, 51), "138b": (36, 50)}),
        ("Figure 7", 100.0, 1, {"49b": (11, 22), "91b": (11, 22), "138b": (11, 22)}),
        ("Figure 7", 100.0, 2, {"49b": (20, 38), "91b": (20, 38), "138b": (20, 38)}),
        ("Figure 8", 200.0, 2, {"138b": (32, 48)}),
        ("Figure 8", 800.0, 2, {"138b": (48, 55)}),
    )
    for size, (base, plus) in bars.items()
    for zeropp, value in ((False, float(base)), (True, float(plus)))
)

# --- DeepSpeed's tutorials: training-log screenshots of real runs ---------------------------------------------
_TUTORIAL = "DeepSpeed docs {page} ({image}), Megatron-LM GPT-2 on V100-SXM3 32GB, fp16: "
_MEGATRON_V100 = dict(gpu="NVIDIA V100 32GB", gpus_per_node=16, precision="fp16", attention="eager",
                      metric="samples_per_s", recompute="full")


def _megatron(hidden: int, layers: int, heads: int) -> dict[str, Any]:
    return gpt(hidden, layers, heads, activation_function="gelu")  # Megatron's gelu is one jit-fused kernel


TUTORIAL_ROWS: tuple[Measurement, ...] = (
    Measurement(
        "tutorial-zero1-gpt2-1.5b-8gpu",
        _TUTORIAL.format(page="docs/_tutorials/zero.md", image="zero1_dp8_1.5B_log.png")
        + "48 layers x 1600, 16 heads, batch 1 per GPU, 8 GPUs, ZeRO-1 with reduce_bucket_size 5e8: "
        "SamplesPerSec 11.664", _megatron(1600, 48, 16), nodes=1, gpus_per_node=8,
        zero={"stage": 1, "reduce_bucket_size": 500_000_000}, micro_batch=1, seq_len=1024, value=11.664,
        assumed="sequence 1024 and --checkpoint-activations of the Megatron-LM launch script the tutorial edits "
                "(its 1.5B flag list leaves the flag out while its 10B list adds it; without recomputation the "
                "prediction falls by about a quarter)",
        **{k: v for k, v in _MEGATRON_V100.items() if k != "gpus_per_node"}),
    Measurement(
        "tutorial-zero2-gpt2-10b-32gpu",
        _TUTORIAL.format(page="docs/_tutorials/zero.md", image="zero2_dp32_10B_log.png")
        + "50 layers x 4096, 32 heads, batch 1 per GPU, 32 GPUs, --checkpoint-activations, ZeRO-2 with "
        "overlap_comm and 5e8 buckets: SamplesPerSec 6.931 (4.6 s per iteration)", _megatron(4096, 50, 32), nodes=2,
        zero={"stage": 2, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 500_000_000,
              "allgather_bucket_size": 500_000_000}, micro_batch=1, seq_len=1024, value=6.931,
        inter_node_gbit_s=100.0,
        assumed="2 DGX-2 nodes at 100 Gbit/s per node: the tutorial does not say, but its own log times the "
                "optimizer at 2.08 s, which only the post-step all-gather of 20.6 GB of fp16 parameters across the "
                "two nodes can take (10 GB/s; the Adam step itself is ~10 ms); sequence 1024",
        **_MEGATRON_V100),
    Measurement(
        "tutorial-zero-offload-gpt2-10b-1gpu",
        _TUTORIAL.format(page="docs/_tutorials/zero-offload.md", image="zero_offload_dp1_10B_log.png")
        + "50 layers x 4096, 32 heads, batch 10, one GPU, --checkpoint-activations, ZeRO-2 with the optimizer "
        "offloaded to the CPU: SamplesPerSec 0.3868 (25.7-26.8 s per iteration)", _megatron(4096, 50, 32),
        nodes=1, gpus_per_node=1,
        zero={"stage": 2, "overlap_comm": True, "contiguous_gradients": True, "offload_optimizer": {"device": "cpu"}},
        micro_batch=10, seq_len=1024, value=0.3868, assumed="sequence 1024; one DGX-2 host CPU",
        **{k: v for k, v in _MEGATRON_V100.items() if k != "gpus_per_node"}),
    *(Measurement(
        f"tutorial-{'zeropp' if plus else 'zero3'}-gpt-18b-64gpu",
        _TUTORIAL.format(page="docs/_tutorials/zeropp.md", image=f"zeropp/{'ZeROpp' if plus else 'ZeRO-baseline'}.png")
        + f"Megatron-DeepSpeed, 40 layers x 6144, 32 heads, seq 512, batch 1 per GPU, 4 nodes x 16 GPUs, "
        f"--checkpoint-activations, ZeRO-3 with reduce_bucket_size 1e7 and overlap_comm"
        f"{' + qwZ, hpZ 16, qgZ' if plus else ''}"
        f": iteration 40 at {value:g} samples per second", _megatron(6144, 40, 32), nodes=4,
        zero={**(_ZEROPP_ON if plus else {"stage": 3}), "reduce_bucket_size": 10_000_000, "overlap_comm": True},
        micro_batch=1, seq_len=512, value=value, inter_node_gbit_s=100.0,
        assumed="100 Gbit/s per node, the ZeRO++ paper's low-bandwidth setting on the same DGX-2 cluster (the "
                "tutorial does not say; at 800 Gbit/s the baseline's three 37 GB collectives could not take 10 s)",
        **_MEGATRON_V100) for plus, value in ((False, 6.428), (True, 17.388))),
)

# --- DeepSpeedExamples HF autotuning READMEs: BERT family, fp32, GLUE MNLI at 128 tokens ---------------------
_HF_BERT = ("DeepSpeedExamples training/autotuning/hf/{m}/README.md (HF run_glue MNLI, max_seq_length 128, fp32, "
            "transformers 4.12, 16 V100 in one node): ")
_BERT = {"bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, vocab_size=28996),
         "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, vocab_size=30522),
         "distilbert": dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, vocab_size=30522)}


def _hf_bert(name: str, stage: int, micro: int, value: float, what: str) -> Measurement:
    h = _BERT[name]["hidden_size"]
    model = {"model_type": "bert", "intermediate_size": 4 * h, "max_position_embeddings": 512, "type_vocab_size": 2,
             "hidden_act": "gelu", "attention_probs_dropout_prob": 0.1, **_BERT[name]}
    return hf_autotune_row(
        name, stage, micro, value, what, model=model, source=_HF_BERT, seq_len=128, precision="fp32",
        assumed="V100 32GB; sequences padded to 128 (run_glue's default); run_glue's model is "
                "BertForSequenceClassification, a 3-way classifier head for MNLI instead of a vocabulary head"
                + ("; DistilBERT as a 6-layer BERT" if name == "distilbert" else ""), classifier_labels=3)


#: (model, stage, micro batch, samples/s, end to end): the best experiment of each tuning space in the READMEs'
#: autotuning summaries (DeepSpeed's timers) and the 'HF + DS hand-tuned' column of their throughput tables
_BERT_RESULTS = (
    ("bert-base", 0, 235, 2930.18, False), ("bert-base", 2, 235, 2744.16, False),
    ("bert-base", 3, 238, 2479.47, False), ("bert-base", 0, 128, 2523.684, True),
    ("bert-large", 0, 93, 835.244, False), ("bert-large", 1, 93, 842.243, False),
    ("bert-large", 2, 94, 764.524, False), ("bert-large", 1, 64, 766.929, True),
    ("distilbert", 0, 256, 5759.96, False), ("distilbert", 2, 256, 5366.97, False),
    ("distilbert", 3, 256, 4892.49, False), ("distilbert", 0, 256, 5305.067, True),
)
HF_BERT_ROWS: tuple[Measurement, ...] = tuple(
    _hf_bert(name, stage, micro, value,
             f"throughput table 'HF + DS hand-tuned' z{stage} mbs {micro}: {value:g} samples/s (e2e)" if e2e else
             f"autotuning summary z{stage}_gas1_tmbspg{micro}: {value:g} samples/s (timers)")
    for name, stage, micro, value, e2e in _BERT_RESULTS
)

# --- Megatron-LM on DGX-2H (16 V100 32GB per node), fp16, sequence 1024, activation checkpointing --------------
_MEGATRON_2019 = ("Megatron-LM (Shoeybi et al., arXiv 1909.08053), abstract and Table 1 (1.2B: 40 layers x 1536, "
                  "16 heads; 8.3B: 72 x 3072, 32 heads; batch 8 per model replica): ")
_MEGATRON_V1 = ("NVIDIA ADLR blog 'MegatronLM's Supercharged V1.0' (nv-adlr.github.io/MegatronLMV1), Table 1 weak "
                "model-parallel scaling, batch 8: ")


def _megatron_row(ident: str, source: str, hidden: int, layers: int, heads: int, tp: int, nodes: int, gpn: int,
                  metric: str, value: float) -> Measurement:
    extra: dict[str, Any] = {"optimizer": {"type": "Adam"}}  # Megatron's own fused Adam (apex)
    if tp > 1:
        extra["tensor_parallel"] = {"autotp_size": tp}
    return Measurement(ident, source, _megatron(hidden, layers, heads), gpu="NVIDIA V100 32GB", gpus_per_node=gpn,
                       nodes=nodes, zero={"stage": 0}, micro_batch=8, seq_len=1024, metric=metric, value=value,
                       precision="fp16", attention="eager", recompute="full", extra_config=extra,
                       assumed="Megatron's data parallelism as ZeRO stage 0 (one all-reduce per step), its tensor "
                               "parallelism as autotp; the datasheet's 125 TFLOPs (the DGX-2H clocks its V100s "
                               "higher: Megatron quotes 30% of peak for 39 TFLOPs); activation checkpointing; "
                               "800 Gbit/s per node")


MEGATRON_ROWS: tuple[Measurement, ...] = (
    _megatron_row("megatron2019-gpt2-1.2b-1gpu", _MEGATRON_2019 + "single-GPU baseline, 39 TFLOPs (30% of peak)",
                  1536, 40, 16, 1, 1, 1, "megatron_hw_tflops", 39.0),
    _megatron_row("megatron2019-gpt2-8.3b-512gpu", _MEGATRON_2019 + "8.3B with 8-way model and 64-way data "
                  "parallelism on 512 GPUs (32 DGX-2H): 15.1 PFLOPs, i.e. 29.49 TFLOPs per GPU",
                  3072, 72, 32, 8, 32, 16, "megatron_hw_tflops", 15100 / 512),
    _megatron_row("megatronv1-gpt2-1.2b-1gpu", _MEGATRON_V1 + "1.2B on 1 GPU: 1288 ms per iteration (62.4 TFLOPs; "
                  "Megatron's formula gives 67.0 for 1288 ms, so NVIDIA counted 7% lower, and the 2019 row's 39 "
                  "TFLOPs, converted with the formula, may read 7% slow: 2.061 s by the blog's own '60% over 39')",
                  1536, 40, 16, 1, 1, 1, "step_seconds", 1.288),
)

# --- A100: the Hugging Face blog 'From DeepSpeed to FSDP and Back Again' (2024), Megatron-DeepSpeed's BERT (2022)
_GRANITE_7B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 11008,
               "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32008,
               "max_position_embeddings": 4096}
A100_ROWS: tuple[Measurement, ...] = (
    Measurement("hfblog-granite7b-z3-4gpu",
                "huggingface/blog deepspeed-to-fsdp-and-back.md, Table 3: IBM Granite 7B (Llama-2 architecture), "
                "DeepSpeed ZeRO-3 through Accelerate, four A100, batch size 8, bf16: 3094.5 tokens/s/device, step "
                "time 10.6 s (MFU 0.40)", _GRANITE_7B, gpu="NVIDIA A100 80GB", gpus_per_node=4, nodes=1,
                zero={"stage": 3, "overlap_comm": True}, micro_batch=8, seq_len=4096, metric="step_seconds",
                value=10.6, precision="bf16", attention="sdpa", recompute="full",
                assumed="A100 80GB; 8 sequences of 4096 tokens per GPU (3094.5 tokens/s x 10.6 s = 32.8k tokens); "
                        "gradient checkpointing (without it the activations of 32k tokens exceed 80 GB); SDPA"),
    Measurement("mds-bert-1.3b-64gpu",
                "microsoft/Megatron-DeepSpeed examples_deepspeed/bert_with_pile/README.md: up to 145 TFLOPs per GPU "
                "pre-training a 1.3B BERT (ds_pretrain_bert.sh's 'BERT 1.3B': 24 layers x 2048, 32 heads, seq 512) "
                "with ZeRO stage 1, no model parallelism, 64 A100, batch 4096 (64 per GPU), activation checkpointing",
                {"model_type": "bert", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
                 "intermediate_size": 8192, "vocab_size": 30522, "max_position_embeddings": 512,
                 "type_vocab_size": 2, "hidden_act": "gelu"}, gpu="NVIDIA A100 80GB", gpus_per_node=8, nodes=8,
                zero={"stage": 1}, micro_batch=64, seq_len=512, metric="megatron_hw_tflops", value=145.0,
                precision="fp16", attention="eager", recompute="full", extra_config={"optimizer": {"type": "Adam"}},
                assumed="A100 80GB, 8 per node (the README says A100); Megatron's fused-softmax attention costed as "
                        "eager; fp16; Megatron-DeepSpeed's TFLOPs are Megatron's formula (its throughput_calculator)"),
)

# --- Megatron-DeepSpeed long sequences (deepspeed4science/megatron_long_seq_support): GPT-30B, TP 32 ----------
_LONG_SEQ = ("microsoft/Megatron-DeepSpeed examples_deepspeed/deepspeed4science/megatron_long_seq_support/README.md, "
             "'New Megatron-DeepSpeed' column: 4 DGX A100-40GB nodes, 8 HDR (200 Gbit/s) each, GPT-30B "
             "(pretrain_gpt_30B_seq_parallel.sh: 64 layers x 6144, 64 heads, TP 32 with sequence parallelism, "
             "micro batch 1, global batch 2, fp16, activation checkpointing, --use-flash-attn-triton), ")
LONG_SEQ_ROWS: tuple[Measurement, ...] = tuple(
    Measurement(f"mds-longseq-gpt30b-tp32-s{k}k", _LONG_SEQ + f"sequence {k}k: {v} TFLOPs per GPU",
                _megatron(6144, 64, 64), gpu="NVIDIA A100 40GB", gpus_per_node=8, nodes=4, zero={"stage": 0},
                micro_batch=1, grad_accum=2, seq_len=k * 1024, metric="megatron_hw_tflops", value=float(v),
                precision="fp16", attention="flash1", recompute="full", inter_node_gbit_s=1600.0,
                extra_config={"optimizer": {"type": "Adam"}, "tensor_parallel": {"autotp_size": 32}},
                assumed="Megatron's tensor + sequence parallelism across the 4 nodes costed as autotp (the same "
                        "bytes); --use-flash-attn-triton is the Triton kernel of flash-attn v1.0.4 (the README's "
                        "install steps), the planner's flash1, called causal (megatron/model/transformer.py "
                        "FlashSelfAttentionTriton(causal=True)); Megatron-DeepSpeed's TFLOPs are Megatron's formula "
                        "(full s^2 attention)")
    for k, v in ((2, 68), (4, 80), (8, 86), (16, 92), (32, 100), (64, 106), (128, 119), (256, 94))
)

NEW_ROWS: tuple[Measurement, ...] = (*ZEROPP_SIZE_ROWS, *TUTORIAL_ROWS, *HF_BERT_ROWS, *MEGATRON_ROWS, *A100_ROWS,
                                     *LONG_SEQ_ROWS)
