"""torch_xla collectives as torch.distributed calls (COL02, COL03, COL05, COL08).

`xm.all_reduce` / `xm.reduce_scatter` take the reduction as a string (`xm.REDUCE_SUM` is
"sum"); the functional collectives spell some of them differently and `dist.all_reduce`
takes a `ReduceOp`. The reduction is read from the call as written, before any other
rule renamed the constant.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.conditions import literal
from xla2tpu.resolve import resolve
from xla2tpu.transforms import CallSite, Rewrite, transform
from xla2tpu.transforms.forms import fresh_names, render_expression, render_statements, statement_form

# torch_xla reduce string -> (functional-collective string, torch.distributed.ReduceOp member)
_OPS = {
    "sum": ("sum", "SUM"),
    "mul": ("product", "PRODUCT"),
    "min": ("min", "MIN"),
    "max": ("max", "MAX"),
    "and": ("band", "BAND"),
    "or": ("bor", "BOR"),
}
_CONSTANT = "torch_xla.core.xla_model.REDUCE_"


def _reduce_op(site: CallSite) -> tuple[str, str] | None:
    """The reduction of the call (its first argument, `reduce_type`) as written originally."""
    for position, arg in enumerate(site.original.args):
        if (arg.keyword is None and position == 0) or (arg.keyword is not None and arg.keyword.value == "reduce_type"):
            value = literal(arg.value)
            if isinstance(value, str):
                return _OPS.get(value)
            qualname = resolve(site.scope, arg.value) or ""
            if qualname.startswith(_CONSTANT):
                return _OPS.get(qualname[len(_CONSTANT):].lower())
            return None
    return None


def _scaled(site: CallSite, template: str) -> str:
    """`template` times the call's `scale`, unless it is absent or the literal 1."""
    scale = site.args.get("scale")
    if scale is None or literal(scale) in (1, 1.0):
        return template
    return f"{template} * {{scale}}"


@transform("all-reduce")
def all_reduce(site: CallSite) -> Rewrite | None:
    """Tensor form → a functional all-reduce (new tensor); list-literal statement → in-place loop."""
    op = _reduce_op(site)
    inputs = site.args.get("inputs")
    if op is None or inputs is None:
        return None
    funcol, member = op
    if isinstance(inputs, cst.List):
        if not isinstance(site.statement, cst.Expr):
            return None
        # torch_xla left the list untouched (and unscaled) with a single replica.
        body = f"        torch.distributed.all_reduce({{tensor}}, op=torch.distributed.ReduceOp.{member})\n"
        if "scale" in site.args and literal(site.args["scale"]) not in (1, 1.0):
            body += "        {tensor}.mul_({scale})\n"
        lines, names = fresh_names(site, ["if torch.distributed.is_initialized():\n    for {tensor} in {inputs}:\n" + body], ("tensor",))
        return render_statements(site, lines, names)
    if isinstance(site.statement, cst.Expr):
        return None  # the tensor form's result was dropped, or `inputs` names a list: unknowable
    imports: set[str] = set()
    template = _scaled(
        site, f'torch.distributed._functional_collectives.all_reduce({{inputs}}, "{funcol}", torch.distributed.group.WORLD)'
    )
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)


@transform("reduce-scatter")
def reduce_scatter(site: CallSite) -> Rewrite | None:
    """`xm.reduce_scatter(op, t, scale, dim, n)` → a functional reduce-scatter over the world."""
    op = _reduce_op(site)
    if op is None or isinstance(site.args.get("input"), cst.List) or "scatter_dim" not in site.args:
        return None
    imports: set[str] = set()
    template = _scaled(
        site,
        "torch.distributed._functional_collectives.reduce_scatter_tensor("
        f'{{input}}, "{op[0]}", {{scatter_dim}}, torch.distributed.group.WORLD)',
    )
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)


statement_form(
    "collective-broadcast",
    [
        "if torch.distributed.is_initialized():\n"
        "    for {tensor} in {tensors}:\n"
        "        torch.distributed.broadcast({tensor}, src={root_ordinal?0})\n"
    ],
    fresh=("tensor",),
)
