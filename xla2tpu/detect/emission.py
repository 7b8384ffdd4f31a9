"""Spelling a qualified name where a fix puts it, so that the name resolves there.

A template names modules in full (`torch.distributed.get_rank`); at a site the file may
bind them differently. The spelling uses a name the file already binds, when its binding
is sure to have run by the time the site runs: a module-level import, or an import in
the site's own function that precedes it in straight-line code. A function that binds
the module's root name anywhere makes it local everywhere in that function (Python reads
it before the binding as UnboundLocalError), so there:

- when the function binds the name only by importing that very module, `import torch`
  goes right before the statement holding the site (`local_imports`), and the module
  needs no import of its own for it;
- when it binds it otherwise (a parameter or a variable named `torch`), the name cannot
  be reached from the site and the fix is withheld (`shadowed`).
A file that imports a module only inside functions (so that it imports without it) gets
the fix's import there too, right before the statement, not at module level.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence

from xla2tpu.catalogue import template_text
from xla2tpu.detect.scopes import import_targets as ast_import_targets
from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.project.scope import Scope


class Speller:
    """Spells names at one site; called as `speller(qualname) -> (spelling, module import)`."""

    def __init__(
        self,
        scope: Scope,
        parents: Sequence[object],
        scope_of: Mapping[int, Scope],
        canonical: Canonicaliser,
        lazy: frozenset[str] = frozenset(),
    ) -> None:
        self.scope = scope
        self.lazy = lazy  # modules the file imports inside functions only (ast_blocks.lazy_imports)
        # The site's original ancestors, outermost first, the site last: LibCST's nodes when a
        # fix is written, CPython's when a finding is detected.
        self.parents = parents
        self.scope_of = scope_of
        self.canonical = canonical
        self.local_imports: dict[str, None] = {}  # modules to import before `statement`
        self.shadowed: dict[str, None] = {}  # root names that mean something else here
        self.statement: object | None = None  # where local imports go

    def __call__(self, qualname: str) -> tuple[str, str | None]:
        module = template_text.explicit_import(qualname)
        best: tuple[str, str] | None = None
        seen: set[str] = set()
        walk: Scope | None = self.scope
        while walk is not None:
            for name in walk.imports:  # a name bound otherwise has no target (`lookup` is None)
                if name in seen:
                    continue
                seen.add(name)
                target = self.scope.lookup(name)
                if target and (qualname == target or qualname.startswith(target + ".")) and self._reaches(name, target):
                    if best is None or len(target) > len(best[1]):
                        best = (name, target)
            walk = walk.parent
        if best is not None:
            # `dist.tensor.x` still needs `import torch.distributed.tensor` somewhere.
            needed = module if module and len(best[1]) < len(module) else None
            return best[0] + qualname[len(best[1]):], needed
        root = qualname.split(".", 1)[0]
        owner = self.scope.owner(root)
        if owner is None and self.scope.is_function and root in self.lazy:
            statement = self._statement_in(self.scope)
            if statement is not None:  # the file imports it inside functions only: so does the fix
                self.statement = statement
                self.local_imports[module or root] = None
                return qualname, None
        if owner is None or owner.parent is None:
            return qualname, module or root  # the module's own name: imported at module level
        statement = self._statement_in(owner)
        if statement is not None and owner.bindings.get(root) == {root}:
            self.statement = statement
            self.local_imports[module or root] = None
        else:
            self.shadowed[root] = None
        return qualname, None

    @property
    def note(self) -> str:
        """Why the fix is withheld, when a name it writes does not reach its module here."""
        if not self.shadowed:
            return ""
        names = ", ".join(f"`{name}`" for name in self.shadowed)
        return (
            f"not rewritten: {names} in this scope is a local name, not the module the fix needs;"
            " rewrite it by hand, importing the module under another name"
        )

    def _reaches(self, name: str, target: str) -> bool:
        """Whether the binding of `name` is sure to hold at the site: a module-level one, or
        an import of `target` before the site in the straight-line code of its scope."""
        owner = self.scope.owner(name)
        if owner is None or owner.parent is None:
            return True
        for parent, child, own in self._blocks_of(owner):
            siblings = _statements(parent, child) if own else None
            for sibling in siblings or ():
                if sibling is child:
                    break
                if self._imports(sibling, name, target):
                    return True
        return False

    def _imports(self, statement: object, name: str, target: str) -> bool:
        if isinstance(statement, ast.AST):
            return isinstance(statement, (ast.Import, ast.ImportFrom)) and (name, target) in ast_import_targets(statement, self.canonical)
        import libcst as cst  # a statement of the LibCST pass: LibCST is loaded

        from xla2tpu.project.resolve import import_targets

        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        return any(
            isinstance(small, (cst.Import, cst.ImportFrom)) and (name, target) in import_targets(small, self.canonical)
            for small in smalls  # type: ignore[union-attr]
        )

    def _statement_in(self, owner: Scope) -> object | None:
        """The innermost statement around the site that sits in a block of `owner`'s own
        code, before which an import binds the name for the site; None if there is none."""
        for parent, child, own in self._blocks_of(owner):
            if _in_block(parent, child):
                return child if own else None
        return None

    def _blocks_of(self, owner: Scope) -> Iterator[tuple[object, object, bool]]:
        """(parent, child, whether the parent is code of `owner`'s own scope) around the
        site, innermost first; stops where the walk leaves `owner`'s scope."""
        current = self.scope
        parents = self.parents
        for depth in range(len(parents) - 1, 0, -1):
            child, parent = parents[depth], parents[depth - 1]
            inner = self.scope_of.get(id(child))
            if inner is not None:
                if inner is owner:
                    return  # left the binding's scope
                current = inner.parent  # type: ignore[assignment]
            yield parent, child, current is owner


# The fields of CPython's statements that hold a site's statement (LibCST: _cst_lines).
_AST_BODIES = ("body", "orelse", "finalbody")


def _statements(parent: object, child: object) -> Sequence[object] | None:
    """The statements `child` is one of, in `parent` (None: `child` is not a statement there).
    On CPython's tree, `a; b` are siblings in the block, as LibCST's small statements are."""
    if isinstance(parent, ast.AST):
        for field in _AST_BODIES:
            body = getattr(parent, field, None)
            if isinstance(body, list) and any(item is child for item in body):
                return body
        return None
    return parent.body if isinstance(parent, _cst_lines()) else None  # type: ignore[attr-defined]


def _in_block(parent: object, child: object) -> bool:
    """Whether `child` is a statement of a block of `parent`, where an import may go before it."""
    if isinstance(parent, ast.AST):
        return isinstance(child, ast.stmt) and _statements(parent, child) is not None
    import libcst as cst  # a node of the LibCST pass: LibCST is loaded

    return isinstance(parent, (cst.IndentedBlock, cst.Module)) and isinstance(child, cst.BaseStatement)


def _cst_lines() -> tuple[type, ...]:
    """LibCST's parents whose statement lists hold a site's statement (asked only of its
    nodes: LibCST is loaded)."""
    import libcst as cst

    return cst.IndentedBlock, cst.Module, cst.SimpleStatementLine, cst.SimpleStatementSuite
