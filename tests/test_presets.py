"""The built-in presets and core.presets: metadata, validation, round trips, team folders, hostile names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import dump_config, load_config, validate
from core.findings import has_path
from core.presets import (
    BUILTIN_DIR,
    MAX_PRESET_BYTES,
    Preset,
    PresetError,
    check_name,
    env_search_path,
    facets,
    folders_signature,
    list_presets,
    load_preset,
    meta_problems,
    parse_preset,
    save_preset,
    search_path,
    suggest_name,
    validate_preset,
)
from tests.conftest import REFERENCE_DIR

BUILTINS, BUILTIN_PROBLEMS = list_presets([BUILTIN_DIR])
NAMES = [p.name for p in BUILTINS]

#: What issue 5 requires the library to cover, as facets (name -> expected facets subset).
REQUIRED = {
    "dp-bf16": {"stage": 0, "precision": "bf16", "offload": "none"},
    "zero1-bf16": {"stage": 1},
    "zero2-bf16": {"stage": 2, "precision": "bf16", "offload": "none"},
    "zero2-fp16": {"stage": 2, "precision": "fp16"},
    "zero2-offload-cpu": {"stage": 2, "offload": "cpu"},
    "zero3-bf16": {"stage": 3, "precision": "bf16", "offload": "none"},
    "zero3-offload-cpu": {"stage": 3, "offload": "cpu"},
    "zero-infinity-nvme": {"stage": 3, "offload": "nvme"},
    "zeropp-multinode": {"stage": 3, "zeropp": True},
    "hf-auto-zero2": {"stage": 2, "runtime": "hf", "precision": "auto"},
    "hf-auto-zero3": {"stage": 3, "runtime": "hf", "precision": "auto"},
    "single-gpu-lowmem": {"offload": "cpu"},
    "monitoring-rich": {},
}


def test_library_is_complete():
    assert not BUILTIN_PROBLEMS
    assert len(BUILTINS) >= 12
    assert set(REQUIRED) <= set(NAMES)
    for name, expected in REQUIRED.items():
        got = facets(load_preset(name, [BUILTIN_DIR]))
        assert {k: got[k] for k in expected} == expected, name
        assert got["builtin"] is True


def test_fp16_preset_uses_dynamic_loss_scaling():
    cfg = load_preset("zero2-fp16", [BUILTIN_DIR]).config
    assert cfg["fp16"]["enabled"] is True and cfg["fp16"]["loss_scale"] == 0


def test_nvme_preset_tunes_aio():
    cfg = load_preset("zero-infinity-nvme", [BUILTIN_DIR]).config
    zero = cfg["zero_optimization"]
    assert zero["offload_param"]["device"] == zero["offload_optimizer"]["device"] == "nvme"
    assert cfg["aio"]["queue_depth"] != 8 and cfg["aio"]["intra_op_parallelism"] > 1  # tuned, not defaults


def test_zeropp_has_all_three():
    zero = load_preset("zeropp-multinode", [BUILTIN_DIR]).config["zero_optimization"]
    assert zero["zero_hpz_partition_size"] > 1 and zero["zero_quantized_weights"] and zero["zero_quantized_gradients"]


def test_monitoring_preset_has_every_monitor():
    cfg = load_preset("monitoring-rich", [BUILTIN_DIR]).config
    for section in ("tensorboard", "wandb", "csv_monitor", "flops_profiler"):
        assert cfg[section]["enabled"] is True, section


def test_hf_zero3_buckets_are_auto():
    zero = load_preset("hf-auto-zero3", [BUILTIN_DIR]).config["zero_optimization"]
    for key in ("reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold"):
        assert zero[key] == "auto"


@pytest.mark.parametrize("name", NAMES)
def test_metadata_complete(name):
    preset = load_preset(name, [BUILTIN_DIR])
    assert meta_problems(preset.meta) == []
    assert "0.19.8" in preset.meta["verified_with"]


def _headings(doc: str) -> str:
    return (REFERENCE_DIR / doc).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_justifications_cite_real_sections_and_keys(name):
    preset = load_preset(name, [BUILTIN_DIR])
    justified: set[str] = set()
    for item in preset.meta["justifications"]:
        assert (REFERENCE_DIR / item["doc"]).is_file(), item["doc"]
        assert item["section"] in _headings(item["doc"]), f"{item['section']!r} not in {item['doc']}"
        assert has_path(preset.config, item["key"]), f"{item['key']} is not in the config"
        justified.add(item["key"].split(".")[0])
    # every top-level section of the config is explained
    assert set(preset.config) <= justified, set(preset.config) - justified


@pytest.mark.parametrize("name", NAMES)
def test_every_zero_key_is_justified(name):
    """Each key set under zero_optimization (the part with real choices) has its own justification."""
    preset = load_preset(name, [BUILTIN_DIR])
    keys = {item["key"] for item in preset.meta["justifications"]}
    zero = preset.config.get("zero_optimization", {})
    for key, value in zero.items():
        if isinstance(value, dict):
            for sub in value:
                path = f"zero_optimization.{key}.{sub}"
                assert path in keys or f"zero_optimization.{key}" in keys, path
        else:
            assert f"zero_optimization.{key}" in keys, key


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("world_size", [1, 8, 16])
def test_validates_without_error(name, world_size):
    preset = load_preset(name, [BUILTIN_DIR])
    for version, report in validate_preset(preset, world_size=world_size):
        assert report.ok, (version, [(f.code, f.path, f.message) for f in report.errors])
        assert report.target == preset.target


@pytest.mark.parametrize("name", [n for n in NAMES if load_preset(n, [BUILTIN_DIR]).target == "hf"])
def test_hf_preset_fails_plain_deepspeed_validation(name):
    """Sanity check of the target: the same file with "auto" batch values is an error for plain DeepSpeed."""
    preset = load_preset(name, [BUILTIN_DIR])
    assert not validate(preset.config, target="deepspeed").ok


@pytest.mark.parametrize("name", NAMES)
def test_round_trips_through_load_dump(name):
    preset = load_preset(name, [BUILTIN_DIR])
    text = dump_config(preset.config)
    assert load_config(text) == preset.config
    assert parse_preset(preset.path.read_text(), name=name).config == preset.config


@pytest.mark.parametrize("name", NAMES)
def test_matches_json_schema(name):
    core_jsonschema = pytest.importorskip("core.jsonschema")
    jsonschema = pytest.importorskip("jsonschema")
    preset = load_preset(name, [BUILTIN_DIR])
    for version in preset.meta["verified_with"]:
        schema = core_jsonschema.json_schema(version, target=preset.target)
        jsonschema.validate(preset.config, schema)


# ---------------------------------------------------------------- team folders


META = {"title": "Team ZeRO-2", "description": "Our tuned ZeRO-2.", "target": "deepspeed"}


def test_save_then_list_and_load(tmp_path):
    cfg = load_preset("zero2-bf16", [BUILTIN_DIR]).config
    path = save_preset("team-z2", cfg, META, tmp_path)
    assert path == tmp_path / "team-z2.json"
    presets, problems = list_presets(search_path([tmp_path]))
    assert problems == []
    names = [p.name for p in presets]
    assert "team-z2" in names and set(NAMES) <= set(names)
    loaded = load_preset("team-z2", search_path([tmp_path]))
    assert loaded.config == cfg and loaded.meta == META and loaded.builtin is False
    assert facets(loaded)["builtin"] is False
    # builtins are listed first
    assert [p.builtin for p in presets] == sorted((p.builtin for p in presets), reverse=True)


def test_save_refuses_overwrite_unless_asked(tmp_path):
    save_preset("mine", {"a": 1}, META, tmp_path)
    with pytest.raises(PresetError, match="already exists"):
        save_preset("mine", {"a": 2}, META, tmp_path)
    save_preset("mine", {"a": 2}, META, tmp_path, overwrite=True)
    assert load_preset("mine", [tmp_path]).config == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["mine.json"]  # no temp file left behind


def test_save_refuses_builtins(tmp_path):
    with pytest.raises(PresetError, match="built-in"):
        save_preset("zero2-bf16", {}, META, tmp_path)
    with pytest.raises(PresetError, match="read-only"):
        save_preset("new-one", {}, META, BUILTIN_DIR)


def test_save_refuses_incomplete_meta_and_bad_content(tmp_path):
    with pytest.raises(PresetError, match=r"meta\.title"):
        save_preset("x", {}, {"description": "d", "target": "deepspeed"}, tmp_path)
    with pytest.raises(PresetError, match=r"meta\.target"):
        save_preset("x", {}, {**META, "target": "megatron"}, tmp_path)
    with pytest.raises(PresetError, match="JSON"):
        save_preset("x", {"v": float("nan")}, META, tmp_path)
    with pytest.raises(PresetError, match="limit"):
        save_preset("x", {"v": "a" * (MAX_PRESET_BYTES + 1)}, META, tmp_path)
    with pytest.raises(PresetError, match="does not exist"):
        save_preset("x", {}, META, tmp_path / "missing")
    assert list(tmp_path.iterdir()) == []


def test_builtin_wins_over_team_copy(tmp_path):
    (tmp_path / "zero2-bf16.json").write_text(json.dumps({"meta": META, "config": {"evil": True}}))
    presets, problems = list_presets(search_path([tmp_path]))
    assert next(p for p in presets if p.name == "zero2-bf16").builtin
    assert any("name of a built-in preset" in p and "rename it" in p for p in problems)
    assert "evil" not in load_preset("zero2-bf16", search_path([tmp_path])).config


def test_a_broken_file_gives_way_to_a_later_folder_for_both_list_and_load(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "team-zero2.json").write_text("{broken")
    (second / "team-zero2.json").write_text(json.dumps({"meta": {**META, "title": "B"}, "config": {}}))
    listed, problems = list_presets([first, second])
    assert [p.path for p in listed if p.name == "team-zero2"] == [second / "team-zero2.json"]
    assert any(str(first / "team-zero2.json") in problem for problem in problems)
    assert load_preset("team-zero2", [first, second]).path == second / "team-zero2.json"
    with pytest.raises(PresetError, match="not valid JSON"):  # only a broken one: its own problem
        load_preset("team-zero2", [first])


def test_a_dangling_link_leaves_the_folder_signature_following_the_other_files(tmp_path):
    """The app caches the listing on this signature: a dangling symlink used to make it one constant error, so
    presets added later never showed."""
    (tmp_path / "old-link.json").symlink_to(tmp_path / "gone.json")
    before = folders_signature([tmp_path])
    (tmp_path / "team-new.json").write_text(json.dumps({"meta": META, "config": {}}))
    after = folders_signature([tmp_path])
    assert before != after and "team-new.json" in {entry[0] for entry in after[0][1]}


def test_broken_files_are_reported_not_raised(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "wrong-shape.json").write_text('{"config": {}}')
    (tmp_path / "Bad Name.json").write_text(json.dumps({"meta": META, "config": {}}))
    (tmp_path / "huge.json").write_text(" " * (MAX_PRESET_BYTES + 1))
    (tmp_path / "nan.json").write_text('{"meta": {}, "config": {"x": NaN}}')
    (tmp_path / "link.json").symlink_to("/etc/hostname")
    # the last of two values silently won; a named pipe blocked the listing (and the app's Start page) for ever
    (tmp_path / "dup.json").write_text('{"meta": {}, "config": {"train_batch_size": 8, "train_batch_size": 16}}')
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "good.json").write_text(json.dumps({"meta": META, "config": {}}))
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"meta": META, "config": {}}).encode())
    presets, problems = list_presets([tmp_path])
    assert [p.name for p in presets] == ["bom", "good"]
    assert len(problems) == 8
    for fragment in ("not valid JSON", '"meta"', "invalid preset name 'Bad Name': use 1-64", "limit", "NaN",
                     "symbolic link",
                     "the key 'train_batch_size' appears twice", "pipe.json: not a regular file"):
        assert any(fragment in p for p in problems), fragment
    with pytest.raises(PresetError, match="limit"):
        load_preset("huge", [tmp_path])


def test_a_preset_path_entry_that_is_not_a_folder_is_named_for_what_it_is(tmp_path):
    """A looping link, a dangling link and a file were all reported as "preset folder does not exist"; a file
    name such as Zero2.json got no reason and no rename."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "afile").write_text("{}")
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "Zero2.json").write_text(json.dumps({"meta": META, "config": {}}))
    _, problems = list_presets([tmp_path / name for name in ("loop", "dangling", "afile", "team", "missing")])
    assert problems == [f"{tmp_path / 'loop'}: preset folder is a symbolic link that loops; point it at a folder",
                        f"{tmp_path / 'dangling'}: preset folder is a symbolic link to nothing; point it at a folder",
                        f"{tmp_path / 'afile'}: is a file, not a preset folder; give the folder that holds the "
                        "preset .json files", problems[3], f"{tmp_path / 'missing'}: preset folder does not exist"]
    assert "ignored" in problems[3] and "did you mean 'zero2'?" in problems[3]


