"""Availability flags nothing reads once the fixes are made go, with the probe that set them.

A module records whether torch_xla imports in a flag (`XLA_AVAILABLE = True` under `if
is_torch_xla_available():`, `_HAS_XLA = False` in the `except ImportError:` of a `try:`
that imports it) and reads it where torch_xla code runs (`if XLA_AVAILABLE: xm.mark_step()`).
Once the fixes took those reads, the flag is dead code that still names torch_xla: it goes
when
- every statement that assigns it is a flag assignment: a lone name made from a value that
  only reads (`True`, `is_torch_xla_available()`), run when the module loads, inside an `if`
  whose test holds a rule's site, inside a `try:` that catches ImportError, or holding a
  site itself;
- no other name, no string (`__all__`, `getattr(m, "XLA_AVAILABLE")`) and no other module
  of the project (`Context.imported_flags`) reads it, nor imports the module itself
  (`from . import env`, then `env._XLA_AVAILABLE`);
- it is private (`_HAS_XLA`), or unsafe fixes are on: code outside the project may import a
  public one.
The pruner then removes what that emptied (`if is_torch_xla_available():` with the findings
in its test, a `try:` whose handlers now only set names to None), and the import pass the
imports left without a reader (`is_torch_xla_available`, XLA009). The findings in the
assignments are fixed by the removal.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence

import libcst as cst

from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.detect import probe_flags
from xla2tpu.detect.probe_flags import flag_name
from xla2tpu.rewrite.import_pass import catches_import_error
from xla2tpu.rewrite.pruner import StatementPruner, findings_in, inert
from xla2tpu.rewrite.rewriter import FileContext


def drop_dead_flags(ctx: FileContext, before: cst.Module, after: cst.Module) -> cst.Module:
    """`after`, the rule pass's output of `before`, without the availability flags nothing
    reads any more (see the module's doc). Which assignments are flags is judged on `before`,
    whose nodes the sites are recorded by; what reads them, on `after`."""
    found: dict[str, list[cst.Assign]] = {}
    others: set[str] = set()  # flag names also bound some other way
    for assign, probe in _assignments(before.body, ctx.sites, False):
        name = assign.targets[0].target.value  # type: ignore[attr-defined]
        if probe and inert(assign.value, ctx.sites):
            found.setdefault(name, []).append(assign)
        else:
            others.add(name)
    if not found:
        return after
    kept = {name: [a for a, _ in _assignments(after.body, (), False) if a.targets[0].target.value == name]  # type: ignore[attr-defined]
            for name in found}
    flags = frozenset(found)
    # The output must still hold each assignment (no fix took one), whose targets name it too.
    mentioned = {name: count for name, count in _names(after, flags).items() if len(kept[name]) == len(found[name])}
    values = {name: [_names(assign.value, flags) for assign in assigns] for name, assigns in kept.items()}
    dead = probe_flags.dead({name: len(assigns) for name, assigns in found.items()}, mentioned, values, others,
                            ctx.imported, FixClass.UNSAFE in ctx.settings.apply, ctx.package_init)
    if not dead:
        return after
    for name, fix in dead.items():
        for assign in found[name]:
            ctx.unread.update(dict.fromkeys(findings_in(assign, ctx.unfixed), fix))
    return after.visit(_Remover(ctx, {id(assign) for name in dead for assign in kept[name]}))


class _Remover(StatementPruner):
    """The pruner, removing the assignments `gone` (ids in the tree it visits), sharing what
    the passes record of kept `if`s and unfixed sites. Like the import pass, it leaves
    expressions and imports as they are: later passes know them by identity."""

    def __init__(self, ctx: FileContext, gone: set[int]) -> None:
        super().__init__()
        self.share(ctx)
        self._gone = gone

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseExpression, cst.Import, cst.ImportFrom)) or id(node) in self._gone:
            return False
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[no-untyped-def]
        if isinstance(original_node, (cst.BaseExpression, cst.Import, cst.ImportFrom)):
            return updated_node
        if id(original_node) in self._gone:
            self.doom(updated_node)
            return updated_node
        return super().on_leave(original_node, updated_node)


def _assignments(body: Sequence[cst.CSTNode], sites: Container[int], probe: bool) -> Iterator[tuple[cst.Assign, bool]]:
    """Each assignment of a flag name by itself that the module runs when it loads, and
    whether it sits where a probe's result is recorded (see the module's doc)."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name) and flag_name(small.targets[0].target.value)):
                    yield small, probe or _holds_site(small, sites)
        elif isinstance(statement, cst.If):
            inside = probe or _holds_site(statement.test, sites)
            yield from _assignments(_block(statement.body), sites, inside)
            if isinstance(statement.orelse, cst.If):
                yield from _assignments([statement.orelse], sites, inside)
            elif statement.orelse is not None:
                yield from _assignments(_block(statement.orelse.body), sites, inside)
        elif isinstance(statement, cst.Try):
            inside = probe or any(catches_import_error(handler) for handler in statement.handlers)
            for block in (statement.body, *(h.body for h in statement.handlers),
                          *(b.body for b in (statement.orelse, statement.finalbody) if b is not None)):
                yield from _assignments(_block(block), sites, inside)


def _block(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    """The statements of a block; a one-line block is one line of small statements."""
    return suite.body if isinstance(suite, cst.IndentedBlock) else [cst.SimpleStatementLine(suite.body)]  # type: ignore[attr-defined]


def _holds_site(node: cst.CSTNode, sites: Container[int]) -> bool:
    stack = [node]
    while stack:
        child = stack.pop()
        if id(child) in sites:
            return True
        stack.extend(child.children)
    return False


def _names(module: cst.CSTNode, names: frozenset[str]) -> dict[str, int]:
    """How many nodes name each of `names`: a `Name` (a read, a target, `global`, `del`),
    or a string equal to it (`__all__`, `getattr(m, "XLA_AVAILABLE")`)."""
    count: dict[str, int] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value in names:
                count[node.value] = count.get(node.value, 0) + 1
        elif isinstance(node, cst.SimpleString):
            text = node.value.strip("\"'")
            if text in names:
                count[text] = count.get(text, 0) + 1
        else:
            stack.extend(node.children)
    return count
