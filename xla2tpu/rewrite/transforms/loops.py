"""torch_xla's structured loops as the Python loops they mean in eager mode (EXP04).

`scan` and `scan_layers` traced one iteration so that XLA compiled it once; under eager
TorchTPU each op runs as it comes, so the loop they stand for is the program:

    carry, ys = scan(fn, init, xs)          carry = init   (a copy of a named init)
                                            parts = []
                                      →     for i in range(<leading size of xs>):
                                                carry, y = fn(carry, <xs[i] per leaf>)
                                                parts.append(<a copy of y>)
                                            ys = <parts stacked per leaf>

    out = scan_layers(layers, x)      →     out = x
                                            for layer in layers:
                                                out = layer(out)
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import call_shapes
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import assigned_target, fresh_name, render_statements, tuple_items


@transform("scan-loop")
def scan_loop(site: CallSite) -> Rewrite | None:
    """`carry, ys = scan(fn, init, xs)` only: both results named, so each gets its loop role."""
    target = assigned_target(site)
    names = tuple_items(target) if isinstance(target, (cst.Tuple, cst.List)) else None
    if names is None or len(names) != 2:
        return None  # not the site the detector decided (call_shapes.makeable)
    carry, ys = names
    fresh = {base: cst.Name(fresh_name(site, base)) for base in ("parts", "index", "y")}
    named = isinstance(site.args.get("init"), (cst.Name, cst.Attribute, cst.Subscript))
    lines = call_shapes.SCAN_NAMED_INIT if named else call_shapes.SCAN
    return render_statements(site, list(lines), {"carry": carry, "ys": ys, **fresh})


@transform("scan-layers-loop")
def scan_layers_loop(site: CallSite) -> Rewrite | None:
    """`out = scan_layers(layers, x)`: each layer applied in turn. The rule binds scan's
    parameter names, so `layers` arrives as `fn` and the input as `init`."""
    target = assigned_target(site)
    if target is None:
        return None  # not the site the detector decided (call_shapes.makeable)
    layer = cst.Name(fresh_name(site, "layer"))
    return render_statements(site, list(call_shapes.SCAN_LAYERS), {"out": target, "layer": layer})
