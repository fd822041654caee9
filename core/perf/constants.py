"""Constants of the optimizer step, ZeRO++'s quantization kernels and fused attention's kernels (shown to the user
by ``advice.assumptions_text``)."""

from core.memory.settings import TrainingSettings

#: Parameters per ZeRO-3 fetch for a model known only by its counts (``ModelCounts``: no modules to count):
#: DeepSpeed's default stage3_prefetch_bucket_size (the memory model's, ``TrainingSettings``), the size of a
#: large transformer's linear layer.
COUNTS_FETCH_PARAMS: int = TrainingSettings.prefetch_bucket_size

#: Bytes per parameter a fused Adam step moves on the GPU: fp32 master, m, v read and written (24), the
#: fp32 gradient read (4), the 16-bit parameter written (2), rounded up for the norm and the overflow check.
ADAM_BYTES_PER_PARAM = 34


def optimizer_step_bytes_per_param(master_bytes: int = 4, state_bytes: int = 4, states: int = 2) -> int:
    """:data:`ADAM_BYTES_PER_PARAM` for an optimizer keeping ``states`` state tensors per parameter (Adam's m and v:
    2; Lion, Adagrad, SGD with momentum: 1; plain SGD: 0; ``core.effective``'s reading of the optimizer), with the
    master weights and the gradient partition in ``master_bytes`` and the states in ``state_bytes`` per element,
    as ``fp16/bf16_master_weights_and_grads`` / ``bf16_optimizer_states`` keep them (the ZeRO optimizers cast the
    gradient partition to the master weights' dtype before the step): master read and written, each state read and
    written, the gradient read; the 16-bit parameter write and the norm/overflow allowance stay (Adam: 34 for fp32,
    20 with bf16 master weights and optimizer states; SGD with momentum in fp32: 26)."""
    return ADAM_BYTES_PER_PARAM - 3 * 4 - 2 * 2 * 4 + 3 * master_bytes + 2 * states * state_bytes
#: Bytes per parameter of DeepSpeed's unfused fp16 optimizer (runtime/fp16/unfused_optimizer.py, used at stage 0
#: when the optimizer is not DeepSpeed's FusedAdam, e.g. the Hugging Face Trainer's): the overflow check
#: (fp16 gradient to fp32 and summed: 10), the per-tensor gradient norm (10), the fp32 gradient copy (6), the
#: unscale (8), a non-fused AdamW as one pass per operation (PyTorch's foreach AdamW: 84) and the copy back to
#: the fp16 parameters (6). Per tensor it also synchronises with the host twice (overflow check, norm), which is
#: charged ``efficiency.grad_hook_overhead_s`` per parameter tensor, the measured cost of ZeRO's per-tensor hook.
UNFUSED_FP16_OPTIMIZER_BYTES_PER_PARAM = 124
#: Bytes per parameter that ZeRO++'s quantization kernels move through HBM (deepspeed/ops quantizer, called from
#: partition_parameters and runtime/comm/coalesced_collectives.all_to_all_quant_reduce), on the GPU's own stream:
#: qwZ dequantizes every gathered int8 weight to fp16 (read 1, write 2; quantizing the rank's own shard is
#: 1/GPUs of that); qgZ's swizzle_quant reads the fp16 gradient and writes int4 (2.5) and quantized_reduction
#: reads the int4 the intra-node all-to-all delivered (0.5; what follows acts on 1/GPUs-per-node of it).
ZEROPP_QWZ_BYTES_PER_PARAM = 3
ZEROPP_QGZ_BYTES_PER_PARAM = 3
#: Backward FLOPs of a fused attention kernel (FlashAttention, PyTorch SDPA's flash and memory-efficient kernels)
#: per forward FLOP: it recomputes the scores and probabilities from the saved statistics instead of reading a
#: saved s x s matrix, five matrix products against the forward's two (Dao, FlashAttention-2, 2023, Algorithm 2;
#: flash-attention's benchmarks count the backward as 2.5x the forward). Eager attention's backward is 2x.
FUSED_ATTENTION_BACKWARD_FACTOR = 2.5
#: Speed of the first-generation fused attention kernels (flash-attn 1.x, CUDA, and its Triton kernel
#: ``flash_attn_triton``, e.g. Megatron-DeepSpeed's ``--use-flash-attn-v1`` / ``--use-flash-attn-triton``; the
#: planner's ``flash1``) relative to FlashAttention-2 (``flash``) on the same GPU, forward + backward, measured by
#: Dao, FlashAttention-2 (2023), Figure 4(d) (A100 80GB, causal, head dimension 128): 83 (FlashAttention) and 80
#: (FlashAttention Triton) against 189 TFLOPs at 16K tokens, 76 / 74 against 173 at 4K; and its H100 figure
#: (flash-attention's assets/flash2_h100_fwd_bwd_benchmark.png, same panel): 137 against 328 at 16K. All 0.42-0.44.
FLASH1_ATTENTION_SPEED = 0.43
#: Head dimensions the fused attention kernels are compiled for: a head dimension between two runs the next one up,
#: its matrix products padded to that width (masked loads, the tensor cores still do the full tile). FlashAttention-2
#: (and PyTorch SDPA's flash backend, the same kernels; Ampere and newer, before it SDPA runs its memory-efficient
#: kernel, costed unpadded): 32, 64, 96, 128, 192, 256 (flash-attn csrc/flash_attn/src
#: flash_*_hdim*.cu; flash_api.cpp rounds the head size up to a multiple of 32, of 64 beyond 128). flash-attn 1.x:
#: 32, 64, 128 (v1.0.4 fmha_api.cpp: d <= 32 / 64 / 128 pick the hdim32 / 64 / 128 kernels) and its Triton kernel
#: the next power of two (flash_attn_triton.py: BLOCK_HEADDIM = max(next_power_of_2(d), 16)), the same for d > 16.
FUSED_ATTENTION_HEAD_DIMS = {"flash": (32, 64, 96, 128, 192, 256), "sdpa": (32, 64, 96, 128, 192, 256),
                             "flash1": (32, 64, 128)}
