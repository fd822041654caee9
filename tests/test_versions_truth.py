"""Regression tests for truth bugs, each checked against the real release.

- DeepSpeed 0.19.5's OnebitAdam, ZeroOneAdam and OnebitLamb accept ``bias_correction``, ``eps_inside_sqrt``
  and ``amsgrad`` (their constructors in ``runtime/fp16/onebit/``); the validator called them unknown.
- ``target="hf"``: "auto" in a pydantic field the HF Trainer does not fill is dropped by DeepSpeed, which
  then uses the default; the validator called it the error ``auto.not-filled``.
- the legacy ``cpu_offload`` / ``cpu_offload_param`` booleans are offload sections to DeepSpeed; the offload
  rule read only the sections.
- scheduler values: a number of the wrong kind or out of range is an error only in releases whose scheduler
  checks it; 0.17.6 trains with them (and never reads OneCycle's stair counts).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from core import versions
from core.io import load_config
from core.validate import validate
from tests.conftest import CORPUS_DIR, REPO_ROOT
from tests.oracle import ds0195_worker
from tests.oracle.oracle import WORKER_PYTHONS, oracle_available, release_interpreter

pytestmark = pytest.mark.deepspeed

_ONEBIT_CLASSES = {
    "OneBitAdam": "deepspeed.runtime.fp16.onebit.adam.OnebitAdam",
    "ZeroOneAdam": "deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam",
    "OneBitLamb": "deepspeed.runtime.fp16.onebit.lamb.OnebitLamb",
}
# Positional arguments the engine passes itself, and the keyword it refuses before the constructor runs.
_NOT_CONFIG_KEYWORDS = {"self", "params", "deepspeed", "max_grad_norm"}

_SIGNATURES = """
import importlib, inspect, json, sys
out = {}
for label, dotted in json.loads(sys.argv[1]).items():
    module, _, name = dotted.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    out[label] = {p.name: repr(p.default) for p in inspect.signature(cls.__init__).parameters.values()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def onebit_signatures_0195() -> dict[str, dict[str, str]]:
    reason = oracle_available("0.19.5")
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        [str(WORKER_PYTHONS["0.19.5"]), "-c", _SIGNATURES, json.dumps(_ONEBIT_CLASSES)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _minimal(optimizer: dict) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "optimizer": optimizer}


@pytest.mark.parametrize("display", sorted(_ONEBIT_CLASSES))
def test_every_constructor_keyword_of_the_0195_onebit_optimizers_is_known(display, onebit_signatures_0195):
    keywords = set(onebit_signatures_0195[display]) - _NOT_CONFIG_KEYWORDS
    assert {"bias_correction", "eps_inside_sqrt", "amsgrad"} <= keywords
    signature = onebit_signatures_0195[display]
    # every keyword at DeepSpeed's own default value is accepted
    params = {k: json.loads(signature[k].replace("'", '"').replace("True", "true").replace("False", "false"))
              for k in keywords if signature[k] not in ("None",) and not signature[k].startswith("(")}
    report = validate(_minimal({"type": display, "params": params}), version="0.19.5")
    assert [f for f in report.findings if f.code.startswith("optimizer.")] == []
    # and a keyword the constructor does not have is still refused
    unknown = validate(_minimal({"type": display, "params": {"lr": 1e-3, "nesterov": True}}), version="0.19.5")
    assert [f.path for f in unknown.findings if f.code == "optimizer.unknown-param"] == ["optimizer.params.nesterov"]


def test_onebit_amsgrad_true_is_refused_as_the_constructor_does():
    report = validate(_minimal({"type": "OneBitAdam", "params": {"lr": 1e-3, "amsgrad": True}}), version="0.19.5")
    assert [f.code for f in report.findings if f.path == "optimizer.params.amsgrad"] == ["optimizer.param-choice"]


@pytest.mark.parametrize("rel", [
    "THUDM__GLM/scripts__ds_onebit_config.json",
    "microsoft__DeepSpeedExamples/cifar__ds_config_onebitlamb.json",
    "microsoft__DeepSpeedExamples/bing_bert__01_adam__mpi_infiniband__deepspeed_bsz4k_01adam_config_seq128_mpi_infiniband.json",
])
def test_corpus_onebit_configs_have_no_unknown_params_in_0195(rel):
    path = CORPUS_DIR / rel
    if not path.exists():
        pytest.skip(f"{path} missing")
    config = load_config(path.read_text())
    assert "bias_correction" in config["optimizer"]["params"]
    report = validate(config, version="0.19.5")
    assert [f for f in report.findings if f.code == "optimizer.unknown-param"] == []


# ----------------------------------------------------------------------------- "auto" with target="hf"
_AUTO_IN_PYDANTIC = {
    "train_micro_batch_size_per_gpu": 1,
    "bf16": {"enabled": True},
    "zero_optimization": {
        "stage": 3,
        "stage3_max_live_parameters": "auto",
        "offload_param": {"device": "cpu", "buffer_size": "auto"},
    },
}


def test_real_deepspeed_drops_auto_in_pydantic_fields_and_uses_the_default():
    if oracle_available("0.19.8"):
        pytest.skip(oracle_available("0.19.8"))
    cls = ds0195_worker._deepspeed_config_class()
    with ds0195_worker._quiet():
        parsed = cls(json.loads(json.dumps(_AUTO_IN_PYDANTIC)), 1)
    assert parsed.zero_config.max_live_parameters == 1_000_000_000
    assert parsed.zero_config.offload_param.buffer_size == 100_000_000


_UNFILLED_DEFAULTS = (("zero_optimization.stage3_max_live_parameters", 1_000_000_000),
                      ("zero_optimization.offload_param.buffer_size", 100_000_000))


def test_auto_in_an_unfilled_pydantic_field_is_an_info_that_the_default_applies():
    report = validate(_AUTO_IN_PYDANTIC)
    by_path = {f.path: f for f in report.findings}
    assert report.errors == []
    for path, default in _UNFILLED_DEFAULTS:
        finding = by_path[path]
        assert (finding.severity, finding.code) == ("info", "auto.default")
        assert f"({default})" in finding.message
    assert all(f.code != "auto.not-filled" for f in report.findings)


def test_with_hf_accelerate_refuses_that_auto_before_deepspeed_drops_it():
    """The HF Trainer hands the config to accelerate, whose DeepSpeedPlugin refuses every "auto" it does not fill
    ("... not found in kwargs") before DeepSpeed could drop it: an error there, whose fix writes the default."""
    from accelerate.utils import DeepSpeedPlugin

    with pytest.raises(ValueError, match="not found in kwargs"):
        DeepSpeedPlugin(hf_ds_config=json.loads(json.dumps(_AUTO_IN_PYDANTIC))).deepspeed_config_process(
            must_match=False)
    by_path = {f.path: f for f in validate(_AUTO_IN_PYDANTIC, target="hf").findings}
    for path, default in _UNFILLED_DEFAULTS:
        finding = by_path[path]
        assert (finding.severity, finding.code) == ("error", "auto.not-filled")
        assert finding.fix.ops[0].value == default


def test_auto_where_deepspeed_keeps_the_string_is_still_an_error_with_hf():
    report = validate({"train_micro_batch_size_per_gpu": 1, "wall_clock_breakdown": "auto"}, target="hf")
    assert [(f.severity, f.code) for f in report.findings if f.path == "wall_clock_breakdown"] == [
        ("error", "auto.not-filled")]


@pytest.mark.parametrize(("stage", "legacy", "section", "code"), [
    (0, "cpu_offload", "offload_optimizer", "zero.offload-optimizer-stage-0"),
    (2, "cpu_offload_param", "offload_param", "zero.offload-param-below-3"),
])
def test_legacy_offload_booleans_are_offload_to_the_rules_as_to_deepspeed(stage, legacy, section, code):
    """``cpu_offload`` / ``cpu_offload_param`` true is a CPU offload section to DeepSpeed 0.19.8 (its
    deprecated-field mapping); the offload rule reads it through core.effective, not from the raw key."""
    if oracle_available("0.19.8"):
        pytest.skip(oracle_available("0.19.8"))
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": stage, legacy: True}}
    cls = ds0195_worker._deepspeed_config_class()
    with ds0195_worker._quiet():
        parsed = cls(json.loads(json.dumps(config)), 1)
    assert getattr(parsed.zero_config, section).device == "cpu"
    findings = {f.code: f for f in validate(config).findings}
    assert findings[code].path == f"zero_optimization.{section}"
    off = {**config, "zero_optimization": {"stage": stage, legacy: False}}
    assert code not in {f.code for f in validate(off).findings}


_SCHEDULERS = {
    "warmup-steps-float": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e30}},
    "onecycle-stairs-list": {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.004, "cycle_max_lr": 0.015, "cycle_first_step_size": 10, "cycle_momentum": False,
        "cycle_second_stair_count": [100]}},
}


