"""What a condition reads of an argument on CPython's tree: its literal value, its text as a
plain string, and which parameter each argument of a call binds (conditions.py's `literal`,
`literal_text` and `bind`, for `ast` nodes)."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Sequence

from xla2tpu.detect.arguments import Argument
from xla2tpu.trees import order

MISSING = object()


def literal(node: ast.AST | None) -> object:
    """The Python value of a literal argument (`0`, `True`, `"TPU"`, `-1`), else MISSING."""
    if isinstance(node, ast.Constant):
        value = node.value
        return MISSING if value is Ellipsis or isinstance(value, complex) else value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal(node.operand)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else MISSING
    return MISSING


def literal_text(node: ast.AST, source_lines: Sequence[str]) -> str | None:
    """The text of one plain string literal (not bytes, an f-string, or `"a" "b"`), else None."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    if node.lineno != node.end_lineno or _concatenated(node, source_lines):
        return None
    return node.value


def tuple_items(node: ast.AST | None) -> list[ast.expr] | None:
    """The elements of a tuple or list literal without starred items, else None
    (transforms/forms.tuple_items on LibCST's tree)."""
    if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return list(node.elts)
    return None


def simple_string(node: ast.AST, source_lines: Sequence[str]) -> bool:
    """Whether `node` is one string or bytes literal as written (LibCST's SimpleString): not
    an f-string, not several literals CPython's tree joins."""
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and not _concatenated(node, source_lines)


def _concatenated(node: ast.Constant, source_lines: Sequence[str]) -> bool:
    """Whether the literal is written as several strings (CPython's tree joins them)."""
    rows = [row.encode() for row in source_lines[node.lineno - 1:node.end_lineno]]
    rows[-1] = rows[-1][:node.end_col_offset]
    rows[0] = rows[0][node.col_offset:]
    text = "\n".join(row.decode(errors="replace") for row in rows)
    if text[-1:] not in ("'", '"') or text.count(text[-1]) <= 2 and not text.endswith(text[-1] * 3):
        return False  # one pair of quotes: one literal
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) != 1


def call_arguments(call: ast.Call) -> list[Argument]:
    """The call's arguments in source order, for `conditions.bind`."""
    return [
        Argument(a.arg, a.value, a.arg is None, a) if isinstance(a, ast.keyword)
        else Argument(None, a, isinstance(a, ast.Starred), a)
        for a in order.arguments(call)
    ]
