"""Whether an expression is known to be a tensor, from what the file itself shows.

`x.is_tpu` is a tensor property, but `is_tpu` is also a common name for a settings flag
(`args.is_tpu`, a dataclass property): only a known tensor may have it rewritten to
`x.device.type == "tpu"`. Known means: a parameter (`.weight`, `.bias`, `.grad`,
`.data`), a torch tensor factory or a tensor method (`.to(...)`, `.detach()`), or a name
that every assignment in the file gives such a value (and nothing else binds). Names are
judged per file, not per scope: one other binding of the name (a parameter, a loop
variable, another assignment) is enough to leave it unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from xla2tpu.trees.order import walk

if TYPE_CHECKING:
    import libcst as cst
# Attributes that are tensors on any module or tensor (parameters, gradients).
_TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "grad", "data"})
# Methods that return a tensor when called on one (`.is_tpu` after them is the tensor's).
_TENSOR_METHODS = frozenset({"to", "tpu", "cuda", "cpu", "detach", "clone", "contiguous", "float", "bfloat16", "half"})
# torch functions that make a new tensor.
_FACTORIES = frozenset(
    {
        "tensor", "as_tensor", "from_numpy", "ones", "zeros", "empty", "full", "rand", "randn",
        "randint", "arange", "linspace", "eye", "ones_like", "zeros_like", "empty_like",
        "full_like", "rand_like", "randn_like", "stack", "cat",
    }
)


def known_tensor(node: cst.BaseExpression, resolve: Callable[[cst.BaseExpression], str | None], names: frozenset[str]) -> bool:
    """`node` (LibCST) is a tensor by the evidence above; `names` from `tensor_names`."""
    import libcst as cst  # LibCST's node: LibCST is loaded

    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, cst.Attribute):
        return node.attr.value in _TENSOR_ATTRIBUTES
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _TENSOR_METHODS:
            return True
        return _factory(resolve(node.func))
    return False


def known_tensor_ast(node: ast.expr, resolve: Callable[[ast.expr], str | None], names: frozenset[str]) -> bool:
    """`known_tensor` for a node of CPython's tree."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in _TENSOR_ATTRIBUTES
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _TENSOR_METHODS:
            return True
        return _factory(resolve(node.func))
    return False


def _factory(qualname: str | None) -> bool:
    """`torch.zeros` and the like: a torch function that makes a new tensor."""
    qualname = qualname or ""
    return qualname.startswith("torch.") and qualname.count(".") == 1 and qualname[6:] in _FACTORIES


def tensor_names(tree: ast.Module | None) -> frozenset[str]:
    """Names every binding of which in the file (its CPython tree, which the engine already
    has; None when CPython rejects the file) is a tensor value (see the module docstring)."""
    if tree is None:
        return frozenset()
    nodes = list(walk(tree))
    aliases = {"torch"} | {
        alias.asname
        for node in nodes
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "torch" and alias.asname
    }
    tensor: set[str] = set()
    other: set[str] = set()
    plain: set[int] = set()  # `name = value` targets, judged by their value
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    plain.add(id(target))
                    (tensor if _ast_tensor(node.value, aliases) else other).add(target.id)
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in plain:
            other.add(node.id)  # loop, `with`, walrus, unpacking targets: value unknown
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    return frozenset(tensor - other)


def _ast_tensor(node: ast.expr, aliases: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _TENSOR_ATTRIBUTES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if func.attr in _TENSOR_METHODS:
            return True
        return isinstance(func.value, ast.Name) and func.value.id in aliases and func.attr in _FACTORIES
    return False
