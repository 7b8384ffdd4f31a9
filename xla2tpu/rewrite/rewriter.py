"""The one pass over a module that applies the fixes of the sites the detector found
(detect/sites.py: calls, references, string arguments, environment variables, expression
patterns). Imports are handled after this pass, by `import_pass.py`, once the remaining uses
are known.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping

import libcst as cst
from libcst.metadata import CodeRange

from xla2tpu.catalogue import patterns, template_text, templates
from xla2tpu.catalogue.rules import Case, Rule
from xla2tpu.trees.blocks import lazy_imports
from xla2tpu.formatting.call_layout import keep_layout, keep_layouts
from xla2tpu.detect.arguments import bind, cst_arguments
from xla2tpu.detect.conditions import literal_text, message_of
from xla2tpu.detect.sites import EXPRESSION_KINDS, ENV_CALLS, ENV_READERS, ENV_UPDATE, SiteMap, tail
from xla2tpu.detect.found import Found
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.detect.emission import Speller
from xla2tpu.project.facts import UNKNOWN, Facts
from xla2tpu.sources.noqa import Suppressions
from xla2tpu.rewrite.outline import Outline, located
from xla2tpu.catalogue.settings import Settings
from xla2tpu.project.resolve import ImportResolver, dotted_name, resolve
from xla2tpu.project.scope import Scope
from xla2tpu.rewrite.pruner import StatementPruner, IfTest
from xla2tpu.rewrite.statements import indented_like
from xla2tpu.rewrite.transforms import REGISTRY as TRANSFORMS
from xla2tpu.rewrite.transforms.base import DELETE, CallSite, Rewrite

class FileContext:
    """Everything about one file that the passes share."""

    def __init__(
        self,
        source: str,
        settings: Settings,
        resolver: ImportResolver,
        suppressions: Suppressions,
        outline: Outline,
        facts: Facts = UNKNOWN,
        tree: ast.Module | None = None,
        defined: Mapping[str, str] | None = None,
        package_init: bool = False,
        imported: frozenset[str] = frozenset(),
    ) -> None:
        self.source = source
        self.defined = defined or {}  # project probe -> where it is defined (project/model.py)
        self.package_init = package_init  # a package's `__init__.py`: its imports are its API
        self.imported = imported  # names other modules of the project import from this one (Context.imported_flags)
        self.tree = tree  # CPython's tree of the whole file, when it has one
        self.facts = facts
        self.outline = outline
        self.settings = settings
        self.resolver = resolver
        self.suppressions = suppressions
        self.diagnostics: list[Diagnostic] = []
        self.imports_needed: set[str] = set()
        # What the passes' pruners share (see pruner.py): sites reported but not rewritten,
        # the `if`s kept and what their test is, every site, the findings whose code an `if`
        # took along.
        self.unfixed: dict[int, tuple[cst.CSTNode, int | None]] = {}
        self.held: dict[int, tuple[cst.CSTNode, IfTest]] = {}
        self.sites: dict[int, cst.CSTNode] = {}
        self.resolved: list[int] = []
        # The findings in availability flags that went because nothing read them any more
        # (dead_flags.py), with how safe that removal was.
        self.unread: dict[int, FixClass] = {}
        # An import alias the import pass made anew (the last name's comma, after the names
        # behind it went) -> it and the alias it was: a later import pass finds its site by that.
        self.alias_origin: dict[int, tuple[cst.ImportAlias, cst.ImportAlias]] = {}

    def findings(self) -> list[Diagnostic]:
        """The findings; one whose code went with an emptied `if` (pruner.py) or with an
        unread flag (dead_flags.py) is fixed: nothing of it is left to migrate."""
        found = list(self.diagnostics)
        for index in set(self.resolved):
            found[index] = found[index].removed_with_its_if()
        for index, fix in self.unread.items():
            found[index] = found[index].removed_unread(fix)
        return found

    @functools.cached_property
    def lazy_imports(self) -> frozenset[str]:
        """Modules this file imports inside functions only (ast_blocks.lazy_imports)."""
        return lazy_imports(self.tree) if self.tree is not None else frozenset()

    def report(
        self, rule: Rule, case: Case, where: CodeRange, fixable: bool, source: str = "", note: str = "", name: str = ""
    ) -> bool:
        """Record a finding unless a noqa comment suppresses it; True when its fix is applied.
        `note` says why a fix the case would make is withheld at this site; `name` is the
        qualified name matched (a project probe's tells `{defined}`)."""
        line, col = where.start.line, where.start.column + 1
        if self.suppressions.suppressed(line, rule.code):
            return False
        fix = case.fix if fixable else FixClass.MANUAL
        applied = fix is not FixClass.MANUAL and fix in self.settings.apply
        message = message_of(case, self.facts, source, note, name, self.defined)
        self.diagnostics.append(
            Diagnostic(line, col, rule.code, message, fix, applied, where.end.line, where.end.column + 1)
        )
        return applied


class Rewriter(StatementPruner):
    """Applies the fixes of the sites the detector found (detect/sites.py): each site's node
    is found by its position, and its fix is built from the LibCST nodes there, reusing
    the user's own argument nodes. A transform's fix is decided here, by building it."""

    def __init__(self, ctx: FileContext, module: cst.Module, sites: SiteMap) -> None:
        super().__init__()
        self.ctx = ctx
        self.share(ctx)
        self.site_map = sites
        self.module = module
        self.import_tops: dict[int, cst.CSTNode] = {}  # id(alias) -> its top-level statement
        self._parents: list[cst.CSTNode] = []
        self._scopes: list[Scope] = [ctx.resolver.module_scope]
        self._holds: bool = False  # whether the top-level statement being visited holds a site
        self._doomed_targets: dict[int, cst.CSTNode] = {}  # environment writes whose statement goes
        # Transforms: updated call -> statements replacing its line; original node -> later edit.
        self._new_statements: dict[int, tuple[cst.CSTNode, list[cst.BaseStatement]]] = {}
        self._later: dict[int, list[Callable[[cst.CSTNode], cst.CSTNode]]] = {}
        # Statement (original) -> modules a fix inside it imports right before it (emission.py).
        self._local_imports: dict[int, dict[str, None]] = {}
        # Call sites -> imports needed before their arguments were visited (_keep_arguments).
        self._before_args: dict[int, set[str]] = {}

    # ------------------------------------------------------------------ bookkeeping
    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        if id(node) in self.ctx.outline.pruned:
            return False
        if len(self._parents) == 2:
            self._holds = self.site_map.holds(self.ctx.outline.lines(node))
        scope = self.ctx.resolver.scope_of.get(id(node))
        if scope is not None:
            self._scopes.append(scope)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        if self._holds and isinstance(original_node, cst.BaseExpression) and isinstance(result, cst.BaseExpression):
            result = self._expression(original_node, result)
        for edit in self._later.pop(id(original_node), ()):
            edited = edit(result)
            if edited is not DELETE:
                result = edited
            else:  # the statement, or what another fix made of it, goes
                for statement in result.nodes if isinstance(result, cst.FlattenSentinel) else (result,):
                    self.doom(statement)
        if id(original_node) in self._local_imports:
            result = _with_imports(result, self._local_imports.pop(id(original_node)))
        self._parents.pop()
        if id(original_node) in self.ctx.resolver.scope_of:
            self._scopes.pop()
        return result

    @property
    def scope(self) -> Scope:
        return self._scopes[-1]

    def _speller(self) -> Speller:
        """Spells the names a fix writes at the site being left (see emission.py)."""
        resolver = self.ctx.resolver
        return Speller(self.scope, list(self._parents), resolver.scope_of, resolver.canonical, self.ctx.lazy_imports)

    def _found(self, node: cst.CSTNode, category: str, key: str | None = "", kind: str = "") -> Found | None:
        """The detector's site of `category` (and rule kind) at `node`, if any; `key` is what
        the node spells (SiteMap.may_be), "" to look at every node of the category."""
        if not self._holds or (key != "" and not self.site_map.may_be(category, key)):
            return None
        return self.site_map.at(category, self._where(node), kind)

    def _applied(self, found: Found, original: cst.CSTNode) -> bool:
        """Whether the site's fix is applied; records it for the pruner either way."""
        self.sites[id(original)] = original
        if self.site_map.applied(found):
            return True
        self.unfixed[id(original)] = (original, self.site_map.index.get(id(found)))
        return False

    def _emitted(self, speller: Speller, imports: set[str]) -> None:
        """An applied fix's imports: at module level, or right before its statement."""
        self.ctx.imports_needed |= imports
        if speller.local_imports and speller.statement is not None:
            self._local_imports.setdefault(id(speller.statement), {}).update(speller.local_imports)

    def _parent(self, depth: int = 2) -> cst.CSTNode | None:
        return self._parents[-depth] if len(self._parents) >= depth else None

    def _where(self, node: cst.CSTNode) -> CodeRange:
        return self.ctx.outline.where(*located(self._parents, node))

    def visit_Import(self, node: cst.Import) -> bool:
        self._import_tops(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self._import_tops(node)
        return False

    def _import_tops(self, node: cst.Import | cst.ImportFrom) -> None:
        # Import statements are never rewritten here, so the later hygiene pass sees these
        # very alias nodes and can report them at their original positions.
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self.import_tops[id(alias)] = self._parents[1]

    def visit_Call(self, node: cst.Call) -> None:
        if self._holds:
            # What the arguments' own fixes will add, in case this call stays as written.
            self._before_args[id(node)] = set(self.ctx.imports_needed)

    # ------------------------------------------------------------------ references
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def _reference(self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        if _names_no_reference(self._parent(), original):
            return updated
        found = self._found(original, "reference", dotted_name(original))
        if found is None or not self._applied(found, original):
            return updated
        case = found.case
        speller = self._speller()
        if case.action == "replace":
            # `{name}`: the referenced attribute's own name, as a string literal.
            name = cst.SimpleString(f'"{found.name.rsplit(".", 1)[-1]}"')
            node, speller, imports = self._render(case, {"name": name}, {}, updated)
        else:  # rename
            spelling, needed = speller(case.template + tail(found.rule, found.name))
            node = cst.parse_expression(spelling).with_changes(lpar=updated.lpar, rpar=updated.rpar)
            imports = {needed} if needed else set()
        self._emitted(speller, imports)
        return node

    # ------------------------------------------------------------------ expression patterns
    def _expression(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        found = self._found(original, "expression", EXPRESSION_KINDS.get(type(original).__name__))
        if found is None or not self._applied(found, original):
            return updated
        # Slots are bound from the updated node: rewrites inside them are kept. The pattern
        # matching here again is the check that this node is the site the detector found.
        pattern = patterns.compile_pattern(found.form)
        matched = patterns.match(pattern, updated, lambda n: resolve(self.scope, n))
        if matched is None:
            raise AssertionError(f"{found.rule.code}: the node at the site does not match `{found.form}`")
        node, speller, imports = self._render(found.case, matched.slots, {}, updated)
        self._emitted(speller, imports)
        return node

    # ------------------------------------------------------------------ calls
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._holds:
            return updated_node
        updated_node = self._string_args(original_node, updated_node)
        qualname = resolve(self.scope, original_node.func)
        if qualname == ENV_UPDATE:
            return self._env_update(original_node, updated_node)
        if qualname is None or not self.site_map.may_be("call", dotted_name(original_node.func)):
            return updated_node
        where = self._where(original_node)
        if qualname in ENV_CALLS or qualname in ENV_READERS:
            env = self.site_map.at("call", where, "env")
            if env is not None and self._applied(env, original_node):
                self.doom(updated_node)
            if qualname in ENV_CALLS:
                return updated_node
        found = self.site_map.at("call", where, "call")
        before_args = self._before_args.pop(id(original_node), None)
        if found is None:
            return updated_node
        case = found.case
        binding = bind(found.rule.params, cst_arguments(updated_node.args))
        args, star_args = binding if binding is not None else (None, {})
        speller = self._speller()
        rewrite = None
        if found.structural and found.fixable:
            rewrite = (
                self._transform(case, args, star_args, original_node, updated_node, speller, found.made)
                if case.action == "transform"
                else self._statement_rewrite(case, args, star_args, original_node, speller)
            )
            if rewrite is None or speller.note:  # it cannot rewrite this shape, or spell a name here
                self.site_map.refuse(found, speller.note)
        if self.site_map.keeps_arguments(found):
            kept = self._keep_arguments(found, original_node, updated_node, before_args)
            self._applied(found, original_node)
            return kept
        if not self._applied(found, original_node):
            return updated_node
        if case.action == "delete":
            self.doom(updated_node)
            return updated_node
        if rewrite is not None:
            return self._apply_rewrite(rewrite, updated_node, speller)
        assert args is not None
        node, speller, imports = self._render(case, args, star_args, updated_node)
        self._emitted(speller, imports)
        return node

    def _keep_arguments(self, found: Found, original: cst.Call, updated: cst.Call, before_args: set[str] | None) -> cst.Call:
        """A call that stays manual keeps its arguments as written: their fixes are reported as
        manual too (SiteMap.keeps_arguments), so no statement ends up half torch_xla, half
        TorchTPU (whoever migrates the call migrates its arguments with it)."""
        if not self.site_map.inner_fixed(found):
            return updated
        if before_args is not None:
            self.ctx.imports_needed = before_args  # what the arguments' fixes needed is not needed now
        return original

    def _whole_statement(self, original: cst.Call) -> cst.Expr | cst.Assign | None:
        """The `x = call(...)` / `call(...)` statement that is the call's whole line, if it is."""
        parent, grandparent = self._parent(2), self._parent(3)
        if (
            isinstance(parent, (cst.Expr, cst.Assign))
            and parent.value is original
            and isinstance(grandparent, cst.SimpleStatementLine)
            and len(grandparent.body) == 1
        ):
            return parent
        return None

    def _statement_rewrite(self, case: Case, args: dict | None, star_args: dict, original: cst.Call,
                           speller: Speller) -> Rewrite | None:
        """A template that is a statement (`t[:] = f(t)`) replaces the call's own statement line."""
        if args is None or not template_text.required(case.template) <= set(args):
            return None
        if not isinstance(self._whole_statement(original), cst.Expr):
            return None
        rendered = templates.render(case.template, args, star_args, speller, statement=True)
        assert isinstance(rendered.node, cst.BaseStatement)
        return Rewrite(statements=[rendered.node], imports=rendered.imports)

    def _transform(self, case: Case, args: dict | None, star_args: dict, original: cst.Call, updated: cst.Call,
                   speller: Speller, made: object = None) -> Rewrite | None:
        if args is None:
            return None
        statement = self._whole_statement(original)
        call_site = CallSite(
            call=updated,
            original=original,
            args=args,
            star_args=star_args,
            statement=statement,
            module=self.module,
            source=self.ctx.source,
            scope=self.scope,
            parents=list(self._parents[:-1]),
            spell=speller,
            made=made,
        )
        rewrite = TRANSFORMS[case.template](call_site)
        if rewrite is not None and rewrite.statements is not None and statement is None:
            return None
        return rewrite

    def _apply_rewrite(self, rewrite: Rewrite, updated: cst.Call, speller: Speller) -> cst.BaseExpression:
        self._emitted(speller, rewrite.imports)
        for node, edit in rewrite.later:
            self._later.setdefault(id(node), []).append(edit)
        if rewrite.statements is not None:
            self._new_statements[id(updated)] = (updated, keep_layouts(updated, rewrite.statements))
            return updated
        assert rewrite.expression is not None
        node = templates.fit_quotes(self._parents, rewrite.expression)
        if updated.lpar:
            node = node.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return templates.parenthesise_for(self._parent(), node)

    def _render(self, case: Case, args: Mapping[str, cst.BaseExpression], star_args: Mapping,
                updated: cst.BaseExpression) -> tuple[cst.BaseExpression, Speller, set[str]]:
        """The replacement node, with what spelled its names and the module imports it needs."""
        speller = self._speller()
        rendered = templates.render(case.template, args, star_args, speller)
        node = rendered.node
        assert isinstance(node, cst.BaseExpression)
        if isinstance(updated, cst.Call):
            node = keep_layout(updated, node)
        node = templates.fit_quotes(self._parents, node)
        if updated.lpar:
            node = node.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return templates.parenthesise_for(self._parent(), node), speller, rendered.imports

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
            statements = indented_like(statements, self._parents[-2])
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
        changed: dict[int, cst.Arg] = {}
        for position, arg in enumerate(updated.args):
            value = self._retexted(original.args[position].value, arg.value)
            if value is not None:
                changed[position] = arg.with_changes(value=value)
        if not changed:
            return updated
        return updated.with_changes(args=[changed.get(i, a) for i, a in enumerate(updated.args)])

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        """A string default the detector read as a string site (sites.py `_values`)."""
        if isinstance(original_node.default, cst.SimpleString) and updated_node.default is not None:
            default = self._retexted(original_node.default, updated_node.default)
            if default is not None:
                return updated_node.with_changes(default=default)
        return updated_node

    def _retexted(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression | None:
        """The argument with its string sites rewritten, in either branch of a conditional
        (sites.py `_choices`); None when none is."""
        if isinstance(original, cst.IfExp) and isinstance(updated, cst.IfExp):
            body, orelse = self._retexted(original.body, updated.body), self._retexted(original.orelse, updated.orelse)
            if body is None and orelse is None:
                return None
            return updated.with_changes(body=body or updated.body, orelse=orelse or updated.orelse)
        found = self._found(original, "string", literal_text(original))
        if found is not None and self._applied(found, original):
            return _retext(updated, found.case.template)
        return None

    # ------------------------------------------------------------------ environment variables
    def _env_update(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`os.environ.update({"A": "1", ...})` / `update(A="1")`: each variable is a write of its own.

        A deleted variable leaves the dict (or the keyword list); when none is left, the
        statement goes too.
        """
        literal_dict = len(updated.args) == 1 and not updated.args[0].keyword and isinstance(updated.args[0].value, cst.Dict)
        if literal_dict:
            entries = [e for e in original.args[0].value.elements if isinstance(e, cst.DictElement)]  # type: ignore[attr-defined]
            every = original.args[0].value.elements  # type: ignore[attr-defined]
        else:
            entries = [arg for arg in original.args if arg.keyword]
            every = original.args
        removed: set[int] = set()
        for where in entries:
            found = self._found(where, "pair")
            if found is not None and self._applied(found, where) and found.case.action == "delete":
                removed.add(id(where))
        if not removed:
            return updated
        statement = isinstance(self._parent(), cst.Expr)
        if len(removed) == len(entries) and statement and len(entries) == len(every):
            self.doom(updated)
            return updated
        if literal_dict:
            dictionary = updated.args[0].value
            kept = [e for e, o in zip(dictionary.elements, every) if id(o) not in removed]  # type: ignore[attr-defined]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=[updated.args[0].with_changes(value=dictionary.with_changes(elements=kept))])
        args = [arg for arg, o in zip(updated.args, original.args) if id(o) not in removed]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        found = self._found(original_node, "subscript")
        if found is not None and self._applied(found, original_node):
            self._doomed_targets[id(updated_node)] = updated_node
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if any(id(t.target) in self._doomed_targets for t in updated_node.targets) or id(updated_node.value) in self.doomed:
            self.doom(updated_node)  # also `x = <call>` whose discarded value a delete takes
        elif isinstance(original_node.value, (cst.SimpleString, cst.IfExp)):
            # A string the detector read as a site where the variable or attribute it is
            # assigned to is read (detect/held_strings.py).
            value = self._retexted(original_node.value, updated_node.value)
            if value is not None:
                updated_node = updated_node.with_changes(value=value)
        self._carry_statements(updated_node)
        return updated_node


def _names_no_reference(parent: cst.CSTNode | None, name: cst.CSTNode) -> bool:
    """Whether `name` is a name LibCST's tree has where CPython's has a string, never a site:
    an attribute's, a keyword argument's, a definition's, a parameter's, an `as` target's."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is name
    if isinstance(parent, cst.Arg):
        return parent.keyword is name
    return isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.AsName)) and parent.name is name


def _with_imports(result: object, modules: dict[str, None]) -> object:
    """`import m` lines for `modules` right before a statement (or the statements replacing
    it), taking over the comment lines above it."""
    if isinstance(result, cst.RemovalSentinel):
        return result
    nodes = list(result.nodes) if isinstance(result, cst.FlattenSentinel) else [result]
    first = nodes[0]
    lines = [
        cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.parse_expression(m))])])  # type: ignore[arg-type]
        for m in modules
    ]
    lines[0] = lines[0].with_changes(leading_lines=first.leading_lines)  # type: ignore[union-attr]
    return cst.FlattenSentinel([*lines, first.with_changes(leading_lines=[]), *nodes[1:]])  # type: ignore[union-attr]


def _retext(node: cst.BaseExpression, text: str) -> cst.SimpleString:
    """The same string literal (prefix and quotes kept) holding `text`."""
    assert isinstance(node, cst.SimpleString)
    quote = node.quote
    return node.with_changes(value=f"{node.prefix}{quote}{text}{quote}")
