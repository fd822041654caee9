"""Derive a validation profile per DeepSpeed release from the release's own code.

    python scripts/gen_profiles.py 0.19.8 0.19.7         # one or more releases
    python scripts/gen_profiles.py --all                  # every release listed in core/versions/releases.json

For each release it downloads the source distribution from PyPI (``pip download --no-deps --no-binary
:all:``, cached in ``~/.cache/dsconfig/sdists``), unpacks it into a temporary directory and runs this file
``scripts/profile_extract.py`` in a subprocess with the unpacked tree first on ``sys.path`` and the torch of
the current interpreter. That subprocess imports the release's ``DeepSpeedConfig`` and reads:

- the top-level keys ``DeepSpeedConfig`` reads: a recording dict is passed to it, plus every constant named
  in a ``get_scalar_param`` / ``param_dict.get`` / ``in param_dict`` call of ``runtime/config.py`` (ast);
- the pydantic sections: which top-level key builds which model (a probe key makes each model name itself
  in its ``extra_forbidden`` error), and per model its fields (name, alias, type, default, bounds,
  deprecated/new_param) and ``extra`` policy, nested models included;
- top-level keys the release refuses on presence (``_REMOVED_TOP_LEVEL_CONFIG_KEYS``), and which top-level
  keys fail to parse when their value is not an object (null, a list, a string, a number, a boolean, each empty
  and not);
- ``DEEPSPEED_OPTIMIZERS`` and the constructor keywords of each optimizer class, whether the engine refuses
  ``max_grad_norm``, which optimizers' ``params`` the engine picks keys from instead of passing them all to a
  constructor (Muon: unknown keys are ignored); the LR schedulers and their constructor keywords;
- the assertion messages of ``DeepSpeedConfig``'s checks (batch, fp16/bf16, stage rules).
- what the parse does with ``compression_training.shared_parameters`` switched on (which releases up to 0.19.6
  read as weight quantization's, by mistake), alone and with ``quantize_training.eigenvalue`` on.
- what the release's elastic training (``compute_elastic_config``) computes for a probe section whose micro
  batches' least common multiple exceeds its largest batch (releases up to 0.19.5 keep that base as a candidate).
- the world size ``DeepSpeedConfig`` settles on, as rank 0 of 8, when ``sequence_parallel_size`` cannot divide it
  (0, or not a number): 0.17-0.18 catch the error and fall back to 1, later releases stop.

The result is written to ``core/versions/profiles/<release>.json`` (sorted keys, one item per line) and the
release is added to ``core/versions/releases.json``. Nothing of DeepSpeed's code is copied into the repo.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "core" / "versions" / "profiles"
RELEASES = REPO / "core" / "versions" / "releases.json"
CACHE = Path(os.environ.get("DSCONFIG_SDIST_CACHE", Path.home() / ".cache" / "dsconfig" / "sdists"))

EXTRACT = Path(__file__).resolve().with_name("profile_extract.py")


def sdist(release: str) -> Path:
    """The cached source distribution of ``release`` (downloaded with pip when missing)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"deepspeed-{release}.tar.gz"
    if not path.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"deepspeed=={release}", "--no-deps", "--no-binary", ":all:",
             "--no-build-isolation", "-q", "-d", str(CACHE)],
            check=True,
        )
    return path


def probe_keys() -> dict[str, dict[str, Any]]:
    """Per top-level section that some recorded release builds with pydantic: every field name (and alias) any
    release has there, with its default (a release that reads the section with ``dict.get`` is offered them all,
    so the keys it never looks up are known to be ignored; ``profile_extract._dict_section_probes``)."""
    keys: dict[str, dict[str, Any]] = {}
    for path in sorted(PROFILES.glob("*.json")):
        for prefix, entry in json.loads(path.read_text())["sections"].items():
            if "." in prefix:
                continue
            for name, info in entry["fields"].items():
                for key in (name, info.get("alias")):
                    if key is not None:
                        keys.setdefault(prefix, {}).setdefault(key, info.get("default"))
    return keys


def generate(release: str, fields: list[str] | None = None) -> dict[str, Any]:
    """Download, unpack and read one release; returns its profile (only ``fields`` of it when given: the
    probes ``profile_extract.FIELD_PROBES`` names, without the whole reading)."""
    archive = sdist(release)
    with tempfile.TemporaryDirectory(prefix=f"ds{release}-") as tmp:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if "/deepspeed/" in m.name and not m.issym() and not m.islnk()]
            tar.extractall(tmp, members=members, filter="data")
        root = next(Path(tmp).iterdir())
        env = {**os.environ, "PYTHONPATH": str(root), "DS_ACCELERATOR": "cpu", "PYTHONWARNINGS": "ignore",
               "DSCONFIG_PROBE_KEYS": json.dumps(probe_keys(), sort_keys=True)}
        done = subprocess.run(
            [sys.executable, str(EXTRACT), release, *(["--fields", ",".join(fields)] if fields else [])],
            capture_output=True, text=True, env=env, cwd=tmp, timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"reading DeepSpeed {release} failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def write_profile(profile: dict[str, Any]) -> Path:
    PROFILES.mkdir(parents=True, exist_ok=True)
    path = PROFILES / f"{profile['release']}.json"
    path.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    releases = set(json.loads(RELEASES.read_text())) if RELEASES.exists() else set()
    releases.add(profile["release"])
    ordered = sorted(releases, key=lambda v: tuple(int(p) for p in v.split(".")))
    RELEASES.write_text(json.dumps(ordered, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="*", help="DeepSpeed releases, e.g. 0.19.8")
    parser.add_argument("--all", action="store_true", help="regenerate every release in releases.json")
    parser.add_argument("--fields", help="comma-separated: re-read only these fields (profile_extract.FIELD_PROBES) "
                        "into the existing profiles, e.g. after a probe was added")
    args = parser.parse_args(argv)
    releases = list(args.releases)
    if args.all:
        releases += json.loads(RELEASES.read_text())
    if not releases:
        parser.error("name at least one release, or --all")
    fields = args.fields.split(",") if args.fields else None
    for release in dict.fromkeys(releases):
        profile = generate(release, fields)
        if fields:
            profile = {**json.loads((PROFILES / f"{release}.json").read_text()), **profile}
        path = write_profile(profile)
        print(f"{release}: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
