"""One long line of Python split as black splits it (ruff format splits the same way).

wrap.py hands over the tokens of a generated line that is too long; this module returns the
lines black would print for it. Only line breaks are decided here: the whitespace between two
tokens stays as written, and so do quotes and numbers. What black does, in its stable style:

- a line is split at its last opening bracket ("right-hand split"): the content goes on its
  own line one indentation step deeper, the closing bracket on a line of its own; trailers
  that fit are kept on the first line (`).item()`), so the split moves to an earlier bracket;
- statements get optional parentheses where black puts invisible ones (after `=`, `return`,
  `if`, `while`, `for ... in`, `del`, `assert`, around conditional expressions), used only
  when splitting inside them reads better than splitting at a bracket;
- content that still does not fit is split at its delimiters of the highest priority (commas,
  then `if`/`else`, `and`/`or`, comparisons, operators): one element per line, with a magic
  trailing comma after comma-separated elements; recursively for what is still too long.

Strings (f-strings included) are single tokens: never split inside.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# Delimiter priorities, black's: the higher, the earlier a line is split there.
COMPREHENSION, COMMA, TERNARY, LOGIC, STRING, COMPARATOR, DOT = 20, 18, 16, 14, 12, 10, 1
_MATH = {"|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4, "@": 4, "**": 2}
_COMPARISONS = frozenset({"<", ">", "==", "!=", "<=", ">="})
_OPENING = {"(": ")", "[": "]", "{": "}"}
_CLOSING = {")": "(", "]": "[", "}": "{"}
# What black puts optional parentheses after in an assignment (`:` before an annotation).
_ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "@=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "**=", "//=", ":"})
# Words that end no operand: an operator after one of them is unary (`return -x`, `in *a`).
_KEYWORDS = frozenset({
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
    "raise", "return", "try", "while", "with", "yield",
})


@dataclass(frozen=True)
class Token:
    kind: str  # "name", "number", "string" (f-strings included) or "op"
    text: str
    prefix: str = ""  # the whitespace before it on its line


class CannotSplit(Exception):
    """This way of splitting does not apply to the line."""


class _Leaf:
    """A token of the line, or an optional parenthesis (value "" while invisible)."""

    __slots__ = ("kind", "value", "prefix", "partner", "atom", "role", "comment", "depth")

    def __init__(self, kind: str, value: str, prefix: str = "", role: str = "") -> None:
        self.kind = kind  # the bracket itself for brackets, else the Token kind
        self.value = value
        self.prefix = prefix
        self.partner: _Leaf | None = None  # a bracket's matching bracket
        self.atom = False  # an opening bracket of a literal or of optional parentheses, not a call or subscript
        self.role = role  # what a keyword or operator is here (see _roles)
        self.comment = ""  # a comment after it, with the whitespace before the comment
        self.depth = 0  # bracket depth in the line that marked it last

    def copy(self) -> _Leaf:
        twin = _Leaf(self.kind, self.value, self.prefix, self.role)
        twin.atom, twin.comment = self.atom, self.comment
        return twin


def _comma() -> _Leaf:
    """A trailing comma the split adds (black's has no parent node: see _Splitter.run)."""
    return _Leaf("op", ",", role="added")


def _opening(leaf: _Leaf) -> bool:
    return leaf.kind in _OPENING


def _closing(leaf: _Leaf) -> bool:
    return leaf.kind in _CLOSING


def _pair(leaves: Sequence[_Leaf]) -> None:
    opened: list[_Leaf] = []
    for leaf in leaves:
        if _opening(leaf):
            opened.append(leaf)
        elif _closing(leaf) and opened:
            leaf.partner = opened.pop()
            leaf.partner.partner = leaf


def width(text: str) -> int:
    """Columns `text` takes, as black and ruff count them (wide characters take two; a tab
    takes ruff's default indent width)."""
    if text.isascii() and "\t" not in text:
        return len(text)
    return sum(4 if c == "\t" else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


class _Line:
    """Leaves to be printed on one line at `indent`; `inside`: within brackets opened on an
    earlier line. Delimiters are found among the leaves the line `tracks` (black's bracket
    tracker sees all of them, only those between matching brackets, or none)."""

    def __init__(self, leaves: list[_Leaf], indent: str, unit: str, inside: bool, tracks: str = "all") -> None:
        self.leaves = leaves
        self.indent = indent
        self.unit = unit
        self.inside = inside
        self.explode = False  # black's should_split_rhs: a collection's elements go one per line
        self.delimiters: dict[int, int] = {}
        self.invisible: list[_Leaf] = []
        self.magic_comma: _Leaf | None = None
        if tracks != "none":
            self._mark(None if tracks == "all" else _between_matching(leaves))

    def _mark(self, only: set[int] | None) -> None:
        depth, opened, fors, lambdas = 0, 0, [], []
        previous: _Leaf | None = None
        for index, leaf in enumerate(self.leaves):
            if only is not None and id(leaf) not in only:
                continue
            if _closing(leaf) and opened == 0:
                continue  # closes a bracket of an earlier line
            if fors and fors[-1] == depth and leaf.kind == "name" and leaf.value == "in":
                depth -= 1
                fors.pop()
            if lambdas and lambdas[-1] == depth and leaf.value == ":":
                depth -= 1
                lambdas.pop()
            if _closing(leaf):
                depth -= 1
                opened -= 1
                if not leaf.value:
                    self.invisible.append(leaf)
            leaf.depth = depth
            if _closing(leaf) and index and self.leaves[index - 1].value == "," and _magic(leaf, self.leaves):
                self.magic_comma = leaf
            if depth == 0:
                priority = _before(leaf, previous)
                if priority and previous is not None:
                    self.delimiters[id(previous)] = priority
                elif leaf.value == ",":
                    self.delimiters[id(leaf)] = COMMA
            if _opening(leaf):
                depth += 1
                opened += 1
                if not leaf.value:
                    self.invisible.append(leaf)
            previous = leaf
            if leaf.kind == "name" and leaf.value == "lambda":
                depth += 1
                lambdas.append(depth)
            elif leaf.kind == "name" and leaf.value == "for":
                depth += 1
                fors.append(depth)

    def __bool__(self) -> bool:
        return bool(self.leaves)

    def render(self) -> str:
        if not self.leaves:
            return self.indent
        first, *rest = self.leaves
        text = self.indent + first.value + "".join(leaf.prefix + leaf.value for leaf in rest)
        return text + "".join(leaf.comment for leaf in self.leaves)

    def lengths(self) -> Iterator[tuple[int, _Leaf, int]]:
        """(index, leaf, columns it adds, its comment included); a line's first leaf has no
        whitespace before it."""
        for index, leaf in enumerate(self.leaves):
            yield index, leaf, width((leaf.prefix if index else "") + leaf.value + leaf.comment)

    def max_priority(self, exclude: _Leaf | None = None) -> int:
        """Raises ValueError without delimiters."""
        return max(p for k, p in self.delimiters.items() if exclude is None or k != id(exclude))

    def count(self, priority: int) -> int:
        return sum(1 for p in self.delimiters.values() if p == priority)

    def first_is(self, *words: str) -> bool:
        values = [leaf.value for leaf in self.leaves[: len(words)]]
        return values == list(words)

    @property
    def is_def(self) -> bool:
        return self.first_is("def") or self.first_is("async", "def")

    @property
    def is_with(self) -> bool:
        return self.first_is("with") or self.first_is("async", "with")

    def copy(self) -> _Line:
        """The line with fresh leaves, all tracked (black's second opinion reads it anew)."""
        leaves = [leaf.copy() for leaf in self.leaves]
        _pair(leaves)
        twin = _Line(leaves, self.indent, self.unit, self.inside)
        twin.explode = self.explode
        twin.magic_comma = twin.magic_comma or self.magic_comma
        return twin


def _between_matching(leaves: Sequence[_Leaf]) -> set[int]:
    """The leaves inside bracket pairs that both lie in `leaves` (and those brackets)."""
    kept: set[int] = set()
    stack: list[list[int]] = []
    started = False
    for leaf in leaves:
        if _opening(leaf):
            started = True
            stack.append([id(leaf)])
        elif _closing(leaf) and started:
            if not stack or leaf.partner is None or id(leaf.partner) != stack[-1][0]:
                break
            level = stack.pop()
            level.append(id(leaf))
            kept.update(level)
        elif stack:
            stack[-1].append(id(leaf))
    return kept


def _one_sequence(opening: _Leaf, closing: _Leaf, leaves: Sequence[_Leaf], kinds: tuple[str, str] = ("(", ")")) -> bool:
    """Whether the brackets hold at most one element followed by a comma (a one-tuple, a
    one-element subscript); the elements of a call or a signature never count as one."""
    if (opening.kind, closing.kind) != kinds or opening not in leaves:
        return False
    depth = closing.depth + 1
    commas = 0
    for leaf in leaves[leaves.index(opening) + 1:]:
        if leaf is closing:
            break
        if leaf.depth == depth and leaf.value == ",":
            commas += 1
            if not opening.atom and opening.kind == "(":
                commas += 1
                break
    return commas < 2


def _magic(closing: _Leaf, leaves: Sequence[_Leaf]) -> bool:
    """Whether the comma before `closing` is a magic trailing comma (black explodes its
    brackets one element per line)."""
    opening = closing.partner
    if closing.kind == "}":
        return True
    if closing.kind == "]":
        return not (opening is not None and not opening.atom and _one_sequence(opening, closing, leaves, ("[", "]")))
    return opening is not None and not _one_sequence(opening, closing, leaves)


def _before(leaf: _Leaf, previous: _Leaf | None) -> int:
    """The priority of a split before `leaf` (black's is_split_before_delimiter)."""
    if leaf.role == "unary":
        return 0
    if leaf.value == "." and (previous is None or _closing(previous)):
        return DOT
    if leaf.kind == "op" and leaf.value in _MATH:
        return _MATH[leaf.value]
    if leaf.kind == "op" and leaf.value in _COMPARISONS:
        return COMPARATOR
    if leaf.kind == "string" and previous is not None and previous.kind == "string":
        return STRING
    if leaf.kind != "name":
        return 0
    if leaf.role in ("comp_for", "comp_async", "comp_if"):
        return COMPREHENSION
    if leaf.role == "ternary":
        return TERNARY
    if leaf.value == "is":
        return COMPARATOR
    if leaf.value == "in" and leaf.role == "comparison" and not (previous is not None and previous.value == "not"):
        return COMPARATOR
    if leaf.role == "not_in" and not (previous is not None and previous.value == "is"):
        return COMPARATOR
    if leaf.value in ("and", "or"):
        return LOGIC
    return 0


def _roles(leaves: Sequence[_Leaf], statement: bool) -> None:
    """What each keyword and operator is, read left to right: black reads it from the tree."""
    operand_end = False  # the previous token ends an operand: an operator now is binary
    fors: list[list[int]] = [[]]  # per bracket level: open `for` targets (their depth marks)
    comprehension: list[bool] = [False]  # per bracket level: a comprehension `for` was seen
    for index, leaf in enumerate(leaves):
        value = leaf.value
        first = index == 0 or (index == 1 and leaves[0].value == "async")
        if leaf.kind == "op" and value in ("-", "+", "~", "*", "**") and not operand_end:
            leaf.role = "unary"
        elif leaf.kind == "name":
            if value == "for":
                if statement and first:
                    leaf.role = "statement"
                else:
                    leaf.role = "" if index and leaves[index - 1].value == "async" else "comp_for"
                    comprehension[-1] = True
                fors[-1].append(index)
            elif value == "async" and index + 1 < len(leaves) and leaves[index + 1].value == "for" and not (statement and index == 0):
                leaf.role = "comp_async"
            elif value == "in":
                leaf.role = "for_in" if fors[-1] else "comparison"
                if fors[-1]:
                    fors[-1].pop()
            elif value == "if":
                leaf.role = "statement" if statement and first else "comp_if" if comprehension[-1] else "ternary"
            elif value == "else":
                leaf.role = "statement" if statement and index == 0 else "ternary"
            elif value == "not" and index + 1 < len(leaves) and leaves[index + 1].value == "in":
                leaf.role = "not_in"
        if _opening(leaf):
            fors.append([])
            comprehension.append(False)
        elif _closing(leaf) and len(fors) > 1:
            fors.pop()
            comprehension.pop()
        operand_end = (
            leaf.kind in ("number", "string") or _closing(leaf) or value == "..."
            or (leaf.kind == "name" and value not in _KEYWORDS)
        )


def _wrap(leaves: list[_Leaf], start: int, end: int, atom: bool) -> None:
    """Invisible parentheses around leaves[start:end] (black's wrap_in_parentheses): the
    opening one takes the whitespace before the first leaf."""
    opening, closing = _Leaf("(", "", leaves[start].prefix), _Leaf(")", "")
    leaves[start].prefix = ""
    opening.atom = atom
    opening.partner, closing.partner = closing, opening
    leaves.insert(end, closing)
    leaves.insert(start, opening)


def _redundant(leaves: Sequence[_Leaf], start: int, end: int) -> bool:
    """Whether leaves[start:end] is one pair of parentheses black prints as optional ones: not
    around a tuple, a generator, nothing, a star, `yield` or `:=`."""
    if end - start < 3 or leaves[start].kind != "(" or leaves[end - 1] is not leaves[start].partner:
        return False
    depth = 0
    for leaf in leaves[start + 1:end - 1]:
        if depth == 0 and (leaf.value in (",", ":=", "yield") or leaf.role == "comp_for"
                           or leaf.role == "unary" and leaf.value in ("*", "**")):
            return False
        depth += _opening(leaf) - _closing(leaf)
    return True


def _optional(leaves: list[_Leaf], start: int, end: int) -> None:
    """Optional parentheses around the expression leaves[start:end] of a statement: its own
    redundant pair becomes invisible, or an invisible pair is added."""
    if start >= end:
        return
    if _redundant(leaves, start, end):
        leaves[start].value = leaves[end - 1].value = ""
        leaves[start].atom = True
    else:
        _wrap(leaves, start, end, atom=True)


def _statement_parentheses(leaves: list[_Leaf]) -> None:
    """Where black's statements take optional parentheses (normalize_invisible_parens)."""

    def top(values: Sequence[str] | frozenset[str], start: int) -> list[int]:
        """Where `values` stand outside brackets and lambda parameters."""
        found, depth, lambdas = [], 0, 0
        for i in range(start, len(leaves)):
            depth += _opening(leaves[i]) - _closing(leaves[i])
            if depth:
                continue
            if leaves[i].value == "lambda":
                lambdas += 1
            elif leaves[i].value == ":" and lambdas:
                lambdas -= 1
            elif not lambdas and leaves[i].value in values:
                found.append(i)
        return found

    head = leaves[0].value
    if leaves[0].value == "async" and len(leaves) > 1:
        head = leaves[1].value
    colon = len(leaves) - 1 if leaves[-1].value == ":" else len(leaves)
    if head in ("if", "elif", "while") and colon < len(leaves):
        _optional(leaves, 1, colon)
    elif head == "for" and colon < len(leaves):
        start = 2 if leaves[0].value == "async" else 1
        ins = [i for i in top(["in"], start) if leaves[i].role == "for_in"]
        if ins:
            _optional(leaves, ins[0] + 1, colon)  # the iterable first: wrapping it keeps the target's indexes
            _optional(leaves, start, ins[0])
    elif head in ("return", "del"):
        _optional(leaves, 1, len(leaves))
    elif head == "assert":
        commas = top([","], 1)
        if commas:
            _optional(leaves, commas[0] + 1, len(leaves))
            _optional(leaves, 1, commas[0])
        else:
            _optional(leaves, 1, len(leaves))
    elif head not in _KEYWORDS and leaves[0].value != "@":
        assigns = top(_ASSIGNMENTS, 0)
        for position, next_position in reversed(list(zip(assigns, [*assigns[1:], len(leaves)]))):
            _optional(leaves, position + 1, next_position)
        if assigns and top([","], 0) and top([","], 0)[0] < assigns[0]:
            _optional(leaves, 0, assigns[0])  # a tuple unpacked: `a, b = ...`


def _ternary_parentheses(leaves: list[_Leaf], ternaries: Sequence[tuple[_Leaf, _Leaf]]) -> None:
    """Invisible parentheses around each conditional expression not already alone in a pair
    of parentheses (black's visit_test)."""
    for first, last in ternaries:
        start, end = leaves.index(first), leaves.index(last) + 1
        before = leaves[start - 1] if start else None
        if before is not None and before.kind == "(" and end < len(leaves) and leaves[end] is before.partner:
            continue
        _wrap(leaves, start, end, atom=False)


def split(tokens: Sequence[Token], comment: str, indent: str, unit: str, limit: int, *, inside: bool,
          ternaries: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The lines black prints for the line of `tokens` at `indent`, each level of brackets one
    `unit` deeper (one line when it does not split it). `comment` (with the whitespace before
    it) ends the line. `inside`: the line is part of brackets opened on an earlier line,
    not a whole statement. `ternaries`: the first and last token index of each conditional
    expression (`a if b else c`)."""
    leaves = [_Leaf(t.text if t.kind == "op" and (t.text in _OPENING or t.text in _CLOSING) else t.kind, t.text, t.prefix)
              for t in tokens]
    _pair(leaves)
    _roles(leaves, statement=not inside)
    for index, leaf in enumerate(leaves):
        if _opening(leaf):  # a literal's bracket, not a call's or a subscript's
            before = leaves[index - 1] if index else None
            leaf.atom = before is None or not (
                before.kind in ("number", "string") or _closing(before)
                or before.kind == "name" and before.value not in _KEYWORDS
            )
    marks = [(leaves[a], leaves[b]) for a, b in ternaries]
    if not inside:
        _statement_parentheses(leaves)
    _ternary_parentheses(leaves, marks)
    if comment:
        last = leaves[-1]
        if last.kind == ")" and not last.value and len(leaves) >= 3 and leaves[-3] is last.partner:
            last = leaves[-2]  # optional parentheses around one token: the comment is that token's
        last.comment = comment
    return [piece.render() for piece in _Splitter(limit).transform(_Line(leaves, indent, unit, inside))]


@dataclass
class _RHS:
    head: _Line
    body: _Line
    tail: _Line
    opening: _Leaf
    closing: _Leaf


class _Splitter:
    """black's line transforms for one line length. `force`: optional parentheses are always
    used (black's FORCE_OPTIONAL_PARENTHESES, for its second opinion)."""

    def __init__(self, limit: int, force: bool = False) -> None:
        self.limit = limit
        self.force = force

    def short(self, line: _Line) -> bool:
        return width(line.render()) <= self.limit

    def transform(self, line: _Line) -> list[_Line]:
        """The line, or the lines of the first split that applies (black's transform_line)."""
        if not line.explode and line.magic_comma is None and self.short(line):
            return [line]
        if line.is_def:
            splits = [self.left_hand_split]
        elif line.inside:
            splits = [self.delimiter_split, self.rhs_with_omits]
        else:
            splits = [self.rhs_with_omits]
        for how in splits:
            try:
                return self.run(line, how)
            except CannotSplit:
                continue
        return [line]

    def run(self, line: _Line, how: Callable[[_Line], list[_Line]]) -> list[_Line]:
        """The lines of one split, each transformed in turn. A right-hand split that left its
        first line too long without using the line's optional parentheses gets black's second
        opinion: the same split using them, kept when every line of it fits."""
        rendered = line.render()
        optional = [bracket for bracket in line.invisible if bracket.depth == 0]
        result: list[_Line] = []
        for piece in how(line):
            if piece.render() == rendered:
                raise CannotSplit("the split changed nothing")
            result.extend(self.transform(piece))
        if (self.force or how != self.rhs_with_omits or not line.invisible or any(b.value for b in optional)
                or self.short(result[0]) or any(leaf.role == "added" for leaf in line.leaves)):
            return result
        forced = _Splitter(self.limit, force=True)
        second = forced.run(line.copy(), forced.rhs_with_omits)
        return second if all(self.short(piece) for piece in second) else result

    def build(self, leaves: list[_Leaf], line: _Line, opening: _Leaf, part: str) -> _Line:
        """A head, body or tail of a bracket split (black's bracket_split_build_line)."""
        if part != "body":
            return _Line(leaves, line.indent, line.unit, inside=False, tracks="matched" if part == "head" else "none")
        if line.is_def and leaves and opening.kind == "(" and not any(leaf.value == "," for leaf in leaves):
            leaves.append(_comma())
        body = _Line(leaves, line.indent + line.unit, line.unit, inside=True)
        body.explode = _explodes(body, opening)
        return body

    def first_rhs(self, line: _Line, omit: frozenset[int]) -> _RHS:
        """Head, body and tail around the last bracket pair whose closing bracket is not in
        `omit` (black's _first_right_hand_split)."""
        tail: list[_Leaf] = []
        body: list[_Leaf] = []
        head: list[_Leaf] = []
        current = tail
        opening = closing = None
        for leaf in reversed(line.leaves):
            if current is body and leaf is opening:
                current = head if body else tail
            current.append(leaf)
            if current is tail and _closing(leaf) and id(leaf) not in omit:
                opening, closing = leaf.partner, leaf
                current = body
        if opening is None or closing is None or not head:
            raise CannotSplit("no brackets to split at")
        tail.reverse()
        body.reverse()
        head.reverse()
        result = _RHS(self.build(head, line, opening, "head"), self.build(body, line, opening, "body"),
                      self.build(tail, line, opening, "tail"), opening, closing)
        _check(result.head, result.body, result.tail)
        return result

    def rhs(self, line: _Line, omit: frozenset[int]) -> list[_Line]:
        return self.omitting_optional(self.first_rhs(line, omit), line, omit)

    def omitting_optional(self, rhs: _RHS, line: _Line, omit: frozenset[int]) -> list[_Line]:
        """Split at optional parentheses only when splitting at the brackets inside them would
        not do (black's _maybe_split_omitting_optional_parens)."""
        if (not self.force and rhs.opening.kind == "(" and not rhs.opening.value and rhs.closing.kind == ")"
                and not rhs.closing.value and self.can_omit(rhs)):
            inner = omit | {id(rhs.closing)}
            try:
                without = self.first_rhs(line, inner)
                if self.prefer_without(without, rhs):
                    return self.omitting_optional(without, line, inner)
            except CannotSplit as exc:
                chained = sum(1 for leaf in line.leaves if leaf.value == "=") > 1
                if not chained and not _can_be_split(rhs.body) and not self.short(rhs.body):
                    raise CannotSplit("the content is too long and cannot be split") from exc
        for bracket, value in ((rhs.opening, "("), (rhs.closing, ")")):
            bracket.value = bracket.value or value
        return [part for part in (rhs.head, rhs.body, rhs.tail) if part]

    def can_omit(self, rhs: _RHS) -> bool:
        """Whether the content splits well at its own brackets (black's can_omit_invisible_parens)."""
        line = rhs.body
        if not line.delimiters:
            return True
        priority = line.max_priority()
        count = line.count(priority)
        if count > 1 or count == 1 and priority == COMMA and rhs.head.is_with:
            return False
        if priority == DOT:
            return True
        first, second = line.leaves[0], line.leaves[1]
        if _opening(first) and not _closing(second) and self.can_omit_opening(line, first):
            return True
        penultimate, last = line.leaves[-2], line.leaves[-1]
        if last.kind in (")", "}") or (last.kind == "]" and last.partner is not None and last.partner.atom):
            return not _opening(penultimate) and self.can_omit_closing(line, last)
        return False

    def can_omit_opening(self, line: _Line, first: _Leaf) -> bool:
        remainder = False
        length = width(line.indent)
        index = -1
        for index, leaf, leaf_length in line.lengths():
            if _closing(leaf) and leaf.partner is first:
                remainder = True
            if remainder:
                length += leaf_length
                if length > self.limit:
                    return False
                if _opening(leaf):
                    remainder = False
        return len(line.leaves) == index + 1

    def can_omit_closing(self, line: _Line, last: _Leaf) -> bool:
        length = width(line.indent)
        seen_other = False
        for _index, leaf, leaf_length in line.lengths():
            length += leaf_length
            if leaf is last.partner:
                if seen_other or length <= self.limit:
                    return True
            elif _opening(leaf):
                seen_other = True
        return False

    def prefer_without(self, without: _RHS, rhs: _RHS) -> bool:
        """Split at the brackets inside the optional parentheses rather than at them
        (black's _prefer_split_rhs_oop_over_rhs)."""
        head = rhs.head.leaves
        if not (len(head) >= 2 and head[-2].value == "="):
            return True  # not right after an assignment's `=`
        if not any(_opening(leaf) or _closing(leaf) for leaf in head[:-1]):
            return True
        if width(rhs.head.render()) > self.limit - 1 or rhs.head.magic_comma is not None:
            return True
        equals = sum(1 for leaf in head if leaf.value == "=")
        if equals > 1 and equals > sum(1 for leaf in without.head.leaves if leaf.value == "="):
            return False
        for leaf in reversed(without.head.leaves):
            if leaf.value == "=":
                break
            if _closing(leaf):
                return True  # brackets after the `=`
        return any(leaf.value == "=" for leaf in without.head.leaves) and self.short(without.head)

    def trailers_to_omit(self, line: _Line) -> Iterator[frozenset[int]]:
        """Growing sets of closing brackets to keep on the first line, as long as what follows
        them fits (black's generate_trailers_to_omit)."""
        omit: set[int] = set()
        if line.magic_comma is None:
            yield frozenset(omit)
        length = width(line.indent)
        opening: _Leaf | None = None
        closing: _Leaf | None = None
        inner: set[int] = set()
        leaves = line.leaves
        for index, leaf, leaf_length in reversed(list(line.lengths())):
            length += leaf_length
            if length > self.limit or leaf.comment:
                break
            previous = leaves[index - 1] if index else None
            exploding = (previous is not None and previous.value == "," and leaf.partner is not None
                         and not _one_sequence(leaf.partner, leaf, leaves))  # a trailing comma
            if opening is not None:
                if leaf is opening:
                    opening = None
                elif _closing(leaf):
                    if exploding:
                        break
                    inner.add(id(leaf))
            elif _closing(leaf):
                if previous is not None and _opening(previous):
                    inner.add(id(leaf))  # empty brackets: omitted only along with another pair
                    continue
                if closing is not None:
                    omit.add(id(closing))
                    omit.update(inner)
                    inner.clear()
                    yield frozenset(omit)
                if exploding:
                    break
                if leaf.value:
                    opening, closing = leaf.partner, leaf

    def rhs_with_omits(self, line: _Line) -> list[_Line]:
        """The first right-hand split, omitting ever more trailers, whose first line fits; else
        the split at the last bracket (black's right_hand_split_with_omits)."""
        columns: dict[int, int] = {}
        length = width(line.indent)
        for _index, leaf, leaf_length in line.lengths():
            columns[id(leaf)] = length
            length += leaf_length
        first: list[_Line] | None = None
        for omit in self.trailers_to_omit(line):
            if omit:
                target = next((leaf.partner for leaf in reversed(line.leaves) if _closing(leaf) and id(leaf) not in omit), None)
                if target is not None and target.value and columns.get(id(target), 0) > self.limit:
                    continue  # the first line would be too long whatever follows
            lines = self.rhs(line, omit)
            if first is None and not omit:
                first = lines
            if self.short(lines[0]):
                return lines
        return first if first is not None else self.rhs(line, frozenset())

    def delimiter_split(self, line: _Line) -> list[_Line]:
        """One line per element, split at the delimiters of the highest priority; a trailing
        comma after comma-separated elements."""
        try:
            priority = line.max_priority(line.leaves[-1])
        except ValueError:
            raise CannotSplit("no delimiters") from None
        if priority == DOT and line.count(DOT) == 1:
            raise CannotSplit("splitting a single attribute from its owner looks wrong")
        pieces: list[list[_Leaf]] = [[]]
        for leaf in line.leaves:
            pieces[-1].append(leaf)
            if line.delimiters.get(id(leaf)) == priority:
                pieces.append([])
        if not pieces[-1]:
            pieces.pop()
        elif priority == COMMA and pieces[-1][-1].value != ",":
            pieces[-1].append(_comma())
        return [_Line(piece, line.indent, line.unit, line.inside) for piece in pieces]

    def left_hand_split(self, line: _Line) -> list[_Line]:
        """A signature: split at its first opening parenthesis (black's left_hand_split)."""
        opening = next((leaf for leaf in line.leaves if leaf.kind == "("), None)
        if opening is None or opening.partner is None:
            raise CannotSplit("no parameters")
        start, end = line.leaves.index(opening), line.leaves.index(opening.partner)
        parts = (self.build(line.leaves[: start + 1], line, opening, "head"),
                 self.build(line.leaves[start + 1:end], line, opening, "body"),
                 self.build(line.leaves[end:], line, opening, "tail"))
        _check(*parts)
        return [part for part in parts if part]


def _explodes(body: _Line, opening: _Leaf) -> bool:
    """black's should_split_line: the comma-separated elements of a literal (or of brackets
    with a magic trailing comma) go one per line even when they would fit on one."""
    trailing = bool(body.leaves) and body.leaves[-1].value == ","
    try:
        priority = body.max_priority(body.leaves[-1] if trailing else None)
    except ValueError:
        return False
    return priority == COMMA and (trailing or opening.atom)


def _check(head: _Line, body: _Line, tail: _Line) -> None:
    """black's bracket_split_succeeded_or_raise."""
    tail_length = len(tail.render().strip())
    if not body:
        if tail_length == 0:
            raise CannotSplit("the split produced the same line")
        if tail_length < 3:
            raise CannotSplit("splitting empty brackets is not worth it")


def _can_be_split(line: _Line) -> bool:
    """False when the line surely cannot be split (black's can_be_split)."""
    leaves = line.leaves
    if len(leaves) < 2:
        return False
    if leaves[0].kind == "string" and leaves[1].value == ".":
        calls = dots = 0
        following = leaves[-1]
        for leaf in leaves[-2::-1]:
            if _opening(leaf):
                if not _closing(following):
                    return False
                calls += 1
            elif leaf.value == ".":
                dots += 1
            elif leaf.kind == "name":
                if not (following.value == "." or _opening(following)):
                    return False
            elif not _closing(leaf):
                return False
            if dots > 1 and calls > 1:
                return False
    return True
