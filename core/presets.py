"""Vetted presets: list, load, check and save configs with their metadata.

A preset is one JSON file ``<name>.json`` holding ``{"meta": {...}, "config": {...}}`` (layout in
``presets/README.md``). The built-in folder ships with the product; teams add folders of their own.
Every function takes the folders to search as an argument; only ``env_search_path`` reads the
environment (``DSCONFIG_PRESETS_PATH``), for the CLI and the app.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from core.effective import effective, pydantic_bool
from core.findings import join_index
from core.io import ConfigLoadError, check_depth, parse_json_value
from core.rules.context import TARGETS, lax_int


def _builtin_dir() -> Path:
    """The built-in presets: ``core/builtin_presets`` in an installed package, else the repository's ``presets/``."""
    packaged = resources.files("core") / "builtin_presets"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged.resolve()
    return Path(__file__).resolve().parent.parent / "presets"


#: The presets shipped with the product (``presets/`` of the repository, packaged as ``core/builtin_presets``).
BUILTIN_DIR = _builtin_dir()
ENV_VAR = "DSCONFIG_PRESETS_PATH"
NAME_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
_NAME_RE = re.compile(NAME_PATTERN)
#: Largest preset file read or written (a real config is a few KB).
MAX_PRESET_BYTES = 512 * 1024
#: Metadata every vetted preset carries.
META_TEXT_FIELDS = ("title", "description", "when_to_use", "when_not_to_use", "hardware")
JUSTIFICATION_FIELDS = ("key", "doc", "section", "why")


class PresetError(ValueError):
    """A preset name, file or metadata problem, with a message that says what to do."""


@dataclass(frozen=True)
class Preset:
    """One preset as loaded from disk."""

    name: str
    meta: dict[str, Any]
    config: dict[str, Any]
    path: Path
    builtin: bool

    @property
    def title(self) -> str:
        return str(self.meta.get("title") or self.name)

    @property
    def target(self) -> str:
        return str(self.meta.get("target", "deepspeed"))

    @property
    def verified_with(self) -> list[str]:
        """``meta.verified_with`` as text, whatever a team file holds (``meta_problems`` says what is wrong)."""
        versions = self.meta.get("verified_with")
        return [str(v) for v in versions] if isinstance(versions, list) else []

    @property
    def judged_with(self) -> list[str]:
        """The releases the preset is validated for: those it was verified with, else the one it was written for in
        the app (``meta.written_for``, a quick save claims no verification), else the default release."""
        from core import versions

        written = self.meta.get("written_for")
        if self.verified_with:
            return self.verified_with
        return [written] if isinstance(written, str) and written in versions.RELEASES else [versions.NEWEST]

    @property
    def justifications(self) -> list[dict[str, Any]]:
        """The well-formed items of ``meta.justifications`` (objects); ``meta_problems`` names the others."""
        items = self.meta.get("justifications")
        return [j for j in items if isinstance(j, dict)] if isinstance(items, list) else []


# ---------------------------------------------------------------- names and folders


def check_name(name: Any) -> str:
    """Return ``name`` if it is a safe preset name, else raise PresetError saying why."""
    if not isinstance(name, str):
        raise PresetError(f"a preset name must be text, not {type(name).__name__}")
    if not _NAME_RE.fullmatch(name):
        shown = name if len(name) <= 80 else name[:77] + "..."
        lower = name.lower()
        hint = f"; did you mean {lower!r}?" if lower != name and _NAME_RE.fullmatch(lower) else ""
        raise PresetError(
            f"invalid preset name {shown!r}: use 1-64 characters a-z, 0-9, '-' and '_', starting with a letter "
            f"or digit (no paths, dots, slashes or spaces){hint}"
        )
    return name


