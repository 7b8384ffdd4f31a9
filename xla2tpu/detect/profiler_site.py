"""Where `xp.start_trace(log_dir)` … `xp.stop_trace()` can become a `torch.profiler.profile`
started and stopped, decided on CPython's tree before any edit (transforms/profiler.py
builds it on LibCST's), and what it writes. Nothing here imports LibCST.

The pair is rewritten only when it is unambiguous: exactly one start and one stop, both
whole statements of the same function body (or of the module), the start first. Both
halves name the profiler with the same fresh word, so the object the start's replacement
creates is the one the stop's replacement stops.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from xla2tpu.trees.order import children
from xla2tpu.detect.scopes import DEFINITIONS, FUNCTIONS

TEMPLATE = "profiler-trace"
START = "torch_xla.debug.profiler.start_trace"
STOP = "torch_xla.debug.profiler.stop_trace"
# `ProfilerActivity.TPU` exists only after device initialisation; PrivateUse1 names the
# same backend everywhere (reference PRF05).
START_LINES = (
    "{profiler} = torch.profiler.profile("
    "activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1], "
    "experimental_config=torch.tpu.profiler.TpuProfilerConfig(run_dir={log_dir}))",
    "{profiler}.start()",
)
STOP_TEXT = "{profiler}.stop()"

_OWN_SCOPES = (*DEFINITIONS, ast.Lambda)  # a comprehension is no body of its own here


def texts(qualname: str) -> tuple[str, ...]:
    """What the start (its lines) or the stop (its expression) writes."""
    return START_LINES if qualname == START else (STOP_TEXT,)


def pairable(qualname: str, parents: Sequence[ast.AST], resolve: Callable[[ast.expr], str | None],
             alone: Callable[[ast.AST, ast.AST], bool]) -> bool:
    """Whether the start or stop call of `qualname` (its ancestors `parents`, the module
    first, the call last) can be rewritten: the calls of its function body (or of the
    module), resolved as `resolve` does in its scope, are one start then one stop, each an
    expression statement `alone` on its line in its block (what a statement template
    replaces), the start naming its log folder. Both halves or neither: a stop made without
    its start would stop a profiler never created."""
    root = next((p for p in reversed(parents) if isinstance(p, _OWN_SCOPES)), parents[0])
    if not isinstance(root, (*FUNCTIONS, ast.Module)):
        return False
    return _trace_calls(root, resolve, alone) == [(START, True), (STOP, True)]


def _trace_calls(root: ast.AST, resolve: Callable[[ast.expr], str | None],
                 alone: Callable[[ast.AST, ast.AST], bool]) -> list[tuple[str, bool]]:
    """The start and stop calls under `root` in source order, not inside a nested scope,
    each with whether it can be rewritten where it is."""
    found: list[tuple[str, bool]] = []
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(root, ())]
    while stack:
        node, above = stack.pop()
        if node is not root and isinstance(node, _OWN_SCOPES):
            continue
        if isinstance(node, ast.Call):
            qualname = resolve(node.func)
            if qualname in (START, STOP):
                statement = len(above) >= 2 and isinstance(above[-1], ast.Expr) and alone(above[-1], above[-2])
                named = qualname == STOP or bool(node.args) or any(k.arg == "log_dir" for k in node.keywords)
                found.append((qualname, statement and named))
        stack.extend((child, (*above[-1:], node)) for child in reversed(list(children(node))))
    return found
