"""Where LibCST puts a node of CPython's tree: the range its PositionProvider gives the
matching LibCST node, and the code `code_for_node` prints for it. Every finding made on
the ast is reported through here, so that it lands exactly where a finding made on the
LibCST tree did.

What CPython's tree gives, and what changes (tests/test_positions.py checks it node by
node against LibCST on every fixture):

- Lines: 1-based in both, and `\\r\\n`, `\\r` and `\\n` each end a line (inside strings too).
- Columns: ast's `col_offset` / `end_col_offset` are UTF-8 byte offsets into the line;
  LibCST's are code points, 0-based (a Diagnostic adds 1). A line of ASCII needs no
  conversion; another is encoded once.
- Parentheses: LibCST's range of a node leaves out its own parentheses (`lpar`/`rpar`),
  and so does ast's, except for a parenthesised tuple and a generator expression: their
  range in ast holds one pair (a generator expression that is a call's only argument
  takes the call's; a tuple in an f-string's braces, before Python 3.12, the braces),
  which is left out here with the whitespace and comments inside it.
- Code: `code_for_node` prints a node with its own parentheses and all between them. The
  parentheses right around a node are its own, except the outermost pair when it is the
  parent's syntax: the call's around its only argument (`f(x)`, `f(*x)`), the class's
  around its only base, the `with` statement's around its only item when that has no
  `as` (`with (lock):`).

Checked for expressions (names, attributes, calls, subscripts, strings...) and import
aliases (whose LibCST code also holds the comma after them and the comment after that);
not for statements. LibCST drops the whitespace before a top-level statement when it
holds a form feed, and its columns on that line are short by as much: not copied here.
"""

from __future__ import annotations

import ast
import bisect
import functools
import itertools
import re
from typing import NamedTuple

from xla2tpu.trees.order import child_nodes, walk


class Point(NamedTuple):
    """A place as LibCST's PositionProvider gives it (`CodePosition`): line 1-based, column
    in code points, 0-based."""

    line: int
    column: int


class Span(NamedTuple):
    """A node's range, as LibCST's `CodeRange` has it."""

    start: Point
    end: Point


NEWLINE = re.compile(r"\r\n?|\n")
# The code of a line up to its comment: no quote, `#` or backslash, escapes, one-line strings.
_CODE = re.compile(r"""(?:[^#'"\\\r\n]|\\.|'(?:[^'\\\r\n]|\\.)*'|"(?:[^"\\\r\n]|\\.)*")*""")
_BLANK = " \t\f"


def line_starts(source: str) -> list[int]:
    """The offset of each line's start, and the end of the source."""
    if "\r" in source:
        bounds = [0, *(match.end() for match in NEWLINE.finditer(source))]
    else:  # the common case, three times faster without the regex
        bounds = [0, *itertools.accumulate(len(line) + 1 for line in source.split("\n"))]
        bounds.pop()  # past the end
    if bounds[-1] != len(source):
        bounds.append(len(source))
    return bounds


