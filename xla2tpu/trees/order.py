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


# Fields that never hold a node (names, numbers), and list fields that hold more than nodes
# (names; `None` for `**x` in a dict, a keyword-only argument without a default): the walks
# read the rest without testing each item, the hottest loop here.
_SCALARS = frozenset({"id", "attr", "arg", "name", "module", "level", "asname", "kind", "type_comment", "conversion",
                      "is_async", "simple", "rest", "lineno", "tag"})
_MIXED = frozenset({(ast.Dict, "keys"), (ast.Global, "names"), (ast.Nonlocal, "names"), (ast.arguments, "kw_defaults"),
                    *(((ast.MatchClass, "kwd_attrs"),) if hasattr(ast, "MatchClass") else ())})
# Every field of CPython's tree that holds a list (of nodes, but for _MIXED's).
_LIST_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "targets", "decorator_list", "bases", "keywords",
                          "args", "posonlyargs", "kwonlyargs", "defaults", "kw_defaults", "names", "items", "values",
                          "elts", "keys", "comparators", "generators", "ifs", "cases", "patterns", "kwd_patterns",
                          "kwd_attrs", "type_params", "type_ignores"})


@functools.cache
def _fields(kind: type) -> tuple[tuple[str, int], ...]:
    """The fields of `kind` that may hold nodes: (name, 0) a node or None, (name, 1) a list of
    nodes, (name, 2) a list of nodes and other things."""
    if kind is ast.Constant:
        return ()
    return tuple((name, 2 if (kind, name) in _MIXED else 1 if name in _LIST_FIELDS else 0)
                 for name in kind._fields if name not in _NOT_WALKED and name not in _SCALARS)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` without contexts and operators, as a list."""
    found: list[ast.AST] = []
    for name, shape in _fields(type(node)):
        value = getattr(node, name, None)
        if shape == 1:
            if value.__class__ is list:
                found += value
            elif value is not None:
                found.append(value)  # `args` of a Call is a list, of a Lambda a node
        elif shape == 2:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):  # not None, nor a MatchSingleton's value
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
