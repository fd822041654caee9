"""core.cli.presets through its own argparse parser: presets list/show and export."""

from __future__ import annotations

import argparse
import io
import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import load_config, validate
from core.cli.presets import UsageError, parse_value, register, set_path
from core.findings import split_path
from core.presets import META_TEXT_FIELDS, save_preset


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="dsconfig")
    register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        captured = capsys.readouterr()
        return int(exc.code or 0), captured.out, captured.err
    out = io.StringIO()
    code = args.handler(args, out)
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out, captured.err


@pytest.fixture(autouse=True)
def no_team_folders(monkeypatch):
    monkeypatch.delenv("DSCONFIG_PRESETS_PATH", raising=False)


def test_list_text_and_json(capsys):
    code, out, err = run(["presets", "list"], capsys)
    assert code == 0 and err == ""
    assert "zero3-offload-cpu" in out and "hf-auto-zero2" in out and out.startswith("NAME")
    code, out, _ = run(["presets", "list", "--format", "json"], capsys)
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 12
    row = next(r for r in rows if r["name"] == "zero-infinity-nvme")
    assert row["offload"] == "nvme" and row["stage"] == 3 and row["builtin"] is True


def test_list_shows_team_folder_and_reports_broken_files(tmp_path, monkeypatch, capsys):
    save_preset("team-one", {"train_micro_batch_size_per_gpu": 1}, {"title": "Team one", "description": "d",
                                                                      "target": "deepspeed"}, tmp_path)
    (tmp_path / "broken.json").write_text("{")
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    code, out, err = run(["presets", "list"], capsys)
    assert code == 0
    assert "team-one" in out and str(tmp_path) in out
    assert "broken.json" in err and "warning" in err


def test_list_and_export_warn_about_a_team_presets_missing_metadata(tmp_path, monkeypatch, capsys):
    """A team preset without the required description and target was listed (its target shown as deepspeed) and
    exported without a word, while ``presets show`` / ``check`` named both problems: now list and export say them
    on stderr, and still list and export it."""
    (tmp_path / "badmeta.json").write_text(json.dumps({"meta": {"title": "x"},
                                                       "config": {"train_micro_batch_size_per_gpu": 1}}))
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    for argv in (["presets", "list"], ["export", "--preset", "badmeta"]):
        code, out, err = run(argv, capsys)
        assert code == 0, argv
        assert "badmeta" in out or '"train_micro_batch_size_per_gpu": 1' in out
        warned = [line for line in err.splitlines() if "badmeta.json" in line]
        assert any("meta.description" in line for line in warned) and any("meta.target" in line for line in warned)
        assert all(line.startswith("dsconfig: warning: ") for line in warned)
    monkeypatch.delenv("DSCONFIG_PRESETS_PATH")  # the built-in ones are vetted: nothing to say
    code, out, err = run(["presets", "list"], capsys)
    assert code == 0 and err == ""


def test_show(capsys):
    code, out, _ = run(["presets", "show", "zero2-fp16"], capsys)
    assert code == 0
    assert "dynamic loss scaling" in out and "When to use" in out and "ds-config-docs-site.md" in out
    assert '"loss_scale": 0' in out
    code, out, _ = run(["presets", "show", "zero2-fp16", "--format", "json"], capsys)
    data = json.loads(out)
    assert set(META_TEXT_FIELDS) <= set(data["meta"]) and data["config"]["fp16"]["enabled"] is True


@pytest.mark.parametrize("name", ["nope", "../../etc/passwd", "/etc/passwd", "UPPER", "a\x00b"])
def test_show_bad_names(name, capsys):
    code, out, err = run(["presets", "show", name], capsys)
    assert code == 2 and out == ""
    assert err.startswith("dsconfig presets: error: ") and "Traceback" not in err
    assert ("no preset named" in err) or ("invalid preset name" in err)


