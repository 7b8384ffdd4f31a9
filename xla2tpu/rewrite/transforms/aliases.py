"""`x = <call>` whose call becomes a plain name `y`: the assignment goes and `x` reads `y`.

A rewrite that unwraps a call (`pl.MpDeviceLoader(train_loader, device)` -> `train_loader`)
would leave `train_device_loader = train_loader`, an alias nobody would write. When the
function shows that the alias is only that (`x` bound by this statement alone, `y` not
rebound after it, neither bound in a nested scope, no `global`/`nonlocal`), the statement
is deleted and every read of `x` in the function becomes `y`; `y = <call of y>` just goes.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.rewrite.transforms.base import DELETE, CallSite, Edit
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def without_alias(site: CallSite, replaced: cst.CSTNode, value: cst.BaseExpression) -> list[Edit] | None:
    """The edits removing the alias `x = value` that the site's statement `x = replaced`
    would become, or None when the statement is not that, in a function, or the alias
    cannot be seen to be only that."""
    statement = site.statement
    if (
        not isinstance(value, cst.Name)
        or not isinstance(statement, cst.Assign)
        or statement.value is not replaced
        or len(statement.targets) != 1
        or not isinstance(statement.targets[0].target, cst.Name)
    ):
        return None
    alias, name = statement.targets[0].target.value, value.value
    delete: Edit = (statement, lambda _node: DELETE)
    if alias == name:  # `y = y` does nothing
        return [delete]
    function = _function(site)
    if function is None:
        return None
    bindings = _Bindings({alias, name}, statement)
    function.visit(bindings)
    if bindings.unclear or bindings.count(alias) != 1 or bindings.after.get(name, 0):
        return None
    return [delete, (function, lambda node: node.visit(_Renamer(alias, name)))]


def _function(site: CallSite) -> cst.FunctionDef | None:
    """The function whose body holds the site directly (not through a class or lambda)."""
    for parent in reversed(site.parents):
        if isinstance(parent, cst.FunctionDef):
            return parent
        if isinstance(parent, _SCOPES):
            return None
    return None


class _Bindings(cst.CSTVisitor):
    """How often each of `names` is bound in a function, and how often after `start`;
    `unclear` when one is declared global/nonlocal or bound in a nested scope."""

    def __init__(self, names: set[str], start: cst.CSTNode) -> None:
        super().__init__()
        self.names, self.start = names, start
        self.total: dict[str, int] = {}
        self.after: dict[str, int] = {}
        self.unclear = False
        self._started = False
        self._depth = 0

    def count(self, name: str) -> int:
        return self.total.get(name, 0)

    def _bind(self, target: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Name) and target.value in self.names:
            if self._depth > 1:
                self.unclear = True
            self.total[target.value] = self.total.get(target.value, 0) + 1
            if self._started:
                self.after[target.value] = self.after.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.start:
            self._started = True
        if isinstance(node, _SCOPES):
            self._depth += 1
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self._bind(node.name)
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value in self.names for n in node.names):
            self.unclear = True
        if isinstance(node, cst.AssignTarget | cst.AugAssign | cst.AnnAssign | cst.For | cst.CompFor | cst.NamedExpr):
            self._bind(node.target)
        elif isinstance(node, cst.Param):
            self._bind(node.name)
        elif isinstance(node, cst.AsName):
            self._bind(node.name)
        elif isinstance(node, cst.ImportAlias) and node.asname is None:
            self._bind(node.name)
        elif isinstance(node, cst.Del):
            self._bind(node.target)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, _SCOPES):
            self._depth -= 1


class _Renamer(cst.CSTTransformer):
    """Every read of the variable `old` becomes `new` (attribute names and keywords are not reads)."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self._names: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # no read in it, and the import pass finds its aliases by identity

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._names.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._names.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == self.old and id(original_node) not in self._names:
            return updated_node.with_changes(value=self.new)
        return updated_node
