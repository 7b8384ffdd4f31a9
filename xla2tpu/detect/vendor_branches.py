"""Blocks that run only on another vendor's XLA device, told by the `if` that guards them.

A multi-backend library (Transformers, Accelerate) keeps its AWS Neuron code in branches
such as `if is_torch_neuroncore_available(): dist.init_process_group(backend="xla")`:
torch_xla drives Neuron cores there, not a TPU, and TorchTPU's "tpu" backend does not
exist on them. A file of another vendor is left alone as a whole (XLA100, the `hardware`
fact); inside a file that runs on several, such a branch is left alone the same way: no
site in its body is reported or rewritten, nor any import there.
"""

from __future__ import annotations

import ast
import re

from xla2tpu.trees.names import last_name

# The availability probes of AWS Neuron in Transformers, Accelerate and Optimum
# (`is_neuron_available`, `is_torch_neuronx_available`, `is_torch_neuroncore_available`, ...).
_PROBE = re.compile(r"is_\w*neuron\w*_available")


def other_vendor_branch(node: ast.AST) -> bool:
    """Whether `node` is an `if` whose body runs only on another vendor's device: its test
    calls a probe of one, alone or as a term of an `and`."""
    return isinstance(node, ast.If) and _probes(node.test)


def _probes(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_probes(value) for value in test.values)
    if not isinstance(test, ast.Call):
        return False
    return _PROBE.fullmatch(last_name(test.func) or "") is not None


def skipped_lines(tree: ast.Module) -> list[tuple[int, int]]:
    """The line ranges of the bodies such `if`s guard, anywhere in `tree`."""
    return [(node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
            for node in ast.walk(tree) if other_vendor_branch(node)]
