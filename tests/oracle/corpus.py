"""The shared corpus of real-world configs, loaded as DeepSpeed's file loader would, and the type of a
generated config (``Mutation``) that ``mutations.py`` and ``edge_configs.py`` produce.

``corpus_entries()`` loads every config in the shared corpus (HJSON, key order kept, duplicate keys refused;
a file that does not load is recorded with its error).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hjson

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
NOT_CONFIGS = frozenset({"SOURCES.tsv", "README.md"})


@dataclass(frozen=True)
class Mutation:
    """One generated config: ``kind`` (category), a short human ``label`` and the ``config`` itself."""

    kind: str
    label: str
    config: dict[str, Any]


@dataclass(frozen=True)
class CorpusEntry:
    """A corpus file: its path relative to the corpus root, the loaded config, or why it did not load."""

    rel: str
    path: Path
    config: dict[str, Any] | None
    load_error: str | None


# --------------------------------------------------------------------------- corpus loading
def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def load_config_text(text: str) -> dict[str, Any]:
    """Parse JSON/HJSON the way DeepSpeed's file loader does (comments allowed, duplicates refused),
    keeping key order; a document that is not an object raises ``ValueError``."""
    data = hjson.loads(text, object_pairs_hook=_pairs_no_duplicates)
    if not isinstance(data, dict):
        raise ValueError(f"top level is {type(data).__name__}, not an object")
    return data


def corpus_files(root: Path = CORPUS_DIR) -> list[Path]:
    """Every config file under ``root`` (the corpus README and SOURCES.tsv excluded), sorted."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name not in NOT_CONFIGS)


def corpus_entries(root: Path = CORPUS_DIR) -> list[CorpusEntry]:
    """Load every corpus file; files that do not parse are kept with ``load_error`` set."""
    entries = []
    for path in corpus_files(root):
        rel = path.relative_to(root).as_posix()
        try:
            config = load_config_text(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:  # HjsonDecodeError is a ValueError
            entries.append(CorpusEntry(rel, path, None, f"{type(exc).__name__}: {exc}"))
        else:
            entries.append(CorpusEntry(rel, path, config, None))
    return entries
