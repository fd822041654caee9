"""Reading and writing config text: JSON and HJSON in, stable readable JSON out.

DeepSpeed itself loads config files with ``hjson`` (comments and quoteless
strings allowed) and refuses duplicate keys; ``load_config`` does the same and
says where the problem is.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import hjson
from hjson.decoder import getNext, mlscanstring, scanKeyName, scanstring, scantfnns

from core.findings import join_index, join_path
from core.source_map import key_positions, locate

#: Larger inputs are refused before parsing. The one size limit of a config, for the CLI, an upload and the
#: paste box alike (the app passes it to both widgets, and the server's ``maxUploadSize`` in
#: .streamlit/config.toml is the same). Real DeepSpeed configs are a few KB.
MAX_CONFIG_MB = 1
MAX_CONFIG_BYTES = MAX_CONFIG_MB * 1024 * 1024
#: Deeper documents are refused (a real config nests 4-5 levels).
MAX_DEPTH = 64


class ConfigLoadError(ValueError):
    """The text is not a readable config; the message says where and how to fix it."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None) -> None:
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{message}{where}")


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


class _Found(Exception):  # the walk below stops with it; never seen outside this module
    def __init__(self, key: str, offset: int) -> None:
        self.key = key
        self.offset = offset


class _AnyNumber:
    """What ``scantfnns`` needs to scan past numbers without converting them (1e400 must not stop the walk)."""

    @staticmethod
    def parse_float(literal: str) -> float:
        return 0.0

    @staticmethod
    def parse_int(literal: str) -> int:
        return 0


def _walk_value(text: str, end: int) -> int:
    char, end = getNext(text, end)
    if char == "{":
        return _walk_object(text, end + 1, braces=True)
    if char == "[":
        char, end = getNext(text, end + 1)
        while char != "]":
            end = _walk_value(text, end)
            char, end = getNext(text, end)
            if char == ",":
                char, end = getNext(text, end + 1)
        return end + 1
    if char in ("\"", "'"):
        return mlscanstring(text, end)[1] if text.startswith("'''", end) else scanstring(text, end + 1)[1]
    return scantfnns(_AnyNumber, text, end)[1]


def _walk_object(text: str, end: int, *, braces: bool) -> int:
    # The same steps as hjson.decoder.JSONObject (JSON is read the same way), keeping where each key starts.
    # Parsers call the duplicate check when an object closes, so the first object to close with a repeated
    # key is the one they refused: stop there.
    seen: set[str] = set()
    duplicate: tuple[str, int] | None = None
    char, end = getNext(text, end)
    if braces and char == "}":
        return end + 1
    while True:
        start = getNext(text, end)[1]
        key, end = scanKeyName(text, start)
        if key in seen and duplicate is None:
            duplicate = (key, start)
        seen.add(key)
        char, end = getNext(text, end)
        if char != ":":
            raise ValueError("expected a colon")
        end = _walk_value(text, end + 1)
        char, end = getNext(text, end)
        if char == ",":
            char, end = getNext(text, end + 1)
        if (not braces and char == "") or (braces and char == "}"):
            break
    if duplicate is not None:
        raise _Found(*duplicate)
    return end + 1 if braces else end


def _find_duplicate(text: str, key: str) -> tuple[int, int] | None:
    """Line and column of the repeated ``key`` a parser refused in ``text`` (JSON or HJSON), or None."""
    try:
        char, start = getNext(text, 0)
        if char in ("{", "["):
            _walk_value(text, start)
        else:  # HJSON's root object without braces
            _walk_object(text, start, braces=False)
    except _Found as found:
        return _line_col(text, found.offset) if found.key == key else None
    except (ValueError, IndexError, OverflowError, RecursionError):
        pass  # text the walk cannot follow: the message stands without a position
    return None


def _depth(value: Any, limit: int) -> int:
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def check_depth(config: Any) -> None:
    """ValueError when ``config`` nests deeper than ``MAX_DEPTH`` levels, as the loader refuses it: for configs that
    reach the engine from Python rather than through ``load_config`` (copying or serialising one would recurse
    past Python's limit)."""
    if _depth(config, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"the config nests deeper than {MAX_DEPTH} levels; this is not a DeepSpeed config")