class Positions:
    """LibCST's positions and code for the nodes of `tree`, CPython's tree of `source`
    (without the tree, no parentheses are taken for a parent's)."""

    def __init__(self, source: str, tree: ast.Module | None = None) -> None:
        self.source = source
        self._starts = line_starts(source)
        self._tree = tree
        self._ends: list[int] | None = None  # last line of each top-level statement
        self._parents: dict[int, ast.AST] = {}  # filled one top-level statement at a time
        self._walked: set[int] = set()
        self._encoded: dict[int, bytes | None] = {}  # line -> its UTF-8 bytes, None: ASCII
        self._code_ends: dict[int, int] = {}

    # ------------------------------------------------------------------ what callers ask
    def where(self, node: ast.AST) -> Span:
        """The range LibCST's PositionProvider gives the node (line 1-based, column 0-based)."""
        start, end = self._content(node)
        return Span(self._position(start), self._position(end))

    def code(self, node: ast.AST) -> str:
        """What LibCST's `code_for_node` prints for the node: its code, own parentheses included."""
        start, end = self._span(node)
        included = self._included(node, start)
        opens, closes = self._around(start, end)
        pairs = min(len(opens), len(closes))
        own = included + pairs
        if own and self._parents_pair(node, closes[pairs - 1] if pairs else end - 1):
            own -= 1
        if own < included:  # the pair in ast's range is the call's
            start, end = self._strip(start, end)
        elif own > included:
            start, end = opens[own - included - 1], closes[own - included - 1] + 1
        return self.source[start:end]

    @functools.cached_property
    def line_texts(self) -> list[str]:
        """The text of each line without its end: what ast's byte columns count in."""
        return NEWLINE.split(self.source) if "\r" in self.source else self.source.split("\n")

    def lines(self, first: int, last: int) -> str:
        """The source of lines `first` to `last` (1-based, inclusive)."""
        return self.source[self._starts[first - 1]:self._starts[last]]

    # ------------------------------------------------------------------ offsets
    def _offset(self, line: int, column: int) -> int:
        """The offset in the source of ast's (line, byte column)."""
        base = self._starts[line - 1]
        if column == 0:
            return base
        if line not in self._encoded:
            text = self.source[base:self._starts[line]]
            self._encoded[line] = None if text.isascii() else text.encode("utf-8", "surrogatepass")
        encoded = self._encoded[line]
        return base + (column if encoded is None else len(encoded[:column].decode("utf-8", "surrogatepass")))

    def _position(self, offset: int) -> Point:
        line = min(bisect.bisect_right(self._starts, offset) - 1, len(self._starts) - 2)
        return Point(line + 1, offset - self._starts[line])

    def _span(self, node: ast.AST) -> tuple[int, int]:
        return (self._offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self._offset(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def _content(self, node: ast.AST) -> tuple[int, int]:
        """The offsets LibCST's range spans: ast's, less the parentheses ast includes."""
        start, end = self._span(node)
        return self._strip(start, end) if self._included(node, start) else (start, end)

    # ------------------------------------------------------------------ parentheses
    def _included(self, node: ast.AST, start: int) -> int:
        """How many pairs of parentheses ast's range of `node` holds: one for a generator
        expression and a parenthesised tuple, else none."""
        if isinstance(node, ast.GeneratorExp):
            return 1
        if not isinstance(node, ast.Tuple) or self.source[start] not in "({":  # `{`: an f-string's
            return 0
        if not node.elts:
            return 1
        # `(a), b` starts with its first item's own parenthesis; `(a, b)` before it.
        first_start, first_end = self._span(node.elts[0])
        opens, closes = self._around(first_start, first_end)
        pairs = min(len(opens), len(closes))
        return int(start < (opens[pairs - 1] if pairs else first_start))

    def _strip(self, start: int, end: int) -> tuple[int, int]:
        """Inside the parentheses at `start` and `end - 1`, from the first code to the last
        (nothing inside: right before the `)`, as LibCST has an empty tuple)."""
        first = self._forward(start + 1)
        return first, max(first, self._back(end - 1))

    def _around(self, start: int, end: int) -> tuple[list[int], list[int]]:
        """The offsets of the `(` right before `start` and of as many `)` right after `end`,
        innermost first (only whitespace, comments and other such parentheses between)."""
        source = self.source
        opens: list[int] = []
        at = self._back(start)
        while at > 0 and source[at - 1] == "(":
            opens.append(at - 1)
            at = self._back(at - 1)
        closes: list[int] = []
        at = self._forward(end) if opens else end
        while len(closes) < len(opens) and at < len(source) and source[at] == ")":
            closes.append(at)
            at = self._forward(at + 1)
        return opens, closes

    def _back(self, at: int) -> int:
        """`at` moved back over whitespace, line ends, comments and line continuations."""
        source = self.source
        while at > 0:
            char = source[at - 1]
            if char in _BLANK:
                at -= 1
            elif char in "\r\n":  # to the end of the code of the line before
                line = bisect.bisect_right(self._starts, at - 1) - 1
                at = self._starts[line] + self._code_end(line)
                if at > self._starts[line] and source[at - 1] == "\\":
                    at -= 1
            else:
                break
        return at

    def _forward(self, at: int) -> int:
        """`at` moved on over whitespace, line ends, comments and line continuations."""
        source = self.source
        while at < len(source):
            char = source[at]
            if char in _BLANK or char in "\r\n":
                at += 1
            elif char == "#":
                found = NEWLINE.search(source, at)
                at = found.start() if found is not None else len(source)
            elif char == "\\" and source[at + 1:at + 2] in ("\r", "\n"):
                at += 1
            else:
                break
        return at

    def _code_end(self, line: int) -> int:
        """Where the code of `line` (0-based) ends: at its comment, or at its line end."""
        found = self._code_ends.get(line)
        if found is None:
            text = self.source[self._starts[line]:self._starts[line + 1]].rstrip("\r\n")
            found = _CODE.match(text).end()  # type: ignore[union-attr]
            if found == len(text) or text[found] != "#":
                found = len(text)
            self._code_ends[line] = found
        return found

    def _parents_pair(self, node: ast.AST, close: int) -> bool:
        """Whether the outermost parentheses right around `node`, closed at `close`, are its
        parent's syntax: the call's that they end, the class's bases or the `with` items that
        `:` follows."""
        parent = self._parent(node)
        if isinstance(parent, ast.FormattedValue):
            return self.source[close] == "}"  # a tuple's range before Python 3.12: the braces
        if isinstance(parent, ast.Call):
            sole = not parent.keywords and len(parent.args) == 1 and parent.args[0] is node
            return sole and close + 1 == self._span(parent)[1]
        if isinstance(parent, ast.ClassDef):
            sole = not parent.keywords and len(parent.bases) == 1 and parent.bases[0] is node
        elif isinstance(parent, ast.withitem) and parent.context_expr is node and parent.optional_vars is None:
            statement = self._parent(parent)
            sole = isinstance(statement, (ast.With, ast.AsyncWith)) and len(statement.items) == 1
        else:
            return False
        after = self._forward(close + 1)
        return sole and self.source[after:after + 1] == ":"

    def _parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of `node`, found by walking only the top-level statement that holds it."""
        tree = self._tree
        if tree is None or id(node) in self._parents:
            return self._parents.get(id(node))
        if self._ends is None:
            self._ends = [statement.end_lineno or statement.lineno for statement in tree.body]
        line = getattr(node, "lineno", None)
        index = bisect.bisect_left(self._ends, line) if line is not None else len(self._ends)
        if index < len(tree.body) and index not in self._walked:
            self._walked.add(index)
            for parent in walk(tree.body[index]):
                for child in child_nodes(parent):
                    self._parents[id(child)] = parent
        return self._parents.get(id(node))
