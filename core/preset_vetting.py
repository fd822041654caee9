"""What makes a preset "vetted" (``presets/README.md``), checked on one preset: complete metadata, releases that
exist, justifications that cite keys of the config (and, given the reference documentation, sections that exist),
every top-level section justified, and no validation error for its target on each release it names.

``dsconfig presets check`` runs it over a team's folders; the built-in presets' tests run it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.findings import has_path, join_index, join_path
from core.presets import Preset, Problem, meta_problem_paths
from core.rules.context import TARGETS


def vetting_problems(preset: Preset, *, world_sizes: Iterable[int] = (1,),
                     reference: Mapping[str, str] | None = None) -> list[Problem]:
    """Everything that keeps ``preset`` from being vetted; [] when it is. ``reference`` (DeepSpeed's
    documentation, file name → text: ``core.presets.read_reference``) also checks that each justification's
    ``doc`` is one of its files and its ``section`` a heading in it."""
    from core.schema.base import KNOWN_VERSIONS  # the schema is heavy: imported when a preset is checked
    from core.validate import validate

    meta, config = preset.meta, preset.config
    problems = meta_problem_paths(meta, vetted=True)
    versions = meta.get("verified_with")
    releases: list[str] = []
    if isinstance(versions, list):
        for index, version in enumerate(versions):
            if version in KNOWN_VERSIONS:
                releases.append(version)
            elif isinstance(version, str):
                problems.append(Problem(join_index("meta.verified_with", index),
                                        f"meta.verified_with: {version!r} is not a DeepSpeed release this checker "
                                        f"knows ({KNOWN_VERSIONS[0]} … {KNOWN_VERSIONS[-1]})"))
    justified: set[str] = set()
    items = meta.get("justifications")
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue  # meta_problem_paths named it
        where = join_index("meta.justifications", index)
        key = item["key"]
        justified.add(key.split(".", 1)[0])
        if not has_path(config, key):
            problems.append(Problem(f"{where}.key", f"{where}.key: {key!r} is not in the config; justify a key "
                                                    "the config sets"))
        doc, section = item.get("doc"), item.get("section")
        if reference is not None and isinstance(doc, str) and isinstance(section, str):
            if doc not in reference:
                problems.append(Problem(f"{where}.doc", f"{where}.doc: {doc!r} is not a file of the reference "
                                                        "documentation"))
            elif section not in reference[doc]:
                problems.append(Problem(f"{where}.section",
                                        f"{where}.section: {section!r} does not appear in {doc}; quote its heading"))
    for section in config:
        if section not in justified:
            problems.append(Problem(join_path("config", section),
                                    f"config.{section} has no justification in meta.justifications"))
    if not releases:  # no release it was verified with: judged as the app judges it (written_for, else the newest)
        releases = [v for v in preset.judged_with if v in KNOWN_VERSIONS] or [KNOWN_VERSIONS[-1]]
    failing: dict[tuple[str, str, str], list[str]] = {}  # one problem per finding, with where it fails
    world_sizes = tuple(world_sizes)
    # A target validate() does not know is already a meta.target problem; validating for it would raise
    for version in releases if preset.target in TARGETS else ():
        for world_size in world_sizes:
            report = validate(config, world_size=world_size, target=preset.target, version=version)
            for finding in report.errors:
                failing.setdefault((finding.path, finding.code, finding.message), []).append(
                    f"{version} on {world_size} GPU{'s' if world_size != 1 else ''}")
    for (path, code, message), runs in failing.items():
        problems.append(Problem(f"config.{path}" if path else "config",
                                f"{code}: {message} (target {preset.target}, DeepSpeed {', '.join(runs)})"))
    return problems
