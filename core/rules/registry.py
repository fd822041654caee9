"""The one list of rules ``core.validate`` runs, in order: schema checks first, then the topic rules.

A new rule is a function ``(Context) -> Iterable[Finding]`` in its topic module, added here; its finding
codes go in ``core.rules.codes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from core.findings import Finding
from core.rules import auto, batch, expert_parallel, initialize, misc, optim, precision, structure, typecheck, zero
from core.rules.context import Context

Rule = Callable[[Context], Iterable[Finding]]

#: The order matters twice: a finding with the same (code, path) as an earlier one is dropped, and findings of
#: one severity keep this order in the report.
RULES: tuple[Rule, ...] = (
    structure.preset_file, structure.check_keys, typecheck.check_types, typecheck.check_profile_bounds,
    typecheck.truthy_strings, typecheck.as_written,
    batch.sequence_parallel, batch.sequence_parallel_path, misc.compile_passes, batch.elasticity,
    misc.removed_keys, misc.compression_shared_parameters, misc.compression_initialize, batch.batch_triangle,
    batch.batch_types, auto.auto_values, auto.hf_never_matches,
    precision.precision, precision.torch_autocast, precision.communication,
    zero.zero_form, zero.offload, zero.stage_not_integer, zero.sub_group_zero, zero.deprecated_zero_keys,
    precision.bfloat16_alias,
    misc.checkpoint, misc.data_types, misc.data_efficiency, misc.contiguous_checkpointing, misc.legacy_curriculum,
    misc.progressive_layer_drop, misc.autotuning, misc.misc,
    optim.optimizer, optim.scheduler,
    initialize.engine_combinations, initialize.autocast_combinations, initialize.amp_combinations,
    precision.master_weights_offload,
    initialize.autotp_size, initialize.autotp_world_size, initialize.gradient_scaling_reduce_scatter,
    initialize.sequence_mesh, expert_parallel.autoep_initialize,
    initialize.zero_optimizer_values, initialize.torch_scheduler_on_a_wrapper,
    initialize.zenflow_offload, initialize.zenflow_optimizer_params, initialize.partial_offload_optimizer,
)
