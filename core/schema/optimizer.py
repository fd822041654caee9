"""``optimizer`` and ``scheduler``, and the registries of the optimizers and LR schedulers DeepSpeed builds.

DeepSpeed reads both sections with ``dict.get`` (lenient) and only checks the names and parameters when
``deepspeed.initialize`` builds them, so the registries below are the single source the validator uses
for "unknown scheduler parameter", "missing required parameter", wrong types and bounds, and that the
app builds its widgets from. Each parameter is declared once, as a :class:`Param`.

Sources (DeepSpeed 0.19.8): ``runtime/config.py`` (DEEPSPEED_OPTIMIZERS), ``runtime/engine.py``
(``_configure_basic_optimizer``, ``get_optimizer_configuration``, ``_do_sanity_check``),
``ops/adam``, ``ops/lamb``, ``ops/lion``, ``ops/adagrad``, ``runtime/zero/muon``, and
``runtime/lr_schedules.py`` (constructor signatures; where the docstrings disagree, the signature wins
and ``doc_note`` says what the docstring claims).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core import versions
from core.schema.base import FieldMeta, LenientSection, ds_field

#: JSON types a parameter value may have (JSON Schema's names).
JsonType = Literal["number", "integer", "boolean", "string", "array", "null"]

#: Which implementation DeepSpeed builds for an optimizer name:
#: "gpu" (the fused GPU kernel, the default), "cpu" (ZeRO-Offload: DeepSpeed's CPU optimizer, chosen
#: when ``offload_optimizer.device`` is cpu or nvme), "torch" (``torch_adam: true``: torch.optim).
Backend = Literal["gpu", "cpu", "torch"]

_JSON_CHECKS: dict[str, Any] = {
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list | tuple),
    "null": lambda v: v is None,
}


@dataclass(frozen=True)
class Param:
    """One constructor parameter of an optimizer or scheduler, as written in ``params``."""

    name: str
    types: tuple[JsonType, ...]
    """JSON types DeepSpeed / the constructor accepts."""
    description: str
    default: Any = None
    required: bool = False
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    """Bounds: values outside fail (DeepSpeed or torch raise) or make no sense (negative lr)."""
    length: int | None = None
    """For arrays of fixed length (``betas``: 2)."""
    item_range: tuple[float, float] | None = None
    """For arrays: the half-open range ``[low, high)`` each number in it belongs to (``betas``: [0, 1));
    ``item_note`` says what a number outside it does."""
    item_note: str = ""
    backends: tuple[Backend, ...] | None = None
    """Optimizers only: the implementations that accept it (None: all). Others fail with TypeError."""
    consumed: bool = False
    """Read and removed by DeepSpeed itself; never passed to the constructor."""
    float_read: bool = False
    """DeepSpeed passes it through ``float()`` before any check (OneCycle's step sizes in ``_initialize_cycle``), so
    a number written as text works: a warning that says so, not a type error."""
    class_defaults: Mapping[str, Any] = field(default_factory=dict)
    """The default where an implementation class differs from ``default`` (torch.optim.AdamW's weight_decay)."""
    meta: FieldMeta = field(default_factory=FieldMeta)
    """What the product knows beyond type, default and bounds (choices, unit, doc notes): the same metadata as a
    config field's (``core.schema.base.FieldMeta``), so widgets, help texts and rules read both one way."""

    def default_for(self, class_name: str | None) -> Any:
        """The default of the class the config selects (``core.effective``'s ``optimizer_class``)."""
        return self.class_defaults.get(class_name or "", self.default)

    def type_ok(self, value: Any) -> bool:
        """Whether ``value`` (parsed JSON) has one of the accepted types."""
        return any(_JSON_CHECKS[t](value) for t in self.types)

    def bound_problem(self, value: Any) -> str | None:
        """A message if the numeric ``value`` violates a bound, or a number in the array ``value`` is outside
        ``item_range``; else None."""
        if isinstance(value, list | tuple) and self.item_range is not None:
            low, high = self.item_range
            outside = next(((i, v) for i, v in enumerate(value)
                            if _JSON_CHECKS["number"](v) and not low <= v < high), None)
            return None if outside is None else \
                f"{self.name}[{outside[0]}] is {outside[1]}, outside [{low:g}, {high:g}): {self.item_note}"
        if not _JSON_CHECKS["number"](value):
            return None
        for op, bound, text in (
            ("ge", self.ge, ">="),
            ("gt", self.gt, ">"),
            ("le", self.le, "<="),
            ("lt", self.lt, "<"),
        ):
            if bound is None:
                continue
            ok = {"ge": value >= bound, "gt": value > bound, "le": value <= bound, "lt": value < bound}[op]
            if not ok:
                return f"{self.name} must be {text} {bound}, got {value}" + (f": {self.item_note}" if self.item_note
                                                                             else "")
        return None


@dataclass(frozen=True)
class OptimizerSpec:
    """An optimizer DeepSpeed builds from ``optimizer.type`` (matched case-insensitively)."""

    name: str
    """DeepSpeed's (lower-case) name."""
    display_name: str
    description: str
    params: tuple[Param, ...]
    implementations: dict[Backend, str]
    added: str | None = None
    removed: str | None = None
    requires_dynamic_loss_scale: bool = False
    """``lamb``: fp16 with a static ``loss_scale`` fails ("requires dynamic loss scaling")."""
    zero_supported: bool = True
    """False: with ZeRO, DeepSpeed demands ``zero_allow_untested_optimizer: true``."""
    needs_package: str | None = None
    params_complete: bool = True
    """False: extra parameters are passed to a third-party class we do not list exhaustively."""
    state_tensors: int = 2
    """fp32 state tensors per parameter the optimizer keeps (Adam: m and v; Lion: one moment)."""
    states_need_momentum: bool = False
    """SGD-like: the state tensor exists only with ``momentum`` > 0 (none otherwise)."""
    betas_in_defaults: bool | None = None
    """Whether the built optimizer's ``defaults`` has ``betas`` (OneCycle cycles momentum only then); None: it
    does exactly when the optimizer takes ``betas``. Muon's class passes an empty dict as its defaults."""

    @property
    def has_betas_default(self) -> bool:
        """Whether the built optimizer's ``defaults`` holds ``betas`` (see ``betas_in_defaults``)."""
        return self.param("betas") is not None if self.betas_in_defaults is None else self.betas_in_defaults

    def exists_in(self, version: str) -> bool:
        """Whether DeepSpeed ``version`` knows this optimizer (its DEEPSPEED_OPTIMIZERS, from the profile)."""
        return self.name in versions.optimizer_names(version)

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        return next((p for p in self.params if p.name == name), None)

    def params_for(self, backend: Backend) -> tuple[Param, ...]:
        """The parameters the ``backend`` implementation accepts (plus those DeepSpeed consumes)."""
        return tuple(p for p in self.params if p.backends is None or backend in p.backends)


@dataclass(frozen=True)
class SchedulerSpec:
    """A learning-rate scheduler of ``deepspeed.runtime.lr_schedules`` (``scheduler.type``, exact case)."""

    name: str
    description: str
    params: tuple[Param, ...]

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        return next((p for p in self.params if p.name == name), None)

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the parameters without a default."""
        return tuple(p.name for p in self.params if p.required)


# --------------------------------------------------------------------------------------------------
# optimizers
# --------------------------------------------------------------------------------------------------

_NUM: tuple[JsonType, ...] = ("number",)
_BOOL: tuple[JsonType, ...] = ("boolean",)
_ADAM_LIKE: tuple[Backend, ...] = ("gpu", "cpu")


def _lr(default: float) -> Param:
    return Param(
        "lr",
        _NUM,
        "Learning rate: the step size of each update. The most important "
        "hyper-parameter; with a scheduler it is the peak (or starting) value.",
        default=default,
        ge=0.0,
    )


def _betas(default: tuple[float, float], backends: tuple[Backend, ...] | None = None, unchecked: str = "") -> Param:
    """``betas``; ``unchecked``: what was seen of the optimizer's implementations given a beta outside [0, 1)."""
    return Param(
        "betas",
        ("array",),
        "Decay rates of the first and second moment averages, `[b1, b2]`. "
        "Lower b2 (e.g. 0.95) is common for large language models.",
        default=list(default),
        length=2,
        backends=backends,
        item_range=(0.0, 1.0),
        item_note="every step multiplies the optimizer's moving average (its moment estimate) by it, so at 1 the "
                  "estimate never decays, above 1 it diverges, and below 0 it flips sign every step" + unchecked,
    )


def _eps(default: float, backends: tuple[Backend, ...] | None = None) -> Param:
    return Param(
        "eps", _NUM, "Added to the denominator for numerical stability.", default=default, ge=0.0, backends=backends
    )


def _weight_decay(default: float = 0.0, backends: tuple[Backend, ...] | None = None) -> Param:
    return Param(
        "weight_decay",
        _NUM,
        "Weight decay (L2 penalty, or decoupled decay in AdamW mode).",
        default=default,
        ge=0.0,
        backends=backends,
    )


#: Constructor keywords OnebitAdam, ZeroOneAdam and OnebitLamb share (``runtime/fp16/onebit/``);
#: ``max_grad_norm`` is one too, but the engine refuses it before the constructor runs.
_ONEBIT_ADAM_STYLE: tuple[Param, ...] = (
    Param("bias_correction", _BOOL, "Correct the moment estimates for their zero initialisation.", default=True),
    Param("eps_inside_sqrt", _BOOL, "Add eps inside the square root.", default=False),
    Param("amsgrad", _BOOL, "Not supported: the constructor raises RuntimeError when true.", default=False,
          meta=FieldMeta(choices=(False,))),
)


_FP32_STATES = Param(
    "fp32_optimizer_states",
    _BOOL,
    "With ZeRO-Offload (CPU optimizer): keep the optimizer states in fp32 (default) rather than the "
    "training precision. Ignored on the GPU path.",
    default=True,
    consumed=True,
)
_TORCH_ONLY: tuple[Backend, ...] = ("torch",)
_TORCH_EXTRAS = (
    Param(
        "foreach",
        ("boolean", "null"),
        "torch.optim: use the multi-tensor (foreach) implementation.",
        backends=_TORCH_ONLY,
    ),
    Param(
        "maximize",
        _BOOL,
        "torch.optim: maximise the objective instead of minimising it.",
        default=False,
        backends=_TORCH_ONLY,
    ),
    Param("capturable", _BOOL, "torch.optim: allow CUDA-graph capture.", default=False, backends=_TORCH_ONLY),
    Param(
        "differentiable", _BOOL, "torch.optim: allow autograd through the step.", default=False, backends=_TORCH_ONLY
    ),
    Param("fused", ("boolean", "null"), "torch.optim: use the fused CUDA kernel.", backends=_TORCH_ONLY),
)


def _adam_params() -> tuple[Param, ...]:
    return (
        _lr(1e-3),
        Param(
            "bias_correction",
            _BOOL,
            "Correct the moment estimates for their zero initialisation.",
            default=True,
            backends=_ADAM_LIKE,
        ),
        # run on DeepSpeed 0.19.8's CPU build: [1.5, 0.9], [0.9, 1.5], [-0.5, 0.999] and [1.0, 1.0] train with
        # FusedAdam and ([1.5, 0.9]) with DeepSpeedCPUAdam without an error; torch's Adam refuses them
        _betas((0.9, 0.999), unchecked="; DeepSpeed's fused Adam and its CPU Adam train with it without an error"),
        _eps(1e-8),
        Param(
            "weight_decay",
            _NUM,
            "Weight decay (decoupled in AdamW mode). 0.01-0.1 is typical for transformers.",
            default=0.0,
            ge=0.0,
            class_defaults={"torch.optim.AdamW": 0.01},
            meta=FieldMeta(doc_note="Default 0 with DeepSpeed's fused and CPU Adam; with `torch_adam` "
                           "(torch.optim.AdamW) the default is 0.01.")),
        Param(
            "amsgrad",
            _BOOL,
            "AMSGrad variant. DeepSpeed's fused GPU Adam does not support it (RuntimeError when true).",
            default=False,
        ),
        Param(
            "set_grad_none",
            _BOOL,
            "Fused Adam: set gradients to None (not zero) in zero_grad.",
            default=True,
            backends=("gpu",),
        ),
        Param(
            "adam_w_mode",
            _BOOL,
            "Decoupled weight decay (AdamW). For `adam` it defaults to true, so "
            "`Adam` behaves like AdamW unless you set false; `adamw` always uses it.",
            default=True,
            consumed=True,
        ),
        Param(
            "torch_adam",
            _BOOL,
            "Use torch.optim.Adam/AdamW instead of DeepSpeed's fused kernel.",
            default=False,
            consumed=True,
        ),
        _FP32_STATES,
        *_TORCH_EXTRAS,
    )


OPTIMIZERS: dict[str, OptimizerSpec] = {
    spec.name: spec
    for spec in (
        OptimizerSpec(
            "adam",
            "Adam",
            "Adam with DeepSpeed's fused GPU kernel (FusedAdam), CPU-Adam under ZeRO-Offload, or "
            "torch.optim with `torch_adam`. Note: AdamW-style decay is on by default (`adam_w_mode`).",
            _adam_params(),
            {
                "gpu": "deepspeed.ops.adam.FusedAdam",
                "cpu": "deepspeed.ops.adam.DeepSpeedCPUAdam",
                "torch": "torch.optim.AdamW (torch.optim.Adam with adam_w_mode false)",
            },
        ),
        OptimizerSpec(
            "adamw",
            "AdamW",
            "Adam with decoupled weight decay; same implementations as `adam`.",
            _adam_params(),
            {
                "gpu": "deepspeed.ops.adam.FusedAdam",
                "cpu": "deepspeed.ops.adam.DeepSpeedCPUAdam",
                "torch": "torch.optim.AdamW",
            },
        ),
        OptimizerSpec(
            "lamb",
            "Lamb",
            "LAMB (layer-wise adaptive large-batch optimiser), DeepSpeed's fused GPU kernel. Needs dynamic "
            "loss scaling with fp16, and `zero_allow_untested_optimizer` with ZeRO.",
            (
                _lr(1e-3),
                Param(
                    "bias_correction",
                    _BOOL,
                    "Correct the moment estimates for their zero initialisation.",
                    default=True,
                ),
                _betas((0.9, 0.999)),
                _eps(1e-8),
                Param("eps_inside_sqrt", _BOOL, "Add eps inside the square root.", default=False),
                _weight_decay(),
                Param("max_coeff", _NUM, "Upper bound of the LAMB trust ratio.", default=10.0),
                Param("min_coeff", _NUM, "Lower bound of the LAMB trust ratio.", default=0.01),
                Param("amsgrad", _BOOL, "Not supported (RuntimeError when true).", default=False),
            ),
            {"gpu": "deepspeed.ops.lamb.FusedLamb"},
            requires_dynamic_loss_scale=True,
            zero_supported=False,
        ),
        OptimizerSpec(
            "adagrad",
            "Adagrad",
            "Adagrad: torch.optim.Adagrad on the GPU, DeepSpeed's CPU-Adagrad under ZeRO-Offload.",
            (
                _lr(1e-2),
                Param("lr_decay", _NUM, "torch.optim.Adagrad: learning-rate decay.", default=0.0, backends=("gpu",)),
                _weight_decay(),
                Param(
                    "initial_accumulator_value",
                    _NUM,
                    "torch.optim.Adagrad: starting accumulator value.",
                    default=0.0,
                    backends=("gpu",),
                ),
                _eps(1e-10),
                Param("amsgrad", _BOOL, "CPU-Adagrad only.", default=False, backends=("cpu",)),
                Param("foreach", ("boolean", "null"), "torch.optim: multi-tensor implementation.", backends=("gpu",)),
                Param(
                    "maximize", _BOOL, "torch.optim: maximise instead of minimise.", default=False, backends=("gpu",)
                ),
                Param(
                    "differentiable", _BOOL, "torch.optim: autograd through the step.", default=False, backends=("gpu",)
                ),
                Param("fused", ("boolean", "null"), "torch.optim: fused kernel.", backends=("gpu",)),
                Param(
                    "fp32_optimizer_states", _BOOL, "CPU-Adagrad: keep states in fp32.", default=True, backends=("cpu",)
                ),
            ),
            {"gpu": "torch.optim.Adagrad", "cpu": "deepspeed.ops.adagrad.DeepSpeedCPUAdagrad"},
            state_tensors=1,
        ),
        OptimizerSpec(
            "lion",
            "Lion",
            "Lion (sign-based, one moment: less optimizer memory than Adam). Fused GPU kernel, or "
            "CPU-Lion under ZeRO-Offload. Usually wants a 3-10x smaller lr than AdamW.",
            (
                _lr(1e-3),
                _betas((0.9, 0.999)),
                _weight_decay(),
                Param("set_grad_none", _BOOL, "Set gradients to None in zero_grad.", default=True, backends=("gpu",)),
                Param(
                    "fp32_optimizer_states", _BOOL, "CPU-Lion: keep states in fp32.", default=True, backends=("cpu",)
                ),
            ),
            {"gpu": "deepspeed.ops.lion.FusedLion", "cpu": "deepspeed.ops.lion.DeepSpeedCPULion"},
            state_tensors=1,
        ),
        OptimizerSpec(
            "muon",
            "Muon",
            "Muon for 2-D weight matrices (orthogonalised momentum) with an auxiliary Adam for the other "
            "parameters. Unknown keys are ignored.",
            (
                Param("lr", _NUM, "Shared learning rate of both halves (Muon default 0.02, Adam 3e-4).", ge=0.0),
                Param("muon_lr", _NUM, "Learning rate of the Muon half (overrides `lr`).", ge=0.0),
                Param("adam_lr", _NUM, "Learning rate of the auxiliary Adam half (overrides `lr`).", ge=0.0),
                Param("momentum", _NUM, "Muon momentum.", default=0.95),
                Param("weight_decay", _NUM, "Weight decay of both halves.", default=0.0, ge=0.0),
                Param(
                    "ns_method",
                    ("string",),
                    "Newton-Schulz orthogonalisation variant.",
                    default="gram",
                    meta=FieldMeta(choices=("gram", "standard"))),
                _betas((0.9, 0.95)),
                _eps(1e-10),
                Param("adam_w_mode", _BOOL, "Decoupled weight decay for the Adam half.", default=True, consumed=True),
                Param("torch_adam", _BOOL, "Use torch.optim for the Adam half.", default=False, consumed=True),
                _FP32_STATES,
            ),
            {"gpu": "deepspeed.runtime.zero.muon.MuonWithAuxAdam"},
            state_tensors=1,  # the momentum buffer of the (dominant) 2-D matrices; the aux-Adam half keeps 2
            betas_in_defaults=False,  # original_muon.py: super().__init__(param_groups, dict())
        ),
        *(
            OptimizerSpec(
                name,
                display,
                f"{base} with maximal-update parametrisation (µP). Needs the `mup` package.",
                params,
                {"gpu": f"mup.{display}"},
                state_tensors=1 if name == "musgd" else 2,
                states_need_momentum=name == "musgd",
                needs_package="mup",
                zero_supported=False,
                params_complete=False,
            )
            for name, display, base, params in (
                (
                    "muadam",
                    "MuAdam",
                    "torch.optim.Adam",
                    (_lr(1e-3), _betas((0.9, 0.999)), _eps(1e-8), _weight_decay()),
                ),
                (
                    "muadamw",
                    "MuAdamW",
                    "torch.optim.AdamW",
                    (_lr(1e-3), _betas((0.9, 0.999)), _eps(1e-8), _weight_decay(0.01)),
                ),
                (
                    "musgd",
                    "MuSGD",
                    "torch.optim.SGD",
                    (
                        _lr(1e-3),
                        Param("momentum", _NUM, "SGD momentum.", default=0.0),
                        _weight_decay(),
                        Param("nesterov", _BOOL, "Nesterov momentum.", default=False),
                    ),
                ),
            )
        ),
        *(
            OptimizerSpec(
                name,
                display,
                description,
                (*base, *_ONEBIT_ADAM_STYLE, *extra),
                {"gpu": impl},
                removed="0.19.8",
                zero_supported=False,
                requires_dynamic_loss_scale=False,
            )
            for name, display, description, impl, base, extra in (
                (
                    "onebitadam",
                    "OneBitAdam",
                    "1-bit Adam: compressed communication after a warm-up (removed in DeepSpeed 0.19.8).",
                    "deepspeed.runtime.fp16.onebit.adam.OnebitAdam",
                    (_lr(1e-3), _betas((0.9, 0.999)), _eps(1e-8), _weight_decay()),
                    (
                        Param(
                            "freeze_step",
                            ("integer",),
                            "Warm-up steps before 1-bit compression starts.",
                            default=100000,
                            meta=FieldMeta(unit="steps")),
                        Param("cuda_aware", _BOOL, "The MPI library is CUDA-aware.", default=False),
                        Param(
                            "comm_backend_name",
                            ("string",),
                            "Communication backend.",
                            default="nccl",
                            meta=FieldMeta(choices=("nccl", "mpi", "hccl", "compressed"))),
                    ),
                ),
                (
                    "zerooneadam",
                    "ZeroOneAdam",
                    "0/1 Adam (removed in DeepSpeed 0.19.8).",
                    "deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam",
                    (_lr(1e-3), _betas((0.9, 0.999)), _eps(1e-8), _weight_decay()),
                    (
                        Param(
                            "var_freeze_step",
                            ("integer",),
                            "Last step at which the variance is updated.",
                            default=100000,
                        ),
                        Param("var_update_scaler", ("integer",), "Interval of variance updates.", default=16),
                        Param(
                            "local_step_scaler",
                            ("integer",),
                            "Scales the local-step interval with the lr policy.",
                            default=32678,
                        ),
                        Param("local_step_clipper", ("integer",), "Largest local-step interval.", default=16),
                        Param("cuda_aware", _BOOL, "The MPI library is CUDA-aware.", default=False),
                        Param("comm_backend_name", ("string",), "Communication backend.", default="nccl"),
                    ),
                ),
                (
                    "onebitlamb",
                    "OneBitLamb",
                    "1-bit LAMB (removed in DeepSpeed 0.19.8).",
                    "deepspeed.runtime.fp16.onebit.lamb.OnebitLamb",
                    (_lr(1e-3), _betas((0.9, 0.999)), _eps(1e-8), _weight_decay()),
                    (
                        Param(
                            "freeze_step",
                            ("integer",),
                            "Warm-up steps before 1-bit compression starts.",
                            default=100000,
                        ),
                        Param("max_coeff", _NUM, "Upper bound of the trust ratio.", default=10.0),
                        Param("min_coeff", _NUM, "Lower bound of the trust ratio.", default=0.01),
                        Param("cuda_aware", _BOOL, "The MPI library is CUDA-aware.", default=False),
                        Param("comm_backend_name", ("string",), "Communication backend.", default="nccl"),
                        Param("coeff_beta", _NUM, "Running-average coefficient of the lamb coefficient.", default=0.9),
                        Param("factor_max", _NUM, "Max scaling factor of the frozen coefficient.", default=4.0),
                        Param("factor_min", _NUM, "Min scaling factor of the frozen coefficient.", default=0.5),
                        Param("factor_threshold", _NUM, "Max fluctuation of the factor between steps.", default=0.1),
                    ),
                ),
            )
        ),
    )
}

#: ``torch.optim`` optimizer classes DeepSpeed builds when ``optimizer.type`` is not one of its own
#: names. Matched case-sensitively (``"SGD"`` works, ``"sgd"`` fails: "sgd is not a supported DeepSpeed
#: Optimizer"); names that are DeepSpeed names ignoring case (``"Adam"``) go to DeepSpeed's optimizer.
TORCH_OPTIMIZERS: tuple[str, ...] = (
    "ASGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
)

#: fp32 state tensors per parameter of the torch.optim classes the memory model knows (SGD: only with
#: ``momentum`` > 0); the DeepSpeed optimizers carry theirs on their :class:`OptimizerSpec`.
TORCH_OPTIMIZER_STATE_TENSORS: dict[str, int] = {
    "Adadelta": 2, "Adamax": 2, "NAdam": 2, "RAdam": 2, "RMSprop": 1, "Rprop": 2, "SGD": 1,
}

#: Keyword parameters of the torch.optim classes DeepSpeed may build (``cls(params, **optimizer.params)``),
#: checked against ``inspect.signature`` by tests/test_schema_parity_registries.py (torch 2.13).
TORCH_OPTIMIZER_PARAMS: dict[str, tuple[str, ...]] = {
    "ASGD": ("lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "Adadelta": ("lr", "rho", "eps", "weight_decay", "foreach", "capturable", "maximize", "differentiable"),
    "Adafactor": ("lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize"),
    "Adagrad": (
        "lr",
        "lr_decay",
        "weight_decay",
        "initial_accumulator_value",
        "eps",
        "foreach",
        "maximize",
        "differentiable",
        "fused",
    ),
    "Adam": (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "amsgrad",
        "foreach",
        "maximize",
        "capturable",
        "differentiable",
        "fused",
        "decoupled_weight_decay",
    ),
    "AdamW": (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "amsgrad",
        "maximize",
        "foreach",
        "capturable",
        "differentiable",
        "fused",
    ),
    "Adamax": ("lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "LBFGS": ("lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"),
    "Muon": ("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"),
    "NAdam": (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "momentum_decay",
        "decoupled_weight_decay",
        "foreach",
        "maximize",
        "capturable",
        "differentiable",
    ),
    "RAdam": (
        "lr",
        "betas",
        "eps",
        "weight_decay",
        "decoupled_weight_decay",
        "foreach",
        "maximize",
        "capturable",
        "differentiable",
    ),
    "RMSprop": (
        "lr",
        "alpha",
        "eps",
        "weight_decay",
        "momentum",
        "centered",
        "capturable",
        "foreach",
        "maximize",
        "differentiable",
    ),
    "Rprop": ("lr", "etas", "step_sizes", "capturable", "foreach", "maximize", "differentiable"),
    "SGD": (
        "lr",
        "momentum",
        "dampening",
        "weight_decay",
        "nesterov",
        "maximize",
        "foreach",
        "differentiable",
        "fused",
    ),
    "SparseAdam": ("lr", "betas", "eps", "maximize"),
}

#: torch.optim.lr_scheduler classes DeepSpeed falls back to for ``scheduler.type``: their keyword parameters
#: and the required ones (``cls(optimizer, **scheduler.params)``), checked against ``inspect.signature``.
TORCH_SCHEDULER_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "LambdaLR": (("lr_lambda", "last_epoch"), ("lr_lambda",)),
    "MultiplicativeLR": (("lr_lambda", "last_epoch"), ("lr_lambda",)),
    "StepLR": (("step_size", "gamma", "last_epoch"), ("step_size",)),
    "MultiStepLR": (("milestones", "gamma", "last_epoch"), ("milestones",)),
    "ConstantLR": (("factor", "total_iters", "last_epoch"), ()),
    "LinearLR": (("start_factor", "end_factor", "total_iters", "last_epoch"), ()),
    "ExponentialLR": (("gamma", "last_epoch"), ("gamma",)),
    "SequentialLR": (("schedulers", "milestones", "last_epoch"), ("schedulers", "milestones")),
    "CosineAnnealingLR": (("T_max", "eta_min", "last_epoch"), ("T_max",)),
    "ChainedScheduler": (("schedulers",), ("schedulers",)),
    "ReduceLROnPlateau": (
        ("mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"),
        (),
    ),
    "CyclicLR": (
        (
            "base_lr",
            "max_lr",
            "step_size_up",
            "step_size_down",
            "mode",
            "gamma",
            "scale_fn",
            "scale_mode",
            "cycle_momentum",
            "base_momentum",
            "max_momentum",
            "last_epoch",
        ),
        ("base_lr", "max_lr"),
    ),
    "CosineAnnealingWarmRestarts": (("T_0", "T_mult", "eta_min", "last_epoch"), ("T_0",)),
    "OneCycleLR": (
        (
            "max_lr",
            "total_steps",
            "epochs",
            "steps_per_epoch",
            "pct_start",
            "anneal_strategy",
            "cycle_momentum",
            "base_momentum",
            "max_momentum",
            "div_factor",
            "final_div_factor",
            "three_phase",
            "last_epoch",
        ),
        ("max_lr",),
    ),
    "PolynomialLR": (("total_iters", "power", "last_epoch"), ()),
}

#: Scheduler classes whose required arguments are Python objects (functions, schedulers): no JSON config
#: can build them.
TORCH_SCHEDULERS_NEED_OBJECTS: tuple[str, ...] = ("LambdaLR", "MultiplicativeLR", "SequentialLR", "ChainedScheduler")


#: ``params`` keys the HF Trainer fills in when they are "auto" (transformers' HfTrainerDeepSpeedConfig),
#: for any optimizer / scheduler type.
HF_FILLED_PARAMS: dict[str, tuple[str, ...]] = {
    "optimizer": ("lr", "betas", "eps", "weight_decay"),
    "scheduler": ("warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "total_num_steps"),
}

#: Parameters DeepSpeed refuses in ``optimizer.params`` for every optimizer, with its message.
FORBIDDEN_OPTIMIZER_PARAMS: dict[str, str] = {
    "max_grad_norm": "'max_grad_norm' is not supported as an optimizer parameter, please switch to using the "
    "deepspeed parameter 'gradient_clipping'",
}


def deepspeed_optimizer_names(version: str) -> tuple[str, ...]:
    """DEEPSPEED_OPTIMIZERS of DeepSpeed ``version`` (lower-case names)."""
    return tuple(name for name, spec in OPTIMIZERS.items() if spec.exists_in(version))


def resolve_optimizer(type_name: str, version: str) -> OptimizerSpec | str | None:
    """What ``optimizer.type`` selects in DeepSpeed ``version``: its spec, a torch.optim class name, or None."""
    spec = OPTIMIZERS.get(type_name.lower())
    if spec is not None and spec.exists_in(version):
        return spec
    return type_name if type_name in TORCH_OPTIMIZERS else None


# --------------------------------------------------------------------------------------------------
# schedulers
# --------------------------------------------------------------------------------------------------

_LAST_BATCH = Param(
    "last_batch_iteration",
    ("integer",),
    "Index of the last batch, for resuming: -1 starts the schedule from the beginning. Checkpoints restore "
    "it, so you rarely set it.",
    default=-1,
)
_WARMUP_NUM_STEPS = Param(
    "warmup_num_steps",
    ("integer",),
    "Steps over which the learning rate rises to its peak. Must be a positive JSON integer (`1000.0` is "
    "rejected); values below 2 act as 2.",
    default=1000,
    gt=0,
    meta=FieldMeta(unit="steps"))
_WARMUP_TYPE = Param(
    "warmup_type",
    ("string",),
    "Shape of the warm-up curve: `log` (fast start) or `linear`. Any other value falls back to `log` with a warning.",
    default="log",
    meta=FieldMeta(choices=("log", "linear")))
_TOTAL_NUM_STEPS = Param(
    "total_num_steps",
    _NUM,
    "Total training steps (optimizer steps): the schedule reaches its end value here. Required. A value "
    "below `warmup_num_steps` only warns.",
    required=True,
    meta=FieldMeta(unit="steps"))
_LR_OR_LIST: tuple[JsonType, ...] = ("number", "array")
#: Bounds of a scheduler's learning rate (or lr ratio): DeepSpeed's schedulers take any number and a negative one
#: trains uphill; the schedulers check none of them (a finding is a warning, ``type.unchecked``).
_NOT_NEGATIVE_LR: dict[str, Any] = {
    "ge": 0, "item_range": (0.0, float("inf")),
    "item_note": "a negative learning rate makes the optimizer climb the loss (gradient ascent)",
}

SCHEDULERS: dict[str, SchedulerSpec] = {
    spec.name: spec
    for spec in (
        SchedulerSpec(
            "WarmupLR",
            "Warm up from `warmup_min_lr` to `warmup_max_lr` over `warmup_num_steps`, then stay constant.",
            (
                Param(
                    "warmup_min_lr",
                    _LR_OR_LIST,
                    "Learning rate at step 0 (a number, or one per parameter group).",
                    default=0.0,
                    **_NOT_NEGATIVE_LR,
                ),
                Param(
                    "warmup_max_lr",
                    ("number", "array", "null"),
                    "Learning rate reached after warm-up. Unset: each parameter group's `lr` from the optimizer.",
                    default=None,
                    **_NOT_NEGATIVE_LR,
                    meta=FieldMeta(doc_note="The docstring says the default is 0.001; the signature's default is None "
                    "(the optimizer's lr).")),
                _WARMUP_NUM_STEPS,
                _WARMUP_TYPE,
                _LAST_BATCH,
            ),
        ),
        SchedulerSpec(
            "WarmupDecayLR",
            "Warm up like WarmupLR, then decay linearly to 0 at `total_num_steps`.",
            (
                _TOTAL_NUM_STEPS,
                Param("warmup_min_lr", _LR_OR_LIST, "Learning rate at step 0.", default=0.0, **_NOT_NEGATIVE_LR),
                Param("warmup_max_lr", ("number", "array", "null"), "Peak learning rate after warm-up. null: each "
                      "parameter group's `lr` from the optimizer (passed on to WarmupLR; 0.17.2 and later).",
                      default=0.001, **_NOT_NEGATIVE_LR),
                _WARMUP_NUM_STEPS,
                _WARMUP_TYPE,
                _LAST_BATCH,
            ),
        ),
        SchedulerSpec(
            "WarmupCosineLR",
            "Warm up from `warmup_min_ratio` × lr to the optimizer's lr, then cosine-decay to "
            "`cos_min_ratio` × lr at `total_num_steps`. Takes ratios, not learning rates.",
            (
                _TOTAL_NUM_STEPS,
                Param(
                    "warmup_min_ratio",
                    _NUM,
                    "Starting learning rate as a fraction of the optimizer's lr.",
                    default=0.0,
                    **_NOT_NEGATIVE_LR,
                    meta=FieldMeta(doc_note="The docstring says 'float or list'; the code uses it as one number.")),
                _WARMUP_NUM_STEPS,
                Param(
                    "cos_min_ratio", _NUM, "Final learning rate as a fraction of the optimizer's lr.", default=0.0001,
                    **_NOT_NEGATIVE_LR,
                ),
                _WARMUP_TYPE,
                _LAST_BATCH,
            ),
        ),
        SchedulerSpec(
            "OneCycle",
            "1-cycle policy: lr rises from `cycle_min_lr` to `cycle_max_lr` and back (momentum the other way), "
            "then optionally decays.",
            (
                Param("cycle_min_lr", _LR_OR_LIST, "Lowest learning rate of the cycle. Required.", required=True,
                      **_NOT_NEGATIVE_LR),
                Param("cycle_max_lr", _LR_OR_LIST, "Highest learning rate of the cycle. Required.", required=True,
                      **_NOT_NEGATIVE_LR),
                Param("decay_lr_rate", _NUM, "Learning-rate decay rate after the cycle (0: no decay).", default=0.0),
                Param(
                    "cycle_first_step_size",
                    _NUM,
                    "Steps of the rising half of the cycle. Must be > 0.",
                    default=2000,
                    gt=0,
                    float_read=True,
                    meta=FieldMeta(unit="steps")),
                Param(
                    "cycle_second_step_size",
                    ("number", "null"),
                    "Steps of the falling half. Unset: same as `cycle_first_step_size`. Must be >= 0.",
                    default=None,
                    ge=0,
                    float_read=True,
                    meta=FieldMeta(unit="steps")),
                Param(
                    "cycle_first_stair_count",
                    ("integer",),
                    "Stairs in the first half (staircase changes); 0 disables.",
                    default=0,
                ),
                Param(
                    "cycle_second_stair_count",
                    ("integer", "null"),
                    "Stairs in the second half. Unset: same as `cycle_first_stair_count`.",
                    default=None,
                    meta=FieldMeta(doc_note="The docstring says the default is 0; the signature's default is None "
                    "(= cycle_first_stair_count).")),
                Param(
                    "decay_step_size",
                    _NUM,
                    "Interval of the decay steps after the cycle (0: no decay).",
                    default=0,
                    meta=FieldMeta(unit="steps")),
                Param(
                    "cycle_momentum",
                    _BOOL,
                    "Cycle the momentum (betas[0]) inversely to the lr. Turned "
                    "off with a warning if the optimizer has no betas.",
                    default=True,
                ),
                Param("cycle_min_mom", _LR_OR_LIST, "Lowest momentum of the cycle.", default=0.8),
                Param("cycle_max_mom", _LR_OR_LIST, "Highest momentum of the cycle.", default=0.9),
                Param("decay_mom_rate", _NUM, "Momentum decay rate after the cycle.", default=0.0),
                _LAST_BATCH,
            ),
        ),
        SchedulerSpec(
            "LRRangeTest",
            "Learning-rate range test: raise the lr steadily to find the largest stable value (for tuning, "
            "not for real training).",
            (
                Param(
                    "lr_range_test_min_lr",
                    _LR_OR_LIST,
                    "Starting learning rate.",
                    default=0.001,
                    **_NOT_NEGATIVE_LR,
                    meta=FieldMeta(doc_note="The docstring gives no default; the signature's is 0.001.")),
                Param(
                    "lr_range_test_step_size",
                    ("integer",),
                    "Steps between lr increases. Must be a positive integer.",
                    default=2000,
                    gt=0,
                    meta=FieldMeta(unit="steps")),
                Param("lr_range_test_step_rate", _NUM, "Scaling rate of the increase.", default=1.0),
                Param(
                    "lr_range_test_staircase",
                    _BOOL,
                    "Increase in steps (staircase) instead of continuously.",
                    default=False,
                ),
                _LAST_BATCH,
            ),
        ),
    )
}

#: The parameter holding each DeepSpeed scheduler's peak learning rate, which the scheduler writes into the
#: optimizer (replacing its ``lr``). WarmupCosineLR scales the optimizer's lr (ratios) and LRRangeTest sweeps
#: upwards from ``lr_range_test_min_lr`` with no peak: neither has one.
SCHEDULER_PEAK_LR: dict[str, str] = {
    "WarmupLR": "warmup_max_lr",
    "WarmupDecayLR": "warmup_max_lr",
    "OneCycle": "cycle_max_lr",
}


# --------------------------------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------------------------------

_OPTIMIZER_CHOICES = tuple(spec.display_name for spec in OPTIMIZERS.values()) + tuple(
    name for name in TORCH_OPTIMIZERS if name.lower() not in OPTIMIZERS
)


class OptimizerConfig(LenientSection):
    """The optimizer DeepSpeed builds. Omit the section to pass your own optimizer to
    ``deepspeed.initialize`` (or let the HF Trainer build one)."""

    type: str | None = ds_field(
        None,
        auto="kept",
        hf_auto=False,
        choices=_OPTIMIZER_CHOICES,
        widget="select",
        raises="config",
        description="Optimizer name. DeepSpeed's own (Adam, AdamW, Lamb, Adagrad, Lion, Muon, MuAdam, "
        "MuAdamW, MuSGD) match in any case; other names must be a torch.optim class, exact case (`SGD`).",
        doc_note="The docs list OneBitAdam, ZeroOneAdam and OneBitLamb; DeepSpeed 0.19.8 removed them "
        "(0.19.5 has them). A non-string type fails with AttributeError.",
    )
    params: dict[str, Any] | None = ds_field(
        None,
        widget="json",
        description="Keyword arguments of the optimizer's constructor (lr, betas, eps, weight_decay, ...). "
        'Values may be "auto" with the HF Trainer, which fills them in.',
        hf_auto=True,
        auto="kept",
    )
    legacy_fusion: bool = ds_field(
        False,
        auto="kept",
        description="fp16 only: use the legacy fused-Adam path of the fp16 optimizer wrapper. Leave false.",
    )


class SchedulerConfig(LenientSection):
    """The learning-rate scheduler DeepSpeed builds and steps after every optimizer step."""

    type: str | None = ds_field(
        None,
        auto="kept",
        choices=tuple(SCHEDULERS),
        widget="select",
        description="Scheduler name, exact case: WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, "
        "LRRangeTest, or a class of torch.optim.lr_scheduler.",
    )
    params: dict[str, Any] | None = ds_field(
        None,
        widget="json",
        hf_auto=True,
        auto="kept",
        description="Keyword arguments of the scheduler's constructor. Unknown names fail when the engine "
        "starts (TypeError).",
        doc_note="DeepSpeed calls `cls(optimizer, **params)`, so a missing or null `params` fails with TypeError.",
    )
