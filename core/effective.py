"""What a config MEANS to DeepSpeed 0.19.8: the one place that reads stage, precision, optimizer and offload.

Every consumer (the rules, the memory model, the precision switch, the app and the CLI) asks
:func:`effective` instead of re-reading the keys, so they cannot disagree. The readings follow DeepSpeed's
own code:

- pydantic sections (``zero_optimization``, ``fp16``, ``bf16``, offload sub-sections) read booleans in
  pydantic's lax mode (``1``, ``"true"``, ``"on"``, ``"yes"`` ... are true) and drop a value ``"auto"``,
  so the field's default applies (``DeepSpeedConfigModel``);
- ``"zero_optimization": true`` is the legacy form, stage 1 (``read_zero_config_deprecated``);
- ``bfloat16`` is read only when ``bf16`` is absent (``get_bfloat16_config``);
- ``torch_autocast.enabled`` is read with ``get_scalar_param`` (a plain ``dict.get``) and then used as a
  Python truth value, so any non-empty string counts as on; its ``dtype`` goes to ``torch.autocast`` (unset:
  PyTorch's default for the device, float16 on CUDA);
- ``optimizer.params.torch_adam`` is popped and used as a Python truth value (``get_optimizer_configuration``);
  the optimizer class follows ``_configure_basic_optimizer``: for Adam/AdamW ``torch_adam`` wins, then the
  CPU optimizer when ``offload_optimizer.device`` is cpu or nvme (``zero_use_cpu_optimizer``, whatever the
  stage), then the fused GPU kernel;
- ``overlap_comm`` unset (or ``"auto"``) defaults to ``stage == 3`` (``overlap_comm_valid``);
- ``fp16.fp16_master_weights_and_grads``, ``bf16.bf16_master_weights_and_grads`` and ``bf16.bf16_optimizer_states``
  are pydantic booleans (``DeepSpeedFP16Config`` / ``DeepSpeedBF16Config``); the ZeRO optimizers (stage 1-3) keep
  their master weights and gradient partition in that dtype (``ZeROOptimizer._configure_master_weights``), and the
  optimizer's states follow the master weights (``FusedAdam``: ``zeros_like``), except that ``DeepSpeedCPUAdam``
  keeps them fp32 unless its ``fp32_optimizer_states`` is false, which ``bf16_optimizer_states`` forces
  (``get_optimizer_configuration``; otherwise ``optimizer.params.fp32_optimizer_states`` as a truth value). The
  bf16 pair is off in releases that never read it (before 0.17.1 bf16 is read with ``dict.get`` and they are
  ignored; 0.17.1-0.18.2 refuse them): ``core.versions.key_known``. The fp16 one is read with ``dict.get`` where
  the release reads ``fp16`` so (up to 0.17.0), and there only when ``fp16.enabled`` is on
  (``get_fp16_master_weights_and_grads_enabled``; ``core.versions.read_behind_switch``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from core import versions
from core.rules.context import lax_bool, lax_int
from core.schema.optimizer import (
    OPTIMIZERS,
    TORCH_OPTIMIZER_STATE_TENSORS,
    Backend,
    OptimizerSpec,
    resolve_optimizer,
)
from core.schema.precision import canonical_dtype

#: Offload devices DeepSpeed's ``OffloadDeviceEnum`` accepts (exact spelling).
OFFLOAD_DEVICES: tuple[str, ...] = ("none", "cpu", "nvme")
#: ZeRO stages DeepSpeed's ``ZeroStageEnum`` accepts.
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
_ADAM_NAMES = ("adam", "adamw")
#: DeepSpeed's CPU Adam, what ``offload_optimizer`` builds for Adam and AdamW (the schema's implementation table).
CPU_ADAM: str = OPTIMIZERS["adam"].implementations["cpu"]


def _section(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = config.get(key)
    return value if isinstance(value, Mapping) else {}


def pydantic_bool(section: Mapping[str, Any], key: str, default: bool) -> bool:
    """``section[key]`` as a DeepSpeed pydantic section reads a bool: lax bool, ``"auto"``/absent = default.

    A value pydantic rejects (DeepSpeed then fails parsing) also gives the default; the validator reports it.
    """
    value = section.get(key, "auto")
    if value == "auto":
        return default
    read = lax_bool(value)
    return default if read is None else read


def _pydantic_int(section: Mapping[str, Any], key: str, default: int) -> int:
    """``section[key]`` as a pydantic section reads an int (lax: 2.0 and "2" are 2); "auto"/absent/rejected:
    the default."""
    value = section.get(key, "auto")
    read = None if value == "auto" else lax_int(value)
    return default if read is None else read


def _autoep_size(config: Mapping[str, Any], version: str) -> int:
    """``Effective.autoep_size``."""
    section = _section(config, "expert_parallel")
    if not section or versions.key_known(version, "", "expert_parallel") is not True:
        return 1
    if not read_bool(config, "expert_parallel", "enabled", False, version):
        return 1
    size = section.get("autoep_size", 1)  # parse_autoep_config: a raw dict.get, not converted
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 1 else 1


def read_bool(config: Mapping[str, Any], section: str, key: str, default: bool, version: str = "0.19.8") -> bool:
    """``config[section][key]`` as DeepSpeed ``version`` reads it: pydantic's lax bool in a section that
    release parses with pydantic (its profile says which), else a ``dict.get`` used as a Python truth value
    (``get_scalar_param``), so there ``"false"`` is on."""
    return _read_bool_in(_section(config, section), section, key, default, version)


def _read_bool_in(values: Mapping[str, Any], section: str, key: str, default: bool, version: str) -> bool:
    """``read_bool`` on the section's dict ``values`` (``section`` names it in the release's profile: the bf16
    settings read from a legacy ``bfloat16`` key are still the ``bf16`` section)."""
    if versions.section(version, section) is not None:
        return pydantic_bool(values, key, default)
    return bool(values.get(key, default))


def _fp16_master_weights(fp16_section: Mapping[str, Any], version: str) -> bool:
    """``fp16.fp16_master_weights_and_grads`` as DeepSpeed ``version`` reads it. The releases that read ``fp16`` with
    ``dict.get`` (up to 0.17.0) read it only when ``fp16.enabled`` is on (``get_fp16_master_weights_and_grads_enabled``
    returns False otherwise: the profile's ``read_behind_switch``), and then as a Python truth value (``"false"`` is
    on); the pydantic ones (``DeepSpeedFP16Config``) read it whatever ``enabled`` says, as a lax bool."""
    key = "fp16_master_weights_and_grads"
    if versions.read_behind_switch(version, "fp16", key) \
            and not _read_bool_in(fp16_section, "fp16", "enabled", False, version):
        return False
    return _read_bool_in(fp16_section, "fp16", key, False, version)


def switch_on(value: Any, section: str, version: str = "0.19.8") -> bool:
    """Whether ``value``, written as the ``enabled`` switch of the section at dotted path ``section``, turns it
    on in DeepSpeed ``version``: pydantic's lax bool where that release parses the section with pydantic (an
    unreadable value fails the parse: off), else the Python truth value of ``dict.get`` (``"false"`` is on)."""
    if versions.section(version, section) is not None:
        return lax_bool(value) is True
    return bool(value)


def uses_bf16_optimizer(stage: int, precision: str, grad_accum_fp32: bool, offload_optimizer: str,
                        version: str = versions.NEWEST) -> bool:
    """Whether ``_do_optimizer_sanity_check`` of DeepSpeed ``version`` wraps the optimizer in BF16_Optimizer (an fp32
    gradient accumulation buffer of every parameter, fp32 master weights and optimizer states split over the
    data-parallel ranks) instead of the ZeRO optimizer or FP16_Optimizer. Read from the release's profile
    (``versions.optimizer_wrapper``): bf16 + ZeRO-1 + fp32 ``grad_accum_dtype`` in every release, and bf16 without
    ZeRO in 0.16.0-0.18.4 (from 0.18.5 FP16_Optimizer in bf16). ZeRO-1 with the optimizer offloaded to the CPU gets
    the ZeRO optimizer: the test is ``zero_cpu_offload()``, the CPU device only, so an NVMe offload_optimizer gets
    BF16_Optimizer too (0.16.9-0.19.8)."""
    if precision != "bf16" or stage > 1 or (stage == 1 and offload_optimizer == "cpu"):
        return False
    wrapper = versions.optimizer_wrapper(version, "bf16", "fp32" if grad_accum_fp32 else None, stage)
    if wrapper is None:  # a profile without the probe: the rule every recorded release follows at ZeRO-1
        return stage == 1 and grad_accum_fp32
    return wrapper == "bf16"


def bf16_optimizer_reason(stage: int, version: str) -> str:
    """Why DeepSpeed ``version`` picks BF16_Optimizer (:func:`uses_bf16_optimizer`), in words."""
    return "bf16 + ZeRO-1 + fp32 grad_accum_dtype" if stage == 1 else f"bf16 without ZeRO in DeepSpeed {version}"


def section_enabled(config: Mapping[str, Any], section: str, version: str = "0.19.8") -> bool:
    """Whether ``section.enabled`` is on as DeepSpeed ``version`` reads it (see :func:`read_bool`)."""
    return read_bool(config, section, "enabled", False, version)


#: The top-level key the boolean form reads as ``allgather_bucket_size`` (``read_zero_config_deprecated``).
LEGACY_ALLGATHER_KEY = "allgather_size"


def legacy_zero(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``zero_optimization`` section DeepSpeed builds from the deprecated boolean form
    (``read_zero_config_deprecated``): true is stage 1 and takes the top-level ``allgather_size``, when written,
    as ``allgather_bucket_size`` (checked there like any ZeRO field); false is stage 0 and reads nothing more.
    None when ``zero_optimization`` is not a bool."""
    raw = config.get("zero_optimization")
    if not isinstance(raw, bool):
        return None
    if raw and LEGACY_ALLGATHER_KEY in config:
        return {"stage": 1, "allgather_bucket_size": config[LEGACY_ALLGATHER_KEY]}
    return {"stage": 1 if raw else 0}


