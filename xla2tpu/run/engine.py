"""The per-file pipe: prefilter -> decode -> facts -> detect (CPython's tree) -> findings, what
the fixes leave told on the ast (detect/after_fixes.py); only when a fix is to be written or
a transform tried, the LibCST pass (libcst_pass.py, the one module that loads LibCST):
parse -> resolve -> rewrite -> imports -> encode.

`process_source` is a pure function of (path, bytes, settings); `pool.run` maps it over
many files.
"""

from __future__ import annotations

import ast
import dataclasses
import traceback

from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.detect import prechecks
from xla2tpu.trees.blocks import imported_modules
from xla2tpu.project.env_reads import variables_read
from xla2tpu.sources.decode import DecodeError, Decoded, decode
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.sources.parse_errors import InputSyntaxError, ParseError, hint, python_error
from xla2tpu.project.facts import OTHER_HARDWARE_MODULES, Facts
from xla2tpu.project.facts import compute as compute_facts
from xla2tpu.catalogue.index import build
from xla2tpu.sources.noqa import Suppressions, skip_file
from xla2tpu.trees.blocks import first_line, groups_of
from xla2tpu.rewrite.parse_plan import Plan
from xla2tpu.rewrite.reduction import Parsed
from xla2tpu.sources.prefilter import holds_token, may_hold_idiom
from xla2tpu.project.model import EMPTY, Context
from xla2tpu.detect.project_findings import project_findings
from xla2tpu.detect import launch_site
from xla2tpu.detect.after_fixes import findings_after_fixes
from xla2tpu.detect.import_sites import import_sites, package_init
from xla2tpu.detect.scopes import Scopes
from xla2tpu.detect.sites import Detector, SiteMap
from xla2tpu.detect.positions import Positions
from xla2tpu.catalogue.settings import Settings


def process_source(path: str, data: bytes, settings: Settings, context: Context = EMPTY) -> FileResult:
    """Lint and fix one file's bytes; never raises for a problem in the input. `context` is
    what the project model says of the file (project/model.py)."""
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
    except ParseError as exc:
        result.error = str(exc)
    except InputSyntaxError as exc:
        result.diagnostics.clear()
        line, col = exc.error.lineno or 0, exc.error.offset or 0
        result.error = f"syntax error at {line}:{col}: {exc.error.msg}{hint(decoded.text, line)}"
    except RecursionError:
        result.diagnostics.clear()
        result.error = "cannot analyse: the code nests too deeply"
    except Exception:  # noqa: BLE001 - one broken rule must not stop the run
        result.diagnostics.clear()
        result.new_source = None
        result.internal_error = True
        result.error = "internal error, please report it:\n" + traceback.format_exc(limit=-3).rstrip()
    return result


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
        from xla2tpu.rewrite import libcst_pass

        libcst_pass.parse(decoded, None)
        raise InputSyntaxError(python_error(decoded.text))
    prefix = [*_verdict_findings(verdicts, suppressions), *found_by_project]
    positions = Positions(decoded.text, tree)
    plan = Plan(tree, canonical, index)
    # Each top-level statement with its source (a definition's from its first decorator). Only
    # those that may use or bind what a rule looks for are read further (as LibCST parses them).
    statements = [(positions.lines(group.first, group.last), group) for group in groups_of(tree.body)]

    definitions: dict[int, bool] = {}  # Scopes and the detector ask alike: one answer each

    def read(definition: ast.AST) -> bool:  # one inside them: a method, a nested function
        if id(definition) not in definitions:
            text = positions.lines(first_line(definition), definition.end_lineno)  # type: ignore[arg-type,attr-defined]
            definitions[id(definition)] = plan.reads_definition(text)
        return definitions[id(definition)]

    kept = [node for text, group in statements if plan.keeps(text, group) for node in group.nodes]
    scopes = Scopes(tree, canonical, kept, read)
    parsed = Parsed(decoded.text, tree, plan.keeps)  # what LibCST's pass will hold of the file
    imports = import_sites(tree, scopes, index)
    env_reads = variables_read(decoded.text) | context.env_reads

    def detect(facts: Facts) -> SiteMap:
        found = Detector(tree, decoded.text, index, scopes, positions, settings.target, settings.apply, facts,
                         env_reads, parsed, context.entry_groups).run(statements, plan.matches, read)
        return SiteMap(found, positions, suppressions, settings.apply, facts, context.defined, len(prefix))

    # A file no fix rewrites, or one whose fixed code is not wanted (`check`), with no
    # transform to try (building one decides whether it can be made), is judged on CPython's
    # tree alone when that tells what the fixes leave of its imports: LibCST never parses it.
    first = detect(facts)
    if not first.undecided and not (settings.rewrite and first.applied_sites()):
        sites, fixed_facts = first, facts
        launch = launch_site.migrated(facts, first.found, first.applied_sites())
        if launch is not None:  # as the LibCST pass does: found again with the migrated launch's facts
            fixed_facts = dataclasses.replace(facts, processes=launch)
            sites = detect(fixed_facts)
        found = None if sites.undecided else findings_after_fixes(
            sites, imports, scopes, positions, suppressions, settings.apply, settings.target, decoded.text, fixed_facts,
            package_init(result.path), context.imported_flags, tree)
        if found is not None and not (settings.rewrite and any(d.fixed for d in found)):
            result.facts = fixed_facts
            result.diagnostics = sorted([*prefix, *found])
            result.encoding = decoded.encoding
            return
    from xla2tpu.rewrite import libcst_pass  # only now: a run whose files all stop above never loads LibCST

    libcst_pass.rewrite(result, decoded, settings, context, canonical, plan, first, detect, imports, positions,
                        suppressions, prefix, facts)


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

