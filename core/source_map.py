"""Where each key of a config's text is: the line and column a finding points to (``dsconfig validate`` prints
``FILE:LINE:COLUMN``, and GitHub annotations carry them), for JSON and for the HJSON DeepSpeed also reads.

This reads the text's structure only (keys, items, where values end); the values themselves are what
``core.io.load_config`` parsed. Text it cannot follow gives no positions, never an error: a finding then points
at the file alone.
"""

from __future__ import annotations

import json.decoder
import re

from core.findings import join_index, join_path, split_path

#: Line and column, both from 1.
Position = tuple[int, int]

#: Whitespace and comments, in one match: the reader's hottest step.
_SPACE = re.compile(r"(?:[ \t\r\n\ufeff]+|#[^\n]*|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
#: A JSON number or literal where a value ends (HJSON reads anything else up to the line's end as a string); NaN
#: and Infinity too, which Python's json reads (the loader then refuses them by their path and position).
_SCALAR = re.compile(r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity)"
                     r"(?=[ \t\r]*(?:$|[,}\]\n#]|//|/\*))", re.MULTILINE)


class _Unreadable(ValueError):
    """The text is not JSON or HJSON this reader follows."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.offsets: dict[str, int] = {}

    def skip(self) -> None:
        """Past whitespace and comments (#, //, /* */)."""
        self.pos = _SPACE.match(self.text, self.pos).end()
        if self.text.startswith("/*", self.pos):
            raise _Unreadable("unclosed comment")

    def peek(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            raise _Unreadable("unexpected end")
        return self.text[self.pos]

    def string(self) -> str:
        """A quoted string at ``pos`` ("…", '…' or HJSON's '''…'''); ``pos`` moves past it."""
        text, start = self.text, self.pos
        if text.startswith("'''", start):
            end = text.find("'''", start + 3)
            if end < 0:
                raise _Unreadable("unclosed string")
            self.pos = end + 3
            return text[start + 3:end]
        if text[start] == "'":  # HJSON's single quotes: the same escapes as JSON's double quotes
            end = start + 1
            while end < len(text) and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise _Unreadable("unclosed string")
            self.pos = end + 1
            return text[start + 1:end]
        value, self.pos = json.decoder.scanstring(text, start + 1, False)
        return value

    def key(self) -> str:
        if self.text[self.pos] in "\"'":
            return self.string()
        end = self.text.find(":", self.pos)  # HJSON: a key without quotes runs to its colon
        if end < 0:
            raise _Unreadable("key without a colon")
        key = self.text[self.pos:end].strip()
        self.pos = end
        return key

    def value(self, path: str) -> None:
        char = self.peek()
        if char == "{":
            self.pos += 1
            self.members(path, "}")
        elif char == "[":
            self.pos += 1
            self.items(path)
        elif char in "\"'":
            self.string()
        else:
            match = _SCALAR.match(self.text, self.pos)
            if match:
                self.pos = match.end()
            else:  # an HJSON string without quotes: to the end of the line
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end

    def members(self, path: str, closing: str | None) -> None:
        """An object's members up to ``closing`` (None: HJSON's root object without braces, to the end)."""
        while True:
            self.skip()
            if self.pos >= len(self.text):
                if closing is None:
                    return
                raise _Unreadable("unclosed object")
            char = self.text[self.pos]
            if char == closing:
                self.pos += 1
                return
            if char == ",":
                self.pos += 1
                continue
            start = self.pos
            child = join_path(path, self.key())
            self.offsets[child] = start
            if self.peek() != ":":
                raise _Unreadable("expected a colon")
            self.pos += 1
            self.value(child)

    def items(self, path: str) -> None:
        index = 0
        while True:
            char = self.peek()
            if char == "]":
                self.pos += 1
                return
            if char == ",":
                self.pos += 1
                continue
            child = join_index(path, index)
            self.offsets[child] = self.pos
            self.value(child)
            index += 1


def key_positions(text: str) -> dict[str, Position]:
    """Each path of ``text`` (named as findings name them) → (line, column) of its key, or of the item itself
    for a list item; {} when the text is not JSON or HJSON this reader can follow."""
    reader = _Reader(text)
    try:
        first = reader.peek()
        reader.offsets[""] = reader.pos  # the document: where a missing top-level key points
        if first == "{":
            reader.pos += 1
            reader.members("", "}")
        else:
            reader.members("", None)
    except (_Unreadable, ValueError, IndexError):
        return {}
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    positions: dict[str, Position] = {}
    line = 0
    for path, offset in sorted(reader.offsets.items(), key=lambda item: item[1]):
        while line + 1 < len(line_starts) and line_starts[line + 1] <= offset:
            line += 1
        positions[path] = (line + 1, offset - line_starts[line] + 1)
    return positions


def locate(positions: dict[str, Position], path: str) -> Position | None:
    """Where a finding at ``path`` points: its key, else the nearest enclosing key the text has (a missing
    key points at its section, a missing top-level key and the config as a whole at the document's start); None
    for text without positions."""
    keys = split_path(path)
    while keys:
        prefix = ""
        for key in keys:
            prefix = join_index(prefix, key) if isinstance(key, int) else join_path(prefix, key)
        if prefix in positions:
            return positions[prefix]
        keys.pop()
    return positions.get("")


def at(name: str, position: Position | None) -> str:
    """``FILE:LINE:COLUMN`` (what editors and terminals open at the place), or the file alone without a position."""
    return f"{name}:{position[0]}:{position[1]}" if position else name
