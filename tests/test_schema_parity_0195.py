"""The sections and registries of DeepSpeed 0.19.5 (run once, in its own venv, by the ``facts_0195`` fixture):
fields marked added/removed, compile passes, optimizer names, and the legacy sections only 0.19.5 has."""

from __future__ import annotations

import json
import subprocess
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from core.schema import advanced, legacy, optimizer, zero
from core.schema.base import field_meta
from core.schema.root import DeepSpeedConfig
from tests.schema_parity_support import assert_defaults_cover, defaults_of
from tests.test_schema_parity import STRICT_PAIRS

ds_zero = pytest.importorskip("deepspeed.runtime.zero.config")
ds_compile = pytest.importorskip("deepspeed.compile.config")

pytestmark = pytest.mark.deepspeed

# --------------------------------------------------------------------------------------------------
# DeepSpeed 0.19.5 facts
# --------------------------------------------------------------------------------------------------

_DS0195_PYTHON = Path(__file__).resolve().parent.parent / ".venv-ds0195" / "bin" / "python"

#: Collects, in one DeepSpeed 0.19.5 process, the defaults and verdicts the tests below compare with.
_FACTS_0195 = r"""
import json, sys, contextlib, io
from deepspeed.runtime import config as C, constants as K
from deepspeed.elasticity import constants as E
from deepspeed.nebula.config import DeepSpeedNebulaConfig
from deepspeed.compression.config import get_compression_config
cases = json.loads(sys.stdin.read())
verdicts = []
for case in cases:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            C.DeepSpeedConfig({"train_batch_size": 1, **case})
        verdicts.append(None)
    except BaseException as exc:
        verdicts.append(f"{type(exc).__name__}: {exc}")
modes = {m: getattr(C, f"get_sparse_{m}_config")({}) for m in ("dense", "fixed", "variable", "bigbird", "bslongformer")}
nebula = {k: v for k, v in vars(DeepSpeedNebulaConfig({})).items()}
eig = {k.lower()[len("EIGENVALUE_"):-len("_DEFAULT")]: getattr(K, k) for k in dir(K)
       if k.startswith("EIGENVALUE_") and k.endswith("_DEFAULT")}
elastic = {getattr(E, k[:-len("_DEFAULT")]): getattr(E, k) for k in dir(E)
           if k.endswith("_DEFAULT") and hasattr(E, k[:-len("_DEFAULT")])}
import typing, importlib
strict = {}
for module, cls in json.loads(sys.argv[1]):
    model = getattr(importlib.import_module(module), cls)
    strict[f"{module}.{cls}"] = {
        name: {"alias": info.alias, "bounds": {k: getattr(m, k) for m in info.metadata
                                              for k in ("ge", "gt", "le", "lt") if getattr(m, k, None) is not None}}
        for name, info in model.model_fields.items()}
from deepspeed.compile.config import PassName
print(json.dumps({
    "strict": strict, "passes": list(typing.get_args(PassName)),
    "optimizers": C.DEEPSPEED_OPTIMIZERS, "verdicts": verdicts, "sparse": modes, "nebula": nebula,
    "eigenvalue": eig, "elasticity": elastic, "compression": get_compression_config({}),
    "pld": {"enabled": K.PLD_ENABLED_DEFAULT, "theta": K.PLD_THETA_DEFAULT, "gamma": K.PLD_GAMMA_DEFAULT},
    "amp_enabled": K.AMP_ENABLED_DEFAULT,
}))
"""

