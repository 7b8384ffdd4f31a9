"""torch_xla's example helpers as plain Python in the user's module.

- `copied-helper`: `xm.RateTracker(...)` → `RateTracker(...)`, `test_utils.get_summary_writer(d)`
  → `get_summary_writer(d)` & co: a copy of torch_xla's small class or function
  (detect/copied_helpers.py) emitted once at the top of the module (after its imports),
  with the helpers it calls.
- `drop-printed-report`: `print(met.metrics_report())` (or `logger.info(...)`,
  `xm.master_print(...)`) as a whole statement → the statement removed: the report it
  prints does not exist under TorchTPU.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import copied_helpers
from xla2tpu.project.resolve import spells
from xla2tpu.rewrite.transforms.base import DELETE, CallSite, Rewrite, transform
from xla2tpu.detect.printers import prints


def _insert_after_imports(module: cst.CSTNode, definition: cst.ClassDef | cst.FunctionDef,
                          copies: dict[str, int]) -> cst.CSTNode:
    """`module` with `definition` after its imports, its docstring and the copies of lower
    rank (`copies`: each copy's name and rank, see copied_helpers.rank), unless an earlier
    edit already put one of that name there."""
    assert isinstance(module, cst.Module)
    body = list(module.body)
    name = definition.name.value
    if any(isinstance(s, (cst.ClassDef, cst.FunctionDef)) and s.name.value == name for s in body):
        return module
    rank = copies[name]

    def earlier(statement: cst.BaseStatement) -> bool:
        return (isinstance(statement, (cst.ClassDef, cst.FunctionDef))
                and copies.get(statement.name.value, rank) < rank)

    index = 0
    for index, statement in enumerate(body):  # noqa: B007 - the index is the result
        if not (_is_preamble(statement, index) or earlier(statement)):
            break
    else:
        index = len(body)
    # A module that runs code between its imports (`FLAGS = parse(...)`, then more imports)
    # gets the copy after the last of them, unless that code is a definition or uses a copy.
    after = index
    for position in range(index, len(body)):
        statement = body[position]
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) or spells(statement, copies):
            break
        if _is_preamble(statement, position):
            after = position + 1
    while after < len(body) and earlier(body[after]):
        after += 1
    index = max(index, after)
    blank = cst.EmptyLine()
    spaced = definition.with_changes(leading_lines=[blank, blank])
    if index < len(body):
        # The statement after the copy keeps its comments, with PEP 8's two blank lines above.
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


@transform(copied_helpers.TEMPLATE)
def copied_helper(site: CallSite) -> Rewrite | None:
    helper = site.made
    if not isinstance(helper, copied_helpers.Helper) or not copied_helpers.copyable(site.scope.module, helper):
        return None  # not the site the detector decided
    helpers = copied_helpers.with_needs(helper)
    names = copied_helpers.fresh_names(list(copied_helpers.HELPERS.values()), site.source)
    definitions = []
    for each in helpers:
        definition = cst.parse_statement(copied_helpers.rendered(each, names))
        assert isinstance(definition, (cst.ClassDef, cst.FunctionDef))
        definitions.append(definition)
    copies = {copy: copied_helpers.rank(name) for name, copy in names.items()}
    expression = site.call.with_changes(func=cst.Name(names[helper.name]))

    def insert(module: cst.CSTNode) -> cst.CSTNode:
        for definition in definitions:
            module = _insert_after_imports(module, definition, copies)
        return module

    imports = {each.module for each in helpers if not site.scope.module.bindings.get(each.module)}
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
