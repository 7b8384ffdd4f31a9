"""torch_xla's collectives and data-exchange helpers as torch.distributed code: which calls
can be rewritten, decided on CPython's tree before any edit, and what each rewrite writes
(transforms/collectives.py, distributed.py and forms.py build them on LibCST's). Nothing
here imports LibCST.

Every replacement keeps torch_xla's single-process behaviour: without an initialised
process group there is nothing to wait for or exchange, and this process is the master.
`xm.all_reduce` / `xm.reduce_scatter` take the reduction as a string (`xm.REDUCE_SUM` is
"sum"); the functional collectives spell some of them differently and `dist.all_reduce`
takes a `ReduceOp`. The reduction is read from the call as written, before any other rule
renamed the constant.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xla2tpu.detect.conditions import literal
from xla2tpu.trees.order import arguments

# xm.optimizer_step = xm.reduce_gradients (every gradient of the optimizer's parameters
# summed across the processes and scaled by 1/world size), then step(): spelled out for a
# program whose model is not wrapped in DDP/FSDP, so its checkpoints keep their keys.
_AVERAGE = (
    "for {group} in {optimizer}.param_groups:\n"
    "    for {param} in {group}[\"params\"]:\n"
    "        if {param}.grad is not None and torch.distributed.is_initialized():\n"
    "            torch.distributed.all_reduce({param}.grad)\n"
    "            {param}.grad /= torch.distributed.get_world_size()\n"
)
# A call that is a whole expression statement becomes these statements (forms.statement_form);
# the placeholders named second are loop variables the replacement introduces.
STATEMENT_FORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "collective-broadcast": ((
        "if torch.distributed.is_initialized():\n"
        "    for {tensor} in {tensors}:\n"
        "        torch.distributed.broadcast({tensor}, src={root_ordinal?0})\n",
    ), ("tensor",)),
    "broadcast-master-param": ((
        "if torch.distributed.is_initialized():\n"
        "    for {tensor} in itertools.chain({model}.parameters(), {model}.buffers()):\n"
        "        torch.distributed.broadcast({tensor}.data, src=0)\n",
    ), ("tensor",)),
    "average-gradients": ((_AVERAGE,), ("group", "param")),
    "average-then-step": ((_AVERAGE, "{optimizer}.step()\n"), ("group", "param")),
    "average-then-step-args": ((_AVERAGE, "{optimizer}.step(**{optimizer_args})\n"), ("group", "param")),
}

# `x = xm.mesh_reduce(tag, data, fn)`: gather every rank's CPU copy of `data` (mesh_reduce
# pickled one, as xm.save wrote one), then `fn`; `{gathered}`: a fresh name.
_CPU_COPY = "torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.cpu(), {data})"
MESH_REDUCE = (
    f"{{gathered}} = [{_CPU_COPY}]\n",
    "if torch.distributed.is_initialized():\n"
    "    {gathered} *= torch.distributed.get_world_size()\n"
    "    torch.distributed.all_gather_object({gathered}, {gathered}[0])\n",
    "{target} = {reduce_fn}({gathered})\n",
)
# `x = xm.rendezvous(tag, payload)`: every rank's payload in rank order (a list of one without
# a process group, as a single replica's rendezvous returned).
RENDEZVOUS = (
    "{target} = [{payload}]\n",
    "if torch.distributed.is_initialized():\n"
    "    {target} = [None] * torch.distributed.get_world_size()\n"
    "    torch.distributed.all_gather_object({target}, {payload})\n",
)

# torch_xla reduce string -> (functional-collective string, torch.distributed.ReduceOp member)
OPS = {
    "sum": ("sum", "SUM"),
    "mul": ("product", "PRODUCT"),
    "min": ("min", "MIN"),
    "max": ("max", "MAX"),
    "and": ("band", "BAND"),
    "or": ("bor", "BOR"),
}
_CONSTANT = "torch_xla.core.xla_model.REDUCE_"


def reduce_op(node: object, qualname: str | None) -> tuple[str, str] | None:
    """The reduction a call's `reduce_type` argument `node` (CPython's or LibCST's), which
    resolves to `qualname`, names: a string literal, or torch_xla's constant."""
    value = literal(node)  # type: ignore[arg-type]
    if isinstance(value, str):
        return OPS.get(value)
    if (qualname or "").startswith(_CONSTANT):
        return OPS.get(qualname[len(_CONSTANT):].lower())  # type: ignore[index]
    return None


