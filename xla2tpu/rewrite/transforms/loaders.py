"""Device loaders (DAT01, DAT02): iterate the plain loader, move each batch where it is used.

`pl.MpDeviceLoader(loader, device)` and `pl.ParallelLoader(loader, [device])
.per_device_loader(device)` uploaded every batch to the XLA device. TorchTPU has no such
wrapper, so the wrapper goes and the loop that consumes it moves the batch itself:

    for x, y in pl.MpDeviceLoader(loader, device):      for x, y in loader:
        ...                                         →         x, y = x.to(device), y.to(device)
                                                              ...

Recognised consumers: the wrapper is the iterable of a `for` loop (directly, or through
`enumerate(...)` / `tqdm(...)`); or it is assigned to a name that the same function only
iterates that way (or takes the `len()` of) after the assignment; or it is passed to a
function of this module (`train_loop_fn(pl.MpDeviceLoader(loader, device))`, the classic
torch_xla shape) whose parameter is only used that way. Anything else (`iter()`/`next()`,
a comprehension, a method or imported function) returns None: the rule then reports the
site as manual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from xla2tpu.detect import loader_site
from xla2tpu.rewrite.transforms.base import CallSite, Edit, Rewrite, transform
from xla2tpu.rewrite.transforms.aliases import without_alias
from xla2tpu.rewrite.transforms.forms import render_statements, tuple_items

# Calls that iterate their first argument unchanged, yielding its items (or (i, item)).
_PASS_THROUGH = loader_site.PASS_THROUGH
_MOVE_ONE = loader_site.MOVE_ONE



@transform("mp-device-loader")
def mp_device_loader(site: CallSite) -> Rewrite | None:
    """`pl.MpDeviceLoader(loader, device)` → `loader`, with the batch moves in its loop(s)."""
    loader, device = site.args.get("loader"), site.args.get("device")
    if loader is None or device is None:
        return None
    edits = _batch_moves(site, site.original, site.parents, device)
    if edits is None:
        return None
    return Rewrite(expression=loader, later=edits[0] + (without_alias(site, site.original, loader) or []), imports=edits[1])


@transform("parallel-loader")
def parallel_loader(site: CallSite) -> Rewrite | None:
    """`pl.ParallelLoader(loader, [device]).per_device_loader(device)` → `loader`, as above.

    Also `p = pl.ParallelLoader(loader, [device])` followed by uses of
    `p.per_device_loader(device)`: `p` becomes the plain loader and each use becomes `p`.
    """
    loader, devices = site.args.get("loader"), site.args.get("devices")
    items = tuple_items(devices) if devices is not None else None
    if loader is None or items is None or len(items) != 1:
        return None
    found = _per_device_call(site.original, site.parents)
    alias = None
    if found is not None:
        uses = [found]
        alias = without_alias(site, found[0], loader)
    else:
        parent = site.parents[-1] if site.parents else None
        if not (
            isinstance(parent, cst.Assign)
            and parent.value is site.original
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return None
        region = _Uses(parent.targets[0].target.value, parent)
        _region(site, site.parents).visit(region)
        calls = [_per_device_call(node, parents) for node, parents in region.found]
        if region.early or not calls or None in calls:
            return None
        uses = calls  # type: ignore[assignment]
        alias = without_alias(site, site.original, loader)
    later: list[Edit] = []
    imports: set[str] = set()
    for outer, parents in uses:
        edits = _batch_moves(site, outer, parents, items[0])
        if edits is None:
            return None
        # `.per_device_loader(device)` goes; what it was called on is now the plain loader.
        later += [(outer, _unwrap_per_device), *edits[0]]
        imports |= edits[1]
    return Rewrite(expression=loader, later=later + (alias or []), imports=imports)


def _per_device_call(node: cst.CSTNode, parents: list[cst.CSTNode]) -> tuple[cst.Call, list[cst.CSTNode]] | None:
    """`node.per_device_loader(...)` around `node`, with that call's own ancestors."""
    if len(parents) < 2:
        return None
    attribute, outer = parents[-1], parents[-2]
    if (
        isinstance(attribute, cst.Attribute)
        and attribute.value is node
        and attribute.attr.value == "per_device_loader"
        and isinstance(outer, cst.Call)
        and outer.func is attribute
    ):
        return outer, parents[:-2]
    return None


