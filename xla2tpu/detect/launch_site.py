"""Where `xmp.spawn(fn, args=...)` / `torch_xla.launch(fn, args)` can become TorchTPU's launch,
decided on CPython's tree before any edit (transforms/launch.py builds it on LibCST's;
docs/rules/XLA601.md says why the launch looks as it does), what the launch writes, and the
`processes` fact once it is made. Nothing here imports LibCST: `check` decides and reports
the launch without it.

torch_xla's launcher pickled `fn` and `args` into spawned processes (its default start
method), so whatever it launched, `torch.multiprocessing.spawn` can launch: `fn` may be any
expression, the launch may sit in any function the program calls, and `args` may be a
tuple or a name. What the rewrite cannot keep exact stays manual: a launch that is not a
statement of its own, a `fork` (or unknown) start method, a second torch_xla launch in the
file (one worker function each), and a program whose own `init_process_group` calls are not
all whole statements with torch_xla's backend (the worker creates the one "tpu" group; those
calls become guarded, XLA603) or NCCL's (a GPU path, which never ran on TPU). `join` and `daemon` are dropped: torch_xla 2.9 ignored them
and always waited for its workers.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xla2tpu.detect.conditions import literal
from xla2tpu.detect.scopes import DEFINITIONS, FUNCTIONS
from xla2tpu.detect.values import MISSING, tuple_items
from xla2tpu.project.facts import ENTRY_POINTS, Fact, Facts, is_main
from xla2tpu.project.process_groups import PROCESS_GROUP, cuda_group, xla_group
from xla2tpu.sources.notebook_cells import BOUNDARY
from xla2tpu.trees.names import last_name

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
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
'''.strip() + "\n"
EVERY_CHIP = "torch.accelerator.device_count()"  # xmp.spawn used every local chip
# The statements replacing the launch's line.
LINES = (
    "{count} = {nprocs}\n",
    "torch.tpu.distributed.set_tpu_launch_env(nproc_per_node={count})\n",
    "torch.multiprocessing.spawn({worker}, args={launch_args}, nprocs={count})\n",
)
# `torch_xla.launch` under torchrun ran `fn(LOCAL_RANK, *args)` in the process torchrun
# started, and spawned nothing: so does its replacement, in the "tpu" group.
TORCHRUN = (
    "torch.distributed.is_torchelastic_launched()",
    'torch.distributed.init_process_group("tpu")\n',
    'int(os.environ["LOCAL_RANK"])',
)
LAUNCH = "torch_xla.launch"
# Every template the launch renders, in the order it spells their names.
TEMPLATES = (EVERY_CHIP, *LINES, WORKER, *TORCHRUN)

LAUNCHERS = frozenset({"torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch",
                       "torch_xla._internal.pjrt.run_multiprocess"})
_LAUNCHER_TAILS = frozenset(name.rsplit(".", 1)[1] for name in LAUNCHERS)


def launchable(args: Mapping[str, ast.AST], whole_statement: bool, tree: ast.Module, lines: Sequence[str],
               resolve: Callable[[ast.AST], str | None], function: str | None, entry_groups: bool = False) -> bool:
    """Whether the launch call, whose bound arguments are `args`, can be rewritten: it is a
    whole expression statement (`whole_statement`) of a module (`tree`, its `lines`) that has
    no other torch_xla launch and creates no process group the worker's could clash with;
    `resolve` gives a callee's qualified name as the module binds it, `function` names the
    function the launch is in (None: the module's own code); `entry_groups`: the project's
    modules that define a launcher entry point (`_mp_fn`), or what they import, create such a
    group (project/model.py), which a launch of some module's entry point would start."""
    fn = args.get("fn")
    if not whole_statement or fn is None:
        return False
    if entry_groups and isinstance(fn, ast.Attribute) and fn.attr in ENTRY_POINTS:
        return False  # the entry point's program makes its own group, which the worker's would clash with
    nodes = list(ast.walk(tree))
    if function is not None and _forked_target(nodes, function):
        return False  # run in a forked child, where TorchTPU refuses the device
    if _unseen_program(nodes, fn):
        return False
    start = args.get("start_method")
    if start is not None and not (isinstance(start, ast.Constant) and start.value == "spawn"):
        if not (isinstance(start, ast.Constant) and start.value == "fork" and _spawnable(tree, nodes, fn, lines)):
            return False  # a start chosen at run time, or a fork spawn could not redo
    launch_args = args.get("args")
    if launch_args is not None and tuple_items(launch_args) is None and not isinstance(launch_args, (ast.Name, ast.Attribute)):
        return False
    calls = [node for node in nodes if isinstance(node, ast.Call)]
    if sum(1 for call in calls if _launch(call, resolve)) != 1:
        return False  # one worker function per file, one launch to hand it to
    groups = [call for call in calls if last_name(call.func) == PROCESS_GROUP and not cuda_group(call)]
    return _own_groups_guardable(nodes, lines, len(groups))


def _spawnable(tree: ast.Module, nodes: Sequence[ast.AST], fn: ast.AST, lines: Sequence[str]) -> bool:
    """Whether a `fork` launch can be a spawn (TorchTPU refuses the device in a forked child):
    `fn` is a function the module defines at its top (a spawned worker imports it by name),
    the module is a script, not a notebook (whose functions a spawned worker cannot import),
    and it does not share a model with its workers through fork (`MpModelWrapper`)."""
    defined = isinstance(fn, ast.Name) and any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.id for node in tree.body)
    notebook = any(BOUNDARY.split("{}")[0] in line for line in lines)
    shared = any(isinstance(node, ast.Attribute) and node.attr == "MpModelWrapper" for node in nodes)
    return defined and not notebook and not shared


