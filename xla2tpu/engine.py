"""The per-file pipe: prefilter -> decode -> facts -> detect (CPython's tree), then, only when a
fix is to be written or a transform tried: parse (LibCST) -> resolve -> rewrite -> imports -> encode.

`process_source` is a pure function of (path, bytes, settings); `pool.run` maps it over
many files.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import traceback
from collections.abc import Mapping

import libcst as cst

from xla2tpu import catalogue as catalogue_mod
from xla2tpu import prechecks
from xla2tpu.ast_blocks import imported_modules
from xla2tpu.env_reads import variables_read
from xla2tpu.decode import DecodeError, Decoded, decode
from xla2tpu.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.facts import OTHER_HARDWARE_MODULES, Fact, Facts
from xla2tpu.facts import compute as compute_facts
from xla2tpu.imports import ImportHygiene, add_imports
from xla2tpu.index import build
from xla2tpu.noqa import Suppressions, skip_file
from xla2tpu.layout import Layout, groups_of
from xla2tpu.canonical import Canonicaliser
from xla2tpu.outline import Outline, Plan
from xla2tpu.prefilter import holds_token, may_hold_idiom
from xla2tpu.project import EMPTY, Context
from xla2tpu.project_findings import project_findings
from xla2tpu.resolve import ImportResolver, UseResolver
from xla2tpu.detect.after_fixes import findings_after_fixes
from xla2tpu.detect.imports import ImportSite, import_sites
from xla2tpu.detect.scopes import Scopes
from xla2tpu.detect.sites import Detector, SiteMap
from xla2tpu.detect.positions import Positions
from xla2tpu.rewriter import FileContext, Rewriter
from xla2tpu.settings import Settings
from xla2tpu.statements import opening_as_before
from xla2tpu.wrap import Wrapper


def process_source(path: str, data: bytes, settings: Settings, context: Context = EMPTY) -> FileResult:
    """Lint and fix one file's bytes; never raises for a problem in the input. `context` is
    what the project model says of the file (project.py)."""
    result = FileResult.counted(path, data)
    if not (context.forced or context.findings or may_hold_idiom(data)):
        return result
    try:
        decoded = decode(data)
    except DecodeError as exc:
        result.error = str(exc)
        return result
    if skip_file(decoded.text):
        return result
    try:
        _rewrite(result, decoded, settings, context)
    except _ParseError as exc:
        result.error = str(exc)
    except _InputSyntaxError as exc:
        result.diagnostics.clear()
        line, col = exc.error.lineno or 0, exc.error.offset or 0
        result.error = f"syntax error at {line}:{col}: {exc.error.msg}{_hint(decoded.text, line)}"
    except RecursionError:
        result.diagnostics.clear()
        result.error = "cannot analyse: the code nests too deeply"
    except Exception:  # noqa: BLE001 - one broken rule must not stop the run
        result.diagnostics.clear()
        result.new_source = None
        result.internal_error = True
        result.error = "internal error, please report it:\n" + traceback.format_exc(limit=-3).rstrip()
    return result


# Why a file does not parse, when the line that fails shows it: old Python 2 code and
# notebook cells exported with their shell and magic lines are common in legacy TPU code.
_PYTHON2 = re.compile(r"^\s*(print\s+[^\s(=.,;)\]}]|exec\s+[\"']|except\s+[\w.]+\s*,\s*\w+\s*:)|`")
_NOTEBOOK = re.compile(r"^\s*[!%]")


class _ParseError(Exception):
    """LibCST cannot parse the input."""


class _InputSyntaxError(Exception):
    """The input is not valid for this Python, though LibCST's wider grammar parsed it."""

    def __init__(self, error: SyntaxError) -> None:
        super().__init__(str(error))
        self.error = error


def _hint(text: str, line: int) -> str:
    lines = text.splitlines()
    failing = lines[line - 1] if 0 < line <= len(lines) else ""
    if _PYTHON2.search(failing):
        return " (this looks like Python 2 source; xla2tpu reads Python 3 only: port the file first, e.g. with `2to3`)"
    if _NOTEBOOK.search(failing):
        return (
            " (this looks like a notebook cell with a shell or magic command (`!pip`, `%env`): drop those lines"
            " or export the notebook with `jupyter nbconvert --to script`)"
        )
    return ""


