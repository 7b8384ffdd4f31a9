"""The imports the import rules judge, read from CPython's tree: each alias of a torch_xla
(or Optimum TPU) import, with what decides its case but its use: whether an availability
guard (`try:` / `except ImportError`) hangs on it, and whether it is a module-level one,
judged on the code as written. Once fixes are made, the import pass judges use and guard on
the code they leave (rewrite/import_pass.py); when the ast tells what the fixes leave, or nothing is
rewritten, detect/after_fixes.py does."""

from __future__ import annotations

import ast
import os
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, field

from xla2tpu.trees.blocks import blocks, catches_import_error
from xla2tpu.project.canonical import PROJECT, Canonicaliser
from xla2tpu.catalogue.rules import Case, Rule
from xla2tpu.detect.conditions import Site, applies, choose
from xla2tpu.detect.scopes import FUNCTIONS, Scopes, from_module, none_assignment
from xla2tpu.detect.vendor_branches import other_vendor_branch
from xla2tpu.project.facts import Facts
from xla2tpu.catalogue.index import RuleIndex
from xla2tpu.project.scope import Scope



# What a `try:` around an import is (`guard_decides`): True when its imports decide what it
# does, FALLBACKS when they do only while code reads their names (its handlers only set
# them to None or raise: `except ImportError: xm = None`), False when they never do; None marks a
# function body, whose imports run later, outside the `try:` around it.
FALLBACKS = "fallbacks"
Guard = bool | str | None


@dataclass(frozen=True)
class ImportSite:
    rule: Rule
    qualname: str  # what the alias imports
    bound: str  # the name it binds
    alias: ast.alias  # reported here
    scope: Scope  # where it binds
    guarded: Guard
    top_level: bool  # not inside a function
    statement: ast.Import | ast.ImportFrom = field(compare=False)
    block: Sequence[ast.stmt] = field(compare=False)  # the statements the import is one of
    chain: tuple[ast.AST, ...] = field(compare=False)  # the nodes from the module down to the block's owner


def shown(site: ImportSite) -> str:
    """The import's name in a message: what it imports, or the name it binds where that is
    one of the project's own probes (whose matched name is the project model's)."""
    return site.bound if site.qualname.startswith(PROJECT) else site.qualname


