"""Hand-written corner cases for the differential tests, each a complete config."""

from __future__ import annotations

from typing import Any

from tests.oracle.corpus import Mutation

_BASE = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1}


def _dynamic(section: dict[str, Any]) -> dict[str, Any]:
    return {**_BASE, "data_efficiency": {"data_sampling": {"dynamic_batching": section}}}


def edge_configs() -> list[Mutation]:
    """Hand-written corner cases, each a complete config."""
    cases: list[tuple[str, dict[str, Any]]] = [
        ("empty config", {}),
        ("only train_batch_size 8", {"train_batch_size": 8}),
        ("minimal micro batch", dict(_BASE)),
        ("all batch keys null", {"train_batch_size": None, "train_micro_batch_size_per_gpu": None}),
        ("unknown top-level key", {**_BASE, "bogus_top_level": 1}),
        ("British zero_optimisation at top level", {**_BASE, "zero_optimisation": {"stage": 3}}),
        ("unknown key inside zero_optimization", {**_BASE, "zero_optimization": {"stage": 2, "stagee": 3}}),
        ("unknown key inside fp16", {**_BASE, "fp16": {"enabled": False, "loss_scal": 0}}),
        ("unknown key inside bf16 (check_overflow)", {**_BASE, "bf16": {"enabled": True, "check_overflow": True}}),
        ("unknown key inside optimizer (ignored)", {**_BASE, "optimizer": {"type": "AdamW", "parms": {"lr": 1e-3}}}),
        (
            "unknown key inside activation_checkpointing",
            {**_BASE, "activation_checkpointing": {"partition_activation": True}},
        ),
        ("unknown key inside tensorboard", {**_BASE, "tensorboard": {"enabled": True, "output": "x"}}),
        ("unknown key inside wandb", {**_BASE, "wandb": {"enabled": False, "entity": "me"}}),
        (
            "unknown key inside offload_param",
            {**_BASE, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin": True}}},
        ),
        ("unknown key inside hybrid_engine", {**_BASE, "hybrid_engine": {"enabled": False, "max_tokens": 5}}),
        ("unknown key inside comms_logger", {**_BASE, "comms_logger": {"enabled": True, "prof_al": True}}),
        ("unknown key inside compile", {**_BASE, "compile": {"deepcompile": False, "backend": "inductor"}}),
        ("unknown key inside timers.throughput", {**_BASE, "timers": {"throughput": {"enabled": True, "x": 1}}}),
        ("unknown key inside weight_quantization", {**_BASE, "weight_quantization": {"num_bit": 8}}),
        ("unknown key inside tensor_parallel", {**_BASE, "tensor_parallel": {"autotp_size": 1, "tp_sise": 2}}),
        ("tensor_parallel tp block", {**_BASE, "tensor_parallel": {"tp": {"tp_size": 1}}}),
        (
            "zero stage 3 with every alias",
            {
                **_BASE,
                "zero_optimization": {
                    "stage": 3,
                    "stage3_prefetch_bucket_size": 5e7,
                    "stage3_param_persistence_threshold": 1e5,
                    "stage3_max_live_parameters": 1e9,
                    "stage3_max_reuse_distance": 1e9,
                    "stage3_gather_16bit_weights_on_model_save": True,
                },
            },
        ),
        (
            "zero field name and alias both",
            {**_BASE, "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9, "max_live_parameters": 1e9}},
        ),
        # read_zero_config_deprecated: with `"zero_optimization": true` the top-level allgather_size is
        # DeepSpeedZeroConfig's allgather_bucket_size (checked there); with false it is not read.
        ("bool zero true with allgather_size -1", {**_BASE, "zero_optimization": True, "allgather_size": -1}),
        ("bool zero true with allgather_size 'x'", {**_BASE, "zero_optimization": True, "allgather_size": "x"}),
        ("bool zero true with allgather_size null", {**_BASE, "zero_optimization": True, "allgather_size": None}),
        ("bool zero true with allgather_size 1e3", {**_BASE, "zero_optimization": True, "allgather_size": 1e3}),
        ("bool zero false with allgather_size 'x'", {**_BASE, "zero_optimization": False, "allgather_size": "x"}),
        ("stage as bool true", {**_BASE, "zero_optimization": {"stage": True}}),
        ("stage as integral float", {**_BASE, "zero_optimization": {"stage": 2.0}}),
        # pydantic's lax int reads "3.0", " 3 ", "1_000": the stage (and so the stage-3-only rules) follow it
        (
            "stage '3.0' with partial optimizer offload",
            {**_BASE, "zero_optimization": {"stage": "3.0", "offload_optimizer": {"device": "cpu", "ratio": 0.5}}},
        ),
        ("stage ' 1 ' with compute_grad_norm false", {**_BASE, "zero_optimization": {"stage": " 1 ",
                                                                                     "compute_grad_norm": False}}),
        ("fp16 min_loss_scale '1.0' (a plain int field before 0.19.5)",
         {**_BASE, "fp16": {"enabled": True, "min_loss_scale": "1.0"}}),
        ("stage null", {**_BASE, "zero_optimization": {"stage": None}}),
        ("reduce_bucket_size as float 5e8", {**_BASE, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8}}),
        (
            "reduce_bucket_size as digit string",
            {**_BASE, "zero_optimization": {"stage": 2, "reduce_bucket_size": "100"}},
        ),
        ("overlap_comm 'yes' (lax bool)", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": "yes"}}),
        ("overlap_comm 2", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": 2}}),
        ("overlap_comm null", {**_BASE, "zero_optimization": {"stage": 2, "overlap_comm": None}}),
        ("offload_param null", {**_BASE, "zero_optimization": {"stage": 3, "offload_param": None}}),
        ("offload device 'auto'", {**_BASE, "zero_optimization": {"stage": 3, "offload_param": {"device": "auto"}}}),
        (
            "offload nvme with path",
            {
                **_BASE,
                "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}},
            },
        ),
        ("leaf_module as string", {**_BASE, "zero_optimization": {"stage": 3, "leaf_module": {"classes": "MyMoE"}}}),
        (
            "fp16 loss_scale 0 and window 0 (dynamic)",
            {**_BASE, "fp16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 0}},
        ),
        ("fp16 disabled, window 0", {**_BASE, "fp16": {"enabled": False, "loss_scale_window": 0}}),
        ("fp16 loss_scale NaN", {**_BASE, "fp16": {"enabled": True, "loss_scale": float("nan")}}),
        ("fp16 loss_scale string number", {**_BASE, "fp16": {"enabled": True, "loss_scale": "128"}}),
        ("bf16 null falls back to bfloat16", {**_BASE, "bf16": None, "bfloat16": {"enabled": True}}),
        ("fp16 enabled, bfloat16 enabled", {**_BASE, "fp16": {"enabled": True}, "bfloat16": {"enabled": True}}),
        ("bfloat16 null beside bf16 (never read)", {**_BASE, "bf16": {"enabled": True}, "bfloat16": None}),
        ("fp16 initial_scale_power a digit string (0.16 computes 2** of it)",
         {**_BASE, "fp16": {"enabled": True, "initial_scale_power": "12"}}),
        ("fp16 master weights 'false' with fp16 on at stage 0 (0.16 uses the string's truth: on)",
         {**_BASE, "fp16": {"enabled": True, "fp16_master_weights_and_grads": "false"}}),
        ("fp16 master weights with fp16 off at stage 0 (0.16 reads it only with fp16 on)",
         {**_BASE, "fp16": {"enabled": False, "fp16_master_weights_and_grads": True},
          "zero_optimization": {"stage": 0}}),
        (
            "torch_autocast with bad module list",
            {**_BASE, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": [1]}},
        ),
        # get_lower_precision_safe_modules iterates the value whenever the key is written, enabled or not.
        (
            "torch_autocast lower_precision_safe_modules null",
            {**_BASE, "torch_autocast": {"enabled": False, "lower_precision_safe_modules": None}},
        ),
        (
            "torch_autocast lower_precision_safe_modules a number",
            {**_BASE, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": 3}},
        ),
        (
            "torch_autocast lower_precision_safe_modules a string (iterated as characters; fails at initialize)",
            {**_BASE, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": "Linear"}},
        ),
        (
            "torch_autocast dtype torch.bfloat16",
            {**_BASE, "torch_autocast": {"enabled": True, "dtype": "torch.bfloat16"}},
        ),
        ("optimizer type int", {**_BASE, "optimizer": {"type": 3}}),
        ("optimizer without type", {**_BASE, "optimizer": {"params": {"lr": 1e-3}}}),
        ("scheduler without type", {**_BASE, "scheduler": {"params": {"warmup_num_steps": 10}}}),
        ("scheduler params null", {**_BASE, "scheduler": {"type": "WarmupLR", "params": None}}),
        (
            "optimizer max_grad_norm 'auto'",
            {**_BASE, "optimizer": {"type": "AdamW", "params": {"max_grad_norm": "auto"}}},
        ),
        ("communication_data_type null", {**_BASE, "communication_data_type": None}),
        ("communication_data_type 16", {**_BASE, "communication_data_type": 16}),
        ("gradient_allreduce_op null", {**_BASE, "gradient_allreduce_op": None}),
        (
            "gradient_allreduce_op 'Sum' with stage 3",
            {**_BASE, "gradient_allreduce_op": "Sum", "zero_optimization": {"stage": 3}},
        ),
        ("checkpoint tag_validation 3", {**_BASE, "checkpoint": {"tag_validation": 3}}),
        (
            "checkpoint parallel_write pipeline_stage 1",
            {**_BASE, "checkpoint": {"parallel_write": {"pipeline_stage": 1}}},
        ),
        (
            "checkpoint writer bad data_parallel",
            {**_BASE, "checkpoint": {"writer": {"type": "fast", "data_parallel": "rack"}}},
        ),
        # get_checkpoint_parallel_write_pipeline / get_checkpoint_writer_config call .get on these sub-sections.
        ("checkpoint parallel_write null", {**_BASE, "checkpoint": {"parallel_write": None}}),
        ("checkpoint parallel_write true", {**_BASE, "checkpoint": {"parallel_write": True}}),
        ("checkpoint writer a string", {**_BASE, "checkpoint": {"writer": "fast"}}),
        ("checkpoint writer a list", {**_BASE, "checkpoint": {"writer": ["fast"]}}),
        ("keep_in_fp32_modules list of str", {**_BASE, "data_types": {"keep_in_fp32_modules": ["lm_head"]}}),
        ("keep_in_fp32_modules list with int", {**_BASE, "data_types": {"keep_in_fp32_modules": ["lm_head", 3]}}),
        (
            "dynamic batching without max_tokens",
            {**_BASE, "data_efficiency": {"enabled": True, "data_sampling": {"dynamic_batching": {"enabled": True}}}},
        ),
        # get_dynamic_batching: bool() of enabled, int() of the sizes (max_tokens only when enabled).
        ("dynamic batching min_batch_size 1.5 (int() truncates)", _dynamic({"min_batch_size": 1.5})),
        ("dynamic batching max_batch_size ' 8 '", _dynamic({"max_batch_size": " 8 "})),
        ("dynamic batching max_batch_size null", _dynamic({"max_batch_size": None})),
        ("dynamic batching max_batch_size '1.5'", _dynamic({"max_batch_size": "1.5"})),
        ("dynamic batching off, max_tokens 'x' (not read)", _dynamic({"enabled": False, "max_tokens": "x"})),
        ("dynamic batching on, max_tokens 4096.0", _dynamic({"enabled": True, "max_tokens": 4096.0})),
        ("dynamic batching on, max_tokens null", _dynamic({"enabled": True, "max_tokens": None})),
        ("dynamic batching enabled 'false' (a true string)", _dynamic({"enabled": "false", "max_tokens": 64})),
        ("datastates_ckpt null", {**_BASE, "datastates_ckpt": None}),
        (
            "sequence_parallel_size 2",
            {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "sequence_parallel_size": 2},
        ),
        ("sequence_parallel_size 0", {**_BASE, "sequence_parallel_size": 0}),
        ("vocabulary_size not a multiple of 8", {**_BASE, "vocabulary_size": 50257}),
        ("wall_clock_breakdown 'auto'", {**_BASE, "wall_clock_breakdown": "auto"}),
        ("flops_profiler enabled", {**_BASE, "flops_profiler": {"enabled": True, "profile_step": 2}}),
        ("pipeline with arbitrary keys", {**_BASE, "pipeline": {"stages": 4, "anything": [1, 2]}}),
        (
            "zenflow block",
            {**_BASE, "zero_optimization": {"stage": 2, "zenflow": {"topk_ratio": 0.05, "update_interval": 4}}},
        ),
        (  # 0.19.5 allows 0 <= topk_ratio <= 1, 0.19.8 requires 0 < x < 1: the release's bound, read from "1"
            "zenflow topk_ratio '1' (a string)",
            {**_BASE, "zero_optimization": {"stage": 2, "zenflow": {"topk_ratio": "1"}}},
        ),
        (
            "zenflow pt_reserved_cores_perc int",
            {**_BASE, "zero_optimization": {"stage": 2, "zenflow": {"pt_reserved_cores_perc": 1}}},
        ),
        ("compile passes autotp", {**_BASE, "compile": {"deepcompile": True, "passes": ["autotp"]}}),
        # parse_autoep_config returns the defaults for any falsy value and calls .get on anything else.
        ("expert_parallel false", {**_BASE, "expert_parallel": False}),
        ("expert_parallel empty string", {**_BASE, "expert_parallel": ""}),
        ("expert_parallel a list", {**_BASE, "expert_parallel": ["enabled"]}),
        ("expert_parallel unknown key", {**_BASE, "expert_parallel": {"whatever": 1}}),
        (
            "deep unknown nesting",
            {**_BASE, "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "x": {"y": {"z": 1}}}}},
        ),
        ("unicode key", {**_BASE, "zéro_optimization": {"stage": 2}}),
        # compression/config.py (0.16-0.19.7) indexes different_groups of every technique that is written.
        ("compression technique without different_groups",
         {**_BASE, "compression_training": {"activation_quantization": {"shared_parameters": {"enabled": False}}}}),
        ("compression technique different_groups a list",
         {**_BASE, "compression_training": {"weight_quantization": {"shared_parameters": {}, "different_groups": []}}}),
        ("compression technique null", {**_BASE, "compression_training": {"head_pruning": None}}),
        # 0.16.x does not read sequence_parallel_size: the batch check uses all the GPUs there
        ("sequence parallel 2, batch 16 of micro batch 4",
         {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 2}),
        ("sequence parallel 0.5, batch 8 of micro batch 4",
         {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 0.5}),
        ("sequence parallel 0",
         {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 0}),
        # elasticity (0.16-0.19.7): ElasticityConfig reads the values as written; compute_elastic_config's first checks
        *((f"elastic training with {label}", {"train_micro_batch_size_per_gpu": 1, "elasticity": {
            "enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4],
            "ignore_non_elastic_batch_info": True, **change}}) for label, change in (
            ("a micro batch above the largest batch", {"micro_batch_sizes": [128]}),
            ("model parallelism over 1 GPU per node", {"model_parallel_size": 2}),
            ("version 0.15", {"version": 0.15}),
            ("no micro batch sizes", {"micro_batch_sizes": []}),
            ("a float micro batch", {"micro_batch_sizes": [2.0, 4]}),
            ("only boolean micro batches", {"micro_batch_sizes": [True]}),  # numpy's lcm refuses booleans
            ("a boolean beside a number", {"micro_batch_sizes": [True, 2]}),  # a mix computes (True is 1)
            ("a string largest batch", {"max_train_batch_size": "64"}),
            ("a string min_gpus", {"min_gpus": "1"}),
            ("a string min_time", {"min_time": "5"}),
        )),
        # compute_elastic_config's search: world sizes it calls valid start, others stop (1 starts, 8 does not)
        ("elastic training whose batch search refuses 8 GPUs",
         {"elasticity": {"enabled": True, "max_train_batch_size": 8, "micro_batch_sizes": [3], "version": 0.1}}),
        ("elastic training version 0.2 that finds a batch of 0 on 8 GPUs",
         {"elasticity": {"enabled": True, "max_train_batch_size": 8, "micro_batch_sizes": [4], "version": 0.2}}),
        # version 0.2 with model parallelism, on a GPU count its search does not accept: DeepSpeed checks the GPU
        # count against a fallback list of that count's data-parallel size, which refuses it too
        ("elastic training version 0.2 with model parallelism", {"elasticity": {
            "enabled": True, "max_train_batch_size": 1000, "micro_batch_sizes": [2, 4], "version": 0.2,
            "num_gpus_per_node": 8, "model_parallel_size": 2}}),
        ("elastic training replacing a written batch",
         {"train_batch_size": 32, "elasticity": {"enabled": True, "max_train_batch_size": 100,
                                                 "micro_batch_sizes": [2, 4], "ignore_non_elastic_batch_info": True}}),
        ("elastic training missing its largest batch behind a float flag",
         {"train_micro_batch_size_per_gpu": 1, "elasticity": {"enabled": True, "micro_batch_sizes": [2],
                                                              "ignore_non_elastic_batch_info": 2.0}}),
        # get_quantize_enabled (0.16-0.19.6) reads compression_training.shared_parameters, not a technique's
        ("compression shared_parameters on",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": True}}}),
        ("compression shared_parameters on as a string \"false\"",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": "false"}}}),
        ("compression shared_parameters off", {**_BASE, "compression_training": {"shared_parameters": {"enabled": 0}}}),
        ("compression shared_parameters on with MoQ eigenvalue on",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": 1}},
          "quantize_training": {"enabled": True, "eigenvalue": {"enabled": True}}}),
        ("compression shared_parameters on with MoQ eigenvalue off",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": True}},
          "quantize_training": {"eigenvalue": {"enabled": False}}}),
        ("compression shared_parameters with a bad quantization_type",
         {**_BASE, "compression_training": {"shared_parameters": {"quantization_type": "linear"}}}),
        ("compression shared_parameters a list", {**_BASE, "compression_training": {"shared_parameters": []}}),
        # get_<technique>_different_groups asserts each technique's own params, enabled or not
        ("weight quantization group without bits",
         {**_BASE, "compression_training": {"weight_quantization": {
             "shared_parameters": {"enabled": False}, "different_groups": {"g1": {"params": {}, "modules": ["*"]}}}}}),
        ("weight quantization group with its bits",
         {**_BASE, "compression_training": {"weight_quantization": {
             "shared_parameters": {"enabled": True}, "different_groups": {"g1": {
                 "params": {"start_bits": 8, "target_bits": 8}, "modules": ["*"]}}}}}),
        ("weight quantization group without params",
         {**_BASE, "compression_training": {"weight_quantization": {
             "shared_parameters": {"enabled": True}, "different_groups": {"g1": {"modules": ["*"]}}}}}),
        ("activation quantization group without bits",
         {**_BASE, "compression_training": {"activation_quantization": {
             "shared_parameters": {"enabled": True}, "different_groups": {"g1": {"params": {}}}}}}),
        ("row pruning group without dense_ratio",
         {**_BASE, "compression_training": {"row_pruning": {
             "shared_parameters": {"enabled": True, "method": "l1"}, "different_groups": {"g": {"params": {}}}}}}),
        ("head pruning enabled without num_heads",
         {**_BASE, "compression_training": {"head_pruning": {
             "shared_parameters": {"enabled": True, "method": "topk"}, "different_groups": {}}}}),
        ("head pruning enabled with num_heads",
         {**_BASE, "compression_training": {"head_pruning": {
             "shared_parameters": {"enabled": True, "method": "topk", "num_heads": 12}, "different_groups": {}}}}),
        ("weight quantization group with params a list",
         {**_BASE, "compression_training": {"weight_quantization": {
             "shared_parameters": {"enabled": True}, "different_groups": {"g1": {"params": []}}}}}),
        ("compression shared_parameters on with quantize_training a list",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": True}}, "quantize_training": []}),
        ("compression shared_parameters on with a null MoQ eigenvalue",
         {**_BASE, "compression_training": {"shared_parameters": {"enabled": True}},
          "quantize_training": {"eigenvalue": None}}),
        ("compression shared_parameters fp16_mixed_quantize true",
         {**_BASE, "compression_training": {"shared_parameters": {"fp16_mixed_quantize": True}}}),
        ("compression layer_reduction a string", {**_BASE, "compression_training": {"layer_reduction": "on"}}),
        ("compression technique with empty different_groups",
         {**_BASE, "compression_training": {"sparse_pruning": {"shared_parameters": {}, "different_groups": {}}}}),
        ("amp disabled (removed key even when off)", {**_BASE, "amp": {"enabled": False}}),
        # what the engine refuses differs by release (0.17.2-0.18.2 refuse autocast beside bf16; 0.16.0-0.17.5 a
        # bf16 accumulation without ZeRO, 0.18.5 on an fp32 one): each release's initialize proof runs the ones it
        # rejects
        ("torch_autocast beside bf16", {**_BASE, "bf16": {"enabled": True}, "torch_autocast": {"enabled": True}}),
        ("bf16 without ZeRO accumulating in bf16", {**_BASE, "bf16": {"enabled": True},
                                                    "data_types": {"grad_accum_dtype": "bf16"}}),
        ("bf16 without ZeRO accumulating in fp32", {**_BASE, "bf16": {"enabled": True},
                                                    "data_types": {"grad_accum_dtype": "fp32"}}),
        ("compute_grad_norm false with the optimizer offloaded",
         {**_BASE, "gradient_clipping": 0, "zero_force_ds_cpu_optimizer": False,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "torch_adam": True}},
          "zero_optimization": {"stage": 2, "compute_grad_norm": False, "offload_optimizer": {"device": "cpu"}}}),
        (
            "elasticity with batch info",
            {**_BASE, "elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4]}},
        ),
        (
            "hf-style auto config",
            {
                "train_batch_size": "auto",
                "train_micro_batch_size_per_gpu": "auto",
                "gradient_accumulation_steps": "auto",
                "gradient_clipping": "auto",
                "fp16": {"enabled": "auto"},
                "bf16": {"enabled": "auto"},
                "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto"},
                "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
            },
        ),
    ]
    return [Mutation("edge", label, config) for label, config in cases]
