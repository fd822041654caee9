"""Property-based: validate, migrate and dump never raise on arbitrary JSON, and keep their invariants."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import dump_config, load_config, migrate, validate
from core.findings import set_path
from core.schema import DeepSpeedConfig
from core.schema.walk import iter_schema

KNOWN_PATHS = [path for path, _ in iter_schema(DeepSpeedConfig)]

scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["auto", "cpu", "nvme", "none", "fp16", "bf16", "WarmupLR", "AdamW", "", "<script>"])
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@st.composite
def schema_shaped_configs(draw):
    """Configs whose keys come from the schema (at the right depth), with arbitrary values."""
    config: dict = {}
    for path in draw(st.lists(st.sampled_from(KNOWN_PATHS), max_size=12)):
        set_path(config, path, draw(json_values))
    return config


#: Quick profile in CI; DSCONFIG_FUZZ_EXAMPLES=100000 for the long one (see BENCHMARKS.md).
EXAMPLES = int(os.environ.get("DSCONFIG_FUZZ_EXAMPLES", "200"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(json_values, st.integers(1, 4096), st.sampled_from(["deepspeed", "hf"]), st.sampled_from(["0.19.8", "0.19.5"]))
def test_validate_never_raises_on_any_json(value, world_size, target, version):
    report = validate(value, world_size=world_size, target=target, version=version)
    assert report.ok is (not report.errors)
    for finding in report.findings:
        assert finding.severity in ("error", "warning", "info") and finding.code and finding.message


@SETTINGS
@given(schema_shaped_configs(), st.integers(1, 512), st.sampled_from(["deepspeed", "hf"]),
       st.sampled_from(["0.19.8", "0.19.5"]))
def test_validate_and_fixes_on_schema_shaped_configs(config, world_size, target, version):
    report = validate(config, world_size=world_size, target=target, version=version)
    for finding in report.findings:
        if finding.fix is not None:
            fixed = finding.fix.apply(config)
            validate(fixed, world_size=world_size, target=target, version=version)  # must not raise
    new, changes = migrate(config)
    assert isinstance(changes, list)
    if report.ok:
        assert validate(new, world_size=world_size, target=target, version=version).ok
    assert load_config(dump_config(config)) == config


@SETTINGS
@given(json_values)
def test_migrate_never_raises(value):
    migrate(value)