def aliases(node: ast.Import | ast.ImportFrom, canonical: Canonicaliser) -> Iterator[tuple[str, str, ast.alias]]:
    """(qualified name, name it binds, alias) for each alias of an import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield canonical(alias.name), alias.asname or alias.name.split(".")[0], alias
        return
    module = from_module(node, canonical)
    if module is None:
        return
    for alias in node.names:
        if alias.name != "*":
            yield canonical(f"{module}.{alias.name}"), alias.asname or alias.name, alias


def import_sites(tree: ast.Module, scopes: Scopes, index: RuleIndex) -> list[ImportSite]:
    """Every alias the selected import rules match, in source order."""
    binds_in = {id(node): scope for node, scope in scopes.imports}
    return list(_sites(tree.body, (), 0, (tree,), scopes, index, binds_in))


# A module-level generator, not a closure calling itself: that closure would be a reference
# cycle holding the file's whole tree until the cyclic collector ran (docs/performance.md).
def _sites(body: Sequence[ast.AST], guards: tuple[Guard, ...], depth: int, chain: tuple[ast.AST, ...],
           scopes: Scopes, index: RuleIndex, binds_in: dict[int, Scope]) -> Iterator[ImportSite]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for qualname, bound, alias in aliases(node, scopes.canonical):
                rule = index.imports.find(qualname)
                if rule is not None:
                    yield ImportSite(rule, qualname, bound, alias, binds_in[id(node)], innermost_guard(guards), depth == 0,
                                     node, body, chain)
        elif isinstance(node, FUNCTIONS):  # its imports run later, outside any `try:`
            yield from _sites(node.body, (*guards, None), depth + 1, (*chain, node), scopes, index, binds_in)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            # Only the `try:` body is guarded: not a handler, `else:` or `finally:`.
            yield from _sites(node.body, (*guards, decides_import_guard(node)), depth, (*chain, node),  # type: ignore[attr-defined]
                              scopes, index, binds_in)
            for handler in node.handlers:  # type: ignore[attr-defined]
                yield from _sites(handler.body, (*guards, False), depth, (*chain, node, handler), scopes, index, binds_in)
            for block in (node.orelse, node.finalbody):  # type: ignore[attr-defined]
                yield from _sites(block, (*guards, False), depth, (*chain, node), scopes, index, binds_in)
        else:
            for block in blocks(node):
                if not (other_vendor_branch(node) and block is node.body):  # type: ignore[attr-defined]
                    yield from _sites(block, guards, depth, (*chain, node), scopes, index, binds_in)


def innermost_guard(guards: Sequence[Guard]) -> Guard:
    """The guard an import is under: the innermost `try:` whose imports decide anything."""
    for guard in reversed(guards):
        if guard is None:
            return False
        if guard:
            return guard
    return False



def guard_decides(handlers_inert: Sequence[bool], handlers_fallbacks: Sequence[bool], body_only_imports: bool,
                  has_else: bool) -> Guard:
    """Whether the imports in a `try:` body decide what it does: an ImportError handler runs
    when one fails, so removing one makes the block always take its success path.
    `handlers_inert`: for each handler that catches ImportError, whether it only passes;
    `handlers_fallbacks`: whether it only passes, raises or sets the imports' names to None.

    Not when the body holds nothing but imports and every such handler only passes: then
    removing an import changes nothing the block does; FALLBACKS when they only raise or
    set the names to None, which matters only while they are read. The same judgment for either
    tree: here on the code as written, in the import pass on the code the fixes leave.
    """
    only_imports = body_only_imports and not has_else
    if not handlers_inert or only_imports and all(handlers_inert):
        return False
    return FALLBACKS if only_imports and all(handlers_fallbacks) else True


def decides_import_guard(node: ast.Try, gone: Container[int] = frozenset()) -> Guard:
    """guard_decides, judged on the code as written, less the statements whose ids are in
    `gone` (the availability flags the fixes delete: detect/after_fixes.py)."""
    body = [statement for statement in node.body if id(statement) not in gone]
    handlers = [[s for s in h.body if id(s) not in gone] for h in node.handlers if catches_import_error(h)]
    bound = {alias.asname or alias.name.split(".")[0] for statement in body
             if isinstance(statement, (ast.Import, ast.ImportFrom)) for alias in statement.names}
    return guard_decides([holds_only(h) for h in handlers], [fallback_only(h, bound) for h in handlers],
                         holds_only(body, (ast.Import, ast.ImportFrom)), bool(node.orelse))


def fallback_only(body: Sequence[ast.stmt], names: Container[str] | None = None) -> bool:
    """The block holds only what `holds_only` allows, `raise` and `x = None` for names of
    `names` (any with None): what a guard does when its imports fail (`except ImportError:
    xm = pl = None`, or `raise ModuleNotFoundError("install torch_xla")`), which only
    matters while code reads the names they bind."""
    return all(holds_only([node]) or isinstance(node, ast.Raise) or (none_assignment(node) and (
        names is None or all(target.id in names for target in node.targets))) for node in body)  # type: ignore[attr-defined]


def holds_only(body: Sequence[ast.stmt], kinds: tuple[type[ast.stmt], ...] = ()) -> bool:
    """The block holds only statements of `kinds` (and `pass` / `...` / a docstring)."""
    return all(
        isinstance(node, (ast.Pass, *kinds))
        or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and (node.value.value is Ellipsis or isinstance(node.value.value, str)))
        for node in body
    )


_LEGACY = ("torch_xla.", "optimum.tpu.")  # packages that cannot be installed next to TorchTPU


def package_init(path: str) -> bool:
    """Whether the file is a package's `__init__.py`, whose imports are the package's names."""
    return os.path.basename(path) == "__init__.py"


def decide(site: ImportSite, unused: bool, guard: Guard, top_level: bool, target: str, source: str,
           facts: Facts, package_init: bool = False, imported: Container[str] = frozenset()) -> Case | None:
    """The case of the import's rule at `site`; None when the rule's own `when` rules it out.
    `unused` and `guard` are judged on the code as the fixes leave it: made (rewrite/import_pass.py),
    or told on the ast (detect/after_fixes.py). In a package's `__init__.py` (`package_init`)
    a module-level import is what `from package import name` reads: used, unless it imports
    torch_xla or Optimum TPU itself (which goes either way). So is one whose name another module
    of the project imports from this one (`imported`, project/model.py `Context.imported_flags`:
    `from .imports import is_torch_xla_available` in the package's `__init__.py`)."""
    if unused and top_level and (package_init or site.bound in imported) and not (site.qualname + ".").startswith(_LEGACY):
        unused = False
    guarded = guard is True or guard == FALLBACKS and not unused
    condition = Site(target=target, source=source, unused=unused, guarded=guarded, top_level=top_level, facts=facts)
    return choose(site.rule.cases, condition) if applies(site.rule, condition) else None
