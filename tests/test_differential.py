"""Differential tests: ``core.validate`` against the real DeepSpeed ``DeepSpeedConfig``.

For every corpus file and its generated mutations (``tests/oracle/mutations.py``), at world sizes 1, 2, 8
and 64: no config DeepSpeed rejects passes without an error, and no config DeepSpeed accepts gets an
error, except errors whose code is in ``core.validate.INITIALIZE_TIME_CODES`` (DeepSpeed only rejects
those at ``deepspeed.initialize``; ``tests/test_initialize_failures.py`` proves each) and the documented
divergences in ``tests.oracle.differential.DOCUMENTED_DIVERGENCES``. DeepSpeed 0.19.8 runs in-process; 0.19.5
runs in a worker subprocess on every corpus file and a deterministic sample of the mutations.

One test per corpus file (all its mutations and world sizes); a failure lists every disagreement of
the file. ``scripts/differential_report.py`` prints the same comparison as a summary table.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle.corpus import CORPUS_DIR, corpus_entries
from tests.oracle.differential import (
    DISAGREEMENTS,
    WORLD_SIZES,
    compare,
    disagreement_message,
    run_differential,
    validator_api,
)
from tests.oracle.edge_configs import edge_configs
from tests.oracle.mutation_tables import MUTATION_KINDS
from tests.oracle.mutations import EDIT_VALUE_POOL, apply_edits, edit_paths, mutate, repaired, typo_variants
from tests.oracle.oracle import (
    Verdict,
    deepspeed_file_verdicts,
    deepspeed_verdict,
    deepspeed_verdicts,
    oracle_available,
)

pytestmark = pytest.mark.deepspeed

ENTRIES = corpus_entries()
LOADED = [e for e in ENTRIES if e.config is not None]
UNLOADABLE = [e for e in ENTRIES if e.config is None]
# 0.19.5 runs in a subprocess; every corpus file, and every SAMPLE_0195-th mutation of it.
SAMPLE_0195 = 3


def _release(version: str) -> str:
    """``version``, once its DeepSpeed oracle is known to run (else the test is skipped, saying why)."""
    reason = oracle_available(version)
    if reason:
        pytest.skip(reason)
    return version


@pytest.fixture(scope="module")
def ds0198() -> str:
    return _release("0.19.8")


@pytest.fixture(scope="module")
def ds0195() -> str:
    return _release("0.19.5")


@pytest.fixture(scope="module")
def corpus() -> None:
    if not LOADED:
        pytest.skip(f"corpus not found at {CORPUS_DIR}")


def _cases(rel: str, config: dict, every: int = 1) -> list[tuple[str, dict]]:
    mutations = mutate(config, seed=rel)
    return [(f"{rel} (as is)", config)] + [
        (f"{rel} :: [{m.kind}] {m.label}", m.config) for i, m in enumerate(mutations) if i % every == 0
    ]


# --------------------------------------------------------------------------- the differential itself
@pytest.mark.parametrize("entry", LOADED, ids=[e.rel for e in LOADED])
def test_corpus_file_and_mutations_agree_with_deepspeed_0198(entry, ds0198, corpus):
    comparisons = run_differential(_cases(entry.rel, entry.config), WORLD_SIZES, ds0198)
    assert not any(c.disagrees for c in comparisons), disagreement_message(comparisons)


@pytest.mark.parametrize("entry", LOADED, ids=[e.rel for e in LOADED])
def test_corpus_file_and_sampled_mutations_agree_with_deepspeed_0195(entry, ds0195, corpus):
    comparisons = run_differential(_cases(entry.rel, entry.config, SAMPLE_0195), WORLD_SIZES, ds0195)
    assert not any(c.disagrees for c in comparisons), disagreement_message(comparisons)


@pytest.mark.parametrize("version", ["0.19.8", "0.19.5"])
def test_edge_configs_agree_with_deepspeed(version):
    reason = oracle_available(version)
    if reason:
        pytest.skip(reason)
    cases = [(f"edge :: {m.label}", m.config) for m in edge_configs()]
    comparisons = run_differential(cases, WORLD_SIZES, version)
    assert not any(c.disagrees for c in comparisons), disagreement_message(comparisons)


@pytest.mark.parametrize("entry", UNLOADABLE, ids=[e.rel for e in UNLOADABLE])
def test_unloadable_corpus_file_is_refused_by_deepspeed_and_by_load_config(entry, ds0198):
    verdicts = deepspeed_file_verdicts(entry.path, [1], ds0198)
    assert not verdicts[0].accepted, f"DeepSpeed loaded {entry.rel}, which our corpus loader refused"
    import core

    with pytest.raises(ValueError) as excinfo:
        core.load_config(entry.path.read_text(encoding="utf-8"))
    assert str(excinfo.value), "load_config must say why the file is refused"


# --------------------------------------------------------------------------- the oracle is trustworthy
@pytest.mark.parametrize("version", ["0.19.8", "0.19.5"])
def test_oracle_simulates_the_world_size(version):
    reason = oracle_available(version)
    if reason:
        pytest.skip(reason)
    config = {"train_batch_size": 8}
    at3, at4, at16 = deepspeed_verdicts([(config, 3), (config, 4), (config, 16)], version)
    assert not at3.accepted and "8 != 2 * 1 * 3" in (at3.message or "")
    assert at4.accepted
    assert not at16.accepted and "Micro batch size per gpu: 0" in (at16.message or "")


def test_oracle_divides_the_world_size_by_sequence_parallel_size(ds0198):
    # DeepSpeedConfig with torch.distributed up: world size = ranks / sequence_parallel_size (true division).
    with_sp = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "sequence_parallel_size": 2}
    without_sp = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4}
    assert deepspeed_verdict(with_sp, 8, ds0198).accepted  # 16 == 4 * 1.0 * (8 / 2)
    rejected = deepspeed_verdict(without_sp, 8, ds0198)  # accumulation (16 // 4) // 8 == 0
    assert not rejected.accepted and "Gradient accumulation steps: 0" in (rejected.message or "")


def test_oracle_records_type_and_message_and_leaves_the_input_alone(ds0198):
    config = {
        "train_micro_batch_size_per_gpu": 1,
        "data_efficiency": {"enabled": False},  # DeepSpeed adds keys to this nested dict
        "zero_optimization": {"stage": 7},
    }
    before = copy.deepcopy(config)
    verdict = deepspeed_verdict(config, 1, ds0198)
    assert verdict == Verdict(False, "ValidationError", verdict.message)
    assert "Input should be 0, 1, 2, 3" in (verdict.message or "")
    assert config == before


def test_versions_disagree_where_the_releases_do(ds0198, ds0195):
    amp = {"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": False}}
    v198, v195 = deepspeed_verdict(amp, 1, ds0198), deepspeed_verdict(amp, 1, ds0195)
    assert not v198.accepted and v198.error_type == "DeepSpeedConfigError"
    assert v195.accepted
    reduce0 = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}
    assert not deepspeed_verdict(reduce0, 1, ds0198).accepted  # gt=0 in 0.19.8
    assert deepspeed_verdict(reduce0, 1, ds0195).accepted  # ge=0 in 0.19.5


def test_corpus_loader_reads_files_as_deepspeed_does(ds0198, corpus):
    """Our HJSON loading of each corpus file gives DeepSpeed the same config as its own file loader.

    Given a path (and no mpu), DeepSpeedConfig looks for ``sequence_parallel_size`` in the path's text, not in the
    config (``"sequence_parallel_size" in config``), so it checks the batch on all the GPUs; given the dict, on the
    GPUs ÷ sequence_parallel_size. The dict is judged on that many times the GPUs, so both see the same world size
    and only the loading is compared."""
    by_path = deepspeed_file_verdicts  # DeepSpeed loads the path itself (hjson, duplicate keys refused)
    mismatches = []
    for entry in LOADED:
        (from_file,) = by_path(entry.path, [8], ds0198)
        sp = entry.config.get("sequence_parallel_size") if isinstance(entry.config, dict) else None
        divided = isinstance(sp, int) and not isinstance(sp, bool) and sp > 1
        from_dict = deepspeed_verdict(entry.config, 8 * sp if divided else 8, ds0198)
        # (the dict's world size is then a float: 8.0 where the file's message says 8)
        same = (from_file.accepted, from_file.error_type) == (from_dict.accepted, from_dict.error_type) if divided \
            else from_file == from_dict
        if not same:
            mismatches.append(f"{entry.rel}: file {from_file.describe()} / dict {from_dict.describe()}")
    assert not mismatches, "\n".join(mismatches)


def test_compare_classifies_each_outcome():
    codes = frozenset({"optimizer.unknown"})

    def fake(errors):
        findings = [SimpleNamespace(code=c, path="x", message="m", severity="error") for c in errors]
        return lambda config, **kw: SimpleNamespace(findings=findings, ok=not errors)

    rejected, accepted = Verdict(False, "AssertionError", "boom"), Verdict(True)
    gds = Verdict(False, "AssertionError", "GDS currently only supported for CUDA accelerator")

    def outcome(verdict, errors):
        return compare("c", {}, 1, verdict, validate=fake(errors), initialize_codes=codes).outcome

    assert outcome(rejected, ["a"]) == "agree-reject"
    assert outcome(rejected, []) == "missed"
    assert outcome(accepted, []) == "agree-accept"
    assert outcome(accepted, ["optimizer.unknown"]) == "initialize-time"
    assert outcome(accepted, ["optimizer.unknown", "b"]) == "false-alarm"
    assert outcome(gds, []) == "divergence"

    def boom(config, **kw):
        raise KeyError("x")

    assert compare("c", {}, 1, accepted, validate=boom, initialize_codes=codes).outcome == "crash"
    assert {"missed", "false-alarm", "crash"} == DISAGREEMENTS


# --------------------------------------------------------------------------- the mutations
def test_mutations_are_deterministic_and_leave_the_source_alone(corpus):
    entry = next(e for e in LOADED if "zero_optimization" in e.config)
    before = json.dumps(entry.config)
    first = mutate(entry.config, seed=entry.rel)
    second = mutate(entry.config, seed=entry.rel)
    assert first == second
    assert json.dumps(entry.config) == before
    other = mutate(entry.config, seed=entry.rel + "x")
    assert [m.label for m in other] != [m.label for m in first]  # the seed drives the sample


def test_mutations_cover_every_kind_and_depth(corpus):
    kinds: set[str] = set()
    nested_typos = top_typos = 0
    for entry in LOADED:
        for m in mutate(entry.config, seed=entry.rel):
            kinds.add(m.kind)
            if m.kind == "key-typo":
                nested = "." in m.label.split(" misspelt ")[0]
                nested_typos += nested
                top_typos += not nested
    assert set(MUTATION_KINDS) | {"repaired"} == kinds
    assert nested_typos > 100 and top_typos > 100


def test_every_corpus_file_is_accounted_for(corpus):
    files = {p.relative_to(CORPUS_DIR).as_posix() for p in CORPUS_DIR.rglob("*") if p.is_file()}
    assert files - {e.rel for e in ENTRIES} == {"SOURCES.tsv", "README.md"}
    # HJSON comments load (3 corpus files have // comments)
    assert any("//" in e.path.read_text(encoding="utf-8") and e.config is not None for e in ENTRIES)


def test_repaired_configs_keep_non_batch_settings():
    config = {"train_batch_size": "auto", "amp": {"enabled": True}, "fp16": {"enabled": "auto"}, "steps_per_print": 5}
    fixed, changes = repaired(config)
    assert fixed == {
        "fp16": {},
        "steps_per_print": 5,
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
    }
    assert len(changes) == 3


def test_typo_variants_are_distinct_misspellings():
    variants = typo_variants("zero_optimization")
    assert "zero_optimisation" in variants
    assert "zero_optimization" not in variants
    assert len(variants) == len(set(variants)) >= 5


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_outcome_counts_are_sane(world_size, ds0198, corpus):
    """A guard against a silently broken oracle: both verdicts occur on the corpus at every world size."""
    verdicts = deepspeed_verdicts([(e.config, world_size) for e in LOADED], ds0198)
    accepted = sum(v.accepted for v in verdicts)
    assert 0 < accepted < len(verdicts)
    assert {v.error_type for v in verdicts if not v.accepted} >= {"DeepSpeedConfigError", "TypeError"}


def test_oracle_is_silent(ds0198, capfd):
    """DeepSpeed's logger and warnings are silenced while it judges (deprecated keys make it log)."""
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "cpu_offload": True}}
    assert deepspeed_verdict(config, 1, ds0198).accepted
    out, err = capfd.readouterr()
    assert "deprecated" not in out + err


