"""The one pass over a module that finds every rule site, reports it and applies its fix.

Sites: calls (`xm.mark_step()`), references (`torch_xla._XLAC.x`), string arguments
(`.to("xla")`), environment variable reads and writes (`os.environ["PJRT_DEVICE"]`) and
expression patterns (`device.type == "xla"`).
Imports are handled after this pass, by `imports.py`, once the remaining uses are known.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange

from xla2tpu import earlier, patterns, templates
from xla2tpu.catalogue import Case, Rule
from xla2tpu.ast_blocks import lazy_imports
from xla2tpu.call_layout import keep_layout, keep_layouts
from xla2tpu.conditions import Site, applies, bind, choose, explained, literal_text
from xla2tpu.decode import DecodeError, check_nesting
from xla2tpu.detect.positions import Positions
from xla2tpu.env_reads import variables_read
from xla2tpu.diagnostics import Diagnostic, FixClass
from xla2tpu.emission import Speller
from xla2tpu.facts import UNKNOWN, Facts
from xla2tpu.index import RuleIndex
from xla2tpu.layout import groups_of
from xla2tpu.lints import LINTS
from xla2tpu.noqa import Suppressions
from xla2tpu.outline import Outline
from xla2tpu.settings import Settings
from xla2tpu.tensors import known_tensor, tensor_names
from xla2tpu.resolve import ImportResolver, Scope, dotted_name, resolve
from xla2tpu.pruner import StatementPruner, IfTest
from xla2tpu.statements import indented_like
from xla2tpu.transforms import REGISTRY as TRANSFORMS
from xla2tpu.transforms import DELETE, CallSite, Rewrite

# Environment APIs whose first argument names a variable: qualified callee -> is a write.
_ENV_CALLS = {
    "os.environ.setdefault": True,
    "os.putenv": True,
    "os.environ.pop": True,
    "os.unsetenv": True,
    "os.environ.get": False,
    "os.getenv": False,
}
# torch_xla's own environment readers: the read is reported, and their call rules still run.
_ENV_READERS = ("torch_xla.utils.utils.getenv_as", "torch_xla.utils.utils.check_env_flag")
_ENV_UPDATE = "os.environ.update"


class FileContext:
    """Everything about one file that the passes share."""

    def __init__(
        self,
        source: str,
        index: RuleIndex,
        settings: Settings,
        resolver: ImportResolver,
        suppressions: Suppressions,
        outline: Outline,
        facts: Facts = UNKNOWN,
        tree: ast.Module | None = None,
        defined: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.defined = defined or {}  # project probe -> where it is defined (project.py)
        self.tree = tree  # CPython's tree of the whole file, when it has one
        self.facts = facts
        self.outline = outline
        self.index = index
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

    def findings(self) -> list[Diagnostic]:
        """The findings; one whose code went with an emptied `if` (pruner.py) is fixed:
        nothing of it is left to migrate."""
        found = list(self.diagnostics)
        for index in set(self.resolved):
            diagnostic = found[index]
            if not diagnostic.fixed:
                message = f"{diagnostic.message} (removed with the `if` it tests, whose block the fixes emptied)"
                found[index] = dataclasses.replace(diagnostic, message=message, fix=FixClass.SAFE, fixed=True)
        return found

    @functools.cached_property
    def lazy_imports(self) -> frozenset[str]:
        """Modules this file imports inside functions only (ast_blocks.lazy_imports)."""
        return lazy_imports(self.tree) if self.tree is not None else frozenset()

    @functools.cached_property
    def positions(self) -> Positions:
        """Where LibCST puts the nodes of CPython's tree of the file (see detect/positions.py)."""
        return Positions(self.source, self.tree)

    @functools.cached_property
    def tensor_names(self) -> frozenset[str]:
        """Names this file binds only to tensors (see tensors.py)."""
        return tensor_names(self.tree)

    @functools.cached_property
    def env_reads(self) -> frozenset[str]:
        """The environment variables this file reads (see env_reads.py)."""
        return variables_read(self.source)

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
        message = case.message.replace("{source}", source) if "{source}" in case.message else case.message
        if "{defined}" in message:
            message = message.replace("{defined}", self.defined.get(".".join(name.split(".")[:4]), "another module"))
        if note:
            message = f"{message} ({note})"
        message = explained(message, case, self.facts)
        self.diagnostics.append(
            Diagnostic(line, col, rule.code, message, fix, applied, where.end.line, where.end.column + 1)
        )
        return applied


