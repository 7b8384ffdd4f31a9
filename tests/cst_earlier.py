"""The `after:` and `then:` conditions on LibCST's tree: the reference that
xla2tpu/detect/ast_earlier.py (what the engine runs) must agree with (tests/test_detect_ast_parts.py).


`xm.set_rng_state(seed)` became `torch.manual_seed(seed)`, which is a duplicate right
after an identical `torch.manual_seed(seed)`, and which clobbers the CPU generator right
after `torch.set_rng_state(state)` restored it from a checkpoint. Whether such a call
comes earlier is a fact about the function, not about the call's own spelling. Likewise
a `torch.manual_seed(seed)` in the branch of an `if` right before the user's own
`torch.manual_seed(seed)` after it: `then:` is the call of the statement that runs next.

A pattern is a qualified callee and its arguments: `torch.manual_seed({seed})`, where
`{p}` must be the same code as the site's own argument `p` and `{_}` is any argument.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import libcst as cst

from xla2tpu.detect.ast_earlier import any_call_matches



class _Before(cst.CSTVisitor):
    """The calls met, in source order, before the site node (not inside nested functions)."""

    def __init__(self, site: cst.CSTNode) -> None:
        super().__init__()
        self.site = site
        self.calls: list[cst.Call] = []
        self.done = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.site:
            self.done = True
        if self.done:
            return False
        if isinstance(node, cst.Call):
            self.calls.append(node)
        return not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))


def calls_before(parents: Sequence[cst.CSTNode], site: cst.CSTNode) -> list[cst.Call]:
    """The calls of the innermost function (else the module) in `parents` that precede `site`."""
    scope = next((p for p in reversed(parents) if isinstance(p, cst.FunctionDef)), parents[0])
    visitor = _Before(site)
    body = scope.body if isinstance(scope, cst.FunctionDef) else scope
    body.visit(visitor)
    return visitor.calls


def call_next(parents: Sequence[cst.CSTNode]) -> list[cst.Call]:
    """The call of the statement that runs right after the one holding the site (`parents`:
    its ancestors, outermost first), leaving `if`/`else`/`with` blocks at their end; none
    when that statement is not a call, or the site ends a loop, a function or the module."""
    lines = [i for i, node in enumerate(parents) if isinstance(node, cst.SimpleStatementLine)]
    index = lines[-1] if lines else 0
    while index > 0:
        statement, block = parents[index], parents[index - 1]
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return []
        body = list(block.body)
        position = next(i for i, s in enumerate(body) if s is statement)
        if position + 1 < len(body):
            following = body[position + 1]
            small = following.body[0] if isinstance(following, cst.SimpleStatementLine) and len(following.body) == 1 else None
            return [small.value] if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else []
        index -= 2  # the block ended: on to the statement that owns it, when it goes on after it
        while index > 0 and isinstance(parents[index], (cst.If, cst.Else)) and isinstance(parents[index - 1], (cst.If, cst.Else)):
            index -= 1  # an `else:` / `elif` belongs to the `if` chain's first `if`
        if index <= 0 or not isinstance(parents[index], (cst.If, cst.With)):
            return []
    return []


def matches(
    pattern: str,
    calls: Sequence[cst.Call],
    resolve: Callable[[cst.BaseExpression], str | None],
    args: Mapping[str, cst.BaseExpression] | None,
) -> bool:
    """Whether one of `calls` has the pattern's callee and arguments (see the module docstring)."""
    calls_ = ((call.func, call.args) for call in calls)
    return any_call_matches(pattern, calls_, resolve, lambda slot, arg: _argument_matches(slot, arg, args))


def _argument_matches(slot: str, arg: cst.Arg, args: Mapping[str, cst.BaseExpression] | None) -> bool:
    if arg.keyword is not None or arg.star:
        return False
    if slot == "_":
        return True
    own = args.get(slot) if args is not None else None
    return own is not None and own.deep_equals(arg.value)
