"""A file's text as CPython's tree addresses it: lines, and a node's span and code.

CPython gives columns as UTF-8 byte offsets into a line; findings use code points, as
LibCST and editors do. An expression's span is the same in both trees (its parentheses
are not part of it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import NamedTuple

_NEWLINE = re.compile(r"\r\n|\r|\n")


class Point(NamedTuple):
    line: int  # 1-based
    column: int  # 0-based, in code points


class Span(NamedTuple):
    start: Point
    end: Point


class SourceText:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = _NEWLINE.split(source)

    def column(self, line: int, offset: int) -> int:
        """The code-point column of UTF-8 byte `offset` in `line` (1-based)."""
        text = self.lines[line - 1]
        if text.isascii():
            return offset
        return len(text.encode()[:offset].decode(errors="replace"))

    def span(self, node: ast.AST) -> Span:
        start = Point(node.lineno, self.column(node.lineno, node.col_offset))  # type: ignore[attr-defined]
        end_line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        end = Point(end_line, self.column(end_line, node.end_col_offset))  # type: ignore[attr-defined]
        return Span(start, end)

    def code(self, node: ast.AST) -> str:
        """The source of `node`."""
        (line, column), (end_line, end_column) = self.span(node)
        if line == end_line:
            return self.lines[line - 1][column:end_column]
        parts = [self.lines[line - 1][column:], *self.lines[line:end_line - 1], self.lines[end_line - 1][:end_column]]
        return "\n".join(parts)

    def block_code(self, block: Sequence[ast.stmt]) -> str:
        """The source lines of a block of statements, comments between them included."""
        if not block:
            return ""
        first = min([block[0].lineno, *(d.lineno for d in getattr(block[0], "decorator_list", ()))])
        return "\n".join(self.lines[first - 1:block[-1].end_lineno])
