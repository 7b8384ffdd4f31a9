"""Device-to-host syncs inside a training loop (the lint rule of issue 3, no reference row).

`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, and `float()` / `int()` / `bool()` /
`print()` / an `if` test on the loss make the host wait for the device. TorchTPU
materialises there as torch_xla did, so a loop that does it every step runs at the pace
of the round trip. The advice is to accumulate on the device and read every N steps.

Precision first: a site is reported only when its innermost loop is also the innermost
loop of a training step (`loss.backward()`, `optimizer.step()`, `xm.optimizer_step(...)`,
`scaler.step(...)`), in the same function, and it does not sit under an `if` whose test
uses `%` (already periodic: `if step % 10 == 0:`). A per-epoch print after the step loop
is therefore not reported. "The loss" is whatever `.backward()` is called on in that loop.

This module finds the sites; rule XLA420 (rules/training.toml) reports them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from xla2tpu.trees.names import dotted_name
from xla2tpu.trees.order import child_nodes
from xla2tpu.detect.lints.registry import Hit, lint

_SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
_CONVERSIONS = frozenset({"float", "int", "bool", "print"})
_STEP_RECEIVERS = ("optim", "opt", "scaler")  # `optimizer.step()`, `opt.step()`, `scaler.step(opt)`

Loop = ast.For | ast.AsyncFor | ast.While


@lint("host-sync-in-training-loop")
def host_syncs(statement: ast.stmt) -> list[Hit]:
    """Every device-to-host sync that runs on each step of a training loop, in source order."""
    finder = _Finder()
    finder.visit(statement)
    hot = {id(loop) for loop in finder.step_loops}
    found = []
    for candidate, loop, periodic in finder.candidates:
        if loop is None or id(loop) not in hot or periodic:
            continue
        what = _sync(candidate, finder.losses.get(id(loop), set()))
        if what is not None:
            found.append(Hit(candidate, what))
    return found


def _sync(node: ast.expr, losses: set[str]) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if _is_sync_method(node):
            return f"`.{func.attr}()`"  # type: ignore[attr-defined]
        if isinstance(func, ast.Name) and func.id in _CONVERSIONS and _mentions([*node.args, *node.keywords], losses):
            return f"`{func.id}()` of the loss"
        return None
    if _mentions([node], losses):
        return "a test on the loss"
    return None


def _is_sync_method(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _SYNC_METHODS and not call.args and not call.keywords


def _mentions(nodes: Iterable[ast.AST], names: set[str]) -> bool:
    """Whether any of `nodes` reads one of `names` (as a variable, not an attribute tail).
    A keyword argument's or a lambda parameter's name counts too, as LibCST's Names did."""
    if not names:
        return False
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call) and _is_sync_method(node):
            continue  # `loss.item()` is reported as itself
        if isinstance(node, ast.Attribute):
            pending.append(node.value)
            continue
        name = node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, (ast.keyword, ast.arg)) else None
        if name in names:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


class _Finder(ast.NodeVisitor):
    """One walk: the innermost loop of every step and of every candidate sync.

    Candidates are kept in source order (ast's fields are not always: a definition's
    decorators come last, a conditional expression's test first), each `if` test before
    what is inside it.
    """

    def __init__(self) -> None:
        self.loops: list[Loop | None] = [None]  # None: outside any loop of this function
        self.periodic: list[bool] = [False]
        self.step_loops: list[Loop] = []
        self.losses: dict[int, set[str]] = {}
        self._candidates: list[tuple[ast.expr, Loop | None, bool]] = []

    @property
    def candidates(self) -> list[tuple[ast.expr, Loop | None, bool]]:
        return sorted(self._candidates, key=lambda c: (c[0].lineno, c[0].col_offset, -c[0].end_lineno, -c[0].end_col_offset))  # type: ignore[operator]

    def generic_visit(self, node: ast.AST) -> None:
        for child in child_nodes(node):  # contexts and operators hold no sync
            self.visit(child)

    def _within(self, loop: Loop | None, *parts: ast.AST | list[ast.stmt]) -> None:
        self.loops.append(loop)
        self.periodic.append(False)
        for part in parts:
            self._visit(part)
        self.loops.pop()
        self.periodic.pop()

    def _visit(self, part: ast.AST | list[ast.stmt]) -> None:
        for node in part if isinstance(part, list) else [part]:
            self.visit(node)

    # a function body starts afresh: an outer loop does not run its steps
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._within(None, *child_nodes(node))

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)  # the iterable is evaluated once, outside the loop (the target is not read)
        self._within(node, node.body)
        self._visit(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self._within(node, node.test, node.body)  # the test runs on every iteration
        self._visit(node.orelse)

    def visit_If(self, node: ast.If) -> None:
        self._candidates.append((node.test, self.loops[-1], self.periodic[-1]))
        self.visit(node.test)
        periodic = self.periodic[-1] or _has_modulo(node.test)
        self.periodic.append(periodic)
        self._visit(node.body)
        self.periodic.pop()
        self._visit(node.orelse)  # an `else:` of a periodic test runs on the other steps

    def visit_Call(self, node: ast.Call) -> None:
        loop = self.loops[-1]
        if loop is not None and _is_step(node):
            if not any(existing is loop for existing in self.step_loops):
                self.step_loops.append(loop)
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "backward":
                # `loss.backward()`; `accelerator.backward(loss)` (Accelerate's, Lightning
                # Fabric's) takes the loss as its argument, and its receiver is no loss.
                name = dotted_name(node.args[0] if node.args else func.value)
                if name is not None:
                    self.losses.setdefault(id(loop), set()).add(name.split(".")[0])
        self._candidates.append((node, loop, self.periodic[-1]))
        self.generic_visit(node)


def _is_step(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return isinstance(func, ast.Name) and func.id == "optimizer_step"
    if func.attr in ("backward", "optimizer_step"):
        return True
    if func.attr == "step":
        receiver = dotted_name(func.value) or ""
        return receiver.rsplit(".", 1)[-1].lower().startswith(_STEP_RECEIVERS)
    return False


def _has_modulo(test: ast.expr) -> bool:
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) for node in ast.walk(test))