def suggest_name(text: str) -> str:
    """A valid preset name derived from free text (e.g. a title): ``"My ZeRO-3!"`` → ``"my-zero-3"``."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")
    slug = slug[:64].rstrip("-_") or "preset"
    return check_name(slug)


def _resolved(path: Path) -> Path:
    """``path.resolve()``, or the path as written when it cannot be resolved (a symbolic link loop): the folder
    is then reported as unreadable where it is listed, not a traceback here."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def search_path(extra: Iterable[str | os.PathLike[str]] = (), *, builtin_dir: Path = BUILTIN_DIR) -> list[Path]:
    """The built-in folder followed by ``extra`` folders (empty entries dropped, duplicates removed)."""
    out: list[Path] = [builtin_dir]
    for entry in extra:
        if not str(entry).strip():
            continue
        path = Path(entry).expanduser()
        if all(_resolved(path) != _resolved(p) for p in out):
            out.append(path)
    return out


def env_search_path(environ: Mapping[str, str] | None = None, *, builtin_dir: Path = BUILTIN_DIR) -> list[Path]:
    """``search_path`` with the folders of ``DSCONFIG_PRESETS_PATH`` (``os.pathsep``-separated)."""
    env = os.environ if environ is None else environ
    return search_path(env.get(ENV_VAR, "").split(os.pathsep), builtin_dir=builtin_dir)


def _is_builtin_dir(folder: Path, builtin_dir: Path) -> bool:
    return _resolved(folder) == _resolved(builtin_dir)


def _file_in(folder: Path, name: str) -> Path:
    """``folder/name.json``, refusing anything that would end up outside ``folder`` (for writing)."""
    check_name(name)
    path = folder / f"{name}.json"
    if path.is_symlink():
        raise PresetError(f"{path} is a symbolic link; refusing to write through it")
    if _resolved(path).parent != _resolved(folder):
        raise PresetError(f"preset {name!r} would be stored outside {folder}")
    return path


# ---------------------------------------------------------------- reading


def _read(path: Path, name: str, builtin: bool) -> Preset:
    return parse_preset(read_preset_bytes(path), name=name, path=path, builtin=builtin)


def read_preset_bytes(path: Path) -> bytes:
    """The bytes of a preset file, read as the loader reads them (a regular file, not a link, within the size
    limit); PresetError naming the file otherwise."""
    if path.is_symlink():
        raise PresetError(f"{path}: preset files may not be symbolic links")
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block the read (a directory fails it)
            raise PresetError(f"{path}: not a regular file")
        size = info.st_size
        if size > MAX_PRESET_BYTES:
            raise PresetError(f"{path}: {size} bytes is larger than the {MAX_PRESET_BYTES}-byte limit for a preset")
        with path.open("rb") as handle:
            raw = handle.read(MAX_PRESET_BYTES + 1)
    except OSError as exc:
        raise PresetError(f"{path}: cannot read the preset ({exc.strerror or exc})") from exc
    if len(raw) > MAX_PRESET_BYTES:
        raise PresetError(f"{path}: larger than the {MAX_PRESET_BYTES}-byte limit for a preset")
    return raw


def decode_preset(raw: bytes) -> str:
    """A preset file's text, decoded as json.loads decodes bytes (UTF-8 with or without a BOM, UTF-16, UTF-32);
    UnicodeDecodeError when it is none of them."""
    return raw.decode(json.detect_encoding(raw), "strict").removeprefix("\ufeff")


#: The top-level keys of a preset file: its metadata and the DeepSpeed config it vets.
PRESET_KEYS = frozenset({"meta", "config"})


def is_preset_document(data: Any) -> bool:
    """Whether ``data`` has the shape of a preset file (``{"meta": {...}, "config": {...}}``), not a ds_config."""
    return (isinstance(data, dict) and set(data) == PRESET_KEYS
            and isinstance(data["meta"], dict) and isinstance(data["config"], dict))


