"""Findings of `kind = "project"` rules: sites the project model (project/model.py) points at in
a file because of another file (`dist_backend = "xla"` in a device class that another
module hands to `init_process_group`). The rule's `when` and cases see the file's facts like
any other rule's; `{source}` is the site's line and `{defined}` the other file's line."""

from __future__ import annotations

from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.detect.conditions import Site, applies, choose, explained
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.project.facts import Facts
from xla2tpu.sources.noqa import Suppressions
from xla2tpu.project.model import Context


def project_findings(
    catalogue: Catalogue, selected: frozenset[str], target: str, context: Context, source: str, facts: Facts,
    suppressions: Suppressions,
) -> list[Diagnostic]:
    found = []
    for finding in context.findings:
        rule = catalogue.by_code.get(finding.code)
        if rule is None or rule.code not in selected or rule.kind != "project":
            continue
        where = finding.site
        site = Site(target=target, source=source, name=where.name, facts=facts)
        if not applies(rule, site) or suppressions.suppressed(where.line, rule.code):
            continue
        case = choose(rule.cases, site)
        message = explained(case.message.replace("{source}", where.text).replace("{defined}", finding.defined), case, facts)
        found.append(Diagnostic(where.line, where.col + 1, rule.code, message, FixClass.MANUAL,
                                end_line=where.line, end_col=where.end_col + 1))
    return found
