"""Published DeepSpeed measurements, fourth round (held out: collected by a helper session that never saw a
prediction, and evaluated with the model untouched).

Same conventions as ``core.perf.measurements`` (every row normalised to seconds per optimizer step). Sources, none
of them used by the first three rounds:

- DeepSpeed's Megatron-LM GPT-2 tutorial of February-May 2020 (``docs/tutorials/MegatronGPT2Tutorial.md``, then
  ``docs/_tutorials/megatron.md``; the tables were removed with the ZeRO-2 release): samples per second of Megatron-LM
  alone and of Megatron-LM with ZeRO stage 1, 1.5B-20B, 64 V100 on 4 DGX-2 nodes, with model parallelism, data
  parallelism and batch printed per row (the ZeRO paper era; the ZeRO paper's own appendix tables were not at hand);
- the ZeRO-Offload paper (Ren et al., ATC'21, arXiv 2101.06840): 40 TFLOPS for the 10B model on one V100;
- the ZeRO-Infinity paper (Rajbhandari et al., SC'21, arXiv 2104.07857): 43 and 34 TFLOPS per GPU for the 10T and
  20T models on 512 V100 with parameters and optimizer states on NVMe (Table 1 gives their shapes and batches);
- DeepSpeed's ZeRO-3 Offload post (``docs/_posts/2021-03-08-zero3-offload.md``, Figure 2's printed bar labels):
  48.9 TFLOPS per GPU for the 1T model on 512 V100;
- DeepSpeed's blog ``blogs/zenflow-corebinding/README.md`` (2025): step times of Qwen2.5-3B / 1.5B fine-tuning on two
  A100 40GB with ZeRO-2, with and without the optimizer on the CPU (config files printed in the post);
- DeepSpeed's BERT post (``docs/_posts/2020-05-28-fastest-bert-training.md``): BERT-Large pre-training on one V100
  with DeepSpeed's transformer kernel, 272 and 52 samples per second at sequence 128 and 512.

Every value is the source's own printed number (text, a table, or a chart's printed data label; nothing read off an
axis). The DeepSpeed team's V100 TFLOPS figures (ZeRO-Offload, ZeRO-Infinity, ZeRO-3 Offload) are converted to
``step_seconds`` with the convention the ZeRO-Infinity paper states (Sec. 4.1, Eq. 7: computation per iteration
= 2 x 4 x batch x sequence x parameters, forward + backward + recomputation) and DeepSpeedExamples'
``Megatron-LM-v1.1.5-ZeRO3/megatron/training.py`` ``flops_calculator`` computes (parameters x batch x sequence x 2 x 4),
the parameters counted as Megatron's GPT-2 has them (``_megatron_params``).
"""

from __future__ import annotations

import math
from typing import Any

from core.perf.measurements import Measurement, gpt

_V100 = "NVIDIA V100 32GB"
_A100_40 = "NVIDIA A100 40GB"
#: GPT-2 BPE tokenizer entries; Megatron pads the vocabulary to a multiple of 128 x model-parallel degree
_GPT2_TOKENS = 50257


def _megatron_vocab(mp: int) -> int:
    """Megatron-LM's padded vocabulary (``--make-vocab-size-divisible-by 128`` times the model-parallel size)."""
    multiple = 128 * mp
    return math.ceil(_GPT2_TOKENS / multiple) * multiple


def _megatron_gpt(hidden: int, layers: int, heads: int, mp: int) -> dict[str, Any]:
    """Megatron-LM's GPT-2 (learned positions over 1024 tokens, GELU, dropout 0.1 on attention and hidden states)."""
    return gpt(hidden, layers, heads, vocab_size=_megatron_vocab(mp), n_positions=1024, activation_function="gelu",
               attn_pdrop=0.1, resid_pdrop=0.1)