#: Configs (added to {"train_batch_size": 1}) whose 0.19.5 verdict the legacy sections must reproduce.
_LEGACY_CASES: list[tuple[str, dict[str, Any]]] = [
    ("amp", {"enabled": False, "opt_level": "O1"}),
    ("amp", {"opt_level": "O1"}),
    ("progressive_layer_drop", {"enabled": True, "theta": 0.5}),
    ("progressive_layer_drop", {"theta": 0.5}),
    ("curriculum_learning", {"enabled": False}),
    ("curriculum_learning", {"curriculum_type": "seqlen"}),
    ("sparse_attention", {"mode": "bigbird"}),
    ("sparse_attention", {"mode": "bogus"}),
    ("elasticity", {"enabled": False}),
    ("elasticity", {"enabled": True}),
    ("elasticity", {"enabled": True, "max_train_batch_size": 100}),
    (
        "elasticity",
        {
            "enabled": True,
            "max_train_batch_size": 100,
            "micro_batch_sizes": [2, 4],
            "ignore_non_elastic_batch_info": True,
        },
    ),
    (
        "elasticity",
        {
            "enabled": True,
            "max_train_batch_size": 100,
            "micro_batch_sizes": [2, 0],
            "ignore_non_elastic_batch_info": True,
        },
    ),
    (
        "elasticity",
        {
            "enabled": True,
            "max_train_batch_size": 100,
            "micro_batch_sizes": [2],
            "min_gpus": 8,
            "max_gpus": 4,
            "ignore_non_elastic_batch_info": True,
        },
    ),
    (
        "elasticity",
        {
            "enabled": True,
            "max_train_batch_size": 100,
            "micro_batch_sizes": [2],
            "model_parallel_size": 2,
            "version": 0.1,
            "ignore_non_elastic_batch_info": True,
        },
    ),
    (
        "elasticity",
        {
            "enabled": True,
            "max_train_batch_size": 100,
            "micro_batch_sizes": [2],
            "min_time": -1,
            "ignore_non_elastic_batch_info": True,
        },
    ),
    ("nebula", {"enabled": True, "persistent_storage_path": "/tmp/x"}),
    ("compression_training", {"layer_reduction": {"enabled": False}}),
]


