"""torch_xla launch and data-exchange helpers as torch.distributed code (DST02, DST15, DST17).

Every replacement keeps torch_xla's single-process behaviour: without an initialised
process group there is nothing to wait for or exchange, and this process is the master.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.transforms import CallSite, Rewrite, transform
from xla2tpu.transforms.forms import assigned_target, fresh_name, render_statements, statement_form, tuple_items

statement_form(
    "broadcast-master-param",
    [
        "if torch.distributed.is_initialized():\n"
        "    for {tensor} in itertools.chain({model}.parameters(), {model}.buffers()):\n"
        "        torch.distributed.broadcast({tensor}.data, src=0)\n"
    ],
    fresh=("tensor",),
)

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
statement_form("average-then-step", [_AVERAGE, "{optimizer}.step()\n"], fresh=("group", "param"))
statement_form("average-then-step-args", [_AVERAGE, "{optimizer}.step(**{optimizer_args})\n"], fresh=("group", "param"))

# mesh_reduce pickled a CPU copy of the data, as xm.save wrote one.
_CPU_COPY = "torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.cpu(), {data})"


@transform("mesh-reduce")
def mesh_reduce(site: CallSite) -> Rewrite | None:
    """`x = xm.mesh_reduce(tag, data, fn)`: gather every rank's CPU copy of `data`, then `fn`."""
    target = assigned_target(site)
    if target is None:
        return None
    base = f"{target.value}_per_rank" if isinstance(target, cst.Name) else "per_rank"
    gathered = cst.Name(fresh_name(site, base))
    return render_statements(
        site,
        [
            f"{{gathered}} = [{_CPU_COPY}]\n",
            "if torch.distributed.is_initialized():\n"
            "    {gathered} *= torch.distributed.get_world_size()\n"
            "    torch.distributed.all_gather_object({gathered}, {gathered}[0])\n",
            "{target} = {reduce_fn}({gathered})\n",
        ],
        {"gathered": gathered, "target": target},
    )


@transform("rendezvous-payload")
def rendezvous_payload(site: CallSite) -> Rewrite | None:
    """`x = xm.rendezvous(tag, payload)`: every rank's payload, in rank order (a list of one
    without a process group, as a single replica's rendezvous returned)."""
    target = assigned_target(site)
    if target is None or "payload" not in site.args:
        return None
    return render_statements(
        site,
        [
            "{target} = [{payload}]\n",
            "if torch.distributed.is_initialized():\n"
            "    {target} = [None] * torch.distributed.get_world_size()\n"
            "    torch.distributed.all_gather_object({target}, {payload})\n",
        ],
        {"target": target},
    )


@transform("spawn-in-process")
def spawn_in_process(site: CallSite) -> Rewrite | None:
    """`xmp.spawn(fn, args=(a, b), nprocs=1)` → `fn(0, a, b)`: the one worker, in this process."""
    fn = site.args.get("fn")
    if fn is None:
        return None
    args = site.args.get("args")
    items = [] if args is None else tuple_items(args)
    spread = [cst.Arg(item) for item in items] if items is not None else [cst.Arg(args, star="*")]
    return Rewrite(expression=cst.Call(func=fn, args=[cst.Arg(cst.Integer("0")), *spread]))
