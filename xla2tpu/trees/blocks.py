"""Walks of CPython's tree shared by modules that must not import LibCST (a fully cached
run never loads it): the blocks of a compound statement (facts, layout), the statements a
module runs when it loads (facts, module summaries), the absolute modules a file imports
(engine, migration report)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass


@functools.cache
def _has_blocks(kind: type) -> bool:
    return any(name in kind._fields for name in ("body", "cases", "handlers", "orelse", "finalbody"))


def blocks(node: ast.AST) -> list[list[ast.AST]]:
    """The blocks of a compound statement (or of a `case`), in source order: its body, its
    `case`s, its handlers' bodies, its `else` and `finally` (`elif` is an `if` in `else`)."""
    if not _has_blocks(type(node)):  # most statements are simple: asked of each one in walks
        return []
    found: list[list[ast.AST]] = [getattr(node, f) for f in ("body", "cases") if isinstance(getattr(node, f, None), list)]
    found += [handler.body for handler in getattr(node, "handlers", ())]
    found += [getattr(node, f) for f in ("orelse", "finalbody") if getattr(node, f, None)]
    return found


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs when it loads: its body, and the blocks of its `if`,
    `try` and `with` statements (`try: import torch_xla / except ImportError: ...`), not
    the bodies of its functions and classes."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for block in blocks(node):
                yield from module_level([s for s in block if isinstance(s, ast.stmt)])


def statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement under `body`, in functions and classes too (and each `case` of a
    `match`): where an import can be, found without walking a single expression."""
    for node in body:
        yield node
        for block in blocks(node):
            yield from statements(block)


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) for every absolute import anywhere in `tree`: `import a.b` gives
    `a.b`, `from a.b import c` gives `a.b` (a relative import names the project's own)."""
    for node in statements(tree.body):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module


def lazy_imports(tree: ast.Module) -> frozenset[str]:
    """The top-level modules a file imports (`import torch`) inside functions only, never
    when it loads: a module that must import without them (Transformers' `import_utils.py`
    without torch)."""
    loaded = {alias.name.split(".")[0] for node in module_level(tree.body) if isinstance(node, ast.Import)
              for alias in node.names}
    inside = {alias.name.split(".")[0] for node in statements(tree.body)
              if isinstance(node, ast.Import) for alias in node.names if alias.asname is None}
    return frozenset(inside - loaded)


# What an `except` clause must catch for the imports of its `try:` to be an availability probe.
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether the handler runs when an import in its `try:` fails (a bare `except:` does)."""
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_last_name(kind) in IMPORT_ERRORS for kind in kinds)


def _last_name(node: ast.AST) -> str:
    """`ImportError` of `ImportError` and of `builtins.ImportError`."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


@dataclass(frozen=True)
class Group:
    """A top-level statement as LibCST counts them: the `ast` statements that share a line
    (`a = 1; b = 2`) are one, and a decorated definition starts at its first decorator."""

    first: int  # first and last line, 1-based
    last: int
    nodes: tuple[ast.stmt, ...]

    @property
    def definition(self) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
        node = self.nodes[0]
        if len(self.nodes) == 1 and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return node
        return None


def first_line(node: ast.stmt) -> int:
    """The line a statement starts on: a decorated definition's first decorator's."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def groups_of(body: list[ast.stmt]) -> list[Group]:
    groups: list[Group] = []
    for node in body:
        first = first_line(node)
        last = node.end_lineno or node.lineno
        if groups and first <= groups[-1].last:
            groups[-1] = Group(groups[-1].first, max(last, groups[-1].last), (*groups[-1].nodes, node))
        else:
            groups.append(Group(first, last, (node,)))
    return groups
