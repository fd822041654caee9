"""The Presets page: gallery and filters, details, diff, memory comparison, load, save to a team folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest
from app_support import app, shown_tables

import core
from core import presets
from core.models import get_config, get_spec

PAGE = "pages/presets.py"
SPEC = get_spec("meta-llama/Llama-2-7b-hf")
MODEL = {"model": "meta-llama/Llama-2-7b-hf", "total_params": SPEC.total_params,
         "largest_layer_params": SPEC.largest_layer_params, "model_config": get_config("meta-llama/Llama-2-7b-hf")}
BUILTINS = sorted(p.stem for p in presets.BUILTIN_DIR.glob("*.json"))


@pytest.fixture(autouse=True)
def no_team_folder(monkeypatch):
    monkeypatch.delenv(presets.ENV_VAR, raising=False)


def plain(text: str) -> str:
    """Markdown-escaped text back to what the reader sees."""
    return text.replace("\\", "")


def table(at, *columns: str, without: str = "\0"):
    """The first dataframe on the page that has ``columns`` (and not the column ``without``)."""
    return next(d for d in shown_tables(at) if set(columns) <= set(d.columns) and without not in d.columns)


def gallery(at) -> list[str]:
    return list(next(d for d in shown_tables(at) if list(d.columns[:2]) == ["Name", "Title"])["Name"])


def select(at, key: str, value):
    at.selectbox(key=key).set_value(value).run()
    assert not at.exception, at.exception


def test_gallery_lists_every_builtin_and_a_filter_narrows_it():
    at = app(page=PAGE)
    assert len(BUILTINS) == 13
    assert sorted(gallery(at)) == BUILTINS
    at.multiselect(key="presets_filter_stage").set_value(["3"]).run()
    names = gallery(at)
    expected = sorted(p.name for p in presets.list_presets([presets.BUILTIN_DIR])[0]
                      if presets.facets(p)["stage"] == 3)
    assert sorted(names) == expected and 0 < len(names) < 13
    at.multiselect(key="presets_filter_offload").set_value(["nvme"]).run()
    assert gallery(at) == ["zero-infinity-nvme"]
    assert len(at.selectbox(key="presets_selected").options) == 1


def test_details_show_metadata_json_and_validation():
    at = app(page=PAGE)
    select(at, "presets_selected", "zero2-fp16")
    preset = presets.load_preset("zero2-fp16", [presets.BUILTIN_DIR])
    shown = [t.value for t in at.text]
    for key in ("description", "when_to_use", "when_not_to_use", "hardware"):
        assert preset.meta[key] in shown, key
    cites = table(at, "Key", "Why")
    assert list(cites["Key"]) == [j["key"] for j in preset.meta["justifications"]]
    assert not [c for c in at.code if c.language == "json"]  # the JSON is drawn once its expander is opened
    at.session_state["presets_json_box"] = True  # what opening it does
    at.run()
    code = next(c.value for c in at.code if c.language == "json")
    assert json.loads(code) == preset.config
    oks = [plain(s.value) for s in at.main.success]
    assert [f"DeepSpeed {v}: no errors or warnings." for v in preset.meta["verified_with"]] == oks


def test_diff_lists_the_keys_that_differ():
    at = app(page=PAGE)
    select(at, "presets_left", "zero2-bf16")
    select(at, "presets_right", "zero3-bf16")
    diff = table(at, "Key", without="Why")
    left = presets.load_preset("zero2-bf16", [presets.BUILTIN_DIR]).config
    right = presets.load_preset("zero3-bf16", [presets.BUILTIN_DIR]).config
    assert "zero_optimization.stage" in set(diff["Key"])
    row = diff[diff["Key"] == "zero_optimization.stage"].iloc[0]
    assert (row["zero2-bf16"], row["zero3-bf16"]) == (json.dumps(left["zero_optimization"]["stage"]),
                                                      json.dumps(right["zero_optimization"]["stage"]))
    # Only differing keys: every top-level section equal in both files is absent.
    same = [k for k in left if left[k] == right.get(k)]
    assert same and not any(k == s or k.startswith(s + ".") for k in diff["Key"] for s in same)


def test_memory_comparison_needs_a_model_and_differs_by_stage():
    at = app(page=PAGE)
    assert any("Choose a model" in i.value for i in at.info) and not at.get("vega_lite_chart")
    at = app(page=PAGE, **MODEL)
    select(at, "presets_left", "dp-bf16")
    select(at, "presets_right", "zero3-bf16")
    mem = table(at, "Config", "GPU GiB per GPU (peak)").set_index("Config")["GPU GiB per GPU (peak)"]
    assert list(mem.index) == ["dp-bf16", "zero3-bf16"]
    assert mem["zero3-bf16"] < mem["dp-bf16"]
    (chart,) = at.get("vega_lite_chart")
    frames = {d.name: pa.ipc.open_stream(io.BytesIO(d.data.data)).read_all().to_pandas() for d in chart.proto.datasets}
    drawn = frames["compare"].groupby("config")["gib"].sum()
    assert drawn.round(1).to_dict() == mem.to_dict()  # the bars add up to the table's peaks
    assert float(frames["capacity"]["capacity"].iloc[0]) == float(at.session_state["context"]["gpu_memory_gib"])


def test_load_replaces_config_baseline_and_target():
    at = app({"train_micro_batch_size_per_gpu": 3}, page=PAGE)
    select(at, "presets_selected", "hf-auto-zero3")
    at.button(key="presets_load").click().run()
    assert not at.exception
    preset = presets.load_preset("hf-auto-zero3", [presets.BUILTIN_DIR])
    assert at.session_state["config"] == preset.config
    assert at.session_state["baseline"] == preset.config
    assert at.session_state["context"]["target"] == "hf"
    assert any("hf-auto-zero3" in plain(s.value) for s in at.success)


def test_saving_without_a_team_folder_is_explained_and_disabled():
    at = app(page=PAGE)
    assert any("DSCONFIG_PRESETS_PATH" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "presets_save"]


def fill(at, **values):
    for key, value in values.items():
        widget = at.text_area(key=f"presets_save_{key}") if key in ("description", "when_to_use") else \
            at.text_input(key=f"presets_save_{key}")
        widget.set_value(value)
    at.button(key="presets_save").click().run()
    assert not at.exception, at.exception


def test_save_into_the_team_folder_appears_in_the_list(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1}, "team_key": [1]}
    at = app(config, page=PAGE)
    fill(at, title="Our ZeRO-1", description="What the team uses.", when_to_use="Always.", name="our-zero1")
    assert not at.error, [e.value for e in at.error]
    saved = presets.load_preset("our-zero1", presets.env_search_path())
    assert saved.config == config and not saved.builtin
    assert saved.meta["title"] == "Our ZeRO-1" and saved.meta["when_to_use"] == "Always."
    assert "our-zero1" in gallery(at)
    assert "our-zero1" in [p.name for p in presets.list_presets(presets.env_search_path())[0]]
    # Saving again without "replace" is refused; with it, the file is replaced.
    fill(at, title="Our ZeRO-1", description="v2", name="our-zero1")
    assert any("already exists" in plain(e.value) and "Replace a team preset of the same name" in plain(e.value)
               for e in at.error)
    at.checkbox(key="presets_save_overwrite").check()
    fill(at, title="Our ZeRO-1", description="v2", name="our-zero1")
    assert presets.load_preset("our-zero1", [tmp_path]).meta["description"] == "v2"


def test_a_save_that_would_hide_a_later_folders_preset_asks_for_replace(tmp_path: Path, monkeypatch):
    """The first folder wins on duplicate names: saving "shared" into team1 hid team2's "shared" unasked."""
    team1, team2 = tmp_path / "team1", tmp_path / "team2"
    team1.mkdir(), team2.mkdir()
    theirs = {"meta": {"title": "Shared", "description": "x", "target": "deepspeed"},
              "config": {"train_micro_batch_size_per_gpu": 1}}
    (team2 / "shared.json").write_text(json.dumps(theirs))
    monkeypatch.setenv(presets.ENV_VAR, f"{team1}{presets.os.pathsep}{team2}")
    at = app({"train_micro_batch_size_per_gpu": 2}, page=PAGE)
    fill(at, title="Mine", description="d", name="shared")
    assert any("already exists in" in plain(e.value) and str(team2) in plain(e.value) for e in at.error)
    assert not (team1 / "shared.json").exists()
    at.checkbox(key="presets_save_overwrite").check()
    fill(at, title="Mine", description="d", name="shared")
    assert (team1 / "shared.json").exists() and json.loads((team2 / "shared.json").read_text()) == theirs


