"""Dotted config paths: the fast split of a plain path gives what the escape-aware parser gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.findings import _split_escaped, split_path


@given(st.text(alphabet=st.characters(blacklist_characters="\\["), max_size=40))
def test_a_path_without_escapes_or_indices_splits_as_the_parser_splits_it(path):
    assert split_path(path) == (_split_escaped(path) if path else [])