def _parse(decoded: Decoded, plan: Plan | None) -> Layout:
    """The statements of the file that some pass needs, parsed (see layout.py); all of it
    when the reduction does not pay or CPython has no tree of it."""
    if plan is not None:
        layout = Layout.reduced_parse(decoded.text, decoded.tree, plan.keeps)
        if layout is not None:
            return layout
    try:
        module = cst.parse_module(decoded.text)
    except cst.ParserSyntaxError as exc:
        hint = _hint(decoded.text, exc.raw_line)
        raise _ParseError(f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}{hint}") from None
    except RecursionError:
        raise _ParseError("cannot parse: the code nests too deeply") from None
    return Layout.full(module, decoded.text, decoded.tree)


def _rewrite(result: FileResult, decoded: Decoded, settings: Settings, context: Context) -> None:
    catalogue = catalogue_mod.load()
    canonical = context.canonicaliser(catalogue.module_renames)
    tree = decoded.tree
    facts = result.facts = context.apply(compute_facts(tree, decoded.text, canonical, result.path))
    verdicts = prechecks.verdicts(catalogue, settings.selected, decoded.text, facts)
    selected = settings.selected - prechecks.disabled(catalogue, verdicts)
    suppressions = Suppressions(decoded.text)
    if verdicts and not selected:  # a verdict that switches every rule off: report it and stop
        # ... unless the file imports neither torch_xla nor a vendor's XLA package: a module
        # that only reads a vendor runtime's variables has nothing to migrate or report.
        if _imports_xla(tree):
            result.diagnostics = sorted(_verdict_findings(verdicts, suppressions))
        return
    found_by_project = project_findings(catalogue, selected, settings.target, context, decoded.text, facts, suppressions)
    index = build(catalogue, selected)
    if tree is None:  # LibCST says why when it rejects the file too, else CPython's message stands
        _parse(decoded, None)
        raise _InputSyntaxError(_python_error(decoded.text))
    prefix = [*_verdict_findings(verdicts, suppressions), *found_by_project]
    positions = Positions(decoded.text, tree)
    plan = Plan(tree, canonical, index)
    # Each top-level statement with its source (a definition's from its first decorator). Only
    # those that may use or bind what a rule looks for are read further (as LibCST parses them).
    statements = [(positions.lines(group.first, group.last), group) for group in groups_of(tree.body)]

    def read(definition: ast.AST) -> bool:  # one inside them: a method, a nested function
        first = min([definition.lineno, *(d.lineno for d in getattr(definition, "decorator_list", ()))])  # type: ignore[attr-defined]
        return plan.reads_definition(positions.lines(first, definition.end_lineno))  # type: ignore[attr-defined]

    scopes = Scopes(tree, canonical, [node for text, group in statements if plan.keeps(text, group) for node in group.nodes],
                    read)
    imports = import_sites(tree, scopes, index)
    env_reads = variables_read(decoded.text)

    def detect(facts: Facts) -> SiteMap:
        found = Detector(tree, decoded.text, index, scopes, positions, settings.target, settings.apply, facts,
                         env_reads).run(statements, plan.matches, read)
        return SiteMap(found, positions, suppressions, settings.apply, facts, context.defined, len(prefix))

    # A file no fix rewrites, or one whose fixed code is not wanted (`check`), with no
    # transform to try (building one decides whether it can be made), is judged on CPython's
    # tree alone when that tells what the fixes leave of its imports: LibCST never parses it.
    first = detect(facts)
    if not first.undecided and not (settings.rewrite and first.applied_sites()):
        found = findings_after_fixes(first, imports, scopes, positions, suppressions, settings.apply,
                                     settings.target, decoded.text, facts)
        if found is not None and not (settings.rewrite and any(d.fixed for d in found)):
            result.diagnostics = sorted([*prefix, *found])
            result.encoding = decoded.encoding
            return
    layout = _parse(decoded, plan)
    result.parsed = True
    module = layout.module
    outline = Outline(layout, plan)
    resolver = ImportResolver(canonical, outline.pruned)
    module.visit(resolver)
    by_alias = {(w.start.line, w.start.column): site for site in imports for w in (positions.where(site.alias),)}

    def rule_pass(facts: Facts, sites: SiteMap) -> tuple[FileContext, cst.Module]:
        ctx = FileContext(decoded.text, settings, resolver, suppressions, outline, facts, tree, context.defined)
        ctx.diagnostics.extend(prefix)
        ctx.diagnostics.extend([None] * len(sites.index))  # type: ignore[list-item]  # filled once the fixes are built
        rewriter = Rewriter(ctx, module, sites)
        new_module = module.visit(rewriter)
        ctx.diagnostics[len(prefix):len(prefix) + len(sites.index)] = sites.diagnostics()
        if by_alias:
            new_module = _import_hygiene(ctx, new_module, rewriter.import_tops, by_alias, canonical, outline)
        return ctx, opening_as_before(add_imports(new_module, ctx.imports_needed), module)

    ctx, new_module = rule_pass(facts, first.fresh())
    launch = _migrated_launch(ctx, facts, catalogue)
    if launch is not None:  # the workers now join a process group: rank and collective fixes are exact
        facts = result.facts = dataclasses.replace(facts, processes=launch)
        ctx, new_module = rule_pass(facts, detect(facts))
    result.diagnostics = sorted(ctx.findings())
    result.encoding = decoded.encoding
    if not any(diagnostic.fixed for diagnostic in ctx.diagnostics):
        return  # nothing was rewritten: no code to generate
    code, generated = outline.render(new_module, Wrapper(decoded.text, settings.line_length))
    if code != decoded.text:
        if not outline.reprints_changes(new_module):
            # LibCST does not print every input back byte for byte (some whitespace-only
            # lines next to oddly indented comments): a fix would lose lines nobody edited.
            for index, diagnostic in enumerate(result.diagnostics):
                if diagnostic.fixed:
                    result.diagnostics[index] = dataclasses.replace(diagnostic, fixed=False)
            result.error = "not fixed: this file's whitespace-only lines cannot be kept exactly by the parser; apply the findings by hand"
            return
        for part in generated:  # the copied parts are the input's, which parsed
            try:
                ast.parse(part)
            except SyntaxError as exc:  # never write a file that no longer parses
                raise AssertionError(f"the rewrite does not parse: {exc}") from exc
        result.new_source = decoded.encode(code)