def _megatron_params(hidden: int, layers: int, vocab: int, seq: int) -> int:
    """Parameters of Megatron's GPT-2: 12h^2 + 13h per layer, the (tied) token and position embeddings, final LN."""
    return layers * (12 * hidden**2 + 13 * hidden) + (vocab + seq) * hidden + 2 * hidden


def _ds_tflops_step_seconds(hidden: int, layers: int, mp: int, samples: int, tflops: float, gpus: int,
                            seq: int = 1024) -> float:
    """Seconds per step from a DeepSpeed-team TFLOPS figure: 8 x parameters x tokens / (TFLOPS x GPUs)."""
    params = _megatron_params(hidden, layers, _megatron_vocab(mp), seq)
    return 8 * params * samples * seq / (tflops * 1e12 * gpus)


# --- DeepSpeed's Megatron-LM GPT-2 tutorial, 'Performance Improvements with Configuration Details' (2020) --------
_TUTORIAL = ("DeepSpeed docs/_tutorials/megatron.md (commit b84a1fa41, 2020-03; first docs/tutorials/"
             "MegatronGPT2Tutorial.md, commit 073da7295, 2020-02-06; the tables were removed with ZeRO-2 in f2ac7eafd, "
             "2020-05-19), section 'Performance Improvements with Configuration Details': 'compares DeepSpeed with "
             "Megatron on a 64 GPU cluster with 4 DGX-2 nodes ... the smallest model parallelism degree and the "
             "largest batch size that can be used to train these models without running out of memory', table ")
_TUTORIAL_ASSUMED = (
    "batch size read as the global batch (table: MP x DP = 64 GPUs; batch / DP is the per-replica micro batch that "
    "DeepSpeed's own perf tests of the same date use, tests/model/Megatron_GPT2/run_perf_test.py and "
    "run_perf_baseline.py at 073da7295: bs {micro} with mp {mp}), gradient accumulation 1; sequence 1024, "
    "--checkpoint-activations --checkpoint-num-layers 1, fp16 (tests/model/Megatron_GPT2/ds_gpt2_test.sh); "
    "DGX-2 V100 32GB with NVSwitch, 800 Gbit/s per node (the tutorial's description of the DGX-2 cluster); "
    "Megatron's tensor slicing as autotp within a node; Megatron-LM of 2019 (DeepSpeedExamples/Megatron-LM): "
    "non-fused GELU and softmax (eager attention), vocabulary padded to 128 x MP; {zero}")
_ZERO1_NOTE = ("DeepSpeed rows: \"zero_optimization\": true of February 2020 = ZeRO stage 1, implemented then with a "
               "full all-reduce of the gradients and \"disable_allgather\": true (ds_config_perf_bs*.json), not the "
               "reduce-scatter of the March 2020 post 2020-03-17-reduce-scatter.md; DeepSpeed's fused Adam")
_BASELINE_NOTE = "Megatron-LM alone: its own data-parallel all-reduce (ZeRO stage 0) and apex fused Adam"


def _tutorial(size: str, deepspeed: bool, mp: int, dp: int, batch: int, layers: int, hidden: int, heads: int,
              samples_per_s: float) -> Measurement:
    micro = batch // dp
    extra: dict[str, Any] = {"optimizer": {"type": "Adam"}}
    if mp > 1:
        extra["tensor_parallel"] = {"autotp_size": mp}
    table = "b) 'Megatron-LM GPT2 with DeepSpeed'" if deepspeed else "a) 'Megatron-LM GPT2 Baseline'"
    return Measurement(
        f"dsdocs-megatron-{size.lower()}-{'zero1' if deepspeed else 'baseline'}-mp{mp}",
        _TUTORIAL + f"{table}, row '{size} | MP {mp} | DP {dp} | #gpus 64 | batch size {batch} | layers {layers} | "
        f"hidden size {hidden} | attention heads {heads} | samples / sec {samples_per_s}'",
        _megatron_gpt(hidden, layers, heads, mp), gpu=_V100, gpus_per_node=16, nodes=4,
        zero={"stage": 1} if deepspeed else {"stage": 0}, micro_batch=micro, seq_len=1024,
        metric="samples_per_s", value=samples_per_s, precision="fp16", attention="eager", recompute="full",
        inter_node_gbit_s=800.0, extra_config=extra,
        assumed=_TUTORIAL_ASSUMED.format(micro=micro, mp=mp, zero=_ZERO1_NOTE if deepspeed else _BASELINE_NOTE))


