"""`xm.add_step_closure(fn, args=(a, b))` → `fn(a, b)`: the closure runs where it was queued."""

from __future__ import annotations

import libcst as cst

from xla2tpu.catalogue import templates
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import tuple_items


@transform("call-closure")
def call_closure(site: CallSite) -> Rewrite | None:
    """A tuple or list literal of arguments is spread as written; any other value with `*`."""
    closure = site.args["closure"]
    args = site.args.get("args")
    if args is None:
        arguments: list[cst.Arg] = []
    else:
        items = tuple_items(args)
        arguments = [cst.Arg(item) for item in items] if items is not None else [cst.Arg(args, star="*")]
    call = cst.Call(func=closure, args=arguments)
    return Rewrite(expression=call.with_changes(func=templates.parenthesise_for(call, closure)))
