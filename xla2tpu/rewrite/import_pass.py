"""Imports follow the code: torch_xla imports left without a use go, needed ones are added.

Runs after the rewrite pass, on its output, because only then is it known which
aliases are still used. Nothing else in the file moves.
"""

from __future__ import annotations

import sys

from collections.abc import Container, Mapping

import libcst as cst

from xla2tpu.trees.blocks import IMPORT_ERRORS
from xla2tpu.detect.import_sites import Guard, ImportSite, decide, guard_decides, innermost_guard, shown
from xla2tpu.project.resolve import UseResolver, dotted_name, spells
from xla2tpu.rewrite.statements import fallback_only, holds_only
from xla2tpu.rewrite.pruner import StatementPruner
from xla2tpu.rewrite.rewriter import FileContext


class ImportHygiene(StatementPruner):
    def __init__(
        self,
        ctx: FileContext,
        uses: UseResolver,
        tops: dict[int, cst.CSTNode],
        imports: Mapping[tuple[int, int], ImportSite],
        pruned: Container[int] = (),
    ) -> None:
        super().__init__()
        self.pruned = pruned
        self.ctx = ctx
        self.share(ctx)
        self.uses = uses  # of the rewritten module, whose import statements are the input's
        self.tops = tops  # id(alias) -> its top-level statement, where its position is computed
        self.imports = imports  # the import sites (detect/import_sites.py) by where their alias starts
        # What those aliases import: only an alias that names one of them is worth its position
        # (one inside a class or function costs the positions of the whole top-level statement).
        self._names = frozenset(site.alias.name for site in imports.values())
        self._depth = 0
        # Per `try:` body entered, whether it is an ImportError guard the imports in it decide
        # (judged on the code the fixes left: one whose other statements went no longer is);
        # None marks a function body, whose imports run later, outside the enclosing `try:`.
        self._guards: list[Guard] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Imports are statements: expressions and pruned statements cannot hold one.
        if isinstance(node, cst.BaseExpression) or id(node) in self.pruned:
            return False
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[no-untyped-def]
        if isinstance(original_node, cst.BaseExpression) or id(original_node) in self.pruned:
            return updated_node
        return super().on_leave(original_node, updated_node)

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # keep the alias nodes identical: `tops` is keyed by identity

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1
        self._guards.append(None)

    def visit_Try(self, node: cst.Try) -> None:
        self._guards.append(decides_import_guard(node))

    def visit_Try_handlers(self, node: cst.Try) -> None:
        # Only the `try:` body is guarded: an import in a handler, `else:` or `finally:` is not.
        self._guards[-1] = False

    def leave_Try(
        self, original_node: cst.Try, updated_node: cst.Try
    ) -> cst.Try | cst.FlattenSentinel[cst.BaseStatement]:
        self._guards.pop()
        return super().leave_Try(original_node, updated_node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._depth -= 1
        self._guards.pop()
        return updated_node

    def _guarded(self) -> Guard:
        return innermost_guard(self._guards)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        return self._clean(updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        return self._clean(updated_node)

    def _clean(self, node: cst.Import | cst.ImportFrom):  # type: ignore[no-untyped-def]
        removed: set[int] = set()
        scope = self.uses.import_scope.get(id(node))
        for alias in () if isinstance(node.names, cst.ImportStar) else node.names:
            origin = self.ctx.alias_origin.get(id(alias), (alias, alias))[1]
            top = self.tops.get(id(origin))
            if top is None or dotted_name(alias.name) not in self._names:
                continue
            where = self.ctx.outline.where(top, origin)
            site = self.imports.get((where.start.line, where.start.column))
            if site is None:
                continue
            unused = scope is not None and not self.uses.reached(scope, site.bound)
            case = decide(site, unused, self._guarded(), self._depth == 0, self.ctx.settings.target, self.ctx.source,
                          self.ctx.facts, self.ctx.package_init, self.ctx.imported)
            if case is None:
                continue
            applied = self.ctx.report(site.rule, case, where, case.fixable, shown(site))
            if applied and case.action == "remove-import":
                removed.add(id(alias))
        if not removed:
            return node
        assert not isinstance(node.names, cst.ImportStar)
        kept = [alias for alias in node.names if id(alias) not in removed]
        if not kept:
            self.doom(node)
            return node
        # The new last name ends as the old last one did: a trailing comma in a parenthesised
        # multi-line import stays, `import a, b` gets none.
        last = kept[-1]
        kept[-1] = last.with_changes(comma=node.names[-1].comma)
        self.ctx.alias_origin[id(kept[-1])] = (kept[-1], self.ctx.alias_origin.get(id(last), (last, last))[1])
        return node.with_changes(names=kept)


def catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((dotted_name(kind) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for kind in kinds)


def decides_import_guard(node: cst.Try) -> Guard:
    """detect.imports.guard_decides, judged on the code the fixes leave."""
    handlers = [h for h in node.handlers if catches_import_error(h)]
    bound = {_bound_name(alias) for line in node.body.body if isinstance(line, cst.SimpleStatementLine)
             for small in line.body if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar)
             for alias in small.names}
    return guard_decides([holds_only(h.body) for h in handlers], [fallback_only(h.body, bound) for h in handlers],
                         holds_only(node.body, (cst.Import, cst.ImportFrom)), node.orelse is not None)


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return (dotted_name(alias.name) or "").split(".")[0]


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_future(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom)
        and isinstance(small.module, cst.Name)
        and small.module.value == "__future__"
        for small in statement.body
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _first_module(statement: cst.BaseStatement) -> str:
    small = statement.body[0]  # type: ignore[attr-defined]
    if isinstance(small, cst.Import):
        return dotted_name(small.names[0].name) or ""
    return dotted_name(small.module) if isinstance(small, cst.ImportFrom) and small.module else ""


def _import_groups(body: list[cst.BaseStatement]) -> list[list[int]]:
    """Runs of module-level import lines, split where a blank line separates them (isort's sections)."""
    groups: list[list[int]] = []
    for index, statement in enumerate(body):
        if not _is_import_line(statement) or _is_future(statement):
            continue
        joined = groups and groups[-1][-1] == index - 1 and not any(
            line.comment is None for line in statement.leading_lines
        )
        if joined:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def _group_for(name: str, body: list[cst.BaseStatement], groups: list[list[int]]) -> list[int] | None:
    """The import section `import name` belongs to: its own package's, else the stdlib or
    third-party one, else the first (in sorted place there); None where the file has only
    standard-library sections and `name` is not one: it opens a section of its own."""
    root = name.split(".")[0]
    modules = [[_first_module(body[i]) for i in group] for group in groups]
    for group, names in zip(groups, modules):
        if any(m.split(".")[0] == root for m in names):
            return group
    for group, names in zip(groups, modules):
        if names and all(_stdlib(m) == _stdlib(name) for m in names):
            return group
    if not _stdlib(name) and all(_stdlib(m) for names in modules for m in names):
        return None  # a section of its own (_insert)
    return groups[0] if groups else None


def _import_line(name: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.parse_expression(name))])])  # type: ignore[arg-type]


