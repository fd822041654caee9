"""migrate: deprecated keys rewritten, nothing lost, error-free configs stay error-free."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import load_config, migrate, validate
from core.cli import main
from core.io import ConfigLoadError
from core.migrate import left_behind
from tests.conftest import corpus_files


def test_cpu_offload_becomes_offload_optimizer():
    new, changes = migrate({"zero_optimization": {"stage": 2, "cpu_offload": True, "contiguous_gradients": True}})
    assert new["zero_optimization"] == {"stage": 2, "offload_optimizer": {"device": "cpu"},
                                        "contiguous_gradients": True}
    # the values as the file writes them (JSON), not as Python prints them (True, {'device': 'cpu'})
    assert changes == ['zero_optimization.cpu_offload: true → offload_optimizer: {"device": "cpu"}']


def test_cpu_offload_false_is_dropped_and_said():
    new, changes = migrate({"zero_optimization": {"stage": 2, "cpu_offload": False}})
    assert new["zero_optimization"] == {"stage": 2}
    assert "removed" in changes[0]


def test_gather_fp16_renamed_to_16bit():
    new, _ = migrate({"zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": True}})
    assert new["zero_optimization"] == {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}


def test_bool_zero_and_bfloat16():
    new, changes = migrate({"zero_optimization": True, "allgather_size": 100, "bfloat16": {"enabled": True}})
    assert new == {"zero_optimization": {"stage": 1, "allgather_bucket_size": 100}, "bf16": {"enabled": True}}
    assert len(changes) == 2


def test_bfloat16_next_to_a_null_bf16_is_kept():
    """DeepSpeed reads `bfloat16` when `bf16` is null; migrating must not let the null overwrite it."""
    new, changes = migrate({"bfloat16": {"enabled": True}, "bf16": None, "steps_per_print": 5})
    assert new == {"bf16": {"enabled": True}, "steps_per_print": 5} and changes == ["bfloat16 → bf16"]


def test_cpu_offload_is_read_as_deepspeed_reads_a_bool():
    """DeepSpeed's pydantic reads "false" and "0" as False: no offload section appears for them; a value it
    refuses is left for the validator."""
    for off in ("false", "0", "off", 0):
        new, changes = migrate({"zero_optimization": {"stage": 2, "cpu_offload": off}})
        assert new == {"zero_optimization": {"stage": 2}} and "removed (it was off)" in changes[0], off
    new, _ = migrate({"zero_optimization": {"stage": 2, "cpu_offload": "yes"}})
    assert new["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    config = {"zero_optimization": {"stage": 2, "cpu_offload": "maybe"}}
    assert migrate(config) == (config, [])


@pytest.mark.deepspeed
def test_bool_zero_fix_and_migrate_keep_the_allgather_size_deepspeed_reads():
    """With `"zero_optimization": true` DeepSpeed reads the top-level allgather_size as allgather_bucket_size
    (read_zero_config_deprecated); the safe fix of deprecated.zero-bool and migrate must carry it over, so
    DeepSpeed parses the rewritten config into the same ZeRO settings."""
    pytest.importorskip("deepspeed")
    from tests.oracle import ds0195_worker as oracle

    def zero(config: dict) -> dict:
        with oracle._quiet():
            return oracle._deepspeed_config_class()(copy.deepcopy(config), 1).zero_config.model_dump()

    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": True, "allgather_size": 1000}
    finding = next(f for f in validate(config).findings if f.code == "deprecated.zero-bool")
    want = zero(config)
    assert (want["stage"], want["allgather_bucket_size"]) == (1, 1000)
    assert finding.fix.safe and zero(finding.fix.apply(config)) == want
    assert zero(migrate(config)[0]) == want
    said = [f.message for f in validate(config).findings if f.path == "allgather_size"]
    assert not said, f"DeepSpeed reads allgather_size here, yet: {said}"


def test_clash_left_for_the_validator():
    config = {"zero_optimization": {"stage": 2, "cpu_offload": True, "offload_optimizer": {"device": "none"}}}
    new, changes = migrate(config)
    assert new == config and changes == []
    assert left_behind(new) == ["zero_optimization.cpu_offload: left in place, because offload_optimizer is set too "
                                "and DeepSpeed refuses both together: remove cpu_offload, or merge it into "
                                "offload_optimizer by hand"]


def test_migrate_check_fails_on_a_deprecated_key_it_cannot_migrate(tmp_path, capsys):
    """`migrate --check` said "nothing to migrate" (exit 0) for cpu_offload beside offload_optimizer, which
    DeepSpeed refuses; it now exits 1 and says why the key stays."""
    path = tmp_path / "c.json"
    path.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": true, '
                    '"offload_optimizer": {"device": "nvme", "nvme_path": "/x"}}}')
    assert main(["migrate", "--check", str(path)]) == 1
    assert "cannot migrate" in capsys.readouterr().err
    path.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": "maybe"}}')
    assert main(["migrate", "--check", str(path)]) == 1
    assert "DeepSpeed refuses its value \"maybe\"" in capsys.readouterr().err
    path.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}')
    assert main(["migrate", "--check", str(path)]) == 0
    assert "nothing to migrate" in capsys.readouterr().err


def test_input_not_mutated_and_non_dict_passthrough():
    config = {"zero_optimization": {"stage": 2, "cpu_offload": True}}
    migrate(config)
    assert config == {"zero_optimization": {"stage": 2, "cpu_offload": True}}
    assert migrate([1]) == ([1], [])


def _keys(config, prefix=""):
    out = set()
    for k, v in config.items():
        out.add(f"{prefix}{k}")
        if isinstance(v, dict):
            out |= _keys(v, f"{prefix}{k}.")
    return out


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_migration_keeps_keys_and_does_not_add_errors(path):
    try:
        config = load_config(path.read_bytes())
    except ConfigLoadError:
        return
    new, _changes = migrate(config)
    deprecated = {"cpu_offload", "cpu_offload_param", "stage3_gather_fp16_weights_on_model_save", "bfloat16",
                  "allgather_size", "cpu_offload_use_pin_memory"}
    renamed = {k.replace("bfloat16.", "bf16.", 1) for k in _keys(config)} if "bf16" not in config else _keys(config)
    lost = {k for k in renamed - _keys(new) if k.rsplit(".", 1)[-1] not in deprecated}
    assert not lost
    before = validate(config, target="hf")
    after = validate(new, target="hf")
    if before.ok:
        assert after.ok, [f.message for f in after.errors]
    assert not {f.code for f in after.findings if f.code.startswith("deprecated")} - {"deprecated.with-replacement"}


zero_values = st.dictionaries(
    st.sampled_from(["stage", "cpu_offload", "cpu_offload_param", "cpu_offload_use_pin_memory",
                     "stage3_gather_fp16_weights_on_model_save", "offload_optimizer", "contiguous_gradients"]),
    st.one_of(st.booleans(), st.integers(0, 3), st.none(), st.just({"device": "cpu"})),
)


@settings(max_examples=300, deadline=None)
@given(zero_values, st.integers(1, 64))
def test_property_migrate_never_adds_errors(zero, world_size):
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero}
    new, _ = migrate(config)
    if validate(config, world_size=world_size).ok:
        assert validate(new, world_size=world_size).ok


def test_an_in_place_rewrite_keeps_the_comments_it_cannot_write(tmp_path, capsys):
    """`migrate --write` and `fix -o` onto the input rewrite it as strict JSON: an HJSON file's comments were lost
    without a word. The original text is kept as FILE.orig and a warning says so; with a FILE.orig already there,
    the rewrite is refused rather than overwriting either."""
    hjson = ('{\n  // why stage 2\n  "train_batch_size": 8, # note\n'
             '  "zero_optimization": {"stage": 2, "cpu_offload": true}\n}\n')
    path = tmp_path / "c.json"
    path.write_text(hjson)
    assert main(["migrate", "--write", str(path)]) == 0
    assert (tmp_path / "c.json.orig").read_text() == hjson
    assert "saved as" in capsys.readouterr().err
    assert load_config(path.read_text())["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    path.write_text(hjson.replace('"cpu_offload": true', '"cpu_offload": true, "reduce_bucket_siz": 5'))
    assert main(["fix", "--unsafe", str(path), "-o", str(path)]) == 2
    assert "exists already" in capsys.readouterr().err and "// why stage 2" in path.read_text()
    strict = tmp_path / "s.json"
    strict.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}')
    assert main(["migrate", "--write", str(strict)]) == 0
    assert not (tmp_path / "s.json.orig").exists() and "saved as" not in capsys.readouterr().err


def test_an_in_place_rewrite_backs_up_the_bytes_and_takes_a_byte_order_mark_for_json(tmp_path, capsys):
    """A strict JSON file with a UTF-8 byte-order mark was called HJSON (warning, needless FILE.orig, and a refusal
    when one existed); an HJSON file's CRLF line endings were turned into LF in the FILE.orig "original"."""
    bom = tmp_path / "b.json"
    bom.write_bytes(b'\xef\xbb\xbf{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}')
    (tmp_path / "b.json.orig").write_text("someone's")
    assert main(["migrate", "--write", str(bom)]) == 0
    assert "HJSON" not in capsys.readouterr().err and (tmp_path / "b.json.orig").read_text() == "someone's"
    assert load_config(bom.read_bytes())["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    crlf = tmp_path / "c.json"
    original = b'{\r\n  // a comment\r\n  "zero_optimization": {"stage": 2, "cpu_offload": true}\r\n}\r\n'
    crlf.write_bytes(original)
    assert main(["migrate", "--write", str(crlf)]) == 0
    assert (tmp_path / "c.json.orig").read_bytes() == original


@pytest.mark.parametrize("mode", ["--check", "--write"])
def test_migrate_of_several_files_carries_on_past_an_unreadable_one(mode, tmp_path, capsys):
    """`migrate --check ok.json empty.json stale.json` stopped at the empty file (exit 2) and never looked at
    stale.json; with --write, the files after it were silently not rewritten."""
    ok, empty, stale = tmp_path / "ok.json", tmp_path / "empty.json", tmp_path / "stale.json"
    ok.write_text('{"train_batch_size": 8}')
    empty.write_text("")
    stale.write_text('{"train_batch_size": 8, "bfloat16": {"enabled": true}}')
    assert main(["migrate", mode, str(ok), str(empty), str(stale)]) == 2
    err = capsys.readouterr().err
    assert f"{empty}" in err and "error" in err and f"{stale}: bfloat16 → bf16" in err
    assert ("bf16" in load_config(stale.read_text())) is (mode == "--write")


def test_a_bool_with_spaces_is_refused_as_pydantic_refuses_it_and_never_migrated():
    """pydantic's bool does not strip whitespace (its int and float do): " true " is refused by DeepSpeed. migrate and
    the safe deprecated-key fix read it as true and switched on parameter offload for a config DeepSpeed refuses."""
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "cpu_offload_param": " true "}}
    new, changes = migrate(config)
    assert new == config and changes == []
    assert any(" true " in why for why in left_behind(new))
    report = validate(config)
    assert "type.bool_parsing" in report.codes()
    assert not [f for f in report.findings if f.fix is not None and f.fix.safe]


def test_a_null_bfloat16_is_not_renamed_into_an_accepted_null_bf16():
    """DeepSpeed reads a null `bf16` as absent but fails on a null `bfloat16` (**None): the rename hid the error."""
    config = {"train_micro_batch_size_per_gpu": 1, "bfloat16": None}
    new, changes = migrate(config)
    assert new == config and changes == [] and left_behind(new)
    report = validate(config)
    assert report.codes() == {"type.model_type"} and not report.ok
