"""Per-release knowledge of DeepSpeed, read from the profiles ``scripts/gen_profiles.py`` derives from each
release's own code (``core/versions/profiles/<release>.json``).

Which keys a release reads, which of its sections are pydantic models (strict) and their fields and
bounds, which optimizers and schedulers it builds and with which keywords, which keys it refuses on sight:
the validator asks here instead of keeping per-release lists of its own. ``core/schema`` stays the place
for descriptions, UI metadata and the rules no code can derive.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import metadata, resources
from typing import Any

_DATA = resources.files(__package__)


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.19.8"`` → ``(0, 19, 8)``; raises ValueError for anything else."""
    parts = version.strip().split(".")
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version number: {version!r}")
    return tuple(int(p) for p in parts)


#: Every DeepSpeed release with a profile, oldest first.
RELEASES: tuple[str, ...] = tuple(sorted(json.loads((_DATA / "releases.json").read_text()), key=version_tuple))
NEWEST: str = RELEASES[-1]


@cache
def profile(version: str) -> dict[str, Any]:
    """The generated profile of ``version`` (ValueError naming the nearest one when there is none)."""
    check_version(version)
    return json.loads((_DATA / "profiles" / f"{version}.json").read_text())


@cache
def torch_checks() -> dict[str, Any]:
    """The value checks of the torch.optim constructors DeepSpeed may call, read from the pinned torch's code
    (``scripts/gen_torch_checks.py``; evaluated by ``core.rules.torch_checks``)."""
    return json.loads((_DATA / "torch_checks.json").read_text())


def nearest(version: str) -> str:
    """The profiled release closest to ``version`` (by release number)."""
    try:
        wanted = version_tuple(version)
    except ValueError:
        return NEWEST
    # a series ("0.19") means its newest release, not the one before the series began
    series = [r for r in RELEASES if version_tuple(r)[:len(wanted)] == wanted]
    if series:
        return series[-1]
    below = [r for r in RELEASES if version_tuple(r) <= wanted]
    return below[-1] if below else RELEASES[0]


def check_version(version: Any) -> str:
    """``version`` if it has a profile; else a ValueError that names the supported range and the nearest."""
    hint = ""
    if isinstance(version, str):
        bare = version.strip().removeprefix("v").removeprefix("V")  # a git tag's spelling (v0.17.0)
        if bare in RELEASES:
            return bare
        try:
            version_tuple(bare)
            hint = f" The nearest profile is {nearest(bare)}."
        except ValueError:  # not a release number at all: no nearest to offer
            pass
    raise ValueError(
        f"version {version!r} has no DeepSpeed validation profile: supported are {RELEASES[0]} … {NEWEST} "
        f"(every release).{hint} To add a release: python scripts/gen_profiles.py <release>."
    )


def installed_deepspeed() -> str | None:
    """The DeepSpeed release installed in this environment, from package metadata (torch is not imported)."""
    try:
        raw = metadata.version("deepspeed")
    except metadata.PackageNotFoundError:
        return None
    return raw.split("+")[0].strip()


def default_version() -> str:
    """The installed DeepSpeed when it has a profile, else the profiled release nearest to it (0.15.4 is judged as
    0.16.0, 0.20.0 as the newest), else (none installed) the newest."""
    installed = installed_deepspeed()
    if installed is None or installed in RELEASES:
        return installed or NEWEST
    return nearest(installed)


def default_version_note() -> str | None:
    """A sentence for the user when the installed DeepSpeed has no profile and the default is another release."""
    installed = installed_deepspeed()
    if installed is None or installed in RELEASES:
        return None
    return (f"the installed DeepSpeed {installed} has no profile (supported: {RELEASES[0]} – {NEWEST}): configs are "
            f"judged as DeepSpeed {default_version()}, the nearest")


def resolve_version(version: str | None) -> str:
    """The release to validate for: ``version`` (checked), or the default when it is None."""
    return default_version() if version is None else check_version(version)


# ------------------------------------------------------------------------------------------- lookups
def _section_path(prefix: str) -> str:
    # list items and dict values of a section share its profile entry
    return prefix