def legacy_zero_keys(config: Mapping[str, Any]) -> frozenset[str]:
    """Top-level keys DeepSpeed reads only through the boolean ``zero_optimization`` (none for a section)."""
    section = legacy_zero(config) or {}
    return frozenset({LEGACY_ALLGATHER_KEY}) if "allgather_bucket_size" in section else frozenset()


def _zero(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], int, Any]:
    """The zero section as DeepSpeed sees it, the stage, and the raw stage value as written."""
    raw = config.get("zero_optimization")
    if isinstance(raw, bool):  # legacy form: true is stage 1 (read_zero_config_deprecated)
        return {}, 1 if raw else 0, raw
    zero = raw if isinstance(raw, Mapping) else {}
    written = zero.get("stage")
    stage = lax_int(written) if written not in (None, "auto") else 0
    return zero, stage if stage in ZERO_STAGES else 0, written


def _device(zero: Mapping[str, Any], key: str, legacy_key: str) -> tuple[str, Mapping[str, Any]]:
    section = zero.get(key)
    if isinstance(section, Mapping):
        device = section.get("device", "none")
        return (device if device in OFFLOAD_DEVICES else "none"), section
    # the deprecated boolean (cpu_offload / cpu_offload_param) maps to {"device": "cpu"} when true; a section
    # written "auto" counts as absent (DeepSpeedConfigModel drops "auto" keyword arguments before validating)
    if (section is None or section == "auto") and lax_bool(zero.get(legacy_key)) is True:
        return "cpu", {}
    return "none", {}


