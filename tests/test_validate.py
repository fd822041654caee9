"""One test per validation rule: the finding, its severity and path, and that its fix fixes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core import validate
from core.findings import Report, get_path

BASE = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}


def cfg(**extra):
    return {**BASE, **extra}


# (id, config, validate kwargs, code, severity, path)
CASES = [
    ("not-object", [1, 2], {}, "config.not-object", "error", ""),
    ("preset-file", {"meta": {"title": "t"}, "config": BASE}, {}, "config.preset-file", "error", "config"),
    ("unknown-top", cfg(zero_optimisation={"stage": 2}), {}, "keys.unknown-top-level", "warning", "zero_optimisation"),
    ("unknown-strict", cfg(zero_optimization={"stage": 2, "stag": 1}), {}, "keys.unknown", "error",
     "zero_optimization.stag"),
    ("unknown-lenient", cfg(activation_checkpointing={"partition_activation": True}), {}, "keys.unknown-ignored",
     "warning", "activation_checkpointing.partition_activation"),
    ("not-in-version-strict", cfg(zero_optimization={"stage": 1, "compute_grad_norm": True}),
     {"version": "0.19.5"}, "keys.not-in-version", "error", "zero_optimization.compute_grad_norm"),
    ("not-in-version-lenient", cfg(disable_python_gc=False), {"version": "0.19.5"}, "keys.not-in-version",
     "warning", "disable_python_gc"),
    ("not-in-version-on-lenient", cfg(disable_python_gc=True), {"version": "0.19.5"}, "keys.not-in-version-on",
     "warning", "disable_python_gc"),
    ("alias-clash", cfg(zero_optimization={"stage": 3, "stage3_prefetch_bucket_size": 10,
                                           "prefetch_bucket_size": 20}), {}, "keys.alias-clash", "error",
     "zero_optimization.prefetch_bucket_size"),
    ("type-strict", cfg(zero_optimization={"stage": 2, "reduce_bucket_size": "lots"}), {}, "type.int_parsing",
     "error", "zero_optimization.reduce_bucket_size"),
    ("enum-strict", cfg(zero_optimization={"stage": 3, "offload_param": {"device": "CPU"}}), {},
     "type.literal_error", "error", "zero_optimization.offload_param.device"),
    ("stage-out-of-range", cfg(zero_optimization={"stage": 4}), {}, "type.enum", "error", "zero_optimization.stage"),
    ("section-not-object", cfg(fp16=[1]), {}, "type.model_type", "error", "fp16"),
    ("type-lenient", cfg(memory_breakdown="one"), {}, "type.unchecked", "warning", "memory_breakdown"),
    ("type-dataloader", cfg(dataloader_drop_last="false"), {}, "type.dataloader", "warning", "dataloader_drop_last"),
    ("step-number", cfg(gradient_clipping="1.0"), {}, "misc.step-number", "error", "gradient_clipping"),
    ("nvme-below-3", cfg(zero_optimization={"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"}}),
     {}, "zero.nvme-below-3", "warning", "zero_optimization.offload_optimizer.device"),
    ("step-number-predivide", cfg(gradient_predivide_factor=0), {}, "misc.step-number", "error",
     "gradient_predivide_factor"),
    ("removed", cfg(amp={"enabled": False}), {}, "removed.key", "error", "amp"),
    ("removed-on", cfg(amp={"enabled": True}), {}, "removed.enabled-section", "error", "amp"),
    ("truthy-string", cfg(prescale_gradients="false"), {}, "type.truthy-string", "warning", "prescale_gradients"),
    ("not-in-version-on", cfg(zero_optimization={"stage": 2, "compute_grad_norm": False}), {"version": "0.19.5"},
     "keys.not-in-version-on", "error", "zero_optimization.compute_grad_norm"),
    ("comment", cfg(_comment="why"), {}, "keys.comment", "info", "_comment"),
    ("removed-zero", cfg(zero_optimization={"stage": 3, "mics_shard_size": -1}), {}, "removed.key", "error",
     "zero_optimization.mics_shard_size"),
    ("batch-missing", {"gradient_accumulation_steps": 4}, {}, "batch.missing", "error", "train_batch_size"),
    ("batch-product", {"train_batch_size": 8}, {"world_size": 3}, "batch.product", "error", "train_batch_size"),
    ("batch-mb-zero", {"train_batch_size": 2}, {"world_size": 4}, "batch.mb-positive", "error", "train_batch_size"),
    ("batch-ga-zero", {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}, {"world_size": 4},
     "batch.ga-positive", "error", "train_batch_size"),
    ("batch-tb-negative", {"train_batch_size": -8}, {}, "batch.tb-positive", "error", "train_batch_size"),
    ("batch-div-zero", {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 0}, {}, "batch.zero-division",
     "error", "train_batch_size"),
    ("batch-type", {"train_batch_size": "eight"}, {}, "batch.type", "error", "train_batch_size"),
    ("batch-overflow", {"train_batch_size": 10**400, "train_micro_batch_size_per_gpu": 1.5}, {}, "batch.overflow",
     "error", "train_batch_size"),
    ("batch-not-integer", {"train_micro_batch_size_per_gpu": 1.5, "gradient_accumulation_steps": 2}, {},
     "batch.not-integer", "warning", "train_micro_batch_size_per_gpu"),
    ("hf-optimizer-no-type", {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
                              "zero_optimization": {"stage": 2}, "optimizer": {"params": {"lr": "auto"}}},
     {"target": "hf"}, "hf.optimizer-no-type", "error", "optimizer.type"),
    ("hf-scheduler-no-type", {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
                              "zero_optimization": {"stage": 2}, "scheduler": {}},
     {"target": "hf"}, "hf.scheduler-no-type", "error", "scheduler.type"),
    ("batch-sequence-parallel-path", {"train_batch_size": 2, "train_micro_batch_size_per_gpu": 1,
                                      "gradient_accumulation_steps": 1, "sequence_parallel_size": 2},
     {"world_size": 4, "version": "0.17.6"}, "batch.sequence-parallel-path", "warning", "sequence_parallel_size"),
    ("auto-crash", {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}, {}, "auto.crash",
     "error", "train_batch_size"),
    ("auto-default", cfg(zero_optimization={"stage": 3, "stage3_prefetch_bucket_size": "auto"}), {},
     "auto.default", "info", "zero_optimization.stage3_prefetch_bucket_size"),
    ("auto-kept", cfg(prescale_gradients="auto"), {}, "auto.kept", "warning", "prescale_gradients"),
    ("auto-fails", cfg(gradient_clipping="auto"), {}, "auto.fails", "error", "gradient_clipping"),
    ("auto-not-filled", cfg(zero_optimization={"stage": 2, "overlap_comm": "auto"}), {"target": "hf"},
     "auto.not-filled", "error", "zero_optimization.overlap_comm"),
    ("hf-zero-section", cfg(), {"target": "hf"}, "hf.zero-section", "error", "zero_optimization"),
    ("hf-batch-never-matches", {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 16,
                                "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}},
     {"target": "hf", "world_size": 4}, "hf.batch-never-matches", "error", "train_batch_size"),
    ("hf-batch-never-matches-both-auto", {"train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto",
                                          "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}},
     {"target": "hf", "world_size": 64}, "hf.batch-never-matches", "error", "train_batch_size"),
    ("hf-batch-never-matches-accumulation-missing", {"train_batch_size": 256, "train_micro_batch_size_per_gpu": "auto",
                                                     "zero_optimization": {"stage": 0}},
     {"target": "hf", "world_size": 3}, "hf.batch-never-matches", "error", "train_batch_size"),
    ("hf-batch-accumulation-missing", {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                                       "zero_optimization": {"stage": 2}},
     {"target": "hf"}, "hf.batch-accumulation-missing", "error", "gradient_accumulation_steps"),
    ("hf-flag-as-text", cfg(bf16={"enabled": "true"}, zero_optimization={"stage": 2}), {"target": "hf"},
     "hf.never-matches", "error", "bf16.enabled"),
    ("hf-two-learning-rates", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-4}},
                                  scheduler={"type": "WarmupLR", "params": {"warmup_max_lr": 3e-4}},
                                  zero_optimization={"stage": 2}), {"target": "hf"},
     "hf.never-matches", "error", "scheduler.params.warmup_max_lr"),
    ("hf-zero-bool", cfg(zero_optimization=True), {"target": "hf"}, "hf.zero-section", "error",
     "zero_optimization"),
    ("hf-auto-stage", cfg(zero_optimization={"stage": "auto"}), {"target": "hf"}, "hf.auto-stage", "warning",
     "zero_optimization.stage"),
    ("hf-auto-nvme-path", cfg(zero_optimization={"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "auto"}}),
     {"target": "hf"}, "hf.auto-nvme-path", "warning", "zero_optimization.offload_param.nvme_path"),
    ("fp16-null", cfg(fp16=None), {}, "precision.null", "error", "fp16"),
    ("fp16-and-bf16", cfg(fp16={"enabled": True}, bf16={"enabled": True}), {}, "precision.fp16-and-bf16", "error",
     "bf16.enabled"),
    ("master-weights", cfg(bf16={"enabled": True, "bf16_master_weights_and_grads": True}), {},
     "precision.master-weights-stage", "error", "bf16.bf16_master_weights_and_grads"),
    ("bf16-optimizer-states", cfg(bf16={"enabled": True, "bf16_optimizer_states": True},
                                  zero_optimization={"stage": 1}), {}, "precision.bf16-optimizer-states", "error",
     "bf16.bf16_optimizer_states"),
    ("loss-scale-unused", cfg(fp16={"enabled": False, "loss_scale": 0, "initial_scale_power": 16}), {},
     "precision.loss-scale-unused", "warning", "fp16"),
    ("autocast-dtype", cfg(torch_autocast={"enabled": True, "dtype": "float8"}), {}, "precision.autocast-dtype",
     "error", "torch_autocast.dtype"),
    ("autocast-modules", cfg(torch_autocast={"enabled": True, "lower_precision_safe_modules": [1]}), {},
     "precision.autocast-modules", "error", "torch_autocast.lower_precision_safe_modules"),
    ("comm-dtype", cfg(communication_data_type="fp8"), {}, "comm.dtype", "error", "communication_data_type"),
    ("allreduce-op", cfg(gradient_allreduce_op="max"), {}, "comm.allreduce-op", "error", "gradient_allreduce_op"),
    ("allreduce-sum-z3", cfg(gradient_allreduce_op="sum", zero_optimization={"stage": 3}), {},
     "comm.allreduce-sum", "error", "gradient_allreduce_op"),
    ("zero-bool", cfg(zero_optimization=True), {}, "deprecated.zero-bool", "warning", "zero_optimization"),
    ("zero-null", cfg(zero_optimization=None), {}, "zero.null", "error", "zero_optimization"),
    ("offload-param-below-3", cfg(zero_optimization={"stage": 2, "offload_param": {"device": "cpu"}}), {},
     "zero.offload-param-below-3", "warning", "zero_optimization.offload_param"),
    ("offload-opt-stage-0", cfg(zero_optimization={"stage": 0, "offload_optimizer": {"device": "cpu"}}), {},
     "zero.offload-optimizer-stage-0", "warning", "zero_optimization.offload_optimizer"),
    ("nvme-without-path", cfg(zero_optimization={"stage": 3, "offload_param": {"device": "nvme"}}), {},
     "zero.nvme-without-path", "error", "zero_optimization.offload_param.nvme_path"),
    ("elastic-z3", cfg(zero_optimization={"stage": 3, "elastic_checkpoint": True}), {},
     "zero.elastic-checkpoint-stage-3", "warning", "zero_optimization.elastic_checkpoint"),
    ("sequence-mesh", cfg(sequence_parallel_size=2, data_parallel_size=2), {"world_size": 2},
     "engine.sequence-mesh", "error", "data_parallel_size"),
    ("elastic-checkpoint-step", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
                                    zero_optimization={"stage": 1, "elastic_checkpoint": True}), {},
     "zero.elastic-checkpoint-step", "warning", "zero_optimization.elastic_checkpoint"),
    ("stage3-keys-unused", cfg(zero_optimization={"stage": 2, "stage3_max_live_parameters": 1000}), {},
     "zero.stage3-keys-unused", "info", "zero_optimization"),
    ("stage-not-integer", cfg(zero_optimization={"stage": "3"}), {},
     "zero.stage-not-integer", "warning", "zero_optimization.stage"),
    ("hpz", cfg(zero_optimization={"stage": 3, "zero_hpz_partition_size": 8}), {"world_size": 12},
     "zero.hpz-partition", "error", "zero_optimization.zero_hpz_partition_size"),
    ("sub-group-zero", cfg(zero_optimization={"stage": 3, "sub_group_size": 0}), {},
     "zero.sub-group-zero", "info", "zero_optimization.sub_group_size"),
    ("reduce-bucket-zero", cfg(zero_optimization={"stage": 2, "reduce_bucket_size": 0}), {},
     "zero.reduce-bucket-size", "error", "zero_optimization.reduce_bucket_size"),
    ("offload-ratio", cfg(zero_optimization={"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}), {},
     "type.value_error", "error", "zero_optimization.offload_optimizer.ratio"),
    ("compute-grad-norm", cfg(zero_optimization={"stage": 3, "compute_grad_norm": False}), {},
     "type.value_error", "error", "zero_optimization.compute_grad_norm"),
    ("deprecated", cfg(zero_optimization={"stage": 2, "cpu_offload": True}), {}, "deprecated.key", "warning",
     "zero_optimization.cpu_offload"),
    ("deprecated-with-new", cfg(zero_optimization={"stage": 2, "cpu_offload": True,
                                                   "offload_optimizer": {"device": "cpu"}}), {},
     "deprecated.with-replacement", "error", "zero_optimization.cpu_offload"),
    ("bfloat16-ignored", cfg(bf16={"enabled": True}, bfloat16={"enabled": True}), {},
     "deprecated.bfloat16-ignored", "warning", "bfloat16"),
    ("tag-validation", cfg(checkpoint={"tag_validation": "Sometimes"}), {}, "checkpoint.tag-validation", "error",
     "checkpoint.tag_validation"),
    ("pipeline-stage", cfg(checkpoint={"parallel_write": {"pipeline_stage": "yes"}}), {},
     "checkpoint.pipeline-stage", "error", "checkpoint.parallel_write.pipeline_stage"),
    ("writer", cfg(checkpoint={"writer": {"type": "slow"}}), {}, "checkpoint.writer", "error",
     "checkpoint.writer.type"),
    ("keep-in-fp32", cfg(data_types={"keep_in_fp32_modules": "norm"}), {}, "data-types.keep-in-fp32", "error",
     "data_types.keep_in_fp32_modules"),
    ("curriculum-metrics", cfg(data_efficiency={"enabled": True, "data_sampling": {
        "curriculum_learning": {"enabled": True}}}), {}, "data-efficiency.curriculum-metrics", "error",
     "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics"),
    ("max-tokens", cfg(data_efficiency={"data_sampling": {"dynamic_batching": {"enabled": True}}}), {},
     "data-efficiency.max-tokens", "error", "data_efficiency.data_sampling.dynamic_batching.max_tokens"),
    ("random-ltd-keys", cfg(data_efficiency={"data_routing": {"random_ltd": {"enabled": True}}}), {},
     "data-efficiency.random-ltd-keys", "error", "data_efficiency.data_routing.random_ltd.total_layer_num"),
    ("as-written", cfg(flops_profiler={"enabled": True, "profile_step": "1"}), {}, "type.as-written", "error",
     "flops_profiler.profile_step"),
    ("as-written-initialize", cfg(pipeline={"pipe_partitioned": "true"}), {}, "type.engine", "error",
     "pipeline.pipe_partitioned"),
    ("section-ignored", cfg(timers="auto"), {}, "type.section-ignored", "warning", "timers"),
    ("legacy-curriculum", cfg(curriculum_learning={"enabled": True}), {"version": "0.19.7"},
     "curriculum.legacy-schedule", "error", "curriculum_learning.min_difficulty"),
    ("pld-keys", cfg(progressive_layer_drop={"enabled": True, "gamma": 0.001}), {"version": "0.19.7"},
     "progressive-layer-drop.keys", "error", "progressive_layer_drop.theta"),
    ("compression-group-modules", cfg(compression_training={"row_pruning": {
        "shared_parameters": {}, "different_groups": {"g": {"params": {"dense_ratio": 0.5}, "modules": ["(fc"]}}}}),
     {"version": "0.19.6"}, "compression.group-modules", "error",
     "compression_training.row_pruning.different_groups.g.modules"),
    ("compression-weight-quantization", cfg(compression_training={"weight_quantization": {"different_groups": {}}}),
     {"version": "0.19.6"}, "compression.weight-quantization", "error", "compression_training.weight_quantization"),
    ("expert-parallel-choice", cfg(expert_parallel={"enabled": True, "score_func": "tanh"}), {},
     "expert-parallel.choice", "error", "expert_parallel.score_func"),
    ("expert-parallel-attribute-name", cfg(expert_parallel={"enabled": True, "expert_w2": ""}), {},
     "expert-parallel.attribute-name", "error", "expert_parallel.expert_w2"),
    ("expert-parallel-combination", cfg(expert_parallel={"enabled": True, "row_weighting_impl": "fused"}), {},
     "expert-parallel.combination", "error", "expert_parallel.row_weighting_impl"),
    ("compression-sparse-pruning-step", cfg(compression_training={"sparse_pruning": {
        "shared_parameters": {"enabled": True, "method": "topk"}, "different_groups": {}}}), {"version": "0.19.6"},
     "compression.sparse-pruning-step", "error", "compression_training.sparse_pruning.shared_parameters.method"),
    ("contiguous-checkpointing", cfg(activation_checkpointing={"contiguous_memory_optimization": True}), {},
     "activation-checkpointing.contiguous", "warning", "activation_checkpointing.contiguous_memory_optimization"),
    ("autotuning-dir", cfg(autotuning={"enabled": True, "results_dir": ""}), {}, "autotuning.empty-dir", "error",
     "autotuning.results_dir"),
    ("vocab", cfg(vocabulary_size=50257), {}, "misc.vocabulary-alignment", "warning", "vocabulary_size"),
    ("wall-clock", cfg(wall_clock_breakdown="sometimes"), {}, "misc.wall-clock-breakdown", "error",
     "wall_clock_breakdown"),
    ("load-balance", cfg(expert_parallel={"load_balance_coeff": 0.01}), {}, "misc.load-balance-coeff", "error",
     "expert_parallel.load_balance_coeff"),
    ("gds", cfg(aio={"use_gds": True}), {}, "misc.gds", "info", "aio.use_gds"),
    ("compression-shared-fails", cfg(compression_training={"shared_parameters": {"enabled": True}}),
     {"version": "0.18.9"}, "compression.shared-parameters-fails", "error", "compression_training.shared_parameters"),
    ("compression-shared", cfg(compression_training={"shared_parameters": {"enabled": False}}),
     {"version": "0.19.6"}, "compression.shared-parameters", "warning", "compression_training.shared_parameters"),
    ("negative-clipping", cfg(gradient_clipping=-1.0), {}, "misc.negative-clipping", "warning", "gradient_clipping"),
    ("optimizer-not-object", cfg(optimizer=None), {}, "optimizer.not-object", "error", "optimizer"),
    ("optimizer-no-type", cfg(optimizer={"params": {"lr": 1e-3}}), {}, "optimizer.no-type", "warning",
     "optimizer.type"),
    ("optimizer-type-int", cfg(optimizer={"type": 3, "params": {}}), {}, "optimizer.type-not-string", "error",
     "optimizer.type"),
    ("optimizer-unknown", cfg(optimizer={"type": "AdamX", "params": {"lr": 1e-3}}), {}, "optimizer.unknown",
     "error", "optimizer.type"),
    ("optimizer-torch-case", cfg(optimizer={"type": "sgd", "params": {"lr": 0.1}}), {}, "optimizer.unknown",
     "error", "optimizer.type"),
    ("optimizer-removed-in-0198", cfg(optimizer={"type": "OneBitAdam", "params": {"lr": 1e-3}}), {},
     "optimizer.unknown", "error", "optimizer.type"),
    ("lamb-static", cfg(optimizer={"type": "Lamb", "params": {"lr": 1e-3}}, fp16={"enabled": True, "loss_scale": 128},
                        zero_allow_untested_optimizer=True, zero_optimization={"stage": 1}), {},
     "optimizer.lamb-static-loss-scale", "error", "fp16.loss_scale"),
    ("untested-with-zero", cfg(optimizer={"type": "SGD", "params": {"lr": 0.1}}, zero_optimization={"stage": 2}),
     {}, "optimizer.untested-with-zero", "error", "zero_allow_untested_optimizer"),
    ("max-grad-norm", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-3, "max_grad_norm": 1.0}}), {},
     "optimizer.max-grad-norm", "error", "optimizer.params.max_grad_norm"),
    ("max-grad-norm-auto", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-3, "max_grad_norm": "x"}}), {},
     "optimizer.max-grad-norm-type", "error", "optimizer.params.max_grad_norm"),
    ("optimizer-unknown-param", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-3, "adam_w_mod": True}}), {},
     "optimizer.unknown-param", "error", "optimizer.params.adam_w_mod"),
    ("optimizer-param-type", cfg(optimizer={"type": "AdamW", "params": {"lr": "fast"}}), {},
     "optimizer.param-type", "error", "optimizer.params.lr"),
    ("optimizer-param-range", cfg(optimizer={"type": "AdamW", "params": {"lr": -1.0}}), {},
     "optimizer.param-range", "warning", "optimizer.params.lr"),
    ("optimizer-torch-raises", cfg(optimizer={"type": "SGD", "params": {"lr": 0.1, "nesterov": True}}), {},
     "optimizer.torch-raises", "error", "optimizer.params.nesterov"),
    ("autocast-module-missing", cfg(torch_autocast={"enabled": True, "lower_precision_safe_modules": [
        "torch.nn.Linear", "torch.nn.Embeding"]}), {}, "precision.autocast-module-missing", "error",
     "torch_autocast.lower_precision_safe_modules"),
    ("autocast-module-nn", cfg(torch_autocast={"enabled": True, "lower_precision_safe_modules": ["nn.LayerNorm"]}), {},
     "precision.autocast-module-nn", "warning", "torch_autocast.lower_precision_safe_modules"),
    ("random-ltd-schedule", cfg(data_efficiency={"data_routing": {"random_ltd": {
        "enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1, "random_ltd_schedule": None}}}), {},
     "data-efficiency.random-ltd-schedule", "error", "data_efficiency.data_routing.random_ltd.random_ltd_schedule"),
    ("random-ltd-layer-token-lr", cfg(data_efficiency={"data_routing": {"random_ltd": {
        "enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1,
        "random_ltd_schedule": {"min_value": 8, "max_value": 8, "schedule_type": "fixed_linear", "schedule_config": {}},
        "layer_token_lr_schedule": {"enabled": 1}}}}), {},
     "data-efficiency.random-ltd-layer-token-lr", "error",
     "data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.enabled"),
    ("keep-in-fp32-pattern", cfg(bf16={"enabled": True}, data_types={"keep_in_fp32_modules": ["(bias"]}), {},
     "data-types.keep-in-fp32-pattern", "error", "data_types.keep_in_fp32_modules"),
    ("optimizer-torch-step-raises", cfg(optimizer={"type": "RMSprop", "params": {"lr": 0.1, "weight_decay": True}}),
     {}, "optimizer.torch-step-raises", "error", "optimizer.params.weight_decay"),
    ("scheduler-torch-raises", cfg(optimizer={"type": "SGD", "params": {"lr": 0.1}},
                                   scheduler={"type": "ConstantLR", "params": {"factor": 2}}), {},
     "scheduler.torch-raises", "error", "scheduler.params.factor"),
    ("optimizer-param-bool", cfg(optimizer={"type": "AdamW", "params": {"lr": False}}), {},
     "optimizer.param-bool", "warning", "optimizer.params.lr"),
    ("optimizer-param-truthy", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-3, "amsgrad": "no"}}), {},
     "optimizer.param-truthy", "warning", "optimizer.params.amsgrad"),
    ("optimizer-param-truthy-cpu-adam", cfg(optimizer={"type": "Adam", "params": {"bias_correction": "no"}},
                                            zero_optimization={"stage": 2, "offload_optimizer": {"device": "cpu"}}),
     {}, "optimizer.param-type", "error", "optimizer.params.bias_correction"),
    ("scheduler-param-bool", cfg(scheduler={"type": "WarmupLR", "params": {"warmup_num_steps": True}}), {},
     "scheduler.param-bool", "warning", "scheduler.params.warmup_num_steps"),
    ("scale-power-0169", cfg(fp16={"enabled": True, "initial_scale_power": [12]}), {"version": "0.16.9"},
     "precision.scale-power", "error", "fp16.initial_scale_power"),
    ("scheduler-not-object", cfg(scheduler=[1]), {}, "scheduler.not-object", "error", "scheduler"),
    ("scheduler-no-type", cfg(scheduler={"params": {"warmup_num_steps": 10}}), {}, "scheduler.no-type", "warning",
     "scheduler.type"),
    ("scheduler-unknown", cfg(scheduler={"type": "warmuplr", "params": {}}), {}, "scheduler.unknown", "error",
     "scheduler.type"),
    ("scheduler-params-missing", cfg(scheduler={"type": "WarmupLR"}), {}, "scheduler.params-missing", "error",
     "scheduler.params"),
    ("scheduler-unknown-param", cfg(scheduler={"type": "WarmupLR", "params": {"warmup_max": 1e-3}}), {},
     "scheduler.unknown-param", "error", "scheduler.params.warmup_max"),
    ("scheduler-missing-param", cfg(scheduler={"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}), {},
     "scheduler.missing-param", "error", "scheduler.params.total_num_steps"),
    ("scheduler-param-type", cfg(scheduler={"type": "WarmupLR", "params": {"warmup_num_steps": 100.5}}), {},
     "scheduler.param-type", "error", "scheduler.params.warmup_num_steps"),
    ("scheduler-param-range", cfg(scheduler={"type": "WarmupLR", "params": {"warmup_num_steps": 0}}), {},
     "scheduler.param-range", "error", "scheduler.params.warmup_num_steps"),
    ("scheduler-param-text", cfg(scheduler={"type": "OneCycle", "params": {
        "cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4, "cycle_first_step_size": "100"}}), {},
     "scheduler.param-text", "warning", "scheduler.params.cycle_first_step_size"),
    ("scheduler-param-choice", cfg(scheduler={"type": "WarmupLR", "params": {"warmup_type": "cosine"}}), {},
     "scheduler.param-choice", "warning", "scheduler.params.warmup_type"),
    ("total-below-warmup", cfg(scheduler={"type": "WarmupDecayLR", "params": {"total_num_steps": 10,
                                                                             "warmup_num_steps": 100}}), {},
     "scheduler.total-below-warmup", "warning", "scheduler.params.total_num_steps"),
    ("auto-kept-optimizer", cfg(optimizer={"type": "AdamW", "params": {"lr": "auto"}}), {}, "auto.kept-optimizer",
     "error", "optimizer.params.lr"),
    ("scheduler-params-auto", cfg(scheduler={"type": "WarmupLR", "params": "auto"}, zero_optimization={"stage": 2}),
     {"target": "hf"}, "scheduler.params-not-object", "error", "scheduler.params"),
    ("scheduler-params-list", cfg(scheduler={"type": "WarmupLR", "params": [1]}), {},
     "scheduler.params-not-object", "error", "scheduler.params"),
    ("optimizer-params-not-object", cfg(optimizer={"type": "AdamW", "params": [1]}), {},
     "optimizer.params-not-object", "error", "optimizer.params"),
    ("sequence-parallel-zero", cfg(sequence_parallel_size=0), {}, "misc.sequence-parallel-invalid", "error",
     "sequence_parallel_size"),
    ("sequence-parallel-swallowed", cfg(sequence_parallel_size=0), {"version": "0.17.6", "world_size": 8},
     "misc.sequence-parallel-swallowed", "warning", "sequence_parallel_size"),
    ("flops-profiler-enabled", cfg(flops_profiler={"enabled": "maybe"}), {}, "misc.wall-clock-breakdown", "error",
     "flops_profiler.enabled"),
    ("compile-pass-0195", cfg(compile={"passes": ["autotp"]}), {"version": "0.19.5"},
     "compile.pass-not-in-version", "error", "compile.passes"),
    ("elasticity-batch-keys", cfg(elasticity={"enabled": True, "max_train_batch_size": 64,
                                              "micro_batch_sizes": [2, 4]}), {"version": "0.19.5"},
     "elasticity.batch-keys", "error", "elasticity.ignore_non_elastic_batch_info"),
    ("elasticity-world-size", {"elasticity": {"enabled": True, "max_train_batch_size": 100,
                                              "micro_batch_sizes": [2, 4], "version": 0.1}},
     {"version": "0.19.7", "world_size": 32}, "elasticity.world-size", "error", "elasticity"),
    ("elasticity-no-batch", {"elasticity": {"enabled": True, "max_train_batch_size": 8, "micro_batch_sizes": [4],
                                            "version": 0.2}},
     {"version": "0.19.7", "world_size": 3}, "elasticity.no-batch", "error", "elasticity.max_train_batch_size"),
    ("elasticity-overrides", {"train_batch_size": 32, "elasticity": {
        "enabled": True, "max_train_batch_size": 100, "micro_batch_sizes": [2, 4],
        "ignore_non_elastic_batch_info": True}}, {"version": "0.19.5", "world_size": 8},
     "elasticity.overrides", "warning", "elasticity"),
    ("elasticity-batch", {"elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4]}},
     {"version": "0.19.7", "world_size": 8}, "elasticity.batch", "info", "elasticity"),
    ("ignored-key", cfg(aio={"thread_count": 4}), {}, "keys.ignored", "warning", "aio.thread_count"),
    ("doc-only-top", cfg(fp32_allreduce=True), {}, "keys.doc-only", "warning", "fp32_allreduce"),
    ("doc-only-strict-on", cfg(zero_optimization={"stage": 3, "cpu_offload_params": True}), {}, "keys.doc-only-on",
     "error", "zero_optimization.cpu_offload_params"),
    ("doc-only-strict", cfg(zero_optimization={"stage": 3, "cpu_offload_params": False}), {}, "keys.doc-only",
     "error", "zero_optimization.cpu_offload_params"),
    ("type-engine", cfg(data_types={"grad_accum_dtype": "fp8"}), {}, "type.engine", "error",
     "data_types.grad_accum_dtype"),
    ("unknown-auto-strict", cfg(bf16={"enabled": True, "initial_scale_power": "auto"}), {}, "keys.unknown-auto",
     "warning", "bf16.initial_scale_power"),
    ("steps-per-print", cfg(steps_per_print=0), {}, "misc.steps-per-print", "error", "steps_per_print"),
    ("vocab-type", cfg(vocabulary_size="50k"), {}, "misc.vocabulary-size-type", "error", "vocabulary_size"),
    ("steps-per-print-odd", cfg(steps_per_print=-1), {}, "misc.steps-per-print-odd", "warning", "steps_per_print"),
    ("torch-scheduler-needs-objects", cfg(scheduler={"type": "LambdaLR", "params": {}}), {},
     "scheduler.needs-objects", "error", "scheduler.type"),
    ("torch-scheduler-missing", cfg(scheduler={"type": "StepLR", "params": {"gamma": 0.5}}), {},
     "scheduler.missing-param", "error", "scheduler.params.step_size"),
    ("torch-optimizer-param", cfg(optimizer={"type": "SGD", "params": {"lr": 0.1, "betas": [0.9, 0.99]}}), {},
     "optimizer.unknown-param", "error", "optimizer.params.betas"),
    ("compute-grad-norm-clipping", cfg(zero_optimization={"stage": 2, "compute_grad_norm": False}), {},
     "engine.compute-grad-norm-clipping", "error", "zero_optimization.compute_grad_norm"),
    ("compute-grad-norm-bf16-stage1", cfg(zero_optimization={"stage": 1, "compute_grad_norm": False},
                                          gradient_clipping=0.0, bf16={"enabled": True},
                                          data_types={"grad_accum_dtype": "fp32"}), {},
     "engine.compute-grad-norm-bf16-stage1", "error", "zero_optimization.compute_grad_norm"),
    ("dtype-mix", cfg(bf16={"enabled": True}, data_types={"grad_accum_dtype": "fp32"}), {}, "engine.dtype-mix",
     "error", "data_types.grad_accum_dtype"),
    ("compute-grad-norm-offload", cfg(gradient_clipping=0.0, zero_optimization={
        "stage": 2, "compute_grad_norm": False, "offload_optimizer": {"device": "cpu"}}), {},
     "engine.compute-grad-norm-offload", "error", "zero_optimization.compute_grad_norm"),
    ("autocast-conflict", cfg(torch_autocast={"enabled": True},
                              zero_optimization={"stage": 3, "zero_quantized_weights": True}), {},
     "engine.autocast-conflict", "error", "zero_optimization.zero_quantized_weights"),
    ("param-dtype-conflict", cfg(data_types={"param_dtype": "bf16"}), {}, "engine.param-dtype-conflict", "error",
     "data_types.param_dtype"),
    ("managed-accumulation", cfg(managed_gradient_accumulation=False, zero_optimization={"stage": 1,
                                                                                        "overlap_comm": True}),
     {}, "engine.managed-accumulation-overlap", "error", "managed_gradient_accumulation"),
    ("legacy-stage1", cfg(zero_optimization={"stage": 1, "legacy_stage1": True}), {}, "engine.legacy-stage1",
     "error", "zero_optimization.legacy_stage1"),
    ("autocast-module-name", cfg(torch_autocast={"enabled": True, "lower_precision_safe_modules": ["Linear"]}), {},
     "precision.autocast-module-name", "error", "torch_autocast.lower_precision_safe_modules"),
    ("managed-accumulation-deepcompile", cfg(managed_gradient_accumulation=False, compile={"deepcompile": True}), {},
     "engine.managed-accumulation-deepcompile", "error", "managed_gradient_accumulation"),
    ("allgather-bucket-odd", cfg(zero_optimization={"stage": 1, "allgather_bucket_size": 7}), {},
     "engine.allgather-bucket-alignment", "error", "zero_optimization.allgather_bucket_size"),
    ("muon-reduce-scatter", cfg(optimizer={"type": "muon", "params": {"lr": 0.02}}, zero_optimization={"stage": 3}),
     {}, "engine.muon-reduce-scatter", "error", "zero_optimization.reduce_scatter"),
    ("torch-scheduler-wrapped", cfg(fp16={"enabled": True}, scheduler={"type": "ExponentialLR",
                                                                      "params": {"gamma": 0.9}}),
     {}, "engine.torch-scheduler-wrapped", "error", "scheduler.type"),
    ("master-weights-offload", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-4}}, zero_optimization={"stage": 2},
                                   bf16={"enabled": True, "bf16_master_weights_and_grads": True}), {},
     "precision.master-weights-offload", "error", "bf16.bf16_master_weights_and_grads"),
    ("amp-zero", cfg(amp={"enabled": True}, zero_optimization={"stage": 2}), {"version": "0.19.7"},
     "engine.amp-zero", "error", "amp"),
    ("amp-half-precision", cfg(amp={"enabled": True}, fp16={"enabled": True}), {"version": "0.16.9"},
     "engine.amp-half-precision", "error", "amp"),
    ("amp-managed-accumulation", cfg(amp={"enabled": True}, managed_gradient_accumulation=False),
     {"version": "0.19.7"}, "engine.amp-managed-accumulation", "error", "amp"),
    ("autotp-size-string", cfg(tensor_parallel={"autotp_size": "2"}), {"world_size": 2},
     "engine.autotp-size-string", "error", "tensor_parallel.autotp_size"),
    ("autotp-world-size", cfg(tensor_parallel={"autotp_size": 4}), {"world_size": 6},
     "engine.autotp-world-size", "error", "tensor_parallel.autotp_size"),
    ("predivide-reduce-scatter", cfg(gradient_predivide_factor=2.0, zero_optimization={"stage": 2}), {},
     "engine.predivide-reduce-scatter", "error", "gradient_predivide_factor"),
    ("prescale-reduce-scatter", cfg(prescale_gradients=True, zero_optimization={"stage": 3}), {},
     "engine.prescale-reduce-scatter", "error", "prescale_gradients"),
    ("zenflow-without-offload", cfg(zero_optimization={"stage": 2, "zenflow": {}}), {},
     "engine.zenflow-without-offload", "error", "zero_optimization.offload_optimizer"),
    ("zenflow-optimizer-params", cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
                                     zero_optimization={"stage": 2, "zenflow": {},
                                                        "offload_optimizer": {"device": "cpu"}}), {},
     "engine.zenflow-optimizer-params", "error", "optimizer.params.torch_adam"),
    ("partial-offload-optimizer", cfg(optimizer={"type": "SGD", "params": {"lr": 0.01}},
                                      zero_optimization={"stage": 3, "offload_optimizer": {"device": "cpu",
                                                                                            "ratio": 0.5}}), {},
     "engine.partial-offload-optimizer", "error", "zero_optimization.offload_optimizer.ratio"),
    ("datastates-on", cfg(datastates_ckpt=None), {}, "misc.datastates-on", "warning", "datastates_ckpt"),
    ("comms-logger-on", cfg(comms_logger={"enabled": False, "verbose": True}), {}, "misc.comms-logger-on", "warning",
     "comms_logger"),
    ("sequence-parallel", cfg(sequence_parallel_size=3), {"world_size": 8}, "misc.sequence-parallel", "warning",
     "sequence_parallel_size"),
]


def _find(report: Report, code: str, path: str):
    return [f for f in report.findings if f.code == code and f.path == path]


@pytest.mark.parametrize(("config", "kwargs", "code", "severity", "path"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_rule(config, kwargs, code, severity, path):
    report = validate(config, **kwargs)
    found = _find(report, code, path)
    assert found, f"expected {code} at {path!r}; got {[(f.code, f.path) for f in report.findings]}"
    finding = found[0]
    assert finding.severity == severity
    assert finding.message and finding.message[-1] in ".)\"'"
    assert report.ok is (not report.errors)
    if severity == "error":
        assert not report.ok
    if finding.fix is not None and isinstance(config, dict):
        fixed = finding.fix.apply(config)
        assert fixed != config
        assert not _find(validate(fixed, **kwargs), code, path), f"the fix {finding.fix.description!r} did not fix"


#: Codes for failures no config is known to trigger; each has its own test below.
DEFENSIVE_CODES = {"type.unreadable"}


def test_unexpected_validator_failure_is_a_finding(monkeypatch):
    from core.rules import structure

    def explode(*_args, **_kwargs):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(structure.ROOT, "model_validate", explode)
    report = validate(cfg())
    assert "type.unreadable" in report.codes() and not report.ok


def test_only_the_preset_shape_is_called_a_preset_file():
    # a ds_config that happens to hold a `config` or `meta` key beside real ones is not a preset file
    for config in ({**BASE, "config": {}}, {"meta": {}, "config": {}, **BASE}, {"meta": "x", "config": BASE},
                   {"config": BASE}):
        assert "config.preset-file" not in validate(config).codes()
    preset = validate({"meta": {}, "config": BASE})
    assert preset.errors[0].code == "config.preset-file" and "dsconfig export --preset" in preset.errors[0].suggestion


def test_the_preset_file_fix_gives_back_the_config_under_it_key_for_key():
    from core.presets import BUILTIN_DIR, list_presets

    for preset in list_presets([BUILTIN_DIR])[0]:
        wrapped = {"meta": preset.meta, "config": preset.config}
        finding = next(f for f in validate(wrapped).errors if f.code == "config.preset-file")
        assert finding.fix is not None and not finding.fix.safe
        fixed = finding.fix.apply(wrapped)
        assert fixed == preset.config and list(fixed) == list(preset.config), preset.name
    dotted = {"meta": {}, "config": {**BASE, "a.b": 1, "c[0]": 2}}
    fix = next(f.fix for f in validate(dotted).errors if f.code == "config.preset-file")
    assert fix.apply(dotted) == {**BASE, "a.b": 1, "c[0]": 2}
    # a config that itself holds `config` would collide with the wrapper: the finding stands, with no fix
    colliding = validate({"meta": {}, "config": {**BASE, "config": {}}})
    assert next(f for f in colliding.errors if f.code == "config.preset-file").fix is None


def test_every_rule_code_has_a_case():
    """Every finding code written in the rule modules is exercised above."""
    sources = "".join(p.read_text() for p in Path("core/rules").glob("*.py"))
    sources += Path("core/validate.py").read_text()
    codes = set(re.findall(r'"(?:error|warning|info)",\s*(?:f?)"([a-z0-9-]+\.[a-z0-9.-]+)"', sources))
    covered = {c[3] for c in CASES} | DEFENSIVE_CODES
    assert codes, "no codes found: the pattern is out of date"
    assert codes <= covered, f"rules without a test: {sorted(codes - covered)}"


def test_all_findings_collected_not_just_the_first():
    config = {"train_batch_size": 8, "zero_optimization": {"stage": 9, "bogus": 1},
              "fp16": {"enabled": True}, "bf16": {"enabled": True}, "amp": {}}
    codes = validate(config, world_size=3).codes()
    assert {"type.enum", "keys.unknown", "precision.fp16-and-bf16", "removed.key", "batch.product"} <= codes


def test_clean_config_is_ok():
    config = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 2, "overlap_comm": True}}
    report = validate(config, world_size=8)
    assert report.ok and not report.warnings
    assert report.batch.train_batch_size == 32 and report.batch.world_size == 8


def test_derived_batch_values_reported():
    report = validate({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}, world_size=8)
    assert report.batch.train_batch_size == 64
    assert report.batch.derived == ("train_batch_size",)


def test_did_you_mean_and_misplaced():
    report = validate(cfg(zero_optimization={"stage": 2, "overlap_com": True}, offload_optimizer={"device": "cpu"}))
    typo = _find(report, "keys.unknown", "zero_optimization.overlap_com")[0]
    assert "overlap_comm" in typo.suggestion
    assert typo.fix.apply(report_config := cfg(zero_optimization={"stage": 2, "overlap_com": True}))[
        "zero_optimization"]["overlap_comm"] is True
    assert report_config["zero_optimization"]["overlap_com"] is True  # apply() does not mutate
    misplaced = _find(report, "keys.unknown-top-level", "offload_optimizer")[0]
    assert "zero_optimization" in misplaced.suggestion


def test_hf_target_accepts_hf_auto_keys():
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
              "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
              "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
                                    "stage3_prefetch_bucket_size": "auto",
                                    "stage3_param_persistence_threshold": "auto"}}
    assert validate(config, target="hf").ok
    assert not validate(config, target="deepspeed").ok


def test_removed_keys_accepted_by_0195():
    config = cfg(amp={"enabled": False})
    assert "removed.key" in validate(config).codes()
    assert "removed.key" not in validate(config, version="0.19.5").codes()


def test_infinite_and_huge_numbers_never_crash():
    for value in (float("inf"), -float("inf"), 10**400, -(10**400), 1e308):
        for key in ("steps_per_print", "gradient_clipping", "train_batch_size", "vocabulary_size",
                    "sequence_parallel_size"):
            validate(cfg(**{key: value}), world_size=8)
        validate(cfg(zero_optimization={"stage": 3, "reduce_bucket_size": value}))


def test_version_specific_checks():
    config = cfg(zero_optimization={"stage": 2, "zenflow": {"update_interval": 0},
                                    "offload_optimizer": {"device": "cpu"}})  # ZenFlow needs it
    assert "type.value_error" in validate(config).codes()
    assert validate(config, version="0.19.5").ok


def test_version_specific_bounds():
    config = cfg(zero_optimization={"stage": 3, "zenflow": {"topk_ratio": 1.0}})
    assert not validate(config).ok
    assert validate(config, version="0.19.5").ok


def test_validate_does_not_mutate_input():
    config = cfg(zero_optimization={"stage": 3, "offload_param": {"device": "cpu"}}, bf16={"enabled": "auto"})
    snapshot = repr(config)
    validate(config, world_size=8)
    assert repr(config) == snapshot


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="target"):
        validate({}, target="torch")
    with pytest.raises(ValueError, match="version"):
        validate({}, version="9.9")
    with pytest.raises(ValueError, match="world_size"):
        validate({}, world_size=0)


@pytest.mark.parametrize(("section", "path", "fixed_to"), [
    ({"tag_validation": "failed"}, "checkpoint.tag_validation", "Fail"),
    ({"tag_validation": 3}, "checkpoint.tag_validation", "Warn"),
    ({"writer": {"type": "fst"}}, "checkpoint.writer.type", "FAST"),
    ({"writer": {"type": "pyhton"}}, "checkpoint.writer.type", "PYTHON"),
    ({"writer": {"type": "slow"}}, "checkpoint.writer.type", "FAST"),
    ({"writer": {"data_parallel": "machin"}}, "checkpoint.writer.data_parallel", "MACHINE"),
    ({"writer": {"data_parallel": "node"}}, "checkpoint.writer.data_parallel", None),
])
def test_a_checkpoint_value_outside_its_choices_gets_the_closest_one_or_the_default(section, path, fixed_to):
    report = validate(cfg(checkpoint=section))
    finding = next(f for f in report.findings if f.path == path)
    assert finding.severity == "error" and finding.suggestion and finding.fix is not None
    fixed = finding.fix.apply(cfg(checkpoint=section))
    leaf = path.split(".")[-1]
    holder = fixed["checkpoint"]["writer"] if ".writer." in path else fixed["checkpoint"]
    assert holder.get(leaf) == fixed_to if fixed_to is not None else leaf not in holder
    assert validate(fixed).ok


def test_checkpoint_choices_in_any_case_are_accepted():
    config = cfg(checkpoint={"tag_validation": "fail", "writer": {"type": "Python", "data_parallel": "socket"}})
    assert validate(config).ok


@pytest.mark.parametrize("config", [
    {"train_micro_batch_size_per_gpu": 2.5, "gradient_accumulation_steps": 2},
    {"train_micro_batch_size_per_gpu": True},
    {"train_batch_size": 10.0, "train_micro_batch_size_per_gpu": 2.5, "gradient_accumulation_steps": 2},
])
def test_a_batch_value_that_is_not_a_whole_number_gets_whole_numbers_that_work(config):
    finding = next(f for f in validate(config, world_size=2).findings if f.code == "batch.not-integer")
    assert "True" not in finding.message and finding.fix is not None and "Whole numbers" in finding.suggestion
    fixed = finding.fix.apply(config)
    assert all(isinstance(fixed[k], int) and not isinstance(fixed[k], bool) for k in
               ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"))
    assert not [f for f in validate(fixed, world_size=2).findings if f.code.startswith("batch.")]


@pytest.mark.parametrize(("value", "written"), [(500.0, 500), (500.5, 501), (2.4, 2), (1e300, 1000)])
def test_an_integer_scheduler_parameter_written_as_a_float_is_fixed_to_its_whole_number(value, written):
    config = cfg(optimizer={"type": "AdamW", "params": {"lr": 1e-4}},
                 scheduler={"type": "WarmupLR", "params": {"warmup_num_steps": value}})
    finding = next(f for f in validate(config).findings if f.path == "scheduler.params.warmup_num_steps")
    fixed = finding.fix.apply(config)
    assert fixed["scheduler"]["params"]["warmup_num_steps"] == written
    assert type(fixed["scheduler"]["params"]["warmup_num_steps"]) is int


@pytest.mark.parametrize(("section", "code", "safe"), [
    ({"amp": {"enabled": False}}, "removed.key", True),
    ({"amp": {"enabled": True, "opt_level": "O1"}}, "removed.enabled-section", False),
    ({"amp": {}}, "removed.key", True),
    # flags, sections without `enabled`, and values other than the last reading release's default are on too:
    # the safe fix deleted them (sparse gradients, MiCS, sparse attention off, exit code 0)
    ({"sparse_gradients": True}, "removed.enabled-section", False),
    ({"sparse_gradients": False}, "removed.key", True),
    ({"graph_harvesting": True}, "removed.enabled-section", False),
    ({"sparse_attention": {"mode": "fixed", "block": 16}}, "removed.enabled-section", False),
    ({"zero_optimization": {"stage": 3, "mics_shard_size": 8}}, "removed.enabled-section", False),
    ({"zero_optimization": {"stage": 3, "mics_shard_size": -1}}, "removed.key", True),
    ({"zero_optimization": {"stage": 3, "mics_hierarchical_params_gather": True}}, "removed.enabled-section",
     False),
])
def test_removing_a_switched_on_removed_section_is_an_unsafe_fix(section, code, safe):
    path = next(iter(section)) if "zero_optimization" not in section else "zero_optimization." + next(
        k for k in section["zero_optimization"] if k != "stage")
    finding = next(f for f in validate(cfg(**section)).findings if f.path == path)
    assert finding.code == code and finding.fix is not None and finding.fix.safe is safe


@pytest.mark.parametrize(("version", "section", "path", "code"), [
    ("0.16.9", {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                                      "zenflow": {"topk_ratio": 0.05}}}, "zero_optimization.zenflow",
     "keys.not-in-version-on"),
    ("0.17.6", {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True}, "zero_optimization": {"stage": 2}},
     "bf16.bf16_master_weights_and_grads", "keys.not-in-version-on"),
    ("0.17.6", {"bf16": {"enabled": True, "bf16_master_weights_and_grads": False}, "zero_optimization": {"stage": 2}},
     "bf16.bf16_master_weights_and_grads", "keys.not-in-version"),
    ("0.19.5", {"zero_optimization": {"stage": 2, "compute_grad_norm": False}}, "zero_optimization.compute_grad_norm",
     "keys.not-in-version-on"),
    ("0.19.5", {"zero_optimization": {"stage": 2, "compute_grad_norm": True}}, "zero_optimization.compute_grad_norm",
     "keys.not-in-version"),
])
def test_a_key_newer_than_the_release_and_switched_on_is_not_removed_by_a_safe_fix(version, section, path, code):
    """keys.not-in-version's safe fix deleted ZenFlow, bf16 master weights and compute_grad_norm: false: the
    config then loads in the old release, training without them. The default value of the releases that read the
    key decides what is on (compute_grad_norm defaults to true)."""
    from core.autofix import fix_until_stable

    config = cfg(**section)
    finding = next(f for f in validate(config, version=version).findings if f.path == path)
    assert finding.code == code
    assert finding.fix.safe is (code == "keys.not-in-version")
    kept = fix_until_stable(config, version=version).config
    assert (get_path(kept, path) is not None) is (code == "keys.not-in-version-on")


def test_works_with_names_an_enabled_removed_section_as_removed():
    from core.versions.matrix import summarise, works_with

    result = works_with(cfg(amp={"enabled": True}))
    assert "removed `amp`" in result.summary
    assert result.summary == summarise(result.verdicts)


@pytest.mark.parametrize("key", ["_comment", "comment", "//", "# why", "Description", "_note"])
def test_a_comment_key_where_deepspeed_ignores_it_is_an_info_and_never_renamed(key):
    config = cfg(**{key: "ZeRO-2 for the 7B runs"}, activation_checkpointing={key: "x"})
    found = [f for f in validate(config).findings if f.path.endswith(key)]
    assert [f.code for f in found] == ["keys.comment", "keys.comment"]
    assert all(f.severity == "info" and f.fix is None for f in found)


def test_a_comment_key_in_a_strict_section_is_moved_to_the_top_level_keeping_its_text():
    from core.autofix import fix_until_stable

    config = cfg(_comment="top", zero_optimization={"stage": 2, "_comment": "zero", "//": "slashes"})
    errors = [f for f in validate(config).findings if f.severity == "error"]
    assert {f.path for f in errors} == {"zero_optimization._comment", "zero_optimization.//"}
    assert all("looks like a comment" in f.message and "rename" not in f.fix.description.lower() for f in errors)
    fixed = fix_until_stable(config, unsafe=True).config
    assert fixed["zero_optimization"] == {"stage": 2}
    assert (fixed["_comment"], fixed["_comment_zero_optimization"], fixed["//"]) == ("top", "zero", "slashes")
    assert validate(fixed).ok


@pytest.mark.parametrize(("section", "path", "fixed_to"), [
    ({"fp16": {"enabled": True, "hysteresis": [2]}}, "fp16.hysteresis", 2),
    ({"fp16": {"enabled": True, "min_loss_scale": 0.5}}, "fp16.min_loss_scale", 1),
    ({"fp16": {"enabled": True, "loss_scale": -1}}, "fp16.loss_scale", 0.0),
    ({"zero_optimization": {"stage": 2, "reduce_bucket_size": "5e8"}}, "zero_optimization.reduce_bucket_size",
     500_000_000),
    ({"zero_optimization": {"stage": 2, "overlap_comm": [False]}}, "zero_optimization.overlap_comm", False),
    ({"zero_optimization": {"stage": 3, "stage3_max_reuse_distance": "many"}},
     "zero_optimization.stage3_max_reuse_distance", 1_000_000_000),
    ({"timers": {"throughput": {"enabled": "sometimes"}}}, "timers.throughput.enabled", True),
])
def test_a_value_of_the_wrong_type_gets_what_it_most_likely_meant_or_the_default(section, path, fixed_to):
    from core.findings import get_path

    config = cfg(**section)
    finding = next(f for f in validate(config).findings if f.path == path)
    assert finding.fix is not None and not finding.fix.safe
    fixed = finding.fix.apply(config)
    assert get_path(fixed, path) == fixed_to and type(get_path(fixed, path)) is type(fixed_to)
    assert path not in {f.path for f in validate(fixed).findings if f.severity == "error"}


def test_a_section_that_is_not_an_object_gets_no_value_fix():
    finding = next(f for f in validate(cfg(fp16=[1])).findings if f.path == "fp16")
    assert finding.code == "type.model_type" and finding.fix is None


def test_negative_and_one_item_list_batch_values_get_whole_trios():
    finding = next(f for f in validate({"train_batch_size": -8}).findings if f.code == "batch.tb-positive")
    assert finding.fix.apply({"train_batch_size": -8})["train_batch_size"] == 8
    config = {"train_micro_batch_size_per_gpu": [8], "gradient_accumulation_steps": 2}
    finding = next(f for f in validate(config).findings if f.code == "batch.type")
    assert finding.fix.apply(config)["train_micro_batch_size_per_gpu"] == 8


def test_parameter_offload_below_stage_3_with_compute_grad_norm_false_removes_the_offload_not_the_stage():
    # DeepSpeed refuses compute_grad_norm false at stage 3, so switching to stage 3 would break the config.
    config = cfg(gradient_clipping=0.0, zero_optimization={"stage": 2, "compute_grad_norm": False,
                                                           "offload_param": {"device": "cpu"}})
    finding = next(f for f in validate(config).findings if f.code == "zero.offload-param-below-3")
    fixed = finding.fix.apply(config)
    assert fixed["zero_optimization"] == {"stage": 2, "compute_grad_norm": False}
    assert validate(fixed).ok
    plain = cfg(zero_optimization={"stage": 2, "offload_param": {"device": "cpu"}})
    finding = next(f for f in validate(plain).findings if f.code == "zero.offload-param-below-3")
    assert finding.fix.apply(plain)["zero_optimization"]["stage"] == 3


@pytest.mark.parametrize(("value", "target", "fixed"), [("2", "deepspeed", 2), ("auto", "deepspeed", None),
                                                          ("2", "hf", 2), ("auto", "hf", None)])
def test_a_string_autotp_size_fails_before_the_parser_and_auto_is_not_called_the_default(value, target, fixed):
    config = cfg(tensor_parallel={"autotp_size": value})
    report = validate(config, world_size=2, target=target)
    finding = next(f for f in report.findings if f.path == "tensor_parallel.autotp_size")
    assert finding.code == "engine.autotp-size-string" and "auto.default" not in report.codes()
    after = finding.fix.apply(config)
    assert after.get("tensor_parallel", {}).get("autotp_size") == fixed


def test_a_string_autotp_size_is_fine_for_a_release_that_does_not_compare_it():
    from core import versions

    older = [r for r in versions.RELEASES
             if not versions.profile(r).get("initialize_compares_autotp_size")
             and versions.key_known(r, "tensor_parallel", "autotp_size")]
    assert older, "no profiled release reads autotp_size without comparing it"
    report = validate(cfg(tensor_parallel={"autotp_size": "2"}), world_size=2, version=older[-1])
    assert "engine.autotp-size-string" not in report.codes()


def test_a_wrong_value_inside_a_named_curriculum_metric_is_reported_at_its_own_path_and_fixed_there():
    # curriculum_metrics maps a metric's name to its settings: the finding's path must include the name, or the
    # fix removes a key that is not there and the finding stays (found by test_fuzz on a corpus template)
    metric = {"index_to_sample_path": "s", "index_to_metric_path": "m", "difficulty_type": "value",
              "clustering_type": "single_cluster", "min_difficulty": "CL_MIN", "max_difficulty": 100,
              "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 1}}
    config = cfg(data_efficiency={"enabled": True, "data_sampling": {"enabled": True, "curriculum_learning": {
        "enabled": True, "curriculum_metrics": {"seq.len": metric}}}})
    path = "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics.seq\\.len.min_difficulty"
    finding = next(f for f in validate(config).findings if f.path.endswith("min_difficulty"))
    assert finding.path == path and finding.fix is not None
    fixed = finding.fix.apply(config)
    metrics = fixed["data_efficiency"]["data_sampling"]["curriculum_learning"]["curriculum_metrics"]
    assert "min_difficulty" not in metrics["seq.len"] and metrics["seq.len"]["max_difficulty"] == 100
    assert path not in {f.path for f in validate(fixed).findings}


@pytest.mark.parametrize(("items", "left"), [([None], []), ([None, None], []), ([4, None, "x", 7], [4, 7])])
def test_items_of_a_list_that_cannot_be_read_are_removed_together(items, left):
    # a delete of "ids[0]" did nothing (only dict keys were deleted), and removing one of two bad items left the
    # other under the same index: the fix now removes every such item of the list at once
    config = cfg(data_efficiency={"data_routing": {"random_ltd": {"random_ltd_layer_id": items}}})
    findings = [f for f in validate(config).findings if f.path.startswith(
        "data_efficiency.data_routing.random_ltd.random_ltd_layer_id[")]
    assert findings and all(f.fix is not None for f in findings)
    for finding in findings:
        fixed = finding.fix.apply(config)
        assert fixed["data_efficiency"]["data_routing"]["random_ltd"]["random_ltd_layer_id"] == left
        assert not [f for f in validate(fixed).findings if "random_ltd_layer_id" in f.path]


def test_a_field_whose_default_json_cannot_write_is_fixed_by_removing_it():
    # tensor_parallel.dtype refuses every JSON value (DeepSpeed wants a torch.dtype): setting it to its default
    # "torch.float16" was refused again; the fix now takes the key out
    config = cfg(tensor_parallel={"dtype": None})
    finding = next(f for f in validate(config).findings if f.path == "tensor_parallel.dtype")
    fixed = finding.fix.apply(config)
    assert "dtype" not in fixed["tensor_parallel"]
    assert not [f for f in validate(fixed).findings if f.path == "tensor_parallel.dtype"]


@pytest.mark.parametrize(("section", "path", "meant"), [
    ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "CPU"}}},
     "zero_optimization.offload_optimizer.device", "cpu"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": " NVMe", "nvme_path": "/n"}}},
     "zero_optimization.offload_param.device", "nvme"),
])
def test_a_choice_written_in_another_case_is_fixed_to_that_choice(section, path, meant):
    """DeepSpeed matches choices exactly ("Input should be 'none', 'cpu' or 'nvme'"); the fix wrote the default,
    "none", which turned the offload the user asked for off."""
    finding = next(f for f in validate(cfg(**section)).findings if f.path == path)
    assert get_path(finding.fix.apply(cfg(**section)), path) == meant


def test_the_editor_schema_key_the_readme_advises_gets_no_finding():
    """README: `{ "$schema": "./ds_config.schema.json", ... }` for editor checking; the validator warned on every
    file that followed the advice ("Unknown top-level key `$schema`")."""
    config = {"$schema": "./ds_config.schema.json", "train_batch_size": 32}
    assert list(validate(config).findings) == []
    nested = {"train_batch_size": 32, "zero_optimization": {"stage": 1, "$schema": "x"}}
    assert [f.code for f in validate(nested).errors] == ["keys.unknown"]  # only the top level is the editor's


def test_messages_name_the_release_validated_for():
    """The elasticity and amp messages named DeepSpeed 0.19.5 whatever release was chosen."""
    elastic = cfg(elasticity={"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4]})
    finding = next(f for f in validate(elastic, version="0.17.6").findings if f.code == "elasticity.batch-keys")
    assert "DeepSpeed 0.17.6 refuses" in finding.message
    amp = next(f for f in validate(cfg(amp={"opt_level": "O1"}), version="0.16.9").findings if f.path == "amp")
    assert "0.19.5" not in amp.message and "KeyError: 'enabled'" in amp.message


READ_AS_ON = [
    ("0.19.8", {"prescale_gradients": "false"}, "prescale_gradients", "c.prescale_gradients"),
    ("0.19.8", {"activation_checkpointing": {"partition_activations": "no"}},
     "activation_checkpointing.partition_activations", "c.activation_checkpointing_config.partition_activations"),
    ("0.16.9", {"bf16": {"enabled": "false"}}, "bf16.enabled", "c.bfloat16_enabled"),
]


@pytest.mark.deepspeed
@pytest.mark.parametrize(("version", "section", "path", "attribute"), READ_AS_ON,
                         ids=["prescale", "partition-activations", "bf16-0.16"])
def test_a_boolean_written_as_a_string_that_spells_off_is_read_as_on(version, section, path, attribute):
    """DeepSpeed reads these keys with dict.get and tests them as Python truth values: "false" is on. The
    validator said nothing. The release's own parser is the judge: the attribute it keeps is the (true) string."""
    import json
    import os
    import subprocess

    from tests.oracle.oracle import release_interpreter

    config = cfg(**section)
    python, env = release_interpreter(version)
    code = ("import json, sys, logging; logging.disable(logging.CRITICAL)\n"
            "from deepspeed.runtime.config import DeepSpeedConfig\n"
            f"c = DeepSpeedConfig(json.loads(sys.argv[1]))\nprint(json.dumps(bool({attribute})))")
    done = subprocess.run([python, "-c", code, json.dumps(config)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert json.loads(done.stdout.strip().splitlines()[-1]) is True, done.stderr[-2000:]
    finding = next(f for f in validate(config, version=version).findings if f.path == path)
    assert finding.code == "type.truthy-string" and finding.severity == "warning"
    assert get_path(finding.fix.apply(config), path) is False


def test_a_string_boolean_in_a_section_the_release_parses_with_pydantic_is_not_a_truthy_string():
    """bf16 is a pydantic section from 0.19 on: "false" is parsed as false there."""
    assert not [f for f in validate(cfg(bf16={"enabled": "false"}), version="0.19.8").findings
                if f.code == "type.truthy-string"]


@pytest.mark.parametrize(("config", "path", "dest"), [
    ({"sequence_parallel": {"enabled": True, "size": 4}}, "sequence_parallel", "sequence_parallel_size"),
    ({"optimiser": "AdamW"}, "optimiser", "optimizer"),
    ({"data_type": "bf16"}, "data_type", "data_types"),
    ({"zero_optimization": {"stage": 2}, "overlap_comm": [1]}, "overlap_comm", "zero_optimization.overlap_comm"),
    ({"zero_optimization": {"stage": 2, "offload_optimizer_device": "cpu"}},
     "zero_optimization.offload_optimizer_device", "zero_optimization.offload_optimizer"),
])
def test_no_rename_fix_puts_a_value_where_it_does_not_fit(config, path, dest):
    """A "did you mean" rename moved the value as it was: an ignored key became an error (a dict into
    sequence_parallel_size, a string into the optimizer section). Such keys keep the suggestion, say why there is no
    fix, and get none."""
    config = {"train_micro_batch_size_per_gpu": 1, **config}
    finding = next(f for f in validate(config, world_size=8).findings if f.path == path)
    assert finding.fix is None
    assert f"`{dest.rpartition('.')[2]}`" in finding.suggestion and "does not fit there as it is" in finding.suggestion


@pytest.mark.parametrize(("config", "path"), [
    ({"sequence_parallel": 2}, "sequence_parallel"),
    ({"optimiser": {"type": "AdamW", "params": {"lr": 1e-4}}}, "optimiser"),
    ({"zero_optimization": {"stage": 2}, "overlap_comm": True}, "overlap_comm"),
    ({"tensor_paralel": {"tp_size": 2}}, "tensor_paralel"),  # the move is right; the inner key is its own finding
])
def test_a_rename_fix_whose_value_fits_removes_the_finding_and_adds_no_error_at_its_key(config, path):
    config = {"train_micro_batch_size_per_gpu": 1, **config}
    before = validate(config, world_size=8)
    finding = next(f for f in before.findings if f.path == path)
    after = validate(finding.fix.apply(config), world_size=8)
    assert path not in {f.path for f in after.findings}
    dest = finding.fix.ops[0].to
    assert not [f for f in after.errors if f.path == dest], [f.message for f in after.errors]


@pytest.mark.parametrize("name", ["OneBitAdam", "ZeroOneAdam", "OneBitLamb"])
def test_an_optimizer_of_other_releases_gets_no_spelling_fix(name):
    """0.19.8 removed the 1-bit optimizers; the nearest spelling (NAdam, RAdam) is another algorithm whose
    parameters differ, and the one-click fix made new errors. It now names a release that has it and offers no fix."""
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": name, "params": {"lr": 1e-4}}}
    finding = next(f for f in validate(config, version="0.19.8").errors if f.code == "optimizer.unknown")
    assert finding.fix is None
    release = re.search(r"Validate for a release that has it \(DeepSpeed (\d+\.\d+\.\d+)\)", finding.suggestion)
    assert release, finding.suggestion
    assert "optimizer.unknown" not in validate(config, version=release[1]).codes()  # it does have it
    # a misspelling still gets its fix
    typo = next(f for f in validate({**config, "optimizer": {"type": "AdamWW"}}).errors
                if f.code == "optimizer.unknown")
    assert typo.fix is not None and typo.suggestion == 'Did you mean "AdamW"?'


def test_sub_group_size_zero_is_named_only_where_zero_3_reads_it_and_the_fix_fits_the_offload():
    """ZeRO-3's _create_fp16_sub_groups closes a sub-group once it holds >= sub_group_size elements: 0 makes one per
    tensor. Stages 1 and 2 never read the key, and a positive size is what the user chose."""
    def finding(zero):
        report = validate(cfg(zero_optimization=zero))
        return next((f for f in report.findings if f.code == "zero.sub-group-zero"), None)

    assert finding({"stage": 2, "sub_group_size": 0}) is None
    assert finding({"stage": 3, "sub_group_size": 1}) is None
    assert finding({"stage": 3}) is None
    plain = finding({"stage": 3, "sub_group_size": 0.0})
    assert plain.fix.ops[0].op == "delete" and plain.fix.safe is False
    nvme = finding({"stage": 3, "sub_group_size": "0",
                    "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme"}})
    assert nvme.fix.ops[0].value == 100_000_000 and "100,000,000" in nvme.suggestion
    assert plain.severity == "info" and "own sub-group" in plain.message
    fixed = plain.fix.apply(cfg(zero_optimization={"stage": 3, "sub_group_size": 0}))
    assert "zero.sub-group-zero" not in validate(fixed).codes()


@pytest.mark.parametrize(("version", "checked", "ignored"), [
    ("0.16.3", "seq_parallel_comm_data_type", "seq_parallel_communication_data_type"),
    ("0.19.8", "seq_parallel_communication_data_type", "seq_parallel_comm_data_type"),
])
def test_the_sequence_parallel_dtype_is_checked_under_the_key_the_release_reads(version, checked, ignored):
    """Before 0.16.5 DeepSpeed reads seq_parallel_comm_data_type and stops on "fp8" ('Invalid
    communication_data_type'); the rule checked only the later spelling, so 0.16.0-0.16.4 passed it."""
    report = validate({"train_micro_batch_size_per_gpu": 1, checked: "fp8", ignored: "fp9"}, version=version)
    assert [f.path for f in report.findings if f.code == "comm.dtype"] == [checked]


def test_a_switched_on_doc_only_key_gets_an_unsafe_fix():
    """cpu_offload_params true (the docs' misspelling of cpu_offload_param) and fp16's initial_loss_scale_power 8:
    `dsconfig fix` removed both as safe, and the result trained without parameter offload, at scale power 16."""
    config = cfg(zero_optimization={"stage": 3, "cpu_offload_params": True},
                 fp16={"enabled": True, "initial_loss_scale_power": 8})
    found = {f.path: f for f in validate(config).findings if f.code.startswith("keys.doc-only")}
    assert {path: f.code for path, f in found.items()} == {
        "zero_optimization.cpu_offload_params": "keys.doc-only-on", "fp16.initial_loss_scale_power": "keys.doc-only-on"}
    assert all(f.fix is not None and not f.fix.safe for f in found.values())
    off = cfg(zero_optimization={"stage": 3, "cpu_offload_params": False})
    (finding,) = [f for f in validate(off).findings if f.code.startswith("keys.doc-only")]
    assert finding.code == "keys.doc-only" and finding.fix.safe


def test_adam_w_mode_of_adam_reaches_the_cpu_kernel_as_it_is():
    """type Adam under CPU offload passes adam_w_mode to create_adam: "yes" is a TypeError at initialize (validate
    called it a truth value with a safe fix). AdamW forces it true; the GPU kernels read it as a truth value."""
    cpu = {"stage": 2, "offload_optimizer": {"device": "cpu"}}
    adam = {"type": "Adam", "params": {"lr": 1e-3, "adam_w_mode": "yes"}}
    report = validate(cfg(zero_optimization=cpu, optimizer=adam))
    assert [(f.code, f.severity) for f in report.findings if f.path == "optimizer.params.adam_w_mode"] == [
        ("optimizer.param-type", "error")]
    on_gpu = validate(cfg(zero_optimization={"stage": 2}, optimizer=adam))
    assert [f.code for f in on_gpu.findings if f.path == "optimizer.params.adam_w_mode"] == ["optimizer.param-truthy"]


def test_the_master_weights_stage_fix_is_not_offered_where_the_stage_it_sets_refuses_the_flag():
    """Stage 0 with bf16 master weights and an optimizer: 'Set ZeRO stage 1' led straight to
    precision.master-weights-offload. Without an optimizer section (a client one) the fix stays."""
    flag = {"enabled": True, "bf16_master_weights_and_grads": True}
    with_optimizer = cfg(bf16=flag, optimizer={"type": "AdamW", "params": {"lr": 1e-4}})
    (finding,) = [f for f in validate(with_optimizer).findings if f.code == "precision.master-weights-stage"]
    assert finding.fix is None and "DeepSpeedCPUAdam" in finding.suggestion
    offloaded = {**with_optimizer, "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}}
    (finding,) = [f for f in validate(offloaded).findings if f.code == "precision.master-weights-stage"]
    assert finding.fix is not None
    (finding,) = [f for f in validate(cfg(bf16=flag)).findings if f.code == "precision.master-weights-stage"]
    assert finding.fix is not None
