"""Published DeepSpeed training measurements the planner is checked against (``scripts/perf_accuracy.py``).

Every row cites its source. Each source counts FLOPs its own way, so every row is normalised to the one
quantity that needs no convention, the wall-clock seconds of one optimizer step:

- ``megatron_hw_tflops``: TFLOPs per GPU computed with Megatron's formula with activation recomputation,
  96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) FLOPs per step (the formula the Azure blog quotes);
  step seconds = that / (TFLOPs x GPUs).
- ``model_tflops``: TFLOPs per GPU counted as 6N + attention per token without recomputation (the planner's
  own ``tflops_per_gpu``); step seconds = model FLOPs per step / (TFLOPs x GPUs).
- ``samples_per_s``: step seconds = global batch / samples per second.
- ``step_seconds``: the source gives the iteration time itself.
- ``deepcompile_tflops``: TFLOPs per GPU as DeepSpeedExamples benchmarks/deepcompile/plot_common.py counts them
  (``deepcompile_flops_per_sample``: its own model table, e.g. Llama-3-70B with ffn 32768 and vocabulary 32000,
  full s^2 attention, an extra forward with activation checkpointing); step seconds = those FLOPs per step /
  (TFLOPs x GPUs).
- ``mfu``: MFU in percent of the datasheet peak with the 6N + attention convention (llm-foundry's); step
  seconds = model FLOPs per step / (MFU x peak x GPUs).

Assumptions a source leaves open (micro batch, attention kernel, recomputation) are stated per row in ``assumed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: GPT-style model shapes (Megatron GPT-2 vocabulary 50257 padded to 50304)
_GPT = {"model_type": "gpt2", "vocab_size": 50304, "n_positions": 2048, "attn_pdrop": 0.0, "resid_pdrop": 0.0}


def gpt(hidden: int, layers: int, heads: int, **extra: Any) -> dict[str, Any]:
    """A GPT (Megatron / GPT-2 architecture) config.json dict."""
    return {**_GPT, "n_embd": hidden, "n_layer": layers, "n_head": heads, **extra}


@dataclass(frozen=True)
class Measurement:
    """One published measurement and everything needed to predict it."""

    id: str
    source: str  # citation: paper + table/figure, blog, or issue URL
    model: str | dict[str, Any]  # a catalog name or a config.json dict
    gpu: str
    gpus_per_node: int
    nodes: int
    zero: dict[str, Any]  # the zero_optimization section
    micro_batch: int
    seq_len: int
    metric: str  # megatron_hw_tflops | model_tflops | samples_per_s | mfu | deepcompile_tflops | step_seconds
    value: float
    grad_accum: int = 1
    precision: str = "fp16"
    attention: str = "sdpa"
    recompute: str = "none"
    inter_node_gbit_s: float | None = None
    intra_node_gbyte_s: float | None = None
    assumed: str = ""
    extra_config: dict[str, Any] = field(default_factory=dict)
    #: outputs of the model's head: None for a language model (a projection over the vocabulary), a number of
    #: labels for a sequence classifier (run_glue's BertForSequenceClassification)
    classifier_labels: int | None = None
    #: the measured steps were fp16 overflow skips (no optimizer update, no post-step all-gather): DeepSpeed's
    #: autotuner timed steps 3-5 (autotuning/constants.py START/END_PROFILE_STEP 3/5) while the loss scale still
    #: fell from its initial 2**32 (runtime/constants.py FP16_INITIAL_SCALE_POWER_DEFAULT = 32 until DeepSpeed PR
    #: #2663, Jan 2023), so every timed step overflowed and skipped its update (``accuracy.SKIPPED_STEP_PARTS``)
    optimizer_step_skipped: bool = False


_AZURE = "DeepSpeed blog 'Azure empowers ... hyperscale model training' (2022-07-26), "
_AZURE_HW = dict(gpu="NVIDIA A100 80GB", gpus_per_node=8, inter_node_gbit_s=1600.0, precision="fp16",
                 attention="eager", recompute="full", metric="megatron_hw_tflops")
_AZURE_ZERO = {"stage": 3, "overlap_comm": True, "offload_optimizer": {"device": "cpu"}}
_AUTOTUNE = ("DeepSpeed autotuning tutorial (docs/_tutorials/autotuning.md), GPT2-large on 16 V100, "
             "HF run_clm, block size 1024")
_GPT2_LARGE = gpt(1280, 36, 20, vocab_size=50257, n_positions=1024, attn_pdrop=0.1, resid_pdrop=0.1)
_AUTOTUNE_HW = dict(model=_GPT2_LARGE, gpu="NVIDIA V100 32GB",
                    gpus_per_node=16, nodes=1, seq_len=1024, precision="fp16", attention="eager",
                    metric="samples_per_s")
_ZEROPP = ("ZeRO++ (Wang et al., 2023, arXiv 2306.10209) Fig. 7: 18B GPT on 384 V100 (24 DGX-2 nodes), one 100 Gbit/s "
           "IB link per node; figures as quoted in issue 14")
_ZEROPP_HW = dict(model=gpt(6144, 40, 48), gpu="NVIDIA V100 32GB", gpus_per_node=16, nodes=24, micro_batch=1,
                  seq_len=1024, inter_node_gbit_s=100.0, precision="fp16", attention="eager", recompute="full",
                  metric="megatron_hw_tflops",
                  assumed="1K tokens per GPU (micro batch 1 x 1024), activation recomputation, Megatron FLOP formula")

_FOUNDRY = ("MosaicML llm-foundry scripts/train/benchmarking/README.md (commit c90b9b3), MPT training benchmarks, "
            "PyTorch FSDP (comparable to ZeRO: FULL_SHARD = stage 3, SHARD_GRAD_OP = stage 2), flash attention, "
            "table ")
#: MPT sizes of llm-foundry's yamls: (d_model, n_layers, n_heads); GPT-2 block with nn.GELU, vocab 50368,
#: learned positions (the tables' parameter counts grow with the sequence length by seq x d_model)
_MPT = {"125m": (768, 12, 12), "350m": (1024, 24, 16), "760m": (1536, 24, 12), "1b": (2048, 24, 16),
        "3b": (2560, 32, 20), "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 48, 64), "70b": (8192, 80, 64)}


_FOUNDRY_TABLES = {"NVIDIA H100 80GB": "'H100 80GB BF16'",
                   "NVIDIA A100 80GB": "'A100 80GB with 1600 Gbps node-node interconnect (RoCE)'",
                   "NVIDIA A100 40GB": "'A100 40GB with 1600 Gbps node-node interconnect (RoCE)'"}


def _foundry(size: str, seq: int, gpus: int, gpu: str, mfu: float, micro: int, accum: int, ckpt: bool,
             shard: str = "FULL_SHARD", pure: bool = False) -> Measurement:
    """One row of llm-foundry's MPT benchmark tables (8 GPUs per node). MP mode DEFAULT: bf16 compute with fp32
    gradient reduction; PURE: bf16 throughout."""
    h100 = "H100" in gpu
    table = _FOUNDRY_TABLES[gpu]
    if h100 and gpus >= 128:
        table = "'H100 80GB BF16 (Large Scale, >= 128 GPUs)'"
    h, layers, heads = _MPT[size]
    assumed = "FSDP costed as the matching ZeRO stage, " + (
        "bf16 gradient reduction (MP mode PURE)" if pure else "fp32 gradient reduction (MP mode DEFAULT)")
    if h100 and gpus > 8:
        assumed += "; 3200 Gbit/s per H100 node (the table does not say)"
    return Measurement(
        f"foundry-mpt{size}-{gpu.split()[1].lower()}{'-40g' if '40GB' in gpu else ''}-{gpus}gpu-s{seq}",
        _FOUNDRY + f"{table}: MPT-{size}, seq {seq}, {gpus} GPUs, micro batch {micro} x {accum}, "
        f"{shard}, {'PURE' if pure else 'DEFAULT'}, activation checkpointing {ckpt}: MFU {mfu}%",
        gpt(h, layers, heads, vocab_size=50368, n_positions=seq, activation_function="gelu"), gpu=gpu,
        gpus_per_node=8, nodes=gpus // 8, zero={"stage": 3 if shard == "FULL_SHARD" else 2, "overlap_comm": True},
        micro_batch=micro, grad_accum=accum, seq_len=seq, metric="mfu", value=mfu, precision="bf16",
        attention="flash", recompute="full" if ckpt else "none",
        extra_config={} if pure else {"communication_data_type": "fp32"},
        inter_node_gbit_s=3200.0 if h100 else 1600.0, assumed=assumed)


_H100 = "NVIDIA H100 80GB"
_A100 = "NVIDIA A100 80GB"
_A100_40 = "NVIDIA A100 40GB"
FOUNDRY_ROWS: tuple[Measurement, ...] = (
    _foundry("7b", 2048, 8, _H100, 46.44, 6, 1, False),
    _foundry("13b", 2048, 8, _H100, 39.79, 2, 1, False),
    _foundry("30b", 2048, 8, _H100, 38.11, 3, 21, True),
    _foundry("7b", 8192, 8, _H100, 37.14, 8, 2, True),
    _foundry("3b", 4096, 8, _H100, 42.31, 5, 6, False),
    _foundry("1b", 2048, 8, _H100, 41.82, 14, 1, False),
    _foundry("760m", 2048, 8, _H100, 34.9, 24, 2, False),
    _foundry("70b", 2048, 64, _H100, 42.57, 8, 4, True),
    _foundry("7b", 2048, 8, _A100, 64.23, 6, 2, False),
    _foundry("13b", 2048, 8, _A100, 59.57, 2, 3, False),
    _foundry("30b", 2048, 8, _A100, 55.3, 3, 21, True),
    _foundry("7b", 8192, 8, _A100, 54.47, 8, 2, True),
    _foundry("3b", 2048, 8, _A100, 62.11, 10, 2, False),
    _foundry("1b", 2048, 8, _A100, 59.86, 14, 4, False),
    _foundry("125m", 2048, 8, _A100, 44.79, 40, 2, False),
    # multi-node: 1600 Gbit/s RoCE (A100) and the large-scale H100 table
    _foundry("70b", 2048, 64, _A100, 53.33, 8, 4, True, pure=True),
    _foundry("70b", 2048, 128, _A100_40, 48.91, 4, 1, True, pure=True),
    _foundry("30b", 2048, 32, _A100_40, 51.74, 4, 1, True, pure=True),
    _foundry("13b", 2048, 64, _A100_40, 52.04, 16, 1, True, pure=True),
    _foundry("7b", 2048, 128, _A100_40, 50.14, 18, 1, True, pure=True),
    _foundry("3b", 2048, 64, _A100_40, 55.94, 6, 1, False, pure=True),
    _foundry("350m", 2048, 128, _A100_40, 45.61, 18, 1, False, pure=True),
    _foundry("125m", 2048, 64, _A100_40, 39.27, 26, 1, False, pure=True),
    _foundry("13b", 2048, 512, _H100, 41.12, 16, 1, True),
    _foundry("3b", 2048, 256, _H100, 41.25, 8, 1, False, shard="SHARD_GRAD_OP"),
    _foundry("1b", 2048, 512, _H100, 36.65, 12, 1, False, shard="SHARD_GRAD_OP"),
)

#: The model table of DeepSpeedExamples benchmarks/deepcompile/plot_common.py (``model_info``), as it counts FLOPs
_DEEPCOMPILE_LLAMA3_70B = {"hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 32768, "layers": 80, "vocab": 32000}


def deepcompile_flops_per_sample(seq: int, checkpointing: bool) -> float:
    """FLOPs per sequence of Llama-3-70B as DeepCompile's ``throughput_calculator`` counts them (SwiGLU, top-1)."""
    c = _DEEPCOMPILE_LLAMA3_70B
    head_dim, gqa = c["hidden"] // c["heads"], c["heads"] // c["kv_heads"]
    fwd = c["layers"] * (1 + 2 // gqa + 1) * c["hidden"] ** 2 * seq
    fwd += c["layers"] * 2 * head_dim * c["heads"] * seq**2
    fwd += c["layers"] * 3 * c["ffn"] * c["hidden"] * seq
    fwd += c["vocab"] * c["hidden"] * seq
    return 2 * fwd * (4 if checkpointing else 3)


_DEEPCOMPILE = ("DeepCompile blog (DeepSpeed blogs/deepcompile/README.md; Tanaka et al., arXiv 2504.09983), "
                "'ZeRO3 + Eager' bars read off ")
_DEEPCOMPILE_HW = dict(model="meta-llama/Meta-Llama-3-70B", gpu="NVIDIA H100 80GB", gpus_per_node=8,
                       micro_batch=1, metric="deepcompile_tflops", precision="bf16", recompute="full",
                       assumed="settings of DeepSpeedExamples benchmarks/deepcompile run_bench*.sh (HF model, "
                               "activation checkpointing, SDPA); 3200 Gbit/s per node (not stated); values read off "
                               "the bar chart (+-3%)")


def _deepcompile(ident: str, figure: str, nodes: int, seq: int, accum: int, value: float, offload: bool) -> Measurement:
    zero: dict[str, Any] = {"stage": 3, "sub_group_size": 100_000_000}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    return Measurement(ident, _DEEPCOMPILE + f"{figure}: Llama-3-70B, {nodes * 8} H100, batch 1 x {accum}, seq {seq}"
                       f"{', optimizer offloaded to the CPU' if offload else ''}: about {value:g} TFLOPs/GPU "
                       "(their FLOP count)", nodes=nodes, zero=zero, seq_len=seq, grad_accum=accum, value=value,
                       **_DEEPCOMPILE_HW)


DEEPCOMPILE_ROWS: tuple[Measurement, ...] = (
    _deepcompile("deepcompile-llama3-70b-offload", "Figure 4", 2, 512, 1, 13.0, True),
    _deepcompile("deepcompile-llama3-70b-offload-s1024", "Figure 4", 2, 1024, 1, 24.0, True),
    _deepcompile("deepcompile-llama3-70b-offload-s2048", "Figure 4", 2, 2048, 1, 49.0, True),
    _deepcompile("deepcompile-llama3-70b-z3-acc1", "Figure 3", 4, 1024, 1, 243.0, False),
    _deepcompile("deepcompile-llama3-70b-z3-acc4", "Figure 3", 4, 1024, 4, 262.0, False),
    _deepcompile("deepcompile-llama3-70b-z3-acc16", "Figure 3", 4, 1024, 16, 262.0, False),
)

_HF_AUTOTUNE_ASSUMED = "V100 32GB (the README says V100); DeepSpeed's default config otherwise"
#: What a row with ``optimizer_step_skipped`` says about it.
SKIPPED_STEPS = ("the timed steps 3-5 were fp16 overflow skips (initial loss scale 2**32 in DeepSpeed until January "
                 "2023, PR #2663): forward, backward and the overflow check, no optimizer update or post-step "
                 "all-gather")
_HF_AUTOTUNE = ("DeepSpeedExamples training/autotuning/hf/{m}/README.md (HF run_clm, transformers 4.12, fp16, "
                "16 V100 in one node, block size 1024): ")
_HF_GPT2 = {"gpt2": gpt(768, 12, 12), "gpt2-medium": gpt(1024, 24, 16), "gpt2-xl": gpt(1600, 48, 25)}


def hf_autotune_row(name: str, stage: int, micro: int, value: float, what: str, *, model: dict[str, Any],
                    source: str, seq_len: int = 1024, precision: str = "fp16",
                    assumed: str = "", classifier_labels: int | None = None) -> Measurement:
    """A row of the DeepSpeedExamples HF autotuning READMEs (16 V100 in one node, DeepSpeed's default config)."""
    e2e = "e2e" in what
    skipped = not e2e and precision == "fp16"
    assumed = "; ".join(x for x in (_HF_AUTOTUNE_ASSUMED, assumed, SKIPPED_STEPS if skipped else "") if x)
    return Measurement(
        f"autotune-{name}-z{stage}-mbs{micro}{'-e2e' if e2e else ''}", source.format(m=name) + what, model,
        gpu="NVIDIA V100 32GB", gpus_per_node=16, nodes=1, zero={"stage": stage}, micro_batch=micro, seq_len=seq_len,
        metric="samples_per_s", value=value, precision=precision, attention="eager", assumed=assumed,
        classifier_labels=classifier_labels, optimizer_step_skipped=skipped)


def _hf_autotune(name: str, stage: int, micro: int, value: float, what: str) -> Measurement:
    """A GPT-2 row of the autotuning READMEs (same setup as the GPT2-large tutorial)."""
    model = {**_HF_GPT2[name], "vocab_size": 50257, "n_positions": 1024, "attn_pdrop": 0.1, "resid_pdrop": 0.1}
    assumed = ""
    if name in ("gpt2-medium", "gpt2-xl") and "timers" in what:
        assumed = ("block size 1024 although test_tune.sh's tune branch passes --block_size 512 (the README's "
                    "hand-tuned and autotuned gpt2-xl figures agree, 27.462 and 27.497 samples/s, only at one "
                    "block size: at 512 the predictions would halve)")
    return hf_autotune_row(name, stage, micro, value, what, model=model, source=_HF_AUTOTUNE, assumed=assumed)


HF_AUTOTUNE_ROWS: tuple[Measurement, ...] = (
    _hf_autotune("gpt2", 0, 11, 441.693, "autotuning summary z0_gas1_tmbspg11: 441.693 samples/s (timers)"),
    _hf_autotune("gpt2", 1, 15, 452.004, "autotuning summary z1_gas1_tmbspg15: 452.004 samples/s (timers)"),
    _hf_autotune("gpt2", 1, 8, 397.827, "throughput table 'HF + DS hand-tuned' z1 mbs 8: 397.827 samples/s (e2e)"),
    _hf_autotune("gpt2-medium", 0, 5, 167.688, "autotuning summary z0_gas1_tmbspg5: 167.688 samples/s (timers)"),
    _hf_autotune("gpt2-medium", 1, 6, 175.46, "autotuning summary z1_gas1_tmbspg6: 175.46 samples/s (timers)"),
    _hf_autotune("gpt2-medium", 2, 6, 161.619, "autotuning summary z2_gas1_tmbspg6: 161.619 samples/s (timers)"),
    _hf_autotune("gpt2-medium", 1, 4, 142.211, "throughput table 'HF + DS hand-tuned' z1 mbs 4: 142.211 samples/s "
                 "(e2e)"),
    _hf_autotune("gpt2-xl", 1, 1, 40.1749, "autotuning summary z1_gas1_tmbspg1: 40.1749 samples/s (timers)"),
    _hf_autotune("gpt2-xl", 2, 1, 33.0472, "autotuning summary z2_gas1_tmbspg1: 33.0472 samples/s (timers)"),
    _hf_autotune("gpt2-xl", 3, 1, 12.8604, "autotuning summary z3_gas1_tmbspg1: 12.8604 samples/s (timers)"),
    _hf_autotune("gpt2-xl", 1, 1, 27.462, "throughput table 'HF + DS hand-tuned' z1 mbs 1: 27.462 samples/s (e2e)"),
)

_ZEROPP_BLOG = ("DeepSpeed ZeRO++ blog (blogs/zeropp/README.md, 2023-06-22), bars of {fig} (384 V100 in 24 DGX-2 "
                "nodes, {gbit:g} Gbit/s per node, 18B model, {tokens}K tokens per GPU): {what} {value:g} TFLOPs/GPU")
_ZEROPP_ON = {"stage": 3, "zero_quantized_weights": True, "zero_quantized_gradients": True,
              "zero_hpz_partition_size": 16}


def _zeropp(fig: str, gbit: float, tokens: int, value: float, zeropp: bool) -> Measurement:
    """A bar of the ZeRO++ blog's Figures 6-8 (the 18B model of the existing rows, sequence 1024)."""
    what = "ZeRO++" if zeropp else "ZeRO-3 baseline"
    hw = {**_ZEROPP_HW, "micro_batch": tokens, "inter_node_gbit_s": gbit,
          "assumed": f"{tokens}K tokens per GPU as micro batch {tokens} x 1024; GPT-style 18B as 6144 hidden x 40 "
                     "layers; activation recomputation, Megatron FLOP formula; ZeRO++ = qwZ + qgZ + hpZ over the "
                     "16 GPUs of a node"}
    return Measurement(f"zeropp-18b-{'zeropp' if zeropp else 'zero3'}-{gbit:g}g-{tokens}k",
                       _ZEROPP_BLOG.format(fig=fig, gbit=gbit, tokens=tokens, what=what, value=value),
                       zero=_ZEROPP_ON if zeropp else {"stage": 3}, value=value, **hw)


ZEROPP_ROWS: tuple[Measurement, ...] = tuple(
    _zeropp(fig, gbit, tokens, value, zeropp)
    for fig, gbit, tokens, base, plus in (("Figure 6", 400.0, 1, 25.0, 35.0), ("Figure 6", 400.0, 2, 40.0, 53.0),
                                          ("Figure 7", 100.0, 2, 26.0, 46.0), ("Figure 8", 200.0, 2, 37.0, 50.0),
                                          ("Figure 8", 800.0, 2, 47.0, 54.0))
    for zeropp, value in ((False, base), (True, plus))
)

MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement("azure-175b-256gpu", _AZURE + "Fig. 5a: 204.49 TFLOPs/GPU, 175B, 256 A100, micro batch 32, seq 512",
                gpt(12288, 96, 96), nodes=32, zero=_AZURE_ZERO, micro_batch=32, seq_len=512, value=204.49,
                assumed="ZeRO-3 with the optimizer on the CPU (the blog: optimizer states in main memory)",
                **_AZURE_HW),
    Measurement("azure-530b-1024gpu", _AZURE + "Fig. 6: up to 171.37 TFLOPs/GPU, 530B, 1024 A100, seq 1024",
                gpt(20480, 105, 128), nodes=128, zero=_AZURE_ZERO, micro_batch=8, seq_len=1024, value=171.37,
                assumed="the peak is the largest micro batch shown (8); optimizer on the CPU", **_AZURE_HW),
    Measurement("azure-1t-1024gpu", _AZURE + "Fig. 7: 165.36 TFLOPs/GPU, 1T, 1024 A100, micro batch 8, seq 1024",
                gpt(25600, 128, 160), nodes=128, zero=_AZURE_ZERO, micro_batch=8, seq_len=1024, value=165.36,
                assumed="optimizer on the CPU", **_AZURE_HW),
    Measurement("azure-2t-1024gpu", _AZURE + "text: 157 TFLOPs/GPU, 2T, 1024 A100, batch 8 per GPU, seq 1024",
                gpt(32768, 160, 128), nodes=128, zero=_AZURE_ZERO, micro_batch=8, seq_len=1024, value=157.0,
                assumed="optimizer on the CPU", **_AZURE_HW),
    Measurement("zeropp-18b-zero3-100g", _ZEROPP + " (ZeRO-3: about 14 TFLOPs/GPU)", zero={"stage": 3},
                value=14.0, **_ZEROPP_HW),
    Measurement("zeropp-18b-zeropp-100g", _ZEROPP + " (ZeRO++: about 31 TFLOPs/GPU)",
                zero={"stage": 3, "zero_quantized_weights": True, "zero_quantized_gradients": True,
                      "zero_hpz_partition_size": 16}, value=31.0, **_ZEROPP_HW),
    Measurement("autotune-gpt2l-z0-mbs2", _AUTOTUNE + "; autotuning summary z0_gas1_tmbspg2: 59.0229 samples/s "
                "(forward+backward+step timers)", zero={"stage": 0}, micro_batch=2, value=59.0229,
                optimizer_step_skipped=True, assumed=SKIPPED_STEPS, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs3", _AUTOTUNE + "; autotuning summary z1_gas1_tmbspg3: 87.3017 samples/s",
                zero={"stage": 1}, micro_batch=3, value=87.3017, optimizer_step_skipped=True, assumed=SKIPPED_STEPS,
                **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z2-mbs3", _AUTOTUNE + "; autotuning summary z2_gas1_tmbspg3: 77.8338 samples/s",
                zero={"stage": 2}, micro_batch=3, value=77.8338, optimizer_step_skipped=True, assumed=SKIPPED_STEPS,
                **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs2-e2e", _AUTOTUNE + "; throughput table 'HF + DS hand-tuned': 56.797 samples/s "
                "(end to end)", zero={"stage": 1}, micro_batch=2, value=56.797, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs3-e2e", _AUTOTUNE + "; throughput table 'HF + DS autotuning': 69.061 samples/s "
                "(end to end)", zero={"stage": 1}, micro_batch=3, value=69.061, **_AUTOTUNE_HW),
    Measurement("colossalai-4342-llama7b-z3", "https://github.com/hpcaitech/ColossalAI/issues/4342: DeepSpeed ZeRO-3, "
                "LLaMA-7B, 8 x A800 80GB, batch 8 per GPU, seq 512: 64.101 samples/s; the same run in "
                "https://github.com/deepspeedai/DeepSpeed/issues/4036 (stanford_alpaca train.py): 'I set batch size 8 "
                "and gradient checkpoint is true, the throughout is 64.101samples/sec'",
                "meta-llama/Llama-2-7b-hf", gpu="NVIDIA A100 80GB", gpus_per_node=8, nodes=1,
                zero={"stage": 3}, micro_batch=8, seq_len=512, metric="samples_per_s", value=64.101,
                precision="bf16", intra_node_gbyte_s=200.0, recompute="full",
                assumed="A800 = A100 with 400 GB/s NVLink (200 per direction); SDPA attention; gradient checkpointing "
                        "of every layer (the HF flag); 512 tokens, while alpaca's collator pads each batch to its "
                        "longest sample up to 512, so the real batches were shorter and the prediction an upper "
                        "bound"),
    *ZEROPP_ROWS,
    *DEEPCOMPILE_ROWS,
    *HF_AUTOTUNE_ROWS,
    *FOUNDRY_ROWS,
)
