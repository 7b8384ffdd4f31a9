"""Generated lines longer than the project's line length, wrapped as black / ruff format would.

The rewrite prints each replacement on one line, as long as it comes: a collective's native
spelling inside an already long call can run to 200 characters. Here each line of generated
code that is wider than the limit and that the input did not hold is split by linesplit.py;
the user's own lines, however long, are left as they are: a line counts as the user's when
the input has a line with the same text (it may have moved, or been re-indented with its
block). What is split is the line's whole statement when no line of that statement is the
user's (black, too, joins a statement before splitting it); else the line alone, when it is
inside brackets and closes every bracket it opens (an argument of a call the user laid out
over several lines); anything else stays as it is. New lines are indented by the step of the
block they are in (two spaces, a tab: whatever the file uses). If the split code is not the
same program as before (its `ast` differs), the lines stay as they were.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

from xla2tpu.formatting.linesplit import Token, split, width

# The header keywords of compound statements: their line must end at its `:` to be split.
_COMPOUND = frozenset({"if", "elif", "else", "while", "for", "with", "try", "except", "finally", "def", "class", "async"})
_KINDS = {tokenize.NAME: "name", tokenize.NUMBER: "number", tokenize.STRING: "string", tokenize.OP: "op"}
# f-strings (Python 3.12+) and t-strings (3.14+) come as several tokens: one string here.
_STRING_STARTS = {getattr(tokenize, name) for name in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, name)}
_STRING_ENDS = {getattr(tokenize, name) for name in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, name)}
_SKIPPED = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.COMMENT}
_TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
_FIRST_INDENT = re.compile(r":[ \t]*(?:#[^\r\n]*)?\r?\n(?:[ \t]*(?:#[^\r\n]*)?\r?\n)*([ \t]+)\S")


@dataclass
class _Row:
    """What tokenize says of one physical line."""

    tokens: list[tokenize.TokenInfo] = field(default_factory=list)
    comment: tokenize.TokenInfo | None = None
    depth: int = 0  # brackets open when the line starts
    lowest: int = 0  # fewest brackets open within it
    end: int = 0  # brackets open after it
    starts_statement: bool = False
    ends_statement: bool = False
    whole: bool = True  # no token runs on to another line
    block: tuple[str, ...] = ()  # the indentation of each enclosing block


class Wrapper:
    """Wraps the generated code of one rewritten file (`source`: the file before the rewrite)
    to `limit` columns. Called with each generated part: whole statements."""

    def __init__(self, source: str, limit: int) -> None:
        self.source = source
        self.limit = limit
        self._known: set[str] | None = None
        self._unit: str | None = None

    def __call__(self, code: str) -> str:
        lines = _lines(code)
        candidates = [number for number, line in enumerate(lines, start=1)
                      if width(line.rstrip("\r\n")) > self.limit and not self._is_users(line)]
        if not candidates:
            return code
        try:
            tree = ast.parse(code)
            rows = _rows(code)
        except (SyntaxError, ValueError, tokenize.TokenError):
            return code  # the engine reports generated code that does not parse
        ternaries = _ternaries(tree, lines)
        newline = next((line[len(line.rstrip("\r\n")):] for line in lines if line.endswith(("\n", "\r"))), "\n")
        done: dict[int, tuple[int, str]] = {}  # first line -> (last line, its replacement)
        for number in candidates:
            span = self._span(rows, lines, number)
            if span is not None and span[0] not in done:
                wrapped = self._wrap(lines, rows, span, ternaries, newline)
                if wrapped is not None:
                    done[span[0]] = (span[-1], wrapped)
        if not done:
            return code
        parts, skip_to = [], 0
        for number, line in enumerate(lines, start=1):
            if number in done:
                skip_to, replacement = done[number]
                parts.append(replacement)
            elif number > skip_to:
                parts.append(line)
        wrapped_code = "".join(parts)
        try:
            same = ast.dump(ast.parse(wrapped_code)) == ast.dump(tree)
        except SyntaxError:
            same = False
        return wrapped_code if same else code

    def _is_users(self, line: str) -> bool:
        if self._known is None:
            self._known = {text.strip() for text in self.source.splitlines()}
        return line.strip() in self._known

    def _span(self, rows: dict[int, _Row], lines: list[str], number: int) -> list[int] | None:
        """The lines to split together for the long line `number`: its whole statement when
        every line of it is generated and only brackets continue it (black joins a statement
        before splitting it: so may we, when no line of it is the user's); else the line alone,
        when inside brackets it closes every bracket it opens."""
        row = rows.get(number)
        if row is None or not row.tokens:
            return None
        whole = self._statement(rows, lines, number)
        if whole is None and row.depth > 0 and row.lowest >= row.depth and row.end == row.depth:
            return [number]
        return whole

    def _statement(self, rows: dict[int, _Row], lines: list[str], number: int) -> list[int] | None:
        """The lines of the statement holding line `number`, when all of them are generated."""
        first = last = number
        while first > 1 and first in rows and not rows[first].starts_statement:
            first -= 1
        while last in rows and not rows[last].ends_statement:
            last += 1
        span = list(range(first, last + 1))
        for at in span:
            part = rows.get(at)
            if (part is None or not part.tokens or self._is_users(lines[at - 1])
                    or (at != last and (part.comment is not None or part.end == 0))):
                return None  # a line of the user's, a comment or a blank line inside, a backslash
        return span if rows[first].starts_statement and rows[last].ends_statement else None

    def _wrap(self, lines: list[str], rows: dict[int, _Row], span: list[int],
              ternaries: list[tuple[tuple[int, int], tuple[int, int]]], newline: str) -> str | None:
        """The lines of `span` as black splits them (the last one's line ending, else `newline`,
        after each); None to keep them."""
        parts = [rows[at] for at in span]
        if any(not part.whole or any(token.type not in _KINDS for token in part.tokens) for part in parts):
            return None  # a string over several lines; an error token
        inside = parts[0].depth > 0
        first, last = parts[0].tokens[0].string, parts[-1].tokens[-1].string
        if any(token.string == ";" for part in parts for token in part.tokens) or (not inside and first in ("import", "from")):
            return None
        if not inside and first in _COMPOUND and last != ":":
            return None  # a compound statement with its body on the same line
        if not inside and first in ("match", "case") and last == ":":
            return None  # black formats pattern matching its own way
        tokens: list[Token] = []
        starts: dict[tuple[int, int], int] = {}
        ends: dict[tuple[int, int], int] = {}
        for at, part in zip(span, parts):
            body = lines[at - 1].rstrip("\r\n")
            previous_end = None
            for token in part.tokens:
                if previous_end is not None:
                    prefix = body[previous_end:token.start[1]]
                elif not tokens or tokens[-1].text in "([{" or token.string in (")", "]", "}", ",", "."):
                    prefix = ""  # the first token of a line joined to the one before
                else:
                    prefix = " "
                starts[at, token.start[1]], ends[at, token.end[1]] = len(tokens), len(tokens)
                tokens.append(Token(_KINDS[token.type], token.string, prefix))
                previous_end = token.end[1]
        last_line = lines[span[-1] - 1]
        body = last_line.rstrip("\r\n")
        ending = last_line[len(body):]
        comment = ""
        if parts[-1].comment is not None:
            if _TYPE_IGNORE.match(parts[-1].comment.string):
                return None  # mypy reads it on the line it is on
            comment = body[parts[-1].tokens[-1].end[1]:parts[-1].comment.start[1]] + parts[-1].comment.string
        marks = [(starts[start], ends[end]) for start, end in ternaries if start in starts and end in ends]
        top = lines[span[0] - 1]
        indent = top[: len(top) - len(top.lstrip())]
        split_lines = split(tokens, comment, indent, self._step(parts[0]), self.limit, inside=inside, ternaries=marks)
        if len(split_lines) == 1 and len(span) == 1:
            return None  # black would not split it: it stays as generated
        return (ending or newline).join(split_lines) + ending

    def _step(self, row: _Row) -> str:
        """One indentation step of the block the row is in."""
        block = row.block
        if len(block) >= 2 and block[-1].startswith(block[-2]) and len(block[-1]) > len(block[-2]):
            return block[-1][len(block[-2]):]
        if len(block) == 1:
            return block[0]
        if self._unit is None:
            found = _FIRST_INDENT.search(self.source)
            self._unit = found.group(1) if found else "    "
        return self._unit


def _rows(code: str) -> dict[int, _Row]:
    """Each physical line's tokens (an f-string as one STRING token) and where it stands."""
    rows: dict[int, _Row] = {}
    depth = 0
    block: list[str] = []
    statement_start = True
    strings: list[tokenize.TokenInfo] = []  # the start tokens of the f-strings open
    for token in tokenize.generate_tokens(iter(_lines(code)).__next__):
        kind = token.type
        if kind in _STRING_STARTS:
            strings.append(token)
            continue
        if strings:
            if kind in _STRING_ENDS:
                start = strings.pop()
                if not strings:  # the text matters only on one line: a longer string is not split
                    text = start.line[start.start[1]:token.end[1]] if start.start[0] == token.end[0] else start.string
                    token = tokenize.TokenInfo(tokenize.STRING, text, start.start, token.end, token.line)
                    kind = tokenize.STRING
            if strings:
                continue
        if kind == tokenize.INDENT:
            block.append(token.string)
        elif kind == tokenize.DEDENT:
            block.pop()
        row = rows.setdefault(token.start[0], _Row(depth=depth, lowest=depth, end=depth, block=tuple(block)))
        if kind == tokenize.COMMENT:
            row.comment = token
        elif kind == tokenize.NEWLINE:
            row.ends_statement = True
            statement_start = True
        elif kind not in _SKIPPED:
            if not row.tokens:
                row.starts_statement = statement_start and depth == 0
            statement_start = False
            row.tokens.append(token)
            if token.end[0] != token.start[0]:
                row.whole = False
                for number in range(token.start[0] + 1, token.end[0] + 1):
                    rows.setdefault(number, _Row()).whole = False
            if kind == tokenize.OP and token.string in "([{":
                depth += 1
            elif kind == tokenize.OP and token.string in ")]}":
                depth -= 1
                row.lowest = min(row.lowest, depth)
            row.end = depth
    return rows


def _lines(code: str) -> list[str]:
    """The lines as Python counts them: `\\n`, `\\r\\n` and `\\r` end one (a form feed does not,
    for `str.splitlines` it would)."""
    return io.StringIO(code, newline="").readlines()


def _ternaries(tree: ast.Module, lines: list[str]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where each conditional expression starts and ends: (line, character column) pairs."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and node.end_lineno is not None and node.end_col_offset is not None:
            found.append(((node.lineno, _column(lines, node.lineno, node.col_offset)),
                          (node.end_lineno, _column(lines, node.end_lineno, node.end_col_offset))))
    return found


def _column(lines: list[str], number: int, offset: int) -> int:
    """The character column of a UTF-8 byte offset (as `ast` gives them) on line `number`."""
    line = lines[number - 1]
    return offset if line.isascii() else len(line.encode("utf-8")[:offset].decode("utf-8", "replace"))
