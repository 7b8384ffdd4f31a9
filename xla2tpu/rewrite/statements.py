"""Deleting statements without losing the comments and blank lines around them.

LibCST keeps the comment lines above a statement in its `leading_lines`, so dropping a
statement naively drops the comments too. Here a deleted statement hands its leading
lines to the next statement in its block, and a block left empty gets `pass`; except the
comment right above it that describes it ("# Run the pending graph" over `xm.mark_step()`,
or any comment over a statement that ends its paragraph), which goes with it rather than
describe the code that follows.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence

import libcst as cst

from xla2tpu.project.resolve import none_assignment

# Words a comment about torch_xla's lazy execution uses: right above a deleted statement,
# such a comment described it, not the code after it ("# Run the pending graph").
_XLA_WORDS = frozenset({"xla", "graph", "graphs", "lazy", "pending", "barrier", "rendezvous", "mark_step", "pjrt", "xrt"})
_WORD = re.compile(r"[a-z][a-z0-9_]*")


def _is_blank(line: cst.EmptyLine) -> bool:
    return line.comment is None


def _merge(carried: list[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Carried lines then the statement's own, with the blank run where they meet collapsed."""
    tail = len(_blank_head(carried[::-1]))
    head = len(_blank_head(own))
    kept = carried[: len(carried) - tail]
    blanks = max(carried[len(carried) - tail :], list(own[:head]), key=len)
    return [*kept, *blanks, *own[head:]]


def prune(
    body: Sequence[cst.BaseStatement], doomed: Container[int], opens_block: bool = True
) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
    """Drop the statements whose id is in `doomed`.

    Returns the new body and the comment lines left over after the last statement, which
    the caller puts in the block's footer (or under a `pass` when the body is empty).
    A statement that becomes the first of its block loses the blank lines that set it off
    from the ones removed before it, when `opens_block` (nothing above it in the output
    needs the space): a block starts as it did, with the blank lines it opened with.
    """
    out: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    removed = False
    opening = _blank_head(getattr(body[0], "leading_lines", ())) if body else []
    for index, statement in enumerate(body):
        if id(statement) in doomed:
            last = all(id(later) in doomed for later in body[index + 1:])
            # Two removed paragraphs in a row leave one blank run between what is kept, not two.
            carried = _merge(carried, _undescribed(statement, _ends_paragraph(body, index, doomed), first=not out, last=last))
            removed = True
            continue
        if carried or (removed and not out):
            lines = _merge(carried, statement.leading_lines)
            if opens_block and not out:
                lines = opening + lines[len(_blank_head(lines)):]
            statement = statement.with_changes(leading_lines=lines)
            carried = []
        out.append(statement)
    if not any(line.comment is not None for line in carried):
        carried = []
    return out, carried


def _blank_head(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The blank lines `lines` start with."""
    head = 0
    while head < len(lines) and _is_blank(lines[head]):
        head += 1
    return list(lines[:head])


def _ends_paragraph(body: Sequence[cst.BaseStatement], index: int, doomed: Container[int]) -> bool:
    """Whether no kept statement follows `body[index]` without a blank line between."""
    for statement in body[index + 1:]:
        lines = getattr(statement, "leading_lines", ())
        if lines and _is_blank(lines[0]):
            return True
        if id(statement) not in doomed:
            return False
    return True


def _undescribed(statement: cst.BaseStatement, paragraph: bool, first: bool, last: bool) -> list[cst.EmptyLine]:
    """The lines above a deleted statement that stay: all but the comment block right above
    it (no blank line between) when that block describes it: it and the statement are a
    paragraph of their own (`paragraph`, and a blank line above the comment, or no code
    left above it in the block: `first`), nothing is left below it in the block (`last`),
    or it speaks of torch_xla's lazy execution. Otherwise a comment right below other code
    may be about that code, and one pointing up (`# ^^ safe even without CUDA`) is."""
    lines = list(getattr(statement, "leading_lines", ()))
    start = len(lines)
    while start and lines[start - 1].comment is not None:
        start -= 1
    if start == len(lines):
        return lines
    if lines[start].comment.value.lstrip("# ").startswith("^"):  # type: ignore[union-attr]
        return lines
    paragraph = last or paragraph and (_is_blank(lines[start - 1]) if start else first)
    words = {w for line in lines[start:] for w in _WORD.findall(line.comment.value.lower())}  # type: ignore[union-attr]
    return lines[:start] if paragraph or words & _XLA_WORDS else lines


def opening_as_before(module: cst.Module, original: cst.Module) -> cst.Module:
    """`module` without the blank lines a deletion left at the top of the file (its first
    statement gone, nothing put in its place), when the file did not start with them."""
    if module.header or not module.body or not original.body or _blank_head(original.body[0].leading_lines):
        return module
    first = module.body[0]
    head = _blank_head(first.leading_lines)
    if not head:
        return module
    return module.with_changes(body=[first.with_changes(leading_lines=first.leading_lines[len(head):]), *module.body[1:]])


class _Indent(cst.CSTTransformer):
    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, cst.BaseExpression)  # blocks are statements' children

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(indent=self.indent) if updated_node.indent is None else updated_node


def indented_like(statements: Sequence[cst.BaseStatement], block: cst.CSTNode) -> list[cst.BaseStatement]:
    """Generated `statements` landing in `block`, their own blocks indented by its step.

    A new block without an indent of its own takes the module's default, the step of the
    file's first block; in a file that mixes steps (2 spaces at the top, 4 in this function)
    that is not the step of the code around it.
    """
    indent = block.indent if isinstance(block, cst.IndentedBlock) else None
    if indent is None:
        return list(statements)
    return [statement.visit(_Indent(indent)) for statement in statements]  # type: ignore[misc]


def holds_only(suite: cst.BaseSuite, kinds: tuple[type[cst.CSTNode], ...] = ()) -> bool:
    """The block holds only simple statements of `kinds` (and `pass` / `...` / a docstring)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        smalls = list(suite.body)
    elif all(isinstance(line, cst.SimpleStatementLine) for line in suite.body):
        smalls = [small for line in suite.body for small in line.body]  # type: ignore[attr-defined]
    else:
        return False
    return all(
        isinstance(small, (cst.Pass, *kinds))
        or (isinstance(small, cst.Expr) and isinstance(small.value, (cst.Ellipsis, cst.SimpleString)))
        for small in smalls
    )


def fallback_only(suite: cst.BaseSuite, names: Container[str] | None = None) -> bool:
    """The block holds only what `holds_only` allows, `raise` and `x = None` for names of
    `names` (any with None): import_sites.fallback_only on LibCST's tree."""
    if isinstance(suite, cst.SimpleStatementSuite):
        smalls = list(suite.body)
    elif all(isinstance(line, cst.SimpleStatementLine) for line in suite.body):
        smalls = [small for line in suite.body for small in line.body]  # type: ignore[attr-defined]
    else:
        return False
    return all(
        holds_only(cst.SimpleStatementSuite([small])) or isinstance(small, cst.Raise) or (none_assignment(small) and (names is None or all(
            target.target.value in names for target in small.targets)))  # type: ignore[attr-defined]
        for small in smalls
    )


def pass_statement(leading_lines: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=list(leading_lines))


def prune_small(body: Sequence[cst.BaseSmallStatement], doomed: Container[int]) -> list[cst.BaseSmallStatement]:
    """Drop small statements of one line (`a(); xm.mark_step()`), keeping semicolons right."""
    kept = [statement for statement in body if id(statement) not in doomed]
    if kept and len(kept) < len(body):
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return kept