def add_imports(module: cst.Module, roots: set[str]) -> cst.Module:
    """Insert `import <module>` for each module needed, in sorted place within its import section.

    Without a fitting section, new imports go before the first import (or after the
    docstring and `__future__` imports when there is none).
    """
    present = {
        dotted_name(alias.name)
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
        if isinstance(small, cst.Import)
        for alias in small.names
    }
    # A module the file already imports is not added twice, nor one whose emitted code a
    # later edit took away (a rank-0 guard around a print that then went whole).
    wanted = {name for name in roots - present if spells(module, {name.split(".", 1)[0]})}
    body = list(module.body)
    for name in sorted(wanted):
        _insert(body, name)
    return module.with_changes(body=body) if wanted else module


def _insert(body: list[cst.BaseStatement], name: str) -> None:
    line = _import_line(name)
    # A standard-library module goes above the module's first other statement: code between
    # two import blocks (`TRACKER = RateTracker()`, then more imports) may already run what
    # the fix emitted. Not a third-party one: code there often sets the environment that
    # importing it reads (`os.environ[...] = ...`, then `import torch`).
    groups = _import_groups(body)
    code = len(body)
    if _stdlib(name):
        code = next((i for i, s in enumerate(body) if not (_is_import_line(s) or _is_docstring(s) and i == 0)), code)
        groups = [group for group in groups if group[0] < code]
    group = _group_for(name, body, groups)
    if group is not None:
        # Sorted place among the section's imports of the same package where it has some (a
        # section that is not sorted as a whole, `typing` above `torch`, still keeps them
        # together), else among the whole section.
        root = name.split(".")[0]
        kin = [i for i in group if _first_module(body[i]).split(".")[0] == root] or group
        after = [i for i in kin if _first_module(body[i]) > name]
        position = after[0] if after else kin[-1] + 1
        if position == group[0]:
            # The comments above the section stay above it.
            line = line.with_changes(leading_lines=body[position].leading_lines)
            body[position] = body[position].with_changes(leading_lines=[])
        body.insert(position, line)
        return
    if groups and not _stdlib(name):
        # A third-party import beside standard-library sections only (the torch_xla section
        # it replaces is gone): a section of its own, as isort keeps them, right after the
        # first one (code between sections may already use it).
        position = groups[0][-1] + 1
        body.insert(position, line.with_changes(leading_lines=[cst.EmptyLine()]))
        return
    position = next((i for i, s in enumerate(body[:code]) if _is_import_line(s) and not _is_future(s)), None)
    if position is not None:
        line = line.with_changes(leading_lines=body[position].leading_lines)
        body[position] = body[position].with_changes(leading_lines=[])
        body.insert(position, line)
        return
    position = 1 if body and _is_docstring(body[0]) else 0
    while position < len(body) and _is_future(body[position]):
        position += 1
    if position < len(body):
        # A new import block: one blank line below a docstring (as black writes it), and
        # set off from the statement it precedes.
        following = body[position]
        lines = list(following.leading_lines)
        blanks = 0
        while blanks < len(lines) and lines[blanks].comment is None:
            blanks += 1
        line = line.with_changes(leading_lines=lines[:min(blanks, 1)] if position else [])
        if position and not blanks:
            body[position] = following.with_changes(leading_lines=[cst.EmptyLine(), *lines])
    body.insert(position, line)
