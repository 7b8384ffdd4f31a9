"""Shared building blocks for transforms: templates rendered at a call site, fresh names.

Templates here use the catalogue's placeholder syntax (`{param}`, `{kw=param}`,
`{*param}`, see `xla2tpu.templates`), so a transform reads like a rule's `replace`
and library names are spelled with the file's own aliases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst

from xla2tpu import templates
from xla2tpu.transforms import CallSite, Rewrite, transform


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


def statement_form(name: str, lines: list[str], fresh: tuple[str, ...] = ()) -> None:
    """Register transform `name`: a call that is a whole expression statement becomes `lines`.

    Each entry of `fresh` is a placeholder (`{tensor}`) bound to a new local name built
    from it, for loop variables the replacement introduces. A call whose value is used
    is left to the rule's manual message (the transform returns None).
    """

    def rewrite(site: CallSite) -> Rewrite | None:
        if not isinstance(site.statement, cst.Expr):
            return None
        names = {base: cst.Name(fresh_name(site, base)) for base in fresh}
        return render_statements(site, lines, names)

    transform(name)(rewrite)