def section(version: str, prefix: str) -> dict[str, Any] | None:
    """The pydantic model DeepSpeed ``version`` parses the section at ``prefix`` with (None: not pydantic)."""
    return profile(version)["sections"].get(_section_path(prefix))


@cache
def _top_level_keys(version: str) -> frozenset[str]:
    return frozenset(profile(version)["top_level_keys"])


@cache
def top_level_keys_anywhere() -> frozenset[str]:
    """Every top-level key some profiled release reads (a key outside it is ignored by all of them)."""
    return frozenset().union(*(_top_level_keys(r) for r in RELEASES))


@cache
def _ever_pydantic() -> frozenset[str]:
    return frozenset(p for r in RELEASES for p in profile(r)["sections"])


def recorded_default(version: str, prefix: str, key: str) -> tuple[bool, Any]:
    """(True, the value) when DeepSpeed ``version``'s profile records what it uses for ``key`` of section ``prefix``
    ("" for the top level) when the config leaves it out: a top-level key's ``get_scalar_param`` default, or a
    pydantic field's default, if it is a JSON scalar or null. (False, None) when it records none, e.g. for a
    lenient section or a default built by a factory; the schema's default is the one to use then.
    ``gradient_clipping`` is 0.0 up to 0.18.9 and 1.0 from 0.19.0: the schema holds the newest release's. A
    section the release reads with ``dict.get`` gives the default its parse reads a missing key with (the profile's
    ``dict_section_defaults``: bf16's ``immediate_grad_update`` is true in 0.16.x, false from 0.17.1)."""
    if not prefix:
        defaults = profile(version).get("top_level_defaults", {})
        return (True, defaults[key]) if key in defaults else (False, None)
    entry = field_entry(version, prefix, key)
    if entry is None and section(version, prefix) is None:
        top, _, rest = prefix.partition(".")
        read_with = profile(version).get("dict_section_defaults", {}).get(top, {})
        path = f"{rest}.{key}" if rest else key
        return (True, read_with[path]) if path in read_with else (False, None)
    if entry is None or "default" not in entry:
        return False, None
    value = entry["default"]
    return (True, value) if value is None or isinstance(value, bool | int | float | str) else (False, None)


def optimizer_param_popped(version: str, key: str) -> bool | None:
    """Whether DeepSpeed ``version`` pops ``key`` off ``optimizer.params`` before it builds the optimizer
    (``torch_adam``, ``adam_w_mode``; ``fp32_optimizer_states`` from 0.19), so the constructor never sees it;
    None when the profile does not record it."""
    return _recorded_in(version, "optimizer_params_popped", key)


def zero_supported_optimizer(version: str, class_name: str) -> bool | None:
    """Whether ZeRO in DeepSpeed ``version`` runs the optimizer class ``class_name`` (a torch or DeepSpeed class's
    ``__name__``) without ``zero_allow_untested_optimizer`` (its ``ZERO_SUPPORTED_OPTIMIZERS``); None when the
    profile does not record the list."""
    return _recorded_in(version, "zero_supported_optimizers", class_name)


def _recorded_in(version: str, listing: str, name: str) -> bool | None:
    """Whether the profile's list ``listing`` holds ``name``; None for a profile generated before it was recorded."""
    recorded = profile(version).get(listing)
    return None if recorded is None else name in recorded


def section_strict(version: str, prefix: str) -> bool | None:
    """True: a pydantic model refusing unknown keys; False: read with dict.get in ``version`` although
    another release checks it; None: no release parses it with pydantic (the schema decides)."""
    if prefix not in _ever_pydantic():
        return None
    entry = section(version, prefix)
    return entry is not None and entry["extra"] == "forbid"


