"""`xp.start_trace(log_dir)` … `xp.stop_trace()` → a `torch.profiler.profile` started and stopped.

The pair is rewritten only when it is unambiguous: exactly one start and one stop, both
whole statements of the same function body (or of the module), the start first. Both
halves name the profiler with the same fresh word (derived from the module's source), so
the object `start_trace`'s replacement creates is the one `stop_trace`'s replacement
stops. Anything else is left to the rule's manual message.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.resolve import resolve
from xla2tpu.scope import Scope
from xla2tpu.transforms import CallSite, Rewrite, transform
from xla2tpu.transforms.forms import fresh_name, render_expression, render_statements

_START = "torch_xla.debug.profiler.start_trace"
_STOP = "torch_xla.debug.profiler.stop_trace"
# `ProfilerActivity.TPU` exists only after device initialisation; PrivateUse1 names the
# same backend everywhere (reference PRF05).
_START_LINES = [
    "{profiler} = torch.profiler.profile("
    "activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1], "
    "experimental_config=torch.tpu.profiler.TpuProfilerConfig(run_dir={log_dir}))",
    "{profiler}.start()",
]


class _TraceCalls(cst.CSTVisitor):
    """start/stop calls of one function body in source order: (qualname, is a statement)."""

    def __init__(self, root: cst.CSTNode, scope: Scope) -> None:
        super().__init__()
        self.root = root
        self.scope = scope
        self.found: list[tuple[str, bool]] = []
        self._statements: set[int] = set()

    def _nested(self, node: cst.CSTNode) -> bool:
        return node is not self.root  # a nested def/class/lambda has its own scope

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not self._nested(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return not self._nested(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Expr(self, node: cst.Expr) -> None:
        self._statements.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        qualname = resolve(self.scope, node.func)
        if qualname in (_START, _STOP):
            self.found.append((qualname, id(node) in self._statements))


def _paired(site: CallSite) -> bool:
    root: cst.CSTNode = next(
        (p for p in reversed(site.parents) if isinstance(p, (cst.FunctionDef, cst.Lambda, cst.ClassDef))),
        site.module,
    )
    if not isinstance(root, (cst.FunctionDef, cst.Module)):
        return False
    calls = _TraceCalls(root, site.scope)
    root.visit(calls)
    return calls.found == [(_START, True), (_STOP, True)]


@transform("profiler-trace")
def profiler_trace(site: CallSite) -> Rewrite | None:
    if not isinstance(site.statement, cst.Expr) or not _paired(site):
        return None
    profiler = {"profiler": cst.Name(fresh_name(site, "prof"))}
    if resolve(site.scope, site.original.func) == _START:
        if "log_dir" not in site.args:
            return None
        return render_statements(site, _START_LINES, profiler)
    imports: set[str] = set()
    return Rewrite(expression=render_expression(site, "{profiler}.stop()", imports, profiler), imports=imports)
