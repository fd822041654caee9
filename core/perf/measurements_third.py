"""Published DeepSpeed measurements, third round (held out: collected by a helper session that never saw a
prediction, and evaluated with the model untouched).

Same conventions as ``core.perf.measurements`` (every row normalised to seconds per optimizer step). Sources, none
of them used by the first two rounds:

- DeepSpeedExamples ``training/bf16_master_weight/README.md`` (also quoted in DeepSpeed
  ``blogs/core_api_update/README.md``): average step time of a 6.86B transformer with ZeRO-3 on 4 H100, with fp32
  and with bf16 master weights / optimizer states;
- BigScience ``train/tr11-176B-ml/chronicles-prequel.md`` (Megatron-DeepSpeed, Jean Zay A100 80GB): the single-node
  20B benchmark (TP 8, PP 1) in fp16 and bf16, iteration time from the quoted training-log lines;
- Hugging Face blog ``ulysses-sp.md`` (2026): Qwen3-4B with DeepSpeed ZeRO-3 + CPU optimizer offload and Ulysses
  sequence parallelism (``sequence_parallel_size`` 4) on H100 80GB, tokens per second at 8K-64K.

Every value is the source's own printed number (no chart reading). ``step_seconds`` is used wherever the source
gives a time or a token rate with the tokens per step, so that no FLOP convention is involved.
"""

from __future__ import annotations

from core.perf.measurements import Measurement, gpt

_H100 = "NVIDIA H100 80GB"
_A100 = "NVIDIA A100 80GB"

# --- DeepSpeedExamples training/bf16_master_weight (2025-12 / 2026-03) ---------------------------------------
_BF16MW = ("DeepSpeedExamples training/bf16_master_weight/README.md (commit a43031e; table repeated in DeepSpeed "
           "blogs/core_api_update/README.md): train.py --num_layers 32 --hidden_dim 4096 --num_heads 32 --batch_size 1 "
           "--activation_checkpointing --use_real_data (seq 512, GPT-2 tokenizer), deepspeed --num_gpus=4, '4xH100', "
           "ZeRO-3: ")
#: train.py's SimpleTransformerModel: nn.Embedding + learned positions (512), post-LN blocks of
#: nn.MultiheadAttention (biases) and a 4x GELU MLP, an untied output nn.Linear; vocab = GPT-2 tokenizer's 50257
#: (6.86B parameters, as the README says: untied embedding and head)
_BF16MW_MODEL = gpt(4096, 32, 32, vocab_size=50257, n_positions=512, tie_word_embeddings=False,
                    activation_function="gelu")
_BF16MW_ZERO = {"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 50_000_000,
                "stage3_param_persistence_threshold": 0}
_BF16MW_OPT = {"type": "AdamW", "params": {"lr": 1e-4, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}}
_BF16MW_ASSUMED = ("H100 80GB SXM (the README says H100), one node, NVLink; micro batch 1 as train.py feeds it "
                   "(--batch_size 1; the json's train_micro_batch_size_per_gpu 4 is bookkeeping only, gradient "
                   "accumulation 1, so one forward/backward per step); nn.MultiheadAttention with need_weights=True "
                   "(the default) computes the score matrix explicitly: eager attention, without a causal mask; "
                   "torch.utils.checkpoint around every block: full recomputation; the step time is train.py's "
                   "wall clock of forward + loss + backward + engine.step averaged after 5 warm-up steps (includes "
                   "the DataLoader's next())")

