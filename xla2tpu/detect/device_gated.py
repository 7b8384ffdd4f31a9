"""Tests that torch_xla's runtime skips on a TPU, told by their skip decorators.

torch_xla's own tests (and projects that copied them) gate a test on the device type
its runtime was started with: `@unittest.skipIf(xr.device_type() != "CPU", ...)` runs the
test only on the CPU-backed XLA device, and its body asserts what that device prints. A
TPU device written into such a body targets hardware the test never runs on (a seed-76
review: three `torch_xla.device()` calls of CPU-only tests became `torch.device("tpu")`).
The fixes there are withheld: the test is ported by hand, to the CPU or not at all.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from xla2tpu.trees.names import dotted_name, last_name

# What torch_xla's runtime answers for its device type, in the calls tests gate on.
_DEVICE_TYPE = frozenset({"torch_xla.runtime.device_type", "torch_xla.core.xla_model.xla_device_hw"})
_TPU = "TPU"


def skipped_on_tpu(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                   resolve: Callable[[ast.AST], str | None]) -> str:
    """The decorator (as written, shortened) that skips `definition` whenever torch_xla's
    device is a TPU: `skipIf(<cond>)` whose condition holds there, `skipUnless(<cond>)`
    whose condition does not, with `<cond>` a comparison of the device type with string
    literals; "" when there is none."""
    for decorator in definition.decorator_list:
        if not (isinstance(decorator, ast.Call) and decorator.args):
            continue
        kind = last_name(decorator.func)
        if kind not in ("skipIf", "skipUnless", "skipif"):
            continue
        holds = _on_tpu(decorator.args[0], resolve)
        if holds is not None and holds == (kind != "skipUnless"):
            return f"@{dotted_name(decorator.func)}({ast.unparse(decorator.args[0])}, ...)"
    return ""


def _on_tpu(test: ast.expr, resolve: Callable[[ast.AST], str | None]) -> bool | None:
    """The value of `device_type() == "CPU"` (`!=`, `in`, `not in` a tuple of literals) when
    the device type is "TPU"; None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Call)
            and resolve(test.left.func) in _DEVICE_TYPE):
        return None
    op, right = test.ops[0], test.comparators[0]
    elements = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    values = [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(values) != len(elements):
        return None
    if isinstance(op, (ast.Eq, ast.NotEq)) and len(values) == 1 and right is elements[0]:
        return (values[0] == _TPU) == isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)) and right is not elements[0]:
        return (_TPU in values) == isinstance(op, ast.In)
    return None