def test_unknown_version_is_reported_not_crashed():
    reason = oracle_available("9.9.9")
    assert reason and "no DeepSpeed 9.9.9 profile" in reason


def test_worker_answers_batches_and_refuses_bad_requests(ds0195):
    from tests.oracle.oracle import _worker

    worker = _worker(ds0195)
    configs = [({"train_batch_size": n}, 4) for n in range(1, 1202)]  # more than one worker batch
    verdicts = deepspeed_verdicts(configs, ds0195)
    assert [v.accepted for v in verdicts] == [n % 4 == 0 for n in range(1, 1202)]
    with pytest.raises(RuntimeError, match="unknown op"):
        worker._request({"op": "bogus"})
    assert deepspeed_verdict({"train_batch_size": 4}, 4, ds0195).accepted  # still serving


# --------------------------------------------------------------------------- random edits (hypothesis)
BASES = [repaired(e.config)[0] for e in LOADED]
EDIT_PATHS = edit_paths(BASES)
EDIT_VALUES = st.one_of(
    st.sampled_from(EDIT_VALUE_POOL),
    st.integers(-5, 10**10),
    st.floats(allow_nan=False, width=32),
    st.lists(st.integers(0, 3), max_size=2),
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(BASES or [{}]),
    edits=st.lists(
        st.tuples(st.sampled_from(EDIT_PATHS or [("x",)]), EDIT_VALUES, st.booleans()), min_size=1, max_size=3
    ),
    world_size=st.sampled_from(WORLD_SIZES),
)
def test_random_edits_agree_with_deepspeed_0198(ds0198, corpus, base, edits, world_size):
    """Random edits (1-3 keys set to odd values or deleted) of repaired corpus configs; derandomized."""
    config = apply_edits(base, edits)
    validate, codes = validator_api()
    comparison = compare("random edit", config, world_size, deepspeed_verdict(config, world_size, ds0198),
                         validate=validate, initialize_codes=codes)  # fmt: skip
    assert not comparison.disagrees, comparison.describe()