BF16MW_ROWS: tuple[Measurement, ...] = (
    Measurement(
        "dsx-bf16mw-7b-z3-fp32master-4xh100",
        _BF16MW + "configs/baseline.json (bf16, fp32 master weights/grads/optimizer states): Avg Step Time 0.6016s",
        _BF16MW_MODEL, gpu=_H100, gpus_per_node=4, nodes=1, zero=_BF16MW_ZERO, micro_batch=1, seq_len=512,
        metric="step_seconds", value=0.6016, precision="bf16", attention="eager", recompute="full",
        extra_config={"optimizer": _BF16MW_OPT}, assumed=_BF16MW_ASSUMED),
    Measurement(
        "dsx-bf16mw-7b-z3-bf16master-4xh100",
        _BF16MW + "configs/bf16_full.json (bf16_master_weights_and_grads, bf16_optimizer_states, torch_autocast "
        "bf16): Avg Step Time 0.6427s",
        _BF16MW_MODEL, gpu=_H100, gpus_per_node=4, nodes=1, zero=_BF16MW_ZERO, micro_batch=1, seq_len=512,
        metric="step_seconds", value=0.6427,
        # bf16_full.json's sections verbatim (measurement_config keeps the bf16 section's keys)
        precision="bf16", attention="eager", recompute="full",
        extra_config={"optimizer": _BF16MW_OPT,
                      "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
                      "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}},
        assumed=_BF16MW_ASSUMED),
)

# --- BigScience tr11 (BLOOM) chronicles-prequel: 20B on one node, TP 8, PP 1 (2022-02-17) ------------------
_BLOOM_PREQUEL = ("bigscience-workshop/bigscience train/tr11-176B-ml/chronicles-prequel.md, section 'To measure best "
                  "TFLOPs possible use a single [node]': Megatron-DeepSpeed, 1 node of 8 A100 80GB (Jean Zay), 20B "
                  "model TP=8, PP=1, NLAYERS=8, NHIDDEN=14400, NHEADS=32, SEQ_LEN=2048, VOCAB_LENGTH=250k, GBS=2048, "
                  "MBS=1 (table), ")
_BLOOM_ASSUMED = ("Megatron tensor parallelism 8 costed as autotp (DP=1, so ZeRO-1 partitions nothing); vocabulary "
                  "padded to 250880 (tr11-176B-ml.slurm --pad-vocab-size-to 250880); --checkpoint-activations and "
                  "Megatron's fused softmax (eager) as in tr11-176B-ml.slurm; ALiBi and the embedding layernorm of "
                  "tr11 costed as the GPT layout of gpt() (learned positions, a 2048 x 14400 table); fused Adam "
                  "(apex); micro batch 1 with 2048 accumulation steps per iteration (GBS 2048 / DP 1); A100 80GB "
                  "SXM with NVLink, single node")


def _bloom20b(precision: str, seconds: float, tflops: float, samples: float) -> Measurement:
    return Measurement(
        f"bigscience-20b-tp8-{precision}-8gpu",
        _BLOOM_PREQUEL + f"### {precision} log line: 'elapsed time per iteration (s): {seconds:.2f} | global batch "
        f"size: 2048 | ... samples per second: {samples:.3f} | TFLOPs: {tflops:.2f}'",
        gpt(14400, 8, 32, vocab_size=250880, n_positions=2048, activation_function="gelu"), gpu=_A100,
        gpus_per_node=8, nodes=1, zero={"stage": 1}, micro_batch=1, grad_accum=2048, seq_len=2048,
        metric="step_seconds", value=seconds, precision=precision, attention="eager", recompute="full",
        extra_config={"optimizer": {"type": "Adam"}, "tensor_parallel": {"autotp_size": 8}},
        assumed=_BLOOM_ASSUMED + "; the iteration time is used, not the log's TFLOPs (BigScience's calculator of "
                "that date under-reported, as the same document says later, 'TFLOPs calculation improved')")


BIGSCIENCE_ROWS: tuple[Measurement, ...] = (
    _bloom20b("fp16", 769.99, 108.47, 2.660),
    _bloom20b("bf16", 777.09, 107.48, 2.635),
)

# --- Hugging Face blog 'Ulysses Sequence Parallelism: Training with Million-Token Contexts' (2026-03-09) -----
_ULYSSES_HF = ("Hugging Face blog 'Ulysses Sequence Parallelism: Training with Million-Token Contexts' "
               "(huggingface.co/blog/ulysses-sp, 2026-03-09), section Benchmarks: Qwen3-4B, TRL SFTTrainer on "
               "Gutenberg English, H100 80GB, DeepSpeed ZeRO-3, CPU optimizer offloading, gradient checkpointing, "
               "FlashAttention-2; Setup table: micro batch 1, grad acc 8, global batch 8 (SP x DP = GPUs); figures of "
               "the published revision (huggingface/blog commit 5feb994; a draft, commit 01d33d5, named "
               "kernels-community/flash-attn2 and printed other figures; the published Memory table calls its "
               "baseline 'DP=4 (4 GPU)' where the Throughput and Setup tables say 1 GPU); ")
#: Qwen/Qwen3-4B config.json: Qwen3 is the Llama layout with per-head q/k RMSNorm and head_dim 128 (q_proj 2560 -> 4096)
_QWEN3_4B = {"model_type": "llama", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
             "tie_word_embeddings": True, "max_position_embeddings": 40960, "rope_theta": 1000000.0}
_ULYSSES_ASSUMED = ("Qwen3-4B described as model_type llama with head_dim 128 and tied embeddings (Qwen3's q/k "
                    "RMSNorm, 2 x 128 weights per layer, left out; its config.json's max_position_embeddings 40960 "
                    "kept although the 64K run exceeds it: RoPE, no position table); tokens/s read as the total over "
                    "all GPUs (per-GPU would put the 64K row above the H100's peak), so one step = 8 sequences x seq "
                    "tokens / (tokens/s); packed, full-length sequences (TRL packing); the optimizer offloaded to the "
                    "CPU, parameters on the GPU (the blog: 'CPU optimizer offloading'); one node, NVLink")


def _ulysses(ident: str, gpus: int, sp: int, seq: int, tokens_per_s: float, row: str) -> Measurement:
    extra = {"sequence_parallel_size": sp} if sp > 1 else {}
    return Measurement(
        ident, _ULYSSES_HF + f"Throughput table row '{row}': {tokens_per_s:,.0f} tokens/s -> {8 * seq:,} tokens per "
        f"step / {tokens_per_s:,.0f} = {8 * seq / tokens_per_s:.2f} s per step",
        _QWEN3_4B, gpu=_H100, gpus_per_node=gpus, nodes=1,
        zero={"stage": 3, "offload_optimizer": {"device": "cpu"}}, micro_batch=1, grad_accum=8, seq_len=seq,
        metric="step_seconds", value=8 * seq / tokens_per_s, precision="bf16", attention="flash", recompute="full",
        extra_config=extra, assumed=_ULYSSES_ASSUMED)


ULYSSES_HF_ROWS: tuple[Measurement, ...] = (
    _ulysses("hfblog-ulysses-qwen3-4b-1gpu-s8k", 1, 1, 8192, 3633.0, "Baseline (1 GPU) | 8K | 3,633"),
    _ulysses("hfblog-ulysses-qwen3-4b-sp4-s8k", 4, 4, 8192, 3933.0, "SP=4 (4 GPU) | 8K | 3,933"),
    _ulysses("hfblog-ulysses-qwen3-4b-sp4-s32k", 4, 4, 32768, 7733.0, "SP=4 (4 GPU) | 32K | 7,733"),
    _ulysses("hfblog-ulysses-qwen3-4b-sp4-s64k", 4, 4, 65536, 13396.0, "SP=4 (4 GPU) | 64K | 13,396"),
)

THIRD_ROWS: tuple[Measurement, ...] = (*BF16MW_ROWS, *BIGSCIENCE_ROWS, *ULYSSES_HF_ROWS)
