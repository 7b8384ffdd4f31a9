"""`with torch_xla.step(): body` → `body`: the context manager goes, its body is dedented."""

from __future__ import annotations

import libcst as cst

from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform


@transform("with-unwrap")
def with_unwrap(site: CallSite) -> Rewrite | None:
    """Drop the call's `with` item; a `with` left without items is replaced by its body.

    Only a plain item (`with f():`) is unwrapped: `with f() as x:` binds a name the body
    may use, so that shape is left for a human.
    """
    if len(site.parents) < 2:
        return None
    item, statement = site.parents[-1], site.parents[-2]
    if not isinstance(item, cst.WithItem) or not isinstance(statement, cst.With) or item.asname is not None:
        return None
    position = next(i for i, candidate in enumerate(statement.items) if candidate is item)

    def unwrap(node: cst.CSTNode) -> cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]:
        assert isinstance(node, cst.With)
        if len(node.items) > 1:
            items = [candidate for i, candidate in enumerate(node.items) if i != position]
            items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return node.with_changes(items=items)
        return cst.FlattenSentinel(_body(node))

    return Rewrite(expression=site.call, later=[(statement, unwrap)])


def _body(node: cst.With) -> list[cst.BaseStatement]:
    """The statements of the `with` body, the comments above the `with` kept above them."""
    if isinstance(node.body, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=node.body.body, leading_lines=node.leading_lines)]
    statements = list(node.body.body)
    first = statements[0]
    statements[0] = first.with_changes(leading_lines=[*node.leading_lines, *first.leading_lines])
    return statements
