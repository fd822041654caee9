"""Release profiles (core.versions), version selection, and ``dsconfig versions`` / ``works_with``."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from core import presets, versions
from core.cli import main
from core.validate import validate
from core.versions.matrix import ReleaseVerdict, summarise, works_with

#: Every patch release on PyPI from 0.16.0 to 0.19.8.
EXPECTED = tuple(f"0.16.{i}" for i in range(10)) + tuple(f"0.17.{i}" for i in range(7)) + tuple(
    f"0.18.{i}" for i in range(10)) + tuple(f"0.19.{i}" for i in range(9))


def test_every_release_in_the_range_has_a_profile():
    assert versions.RELEASES == EXPECTED
    for release in versions.RELEASES:
        data = versions.profile(release)
        assert data["release"] == release
        assert "train_batch_size" in data["top_level_keys"]
        assert data["optimizers"] and data["schedulers"]


def test_keys_read_anywhere_are_the_union_of_every_release_and_only_that():
    anywhere = versions.top_level_keys_anywhere()
    for release in versions.RELEASES:
        for key in versions.profile(release)["top_level_keys"]:
            assert key in anywhere and versions.key_known(release, "", key)
    assert all(any(versions.key_known(r, "", key) for r in versions.RELEASES) for key in anywhere)
    assert "train_batch_size" in anywhere and "no_release_reads_this" not in anywhere
    assert versions.key_known(versions.NEWEST, "", "no_release_reads_this") is False


def test_profiles_record_what_changed_between_releases():
    # the 1-bit optimizers exist up to 0.19.7's predecessor and are gone in 0.19.8
    assert "onebitadam" in versions.optimizer_names("0.19.5")
    assert "onebitadam" not in versions.optimizer_names("0.19.8")
    # 0.19.5 OnebitAdam takes bias_correction (the truth bug the hand-typed list had)
    assert "bias_correction" in versions.optimizer_keywords("0.19.5", "onebitadam", "gpu")
    # keys 0.19.8 refuses on sight, with DeepSpeed's own message
    assert "amp" in versions.removed_top_level_keys("0.19.8")
    assert versions.removed_top_level_keys("0.16.0") == {}
    # pydantic sections: fp16 is read with dict.get in 0.16.9, a pydantic model in 0.19.8
    assert versions.section_strict("0.19.8", "fp16") is True
    assert versions.section_strict("0.16.9", "fp16") is False
    assert versions.section_strict("0.19.8", "aio") is None


def test_version_selection_accepts_any_release_and_names_the_nearest_otherwise():
    for release in ("0.16.0", "0.17.3", "0.18.7", "0.19.8"):
        assert validate({"train_batch_size": 1}, version=release).version == release
    with pytest.raises(ValueError, match=r"0\.15\.4.*nearest profile is 0\.16\.0"):
        validate({}, version="0.15.4")
    with pytest.raises(ValueError, match=r"nearest profile is 0\.19\.8"):
        validate({}, version="0.20.1")
    with pytest.raises(ValueError, match=r"nearest profile is 0\.17\.6"):
        validate({}, version="0.17.9")
    # a series names its newest release (it named 0.18.9, the release before the series, for "0.19")
    with pytest.raises(ValueError, match=r"nearest profile is 0\.19\.8"):
        validate({}, version="0.19")
    with pytest.raises(ValueError, match=r"nearest profile is 0\.16\.9"):
        validate({}, version="0.16")


def test_default_version_is_the_installed_deepspeed_from_metadata(monkeypatch):
    monkeypatch.setattr(metadata, "version", lambda name: "0.17.2")
    assert versions.default_version() == "0.17.2"
    assert validate({"train_batch_size": 1}).version == "0.17.2"
    assert versions.default_version_note() is None
    monkeypatch.setattr(metadata, "version", lambda name: "0.21.0+abc")
    assert versions.default_version() == versions.NEWEST
    # an installed release without a profile is judged as the nearest one, and the user is told
    monkeypatch.setattr(metadata, "version", lambda name: "0.15.4")
    assert versions.default_version() == versions.RELEASES[0] == "0.16.0"
    assert "DeepSpeed 0.15.4 has no profile" in versions.default_version_note()
    assert "judged as DeepSpeed 0.16.0" in versions.default_version_note()

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert versions.installed_deepspeed() is None
    assert versions.default_version() == versions.NEWEST
    assert versions.default_version_note() is None


def test_the_cli_says_which_release_judges_when_the_installed_one_has_no_profile(monkeypatch, tmp_path, capsys):
    from core.cli import main

    path = tmp_path / "ds.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 1}\n')
    monkeypatch.setattr(metadata, "version", lambda name: "0.15.4")
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert "(DeepSpeed 0.16.0," in captured.out
    assert "note: the installed DeepSpeed 0.15.4 has no profile" in captured.err
    assert main(["validate", "--deepspeed-version", "0.19.8", str(path)]) == 0
    assert "note:" not in capsys.readouterr().err


def test_a_key_added_later_is_unknown_before_and_fine_after():
    config = {"train_batch_size": 1, "compile": {"deepcompile": False}}
    first = versions.history("", "compile")[0]
    assert first is not None
    before = versions.RELEASES[versions.RELEASES.index(first) - 1]
    assert [f.code for f in validate(config, version=before).findings if f.path == "compile"] == [
        "keys.not-in-version-on"]
    assert validate(config, version=first).ok


def test_a_dict_get_section_key_renamed_between_releases_is_judged_by_each_release_reads():
    """aio is read with dict.get: thread_count up to the rename, intra_op_parallelism after it. Each release's
    recorded reads say which; before, thread_count was 'ignored' (rename suggested) in every release."""
    renamed = versions.history("aio", "intra_op_parallelism")[0]
    assert renamed is not None and versions.history("aio", "thread_count") == (None, renamed)
    last_old = versions.RELEASES[versions.RELEASES.index(renamed) - 1]
    old_key = {"train_batch_size": 1, "aio": {"thread_count": 4}}
    new_key = {"train_batch_size": 1, "aio": {"intra_op_parallelism": 4}}
    assert versions.key_known(last_old, "aio", "thread_count") is True
    assert versions.key_known(last_old, "aio", "intra_op_parallelism") is False
    assert versions.key_known(last_old, "aio", "block_size") is True
    assert validate(old_key, version=last_old).findings == ()  # read there: no rename to a key it ignores
    (finding,) = validate(new_key, version=last_old).findings
    assert (finding.code, finding.path) == ("keys.not-in-version-on", "aio.intra_op_parallelism")
    assert f"was added in DeepSpeed {renamed}" in finding.message and "silently ignores" in finding.message
    (finding,) = validate(old_key, version=renamed).findings
    assert finding.code == "keys.ignored" and finding.fix and "intra_op_parallelism" in finding.fix.description
    assert validate(new_key, version=renamed).findings == ()


def test_a_subsection_a_release_does_not_read_is_not_checked_there():
    """Dynamic batching came with a release of the 0.16 series; the releases before it never look at the
    subsection, so neither its assert (max_tokens) nor its int() conversions apply there."""
    added = versions.history("data_efficiency.data_sampling", "dynamic_batching")[0]
    assert added is not None and added != versions.RELEASES[0]
    before = versions.RELEASES[versions.RELEASES.index(added) - 1]
    assert versions.profile(before)["dynamic_batching_without_max_tokens"] is None  # the release's own parse
    assert "max_tokens" in versions.profile(added)["dynamic_batching_without_max_tokens"]
    config = {"train_batch_size": 1, "data_efficiency": {"enabled": True, "data_sampling": {
        "enabled": True, "dynamic_batching": {"enabled": True, "min_batch_size": "x"}}}}
    assert {f.code for f in validate(config, version=added).errors} == {
        "data-efficiency.max-tokens", "type.value_error"}
    (finding,) = validate(config, version=before).findings
    assert (finding.code, finding.severity) == ("keys.not-in-version-on", "warning")
    assert finding.path == "data_efficiency.data_sampling.dynamic_batching"
    # a key read only behind a switch is never recorded: the recordings do not call it unknown
    assert versions.key_known(added, "data_efficiency.data_sampling.dynamic_batching", "max_tokens") is None


def test_removed_zero_key_is_an_error_from_the_release_that_removed_it():
    config = {"train_batch_size": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 2}}
    _added, removed = versions.history("zero_optimization", "mics_shard_size")
    assert removed is not None
    last = versions.RELEASES[versions.RELEASES.index(removed) - 1]
    assert validate(config, version=last).ok
    # mics_shard_size 2 asks for MiCS (the default is -1): removing it is not safe
    assert "removed.enabled-section" in {f.code for f in validate(config, version=removed).errors}
    config["zero_optimization"]["mics_shard_size"] = -1
    assert "removed.key" in {f.code for f in validate(config, version=removed).errors}


def test_compression_shared_parameters_switched_on_fails_where_the_release_probe_says_so():
    """compression_training.shared_parameters is read (by mistake) as weight quantization's by the releases that read
    compression_training; the profiles record, per release, how switching it on ends the parse."""
    on = {"train_batch_size": 1, "compression_training": {"shared_parameters": {"enabled": True}}}
    eigen = {**on, "quantize_training": {"eigenvalue": {"enabled": True}}}
    reading = [r for r in versions.RELEASES if "compression_training" not in versions.removed_top_level_keys(r)]
    assert reading and reading[0] == versions.RELEASES[0]
    crashing = [r for r in reading if versions.compression_shared_failure(r, eigenvalue=False)]
    assert "0.16.9" in crashing and "0.19.6" not in crashing
    for release in reading:
        for config, eigenvalue in ((on, False), (eigen, True)):
            failure = versions.compression_shared_failure(release, eigenvalue=eigenvalue)
            found = [f for f in validate(config, version=release).findings if f.path == "compression_training."
                     "shared_parameters"]
            assert [f.code for f in found] == (["compression.shared-parameters-fails"] if failure else
                                               ["compression.shared-parameters"]), release
            if failure:
                assert failure in found[0].message and release in found[0].message
    # 0.19.6 fixed the NameError but still asserts MoQ eigenvalues off; the string "false" is truthy there
    assert versions.compression_shared_failure("0.19.6", eigenvalue=True).startswith("AssertionError")
    truthy = {"train_batch_size": 1, "compression_training": {"shared_parameters": {"enabled": "false"}}}
    assert "compression.shared-parameters-fails" in {f.code for f in validate(truthy, version="0.16.9").errors}
    off = {"train_batch_size": 1, "compression_training": {"shared_parameters": {"enabled": False}}}
    assert validate(off, version="0.16.9").ok
    # the releases that refuse compression_training say so once, with their own message
    assert "compression.shared-parameters-fails" not in {f.code for f in validate(on, version="0.19.8").findings}


def test_the_batch_check_divides_by_sequence_parallel_size_only_where_the_release_reads_it():
    """0.16.x takes the world size as it is (sequence_parallel_size arrived in 0.17.0), so the batch triangle and
    its fixes count every GPU there."""
    config = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 2}
    first = next(r for r in versions.RELEASES if versions.key_known(r, "", "sequence_parallel_size"))
    last_without = versions.RELEASES[versions.RELEASES.index(first) - 1]
    assert validate(config, world_size=8, version=first).ok
    old = validate(config, world_size=8, version=last_without)
    assert "batch.ga-positive" in {f.code for f in old.errors}
    assert all(f.fix.apply(config)["train_batch_size"] % 8 == 0 for f in old.errors if f.fix)
    assert not validate({**config, "sequence_parallel_size": 0}, world_size=4, version=last_without).errors
    # the Batch page's working GPU counts say the same as the validator, release by release
    from core.batch import valid_world_sizes

    for release in (first, last_without):
        listed = valid_world_sizes({**config, "train_batch_size": 3, "train_micro_batch_size_per_gpu": 1}, 12,
                                   release)
        whole_groups = 2 if release == first else 1  # where it is read, only whole sequence-parallel groups
        assert listed == [w for w in range(whole_groups, 13, whole_groups) if validate(
            {**config, "train_batch_size": 3, "train_micro_batch_size_per_gpu": 1}, world_size=w, version=release).ok]
    # 0 cannot divide: 0.17.0 catches the error and checks the batch on 1 GPU (16 = 4 x 4 x 1), the newest stops
    swallowed = validate({**config, "sequence_parallel_size": 0}, world_size=4, version=first)
    assert not swallowed.errors and "misc.sequence-parallel-swallowed" in {f.code for f in swallowed.warnings}
    assert validate({**config, "sequence_parallel_size": 0}, world_size=4, version=versions.NEWEST).errors


def test_works_with_lists_every_release_and_explains_the_boundary():
    config = {"train_batch_size": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 2}}
    result = works_with(config)
    assert [v.version for v in result.verdicts] == list(versions.RELEASES)
    _added, removed = versions.history("zero_optimization", "mics_shard_size")
    assert result.summary.startswith(f"works with {versions.RELEASES[0]} – ")
    assert f"{removed} removed `zero_optimization.mics_shard_size`" in result.summary


def test_summary_of_gaps_and_of_nothing():
    verdicts = [ReleaseVerdict("1", False, "x.y", "a", "m"), ReleaseVerdict("2", True), ReleaseVerdict("3", True),
                ReleaseVerdict("4", False, "removed.key", "k", "m")]
    assert summarise(verdicts) == "works with 2 – 3; 1: x.y at `a`; 4 removed `k`"
    assert summarise([ReleaseVerdict("1", True)]) == "works with 1 (every profiled release)"
    assert summarise([ReleaseVerdict("1", False, "c", "p", "m")]).startswith("works with no release")


def test_cli_versions_text_and_json(tmp_path, capsys):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}))
    assert main(["versions", str(path), "--world-size", "4"]) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == len(versions.RELEASES) + 1
    assert "every profiled release" in text
    assert main(["versions", str(path), "--format", "json", "--target", "hf"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["version"] for r in data["releases"]] == list(versions.RELEASES)
    assert all(r["ok"] for r in data["releases"])


def test_cli_versions_on_several_gpu_counts_needs_each(tmp_path, capsys):
    """DeepSpeed's documented elastic section picks 1680: 8 GPUs work, 16 do not, so no release works on both."""
    path = tmp_path / "elastic.json"
    path.write_text(json.dumps({"elasticity": {"enabled": True, "max_train_batch_size": 2000,
                                               "micro_batch_sizes": [2, 4, 6], "version": 0.1}}))
    assert main(["versions", str(path), "--world-size", "8"]) == 0
    alone = capsys.readouterr().out
    assert "0.19.7   ok" in alone and "GPU(s)" not in alone and alone.splitlines()[-1].endswith("checked on 8 GPUs")
    assert main(["versions", str(path), "--world-size", "8,16"]) == 1
    both = capsys.readouterr().out
    assert "0.19.7   on 16 GPU(s): elasticity.world-size" in both
    assert "works with no release" in both and "on 16 GPU(s)" in both.splitlines()[-1]
    assert main(["versions", str(path), "--world-size", "8", "--world-size", "16", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    by_release = {r["version"]: r for r in data["releases"]}
    assert by_release["0.19.7"]["world_size"] == 16 and by_release["0.19.7"]["code"] == "elasticity.world-size"
    assert by_release["0.19.8"]["world_size"] == 8  # it refuses the section on the first count already
    assert main(["versions", str(path), "--world-size", "8,12", "--format", "json"]) == 0
    assert all("world_size" not in r for r in json.loads(capsys.readouterr().out)["releases"] if r["ok"])


def test_cli_versions_says_the_gpu_count_it_checked_in_text_and_json(tmp_path, capsys):
    """train_batch_size 6 works on 1 GPU and on no release at 8: the verdict flips with the GPU count, which
    neither the text nor the JSON named when --world-size was left out (1 checked silently)."""
    path = tmp_path / "tb6.json"
    path.write_text(json.dumps({"train_batch_size": 6, "bf16": {"enabled": True}}))
    assert main(["versions", str(path)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "every profiled release" in last and "checked on 1 GPU, the default (--world-size N" in last
    assert main(["versions", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["world_sizes"] == [1] and data["world_size_given"] is False
    assert main(["versions", str(path), "--world-size", "8", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["world_sizes"] == [8] and data["world_size_given"] is True
    assert not any(r["ok"] for r in data["releases"])
    assert main(["versions", str(path), "--world-size", "8,16"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("; checked on 8, 16 GPUs")


def test_cli_validate_accepts_any_release_and_refuses_others_clearly(tmp_path, capsys):
    path = tmp_path / "ds.json"
    path.write_text('{"train_batch_size": 1}')
    assert main(["validate", str(path), "--deepspeed-version", "0.17.4"]) == 0
    assert "DeepSpeed 0.17.4" in capsys.readouterr().out
    assert main(["validate", str(path), "--deepspeed-version", "0.12.0"]) == 2
    err = capsys.readouterr().err
    assert "nearest profile is 0.16.0" in err and "Traceback" not in err


def test_an_unknown_key_is_suggested_what_each_release_reads_whatever_was_checked_before():
    """The did-you-mean of an unknown key, and its warning, are shared between releases with the same keys
    (checking 36 releases repeated them); a release that reads other keys still gets its own suggestion, in
    whichever order the releases are checked."""
    oldest, newest = versions.RELEASES[0], versions.RELEASES[-1]
    config = {"compil": {}, "timerss": {}, "tensor_paralel": {"tp_size": 2}}

    def suggestions(version: str) -> dict[str, str | None]:
        return {f.path: f.suggestion for f in validate(config, version=version).findings
                if f.code == "keys.unknown-top-level"}

    first = {v: suggestions(v) for v in (oldest, newest, oldest)}
    again = {v: suggestions(v) for v in (newest, oldest, newest)}
    assert first == again
    assert first[newest]["compil"] == "Did you mean `compile`?"
    assert first[newest]["tensor_paralel"] == "Did you mean `tensor_parallel`?"
    assert "Did you mean" not in first[oldest]["compil"] and "Did you mean" not in first[oldest]["tensor_paralel"]
    assert first[oldest]["timerss"] == first[newest]["timerss"] == "Did you mean `timers`?"
    verdicts = works_with(config)
    assert [v.ok for v in verdicts.verdicts] == [validate(config, version=r).ok for r in versions.RELEASES]


def test_a_release_written_as_a_git_tag_is_read_and_a_non_release_gets_no_nearest():
    """`--deepspeed-version v0.17.0` and `abc` both got "the nearest profile is 0.19.8"."""
    assert versions.check_version("v0.17.0") == "0.17.0"
    with pytest.raises(ValueError) as raised:
        versions.check_version("abc")
    assert "nearest" not in str(raised.value)
    with pytest.raises(ValueError, match=r"The nearest profile is 0\.16\.0"):
        versions.check_version("0.12.0")


def _master_codes(config: dict, version: str | None = None) -> list:
    return [f for f in validate(config, version=version).findings if f.code == "precision.master-weights-offload"]


def test_16bit_master_weights_need_the_optimizer_offloaded_as_cpu_adam_where_the_zero_optimizer_checks_it():
    """DeepSpeed 0.19.8 refuses bf16_master_weights_and_grads without ZeRO-Offload and DeepSpeedCPUAdam at
    deepspeed.initialize; validate said OK (tests/oracle/initialize_cases.py runs the real thing)."""
    adamw = {"type": "AdamW", "params": {"lr": 1e-4}}
    base = {"train_batch_size": 1, "optimizer": adamw, "zero_optimization": {"stage": 2},
            "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}
    (finding,) = _master_codes(base)
    assert finding.path == "bf16.bf16_master_weights_and_grads" and finding.severity == "error"
    assert "Master weights feature requires ZeRO-2 Offload with DeepSpeedCPUAdam" in finding.message
    assert "bf16_optimizer_states true" in finding.suggestion
    offloaded = {**base, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    assert _master_codes(offloaded) == []
    torch_adamw = {**offloaded, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}}
    (finding,) = _master_codes(torch_adamw)
    assert "offloaded but is AdamW" in finding.message
    assert _master_codes({**base, "bf16": {**base["bf16"], "bf16_optimizer_states": True}}) == []
    client = {key: value for key, value in base.items() if key != "optimizer"}
    assert _master_codes(client) == []  # a client optimizer: its class is not known here
    bf16_optimizer = {**base, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "fp32"}}
    assert _master_codes(bf16_optimizer) == []  # BF16_Optimizer is not given the flags
    # a release without bf16 master weights ignores the key; the first that reads it checks it
    first = versions.history("bf16", "bf16_master_weights_and_grads")[0]
    assert first is not None
    assert _master_codes(base, versions.RELEASES[versions.RELEASES.index(first) - 1]) == []
    assert len(_master_codes(base, first)) == 1


def test_fp16_master_weights_need_the_offload_in_every_release_each_with_its_own_message():
    config = {"train_batch_size": 1, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
              "zero_optimization": {"stage": 2}, "fp16": {"enabled": True, "fp16_master_weights_and_grads": True}}
    said = {}
    for release in versions.RELEASES:
        found = _master_codes(config, release)
        assert len(found) == 1, release
        said[release] = found[0].message
    assert "Either disable fp16_master_weights_and_gradients" in said[versions.RELEASES[0]]
    assert "Master weights feature requires ZeRO-2 Offload" in said[versions.NEWEST]
    fine = {**config, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    assert all(_master_codes(fine, r) == [] for r in versions.RELEASES)


def test_a_rule_on_a_key_the_release_ignores_stays_quiet():
    """data_types.param_dtype is read from 0.19.2: before, the initialize rule called a conflicting value an
    error while the key check said the release silently ignores it."""
    config = {"train_batch_size": 1, "data_types": {"param_dtype": "bf16"}}
    first = versions.history("data_types", "param_dtype")[0]
    assert first is not None
    before = versions.RELEASES[versions.RELEASES.index(first) - 1]
    assert [(f.code, f.severity) for f in validate(config, version=before).findings] == [
        ("keys.not-in-version-on", "warning")]
    assert "engine.param-dtype-conflict" in validate(config, version=first).codes()


def test_a_key_read_only_behind_an_off_switch_is_not_type_checked():
    """0.16.x reads fp16's loss-scale keys only when fp16 is on (its recorded reads of an empty fp16: `enabled`):
    with fp16 off, a wrong type there was 'type.unchecked: surfaces later, in training' beside
    'precision.loss-scale-unused: they do nothing'. Releases that parse fp16 with pydantic refuse it regardless."""
    off = {"train_batch_size": 8, "fp16": {"enabled": False, "loss_scale": "x"}}
    lenient = next(r for r in versions.RELEASES if versions.section_strict(r, "fp16") is False)
    assert versions.read_behind_switch(lenient, "fp16", "loss_scale")
    assert validate(off, version=lenient).codes() == {"precision.loss-scale-unused"}
    assert "type.unchecked" in validate({**off, "fp16": {"enabled": True, "loss_scale": "x"}}, version=lenient).codes()
    assert "type.value_error" in validate(off, version=versions.NEWEST).codes()


def test_bf16_master_weight_keys_mean_nothing_where_the_release_ignores_them():
    """0.16.x read bf16 with dict.get and never look up the master-weights pair (real proof in
    tests/test_versions_truth.py): the validator warns that they are ignored and the config's meaning (which the
    memory model sizes) keeps fp32 master weights there; 0.19.8 reads them."""
    from core.effective import effective

    config = {"train_batch_size": 8, "zero_optimization": {"stage": 2},
              "bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}
    old = effective(config, "0.16.9")
    assert (old.bf16_master_weights_and_grads, old.bf16_optimizer_states, old.fp32_optimizer_states) == (
        False, False, True)
    assert {f.path for f in validate(config, version="0.16.9").findings if f.code == "keys.not-in-version-on"} == {
        "bf16.bf16_master_weights_and_grads", "bf16.bf16_optimizer_states"}
    new = effective(config, "0.19.8")
    assert (new.bf16_master_weights_and_grads, new.bf16_optimizer_states, new.fp32_optimizer_states) == (
        True, True, False)
    # fp16 is read with dict.get there too, but every key of the later model is looked up once fp16 is on
    assert versions.profile("0.16.9")["dict_section_ignored"]["fp16"] == []


def test_fp16_and_bf16_both_auto_are_one_precision_under_the_hf_trainer_in_every_release():
    """Releases up to 0.17.0 read a raw "auto" as on (dict.get), so for plain DeepSpeed both "auto" are two enabled
    precisions; under the HF Trainer they are filled from --fp16 / --bf16 first, at most one of them true. The
    standard HF config (and the hf-auto presets) was refused there with target hf."""
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "train_batch_size": "auto", "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}

    def both_on(version: str, target: str) -> bool:
        return "precision.fp16-and-bf16" in validate(config, version=version, target=target).codes()

    read_raw = [r for r in versions.RELEASES if both_on(r, "deepspeed")]
    assert "0.16.9" in read_raw and versions.NEWEST not in read_raw  # the case exists for plain DeepSpeed
    assert not [r for r in versions.RELEASES if both_on(r, "hf")]
    # an explicit second precision under the Trainer is still two
    explicit = {**config, "fp16": {"enabled": True}, "bf16": {"enabled": True}}
    assert "precision.fp16-and-bf16" in validate(explicit, version="0.16.9", target="hf").codes()
    hf_presets = [p for p in presets.list_presets([presets.BUILTIN_DIR])[0] if p.target == "hf"]
    assert hf_presets
    for preset in hf_presets:
        for release in versions.RELEASES:
            errors = [f.code for f in validate(preset.config, version=release, target="hf").errors]
            assert not errors, (preset.name, release, errors)
