"""The generic widget builder's schema reading and config edits, and the shareable-state codec."""

from __future__ import annotations

import contextlib
import copy
import json
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core.findings import delete_path, set_path
from core.hardware import find_gpu
from core.schema import DeepSpeedConfig
from core.schema.walk import iter_schema, resolve
from tests.app_support import app
from ui import app_state, fields
from ui.widgets import widget_key


def test_every_schema_field_gets_a_widget_kind():
    kinds = {path: fields.field_kind(field) for path, field in iter_schema(DeepSpeedConfig)}
    assert kinds["zero_optimization.stage"].kind == "choice"
    assert kinds["zero_optimization.stage"].choices == (0, 1, 2, 3)
    assert kinds["train_batch_size"].kind == "int" and kinds["train_batch_size"].optional
    assert kinds["gradient_clipping"].kind == "float"
    assert kinds["fp16.enabled"].kind in ("bool", "choice")
    assert kinds["zero_optimization.offload_param.device"].choices == ("none", "cpu", "nvme")
    assert kinds["communication_data_type"].choices == ("fp32", "fp16", "bf16")
    assert kinds["zero_optimization.offload_param"].kind == "section"
    stages = kinds["pipeline.stages"]  # int | Literal["auto"]
    assert stages.kind == "int" and stages.allows_auto
    # Every field maps to a real widget kind; no field is silently skipped.
    assert {k.kind for k in kinds.values()} <= {"bool", "int", "float", "choice", "str", "json", "section"}


def test_bounds_come_from_the_schema():
    ratio = resolve(DeepSpeedConfig, "zero_optimization.offload_optimizer.ratio")
    assert fields.bounds(ratio, "float") == (0.0, 1.0)
    count = resolve(DeepSpeedConfig, "zero_optimization.offload_param.buffer_count")
    assert fields.bounds(count, "int") == (0, None)


def test_help_text_is_the_schema_description_and_default():
    field = resolve(DeepSpeedConfig, "zero_optimization.offload_param.buffer_size")
    text = fields.help_text(field)
    assert field.info.description in text
    assert "Default: `100000000` elements." in text
    assert "Applies to ZeRO stage 3." in text


def test_config_path_uses_the_spelling_in_the_config_else_the_documented_alias():
    path = "zero_optimization.prefetch_bucket_size"
    assert fields.config_path({}, path) == "zero_optimization.stage3_prefetch_bucket_size"
    assert fields.config_path({"zero_optimization": {"prefetch_bucket_size": 1}}, path) == path
    assert fields.config_path({}, "fp16.loss_scale") == "fp16.loss_scale"


def test_set_path_keeps_siblings_and_unknown_keys():
    config = {"zero_optimization": {"stage": 3, "mystery": [1]}, "other": {"a": 1}}
    set_path(config, "zero_optimization.offload_param.device", "cpu")
    assert config == {"zero_optimization": {"stage": 3, "mystery": [1], "offload_param": {"device": "cpu"}},
                      "other": {"a": 1}}


