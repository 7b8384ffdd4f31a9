"""torch_xla's example helpers as plain Python in the user's module.

- `rate-tracker`: `xm.RateTracker(...)` → `RateTracker(...)`, a copy of torch_xla's small
  class emitted once at the top of the module (after its imports). A class, not inline
  arithmetic: a tracker is state (counts, the last smoothed rate) that examples hand to
  closures and helper functions (`train_update(..., tracker)`), so only an object with
  the same `add` / `rate` / `global_rate` methods keeps every use working unchanged.
- `drop-printed-report`: `print(met.metrics_report())` (or `logger.info(...)`,
  `xm.master_print(...)`) as a whole statement → the statement removed: the report it
  prints does not exist under TorchTPU.
"""

from __future__ import annotations

import re

import libcst as cst

from xla2tpu.detect import rate_tracker_site
from xla2tpu.rewrite.transforms.base import DELETE, CallSite, Rewrite, transform
from xla2tpu.detect.printers import prints


def _tracker_name(source: str) -> str:
    """`RateTracker`, unless the module already uses that bare word (`from ... import RateTracker`)."""
    candidate, n = "RateTracker", 1
    while re.search(rf"(?<![.\w]){re.escape(candidate)}\b", source):
        n += 1
        candidate = f"RateTracker{n}"
    return candidate


def _insert_after_imports(module: cst.CSTNode, definition: cst.ClassDef) -> cst.CSTNode:
    """`module` with `definition` before its first statement that is not an import or the
    docstring, unless an earlier edit already put a class of that name there."""
    assert isinstance(module, cst.Module)
    body = list(module.body)
    name = definition.name.value
    if any(isinstance(s, cst.ClassDef) and s.name.value == name for s in body):
        return module
    index = 0
    for index, statement in enumerate(body):  # noqa: B007 - the index is the result
        if not _is_preamble(statement, index):
            break
    else:
        index = len(body)
    blank = cst.EmptyLine()
    spaced = definition.with_changes(leading_lines=[blank, blank])
    if index < len(body):
        # The statement after the class keeps its comments, with PEP 8's two blank lines above.
        follower = body[index]
        lines = list(follower.leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        body[index] = follower.with_changes(leading_lines=[blank, blank, *lines])
    body.insert(index, spaced)
    return module.with_changes(body=body)


def _is_preamble(statement: cst.BaseStatement, index: int) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body
    if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small):
        return True
    # The module docstring.
    return index == 0 and len(small) == 1 and isinstance(small[0], cst.Expr) and isinstance(small[0].value, cst.SimpleString)


@transform(rate_tracker_site.TEMPLATE)
def rate_tracker(site: CallSite) -> Rewrite | None:
    clock = rate_tracker_site.clock(site.scope.module)
    if clock is None:
        return None  # not the site the detector decided
    spelling, imports = clock
    name = _tracker_name(site.source)
    definition = cst.parse_statement(rate_tracker_site.CLASS.format(name=name, clock=spelling))
    assert isinstance(definition, cst.ClassDef)
    expression = site.call.with_changes(func=cst.Name(name))

    def insert(module: cst.CSTNode) -> cst.CSTNode:
        return _insert_after_imports(module, definition)

    return Rewrite(expression=expression, later=[(site.module, insert)], imports=imports)


def _printer(call: cst.Call) -> bool:
    """Whether `call` prints or logs its argument: `print`, `x.info` & co, `master_print`."""
    func = call.func
    return prints(func.value if isinstance(func, cst.Name) else None,
                  func.attr.value if isinstance(func, cst.Attribute) else None)


@transform("drop-printed-report")
def drop_printed_report(site: CallSite) -> Rewrite | None:
    """The report's statement goes when the report is the one positional argument of a
    printing call that is the whole statement (`print(r, flush=True)` too), as a rule's
    delete removes one: comments above it stay, a block it empties goes or gets `pass`."""
    parents = site.parents
    if len(parents) < 4:
        return None
    arg, printer, expr, line = parents[-1], parents[-2], parents[-3], parents[-4]
    if not (
        isinstance(arg, cst.Arg)
        and arg.keyword is None
        and not arg.star
        and isinstance(printer, cst.Call)
        and _printer(printer)
        and [a for a in printer.args if a.keyword is None] == [arg]
        and isinstance(expr, cst.Expr)
        and expr.value is printer
        and isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and line.body[0] is expr
    ):
        return None

    def remove(updated: cst.CSTNode) -> cst.CSTNode | object:
        # A printing call that stays manual (`xm.master_print(..., local=True)`) keeps
        # its arguments as written: the engine hands the original call back, and the
        # statement must then stay with it.
        if isinstance(updated, cst.SimpleStatementLine) and any(
            isinstance(s, cst.Expr) and s.value is printer for s in updated.body
        ):
            return updated
        return DELETE

    return Rewrite(expression=site.call, later=[(line, remove)])  # type: ignore[list-item]
