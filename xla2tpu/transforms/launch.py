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

Only a launch this can keep exact is rewritten: a whole statement in the module's own
code (the main block), `fn` a function defined at module level (spawn pickles it by
name), no `start_method="fork"` / `join=False` / `daemon` / `debug_single_process` that
may be true, one launch in the file, and no `init_process_group` of the program's own
(often behind a flag: the worker could neither create the group nor leave it out).
"""

from __future__ import annotations

import re

import libcst as cst

from xla2tpu import templates
from xla2tpu.resolve import dotted_name
from xla2tpu.transforms import CallSite, Rewrite, transform
from xla2tpu.transforms.forms import fresh_name, render_expression, render_statements, tuple_items

_WORKER = '''
def {worker}(local_rank, fn, nprocs, *args):
    # A process of the TorchTPU launch that replaced xmp.spawn:
    # torchrun's variables go in the environment before the device
    # is touched or the "tpu" process group created.
    node_rank = int(os.environ.get("NODE_RANK", 0))
    os.environ.update(
        RANK=str(node_rank * nprocs + local_rank),
        LOCAL_RANK=str(local_rank),
        LOCAL_WORLD_SIZE=str(nprocs),
        WORLD_SIZE=str(int(os.environ.get("NNODES", 1)) * nprocs),
    )
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    torch.distributed.init_process_group("tpu")
    try:
        fn(torch.distributed.get_rank(), *args)
    finally:
        torch.distributed.destroy_process_group()
'''

_LAUNCHES = re.compile(r"\b(?:spawn|launch|run_multiprocess)\(")


@transform("tpu-launch")
def tpu_launch(site: CallSite) -> Rewrite | None:
    fn = site.args.get("fn")
    if not isinstance(site.statement, cst.Expr) or not isinstance(fn, cst.Name) or site.scope.parent is not None:
        return None
    if re.search(rf"^(?:async\s+)?def\s+{re.escape(fn.value)}\s*\(", site.source, re.M) is None:
        return None  # not a module-level function: spawn could not pickle it
    if len(_LAUNCHES.findall(site.source)) != 1:
        return None  # one worker function per file, one launch to hand it to
    if "init_process_group(" in site.source:
        return None  # the program makes its own group, maybe only under a flag: by hand
    args = site.args.get("args")
    items = [] if args is None else tuple_items(args)
    if items is None:
        return None
    worker = cst.Name(fresh_name(site, "_tpu_worker"))
    count = cst.Name(fresh_name(site, "tpu_processes"))
    imports: set[str] = set()
    # xmp.spawn ran fn in this process for nprocs=1 (XLA601's own case for a literal 1) and
    # on every chip for any other value: a variable that may be 1 keeps that choice.
    every_chip = render_expression(site, "torch.accelerator.device_count()", imports)
    nprocs = site.args.get("nprocs")
    if nprocs is not None and isinstance(nprocs, (cst.Name, cst.Attribute)) and dotted_name(nprocs) != "None":
        test = cst.Comparison(nprocs, [cst.ComparisonTarget(cst.Equal(), cst.Integer("1"))])
        nprocs = cst.IfExp(test=test, body=cst.Integer("1"), orelse=every_chip)
    else:
        nprocs = every_chip
    rewrite = render_statements(
        site,
        [
            "{count} = {nprocs}\n",
            "torch.tpu.distributed.set_tpu_launch_env(nproc_per_node={count})\n",
            "torch.multiprocessing.spawn({worker}, args={launch_args}, nprocs={count})\n",
        ],
        {"count": count, "worker": worker, "nprocs": nprocs,
         "launch_args": cst.Tuple([cst.Element(e) for e in (fn, count, *items)])},
    )
    rendered = templates.render(_WORKER.strip() + "\n", {"worker": worker}, {}, site.spell, statement=True)
    rewrite.imports |= imports | rendered.imports
    definition = rendered.node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])  # type: ignore[union-attr]
    top = site.parents[1]  # the module-level statement holding the launch: the worker goes above it
    rewrite.later.append((top, lambda node: cst.FlattenSentinel([definition, node])))  # type: ignore[list-item]
    return rewrite