def test_a_saved_preset_is_judged_by_the_release_it_was_written_for(tmp_path: Path, monkeypatch):
    """Saved with an empty verified_with, it was judged by 0.19.8, which refuses mics_shard_size that 0.17.0 reads."""
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    config = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3, "mics_shard_size": 8},
              "bf16": {"enabled": True}}
    at = app(config, page=PAGE, version="0.17.0")
    fill(at, title="Our MiCS", description="d", name="our-mics")
    saved = presets.load_preset("our-mics", [tmp_path])
    assert saved.meta["written_for"] == "0.17.0" and saved.verified_with == []
    ((version, report),) = presets.validate_preset(saved)
    assert version == "0.17.0" and not report.errors
    assert presets.validate_preset(presets.Preset("x", {}, config, tmp_path / "x.json", builtin=False))[0][0] == \
        core.versions.NEWEST


def test_a_search_path_that_names_a_file_is_said_so_on_save(tmp_path: Path, monkeypatch):
    not_a_folder = tmp_path / "presets.json"
    not_a_folder.write_text("{}")
    monkeypatch.setenv(presets.ENV_VAR, str(not_a_folder))
    at = app({"train_micro_batch_size_per_gpu": 2}, page=PAGE)
    fill(at, title="Mine", description="d", name="mine")
    assert any("is a file, not a preset folder" in plain(e.value) for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize("name", ["../../etc/passwd", "zero2-bf16", "a b"])
def test_hostile_or_builtin_names_are_refused_and_write_nothing(tmp_path: Path, monkeypatch, name):
    team = tmp_path / "team"
    team.mkdir()
    monkeypatch.setenv(presets.ENV_VAR, str(team))
    at = app(page=PAGE)
    before = sorted(tmp_path.rglob("*"))
    fill(at, title="Evil", description="x", name=name)
    errors = [plain(e.value) for e in at.error]
    assert errors and ("invalid preset name" in errors[0] or "built-in" in errors[0]), errors
    assert sorted(tmp_path.rglob("*")) == before
    assert sorted(p.stem for p in presets.BUILTIN_DIR.glob("*.json")) == BUILTINS


def test_broken_team_preset_is_listed_as_a_problem(tmp_path: Path, monkeypatch):
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "fine.json").write_text(json.dumps({"meta": {"title": "Fine", "description": "d",
                                                             "target": "deepspeed"},
                                                    "config": {"zero_optimization": {"stage": 2}}}))
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    at = app(page=PAGE)
    warnings = [plain(w.value) for w in at.warning]
    assert any("broken.json" in w and "not valid JSON" in w for w in warnings), warnings
    assert sorted(gallery(at)) == sorted([*BUILTINS, "fine"])