def test_export_plain_and_with_set(tmp_path, capsys):
    code, out, _ = run(["export", "--preset", "zero2-bf16"], capsys)
    assert code == 0
    assert load_config(out)["zero_optimization"]["stage"] == 2
    target = tmp_path / "ds_config.json"
    code, out, err = run(["export", "--preset", "zero2-bf16", "--set", "zero_optimization.stage=3",
                          "--set", "zero_optimization.offload_param.device=cpu", "--set", "steps_per_print=5",
                          "--world-size", "8", "-o", str(target)], capsys)
    assert code == 0 and out == "" and "wrote" in err
    cfg = load_config(target.read_text())
    assert cfg["zero_optimization"]["stage"] == 3
    assert cfg["zero_optimization"]["offload_param"] == {"device": "cpu"}
    assert cfg["steps_per_print"] == 5
    assert validate(cfg, world_size=8).ok


def test_export_resolves_auto_for_plain_deepspeed(capsys):
    code, out, err = run(["export", "--preset", "hf-auto-zero3", "--world-size", "8", "--resolve-auto",
                          "per_device_train_batch_size=4", "gradient_accumulation_steps=2", "max_grad_norm=1.0",
                          "learning_rate=2e-5", "adam_beta1=0.9", "adam_beta2=0.999", "adam_epsilon=1e-8",
                          "weight_decay=0.0", "bf16=true", "fp16=false", "hidden_size=4096",
                          "num_training_steps=1000", "warmup_steps=0.1"], capsys)
    assert code == 0, err
    cfg = load_config(out)
    assert cfg["train_batch_size"] == 64 and cfg["train_micro_batch_size_per_gpu"] == 4
    assert cfg["zero_optimization"]["reduce_bucket_size"] == 4096 * 4096
    assert cfg["scheduler"]["params"]["warmup_num_steps"] == 100
    assert cfg["bf16"]["enabled"] is True and cfg["fp16"]["enabled"] is False
    assert "auto" not in out
    assert validate(cfg, world_size=8, target="deepspeed").ok


def test_export_resolve_missing_value_is_named(capsys):
    """What has no Trainer default (the model's hidden size, the run's length) is named, every one at once."""
    code, out, err = run(["export", "--preset", "hf-auto-zero3", "--resolve-auto", "learning_rate=1e-4"], capsys)
    assert code == 2 and out == ""
    assert "needs hidden_size, num_training_steps" in err and "hidden_size=VALUE num_training_steps=VALUE" in err
    assert "Traceback" not in err


def test_export_resolve_takes_the_trainers_defaults_and_the_help_example_works(capsys):
    """The help's own example: what it does not give comes from the HF Trainer's defaults, and a note says which."""
    code, out, err = run(["export", "--preset", "hf-auto-zero3", "--world-size", "8", "--resolve-auto",
                          "per_device_train_batch_size=4", "learning_rate=2e-5", "bf16=true", "hidden_size=4096",
                          "num_training_steps=1000", "warmup_steps=100"], capsys)
    assert code == 0, err
    cfg = load_config(out)
    assert cfg["gradient_accumulation_steps"] == 1 and cfg["gradient_clipping"] == 1.0
    assert cfg["optimizer"]["params"]["betas"] == [0.9, 0.999] and "auto" not in out
    assert "defaults filled" in err and "max_grad_norm=1.0" in err


def test_export_hf_preset_unresolved_keeps_target_hf(capsys):
    code, out, _ = run(["export", "--preset", "hf-auto-zero2"], capsys)
    assert code == 0 and load_config(out)["train_batch_size"] == "auto"


def test_export_with_errors_exits_1_unless_forced(capsys):
    argv = ["export", "--preset", "zero2-bf16", "--set", "fp16.enabled=true"]  # fp16 and bf16 together
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "" and "not exported" in err and "error" in err
    code, out, err = run([*argv, "--force"], capsys)
    assert code == 1 and load_config(out)["fp16"]["enabled"] is True


