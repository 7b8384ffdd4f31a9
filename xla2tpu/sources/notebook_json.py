"""A notebook's JSON text with some cells' `source` replaced, every other byte as it was.

Reformatting the whole document (`json.dumps`) cannot reproduce what every tool writes
(indent, key order, `\\u` escapes or raw UTF-8, `\\/`, compact separators, CRLF, a final
newline or not), so only the `source` values that changed are spliced into the text, in
the style of the value they replace: a list of strings, one per line, laid out as the old
list was (its unchanged lines keep their exact tokens), or a single string. A line ends
where Python ends it (not at a form feed or U+2028, as `str.splitlines` would).

The text is walked with the standard library's own JSON scanner (`raw_decode` skips a
value, `scanstring` reads a key), so strings holding quotes or brackets cannot mislead it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from json.decoder import scanstring

from xla2tpu.sources.notebook_cells import split_lines

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
# Every backslash in JSON text starts an escape, so scanning them left to right finds each one.
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)


class LayoutError(ValueError):
    """The text is not the JSON notebook it was read as."""


@dataclass(frozen=True)
class Source:
    """Where a cell's `source` value sits in the text."""

    start: int
    end: int
    items: tuple[tuple[int, int], ...] | None  # each string's span when the value is a list


@dataclass(frozen=True)
class _Style:
    """How the document writes strings."""

    ascii_only: bool  # non-ASCII characters as \\u escapes
    escaped_slash: bool  # "/" as "\\/"
    upper_hex: bool  # \\u00E9 rather than \\u00e9

    @classmethod
    def of(cls, text: str) -> _Style:
        escapes = [m.group(1) for m in _ESCAPE.finditer(text)]
        hexes = "".join(e[1:] for e in escapes if e[0] == "u")
        upper = any(c in "ABCDEF" for c in hexes) and not any(c in "abcdef" for c in hexes)
        return cls(text.isascii(), "/" in escapes, upper)

    def encode(self, value: str) -> str:
        token = json.dumps(value, ensure_ascii=self.ascii_only)
        if self.upper_hex:
            token = _ESCAPE.sub(_upper_hex, token)
        # json.dumps never escapes "/": each one in its output is a raw character.
        return token.replace("/", "\\/") if self.escaped_slash else token


def _upper_hex(match: re.Match[str]) -> str:
    escape = match.group(1)
    return "\\u" + escape[1:].upper() if escape[0] == "u" else match.group(0)


def _space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def _skip(text: str, pos: int) -> int:
    """The end of the value starting at `pos`."""
    try:
        return _DECODER.raw_decode(text, pos)[1]
    except json.JSONDecodeError as exc:
        raise LayoutError(str(exc)) from None


def _members(text: str, pos: int) -> dict[str, tuple[int, int]] | None:
    """Each key of the object at `pos` and its value's span (the last one of a repeated
    key, as `json.loads` keeps); None when no object starts there."""
    if text[pos : pos + 1] != "{":
        return None
    members: dict[str, tuple[int, int]] = {}
    pos = _space(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return members
    while True:
        if text[pos : pos + 1] != '"':
            raise LayoutError(f"expected a key at offset {pos}")
        key, pos = scanstring(text, pos + 1)
        pos = _space(text, pos)
        if text[pos : pos + 1] != ":":
            raise LayoutError(f"expected ':' at offset {pos}")
        start = _space(text, pos + 1)
        end = _skip(text, start)
        members[key] = (start, end)
        pos = _space(text, end)
        if text[pos : pos + 1] == "}":
            return members
        if text[pos : pos + 1] != ",":
            raise LayoutError(f"expected ',' or '}}' at offset {pos}")
        pos = _space(text, pos + 1)


def _elements(text: str, pos: int) -> tuple[tuple[int, int], ...] | None:
    """The spans of the elements of the array at `pos`; None when no array starts there."""
    if text[pos : pos + 1] != "[":
        return None
    spans = []
    pos = _space(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return ()
    while True:
        end = _skip(text, pos)
        spans.append((pos, end))
        pos = _space(text, end)
        if text[pos : pos + 1] == "]":
            return tuple(spans)
        if text[pos : pos + 1] != ",":
            raise LayoutError(f"expected ',' or ']' at offset {pos}")
        pos = _space(text, pos + 1)


def sources(text: str) -> list[Source | None]:
    """The `source` of each element of the top-level `cells` list, None for an element
    without one."""
    top = _members(text, _space(text, 0))
    cells = _elements(text, top["cells"][0]) if top and "cells" in top else None
    if cells is None:
        raise LayoutError("no `cells` list")
    found: list[Source | None] = []
    for start, _end in cells:
        members = _members(text, start)
        span = members.get("source") if members else None
        found.append(None if span is None else Source(span[0], span[1], _elements(text, span[0])))
    return found


def _list_token(text: str, source: Source, new: str, style: _Style) -> str:
    """`new` as a list of strings, one per line, laid out like the list at `source`: a
    line it already held keeps its tokens (however the old list split it into strings)."""
    assert source.items is not None
    lines = split_lines(new)
    if not lines:
        return "[]"
    old: list[tuple[str, list[str]]] = []  # each old line: its text, its tokens
    for start, end in source.items:
        token = text[start:end]
        if not old or old[-1][0].endswith(("\n", "\r")):
            old.append(("", []))
        old[-1] = (old[-1][0] + json.loads(token), [*old[-1][1], token])
    tokens = [[style.encode(line)] for line in lines]
    matcher = difflib.SequenceMatcher(None, [line for line, _ in old], lines, autojunk=False)
    for tag, old_from, _old_to, new_from, new_to in matcher.get_opcodes():
        if tag == "equal":
            tokens[new_from:new_to] = [kept for _, kept in old[old_from : old_from + new_to - new_from]]
    items = source.items
    opening = text[source.start + 1 : items[0][0]] if items else ""
    closing = text[items[-1][1] : source.end - 1] if items else ""
    if len(items) > 1:
        separator = text[items[0][1] : items[1][0]]
    elif "\n" in opening:
        separator = "," + opening
    else:  # an inline list of one string (or none): spaced as the document spaces its colons
        before = text[: source.start].rstrip(" \t\r\n")
        gap = text[len(before) : source.start] if before.endswith(":") else " "
        separator = "," + (gap if "\n" not in gap else " ")
    return "[" + opening + separator.join(token for line in tokens for token in line) + closing + "]"


def replace_sources(text: str, new_sources: Mapping[int, str]) -> str:
    """`text` with the `source` of cell `index` (in the `cells` list) set to each new text."""
    found = sources(text)
    style = _Style.of(text)
    out = text
    for index in sorted(new_sources, reverse=True):  # from the end: earlier offsets stay valid
        source = found[index] if index < len(found) else None
        if source is None:
            raise LayoutError(f"cell {index} has no source")
        new = new_sources[index]
        token = style.encode(new) if source.items is None else _list_token(text, source, new, style)
        value = json.loads(token)
        if ("".join(value) if isinstance(value, list) else value) != new:
            raise LayoutError(f"cell {index}: the written source does not read back")
        out = out[: source.start] + token + out[source.end :]
    return out
