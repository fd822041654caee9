"""The optimizer and scheduler registries against DeepSpeed 0.19.8's lists and constructor signatures, and
the torch.optim fallbacks against torch's own."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from core.schema import optimizer
from tests.schema_parity_support import defaults_of

ds_config_mod = pytest.importorskip("deepspeed.runtime.config")
ds_constants = pytest.importorskip("deepspeed.runtime.constants")

pytestmark = pytest.mark.deepspeed

# --------------------------------------------------------------------------------------------------
# optimizer / scheduler registries
# --------------------------------------------------------------------------------------------------

def test_optimizer_names_equal_deepspeed_optimizers():
    assert set(optimizer.deepspeed_optimizer_names("0.19.8")) == set(ds_config_mod.DEEPSPEED_OPTIMIZERS)


def test_torch_optimizer_names_equal_torch_optim():
    torch_optim = pytest.importorskip("torch.optim")
    classes = {
        n
        for n in dir(torch_optim)
        if inspect.isclass(getattr(torch_optim, n))
        and issubclass(getattr(torch_optim, n), torch_optim.Optimizer)
        and n != "Optimizer"
    }
    assert set(optimizer.TORCH_OPTIMIZERS) == classes


def _constructor_params(cls) -> dict[str, inspect.Parameter]:
    skip = {"self", "params", "model_params", "deepspeed"}
    return {
        n: p
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if n not in skip and p.kind is not inspect.Parameter.VAR_KEYWORD
    }


def _implementation_classes():
    """(optimizer, backend, class, names DeepSpeed itself passes) for every importable implementation."""
    from deepspeed.ops.adagrad import DeepSpeedCPUAdagrad
    from deepspeed.ops.adam import DeepSpeedCPUAdam, FusedAdam
    from deepspeed.ops.lamb import FusedLamb
    from deepspeed.ops.lion import DeepSpeedCPULion, FusedLion

    torch_optim = pytest.importorskip("torch.optim")
    return [
        ("adam", "gpu", FusedAdam, {"adam_w_mode"}),
        ("adam", "cpu", DeepSpeedCPUAdam, {"adamw_mode", "fp32_optimizer_states"}),
        ("adam", "torch", torch_optim.AdamW, set()),
        ("adamw", "gpu", FusedAdam, {"adam_w_mode"}),
        ("adamw", "cpu", DeepSpeedCPUAdam, {"adamw_mode", "fp32_optimizer_states"}),
        ("adamw", "torch", torch_optim.AdamW, set()),
        ("lamb", "gpu", FusedLamb, set()),
        ("lion", "gpu", FusedLion, set()),
        ("lion", "cpu", DeepSpeedCPULion, set()),
        ("adagrad", "gpu", torch_optim.Adagrad, set()),
        ("adagrad", "cpu", DeepSpeedCPUAdagrad, set()),
    ]


def test_optimizer_registry_params_match_implementations():
    for name, backend, cls, passed_by_deepspeed in _implementation_classes():
        spec = optimizer.OPTIMIZERS[name]
        ours = {p.name: p for p in spec.params_for(backend) if not p.consumed}
        theirs = _constructor_params(cls)
        # max_grad_norm is in FusedLamb's signature but DeepSpeed refuses it in every optimizer's params.
        theirs = {
            n: p
            for n, p in theirs.items()
            if n not in passed_by_deepspeed and n not in optimizer.FORBIDDEN_OPTIMIZER_PARAMS
        }
        where = f"{name}/{backend} ({cls.__name__})"
        assert set(ours) == set(theirs), f"{where}: {sorted(set(ours) ^ set(theirs))}"
        for pname, param in ours.items():
            default = theirs[pname].default
            default = list(default) if isinstance(default, tuple) else default
            if pname == "weight_decay" and backend == "torch":
                # torch.optim.AdamW's default is 0.01, DeepSpeed's kernels' 0; the registry gives 0 and
                # says so in a doc_note.
                assert param.meta.doc_note and "0.01" in param.meta.doc_note
                continue
            assert param.default == default, f"{where}.{pname}: {param.default!r} != {default!r}"
        for param in spec.params:
            assert param.description, f"{name}.{param.name}"


def test_scheduler_names_equal_valid_lr_schedules():
    from deepspeed.runtime import lr_schedules

    assert set(optimizer.SCHEDULERS) == set(lr_schedules.VALID_LR_SCHEDULES)


def test_scheduler_registry_equals_constructor_signatures():
    from deepspeed.runtime import lr_schedules

    for name, spec in optimizer.SCHEDULERS.items():
        signature = inspect.signature(getattr(lr_schedules, name).__init__)
        theirs = [p for n, p in signature.parameters.items() if n not in ("self", "optimizer")]
        assert [p.name for p in spec.params] == [p.name for p in theirs], name
        for ours, their in zip(spec.params, theirs, strict=True):
            required = their.default is inspect.Parameter.empty
            assert ours.required == required, f"{name}.{ours.name}: required"
            if not required:
                assert ours.default == their.default, f"{name}.{ours.name}: {ours.default!r} != {their.default!r}"
            assert ours.description
            if ours.default is not None:
                assert ours.type_ok(ours.default), f"{name}.{ours.name}: default has a type we reject"


@pytest.mark.parametrize(
    ("scheduler", "params", "accepted"),
    [
        ("WarmupLR", {"warmup_num_steps": 0}, False),
        ("WarmupLR", {"warmup_num_steps": 1000.0}, False),
        ("WarmupLR", {"warmup_num_steps": 10}, True),
        ("WarmupCosineLR", {"total_num_steps": 100, "warmup_num_steps": -1}, False),
        ("LRRangeTest", {"lr_range_test_step_size": 0}, False),
        ("LRRangeTest", {"lr_range_test_step_size": 5}, True),
        ("OneCycle", {"cycle_min_lr": 0.1, "cycle_max_lr": 1.0, "cycle_first_step_size": 0}, False),
        ("OneCycle", {"cycle_min_lr": 0.1, "cycle_max_lr": 1.0, "cycle_second_step_size": -1}, False),
        ("OneCycle", {"cycle_min_lr": 0.1, "cycle_max_lr": 1.0, "cycle_second_step_size": 0}, True),
    ],
)
def test_scheduler_bounds_are_the_ones_deepspeed_enforces(scheduler, params, accepted):
    torch = pytest.importorskip("torch")
    from deepspeed.runtime import lr_schedules

    spec = optimizer.SCHEDULERS[scheduler]
    ours = all(spec.param(k).type_ok(v) and spec.param(k).bound_problem(v) is None for k, v in params.items())
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1, momentum=0.9)
    try:
        getattr(lr_schedules, scheduler)(opt, **params)
        theirs = True
    except ValueError:
        theirs = False
    assert ours == theirs == accepted


def test_optimizer_and_scheduler_section_defaults_match_deepspeed_constants():
    c = ds_constants
    assert defaults_of(optimizer.OptimizerConfig) == {
        c.TYPE: c.OPTIMIZER_TYPE_DEFAULT,
        c.OPTIMIZER_PARAMS: None,
        c.LEGACY_FUSION: c.LEGACY_FUSION_DEFAULT,
    }
    assert defaults_of(optimizer.SchedulerConfig) == {c.TYPE: c.SCHEDULER_TYPE_DEFAULT, c.SCHEDULER_PARAMS: None}


@pytest.mark.parametrize(
    ("type_name", "expected"),
    [
        ("Adam", "adam"),
        ("ADAMW", "adamw"),
        ("lamb", "lamb"),
        ("SGD", "SGD"),
        ("sgd", None),
        ("OneBitAdam", None),
    ],
)
def test_resolve_optimizer_follows_deepspeeds_name_handling(type_name, expected):
    resolved = optimizer.resolve_optimizer(type_name, "0.19.8")
    got = resolved.name if isinstance(resolved, optimizer.OptimizerSpec) else resolved
    assert got == expected
    # DeepSpeed's own rule: lower-cased if a DeepSpeed name, then DEEPSPEED_OPTIMIZERS or torch.optim attribute.
    torch_optim = pytest.importorskip("torch.optim")
    name = type_name.lower() if type_name.lower() in ds_config_mod.DEEPSPEED_OPTIMIZERS else type_name
    supported = name in ds_config_mod.DEEPSPEED_OPTIMIZERS or getattr(torch_optim, name, None) is not None
    assert supported == (expected is not None)


# --------------------------------------------------------------------------------------------------
# torch.optim fallbacks: the registries equal torch's own signatures
# --------------------------------------------------------------------------------------------------


def _keyword_names(cls: Any, skip: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    params = [
        p for p in inspect.signature(cls).parameters.values()
        if p.name not in skip and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return tuple(p.name for p in params), tuple(p.name for p in params if p.default is inspect.Parameter.empty)


def test_torch_optimizer_registry_matches_torch():
    import torch

    for name, params in optimizer.TORCH_OPTIMIZER_PARAMS.items():
        assert _keyword_names(getattr(torch.optim, name), ("params",))[0] == params, name
    assert set(optimizer.TORCH_OPTIMIZER_PARAMS) == set(optimizer.TORCH_OPTIMIZERS)


def test_torch_scheduler_registry_matches_torch():
    import torch

    for name, (params, required) in optimizer.TORCH_SCHEDULER_PARAMS.items():
        assert _keyword_names(getattr(torch.optim.lr_scheduler, name), ("optimizer",)) == (params, required), name