@pytest.mark.long
@pytest.mark.parametrize(("release", "trains"), [("0.17.6", True), ("0.19.8", False)])
def test_scheduler_values_are_errors_only_where_the_release_checks_or_reads_them(release, trains):
    """0.17.6's WarmupLR takes any number of steps and its OneCycle never reads the stair counts; 0.19.8
    checks the first and steps its stairs (the profiles' scheduler_facts say so). Real initialize + training."""
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available(release):
        pytest.skip(oracle_available(release))
    configs = {key: {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "SGD", "params": {"lr": 0.01}},
                     "scheduler": scheduler} for key, scheduler in _SCHEDULERS.items()}
    run = run_initialize_configs(configs, release)
    for key, config in configs.items():
        result = run.results[key]
        assert (result["raised"] or result["step"]["raised"]) == (not trains), (release, key, result)
        errors = [f.code for f in validate(config, version=release).errors]
        assert bool(errors) == (not trains), (release, key, errors)


@pytest.mark.long
def test_auto_learning_rate_is_an_error_only_where_no_scheduler_replaces_it():
    """DeepSpeed's fused Adam keeps lr "auto"; OneCycle writes its own lr before the first step (trains),
    WarmupCosineLR scales the optimizer's lr (fails). Real initialize + training on 0.19.8."""
    from tests.oracle.initialize import run_initialize_configs

    if oracle_available("0.19.8"):
        pytest.skip(oracle_available("0.19.8"))
    base = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": "auto"}}}
    configs = {
        "onecycle": {**base, "scheduler": {"type": "OneCycle",
                                           "params": {"cycle_min_lr": 0.004, "cycle_max_lr": 0.015}}},
        "cosine": {**base, "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100}}},
    }
    run = run_initialize_configs(configs, "0.19.8")
    for key, trains in (("onecycle", True), ("cosine", False)):
        result = run.results[key]
        assert (result["raised"] or result["step"]["raised"]) == (not trains), (key, result)
        codes = {f.code for f in validate(configs[key]).errors}
        assert ("auto.kept-optimizer" in codes) == (not trains), (key, codes)


@pytest.mark.long
def test_torch_adam_takes_torchs_keywords_not_the_fused_kernels():
    """With torch_adam DeepSpeed builds torch.optim.AdamW/Adam(**params): the validator took the fused kernel's
    keywords, calling torch's own (fused, foreach, maximize ...) errors and missing the fused-only ones
    (bias_correction, set_grad_none) that make torch raise TypeError. Real initialize + training on 0.19.8."""
    import inspect

    import torch

    from tests.oracle.initialize import run_initialize_configs

    if oracle_available("0.19.8"):
        pytest.skip(oracle_available("0.19.8"))

    def config(kind: str = "AdamW", **params: object) -> dict[str, object]:
        return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                "optimizer": {"type": kind, "params": {"lr": 0.01, "torch_adam": True, **params}}}

    configs = {"fused": config(fused=False), "foreach": config(foreach=None), "maximize": config(maximize=False),
               "capturable": config(capturable=False), "adam-fused": config("Adam", fused=False),
               "bias-correction": config(bias_correction=True), "set-grad-none": config(set_grad_none=True)}
    run = run_initialize_configs(configs, "0.19.8")
    for key, cfg in configs.items():
        result = run.results[key]
        fails = bool(result["raised"] or result["step"]["raised"])
        flagged = any(f.code == "optimizer.unknown-param" for f in validate(cfg).errors)
        assert flagged == fails, (key, result, [f.message for f in validate(cfg).errors])
    decay = next(f for f in validate(config(weight_decay=None)).findings if f.path == "optimizer.params.weight_decay")
    # the fix writes torch.optim.AdamW's own default (0.01), not the fused kernel's 0
    assert decay.fix.ops[0].value == inspect.signature(torch.optim.AdamW).parameters["weight_decay"].default