def key_known(version: str, prefix: str, key: str) -> bool | None:
    """Whether ``version`` reads ``key`` in the section at ``prefix``; None when the profile cannot say
    (a dict.get section whose recorded reads do not tell, see :func:`dict_key_read`)."""
    data = profile(version)
    if prefix == "":
        return key in _top_level_keys(version)
    entry = data["sections"].get(prefix)
    if entry is None:
        if prefix in _ever_pydantic() and prefix not in _top_level_keys(version) and "." not in prefix:
            return False
        return dict_key_read(version, prefix, key)
    return key in _section_names(version, prefix)


@cache
def _dict_reads(version: str, section: str) -> frozenset[str] | None:
    """The dotted paths below top-level ``section`` that ``version`` reads with ``dict.get`` from an empty section
    (the profile's ``dict_section_reads``); None when the release reads it otherwise or not at all."""
    reads = profile(version).get("dict_section_reads", {}).get(section)
    return None if reads is None else frozenset(reads)


@cache
def _dict_reads_anywhere(section: str) -> frozenset[str]:
    return frozenset().union(*(_dict_reads(r, section) or frozenset() for r in RELEASES))


def _entered(reads: frozenset[str], rest: str) -> bool:
    """Whether the recorded ``reads`` looked inside the subsection at dotted ``rest`` ("" is the section)."""
    return not rest or any(r.startswith(f"{rest}.") for r in reads)


def read_behind_switch(version: str, section: str, key: str) -> bool:
    """Whether ``version`` reads ``key`` of the top-level dict.get ``section`` only when the section's ``enabled``
    is on: the release's parse of an empty section (``enabled`` at its default, off) reads ``enabled`` but not the
    key, so with the switch off the key is never read."""
    reads = _dict_reads(version, section)
    return reads is not None and "enabled" in reads and key not in reads


def dict_key_read(version: str, prefix: str, key: str) -> bool | None:
    """Whether ``version``, parsing the section at dotted ``prefix`` with ``dict.get``, reads ``key``: True when its
    recorded reads include it; False when they looked inside that (sub)section without it while another release's
    reads include it (a key of other releases: ``aio.thread_count`` before 0.16.4, ``intra_op_parallelism``
    after, and the keys of later releases' pydantic models that the release never looks up when offered them,
    such as ``bf16.bf16_master_weights_and_grads`` before 0.17.1: the profile's ``dict_section_ignored``); None when
    the recordings cannot tell (keys read only behind a switch are never recorded)."""
    top, _, rest = prefix.partition(".")
    reads = _dict_reads(version, top)
    if reads is None:
        return None
    path = f"{rest}.{key}" if rest else key
    if path in reads:
        return True
    if path in profile(version).get("dict_section_ignored", {}).get(top, ()):
        return False
    if _entered(reads, rest) and path in _dict_reads_anywhere(top):
        return False
    return None


@cache
def _section_names(version: str, prefix: str) -> frozenset[str]:
    """The names and aliases of a pydantic section's fields in ``version`` (a config with thousands of keys asked
    for each key by scanning the fields, in each of the 36 releases)."""
    entry = profile(version)["sections"][prefix]
    return frozenset(n for name, f in entry["fields"].items() for n in (name, f.get("alias")) if n is not None)


def field_entry(version: str, prefix: str, key: str) -> dict[str, Any] | None:
    """The profile's entry for a pydantic field (by name or alias)."""
    entry = section(version, prefix)
    if entry is None:
        return None
    for name, info in entry["fields"].items():
        if key in (name, info.get("alias")):
            return info
    return None


def removed_top_level_keys(version: str) -> dict[str, str]:
    """Top-level keys ``version`` refuses on sight, with its own message."""
    return profile(version)["removed_top_level_keys"]


def compression_shared_failure(version: str, *, eigenvalue: bool) -> str | None:
    """How ``version``'s parse fails ("ErrorType: message") when ``compression_training.shared_parameters`` is
    switched on (with ``quantize_training.eigenvalue`` on too when ``eigenvalue``), or None when it goes through
    (the profile's probe; releases that refuse ``compression_training`` on sight say so through
    ``removed_top_level_keys``)."""
    probes = profile(version).get("compression_shared_enabled") or {}
    return probes.get("eigenvalue" if eigenvalue else "alone")


