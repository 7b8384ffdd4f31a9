"""Generated lines longer than the project's line length, wrapped as black / ruff format would.

The rewrite prints each replacement on one line, as long as it comes: a collective's native
spelling inside an already long call can run to 200 characters. Here each line of generated
code that is wider than the limit and that the input did not hold is split by linesplit.py;
the user's own lines, however long, are left as they are: a line counts as the user's when
the input has a line with the same text (it may have moved, or been re-indented with its
block). A line is split only when it stands alone: a whole statement on one line, or a line
inside brackets that closes every bracket it opens (an argument of a call laid out over
several lines). New lines are indented by the step of the block they are in (two spaces,
a tab: whatever the file uses). If the split code is not the same program as before (its
`ast` differs), the lines stay as they were.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

from xla2tpu.linesplit import Token, split, width

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
        lines = code.splitlines(keepends=True)
        candidates = [number for number, line in enumerate(lines, start=1)
                      if width(line.rstrip("\r\n")) > self.limit and not self._is_users(line)]
        if not candidates:
            return code
        try:
            tree = ast.parse(code)
            rows = _rows(code)
        except (SyntaxError, ValueError, tokenize.TokenError):
            return code  # the engine reports generated code that does not parse
        replaced = False
        ternaries = _ternaries(tree)
        for number in candidates:
            line = lines[number - 1]
            wrapped = self._wrap(line, rows.get(number), _columns(line, ternaries.get(number, [])))
            if wrapped is not None:
                lines[number - 1] = wrapped
                replaced = True
        if not replaced:
            return code
        wrapped_code = "".join(lines)
        try:
            same = ast.dump(ast.parse(wrapped_code)) == ast.dump(tree)
        except SyntaxError:
            same = False
        return wrapped_code if same else code

    def _is_users(self, line: str) -> bool:
        if self._known is None:
            self._known = {text.strip() for text in self.source.splitlines()}
        return line.strip() in self._known

    def _wrap(self, line: str, row: _Row | None, ternaries: list[tuple[int, int]]) -> str | None:
        """The line split, with its line ending after each new line; None to keep it."""
        if row is None or not row.whole or not row.tokens or row.lowest < row.depth or row.end != row.depth:
            return None  # not all of it, or its brackets are closed on another line
        if any(token.type not in _KINDS for token in row.tokens):
            return None
        inside = row.depth > 0
        if not inside and not (row.starts_statement and row.ends_statement):
            return None  # part of a statement continued with backslashes
        first = row.tokens[0].string
        if any(token.string == ";" for token in row.tokens) or (not inside and first in ("import", "from")):
            return None
        if not inside and (first in _COMPOUND or first in ("match", "case")) and row.tokens[-1].string != ":":
            return None  # a compound statement with its body on the same line
        if not inside and first in ("match", "case"):
            return None  # black formats pattern matching its own way
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        indent = body[: len(body) - len(body.lstrip())]
        tokens, previous_end = [], row.tokens[0].start[1]
        for token in row.tokens:
            tokens.append(Token(_KINDS[token.type], token.string, body[previous_end:token.start[1]]))
            previous_end = token.end[1]
        comment = ""
        if row.comment is not None:
            if _TYPE_IGNORE.match(row.comment.string):
                return None  # mypy reads it on the line it is on
            comment = body[previous_end:row.comment.start[1]] + row.comment.string
        positions = {token.start[1]: index for index, token in enumerate(row.tokens)}
        ends = {token.end[1]: index for index, token in enumerate(row.tokens)}
        marks = [(positions[a], ends[b]) for a, b in ternaries if a in positions and b in ends]
        lines = split(tokens, comment, indent, self._step(row), self.limit, inside=inside, ternaries=marks)
        return None if lines is None else "".join(text + ending for text in lines)

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
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
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


def _ternaries(tree: ast.Module) -> dict[int, list[tuple[int, int]]]:
    """Line number -> the start and end columns (UTF-8 bytes) of its one-line conditional expressions."""
    found: dict[int, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and node.lineno == node.end_lineno and node.end_col_offset is not None:
            found.setdefault(node.lineno, []).append((node.col_offset, node.end_col_offset))
    return found


def _columns(line: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte columns of `line` as character columns."""
    encoded = line.encode("utf-8")
    return [(len(encoded[:start].decode("utf-8", "replace")), len(encoded[:end].decode("utf-8", "replace")))
            for start, end in spans]