TUTORIAL_TABLE_ROWS: tuple[Measurement, ...] = (
    _tutorial("1.5B", False, 2, 32, 512, 48, 1600, 16, 128.56),
    _tutorial("4B", False, 4, 16, 128, 64, 2304, 16, 49.36),
    _tutorial("8B", False, 4, 16, 128, 72, 3072, 24, 24.57),
    _tutorial("20B", False, 16, 4, 16, 111, 3808, 32, 3.42),
    _tutorial("1.5B", True, 1, 64, 2048, 48, 1600, 16, 151.35),
    _tutorial("4B", True, 1, 64, 512, 64, 2304, 16, 75.13),
    _tutorial("8B", True, 2, 32, 512, 72, 3072, 24, 43.52),
    _tutorial("20B", True, 4, 16, 128, 111, 3808, 32, 12.65),
)

# --- ZeRO-Offload paper (arXiv 2101.06840): the 10B model on one V100 ----------------------------------------------
_OFFLOAD_10B_SAMPLES = 10 * 51  # micro batch 10 (Table 3) x 51 accumulation steps ~ the batch of 512
ZERO_OFFLOAD_ROWS: tuple[Measurement, ...] = (
    Measurement(
        "zero-offload-gpt-10b-1gpu",
        "ZeRO-Offload (Ren et al., ATC'21, arXiv 2101.06840), abstract: 'ZeRO-Offload can achieve 40 TFlops/GPU on a "
        "single NVIDIA V100 GPU for 10B parameter model compared to 30TF using PyTorch alone for a 1.4B parameter "
        "model'; Table 3 'Model configuration in evaluation' row '10,11 billion | batch size per GPU 10,8 | MP setting "
        "in ZeRO-Offload 1 | # layer 50,55 | hidden size 4096'; Figure 8 'The training throughput with PyTorch, L2L, "
        "SwapAdvisor and ZeRO-Offload on a single GPU with a batch size of 512'; Table 2: DGX-2 node, V100 32GB, "
        "2 Xeon Platinum 8168, 1.5TB DDR4, 'bidirectional 32 GBps PCIe'. 40 TFLOPS -> "
        f"{_ds_tflops_step_seconds(4096, 50, 1, _OFFLOAD_10B_SAMPLES, 40.0, 1):.1f} s per step of "
        f"{_OFFLOAD_10B_SAMPLES} sequences",
        _megatron_gpt(4096, 50, 32, 1), gpu=_V100, gpus_per_node=1, nodes=1,
        zero={"stage": 2, "offload_optimizer": {"device": "cpu"}}, micro_batch=10, grad_accum=51, seq_len=1024,
        metric="step_seconds", value=_ds_tflops_step_seconds(4096, 50, 1, _OFFLOAD_10B_SAMPLES, 40.0, 1),
        precision="fp16", attention="eager", recompute="full",
        assumed="Sec. 6.2.2 (single GPU: the same batch of 512 with the micro batch of Table 3 and gradient "
                "accumulation, delayed parameter update disabled; wording from the Chinese translation in "
                "Elvin-Ma/ai_papers zero/zero-offload.md) read as micro batch 10 x 51 steps = 510 sequences; "
                "32 heads and sequence 1024 of DeepSpeedExamples' ZeRO-Offload 10B script "
                "(Megatron-LM/scripts/ds_zero-offload_10B_pretrain_gpt2_model_parallel.sh, 2020-09), which also "
                "sets --checkpoint-activations (the paper: activation checkpointing) and offloads the checkpoints "
                "to the CPU (cpu_checkpointing; not set here: unknown for the paper's runs); the paper's TFLOPS "
                "counted as 8 x parameters x tokens (ZeRO-Infinity's Eq. 7; Megatron's formula would count 3.5% "
                "more); Megatron-LM GPT-2 of 2020, eager attention; the 1.4B PyTorch figure is not used (its shape "
                "is not in Table 3 and the introduction calls it 1.2B)"),
)

