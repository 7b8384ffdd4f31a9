"""What the applied fixes leave of a file, told on CPython's tree without making them, for
`check`: which reads of each torch_xla import's name stay (so the import rules are decided
as the import pass decides them on the fixed code, rewrite/import_pass.py), and which findings go with
an `if` the fixes empty (pruner.py). LibCST then never parses the file.

A fix replaces its site's node (a reference; a call, keeping the argument nodes its
template's placeholders name; an expression, keeping its slots), replaces the call's line
with a statement template's, deletes the statement the site is, or takes a variable out of
`os.environ.update(...)` (the statement goes with the last one). The pruner then removes
what the deletions emptied, by its rules, told here on the ast: an `if` whose test only
reads (its reads go, and the findings in it are resolved), a `for` over a `range`, a `with`
of autograd state, an undecorated unittest hook; other blocks keep `pass`, as does one
that keeps a comment. The import pass's removals are pruned alike (an emptied `try:` then
goes too), and so is the import pass's second run, where an `if` it removed held the last
read of an import in its test. Where that cannot be told (None), the file goes through
LibCST: a transform the ast did not decide, a deletion in a `try:` before the imports are
decided (it changes what guards them), an `if` left with a test that does something, an
`if` whose branches may become the same (not where what a fix writes differs from the other
branch in what neither the speller nor the site's arguments decide), an emptied module, a
replaced node that opens a scope of its own, a template that reads an import's own name
(not as an attribute's tail) or may spell a name with it, import removals that change a
`try:` and make the import pass run again.
"""

from __future__ import annotations

import ast
import heapq
from collections.abc import Collection, Container, Iterable, Sequence

from xla2tpu.catalogue import template_text
from xla2tpu.trees.blocks import first_line
from xla2tpu.catalogue.rules import Case
from xla2tpu.detect.conditions import message_of
from xla2tpu.detect import (call_shapes, collective_sites, copied_helpers, env_access_site, launch_site, loader_site,
                            probe_flags, profiler_site)
from xla2tpu.detect.import_sites import Guard, ImportSite, decide, decides_import_guard, fallback_only, innermost_guard, shown
from xla2tpu.trees.names import dotted_name
from xla2tpu.detect.positions import Positions
from xla2tpu.detect.scopes import FUNCTIONS, SCOPED, Scopes
from xla2tpu.detect.found import Found
from xla2tpu.detect.sites import SiteMap, update_entries
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.project.facts import Facts
from xla2tpu.project.module_summary import PREDICATE
from xla2tpu.sources.noqa import Suppressions
from xla2tpu.detect.only_reads import MODULE_HOOKS, READERS, STATE_CONTEXTS, TEST_HOOKS
from xla2tpu.project.scope import Scope

_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


class _CannotTell(Exception):
    """Only making the fixes tells what they leave."""


