"""The one pass over a module that finds every rule site, reports it and applies its fix.

Sites: calls (`xm.mark_step()`), references (`torch_xla._XLAC.x`), string arguments
(`.to("xla")`), environment variable reads and writes (`os.environ["PJRT_DEVICE"]`).
Imports are handled after this pass, by `imports.py`, once the remaining uses are known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider

from xla2tpu import templates
from xla2tpu.catalogue import Case, Rule
from xla2tpu.conditions import Site, bind, choose, literal_text
from xla2tpu.diagnostics import Diagnostic, FixClass
from xla2tpu.index import RuleIndex
from xla2tpu.noqa import Suppressions
from xla2tpu.resolve import ImportResolver, Scope, resolve
from xla2tpu.statements import pass_statement, prune, prune_small
from xla2tpu.transforms import REGISTRY as TRANSFORMS
from xla2tpu.transforms import CallSite, Rewrite

# Environment APIs: qualified callee -> (is a write, index of the variable-name argument).
_ENV_CALLS = {
    "os.environ.setdefault": True,
    "os.putenv": True,
    "os.environ.pop": True,
    "os.unsetenv": True,
    "os.environ.get": False,
    "os.getenv": False,
}


@dataclass(frozen=True)
class Settings:
    selected: frozenset[str]
    apply: frozenset[FixClass]  # fix classes applied (or, for check, shown as applicable)
    target: str = "eager"


class FileContext:
    """Everything about one file that the passes share."""

    def __init__(
        self,
        source: str,
        index: RuleIndex,
        settings: Settings,
        resolver: ImportResolver,
        suppressions: Suppressions,
    ) -> None:
        self.source = source
        self.index = index
        self.settings = settings
        self.resolver = resolver
        self.suppressions = suppressions
        self.diagnostics: list[Diagnostic] = []
        self.imports_needed: set[str] = set()

    def report(self, rule: Rule, case: Case, where: CodeRange, fixable: bool, source: str = "") -> bool:
        """Record a finding unless a noqa comment suppresses it; True when its fix is applied."""
        line, col = where.start.line, where.start.column + 1
        if self.suppressions.suppressed(line, rule.code):
            return False
        fix = case.fix if fixable else FixClass.MANUAL
        applied = fix is not FixClass.MANUAL and fix in self.settings.apply
        message = case.message.replace("{source}", source) if "{source}" in case.message else case.message
        self.diagnostics.append(
            Diagnostic(line, col, rule.code, message, fix, applied, where.end.line, where.end.column + 1)
        )
        return applied

    def spell(self, scope: Scope) -> Callable[[str], tuple[str, str | None]]:
        """How to write a qualified name at a site in `scope`, and the import it then needs."""

        def spelling(qualname: str) -> tuple[str, str | None]:
            best: tuple[str, str] | None = None
            seen: set[str] = set()
            walk: Scope | None = scope
            while walk is not None:
                for name in walk.bindings:
                    if name in seen:
                        continue
                    seen.add(name)
                    target = scope.lookup(name)
                    if target and (qualname == target or qualname.startswith(target + ".")):
                        if best is None or len(target) > len(best[1]):
                            best = (name, target)
                walk = walk.parent
            if best is not None:
                return best[0] + qualname[len(best[1]):], None
            return qualname, qualname.split(".", 1)[0]

        return spelling


def _short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class StatementPruner(cst.CSTTransformer):
    """Removes the small statements whose id is in `doomed`, keeping comments and blocks valid."""

    def __init__(self) -> None:
        super().__init__()
        # id -> node: holding the node keeps its id from being reused by a new node.
        self.doomed: dict[int, cst.CSTNode] = {}

    def doom(self, node: cst.CSTNode) -> None:
        self.doomed[id(node)] = node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body = prune_small(updated_node.body, self.doomed)
        if not body:
            self.doom(updated_node)
            return updated_node
        return updated_node.with_changes(body=body)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        return updated_node.with_changes(body=prune_small(updated_node.body, self.doomed) or [cst.Pass()])

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body, left = prune(updated_node.body, self.doomed)
        if not body:
            return updated_node.with_changes(body=[pass_statement(left)])
        return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body, left = prune(updated_node.body, self.doomed)
        return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])


class Rewriter(StatementPruner):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, ctx: FileContext, module: cst.Module) -> None:
        super().__init__()
        self.ctx = ctx
        self.index = ctx.index
        self.module = module
        self.import_positions: dict[int, CodeRange] = {}
        self._parents: list[cst.CSTNode] = []
        self._scopes: list[Scope] = [ctx.resolver.module_scope]
        self._skip: set[int] = set()  # Names/Attributes that are not references (attr, keyword, def name...)
        self._store: set[int] = set()  # references being assigned to or deleted
        self._owned: set[int] = set()  # callees that a call rule handles
        self._doomed_targets: dict[int, cst.CSTNode] = {}  # environment writes whose statement goes
        # Transforms: updated call -> statements replacing its line; original node -> later edit.
        self._new_statements: dict[int, tuple[cst.CSTNode, list[cst.BaseStatement]]] = {}
        self._later: dict[int, list[Callable[[cst.CSTNode], cst.CSTNode]]] = {}

    # ------------------------------------------------------------------ bookkeeping
    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        scope = self.ctx.resolver.scope_of.get(id(node))
        if scope is not None:
            self._scopes.append(scope)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        for edit in self._later.pop(id(original_node), ()):
            result = edit(result)
        self._parents.pop()
        if id(original_node) in self.ctx.resolver.scope_of:
            self._scopes.pop()
        return result

    @property
    def scope(self) -> Scope:
        return self._scopes[-1]

    def _parent(self, depth: int = 2) -> cst.CSTNode | None:
        return self._parents[-depth] if len(self._parents) >= depth else None

    def _where(self, node: cst.CSTNode) -> CodeRange:
        return self.get_metadata(PositionProvider, node)

    def _site(self, **fields: object) -> Site:
        return Site(
            target=self.ctx.settings.target,
            source=self.ctx.source,
            top_level=len(self._scopes) == 1,
            **fields,  # type: ignore[arg-type]
        )

    def _source(self, case: Case, node: cst.CSTNode) -> str:
        return _short(self.module.code_for_node(node)) if "{source}" in case.message else ""

    def visit_Import(self, node: cst.Import) -> bool:
        self._import_positions(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self._import_positions(node)
        return False

    def _import_positions(self, node: cst.Import | cst.ImportFrom) -> None:
        # Import statements are never rewritten here, so the later hygiene pass sees these
        # very alias nodes and can report them at their original positions.
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self.import_positions[id(alias)] = self._where(alias)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.value))
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._skip.add(id(node.name))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._skip.add(id(node.name))

    def visit_Param(self, node: cst.Param) -> None:
        self._skip.add(id(node.name))

    def visit_AsName(self, node: cst.AsName) -> None:
        self._skip.add(id(node.name))

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store.add(id(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store.add(id(node.target))

    def visit_Del(self, node: cst.Del) -> None:
        self._store.add(id(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        qualname = resolve(self.scope, node.func)
        if qualname is not None and self.index.calls.find(qualname) is not None:
            self._owned.add(id(node.func))

    # ------------------------------------------------------------------ references
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def _reference(self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        # Assigning to a name (`xm = None`, `xm.optimizer_step = f`) is not a use of the API:
        # monkey-patches and fallbacks are left exactly as they are.
        if id(original) in self._skip or id(original) in self._owned or id(original) in self._store:
            return updated
        qualname = resolve(self.scope, original)
        if qualname is None:
            return updated
        rule = self.index.references.find(qualname)
        if rule is None:
            return updated
        case = choose(rule.cases, self._site())
        applied = self.ctx.report(rule, case, self._where(original), case.fixable, self._source(case, original))
        if not applied or case.action != "rename":
            return updated
        spelling, needed = self.ctx.spell(self.scope)(case.template)
        if needed:
            self.ctx.imports_needed.add(needed)
        node = cst.parse_expression(spelling)
        return node.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    # ------------------------------------------------------------------ calls
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated_node = self._string_args(original_node, updated_node)
        qualname = resolve(self.scope, original_node.func)
        if qualname is None:
            return updated_node
        if qualname in _ENV_CALLS:
            return self._env_call(qualname, original_node, updated_node)
        rule = self.index.calls.find(qualname)
        if rule is None:
            return updated_node
        binding = bind(rule.params, updated_node.args)
        statement = isinstance(self._parent(), cst.Expr)
        site = self._site(
            args=binding[0] if binding else None,
            star_args=binding[1] if binding else {},
            statement=statement,
        )
        case = choose(rule.cases, site)
        rewrite = None
        if case.action == "transform" and case.fixable:
            rewrite = self._transform(case, site, original_node, updated_node)
        fixable = case.fixable and (rewrite is not None if case.action == "transform" else self._can_fix(case, site))
        applied = self.ctx.report(rule, case, self._where(original_node), fixable, self._source(case, original_node))
        if not applied:
            return updated_node
        if case.action == "delete":
            self.doom(updated_node)
            return updated_node
        if case.action == "transform":
            return self._apply_rewrite(rewrite, updated_node)  # type: ignore[arg-type]
        return self._render(case, site, updated_node)

    def _transform(self, case: Case, site: Site, original: cst.Call, updated: cst.Call) -> Rewrite | None:
        if site.args is None:
            return None
        parent, grandparent = self._parent(2), self._parent(3)
        statement = None
        if (
            isinstance(parent, (cst.Expr, cst.Assign))
            and parent.value is original
            and isinstance(grandparent, cst.SimpleStatementLine)
            and len(grandparent.body) == 1
        ):
            statement = parent
        call_site = CallSite(
            call=updated,
            original=original,
            args=site.args,
            star_args=site.star_args,
            statement=statement,
            module=self.module,
            scope=self.scope,
            parents=list(self._parents[:-1]),
            spell=self.ctx.spell(self.scope),
        )
        rewrite = TRANSFORMS[case.template](call_site)
        if rewrite is not None and rewrite.statements is not None and statement is None:
            return None
        return rewrite

    def _apply_rewrite(self, rewrite: Rewrite, updated: cst.Call) -> cst.BaseExpression:
        self.ctx.imports_needed |= rewrite.imports
        for node, edit in rewrite.later:
            self._later.setdefault(id(node), []).append(edit)
        if rewrite.statements is not None:
            self._new_statements[id(updated)] = (updated, rewrite.statements)
            return updated
        assert rewrite.expression is not None
        node = rewrite.expression
        if updated.lpar:
            node = node.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return templates.parenthesise_for(self._parent(), node)

    def _can_fix(self, case: Case, site: Site) -> bool:
        if case.action == "delete":
            return site.statement
        if case.action == "replace":
            if site.args is None:
                return False
            return templates.required(case.template) <= set(site.args)
        return True

    def _render(self, case: Case, site: Site, updated: cst.Call) -> cst.BaseExpression:
        rendered = templates.render(
            case.template, site.args or {}, site.star_args, self.ctx.spell(self.scope)
        )
        self.ctx.imports_needed |= rendered.imports
        node = rendered.node
        assert isinstance(node, cst.BaseExpression)
        if updated.lpar:
            node = node.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return templates.parenthesise_for(self._parent(), node)

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        if id(updated_node.value) in self.doomed:
            self.doom(updated_node)
        self._carry_statements(updated_node)
        return updated_node

    def _carry_statements(self, statement: cst.Expr | cst.Assign) -> None:
        """A transform's statements for a call move up to the statement that holds it."""
        pending = self._new_statements.pop(id(statement.value), None)
        if pending is not None:
            self._new_statements[id(statement)] = (statement, pending[1])

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated_node.body) == 1 and id(updated_node.body[0]) in self._new_statements:
            _node, statements = self._new_statements.pop(id(updated_node.body[0]))
            if statements:
                first = statements[0].with_changes(
                    leading_lines=[*updated_node.leading_lines, *statements[0].leading_lines]
                )
                return cst.FlattenSentinel([first, *statements[1:]])
            self.doom(updated_node)
            return updated_node
        return super().leave_SimpleStatementLine(original_node, updated_node)

    # ------------------------------------------------------------------ string arguments
    def _string_args(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not self.index.string_args:
            return updated
        callee: str | None = None
        method = updated.func.attr.value if isinstance(updated.func, cst.Attribute) else ""
        changed: dict[int, cst.Arg] = {}
        for position, arg in enumerate(updated.args):
            text = literal_text(arg.value)
            if text is None:
                continue
            for rule in self.index.string_args:
                if rule.pattern is not None and not rule.pattern.fullmatch(text):
                    continue
                if callee is None:
                    callee = resolve(self.scope, original.func) or ""
                if not any(_site_hit(site, callee, method, position, arg) for site in rule.sites):
                    continue
                case = choose(rule.cases, self._site(value=text))
                where = self._where(original.args[position].value)
                if self.ctx.report(rule, case, where, case.fixable):
                    changed[position] = arg.with_changes(value=_retext(arg.value, case.template))
                break
        if not changed:
            return updated
        return updated.with_changes(args=[changed.get(i, a) for i, a in enumerate(updated.args)])

    # ------------------------------------------------------------------ environment variables
    def _env_call(self, qualname: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not updated.args:
            return updated
        variable = literal_text(updated.args[0].value)
        rule = self.index.env.get(variable) if variable else None
        if rule is None:
            return updated
        write = _ENV_CALLS[qualname]
        value = literal_text(updated.args[1].value) if write and len(updated.args) > 1 else None
        statement = isinstance(self._parent(), cst.Expr)
        case = self._env_case(rule, write, value, statement)
        fixable = case.fixable and (case.action != "delete" or statement)
        if self.ctx.report(rule, case, self._where(original), fixable, self._source(case, original)):
            self.doom(updated)
        return updated

    def _env_case(self, rule: Rule, write: bool, value: str | None, statement: bool) -> Case:
        site = self._site(value=value, statement=statement)
        # Reads are never rewritten: pick the first manual case written for reads, if any.
        if not write:
            reads = [c for c in rule.cases if c.fix is FixClass.MANUAL]
            return choose(reads or rule.cases, site)
        return choose(rule.cases, site)

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        if len(updated_node.slice) != 1 or not isinstance(updated_node.slice[0].slice, cst.Index):
            return updated_node
        variable = literal_text(updated_node.slice[0].slice.value)
        rule = self.index.env.get(variable) if variable else None
        if rule is None or resolve(self.scope, original_node.value) != "os.environ":
            return updated_node
        parent = self._parent(3)  # Subscript <- AssignTarget <- Assign
        assign = parent if isinstance(parent, cst.Assign) and len(parent.targets) == 1 else None
        write = id(original_node) in self._store
        value = literal_text(assign.value) if assign is not None else None
        case = self._env_case(rule, write, value, assign is not None)
        fixable = case.fixable and (case.action != "delete" or assign is not None)
        if self.ctx.report(rule, case, self._where(original_node), fixable, self._source(case, original_node)):
            self._doomed_targets[id(updated_node)] = updated_node
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if any(id(t.target) in self._doomed_targets for t in updated_node.targets):
            self.doom(updated_node)
        self._carry_statements(updated_node)
        return updated_node


def _site_hit(site, callee: str, method: str, position: int, arg: cst.Arg) -> bool:
    if site.calls and callee not in site.calls:
        return False
    if site.method and site.method != method:
        return False
    if site.keyword:
        return arg.keyword is not None and arg.keyword.value == site.keyword
    if site.position is not None:
        return arg.keyword is None and position == site.position
    return False


def _retext(node: cst.BaseExpression, text: str) -> cst.SimpleString:
    """The same string literal (prefix and quotes kept) holding `text`."""
    assert isinstance(node, cst.SimpleString)
    quote = node.quote
    return node.with_changes(value=f"{node.prefix}{quote}{text}{quote}")