@dataclass(frozen=True)
class Effective:
    """A config as DeepSpeed 0.19.8 reads it (see the module docstring for the sources)."""

    stage: int
    """ZeRO stage 0-3 (0 when absent, "auto" or unreadable)."""
    stage_written: Any
    """``zero_optimization.stage`` as written (or the legacy bool), for messages."""
    fp16: bool
    bf16: bool
    """``bf16.enabled`` (``bfloat16.enabled`` when ``bf16`` is absent)."""
    torch_autocast: bool
    torch_autocast_dtype: str | None
    """``torch_autocast.dtype`` as "fp16", "bf16", "fp32" (None: unset, or a spelling DeepSpeed refuses)."""
    fp16_auto: bool
    bf16_auto: bool
    """``enabled: "auto"``: off to DeepSpeed, filled by the HF Trainer."""
    bf16_section: str
    """The section holding the bf16 settings: ``bfloat16`` when only the legacy spelling is used."""
    offload_optimizer: str
    offload_param: str
    overlap_comm: bool
    contiguous_gradients: bool
    optimizer_type: Any
    """``optimizer.type`` as written (None: no optimizer section or no type)."""
    optimizer_name: str | None
    """The name DeepSpeed uses: lower case for its own optimizers, as written for torch.optim."""
    optimizer_spec: OptimizerSpec | None
    optimizer_backend: Backend | None
    optimizer_class: str | None
    """The class ``deepspeed.initialize`` builds (None: unknown name, "auto", or no optimizer)."""
    optimizer_states: int | None
    """fp32 state tensors per parameter (None: not known for this optimizer)."""
    torch_optimizer: str | None
    """The torch.optim class ``deepspeed.initialize`` calls with ``optimizer.params`` (a torch name, or torch's
    Adam/AdamW under ``torch_adam``, Adagrad without CPU offload); None for DeepSpeed's own classes."""
    zero_allow_untested_optimizer: bool
    """A top-level ``get_scalar_param`` key used as a Python truth value (``"false"`` allows it)."""
    fp16_master_weights_and_grads: bool = False
    bf16_master_weights_and_grads: bool = False
    bf16_optimizer_states: bool = False
    """The 16-bit master-weight flags as the release reads them (``bf16_section`` holds the bf16 ones; the fp16 one
    is off with fp16 off in the releases that read it only then)."""
    fp32_optimizer_states: bool = True
    """Whether ``DeepSpeedCPUAdam`` keeps its states fp32 (``get_optimizer_configuration``)."""
    autotp_size: int = 0
    """``tensor_parallel.autotp_size`` as ``TPTrainingConfig`` (pydantic, lax int) reads it: 2.0 and "2" are 2,
    "auto" is the default 0; a value it rejects (2.5, "two") is 0 here (the validator reports it). AutoTP is on
    when it is above 1 (``engine.autotp_size() > 1``)."""
    autoep_size: int = 1
    """The expert-parallel degree AutoEP spreads each MoE layer's experts over: ``expert_parallel.autoep_size`` when
    the section is on (``enabled``) in a release that reads it, else 1 (``deepspeed/module_inject/auto_ep_layer.py``:
    ``num_local_experts = num_experts // ep_size``)."""
    autotp_size_string: bool = False
    """``autotp_size`` is written as a string (also "auto"): ``deepspeed.initialize`` compares the raw value with 0
    (``autotp_size and autotp_size > 0``, deepspeed/__init__.py) before the parser reads it, and raises TypeError."""
    zenflow: bool = False
    """ZenFlow is on: ``zero_optimization.zenflow`` is an object (``{}`` too; null and "auto" leave it off) in a
    release that reads it (0.17.5 on). With ZeRO-1/2 and the optimizer offloaded, Adam/AdamW is then
    ``ZenFlowCPUAdam`` and ZenFlow's own torch AdamW is built with ``optimizer.params`` as keywords."""
    comms_logger: bool = False
    """DeepSpeed's communication logger is on: ``DeepSpeedCommsConfig`` sets ``comms_logger_enabled = 'comms_logger'
    in ds_config`` (the section's ``enabled`` is never read; 0.16-0.19.8), and ``deepspeed.comm``'s ``timed_op`` then
    synchronises the device after every collective, so no communication overlaps compute."""
    deepcompile: bool = False
    """``compile.deepcompile`` as the engine reads it (``is_deepcompile_enabled``: the pydantic compile config, a lax
    bool; "auto" and absent are off)."""

    @property
    def master_dtype(self) -> str:
        """The dtype of the ZeRO optimizer's master weights and gradient partition, "fp32", "fp16" or "bf16"
        (``master_weights_and_grads_dtype``; the flags act at stage 1-3 only, stage 0 refuses them)."""
        if self.stage == 0:
            return "fp32"
        if self.fp16_master_weights_and_grads:
            return "fp16"
        return "bf16" if self.bf16_master_weights_and_grads else "fp32"

    @property
    def master_weights_refused(self) -> bool:
        """16-bit master weights the ZeRO optimizer refuses at ``deepspeed.initialize`` (``_configure_master_weights``
        in releases that check it): fp16 ones, or bf16 ones whose optimizer states are fp32 or offloaded, need the
        optimizer offloaded as ``DeepSpeedCPUAdam``. Release-independent; the validator adds which releases check."""
        if self.master_dtype == "fp32":
            return False
        needs = (self.fp16_master_weights_and_grads or not self.bf16_optimizer_states
                 or self.offload_optimizer != "none")
        return needs and (self.offload_optimizer == "none" or self.optimizer_class != CPU_ADAM)

    @property
    def optimizer_states_dtype(self) -> str:
        """The dtype of the optimizer's state tensors: the master weights' (the GPU optimizers allocate them
        ``zeros_like`` the master partition), fp32 for ``DeepSpeedCPUAdam`` unless ``fp32_optimizer_states`` is off."""
        if self.optimizer_backend == "cpu" and self.fp32_optimizer_states:
            return "fp32"
        return self.master_dtype

    @property
    def precision(self) -> str:
        """The training precision DeepSpeed uses: fp16, bf16, torch_autocast or fp32 ("auto" is off)."""
        if self.fp16:
            return "fp16"
        if self.bf16:
            return "bf16"
        return "torch_autocast" if self.torch_autocast else "fp32"

    @property
    def precision_mode(self) -> str:
        """The precision the app shows: as :attr:`precision`, but ``enabled: "auto"`` counts as on
        (the HF Trainer fills it); a section written on wins over an "auto" one (DeepSpeed drops the "auto", and
        the Trainer may fill it only with the flag that agrees), else the first enabled section wins."""
        if self.fp16:
            return "fp16"
        if self.bf16:
            return "bf16"
        if self.fp16_auto:
            return "fp16"
        if self.bf16_auto:
            return "bf16"
        return "torch_autocast" if self.torch_autocast else "fp32"