# --- ZeRO-Infinity paper (arXiv 2104.07857): 10T and 20T on 512 V100, NVMe offload --------------------------------
_INFINITY = ("ZeRO-Infinity (Rajbhandari et al., SC'21, arXiv 2104.07857), Sec. 8.1: 512 V100 SXM3 32GB in 32 DGX-2 "
             "nodes, 800 Gbps inter-node, GPT models with the sequence length fixed at 1024; Table 1 'Experiment "
             "configurations' row '32 nodes | 5, 10, 20 T | hidden 48K, 64K, 88K | layers 174, 200, 205 | "
             "batch/GPU 3, 2, 1.25 | mp 4, 4, 8 | fp16 param NVMe | Opt State NVMe' (K = 1024); Sec. 8.2 'Model "
             "speed': the throughput drops from 10T (43 TFlops/GPU) to 20T (34 TFlops/GPU), 'due to the very small "
             "batch size per GPU (Table 1), a result of limited CPU memory to store activation checkpoints' "
             "(Sec. 8.2 wording from the Chinese translation in Elvin-Ma/ai_papers zero/zero-infinity.md)")
_INFINITY_ZERO = {
    "stage": 3, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 90_000_000,
    "stage3_prefetch_bucket_size": 50_000_000, "stage3_max_live_parameters": 1_000_000_000,
    "stage3_max_reuse_distance": 1_000_000_000, "sub_group_size": 100_000_000,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme_data", "buffer_count": 4, "pin_memory": True},
    "offload_param": {"device": "nvme", "nvme_path": "/nvme_data", "max_in_cpu": 1, "pin_memory": True},
}
#: DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3/examples/ds_pretrain_gpt2-zero3.sh (the ZeRO-Infinity examples commit
#: bdf8e59a, 2021-04-18): --partition-activations --checkpoint-in-cpu --contigious-checkpointing, 1 layer per checkpoint
_INFINITY_CKPT = {"activation_checkpointing": {"partition_activations": True, "cpu_checkpointing": True,
                                               "contiguous_memory_optimization": True}}
_INFINITY_ASSUMED = (
    "Table 1's batch/GPU read as global batch / GPUs, so the per-replica micro batch is batch/GPU x mp ({micro}; the "
    "20T row's 1.25 admits no other reading); {heads} heads (128 wide: Table 1 gives no heads); Megatron's tensor "
    "slicing (mp) as autotp within a DGX-2; the zero_optimization section and the activation-checkpointing flags "
    "of DeepSpeedExamples' ZeRO-Infinity example (Megatron-LM-v1.1.5-ZeRO3 ds_zero_stage_infinity_config.json and "
    "ds_pretrain_gpt2-zero3.sh, commit bdf8e59a), gradient accumulation 1; NVMe bandwidth of a DGX-2 not stated "
    "(the cluster default); vocabulary padded to 128 x mp; TFLOPS counted as the paper's Eq. 7, "
    "8 x parameters x tokens")


