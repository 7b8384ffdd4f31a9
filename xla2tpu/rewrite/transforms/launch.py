"""`xmp.spawn(fn, args=(...))` / `torch_xla.launch(fn, args=(...))` as a TorchTPU launch (DST01).

The shape, and why (docs/rules/XLA601.md says the same to users):
- The parent keeps running its own code once, as it did around `xmp.spawn`: the launch
  stays a call in the program (`torch.multiprocessing.spawn`), not a torchrun command,
  which would run the parent's code before and after the launch in every process.
- TorchTPU's launch contract (reference §6): the parent prepares the TPU launch variables
  (`torch.tpu.distributed.set_tpu_launch_env`) before any worker touches the device;
  each worker has torchrun's RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, WORLD_SIZE, MASTER_ADDR
  and MASTER_PORT in its environment before device init, then joins the "tpu" process
  group. `mp.spawn` sets none of them, so a worker function written into the module
  does, then calls `fn` with the global rank (xmp.spawn passed the global ordinal; spawn
  passes the local index).
- The process count: one process per local chip, `torch.accelerator.device_count()` (read
  from the PCI bus before any runtime starts), as xmp.spawn used every chip for any
  `nprocs` but 1; an `nprocs` variable keeps its 1 (`1 if flags.num_cores == 1 else ...`).
- Workers are spawned, never forked.

Which launches can be rewritten is decided on CPython's tree (detect/launch_site.py,
with the templates): this module only builds the launch the detector allowed.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.catalogue import templates
from xla2tpu.detect import launch_site
from xla2tpu.project.resolve import dotted_name
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import fresh_name, render_expression, render_statements, tuple_items


@transform(launch_site.TEMPLATE)
def tpu_launch(site: CallSite) -> Rewrite | None:
    args = site.args.get("args")
    items = [] if args is None else tuple_items(args)
    if items is None and isinstance(args, (cst.Name, cst.Attribute)):
        passed = [cst.StarredElement(args)]  # `args=args`: the sequence torch_xla unpacked
    elif items is not None:
        passed = [cst.Element(e) for e in items]
    else:
        return None  # not the site the detector decided (launch_site.launchable)
    if not isinstance(site.statement, cst.Expr):
        return None
    fn = site.args["fn"]
    worker = cst.Name(fresh_name(site, "_tpu_worker"))
    count = cst.Name(fresh_name(site, "tpu_processes"))
    imports: set[str] = set()
    # xmp.spawn ran fn in this process for nprocs=1 (XLA601's own case for a literal 1) and
    # on every chip for any other value: a variable that may be 1 keeps that choice.
    every_chip = render_expression(site, launch_site.EVERY_CHIP, imports)
    nprocs = site.args.get("nprocs")
    if isinstance(nprocs, (cst.Name, cst.Attribute)) and dotted_name(nprocs) != "None":
        test = cst.Comparison(nprocs, [cst.ComparisonTarget(cst.Equal(), cst.Integer("1"))])
        nprocs = cst.IfExp(test=test, body=cst.Integer("1"), orelse=every_chip)
    else:
        nprocs = every_chip
    rewrite = render_statements(
        site,
        list(launch_site.LINES),
        {"count": count, "worker": worker, "nprocs": nprocs,
         "launch_args": cst.Tuple([cst.Element(fn), cst.Element(count), *passed])},
    )
    branches: list[tuple[cst.BaseExpression, list[cst.BaseStatement]]] = []
    if site.scope.qualify(dotted_name(site.original.func)) == launch_site.LAUNCH:
        # Under torchrun, torch_xla.launch ran `fn(LOCAL_RANK, *args)` in the process torchrun
        # started: this process is one worker; it joins the group and spawns nothing.
        started, join, local_rank = launch_site.TORCHRUN
        test = render_expression(site, started, imports)
        joined = render_statements(site, [join])
        rewrite.imports |= joined.imports
        call = _call(fn, [render_expression(site, local_rank, imports)], passed)
        branches.append((test, [*joined.statements, cst.SimpleStatementLine([cst.Expr(call)])]))  # type: ignore[list-item]
    choice = launch_site.single_process_choice(site.args)
    if choice is not None:
        # Chosen at run time: torch_xla ran `fn(0, *args)` in this process when it held. The
        # worker runs it here as the one member of its own group, so the rank, world size
        # and collective rewrites read the same group whichever way the program goes.
        alone = _call(worker, [cst.Integer("0"), fn, cst.Integer("1")], passed)
        branches.append((choice, [cst.SimpleStatementLine([cst.Expr(alone)])]))
    if branches:
        chain: cst.If | cst.Else = cst.Else(cst.IndentedBlock(rewrite.statements))  # type: ignore[arg-type]
        for test, body in reversed(branches):
            chain = cst.If(test=test, body=cst.IndentedBlock(body), orelse=chain)
        rewrite.statements = [chain]  # type: ignore[list-item]
    rendered = templates.render(launch_site.WORKER, {"worker": worker}, {}, site.spell, statement=True)
    rewrite.imports |= imports | rendered.imports
    definition = rendered.node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])  # type: ignore[union-attr]
    top = site.parents[1]  # the module-level statement holding the launch: the worker goes above it
    rewrite.later.append((top, lambda node: cst.FlattenSentinel([definition, node])))  # type: ignore[list-item]
    return rewrite


def _call(func: cst.BaseExpression, first: list[cst.BaseExpression], passed: list[cst.BaseElement]) -> cst.Call:
    """`func(*first, *passed)`, the launch's own arguments passed as they were given."""
    return cst.Call(func, [*(cst.Arg(a) for a in first),
                           *(cst.Arg(e.value, star="*" if isinstance(e, cst.StarredElement) else "") for e in passed)])