class Leftovers:
    """The reads, statements and findings the applied fixes take away."""

    def __init__(self, sites: SiteMap, scopes: Scopes, imports: Sequence[ImportSite], lines: Sequence[str],
                 tree: ast.Module | None = None) -> None:
        self.gone: dict[tuple[int, str], int] = {}  # (id(scope), name) -> its `Name` nodes the fixes take
        self.resolved: list[Found] = []  # sites left for a human whose code goes with an `if`
        self.unread: dict[int, FixClass] = {}  # id(site) -> how safe: its code went with an unread flag
        self._sites = sites
        self._scopes = scopes
        self._lines = lines  # the source's lines, for the comments a block keeps
        self._queries = {id(site.node) for site in sites.found}  # calls the pruner takes for reads
        self._tree = tree
        # The module's availability flags (probe_flags.py), which go when the fixes take their reads.
        self._flags = probe_flags.assignments(tree, self._queries) if tree is not None else []
        # The only reads that matter: of the imports, and of the flags.
        self._names = frozenset(site.bound for site in imports) | {flag.name for flag in self._flags}
        self._imported = frozenset(site.qualname for site in imports)
        self._seen: set[int] = set()  # Name nodes taken already (a site inside another's node)
        self._deleted: set[int] = set()  # statements that go
        self._updates: set[int] = set()  # `os.environ.update(...)` calls some variables leave
        # Owners of blocks the deletions touched, to prune deepest first: (-depth, id) in a heap.
        self._pending: list[tuple[int, int]] = []
        self._owners: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}  # id -> (owner, nodes down to it)
        self._applied = sites.applied_sites()
        # Nodes whose code the fixes change -> the expression their fix writes (None: any code).
        self._wild: dict[int, ast.expr | None] = {id(site.node): _becomes(site) for site in self._applied}
        self._imports_decided = False  # until then a deletion in a `try:` changes what it guards
        self._guards_changed: dict[int, ast.AST] = {}  # `try:` statements whose flags went before the imports were decided
        self._try_touched = False  # the import pass's removals changed a `try:` (what it guards)
        for site in self._applied:
            self._take(site)
        self._prune()
        self._same_branches({id(node): node for site in self._applied for node in site.parents
                             if isinstance(node, ast.If)}.values())

    # ------------------------------------------------------------------ the fixes
    def _take(self, site: Found) -> None:
        case = site.case
        assert site.scope is not None
        if site.structural and case.action == "transform":
            self._transform(site)
            return
        if site.structural:  # a statement template: the call's line goes, the arguments it names stay
            statement = site.parents[-2]
            self._wild[id(statement)] = None
            self._writes((case.template,))
            self._region(site.scope, statement, _kept(site))
            return
        if site.category == "string":
            return  # a string literal for another: no name is read there
        if case.action == "delete" and site.category in ("call", "subscript"):
            statement = site.parents[-2]
            if not isinstance(statement, ast.stmt):
                raise _CannotTell
            self._delete(statement, site.parents[:-2], site.scope)
        elif case.action == "delete" and site.category == "pair":
            self._variables_deleted(site.parents)
        elif case.action == "rename" and site.category == "reference":
            self._writes((case.template,))
            self._region(site.scope, site.node)
        elif case.action == "replace" and site.category in ("reference", "call", "expression"):
            self._writes((case.template,))
            self._region(site.scope, site.node, _kept(site) if site.category != "reference" else ())
        else:
            raise _CannotTell

    def _variables_deleted(self, parents: tuple[ast.AST, ...]) -> None:
        """rewriter._env_update: the variables whose writes go leave `os.environ.update(...)`
        (`parents[-1]`, told once for all of them), and the statement goes with the last."""
        call = parents[-1]
        if id(call) in self._updates:
            return
        self._updates.add(id(call))
        self._wild[id(call)] = None
        gone = [s for s in self._applied if s.category == "pair" and s.case.action == "delete" and s.parents[-1] is call]
        assert isinstance(call, ast.Call)
        entries, every = update_entries(call)
        statement = parents[-2]
        if isinstance(statement, ast.Expr) and len(gone) == len(entries) == every:
            self._delete(statement, parents[:-2], gone[0].scope)  # type: ignore[arg-type]
            return
        for site in gone:
            self._region(site.scope, site.node)  # type: ignore[arg-type]

    def _transform(self, site: Found) -> None:
        """What the transforms the ast decides (`Detector._transform_decision`) leave."""
        assert site.scope is not None
        if site.decided and site.case.template == "call-closure":  # `fn(a, b)`: the closure and arguments stay
            self._region(site.scope, site.node, [site.args[p] for p in ("closure", "args") if site.args and p in site.args])
        elif site.decided and site.case.template == "drop-printed-report":  # the printing statement goes
            self._delete(site.parents[-3], site.parents[:-3], site.scope)  # type: ignore[arg-type]
        elif site.decided and site.case.template == loader_site.PARALLEL:
            self._parallel_loader(site)
        elif site.decided and isinstance(site.made, collective_sites.Made):
            made = site.made
            self._writes(made.texts)
            kept = [*_kept(site, made.texts), *(site.args[p] for p in made.kept if site.args and p in site.args)]
            if made.statement:  # the call's line goes; an assignment's target is written again
                statement = site.parents[-2]
                kept += statement.targets if isinstance(statement, ast.Assign) else []
                self._wild[id(statement)] = None
                self._region(site.scope, statement, kept)
            else:
                self._region(site.scope, site.node, kept)
        elif site.decided and site.case.template == loader_site.TEMPLATE:
            self._device_loader(site)
        elif site.decided and site.case.template in call_shapes.TEXTS:
            self._call_shape(site)
        elif site.decided and site.case.template in env_access_site.TEMPLATES:
            # The call becomes an expression of `os` that reads the arguments it names.
            assert site.args is not None
            self._writes(env_access_site.TEMPLATES[site.case.template])
            self._region(site.scope, site.node, [site.args[p] for p in ("name", "type", "defval", "default") if p in site.args])
        elif site.decided and site.case.template == copied_helpers.TEMPLATE:
            # The callee becomes the copy written into the module; the arguments stay.
            assert isinstance(site.node, ast.Call) and isinstance(site.made, copied_helpers.Helper)
            self._written(copied_helpers.written(site.made))
            self._region(site.scope, site.node, [*site.node.args, *site.node.keywords])
        elif site.decided and site.case.template == profiler_site.TEMPLATE:
            texts = profiler_site.texts(site.name)
            self._writes(texts)
            if site.name == profiler_site.START:  # its line becomes the profiler's, keeping the log folder
                self._wild[id(site.parents[-2])] = None
                self._region(site.scope, site.parents[-2], _kept(site, texts))
            else:  # the call becomes the profiler's stop
                self._region(site.scope, site.node)
        elif site.decided and site.case.template == launch_site.TEMPLATE:
            # The launch's line becomes the launch statements, keeping `fn`, the arguments and
            # `nprocs`; the worker written above reads only the modules it spells.
            assert site.args is not None
            self._writes(launch_site.TEMPLATES)
            self._wild[id(site.parents[-2])] = None
            self._region(site.scope, site.parents[-2], launch_site.kept(site.args))
        else:
            raise _CannotTell

    def _device_loader(self, site: Found, device: ast.AST | None = None) -> None:
        """`x = pl.MpDeviceLoader(loader, device)` becomes `x = loader`, or goes when `x` is only
        an alias of `loader` (its reads then read `loader`); the device is written into loops."""
        assert site.scope is not None and site.args is not None and isinstance(site.node, ast.Call)
        loader, statement = site.args["loader"], site.parents[-2]
        device = site.args["device"] if device is None else device
        if any(isinstance(n, ast.Name) and n.id in self._names for n in ast.walk(device)):
            raise _CannotTell  # copied into the loops, in scopes of their own
        self._writes((loader_site.MOVE_ONE,))
        self._wild.update(dict.fromkeys((id(site.node), id(statement))))
        if not loader_site.alias_goes(site.node, loader, site.parents[:-1]):
            self._region(site.scope, site.node, [loader])
            return
        assert isinstance(statement, ast.Assign) and isinstance(loader, ast.Name)
        if {loader.id, statement.targets[0].id} & self._names:  # type: ignore[attr-defined]
            raise _CannotTell  # the alias's reads become the loader's
        self._delete(statement, site.parents[:-2], site.scope)

    def _parallel_loader(self, site: Found) -> None:
        """`pl.ParallelLoader(loader, [device])` becomes `loader` as a device loader does, and
        each `.per_device_loader(d)` on it becomes what it is called on (`d` goes)."""
        assert site.scope is not None and site.args is not None and isinstance(site.made, tuple)
        devices = site.args["devices"]
        assert isinstance(devices, (ast.Tuple, ast.List))
        self._device_loader(site, devices.elts[0])
        for outer, scope in site.made:
            assert isinstance(outer.func, ast.Attribute)
            self._wild[id(outer)] = None
            self._region(scope, outer, [outer.func.value])

    def _call_shape(self, site: Found) -> None:
        """What the transforms call_shapes decides leave."""
        assert site.scope is not None and site.args is not None and isinstance(site.node, ast.Call)
        template = site.case.template
        self._writes(call_shapes.TEXTS[template])
        if template == "with-unwrap":  # the item goes; its body stays as written
            self._wild[id(site.parents[-3])] = None
            self._region(site.scope, site.node)
        elif template == "optimum-from-pretrained":  # optimum-tpu's own arguments go with the callee
            self._region(site.scope, site.node, call_shapes.kept_arguments(site.node))
        else:  # a scan's line becomes its loop: the targets and the arguments it names stay
            statement = site.parents[-2]
            assert isinstance(statement, ast.Assign)
            self._wild[id(statement)] = None
            self._region(site.scope, statement, [*_kept(site, call_shapes.TEXTS[template]), *statement.targets])

    def _writes(self, templates: Iterable[str]) -> None:
        """The fix renders `templates`: the names they read as written, and the imports the
        speller may spell a qualified name with (emission.Speller: a binding of that name, or
        of a module on its path, as `synchronize` for `torch.tpu.synchronize`)."""
        for template in templates:
            self._written(template_text.read_names(template))
            for spelled in template_text.all_spelled_names(template):
                if any(spelled == target or spelled.startswith(target + ".") for target in self._imported):
                    raise _CannotTell

    def _written(self, names: frozenset[str]) -> None:
        if names & self._names:
            raise _CannotTell  # the fix may spell the import's name: it may still be read

    def _delete(self, statement: ast.stmt, chain: tuple[ast.AST, ...], scope: Scope, flag: bool = False) -> None:
        """`statement` goes (`chain`: the nodes from the module down to its block's owner;
        `flag`: an availability flag, which goes before the imports are decided)."""
        owner = chain[-1]
        if isinstance(owner, (*_TRY, ast.ExceptHandler)):
            if not self._imports_decided:
                if not flag:
                    raise _CannotTell  # what the `try:` guards changes
                # The import pass judges the guard on the code the flags left (`guard`).
                changed = owner if isinstance(owner, _TRY) else chain[-2]
                self._guards_changed[id(changed)] = changed
            self._try_touched = True
        self._deleted.add(id(statement))
        self._region(scope, statement)
        if id(owner) not in self._owners:
            self._owners[id(owner)] = (owner, chain)
            heapq.heappush(self._pending, (-len(chain), id(owner)))

    def _region(self, scope: Scope, node: ast.AST, kept: Sequence[ast.AST] = ()) -> None:
        """The reads in `node` go, but for those in the `kept` nodes (which stay as written)."""
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
                key = (id(scope), current.id)
                self.gone[key] = self.gone.get(key, 0) + 1
            stack.extend(ast.iter_child_nodes(current))

    # ------------------------------------------------------------------ what the pruner does
    def _prune(self) -> None:
        """The compound statements whose blocks the deletions emptied, innermost first."""
        while self._pending:
            _, key = heapq.heappop(self._pending)
            self._emptied(*self._owners[key])

    def _empty(self, block: Sequence[ast.stmt]) -> bool:
        """Whether the deletions empty `block` as the pruner sees it: every statement goes and
        no comment line above one of them stays (statements.prune)."""
        if not all(id(statement) in self._deleted for statement in block):
            return False
        # The block keeps `pass` under a comment that stays.
        return not any(self._keeps_comment(statement) for statement in block)

    def _keeps_comment(self, statement: ast.stmt) -> bool:
        """Whether a comment line above `statement` stays when it goes: the lines above a
        statement, up to the code before it, are LibCST's `leading_lines`
        of it, and the comment block right above it goes with it unless it points up
        (`# ^^ ...`); a comment set off by a blank line stays (statements._undescribed, for
        a statement with nothing kept below it in its block)."""
        first = first_line(statement)
        text = self._lines[first - 1]
        if statement.col_offset != len(text) - len(text.lstrip()):
            return False  # after a `;` or a block's colon: what is above is not its own
        if isinstance(statement, ast.If) and text.lstrip().startswith("elif"):
            return False  # an `elif` goes whole, with the lines above it
        top = first - 1
        while top and (not self._lines[top - 1].strip() or self._lines[top - 1].lstrip().startswith("#")):
            top -= 1
        region = [line.lstrip() for line in self._lines[top:first - 1]]
        start = len(region)
        while start and region[start - 1].startswith("#"):
            start -= 1
        if start < len(region) and region[start].lstrip("# ").startswith("^"):
            return True
        return any(line.startswith("#") for line in region[:start])

    def _emptied(self, owner: ast.AST, chain: tuple[ast.AST, ...]) -> None:
        scope = self._scope(chain)
        if isinstance(owner, ast.Module):
            if all(id(statement) in self._deleted for statement in owner.body):
                raise _CannotTell  # what a module left without code keeps of its comments
            return
        if isinstance(owner, ast.If):
            if not self._empty(owner.body) or (owner.orelse and not self._empty(owner.orelse)):
                return  # an emptied `else:` goes; `if A: <emptied> else: B` becomes `if not A: B`
            if not _inert(owner.test, self._queries):
                raise _CannotTell  # what the test does stays, as a statement
            self._resolve(owner.test)
            self._delete(owner, chain[:-1], scope)
        elif isinstance(owner, (ast.For, ast.AsyncFor)):
            if self._empty(owner.body) and not owner.orelse and _fixed_iterable(owner.iter):
                self._delete(owner, chain[:-1], scope)
        elif isinstance(owner, (ast.With, ast.AsyncWith)):
            if self._empty(owner.body) and all(_state_context(item.context_expr) for item in owner.items):
                self._delete(owner, chain[:-1], scope)
        elif isinstance(owner, FUNCTIONS) and self._empty(owner.body) and _unittest_hook(owner, chain[-2]):
            self._delete(owner, chain[:-1], scope)  # unittest's own does nothing (Scopes reads its parts in it)
        elif isinstance(owner, _TRY) and self._empty(owner.body):  # only once the imports are decided
            if owner.orelse or owner.finalbody:
                raise _CannotTell  # they stay, as plain statements
            if all(fallback_only(handler.body) for handler in owner.handlers):
                self._delete(owner, chain[:-1], scope)  # an emptied `try:` cannot raise
        # Anything else emptied keeps `pass`.

    def _scope(self, chain: tuple[ast.AST, ...]) -> Scope:
        """The scope the statements of `chain[-1]`'s blocks read in."""
        for node in reversed(chain):
            scope = self._scopes.of.get(id(node))
            if scope is not None:
                return scope
        return self._scopes.module

    def _resolve(self, test: ast.expr) -> None:
        """The findings left for a human in the test of an `if` that goes go with it."""
        self.resolved += self._findings_in(test)

    def _findings_in(self, test: ast.expr) -> list[Found]:
        """The sites left for a human in `test`, reported."""
        inside = {id(node) for node in ast.walk(test)}
        # Not a lint's: the LibCST pass resolves the sites it visits (pruner.py), and lints
        # are found on CPython's tree only.
        return [site for site in self._sites.found
                if id(site.node) in inside and site.category != "lint" and not self._sites.applied(site)
                and id(site) in self._sites.index]

    def _same_branches(self, owners: Iterable[ast.If]) -> None:
        """An `if` of `owners` whose two branches the fixes may make the same is replaced by
        one of them: only making the fixes tells."""
        for owner in owners:
            if owner.orelse and id(owner) not in self._deleted:
                body = [s for s in owner.body if id(s) not in self._deleted]
                orelse = [s for s in owner.orelse if id(s) not in self._deleted]
                if body and len(body) == len(orelse) and all(map(self._may_equal, body, orelse)):
                    raise _CannotTell

    def _may_equal(self, a: object, b: object) -> bool:
        if isinstance(a, ast.AST) and id(a) in self._wild and id(b) in self._wild:
            kinds, other = _kinds(self._wild[id(a)]), _kinds(self._wild[id(b)])
            return kinds is None or other is None or bool(kinds & other)
        if isinstance(a, ast.AST) and id(a) in self._wild:
            return self._may_write(self._wild[id(a)], b)
        if isinstance(b, ast.AST) and id(b) in self._wild:
            return self._may_write(self._wild[id(b)], a)
        if type(a) is not type(b):
            return False
        if isinstance(a, list):
            return len(a) == len(b) and all(map(self._may_equal, a, b))  # type: ignore[arg-type]
        if isinstance(a, ast.AST):
            return all(self._may_equal(getattr(a, f, None), getattr(b, f, None)) for f in a._fields)
        return a == b

    def _may_write(self, shape: ast.AST | None, node: object) -> bool:
        """Whether a fix writing `shape` (`_becomes`) may write code that reads as `node`
        (where the fixes leave `node` as it is). What the speller or the site's arguments
        decide (a name, a dotted name, a placeholder, a string holding one) may be anything."""
        if shape is None or isinstance(shape, (ast.Name, ast.Attribute)) or id(node) in self._wild:
            return True
        if isinstance(shape, ast.Constant) and isinstance(shape.value, str) and template_text.holds_slot(shape.value):
            return True
        if type(shape) is not type(node):
            return False
        for field in shape._fields:
            mine, theirs = getattr(shape, field, None), getattr(node, field, None)
            if isinstance(mine, list):
                if not (isinstance(theirs, list) and len(mine) == len(theirs) and all(map(self._may_write, mine, theirs))):
                    return False
            elif isinstance(mine, ast.AST):
                if not self._may_write(mine, theirs):
                    return False
            elif mine != theirs:  # an absent node, a constant's value, a name's text
                return False
        return True

    # ------------------------------------------------------------------ what is read after
    def read(self, site: ImportSite) -> bool:
        """Whether the name the import binds is read after the fixes (UseResolver.reached)."""
        name, scopes = site.bound, self._scopes
        binding = site.scope.owner(name)
        for reader in scopes.all:
            if name in reader.reads and reader.owner(name) is binding:
                key = (id(reader), name)
                if key in scopes.other_reads or scopes.name_reads.get(key, 0) > self.gone.get(key, 0):
                    return True
        return False

    def flags_removed(self, imported: Container[str], unsafe: bool, package_init: bool) -> None:
        """rewrite/dead_flags.drop_dead_flags on CPython's tree: the availability flags no node
        names once the fixes took theirs go, with what that empties; before the imports are
        decided (a flag in a `try:` changes what it guards: only making it tells)."""
        found: dict[str, list[probe_flags.Assignment]] = {}
        others: set[str] = set()
        for flag in self._flags:
            if flag.probe and _inert(flag.node.value, self._queries):
                found.setdefault(flag.name, []).append(flag)
            else:
                others.add(flag.name)
        if not found:
            return
        assert self._tree is not None
        left = probe_flags.mentions(self._tree, found)  # as written, less what the fixes took
        for (_, name), count in self.gone.items():
            if name in left:
                left[name] -= count
        values = {name: [probe_flags.mentions(flag.node.value, found, self._seen) for flag in assigns]
                  for name, assigns in found.items()}
        dead = probe_flags.dead({name: len(assigns) for name, assigns in found.items()}, left, values, others, imported,
                                unsafe, package_init)
        touched: list[ast.AST] = []
        for name, fix in dead.items():
            for flag in found[name]:
                self.unread.update(dict.fromkeys((id(site) for site in self._findings_in(flag.node)), fix))
                self._delete(flag.node, flag.chain, self._scopes.module, flag=True)
                touched.append(flag.chain[-1])
        for node in self._guards_changed.values():
            if all(id(s) in self._deleted for s in node.body):  # type: ignore[attr-defined]
                raise _CannotTell  # a `try:` the flags empty: what the pruner makes of it is told by making it
        self._prune()
        for owner in touched:  # an import the pass removes from its blocks asks about it again
            if not isinstance(owner, ast.Module):
                self._owners.pop(id(owner), None)

    def guard(self, site: ImportSite) -> Guard:
        """The guard the import is under on the code the flags left (import_pass: each
        `try:` judged by `guard_decides` on what is left of it), as written where no flag of
        a `try:` around it went."""
        chain = site.chain
        if not any(id(node) in self._guards_changed for node in chain):
            return site.guarded
        guards: list[Guard] = []
        for index, node in enumerate(chain):
            inner = chain[index + 1] if index + 1 < len(chain) else site.statement
            if isinstance(node, FUNCTIONS):
                guards.append(None)
            elif isinstance(node, _TRY):
                in_body = any(statement is inner for statement in node.body)  # type: ignore[attr-defined]
                guards.append(decides_import_guard(node, self._deleted) if in_body else False)  # type: ignore[arg-type]
        return innermost_guard(guards)

    def imports_removed(self, removed: Iterable[Sequence[ImportSite]]) -> bool:
        """The import pass removes these aliases (per statement); a statement left without
        any goes, and the pruner takes what that empties. True when an `if` that goes has
        findings for a human in its test: the pass then runs again on what it left
        (libcst_pass._import_hygiene; not told here when the removals changed a `try:`,
        whose guard the second pass judges anew). An `if` with such findings whose two
        branches become one: only making it tells. (Another changes no finding.)"""
        self._imports_decided = True
        before = len(self.resolved)
        branching: dict[int, ast.If] = {}
        for aliases in removed:
            site = aliases[0]
            if len(aliases) < len(site.statement.names):
                continue
            self._deleted.add(id(site.statement))
            owner = site.chain[-1]
            self._try_touched |= isinstance(owner, (*_TRY, ast.ExceptHandler))
            branching.update((id(node), node) for node in site.chain if isinstance(node, ast.If))
            if id(owner) not in self._owners:
                self._owners[id(owner)] = (owner, site.chain)
                heapq.heappush(self._pending, (-len(site.chain), id(owner)))
        self._prune()
        self._same_branches(owner for owner in branching.values() if self._findings_in(owner.test))
        if len(self.resolved) > before and self._try_touched:
            raise _CannotTell
        return len(self.resolved) > before