def test_hostile_metadata_is_shown_as_text(tmp_path: Path, monkeypatch):
    title = "[click](javascript:alert(1)) <img src=x onerror=alert(1)> :red[x]"
    (tmp_path / "evil.json").write_text(json.dumps({"meta": {"title": title, "description": "<script>x</script>",
                                                             "target": "deepspeed"}, "config": {}}))
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    at = app(page=PAGE)
    select(at, "presets_selected", "evil")
    heading = next(m.value for m in at.markdown if plain(m.value).startswith("#### "))
    assert plain(heading) == f"#### {title}"
    for char in "[]()<>:":
        assert f"\\{char}" in heading
    assert "<script>x</script>" in [t.value for t in at.text]


def test_odd_team_preset_never_crashes_the_page(tmp_path: Path, monkeypatch):
    meta = {"title": ["not", "text"], "description": 7, "target": "nowhere", "verified_with": {"a": 1},
            "justifications": [{"key": 1}, "x"], "when_to_use": None}
    config = {"zero_optimization": {"stage": "three", "offload_param": "cpu", "offload_optimizer": {"device": 5}},
              "bf16": {"enabled": "yes"}, "train_micro_batch_size_per_gpu": -4, "optimizer": [], "": {}}
    (tmp_path / "odd.json").write_text(json.dumps({"meta": meta, "config": config}))
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    at = app(page=PAGE, **MODEL)
    select(at, "presets_selected", "odd")
    select(at, "presets_left", "odd")
    select(at, "presets_right", "zero3-bf16")
    assert "odd" in gallery(at)
    assert any("meta.target" in plain(w.value) for w in at.warning)
    assert "zero_optimization.stage" in set(table(at, "Key", without="Why")["Key"])
    assert any("Cannot validate" in plain(e.value) and "nowhere" in plain(e.value) for e in at.error)
    assert len(table(at, "Config", "GPU GiB per GPU (peak)")) == 2


