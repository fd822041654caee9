"""The preset folders' listing and each preset's validation, computed once per distinct input for every session.

The Start and Presets pages list the preset folders on every rerun, and the Presets page validated the chosen
preset for each release it was verified with on every rerun (a fifth of that page's rerun). A listing is kept
while the folders' files keep their names, sizes and modification times (``core.presets.folders_signature``),
so a preset saved from the app or copied into a team folder shows at the next rerun; a report is kept per
preset config, target, releases and GPU count.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import core
from core import presets
from core.findings import Report
from ui.fields import safe_text
from ui.shared_cache import ConfigKey, shared_cache


def listing(folders: Sequence[Path]) -> tuple[tuple[presets.Preset, ...], tuple[str, ...]]:
    """``core.presets.list_presets(folders)`` as tuples, read again only when a folder's files changed.

    The presets are shared by every session: read them, copy before changing (as loading one does)."""
    return _listing(tuple(folders), presets.folders_signature(folders))


@functools.lru_cache(maxsize=16)
def _listing(folders: tuple[Path, ...], signature: tuple) -> tuple[tuple[presets.Preset, ...], tuple[str, ...]]:
    found, problems = presets.list_presets(folders)
    # a team file's text may hold lone surrogates ("\ud800" escapes), which the browser cannot be sent: its
    # metadata and the problems quoting it are shown with them escaped (the config is loaded as it is)
    return (tuple(dataclasses.replace(p, meta=_browser_safe(p.meta)) for p in found),
            tuple(safe_text(problem) for problem in problems))


def _browser_safe(value: Any) -> Any:
    """``value`` (JSON) with every text, keys included, as ``ui.fields.safe_text`` makes it."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(k) if isinstance(k, str) else k: _browser_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_browser_safe(v) for v in value]
    return value


def reports(preset: presets.Preset, world_size: int) -> list[tuple[str, Report]]:
    """``core.presets.validate_preset(preset, world_size=...)``, once per preset content and GPU count.

    Raises ``ValueError`` as ``validate_preset`` does (a team preset's meta names an unknown target or version).
    Keyed on the preset's meta and config (what ``validate_preset`` reads), not on its name or file."""
    text = json.dumps({"meta": preset.meta, "config": preset.config}, ensure_ascii=False)
    return list(_reports(ConfigKey(text), world_size))


@shared_cache(maxsize=64)
def _reports(content: ConfigKey, world_size: int) -> tuple[tuple[str, Report], ...]:
    data = json.loads(content.text)  # a preset file's JSON: it reads back exactly, key order included
    preset = presets.Preset(name="cached", meta=data["meta"], config=data["config"], path=Path("cached.json"),
                            builtin=False)
    return tuple(presets.validate_preset(preset, world_size=world_size))


def report_for(config: dict, world_size: int, target: str, version: str) -> Report:
    """``core.validate`` of a preset's config for the session's GPU count, target and release, once per distinct
    input: the batch DeepSpeed would use there (elastic training, sequence parallelism as that release reads it)."""
    return _report_for(ConfigKey(json.dumps(config, ensure_ascii=False)), world_size, target, version)


@shared_cache(maxsize=64)
def _report_for(config: ConfigKey, world_size: int, target: str, version: str) -> Report:
    return core.validate(json.loads(config.text), world_size=world_size, target=target, version=version)
