"""Every rule site of a module, found and decided on CPython's tree.

Sites: calls (`xm.mark_step()`), references (`torch_xla._XLAC.x`), string arguments
(`.to("xla")`), environment variable reads and writes (`os.environ["PJRT_DEVICE"]`) and
expression patterns (`device.type == "xla"`). For each, the case that decides it and
whether its fix can be made here: the template's arguments are there and the names it
writes reach their modules (emission.py); for a statement template's, that the call is a
line of its own. A transform's fix is decided here too (`_transform_decision`, with the
conditions in the LibCST-free detect/*_site.py modules), else by building it (rewriter.py:
where the answer depends on what LibCST's reduced parse holds, `loader_site.Undecided`).
Statement templates and transforms write statements: such a site is `Found.structural`.
The fates of the fixes (applied, refused, kept back by a call around them) are the
`SiteMap`'s.
"""

from __future__ import annotations

import ast
import bisect
import collections
import copy
import functools
from collections.abc import Callable, Collection, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from xla2tpu.catalogue import template_text
from xla2tpu.detect.arguments import bind
from xla2tpu.catalogue.rules import Case, Rule
from xla2tpu.detect.conditions import Site, applies, choose, holds, message_of, withheld
from xla2tpu.trees.blocks import Group, blocks, first_line, lazy_imports
from xla2tpu.detect import (ast_earlier, ast_patterns, call_shapes, collective_sites, env_access_site, held_strings,
                            launch_site, loader_site, profiler_site, copied_helpers, spmd_program)
from xla2tpu.trees.names import dotted_name
from xla2tpu.trees.order import children
from xla2tpu.detect.scopes import DEFINITIONS, FUNCTIONS, Scopes, resolve
from xla2tpu.detect.device_gated import skipped_on_tpu
from xla2tpu.detect.vendor_branches import other_vendor_branch, skipped_lines
from xla2tpu.detect.positions import Positions
from xla2tpu.detect.lints import LINTS
from xla2tpu.detect.values import call_arguments, literal_text
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.detect.emission import Speller
from xla2tpu.detect.found import Decision, Found
from xla2tpu.project.facts import UNKNOWN, Facts
from xla2tpu.catalogue.index import RuleIndex
from xla2tpu.sources.noqa import Suppressions
from xla2tpu.sources.prefilter import holds_token
from xla2tpu.detect.printers import prints
from xla2tpu.project.scope import OTHER, Scope
from xla2tpu.detect.tensors import known_tensor_ast, tensor_names

# Environment APIs whose first argument names a variable: qualified callee -> is a write.
ENV_CALLS = {
    "os.environ.setdefault": True,
    "os.putenv": True,
    "os.environ.pop": True,
    "os.unsetenv": True,
    "os.environ.get": False,
    "os.getenv": False,
}
# torch_xla's own environment readers: the read is reported, and their call rules still run.
ENV_READERS = ("torch_xla.utils.utils.getenv_as", "torch_xla.utils.utils.check_env_flag")
ENV_UPDATE = "os.environ.update"
# What an expression site's root is, named alike for either tree's node (SiteMap.may_be).
EXPRESSION_KINDS = {
    "Compare": "compare", "Comparison": "compare", "Call": "call", "Attribute": "attribute", "Name": "name",
    "Subscript": "subscript", "BoolOp": "boolean", "BooleanOperation": "boolean", "UnaryOp": "unary",
    "UnaryOperation": "unary", "BinOp": "binary", "BinaryOperation": "binary", "Constant": "literal",
    "SimpleString": "literal", "ConcatenatedString": "literal", "Integer": "literal", "Float": "literal",
}
# Keys and keywords that hold another process's environment (Ray's runtime_env, subprocess).
OTHER_PROCESS_ENV = frozenset({"env_vars", "env"})


def short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@functools.cache
def uses(rule: Rule, kind: str) -> bool:
    """Whether a case of `rule` has a condition of `kind` (negated or not): a condition that
    costs something is worked out only for the rules that ask."""
    return any(condition.kind in (kind, "not-" + kind) for case in rule.cases for condition in case.when)


