"""Whether a torch_xla SPMD program migrates whole to TorchTPU, decided on CPython's tree
(issue 33: data parallelism on a mesh, tensor-parallel parameters, FSDPv2; transforms/spmd.py
builds it on LibCST's). Nothing here imports LibCST.

torch_xla SPMD runs one process that drives every chip and annotates global-view tensors;
TorchTPU runs one process per chip, and DTensors are global-view too. A program migrates
when all of its SPMD is what this module can translate exactly
(fixtures/runnable/spmd_data_parallel proves the translation against torch_xla):

- `xr.use_spmd()`, once, at module level after nothing but imports, definitions and
  constants: it becomes the launch of one process per chip (torchrun's launcher, started
  by the program itself unless torchrun started it) and the "tpu" process group;
- one `xs.Mesh(ids, shape, names)` with ids in identity order and literal axis names, in
  a function that builds the model before it and its optimizer after it: it becomes
  `init_device_mesh("tpu", shape, mesh_dim_names=names)`, and every parameter of the model
  is replicated on it (`distribute_module`) before the optimizer takes them, as SPMD left
  unannotated parameters replicated;
- `xs.mark_sharding(t, mesh, spec)` statements on a batch the function just moved to the
  device, with a literal spec, from DataLoaders that drop a last short batch: `t = distribute_tensor(t, mesh, placements)` (reference
  §2.9's placement rule), every process building the same global batch as the one SPMD
  process did;
- `xs.mark_sharding(model[i].weight, mesh, spec)` statements of the function's own body
  between the mesh and the optimizer, on a weight or bias of one of the model's Linear,
  LayerNorm or Embedding layers (an embedding by columns only) (tensor parallelism): the
  parameter becomes a DTensor parameter with the same placements
  (`fixtures/runnable/spmd_tensor_parallel`), before the rest are replicated and the
  optimizer takes them all; BatchNorm only on a 1-D mesh with no sharded parameter (else
  DTensor updates a sharded copy of its running statistics, and the update is lost);
- FSDPv2 (`m = FSDPv2(m, mesh=mesh)` statements after the mesh, on layers of the model and
  then the model, before the optimizer; the mesh's axes other than "fsdp" of size 1; no wrap
  policy or `shard_output`): FSDP2's `fully_shard(m, mesh=mesh["fsdp"])`
  (`fixtures/runnable/spmd_fsdp_v2`). The batch is then split on "fsdp" alone and each
  process keeps its plain shard (`.to_local()`), on which the layers run with their gathered
  parameters, so any layer that treats each sample alone will do (BatchNorm will not); FSDP2
  averages the gradients over the processes, and the values of the shard read on the host
  must be mean losses, read as their mean over the processes;
- the model is built of torch.nn layers measured right on DTensors, and it and the losses
  run only on DTensors (a plain tensor beside its DTensor parameters, or beside its
  output, raises: labels SPMD replicated); the losses are `cross_entropy` / `nll_loss`
  without class weights;
- the values computed from the model, the optimizer and the sharded batch (the function's
  DTensors) are read on the host only through `.item()`, `.tolist()`, `.cpu()` or
  `.numpy()`, which read the full tensor (`.full_tensor()`, a collective every process
  makes: each runs the whole program), and are otherwise only used to compute other such
  values or called as statements (`loss.backward()`, `optimizer.step()`);
- nothing else of torch_xla but the device (`xm.xla_device()`), the sync
  (`xm.mark_step()`) and the device count, which is the world size once there is one
  process per chip.

Anything else (a parameter sharded elsewhere, a value printed or stored, a second mesh,
another SPMD call) leaves the whole program to a human: half a program on DTensor does not run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xla2tpu.detect.scopes import DEFINITIONS
from xla2tpu.detect.values import literal
from xla2tpu.project.facts import is_main
from xla2tpu.trees.names import last_name

USE_SPMD = "torch_xla.runtime.use_spmd"
MESH = "torch_xla.distributed.spmd.Mesh"
MARK_SHARDING = "torch_xla.distributed.spmd.mark_sharding"
FSDP_V2 = frozenset({"torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel",
                     "torch_xla.distributed.fsdp.SpmdFullyShardedDataParallel"})
FSDP_AXIS = "fsdp"  # FSDPv2 shards every parameter and the batch on the mesh axis of this name
# What a migrating program may use of torch_xla besides the three above: each has a fix in
# a program of one process per chip with its "tpu" process group.
_OTHERS = frozenset({
    "torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.core.xla_model.mark_step",
    "torch_xla.sync", "torch_xla.runtime.global_runtime_device_count", "torch_xla.runtime.global_device_count",
})
HOST_READS = frozenset({"item", "tolist", "cpu", "numpy"})  # each reads a DTensor's full value after `.full_tensor()`
# What the DTensors may meet, each measured on a batch-sharded DTensor against one process
# (torch 2.13; the review of fixtures/XLA701 and docs/ecosystem.md): torch.nn layers whose
# forward is a function of their parameters and input alone, with no random op and no
# tensor made on the device (a model of its own class may make one in `forward`, which
# meets the DTensors as a plain tensor and raises); and the losses whose value and
# gradients are right without class weights (mse_loss, smooth_l1_loss, huber_loss,
# binary_cross_entropy and soft_margin_loss give gradients the world size times too large).
_LAYERS = frozenset({
    "Sequential", "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid",
    "Softmax", "LogSoftmax", "Flatten", "Identity", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "Embedding",
    "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "LeakyReLU", "ELU", "Mish", "Hardtanh",
})
_LOSSES = frozenset({"cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss"})
# Under FSDP2 the layers run on each process's plain shard of the batch (the parameters are
# gathered for the forward): any layer that treats each sample alone, a transformer layer
# too; not BatchNorm, whose statistics would be of the shard where SPMD's were of the batch.
_FSDP_LAYERS = (_LAYERS - {"BatchNorm1d", "BatchNorm2d"}) | {"TransformerEncoderLayer", "TransformerEncoder"}
# The layers whose parameters may be sharded, each with the parameter dimensions that may
# not be: each measured right against torch_xla SPMD (fixtures/runnable/spmd_tensor_parallel
# and the review in docs/ecosystem.md). torch 2.13's DTensor convolution keeps the input's
# placements for its output whatever the weight's, and an embedding split by rows gives a
# masked partial result that a reshape after it breaks.
_SHARDABLE = {"Linear": frozenset(), "LayerNorm": frozenset(), "Embedding": frozenset({0})}
_FUNCTIONS = frozenset({"relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss"})
_WEIGHTS = frozenset({"weight", "pos_weight"})  # a plain tensor beside the DTensors raises
_IN_PLACE = frozenset({"clip_grad_norm_", "clip_grad_value_"})  # torch.nn.utils', measured right on DTensors
_BUILTINS = frozenset({"sum", "min", "max", "abs", "len", "zip", "enumerate", "list", "tuple", "range"})

# The transforms (transforms/spmd.py) and the templates they write, in the order they spell names.
LAUNCH_TEMPLATE, MESH_TEMPLATE, SHARD_TEMPLATE, FSDP_TEMPLATE = "spmd-launch", "spmd-mesh", "spmd-shard", "spmd-fsdp"
TRANSFORMS = (LAUNCH_TEMPLATE, MESH_TEMPLATE, SHARD_TEMPLATE, FSDP_TEMPLATE)
LAUNCH = '''
if not torch.distributed.is_torchelastic_launched():
    # torch_xla SPMD drove every chip from this one process; TorchTPU runs one process per
    # chip: this one starts them with torchrun's launcher, shows what the first one prints
    # (each runs the whole program) and waits for them.
    {count} = torch.accelerator.device_count()
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node={count})
    sys.exit(torch.distributed.run.main(
        ["--standalone", "--nproc-per-node", str({count}), "--local-ranks-filter", "0", *sys.argv]))
'''.strip() + "\n"
JOIN = 'torch.distributed.init_process_group("tpu")\n'
DEVICE_MESH = 'torch.distributed.device_mesh.init_device_mesh("tpu", {shape}, mesh_dim_names={names})'
REPLICATE = "torch.distributed.tensor.distribute_module({model}, {mesh})\n"
SHARD = "{t} = torch.distributed.tensor.distribute_tensor({t}, {mesh}, {placements})\n"
# A module attribute set to a Parameter registers it in place of the old one (what
# distribute_module itself does); the parameters are the layers' own, which require grad.
SHARD_PARAMETER = "{t} = torch.nn.Parameter(torch.distributed.tensor.distribute_tensor({t}, {mesh}, {placements}))\n"
PLACEMENTS = ("torch.distributed.tensor.Shard({dim})", "torch.distributed.tensor.Replicate()")
FULL = "full_tensor"
# FSDPv2 → FSDP2: each wrapped module is sharded on the mesh's "fsdp" axis; each process
# keeps its plain shard of the batch; a loss, the mean of its shard's, is read as the mean
# over the processes (the mean of the batch when the shards are equal).
FULLY_SHARD = 'torch.distributed.fsdp.fully_shard({module}, mesh={mesh}["fsdp"])'
SHARD_LOCAL = "{t} = torch.distributed.tensor.distribute_tensor({t}, {mesh}, {placements}).to_local()\n"
MEAN_READ = 'torch.distributed.tensor.DTensor.from_local({value}, {mesh}["fsdp"], [torch.distributed.tensor.Partial("avg")])'
TEMPLATES = (LAUNCH, JOIN, DEVICE_MESH, REPLICATE, SHARD, SHARD_PARAMETER, *PLACEMENTS, FULLY_SHARD, SHARD_LOCAL, MEAN_READ)


@dataclass(frozen=True)
class Program:
    """What the transforms need to know of an SPMD program that migrates."""

    function: str  # the function holding the mesh, the model, the sharding and the reads
    mesh: str  # the name the mesh is bound to
    axes: tuple[str, ...]  # its axis names
    model: str
    derived: frozenset[str]  # the function's names that hold DTensors (or the optimizer of them)
    reads: int  # statements of the function that read a DTensor on the host
    parameters: tuple[str, ...] = ()  # the sharded parameters, in order, as `ast.unparse` spells them
    fsdp: bool = False  # FSDPv2 wraps the model: FSDP2, each process on its plain shard of the batch
    losses: frozenset[str] = frozenset()  # under FSDP2, the per-shard losses read on the host (a mean each)


def placements(spec: list[object], axes: tuple[str, ...]) -> list[int | None] | None:
    """Per mesh axis, the tensor dimension sharded on it (None: replicated), from a
    `mark_sharding` spec of axis names, axis indexes and None (reference §2.9); None when
    the spec is not that (an axis twice, a tuple of axes)."""
    shards: list[int | None] = [None] * len(axes)
    for dim, entry in enumerate(spec):
        if entry is None:
            continue
        if isinstance(entry, str) and entry in axes:
            axis = axes.index(entry)
        elif isinstance(entry, int) and not isinstance(entry, bool) and 0 <= entry < len(axes):
            axis = entry
        else:
            return None
        if shards[axis] is not None:
            return None
        shards[axis] = dim
    return shards


def program(tree: ast.Module, resolve: Callable[[ast.AST], str | None]) -> Program | None:
    """The SPMD program `tree` is, when it migrates whole (the module docstring); `resolve`
    gives a name's qualified name as the module binds it."""
    if not any(is_main(node) for node in tree.body) or _local_torch_xla_import(tree):
        return None
    uses = _torch_xla_uses(tree, resolve)
    if uses is None:
        return None
    spmd = [node for node, name in uses if name == USE_SPMD]
    meshes = [node for node, name in uses if name == MESH]
    if len(spmd) != 1 or len(meshes) != 1 or not _launchable(tree, spmd[0]):
        return None
    found = _mesh(tree, meshes[0])
    if found is None:
        return None
    function, statement, mesh, axes, shape = found
    shardings = [node for node, name in uses if name == MARK_SHARDING]
    inner = [n for n in ast.walk(function) if n is not function]
    if not shardings or any(not _within(s, function) for s in shardings):
        return None
    if any(isinstance(node, (*DEFINITIONS, ast.Lambda)) for node in inner):
        return None  # a function or lambda of its own may see the DTensors anywhere
    wraps = _wraps([node for node, name in uses if name in FSDP_V2], function, mesh, axes, statement, shape)
    if wraps is None:
        return None
    fsdp = bool(wraps)
    if not _torch_calls_known(inner, resolve, _FSDP_LAYERS if fsdp else _LAYERS) or not _even_batches(tree, resolve):
        return None
    found_model = _model(function, statement, resolve, {id(t) for w in wraps for t in w.targets})
    if found_model is None:
        return None
    model, optimizer = found_model
    if fsdp and not (ast.unparse(wraps[-1].targets[0]) == model and wraps[-1].lineno < optimizer
                     and all(_module_of(w.targets[0], model) for w in wraps)):
        return None  # FSDPv2 wraps layers of the model, then the model, before the optimizer
    bindings = [node for node in ast.walk(function) if isinstance(node, ast.Assign) and node not in wraps
                and any(isinstance(t, ast.Name) and t.id == model for t in node.targets)]
    if not _built_of_layers(bindings, resolve, fsdp):
        return None
    layers = [_layers(binding.value, resolve) for binding in bindings]
    parents = {id(child): node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    on_parameters = [s for s in shardings if _parameter(s.args[0] if s.args else None, model)]
    parameters = _parameters(on_parameters, function, mesh, axes, statement.lineno, optimizer,
                             layers[0] if len(layers) == 1 else None)  # a model bound twice: which layer is unknown
    sharded = _sharded([s for s in shardings if s not in on_parameters], parents, mesh, axes, statement.lineno)
    if sharded is None or parameters is None or model in sharded:
        return None
    if (parameters or len(axes) > 1) and any(kind.startswith("BatchNorm") for kind in _walk_layers(layers)):
        return None  # DTensor moves the running statistics to a sharded copy, whose update is lost
    if fsdp and (parameters or not _batch_split(shardings, mesh, axes)):
        return None  # FSDPv2 shards the parameters itself, and the batch on the "fsdp" axis alone
    wrapping = {id(w) for w in wraps}
    derived = _derived(function, {model, *sharded}, parents, wrapping)
    # Under FSDP2 what is computed from the batch is a plain tensor of the process's shard.
    local = _derived(function, sharded, parents, wrapping) if fsdp else derived
    losses = _losses(function, resolve)
    if derived is None or local is None or not _runs_on_dtensors(inner, {model, *losses}, local, resolve):
        return None
    skip = {id(n) for s in [*(parents[id(s)] for s in shardings), statement, *wraps] for n in ast.walk(s)}
    sharded_from = min(s.lineno for s in shardings)
    reads = _reads(function, derived, parents, skip, sharded_from,
                   lambda call: _known_callee(call, resolve, derived, {model, *losses}))
    if reads is None:
        return None
    # Where each batch is bound, just before it is sharded, it is still the whole batch.
    bound = {id(n) for s in shardings if isinstance(s.args[0], ast.Name)
             for n in ast.walk(_last_naming(parents[id(s)], parents, s.args[0].id) or s)}  # type: ignore[arg-type]
    read_losses = (_shard_flow(function, local, parents, skip | bound, sharded_from, model, losses,
                               _mean_losses(function, parents, resolve), resolve) if fsdp else frozenset())
    if read_losses is None:
        return None
    return Program(function.name, mesh, axes, model, frozenset(derived), reads, parameters, fsdp, read_losses)


def _local_torch_xla_import(tree: ast.Module) -> bool:
    """A torch_xla import below module level: names it binds are not resolved here."""
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and id(node) not in top:
            if any(alias.name.split(".")[0] == "torch_xla" for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and id(node) not in top:
            if (node.module or "").split(".")[0] == "torch_xla":
                return True
    return False


def _torch_xla_uses(tree: ast.Module, resolve: Callable[[ast.AST], str | None]) -> list[tuple[ast.AST, str]] | None:
    """Every use of a torch_xla name outside the imports, when each is one a migrating
    program may make (a call of it), else None."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    calls = {id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)}
    uses: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in inner or not isinstance(node.ctx, ast.Load):
            continue
        name = resolve(node)
        if name is None or name.split(".")[0] != "torch_xla":
            continue
        call = calls.get(id(node))
        if call is None or name not in (USE_SPMD, MESH, MARK_SHARDING, *FSDP_V2, *_OTHERS):
            return None
        uses.append((call, name))
    return uses


def _launchable(tree: ast.Module, call: ast.Call) -> bool:
    """`use_spmd()` is a statement of the module, after which the launch goes: before it
    only imports, definitions, docstrings and constants (what runs again in every process)."""
    for index, statement in enumerate(tree.body):
        if isinstance(statement, ast.Expr) and statement.value is call:
            return not call.args and not call.keywords and all(_inert(s) for s in tree.body[:index])
    return False


def _inert(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        return all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.Load, ast.UnaryOp, ast.USub))
                   for n in ast.walk(statement.value))
    return False


def _mesh(tree: ast.Module, call: ast.Call) -> tuple[ast.FunctionDef, ast.Assign, str, tuple[str, ...], ast.expr] | None:
    """The function, statement, name, axis names and shape of the mesh `call` makes: a statement
    `mesh = xs.Mesh(ids, shape, names)` of a module-level function's own body, `ids` in
    identity order and `names` literal."""
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for statement in function.body:
            if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                continue
            keywords = {k.arg: k.value for k in call.keywords}
            fields = ("device_ids", "mesh_shape", "axis_names")
            if any(k not in fields for k in keywords) or len(call.args) > 3:
                return None
            args = dict(zip(fields, call.args)) | keywords
            ids, names = _bound_once(function, args.get("device_ids")), args.get("axis_names")
            if "mesh_shape" not in args or ids is None or not _identity(ids) or not isinstance(names, (ast.Tuple, ast.List)):
                return None
            axes = [e.value for e in names.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(axes) != len(names.elts) or len(set(axes)) != len(axes):
                return None
            return function, statement, statement.targets[0].id, tuple(axes), args["mesh_shape"]
    return None


def _identity(ids: ast.AST) -> bool:
    """`np.arange(n)`, `np.array(range(n))`, `range(n)`, `list(range(n))`: the devices in
    order, which rank order on a DeviceMesh keeps."""
    if not isinstance(ids, ast.Call) or ids.keywords or len(ids.args) != 1:
        return False
    tail = last_name(ids.func)
    if tail in ("arange", "range"):
        return True
    inner = ids.args[0]
    return (tail in ("array", "list", "asarray") and _identity(inner) and isinstance(inner, ast.Call)
            and last_name(inner.func) == "range")


def _model(function: ast.FunctionDef, mesh: ast.Assign, resolve: Callable[[ast.AST], str | None],
           wrapped: set[int]) -> tuple[str, int] | None:
    """The model whose parameters the function's one optimizer takes (`opt =
    torch.optim.X(model.parameters(), ...)` after the mesh), built before the mesh and never
    bound again after it but by its FSDPv2 wrap (the targets `wrapped`), and the optimizer's
    line."""
    optimizers = [
        node for node in ast.walk(function)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        and (resolve(node.value.func) or "").startswith("torch.optim.")
    ]
    if len(optimizers) != 1:
        return None
    optimizer = optimizers[0]
    first = optimizer.value.args[0] if optimizer.value.args else None
    if not (isinstance(first, ast.Call) and not first.args and not first.keywords
            and isinstance(first.func, ast.Attribute) and first.func.attr == "parameters"
            and isinstance(first.func.value, ast.Name)) or optimizer.lineno <= mesh.lineno:
        return None
    model = first.func.value.id
    bound = [node.lineno for node in ast.walk(function) if isinstance(node, ast.Name) and node.id == model
             and isinstance(node.ctx, ast.Store) and id(node) not in wrapped]
    if not bound or max(bound) >= mesh.lineno or model in {a.arg for a in function.args.args}:
        return None
    return model, optimizer.lineno


def _wraps(calls: list[ast.Call], function: ast.FunctionDef, mesh: str, axes: tuple[str, ...],
           statement: ast.Assign, mesh_shape: ast.expr) -> list[ast.Assign] | None:
    """The FSDPv2 wraps, in order, each `m = FSDPv2(m, mesh=mesh)` a statement of the
    function's own body after the mesh, on a mesh whose axes other than "fsdp" have size 1
    (FSDPv2 shards on that axis alone); None when a call is not that (a wrap policy,
    `shard_output` or the global mesh are left to a human)."""
    if not calls:
        return []
    shape = _bound_once(function, mesh_shape)
    if FSDP_AXIS not in axes or not isinstance(shape, ast.Tuple) or len(shape.elts) != len(axes) or not all(
            axis == FSDP_AXIS or isinstance(size, ast.Constant) and size.value == 1 for axis, size in zip(axes, shape.elts)):
        return None
    own = {id(s.value): s for s in function.body if isinstance(s, ast.Assign)}
    wraps = []
    for call in calls:
        wrap = own.get(id(call))
        # torch_xla 2.9 takes the mesh by keyword only (its guide's `FSDPv2(m, mesh)` raises).
        if (wrap is None or wrap.lineno <= statement.lineno or len(wrap.targets) != 1 or len(call.args) != 1
                or [k.arg for k in call.keywords] != ["mesh"] or ast.unparse(call.keywords[0].value) != mesh
                or ast.unparse(call.args[0]) != ast.unparse(wrap.targets[0])):
            return None
        wraps.append(wrap)
    return sorted(wraps, key=lambda w: w.lineno)


def _bound_once(function: ast.FunctionDef, node: ast.expr | None) -> ast.expr | None:
    """`node`, or what a name of it is bound to by the function's one statement binding it
    (`mesh_shape = (num_devices, 1)`, as torch_xla's docs write the mesh's arguments)."""
    if not isinstance(node, ast.Name):
        return node
    stores = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == node.id and isinstance(n.ctx, ast.Store)]
    return next((s.value for s in function.body if isinstance(s, ast.Assign) and len(stores) == 1
                 and s.targets == stores), None)


def _module_of(node: ast.AST, model: str) -> bool:
    """`model`, `model[1]`, `model.encoder`: the model or one of its modules."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == model


def _batch_split(shardings: list[ast.Call], mesh: str, axes: tuple[str, ...]) -> bool:
    """Whether each `mark_sharding` splits the batch's first dimension on "fsdp" alone."""
    split = [0 if axis == FSDP_AXIS else None for axis in axes]
    return all((found := _sharding(call, mesh, axes)) is not None and found[1] == split for call in shardings)


def _mean_losses(function: ast.FunctionDef, parents: dict[int, ast.AST],
                 resolve: Callable[[ast.AST], str | None]) -> set[str]:
    """The names the function binds only to a loss that is its batch's mean:
    `F.cross_entropy(out, y)` or `criterion(out, y)` with no `reduction=`."""
    modules = _losses(function, resolve, means_only=True)

    def mean_loss(value: ast.AST) -> bool:
        return isinstance(value, ast.Call) and _mean(value, 2) and _loss_call(value, modules, resolve)

    bound: dict[str, bool] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            parent = parents.get(id(node))
            bound[node.id] = bound.get(node.id, True) and isinstance(parent, ast.Assign) and mean_loss(parent.value)
    return {name for name, mean in bound.items() if mean}


def _mean(call: ast.Call, inputs: int) -> bool:
    """Whether the loss call (a module's constructor: `inputs` 0; a function: 2) gives its
    batch's unweighted mean: no argument but the inputs, and keywords that weigh no sample
    otherwise than another."""
    return (len(call.args) == inputs and not any(isinstance(a, ast.Starred) for a in call.args)
            and all(k.arg in ("ignore_index", "label_smoothing") for k in call.keywords))


def _loss_call(call: ast.Call, modules: set[str], resolve: Callable[[ast.AST], str | None]) -> bool:
    name = resolve(call.func) or ""
    return (isinstance(call.func, ast.Name) and call.func.id in modules
            or name.startswith("torch.nn.functional.") and name.rsplit(".", 1)[1] in _LOSSES)


# What may come between a mean loss and its host read: the mean over the processes of the
# value is then the read value's (`loss.exp()` would read the mean of the exponentials).
_NO_OPS = frozenset({"detach", "cpu", "float"})


def _shard_flow(function: ast.FunctionDef, local: set[str], parents: dict[int, ast.AST], skip: set[int],
                sharded_from: int, model: str, modules: set[str], means: set[str],
                resolve: Callable[[ast.AST], str | None]) -> frozenset[str] | None:
    """Under FSDP2 each process holds a plain shard of the batch (`local`: the names computed
    from it), and anything that mixes samples (`x @ x.T`, `x.flip(0)`, a slice of the batch,
    a softmax over it) sees only its shard. So each of its values may only be an argument
    of the model, or of a mean loss whose value is assigned to a name (the model's call
    inside it too); and a loss only go to `.backward()` or be read on the host through
    `_NO_OPS`, as the mean over the processes (`modules`: the loss modules). The names read
    so, else None."""

    def assigned(call: ast.AST) -> bool:
        parent = parents.get(id(call))
        return (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name))

    def argument_of(node: ast.AST) -> ast.Call | None:
        parent = parents.get(id(node))
        if isinstance(parent, ast.keyword):
            parent = parents.get(id(parent))
        return parent if isinstance(parent, ast.Call) and parent.func is not node else None

    read: set[str] = set()
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id in local and isinstance(node.ctx, ast.Load)):
            continue
        if id(node) in skip or node.lineno < sharded_from:
            continue
        call = argument_of(node)
        if call is not None and isinstance(call.func, ast.Name) and call.func.id == model:
            outer = argument_of(call)
            if assigned(call) or outer is not None and _loss_call(outer, modules, resolve) and assigned(outer):
                continue
            return None
        if call is not None and _loss_call(call, modules, resolve) and assigned(call):
            continue
        if node.id not in means:
            return None
        chain = list(_chain(node, parents))
        methods = [link.attr for link in chain if isinstance(link, ast.Attribute)]
        if methods == ["backward"] and isinstance(parents.get(id(chain[-1])), ast.Expr):
            continue
        reads = [i for i, method in enumerate(methods) if method in HOST_READS]
        if not reads or any(m not in _NO_OPS for m in methods[:reads[0]]):
            return None
        read.add(node.id)
    return frozenset(read)


def _parameter(node: ast.AST | None, model: str) -> bool:
    """Whether `node` names a weight or bias of the model's layers: `model.weight`,
    `model[0].bias`, `model[2][1].weight` (a model of torch.nn layers has no other)."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("weight", "bias")):
        return False
    node = node.value
    while isinstance(node, ast.Subscript):
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool)):
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id == model


def _parameters(calls: list[ast.Call], function: ast.FunctionDef, mesh: str, axes: tuple[str, ...], after: int,
                before: int, layers: Layers) -> tuple[str, ...] | None:
    """The parameters the `mark_sharding` statements shard, in order: each a statement of
    the function's own body between the mesh and the optimizer (which must take the
    DTensor parameters), on the mesh, with a spec that has placements, each parameter once,
    of a layer whose DTensor operation is right sharded that way (`_SHARDABLE`)."""
    own = {id(s.value) for s in function.body if isinstance(s, ast.Expr)}
    names: list[str] = []
    for call in calls:
        sharding = _sharding(call, mesh, axes)
        if id(call) not in own or sharding is None or not after < call.lineno < before:
            return None
        parameter, shards = sharding
        if ast.unparse(parameter) in names:
            return None
        kind = _layer_of(parameter, layers)  # type: ignore[arg-type]  # `_parameter` checked: an attribute
        if kind not in _SHARDABLE or any(dim in _SHARDABLE[kind] for dim in shards):
            return None
        names.append(ast.unparse(parameter))
    return tuple(names)


# A layer of the model: its torch.nn class, or a Sequential's layers.
Layers = str | list["Layers"] | None


def _layers(binding: ast.expr, resolve: Callable[[ast.AST], str | None]) -> Layers:
    """The layers a binding of the model builds (`_built_of_layers` checked: torch.nn ones)."""
    node = _unmoved(binding)
    if not isinstance(node, ast.Call):
        return None
    kind = _nn_class(resolve(node.func) or "")
    return [_layers(arg, resolve) for arg in node.args] if kind == "Sequential" else kind or None


def _unmoved(node: ast.expr) -> ast.expr:
    """`nn.Linear(2, 2)` of `nn.Linear(2, 2).to(device)`."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        node = node.func.value
    return node


def _walk_layers(layers: Layers) -> Iterator[str]:
    if isinstance(layers, list):
        for each in layers:
            yield from _walk_layers(each)
    elif layers is not None:
        yield layers


def _layer_of(parameter: ast.Attribute, layers: Layers) -> str | None:
    """The class of the layer `model[i][j].weight` belongs to, when the model shows it."""
    indexes: list[int] = []
    node = parameter.value
    while isinstance(node, ast.Subscript):
        indexes.append(node.slice.value)  # type: ignore[attr-defined]  # `_parameter` checked: an int
        node = node.value
    for index in reversed(indexes):
        if not isinstance(layers, list) or not -len(layers) <= index < len(layers):
            return None
        layers = layers[index]
    return layers if isinstance(layers, str) else None


def _sharded(shardings: list[ast.Call], parents: dict[int, ast.AST], mesh: str, axes: tuple[str, ...],
             after: int) -> set[str] | None:
    """The names the `mark_sharding` statements shard: each a batch the statement before
    them (the same block) just bound, on the mesh, with a spec that has placements."""
    names: set[str] = set()
    for call in shardings:
        statement = parents[id(call)]
        sharding = _sharding(call, mesh, axes)
        if not isinstance(statement, ast.Expr) or sharding is None or call.lineno <= after:
            return None
        tensor = sharding[0]
        if not isinstance(tensor, ast.Name) or not _just_bound(statement, parents, tensor.id):
            return None
        names.add(tensor.id)
    return names


def _sharding(call: ast.Call, mesh: str, axes: tuple[str, ...]) -> tuple[ast.expr, list[int | None]] | None:
    """The tensor `xs.mark_sharding(t, mesh, spec)` shards and, per mesh axis, the dimension
    sharded on it: a call on the mesh with a literal spec that has placements."""
    if call.keywords or len(call.args) != 3:
        return None
    tensor, on, spec = call.args
    if not (isinstance(on, ast.Name) and on.id == mesh and isinstance(spec, (ast.Tuple, ast.List))):
        return None
    shards = placements([e.value if isinstance(e, ast.Constant) else object() for e in spec.elts], axes)
    return None if shards is None else (tensor, shards)


def _just_bound(statement: ast.stmt, parents: dict[int, ast.AST], name: str) -> bool:
    """Whether the last statement before `statement` in its block that names `name` binds
    it (`x = x.to(device)`, `x, y = ...`): a batch made there, not a tensor from elsewhere."""
    earlier = _last_naming(statement, parents, name)
    return isinstance(earlier, ast.Assign) and name in _target_names(earlier.targets)


def _last_naming(statement: ast.stmt, parents: dict[int, ast.AST], name: str) -> ast.stmt | None:
    """The last statement before `statement` in its block that names `name`."""
    block = parents[id(statement)]
    body = next((b for b in (getattr(block, "body", None), getattr(block, "orelse", None))
                 if isinstance(b, list) and any(s is statement for s in b)), None)
    if body is None:
        return None
    index = next(i for i, s in enumerate(body) if s is statement)
    return next((earlier for earlier in reversed(body[:index]) if _mentions(earlier, {name})), None)


def _target_names(targets: list[ast.expr]) -> set[str]:
    names: set[str] = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def _derived(function: ast.FunctionDef, seeds: set[str], parents: dict[int, ast.AST],
             wrapping: set[int]) -> set[str] | None:
    """The function's names that hold values computed from `seeds` (to a fixed point), or
    None where such a value is stored elsewhere than in a plain name. A value read on the
    host (`[p.sum().item() for p in model.parameters()]`) is a plain one. The FSDPv2 wraps
    (`wrapping`) store the model's modules back where they were."""
    derived = set(seeds)
    while True:
        size = len(derived)
        for node in ast.walk(function):
            if id(node) in wrapping:
                continue
            if isinstance(node, ast.Assign) and _paired(node):
                for target, element in zip(node.targets[0].elts, node.value.elts):  # type: ignore[attr-defined]
                    if _unread(element, derived, parents):
                        if not _plain(target):
                            return None
                        derived |= _target_names([target])
                continue
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                value, targets = node.value, node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                value, targets = node.iter, [node.target]
            elif isinstance(node, ast.withitem):
                value, targets = node.context_expr, [node.optional_vars] if node.optional_vars else []
            else:
                continue
            if value is None or not (_unread(value, derived, parents) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                                     else _mentions(value, derived)):
                continue
            if not all(_plain(target) for target in targets):
                return None
            derived |= _target_names(targets)
        if len(derived) == size:
            return derived


def _paired(node: ast.Assign) -> bool:
    """`x, y = x.to(d), y.to(d)`: each target takes the value beside it."""
    target, value = node.targets[0], node.value
    return (len(node.targets) == 1 and isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)))


def _torch_calls_known(nodes: list[ast.AST], resolve: Callable[[ast.AST], str | None], layers: frozenset[str]) -> bool:
    """Whether every torch.nn layer, loss or functional the function calls is one measured
    right (`layers`, `_LOSSES`, `_FUNCTIONS`), without class weights."""
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = resolve(node.func) or ""
        if name.startswith("torch.nn.functional."):
            if name.rsplit(".", 1)[1] not in _FUNCTIONS:
                return False
        elif _nn_class(name):
            if _nn_class(name) not in layers | _LOSSES:
                return False
        else:
            continue
        if any(k.arg in _WEIGHTS for k in node.keywords):
            return False
    return True


def _even_batches(tree: ast.Module, resolve: Callable[[ast.AST], str | None]) -> bool:
    """Whether every DataLoader of the module drops its last, short batch: torch_xla padded
    a batch the devices do not divide, and a DTensor loss raises on it (or, for some, takes
    a biased mean)."""
    for node in ast.walk(tree):
        name = (resolve(node.func) or "") if isinstance(node, ast.Call) else ""
        if name.startswith("torch.utils.data") and name.rsplit(".", 1)[-1] == "DataLoader":
            if not any(k.arg == "drop_last" and isinstance(k.value, ast.Constant) and k.value.value is True
                       for k in node.keywords):
                return False
    return True


def _nn_class(name: str) -> str:
    """`Linear` of `torch.nn.Linear` (a class of torch.nn itself), else ""."""
    return name[len("torch.nn."):] if name.startswith("torch.nn.") and name.count(".") == 2 else ""


def _built_of_layers(bindings: list[ast.Assign], resolve: Callable[[ast.AST], str | None], fsdp: bool) -> bool:
    """Whether each binding of the model (`model = ...`, the only target) is torch.nn layers of
    `_LAYERS`, or under FSDP2 of `_FSDP_LAYERS` built to treat each sample alone (`_sample_wise`)
    (optionally moved with `.to(...)`), with literals and names as their arguments:
    a class of the program's own, or of a library, has a `forward` this module cannot see."""
    def layers(node: ast.expr) -> bool:
        node = _unmoved(node)
        if not isinstance(node, ast.Call):
            return False
        kind = _nn_class(resolve(node.func) or "")
        if kind not in (_FSDP_LAYERS if fsdp else _LAYERS) or fsdp and not _sample_wise(node, kind):
            return False
        return all(layers(arg) if isinstance(arg, ast.Call) else isinstance(arg, (ast.Constant, ast.Name, ast.BinOp, ast.Tuple))
                   for arg in [*node.args, *(k.value for k in node.keywords)])

    return bool(bindings) and all(len(b.targets) == 1 and layers(b.value) for b in bindings)


def _sample_wise(layer: ast.Call, kind: str) -> bool:
    """Whether the layer, as its arguments build it, treats each sample of the batch alone
    (FSDP2 runs it on each process's shard): a transformer layer batch-first, a softmax or a
    flatten not over the batch, an embedding whose gradient is not scaled by the batch's
    token counts, and a container of layers built here (a module held in a name may be of
    the program's own class)."""
    keywords = {k.arg: k.value for k in layer.keywords}

    def argument(name: str, position: int) -> ast.expr | None:
        return keywords.get(name, layer.args[position] if len(layer.args) > position else None)

    if kind in ("Sequential", "TransformerEncoder"):
        modules = layer.args if kind == "Sequential" else [argument("encoder_layer", 0)]
        return all(isinstance(m, ast.Call) for m in modules) and (kind != "Sequential" or not keywords)
    if kind == "TransformerEncoderLayer":
        return literal(keywords.get("batch_first")) is True
    if kind in ("Softmax", "LogSoftmax", "Flatten"):
        dim = argument("start_dim" if kind == "Flatten" else "dim", 0)
        value = literal(dim) if dim is not None else (1 if kind == "Flatten" else None)
        return isinstance(value, int) and not isinstance(value, bool) and value != 0
    if kind == "Embedding":
        return len(layer.args) <= 3 and ("scale_grad_by_freq" not in keywords
                                          or literal(keywords["scale_grad_by_freq"]) is False)
    return True



def _losses(function: ast.FunctionDef, resolve: Callable[[ast.AST], str | None], means_only: bool = False) -> set[str]:
    """The names the function binds to a loss module of `_LOSSES` (`criterion = nn.CrossEntropyLoss()`);
    with `means_only`, to one built to give its batch's unweighted mean (`_mean`)."""
    return {t.id for node in ast.walk(function) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and (resolve(node.value.func) or "").rsplit(".", 1)[-1] in _LOSSES
            and (not means_only or _mean(node.value, 0))
            for t in node.targets if isinstance(t, ast.Name)}


def _known_callee(call: ast.Call, resolve: Callable[[ast.AST], str | None], derived: set[str], modules: set[str]) -> bool:
    """Whether a call that takes a DTensor is one whose work on it is known: a torch
    operation, a method of a DTensor, the model or a loss module, or a builtin that only
    iterates or sums. A function of the program's own may read it on the host."""
    func = call.func
    if isinstance(func, ast.Name) and (func.id in modules or func.id in _BUILTINS and resolve(func) is None):
        return True
    if isinstance(func, ast.Attribute) and _mentions(func.value, derived):
        return True
    return (resolve(func) or "").split(".")[0] == "torch"


def _runs_on_dtensors(nodes: list[ast.AST], modules: set[str], derived: set[str],
                     resolve: Callable[[ast.AST], str | None]) -> bool:
    """Whether every run of the model or a loss (`model(...)`, `model.forward(...)`,
    `criterion(...)`, `F.cross_entropy(...)`) takes DTensors or constants: the parameters
    and the model's output are DTensors now, and a plain tensor beside them raises (a
    held-out batch, or labels, that SPMD replicated)."""
    values = derived - modules
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = resolve(func) or ""
        if not (isinstance(func, ast.Name) and func.id in modules
                or isinstance(func, ast.Attribute) and func.attr in ("forward", "generate")
                and isinstance(func.value, ast.Name) and func.value.id in modules
                or name.startswith("torch.nn.functional.") and name.rsplit(".", 1)[1] in _LOSSES):
            continue
        if not all(isinstance(arg, ast.Constant) or _mentions(arg, values)
                   for arg in [*node.args, *(k.value for k in node.keywords)]):
            return False
    return True


def _unread(value: ast.AST, derived: set[str], parents: dict[int, ast.AST]) -> bool:
    """Whether `value` yields a DTensor: it uses a derived name other than through a host
    read of it (`.item()`), or, for a comprehension, in what it collects rather than in
    what it iterates over."""
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        parts: list[ast.AST] = [value.elt]
    elif isinstance(value, ast.DictComp):
        parts = [value.key, value.value]
    else:
        parts = [value]
    return any(isinstance(n, ast.Name) and n.id in derived and not any(_host_read(link) for link in _chain(n, parents))
               for part in parts for n in ast.walk(part))


def _host_read(node: ast.AST) -> bool:
    """`.item()`, `.tolist()`, `.cpu()`, `.numpy()` with no argument: what the migration reads
    in full (transforms/spmd.py `_read` writes `.full_tensor()` before exactly these)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in HOST_READS
            and not node.args and not node.keywords)


def _plain(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_plain(e) for e in target.elts)


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _reads(function: ast.FunctionDef, derived: set[str], parents: dict[int, ast.AST], skip: set[int],
           sharded_from: int, known: Callable[[ast.Call], bool]) -> int | None:
    """How many statements of the function read a DTensor on the host, when every use of a
    derived name is one the migration keeps right (the module docstring), else None."""
    statements: set[int] = set()
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id in derived and isinstance(node.ctx, ast.Load)) or id(node) in skip:
            continue
        top, read = node, False
        for link in _chain(node, parents):
            top = link
            read = read or _host_read(link)
        statement = _statement(top, parents)
        if read:
            if not isinstance(statement, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
                return None
            if node.lineno <= sharded_from:
                return None  # read before the batch is a DTensor: it is a plain tensor there
            statements.add(id(statement))
            continue
        parent = parents.get(id(top))
        if isinstance(parent, ast.Expr) and isinstance(top, ast.Call):
            continue  # `loss.backward()`, `optimizer.step()`: a call made for what it does
        if any(isinstance(p, ast.Call) and not known(p) for p in _callers(top, parents)):
            return None  # handed to a function whose work on a DTensor is not known
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _within(top, statement.value):
            continue  # computes another DTensor (`_derived` made its target one)
        if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and known(statement.value)
                and last_name(statement.value.func) in _IN_PLACE):
            continue  # `clip_grad_norm_(model.parameters(), 1.0)`: works on the gradients in place
        if isinstance(statement, (ast.For, ast.AsyncFor)) and _within(top, statement.iter):
            continue
        if _in_comprehension_iter(top, parents):
            continue
        return None
    return len(statements)


def _callers(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[ast.AST]:
    """The calls `node` is an argument of, up to its statement."""
    current = node
    while True:
        parent = parents.get(id(current))
        if parent is None or isinstance(parent, ast.stmt):
            return
        if isinstance(parent, ast.comprehension) and parent.iter is current:
            return  # what the comprehension makes of the items is judged through its target
        if isinstance(parent, ast.Call) and parent.func is not current:
            yield parent
        current = parent


def _chain(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[ast.AST]:
    """The attribute reads, calls and subscripts that `node` is the root of, inside out."""
    current = node
    while True:
        parent = parents.get(id(current))
        if (isinstance(parent, ast.Attribute) and parent.value is current
                or isinstance(parent, ast.Call) and parent.func is current
                or isinstance(parent, ast.Subscript) and parent.value is current):
            current = parent
            yield current
        else:
            return


def _statement(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parents.get(id(current))
    return current


def _within(node: ast.AST, tree: ast.AST | None) -> bool:
    return tree is not None and any(n is node for n in ast.walk(tree))


def _in_comprehension_iter(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        parent = parents.get(id(current))
        if isinstance(parent, ast.comprehension) and parent.iter is current:
            return True
        current = parent
    return False