def elastic_probe(version: str) -> dict[str, Any] | None:
    """What ``version``'s elastic training computed on the profile's probe section (``core.elasticity`` reads which
    variant of the search the release runs from it); None when the release has no elasticity."""
    return profile(version).get("elastic_probe")


def world_size_when_sequence_parallel_fails(version: str, value: Any) -> float | None:
    """The data-parallel world size ``version``'s ``DeepSpeedConfig`` settles on when ``sequence_parallel_size`` is
    ``value`` and cannot divide the GPU count (zero, or not a number): 0.17-0.18 catch the error and fall back to 1
    (the profile's probe, rank 0 of 8, says so); None when the release stops instead, or reads no such key."""
    if (isinstance(value, int | float) and value != 0) or not key_known(version, "", "sequence_parallel_size"):
        return None  # divides (a negative one too: the batch check then refuses the negative world size), or unread
    probes = profile(version).get("sequence_parallel_world_size") or {}
    found = probes.get("zero" if isinstance(value, int | float) else "not-a-number")
    return found if isinstance(found, int | float) and not isinstance(found, bool) else None


#: The probe of the empty (falsy) value of each kind (scripts/profile_extract.py TOP_LEVEL_PROBES).
_EMPTY_KIND = {"list": "empty list", "string": "empty string", "number": "zero", "bool": "false"}


def top_level_value_fails(version: str, key: str, value: Any) -> bool | None:
    """Whether ``version``'s parser fails when the top-level ``key`` holds ``value`` that is not an object
    (the profile's probe with a value of the same JSON kind, empty or not, and with the section's own keys as a
    string or list item); None when the profile cannot say."""
    probes = profile(version).get("top_level_probes")
    kind = ("null" if value is None else "bool" if isinstance(value, bool) else "number"
            if isinstance(value, int | float) else "string" if isinstance(value, str) else "list"
            if isinstance(value, list) else None)
    if kind in _EMPTY_KIND and not value:  # a falsy value has its own probe (a section read under `if not value`)
        kind = _EMPTY_KIND[kind]
    if probes is None or kind not in probes or key not in _top_level_keys(version):
        return None
    if key in probes[kind]:
        return True
    # a section read with `KEY in section`: true of a string containing KEY or a list holding it, and reading
    # section[KEY] then fails (timers: "throughput")
    members = profile(version).get("top_level_member_probes", {}).get(kind, {}).get(key, ())
    return any(member in value for member in members)


def optimizer_names(version: str) -> tuple[str, ...]:
    """DEEPSPEED_OPTIMIZERS of ``version`` (lower-case)."""
    return tuple(profile(version)["optimizers"])


def optimizer_picks_params(version: str, name: str) -> bool:
    """Whether ``version``'s engine builds optimizer ``name`` from the ``params`` keys it knows, ignoring the
    others, instead of passing them all to a constructor (Muon)."""
    return name in profile(version).get("optimizers_picking_params", ())


def optimizer_keywords(version: str, name: str, backend: str) -> frozenset[str] | None:
    """Constructor keywords of the class ``version`` builds for optimizer ``name`` on ``backend``
    (None when the profile has no signature for it, e.g. a class from an optional package, or when the
    engine picks the keys it knows from ``params`` and ignores the rest, as for Muon). The "torch" backend
    (``torch_adam``) is torch.optim.Adam/AdamW, whose keywords are torch's (the schema's, for the pinned torch),
    not those of the release's fused class."""
    if optimizer_picks_params(version, name) or backend == "torch":
        return None
    classes = profile(version)["optimizers"].get(name, {})
    sig = classes.get(backend)
    if sig is None or sig.get("var_keyword"):
        return None
    return frozenset(sig["params"])


def scheduler_names(version: str) -> tuple[str, ...]:
    return tuple(profile(version)["schedulers"])


def autoep_choices(version: str) -> dict[str, tuple[Any, ...]]:
    """The values DeepSpeed ``version``'s AutoEP accepts for each choice key of ``expert_parallel``
    (``validate_autoep_config``, read from the release's source into its profile); empty before AutoEP."""
    return {key: tuple(values) for key, values in (profile(version).get("autoep_choices") or {}).items()}