def _first_non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """The path (``core.findings`` form) and value of the first NaN or infinite number in a JSON value, or None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where, node
        if isinstance(node, dict):
            stack.extend((v, join_path(where, k)) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, join_index(where, i)) for i, v in reversed(list(enumerate(node))))
    return None


def _non_finite_error(value: Any, path: str = "", text: str | None = None,
                      whole: str = "the document") -> ConfigLoadError | None:
    """The error naming the first NaN or infinite number in ``value`` (and where it is in ``text``; ``whole``
    names the value itself when that is the number), or None."""
    found = _first_non_finite(value, path)
    if found is None:
        return None
    where, number = found
    spelled = "NaN" if math.isnan(number) else ("-Infinity" if number < 0 else "Infinity")
    position = locate(key_positions(text), where) if text is not None and where else None
    return ConfigLoadError(
        f"{where or whole} is {spelled} (written as NaN, Infinity, or a number beyond the float range "
        "such as 1e400): these are not valid JSON numbers and DeepSpeed cannot use them; write a finite number",
        line=position[0] if position else None, column=position[1] if position else None)


def check_finite_numbers(value: Any, path: str = "", *, whole: str = "the document") -> None:
    """Raise ConfigLoadError naming the place of a NaN or infinite number (e.g. 1e400) in a JSON value (``whole``:
    what to call the value when it is that number)."""
    error = _non_finite_error(value, path, whole=whole)
    if error is not None:
        raise error


def parse_json_value(text: str, *, finite: bool = True) -> Any:
    """Strict JSON of one value of any type (what a widget's JSON text area holds), refused as DeepSpeed's loader
    would refuse it: syntax errors and duplicate keys with line and column, NaN and Infinity (unless not
    ``finite``: text that holds more than a config, whose config part the caller checks), numbers beyond the float
    range, numbers of more than 4300 digits, nesting too deep to read. Raises ConfigLoadError."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates)  # NaN, Infinity: refused below, by path
    except _DuplicateKeyError as exc:
        raise _duplicate_error(text, exc.key) from None
    except json.JSONDecodeError as exc:
        hint = _value_hint(text, exc.pos)
        raise ConfigLoadError(f"not valid JSON: {exc.msg}" + (f"; {hint}" if hint else ""),
                              line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise ConfigLoadError("the value nests too deeply to read") from None
    except ValueError as exc:  # NaN / Infinity, or an integer of more digits than Python converts
        raise (_number_error(exc) or ConfigLoadError(str(exc))) from None
    if finite:
        check_finite_numbers(value, whole="the value")  # 1e400 overflows to infinity
    return value


_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}
_BARE_WORD = re.compile(r"[A-Za-z_][\w.\-]*")
_SINGLE_QUOTED = re.compile(r"'([^'\n]*)'")


def _value_hint(text: str, pos: int) -> str | None:
    """How to write the token at ``pos`` that JSON refused, when it is a common slip: Python's True/False/None, a
    string in single quotes, or a bare word such as auto."""
    if (quoted := _SINGLE_QUOTED.match(text, pos)) is not None:
        return f"JSON strings take double quotes: {json.dumps(quoted.group(1))}"
    word = _BARE_WORD.match(text, pos)
    if word is None:
        return None
    if word.group() in _PYTHON_WORDS:
        return f"JSON writes {_PYTHON_WORDS[word.group()]} where Python writes {word.group()}"
    if word.group() in ("NaN", "Infinity"):
        return None  # refused as numbers, with their own message
    return f"text is written in double quotes: {json.dumps(word.group())}"


def is_strict_json(text: str | bytes) -> bool:
    """Whether ``text`` is strict JSON (no comments, trailing commas, unquoted keys or byte-order mark), as
    ``json.load`` in the HF Trainer and Accelerate requires; DeepSpeed itself reads HJSON too."""
    return strict_json_problem(text) is None


def strict_json_problem(text: str | bytes) -> tuple[str, int, int] | None:
    """(json's message, line, column) of why ``json.load`` on a file of ``text``, opened as UTF-8 as the HF
    Trainer and Accelerate open it, fails (a byte-order mark is not skipped there); None when it reads it."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"not UTF-8 ({exc.reason} at byte {exc.start})", 1, 1
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg, exc.lineno, exc.colno
    except ValueError as exc:  # numbers json refuses to convert (over Python's digit limit)
        return str(exc), 1, 1
    return None


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def load_config(text: str | bytes, document: str = "a DeepSpeed config") -> dict[str, Any]:
    """Parse a DeepSpeed config (or the ``document`` named, e.g. a model's config.json) from JSON or HJSON text.

    Raises ``ConfigLoadError`` (a ValueError) with line and column for broken
    syntax, duplicate keys, a document that is not an object, NaN/Infinity,
    oversized or absurdly deep input.
    """
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigLoadError(too_big(len(text)))
        encoding = json.detect_encoding(text)  # how json tells UTF-16/32 text (BOM or NUL pattern) from UTF-8
        if encoding.startswith(("utf-16", "utf-32")) and _decodes(text, encoding):
            width = encoding[4:6]
            raise ConfigLoadError(
                f"the file is UTF-{width} text"
                + (" (what Windows PowerShell's > writes)" if width == "16" else "")
                + ", and DeepSpeed reads UTF-8: save it as UTF-8 (your editor's encoding setting, or PowerShell's "
                "Out-File -Encoding utf8)"
            )
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigLoadError(
                f"the file is not UTF-8 text (byte {exc.start} is 0x{text[exc.start]:02x}): a binary file, or text "
                "in another encoding? Give the JSON config itself, saved as UTF-8"
            ) from None
    if not isinstance(text, str):
        raise ConfigLoadError(f"expected config text, got {type(text).__name__}")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise ConfigLoadError(too_big(len(text.encode("utf-8", "surrogatepass"))))
    if "\x00" in text:
        pos = text.index("\x00")
        line, col = _line_col(text, pos)
        raise ConfigLoadError("the text contains a NUL byte; is this a binary file?", line=line, column=col)
    body = text.lstrip("\ufeff")
    stripped = body.strip()
    if not stripped:
        raise ConfigLoadError("the config is empty; a DeepSpeed config is a JSON object such as "
                              "{\"train_batch_size\": 8}" if document == "a DeepSpeed config" else
                              f"the file is empty; {document} is a JSON object: {{ \"key\": value, ... }}")
    # Parse the text where it stands, so that every line and column is the user's; only the surrounding
    # whitespace JSON does not accept (form feeds, no-break spaces ...) is blanked, keeping every offset.
    lead, trail = len(body) - len(body.lstrip()), len(body.rstrip())
    data = _parse(_blank(body[:lead]) + stripped + _blank(body[trail:]))
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}.get(
            type(data), "null" if data is None else type(data).__name__
        )
        raise ConfigLoadError(
            f"the document is {kind}, but {document} must be a JSON object: {{ \"key\": value, ... }}",
            line=1, column=1,
        )
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ConfigLoadError(f"the document nests deeper than {MAX_DEPTH} levels; this is not a DeepSpeed config")
    if (error := _non_finite_error(data, text=text)) is not None:
        raise error
    return data


def too_big(size: int, *, at_least: bool = False) -> str:
    """The message for a config of ``size`` bytes over the limit (``at_least``: more was there than was read)."""
    amount = f"more than {MAX_CONFIG_MB} MB" if at_least else f"{size / 1024 / 1024:.1f} MB"
    return (
        f"the config is {amount}, too large: the limit is {MAX_CONFIG_MB} MB "
        "(real DeepSpeed configs are a few KB) — is this the right file?"
    )


def _blank(space: str) -> str:
    return "".join(char if char in " \t\n\r" else " " for char in space)


class _NumberTooLarge(ValueError):
    def __init__(self, literal: str) -> None:
        self.literal = literal
        super().__init__(literal)


def _hjson_float(literal: str) -> float:
    # hjson turns a float into an int when it is whole, and int(inf) raises OverflowError: name the number first
    value = float(literal)
    if not math.isfinite(value):
        raise _NumberTooLarge(literal)
    return value


def _parse(text: str) -> Any:
    # Strict JSON first: exact numbers, exact error positions. HJSON (what DeepSpeed itself
    # uses) only when the text is not plain JSON, e.g. because it has comments.
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)  # NaN, Infinity: refused by the caller, by path
    except _DuplicateKeyError as exc:
        raise _duplicate_error(text, exc.key) from None
    except RecursionError:
        raise ConfigLoadError(f"the document nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as json_exc:
        number_error = _number_error(json_exc)
        if number_error is not None:
            raise number_error from None
        json_error = json_exc
    try:
        return hjson.loads(text, object_pairs_hook=_no_duplicates, parse_float=_hjson_float)
    except _DuplicateKeyError as exc:
        raise _duplicate_error(text, exc.key) from None
    except RecursionError:
        raise ConfigLoadError(f"the document nests deeper than {MAX_DEPTH} levels") from None
    except Exception as exc:  # hjson raises several kinds; _syntax_error picks the clearer report
        hjson_error = exc
    raise _syntax_error(text, json_error, hjson_error) from None


def _hjson_ish(text: str, error: json.JSONDecodeError) -> bool:
    """Whether strict JSON stopped at something HJSON accepts: a comment, a key without quotes, a trailing comma,
    a single-quoted string or a line break in place of a comma."""
    char = text[error.pos:error.pos + 1]
    if char in ("/", "#"):
        return True
    if error.msg.startswith("Expecting property name"):
        return char not in ("", ",")
    if error.msg == "Expecting value":
        # Not a value without quotes: HJSON reads one to the end of its line, commas and brackets included, and
        # stops far away; the JSON error at the value (a template's placeholder, a typo) is the useful one.
        return char in ("]", "'")
    if error.msg.startswith("Expecting ',' delimiter"):
        before = text[:error.pos]
        return "\n" in before[len(before.rstrip()):]
    return False


def _syntax_error(text: str, json_error: ValueError, hjson_error: Exception) -> ConfigLoadError:
    """The error for text neither JSON nor HJSON reads: hjson's when the text is HJSON up to the place strict JSON
    stopped (hjson then knows where the real mistake is), else strict JSON's, which is exact."""
    if isinstance(json_error, json.JSONDecodeError) and _hjson_ish(text, json_error):
        if isinstance(hjson_error, hjson.HjsonDecodeError) and hjson_error.pos > json_error.pos:
            message = hjson_error.msg
            if message == "Bad key name (eof)":
                message = "the text ends inside an object; a closing } is missing"
            return ConfigLoadError(f"not valid JSON or HJSON: {message}", line=hjson_error.lineno,
                                   column=hjson_error.colno)
        if isinstance(hjson_error, _NumberTooLarge):
            return ConfigLoadError(
                f"the number {hjson_error.literal} is too large for a float (it reads as infinity): NaN and "
                "Infinity are not valid JSON numbers and DeepSpeed cannot use them; write a finite number"
            )
        if isinstance(hjson_error, ValueError) and (number_error := _number_error(hjson_error)) is not None:
            return number_error
    if isinstance(json_error, json.JSONDecodeError):
        return ConfigLoadError(
            f"not valid JSON or HJSON: {json_error.msg}", line=json_error.lineno, column=json_error.colno
        )
    return ConfigLoadError(f"not valid JSON or HJSON: {json_error}")


def _number_error(exc: ValueError) -> ConfigLoadError | None:
    """The error for a number JSON reading refused (NaN / Infinity, more than 4300 digits), else None."""
    if "Exceeds the limit" in str(exc) and "integer string conversion" in str(exc):
        return ConfigLoadError(
            "a number in the config is too large (more than 4300 digits); no DeepSpeed setting takes a "
            "number that large — check for a pasted blob or a corrupted file"
        )
    if "is not a valid JSON number" in str(exc):
        return ConfigLoadError(f"{exc}: NaN and Infinity are not allowed; write a finite number")
    return None


def _duplicate_error(text: str, key: str) -> ConfigLoadError:
    where = _find_duplicate(text, key)
    message = (
        f"the key {key!r} appears twice in the same object; DeepSpeed refuses duplicate keys "
        "(\"Duplicate keys in DeepSpeed config\") — keep one of them"
    )
    if where:
        return ConfigLoadError(message, line=where[0], column=where[1])
    return ConfigLoadError(message)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read and parse a config file; every failure is a ``ConfigLoadError`` whose message names the file."""
    return load_config_file_and_text(path)[0]


def load_config_bytes_and_text(data: bytes, document: str = "a DeepSpeed config") -> tuple[dict[str, Any], str]:
    """``load_config`` of a file's bytes (with their encoding checks), and their text."""
    return load_config(data, document), data.decode("utf-8-sig")  # load_config refused what is not UTF-8


def load_config_file_and_text(path: str | Path, document: str = "a DeepSpeed config") -> tuple[dict[str, Any], str]:
    """``load_config_file`` and the file's text (read once), for what must start from the text: a diff, the
    line and column of each key."""
    file = Path(path)
    try:
        if file.is_dir():
            raise ConfigLoadError(f"{path}: is a directory, expected a JSON config file")
        size = file.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigLoadError(f"{path}: {too_big(size)}")
        # A device or pipe reports size 0 (/dev/zero never ends): read no more than the limit allows
        with file.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigLoadError(f"{path}: {too_big(len(data), at_least=True)}")
    except FileNotFoundError:
        raise ConfigLoadError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigLoadError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        return load_config_bytes_and_text(data, document)
    except ConfigLoadError as exc:
        named = ConfigLoadError(f"{path}: {exc}")  # the message has the position already
        named.line, named.column = exc.line, exc.column
        raise named from None


#: How much of a training log ``read_log_tail`` reads: the last part holds the steady-state step times.
MAX_LOG_BYTES = 64 * 1024 * 1024


def _bytes_text(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size:,} bytes"


#: Above this share of undecodable characters a "log" is said not to be text (a binary file, a compressed log).
_NOT_TEXT_SHARE = 0.3


def log_encoding(head: bytes) -> str:
    """The codec a training log starting with ``head`` (its first bytes) is decoded with: UTF-16/32 when a BOM or
    json's NUL pattern says so (Windows PowerShell's ``>`` and ``Tee-Object`` write UTF-16) and, without a BOM, the
    bytes decode to text (binary data has NULs too), else UTF-8. The
    codec names a byte order, so that a tail cut from the file's end decodes without the BOM."""
    if not any(head):  # NULs only (/dev/zero, a sparse file): no text pattern to go by
        return "utf-8"
    encoding = json.detect_encoding(head)
    if encoding in ("utf-16", "utf-32"):  # with a BOM: its byte order
        little = head[:4] == b"\xff\xfe\x00\x00" if encoding == "utf-32" else head[:2] == b"\xff\xfe"
        return f"{encoding}-{'le' if little else 'be'}"
    if encoding.startswith(("utf-16", "utf-32")):  # NULs between bytes, no BOM: text only if they decode to text
        try:
            start = head[: len(head) - len(head) % (4 if encoding.startswith("utf-32") else 2)].decode(encoding)
        except UnicodeDecodeError:
            return "utf-8"
        return encoding if start and all(ch.isprintable() or ch in "\t\n\r" for ch in start) else "utf-8"
    return "utf-8"


def decode_log(data: bytes, encoding: str = "") -> tuple[str, str | None]:
    """(text, note): a training log's bytes decoded leniently in ``encoding`` (``log_encoding`` of ``data`` when
    not given), with a note when that is not UTF-8 or when most of it is not text at all."""
    encoding = encoding or log_encoding(data[:4])
    text = data.decode(encoding, errors="replace").lstrip("\ufeff")
    notes = [] if encoding == "utf-8" else [f"read as {encoding[:6].upper()} text"]
    if text:
        junk = (text.count("\ufffd") + text.count("\x00")) / len(text)
        if junk > _NOT_TEXT_SHARE:
            notes.append(f"{junk:.0%} of it is not text: is this the training log DeepSpeed wrote?")
    return text, "; ".join(notes) or None


def read_log_tail(path: str | Path, limit: int = MAX_LOG_BYTES) -> tuple[str, str | None]:
    """(text, note): the last ``limit`` bytes of a training log (a stream such as /dev/zero: its first ``limit``
    bytes), decoded leniently (``decode_log``: UTF-8, or UTF-16/32 as the file's start says), and a note saying
    what was left out when it was cut or how it was read. OSError when unreadable."""
    file = Path(path)
    if file.is_dir():
        raise IsADirectoryError(21, "is a directory")
    with file.open("rb") as handle:
        size = file.stat().st_size
        head = handle.read(4)
        encoding = log_encoding(head)
        width = 4 if encoding.startswith("utf-32") else 2 if encoding.startswith("utf-16") else 1
        limit -= limit % width  # a tail on a character boundary
        if size > limit and handle.seekable():
            handle.seek(size - limit)
            data = handle.read(limit)
            notes = [f"read the last {_bytes_text(limit)} of {_bytes_text(size)}"]
        else:  # a device or pipe reports size 0 and may never end
            data = head + handle.read(limit + 1 - len(head))
            notes = [f"read the first {_bytes_text(limit)} only (a stream)"] if len(data) > limit else []
            data = data[:limit]
    text, how = decode_log(data, encoding)
    if notes and size > limit:
        text = text.partition("\n")[2]  # the first line was cut in the middle
    return text, "; ".join([*notes, *([how] if how else [])]) or None


def dump_config(config: dict[str, Any], *, indent: int = 2) -> str:
    """Stable, readable JSON: key order kept, 2-space indent, non-ASCII kept, trailing newline. A config whose
    indented text would pass the loader's size limit (``MAX_CONFIG_BYTES``) is written compact, on one line, so
    that what the tool writes it can read back."""
    text = _dumps(config, indent)
    if indent is not None and len(text) > MAX_CONFIG_BYTES // 4 and len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        text = _dumps(config, None)
    return text


def _dumps(config: dict[str, Any], indent: int | None) -> str:
    separators = None if indent is not None else (",", ":")
    return json_text(config, indent=indent, separators=separators) + "\n"


#: A UTF-16 surrogate on its own: in a Python str every one is lone (a valid pair is one code point).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps`` with non-ASCII kept (``ensure_ascii=False``) and NaN refused, that UTF-8 can always encode:
    a lone surrogate (from a "\\ud800" escape in the input) has no UTF-8, so it alone is written as its JSON
    escape, which reads back as the same string (escaping all non-ASCII made text up to 6x larger)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, **options)
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