@pytest.mark.parametrize(("argv", "fragment"), [
    (["export", "--preset", "zero2-bf16", "--set", "nokey"], "KEY=VALUE"),
    (["export", "--preset", "zero2-bf16", "--set", "=3"], "KEY=VALUE"),
    (["export", "--preset", "zero2-bf16", "--set", "a..b=3"], "dotted key path"),
    (["export", "--preset", "zero2-bf16", "--set", "zero_optimization.stage.x=3"], "not an object"),
    (["export", "--preset", "hf-auto-zero2", "--resolve-auto", "lr=3"], "unknown training value"),
    (["export", "--preset", "hf-auto-zero2", "--resolve-auto", "world_size=0"], "world_size"),
    (["export", "--preset", "missing"], "no preset named"),
    # the two world sizes disagreeing were blamed on the preset's batch sizes (exit 1)
    (["export", "--preset", "hf-auto-zero3", "--world-size", "8", "--resolve-auto", "hidden_size=4096",
      "num_training_steps=100", "world_size=4", "per_device_train_batch_size=2"],
     "--world-size 8 and --resolve-auto world_size=4 disagree: give one"),
])
def test_export_bad_input_exit_2(argv, fragment, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert fragment in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["export"], ["export", "--preset", "zero2-bf16", "--world-size", "0"],
    ["export", "--preset", "zero2-bf16", "--world-size", "many"], ["presets"], ["presets", "show"],
    ["export", "--preset", "zero2-bf16", "--deepspeed-version", "9.9"],
])
def test_usage_errors_exit_2(argv, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2 and "usage" in err


def test_export_unwritable_output(tmp_path, capsys):
    code, _, err = run(["export", "--preset", "zero2-bf16", "-o", str(tmp_path / "no" / "dir" / "x.json")], capsys)
    assert code == 2 and "cannot write" in err


def test_parse_value():
    assert parse_value("3") == 3 and parse_value("true") is True and parse_value("null") is None
    assert parse_value("[0.9, 0.95]") == [0.9, 0.95] and parse_value("cpu") == "cpu"
    assert parse_value('"3"') == "3" and parse_value("5e8") == 5e8


@pytest.mark.parametrize(("text", "said"), [
    ('{"a": 1, "a": 2}', "the key 'a' appears twice"),  # was {"a": 2}, the first value lost
    ("9" * 5000, "too large (more than 4300 digits)"),  # was Python's 'use sys.set_int_max_str_digits()'
    ("NaN", "the value is NaN"),
    ("[1e400]", "write a finite number"),
])
def test_parse_value_refuses_what_the_config_loader_refuses(text, said):
    with pytest.raises(UsageError, match=re.escape(said)):
        parse_value(text)


def test_set_path_creates_and_refuses():
    cfg: dict = {"a": {"b": 1}, "c": 2}
    set_path(cfg, "a.d.e", "x")
    assert cfg == {"a": {"b": 1, "d": {"e": "x"}}, "c": 2}
    with pytest.raises(UsageError, match=r"c is 2"):
        set_path(cfg, "c.x", 1)
    set_path(cfg, r"a.k\.with\.dots", 1)  # escaped dots, as in finding paths
    assert cfg["a"]["k.with.dots"] == 1


@given(st.text(max_size=40), st.text(max_size=20))
@settings(max_examples=300, deadline=None)
def test_set_never_crashes(key, value):
    cfg = {"zero_optimization": {"stage": 2}, "steps_per_print": 10}
    try:
        set_path(cfg, key, parse_value(value))
    except UsageError:
        return
    parts = split_path(key)
    node = cfg
    for part in parts[:-1]:
        node = node[part]
    assert parts[-1] in node


def test_show_names_malformed_team_metadata_instead_of_crashing(tmp_path, monkeypatch, capsys):
    """A justification that is not an object, or a version that is not text, raised a traceback in show."""
    meta = {"title": "T", "description": "d", "target": "deepspeed"}
    for name, extra in (("just-bad", {"justifications": ["x", {"key": "train_batch_size", "why": "w"}]}),
                        ("versions-bad", {"verified_with": [0.19]})):
        (tmp_path / f"{name}.json").write_text(json.dumps({"meta": {**meta, **extra},
                                                           "config": {"train_batch_size": 8}}))
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    code, out, err = run(["presets", "show", "just-bad"], capsys)
    assert code == 0 and err == ""
    assert "train_batch_size: w" in out and "problem: meta.justifications[0]" in out
    code, out, err = run(["presets", "show", "versions-bad"], capsys)
    assert code == 0 and "verified with DeepSpeed 0.19\n" in out and "problem: meta.verified_with" in out


def test_resolve_auto_reads_whole_numbers_as_the_count_flags_do(tmp_path):
    """--resolve-auto num_training_steps=1e3 was refused ("must be a positive integer") while every count flag
    reads 2e3; accepted, the value is the integer (1000, not 1000.0) in the config."""
    from core.cli import main

    out = tmp_path / "ds.json"
    assert main(["export", "--preset", "hf-auto-zero3", "--resolve-auto", "num_training_steps=1e3",
                 "hidden_size=4096.0", "-o", str(out)]) == 0
    config = json.loads(out.read_text())
    steps, bucket = config["scheduler"]["params"]["total_num_steps"], config["zero_optimization"]["reduce_bucket_size"]
    assert (steps, bucket) == (1000, 4096 * 4096) and type(steps) is int and type(bucket) is int
    assert main(["export", "--preset", "hf-auto-zero3", "--resolve-auto", "num_training_steps=1.5",
                 "hidden_size=4096", "-o", str(out)]) == 2


def test_symbolic_link_loops_and_links_in_team_folders_get_messages_not_tracebacks(tmp_path, capsys, monkeypatch):
    """A looping preset file crashed `presets show`/`export` (RuntimeError from Path.resolve), a looping folder in
    DSCONFIG_PRESETS_PATH crashed every preset command, and a link in the first folder hid a real preset of the
    same name in the next one ("would be stored outside")."""
    loops, first, second, elsewhere = (tmp_path / n for n in ("loops", "a", "b", "else"))
    for folder in (loops, first, second, elsewhere):
        folder.mkdir()
    (loops / "loop2.json").symlink_to(loops / "loop1")
    (loops / "loop1").symlink_to(loops / "loop2.json")
    (tmp_path / "folderloop").symlink_to(tmp_path / "folderloop")
    preset = json.dumps({"meta": {"title": "B", "description": "d", "target": "deepspeed"},
                         "config": {"train_micro_batch_size_per_gpu": 1}})
    (elsewhere / "dup.json").write_text(preset)
    (second / "dup.json").write_text(preset)
    (first / "dup.json").symlink_to(elsewhere / "dup.json")
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(loops))
    code, _, err = run(["presets", "show", "loop2"], capsys)
    assert code == 2 and "loop2.json: preset files may not be symbolic links" in err and "Traceback" not in err
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path / "folderloop"))
    code, out, err = run(["presets", "list"], capsys)
    assert code == 0 and "zero2-bf16" in out and "folderloop" in err
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", f"{first}{os.pathsep}{second}")
    code, out, _ = run(["presets", "show", "dup"], capsys)
    assert code == 0 and str(second / "dup.json") in out


