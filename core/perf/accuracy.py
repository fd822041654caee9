"""Predictions against the published measurements of ``core.perf.measurements``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import pandas as pd

from core.batch import effective_world_size
from core.effective import effective
from core.memory.estimate import Shape
from core.models import describe, get_spec
from core.models.arch import ModelSpec
from core.perf.constants import UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM
from core.perf.hardware import Cluster, gpu_perf
from core.perf.measurements import MEASUREMENTS, Measurement, deepcompile_flops_per_sample
from core.perf.measurements_docs import NEW_ROWS
from core.perf.measurements_fourth import FOURTH_ROWS
from core.perf.measurements_third import THIRD_ROWS
from core.perf.predict import predict

#: Every published row: the first round's, the held-out second round's (``measurements_docs``) and the held-out
#: third and fourth rounds' (``measurements_third``, ``measurements_fourth``: each collected by a session that saw no
#: prediction, and evaluated with the model as it was).
ALL_ROWS: tuple[Measurement, ...] = (*MEASUREMENTS, *NEW_ROWS, *THIRD_ROWS, *FOURTH_ROWS)

#: Groups for the accuracy report: (name, id prefixes; "e2e" matches the end-to-end rows), first match wins.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("4th round: DeepSpeed docs' Megatron GPT-2 table, ZeRO-1 vs Megatron (held out)", ("dsdocs-megatron-",)),
    ("4th round: ZeRO-Offload paper, 10B on one V100 (held out)", ("zero-offload-",)),
    ("4th round: ZeRO-Infinity paper, 10T/20T, NVMe offload, 512 V100 (held out)", ("zero-infinity-",)),
    ("4th round: DeepSpeed ZeRO-3 Offload post, 1T on 512 V100 (held out)", ("dsblog-zero3offload-",)),
    ("4th round: DeepSpeed core-binding blog, ZeRO-2 +- CPU Adam, 2 A100 (held out)", ("dsblog-corebind-",)),
    ("4th round: DeepSpeed BERT post, transformer kernel, 1 V100 (held out)", ("dsblog-bert-",)),
    ("3rd round: DeepSpeedExamples bf16 master weights, ZeRO-3, 4 H100 (held out)", ("dsx-bf16mw-",)),
    ("3rd round: BigScience 20B, Megatron TP 8, 8 A100 (held out)", ("bigscience-",)),
    ("3rd round: HF blog Ulysses SP, Qwen3-4B, ZeRO-3 + CPU Adam, TRL loop (held out)", ("hfblog-ulysses-",)),
    ("DeepSpeed 0.5.7 ZeRO-3 (blocking per-module fetch; not the ZeRO-3 modelled)", ("autotune-gpt2-xl-z3",)),
    ("Megatron-DeepSpeed long sequences, Triton FlashAttention, A100 (new)", ("mds-longseq-",)),
    ("A100/H100 DeepSpeed (Azure, ColossalAI, DeepCompile, HF blog, Megatron-DS)",
     ("azure-", "colossalai-", "deepcompile-", "hfblog-", "mds-")),
    ("A100/H100 llm-foundry FSDP", ("foundry-",)),
    ("ZeRO++ 18B, 384 V100 (blog/paper)", ("zeropp-18b-",)),
    ("ZeRO++ 49B-138B, 384 V100 (blog; new)", ("zeropp-",)),
    ("DeepSpeed tutorials' training logs, V100 (new)", ("tutorial-",)),
    ("Megatron-LM 2019, DGX-2H V100 (pre-v1.0 kernels; new)", ("megatron2019-",)),
    ("Megatron-LM v1.0 on a DGX-2H V100 (new)", ("megatronv1-",)),
    ("HF autotuning BERT/DistilBERT fp32, 16 V100 (new)", ("autotune-bert", "autotune-distilbert")),
    ("HF autotuning GPT-2 end to end (HF Trainer loop)", ("e2e",)),
    ("HF autotuning GPT-2, DeepSpeed's timers", ("autotune-",)),
)


def group_of(ident: str) -> str:
    """The report group of a measurement id."""
    for name, keys in GROUPS:
        if any(ident.startswith(k) or (k == "e2e" and ident.endswith("-e2e")) for k in keys):
            return name
    return "other"


def data_parallel(m: Measurement) -> int:
    """Model replicas: the GPUs over the tensor-parallel degree (``tensor_parallel.autotp_size``) and the
    sequence-parallel degree (``sequence_parallel_size``: its ranks share one sample), as DeepSpeed counts them."""
    replicas = effective_world_size(dict(m.extra_config), m.gpus_per_node * m.nodes)
    return int(replicas) // max(1, effective(m.extra_config).autotp_size)


def measurement_config(m: Measurement) -> dict[str, Any]:
    """The ds_config a measurement ran with (as far as its source says)."""
    # DeepSpeed's train_batch_size counts every GPU, tensor-parallel ranks included (no mpu with AutoTP), while
    # the samples per step are micro x accumulation x data_parallel
    cfg: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": m.micro_batch,
        "gradient_accumulation_steps": m.grad_accum,
        "train_batch_size": int(m.micro_batch * m.grad_accum
                                * effective_world_size(dict(m.extra_config), m.gpus_per_node * m.nodes)),
        "zero_optimization": dict(m.zero),
        **m.extra_config,
    }
    if m.precision in ("fp16", "bf16"):  # a section in extra_config (e.g. bf16 master weights) keeps its keys
        cfg[m.precision] = {**m.extra_config.get(m.precision, {}), "enabled": True}
    return cfg


def measurement_model(m: Measurement) -> ModelSpec:
    """The model a measurement trained; a sequence classifier's head has its labels as outputs instead of the
    vocabulary (the embedding table keeps its parameters)."""
    spec = get_spec(m.model) if isinstance(m.model, str) else describe(m.model, name=m.id)
    return replace(spec, vocab_size=m.classifier_labels) if m.classifier_labels else spec


def measured_step_seconds(m: Measurement, spec: ModelSpec, model_flops_per_token: float) -> float:
    """The measurement converted to seconds per optimizer step (see the module docstring of measurements)."""
    gpus = m.gpus_per_node * m.nodes
    batch = m.micro_batch * m.grad_accum * data_parallel(m)
    if m.metric == "step_seconds":
        return m.value
    if m.metric == "samples_per_s":
        return batch / m.value
    if m.metric == "megatron_hw_tflops":
        s, h, layers, v = m.seq_len, spec.hidden_size, spec.num_layers, spec.vocab_size
        flops = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
        return flops / (m.value * 1e12 * gpus)
    if m.metric == "model_tflops":
        return model_flops_per_token * batch * m.seq_len / (m.value * 1e12 * gpus)
    if m.metric == "deepcompile_tflops":
        flops = batch * deepcompile_flops_per_sample(m.seq_len, m.recompute == "full")
        return flops / (m.value * 1e12 * gpus)
    if m.metric == "mfu":
        peak = gpu_perf(m.gpu).peak_tflops
        return model_flops_per_token * batch * m.seq_len / (m.value / 100 * peak * 1e12 * gpus)
    raise ValueError(f"unknown metric {m.metric!r}")


#: What still runs of a step that skips its update on an fp16 overflow (``Measurement.optimizer_step_skipped``):
#: DeepSpeed's ZeRO optimizers and its unfused fp16 optimizer check for the overflow, then zero the gradients and
#: return before the update and the post-step all-gather (stage_1_and_2.py / unfused_optimizer.py step). The
#: unfused optimizer's check is 10 of its ``UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM`` and one of its two host
#: synchronisations per tensor; breakdown items not named here run as predicted.
SKIPPED_STEP_PARTS: dict[str, float] = {
    "optimizer step (GPU)": 0.0,
    "parameter all-gather after the step": 0.0,
    "optimizer step (GPU, DeepSpeed's unfused fp16 optimizer)": 10 / UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM,
    "unfused fp16 optimizer loop over parameter tensors (host)": 0.5,
}


def skipped_step_seconds(breakdown: dict[str, float]) -> float:
    """The seconds of a predicted step whose update an fp16 overflow skipped (see ``SKIPPED_STEP_PARTS``)."""
    return sum(seconds * SKIPPED_STEP_PARTS.get(name, 1.0) for name, seconds in breakdown.items())


def evaluate(rows: Iterable[Measurement] = MEASUREMENTS, cluster_kwargs: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per measurement: predicted and measured step seconds, their ratio and the bottleneck."""
    out = []
    for m in rows:
        spec = measurement_model(m)
        cluster = Cluster(m.gpu, m.gpus_per_node, m.nodes, inter_node_gbit_s=m.inter_node_gbit_s,
                          intra_node_gbyte_s=m.intra_node_gbyte_s, **(cluster_kwargs or {}))
        est = predict(measurement_config(m), spec, cluster, Shape(m.micro_batch, m.seq_len, m.attention, m.recompute))
        measured = measured_step_seconds(m, spec, est.model_flops_per_token)
        predicted = skipped_step_seconds(est.breakdown) if m.optimizer_step_skipped else est.step_seconds
        ratio = predicted / measured
        out.append({
            "id": m.id,
            "predicted_step_s": predicted,
            "measured_step_s": measured,
            "ratio": ratio,
            "error": abs(ratio - 1),
            "off_by": math.exp(abs(math.log(ratio))),
            "predicted_tflops": est.tflops_per_gpu,
            "bottleneck": est.bottleneck.split(";")[0],
            "source": m.source,
            "group": group_of(m.id),
        })
    return pd.DataFrame(out)


def group_table(table: pd.DataFrame) -> pd.DataFrame:
    """Rows, median error, worst factor and rows beyond 1.5x per group (and all rows)."""
    out = []
    for name, part in [("all", table), *table.groupby("group", sort=False)]:
        out.append({"group": name, "rows": len(part), "median_error": part["error"].median(),
                    "worst": part["off_by"].max(), "beyond_1.5x": int((part["off_by"] > 1.5).sum())})
    return pd.DataFrame(out)
