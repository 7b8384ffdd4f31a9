"""Device strings held before a call reads them: `kind = "xla" if use_xla else "cuda"` and
then `torch.autocast(device_type=kind)` in the same function, or `self._autocast_device =
"xla"` in `__init__` and `device_type=self._autocast_device` in another method of the class.
Found from the literal (the reading statement may hold no prefilter token, so the walk may
never visit it): the literal is the string site of the rule whose argument slot a read of
the holder fills (detect/sites.py); its fix is made only where every read is such an
argument: a holder also compared or printed (`if kind == "xla":`) would change what that
code does."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from xla2tpu.detect.scopes import FUNCTIONS


@dataclass(frozen=True)
class Holder:
    """What holds a string literal: a local (`name`) or an attribute of `self` (`self.name`),
    with every read of it in its function or class."""

    name: str  # as the code spells it: `kind`, `self._autocast_device`
    reads: tuple[ast.expr, ...]
    parents: dict[int, ast.AST]  # id(node) -> the node holding it, in the function or class


def holder(literal: ast.Constant, parents: Sequence[ast.AST]) -> Holder | None:
    """The holder `literal` is assigned to (its ancestors `parents`, innermost last; through
    the branches of a conditional): a local name the enclosing function binds only by plain
    `=`, or an attribute of `self` that the enclosing class binds only so; None otherwise."""
    index = len(parents) - 1
    while index >= 0 and isinstance(parents[index], ast.IfExp):
        index -= 1
    statement = parents[index] if index >= 0 else None
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        owner = next((p for p in reversed(parents[:index]) if isinstance(p, FUNCTIONS)), None)
        if owner is None or any(a.arg == target.id for a in ast.walk(owner.args) if isinstance(a, ast.arg)):
            return None  # module level, or a parameter its callers give too
        return _holder(owner, target.id, target.id, _is_name)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        owner = next((p for p in reversed(parents[:index]) if isinstance(p, ast.ClassDef)), None)
        return _holder(owner, target.attr, f"self.{target.attr}", _is_self_attribute) if owner is not None else None
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_self_attribute(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _holder(owner: ast.AST, name: str, shown: str, matches) -> Holder | None:  # type: ignore[no-untyped-def]
    reads: list[ast.expr] = []
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(owner):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            if not matches(child, name):
                continue
            if isinstance(child.ctx, ast.Load):  # type: ignore[attr-defined]
                reads.append(child)  # type: ignore[arg-type]
            elif not (isinstance(node, ast.Assign) and node.targets == [child]):
                return None  # bound some other way (a loop, `+=`, unpacking, `del`)
    return Holder(shown, tuple(reads), parents)


def choices(node: ast.expr) -> list[ast.expr]:
    """The values an expression may take as written: both branches of a conditional
    (`device_type=("xla" if HAS_XLA else "cuda")`), else the expression itself."""
    if isinstance(node, ast.IfExp):
        return [*choices(node.body), *choices(node.orelse)]
    return [node]
