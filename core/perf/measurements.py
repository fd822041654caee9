"""Published DeepSpeed training measurements the planner is checked against (``scripts/perf_accuracy.py``).

Every row cites its source. Each source counts FLOPs its own way, so every row is normalised to the one
quantity that needs no convention, the wall-clock seconds of one optimizer step:

- ``megatron_hw_tflops``: TFLOPs per GPU computed with Megatron's formula with activation recomputation,
  96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) FLOPs per step (the formula the Azure blog quotes);
  step seconds = that / (TFLOPs x GPUs).
- ``model_tflops``: TFLOPs per GPU counted as 6N + attention per token without recomputation (the planner's
  own ``tflops_per_gpu``); step seconds = model FLOPs per step / (TFLOPs x GPUs).
- ``samples_per_s``: step seconds = global batch / samples per second.

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
    metric: str  # "megatron_hw_tflops" | "model_tflops" | "samples_per_s"
    value: float
    grad_accum: int = 1
    precision: str = "fp16"
    attention: str = "sdpa"
    recompute: str = "none"
    inter_node_gbit_s: float | None = None
    intra_node_gbyte_s: float | None = None
    assumed: str = ""
    extra_config: dict[str, Any] = field(default_factory=dict)


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
                "(forward+backward+step timers)", zero={"stage": 0}, micro_batch=2, value=59.0229, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs3", _AUTOTUNE + "; autotuning summary z1_gas1_tmbspg3: 87.3017 samples/s",
                zero={"stage": 1}, micro_batch=3, value=87.3017, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z2-mbs3", _AUTOTUNE + "; autotuning summary z2_gas1_tmbspg3: 77.8338 samples/s",
                zero={"stage": 2}, micro_batch=3, value=77.8338, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs2-e2e", _AUTOTUNE + "; throughput table 'HF + DS hand-tuned': 56.797 samples/s "
                "(end to end)", zero={"stage": 1}, micro_batch=2, value=56.797, **_AUTOTUNE_HW),
    Measurement("autotune-gpt2l-z1-mbs3-e2e", _AUTOTUNE + "; throughput table 'HF + DS autotuning': 69.061 samples/s "
                "(end to end)", zero={"stage": 1}, micro_batch=3, value=69.061, **_AUTOTUNE_HW),
    Measurement("colossalai-4342-llama7b-z3", "https://github.com/hpcaitech/ColossalAI/issues/4342: DeepSpeed ZeRO-3, "
                "LLaMA-7B, 8 x A800 80GB, batch 8 per GPU, seq 512: 64.101 samples/s",
                "meta-llama/Llama-2-7b-hf", gpu="NVIDIA A100 80GB", gpus_per_node=8, nodes=1,
                zero={"stage": 3}, micro_batch=8, seq_len=512, metric="samples_per_s", value=64.101,
                precision="bf16", intra_node_gbyte_s=200.0,
                assumed="A800 = A100 with 400 GB/s NVLink (200 per direction); SDPA attention; no recomputation"),
    Measurement("deepcompile-llama3-70b-offload", "DeepCompile (Tanaka et al., 2025, arXiv 2504.09983) offload "
                "baseline as quoted in issue 14: Llama-3-70B, ZeRO-3 with the optimizer on the CPU, 16 H100, "
                "seq 512: about 13 TFLOPs/GPU", "meta-llama/Meta-Llama-3-70B", gpu="NVIDIA H100 80GB",
                gpus_per_node=8, nodes=2, zero={"stage": 3, "offload_optimizer": {"device": "cpu"}}, micro_batch=1,
                seq_len=512, metric="model_tflops", value=13.0, precision="bf16",
                assumed="micro batch 1, no gradient accumulation, SDPA attention, 8x400G network"),
)