@pytest.mark.parametrize("verified_with", [[0.19], "0.19.8", None, [["x"]]], ids=repr)
def test_the_start_page_shows_a_team_preset_as_text_whatever_its_metadata(tmp_path: Path, monkeypatch,
                                                                          verified_with):
    """The Start page described the chosen preset from the raw metadata: a number in verified_with stopped the page
    (TypeError in str.join), a string was spelt out letter by letter, and Markdown from the file (remote images,
    links, headings) reached the page, which the Presets page already escaped."""
    meta = {"title": "Team", "target": "deepspeed", "verified_with": verified_with,
            "description": "![x](https://tracker.example/p.png) [update](https://evil.example)",
            "when_to_use": "# HUGE"}
    (tmp_path / "team-md.json").write_text(json.dumps({"meta": meta, "config": {"train_batch_size": 8}}))
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    at = app(page="pages/start.py")
    at.selectbox(key="start_preset").set_value("team-md").run()
    assert not at.exception, at.exception
    caption = next(c.value for c in at.caption if "verified with DeepSpeed" in c.value)
    assert plain(caption).endswith("0.19" if verified_with == [0.19] else "['x']" if verified_with == [["x"]]
                                   else "—")
    shown = [m.value for m in at.markdown if "example" in m.value or "HUGE" in m.value]
    assert len(shown) == 2 and all(plain(m) in (meta["description"], f"**When to use:** {meta['when_to_use']}")
                                   for m in shown)
    assert all("\\!\\[" in m or "\\#" in m for m in shown)


def test_listing_is_read_again_only_when_a_folder_changes(tmp_path: Path, monkeypatch):
    """``ui.preset_cache.listing``: the same folders with the same files are not read again; a new, rewritten
    (same size, new time) or removed file is seen at the next call."""
    import os

    from ui import preset_cache

    reads = []
    real = presets.list_presets
    monkeypatch.setattr(presets, "list_presets", lambda folders: reads.append(1) or real(folders))
    folders = [presets.BUILTIN_DIR, tmp_path]
    first = preset_cache.listing(folders)
    assert preset_cache.listing(folders) == first and len(reads) <= 1
    reads.clear()
    assert preset_cache.listing(folders) == first and reads == []
    text = presets.preset_text({"title": "T", "description": "d", "target": "deepspeed"}, {"gradient_clipping": 1})
    (tmp_path / "ours.json").write_text(text)
    assert "ours" in [p.name for p in preset_cache.listing(folders)[0]] and reads == [1]
    (tmp_path / "ours.json").write_text(text.replace('"T"', '"U"'))
    os.utime(tmp_path / "ours.json", ns=(1, 1))  # a new modification time, the same size
    assert [p.title for p in preset_cache.listing(folders)[0] if p.name == "ours"] == ["U"]
    (tmp_path / "ours.json").unlink()
    assert "ours" not in [p.name for p in preset_cache.listing(folders)[0]]
    assert preset_cache.listing([tmp_path / "missing"])[1] == (f"{tmp_path / 'missing'}: preset folder does not exist",)


def test_preset_reports_are_computed_once_per_content_and_gpu_count(monkeypatch):
    """``ui.preset_cache.reports`` gives ``validate_preset``'s reports, validating once per preset content and
    GPU count (the Presets page asked on every rerun), and raises its ValueError for an unknown release."""
    from ui import preset_cache

    calls = []
    real = presets.validate_preset
    monkeypatch.setattr(presets, "validate_preset", lambda p, **kw: calls.append(kw) or real(p, **kw))
    preset = presets.load_preset("zero2-bf16", [presets.BUILTIN_DIR])
    odd = presets.Preset(name="odd", meta=preset.meta | {"title": "renamed"},
                         config=preset.config | {"train_micro_batch_size_per_gpu": 3}, path=preset.path,
                         builtin=True)
    expected = [(v, r.findings) for v, r in real(odd, world_size=7)]
    got = [(v, r.findings) for v, r in preset_cache.reports(odd, 7)]
    assert got == expected and len(calls) == 1
    assert [(v, r.findings) for v, r in preset_cache.reports(odd, 7)] == expected and len(calls) == 1
    preset_cache.reports(odd, 8)
    assert len(calls) == 2
    bad = presets.Preset(name="bad", meta=preset.meta | {"verified_with": ["0.0.1"]}, config=preset.config,
                         path=preset.path, builtin=False)
    with pytest.raises(ValueError):
        preset_cache.reports(bad, 8)


