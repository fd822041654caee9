"""The advanced sections against DeepSpeed 0.19.8's own defaults, constants and models (activation
checkpointing, aio, checkpoint, autotuning, pipeline, data efficiency, expert parallel, timers, DataStates)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.schema import advanced
from core.schema.base import field_meta
from tests.schema_parity_support import assert_defaults_cover, assert_same_verdict, defaults_of

ds_config_mod = pytest.importorskip("deepspeed.runtime.config")
ds_constants = pytest.importorskip("deepspeed.runtime.constants")
ds_timer_config = pytest.importorskip("deepspeed.utils.config")
ds_tp_config = pytest.importorskip("deepspeed.runtime.tensor_parallel.config")

pytestmark = pytest.mark.deepspeed

# --------------------------------------------------------------------------------------------------
# advanced sections
# --------------------------------------------------------------------------------------------------


def test_tensor_parallel_dtype_rejects_every_json_value_like_deepspeed():
    for value in ("bf16", "torch.bfloat16", "fp16", None, 16, True, {}):
        assert_same_verdict(advanced.TensorParallelConfig, ds_tp_config.TPTrainingConfig, {"dtype": value})
        with pytest.raises(ValidationError, match="cannot be set in a JSON config"):
            advanced.TensorParallelConfig(dtype=value)
    advanced.TensorParallelConfig(dtype="auto")  # "auto" is dropped by both
    ds_tp_config.TPTrainingConfig(dtype="auto")


def test_activation_checkpointing_defaults_match_deepspeed():
    from deepspeed.runtime.activation_checkpointing import config as ac

    assert defaults_of(advanced.ActivationCheckpointingConfig) == ac.ACT_CHKPT_DEFAULT


def test_aio_defaults_match_deepspeed():
    from deepspeed.runtime.swap_tensor.aio_config import AIO_DEFAULT_DICT

    assert defaults_of(advanced.AioConfig) == AIO_DEFAULT_DICT


def test_checkpoint_defaults_match_deepspeed():
    from deepspeed.runtime.model_checkpointing import config as mc

    c = ds_constants
    defaults = defaults_of(advanced.CheckpointConfig)
    assert defaults[c.CHECKPOINT_TAG_VALIDATION].upper() == c.CHECKPOINT_TAG_VALIDATION_DEFAULT
    assert defaults[c.LOAD_UNIVERSAL_CHECKPOINT] == c.LOAD_UNIVERSAL_CHECKPOINT_DEFAULT
    assert defaults[c.USE_NODE_LOCAL_STORAGE_CHECKPOINT] == c.USE_NODE_LOCAL_STORAGE_CHECKPOINT_DEFAULT
    assert defaults[c.CHECKPOINT_PARALLEL_WRITE] == {
        c.CHECKPOINT_PARALLEL_WRITE_PIPELINE_STAGE: c.CHECKPOINT_PARALLEL_WRITE_PIPELINE_STAGE_DEFAULT
    }
    assert defaults[mc.CHECKPOINT_SERIALIZATION] == mc.CHECKPOINT_SERIALIZATION_DEFAULT
    assert defaults[mc.CHECKPOINT_WRITER] == mc.CHECKPOINT_WRITER_DEFAULT
    assert defaults_of(advanced.CheckpointWriterConfig) == mc.get_checkpoint_writer_config({"writer": {}})
    assert set(advanced.CheckpointConfig.model_fields) == {
        c.CHECKPOINT_TAG_VALIDATION,
        c.LOAD_UNIVERSAL_CHECKPOINT,
        c.USE_NODE_LOCAL_STORAGE_CHECKPOINT,
        c.CHECKPOINT_PARALLEL_WRITE,
        mc.CHECKPOINT_SERIALIZATION,
        mc.CHECKPOINT_WRITER,
    }
    choices = field_meta(advanced.CheckpointConfig.model_fields["tag_validation"]).choices
    assert {x.upper() for x in choices} == set(c.CHECKPOINT_TAG_VALIDATION_MODES)
    writer = advanced.CheckpointWriterConfig.model_fields
    assert set(field_meta(writer["type"]).choices) == set(mc.CHECKPOINT_WRITER_TYPES)
    assert set(field_meta(writer["data_parallel"]).choices) == set(mc.CHECKPOINT_DATA_PARALLEL_UNITS)


def test_autotuning_defaults_match_deepspeed():
    from deepspeed.autotuning import constants as at
    from deepspeed.autotuning.config import DeepSpeedAutotuningConfig

    parsed = vars(DeepSpeedAutotuningConfig({}))
    ours = defaults_of(advanced.AutotuningConfig)
    # DeepSpeed names the attributes after the keys; start_step / end_step are leftover attributes
    # it initialises to None and never reads from the config.
    assert {k for k in parsed if not k.startswith("_")} - set(ours) == {"start_step", "end_step"}
    for key, value in ours.items():
        assert value == parsed[key], key
    assert defaults_of(advanced.ModelInfoConfig) == at.MODEL_INFO_KEY_DEFAULT_DICT


def test_pipeline_defaults_match_deepspeed():
    ours = defaults_of(advanced.PipelineConfig)
    theirs = ds_config_mod.get_pipeline_config({})
    assert {k: v for k, v in ours.items() if k in theirs} == theirs
    assert set(ours) - set(theirs) == {"use_reentrant"}  # read by the pipeline engine, default None (= true)


def test_data_efficiency_defaults_match_deepspeed():
    from deepspeed.runtime.data_pipeline.config import get_data_efficiency_config

    assert_defaults_cover(get_data_efficiency_config({"data_efficiency": {}}), advanced.DataEfficiencyConfig)


def test_expert_parallel_defaults_match_deepspeed():
    from deepspeed.module_inject.auto_ep_config import parse_autoep_config

    parsed = {k: v for k, v in vars(parse_autoep_config({"enabled": False})).items() if not k.startswith("_")}
    ours = defaults_of(advanced.ExpertParallelConfig)
    assert set(ours) == set(parsed)
    for key, value in parsed.items():
        if key == "expert_w3":
            continue  # DeepSpeed's "absent" sentinel (preset default); null means fused gate/up
        assert ours[key] == value, key


def test_timers_throughput_key_matches_deepspeed():
    assert set(advanced.TimersConfig.model_fields) == {ds_timer_config.TIMERS_THROUGHPUT}


def test_datastates_enabled_rule():
    from deepspeed.datastates.config import DeepSpeedDataStatesConfig

    assert DeepSpeedDataStatesConfig({"datastates_ckpt": {}}).enabled
    assert not DeepSpeedDataStatesConfig({"datastates_ckpt": False}).enabled
    assert advanced.DataStatesConfig.model_fields == {}  # keys belong to the DataStates package