def optimizer_backend(config: Mapping[str, Any], name: str) -> Backend:
    """The implementation ``_configure_basic_optimizer`` picks for DeepSpeed optimizer ``name``."""
    zero, _, _ = _zero(config)
    cpu = _device(zero, "offload_optimizer", "cpu_offload")[0] in ("cpu", "nvme")
    params = _section(_section(config, "optimizer"), "params")
    if name in _ADAM_NAMES and params.get("torch_adam"):  # popped and used as a Python truth value
        return "torch"
    spec = OPTIMIZERS.get(name)
    if cpu and spec is not None and "cpu" in spec.implementations:
        return "cpu"
    return "gpu"


def _states(spec: OptimizerSpec | str, params: Mapping[str, Any]) -> int | None:
    if isinstance(spec, OptimizerSpec):
        states, momentum_only = spec.state_tensors, spec.states_need_momentum
    elif spec in TORCH_OPTIMIZER_STATE_TENSORS:
        states, momentum_only = TORCH_OPTIMIZER_STATE_TENSORS[spec], spec == "SGD"
    else:
        return None
    if momentum_only:
        momentum = params.get("momentum", 0)
        return states if isinstance(momentum, int | float) and not isinstance(momentum, bool) and momentum > 0 else 0
    return states


def effective(config: Mapping[str, Any] | None, version: str = "0.19.8") -> Effective:
    """Read ``config`` once, as DeepSpeed ``version`` does (see the module docstring)."""
    cfg = config if isinstance(config, Mapping) else {}
    zero, stage, written = _zero(cfg)
    fp16_section = _section(cfg, "fp16")
    bf16_name = "bfloat16" if "bfloat16" in cfg and cfg.get("bf16") is None else "bf16"
    bf16_section = _section(cfg, bf16_name)
    autocast = _section(cfg, "torch_autocast")
    # keys this release never reads (bf16's master-weights keys before 0.17.1, refused until 0.18.3) are off
    def bf16_flag(key: str) -> bool:
        return versions.key_known(version, bf16_name, key) is not False and pydantic_bool(bf16_section, key, False)

    bf16_states = bf16_flag("bf16_optimizer_states")
    off_opt = _device(zero, "offload_optimizer", "cpu_offload")[0]
    off_param = _device(zero, "offload_param", "cpu_offload_param")[0]

    opt = _section(cfg, "optimizer")
    opt_type = opt.get("type")
    params = _section(opt, "params")
    name: str | None = None
    spec: OptimizerSpec | None = None
    backend: Backend | None = None
    cls: str | None = None
    torch_cls: str | None = None
    states: int | None = None
    if isinstance(opt_type, str) and opt_type != "auto":
        resolved = resolve_optimizer(opt_type, version)
        if resolved is None:  # unknown in this release: still count states for a known name
            resolved = OPTIMIZERS.get(opt_type.lower()) or (opt_type if opt_type in TORCH_OPTIMIZER_STATE_TENSORS
                                                            else None)
            known = False
        else:
            known = True
        if isinstance(resolved, OptimizerSpec):
            # DeepSpeed lower-cases only the names of optimizers it knows (DEEPSPEED_OPTIMIZERS)
            name, spec = (resolved.name if known else opt_type), resolved
            if known:
                backend = optimizer_backend(cfg, resolved.name)
                cls = resolved.implementations.get(backend)
                if backend == "torch":  # engine.py: AdamW unless "adam" with a false adam_w_mode (popped)
                    torch_cls = "AdamW" if name == "adamw" or params.get("adam_w_mode", True) else "Adam"
                elif cls is not None and cls.startswith("torch.optim."):
                    torch_cls = cls.removeprefix("torch.optim.")
        elif isinstance(resolved, str):
            name = resolved
            if known:
                cls = f"torch.optim.{resolved}"
                torch_cls = resolved
        if resolved is not None:
            states = _states(resolved, params)

    return Effective(
        stage=stage,
        stage_written=written,
        # as the release reads them: before 0.19 with dict.get, so "false" and "auto" are on there
        fp16=_read_bool_in(fp16_section, "fp16", "enabled", False, version),
        bf16=_read_bool_in(bf16_section, "bf16", "enabled", False, version),
        torch_autocast=bool(autocast.get("enabled", False)),
        torch_autocast_dtype=canonical_dtype(autocast.get("dtype")),
        fp16_auto=fp16_section.get("enabled") == "auto",
        bf16_auto=bf16_section.get("enabled") == "auto",
        bf16_section=bf16_name,
        offload_optimizer=off_opt,
        offload_param=off_param,
        overlap_comm=pydantic_bool(zero, "overlap_comm", stage == 3),
        contiguous_gradients=pydantic_bool(zero, "contiguous_gradients", True),
        optimizer_type=opt_type,
        optimizer_name=name,
        optimizer_spec=spec,
        optimizer_backend=backend,
        optimizer_class=cls,
        optimizer_states=states,
        torch_optimizer=torch_cls,
        zero_allow_untested_optimizer=bool(cfg.get("zero_allow_untested_optimizer", False)),
        fp16_master_weights_and_grads=_fp16_master_weights(fp16_section, version),
        bf16_master_weights_and_grads=bf16_flag("bf16_master_weights_and_grads"),
        bf16_optimizer_states=bf16_states,
        # popped from the params; None is True, bf16_optimizer_states forces False, else a Python truth value
        fp32_optimizer_states=not bf16_states and bool(params.get("fp32_optimizer_states", True)),
        autotp_size=_pydantic_int(_section(cfg, "tensor_parallel"), "autotp_size", 0),
        autoep_size=_autoep_size(cfg, version),
        autotp_size_string=isinstance(_section(cfg, "tensor_parallel").get("autotp_size"), str),
        zenflow=isinstance(zero.get("zenflow"), Mapping)
        and versions.key_known(version, "zero_optimization", "zenflow") is True,
        comms_logger="comms_logger" in cfg,
        deepcompile=pydantic_bool(_section(cfg, "compile"), "deepcompile", False),
    )


@cache
def legacy_offload_keys() -> frozenset[str]:
    """The ZeRO section's deprecated keys that an offload section replaces, or that nothing replaces (the schema's
    ``replaced_by``: ``cpu_offload``, ``cpu_offload_param``, ``cpu_offload_use_pin_memory``). DeepSpeed refuses
    them next to an offload section."""
    from core.schema.walk import section_fields
    from core.schema.zero import ZeroConfig

    fields = section_fields(ZeroConfig)
    return frozenset(key for key, spec in fields.items() if key == spec.name and spec.meta.deprecated and (
        spec.meta.replaced_by is None or fields[spec.meta.replaced_by].model is not None))
