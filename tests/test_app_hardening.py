"""AppTest hardening: bad input through the app never crashes it, always says what is wrong, and loses nothing.

Also: share links that are garbage and isolation between sessions. The static scan for module-level mutable
state is in test_app_hardening_scan.py.
"""

from __future__ import annotations

import base64
import copy
import json
import zlib

import pytest
from app_support import APP, app, sidebar_text
from streamlit.testing.v1 import AppTest

from core.hardware import find_gpu
from core.io import MAX_CONFIG_MB
from ui import app_state
from ui.widgets import widget_key

#: The config the user already had before the bad input arrives: it must survive every rejected import.
BEFORE = {"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 2, "my_team_key": {"keep": [1, 2]}}
PAGES = tuple(app_state.PAGES)  # every page the app declares
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'


def _still_usable(at: AppTest) -> None:
    """A widget still works after the bad input: change the node count and see the context follow."""
    at.number_input(key="ctx:nodes").set_value(2).run()
    assert not at.exception, at.exception
    assert at.session_state["context"]["nodes"] == 2


def _paste(at: AppTest, text: str) -> None:
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.text_area(key="start_paste").input(text).run()
    at.button(key="start_import").click().run()


def _upload(at: AppTest, data: bytes, name: str = "ds_config.json") -> None:
    at.radio(key="start_source").set_value("Upload or paste").run()
    at.file_uploader(key="start_upload").upload(name, data, "application/json").run()
    at.button(key="start_import").click().run()


# ------------------------------------------------------------------ input the loader must refuse

#: (id, raw bytes, a fragment the error message must contain). Each is refused; the old config is kept.
REJECTED: list[tuple[str, bytes, str]] = [
    ("broken-json", b'{"train_batch_size": ', "line 1, column"),
    ("double-comma", b'{\n  "a": [1,,2]\n}', "line 2"),
    ("trailing-garbage", b'{"a": 1} xx', "line 1, column 10"),
    ("list-not-object", b"[1, 2, 3]", "document is a list"),
    ("string-not-object", b'"hello"', "document is a string"),
    ("number-not-object", b"42", "document is a number"),
    ("null-document", b"null", "document is null"),
    ("nan", b'{"gradient_clipping": NaN}', "NaN"),
    ("infinity", b'{"gradient_clipping": Infinity}', "Infinity"),
    ("minus-infinity", b'{"gradient_clipping": -Infinity}', "Infinity"),
    ("1e400-overflows", b'{"gradient_clipping": 1e400}', "gradient_clipping is Infinity"),
    ("deep-arrays-10000", b"[" * 10_000 + b"]" * 10_000, "nests deeper than"),
    ("deep-objects-10000", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nests deeper than"),
    ("ten-megabytes", b'{"x": "' + b"a" * 10_000_000 + b'"}', f"the limit is {MAX_CONFIG_MB} MB"),
    ("empty", b"", "the config is empty"),
    ("whitespace-only", b"  \n\t ", "the config is empty"),
    ("duplicate-keys", b'{"train_batch_size": 8, "train_batch_size": 16}', "appears twice"),
    ("huge-integer-5000-digits", b'{"train_batch_size": ' + b"9" * 5000 + b"}", "too large"),
    ("nul-byte", b'{"a": "x\x00y"}', "NUL byte"),
]

#: Only possible as an upload (not valid text for the paste box).
REJECTED_UPLOADS: list[tuple[str, bytes, str]] = [
    ("binary-bytes", bytes(range(256)) * 4, "binary"),
    ("utf-16", '{"train_batch_size": 8}'.encode("utf-16"), ""),  # fragment checked separately below
    ("latin-1", '{"job": "caf\xe9"}'.encode("latin-1"), "not UTF-8"),
    ("png-header", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, ""),
]


#: Over the size limit, the paste box itself takes no more (``max_chars``, as in the browser): see below.
PASTABLE = [case for case in REJECTED if case[0] != "ten-megabytes"]


def _refused(at: AppTest, fragment: str) -> str:
    """The one error of an import the app refused (it names ``fragment``); the run raised nothing."""
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert errors[0].startswith("Could not import:"), errors
    assert fragment in errors[0], errors[0][:300]
    return errors[0]


@pytest.mark.parametrize(("raw", "fragment"), [(r, f) for _, r, f in PASTABLE], ids=[i for i, _, _ in PASTABLE])
def test_pasted_bad_input_is_refused_clearly_and_loses_nothing(raw, fragment):
    at = app(copy.deepcopy(BEFORE))
    text = raw.decode("utf-8")
    _paste(at, text)
    _refused(at, fragment)
    assert at.session_state["config"] == BEFORE
    assert at.text_area(key="start_paste").value == text  # the pasted text stays for the user to fix
    _still_usable(at)
    assert at.session_state["config"] == BEFORE


def test_paste_over_the_size_limit_never_reaches_the_parser():
    at = app(copy.deepcopy(BEFORE))
    at.radio(key="start_source").set_value("Upload or paste").run()
    box = at.text_area(key="start_paste")
    text = '{"x": "' + "a" * 10_000_000 + '"}'
    box.input(text).run()  # what the browser does: the box refuses text longer than its max_chars
    assert at.text_area(key="start_paste").value in ("", None)
    # a client that sends it anyway gets it cut at the limit by the server, then a clear parse error
    at.text_area(key="start_paste").set_value(text).run()
    at.button(key="start_import").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("Could not import:"), errors
    assert len(errors[0]) < 2_000  # the message, not the input echoed back
    assert at.session_state["config"] == BEFORE


@pytest.mark.parametrize(("raw", "fragment"), [(r, f) for _, r, f in REJECTED[:8] + REJECTED_UPLOADS],
                         ids=[i for i, _, _ in REJECTED[:8] + REJECTED_UPLOADS])
def test_uploaded_bad_input_is_refused_clearly_and_loses_nothing(raw, fragment):
    at = app(copy.deepcopy(BEFORE))
    _upload(at, raw)
    error = _refused(at, fragment)
    # Whatever the reason given, a binary or non-UTF-8 file must be named as such, never as a JSON syntax error.
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or raw.startswith(b"\x89PNG") or raw[:1] == b"\x00":
        assert any(word in error for word in ("NUL", "binary", "UTF")), error
    assert at.session_state["config"] == BEFORE
    _still_usable(at)
    assert at.session_state["config"] == BEFORE


# ------------------------------------------------------------------ input that loads but is wrong

#: (id, config, fragment of the finding the sidebar must show). The import is kept exactly as given (nothing
#: the user wrote is lost) and the finding names the field.
FLAGGED: list[tuple[str, dict, str]] = [
    ("zero-stage-string", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": "two"}},
     "`zero_optimization.stage`"),
    ("zero-stage-9", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 9}}, "0, 1, 2 or 3"),
    ("zero-section-is-list", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": [1, 2]},
     "must be an object"),
    ("unknown-optimizer", {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "SuperAdam", "params": {}}},
     "SuperAdam"),
    ("lr-is-string", {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": "fast"}}},
     "`optimizer.params.lr`"),
    ("unknown-scheduler", {"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "Nope"}}, '"Nope"'),
    ("offload-device-enum", {"train_micro_batch_size_per_gpu": 1,
                             "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "tape"}}},
     "'none', 'cpu' or 'nvme'"),
    ("comm-dtype-enum", {"train_micro_batch_size_per_gpu": 1, "communication_data_type": "fp12"}, '"fp12"'),
    ("tensorboard-types", {"train_micro_batch_size_per_gpu": 1,
                           "tensorboard": {"enabled": True, "output_path": 5, "job_name": ["x"]}},
     "`tensorboard.job_name`"),
    ("clipping-string", {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": "big"}, "`gradient_clipping`"),
    ("negative-micro-batch", {"train_micro_batch_size_per_gpu": -4}, "greater than 0"),
    ("zero-micro-batch", {"train_micro_batch_size_per_gpu": 0}, "greater than 0"),
    ("zero-accumulation", {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 0}, "greater than 0"),
    ("negative-train-batch", {"train_batch_size": -8}, "greater than 0"),
    ("negative-steps-per-print", {"train_micro_batch_size_per_gpu": 1, "steps_per_print": -1}, "steps_per_print"),
    ("no-batch-at-all", {"zero_optimization": {"stage": 1}}, "batch size is not set"),
    ("script-in-unknown-key", {"train_micro_batch_size_per_gpu": 1, SCRIPT: IMG}, "Unknown top-level key"),
    ("huge-int-with-micro-batch", {"train_batch_size": 10**30, "train_micro_batch_size_per_gpu": 1,
                                   "gradient_accumulation_steps": 1}, "train_batch_size"),
]

#: Hostile strings in string fields: no finding needed, but they must be kept verbatim and every page must render.
HOSTILE: list[tuple[str, dict]] = [
    ("script-and-img-in-paths", {"train_micro_batch_size_per_gpu": 1,
                                 "tensorboard": {"enabled": True, "job_name": SCRIPT, "output_path": IMG},
                                 "csv_monitor": {"enabled": True, "job_name": IMG, "output_path": SCRIPT}}),
    pytest.param(
        "huge-python-int", {"train_batch_size": 10**30, "train_micro_batch_size_per_gpu": 1},
        id="huge-python-int"),
    ("markdown-and-newlines", {"train_micro_batch_size_per_gpu": 1,
                               "wandb": {"enabled": True, "project": "**bold** [x](javascript:alert(1))\n# H"}}),
    # a lone surrogate in a key of a known section: the finding's "Fix on page" link could not be URL-encoded,
    # and every page (headline, sidebar, the section's "Kept unchanged" caption) stopped on a traceback
    ("surrogate-key-in-a-section", {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True, "\ud800": 1}}),
    ("surrogate-key-in-a-monitor", {"train_micro_batch_size_per_gpu": 1, "tensorboard": {"\udc80x": 1}}),
    # scheduler values whose arithmetic overflows or divides by zero stopped the Optimizer page
    *((f"schedule-arithmetic-{i}", {"train_micro_batch_size_per_gpu": 1,
                                    "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "scheduler": sched})
      for i, sched in enumerate([
          {"type": "LRRangeTest", "params": {"lr_range_test_step_size": 10**400}},
          {"type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 1e308}},
          {"type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 1e-320}},
          {"type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 10,
                                          "cycle_first_stair_count": 1e308}}])),
]


def _visit_every_page(at: AppTest) -> None:
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)


@pytest.mark.parametrize(("config", "fragment"), [(c, f) for _, c, f in FLAGGED], ids=[i for i, _, _ in FLAGGED])
def test_wrong_values_are_kept_and_named_in_the_sidebar(config, fragment):
    at = app(copy.deepcopy(BEFORE))
    _paste(at, json.dumps(config))  # ASCII-escaped, so a lone surrogate arrives as the JSON escape \\ud800
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["config"] == config  # imported exactly, unknown keys included
    assert fragment in sidebar_text(at), sidebar_text(at)
    _still_usable(at)
    _visit_every_page(at)
    assert at.session_state["config"] == config


@pytest.mark.parametrize(("name", "config"), HOSTILE)
def test_hostile_strings_are_kept_verbatim_on_every_page(name, config):
    at = app(copy.deepcopy(BEFORE))
    _paste(at, json.dumps(config))
    assert not at.exception, at.exception
    assert at.session_state["config"] == config
    _visit_every_page(at)
    assert at.session_state["config"] == config
    # The exported JSON (Review & export) carries the strings unchanged.
    at.switch_page(app_state.PAGES["review"]).run()
    exported = "\n".join(c.value for c in at.code)
    for text in (SCRIPT, IMG):
        if text in json.dumps(config):
            assert json.dumps(text)[1:-1] in exported or text in exported


def test_lone_surrogate_survives_every_page_and_the_download():
    config = {"train_micro_batch_size_per_gpu": 1, "tensorboard": {"enabled": True, "job_name": "a\ud800b"}}
    at = app(copy.deepcopy(BEFORE))
    _paste(at, json.dumps(config))  # json escapes it as \ud800, which Python decodes into a lone surrogate
    assert not at.exception, at.exception
    assert at.session_state["config"] == config
    _visit_every_page(at)
    download = at.sidebar.get("download_button")[0]
    assert download.proto.label == "Download ds_config.json: as written"


def test_lone_surrogate_in_an_unknown_key_is_flagged_not_fatal():
    config = {"train_micro_batch_size_per_gpu": 1, "job\ud800": "x\udfff"}
    at = app(copy.deepcopy(BEFORE))
    _paste(at, json.dumps(config))
    assert not at.exception, at.exception
    assert at.session_state["config"] == config
    assert "Unknown top-level key" in sidebar_text(at)
    _visit_every_page(at)


# ------------------------------------------------------------------ bad values typed into widgets

@pytest.mark.parametrize(("key", "value"), [("ctx:nodes", 0), ("ctx:nodes", 10**9), ("ctx:gpus_per_node", -3),
                                            ("ctx:seq_len", 2**60), ("ctx:cpu_ram_gib", -1.0)])
def test_out_of_range_context_numbers_never_reach_the_context(key, value):
    at = app(copy.deepcopy(BEFORE))
    before = dict(at.session_state["context"])
    try:
        at.number_input(key=key).set_value(value).run()
    except Exception as exc:  # AppTest itself may refuse a value outside the widget's limits, like the browser
        assert "value" in str(exc).lower() or "max" in str(exc).lower() or "min" in str(exc).lower(), exc
        at.run()
    assert not at.exception, at.exception
    assert at.session_state["context"][key[4:]] == before[key[4:]]
    assert at.session_state["config"] == BEFORE
    _still_usable(at)


@pytest.mark.parametrize("value", [-5, 0])
def test_bad_micro_batch_typed_on_the_batch_page_is_flagged_on_page_and_sidebar(value):
    at = app(copy.deepcopy(BEFORE), page="pages/batch.py")
    at.number_input(key=widget_key("train_micro_batch_size_per_gpu")).set_value(value).run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == value
    assert any("greater than 0" in e.value for e in at.error)
    assert "greater than 0" in sidebar_text(at)
    assert at.session_state["config"]["my_team_key"] == BEFORE["my_team_key"]
    at.number_input(key=widget_key("train_micro_batch_size_per_gpu")).set_value(4).run()
    assert at.session_state["config"]["train_micro_batch_size_per_gpu"] == 4
    assert "greater than 0" not in sidebar_text(at)


RAW_BAD = [
    pytest.param('{"tag_validation": ', "line 1, column", id="broken"),
    pytest.param("[1,", "not valid JSON", id="open-list"),
    pytest.param("NaN", "NaN", id="nan"),
    pytest.param('{"x": Infinity}', "Infinity", id="infinity"),
    pytest.param('{"a": 1, "a": 2}', "appears twice", id="duplicate"),
    pytest.param("[" * 10_000 + "]" * 10_000, "", id="deep"),
    pytest.param('{"x": 1e400}', "", id="overflow"),
    pytest.param('{"x": ' + "9" * 5000 + "}", "", id="huge-int"),
]


@pytest.mark.parametrize(("text", "fragment"), RAW_BAD)
def test_raw_json_editor_refuses_bad_json_and_changes_nothing(text, fragment):
    config = dict(copy.deepcopy(BEFORE), checkpoint={"tag_validation": "Warn"})
    at = app(copy.deepcopy(config), page="pages/advanced.py")
    at.text_area(key=widget_key("raw:checkpoint")).input(text).run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error if "`checkpoint`" in e.value]
    assert len(errors) == 1, [e.value for e in at.error]
    assert "Nothing was changed" in errors[0] and fragment in errors[0], errors[0][:300]
    assert at.session_state["config"] == config
    # The editor still works: a good edit applies.
    at.text_area(key=widget_key("raw:checkpoint")).input('{"tag_validation": "Fail"}').run()
    assert at.session_state["config"]["checkpoint"] == {"tag_validation": "Fail"}
    assert not [e.value for e in at.error if "`checkpoint`" in e.value]


# ------------------------------------------------------------------ share links

def _token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")


def _good_token() -> str:
    state = {"c": {"train_micro_batch_size_per_gpu": 7}, "x": {"nodes": 2}, "b": {}}
    return _token(json.dumps(state).encode())


SHARE_BAD = [
    ("garbage", "!!!@@@###not-base64"),
    ("plain-words", "hello-world"),
    ("truncated", _good_token()[:-9]),
    ("not-zlib", base64.urlsafe_b64encode(b"just bytes, no zlib").decode().rstrip("=")),
    ("zlib-of-list", _token(b"[1, 2, 3]")),
    ("missing-parts", _token(b'{"c": {}}')),
    ("config-is-list", _token(b'{"c": [1], "x": {}, "b": {}}')),
    ("nan-in-config", _token(b'{"c": {"gradient_clipping": NaN}, "x": {}, "b": {}}')),
    ("deep-config", _token(b'{"c": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b', "x": {}, "b": {}}')),
    ("zip-bomb-100MB", _token(b'{"c": {"x": "' + b"A" * 100_000_000 + b'"}, "x": {}, "b": {}}')),
    ("huge-token-400KB", "A" * 400_000),
    ("invalid-utf8", _token(b'{"c": {"x": "\xff\xfe"}, "x": {}, "b": {}}')),
    # accepted before: the loader's duplicate-key refusal was skipped, and the zlib stream's end was not checked
    ("duplicate-key", _token(b'{"c": {"a": 1, "a": 2}, "x": {}, "b": {}}')),
    ("checksum-cut-off", _good_token()[:-5]),
    ("bytes-added", _good_token() + "AAAA"),
]


@pytest.mark.parametrize("token", [t for _, t in SHARE_BAD], ids=[i for i, _ in SHARE_BAD])
def test_bad_share_link_says_so_and_the_app_stays_usable(token):
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["s"] = token
    at.run()
    assert not at.exception, at.exception
    assert any("shared link could not be restored" in e.value for e in at.error), [e.value for e in at.error]
    blank = at.session_state["config"]
    assert isinstance(blank, dict) and blank.get("train_micro_batch_size_per_gpu") == 1
    _still_usable(at)
    _visit_every_page(at)


def test_zip_bomb_share_link_is_refused_as_too_large():
    token = _token(b'{"c": {"x": "' + b"A" * 100_000_000 + b'"}, "x": {}, "b": {}}')
    assert len(token) < 200_000  # it really is a bomb: a small link that inflates to 100 MB
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["s"] = token
    at.run()
    assert any("too large" in e.value for e in at.error), [e.value for e in at.error]


def test_a_config_under_the_size_limit_survives_its_share_link():
    """A link is as good as the file: a config and baseline just under core.load_config's limit each decode."""
    import core
    from ui.app_state import decode_state, encode_state

    limit = core.io.MAX_CONFIG_BYTES
    config = {"train_batch_size": 8, "notes": "x" * (limit - 200)}
    assert len(core.dump_config(config).encode()) < limit
    baseline = {**config, "notes": "y" * (limit - 200)}
    decoded, _, decoded_baseline = decode_state(encode_state(config, {}, baseline))
    assert (decoded, decoded_baseline) == (config, baseline)


@pytest.mark.parametrize("fill", ["é", "字"], ids=["two-byte", "three-byte"])
def test_a_non_ascii_or_minified_config_the_app_accepted_survives_its_share_link(fill):
    """The link's size check re-serialised with escaped non-ASCII ("\\u00e9": 6 bytes for 2) and spaced
    separators, so a config well under the limit as imported came back "too large"."""
    import core
    from ui.app_state import decode_state, encode_state

    limit = core.io.MAX_CONFIG_BYTES
    text = json.dumps({"train_batch_size": 8, "notes": fill * (limit // 2 // len(fill.encode()))},
                      ensure_ascii=False)
    config = core.load_config(text)  # accepted as imported
    assert (len(text.encode()) < limit < len(json.dumps(config).encode()))
    assert decode_state(encode_state(config, {}, {}))[0] == config
    minified = {f"k{i}": i for i in range(limit // 16)}
    minified_text = json.dumps(minified, separators=(",", ":"))
    assert len(minified_text) < limit < len(json.dumps(minified))
    assert decode_state(encode_state(minified, {}, {}))[0] == minified


def test_a_share_link_opens_with_an_uploaded_model_config_holding_infinity():
    """transformers writes an infinite attribute as Infinity and the model upload reads it, but the link's reader
    refused the whole state ("Infinity is not a valid JSON number"); a config with it is still refused."""
    import core
    from core.models.catalog import parse_hf_config
    from ui.app_state import ShareError, decode_state, default_context, encode_state

    hf = parse_hf_config(json.dumps({**core.models.get_config("EleutherAI/gpt-neox-20b"),
                                     "some_extra": float("inf")}).encode())
    context = {**default_context(), "model": "config.json", "model_config": hf}
    config, shared, _ = decode_state(encode_state({"train_batch_size": 8}, context, {"train_batch_size": 8}))
    assert config == {"train_batch_size": 8} and shared["model_config"]["some_extra"] == float("inf")
    with pytest.raises(ShareError, match="gradient_clipping is Infinity"):
        decode_state(encode_state({"gradient_clipping": float("inf")}, {}, {}))


def test_share_link_beyond_streamlits_query_limit_is_ignored_and_the_app_starts_blank():
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["s"] = "A" * 1_000_000  # Streamlit drops query strings over 512 KiB before the app sees them
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
    _still_usable(at)


def test_good_share_link_is_restored_and_a_bad_one_elsewhere_does_not_touch_it():
    good = AppTest.from_file(APP, default_timeout=30)
    good.query_params["s"] = _good_token()
    good.run()
    assert not good.exception, good.exception
    assert good.session_state["config"] == {"train_micro_batch_size_per_gpu": 7}
    assert good.session_state["context"]["nodes"] == 2
    bad = AppTest.from_file(APP, default_timeout=30)
    bad.query_params["s"] = _good_token()[:-9]
    bad.run()
    assert any("shared link could not be restored" in e.value for e in bad.error)
    good.run()
    assert good.session_state["config"] == {"train_micro_batch_size_per_gpu": 7}
    assert not good.error


def test_a_share_link_of_a_config_with_a_lone_surrogate_opens_the_same_config():
    """"Create a shareable link" stopped on a traceback: a lone surrogate has no UTF-8."""
    config = {"train_micro_batch_size_per_gpu": 1, "tensorboard": {"enabled": True, "job_name": "run-\ud800"},
              "\udc80": 2}
    token = app_state.encode_state(config, {"nodes": 1}, config)
    assert app_state.decode_state(token)[0] == config
    at = app(copy.deepcopy(BEFORE))
    _paste(at, json.dumps(config))
    at.switch_page(app_state.PAGES["review"]).run()
    at.button(key="review_share").click().run()
    assert not at.exception, at.exception
    opened = AppTest.from_file(APP, default_timeout=30)
    opened.query_params["s"] = app_state.encode_state(config, {"nodes": 1}, config)
    opened.run()
    assert not opened.exception and opened.session_state["config"] == config


# ------------------------------------------------------------------ isolation between sessions

def test_two_sessions_in_one_process_never_share_a_config():
    first = app()
    second = app()
    _paste(first, json.dumps({"train_micro_batch_size_per_gpu": 11, "zero_optimization": {"stage": 3}}))
    assert first.session_state["config"]["train_micro_batch_size_per_gpu"] == 11
    assert second.session_state["config"] == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
    first.number_input(key="ctx:nodes").set_value(3).run()
    second.run()
    assert second.session_state["context"]["nodes"] == 1
    # A third session started after the first changed things starts blank too.
    third = app()
    assert third.session_state["config"] == second.session_state["config"]
    assert third.session_state["context"]["nodes"] == 1
    # Editing the second session's live dict never reaches the first.
    second.session_state["config"]["my_key"] = "second"
    second.run()
    first.run()
    assert "my_key" not in first.session_state["config"]


def test_reloaded_app_modules_carry_no_config_between_sessions():
    import importlib
    import sys

    import ui.widgets
    from ui import app_state

    first = app()
    _paste(first, json.dumps({"train_micro_batch_size_per_gpu": 13}))
    assert first.session_state["config"] == {"train_micro_batch_size_per_gpu": 13}
    for name in sorted(n for n in sys.modules if n.startswith(("ui.", "core."))):
        module = sys.modules[name]
        for value in vars(module).values():
            # Nothing module-level holds the first session's config (compared by content and by identity).
            if isinstance(value, dict):
                assert value is not first.session_state["config"], name
                assert value.get("train_micro_batch_size_per_gpu") != 13, name
    importlib.reload(app_state)
    importlib.reload(ui.widgets)
    second = app()
    assert second.session_state["config"] == {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
    first.run()
    assert first.session_state["config"] == {"train_micro_batch_size_per_gpu": 13}


def test_share_link_with_absurd_model_config_keeps_every_page_usable():
    """A shared link's model_config with sizes no model has (4e47 parameters) crashed every page with an
    OverflowError from the memory model; it is now refused like any config.json that cannot be described."""
    model_config = {"model_type": "llama", "hidden_size": 10**20, "num_hidden_layers": 10**10,
                    "vocab_size": 10**12, "intermediate_size": 10**15, "num_attention_heads": 1}
    state = {"c": {"train_micro_batch_size_per_gpu": 7}, "x": {"model_config": model_config}, "b": {}}
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["s"] = _token(json.dumps(state).encode())
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["config"] == {"train_micro_batch_size_per_gpu": 7}
    _visit_every_page(at)


@pytest.mark.parametrize("config", [
    {"train_micro_batch_size_per_gpu": 10**26, "gradient_accumulation_steps": 10**20},
    {"train_batch_size": 10**400},
], ids=["micro-1e26", "train-batch-1e400"])
def test_absurd_batch_with_a_model_on_every_page(config):
    """Batch sizes DeepSpeed parses but no GPU holds, with a catalog model chosen: every page says "does not fit"
    (was: OverflowError on every page; for 1e400 the micro batch is capped and the assumption said)."""
    at = app(copy.deepcopy(BEFORE))
    at.radio(key="start_model_source").set_value("Catalog").run()
    at.selectbox(key="start_model").set_value("meta-llama/Llama-2-7b-hf").run()
    _paste(at, json.dumps(config))
    assert not at.exception, at.exception
    assert at.session_state["config"] == config
    _visit_every_page(at)
    assert at.session_state["config"] == config
    assert any("Does not fit" in e.value for e in at.error), [e.value for e in at.error]


HUGE = 10 ** 400  # an integer the importer takes (Python parses up to 4,300 digits) and no float can hold


@pytest.mark.parametrize("config", [
    {"gradient_clipping": HUGE}, {"fp16": {"enabled": False, "loss_scale": HUGE}},
    {"optimizer": {"type": "AdamW", "params": {"lr": HUGE, "eps": HUGE, "weight_decay": HUGE}}},
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
     "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": HUGE, "warmup_num_steps": 10}}},
    {"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": HUGE, "warmup_num_steps": 10}}},
], ids=["clipping", "loss-scale", "optimizer-params", "warmup-peak", "total-steps"])
def test_an_integer_beyond_float_range_in_a_float_field_is_shown_as_json(config):
    """Float boxes called float() on it and crashed Precision and Optimizer; Review's HF export crashed too."""
    config = {"train_micro_batch_size_per_gpu": 1, **config}
    for target in ("deepspeed", "hf"):
        at = app(copy.deepcopy(config), target=target)
        _visit_every_page(at)
        assert at.session_state["config"] == config
    at.switch_page(app_state.PAGES["review"]).run()
    assert str(HUGE) in "\n".join(c.value for c in at.code)


def test_a_share_link_cannot_contradict_the_catalog():
    """An A100 80GB with 1 GiB (the Start page's box disabled at 1.0, every verdict against 1 GiB) and a catalog
    model name carrying GPT-2's architecture ("Llama-2-70b-hf — 0.12 B parameters") were taken as given."""
    from core.models import get_config, get_spec

    gpt2 = get_spec("openai-community/gpt2")
    raw = {"gpu": "NVIDIA A100 80GB", "gpu_memory_gib": 1, "model": "meta-llama/Llama-2-70b-hf",
           "model_config": get_config("openai-community/gpt2"), "total_params": gpt2.total_params,
           "largest_layer_params": gpt2.largest_layer_params}
    context = app_state.clean_context(raw)
    llama = get_spec("meta-llama/Llama-2-70b-hf")
    assert context["gpu_memory_gib"] == find_gpu("NVIDIA A100 80GB").memory_gib  # the catalog's, not the link's
    assert (context["model_config"], context["total_params"], context["largest_layer_params"]) == (
        get_config("meta-llama/Llama-2-70b-hf"), llama.total_params, llama.largest_layer_params)
    # a custom GPU keeps its size, and a model that is not in the catalog keeps what the link says
    custom = app_state.clean_context({**raw, "gpu": "Custom", "model": "config.json"})
    assert custom["gpu_memory_gib"] == 1 and custom["total_params"] == gpt2.total_params


@pytest.mark.parametrize(("scheduler", "optimizer", "path"), [
    ({"type": "WarmupLR", "params": [1]}, {"type": "AdamW", "params": {"lr": 1e-3}}, "`scheduler.params`"),
    ({"type": "WarmupLR"}, {"type": "AdamW", "params": {"lr": 1e-3}}, "`scheduler.params`"),
    # an optimizer the studio does not know: its default lr is unknown (a known one charts on its default)
    ({"type": "WarmupLR", "params": {"warmup_num_steps": 10}}, {"type": "MyOptimizer", "params": {}},
     "`optimizer.params.lr`"),
    ({"type": "WarmupLR", "params": {"warmup_num_steps": 10}}, {"type": "AdamW", "params": {"lr": "abc"}},
     "`optimizer.params.lr`"),
    ({"type": "OneCycle", "params": {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3, "cycle_first_step_size": 1e308}},
     {"type": "AdamW", "params": {"lr": 1e-3}}, "arithmetic fails"),
])
def test_the_no_curve_message_names_the_field_to_change(scheduler, optimizer, path):
    """The Optimizer page put "scheduler.params." before every parameter the curve needed: `scheduler.params.params`
    for a missing or list params, `scheduler.params.lr` for the optimizer's lr."""
    at = app({"train_micro_batch_size_per_gpu": 1, "optimizer": optimizer, "scheduler": scheduler},
             page=app_state.PAGES["optimizer"])
    assert not at.exception, at.exception
    no_curve = [e.value for e in at.error if e.value.startswith("No curve")]
    assert no_curve and path in no_curve[0], [e.value for e in at.error]
    assert "scheduler.params.params" not in no_curve[0] and "scheduler.params.lr" not in no_curve[0]


@pytest.mark.parametrize(("config", "page", "key"), [
    ({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": [0.001]}}, "optimizer",
     "cfg:optimizer.params.lr"),
    ({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
      "scheduler": {"type": "WarmupLR", "params": [100]}}, "optimizer", "cfg:scheduler.params.warmup_num_steps"),
    ({"train_micro_batch_size_per_gpu": 1, "tensorboard": [1, 2]}, "monitoring", "cfg:tensorboard.enabled"),
])
def test_a_field_inside_a_section_that_is_not_an_object_cannot_be_edited(config, page, key):
    """An edit inside a list where an object belongs was dropped (set_path skips it) while the widget showed
    the new value: the export did not hold what the screen did. The widget is now disabled and says why."""
    at = app(copy.deepcopy(config), page=app_state.PAGES[page])
    assert not at.exception, at.exception
    widget = next(w for kind in (at.number_input, at.checkbox, at.text_input) for w in kind if w.key == key)
    assert widget.disabled and "not an object" in (widget.help or "")
    assert at.session_state["config"] == config