def scheduler_checks(version: str, name: str) -> tuple[str, ...] | None:
    """The messages DeepSpeed ``version``'s scheduler class ``name`` (and its base classes) raise, e.g.
    "warmup_num_steps must be a positive integer, got {}"; None when the profile does not record them."""
    facts = profile(version).get("scheduler_facts", {}).get(name)
    return None if facts is None else tuple(facts["checks"])


def scheduler_unread(version: str, name: str) -> frozenset[str]:
    """Constructor parameters of scheduler ``name`` whose value DeepSpeed ``version`` never uses."""
    facts = profile(version).get("scheduler_facts", {}).get(name)
    return frozenset(facts["unread"]) if facts else frozenset()


def zero_optimizer_check(version: str, stage: int, fragment: str) -> str | None:
    """The assertion message containing ``fragment`` of the ZeRO optimizer ``version`` builds for ``stage`` (1-2 or
    3), with ``{}`` where the release fills in a value; None when it has no such check (the profile's
    ``zero_optimizer_checks``; they run at ``deepspeed.initialize``)."""
    if stage not in (1, 2, 3):
        return None
    checks = profile(version).get("zero_optimizer_checks", {}).get("3" if stage == 3 else "1_2", ())
    return next((text for text in checks if fragment in text), None)


def torch_autocast_check(version: str, fragment: str) -> str | None:
    """The assertion message containing ``fragment`` that ``deepspeed.initialize`` of ``version`` runs when
    ``torch_autocast`` is on (``runtime/torch_autocast.py``: "Cannot enable both torch autocast and bfloat16" in
    0.17.2-0.18.2, "... zero quantized weights" in every release with the section); None when it has none."""
    checks = profile(version).get("torch_autocast_checks") or ()
    return next((text for text in checks if fragment in text), None)


def optimizer_wrapper(version: str, model_dtype: str, grad_accum_dtype: str | None, stage: int) -> str | None:
    """What the engine of ``version`` wraps the optimizer in (``_do_optimizer_sanity_check``) for a model trained in
    ``model_dtype`` (fp32/fp16/bf16) with ``data_types.grad_accum_dtype`` (None: not written) at ZeRO ``stage``,
    without pipeline, AMP or offload: ``"bf16"`` (BF16_Optimizer), ``"ddp_bf16"``, ``"fp16"``,
    ``"zero_optimization"``, ``"none"``, or the error it raises (``"NotImplementedError: ..."``); None when the
    profile does not record it."""
    wrappers = profile(version).get("optimizer_wrappers")
    if not wrappers:
        return None
    return wrappers.get(f"{model_dtype}/{grad_accum_dtype or '-'}/{min(max(stage, 0), 3)}")


def loss_scale_probe(version: str, label: str) -> Any:
    """The loss scale the engine of ``version`` reads for the probe config ``label`` of the profile's
    ``loss_scale_probes`` ("fp16_off": fp16 off with loss_scale 128, which 0.17 on reads and 0.16 does not;
    "bf16": bf16 on, a static 1.0 in 0.16); None when the profile does not record it."""
    return (profile(version).get("loss_scale_probes") or {}).get(label)


def allgather_sequential_prefetch_one(version: str) -> bool:
    """Whether the engine of ``version`` sets ZeRO-3's prefetch bucket to 1 when ``stage3_allgather_sequential`` is on
    (from 0.18.x; the profile's ``allgather_sequential_prefetch_one``, False where unrecorded)."""
    return bool(profile(version).get("allgather_sequential_prefetch_one"))


def path_config_divides_by_sequence_parallel(version: str) -> bool:
    """Whether ``deepspeed.initialize(config=<a file path>)`` of ``version`` divides the GPUs by
    ``sequence_parallel_size`` as it does for a dict (the profile's ``path_config_sequence_parallel``). Where False
    (0.17.x), ``DeepSpeedConfig`` looks for the key in the path string, finds none and checks the batch over every
    GPU. True where unrecorded or where the release has no sequence parallelism (nothing to divide)."""
    return profile(version).get("path_config_sequence_parallel") is not False


