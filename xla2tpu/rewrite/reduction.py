"""Which top-level statements a reduced LibCST parse of a file holds (layout.py parses it),
decided from CPython's tree and the statements' text. The detector reads it too: a
transform's builder sees only the statements LibCST parsed, so whether a fix can be made
is decided on the same ones (detect/loader_site.py). Nothing here imports LibCST.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from xla2tpu.trees.blocks import Group, blocks, groups_of, statements
from xla2tpu.detect.positions import line_starts

GAP = "__xla2tpu_gap_"  # the name of a placeholder statement: a source holding it is parsed whole
# Below this share of the source left out, the reduction does not pay for its checks.
MIN_LEFT_OUT = 0.25

Keeps = Callable[[str, Group], bool]


def reduce(source: str, tree: ast.Module | None, keeps: Keeps
           ) -> tuple[list[int], list[Group], list[int], list[str], list[bool]] | None:
    """The source's line starts, CPython's statement groups, each group's last line, each
    group's chunk (see layout.py) and whether a reduced parse holds it; None when the file
    is to be parsed whole (the reduction would not pay, or cannot be made)."""
    if tree is None or not tree.body or not source.endswith(("\n", "\r")) or GAP in source:
        return None
    bounds = line_starts(source)
    groups = groups_of(tree.body)
    ends = [group.last for group in groups[:-1]] + [len(bounds) - 1]
    chunks = [source[bounds[a]:bounds[b]] for a, b in zip([0, *ends], ends)]
    needed = _needed(chunks, groups, keeps)
    left_out = sum(len(chunk) for chunk, need in zip(chunks, needed) if not need)
    if left_out < MIN_LEFT_OUT * len(source):
        return None
    return bounds, groups, ends, chunks, needed


class Parsed:
    """The ids of the top-level statements LibCST's parse of a file holds: those of a reduced
    parse, or all of them. Worked out when first asked (most files never ask). A reduced
    parse that then fails is made whole: it holds more, never less."""

    def __init__(self, source: str, tree: ast.Module | None, keeps: Keeps) -> None:
        self._args: tuple[str, ast.Module | None, Keeps] | None = (source, tree, keeps)
        self._ids: frozenset[int] | None = None  # None: every statement

    def __contains__(self, statement_id: object) -> bool:
        if self._args is not None:
            reduction = reduce(*self._args)
            self._args = None
            if reduction is not None:
                groups, needed = reduction[1], reduction[4]
                self._ids = frozenset(id(node) for group, need in zip(groups, needed) if need for node in group.nodes)
        return self._ids is None or statement_id in self._ids


def _needed(chunks: list[str], groups: list[Group], keeps: Keeps) -> list[bool]:
    kept = [keeps(chunk, group) for chunk, group in zip(chunks, groups)]
    needed = list(kept)
    # A statement that may be deleted hands its comments to the next one.
    for index, k in enumerate(kept[:-1]):
        if k:
            needed[index + 1] = True
    # Some rewrites reach past their statement: to the function a site passes a value to,
    # and to the statements that read a variable a site is assigned to (a loader and the
    # loops over it), and from those on in turn (`main` reads the loader and hands it to
    # `run`, which loops over it). Those are parsed too, so that they are there to be
    # rewritten: a whole parse holds them, and a fix must not depend on the file's size.
    # A function is found by its name wherever it is defined, a method included: a builder
    # that asks whether a name is defined once must see every definition a whole parse holds.
    reaching = {index for index, k in enumerate(kept) if k}  # the statements whose reach is followed
    added = set(reaching)
    called: set[str] = set()
    bound: set[str] = set()
    defined: dict[int, set[str]] = {}  # group -> what it defines, worked out when first asked
    while added:
        for index in added:
            called.update(_CALLED.findall(chunks[index]))
            bound.update(assigned_names(groups[index]))
        reads = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, bound))) + r")\b") if bound else None
        added = set()
        for index, (chunk, group) in enumerate(zip(chunks, groups)):
            if index in reaching:
                continue
            if index not in defined:
                defined[index] = _defined(group)
            if not defined[index].isdisjoint(called) or (reads is not None and reads.search(chunk)):
                added.add(index)
        reaching |= added
    for index in reaching:
        needed[index] = True
    # New imports go after the docstring and `__future__` imports, spaced by what follows.
    prologue = 0
    if _is_docstring(groups[0]):
        prologue = 1
    while prologue < len(groups) and all(_is_future(node) for node in groups[prologue].nodes):
        prologue += 1
    for index in range(min(prologue + 1, len(groups))):
        needed[index] = True
    return needed


_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


def _defined(group: Group) -> set[str]:
    """The names of the definitions in `group`: its own, and every function inside it."""
    names = {group.definition.name} if group.definition is not None else set()
    names.update(node.name for node in statements(list(group.nodes)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def assigned_names(group: Group) -> list[str]:
    """The plain names `group` assigns to (`x = ...`, `x: T = ...`), also in the blocks of
    its compound statements (`if use_xla: loader = pl.MpDeviceLoader(...)`), not in the
    functions and classes it defines: a rewrite of such an assignment edits what reads it."""
    names: list[str] = []
    for node in _outside_definitions(list(group.nodes)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names += [target.id for target in targets if isinstance(target, ast.Name)]
    return names


def _outside_definitions(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    for node in nodes:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in blocks(node):
                yield from _outside_definitions(block)


def _is_docstring(group: Group) -> bool:
    node = group.nodes[0]
    return (len(group.nodes) == 1 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__" and not node.level