class Detector:
    """Walks a module once, in source order, and lists its sites (`found`)."""

    def __init__(self, tree: ast.Module, source: str, index: RuleIndex, scopes: Scopes, positions: Positions,
                 target: str, apply: frozenset[FixClass], facts: Facts = UNKNOWN,
                 env_reads: frozenset[str] = frozenset(), parsed: Container[int] = (), entry_groups: bool = False) -> None:
        self.tree = tree
        self.entry_groups = entry_groups  # the project's entry-point programs make their own group (Context)
        # The module as LibCST's pass parses it (`parsed`: ids of its top-level statements, reduction.Parsed).
        self._module = loader_site.Module(tree, parsed)
        self.source = source
        self.index = index
        self.scopes = scopes
        self.positions = positions
        self.target = target
        self.apply = apply  # the fix classes this run applies
        self.facts = facts
        self.env_reads = env_reads
        self.found: list[Found] = []
        self._parents: list[ast.AST] = []
        self._scopes: list[Scope] = [scopes.module]
        self._skip: set[int] = set()  # Name/Attribute nodes that are not references
        self._store: set[int] = set()  # references being assigned to or deleted
        self._owned: set[int] = set()  # callees that a call rule handles
        self._claimed: set[int] = set()  # nodes an expression pattern covers
        self._expressions: dict[int, tuple[object, Rule]] = {}
        self._patterns = _ast_expressions(index)
        self._pattern_roots = {key[0] for key in self._patterns}
        self._inner_start: dict[int, int] = {}  # call-rule calls -> the first finding in their arguments
        self._at: dict[int, Found] = {}  # node -> its site
        self._reads_definition: Callable[[ast.AST], bool] | None = None
        self._holds: Callable[[str], bool] | None = None
        self._spellings: collections.Counter[str] | None = None  # see _spelled
        self._parent_only: frozenset[int] | None = None  # see _in_launch_parent
        self._spmd: list[spmd_program.Program | None] = []  # see _spmd_program (computed once)

    # ------------------------------------------------------------------ walking
    def run(self, statements: Sequence[tuple[str, Group]], holds: Callable[[str], bool] | None = None,
            read: Callable[[ast.AST], bool] | None = None) -> list[Found]:
        """The sites in `statements` (the module's top-level ones, each with its source lines);
        `holds(text)` tells one that may hold a site by its source (plan.Plan.matches: a
        token, an alias of a torch_xla import...), `read(definition)` a method or nested
        function: the others are not walked (nor were they by Scopes)."""
        self._reads_definition = read
        self._holds = holds
        self._lints(statements)
        self._parents.append(self.tree)
        for text, group in statements:
            if holds is None or holds(text):
                for statement in group.nodes:
                    self._visit(statement)
        self._parents.pop()
        return self.found

    def _lints(self, statements: Sequence[tuple[str, Group]]) -> None:
        """The lint rules' findings: each lint reads one top-level statement at a time."""
        rules = [rule for rule in self.index.lints if lint_reads(rule, self.target, self.source)]
        if not rules:
            return
        skipped = skipped_lines(self.tree) if "neuron" in self.source else []
        for rule in rules:
            analyse = LINTS[rule.match[0]]
            for text, group in statements:
                if not lint_reads(rule, self.target, text):
                    continue
                for statement in group.nodes:
                    for hit in analyse(statement):
                        line = hit.node.lineno  # type: ignore[attr-defined]
                        if not any(first <= line <= last for first, last in skipped):
                            self._add("lint", rule, choose(rule.cases, self._site(value=hit.what)), hit.node, False)

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            return
        if isinstance(node, ast.stmt) and self._parents[-1] is not self.tree:
            if isinstance(node, DEFINITIONS):
                if self._reads_definition is not None and not self._reads_definition(node):
                    return
            elif self._holds is not None and not self._holds(self.positions.lines(node.lineno, node.end_lineno)):  # type: ignore[arg-type]
                return  # as a top-level statement: nothing in it can be a site
        self._parents.append(node)
        scope = self.scopes.of.get(id(node))
        if scope is not None:
            self._scopes.append(scope)
        self._enter(node)
        skipped = {id(statement) for statement in node.body} if other_vendor_branch(node) else ()  # type: ignore[attr-defined]
        for child in children(node):
            if id(child) not in skipped:
                self._visit(child)
        self._leave(node)
        if scope is not None:
            self._scopes.pop()
        self._parents.pop()

    def _enter(self, node: ast.AST) -> None:
        if self._pattern_roots and id(node) not in self._claimed and type(node).__name__ in self._pattern_roots:
            self._claim_expression(node)
        if isinstance(node, ast.Attribute):
            self._skip.add(id(node.value))
        elif isinstance(node, (ast.Assign, ast.Delete)):
            self._store.update(id(target) for target in node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            self._store.add(id(node.target))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._skip.add(id(node.optional_vars))  # `as name`: a binding, not a use
        elif isinstance(node, FUNCTIONS) and self.index.string_args:
            self._parameter_defaults(node)
        elif isinstance(node, ast.Call):
            qualname = resolve(self.scope, node.func)
            if qualname is not None and self.index.calls.find(qualname) is not None:
                self._owned.add(id(node.func))
                self._inner_start[id(node)] = len(self.found)

    def _leave(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            self._reference(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Subscript):
            self._env_subscript(node)
        elif isinstance(node, ast.Dict):
            self._other_process_env(node)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and self.index.string_args
              and isinstance(self._parents[-2], (ast.Assign, ast.IfExp)) and id(node) not in self._at):
            self._held_string(node)
        if id(node) in self._expressions:
            self._expression(node)

    # What only some sites ask about, worked out when one does (each walks the whole tree).
    @functools.cached_property
    def lazy(self) -> frozenset[str]:
        """Modules the file imports inside functions only (ast_blocks.lazy_imports)."""
        return lazy_imports(self.tree)

    @functools.cached_property
    def tensor_names(self) -> frozenset[str]:
        """Names the file binds only to tensors (tensors.py)."""
        return tensor_names(self.tree)

    @property
    def scope(self) -> Scope:
        return self._scopes[-1]

    def _parent(self, depth: int = 2) -> ast.AST | None:
        return self._parents[-depth] if len(self._parents) >= depth else None

    def _code(self, node: ast.AST) -> str:
        return self.positions.code(node)

    def _speller(self) -> Speller:
        return Speller(self.scope, list(self._parents), self.scopes.of, self.scopes.canonical, self.lazy)

    def _spell_note(self, names: Sequence[str]) -> str:
        """Why the fix is withheld when the names it writes do not reach their modules here."""
        if not names:
            return ""
        speller = self._speller()
        for name in names:
            speller(name)
        return speller.note

    # ------------------------------------------------------------------ sites
    def _site(self, **fields: object) -> Site:
        return Site(
            target=self.target,
            source=self.source,
            top_level=len(self._scopes) == 1,
            class_bases=self._class_bases(),
            facts=self.facts,
            **fields,  # type: ignore[arg-type]
        )

    def _choose(self, rule: Rule, site: Site) -> Case | None:
        return choose(rule.cases, site) if applies(rule, site) else None

    def _add(self, category: str, rule: Rule, case: Case, node: ast.AST, fixable: bool, note: str = "",
             name: str = "", structural: bool = False, form: str = "", key: str = "") -> Found:
        if fixable:
            expecting = self._expected_error()
            gated = "" if expecting else self._skipped_on_tpu()
            if expecting:
                fixable, note = False, (f"not rewritten: inside `with {expecting}`, the test expects the error of "
                                        "the torch_xla code as written; rewrite the test by hand")
            elif gated:
                fixable, note = False, (f"not rewritten: `{gated}` skips this test wherever torch_xla's device is a "
                                        "TPU, so it never ran on one; port it by hand (to the CPU, or not at all)")
        source = short(self._code(node)) if "{source}" in case.message else ""
        found = Found(rule, case, node, fixable, structural, name, note, source, category=category, form=form, key=key,
                      scope=self.scope, parents=tuple(self._parents))
        self.found.append(found)
        self._at[id(node)] = found
        return found

    def _expected_error(self) -> str:
        """`self.assertRaises(...)` (or `pytest.raises(...)`, `assertRaisesRegex`) when the
        site is in the body of a `with` of one: the code there is expected to fail as
        written, and a migrated call fails otherwise, or not at all (a seed-75 review: an
        xla process group an SPMD test expected to be refused became a "tpu" one)."""
        parents = self._parents
        for index, parent in enumerate(parents[:-1]):
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(child is parents[index + 1] for child in parent.body):
                for item in parent.items:
                    call = item.context_expr
                    if isinstance(call, ast.Call) and (dotted_name(call.func) or "").rsplit(".", 1)[-1] in _EXPECTING:
                        return f"{dotted_name(call.func)}(...)"
        return ""

    def _skipped_on_tpu(self) -> str:
        """The skip decorator of a test (or its class) holding the site that skips it on a
        TPU (device_gated.py), or ""."""
        for parent in self._parents:
            if isinstance(parent, (*FUNCTIONS, ast.ClassDef)) and parent.decorator_list:
                gated = skipped_on_tpu(parent, lambda n: resolve(self.scope, n))
                if gated:
                    return gated
        return ""

    def _text(self, node: ast.AST) -> str | None:
        """The string `node` is, as written or as the fix of a reference in it writes it
        (`xenv.PJRT_DEVICE` -> `"PJRT_DEVICE"`): the sites around it see the fixed code."""
        found = self._at.get(id(node))
        if found is not None and found.case.action == "replace" and found.case.template == "{name}":
            fix = found.fix
            if fix is not FixClass.MANUAL and fix in self.apply:
                return found.name.rsplit(".", 1)[-1]
        return literal_text(node, self.positions.line_texts)

    def _class_bases(self) -> frozenset[str]:
        """The last names of the bases of the class whose method holds the site."""
        parents = self._parents
        for i in range(len(parents) - 1, 0, -1):
            if isinstance(parents[i], FUNCTIONS):
                holder = parents[i - 1]
                if isinstance(holder, ast.ClassDef):
                    return frozenset((dotted_name(base) or "").rsplit(".", 1)[-1] for base in holder.bases)
                break
        return frozenset()

    def _statement(self) -> bool:
        return isinstance(self._parent(), ast.Expr)

    def _discarded(self, node: ast.Call) -> bool:
        """Whether the value of the call being left goes unused: the call is a statement, or
        a line `x = <call>` whose `x` is `_` or a name the file spells nowhere else."""
        parent = self._parent()
        if isinstance(parent, ast.Expr):
            return True
        if not (isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name) and self._whole_line(kind=ast.Assign)):
            return False
        name = parent.targets[0].id
        return name == "_" or self._spelled()[name] == 1

    def _spelled(self) -> collections.Counter[str]:
        """How often each identifier is spelled in the file's code (the whole tree: the
        detector reads only some statements), counted once per file when first asked."""
        if self._spellings is None:
            self._spellings = collections.Counter(_identifiers(self.tree))
        return self._spellings

    # ------------------------------------------------------------------ references
    def _reference(self, node: ast.Name | ast.Attribute) -> None:
        key = id(node)
        if key in self._skip or key in self._owned or key in self._claimed:
            return
        qualname = resolve(self.scope, node)
        if qualname is None:
            return
        rule = self.index.references.find(qualname)
        if rule is None:
            return
        # Rebinding a name (`xm = None`) is not a use of the API; assigning to an attribute
        # (`pl.PerDeviceLoader.__len__ = f`) is one for the rules that say so (`assignments`).
        store = key in self._store
        if store and (isinstance(node, ast.Name) or not rule.assignments):
            return
        case = self._choose(rule, self._site(name=qualname, store=store))
        if case is None:
            return
        note = ""
        if case.fixable and case.action == "replace":
            note = self._spell_note(template_text.spelled_names(case.template))
        elif case.fixable and case.action == "rename":
            note = self._spell_note([case.template + tail(rule, qualname)])
        self._add("reference", rule, case, node, case.fixable, note, qualname, key=dotted_name(node) or "")

    # ------------------------------------------------------------------ calls
    def _call(self, node: ast.Call) -> None:
        if id(node) in self._claimed:
            return
        self._string_args(node)
        qualname = resolve(self.scope, node.func)
        other = None
        if qualname is None:
            qualname, other = self._one_meaning(node.func)
            if qualname is None:
                return
        if qualname in ENV_CALLS:
            self._env_call(qualname, node)
            return
        if qualname == ENV_UPDATE:
            self._env_update(node)
            return
        if qualname in ENV_READERS:
            self._env_call(qualname, node)
        rule = self.index.calls.find(qualname)
        if rule is None:
            return
        site = self._call_site(rule, qualname, node)
        case = self._choose(rule, site)
        start = self._inner_start.pop(id(node), len(self.found))
        if case is None:
            return
        transform = case.action == "transform"
        structural = transform or (case.action == "replace" and template_text.is_statement(case.template))
        decided, made = False, None
        note = ""
        if transform:
            fixable = case.fixable and site.args is not None
            decision = self._transform_decision(case, node, site.args, qualname) if fixable else None
            fallback = _fallback(rule, case, site)
            if decision is not None and not decision[0] and fallback is not None:
                # The site refuses the case's transform: the rule's fallback for it is tried,
                # and taken where it can be made (else the finding says what was refused).
                tried = self._transform_decision(fallback, node, site.args, qualname)  # type: ignore[arg-type]
                if tried is None or tried[0]:
                    case, decision = fallback, tried
            if decision is not None:
                (fixable, texts, made), decided = decision, True
                if fixable:  # the rewriter refuses it when a name it spells does not reach its module
                    note = self._spell_note([name for text in texts for name in template_text.spelled_names(text)])
        else:  # a statement template replaces the call's line, when the call is all of it
            fixable = case.fixable and _can_fix(case, site) and (not structural or self._whole_line())
        if fixable and case.action == "replace":
            note = self._spell_note(template_text.spelled_names(case.template))
        elif case.fixable and not fixable:
            note = withheld(rule.code)
        if other is not None:  # a rule's call on one path only: reported, never rewritten
            fixable, note = False, other
        found = self._add("call", rule, case, node, fixable, note, qualname, structural, key=dotted_name(node.func) or "")
        found.decided, found.made = decided, made
        found.inner = (start, len(self.found) - 1)
        found.args, found.star_args = site.args, site.star_args
        # A transform that may be made is decided when it is built (rewriter.py); one the
        # rewriter refuses keeps its arguments.
        found.keeps_arguments = bool(note) or not (transform and fixable) and (not fixable or case.fix is FixClass.MANUAL)

    def _one_meaning(self, func: ast.AST) -> tuple[str | None, str | None]:
        """For a callee whose root name the scope binds more than once, one of them an import
        of a legacy module (`import torch.multiprocessing as xmp` on the CUDA path,
        `import torch_xla.distributed.xla_multiprocessing as xmp` on the TPU path): the call's
        torch_xla meaning, and the note that says why it is not rewritten. (None, None) for
        any other callee."""
        name = dotted_name(func)
        if name is None:
            return None, None
        root, dot, rest = name.partition(".")
        owner = self.scope.owner(root)
        meanings = owner.bindings.get(root, set()) if owner is not None else set()
        legacy = sorted(m for m in meanings if m != OTHER and holds_token(m))
        if len(meanings) < 2 or len(legacy) != 1:
            return None, None
        others = sorted(f"`{m}`" for m in meanings if m not in legacy and m != OTHER) or ["something else"]
        note = (f"not rewritten: `{root}` is `{legacy[0]}` on one path and {', '.join(others)} on another; give the "
                f"TPU path's import a name of its own, then run the fix again")
        return legacy[0] + dot + rest, note

    def _transform_decision(self, case: Case, node: ast.Call, args: Mapping[str, ast.AST], qualname: str) -> Decision | None:
        """Whether the transform's fix can be made at the call being left, the templates whose
        names it spells there and what after_fixes needs of it (`Found.made`), for the
        transforms whose answer the code around the call gives (rewriter.py builds them
        alike); None: only building it tells. `qualname`: the callee's."""
        template = case.template
        if template == "call-closure":
            return True, (), None  # its case holds when the closure is there: it is called in place
        if template in collective_sites.TEMPLATES:
            call = collective_sites.Call(node, args, lambda n: resolve(self.scope, n), self._whole_line(),
                                         self._assigned_line(node))
            made = collective_sites.made(template, call)
            return (False, (), None) if made is None else (True, made.texts, made)
        if template == loader_site.TEMPLATE:
            loader = loader_site.makeable(self._module, node, args, tuple(self._parents))
            return None if loader is None else (*loader, None)
        if template == loader_site.PARALLEL:
            parallel = loader_site.parallel_makeable(self._module, node, args, tuple(self._parents))
            if parallel is None:
                return None
            # Each per-device call with the scope it reads in (its nearest scope the walk knows).
            calls = tuple((outer, next((self.scopes.of[id(p)] for p in reversed(ancestors) if id(p) in self.scopes.of),
                                       self.scopes.module)) for outer, ancestors in parallel[2])
            return parallel[0], parallel[1], calls
        if template in call_shapes.TEXTS:
            statement = self._parent(3) if template == "with-unwrap" else self._parent(2)
            made = call_shapes.makeable(template, node, args, self._parent(2), statement, self._assigned_line(node))
            return made, call_shapes.TEXTS[template], None
        if template in env_access_site.TEMPLATES:
            makeable = env_access_site.makeable(template, args, self.positions.line_texts)
            return makeable, env_access_site.TEMPLATES[template], None
        if template == copied_helpers.TEMPLATE:  # its copies spell `time` as it is, at module level
            helper = copied_helpers.helper(qualname)
            return (helper is not None and copied_helpers.copyable(self.scopes.module, helper)
                    and copied_helpers.fits(helper, args)
                    and not copied_helpers.class_named_otherwise(helper, self.tree)), (), helper
        if template in spmd_program.TRANSFORMS:  # all or none: the program's decision is the site's
            program = self._spmd_program()
            return program is not None, spmd_program.TEMPLATES, program
        if template == launch_site.TEMPLATE:
            function = next((p.name for p in reversed(self._parents) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))),
                            None)
            launchable = launch_site.launchable(args, self._whole_line(), self.tree, self.positions.line_texts,
                                                lambda node: resolve(self.scopes.module, node), function,
                                                self.entry_groups)
            return launchable, launch_site.TEMPLATES, None
        if template == profiler_site.TEMPLATE:
            qualname = resolve(self.scope, node.func) or ""
            pairable = profiler_site.pairable(qualname, self._parents, lambda n: resolve(self.scope, n), self._alone)
            return pairable, profiler_site.texts(qualname), None
        if template == "drop-printed-report":
            # The report is the one positional argument of a printing call that is a line of
            # its own (transforms/helpers.drop_printed_report).
            printer = self._parent(2)
            return (
                isinstance(printer, ast.Call)
                and prints(printer.func.id if isinstance(printer.func, ast.Name) else None,
                           printer.func.attr if isinstance(printer.func, ast.Attribute) else None)
                and printer.args == [node]
                and all(keyword.arg is not None for keyword in printer.keywords)
                and self._whole_line(depth=3)
            ), (), None
        return None

    def _whole_line(self, depth: int = 2, kind: type[ast.stmt] = ast.Expr) -> bool:
        """Whether the node `depth` - 1 levels above the one being left (the call itself
        by default) is a statement (of `kind`) alone on its lines (for LibCST, a line of one
        small statement): what a statement template replaces."""
        statement, owner = self._parent(depth), self._parent(depth + 1)
        return isinstance(statement, kind) and owner is not None and self._alone(statement, owner)

    def _alone(self, statement: ast.AST, owner: ast.AST) -> bool:
        """Whether `statement`, in a block of `owner`, is alone on its lines."""
        if self.positions.line_texts[statement.lineno - 1][:statement.col_offset].strip():  # type: ignore[attr-defined]
            return False  # `a; call()`, `if a: call()`
        for block in blocks(owner):
            for i, sibling in enumerate(block):
                if sibling is statement:
                    return i + 1 == len(block) or block[i + 1].lineno > (statement.end_lineno or statement.lineno)  # type: ignore[attr-defined]
        return False

    def _assigned_line(self, node: ast.Call) -> bool:
        """Whether the call being left is the value of a line `target = <call>` of its own."""
        statement = self._parent(2)
        return (isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1
                and self._whole_line(kind=ast.Assign))

    def _call_site(self, rule: Rule, qualname: str, node: ast.Call) -> Site:
        binding = bind(rule.params, call_arguments(node))
        args = binding[0] if binding else None
        parent = self._parent()
        return self._site(
            args=args,
            star_args=binding[1] if binding else {},
            statement=isinstance(parent, ast.Expr),
            discarded=self._discarded(node),
            name=qualname,
            with_item=isinstance(parent, ast.withitem) and parent.optional_vars is None,
            after=self._around(rule, node, args, "after"),
            then=self._around(rule, node, args, "then"),
            guarded_by=self._around(rule, node, args, "guarded-by"),
            compared=isinstance(parent, ast.Compare) or uses(rule, "compared") and self._held_then_compared(node),
            setup_branch=uses(rule, "setup-branch") and self._in_setup_branch(),
            launch_parent=uses(rule, "launch-parent") and self._in_launch_parent(),
            spmd_program=uses(rule, "spmd-program") and self._spmd_program() is not None,
            spmd_fsdp=uses(rule, "spmd-fsdp") and getattr(self._spmd_program(), "fsdp", False),
            tensors=self._tensor_slots(rule, args or {}),
        )

    def _held_then_compared(self, node: ast.Call) -> bool:
        """`device = xm.xla_device()` whose name the same function (or module) compares
        with `==` / `!=` or hands to `assertEqual` / `assertNotEqual`: the device compared is
        the call's (a seed-75 review: `assertEqual(device, torch.device("xla:0"))` held
        after the rewrite gave an index-less "tpu" device)."""
        parent = self._parent()
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
            return False
        name = parent.targets[0].id
        holder = next((p for p in reversed(self._parents) if isinstance(p, (*FUNCTIONS, ast.Module))), None)
        for each in ast.walk(holder) if holder is not None else ():
            if isinstance(each, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in each.ops):
                operands = [each.left, *each.comparators]
            elif isinstance(each, ast.Call) and isinstance(each.func, ast.Attribute) and each.func.attr in _EQUALITY_ASSERTS:
                operands = list(each.args)
            else:
                continue
            if any(isinstance(o, ast.Name) and o.id == name for o in operands):
                return True
        return False

    def _around(self, rule: Rule, node: ast.Call, args: dict | None, kind: str) -> frozenset[str]:
        """The patterns of `kind` (`after:` / `then:` / `guarded-by:`, ast_earlier.py) that hold at the site."""
        wanted = {c.arg for case in rule.cases for c in case.when if c.kind.endswith(kind)}
        if not wanted:
            return frozenset()
        if kind == "after":
            calls = ast_earlier.calls_before(self._parents, node)
        elif kind == "then":
            calls = ast_earlier.call_next(self._parents, self.positions.line_texts)
        else:
            calls = ast_earlier.guard_of(self._parents, self.positions.line_texts)
        scope = self.scope
        return frozenset(p for p in wanted if ast_earlier.matches(p, calls, lambda n: resolve(scope, n), args))

    def _spmd_program(self) -> spmd_program.Program | None:
        """The SPMD program the file is, when it migrates whole (spmd_program.program)."""
        if not self._spmd:
            self._spmd.append(spmd_program.program(self.tree, lambda n: resolve(self.scopes.module, n)))
        return self._spmd[0]

    def _in_launch_parent(self) -> bool:
        """Whether the site runs only in the parent of the file's torch_xla launch: in the
        main block, or in a function of the module that only such code calls."""
        if self._parent_only is None:
            self._parent_only = launch_site.parent_only(self.tree, lambda n: resolve(self.scopes.module, n))
        if len(self._parents) < 2 or id(self._parents[1]) not in self._parent_only:
            return False
        # Not in a definition of its own inside it (a nested function may run anywhere).
        return not any(isinstance(p, (*DEFINITIONS, ast.Lambda)) for p in self._parents[2:])

    def _in_setup_branch(self) -> bool:
        """Whether the site is in the XLA branch of an `if`/`elif` chain whose other branches
        create a process group: setup code, where the XLA path never created one."""
        parents = self._parents
        for i in range(len(parents) - 2, 0, -1):
            branch, child = parents[i], parents[i + 1]
            if not isinstance(branch, ast.If) or not any(s is child for s in branch.body):
                continue
            if "xla" not in self._code(branch.test).lower():
                continue
            head = i
            while head > 1 and isinstance(parents[head - 1], ast.If) and parents[head - 1].orelse == [parents[head]]:
                head -= 1
            others: list[list[ast.stmt]] = []
            current: ast.If | None = parents[head]  # type: ignore[assignment]
            while current is not None:
                if current is not branch:
                    others.append(current.body)
                orelse = current.orelse
                if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                    current = orelse[0]
                else:
                    if orelse:
                        others.append(orelse)
                    current = None
            return any("init_process_group" in _block_code(self.positions, block) for block in others)
        return False

    # ------------------------------------------------------------------ string arguments
    def _string_args(self, node: ast.Call) -> None:
        if not self.index.string_args:
            return
        callee: str | None = None
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else ""
        arguments = call_arguments(node)
        for position, argument in enumerate(arguments):
            if argument.star:
                continue
            for value in held_strings.choices(argument.value):
                text = self._text(value)
                if text is None:
                    continue
                for rule in self.index.string_args:
                    if rule.pattern is not None and not rule.pattern.fullmatch(text):
                        continue
                    if callee is None:
                        callee = resolve(self.scope, func) or ""
                    if not any(_site_hit(site, callee, method, position, argument.keyword) for site in rule.sites):
                        continue
                    # A rule's `params` bind the enclosing call's arguments, for argument conditions
                    # (`torch.device("xla", i)`: the index beside the string).
                    binding = bind(rule.params, arguments) if rule.params else None
                    case = self._choose(rule, self._site(value=text, name=callee, args=binding[0] if binding else None))
                    if case is None:
                        continue
                    self._add("string", rule, case, value, case.fixable, key=text)
                    break

    def _held_string(self, literal: ast.Constant) -> None:
        """A string literal assigned to a variable or `self` attribute that a call reads where
        a string-argument rule looks (held_strings.py): a site of that rule, fixed only where
        every read of the holder is such an argument."""
        text = literal.value
        rules = [r for r in self.index.string_args if r.pattern is None or r.pattern.fullmatch(text)]
        held = held_strings.holder(literal, self._parents[:-1]) if rules else None
        if held is None:
            return
        rule = next((r for r in rules if any(self._read_at_site(read, held, r) for read in held.reads)), None)
        if rule is None:
            return
        case = self._choose(rule, self._site(value=text))
        if case is None:
            return
        other = next((read for read in held.reads if not self._read_at_site(read, held, rule)), None)
        note = ""
        if case.fixable and other is not None:
            note = (f"not rewritten: `{held.name}` is also read on line {other.lineno}, not as a device, where the "
                    f"new value would change what the code does")
        self._add("string", rule, case, literal, case.fixable and other is None, note, key=text)

    def _read_at_site(self, read: ast.expr, held: held_strings.Holder, rule: Rule) -> bool:
        """Whether `read` is an argument of a call, at a slot where `rule` looks."""
        parent = held.parents.get(id(read))
        keyword = None
        if isinstance(parent, ast.keyword):
            keyword, parent = parent.arg, held.parents.get(id(parent))
        if not isinstance(parent, ast.Call):
            return False
        position = next((i for i, a in enumerate(call_arguments(parent)) if a.value is read), None)
        if position is None:
            return False
        return _looks_at(rule, parent, resolve(self.scope, parent.func) or "", position, keyword)

    def _parameter_defaults(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A string default of a parameter the function never rebinds, read as a string site
        of the first call in the function that passes the parameter where the rule looks
        (`def f(model, device="xla"): model.to(device)`). The function's body is searched
        whole: the walk skips its statements that hold no token, as `model.to(device)`."""
        for name, default in _string_defaults(function):
            text = default.value
            rules = [r for r in self.index.string_args if r.pattern is None or r.pattern.fullmatch(text)]
            if not rules or _rebinds(function, name):
                continue
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                arguments = call_arguments(call)
                held = [(i, a) for i, a in enumerate(arguments) if not a.star and isinstance(a.value, ast.Name) and a.value.id == name]
                if not held:
                    continue
                callee = resolve(self.scope, call.func) or ""
                chosen = next(((rule, i) for rule in rules for i, argument in held
                               if _looks_at(rule, call, callee, i, argument.keyword)), None)
                if chosen is None:
                    continue
                rule = chosen[0]
                binding = bind(rule.params, arguments) if rule.params else None
                case = self._choose(rule, self._site(value=text, name=callee, args=binding[0] if binding else None))
                if case is not None:
                    self._add("string", rule, case, default, case.fixable, key=text)
                break

    # ------------------------------------------------------------------ environment variables
    def _env_call(self, qualname: str, node: ast.Call) -> None:
        arguments = call_arguments(node)
        if not arguments:
            return
        variable = self._text(arguments[0].value)
        rule = self.index.env.get(variable) if variable else None
        if rule is None or variable is None:
            return
        write = ENV_CALLS.get(qualname, False)
        value = self._text(arguments[1].value) if write and len(arguments) > 1 else None
        statement = self._statement()
        case = self._env_case(rule, variable, write, value, statement)
        if case is not None:
            self._add("call", rule, case, node, case.fixable and (case.action != "delete" or statement), name=variable,
                      key=dotted_name(node.func) or "")

    def _env_update(self, node: ast.Call) -> None:
        """`os.environ.update({"A": "1", ...})` / `update(A="1")`: each variable is a write of its own."""
        entries, _ = update_entries(node)
        for key, value, where in entries:
            variable = key if isinstance(key, str) else self._text(key)
            rule = self.index.env.get(variable) if variable else None
            case = self._env_case(rule, variable, True, self._text(value), True) if rule else None  # type: ignore[arg-type]
            if rule is not None and case is not None:
                self._add("pair", rule, case, where, case.fixable)

    def _other_process_env(self, node: ast.Dict) -> None:
        """The environment of another process: `{"env_vars": {"XLA_USE_BF16": "1"}}` (a Ray
        `runtime_env`), `env={...}` / `env_vars={...}`: reported, never rewritten here."""
        parent = self._parent()
        key = None
        if isinstance(parent, ast.Dict):
            for k, v in zip(parent.keys, parent.values):
                if v is node and k is not None:
                    key = literal_text(k, self.positions.line_texts)
        elif isinstance(parent, ast.keyword):
            key = parent.arg
        if key not in OTHER_PROCESS_ENV or not self.index.env:
            return
        for k, value in zip(node.keys, node.values):
            variable = literal_text(k, self.positions.line_texts) if k is not None else None
            rule = self.index.env.get(variable) if variable else None
            case = self._env_case(rule, variable, True, literal_text(value, self.positions.line_texts), False) if rule else None  # type: ignore[arg-type]
            if rule is not None and case is not None:
                note = f"set in the `{key}` of another process: change it where that process is launched"
                self._add("pair", rule, case, _Pair(k, value), False, note)  # type: ignore[arg-type]

    def _env_case(self, rule: Rule, variable: str, write: bool, value: str | None, statement: bool) -> Case | None:
        read_back = write and variable in self.env_reads
        site = self._site(value=value, statement=statement, name=variable, read_back=read_back)
        if not applies(rule, site):
            return None
        # Reads are never rewritten: pick the first manual case written for reads, if any.
        # Nor is a write the file reads back: it is the input of that read.
        if not write or read_back:
            reads = [c for c in rule.cases if c.fix is FixClass.MANUAL]
            return choose(reads or rule.cases, site)
        return choose(rule.cases, site)

    def _env_subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, (ast.Tuple, ast.Slice)):
            return
        variable = self._text(node.slice)
        rule = self.index.env.get(variable) if variable else None
        if rule is None or variable is None or resolve(self.scope, node.value) != "os.environ":
            return
        parent = self._parent()
        assign = parent if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.targets[0] is node else None
        write = id(node) in self._store
        value = self._text(assign.value) if assign is not None else None
        case = self._env_case(rule, variable, write, value, assign is not None)
        if case is not None:
            self._add("subscript", rule, case, node, case.fixable and (case.action != "delete" or assign is not None))

    # ------------------------------------------------------------------ expression patterns
    def _claim_expression(self, node: ast.AST) -> None:
        scope = self.scope
        for key in ast_patterns.candidate_keys(node):
            for pattern, rule in self._patterns.get(key, ()):
                found = ast_patterns.match(pattern, node, lambda n: resolve(scope, n), self._code)
                if found is None or not applies(rule, self._site(form=pattern.text, store=id(node) in self._store)):
                    continue
                self._expressions[id(node)] = (pattern, rule)
                # The pattern's own names and calls belong to this rule, not to call/reference rules.
                self._claimed.update(id(claimed) for claimed in found.claimed)
                return

    def _expression(self, node: ast.AST) -> None:
        pattern, rule = self._expressions.pop(id(node))
        scope = self.scope
        found = ast_patterns.match(pattern, node, lambda n: resolve(scope, n), self._code)  # type: ignore[arg-type]
        slots = found.slots if found is not None else {}
        site = self._site(
            args=slots if found is not None else None,
            tensors=self._tensor_slots(rule, slots),
            form=pattern.text,  # type: ignore[attr-defined]
            store=id(node) in self._store,
            statement=self._statement(),
        )
        case = choose(rule.cases, site)
        fixable = case.fixable and _can_fix(case, site)
        note = self._spell_note(template_text.spelled_names(case.template)) if fixable and case.template else ""
        found = self._add("expression", rule, case, node, fixable, note, form=pattern.text,  # type: ignore[attr-defined]
                          key=EXPRESSION_KINDS.get(type(node).__name__, ""))
        found.args = slots

    def _tensor_slots(self, rule: Rule, slots: dict[str, ast.expr]) -> frozenset[str]:
        if not uses(rule, "tensor"):
            return frozenset()
        scope = self.scope
        return frozenset(
            slot for slot, node in slots.items()
            if known_tensor_ast(node, lambda n: resolve(scope, n), self.tensor_names)
        )


def lint_reads(rule: Rule, target: str, text: str) -> bool:
    """Whether lint `rule` may find something in `text`: a file, or one top-level statement.

    Its `when` read against one statement's text: the gates a lint's rule sets (a training
    step, say) skip the statements it would find nothing in.
    """
    return applies(rule, Site(target=target, source=text, top_level=True))


def _key(category: str, where: object) -> tuple:
    return (category, where.start.line, where.start.column, where.end.line, where.end.column)  # type: ignore[attr-defined]


def _block_code(positions: Positions, block: Sequence[ast.stmt]) -> str:
    """The source lines of a block of statements, comments between them included."""
    return positions.lines(first_line(block[0]), block[-1].end_lineno or block[-1].lineno)


def update_entries(call: ast.Call) -> tuple[list[tuple[ast.expr | str, ast.expr, ast.AST]], int]:
    """The variables `os.environ.update(...)` sets, as rewriter._env_update reads them: for
    each, its key (a node, or a keyword's name), its value and the node a finding points at;
    and how many elements the dict or the argument list holds in all (`**` ones too)."""
    arguments = call_arguments(call)
    if len(arguments) == 1 and arguments[0].keyword is None and isinstance(arguments[0].value, ast.Dict):
        dictionary = arguments[0].value
        return ([(key, value, _Pair(key, value)) for key, value in zip(dictionary.keys, dictionary.values) if key is not None],
                len(dictionary.keys))
    return [(a.keyword, a.value, a.node) for a in arguments if a.keyword is not None and not a.star], len(arguments)


class _Pair(ast.AST):
    """A dictionary entry or keyword argument as one node, for its position: CPython's tree
    has no node for `"A": "1"`."""

    _fields = ("key", "value")

    def __init__(self, key: ast.AST, value: ast.AST) -> None:
        super().__init__()
        self.key = key
        self.value = value
        self.lineno, self.col_offset = key.lineno, key.col_offset  # type: ignore[attr-defined]
        self.end_lineno, self.end_col_offset = value.end_lineno, value.end_col_offset  # type: ignore[attr-defined]


_COMPILED: dict[int, dict] = {}


def _ast_expressions(index: RuleIndex) -> dict:
    """The index's expression patterns, compiled for CPython's tree, by key (indexes are
    built once per selection and kept: index.build is cached)."""
    if not index.expressions:
        return {}
    if id(index) not in _COMPILED:
        table: dict = {}
        for text, rule in index.expressions:
            compiled = ast_patterns.compile_pattern(text)
            table.setdefault(compiled.key, []).append((compiled, rule))
        _COMPILED[id(index)] = table
    return _COMPILED[id(index)]


def _string_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.Constant]]:
    """The parameters of `function` whose default is a string literal, with that literal."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is not None]
    return [(arg.arg, default) for arg, default in pairs
            if isinstance(default, ast.Constant) and isinstance(default.value, str)]


def _rebinds(function: ast.AST, name: str) -> bool:
    """Whether `function` (nested scopes included: that only says yes more often) assigns `name`."""
    return any(isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
               for node in ast.walk(function))


def _identifiers(tree: ast.AST) -> Iterator[str]:
    """Every identifier the code spells as a name: reads and writes of names, parameters,
    definitions, `global` / `nonlocal` lists, import bindings (not attributes or keywords)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from node.names
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".")[0]


def _fallback(rule: Rule, case: Case, site: Site) -> Case | None:
    """The case right after `case` when it is a fallback (`fallback = true`: tried where the
    site refuses `case`'s transform) whose conditions hold at `site`."""
    index = rule.cases.index(case)
    following = rule.cases[index + 1] if index + 1 < len(rule.cases) else None
    if following is None or not following.fallback or not holds(following, site):
        return None
    return following


# unittest's assertions of (in)equality.
_EQUALITY_ASSERTS = frozenset({"assertEqual", "assertNotEqual", "assertEquals"})
# Context managers whose body is expected to raise (unittest's and pytest's).
_EXPECTING = frozenset({"assertRaises", "assertRaisesRegex", "raises"})


def _can_fix(case: Case, site: Site) -> bool:
    if case.action == "delete":
        return site.statement or site.discarded
    if case.action == "replace":
        if site.args is None:
            return False
        return template_text.required(case.template) <= set(site.args)
    return True


def tail(rule: Rule, qualname: str) -> str:
    """What a rename keeps: `.X` of `em.EagerMode.X` when the rule matched `...EagerMode.*`."""
    bases = [p[:-2] for p in rule.match if p.endswith(".*") and qualname.startswith(p[:-1])]
    return qualname[len(max(bases, key=len)):] if bases and qualname not in rule.match else ""


def _looks_at(rule: Rule, call: ast.Call, callee: str, position: int, keyword: str | None) -> bool:
    """Whether a string-argument rule looks at the argument of `call` (resolved as `callee`)
    at `position` (passed as `keyword`)."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    return any(_site_hit(site, callee, method, position, keyword) for site in rule.sites)


def _site_hit(site, callee: str, method: str, position: int, keyword: str | None) -> bool:  # type: ignore[no-untyped-def]
    if site.calls and callee not in site.calls:
        return False
    if site.method and site.method != method:
        return False
    if site.keyword:
        return keyword == site.keyword
    if site.position is not None:
        return keyword is None and position == site.position
    return False



class SiteMap:
    """The sites of a file by where they are, and what became of their fixes: which are
    applied (their class is one the run applies, no noqa comment suppresses them), which
    a transform refused when it was built (then manual), which calls keep their arguments
    as written (then the applied fixes in those arguments become manual too)."""

    def __init__(self, found: Sequence[Found], positions: Positions, suppressions: Suppressions,
                 apply: frozenset[FixClass], facts: Facts, defined: Mapping[str, str], offset: int = 0) -> None:
        self.found = list(found)  # as the detector left them: their fates are this map's
        self.apply = apply
        self.facts = facts
        self.defined = defined
        self._spans = [positions.where(site.node) for site in self.found]
        self._at: dict[tuple, list[int]] = {}
        for i, (site, span) in enumerate(zip(self.found, self._spans)):
            self._at.setdefault(_key(site.category, span), []).append(i)
        self._lines = sorted({span.start.line for span in self._spans})
        self._keys: dict[str, set[str]] = {}
        for site in self.found:
            self._keys.setdefault(site.category, set()).add(site.key)
        self._suppressed = {i for i, (site, span) in enumerate(zip(self.found, self._spans))
                            if suppressions.suppressed(span.start.line, site.rule.code)}
        # id(site) -> its finding's index in the file's findings (`offset`: those before them)
        self.index: dict[int, int] = {}
        for i, site in enumerate(self.found):
            if i not in self._suppressed:
                self.index[id(site)] = offset + len(self.index)
        self._order = {id(site): i for i, site in enumerate(self.found)}
        self._refused: dict[int, str] = {}  # site -> why its transform was not built ("": its shape)
        self._demoted: set[int] = set()  # sites whose applied fix a call around them keeps from being made
        self._keeping: set[int] = set()  # calls that kept applied fixes in their arguments from being made
        self._settled = 0  # the sites whose arguments' fate is settled, in order

    @property
    def undecided(self) -> bool:
        """Whether a site's fix is a transform's, which only building it can decide
        (rewriter.py)."""
        return any(site.structural and site.fixable and site.case.action == "transform" and not site.decided
                   for site in self.found)

    def holds(self, lines: range) -> bool:
        """Whether a site starts on one of `lines`."""
        position = bisect.bisect_left(self._lines, lines.start)
        return position < len(self._lines) and self._lines[position] < lines.stop

    def may_be(self, category: str, key: str | None) -> bool:
        """Whether a node that spells `key` may be a site of `category` (a reference's dotted
        name, a call's callee, a string's text, an expression's kind; "": any node of the
        category): the cheap test before its position."""
        if key == "":
            return category in self._keys
        return key is not None and key in self._keys.get(category, ())

    def at(self, category: str, where: object, kind: str = "") -> Found | None:
        """The site of `category` (and rule kind) spanning `where` (`.start`/`.end` with
        `.line` and `.column`, as LibCST's positions have them)."""
        for i in self._at.get(_key(category, where), ()):
            if not kind or self.found[i].rule.kind == kind:
                return self.found[i]
        return None

    def fresh(self) -> SiteMap:
        """The same sites, their fates not yet settled (the LibCST pass decides them anew)."""
        again = copy.copy(self)
        again._refused, again._demoted, again._keeping, again._settled = {}, set(), set(), 0
        return again

    def refuse(self, site: Found, note: str = "") -> None:
        """A transform could not build the site's fix (`note`: the names it needs do not
        reach their modules here): it is manual, its call stays as written."""
        self._refused[self._position(site)] = note or withheld(site.rule.code)

    def _fix(self, i: int) -> FixClass:
        return FixClass.MANUAL if i in self._refused or i in self._demoted else self.found[i].fix

    def _applied(self, i: int) -> bool:
        fix = self._fix(i)
        return i not in self._suppressed and fix is not FixClass.MANUAL and fix in self.apply

    def applied(self, site: Found) -> bool:
        return self._applied(self._position(site))

    def _position(self, site: Found) -> int:
        return self._order[id(site)]

    def _settle(self, upto: int) -> None:
        """Calls that keep their arguments, in order up to site `upto`, demote the applied
        fixes in those arguments (inner calls first, as the edits run)."""
        while self._settled <= upto:
            if self._keeps(self._settled):
                inner = [i for i in range(*self.found[self._settled].inner) if self._applied(i)]
                self._demoted.update(inner)
                if inner:
                    self._keeping.add(self._settled)
            self._settled += 1

    def _keeps(self, i: int) -> bool:
        return self.found[i].keeps_arguments or i in self._refused

    def keeps_arguments(self, site: Found) -> bool:
        self._settle(self._position(site))
        return self._keeps(self._position(site))

    def inner_fixed(self, site: Found) -> bool:
        """Whether the call's arguments held applied fixes, now demoted (see _settle)."""
        self._settle(self._position(site))
        return self._position(site) in self._keeping

    def applied_sites(self) -> list[Found]:
        """The sites whose fixes are made, once every call around them has had its say."""
        self._settle(len(self.found) - 1)
        return [site for i, site in enumerate(self.found) if self._applied(i)]

    def diagnostics(self, resolved: Collection[int] = (), unread: Mapping[int, FixClass] | None = None) -> list[Diagnostic]:
        """The findings of the sites, as the user sees them (FileContext.report's rules);
        `resolved`: the ids of the sites whose code went with an emptied `if`; `unread`: those
        whose code went with an availability flag nothing read (probe_flags.py), and how safe."""
        self._settle(len(self.found) - 1)
        out: list[Diagnostic] = []
        for i, (site, span) in enumerate(zip(self.found, self._spans)):
            if i in self._suppressed:
                continue
            note = self._refused[i] if i in self._refused else site.note
            message = message_of(site.case, self.facts, site.source, note, site.name, self.defined)
            found = Diagnostic(span.start.line, span.start.column + 1, site.rule.code, message, self._fix(i),
                               self._applied(i), span.end.line, span.end.column + 1)
            if id(site) in resolved:
                found = found.removed_with_its_if()
            elif unread and id(site) in unread:
                found = found.removed_unread(unread[id(site)])
            out.append(found)
        return out