def scaled(scale: object | None, template: str) -> str:
    """`template` times the call's `scale`, unless it is absent or the literal 1."""
    if scale is None or literal(scale) in (1, 1.0):  # type: ignore[arg-type]
        return template
    return f"{template} * {{scale}}"


def all_reduce_loop(member: str, scale: object | None) -> str:
    """The in-place loop over a list literal of tensors (torch_xla left the list untouched,
    and unscaled, with a single replica)."""
    body = f"        torch.distributed.all_reduce({{tensor}}, op=torch.distributed.ReduceOp.{member})\n"
    if scale is not None and literal(scale) not in (1, 1.0):  # type: ignore[arg-type]
        body += "        {tensor}.mul_({scale})\n"
    return "if torch.distributed.is_initialized():\n    for {tensor} in {inputs}:\n" + body


def all_reduce_tensor(funcol: str, scale: object | None) -> str:
    """The functional all-reduce of one tensor (a new tensor)."""
    return scaled(scale, f'torch.distributed._functional_collectives.all_reduce({{inputs}}, "{funcol}", torch.distributed.group.WORLD)')


def reduce_scatter(funcol: str, scale: object | None) -> str:
    return scaled(scale, "torch.distributed._functional_collectives.reduce_scatter_tensor("
                         f'{{input}}, "{funcol}", {{scatter_dim}}, torch.distributed.group.WORLD)')


@dataclass(frozen=True)
class Made:
    """What a rewrite the ast decided writes: its templates, and whether they replace the
    call's line (else the call)."""

    texts: tuple[str, ...]
    statement: bool
    kept: tuple[str, ...] = ()  # parameters it keeps as written besides those its templates name


@dataclass(frozen=True)
class Call:
    """A call to a collective, as the detector sees it: the call, its bound arguments, how a
    name resolves where it stands, and whether it is a line of its own."""

    node: ast.Call
    args: Mapping[str, ast.AST]
    resolve: Callable[[ast.AST], str | None]
    expression_statement: bool  # a whole line of its own, its value unused
    assigned: bool  # the whole value of `target = <call>`, a line of its own


def reduction(call: ast.Call) -> ast.AST | None:
    """The argument that names a collective's reduction: the first in source order when it
    is not a keyword, else the `reduce_type` keyword (collectives._reduce_op on LibCST's)."""
    for position, argument in enumerate(arguments(call)):
        if isinstance(argument, ast.keyword) and argument.arg is None:  # `**options`
            if position == 0:
                return argument.value
        elif isinstance(argument, ast.keyword):
            if argument.arg == "reduce_type":
                return argument.value
        elif position == 0:
            return argument.value if isinstance(argument, ast.Starred) else argument
    return None


def made(template: str, call: Call) -> Made | None:
    """What the rewrite named `template` writes at `call`; None: it cannot be made there."""
    args = call.args
    if template in STATEMENT_FORMS:
        return Made(STATEMENT_FORMS[template][0], True) if call.expression_statement else None
    if template == "mesh-reduce":
        return Made(MESH_REDUCE, True) if call.assigned else None
    if template == "rendezvous-payload":
        return Made(RENDEZVOUS, True) if call.assigned and "payload" in args else None
    if template == "spawn-in-process":  # `fn(0, *args)`: the one worker, in this process
        return Made((), False, ("fn", "args")) if "fn" in args else None
    if template in ("all-reduce", "reduce-scatter"):
        named = reduction(call.node)
        op = None if named is None else reduce_op(named, call.resolve(named))
        if op is None:
            return None
        if template == "reduce-scatter":
            if isinstance(args.get("input"), ast.List) or "scatter_dim" not in args:
                return None
            return Made((reduce_scatter(op[0], args.get("scale")),), False)
        inputs = args.get("inputs")
        if isinstance(inputs, ast.List):
            return Made((all_reduce_loop(op[1], args.get("scale")),), True) if call.expression_statement else None
        if inputs is None or call.expression_statement:
            return None  # the tensor form's result was dropped, or `inputs` names a list: unknowable
        return Made((all_reduce_tensor(op[0], args.get("scale")),), False)
    raise KeyError(template)


TEMPLATES = frozenset({*STATEMENT_FORMS, "mesh-reduce", "rendezvous-payload", "spawn-in-process", "all-reduce",
                       "reduce-scatter"})
