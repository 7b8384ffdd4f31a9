"""Where `xmp.spawn(fn, args=(...))` can become TorchTPU's launch, decided on CPython's tree
before any edit (transforms/launch.py builds it on LibCST's; docs/rules/XLA601.md says why
the launch looks as it does), what the launch writes, and the `processes` fact once it is
made. Nothing here imports LibCST: `check` decides and reports the launch without it.

Only a launch this can keep exact is rewritten: a whole statement in the module's own code
(the main block), `fn` a function defined at module level (spawn pickles it by name), one
launch in the file, and no `init_process_group` of the program's own (often behind a flag:
the worker could neither create the group nor leave it out).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from xla2tpu.detect.values import tuple_items
from xla2tpu.project.facts import Fact, Facts

if TYPE_CHECKING:
    from xla2tpu.detect.found import Found

TEMPLATE = "tpu-launch"
IN_PROCESS = "spawn-in-process"  # the launch of one process, made a call (collective_sites)

# The worker function written into the module above the launch (`{worker}`: a fresh name).
WORKER = '''
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
'''.strip() + "\n"
EVERY_CHIP = "torch.accelerator.device_count()"  # xmp.spawn used every local chip
# The statements replacing the launch's line.
LINES = (
    "{count} = {nprocs}\n",
    "torch.tpu.distributed.set_tpu_launch_env(nproc_per_node={count})\n",
    "torch.multiprocessing.spawn({worker}, args={launch_args}, nprocs={count})\n",
)
# Every template the launch renders, in the order it spells their names.
TEMPLATES = (EVERY_CHIP, *LINES, WORKER)

_LAUNCHES = re.compile(r"\b(?:spawn|launch|run_multiprocess)\(")


def launchable(args: Mapping[str, ast.AST], whole_statement: bool, module_level: bool, source: str) -> bool:
    """Whether the launch call, whose bound arguments are `args`, can be rewritten: it is a
    whole expression statement (`whole_statement`) of the module's own code."""
    fn = args.get("fn")
    if not (whole_statement and module_level and isinstance(fn, ast.Name)):
        return False
    if re.search(rf"^(?:async\s+)?def\s+{re.escape(fn.id)}\s*\(", source, re.M) is None:
        return False  # not a module-level function: spawn could not pickle it
    if len(_LAUNCHES.findall(source)) != 1:
        return False  # one worker function per file, one launch to hand it to
    if "init_process_group(" in source:
        return False  # the program makes its own group, maybe only under a flag: by hand
    launch_args = args.get("args")
    return launch_args is None or tuple_items(launch_args) is not None


def nprocs_kept(nprocs: ast.AST | None) -> bool:
    """Whether the launch keeps the `nprocs` argument (a variable that may be 1: xmp.spawn
    ran `fn` in this process for 1, on every chip for anything else)."""
    return isinstance(nprocs, (ast.Name, ast.Attribute)) and not (isinstance(nprocs, ast.Name) and nprocs.id == "None")


def kept(args: Mapping[str, ast.AST]) -> list[ast.AST]:
    """The argument nodes the launch keeps as written."""
    launch_args = args.get("args")
    found = [args["fn"], *(tuple_items(launch_args) or [] if launch_args is not None else [])]
    if nprocs_kept(args.get("nprocs")):
        found.append(args["nprocs"])
    return found


def migrated(facts: Facts, found: Iterable[Found], applied: Iterable[Found]) -> Fact | None:
    """The `processes` fact once this fix migrates the file's torch_xla launch, else None.
    A TorchTPU launch among the `applied` sites: the workers join a process group, and rank
    and collective fixes are exact. Every launch site `found` made a call in this process
    (`xmp.spawn(fn, nprocs=1)` -> `fn(0)`): the program starts no other process."""
    if facts.processes.value != "spawn":
        return None
    made = {id(site): site.case.template for site in applied if site.case.action == "transform"}
    if TEMPLATE in made.values():
        reason = 'has its torch_xla launch migrated to TorchTPU by this fix: every worker joins the "tpu" process group'
        return Fact("processes", "process-group", facts.processes.evidence, reason)
    launches = [site for site in found if any(case.template in (TEMPLATE, IN_PROCESS) for case in site.rule.cases)]
    if launches and all(made.get(id(site)) == IN_PROCESS for site in launches):
        reason = "has its one-process torch_xla launch made a call in this process by this fix: it starts no other process"
        return Fact("processes", "one", facts.processes.evidence, reason)
    return None
