"""What "vetted" means for a preset (core.preset_vetting) and ``dsconfig presets check`` over a team's folder."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from core.cli import main
from core.preset_vetting import vetting_problems
from core.presets import BUILTIN_DIR, list_presets, parse_preset, read_reference
from core.schema.base import KNOWN_VERSIONS
from tests.conftest import REFERENCE_DIR

BUILTINS, _ = list_presets([BUILTIN_DIR])
REFERENCE = read_reference(REFERENCE_DIR)
GOOD = json.loads((BUILTIN_DIR / "zero2-bf16.json").read_text())


def _preset(document: dict, name: str = "team") -> object:
    return parse_preset(json.dumps(document), name=name)


@pytest.mark.parametrize("preset", BUILTINS, ids=lambda p: p.name)
def test_every_builtin_preset_is_vetted(preset):
    assert vetting_problems(preset, world_sizes=(1, 8, 16), reference=REFERENCE) == []


def _broken() -> dict:
    bad = copy.deepcopy(GOOD)
    bad["meta"]["verified_with"] = [KNOWN_VERSIONS[-1], "0.99.0"]
    del bad["meta"]["hardware"]
    bad["meta"]["justifications"][0]["key"] = "no_such_key"
    bad["meta"]["justifications"][1]["section"] = "A heading nobody wrote"
    bad["meta"]["justifications"][2]["doc"] = "../etc/passwd"
    bad["config"]["zero_optimization"]["stge"] = 2
    bad["config"]["wall_clock_breakdown"] = False
    return bad


def test_each_kind_of_problem_is_named_at_its_path():
    problems = vetting_problems(_preset(_broken()), world_sizes=(1, 8), reference=REFERENCE)
    by_path = {problem.path: problem.message for problem in problems}
    assert "meta.hardware" in by_path
    assert "'0.99.0' is not a DeepSpeed release" in by_path["meta.verified_with[1]"]
    assert "'no_such_key' is not in the config" in by_path["meta.justifications[0].key"]
    assert "does not appear in" in by_path["meta.justifications[1].section"]
    assert "is not a file of" in by_path["meta.justifications[2].doc"]
    assert "no justification" in by_path["config.wall_clock_breakdown"]
    assert "no justification" in by_path["config.train_micro_batch_size_per_gpu"]  # its one was renamed away
    # one problem for the typo, with every release and GPU count it fails on (0.99.0 is not validated)
    typo = by_path["config.zero_optimization.stge"]
    assert typo.startswith("keys.unknown: ") and f"DeepSpeed {KNOWN_VERSIONS[-1]} on 1 GPU, " \
        f"{KNOWN_VERSIONS[-1]} on 8 GPUs)" in typo
    assert len(problems) == 8


def test_without_the_reference_the_citations_are_not_checked_and_the_rest_is():
    paths = {problem.path for problem in vetting_problems(_preset(_broken()))}
    assert not {"meta.justifications[1].section", "meta.justifications[2].doc"} & paths
    assert {"meta.justifications[0].key", "config.zero_optimization.stge"} <= paths


def test_a_preset_that_fails_only_on_some_gpu_counts_says_which():
    document = copy.deepcopy(GOOD)  # micro batch 4 x accumulation 4: 128 sequences need 8 GPUs
    document["config"]["train_batch_size"] = 128
    document["meta"]["justifications"].append({**document["meta"]["justifications"][0], "key": "train_batch_size"})
    problems = vetting_problems(_preset(document), world_sizes=(1, 8, 3))
    assert problems and {p.path for p in problems} == {"config.train_batch_size"}
    runs = " ".join(p.message for p in problems)
    assert "on 1 GPU" in runs and "on 3 GPUs" in runs and "on 8 GPUs" not in runs


def _check(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(["presets", "check", *argv], out=out), out.getvalue()


def test_cli_builtins_pass_and_a_team_folder_fails_with_file_line_column(tmp_path):
    code, out = _check(str(BUILTIN_DIR), "--reference", str(REFERENCE_DIR), "--world-size", "8")
    assert code == 0 and out.endswith(f"{len(BUILTINS)} preset(s) checked: {len(BUILTINS)} vetted, 0 with problems\n")
    (tmp_path / "team-good.json").write_text(json.dumps(GOOD, indent=2))
    (tmp_path / "team-bad.json").write_text(json.dumps(_broken(), indent=2))
    (tmp_path / "broken.json").write_text("{")
    code, out = _check(str(tmp_path), "--reference", str(REFERENCE_DIR))
    assert code == 1
    text = (tmp_path / "team-bad.json").read_text().split("\n")
    stge = next(i for i, line in enumerate(text, 1) if '"stge"' in line)
    assert f"{tmp_path / 'team-bad.json'}:{stge}:7: keys.unknown: Unknown key `stge`" in out
    assert f"{tmp_path / 'broken.json'}: not valid JSON" in out
    assert "team-good" not in out
    assert out.endswith("2 preset(s) checked: 1 vetted, 1 with problems, 1 file(s) skipped\n")


def test_cli_bad_folders_are_usage_errors(tmp_path, capsys):
    assert _check(str(tmp_path / "missing"))[0] == 2
    assert "no such folder of presets" in capsys.readouterr().err
    assert _check(str(tmp_path), "--reference", str(tmp_path / "nope"))[0] == 2
    # a CI job pointed at a wrong folder passed: "0 preset(s) checked", exit 0
    for folder in (tmp_path, tmp_path / "notes"):
        folder.mkdir(exist_ok=True)
        (folder / "notes.txt").write_text("not a preset")
        assert _check(str(folder)) == (2, "")
        assert f"{folder} has no preset files (*.json)" in capsys.readouterr().err
    # a preset file was "no such folder of presets"
    (tmp_path / "team.json").write_text(json.dumps(GOOD))
    assert _check(str(tmp_path / "team.json"))[0] == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'team.json'} is a file: presets check takes folders of presets" in err
    assert f"({tmp_path})" in err and "no such folder" not in err


def test_the_default_folders_are_the_builtins_and_the_team_path(tmp_path, monkeypatch):
    (tmp_path / "team-bad.json").write_text(json.dumps(_broken()))
    monkeypatch.setenv("DSCONFIG_PRESETS_PATH", str(tmp_path))
    code, out = _check()
    assert code == 1 and f"{len(BUILTINS) + 1} preset(s) checked: {len(BUILTINS)} vetted, 1 with problems" in out
    assert Path(out.split(":", 1)[0]) == tmp_path / "team-bad.json"


def test_each_metadata_problem_carries_the_path_it_concerns():
    from core.presets import meta_problem_paths

    meta = {"title": "", "target": "nope", "verified_with": "0.19.8", "justifications": [{"key": "x"}, "y"]}
    paths = [p.path for p in meta_problem_paths(meta, vetted=True)]
    assert paths[:1] == ["meta.title"] and "meta.target" in paths and "meta.verified_with" in paths
    assert "meta.justifications[0]" in paths and "meta.justifications[1]" in paths
    meta["verified_with"] = []
    assert "meta.verified_with" in [p.path for p in meta_problem_paths(meta, vetted=True)]


@pytest.mark.parametrize("value", [5, "x", None, {}, True, 1.5, [5], [{}], [{"key": 5}],
                                   [{"key": "bf16", "doc": 5, "section": []}]], ids=repr)
@pytest.mark.parametrize("key", sorted({*GOOD["meta"], "justifications", "verified_with", "target", "title"}))
def test_any_metadata_value_is_a_problem_named_never_a_crash(key, value):
    """A team file's metadata of any shape is named as a problem (``dsconfig presets check`` then goes on to the
    next file); "justifications": 5 used to stop the whole check with a TypeError."""
    document = copy.deepcopy(GOOD)
    document["meta"][key] = value
    problems = vetting_problems(_preset(document), reference=REFERENCE)
    if key == "justifications" and not isinstance(value, list):
        assert "meta.justifications must be a list" in {p.message for p in problems}


def test_cli_a_team_file_named_like_a_builtin_is_reported_not_vetted(tmp_path):
    """`presets check TEAM` used to vet a team `zero2-bf16.json` that every command ignores for the built-in."""
    (tmp_path / "zero2-bf16.json").write_text(json.dumps(GOOD, indent=2))
    (tmp_path / "team-good.json").write_text(json.dumps(GOOD, indent=2))
    code, out = _check(str(tmp_path))
    assert code == 1
    assert "zero2-bf16.json: 'zero2-bf16' is the name of a built-in preset" in out
    assert out.endswith("1 preset(s) checked: 1 vetted, 0 with problems, 1 file(s) skipped\n")
    # the built-in folder named on the command line with the team's: each built-in checked once
    code, out = _check(str(BUILTIN_DIR), str(tmp_path))
    assert f"{len(BUILTINS) + 1} preset(s) checked" in out and out.count("built-in preset") == 1


def test_cli_a_folder_given_twice_is_checked_once(tmp_path, monkeypatch):
    """`presets check team team/` said "'x' is already defined in team; ignored ... 1 file(s) skipped" and exited
    1: a CI gate failed on a duplicate that is the same file."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "team-good.json").write_text(json.dumps(GOOD, indent=2))
    monkeypatch.chdir(tmp_path)
    once = _check("team")
    assert once[0] == 0 and once[1].endswith("1 preset(s) checked: 1 vetted, 0 with problems\n"), once
    assert _check("team", "team/") == once
    both = _check("team", str(team), str(BUILTIN_DIR), str(BUILTIN_DIR) + "/")
    assert both[0] == 0 and both[1].endswith(f"{len(BUILTINS) + 1} preset(s) checked: {len(BUILTINS) + 1} vetted, "
                                             "0 with problems\n"), both


def test_cli_world_sizes_take_a_comma_list_as_validate_does(tmp_path):
    document = copy.deepcopy(GOOD)  # micro batch 4 x accumulation 4: 128 sequences need 8 GPUs
    document["config"]["train_batch_size"] = 128
    document["meta"]["justifications"].append({**document["meta"]["justifications"][0], "key": "train_batch_size"})
    (tmp_path / "team.json").write_text(json.dumps(document, indent=2))
    listed = _check(str(tmp_path), "--world-size", "1,8", "--world-size", "3")
    repeated = _check(str(tmp_path), "--world-size", "1", "--world-size", "8", "--world-size", "3")
    assert listed == repeated and listed[0] == 1
    assert "on 1 GPU" in listed[1] and "on 3 GPUs" in listed[1] and "on 8 GPUs" not in listed[1]
    assert _check(str(tmp_path), "--world-size", "8") == (0, "1 preset(s) checked: 1 vetted, 0 with problems\n")
