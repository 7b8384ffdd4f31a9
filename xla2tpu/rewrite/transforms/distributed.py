"""torch_xla launch and data-exchange helpers as torch.distributed code (DST02, DST15, DST17).

Which calls can be rewritten, and the templates, are decided on CPython's tree
(detect/collective_sites.py): this module builds what the detector allowed.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import collective_sites
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import assigned_target, fresh_name, render_statements, tuple_items


@transform("mesh-reduce")
def mesh_reduce(site: CallSite) -> Rewrite | None:
    """`x = xm.mesh_reduce(tag, data, fn)`: gather every rank's CPU copy of `data`, then `fn`."""
    target = assigned_target(site)
    if target is None:
        return None  # not the site the detector decided
    base = f"{target.value}_per_rank" if isinstance(target, cst.Name) else "per_rank"
    gathered = cst.Name(fresh_name(site, base))
    return render_statements(site, list(collective_sites.MESH_REDUCE), {"gathered": gathered, "target": target})


@transform("rendezvous-payload")
def rendezvous_payload(site: CallSite) -> Rewrite | None:
    """`x = xm.rendezvous(tag, payload)`: every rank's payload, in rank order (a list of one
    without a process group, as a single replica's rendezvous returned)."""
    target = assigned_target(site)
    if target is None:
        return None  # not the site the detector decided
    return render_statements(site, list(collective_sites.RENDEZVOUS), {"target": target})


@transform("spawn-in-process")
def spawn_in_process(site: CallSite) -> Rewrite | None:
    """`xmp.spawn(fn, args=(a, b), nprocs=1)` → `fn(0, a, b)`: the one worker, in this process."""
    fn = site.args["fn"]
    args = site.args.get("args")
    items = [] if args is None else tuple_items(args)
    spread = [cst.Arg(item) for item in items] if items is not None else [cst.Arg(args, star="*")]
    return Rewrite(expression=cst.Call(func=fn, args=[cst.Arg(cst.Integer("0")), *spread]))