# Keys and keywords that hold another process's environment (Ray's runtime_env, subprocess).
_OTHER_PROCESS_ENV = frozenset({"env_vars", "env"})


def _short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@functools.cache
def _uses(rule: Rule, kind: str) -> bool:
    """Whether a case of `rule` has a condition of `kind` (negated or not): a condition that
    costs something is worked out only for the rules that ask."""
    return any(condition.kind in (kind, "not-" + kind) for case in rule.cases for condition in case.when)


def lint_reads(rule: Rule, target: str, text: str) -> bool:
    """Whether lint `rule` may find something in `text`: a file, or one top-level statement.

    Its `when` read against one statement's text: the gates a lint's rule sets (a training
    step, say) skip the statements it would find nothing in.
    """
    return applies(rule, Site(target=target, source=text, top_level=True))


class Rewriter(StatementPruner):
    def __init__(self, ctx: FileContext, module: cst.Module) -> None:
        super().__init__()
        self.ctx = ctx
        self.unfixed, self.held, self.sites, self.resolved = ctx.unfixed, ctx.held, ctx.sites, ctx.resolved
        self.index = ctx.index
        self.module = module
        self.import_tops: dict[int, cst.CSTNode] = {}  # id(alias) -> its top-level statement
        self._parents: list[cst.CSTNode] = []
        self._scopes: list[Scope] = [ctx.resolver.module_scope]
        self._skip: set[int] = set()  # Names/Attributes that are not references (attr, keyword, def name...)
        self._store: set[int] = set()  # references being assigned to or deleted
        self._owned: set[int] = set()  # callees that a call rule handles
        self._doomed_targets: dict[int, cst.CSTNode] = {}  # environment writes whose statement goes
        # Transforms: updated call -> statements replacing its line; original node -> later edit.
        self._new_statements: dict[int, tuple[cst.CSTNode, list[cst.BaseStatement]]] = {}
        self._later: dict[int, list[Callable[[cst.CSTNode], cst.CSTNode]]] = {}
        # Statement (original) -> modules a fix inside it imports right before it (emission.py).
        self._local_imports: dict[int, dict[str, None]] = {}
        # Expression rules: original node -> (pattern, rule); nodes a matched pattern covers.
        self._expressions: dict[int, tuple[patterns.Pattern, Rule]] = {}
        self._claimed: set[int] = set()
        # Call-rule calls -> (diagnostics count, imports needed) before their arguments were visited.
        self._before_args: dict[int, tuple[int, set[str]]] = {}
        # Node types some pattern is rooted at: a cheap test before computing keys.
        self._pattern_roots = {key[0] for key in self.index.expressions}

    # ------------------------------------------------------------------ bookkeeping
    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        if id(node) in self.ctx.outline.pruned:
            return False
        scope = self.ctx.resolver.scope_of.get(id(node))
        if scope is not None:
            self._scopes.append(scope)
        if type(node).__name__ in self._pattern_roots and id(node) not in self._claimed:
            self._claim_expression(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        if id(original_node) in self._expressions:
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

    def _report(
        self, rule: Rule, case: Case, original: cst.CSTNode, fixable: bool, speller: Speller | None, name: str = ""
    ) -> bool:
        """Record the finding; a fix whose names cannot be written where it lands (the
        speller's note says why) is reported as manual. True when the fix is applied."""
        note = speller.note if fixable and speller is not None else ""
        where = self._where(original)
        self.sites[id(original)] = original
        count = len(self.ctx.diagnostics)
        applied = self.ctx.report(rule, case, where, fixable and not note, self._source(case, original), note, name)
        if not applied:
            self.unfixed[id(original)] = (original, count if len(self.ctx.diagnostics) > count else None)
        return applied

    def _apply(self, built: tuple[cst.BaseExpression, Speller, set[str]]) -> cst.BaseExpression:
        """An applied fix's node, its imports recorded."""
        node, speller, imports = built
        self._emitted(speller, imports)
        return node

    def _emitted(self, speller: Speller, imports: set[str]) -> None:
        """An applied fix's imports: at module level, or right before its statement."""
        self.ctx.imports_needed |= imports
        if speller.local_imports and speller.statement is not None:
            self._local_imports.setdefault(id(speller.statement), {}).update(speller.local_imports)

    def _parent(self, depth: int = 2) -> cst.CSTNode | None:
        return self._parents[-depth] if len(self._parents) >= depth else None

    def _where(self, node: cst.CSTNode) -> CodeRange:
        # [0] is the module, [1] the top-level statement being visited, [3] a statement of its
        # body when [2] is that body, and so on down.
        parents = self._parents
        inner: list[cst.CSTNode] = []
        depth = 1
        while depth + 2 < len(parents) and parents[depth + 1] is getattr(parents[depth], "body", None):
            inner.append(parents[depth + 2])
            depth += 2
        return self.ctx.outline.where(parents[1], node, inner)

    def _choose(self, rule: Rule, site: Site) -> Case | None:
        """The case that decides this site, or None when the rule's own `when` rules it out."""
        return choose(rule.cases, site) if applies(rule, site) else None

    def _site(self, **fields: object) -> Site:
        return Site(
            target=self.ctx.settings.target,
            source=self.ctx.source,
            top_level=len(self._scopes) == 1,
            class_bases=self._class_bases(),
            facts=self.ctx.facts,
            **fields,  # type: ignore[arg-type]
        )

    def _class_bases(self) -> frozenset[str]:
        """The last names of the bases of the class whose method holds the site."""
        parents = self._parents
        for i in range(len(parents) - 1, 1, -1):
            if isinstance(parents[i], cst.FunctionDef):
                holder = parents[i - 2]
                if isinstance(holder, cst.ClassDef):
                    return frozenset((dotted_name(base.value) or "").rsplit(".", 1)[-1] for base in holder.bases)
                break
        return frozenset()

    def _source(self, case: Case, node: cst.CSTNode) -> str:
        return _short(self.module.code_for_node(node)) if "{source}" in case.message else ""

    def visit_Module(self, node: cst.Module) -> None:
        target = self.ctx.settings.target
        rules = [rule for rule in self.index.lints if lint_reads(rule, target, self.ctx.source)]
        statements = self._lint_statements(node) if rules else []
        for rule in rules:
            analyse = LINTS[rule.match[0]]
            for text, statement, positions in statements:
                if not lint_reads(rule, target, text):
                    continue
                for hit in analyse(statement):
                    case = choose(rule.cases, self._site(value=hit.what))
                    self.ctx.report(rule, case, positions.where(hit.node), False, _short(positions.code(hit.node)))

    def _lint_statements(self, node: cst.Module) -> list[tuple[str, ast.stmt, Positions]]:
        """What lints read: each top-level statement of CPython's tree, with its lines (a
        definition's from its first decorator) and where its nodes lie in the file."""
        ctx = self.ctx
        if ctx.tree is not None:
            positions = ctx.positions
            return [(positions.lines(group.first, group.last), statement, positions)
                    for group in groups_of(ctx.tree.body) for statement in group.nodes]
        # CPython rejects the file (LibCST alone took it): each top-level statement it takes
        # on its own, moved down to its line.
        found = []
        for top in node.body:
            text = ctx.outline.text(top)
            moved = "\n" * ctx.outline.line(top) + text
            try:
                tree = check_nesting(moved)
            except DecodeError:
                tree = None
            if tree is not None:
                positions = Positions(moved, tree)
                found += [(text, statement, positions) for statement in tree.body]
        return found

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
            # What the arguments' own fixes will add, in case this call stays manual.
            self._before_args[id(node)] = (len(self.ctx.diagnostics), set(self.ctx.imports_needed))

    # ------------------------------------------------------------------ references
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._reference(original_node, updated_node)

    def _reference(self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        if id(original) in self._skip or id(original) in self._owned or id(original) in self._claimed:
            return updated
        qualname = resolve(self.scope, original)
        if qualname is None:
            return updated
        rule = self.index.references.find(qualname)
        if rule is None:
            return updated
        # Assigning to a name (`xm = None`, `xm.optimizer_step = f`) is not a use of the API:
        # monkey-patches and fallbacks are left exactly as they are, unless the rule is about
        # a settable attribute (`assignments = true`).
        store = id(original) in self._store
        if store and not rule.assignments:
            return updated
        case = self._choose(rule, self._site(name=qualname, store=store))
        if case is None:
            return updated
        built: tuple[cst.BaseExpression, Speller, set[str]] | None = None
        if case.fixable and case.action == "replace":
            # `{name}`: the referenced attribute's own name, as a string literal.
            name = cst.SimpleString(f'"{qualname.rsplit(".", 1)[-1]}"')
            built = self._render(case, self._site(args={"name": name}), updated)
        elif case.fixable and case.action == "rename":
            speller = self._speller()
            spelling, needed = speller(case.template + _tail(rule, qualname))
            node = cst.parse_expression(spelling).with_changes(lpar=updated.lpar, rpar=updated.rpar)
            built = node, speller, {needed} if needed else set()
        applied = self._report(rule, case, original, case.fixable, built[1] if built is not None else None, qualname)
        if not applied or built is None:
            return updated
        return self._apply(built)

    # ------------------------------------------------------------------ expression patterns
    def _claim_expression(self, node: cst.CSTNode) -> None:
        for key in patterns.candidate_keys(node):
            for pattern, rule in self.index.expressions.get(key, ()):
                found = patterns.match(pattern, node, lambda n: resolve(self.scope, n))
                if found is None or not applies(rule, self._site(form=pattern.text, store=id(node) in self._store)):
                    continue
                self._expressions[id(node)] = (pattern, rule)
                # The pattern's own names and calls belong to this rule, not to call/reference rules.
                self._claimed.update(id(claimed) for claimed in found.claimed)
                return

    def _expression(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        pattern, rule = self._expressions.pop(id(original))
        # Slots are bound from the updated node: rewrites inside them are kept.
        found = patterns.match(pattern, updated, lambda n: resolve(self.scope, n))
        site = self._site(
            args=found.slots if found is not None else None,
            tensors=self._tensor_slots(rule, found.slots if found is not None else {}),
            form=pattern.text,
            store=id(original) in self._store,
            statement=isinstance(self._parent(), cst.Expr),
        )
        case = choose(rule.cases, site)
        fixable = case.fixable and self._can_fix(case, site)
        assert isinstance(updated, cst.BaseExpression)
        built = self._render(case, site, updated) if fixable else None
        if not self._report(rule, case, original, fixable, built[1] if built is not None else None):
            return updated
        assert built is not None
        return self._apply(built)

    def _around(
        self, rule: Rule, original: cst.Call, args: dict[str, cst.BaseExpression] | None, kind: str
    ) -> frozenset[str]:
        """The patterns of `kind` (`after:` / `then:`, earlier.py) that hold at the site."""
        patterns_ = {c.arg for case in rule.cases for c in case.when if c.kind.endswith(kind)}
        if not patterns_:
            return frozenset()
        calls = earlier.calls_before(self._parents, original) if kind == "after" else earlier.call_next(self._parents)
        resolver = lambda n: resolve(self.scope, n)  # noqa: E731
        return frozenset(p for p in patterns_ if earlier.matches(p, calls, resolver, args))

    def _tensor_slots(self, rule: Rule, slots: dict[str, cst.BaseExpression]) -> frozenset[str]:
        if not any(c.kind.endswith("tensor") for case in rule.cases for c in case.when):
            return frozenset()  # the file's tensor names are only worked out when a rule asks
        names = self.ctx.tensor_names
        return frozenset(
            slot for slot, node in slots.items() if known_tensor(node, lambda n: resolve(self.scope, n), names)
        )

    # ------------------------------------------------------------------ calls
    def _call_site(self, rule: Rule, qualname: str, original: cst.Call, args: Sequence[cst.Arg]) -> Site:
        binding = bind(rule.params, args)
        return self._site(
            args=binding[0] if binding else None,
            star_args=binding[1] if binding else {},
            statement=isinstance(self._parent(), cst.Expr),
            name=qualname,
            with_item=isinstance(self._parent(), cst.WithItem) and self._parent().asname is None,  # type: ignore[union-attr]
            after=self._around(rule, original, binding[0] if binding else None, "after"),
            then=self._around(rule, original, binding[0] if binding else None, "then"),
            compared=isinstance(self._parent(), (cst.Comparison, cst.ComparisonTarget)),
            setup_branch=_uses(rule, "setup-branch") and self._in_setup_branch(),
        )

    def _in_setup_branch(self) -> bool:
        """Whether the site is in the XLA branch of an `if`/`elif` chain whose other branches
        create a process group: setup code, where the XLA path never created one."""
        parents = self._parents
        for i in range(len(parents) - 2, 0, -1):
            branch, block = parents[i], parents[i + 1]
            if not isinstance(branch, cst.If) or block is not branch.body:
                continue
            if "xla" not in self.module.code_for_node(branch.test).lower():
                continue
            head = i
            while head > 0 and isinstance(parents[head - 1], cst.If) and parents[head - 1].orelse is parents[head]:
                head -= 1
            others: list[cst.CSTNode] = []
            node: cst.CSTNode | None = parents[head]
            while node is not None:
                if isinstance(node, cst.If):
                    if node is not branch:
                        others.append(node.body)
                    node = node.orelse
                else:  # the final `else`
                    others.append(node.body)  # type: ignore[attr-defined]
                    node = None
            return any("init_process_group" in self.module.code_for_node(other) for other in others)
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self._claimed:
            return updated_node
        updated_node = self._string_args(original_node, updated_node)
        qualname = resolve(self.scope, original_node.func)
        if qualname is None:
            return updated_node
        if qualname in _ENV_CALLS:
            return self._env_call(qualname, original_node, updated_node)
        if qualname == _ENV_UPDATE:
            return self._env_update(original_node, updated_node)
        if qualname in _ENV_READERS:
            self._env_call(qualname, original_node, updated_node)
        rule = self.index.calls.find(qualname)
        if rule is None:
            return updated_node
        site = self._call_site(rule, qualname, original_node, updated_node.args)
        case = self._choose(rule, site)
        if case is None:
            return updated_node
        # Transforms and statement templates build a Rewrite; other actions edit in place.
        structural = case.action == "transform" or (case.action == "replace" and templates.is_statement(case.template))
        rewrite = None
        speller = self._speller()
        if structural and case.fixable:
            rewrite = (
                self._transform(case, site, original_node, updated_node, speller)
                if case.action == "transform"
                else self._statement_rewrite(case, site, original_node, speller)
            )
        fixable = case.fixable and (rewrite is not None if structural else self._can_fix(case, site))
        before_args = self._before_args.pop(id(original_node), None)
        inner_end = len(self.ctx.diagnostics)
        built = self._render(case, site, updated_node) if fixable and not structural and case.action != "delete" else None
        if built is not None:
            speller = built[1]
        applied = self._report(rule, case, original_node, fixable, speller, qualname)
        if (not fixable or speller.note or case.fix is FixClass.MANUAL) and before_args is not None:
            return self._keep_arguments(original_node, updated_node, before_args, inner_end)
        if not applied:
            return updated_node
        if case.action == "delete":
            self.doom(updated_node)
            return updated_node
        if rewrite is not None:
            return self._apply_rewrite(rewrite, updated_node, speller)
        assert built is not None
        return self._apply(built)

    def _keep_arguments(
        self, original: cst.Call, updated: cst.Call, before_args: tuple[int, set[str]], inner_end: int
    ) -> cst.Call:
        """A call that stays manual keeps its arguments as written: their fixes are reported as
        manual too, so no statement ends up half torch_xla, half TorchTPU (whoever migrates
        the call migrates its arguments with it)."""
        start, imports = before_args
        diagnostics = self.ctx.diagnostics
        if not any(d.fixed for d in diagnostics[start:inner_end]):
            return updated
        for position in range(start, inner_end):
            if diagnostics[position].fixed:
                diagnostics[position] = dataclasses.replace(diagnostics[position], fix=FixClass.MANUAL, fixed=False)
        self.ctx.imports_needed = imports  # what the arguments' fixes needed is not needed now
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

    def _statement_rewrite(self, case: Case, site: Site, original: cst.Call, speller: Speller) -> Rewrite | None:
        """A template that is a statement (`t[:] = f(t)`) replaces the call's own statement line."""
        if site.args is None or not templates.required(case.template) <= set(site.args):
            return None
        if not isinstance(self._whole_statement(original), cst.Expr):
            return None
        rendered = templates.render(
            case.template, site.args, site.star_args, speller, statement=True
        )
        assert isinstance(rendered.node, cst.BaseStatement)
        return Rewrite(statements=[rendered.node], imports=rendered.imports)

    def _transform(
        self, case: Case, site: Site, original: cst.Call, updated: cst.Call, speller: Speller
    ) -> Rewrite | None:
        if site.args is None:
            return None
        statement = self._whole_statement(original)
        call_site = CallSite(
            call=updated,
            original=original,
            args=site.args,
            star_args=site.star_args,
            statement=statement,
            module=self.module,
            source=self.ctx.source,
            scope=self.scope,
            parents=list(self._parents[:-1]),
            spell=speller,
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

    def _can_fix(self, case: Case, site: Site) -> bool:
        if case.action == "delete":
            return site.statement
        if case.action == "replace":
            if site.args is None:
                return False
            return templates.required(case.template) <= set(site.args)
        return True

    def _render(
        self, case: Case, site: Site, updated: cst.BaseExpression
    ) -> tuple[cst.BaseExpression, Speller, set[str]]:
        """The replacement node, with what spelled its names and the module imports it needs;
        nothing is recorded until the fix is applied (`_emitted`)."""
        speller = self._speller()
        rendered = templates.render(case.template, site.args or {}, site.star_args, speller)
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
                # A rule's `params` bind the enclosing call's arguments, for argument conditions
                # (`torch.device("xla", i)`: the index beside the string).
                binding = bind(rule.params, updated.args) if rule.params else None
                case = self._choose(rule, self._site(value=text, name=callee, args=binding[0] if binding else None))
                if case is None:
                    continue
                where = self._where(original.args[position].value)
                if self.ctx.report(rule, case, where, case.fixable, self._source(case, arg.value)):
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
        write = _ENV_CALLS.get(qualname, False)
        value = literal_text(updated.args[1].value) if write and len(updated.args) > 1 else None
        statement = isinstance(self._parent(), cst.Expr)
        case = self._env_case(rule, variable, write, value, statement)  # type: ignore[arg-type]
        if case is None:
            return updated
        fixable = case.fixable and (case.action != "delete" or statement)
        if self.ctx.report(rule, case, self._where(original), fixable, self._source(case, original)):
            self.doom(updated)
        return updated

    def _env_update(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`os.environ.update({"A": "1", ...})` / `update(A="1")`: each variable is a write of its own.

        A deleted variable leaves the dict (or the keyword list); when none is left, the
        statement goes too.
        """
        entries: list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] = []  # (variable, value, element)
        literal_dict = len(updated.args) == 1 and not updated.args[0].keyword and isinstance(updated.args[0].value, cst.Dict)
        if literal_dict:
            dictionary = updated.args[0].value
            assert isinstance(dictionary, cst.Dict)
            originals = original.args[0].value.elements  # type: ignore[attr-defined]
            for element, first in zip(dictionary.elements, originals):
                if isinstance(element, cst.DictElement):
                    entries.append((literal_text(element.key), element.value, first))
        else:
            entries = [(arg.keyword.value, arg.value, orig) for arg, orig in zip(updated.args, original.args) if arg.keyword]
        statement = isinstance(self._parent(), cst.Expr)
        removed: set[int] = set()
        for position, (variable, value, where) in enumerate(entries):
            rule = self.index.env.get(variable) if variable else None
            case = self._env_case(rule, variable, True, literal_text(value), True) if rule else None  # type: ignore[arg-type]
            if rule is None or case is None:
                continue
            if self.ctx.report(rule, case, self._where(where), case.fixable, self._source(case, where)) and case.action == "delete":
                removed.add(position)
        if not removed:
            return updated
        if len(removed) == len(entries) and statement and (literal_dict or len(entries) == len(updated.args)):
            self.doom(updated)
            return updated
        if literal_dict:
            dictionary = updated.args[0].value
            kept = [e for i, e in enumerate(dictionary.elements) if i not in removed]  # type: ignore[attr-defined]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=[updated.args[0].with_changes(value=dictionary.with_changes(elements=kept))])
        keyword_positions = [i for i, arg in enumerate(updated.args) if arg.keyword]
        gone = {keyword_positions[i] for i in removed}
        args = [arg for i, arg in enumerate(updated.args) if i not in gone]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        """The environment of another process: `{"env_vars": {"XLA_USE_BF16": "1"}}` (a Ray
        `runtime_env`), `env={...}` / `env_vars={...}`. Its variables are reported, never
        rewritten here: that process's launch is what must change."""
        parent = self._parent()
        key = literal_text(parent.key) if isinstance(parent, cst.DictElement) else (
            parent.keyword.value if isinstance(parent, cst.Arg) and parent.keyword else None)
        if key not in _OTHER_PROCESS_ENV or not self.index.env:
            return updated_node
        for element in original_node.elements:
            variable = literal_text(element.key) if isinstance(element, cst.DictElement) else None
            rule = self.index.env.get(variable) if variable else None
            case = self._env_case(rule, variable, True, literal_text(element.value), False) if rule else None  # type: ignore[arg-type]
            if rule is not None and case is not None:
                note = f"set in the `{key}` of another process: change it where that process is launched"
                self.ctx.report(rule, case, self._where(element), False, self._source(case, element), note)
        return updated_node

    def _env_case(self, rule: Rule, variable: str, write: bool, value: str | None, statement: bool) -> Case | None:
        read_back = write and variable in self.ctx.env_reads
        site = self._site(value=value, statement=statement, name=variable, read_back=read_back)
        if not applies(rule, site):
            return None
        # Reads are never rewritten: pick the first manual case written for reads, if any.
        # Nor is a write the file reads back: it is the input of that read (a test setting
        # what the code under test reads), whatever TorchTPU itself reads.
        if not write or read_back:
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
        case = self._env_case(rule, variable, write, value, assign is not None)  # type: ignore[arg-type]
        if case is None:
            return updated_node
        fixable = case.fixable and (case.action != "delete" or assign is not None)
        if self.ctx.report(rule, case, self._where(original_node), fixable, self._source(case, original_node)):
            self._doomed_targets[id(updated_node)] = updated_node
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if any(id(t.target) in self._doomed_targets for t in updated_node.targets):
            self.doom(updated_node)
        self._carry_statements(updated_node)
        return updated_node


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


def _tail(rule: Rule, qualname: str) -> str:
    """What a rename keeps: `.X` of `em.EagerMode.X` when the rule matched `...EagerMode.*`."""
    bases = [p[:-2] for p in rule.match if p.endswith(".*") and qualname.startswith(p[:-1])]
    return qualname[len(max(bases, key=len)):] if bases and qualname not in rule.match else ""


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
