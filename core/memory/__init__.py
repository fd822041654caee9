"""Memory model: DeepSpeed's own ZeRO estimators (bit-exact) and a full per-GPU / per-node estimate."""

from core.memory.deepspeed_parity import (
    estimate_zero2_model_states_mem_needs,
    estimate_zero3_model_states_mem_needs,
    render_zero2_all_cold,
    render_zero3_all_cold,
    zero2_all_cold_table,
    zero3_all_cold_table,
)

__all__ = [
    "estimate_zero2_model_states_mem_needs",
    "estimate_zero3_model_states_mem_needs",
    "render_zero2_all_cold",
    "render_zero3_all_cold",
    "zero2_all_cold_table",
    "zero3_all_cold_table",
]
