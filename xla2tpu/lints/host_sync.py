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


import libcst as cst

from xla2tpu.lints import Hit, lint
from xla2tpu.resolve import dotted_name

_SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
_CONVERSIONS = frozenset({"float", "int", "bool", "print"})
_STEP_RECEIVERS = ("optim", "opt", "scaler")  # `optimizer.step()`, `opt.step()`, `scaler.step(opt)`

Loop = cst.For | cst.While


@lint("host-sync-in-training-loop")
def host_syncs(statement: cst.CSTNode) -> list[Hit]:
    """Every device-to-host sync that runs on each step of a training loop, in source order."""
    finder = _Finder()
    statement.visit(finder)
    hot = {id(loop) for loop in finder.step_loops}
    losses: dict[int, set[str]] = finder.losses
    found = []
    for candidate, loop, periodic in finder.candidates:
        if loop is None or id(loop) not in hot or periodic:
            continue
        what = _sync(candidate, losses.get(id(loop), set()))
        if what is not None:
            found.append(Hit(candidate, what))
    return found


def _sync(node: cst.CSTNode, losses: set[str]) -> str | None:
    if isinstance(node, cst.Call):
        func = node.func
        if _is_sync_method(node):
            return f"`.{func.attr.value}()`"  # type: ignore[attr-defined]
        if isinstance(func, cst.Name) and func.value in _CONVERSIONS and _mentions(node.args, losses):
            return f"`{func.value}()` of the loss"
        return None
    if _mentions([node], losses):
        return "a test on the loss"
    return None


def _is_sync_method(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in _SYNC_METHODS and not call.args


def _mentions(nodes: object, names: set[str]) -> bool:
    """Whether any of `nodes` reads one of `names` (as a variable, not an attribute tail)."""
    if not names:
        return False

    class Reads(cst.CSTVisitor):
        hit = False

        def visit_Call(self, node: cst.Call) -> bool:
            return not _is_sync_method(node)  # `loss.item()` is reported as itself

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            self.hit = self.hit or node.value in names

    reads = Reads()
    for node in nodes:  # type: ignore[attr-defined]
        node.visit(reads)
    return reads.hit


class _Finder(cst.CSTVisitor):
    """One walk: the innermost loop of every step and of every candidate sync."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: list[Loop | None] = [None]  # None: outside any loop of this function
        self.periodic: list[bool] = [False]
        self.step_loops: list[Loop] = []
        self.losses: dict[int, set[str]] = {}
        self.candidates: list[tuple[cst.CSTNode, Loop | None, bool]] = []

    # a function body starts afresh: an outer loop does not run its steps
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.loops.append(None)
        self.periodic.append(False)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.loops.pop()
        self.periodic.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.loops.append(None)
        self.periodic.append(False)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.loops.pop()
        self.periodic.pop()

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)  # the iterable is evaluated once, outside the loop
        self._loop(node, node.body)
        return False

    def visit_While(self, node: cst.While) -> bool:
        self._loop(node, node.test, node.body)  # the test runs on every iteration
        return False

    def _loop(self, node: Loop, *inside: cst.CSTNode) -> None:
        self.loops.append(node)
        self.periodic.append(False)
        for part in inside:
            part.visit(self)
        self.loops.pop()
        self.periodic.pop()
        if node.orelse is not None:
            node.orelse.visit(self)

    def visit_If(self, node: cst.If) -> bool:
        self.candidates.append((node.test, self.loops[-1], self.periodic[-1]))
        node.test.visit(self)
        periodic = self.periodic[-1] or _has_modulo(node.test)
        self.periodic.append(periodic)
        node.body.visit(self)
        self.periodic.pop()
        if node.orelse is not None:
            node.orelse.visit(self)  # an `else:` of a periodic test runs on the other steps
        return False

    def visit_Call(self, node: cst.Call) -> None:
        loop = self.loops[-1]
        if loop is not None and _is_step(node):
            if not any(existing is loop for existing in self.step_loops):
                self.step_loops.append(loop)
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                name = dotted_name(func.value)
                if name is not None:
                    self.losses.setdefault(id(loop), set()).add(name.split(".")[0])
        self.candidates.append((node, loop, self.periodic[-1]))


def _is_step(call: cst.Call) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return isinstance(func, cst.Name) and func.value == "optimizer_step"
    if func.attr.value == "backward":
        return True
    if func.attr.value == "optimizer_step":
        return True
    if func.attr.value == "step":
        receiver = dotted_name(func.value) or ""
        return receiver.rsplit(".", 1)[-1].lower().startswith(_STEP_RECEIVERS)
    return False


def _has_modulo(test: cst.BaseExpression) -> bool:
    class Modulo(cst.CSTVisitor):
        found = False

        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            self.found = self.found or isinstance(node.operator, cst.Modulo)

    modulo = Modulo()
    test.visit(modulo)
    return modulo.found