def _becomes(site: Found) -> ast.expr | None:
    """The expression an applied fix writes in place of the site's node, its placeholders
    and dotted names standing for whatever the site and the speller put there (`_may_write`);
    None: any code (a statement, or a template whose optional placeholders may drop out)."""
    case = site.case
    if site.structural or case.action not in ("replace", "rename") or template_text.is_statement(case.template):
        return None
    if any(slot.optional for slot in template_text.placeholders(case.template)):
        return None
    return template_text.shape(case.template)


def _kinds(shape: ast.expr | None) -> frozenset[type] | None:
    """The node types code written from `shape` may be (None: any): code whose root differs
    in type from another's cannot print the same."""
    return None if shape is None or isinstance(shape, (ast.Name, ast.Attribute)) else frozenset({type(shape)})


def _kept(site: Found, templates: Sequence[str] | None = None) -> list[ast.AST]:
    """The nodes a call's or an expression's template (or `templates`) puts back as written."""
    if site.args is None:
        raise _CannotTell
    kept: list[ast.AST] = []
    for template in (site.case.template,) if templates is None else templates:
        for slot in template_text.placeholders(template):
            if slot.star:
                kept.extend(site.star_args.get(slot.param, ()))
            elif slot.param in site.args:
                kept.append(site.args[slot.param])
    return kept