def test_show_and_export_say_which_same_name_team_file_they_ignore(tmp_path, monkeypatch, capsys):
    """A team file named like a built-in preset: only `presets list` said it is ignored; `show` and `export`
    printed the built-in without a word, and `show --format json` did not say which file it read."""
    (tmp_path / "zero2-bf16.json").write_text(json.dumps({
        "meta": {"title": "SHADOW", "description": "ours", "target": "deepspeed"},
        "config": {"train_batch_size": 1}}))
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    for argv in (["presets", "show", "zero2-bf16"], ["export", "--preset", "zero2-bf16"]):
        code, out, err = run(argv, capsys)
        assert code == 0 and "SHADOW" not in out, argv
        assert err.startswith(f"dsconfig: warning: {tmp_path / 'zero2-bf16.json'}: 'zero2-bf16' is the name of a "
                              "built-in preset, which cannot be overridden"), err
    code, out, _ = run(["presets", "show", "zero2-bf16", "--format", "json"], capsys)
    shown = json.loads(out)
    assert shown["builtin"] is True and shown["path"].endswith("zero2-bf16.json")
    assert not shown["path"].startswith(str(tmp_path))
    monkeypatch.delenv("DSCONFIG_PRESETS_PATH")
    assert run(["presets", "show", "zero2-bf16"], capsys)[2] == ""