def test_delete_path_prune_removes_only_emptied_parents():
    config = {"zero_optimization": {"offload_param": {"device": "cpu"}}, "keep": {}}
    delete_path(config, "zero_optimization.offload_param.device", prune=True)
    assert config == {"keep": {}}
    config = {"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}
    delete_path(config, "zero_optimization.offload_param.device", prune=True)
    assert config == {"zero_optimization": {"stage": 2}}
    delete_path(config, "not.there", prune=True)
    assert config == {"zero_optimization": {"stage": 2}}
    # An empty section that was already there (its presence can matter) is not removed by a no-op delete.
    config = {"zero_optimization": {"offload_param": {}}}
    delete_path(config, "zero_optimization.offload_param.device", prune=True)
    assert config == {"zero_optimization": {"offload_param": {}}}


def test_delete_path_without_prune_keeps_empty_parents():
    config = {"zero_optimization": {"offload_param": {"device": "cpu"}}}
    delete_path(config, "zero_optimization.offload_param.device")
    assert config == {"zero_optimization": {"offload_param": {}}}


def test_page_fields_come_from_schema_metadata():
    assert fields.page_fields("batch")[:3] == [
        "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"]
    assert "zero_optimization" in fields.page_fields("zero")
    assert "tensorboard" in fields.page_fields("monitoring")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(config=st.dictionaries(st.text(max_size=12), json_values, max_size=6), nodes=st.integers(1, 64))
def test_share_state_round_trips(config, nodes):
    context = app_state.default_context() | {"nodes": nodes, "target": "hf"}
    token = app_state.encode_state(config, context, {"b": 1})
    assert set(token) <= set(string.ascii_letters + string.digits + "-_")
    got_config, got_context, got_baseline = app_state.decode_state(token)
    assert got_config == config
    assert got_context == context
    assert got_baseline == {"b": 1}


@given(st.text(max_size=200))
def test_share_decode_never_tracebacks(text):
    with contextlib.suppress(app_state.ShareError):
        app_state.decode_state(text)


def test_share_decode_refuses_a_zip_bomb():
    import base64
    import zlib
    bomb = base64.urlsafe_b64encode(zlib.compress(b"[" * 10_000_000)).decode()
    with pytest.raises(app_state.ShareError, match="too large"):
        app_state.decode_state(bomb)


def test_share_decode_cleans_a_hostile_context():
    token = app_state.encode_state({}, {"target": "evil", "version": "9.9", "nodes": -3, "x": 1}, {})
    _, context, _ = app_state.decode_state(token)
    assert context["target"] == "deepspeed"
    assert context["version"] in app_state.VERSIONS
    assert context["nodes"] == 1
    assert "x" not in context


@pytest.mark.parametrize("text", ["NaN", "[1, Infinity]", '{"a": 1, "a": 2}', "{", "[" * 5000])
def test_json_text_values_refuse_what_deepspeed_cannot_read(text):
    value, error = fields.parse_json_value(text, "some.path")
    assert value is None
    assert error.startswith("`some.path`: ")


def test_json_text_value_parses_plain_json():
    assert fields.parse_json_value('{"classes": ["a"], "n": 1.5}', "p") == ({"classes": ["a"], "n": 1.5}, None)


def test_share_decode_refuses_non_finite_numbers_and_deep_configs():
    import base64
    import zlib
    for raw in ('{"c": {"x": NaN}, "x": {}, "b": {}}',
                '{"c": ' + '{"a": ' * 100 + "1" + "}" * 100 + ', "x": {}, "b": {}}'):
        token = base64.urlsafe_b64encode(zlib.compress(raw.encode())).decode().rstrip("=")
        with pytest.raises(app_state.ShareError):
            app_state.decode_state(token)


def test_share_decode_cleans_out_of_range_and_mistyped_context_values():
    raw = {"nodes": 10**9, "gpus_per_node": 2.0, "gpu_memory_gib": 80, "cpu_ram_gib": "lots", "seq_len": True,
           "total_params": 7e9, "gpu": "NVIDIA T4 16GB", "attention": "magic", "model_config": [1]}
    _, context, _ = app_state.decode_state(app_state.encode_state({}, raw, {}))
    defaults = app_state.default_context()
    assert context["nodes"] == defaults["nodes"]
    assert context["gpus_per_node"] == 2 and isinstance(context["gpus_per_node"], int)
    assert context["gpu_memory_gib"] == find_gpu("NVIDIA T4 16GB").memory_gib  # the T4's own
    custom = app_state.decode_state(app_state.encode_state({}, {**raw, "gpu": "Custom"}, {}))[1]
    assert custom["gpu_memory_gib"] == 80.0 and isinstance(custom["gpu_memory_gib"], float)
    assert context["cpu_ram_gib"] == defaults["cpu_ram_gib"]
    assert context["seq_len"] == defaults["seq_len"]
    assert context["total_params"] == 7_000_000_000 and isinstance(context["total_params"], int)
    assert context["gpu"] == "NVIDIA T4 16GB"
    assert context["attention"] == defaults["attention"]
    assert context["model_config"] is None
    for key, (low, high) in app_state.CONTEXT_LIMITS.items():
        assert context[key] is None or low <= context[key] <= high


@pytest.mark.parametrize(("raw", "expected"), [
    ("NVIDIA V100 32GB", "NVIDIA V100 32GB"), ("Custom", "Custom"), ("Imaginary GPU", "Custom"),
    (["NVIDIA V100 32GB"], "Custom"), ({"a": 1}, "Custom"), (None, "Custom"),
])
def test_shared_context_gpu_is_a_catalog_name_or_custom(raw, expected):
    assert app_state.clean_context({"gpu": raw})["gpu"] == expected


def test_a_float_box_keeps_a_whole_number_the_file_wrote_as_one():
    """gradient_clipping 1 and loss_scale 0, typed as 2 and 128, were exported as 2.0 and 128.0 ("integers stay
    integers"); a fraction typed stays a float, and a field written as a float stays one."""
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1, "fp16": {"enabled": True, "loss_scale": 0},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.0}}}
    at = app(copy.deepcopy(config), page="pages/precision.py")
    at.number_input(key="cfg:gradient_clipping").set_value(2).run()
    at.number_input(key="cfg:fp16.loss_scale").set_value(128).run()
    written = at.session_state["config"]
    assert (written["gradient_clipping"], written["fp16"]["loss_scale"]) == (2, 128)
    assert type(written["gradient_clipping"]) is int and type(written["fp16"]["loss_scale"]) is int
    at.number_input(key="cfg:gradient_clipping").set_value(0.5).run()
    assert at.session_state["config"]["gradient_clipping"] == 0.5
    at.switch_page("pages/optimizer.py").run()
    at.number_input(key="cfg:optimizer.params.weight_decay").set_value(1.0).run()
    decay = at.session_state["config"]["optimizer"]["params"]["weight_decay"]
    assert decay == 1.0 and type(decay) is float


