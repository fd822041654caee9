"""The ZeRO paper's model-state accounting (Rajbhandari et al. 2020, Figure 1), for teaching.

Mixed-precision training keeps, per parameter, 2 bytes of fp16 parameters, 2 bytes of fp16 gradients
and K bytes of optimizer state (K = 12 for Adam: fp32 master weights, momentum and variance). ZeRO
stage 1 partitions the optimizer state over the N data-parallel GPUs, stage 2 also the gradients,
stage 3 also the parameters. This is the picture the paper teaches ZeRO with, not a full estimate
(no activations, buffers or fragmentation: ``core.memory.estimate`` has those).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Bytes per parameter of the fp16 parameters and of the fp16 gradients.
PARAM_BYTES = 2
GRAD_BYTES = 2
#: K of the paper for mixed-precision Adam (fp32 master weights + momentum + variance).
ADAM_STATE_BYTES = 12
#: The stage from which each part is partitioned over the data-parallel GPUs.
PARTITIONED_FROM_STAGE = {"optimizer_states": 1, "gradients": 2, "parameters": 3}
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class PaperBreakdown:
    """Bytes one GPU holds under one ZeRO stage (unrounded: P·bytes/N need not be whole)."""

    stage: int
    parameters: float
    gradients: float
    optimizer_states: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer_states


def zero_paper_breakdown(
    total_params: int, num_gpus: int, optimizer_state_bytes: int = ADAM_STATE_BYTES,
    stages: tuple[int, ...] = ZERO_STAGES,
) -> tuple[PaperBreakdown, ...]:
    """Per-GPU parameter, gradient and optimizer-state bytes under each ZeRO stage (the paper's Figure 1).

    ``total_params`` is Ψ, ``num_gpus`` the data-parallel degree N_d, ``optimizer_state_bytes`` K.
    Raises ValueError naming the argument when a count is not a positive whole number or K is negative.
    """
    for name, value in (("total_params", total_params), ("num_gpus", num_gpus)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    k = optimizer_state_bytes
    if isinstance(k, bool) or not isinstance(k, int | float) or not 0 <= k < float("inf"):
        raise ValueError(f"optimizer_state_bytes (K) must be a finite number >= 0, got {k!r}")
    bad = [s for s in stages if s not in ZERO_STAGES]
    if bad:
        raise ValueError(f"stages must be among {ZERO_STAGES}, got {bad}")

    def per_gpu(part: str, bytes_per_param: float, stage: int) -> float:
        share = num_gpus if stage >= PARTITIONED_FROM_STAGE[part] else 1
        return total_params * bytes_per_param / share

    return tuple(
        PaperBreakdown(
            stage=stage,
            parameters=per_gpu("parameters", PARAM_BYTES, stage),
            gradients=per_gpu("gradients", GRAD_BYTES, stage),
            optimizer_states=per_gpu("optimizer_states", k, stage),
        )
        for stage in stages
    )
