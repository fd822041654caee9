"""Which settings the pages draw, enable and date for a DeepSpeed release: asked of the releases' profiles, not
of hand-written added/removed tags (which had 0.19.6-0.19.7 keys as "added in 0.19.8" and MiCS as in 0.19.7)."""

from __future__ import annotations

import pytest
from app_support import app

from core import versions

STAGE3 = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}


def _open_knobs(at):
    at.session_state["zero_knobs"] = True
    at.run()
    return at


def _drawn(at, fragment: str) -> dict[str, bool]:
    widgets = [*at.checkbox, *at.toggle, *at.number_input, *at.selectbox, *at.text_input]
    return {w.key: w.disabled for w in widgets if fragment in str(w.key)}


@pytest.mark.parametrize("version", ["0.19.6", "0.19.7"])
def test_a_key_the_release_reads_is_drawn_editable_and_dated_by_the_releases(version):
    """managed_gradient_accumulation (read since 0.19.4) was hidden on 0.19.6 and 0.19.7, and disabled with "added
    in 0.19.8" when the config had it."""
    config = {**STAGE3, "managed_gradient_accumulation": False}
    at = app(config, "pages/batch.py", version=version)
    assert _drawn(at, "managed_gradient_accumulation") == {"cfg:managed_gradient_accumulation": False}
    widget = next(w for w in [*at.checkbox, *at.toggle] if w.key == "cfg:managed_gradient_accumulation")
    added = versions.history("", "managed_gradient_accumulation")[0]
    assert added == "0.19.4" and f"Added in DeepSpeed {added}." in widget.help
    assert not any("not available in DeepSpeed" in c.value.lower() for c in at.caption)


def test_mics_is_offered_where_the_release_reads_it_and_not_on_0_19_7_which_refuses_it():
    assert _drawn(_open_knobs(app(STAGE3, "pages/zero.py", version="0.16.9")), "mics_shard_size") == {
        "cfg:zero_optimization.mics_shard_size": False}
    assert _drawn(_open_knobs(app(STAGE3, "pages/zero.py", version="0.19.7")), "mics_shard_size") == {}


def test_a_key_the_release_lacks_is_not_offered_and_is_disabled_when_written():
    """stage3_allgather_sequential, which 0.16.9 refuses (extra_forbidden), was drawn enabled on 0.16.9."""
    assert _drawn(_open_knobs(app(STAGE3, "pages/zero.py", version="0.16.9")), "allgather_sequential") == {}
    written = {**STAGE3, "zero_optimization": {"stage": 3, "stage3_allgather_sequential": True}}
    drawn = _drawn(_open_knobs(app(written, "pages/zero.py", version="0.16.9")), "allgather_sequential")
    assert drawn == {"cfg:zero_optimization.stage3_allgather_sequential": True}
