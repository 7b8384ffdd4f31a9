"""Which `init_process_group` calls a migrated launch's worker, which made the "tpu" group
first, would clash with (detect/launch_site.py decides the launch with them; the project
model asks it of the modules a launcher's entry point starts)."""

from __future__ import annotations

import ast

from xla2tpu.trees.names import last_name

PROCESS_GROUP = "init_process_group"


def own_group(tree: ast.Module) -> bool:
    """Whether the module creates a group the worker's would clash with: an
    `init_process_group` call that is neither torch_xla's backend as a statement of its own
    (XLA603 guards those once the launch is migrated), nor NCCL's, nor inside an
    `if not ...is_initialized():` block."""
    guarded = {id(node) for check in ast.walk(tree) if isinstance(check, ast.If) and _checks_no_group(check.test)
               for statement in check.body for node in ast.walk(statement)}
    statements = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return any(isinstance(node, ast.Call) and last_name(node.func) == PROCESS_GROUP and id(node) not in guarded
               and not (xla_group(node) and id(node) in statements) and not cuda_group(node)
               for node in ast.walk(tree))


def xla_group(call: ast.Call) -> bool:
    """`init_process_group("xla")`, with torch_xla's `xla://` init method or none."""
    backend, method = _arguments(call)
    return (isinstance(backend, ast.Constant) and backend.value == "xla"
            and (method is None or isinstance(method, ast.Constant) and method.value == "xla://"))


def cuda_group(call: ast.Call) -> bool:
    """An NCCL group (`init_process_group("nccl")`): code of the program's GPU path, which
    never ran on a TPU host under torch_xla either (no NCCL there). Left as it is, beside the
    worker's "tpu" group: should a TPU run ever reach it, it raises (a group exists), as it
    failed before."""
    backend, _ = _arguments(call)
    return isinstance(backend, ast.Constant) and backend.value == "nccl"


def _arguments(call: ast.Call) -> tuple[ast.AST | None, ast.AST | None]:
    """The backend and init method an `init_process_group` call passes."""
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    backend = call.args[0] if call.args else keywords.get("backend")
    method = call.args[1] if len(call.args) > 1 else keywords.get("init_method")
    return backend, method


def _checks_no_group(test: ast.expr) -> bool:
    """`not dist.is_initialized()`, alone or one of the terms of an `and`."""
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.Not) and isinstance(term.operand, ast.Call)
               and last_name(term.operand.func) == "is_initialized" for term in terms)