def test_the_current_configs_derived_micro_batch_is_the_one_compared():
    """A config whose micro batch DeepSpeed derives (train_batch_size 64 / accumulation 2 / 8 GPUs = 4) was compared at
    an assumed micro batch 1 (38.9 GiB) while the sidebar beside it said micro batch 4 (76.9 GiB)."""
    config = {**presets.load_preset("zero2-bf16", [presets.BUILTIN_DIR]).config,
              "train_batch_size": 64, "gradient_accumulation_steps": 2}
    config.pop("train_micro_batch_size_per_gpu")
    at = app(config, page=PAGE, **MODEL, gpus_per_node=8, nodes=1)
    rows = table(at, "Config", "Micro batch used").set_index("Config")
    current = next(name for name in rows.index if "current" in name)
    assert str(rows.loc[current, "Micro batch used"]) == "4"


def test_the_memory_comparison_rounds_each_peak_to_the_side_of_its_verdict_and_says_what_does_not_fit():
    """A peak just over the GPU was rounded to one decimal below it ("79.1" beside "no" on a 79.15 GiB GPU)."""
    from ui import memory as ui_memory

    at = app(page=PAGE, **MODEL)
    context = dict(at.session_state["context"])
    peaks = {name: ui_memory.current_estimate(presets.load_preset(name, [presets.BUILTIN_DIR]).config,
                                              context).gpu_bytes / 2**30 for name in BUILTINS}
    name, peak = next((n, p) for n, p in peaks.items() if round(p, 1) < p)  # one decimal rounds it down
    capacity = (round(peak, 1) + peak) / 2  # under the peak, over its one-decimal rounding
    select(at, "presets_left", name)
    select(at, "presets_right", name)
    at.session_state["context"].update(gpu="Custom", gpu_memory_gib=capacity, cpu_ram_gib=1e6, nvme_gib=1e6)
    at.run()
    row = table(at, "Config", "GPU GiB per GPU (peak)").iloc[0]
    assert row["Fits"] == "no: GPU"
    assert row["GPU GiB per GPU (peak)"] > capacity, (row["GPU GiB per GPU (peak)"], capacity, peak)


@pytest.mark.parametrize(("config", "version"), [
    ({"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6], "min_gpus": 1,
                     "max_gpus": 10000, "version": 0.1}, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}},
     "0.19.7"),
    ({"train_batch_size": 64, "sequence_parallel_size": 2, "zero_optimization": {"stage": 1},
      "bf16": {"enabled": True}}, "0.16.9"),
], ids=["elastic", "sequence-parallel-before-0.17"])
def test_the_memory_comparison_uses_the_batch_the_release_resolves_as_the_headline_does(config, version):
    """The current config's row derived its micro batch without the release: an elastic config (micro batch 6 in
    the headline) was compared at "1 (assumed)", 28.2 GiB, "yes" beside the headline's "Does not fit"; a
    sequence_parallel_size that 0.16.9 ignores halved the data-parallel GPUs (micro batch 16 against the headline's
    8). Presets are resolved the same way."""
    from ui import memory as ui_memory
    from ui import preset_cache

    at = app(config, page=PAGE, version=version, **MODEL)
    context = dict(at.session_state["context"])
    report = core.validate(config, world_size=8, target="deepspeed", version=version)
    expected = ui_memory.current_estimate(config, context, report)
    row = table(at, "Config", "Micro batch used").set_index("Config").loc["(current config)"]
    assert int(row["Micro batch used"]) == report.batch.train_micro_batch_size_per_gpu
    assert float(row["GPU GiB per GPU (peak)"]) == pytest.approx(expected.gpu_bytes / 2**30, abs=0.1)
    assert (row["Fits"] == "yes") == expected.fits
    preset = presets.load_preset("zero3-bf16", [presets.BUILTIN_DIR]).config
    resolved = preset_cache.report_for(preset, 8, "deepspeed", version)
    assert resolved.batch == core.validate(preset, world_size=8, target="deepspeed", version=version).batch


def test_saving_without_a_title_or_description_names_the_form_fields_and_keeps_what_was_typed(tmp_path: Path,
                                                                                             monkeypatch):
    """An empty Title said "meta.title must be a non-empty text": the file's key, not the form's field."""
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path))
    at = app({"train_micro_batch_size_per_gpu": 2}, page=PAGE)
    fill(at, title="  ", description="", when_to_use="Always.", name="ours")
    assert [plain(e.value) for e in at.error] == ["Give the preset a Title and a Description: both are required."]
    assert at.text_area(key="presets_save_when_to_use").value == "Always."
    fill(at, title="Ours", description="")
    assert [plain(e.value) for e in at.error] == ["Give the preset a Description: both are required."]
    assert not list(tmp_path.iterdir())