def _infinity(size: str, hidden: int, layers: int, batch_per_gpu: float, mp: int, tflops: float) -> Measurement:
    micro = round(batch_per_gpu * mp)
    heads = hidden // 128
    samples = micro * 512 // mp
    seconds = _ds_tflops_step_seconds(hidden, layers, mp, samples, tflops, 512)
    return Measurement(
        f"zero-infinity-gpt-{size.lower()}-nvme-512gpu",
        _INFINITY + f"; the {size} model: {tflops:g} TFlops/GPU -> {seconds:.1f} s per step of {samples} sequences",
        _megatron_gpt(hidden, layers, heads, mp), gpu=_V100, gpus_per_node=16, nodes=32, zero=_INFINITY_ZERO,
        micro_batch=micro, seq_len=1024, metric="step_seconds", value=seconds, precision="fp16", attention="eager",
        recompute="full", inter_node_gbit_s=800.0,
        extra_config={"optimizer": {"type": "Adam"}, "tensor_parallel": {"autotp_size": mp}, **_INFINITY_CKPT},
        assumed=_INFINITY_ASSUMED.format(micro=micro, heads=heads))


ZERO_INFINITY_ROWS: tuple[Measurement, ...] = (
    _infinity("10T", 64 * 1024, 200, 2, 4, 43.0),
    _infinity("20T", 88 * 1024, 205, 1.25, 8, 34.0),
)

# --- DeepSpeed ZeRO-3 Offload post (2021-03-08): the 1T model on 512 V100 ------------------------------------------
_Z3O_SAMPLES = 20 * 512 // 4
_Z3O_SECONDS = _ds_tflops_step_seconds(25 * 1024, 128, 4, _Z3O_SAMPLES, 48.9, 512)
ZERO3_OFFLOAD_ROWS: tuple[Measurement, ...] = (
    Measurement(
        "dsblog-zero3offload-gpt-1t-512gpu",
        "DeepSpeed docs/_posts/2021-03-08-zero3-offload.md: 'With 1 Trillion parameters, ZeRO-3 Offload sustains 25 "
        "PetaFlops in compute performance on 512 NVIDIA V100 GPUs, achieving 49 TFlops/GPU'; Figure 2 (docs/assets/"
        "images/zero3-offload-512-v100.png, 'ZeRO-3 Offload: Multi-billion and Trillion Parameter Model throughput on "
        "512 V100 GPUs') printed bar label 48.9 TFlops/GPU at 1000B ('32 DGX2 nodes comprising 512 NVIDIA V100'); "
        "shape from ZeRO-Infinity (arXiv 2104.07857) Table 1 row '32 nodes | 0.5, 1 T | hidden 18K, 25K | layers 124, "
        "128 | batch/GPU 7, 5 | mp 4' and Table 4 (1000B: 128 layers, hidden 25600, 256 heads; Sec. 8.2: 'up to "
        f"49 TFlops/GPU'). 48.9 TFLOPS -> {_Z3O_SECONDS:.1f} s per step of {_Z3O_SAMPLES} sequences",
        _megatron_gpt(25 * 1024, 128, 256, 4), gpu=_V100, gpus_per_node=16, nodes=32,
        zero={"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 90_000_000,
              "stage3_prefetch_bucket_size": 50_000_000, "stage3_max_live_parameters": 1_000_000_000,
              "stage3_max_reuse_distance": 100_000_000, "sub_group_size": 400_000_000,
              "offload_optimizer": {"device": "cpu", "pin_memory": True},
              "offload_param": {"device": "cpu", "pin_memory": True}},
        micro_batch=20, seq_len=1024, metric="step_seconds", value=_Z3O_SECONDS, precision="fp16", attention="eager",
        recompute="full", inter_node_gbit_s=800.0,
        extra_config={"optimizer": {"type": "Adam"}, "tensor_parallel": {"autotp_size": 4}, **_INFINITY_CKPT},
        assumed="the post's 1T run taken to be ZeRO-Infinity's 32-node 1T configuration (same team, same cluster, "
                "one month apart); batch/GPU 5 with mp 4 read as micro batch 20 per model replica (see the "
                "zero-infinity rows); ZeRO-Infinity's Table 1 lists this row with parameters and optimizer states on "
                "the GPU, which cannot hold 1T x 16 bytes / 512 GPUs = 31 GB on a 32 GB V100, so the post's "
                "'ZeRO-3 Offload' is costed with both offloaded to the CPU as DeepSpeedExamples' "
                "ds_zero_stage_3_config_release.json of the same date has them (cpu_offload, cpu_offload_params; "
                "its zero section used here); activation checkpoints partitioned and on the CPU (the example "
                "script's flags); Megatron tensor slicing 4 as autotp; TFLOPS as 8 x parameters x tokens"),
)