def _import_hygiene(ctx: FileContext, module: cst.Module, tops: dict[int, cst.CSTNode],
                    imports: Mapping[tuple[int, int], ImportSite], canonical: Canonicaliser, outline: Outline) -> cst.Module:
    """The import pass, once more when it removed an `if` guarding imports: the names its
    test read (`is_torch_xla_available`) may have lost their last use, and a second `fix`
    must find nothing left to do. The second pass's findings replace the first's."""
    first, resolved = len(ctx.diagnostics), len(ctx.resolved)
    for again in (False, True):
        start = len(ctx.diagnostics)
        uses = UseResolver(canonical, outline.pruned)
        module.visit(uses)
        module = module.visit(ImportHygiene(ctx, uses, tops, imports, outline.pruned))
        if again:
            redone = {(d.line, d.col, d.code) for d in ctx.diagnostics[start:]}
            ctx.diagnostics[first:start] = [d for d in ctx.diagnostics[first:start] if (d.line, d.col, d.code) not in redone]
        elif len(ctx.resolved) == resolved:
            break
    return module


def _migrated_launch(ctx: FileContext, facts: Facts, catalogue: catalogue_mod.Catalogue) -> Fact | None:
    """The `processes` fact once this fix migrates the file's torch_xla launch (a rule whose
    case is the `tpu-launch` transform was applied), else None."""
    if facts.processes.value != "spawn":
        return None
    launches = {rule.code for rule in catalogue.rules for case in rule.cases if case.template == "tpu-launch"}
    if not any(d.fixed and d.code in launches for d in ctx.diagnostics):
        return None
    reason = 'has its torch_xla launch migrated to TorchTPU by this fix: every worker joins the "tpu" process group'
    return Fact("processes", "process-group", facts.processes.evidence, reason)


def _imports_xla(tree: ast.Module | None) -> bool:
    if tree is None:
        return True  # cannot tell: say what was found
    return any(holds_token(name) or name.startswith(OTHER_HARDWARE_MODULES) for _, name in imported_modules(tree))


def _verdict_findings(verdicts: list[prechecks.Verdict], suppressions: Suppressions) -> list[Diagnostic]:
    """File rules are reports only: their one case is manual."""
    found = []
    for verdict in verdicts:
        case = verdict.rule.cases[-1]
        if not suppressions.suppressed(verdict.line, verdict.rule.code):
            message = case.message.replace("{source}", verdict.text.strip())
            found.append(
                Diagnostic(verdict.line, verdict.col + 1, verdict.rule.code, message, FixClass.MANUAL,
                           end_line=verdict.line, end_col=verdict.end_col + 1)
            )
    return found


def _python_error(text: str) -> SyntaxError:
    """Why CPython rejects `text`."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc
    except ValueError as exc:  # e.g. a lone surrogate
        return SyntaxError(str(exc))
    raise AssertionError("CPython parses this text after all")
