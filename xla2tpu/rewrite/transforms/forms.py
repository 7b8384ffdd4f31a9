"""Shared building blocks for transforms: templates rendered at a call site, fresh names.

Templates here use the catalogue's placeholder syntax (`{param}`, `{kw=param}`,
`{*param}`, see `xla2tpu.catalogue.templates`), so a transform reads like a rule's `replace`
and library names are spelled with the file's own aliases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst

from xla2tpu.catalogue import templates
from xla2tpu.detect import collective_sites
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform


def render_expression(
    site: CallSite, template: str, imports: set[str], extra: Mapping[str, cst.BaseExpression] | None = None
) -> cst.BaseExpression:
    """`template` rendered as an expression with the site's arguments (and `extra` nodes)."""
    rendered = templates.render(template, {**site.args, **(extra or {})}, site.star_args, site.spell)
    imports |= rendered.imports
    assert isinstance(rendered.node, cst.BaseExpression)
    return rendered.node


def render_statements(
    site: CallSite, lines: list[str], extra: Mapping[str, cst.BaseExpression] | None = None
) -> Rewrite:
    """A Rewrite replacing the call's statement by `lines`, each one statement template.

    A compound template (`if ...:` with an indented body) keeps its indented form; the
    body takes the file's own indentation.
    """
    imports: set[str] = set()
    statements: list[cst.BaseStatement] = []
    for line in lines:
        rendered = templates.render(line, {**site.args, **(extra or {})}, site.star_args, site.spell, statement=True)
        imports |= rendered.imports
        assert isinstance(rendered.node, cst.BaseStatement)
        statements.append(rendered.node)
    return Rewrite(statements=statements, imports=imports)


def assigned_target(site: CallSite) -> cst.BaseAssignTargetExpression | None:
    """`x` in `x = <call>` (one target, the whole statement), else None."""
    statement = site.statement
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement.targets[0].target
    return None


def fresh_name(site: CallSite, base: str) -> str:
    """`base`, or `base_2`, ..., whichever word the module's source does not contain yet.

    Checking the whole source (not just the scope) is cruder but can never capture a
    name that some nested scope, string template or later statement relies on.
    """
    candidate, n = base, 1
    while re.search(rf"\b{re.escape(candidate)}\b", site.source):
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def tuple_items(node: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The elements of a tuple or list literal without starred items, else None."""
    if isinstance(node, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in node.elements):
        return [e.value for e in node.elements]
    return None


def fresh_names(site: CallSite, lines: list[str], fresh: tuple[str, ...]) -> tuple[list[str], dict[str, cst.BaseExpression]]:
    """`lines` with each placeholder of `fresh` (`{tensor}`) bound to a new local name built
    from it; but a loop `for {tensor} in {items}:` over a list or tuple literal of one name
    or attribute is written as its body on that element: a loop over one item is not what a
    person writes (`for t in [tensor]: all_reduce(t)` is `all_reduce(tensor)`)."""
    names: dict[str, cst.BaseExpression] = {}
    for base in fresh:
        for items in re.findall(rf"^ *for {{{base}}} in {{(\w+)}}:$", "".join(lines), re.M):
            elements = tuple_items(site.args[items]) if items in site.args else None
            if elements is not None and len(elements) == 1 and isinstance(elements[0], (cst.Name, cst.Attribute)):
                lines = [_unrolled(line, f"for {{{base}}} in {{{items}}}:") for line in lines]
                names[base] = elements[0]
        if base not in names:
            names[base] = cst.Name(fresh_name(site, base))
    return lines, names


def _unrolled(template: str, header: str) -> str:
    """`template` without the loop line `header`, its body dedented one step."""
    out: list[str] = []
    depth: int | None = None
    for line in template.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip())
        if line.strip() == header:
            depth = indent
            continue
        if depth is not None and indent <= depth and line.strip():
            depth = None
        out.append(line[4:] if depth is not None else line)
    return "".join(out)


def statement_form(name: str, lines: list[str], fresh: tuple[str, ...] = ()) -> None:
    """Register transform `name`: a call that is a whole expression statement becomes `lines`.

    `fresh` names the placeholders of loop variables the replacement introduces
    (`fresh_names`). A call whose value is used is left to the rule's manual message (the
    detector decides: collective_sites.made).
    """

    def rewrite(site: CallSite) -> Rewrite | None:
        if not isinstance(site.statement, cst.Expr):
            return None  # not the site the detector decided
        written, names = fresh_names(site, lines, fresh)
        return render_statements(site, written, names)

    transform(name)(rewrite)


for _name, (_lines, _fresh) in collective_sites.STATEMENT_FORMS.items():
    statement_form(_name, list(_lines), _fresh)