def test_a_metadata_warning_names_a_command_that_runs(tmp_path, monkeypatch, capsys):
    """The warning said `dsconfig presets check FILE`, which refuses a file ("no such folder of presets")."""
    (tmp_path / "notarget.json").write_text(json.dumps({"meta": {"title": "t", "description": "d"},
                                                        "config": {"train_micro_batch_size_per_gpu": 1}}))
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    _code, _out, err = run(["presets", "list"], capsys)
    (command,) = re.findall(r"\(dsconfig (presets check [^)]*)\)", err)
    code, out, _err = run(command.split(), capsys)
    assert code == 1 and "meta.target" in out and "1 preset(s) checked" in out


def test_a_preset_nested_deeper_than_a_config_may_be_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """65 levels: the export was written and then refused by validate; 500 levels: a RecursionError traceback from
    `presets check`. A preset's config is held to the config loader's depth limit."""
    for depth, name in ((65, "deep"), (500, "deeper")):
        nested = "1"
        for _ in range(depth):
            nested = '{"a": ' + nested + "}"
        (tmp_path / f"{name}.json").write_text(
            '{"meta": {"title": "t", "description": "d", "target": "deepspeed", "verified_with": ["0.19.8"]}, '
            '"config": {"train_batch_size": 8, "x": ' + nested + "}}")
    code, out, err = run(["presets", "check", str(tmp_path)], capsys)
    assert code == 1 and "Traceback" not in out + err
    assert out.count("nests deeper than 64 levels") == 2
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    code, out, err = run(["export", "--preset", "deep", "-o", str(tmp_path / "x.json")], capsys)
    assert code == 2 and "nests deeper than 64 levels" in err and not (tmp_path / "x.json").exists()


def test_export_names_the_nearest_profile_for_a_release_it_has_none_of(capsys):
    """export listed 36 choices where validate, fix and schema name the range and the nearest profile."""
    code, _out, err = run(["export", "--preset", "zero3-bf16", "--deepspeed-version", "0.20.0"], capsys)
    assert code == 2 and "The nearest profile is" in err and "invalid choice" not in err
    code, out, _err = run(["export", "--preset", "zero3-bf16", "--deepspeed-version", "v0.17.0"], capsys)
    assert code == 0 and '"stage": 3' in out


@pytest.mark.parametrize(("version", "train_batch"), [("0.16.9", 32), ("0.19.8", 16)])
def test_export_resolves_auto_for_the_release_it_validates_for(version, train_batch, capsys):
    """--resolve-auto filled an "auto" train batch as the newest release reads sequence_parallel_size (micro 2 x
    accumulation 2 x 8 GPUs / 2 = 16) whatever --deepspeed-version said, so the 0.16.9 export, which counts every
    GPU, was refused (16 != 2 * 2 * 8) by the validation right after it."""
    code, out, err = run(["export", "--preset", "hf-auto-zero2", "--set", "sequence_parallel_size=2", "--world-size",
                          "8", "--deepspeed-version", version, "--resolve-auto", "per_device_train_batch_size=2",
                          "gradient_accumulation_steps=2", "hidden_size=4096", "num_training_steps=100"], capsys)
    assert code == 0, err
    config = json.loads(out)
    assert (config["train_batch_size"], config["train_micro_batch_size_per_gpu"],
            config["gradient_accumulation_steps"]) == (train_batch, 2, 2)
    assert validate(config, world_size=8, version=version).ok
