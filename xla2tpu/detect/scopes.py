"""What imports bind in each scope, read from CPython's tree (the ast twin of resolve.py's
ImportResolver, with the same rules: a name bound both by an import and otherwise in one
scope is ambiguous; binding a name to `None` does not count).

A scope is opened where LibCST's resolver opens it: at a `def` or `class` (its decorators,
defaults and bases are read inside it), a `lambda` and a comprehension (its first iterable
too), so that both resolvers give every name the same meaning.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator

from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.trees.names import dotted_name
from xla2tpu.trees.order import child_nodes
from xla2tpu.project.scope import OTHER, Scope

COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
DEFINITIONS = (*FUNCTIONS, ast.ClassDef)
# Nodes that open a scope of their own.
SCOPED = (*FUNCTIONS, ast.ClassDef, ast.Lambda, *COMPREHENSIONS)
# The node kinds that bind or read a name in `Scopes._bind`; every other kind (most nodes:
# attributes, calls, constants...) is passed over at the cost of one set lookup.
_BINDING = frozenset({ast.Name, *SCOPED, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign,
                      ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr, ast.Delete, ast.withitem,
                      ast.ExceptHandler, ast.Global, ast.Nonlocal, ast.MatchAs, ast.MatchStar, ast.MatchMapping})


def from_module(node: ast.ImportFrom, canonical: Canonicaliser) -> str | None:
    """The absolute module a `from` import reads (None: a relative one the project model
    did not resolve)."""
    module = node.module or ""
    if node.level:
        return canonical.absolute(node.level, module)
    return module or None


def import_targets(node: ast.Import | ast.ImportFrom, canonical: Canonicaliser) -> set[tuple[str, str]]:
    """(name bound, qualified name it means) for each name an import statement binds."""
    out: set[tuple[str, str]] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname is not None:
                out.add((alias.asname, canonical(alias.name)))
            else:
                root = alias.name.split(".", 1)[0]
                out.add((root, root))
        return out
    module = from_module(node, canonical)
    if module is None:
        return out
    for alias in node.names:
        if alias.name != "*":
            out.add((alias.asname or alias.name, canonical(f"{module}.{alias.name}")))
    return out


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def none_assignment(node: ast.AST) -> bool:
    """`x = None` (or `x = y = None`): plain names set to None. Neither resolver counts it as
    a read of them or a binding (resolve.py alike): `except ImportError: xm = None` keeps no
    import alive once nothing else reads `xm`."""
    return isinstance(node, ast.Assign) and _is_none(node.value) and all(isinstance(t, ast.Name) for t in node.targets)


class Scopes:
    """The module's scope and the scope of every node that opens one (by id); in each, the
    names read there as the LibCST pass's UseResolver (resolve.py) counts them: every name
    but an attribute's, an import's own or a keyword argument's, so a definition's or a
    parameter's too. How many of those reads are `Name` nodes, and which are not, tells
    whether a name is still read once the fixes replace some of them (detect/after_fixes.py)."""

    def __init__(self, tree: ast.Module, canonical: Canonicaliser, statements: Iterable[ast.stmt] | None = None,
                 read: Callable[[ast.AST], bool] | None = None) -> None:
        """`statements`: the top-level ones to read (all by default); `read`: whether a
        definition inside them is (all by default). One left out can neither use nor bind
        what a rule looks for (plan.Plan)."""
        self.canonical = canonical
        self.module = Scope(None)
        self.of: dict[int, Scope] = {}
        self.all: list[Scope] = [self.module]
        # Every import statement with the scope it binds in, in source order.
        self.imports: list[tuple[ast.Import | ast.ImportFrom, Scope]] = []
        self.name_reads: dict[tuple[int, str], int] = {}  # (id(scope), name) -> its `Name` nodes there
        self.other_reads: set[tuple[int, str]] = set()  # read there otherwise (a parameter, a definition's name...)
        self._reads_definition = read
        for statement in tree.body if statements is None else statements:
            self._walk(statement, self.module)

    def _open(self, node: ast.AST, parent: Scope, is_class: bool = False) -> Scope:
        scope = Scope(parent, is_class, isinstance(node, COMPREHENSIONS))
        self.of[id(node)] = scope
        self.all.append(scope)
        return scope

    def _walk(self, node: ast.AST, scope: Scope) -> None:
        # Iterative over siblings, recursive over scopes and statements: deep expression
        # chains (`a + b + c ...`) stay within Python's recursion limit as the parse did.
        top = node
        stack: list[tuple[ast.AST, Scope]] = [(node, scope)]
        while stack:
            node, scope = stack.pop()
            if (self._reads_definition is not None and node is not top and isinstance(node, DEFINITIONS)
                    and not self._reads_definition(node)):
                continue
            inner = self._bind(node, scope)
            if not none_assignment(node):
                stack.extend((child, inner) for child in reversed(child_nodes(node)))

    def _bind(self, node: ast.AST, scope: Scope) -> Scope:
        """Record what `node` binds in `scope`; the scope its children are read in."""
        if node.__class__ not in _BINDING:
            return scope
        if isinstance(node, ast.Name):
            scope.reads.add(node.id)
            key = (id(scope), node.id)
            self.name_reads[key] = self.name_reads.get(key, 0) + 1
            return scope
        if isinstance(node, FUNCTIONS):
            scope.bind(node.name, OTHER)
            inner = self._open(node, scope)
            self._read(inner, node.name)  # LibCST reads a definition's name inside it
            self._params(node.args, inner)
            if node.returns is not None:
                self._annotation(node.returns)
            return inner
        if isinstance(node, ast.ClassDef):
            scope.bind(node.name, OTHER)
            inner = self._open(node, scope, is_class=True)
            self._read(inner, node.name)
            return inner
        if isinstance(node, ast.Lambda):
            inner = self._open(node, scope)
            self._params(node.args, inner)
            return inner
        if isinstance(node, COMPREHENSIONS):
            return self._open(node, scope)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports.append((node, scope))
            if isinstance(node, ast.ImportFrom) and from_module(node, self.canonical) is None:
                for alias in node.names:  # a package-relative name the project model did not resolve only shadows
                    if alias.name != "*":
                        scope.bind(alias.asname or alias.name, OTHER)
            for name, target in import_targets(node, self.canonical):
                scope.bind(name, target)
        elif isinstance(node, ast.Assign):
            if not _is_none(node.value):
                for target in node.targets:
                    self._target(target, scope)
        elif isinstance(node, ast.AnnAssign):
            self._annotation(node.annotation)
            if node.value is not None and not _is_none(node.value):
                self._target(node.target, scope)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            self._target(node.target, scope)
        elif isinstance(node, ast.NamedExpr):
            # `(x := ...)` in a comprehension binds in the function around it (PEP 572).
            owner = scope
            while owner.is_comprehension and owner.parent is not None:
                owner = owner.parent
            owner.bind(node.target.id, OTHER)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._target(target, scope)
        elif isinstance(node, ast.withitem):
            if node.optional_vars is not None:
                self._target(node.optional_vars, scope)
        elif isinstance(node, ast.ExceptHandler):
            if node.name is not None:
                scope.bind(node.name, OTHER)
                self._read(scope, node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                scope.declared[name] = isinstance(node, ast.Global)
                self._read(scope, name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            if node.name is not None:
                self._read(scope, node.name)
        elif isinstance(node, ast.MatchMapping):
            if node.rest is not None:
                self._read(scope, node.rest)
        return scope

    def _read(self, scope: Scope, name: str) -> None:
        """A read that is not a `Name` node."""
        scope.reads.add(name)
        self.other_reads.add((id(scope), name))

    def _annotation(self, node: ast.expr) -> None:
        for name in annotation_names(node):  # type checkers read them at module level
            self._read(self.module, name)

    def _params(self, args: ast.arguments, scope: Scope) -> None:
        for arg in _arguments(args):
            scope.bind(arg.arg, OTHER)
            self._read(scope, arg.arg)
            if arg.annotation is not None:
                self._annotation(arg.annotation)

    def _target(self, target: ast.expr, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id, OTHER)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, scope)
        elif isinstance(target, ast.Starred):
            self._target(target.value, scope)


def _arguments(args: ast.arguments) -> Iterator[ast.arg]:
    yield from args.posonlyargs
    yield from args.args
    if args.vararg is not None:
        yield args.vararg
    yield from args.kwonlyargs
    if args.kwarg is not None:
        yield args.kwarg


def resolve(scope: Scope, node: ast.AST) -> str | None:
    """The qualified name `node` (a Name/Attribute chain) refers to in `scope`, if imported."""
    return scope.qualify(dotted_name(node))


def annotation_names(node: ast.AST) -> Iterator[str]:
    """The identifiers in the strings of an annotation (`-> "MpDeviceLoader"`): type checkers
    read them at module level."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield from _IDENTIFIER.findall(inner.value)