def parse_preset(raw: str | bytes, *, name: str, path: Path | None = None, builtin: bool = False) -> Preset:
    """Parse the text of a preset file into a Preset (raises PresetError on any problem)."""
    where = str(path) if path else name
    if len(raw) > MAX_PRESET_BYTES:
        raise PresetError(f"{where}: larger than the {MAX_PRESET_BYTES}-byte limit for a preset")
    try:
        # strict JSON as a config file is read: duplicate keys (the last would silently win), NaN, depth
        # bytes decoded as json.loads decodes them (UTF-8 with or without a BOM, UTF-16, UTF-32)
        text = decode_preset(raw) if isinstance(raw, bytes) else raw
        data = parse_json_value(text)
    except UnicodeDecodeError as exc:
        raise PresetError(f"{where}: not readable text (byte {exc.start}); save the preset as UTF-8") from None
    except ConfigLoadError as exc:
        raise PresetError(f"{where}: {exc}") from None
    if not isinstance(data, dict) or set(data) != PRESET_KEYS:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise PresetError(f'{where}: a preset file is {{"meta": {{...}}, "config": {{...}}}}, found {keys}')
    meta, config = data["meta"], data["config"]
    if not isinstance(meta, dict) or not isinstance(config, dict):
        raise PresetError(f"{where}: meta and config must both be JSON objects")
    try:  # the loader refuses a config file this deep: a preset exported from it would be refused the same way
        check_depth(config)
        check_depth(meta)
    except ValueError as exc:
        raise PresetError(f"{where}: {exc}") from None
    return Preset(name=name, meta=meta, config=config, path=path or Path(f"{name}.json"), builtin=builtin)


def _why_not_a_folder(folder: Path) -> str:
    """What a preset path that is not a folder is instead, in words with the fix."""
    if folder.is_symlink():
        try:
            folder.resolve(strict=True)
        except RuntimeError:
            return "preset folder is a symbolic link that loops; point it at a folder"
        except OSError:
            return "preset folder is a symbolic link to nothing; point it at a folder"
    if folder.exists():
        return "is a file, not a preset folder; give the folder that holds the preset .json files"
    return "preset folder does not exist"


def list_presets(folders: Sequence[Path], *, builtin_dir: Path = BUILTIN_DIR) -> tuple[list[Preset], list[str]]:
    """All presets in ``folders`` (earlier folders win on duplicate names), and one problem line per file skipped.

    Files whose name is not a valid preset name, unreadable folders and broken files are reported,
    never raised, so one bad file in a team folder does not hide the others.
    """
    found: dict[str, Preset] = {}
    problems: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            if not _is_builtin_dir(folder, builtin_dir):
                problems.append(f"{folder}: {_why_not_a_folder(folder)}")
            continue
        builtin = _is_builtin_dir(folder, builtin_dir)
        try:
            files = sorted(folder.glob("*.json"))
        except OSError as exc:
            problems.append(f"{folder}: cannot list ({exc})")
            continue
        for file in files:
            name = file.stem
            try:
                check_name(name)
            except PresetError as exc:  # the reason, and the lower-case name when that one would do
                problems.append(f"{file}: ignored, its file name is an {exc}")
                continue
            if name in found:
                problems.append(_ignored_duplicate(file, found[name]))
                continue
            try:
                found[name] = _read(file, name, builtin)
            except PresetError as exc:
                problems.append(str(exc))
    return sorted(found.values(), key=lambda p: (not p.builtin, p.name)), problems


def _ignored_duplicate(file: Path, winner: Preset) -> str:
    """Why ``file`` is not used: a preset of its name comes first (a built-in, or one in an earlier folder)."""
    if winner.builtin:
        return (f"{file}: {winner.name!r} is the name of a built-in preset, which cannot be overridden; this file is "
                "ignored: rename it")
    return f"{file}: {winner.name!r} is already defined in {winner.path.parent}; ignored"


def hidden_by(preset: Preset, folders: Sequence[Path]) -> list[str]:
    """One line per file of ``preset``'s name in a later folder, which ``load_preset`` never reads (``presets list``
    says the same of them): a team file named like a built-in preset is silently not the one exported."""
    lines = []
    later = False
    for folder in folders:
        path = folder / f"{preset.name}.json"
        if later and (path.is_symlink() or path.exists()) and _resolved(path) != _resolved(preset.path):
            lines.append(_ignored_duplicate(path, preset))
        later = later or _resolved(folder) == _resolved(preset.path.parent)
    return lines