def _forked_target(nodes: Sequence[ast.AST], function: str) -> bool:
    """Whether `function` is the target of a `Process(target=...)` made in the module: with
    the default start method on Linux that child is forked, and TorchTPU forbids the device
    (and so its launch) in a forked process; torch_xla's launch ran there."""
    return any(isinstance(node, ast.Call) and last_name(node.func) == "Process"
               and any(k.arg == "target" and isinstance(k.value, ast.Name) and k.value.id == function
                       for k in node.keywords)
               for node in nodes)


def _unseen_program(nodes: Sequence[ast.AST], fn: ast.AST) -> bool:
    """Whether `fn` is a function of a module imported at run time by name
    (`mod = importlib.import_module(name)`; `mod.entry`) other than the launchers' entry
    points (`_mp_fn`, facts.ENTRY_POINTS): what that program does (its own process group, say)
    cannot be seen here. Entry-point modules are the project model's to follow (they inherit
    the migrated launch)."""
    if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)) or fn.attr in ENTRY_POINTS:
        return False
    name = fn.value.id
    return any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
               and last_name(node.value.func) == "import_module"
               and any(isinstance(target, ast.Name) and target.id == name for target in node.targets)
               for node in nodes)


def _launch(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> bool:
    """A torch_xla launch, or a call spelled like one whose name the module does not bind
    (imported inside a function): counted, so a second launch is never missed."""
    if last_name(call.func) not in _LAUNCHER_TAILS:
        return False
    qualname = resolve(call.func)
    return qualname is None or qualname in LAUNCHERS


def _own_groups_guardable(nodes: Sequence[ast.AST], lines: Sequence[str], calls: int) -> bool:
    """Whether every `init_process_group` call of the program (`calls` of them) is a statement
    alone on its lines with torch_xla's backend and init method, which XLA603 guards
    (`if not is_initialized(): init_process_group("tpu")`) once the worker made the group."""
    statements = [node for node in nodes if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                  and last_name(node.value.func) == PROCESS_GROUP and not cuda_group(node.value)]
    return len(statements) == calls and all(xla_group(s.value) and _alone(s, lines) for s in statements)


def _alone(statement: ast.stmt, lines: Sequence[str]) -> bool:
    before = lines[statement.lineno - 1][:statement.col_offset]
    after = lines[statement.end_lineno - 1][statement.end_col_offset:]  # type: ignore[index]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def parent_only(tree: ast.Module, resolve: Callable[[ast.AST], str | None]) -> frozenset[int]:
    """The top-level statements (ids) that run only in the parent of the module's one torch_xla
    launch: its `if __name__ == "__main__":` block, and each function of the module that is
    only ever called, by name, from that block or from another such function (the launch's
    own function among them), and is not the launched `fn`. A spawned worker re-imports the
    module but never runs its main block, so none of this runs in a worker; what it counts
    it counts in the launching process, as the TorchTPU launch does
    (`torch.accelerator.device_count()`)."""
    launches = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _launch(node, resolve)]
    if len(launches) != 1:
        return frozenset()
    launch = launches[0]
    launched = {n.id for arg in [*launch.args[:1], *(k.value for k in launch.keywords if k.arg == "fn")]
                for n in ast.walk(arg) if isinstance(n, ast.Name)}
    main = [node for node in tree.body if is_main(node)]
    functions = {node.name: node for node in tree.body if isinstance(node, FUNCTIONS)}
    # Where each function of the module is named: the top-level statement holding the
    # name, or None where it is not a call made by that statement's own code (a value
    # handed on, or a call inside a function or lambda defined there, which may run anywhere).
    named: dict[str, list[ast.stmt | None]] = {name: [] for name in functions}
    for top in tree.body:
        calls = {id(n.func) for n in ast.walk(top) if isinstance(n, ast.Call)}
        nested = {id(n) for d in ast.walk(top) if d is not top and isinstance(d, (*DEFINITIONS, ast.Lambda))
                  for n in ast.walk(d)}
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and node.id in named and isinstance(node.ctx, ast.Load):
                named[node.id].append(top if id(node) in calls and id(node) not in nested else None)
    parent: set[int] = {id(node) for node in main}
    if not parent:
        return frozenset()
    grew = True
    while grew:
        grew = False
        for name, node in functions.items():
            places = named[name]
            if (id(node) not in parent and name not in launched and places
                    and all(place is not None and id(place) in parent for place in places)):
                parent.add(id(node))
                grew = True
    holder = next((top for top in tree.body if any(n is launch for n in ast.walk(top))), None)
    return frozenset(parent) if holder is not None and id(holder) in parent else frozenset()


