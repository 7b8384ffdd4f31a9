"""Light import-alias resolution: which dotted name does `xm.mark_step` mean here?

LibCST's QualifiedNameProvider costs about six parses; this pass only records what
imports bind in each function/class/module scope, which is all our rules need.
A name bound both by an import and by anything else in one scope is ambiguous and
resolves to nothing, so shadowed or monkey-patched names are never rewritten.
Binding a name to `None` (the `except ImportError: xm = None` fallback) does not count.
"""

from __future__ import annotations

import re
from collections.abc import Container

import libcst as cst
import libcst.matchers as m

from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.project.scope import OTHER, Scope

# A binding that is not an import (assignment, parameter, loop target, def, class...).
def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def spells(node: cst.CSTNode, names: Container[str]) -> bool:
    """Whether the code of `node` holds a name node spelling one of `names` (an attribute's
    tail counts too: a generous answer, which keeps what it guards)."""
    return bool(m.findall(node, m.Name(value=m.MatchIfTrue(lambda value: value in names))))


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class ImportResolver(cst.CSTVisitor):
    """Collects the scopes of a module and what each import binds in them."""

    def __init__(self, canonical: Canonicaliser, pruned: Container[int] = ()) -> None:
        self.canonical = canonical
        self.pruned = pruned  # ids of statements not visited (see outline.py)
        self.module_scope = Scope(None)
        self.scope_of: dict[int, Scope] = {}  # id(FunctionDef/ClassDef/Lambda) -> its scope
        self._stack: list[Scope] = [self.module_scope]

    @property
    def scope(self) -> Scope:
        return self._stack[-1]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.pruned:
            return False
        if isinstance(node, _COMPREHENSIONS):  # a scope of its own: its targets do not leak
            self._push(node, comprehension=True)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if id(original_node) not in self.pruned:
            super().on_leave(original_node)
            if isinstance(original_node, _COMPREHENSIONS):
                self._stack.pop()

    def _push(self, node: cst.CSTNode, is_class: bool = False, comprehension: bool = False) -> None:
        scope = Scope(self.scope, is_class, comprehension)
        self.scope_of[id(node)] = scope
        self._stack.append(scope)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.bind(node.name.value, OTHER)
        self._push(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.bind(node.name.value, OTHER)
        self._push(node, is_class=True)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_Param(self, node: cst.Param) -> None:
        self.scope.bind(node.name.value, OTHER)

    def visit_Import(self, node: cst.Import) -> None:
        for name, target in import_targets(node, self.canonical):
            self.scope.bind(name, target)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if from_module(node, self.canonical) is None or isinstance(node.names, cst.ImportStar):
            # A package-relative name the project model did not resolve only shadows.
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    self.scope.bind(_bound_name(alias), OTHER)
            return
        for name, target in import_targets(node, self.canonical):
            self.scope.bind(name, target)

    # --- non-import bindings
    def visit_Assign(self, node: cst.Assign) -> None:
        if _is_none(node.value):
            return
        for target in node.targets:
            self._bind_target(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and not _is_none(node.value):
            self._bind_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        # `(x := ...)` in a comprehension binds in the function around it (PEP 572).
        scope = self.scope
        while scope.is_comprehension and scope.parent is not None:
            scope = scope.parent
        if isinstance(node.target, cst.Name):
            scope.bind(node.target.value, OTHER)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_target(node.target)  # `del x` makes x a local of the scope, like assigning it

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scope.declared[item.name.value] = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.scope.declared[item.name.value] = False

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.scope.bind(target.value, OTHER)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)


def import_targets(node: cst.Import | cst.ImportFrom, canonical: Canonicaliser) -> set[tuple[str, str]]:
    """(name bound, qualified name it means) for each name an import statement binds."""
    out: set[tuple[str, str]] = set()
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.add((alias.asname.name.value, canonical(full)))
            else:
                root = full.split(".", 1)[0]
                out.add((root, root))
        return out
    module = from_module(node, canonical)
    if module is None or isinstance(node.names, cst.ImportStar):
        return out
    for alias in node.names:
        name = dotted_name(alias.name)
        if module is not None and name is not None:
            out.add((_bound_name(alias), canonical(f"{module}.{name}")))
    return out


def from_module(node: cst.ImportFrom, canonical: Canonicaliser) -> str | None:
    """The absolute module a `from` import reads: as written, or, for a relative one, as
    the project model resolved it (None: not resolved)."""
    module = dotted_name(node.module) if node.module is not None else ""
    if module is None:
        return None
    if node.relative:
        return canonical.absolute(len(node.relative), module)
    return module or None


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = dotted_name(alias.name)
    return name.split(".", 1)[0] if name else ""


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def none_assignment(node: cst.CSTNode) -> bool:
    """`x = None` (or `x = y = None`): plain names set to None (detect/scopes.none_assignment)."""
    return (isinstance(node, cst.Assign) and _is_none(node.value)
            and all(isinstance(target.target, cst.Name) for target in node.targets))


def resolve(scope: Scope, node: cst.BaseExpression) -> str | None:
    """The qualified name `node` (a Name/Attribute chain) refers to in `scope`, if imported."""
    return scope.qualify(dotted_name(node))


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


class UseResolver(ImportResolver):
    """The scopes of a module with, in each, the names read there: which binding a read
    reaches is then Python's to say (`Scope.owner`), so an import is judged by the reads of
    its own scope and of the scopes that see it, not by a same-named one elsewhere."""

    def __init__(self, canonical: Canonicaliser, pruned: Container[int] = ()) -> None:
        super().__init__(canonical, pruned)
        self.scopes: list[Scope] = [self.module_scope]
        self.import_scope: dict[int, Scope] = {}  # id(Import/ImportFrom) -> the scope it binds in
        self._annotations = 0  # depth of annotations being visited

    def _push(self, node: cst.CSTNode, is_class: bool = False, comprehension: bool = False) -> None:
        super()._push(node, is_class, comprehension)
        self.scopes.append(self.scope)

    def visit_Import(self, node: cst.Import) -> bool:
        super().visit_Import(node)
        self.import_scope[id(node)] = self.scope
        return False  # the names an import binds are not reads

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        super().visit_ImportFrom(node)
        self.import_scope[id(node)] = self.scope
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `a.xm` reads `a`, not `xm`
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # `f(xm=1)` reads nothing named `xm`: its import may go
        return False

    def visit_Name(self, node: cst.Name) -> None:
        # Every other name counts, targets included: an import rebound or deleted is kept.
        self.scope.reads.add(node.value)

    def visit_Assign(self, node: cst.Assign) -> bool:
        return not none_assignment(node)  # `xm = None` reads nothing (scopes.none_assignment)

    # A quoted annotation (`-> "MpDeviceLoader"`, `Optional["xm.X"]`) names what an
    # `if TYPE_CHECKING:` import binds; type checkers read it at module level.
    def visit_Annotation(self, node: cst.Annotation) -> None:
        self._annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self._annotations -= 1

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self._annotations:
            self.module_scope.reads.update(_IDENTIFIER.findall(node.value))

    def reached(self, scope: Scope, name: str) -> bool:
        """Whether a read of `name` anywhere reaches the binding an import in `scope` makes."""
        binding = scope.owner(name)
        return any(name in reader.reads and reader.owner(name) is binding for reader in self.scopes)
