"""Deleting statements without losing the comments and blank lines around them.

LibCST keeps the comment lines above a statement in its `leading_lines`, so dropping a
statement naively drops the comments too. Here a deleted statement hands its leading
lines to the next statement in its block, and a block left empty gets `pass`.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

import libcst as cst


def _is_blank(line: cst.EmptyLine) -> bool:
    return line.comment is None


def _merge(carried: list[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Carried lines then the statement's own, with the blank run where they meet collapsed."""
    tail = 0
    while tail < len(carried) and _is_blank(carried[len(carried) - 1 - tail]):
        tail += 1
    head = 0
    while head < len(own) and _is_blank(own[head]):
        head += 1
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
    needs the space): a block does not start with a blank line.
    """
    out: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    removed = False
    for statement in body:
        if id(statement) in doomed:
            carried.extend(getattr(statement, "leading_lines", ()))
            removed = True
            continue
        if carried or (removed and not out):
            lines = _merge(carried, statement.leading_lines)
            if opens_block and not out:
                while lines and _is_blank(lines[0]):
                    lines = lines[1:]
            statement = statement.with_changes(leading_lines=lines)
            carried = []
        out.append(statement)
    if not any(line.comment is not None for line in carried):
        carried = []
    return out, carried


def pass_statement(leading_lines: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=list(leading_lines))


def prune_small(body: Sequence[cst.BaseSmallStatement], doomed: Container[int]) -> list[cst.BaseSmallStatement]:
    """Drop small statements of one line (`a(); xm.mark_step()`), keeping semicolons right."""
    kept = [statement for statement in body if id(statement) not in doomed]
    if kept and len(kept) < len(body):
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return kept
