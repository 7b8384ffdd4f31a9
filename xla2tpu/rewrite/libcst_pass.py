"""The LibCST pass: parse the statements that hold a fix (layout.py), build the fixes of the
sites the detector found (rewriter.py), make the imports follow (rewrite/import_pass.py), print the
code. Only a file with a fix to write, or a transform to try, gets here (engine.py):
this module is what loads LibCST."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping, Sequence

import libcst as cst

from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.sources.decode import Decoded
from xla2tpu.detect import launch_site
from xla2tpu.detect.import_sites import ImportSite, package_init
from xla2tpu.detect.positions import Positions
from xla2tpu.detect.sites import SiteMap
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult
from xla2tpu.project.facts import Facts
from xla2tpu.rewrite.dead_flags import drop_dead_flags
from xla2tpu.rewrite.import_pass import ImportHygiene, add_imports
from xla2tpu.rewrite.layout import Layout
from xla2tpu.sources.noqa import Suppressions
from xla2tpu.rewrite.outline import Outline
from xla2tpu.sources.parse_errors import ParseError, hint
from xla2tpu.rewrite.parse_plan import Plan
from xla2tpu.project.model import Context
from xla2tpu.project.resolve import ImportResolver, UseResolver
from xla2tpu.rewrite.rewriter import FileContext, Rewriter
from xla2tpu.catalogue.settings import Settings
from xla2tpu.rewrite.statements import opening_as_before
from xla2tpu.formatting.wrap import Wrapper


def parse(decoded: Decoded, plan: Plan | None) -> Layout:
    """The statements of the file that some pass needs, parsed (see layout.py); all of it
    when the reduction does not pay or CPython has no tree of it."""
    if plan is not None:
        layout = Layout.reduced_parse(decoded.text, decoded.tree, plan.keeps)
        if layout is not None:
            return layout
    try:
        module = cst.parse_module(decoded.text)
    except cst.ParserSyntaxError as exc:
        found = hint(decoded.text, exc.raw_line)
        raise ParseError(f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}{found}") from None
    except RecursionError:
        raise ParseError("cannot parse: the code nests too deeply") from None
    return Layout.full(module, decoded.text, decoded.tree)


def rewrite(result: FileResult, decoded: Decoded, settings: Settings, context: Context,
            canonical: Canonicaliser, plan: Plan, first: SiteMap,
            detect: Callable[[Facts], SiteMap], imports: Sequence[ImportSite], positions: Positions,
            suppressions: Suppressions, prefix: list[Diagnostic], facts: Facts) -> None:
    """The fixes of the sites `first` holds (as `detect` found them), made on LibCST's tree:
    `result` gets the findings and, when something changed, the new code."""
    tree = decoded.tree
    layout = parse(decoded, plan)
    result.parsed = True
    module = layout.module
    outline = Outline(layout, plan)
    resolver = ImportResolver(canonical, outline.pruned)
    module.visit(resolver)
    by_alias = {(w.start.line, w.start.column): site for site in imports for w in (positions.where(site.alias),)}

    def rule_pass(facts: Facts, sites: SiteMap) -> tuple[FileContext, cst.Module]:
        ctx = FileContext(decoded.text, settings, resolver, suppressions, outline, facts, tree, context.defined,
                          package_init(result.path), context.imported_flags)
        ctx.diagnostics.extend(prefix)
        ctx.diagnostics.extend([None] * len(sites.index))  # type: ignore[list-item]  # filled once the fixes are built
        rewriter = Rewriter(ctx, module, sites)
        new_module = module.visit(rewriter)
        ctx.diagnostics[len(prefix):len(prefix) + len(sites.index)] = sites.diagnostics()
        # Before the import pass: a `try:` whose flags went guards its imports no longer.
        new_module = drop_dead_flags(ctx, module, new_module)
        if by_alias:
            new_module = _import_hygiene(ctx, new_module, rewriter.import_tops, by_alias, canonical, outline)
        return ctx, opening_as_before(add_imports(new_module, ctx.imports_needed), module)

    sites = first.fresh()
    ctx, new_module = rule_pass(facts, sites)
    launch = launch_site.migrated(facts, sites.found, sites.applied_sites())
    if launch is not None:
        facts = result.facts = dataclasses.replace(facts, processes=launch)
        ctx, new_module = rule_pass(facts, detect(facts))
    result.diagnostics = sorted(ctx.findings())
    result.encoding = decoded.encoding
    if not any(diagnostic.fixed for diagnostic in result.diagnostics):
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