@pytest.fixture(scope="module")
def facts_0195() -> dict[str, Any]:
    """Defaults and verdicts of DeepSpeed 0.19.5 (run once, in its own venv)."""
    if not _DS0195_PYTHON.exists():
        pytest.skip("the DeepSpeed 0.19.5 venv (.venv-ds0195) is not installed")
    cases = [{key: value} for key, value in _LEGACY_CASES]
    classes = json.dumps([(theirs.__module__, theirs.__name__) for _, theirs in _PAIRS_0195])
    out = subprocess.run(
        [str(_DS0195_PYTHON), "-c", _FACTS_0195, classes],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


_PAIRS_0195 = [*STRICT_PAIRS, (zero.ZeroConfig, ds_zero.DeepSpeedZeroConfig)]


@pytest.mark.parametrize(("ours", "theirs"), _PAIRS_0195, ids=lambda c: c.__name__)
def test_strict_section_fields_of_0195_match_added_metadata(ours, theirs, facts_0195):
    """Fields marked added/removed exist exactly in the versions whose DeepSpeed model has them, and the
    generated 0.19.5 profile holds 0.19.5's real bounds (the validator reads them from there)."""
    fields_0195 = facts_0195["strict"][f"{theirs.__module__}.{theirs.__name__}"]
    from core import versions

    profiled = [e for e in versions.profile("0.19.5")["sections"].values() if e["model"] == theirs.__name__]
    ours_0195 = {n for n, info in ours.model_fields.items() if field_meta(info).exists_in("0.19.5")}
    assert ours_0195 == set(fields_0195)
    for name in ours_0195:
        info = ours.model_fields[name]
        assert info.alias == fields_0195[name]["alias"], name
        if profiled:
            entry = profiled[0]["fields"][name]
            expected = {b: entry[b] for b in ("ge", "gt", "le", "lt") if b in entry}
            assert expected == fields_0195[name]["bounds"], f"{ours.__name__}.{name}"


def test_compile_pass_names_per_version(facts_0195):
    added = field_meta(advanced.CompileConfig.model_fields["passes"]).extra["choices_added"]
    all_passes = set(typing.get_args(advanced.PassName))
    assert all_passes - set(added) == set(facts_0195["passes"])
    assert all_passes == set(typing.get_args(ds_compile.PassName))


def test_optimizer_names_equal_deepspeed_0195_optimizers(facts_0195):
    assert set(optimizer.deepspeed_optimizer_names("0.19.5")) == set(facts_0195["optimizers"])


# --------------------------------------------------------------------------------------------------
# legacy sections (DeepSpeed 0.19.5 only)
# --------------------------------------------------------------------------------------------------


def _section_model(key: str) -> type[BaseModel]:
    from core.schema.walk import nested_model

    model = nested_model(DeepSpeedConfig.model_fields[key].annotation)
    assert model is not None, key
    return model


def test_legacy_sections_same_verdict_as_deepspeed_0195(facts_0195):
    for (key, value), theirs in zip(_LEGACY_CASES, facts_0195["verdicts"], strict=True):
        model = _section_model(key)
        try:
            model.model_validate(value)
            ours = None
        except ValidationError as exc:
            ours = "; ".join(e["msg"] for e in exc.errors())
        assert (ours is None) == (theirs is None), f"{key}={value}: ours {ours!r}, DeepSpeed 0.19.5 {theirs!r}"
        if theirs and theirs.startswith("ElasticityConfigError: "):
            assert theirs.removeprefix("ElasticityConfigError: ") in ours, (ours, theirs)
        if theirs and theirs.startswith("KeyError"):
            assert "KeyError: 'enabled'" in ours


def test_legacy_defaults_match_deepspeed_0195(facts_0195):
    for mode, parsed in facts_0195["sparse"].items():
        assert_defaults_cover({k: v for k, v in parsed.items() if k != "mode"}, legacy.SparseAttentionConfig)
        assert mode in typing.get_args(legacy.SparseMode)
    nebula = dict(facts_0195["nebula"])
    nebula["nebula_load_path"] = nebula.pop("load_path")  # attribute name differs from the key
    assert defaults_of(legacy.NebulaConfig) == nebula
    assert defaults_of(legacy.EigenvalueConfig) == facts_0195["eigenvalue"]
    assert defaults_of(legacy.ElasticityConfig) == facts_0195["elasticity"]
    assert defaults_of(legacy.ProgressiveLayerDropConfig) == facts_0195["pld"]
    assert defaults_of(legacy.AmpConfig)["enabled"] == facts_0195["amp_enabled"]
    compression = facts_0195["compression"]
    shared = compression["weight_quantization"]["shared_parameters"]
    # DeepSpeed flattens fp16_mixed_quantize.{enabled, quantize_change_ratio} into the shared parameters.
    shared["fp16_mixed_quantize"] = {
        "enabled": shared["fp16_mixed_quantize"],
        "quantize_change_ratio": shared.pop("quantize_change_ratio"),
    }
    assert_defaults_cover(compression, legacy.CompressionTrainingConfig)


def _models_under(model: type[BaseModel]) -> list[type[BaseModel]]:
    from core.schema.walk import iter_schema

    return [model] + [f.model for _, f in iter_schema(model) if f.model is not None]


def test_every_legacy_field_is_marked_removed_in_0198():
    for key in (
        "amp",
        "elasticity",
        "sparse_attention",
        "nebula",
        "compression_training",
        "quantize_training",
        "eigenvalue",
        "curriculum_learning",
        "progressive_layer_drop",
    ):
        assert not field_meta(DeepSpeedConfig.model_fields[key]).exists_in("0.19.8")
        for model in _models_under(_section_model(key)):
            if model.__module__ != legacy.__name__:
                continue  # shared with a current section (curriculum schedule_config); its parent field is marked
            for name, info in model.model_fields.items():
                meta = field_meta(info)
                assert meta.exists_in("0.19.5") and not meta.exists_in("0.19.8"), f"{model.__name__}.{name}"
                assert info.description, f"{model.__name__}.{name}"
