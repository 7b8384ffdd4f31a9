"""What a transform receives (`CallSite`) and returns (`Rewrite`), and the registry it joins
with `@transform("name")`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from xla2tpu.project.scope import Scope


@dataclass
class CallSite:
    """A matched call, as a transform sees it."""

    call: cst.Call  # the call with its children already rewritten
    original: cst.Call  # the call as parsed (identity keys positions and pending edits)
    args: dict[str, cst.BaseExpression]
    star_args: dict[str, list[cst.Arg]]
    statement: cst.BaseSmallStatement | None  # the enclosing small statement when the call is one
    module: cst.Module  # the module as parsed
    source: str  # its source text
    scope: Scope
    parents: list[cst.CSTNode]  # original ancestors, outermost first
    spell: Callable[[str], tuple[str, str | None]]
    made: object = None  # what the detector's decision on CPython's tree handed on (Found.made)

    def name(self, qualname: str, imports: set[str]) -> cst.BaseExpression:
        """An expression naming `qualname` here; records the import it needs in `imports`."""
        spelling, needed = self.spell(qualname)
        if needed:
            imports.add(needed)
        return cst.parse_expression(spelling)


# An edit of another node, applied when the rewriter leaves it: (original node, edit).
Edit = tuple[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode | object]]


@dataclass
class Rewrite:
    """What a transform wants: a new expression for the call, or statements for its statement."""

    expression: cst.BaseExpression | None = None
    statements: list[cst.BaseStatement] | None = None  # replaces the whole enclosing line
    # Edits of other nodes, applied when the rewriter leaves them: original node -> edit.
    # An edit of a statement that returns DELETE removes it as a rule's delete does: its
    # comments stay, an emptied block gets `pass` (or goes, see StatementPruner.leave_If).
    later: list[Edit] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)


DELETE = object()  # see Rewrite.later

TransformFn = Callable[[CallSite], Rewrite | None]
REGISTRY: dict[str, TransformFn] = {}


def transform(name: str) -> Callable[[TransformFn], TransformFn]:
    def register(function: TransformFn) -> TransformFn:
        REGISTRY[name] = function
        return function

    return register