BETAS = "cfg:optimizer.params.betas"


def _refused_betas() -> AppTest:
    at = app(config={"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {
        "betas": [0.9, 0.95]}}}, page="pages/optimizer.py")
    at.text_area(key=BETAS).set_value("[0.9, ").run()
    assert [e.value for e in at.error if "not valid JSON" in e.value]
    return at


def _json_errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error if "not valid JSON" in e.value]


def test_a_refused_json_text_and_its_error_survive_a_page_switch_together():
    """After a page switch the box showed the config's value again beside the error about the user's text."""
    at = _refused_betas()
    at.switch_page("pages/batch.py").run()
    at.switch_page("pages/optimizer.py").run()
    assert at.text_area(key=BETAS).value == "[0.9, "
    assert _json_errors(at) == ["`optimizer.params.betas`: not valid JSON: Expecting value (line 1, column 6). "
                                "The previous value is kept."]


def test_a_refused_json_text_and_its_error_go_when_the_config_is_replaced():
    """A preset load left the error beside the preset's value."""
    at = _refused_betas()
    at.switch_page("pages/presets.py").run()
    at.selectbox(key="presets_selected").set_value("zero3-bf16").run()
    at.button(key="presets_load").click().run()
    at.switch_page("pages/optimizer.py").run()
    assert json.loads(at.text_area(key=BETAS).value) == [0.9, 0.999]
    assert not _json_errors(at)


def test_a_refused_json_text_and_its_error_go_when_the_value_changes():
    at = _refused_betas()
    at.switch_page("pages/review.py").run()
    at.session_state["config"]["optimizer"]["params"]["betas"] = [0.8, 0.9]  # as another widget would write it
    at.switch_page("pages/optimizer.py").run()
    assert json.loads(at.text_area(key=BETAS).value) == [0.8, 0.9]
    assert not _json_errors(at)


def test_the_raw_section_editor_keeps_its_refused_text_with_its_error_across_a_page_switch():
    at = app(config={"train_micro_batch_size_per_gpu": 1, "checkpoint": {"tag_validation": "Warn"}},
             page="pages/advanced.py")
    at.text_area(key="cfg:raw:checkpoint").input('{"tag_validation": ').run()
    at.switch_page("pages/batch.py").run()
    at.switch_page("pages/advanced.py").run()
    assert at.text_area(key="cfg:raw:checkpoint").value == '{"tag_validation": '
    assert [e.value for e in at.error if "Nothing was changed" in e.value]
    at.selectbox(key="cfg:checkpoint.tag_validation").set_value("Fail").run()
    assert json.loads(at.text_area(key="cfg:raw:checkpoint").value) == {"tag_validation": "Fail"}
    assert not [e.value for e in at.error if "Nothing was changed" in e.value]


def test_an_auto_that_was_its_sections_only_key_comes_back_where_the_section_was():
    """Switched off, the only key of scheduler.params takes the emptied params with it; switched on again, params
    comes back before type, where it was, not after it."""
    config = {"scheduler": {"params": {"warmup_min_lr": "auto"}, "type": "WarmupLR"}, "steps_per_print": 10}
    at = app(copy.deepcopy(config), page="pages/optimizer.py", target="hf")
    toggle = widget_key("scheduler.params.warmup_min_lr") + ":auto"
    at.toggle(key=toggle).set_value(False).run()
    assert at.session_state["config"] == {"scheduler": {"type": "WarmupLR"}, "steps_per_print": 10}
    at.toggle(key=toggle).set_value(True).run()
    assert json.dumps(at.session_state["config"]) == json.dumps(config)