def test_missing_folder_reported_and_unknown_name(tmp_path):
    _, problems = list_presets(search_path([tmp_path / "nope"]))
    assert any("does not exist" in p for p in problems)
    with pytest.raises(PresetError, match=r"no preset named .nope.*zero2-bf16"):
        load_preset("nope", search_path([]))


def test_env_search_path(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {"DSCONFIG_PRESETS_PATH": os.pathsep.join([str(a), "", str(b), str(a)])}
    assert env_search_path(env) == [BUILTIN_DIR, a, b]
    assert env_search_path({}) == [BUILTIN_DIR]
    save_preset("in-b", {}, META, b)
    assert "in-b" in [p.name for p in list_presets(env_search_path(env))[0]]


# ---------------------------------------------------------------- hostile names

HOSTILE = [
    "../../etc/passwd", "/etc/passwd", "..", ".", "", "a/b", "a\\b", "a\x00b", "name.json", "UPPER", " lead",
    "trail ", "-dash-first", "_under", "a" * 65, "é", "ａ", "x\n", "\u2028", "..\\..\\win", "~/x", "$HOME",
    "con:", "a.b",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_refused(name, tmp_path):
    with pytest.raises(PresetError, match="invalid preset name"):
        check_name(name)
    with pytest.raises(PresetError):
        save_preset(name, {}, META, tmp_path)
    with pytest.raises(PresetError):
        load_preset(name, [tmp_path])
    assert list(tmp_path.iterdir()) == []


def test_a_name_in_capitals_is_refused_with_its_lower_case():
    with pytest.raises(PresetError, match="did you mean 'zero3-bf16'"):
        check_name("ZERO3-BF16")
    with pytest.raises(PresetError) as refused:
        check_name("../ZERO3")
    assert "did you mean" not in str(refused.value)


@pytest.mark.parametrize("name", [None, 3, b"abc", ["a"]])
def test_non_text_names_refused(name):
    with pytest.raises(PresetError, match="must be text"):
        check_name(name)


@given(st.text(max_size=80))
@settings(max_examples=400, deadline=None)
def test_any_name_is_safe_or_refused(name):
    """Whatever the text, a name is either refused or stays a plain file name in the folder."""
    try:
        check_name(name)
    except PresetError:
        return
    assert "/" not in name and "\\" not in name and "." not in name and "\x00" not in name
    assert name == name.strip() and 1 <= len(name) <= 64
    folder = Path("/tmp/presets-root")
    assert (folder / f"{name}.json").resolve().parent == folder.resolve()


@given(st.text(max_size=100))
@settings(max_examples=200, deadline=None)
def test_suggest_name_always_valid(text):
    assert check_name(suggest_name(text))


@given(st.binary(max_size=300) | st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_parse_preset_never_crashes(raw):
    try:
        preset = parse_preset(raw, name="fuzz")
    except PresetError as exc:
        assert "fuzz" in str(exc)
        return
    assert isinstance(preset, Preset) and isinstance(preset.config, dict)


@pytest.mark.parametrize(("name", "model", "gpus"), [
    ("zero2-offload-cpu", "meta-llama/Llama-2-7b-hf", 8), ("zero2-offload-cpu", "meta-llama/Llama-2-7b-hf", 1),
    ("zero3-offload-cpu", "meta-llama/Llama-2-70b-hf", 8), ("single-gpu-lowmem", "meta-llama/Llama-2-13b-hf", 1)])
def test_the_cpu_ram_a_preset_asks_for_is_the_memory_models(name, model, gpus):
    """The offload presets' hardware notes said 16-18 bytes of CPU RAM per parameter where the memory model needs
    20, or 32 on 8 GPUs while each process builds the fp32 model: with the RAM they asked for, it did not fit."""
    from core import memory, models
    from core.memory.result import Hardware, Shape

    preset = load_preset(name, [BUILTIN_DIR])
    spec = models.get_spec(model)
    allowance = 4 * 2**30 * gpus  # the model's process allowance per rank, not part of the per-parameter figure
    estimate = memory.estimate(preset.config, spec, Hardware(gpus_per_node=gpus, cpu_ram_per_node_bytes=10**14),
                               Shape(micro_batch=1, seq_len=512, recompute="full"))
    per_param = (estimate.cpu_bytes_per_node - allowance) / spec.total_params
    assert f"{per_param:.0f} bytes x parameters" in preset.meta["hardware"], (per_param, preset.meta["hardware"])
