"""Memory model: DeepSpeed's own ZeRO estimators (bit-exact) and a full per-GPU / per-node estimate."""

from core.memory.activations import (
    ATTENTION_IMPLS,
    RECOMPUTE_MODES,
    ActivationBreakdown,
    activation_breakdown,
    attention_help,
)
from core.memory.deepspeed_parity import (
    estimate_zero2_model_states_mem_needs,
    estimate_zero3_model_states_mem_needs,
    render_zero2_all_cold,
    render_zero3_all_cold,
    zero2_all_cold_table,
    zero3_all_cold_table,
)
from core.memory.estimate import (
    GIB,
    Allowances,
    Component,
    Hardware,
    MemoryEstimate,
    ModelCounts,
    Shape,
    TrainingSettings,
    estimate,
    evaluate_arrays,
)
from core.memory.paper import PaperBreakdown, zero_paper_breakdown
from core.memory.result import counts_problem
from core.memory.solve import (
    SWEEP_AXES,
    max_micro_batch,
    min_gpus,
    options_table,
    sweep,
    sweep_totals,
    with_zero_option,
    zero_options,
)

__all__ = [
    "ATTENTION_IMPLS",
    "GIB",
    "RECOMPUTE_MODES",
    "SWEEP_AXES",
    "ActivationBreakdown",
    "Allowances",
    "Component",
    "Hardware",
    "MemoryEstimate",
    "ModelCounts",
    "PaperBreakdown",
    "Shape",
    "TrainingSettings",
    "activation_breakdown",
    "attention_help",
    "counts_problem",
    "estimate",
    "estimate_zero2_model_states_mem_needs",
    "estimate_zero3_model_states_mem_needs",
    "evaluate_arrays",
    "max_micro_batch",
    "min_gpus",
    "options_table",
    "render_zero2_all_cold",
    "render_zero3_all_cold",
    "sweep",
    "sweep_totals",
    "with_zero_option",
    "zero2_all_cold_table",
    "zero3_all_cold_table",
    "zero_options",
    "zero_paper_breakdown",
]