# --- DeepSpeed blog 'Study of ZenFlow and ZeRO offload performance with DeepSpeed CPU core binding' (2025) ------------
_COREBIND = ("DeepSpeed blogs/zenflow-corebinding/README.md (commit 2b68bbc59, 2025-10): Test environment "
             "'2xDGX-A100-SXM4-40GB, 2xAMD EPYC 7742 64-Core Processor, 1TB memory', DeepSpeedExamples "
             "training/DeepSpeed-ZenFlow/finetuning/finetune_llama.py --batch_size 8 (Alpaca padded to 512 tokens, "
             "bf16 weights), zo_config.json: train_batch_size 8, bf16, ZeRO stage 2, offload_optimizer cpu with "
             "pin_memory, AdamW, gradient_accumulation_steps 1, gradient_clipping 1.0; ")
_COREBIND_OPT = {"type": "AdamW", "params": {"lr": 2e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}}
_COREBIND_ASSUMED = ("two GPUs of one node (deepspeed --num_gpus=2), so micro batch 4 per GPU; sequences padded to "
                     "512 (preprocess_alpaca, padding='max_length'); no gradient checkpointing (the script does not "
                     "enable it); SDPA attention (transformers' default for Qwen2); the timed step is forward + "
                     "backward + engine.step() without the DataLoader; Qwen2.5 config.json shapes{extra}")


def _qwen25(hidden: int, ffn: int, layers: int, heads: int) -> dict[str, Any]:
    return {"model_type": "qwen2", "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": 2, "vocab_size": 151936,
            "max_position_embeddings": 32768, "tie_word_embeddings": True, "rope_theta": 1000000.0}


_QWEN25_3B = _qwen25(2048, 11008, 36, 16)
_QWEN25_1_5B = _qwen25(1536, 8960, 28, 12)


def _corebind(ident: str, model: dict[str, Any], offload: bool, seconds: float, what: str,
              extra: str = "") -> Measurement:
    zero: dict[str, Any] = {"stage": 2}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    return Measurement(
        ident, _COREBIND + what, model, gpu=_A100_40, gpus_per_node=2, nodes=1, zero=zero, micro_batch=4,
        seq_len=512, metric="step_seconds", value=seconds, precision="bf16", attention="sdpa", recompute="none",
        extra_config={"optimizer": _COREBIND_OPT, "gradient_clipping": 1.0},
        assumed=_COREBIND_ASSUMED.format(extra=extra))


COREBIND_ROWS: tuple[Measurement, ...] = (
    _corebind("dsblog-corebind-qwen2.5-3b-offload", _QWEN25_3B, True, 2.497,
              "Qwen2.5-3B, table 'Improvement to ZeRO Offload performance from DeepSpeed CPU core binding', row "
              "'Bind core | 2649.06ms | 2641.82ms | 2200.76ms | 2497ms' (average of the first 51 iterations over "
              "three runs; without --bind_cores_to_rank: 2887ms)",
              "; the runs with DeepSpeed's --bind_cores_to_rank (the setting the ZeRO-Offload tutorial now "
              "recommends); the average includes the first iterations"),
    _corebind("dsblog-corebind-qwen2.5-1.5b-offload", _QWEN25_1_5B, True, 1.365,
              "Qwen2.5-1.5B, table 'Practicality test', row 'ZeRO Offload with DeepSpeed core binding | 1365ms' "
              "('we conducted the practicality test using Qwen2.5-1.5B instead', same config)",
              "; which iterations the average covers is not stated"),
    _corebind("dsblog-corebind-qwen2.5-1.5b-zero2", _QWEN25_1_5B, False, 0.240,
              "Qwen2.5-1.5B, table 'Practicality test', row 'ZeRO2 | 240ms' (the same config without "
              "offload_optimizer)",
              "; ZeRO-2 with the optimizer on the GPU (DeepSpeed's fused AdamW); which iterations the average "
              "covers is not stated"),
)