def folders_signature(folders: Sequence[Path]) -> tuple:
    """What ``list_presets(folders)`` reads, without reading it: each folder and, per JSON file in it, its name,
    modification time and size (a cache of the listing is valid while this is unchanged)."""
    signature = []
    for folder in folders:
        try:
            entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json")]
        except OSError as exc:  # missing or unreadable: list_presets reports it
            signature.append((str(folder), (type(exc).__name__,)))
            continue
        signature.append((str(folder), tuple(sorted(_entry_signature(entry) for entry in entries))))
    return tuple(signature)


def _entry_signature(entry: os.DirEntry) -> tuple:
    try:
        stat = entry.stat()
    except OSError as exc:  # e.g. a dangling symlink: this file, not the whole folder, is unreadable
        return (entry.name, type(exc).__name__, 0)
    return (entry.name, stat.st_mtime_ns, stat.st_size)


def load_preset(name: str, folders: Sequence[Path], *, builtin_dir: Path = BUILTIN_DIR) -> Preset:
    """The preset ``name`` from the first folder that has it."""
    check_name(name)
    broken: PresetError | None = None
    for folder in folders:
        path = folder / f"{name}.json"  # check_name allows no separator: only a link could lead elsewhere
        if path.is_symlink() or path.exists():  # read_preset_bytes refuses links and what is not a file, by name
            try:
                return _read(path, name, _is_builtin_dir(folder, builtin_dir))
            except PresetError as exc:  # as list_presets does: a later folder's file of that name is the preset
                broken = broken or exc
    if broken is not None:
        raise broken
    known, _ = list_presets(folders, builtin_dir=builtin_dir)
    names = ", ".join(p.name for p in known) or "none"
    raise PresetError(f"no preset named {name!r}; known presets: {names}")


# ---------------------------------------------------------------- checking


def read_reference(folder: Path) -> dict[str, str]:
    """The reference documentation presets cite (``justifications[].doc``): each file of ``folder`` by name."""
    return {file.name: file.read_text(encoding="utf-8", errors="replace")
            for file in sorted(folder.iterdir()) if file.is_file()}


@dataclass(frozen=True)
class Problem:
    """One reason a preset is not vetted: ``path`` in the preset file (``config.zero_optimization.stage``,
    ``meta.verified_with``) and what to change."""

    path: str
    message: str


def meta_problems(meta: Mapping[str, Any], *, vetted: bool = True) -> list[str]:
    """What is missing or malformed in a preset's metadata, as messages (``meta_problem_paths`` has each one's
    path)."""
    return [problem.message for problem in meta_problem_paths(meta, vetted=vetted)]


def meta_problem_paths(meta: Mapping[str, Any], *, vetted: bool = True) -> list[Problem]:
    """What is missing or malformed in a preset's metadata, each with the path of the metadata it concerns.

    ``vetted`` demands everything a vetted preset documents (when to use, hardware, the versions it
    was verified with and a documentation reference per choice); a team's quick save needs only a
    title, a description and a target.
    """
    problems: list[Problem] = []
    required = META_TEXT_FIELDS if vetted else ("title", "description")
    for key in required:
        value = meta.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(f"meta.{key}", f"meta.{key} must be a non-empty text"))
    if meta.get("target") not in TARGETS:
        problems.append(Problem("meta.target", f"meta.target must be one of {', '.join(TARGETS)}"))
    versions = meta.get("verified_with", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)*", v)
                                                 for v in versions):
        problems.append(Problem("meta.verified_with", 'meta.verified_with must be a list of versions like "0.19.8"'))
    elif vetted and not versions:
        problems.append(Problem("meta.verified_with", "meta.verified_with must name at least one DeepSpeed version"))
    justifications = meta.get("justifications", [])
    if not isinstance(justifications, list):
        problems.append(Problem("meta.justifications", "meta.justifications must be a list"))
    else:
        for i, item in enumerate(justifications):
            if not isinstance(item, dict) or any(
                not isinstance(item.get(k), str) or not item.get(k, "").strip() for k in JUSTIFICATION_FIELDS
            ):
                where = join_index("meta.justifications", i)
                problems.append(Problem(where, f"{where} needs non-empty {', '.join(JUSTIFICATION_FIELDS)}"))
        if vetted and not justifications:
            problems.append(Problem("meta.justifications",
                                    "meta.justifications must cite the documentation for the preset's choices"))
    return problems