def single_process_choice(args: Mapping[str, Any]) -> Any:
    """`debug_single_process=<expr>` decided at run time (`FLAGS.num_cores == 1`), on either
    tree (the detector's and the transform's agree): torch_xla ran `fn(0, *args)` in this
    process when it held; a literal (None here) is decided by the cases."""
    choice = args.get("debug_single_process")
    return None if choice is None or literal(choice) is not MISSING else choice


def nprocs_kept(nprocs: ast.AST | None) -> bool:
    """Whether the launch keeps the `nprocs` argument (a variable that may be 1: xmp.spawn
    ran `fn` in this process for 1, on every chip for anything else)."""
    return isinstance(nprocs, (ast.Name, ast.Attribute)) and not (isinstance(nprocs, ast.Name) and nprocs.id == "None")


def kept(args: Mapping[str, ast.AST]) -> list[ast.AST]:
    """The argument nodes the launch keeps as written."""
    launch_args = args.get("args")
    items = [] if launch_args is None else tuple_items(launch_args)
    found = [args["fn"], *(items if items is not None else [launch_args])]
    if nprocs_kept(args.get("nprocs")):
        found.append(args["nprocs"])
    choice = single_process_choice(args)
    if choice is not None:
        found.append(choice)
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
        return Fact("processes", "launched", facts.processes.evidence, reason)
    launches = [site for site in found if any(case.template in (TEMPLATE, IN_PROCESS) for case in site.rule.cases)]
    if launches and all(made.get(id(site)) == IN_PROCESS for site in launches):
        reason = "has its one-process torch_xla launch made a call in this process by this fix: it starts no other process"
        return Fact("processes", "one", facts.processes.evidence, reason)
    return None