# --- DeepSpeed BERT post (2020-05-28): BERT-Large pre-training on one V100 --------------------------------------------
_BERT = ("DeepSpeed docs/_posts/2020-05-28-fastest-bert-training.md: 'DeepSpeed reaches as high as 64 and 53 teraflops "
         "throughputs (corresponding to 272 and 52 samples/second) for sequence lengths 128 and 512, respectively'; "
         "'The performance numbers were collected with a gradient accumulation step of 10 for all batch sizes'; "
         "Figure 1 (docs/assets/images/transformer_kernel_perf_seq{seq}.PNG) labels the DeepSpeed "
         "(stochastic-mode) peak {label} at batch size {micro}; https://github.com/deepspeedai/DeepSpeed/issues/272 "
         "(maintainer): 'We use the pre-ln BERT structure and we set the gradient accumulation to 10 for all our "
         "experiments' on a 32-GB V100")
#: DeepSpeedExamples bing_bert (a8a85a90, 2020-06): bert_large_lamb.json shapes, vocabulary = the bert-large-uncased
#: tokenizer's 30522 rounded up to a multiple of 8 (turing/models.py), pre-LN BertForPreTrainingPreLN
_BERT_LARGE = {"model_type": "bert", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
               "intermediate_size": 4096, "vocab_size": 30528, "max_position_embeddings": 512, "type_vocab_size": 2,
               "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
_BERT_LAMB = {"type": "Lamb", "params": {"lr": 11e-3, "weight_decay": 0.01, "bias_correction": False,
                                         "max_coeff": 0.3, "min_coeff": 0.01}}


def _bert(seq: int, micro: int, samples_per_s: float, label: str) -> Measurement:
    return Measurement(
        f"dsblog-bert-large-s{seq}-mbs{micro}-1gpu", _BERT.format(seq=seq, label=label, micro=micro), _BERT_LARGE,
        gpu=_V100, gpus_per_node=1, nodes=1, zero={"stage": 0}, micro_batch=micro, grad_accum=10, seq_len=seq,
        metric="samples_per_s", value=samples_per_s, precision="fp16", attention="eager", recompute="none",
        extra_config={"optimizer": _BERT_LAMB, "gradient_clipping": 1.0},
        assumed="DeepSpeedExamples bing_bert of the same date (deepspeed_train.py --deepspeed_transformer_kernel, "
                "deepspeed_bsz64k_lamb_config_seq128.json: fp16, Lamb, no ZeRO); the micro batch is the labelled "
                "peak's batch on the chart's axis; DeepSpeed's fused transformer kernel (stochastic mode) costed "
                "as eager attention, no recomputation (the kernel's memory flags not stated); the post's 'sparse "
                "output processing' runs the MLM head on the masked tokens only, which a full-vocabulary head "
                "overcounts by about 10% of the forward FLOPs; samples/s per step of micro x 10")


BERT_ROWS: tuple[Measurement, ...] = (
    _bert(128, 140, 272.0, "64.4 Tflops"),
    _bert(512, 20, 52.0, "52.7 Tflops"),
)

FOURTH_ROWS: tuple[Measurement, ...] = (*TUTORIAL_TABLE_ROWS, *ZERO_OFFLOAD_ROWS, *ZERO_INFINITY_ROWS,
                                        *ZERO3_OFFLOAD_ROWS, *COREBIND_ROWS, *BERT_ROWS)
