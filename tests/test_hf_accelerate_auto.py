""""auto" under the HF Trainer / Accelerate, judged by accelerate's own DeepSpeedPlugin: it fills its keys and the
Trainer's, overwrites steps_per_print, and refuses every other "auto" before DeepSpeed reads the config (a hunt: the
validator called overlap_comm "auto" an info, since DeepSpeed alone drops it, while the real Trainer failed)."""

from __future__ import annotations

import json

import pytest

from core import validate

pytest.importorskip("accelerate")

#: What the Trainer hands accelerate to fill (transformers fills its keys first; accelerate's own kwargs add the
#: hidden-size buffers the same way): the hidden-size keys under the spelling they are written with.
FILLED = {"zero_optimization.reduce_bucket_size": 1024, "zero_optimization.stage3_prefetch_bucket_size": 1024,
          "zero_optimization.stage3_param_persistence_threshold": 320}
BASE = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8}

CASES = [
    ({"zero_optimization": {"stage": 2, "overlap_comm": "auto"}}, "zero_optimization.overlap_comm"),
    ({"zero_optimization": {"stage": 3, "contiguous_gradients": "auto"}}, "zero_optimization.contiguous_gradients"),
    ({"zero_optimization": {"stage": 3, "prefetch_bucket_size": "auto"}}, "zero_optimization.prefetch_bucket_size"),
    ({"zero_optimization": {"stage": 3, "param_persistence_threshold": "auto"}},
     "zero_optimization.param_persistence_threshold"),
    ({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"}}, None),
    ({"zero_optimization": {"stage": 2}, "steps_per_print": "auto"}, None),
    ({"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": "auto"}}, None),
    # DeepSpeed's own "auto" defaults, which the validator let pass for the HF target (a hunt of 30 Nov 2026)
    ({"zero_optimization": {"stage": 2}, "pipeline": {"stages": "auto"}}, "pipeline.stages"),
    ({"zero_optimization": {"stage": 2}, "expert_parallel": {"enabled": True, "autoep_size": 1, "score_apply": "auto"}},
     "expert_parallel.score_apply"),
    ({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                            "zenflow": {"select_strategy": "auto"}}}, "zero_optimization.zenflow.select_strategy"),
]


@pytest.mark.parametrize(("extra", "refused"), CASES, ids=[str(c[1] or "filled") for c in CASES])
def test_the_validator_refuses_what_accelerate_refuses(extra, refused):
    from accelerate.utils import DeepSpeedPlugin

    config = {**BASE, **extra}
    plugin = DeepSpeedPlugin(hf_ds_config=config)
    if refused:
        with pytest.raises(ValueError, match=f"`{refused}` not found in kwargs"):
            plugin.deepspeed_config_process(must_match=False, **FILLED)
    else:
        plugin.deepspeed_config_process(must_match=False, **FILLED)
    errors = [(f.code, f.path) for f in validate(config, target="hf").findings if f.severity == "error"]
    assert errors == ([("auto.not-filled", refused)] if refused else []), errors


@pytest.mark.parametrize(("extra", "refused"), [c for c in CASES if c[1]], ids=[c[1] for c in CASES if c[1]])
def test_the_fix_gives_a_config_accelerate_takes(extra, refused):
    from accelerate.utils import DeepSpeedPlugin

    from core.autofix import fix_until_stable

    fixed = fix_until_stable({**BASE, **extra}, target="hf", unsafe=True).config
    DeepSpeedPlugin(hf_ds_config=fixed).deepspeed_config_process(must_match=False, **FILLED)
    assert '"auto"' not in json.dumps(fixed)


@pytest.mark.parametrize(("extra", "refused"), CASES, ids=[str(c[1] or "filled") for c in CASES])
def test_the_hf_json_schema_refuses_what_accelerate_refuses(extra, refused):
    """Editors get the same answer (``dsconfig schema --target hf``)."""
    import jsonschema

    from core.jsonschema import json_schema

    errors = list(jsonschema.Draft202012Validator(json_schema(target="hf")).iter_errors({**BASE, **extra}))
    assert bool(errors) == bool(refused), [e.message for e in errors]
