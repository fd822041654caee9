"""The fix differential: corpus configs and their mutations, fixed by ``core.autofix.fix_until_stable`` (safe fixes
only, and all fixes), judged before and after by a real DeepSpeed release's parser; used by
``tests/test_fix_differential.py`` and ``scripts/fix_differential.py``."""

from __future__ import annotations

from core.autofix import fix_until_stable
from tests.oracle.corpus import corpus_entries
from tests.oracle.differential import compare, validator_api
from tests.oracle.mutations import mutate
from tests.oracle.oracle import deepspeed_verdicts

#: The GPU counts each case is fixed and judged at.
WORLD_SIZES = (1, 8)


def fix_cases(every: int) -> list[tuple[str, dict]]:
    """(label, config) for every corpus file as is and every ``every``-th of its mutations."""
    cases = []
    for entry in corpus_entries():
        if entry.config is None:
            continue
        cases.append((f"{entry.rel} (as is)", entry.config))
        cases += [(f"{entry.rel} :: [{m.kind}] {m.label}", m.config)
                  for i, m in enumerate(mutate(entry.config, seed=entry.rel)) if i % every == 0]
    return cases


def run_fix_differential(cases: list[tuple[str, dict]], version: str = "0.19.8") -> dict[str, list]:
    """Fix each case both ways at each world size and judge original and fixed config with DeepSpeed. Returns
    "broken" (a safe fix made DeepSpeed reject an accepted config), "revealed" (an unsafe one did), "disagree"
    (fixed configs on which the validator and DeepSpeed disagree), "repaired" / "rejected" (configs DeepSpeed
    rejected before: accepted / still rejected after)."""
    runs = [(label, config, ws, unsafe, fix_until_stable(config, world_size=ws, unsafe=unsafe).config)
            for label, config in cases for ws in WORLD_SIZES for unsafe in (False, True)]
    before = deepspeed_verdicts([(config, ws) for _, config, ws, _, _ in runs], version)
    after = deepspeed_verdicts([(fixed, ws) for _, _, ws, _, fixed in runs], version)
    validate, initialize_codes = validator_api()
    out: dict[str, list] = {"broken": [], "revealed": [], "disagree": [], "repaired": [], "rejected": []}
    for (label, _, ws, unsafe, fixed), old, new in zip(runs, before, after, strict=True):
        kind = "unsafe" if unsafe else "safe"
        if old.accepted and not new.accepted:
            # A safe fix must never do this. An unsafe one may: renaming a misspelt section makes DeepSpeed read
            # it, errors included; the comparison below then checks that the validator reports them.
            line = f"{kind} fix at {ws} GPU(s): {label}: {new.error_type}: {(new.message or '').splitlines()[:2]}"
            out["revealed" if unsafe else "broken"].append(line)
        comparison = compare(f"{label} ({kind} fixes)", fixed, ws, new, version=version, validate=validate,
                             initialize_codes=initialize_codes)
        if comparison.disagrees:
            out["disagree"].append(comparison)
        if not old.accepted:
            out["repaired" if new.accepted else "rejected"].append((kind, label, ws))
    return out