def validate_preset(preset: Preset, *, version: str | None = None, world_size: int = 1):
    """``core.validate`` of the preset's config for its own target (and each verified version, or ``version``).

    Returns a list of ``(version, Report)``.
    """
    from core.validate import validate  # imported here: core.validate imports the whole schema

    versions = [version] if version else preset.judged_with
    return [(v, validate(preset.config, world_size=world_size, target=preset.target, version=v)) for v in versions]


def facets(preset: Preset) -> dict[str, Any]:
    """Filterable properties derived from the config (stage, offload, precision, runtime)."""
    cfg = preset.config
    meaning = effective(cfg)
    devices = {meaning.offload_optimizer, meaning.offload_param}
    offload = "nvme" if "nvme" in devices else ("cpu" if "cpu" in devices else "none")
    precision = "auto" if meaning.fp16_auto or meaning.bf16_auto else meaning.precision
    zero = cfg.get("zero_optimization") if isinstance(cfg.get("zero_optimization"), Mapping) else {}
    hpz = lax_int(zero.get("zero_hpz_partition_size", 1))
    zeropp = (hpz not in (None, 0, 1) or pydantic_bool(zero, "zero_quantized_weights", False)
              or pydantic_bool(zero, "zero_quantized_gradients", False))
    stage = meaning.stage
    return {"stage": stage, "offload": offload, "precision": precision, "runtime": preset.target,
            "zeropp": zeropp, "builtin": preset.builtin}


# ---------------------------------------------------------------- saving


def preset_text(meta: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The file content of a preset (stable key order as given, 2-space indent, trailing newline)."""
    return json.dumps({"meta": meta, "config": config}, indent=2, allow_nan=False) + "\n"


def save_preset(
    name: str,
    config: Mapping[str, Any],
    meta: Mapping[str, Any],
    folder: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    builtin_dir: Path = BUILTIN_DIR,
    later_folders: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Write ``folder/name.json`` and return its path.

    Refuses hostile names, the built-in folder, names of built-in presets, incomplete metadata
    (title, description, target), oversize content, and an existing file unless ``overwrite``: in ``folder``, or in
    one of ``later_folders`` (the rest of the search path), whose preset of that name the saved one would hide.
    """
    check_name(name)
    folder = Path(folder).expanduser()
    if _is_builtin_dir(folder, builtin_dir):
        raise PresetError("built-in presets are read-only: save into a team folder (DSCONFIG_PRESETS_PATH)")
    if (builtin_dir / f"{name}.json").exists():
        raise PresetError(f"{name!r} is a built-in preset; choose another name")
    if not isinstance(config, Mapping):
        raise PresetError("the config to save must be a JSON object")
    problems = meta_problems(meta, vetted=False)
    if problems:
        raise PresetError("cannot save the preset: " + "; ".join(problems))
    try:
        text = preset_text(dict(meta), dict(config))
    except (TypeError, ValueError) as exc:
        raise PresetError(f"the preset is not JSON-serialisable ({exc})") from None
    if len(text.encode()) > MAX_PRESET_BYTES:
        raise PresetError(f"the preset is larger than the {MAX_PRESET_BYTES}-byte limit")
    if not folder.is_dir():
        why = _why_not_a_folder(folder)
        raise PresetError(f"{folder}: {why}" + ("; create it first" if why == "preset folder does not exist" else ""))
    path = _file_in(folder, name)
    if path.exists() and not overwrite:
        raise PresetError(f"preset {name!r} already exists in {folder}: choose another file name, or choose to "
                          "replace it (on the Presets page: \"Replace a team preset of the same name\")")
    hidden = next((other for other in map(Path.expanduser, map(Path, later_folders))
                   if (other / f"{name}.json").is_file()), None)
    if hidden is not None and not overwrite:
        raise PresetError(f"preset {name!r} already exists in {hidden}, a later folder of the search path: saved in "
                          f"{folder}, it would hide that one (the first folder wins). Choose another file name, or "
                          "choose to replace it (on the Presets page: \"Replace a team preset of the same name\")")
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