def _unwrap_per_device(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return node.func.value


def _batch_moves(
    site: CallSite, node: cst.CSTNode, parents: list[cst.CSTNode], device: cst.BaseExpression
) -> tuple[list[Edit], set[str]] | None:
    """Edits adding the batch moves to every loop consuming `node` (parents: its ancestors)."""
    callee = _callee_parameter(site, node, parents)
    if callee is not None:
        return _callee_moves(site, callee, parents, device)
    found = _consumers(site, node, parents)
    if not found or not (found[0] or found[1]):
        return None
    loops, callees = found
    if _loop_over(node, parents) is None:
        owner = next(p for p in reversed(parents) if isinstance(p, (cst.IndentedBlock, cst.Module)))
        if not all(_device_bound(device, owner, ancestors) for _, _, ancestors in loops):
            return None
    edits: list[Edit] = []
    imports: set[str] = set()
    owner = next(p for p in reversed(parents) if isinstance(p, (cst.IndentedBlock, cst.Module)))
    for callee, callee_parents in callees:  # the variable handed to a function that loops over it
        moved = _callee_moves(site, callee, callee_parents, device, owner)
        if moved is None:
            return None
        edits += moved[0]
        imports |= moved[1]
    for loop, target, _ in loops:
        move = _move(site, target, device)
        if move is None:
            return None
        edits.append((loop, _prepend(move.statements or [])))
        imports |= move.imports
    return edits, imports


def _callee_parameter(
    site: CallSite, node: cst.CSTNode, parents: list[cst.CSTNode]
) -> tuple[cst.FunctionDef, list[str], str] | None:
    """`(f, path, p)` when `node` is passed as parameter `p` of `f`, a function defined once
    in this module (`path`: see `_definition_path`)."""
    if len(parents) < 2 or not isinstance(parents[-1], cst.Arg) or parents[-1].value is not node:
        return None
    arg, call = parents[-1], parents[-2]
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name) or arg.star:
        return None
    finder = _Definitions(call.func.value)
    site.module.visit(finder)
    if len(finder.found) != 1:
        return None
    function = finder.found[0]
    path = _definition_path(site, function, parents)
    if path is None:
        return None
    params = function.params
    if arg.keyword is not None:
        names = [p.name.value for p in (*params.params, *params.kwonly_params)]
        name = arg.keyword.value if arg.keyword.value in names else None
    else:
        position = [a for a in call.args if a.keyword is None].index(arg)
        positional = [*params.posonly_params, *params.params]
        name = positional[position].name.value if position < len(positional) else None
    return (function, path, name) if name is not None else None


def _definition_path(site: CallSite, function: cst.FunctionDef, parents: list[cst.CSTNode]) -> list[str] | None:
    """The names of the functions leading from the module to `function` (its own last), when
    the call's name means it: defined at module level or directly in an enclosing function
    (no class in between), and not rebound as a parameter of an enclosing function."""
    name = function.name.value
    scopes = [p for p in parents if isinstance(p, (cst.FunctionDef, cst.ClassDef))]
    for outer in scopes:
        if isinstance(outer, cst.FunctionDef):
            params = outer.params
            if any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
                return None
    if any(statement is function for statement in site.module.body):
        return [name]
    for depth, outer in enumerate(scopes):
        block = outer.body
        if isinstance(block, cst.IndentedBlock) and any(s is function for s in block.body):
            chain = scopes[: depth + 1]
            if not all(isinstance(scope, cst.FunctionDef) for scope in chain):
                return None
            return [scope.name.value for scope in chain] + [name]
    return None