def has_check(version: str, fragment: str) -> bool:
    """Whether one of ``DeepSpeedConfig``'s own assertion messages in ``version`` contains ``fragment``."""
    return any(fragment in text for text in profile(version)["checks"])


def newest_default(prefix: str, key: str) -> tuple[bool, Any]:
    """``recorded_default`` of ``key`` at ``prefix`` in the newest release that reads it: what leaving it out
    means where it means something; (False, None) when no release reads it or records its default."""
    reading = _releases_reading(prefix).get(key)
    return recorded_default(reading[-1], prefix, key) if reading else (False, None)


def history(prefix: str, key: str) -> tuple[str | None, str | None]:
    """(first release that reads ``key`` at ``prefix``, first later release that no longer does)."""
    present = _releases_reading(prefix).get(key)
    if not present:
        return None, None
    added = present[0] if present[0] != RELEASES[0] else None
    after = [r for r in RELEASES if version_tuple(r) > version_tuple(present[-1])]
    return added, after[0] if after else None


@cache
def _releases_reading(prefix: str) -> dict[str, tuple[str, ...]]:
    """Every key some release reads at ``prefix`` → those releases, oldest first (``history`` of a config with
    thousands of unknown keys asked every release about each, in each of the 36 validations of ``versions``)."""
    reading: dict[str, list[str]] = {}
    for release in RELEASES:
        if prefix == "":
            names = _top_level_keys(release)
        elif prefix in profile(release)["sections"]:
            names = _section_names(release, prefix)
        elif (reads := _dict_reads(release, prefix.partition(".")[0])) is not None \
                and _entered(reads, rest := prefix.partition(".")[2]):
            inside = f"{rest}." if rest else ""
            names = {r[len(inside):] for r in reads if r.startswith(inside) and "." not in r[len(inside):]}
            ignored = profile(release).get("dict_section_ignored", {}).get(prefix)
            if not rest and ignored is not None:
                # offered every key of the releases that build the section with pydantic, with ``enabled`` on,
                # it looked up all but ``ignored`` (0.16.x reads fp16's loss-scale keys only with fp16 on)
                names |= _pydantic_names_anywhere(prefix) - set(ignored)
        else:
            continue
        for name in names:
            reading.setdefault(name, []).append(release)
    return {name: tuple(releases) for name, releases in reading.items()}


@cache
def _pydantic_names_anywhere(prefix: str) -> frozenset[str]:
    """The field names and aliases of the section at ``prefix`` in every release that builds it with pydantic."""
    return frozenset().union(*(_section_names(r, prefix) for r in RELEASES if prefix in profile(r)["sections"]))


def supported_stages(version: str, option: str) -> frozenset[int] | None:
    """The ZeRO stages ``version`` allows ``option`` with, read from its check ("X is only supported with
    ZeRO Stage 1, 2, or 3."); None when the release does not check it."""
    import re

    for text in profile(version)["checks"]:
        if text.startswith(f"{option} is only supported with ZeRO Stage"):
            return frozenset(int(d) for d in re.findall(r"\d", text.split("Stage", 1)[1]))
    return None


@cache
def _message_pattern(text: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in text.split("{}")))


def _validator_says(version: str, prefix: str, message: str) -> bool | None:
    entry = section(version, prefix)
    if entry is None or "validator_messages" not in entry:
        return None
    return any(_message_pattern(text).match(message) for text in entry["validator_messages"])


def validator_checks(version: str, prefix: str, message: str) -> bool | None:
    """Whether a validator of ``version``'s pydantic model at ``prefix`` raises ``message`` (its own text,
    ``{}`` for placeholders): True, False when only other releases do, None when no release's profile
    has that message (the schema's own wording: the profiles cannot say)."""
    says = _validator_says(version, prefix, message)
    if says is not False:
        return says
    return False if any(_validator_says(r, prefix, message) for r in RELEASES) else None