def _inert(test: ast.AST, queries: Collection[int] = ()) -> bool:
    """pruner.inert on CPython's tree: evaluating `test` can do nothing but read."""
    if isinstance(test, (ast.Name, ast.Constant)):
        # `...` is no read for LibCST, `None` is a name
        return not isinstance(test, ast.Constant) or test.value is not Ellipsis
    if isinstance(test, ast.Attribute):
        value = test.value
        if isinstance(value, ast.Call):  # `State().distributed_type`: an accessor, read for its attribute
            return _inert(value.func, queries) and _inert_arguments(value, queries)
        return dotted_name(test) is not None or _inert(value, queries)
    if isinstance(test, ast.UnaryOp):
        return _inert(test.operand, queries)
    if isinstance(test, ast.BoolOp):
        return all(_inert(value, queries) for value in test.values)
    if isinstance(test, ast.BinOp):
        return _inert(test.left, queries) and _inert(test.right, queries)
    if isinstance(test, ast.Compare):
        return _inert(test.left, queries) and all(_inert(c, queries) for c in test.comparators)
    if isinstance(test, ast.Subscript):
        return _inert(test.value, queries) and _inert(test.slice, queries)
    if isinstance(test, (ast.Tuple, ast.List)):
        return all(_inert(e, queries) for e in test.elts)
    if isinstance(test, ast.Call):
        name = dotted_name(test.func) or ""
        reads = id(test) in queries or name in READERS or PREDICATE.fullmatch(name.rsplit(".", 1)[-1]) is not None
        return reads and _inert_arguments(test, queries)
    return False