class _Definitions(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[cst.FunctionDef] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Definitions are statements: expressions, the bulk of a module, cannot hold one.
        return not isinstance(node, cst.BaseExpression) and super().on_visit(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == self.name:
            self.found.append(node)


def _callee_moves(
    site: CallSite,
    callee: tuple[cst.FunctionDef, list[str], str],
    parents: list[cst.CSTNode],
    device: cst.BaseExpression,
    owner: cst.CSTNode | None = None,
) -> tuple[list[Edit], set[str]] | None:
    """Moves in the loops of the called function over its parameter.

    The function may already have been rewritten (it is usually defined above the call),
    so the edit is made on the module when the pass leaves it: it follows the function
    names of `path` down to the function and finds its loops over the parameter, which no
    rule rewrites. Only the nodes on that path are rebuilt, so every other node (imports
    in particular) keeps its identity for the passes that follow.
    """
    function, path, parameter = callee
    found = _name_uses(function.body, parameter, None)
    if not found or not found[0]:
        return None
    loops = found[0]
    imports: set[str] = set()
    if not _visible(device, function, parents):
        parameter_device = _passed_as(device, function, parents[-2])
        if parameter_device is not None:
            device = cst.Name(parameter_device)
        elif owner is not None and not any(p is owner for p in parents):
            return None  # the wrapper was made on one path only: other paths reach the loop too
        else:
            device = cst.SimpleString('"tpu"')  # TorchTPU's one device per process
    moves = []
    for _loop, target, _ in loops:
        move = _move(site, target, device)
        if move is None:
            return None
        moves.append(move.statements or [])
        imports |= move.imports

    def edit(module: cst.CSTNode) -> cst.CSTNode:
        return _along(module, path, lambda found: found.visit(_LoopEditor(parameter, moves)))

    return [(site.module, edit)], imports


def _along(node: cst.CSTNode, path: list[str], edit: Callable[[cst.FunctionDef], cst.CSTNode]) -> cst.CSTNode:
    """`node` with the function reached through the names of `path` replaced by `edit(function)`."""
    body = node.body if isinstance(node, cst.Module) else node.body.body  # type: ignore[attr-defined]
    statements = list(body)
    for index, statement in enumerate(statements):
        if isinstance(statement, cst.FunctionDef) and statement.name.value == path[0]:
            statements[index] = edit(statement) if len(path) == 1 else _along(statement, path[1:], edit)
            break
    if isinstance(node, cst.Module):
        return node.with_changes(body=statements)
    return node.with_changes(body=node.body.with_changes(body=statements))  # type: ignore[attr-defined]


def _passed_as(device: cst.BaseExpression, function: cst.FunctionDef, call: cst.CSTNode) -> str | None:
    """loader_site.passed_as: the parameter of `function` to which `call` passes an argument
    spelled as `device` (`eval_on_val(val_loader, model, device)`)."""
    if not isinstance(call, cst.Call):
        return None
    spelled = _code([cst.Expr(device)])
    params = function.params
    positional = [*params.posonly_params, *params.params]
    names = [p.name.value for p in (*params.params, *params.kwonly_params)]
    for position, argument in enumerate(call.args):
        if argument.star:
            return None
        if _code([cst.Expr(argument.value)]) != spelled:
            continue
        if argument.keyword is None:
            return positional[position].name.value if position < len(positional) else None
        if argument.keyword.value in names:
            return argument.keyword.value
    return None


def _visible(device: cst.BaseExpression, function: cst.FunctionDef, parents: list[cst.CSTNode]) -> bool:
    """Whether `device` means the same inside `function`: no free name, or a closure over the caller."""
    if isinstance(device, cst.Call) or not isinstance(device, (cst.Name, cst.Attribute)):
        return not _free_names(device)
    caller = next((p for p in reversed(parents) if isinstance(p, cst.FunctionDef)), None)
    if caller is None:
        return True  # a module-level name is visible everywhere
    finder = _Definitions(function.name.value)
    caller.body.visit(finder)
    return any(found is function for found in finder.found)


def _free_names(node: cst.CSTNode) -> bool:
    """True when `node` reads a plain name other than a library root (`torch.device("tpu")` reads none)."""

    class Names(cst.CSTVisitor):
        found = False

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Name(self, name: cst.Name) -> None:
            if name.value not in ("torch",):
                self.found = True

    names = Names()
    node.visit(names)
    return names.found


class _LoopEditor(cst.CSTTransformer):
    """Visiting one function: prepends `moves[i]` to its i-th loop over `parameter`."""

    def __init__(self, parameter: str, moves: list[list[cst.BaseStatement]]) -> None:
        super().__init__()
        self.parameter = parameter
        self.moves = moves
        self.depth = 0
        self.seen = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        return updated_node

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if self.depth != 1 or _iterated_name(updated_node) != self.parameter or self.seen >= len(self.moves):
            return updated_node
        self.seen += 1
        return _prepend(self.moves[self.seen - 1])(updated_node)  # type: ignore[return-value]


def _iterated_name(loop: cst.For) -> str | None:
    """The plain name a loop iterates, directly or through a pass-through call."""
    source = loop.iter
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in _PASS_THROUGH:
        source = source.args[0].value if source.args else source
    return source.value if isinstance(source, cst.Name) else None


Consumers = tuple[
    list[tuple[cst.For, cst.BaseAssignTargetExpression, list[cst.CSTNode]]],
    list[tuple[tuple[cst.FunctionDef, list[str], str], list[cst.CSTNode]]],
]


def _consumers(site: CallSite, node: cst.CSTNode, parents: list[cst.CSTNode]) -> Consumers | None:
    """The loops over `node`, and the functions of this module it is handed to (with the
    ancestors of that call): `node` iterated directly, or assigned to a variable that is
    then only iterated, measured with `len()` or passed to such a function
    (`train_loop_fn(train_device_loader, epoch)`, torch_xla's MNIST/ImageNet examples)."""
    loop = _loop_over(node, parents)
    if loop is not None:
        return [(*loop, parents)], []
    parent = parents[-1] if parents else None
    if not (
        isinstance(parent, cst.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Name)
    ):
        return None
    region = _region(site, parents)
    outside = parents[: next((i for i, p in enumerate(parents) if p is region), 0)]
    return _name_uses(region, parent.targets[0].target.value, parent, (site, outside))


def _region(site: CallSite, parents: list[cst.CSTNode]) -> cst.CSTNode:
    """The function (or module) body a local variable of the site lives in."""
    return next((p for p in reversed(parents) if isinstance(p, cst.FunctionDef)), site.module)


def _loop_over(
    node: cst.CSTNode, parents: list[cst.CSTNode]
) -> tuple[cst.For, cst.BaseAssignTargetExpression] | None:
    """The `for` loop (and its batch target) iterating `node`, directly or via a pass-through call."""
    if parents and isinstance(parents[-1], cst.For) and parents[-1].iter is node:
        return parents[-1], parents[-1].target
    if len(parents) >= 3 and isinstance(parents[-1], cst.Arg) and parents[-1].value is node:
        call, loop = parents[-2], parents[-3]
        if (
            isinstance(call, cst.Call)
            and call.args
            and call.args[0] is parents[-1]
            and parents[-1].keyword is None
            and isinstance(call.func, cst.Name)
            and call.func.value in _PASS_THROUGH
            and isinstance(loop, cst.For)
            and loop.iter is call
        ):
            if not _PASS_THROUGH[call.func.value]:
                return loop, loop.target
            pair = tuple_items(loop.target)
            if pair is not None and len(pair) == 2:
                return loop, pair[1]  # type: ignore[return-value]
    return None


class _Uses(cst.CSTVisitor):
    """Every read of the variable `name` in a region, with its ancestors (within the region).

    `early` is set when the name is read before `start` (None: the region's beginning).
    """

    def __init__(self, name: str, start: cst.CSTNode | None) -> None:
        super().__init__()
        self.name = name
        self.start = start
        self.started = start is None
        self.early = False
        self.found: list[tuple[cst.Name, list[cst.CSTNode]]] = []
        self._parents: list[cst.CSTNode] = []
        self._stores: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.start:
            self.started = True
            return False
        if isinstance(node, cst.AssignTarget):
            self._stores.update(id(name) for name in _bound_names(node.target))
        if isinstance(node, cst.Attribute):
            self._stores.add(id(node.attr))  # `x.name` is not the variable `name`
        if isinstance(node, cst.Name) and node.value == self.name and id(node) not in self._stores:
            if self.started:
                self.found.append((node, list(self._parents)))
            else:
                self.early = True
        self._parents.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._parents and self._parents[-1] is original_node:
            self._parents.pop()


def _bound_names(target: cst.BaseExpression) -> list[cst.Name]:
    """The names an assignment target stores to, through tuples, lists and stars
    (`dataset, loader, sampler = load()` stores `loader`; `loader.x = ...` reads it)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _bound_names(element.value)]
    return []


def _name_uses(
    region: cst.CSTNode, name: str, start: cst.CSTNode | None,
    handed: tuple[CallSite, list[cst.CSTNode]] | None = None,
) -> Consumers | None:
    """The loops over `name` after `start`, in document order (the order `_LoopEditor` meets
    them again), and, when `handed` gives the site and the ancestors of `region`, the
    functions of this module it is passed to; None when the name is also used otherwise
    (`len()` aside)."""
    uses = _Uses(name, start)
    region.visit(uses)
    if uses.early:
        return None
    loops, callees = [], []
    for node, parents in uses.found:
        if _is_len_argument(node, parents):
            continue
        loop = _loop_over(node, parents)
        if loop is not None:
            loops.append((*loop, [region, *parents]))
            continue
        full = [*handed[1], *parents] if handed is not None else []
        callee = _callee_parameter(handed[0], node, full) if handed is not None else None
        if callee is None:
            return None
        callees.append((callee, full))
    return loops, callees


def _device_bound(device: cst.BaseExpression, owner: cst.CSTNode, ancestors: list[cst.CSTNode]) -> bool:
    """Whether the device the wrapper was given (in the block `owner`) means the same
    wherever a loop (one of `ancestors`, from the variable's function or module down) runs,
    now that the loop moves its batch there (loader_site._device_bound): every name it reads
    bound on every path there, and a device that is not a variable (`xm.xla_device()`) only
    when the loop is in the wrapper's block, not on a path that skips it."""
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    device.visit(Names())
    if not isinstance(device, (cst.Name, cst.Attribute)) and not any(p is owner for p in ancestors):
        return False
    loop = next(p for p in reversed(ancestors) if isinstance(p, cst.For))
    chain = ancestors[: next(i for i, p in enumerate(ancestors) if p is loop) + 1]
    start = max((i for i, p in enumerate(chain) if isinstance(p, cst.FunctionDef)), default=0)
    return all(_bound_at(name, chain[start:]) for name in names)


def _bound_at(name: str, chain: list[cst.CSTNode]) -> bool:
    """Whether `name` is bound at the last node of `chain` (its ancestors from its function
    or module down): a parameter, a name the region never binds, or one bound on every path
    by a statement before it."""
    region = chain[0]
    if isinstance(region, cst.FunctionDef):
        params = region.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        if any(p.name.value == name for p in every):
            return True
    stores = _Stores(name)
    region.visit(stores)
    if not stores.found:
        return True
    for owner, child in zip(chain, chain[1:]):
        body = getattr(owner, "body", None)
        if isinstance(owner, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
            index = next((i for i, statement in enumerate(body) if statement is child), None)
            if index is not None and any(_binds(statement, name) for statement in body[:index]):
                return True
    return False


class _Stores(cst.CSTVisitor):
    """Whether a region assigns `name` anywhere (nested scopes too: that only says no more often)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.found |= any(n.value == self.name for n in _bound_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.found |= isinstance(node.target, cst.Name) and node.target.value == self.name

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.found |= isinstance(node.target, cst.Name) and node.target.value == self.name

    def visit_For(self, node: cst.For) -> None:
        self.found |= any(n.value == self.name for n in _bound_names(node.target))

    def visit_AsName(self, node: cst.AsName) -> None:
        self.found |= any(n.value == self.name for n in _bound_names(node.name))  # type: ignore[arg-type]

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.found |= isinstance(node.target, cst.Name) and node.target.value == self.name


def _binds(statement: cst.CSTNode, name: str) -> bool:
    """Whether running `statement` to its end binds `name` on every path through it."""
    if isinstance(statement, cst.SimpleStatementLine):
        return any(_binds(small, name) for small in statement.body)
    if isinstance(statement, cst.Assign):
        return any(n.value == name for target in statement.targets for n in _bound_names(target.target))
    if isinstance(statement, cst.AnnAssign):
        return statement.value is not None and isinstance(statement.target, cst.Name) and statement.target.value == name
    if isinstance(statement, cst.If):
        orelse = statement.orelse
        other = orelse if isinstance(orelse, cst.If) else orelse.body if orelse is not None else None
        return _block_binds(statement.body, name) and other is not None and (
            _binds(other, name) if isinstance(other, cst.If) else _block_binds(other, name))
    if isinstance(statement, cst.Try):
        normal = _block_binds(statement.body, name) or (statement.orelse is not None and _block_binds(statement.orelse.body, name))
        handled = normal and all(_block_binds(h.body, name) for h in statement.handlers)
        return handled or (statement.finalbody is not None and _block_binds(statement.finalbody.body, name))
    if isinstance(statement, cst.With):
        return _block_binds(statement.body, name)
    return False


def _block_binds(block: cst.BaseSuite, name: str) -> bool:
    return any(_binds(statement, name) for statement in block.body)


def _is_len_argument(node: cst.CSTNode, parents: list[cst.CSTNode]) -> bool:
    return (
        len(parents) >= 2
        and isinstance(parents[-1], cst.Arg)
        and isinstance(parents[-2], cst.Call)
        and isinstance(parents[-2].func, cst.Name)
        and parents[-2].func.value == "len"
    )


def _move(site: CallSite, target: cst.BaseExpression, device: cst.BaseExpression) -> Rewrite | None:
    """The statement moving the loop's batch variables to `device`."""
    if isinstance(target, cst.Name):
        return render_statements(site, [_MOVE_ONE], {"batch": target, "device": device})
    names = _names(target)
    if not names:
        return None
    tensors = [name for name in names if name.value != "_"]
    if not tensors:
        return None
    left = cst.Tuple([cst.Element(cst.Name(n.value)) for n in tensors], lpar=[], rpar=[])
    right = cst.Tuple(
        [cst.Element(cst.Call(cst.Attribute(cst.Name(n.value), cst.Name("to")), [cst.Arg(device)])) for n in tensors],
        lpar=[],
        rpar=[],
    )
    if len(tensors) == 1:
        left, right = left.elements[0].value, right.elements[0].value  # type: ignore[assignment]
    line = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(left)], right)])
    return Rewrite(statements=[line])


def _names(target: cst.BaseExpression) -> list[cst.Name] | None:
    """The names a (nested) tuple target binds, or None for starred, attribute or item targets."""
    if isinstance(target, cst.Name):
        return [target]
    items = tuple_items(target)
    if items is None:
        return None
    names: list[cst.Name] = []
    for item in items:
        inner = _names(item)
        if inner is None:
            return None
        names.extend(inner)
    return names


def _prepend(statements: list[cst.BaseStatement]) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit putting `statements` first in a loop body, unless they already are there
    (a function fed device loaders from two call sites gets its moves once)."""

    def edit(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.For)
        body = node.body
        if isinstance(body, cst.SimpleStatementSuite):
            body = cst.IndentedBlock([cst.SimpleStatementLine(body.body)])
        if _code(body.body[: len(statements)]) == _code(statements):
            return node
        return node.with_changes(body=body.with_changes(body=[*statements, *body.body]))

    return edit


def _code(statements: Sequence[cst.BaseStatement]) -> list[str]:
    return [cst.Module([]).code_for_node(statement).strip() for statement in statements]
