"""Expression patterns (patterns.py) matched on CPython's ast tree, with the same results.

The pattern language is patterns.py's. Where the two trees differ:
- ast has no node for layout, so parentheses, whitespace and the load/store `ctx` are
  ignored by construction; `u"x"` is `"x"` in both.
- LibCST compares literals by their spelling (`0x1` is not `1`) and a string pattern only
  matches one literal, never an implicit concatenation (`"xla" "_fsdp"`), an f-string or
  bytes. ast folds a concatenation into one Constant and keeps only values, so pass
  `segment` (the node's source text, e.g. `functools.partial(ast.get_source_segment,
  source)`) to get LibCST's answers; without it literals compare by value and type
  (`1` is never `True` nor `1.0`), which no catalogue pattern can tell apart except
  through a concatenated string.
- A literal part of an f-string is a Constant in ast (a `FormattedStringText` in LibCST,
  which no pattern matches): the caller's walk must not offer it, or pass `segment`.
- `x[1, 2]` is one Tuple in ast, two subscript elements in LibCST, and `x[(1, 2)]` one:
  the unparenthesised tuple (which starts at its first element) counts as its elements.
- `claimed` lists only ast.expr nodes (not a call's `*args`, a slice `a:b`, an f-string's
  `{x}`): the operators, `Arg` wrappers and attribute and keyword names LibCST also lists
  are no expressions in ast (nor references), and ast shares one instance of each operator.
Left as they are, as no catalogue pattern can meet them: ast keeps a call's keywords apart
from its positional arguments (`f(k=1, *a)` is `f(*a, k=1)`), makes `a and b and c` one
BoolOp (LibCST nests two, so `{x} and {y}` matches there), and has no node for one piece
of an implicit concatenation (LibCST matches `"xla_fsdp_v2"` in `"xla_fsdp_v2" "_x"`);
LibCST compares an f-string pattern by its raw text and quotes, ast by its parts' values;
`x[(a), b]` is taken for `x[((a), b)]`.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from collections.abc import Callable
from typing import NamedTuple

from xla2tpu.trees.names import dotted_name
from xla2tpu.catalogue.pattern_text import Key, has_slot, placeholders, slot_name

Resolve = Callable[[ast.expr], "str | None"]
Segment = Callable[[ast.expr], "str | None"]

# Fields that are not code: the load/store context.
_IGNORED = frozenset({"ctx"})
# ast expressions that LibCST does not hold as expressions (a `Slice`, an f-string's
# `FormattedStringExpression`): not claimed, as LibCST's claims only matter for expressions.
_NO_EXPRESSION = (ast.Slice, ast.FormattedValue)


class AstPattern(NamedTuple):
    text: str
    tree: ast.expr
    key: Key


class AstMatch(NamedTuple):
    slots: dict[str, ast.expr]
    claimed: list[ast.AST]  # the ast.expr nodes the pattern itself covers (not inside a slot)


def key_of(node: ast.AST) -> Key:
    """A pattern's discriminator: only nodes with this key among their candidate keys can match
    (patterns.key_of on ast types: a Compare by its first operator, a Call on `{slot}.name` by
    the method, any other Call by "*" as its callee may be spelled any way, a literal by its
    type and value)."""
    if isinstance(node, ast.Compare):
        return "Compare", type(node.ops[0]).__name__
    if isinstance(node, ast.Attribute):
        return "Attribute", node.attr
    if isinstance(node, ast.Name):
        return "Name", node.id
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and _slot(func.value) is not None:
            return "Call", func.attr
        return "Call", "*"
    if isinstance(node, ast.Constant):  # literals match by type and value (`_literal`)
        return "Constant", (type(node.value), node.value)
    return type(node).__name__, ""


def candidate_keys(node: ast.AST) -> tuple[Key, ...]:
    """The keys of the patterns that may match `node`."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return ("Call", node.func.attr), ("Call", "*")
        return (("Call", "*"),)
    return (key_of(node),)


@functools.lru_cache(maxsize=512)
def compile_pattern(text: str) -> AstPattern:
    tree = ast.parse(_source(text), mode="eval").body
    return AstPattern(text, tree, key_of(tree))


@functools.lru_cache(maxsize=512)
def _source(text: str) -> str:
    """The Python source a pattern is parsed from: its literals' spelling, for `segment`."""
    return placeholders(text).strip()