def _inert_arguments(call: ast.Call, queries: Collection[int] = ()) -> bool:
    return (all(not isinstance(a, ast.Starred) and _inert(a, queries) for a in call.args)
            and all(k.arg is not None and _inert(k.value, queries) for k in call.keywords))


def _unittest_hook(function: ast.FunctionDef | ast.AsyncFunctionDef, parent: ast.AST) -> bool:
    """pruner._without_hooks: a unittest hook of a class, or of the module, undecorated but
    for `classmethod`/`staticmethod`."""
    hooks = TEST_HOOKS if isinstance(parent, ast.ClassDef) else MODULE_HOOKS if isinstance(parent, ast.Module) else ()
    return function.name in hooks and all(dotted_name(d) in ("classmethod", "staticmethod") for d in function.decorator_list)


def _fixed_iterable(iterable: ast.expr) -> bool:
    """pruner._fixed_iterable on CPython's tree."""
    if isinstance(iterable, ast.Call):
        return dotted_name(iterable.func) == "range" and _inert_arguments(iterable)
    return isinstance(iterable, (ast.Tuple, ast.List)) and _inert(iterable)


def _state_context(item: ast.expr) -> bool:
    """pruner._state_context on CPython's tree."""
    if not isinstance(item, ast.Call):
        return False
    name = dotted_name(item.func) or ""
    return name.rsplit(".", 1)[-1] in STATE_CONTEXTS and all(_inert(a) for a in item.args)


