"""torch_xla collectives as torch.distributed calls (COL02, COL03, COL05, COL08).

Which calls can be rewritten, the reduction they name and the templates are decided on
CPython's tree (detect/collective_sites.py): this module builds what the detector allowed.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import collective_sites
from xla2tpu.project.resolve import resolve
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import fresh_names, render_expression, render_statements


def _reduce_op(site: CallSite) -> tuple[str, str] | None:
    """The reduction of the call (its first argument, `reduce_type`) as written originally."""
    for position, arg in enumerate(site.original.args):
        if (arg.keyword is None and position == 0) or (arg.keyword is not None and arg.keyword.value == "reduce_type"):
            return collective_sites.reduce_op(arg.value, resolve(site.scope, arg.value))
    return None


@transform("all-reduce")
def all_reduce(site: CallSite) -> Rewrite | None:
    """Tensor form → a functional all-reduce (new tensor); list-literal statement → in-place loop."""
    op = _reduce_op(site)
    if op is None:
        return None  # not the site the detector decided
    funcol, member = op
    if isinstance(site.args["inputs"], cst.List):
        lines, names = fresh_names(site, [collective_sites.all_reduce_loop(member, site.args.get("scale"))], ("tensor",))
        return render_statements(site, lines, names)
    imports: set[str] = set()
    template = collective_sites.all_reduce_tensor(funcol, site.args.get("scale"))
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)


@transform("reduce-scatter")
def reduce_scatter(site: CallSite) -> Rewrite | None:
    """`xm.reduce_scatter(op, t, scale, dim, n)` → a functional reduce-scatter over the world."""
    op = _reduce_op(site)
    if op is None:
        return None  # not the site the detector decided
    imports: set[str] = set()
    template = collective_sites.reduce_scatter(op[0], site.args.get("scale"))
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)
