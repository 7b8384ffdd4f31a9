"""CPython's tree walked in source order, as LibCST's visitors walk theirs: where ast's
fields are not in the order of the code (a call's keywords after its positional arguments,
a dict's keys apart from its values, `a if t else b`, a definition's decorators after its
body), the children are put back in that order."""

from __future__ import annotations

import ast
import functools
from collections import deque
from collections.abc import Iterator

# Expression contexts (`Load`, `Store`) and operators (`Add`, `Eq`, `Not`...) are nodes of
# their own in CPython's tree, a third of all nodes, and no rule reads them as nodes: the
# walks here skip them (a node's `ctx` or `op` is read as its attribute).
_NOT_WALKED = frozenset({"ctx", "op", "ops"})


@functools.cache
def _fields(kind: type) -> tuple[str, ...]:
    return tuple(name for name in kind._fields if name not in _NOT_WALKED)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` without contexts and operators, as a list."""
    found: list[ast.AST] = []
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)` (breadth first) without contexts and operators."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(child_nodes(node))
        yield node


def arguments(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """A call's arguments in source order (`f(a, k=b, *c)`: keywords and arguments interleave)."""
    if not (call.keywords and call.args):
        return [*call.args, *call.keywords]
    return sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))


def children(node: ast.AST) -> Iterator[ast.AST]:
    """The children of `node` in source order."""
    if isinstance(node, ast.Call):
        yield node.func
        yield from arguments(node)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is not None:
                yield key
            yield value
    elif isinstance(node, ast.IfExp):
        yield node.body
        yield node.test
        yield node.orelse
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
        yield from node.decorator_list
        yield from (child for child in child_nodes(node) if not any(child is d for d in node.decorator_list))
    else:
        yield from child_nodes(node)