def match(pattern: AstPattern, node: ast.AST, resolve: Resolve, segment: Segment | None = None) -> AstMatch | None:
    found = AstMatch({}, [])
    matcher = _Matcher(pattern.text, resolve, segment, found)
    if not matcher.match(pattern.tree, node):
        return None
    # `f(*a)`: LibCST's Arg holding `*a` is no expression (a `[*a]` element is, as here).
    arguments = {id(a) for c in found.claimed if isinstance(c, ast.Call) for a in c.args if isinstance(a, ast.Starred)}
    found.claimed[:] = [c for c in found.claimed if id(c) not in arguments]
    return found


def _slot(node: ast.AST) -> str | None:
    return slot_name(node.id) if isinstance(node, ast.Name) else None


def _qualified(node: ast.AST) -> str | None:
    """The dotted name a pattern node stands for, when it is matched by resolution."""
    if not isinstance(node, ast.Attribute):
        return None
    name = dotted_name(node)
    return name if name is not None and not has_slot(name) else None


class _Matcher:
    def __init__(self, text: str, resolve: Resolve, segment: Segment | None, found: AstMatch) -> None:
        self.text = text  # the pattern's text
        self.resolve = resolve
        self.segment = segment
        self.found = found

    def match(self, pattern: ast.AST, node: ast.AST) -> bool:
        slot = _slot(pattern)
        if slot is not None:
            # LibCST keeps a `*` in the Arg/Element around the slot's expression: never bound.
            if not isinstance(node, ast.expr) or isinstance(node, ast.Starred):
                return False
            self.found.slots[slot] = node
            return True
        if isinstance(node, ast.expr) and not isinstance(node, _NO_EXPRESSION):
            self.found.claimed.append(node)
        qualname = _qualified(pattern)
        if qualname is not None:
            return isinstance(node, (ast.Name, ast.Attribute)) and self.resolve(node) == qualname
        if type(pattern) is not type(node):
            return False
        if isinstance(pattern, ast.Constant):
            return self._literal(pattern, node)  # type: ignore[arg-type]
        if isinstance(pattern, ast.Subscript):  # LibCST: a list of subscript elements
            return self.match(pattern.value, node.value) and self._same(_elements(pattern.slice), _elements(node.slice))  # type: ignore[attr-defined]
        return all(
            self._same(getattr(pattern, field, None), getattr(node, field, None))
            for field in pattern._fields
            if field not in _IGNORED
        )

    def _same(self, expected: object, actual: object) -> bool:
        if isinstance(expected, ast.AST):
            return isinstance(actual, ast.AST) and self.match(expected, actual)
        if isinstance(expected, list):
            return (
                isinstance(actual, list)
                and len(actual) == len(expected)
                and all(self._same(e, a) for e, a in zip(expected, actual))
            )
        return expected == actual

    def _literal(self, pattern: ast.Constant, node: ast.Constant) -> bool:
        # By type too: `1 == True == 1.0` in Python, but they are different literals.
        if type(pattern.value) is not type(node.value) or pattern.value != node.value:
            return False
        if self.segment is None or not isinstance(node.value, (str, bytes, int, float, complex)):
            return True
        spelled = self.segment(node)
        if isinstance(node.value, (str, bytes)):
            return spelled is not None and _one_literal(spelled)  # LibCST: by value, one literal
        return spelled == ast.get_source_segment(_source(self.text), pattern)  # LibCST: by spelling


def _elements(index: ast.expr) -> list[ast.expr]:
    """The elements of a subscript as LibCST has them: `x[1, 2]` has two, `x[(1, 2)]` one
    tuple (ast makes both a tuple; only the parenthesised one starts before its first element)."""
    if isinstance(index, ast.Tuple) and index.elts:
        first = index.elts[0]
        if (index.lineno, index.col_offset) == (first.lineno, first.col_offset):
            return index.elts
    return [index]


def _one_literal(text: str) -> bool:
    """Whether `text` is one plain string literal: not a concatenation, not an f-string, and
    not a bare f-string part (which ast 3.12 positions without its quotes)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return False  # a concatenation over lines that do not tokenize on their own
    if len(tokens) != 1 or tokens[0].string != text.strip():
        return False
    prefix = tokens[0].string[: len(tokens[0].string) - len(tokens[0].string.lstrip("rRbBuUfF"))]
    return "f" not in prefix.lower()
