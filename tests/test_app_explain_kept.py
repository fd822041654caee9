"""A page's explanation box, folded away by the user, stays folded on the next visit (a browser hunt of 30 Nov 2026:
the ZeRO page's "What ZeRO partitions" reopened on every visit, pushing the stage choice to the bottom edge of
the screen and the memory chart below it; the sidebar's "Memory charts" link landed on exactly that view)."""

from __future__ import annotations

from app_support import app


def _explanation(at):
    return next(e for e in at.expander if e.proto.expanded is not None and ":material/school:" in e.proto.icon)


def test_an_explanation_folded_away_stays_folded_and_opens_again_on_request():
    at = app({"train_micro_batch_size_per_gpu": 1}, "pages/zero.py")
    box = _explanation(at)
    assert box.proto.expanded
    key = f"explain:{box.label}"  # ui.widgets.explain's key
    at.session_state[key] = False  # the user folds it (a tracked expander's state is its key's)
    at.run()
    for page in ("pages/batch.py", "pages/zero.py"):
        at.switch_page(page).run()
    assert not _explanation(at).proto.expanded
    at.session_state[key] = True
    at.run()
    at.switch_page("pages/batch.py").run()
    at.switch_page("pages/zero.py").run()
    assert _explanation(at).proto.expanded