_LOOKUPS = """
import json, sys
from deepspeed.runtime.config import DeepSpeedConfig
class Seen(dict):
    looked = set()
    def get(self, key, default=None):
        Seen.looked.add(key); return super().get(key, default)
    def __getitem__(self, key):
        Seen.looked.add(key); return super().__getitem__(key)
    def __contains__(self, key):
        Seen.looked.add(key); return super().__contains__(key)
section, body = sys.argv[1], json.loads(sys.argv[2])
DeepSpeedConfig({"train_batch_size": 1, section: Seen(body)})
print(json.dumps(sorted(Seen.looked)))
"""


@pytest.mark.parametrize("release", ["0.16.9", "0.17.6"])
def test_bf16_keys_of_later_releases_are_ignored_where_bf16_is_read_with_dict_get(release):
    """0.16.x-0.17.0 read bf16 with ``dict.get`` (``enabled``, ``immediate_grad_update``): the master-weights,
    optimizer-states and overflow-check keys later releases model are never looked up there, so a config that
    asks for them trains without them and the validator says so; from 0.17.1 the pydantic model reads or
    refuses them."""
    body = {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True,
            "check_grad_overflow": True}
    python, env = release_interpreter(release)
    done = subprocess.run([python, "-c", _LOOKUPS, "bf16", json.dumps(body)], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT, env={**os.environ, **env})
    ignored = set(versions.profile(release)["dict_section_ignored"].get("bf16", ()))
    findings = {f.path: f for f in validate({"train_batch_size": 1, "bf16": body}, version=release).findings}
    if release == "0.16.9":
        assert done.returncode == 0, done.stderr[-2000:]
        looked = set(json.loads(done.stdout.strip().splitlines()[-1]))
        assert "enabled" in looked
        assert ignored == set(body) - looked == {"bf16_master_weights_and_grads", "bf16_optimizer_states",
                                                 "check_grad_overflow"}
        for key in ignored:
            finding = findings[f"bf16.{key}"]
            # true asks for something the later releases do (their default is false), except the overflow check,
            # on by default there: only that one's removal is a safe fix
            switched_on = key != "check_grad_overflow"
            expected = "keys.not-in-version-on" if switched_on else "keys.not-in-version"
            assert (finding.code, finding.severity, finding.fix.safe) == (expected, "warning", not switched_on)
            assert "0.16.9 silently ignores it" in finding.message
    else:  # pydantic: the keys it lacks are refused, the parse says so
        assert done.returncode != 0 and "bf16_master_weights_and_grads" in done.stderr
        assert ignored == set()
        assert findings["bf16.bf16_master_weights_and_grads"].severity == "error"
        assert "bf16.check_grad_overflow" not in findings