def findings_after_fixes(sites: SiteMap, imports: Sequence[ImportSite], scopes: Scopes, positions: Positions,
                         suppressions: Suppressions, apply: frozenset[FixClass], target: str, source: str,
                         facts: Facts, package_init: bool = False, imported: Container[str] = frozenset(),
                         tree: ast.Module | None = None) -> list[Diagnostic] | None:
    """The findings of the sites and of the import sites once the applied fixes are made;
    None when only making them tells (see the module's doc). `imported`: the names other
    modules of the project import from this one (Context.imported_flags); `tree`: the
    module, whose availability flags go when the fixes take their reads (probe_flags.py)."""
    try:
        left = Leftovers(sites, scopes, imports, positions.line_texts, tree)
        left.flags_removed(imported, FixClass.UNSAFE in apply, package_init)
        found: dict[int, Diagnostic] = {}  # id(import site) -> its finding
        decided: dict[int, Case | None] = {}  # id(import site) -> its case in the first pass

        def case_of(site: ImportSite) -> Case | None:  # as the import pass decides on what is left
            return decide(site, not left.read(site), left.guard(site), site.top_level, target, source, facts, package_init,
                          imported)

        def judge(site: ImportSite, case: Case, removed: dict[int, list[ImportSite]]) -> None:
            where = positions.where(site.alias)
            if suppressions.suppressed(where.start.line, site.rule.code):
                return
            fix = case.fix if case.fixable else FixClass.MANUAL
            applied = fix is not FixClass.MANUAL and fix in apply
            message = message_of(case, facts, shown(site))
            found[id(site)] = Diagnostic(where.start.line, where.start.column + 1, site.rule.code, message, fix, applied,
                                         where.end.line, where.end.column + 1)
            if applied and case.action == "remove-import":
                removed.setdefault(id(site.statement), []).append(site)

        removed: dict[int, list[ImportSite]] = {}  # id(import statement) -> its aliases that go
        for site in imports:
            case = decided[id(site)] = case_of(site)
            if case is not None:
                judge(site, case, removed)
        if left.imports_removed(removed.values()):
            # The second pass judges what the first left: the same, unless a name the test of
            # an `if` that went read was the last read of an import (`if is_torch_xla_available():`).
            # Its findings replace the first's; what it removes goes too, and no third pass runs.
            gone = {id(site) for aliases in removed.values() for site in aliases}
            again: dict[int, list[ImportSite]] = {}
            for site in imports:
                case = case_of(site) if id(site) not in gone else None
                if case is not None and case is not decided[id(site)]:
                    judge(site, case, again)
            left.imports_removed(again.values())
        return [*sites.diagnostics({id(site) for site in left.resolved}, left.unread), *found.values()]
    except _CannotTell:
        return None
