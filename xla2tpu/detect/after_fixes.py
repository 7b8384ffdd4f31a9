"""What the applied fixes leave of a file, told on CPython's tree without making them: which
reads of each torch_xla import's name stay, so that `check` decides the import rules as the
import pass decides them on the fixed code (imports.py) and LibCST never parses the file.

A fix replaces its site's node (a reference; a call, keeping the argument nodes its
template's placeholders name; an expression, keeping its slots) or deletes the statement
the site is. Where a fix reaches further than that, this cannot tell (None) and the file
goes through LibCST: a fix that writes statements (a transform, a statement template, which
building decides), a block the deletions (and the imports they leave unused) empty, which
the pruner removes with the `if` or `try` around it and the reads of its test, a deletion
in a `try:` block (it changes what guards the imports there), a replaced node that opens a
scope of its own (a lambda, a comprehension), a template that writes an import's own name.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from xla2tpu import templates
from xla2tpu.ast_blocks import blocks
from xla2tpu.conditions import message_of
from xla2tpu.detect.imports import ImportSite, decide
from xla2tpu.detect.positions import Positions
from xla2tpu.detect.scopes import SCOPED, Scopes
from xla2tpu.detect.sites import Found, SiteMap
from xla2tpu.diagnostics import Diagnostic, FixClass
from xla2tpu.facts import Facts
from xla2tpu.noqa import Suppressions

# A statement deleted in one of these blocks changes what a `try:` guards (imports.py).
_GUARD_BLOCKS = (ast.Try, ast.ExceptHandler, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


class _CannotTell(Exception):
    """A fix reaches past the node it replaces: only making it tells what it leaves."""


class Leftovers:
    """The reads and statements the applied fixes take away."""

    def __init__(self, sites: SiteMap, names: frozenset[str]) -> None:
        self.gone: dict[tuple[int, str], int] = {}  # (id(scope), name) -> its `Name` nodes the fixes replace
        self._names = names  # the names the imports bind: the only reads that matter
        self._seen: set[int] = set()  # Name nodes already taken (a site inside another's replaced node)
        # id(block) -> (the block, ids of its statements deleted)
        self._deleted: dict[int, tuple[Sequence[ast.stmt], set[int]]] = {}
        for site in sites.applied_sites():
            self._take(site)

    def _take(self, site: Found) -> None:
        case = site.case
        if site.structural:
            raise _CannotTell
        if site.category == "string":
            return  # a string literal for another: no name is read there
        if case.action == "delete" and site.category in ("call", "subscript"):
            statement, owner = site.parents[-2], site.parents[-3]
            if not isinstance(statement, ast.stmt) or isinstance(owner, _GUARD_BLOCKS):
                raise _CannotTell
            block = next(b for b in blocks(owner) if any(s is statement for s in b))
            self.delete(block, statement)
            self._region(site, statement, ())
        elif case.action == "rename" and site.category == "reference":
            self._written(templates.identifiers(case.template))
            self._region(site, site.node, ())
        elif case.action == "replace" and site.category in ("reference", "call", "expression"):
            self._written(templates.identifiers(case.template))
            self._region(site, site.node, _kept(site) if site.category != "reference" else ())
        else:
            raise _CannotTell

    def _written(self, names: frozenset[str]) -> None:
        if names & self._names:
            raise _CannotTell  # the fix may spell the import's name: it may still be read

    def delete(self, block: Sequence[ast.stmt], statement: ast.stmt) -> None:
        """`statement` goes; a block left empty is the pruner's (see the module's doc)."""
        entry = self._deleted.setdefault(id(block), (block, set()))
        entry[1].add(id(statement))
        if len(entry[1]) == len(block):
            raise _CannotTell

    def _region(self, site: Found, node: ast.AST, kept: Sequence[ast.AST]) -> None:
        """The reads in `node` go, but for those in the `kept` nodes (which stay as written)."""
        assert site.scope is not None
        keep = {id(k) for k in kept}
        stack = [node]
        while stack:
            current = stack.pop()
            if id(current) in keep:
                continue
            if current is not node and isinstance(current, SCOPED):
                raise _CannotTell  # its reads are in a scope of its own
            if isinstance(current, ast.Name) and current.id in self._names and id(current) not in self._seen:
                self._seen.add(id(current))
                key = (id(site.scope), current.id)
                self.gone[key] = self.gone.get(key, 0) + 1
            elif isinstance(current, ast.keyword) and current.arg in self._names:
                raise _CannotTell  # LibCST reads a keyword's name: not counted by the node
            stack.extend(ast.iter_child_nodes(current))

    def read(self, scopes: Scopes, site: ImportSite) -> bool:
        """Whether the name the import binds is read after the fixes (UseResolver.reached)."""
        name = site.bound
        binding = site.scope.owner(name)
        for reader in scopes.all:
            if name in reader.reads and reader.owner(name) is binding:
                key = (id(reader), name)
                if key in scopes.other_reads or scopes.name_reads.get(key, 0) > self.gone.get(key, 0):
                    return True
        return False


def _kept(site: Found) -> list[ast.AST]:
    """The nodes a call's or an expression's template puts back as written."""
    if site.args is None:
        raise _CannotTell
    kept: list[ast.AST] = []
    for slot in templates.placeholders(site.case.template):
        if slot.star:
            kept.extend(site.star_args.get(slot.param, ()))
        elif slot.param in site.args:
            kept.append(site.args[slot.param])
    return kept


def import_findings(sites: SiteMap, imports: Sequence[ImportSite], scopes: Scopes, positions: Positions,
                    suppressions: Suppressions, apply: frozenset[FixClass], target: str, source: str,
                    facts: Facts) -> list[Diagnostic] | None:
    """The findings of the import sites once the applied fixes are made; None when only
    making them tells (see the module's doc)."""
    try:
        left = Leftovers(sites, frozenset(site.bound for site in imports))
        found: list[Diagnostic] = []
        removed: dict[int, list[ImportSite]] = {}  # id(import statement) -> its aliases that go
        for site in imports:
            case = decide(site, not left.read(scopes, site), site.guarded, site.top_level, target, source, facts)
            if case is None:
                continue
            where = positions.where(site.alias)
            if suppressions.suppressed(where.start.line, site.rule.code):
                continue
            fix = case.fix if case.fixable else FixClass.MANUAL
            applied = fix is not FixClass.MANUAL and fix in apply
            message = message_of(case, facts, site.qualname)
            found.append(Diagnostic(where.start.line, where.start.column + 1, site.rule.code, message, fix, applied,
                                    where.end.line, where.end.column + 1))
            if applied and case.action == "remove-import":
                removed.setdefault(id(site.statement), []).append(site)
        for going in removed.values():
            statement = going[0].statement
            if len(going) == len(statement.names):
                left.delete(going[0].block, statement)
    except _CannotTell:
        return None
    return found
