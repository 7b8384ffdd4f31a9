"""Where `x = pl.MpDeviceLoader(loader, device)` can become `x = loader` with the batch moves in
the loops that consume it, decided on CPython's tree before any edit (transforms/loaders.py
builds it on LibCST's and says which consumers it recognises), and whether the alias it
leaves goes (transforms/aliases.py). Nothing here imports LibCST.

The two trees name things differently: LibCST has a `Name` node for a definition's,
a parameter's, a keyword argument's, an import's or a `global`'s name, where CPython's tree
has a string. The builders read every such `Name` of the variable as a use, so each is read
here as one too (`_occurrences`). A reduced LibCST parse holds only some top-level
statements (reduction.py: those the plan keeps, the ones that read what they assign, the
functions they call), so the builders see only those: a decision that would read one it
leaves out is not taken here (None), and LibCST's pass decides as before.
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from xla2tpu.trees.blocks import blocks
from xla2tpu.trees.order import children
from xla2tpu.detect.scopes import DEFINITIONS, FUNCTIONS, SCOPED
from xla2tpu.detect.values import tuple_items

TEMPLATE, PARALLEL = "mp-device-loader", "parallel-loader"
PASS_THROUGH = {"tqdm": False, "enumerate": True}  # calls that iterate their first argument: yield (index, item)
Parents = tuple[ast.AST, ...]


class Undecided(Exception):
    """Only LibCST's pass can tell (the decision reads a statement it does not parse)."""


@dataclass(frozen=True)
class Module:
    """The module as the builders see it: its tree, and the top-level statements LibCST parses."""

    tree: ast.Module
    kept: Container[int]  # ids of the top-level statements LibCST's parse holds (reduction.Parsed)

    def check_kept(self, node: ast.AST, parents: Parents) -> None:
        """Undecided when `node` (its ancestors `parents`, the module first) is in a top-level
        statement LibCST does not parse."""
        top = (*parents, node)[1]
        if id(top) not in self.kept:
            raise Undecided


# The move of a batch a loop names with one variable (a tuple's items move with `.to`).
MOVE_ONE = "{batch} = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to({device}), {batch})\n"


def makeable(module: Module, call: ast.Call, args: dict, parents: Parents) -> tuple[bool, tuple[str, ...]] | None:
    """Whether the device loader `call` (its ancestors `parents`, the module first, the call
    last) can be rewritten (loaders.mp_device_loader), with the templates it spells; None:
    undecided."""
    if args.get("loader") is None or args.get("device") is None:
        return False, ()
    try:
        targets = _batch_moves(module, call, parents[:-1], args["device"])
    except Undecided:
        return None
    return _spelled(targets)


def _spelled(targets: list[ast.AST] | None) -> tuple[bool, tuple[str, ...]]:
    """Whether the moves can be written for `targets`, and the templates they spell."""
    if targets is None:
        return False, ()
    return True, (MOVE_ONE,) if any(isinstance(target, ast.Name) for target in targets) else ()


def parallel_makeable(module: Module, call: ast.Call, args: dict, parents: Parents
                      ) -> tuple[bool, tuple[str, ...], list[tuple[ast.Call, Parents]]] | None:
    """loaders.parallel_loader: whether `pl.ParallelLoader(loader, [device])` (its ancestors
    `parents`, the call last) can be rewritten, used as `.per_device_loader(device)` right
    away or through a variable; with the templates it spells and the per-device calls it
    unwraps (with their ancestors). None: undecided."""
    items = tuple_items(args.get("devices"))
    if args.get("loader") is None or items is None or len(items) != 1:
        return False, (), []
    try:
        uses = _per_device_uses(module, call, parents[:-1])
        targets: list[ast.AST] | None = None if uses is None else []
        for outer, outer_parents in uses or ():
            moved = _batch_moves(module, outer, outer_parents, items[0])
            if moved is None:
                targets = None
                break
            targets += moved  # type: ignore[operator]
    except Undecided:
        return None
    return (*_spelled(targets), list(uses or ()))


def _per_device_call(node: ast.AST, parents: Parents) -> tuple[ast.Call, Parents] | None:
    """`node.per_device_loader(...)` around `node`, with that call's own ancestors."""
    if len(parents) < 2:
        return None
    attribute, outer = parents[-1], parents[-2]
    if (isinstance(attribute, ast.Attribute) and attribute.value is node and attribute.attr == "per_device_loader"
            and isinstance(outer, ast.Call) and outer.func is attribute):
        return outer, parents[:-2]
    return None


def _per_device_uses(module: Module, call: ast.Call, parents: Parents) -> list[tuple[ast.Call, Parents]] | None:
    """The `.per_device_loader(...)` calls on the parallel loader: on the call itself, or on
    every use of the variable it is assigned to (their ancestors from the variable's function,
    as the builder's visitor gives them); None when it is used otherwise."""
    found = _per_device_call(call, parents)
    if found is not None:
        return [found]
    variable = _variable(module, call, parents)
    if variable is None:
        return None
    statement, name, region = variable
    calls = []
    for node, uses_parents in _occurrences(region, name, (), skip=statement):
        if node is None or isinstance(node, str) or _before(node, statement):
            return None
        found = _per_device_call(node, uses_parents)
        if found is None:
            return None
        calls.append(found)
    return calls or None


def _batch_moves(module: Module, node: ast.AST, parents: Parents, device: ast.AST) -> list[ast.AST] | None:
    """loaders._batch_moves: the batch targets of every loop consuming `node` (whose
    ancestors are `parents`), each one the moves can be written for; None if not."""
    callee = _callee_parameter(module, node, parents)
    if callee is not None:
        return _callee_moves(*callee)
    found = _consumers(module, node, parents)
    if found is None or not (found[0] or found[1]):
        return None
    loops, callees = found
    if _loop_over(node, parents) is None and not all(_device_bound(device, parents[-2], a) for _, _, a in loops):
        return None
    targets = [target for _, target, _ in loops]
    for function, parameter, call_parents in callees:
        if not _device_reaches(device, function, call_parents, parents[-2]):
            return None
        moved = _callee_moves(function, parameter)
        if moved is None:
            return None
        targets += moved
    return targets if all(map(_move, targets)) else None


def _consumers(module: Module, node: ast.AST, parents: Parents) -> tuple[list, list] | None:
    """loaders._consumers: the loops over `node`, directly or through a variable it is
    assigned to, and the functions of the module that variable is handed to."""
    loop = _loop_over(node, parents)
    if loop is not None:
        return [(*loop, parents)], []
    variable = _variable(module, node, parents)
    if variable is None:
        return None
    statement, name, region = variable
    prefix = parents[:next((i for i, p in enumerate(parents) if p is region), 0)]
    return _name_uses(region, prefix, name, statement, module)


def _assigned_name(node: ast.AST, parents: Parents) -> tuple[ast.Assign, str] | None:
    """`x = <node>` (one plain name), the statement that is `node`'s parent, and `x`."""
    statement = parents[-1]
    if (isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return statement, statement.targets[0].id
    return None


def _variable(module: Module, node: ast.AST, parents: Parents) -> tuple[ast.Assign, str, ast.AST] | None:
    """`x = <node>`: the statement, `x`, and the function (or module) `x` lives in, as the
    builders find it (loaders._region)."""
    assigned = _assigned_name(node, parents)
    if assigned is None:
        return None
    region = next((p for p in reversed(parents) if isinstance(p, FUNCTIONS)), module.tree)
    if region is module.tree:
        _module_region(module, assigned[1])
    return (*assigned, region)


def _module_region(module: Module, name: str) -> None:
    """A module-level variable is read wherever the module is: not in what LibCST leaves out."""
    for top in module.tree.body:
        if id(top) not in module.kept and next(_occurrences(top, name, (module.tree,)), None) is not None:
            raise Undecided


def _name_uses(region: ast.AST, prefix: Parents, name: str, start: ast.stmt | None,
               handed: Module | None = None) -> tuple[list, list] | None:
    """loaders._name_uses: the loops over the variable `name` after `start` in `region` (whose
    ancestors are `prefix`), and, when the module is `handed`, the module's functions it is
    passed to; None when it is used otherwise."""
    loops, callees = [], []
    for node, parents in _occurrences(region, name, prefix, skip=start):
        if node is None or (start is not None and _before(parents[-1] if isinstance(node, str) else node, start)):
            return None  # a name LibCST's tree has and CPython's spells as a string, or a use before the start
        if _is_len_argument(node, parents):
            continue
        loop = _loop_over(node, parents)
        if loop is not None:
            loops.append((*loop, parents))
            continue
        callee = _callee_parameter(handed, node, parents) if handed is not None else None
        if callee is None:
            return None
        callees.append((*callee, parents))
    return loops, callees


def _device_bound(device: ast.AST, owner: ast.AST, ancestors: Parents) -> bool:
    """loaders._device_bound: whether the device the wrapper was given (in a block of
    `owner`) means the same wherever a loop (one of `ancestors`, which run from the module
    to below the loop) runs, now that the loop moves its batch there. A wrapper in a branch
    the loop is not in (`if use_xla: loader = pl.MpDeviceLoader(loader, device)`) leaves
    other paths that iterate the plain loader: the move is right there only to a variable
    each of them binds to its own device, not to an expression (`xm.xla_device()`)."""
    names = {n.id for n in ast.walk(device) if isinstance(n, ast.Name)}
    if not isinstance(device, (ast.Name, ast.Attribute)) and not any(p is owner for p in ancestors):
        return False
    loop = next(p for p in reversed(ancestors) if isinstance(p, (ast.For, ast.AsyncFor)))
    chain = ancestors[: ancestors.index(loop) + 1]
    region = next((p for p in reversed(chain) if isinstance(p, FUNCTIONS)), chain[0])
    chain = chain[chain.index(region):]
    return all(_bound_at(name, region, chain) for name in names)


def _bound_at(name: str, region: ast.AST, chain: Parents) -> bool:
    """Whether `name` is bound at the last statement of `chain` (its ancestors from `region`
    down): a parameter, a name `region` never binds (a global, a closure's), or one bound
    on every path by a statement before it."""
    if isinstance(region, FUNCTIONS):
        arguments = region.args
        if name in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                    *filter(None, (arguments.vararg, arguments.kwarg)))}:
            return True
    if not any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(region)):
        return True
    for owner, child in zip(chain, chain[1:]):
        for block in ([owner.body] if owner is region else blocks(owner)):  # type: ignore[attr-defined]
            if any(statement is child for statement in block):
                index = next(i for i, statement in enumerate(block) if statement is child)
                if any(_binds(statement, name) for statement in block[:index]):
                    return True
    return False


def _binds(statement: ast.AST, name: str) -> bool:
    """Whether running `statement` to its end binds `name` on every path through it."""
    if isinstance(statement, ast.Assign):
        return any(isinstance(n, ast.Name) and n.id == name for target in statement.targets for n in ast.walk(target))
    if isinstance(statement, ast.AnnAssign):
        return statement.value is not None and isinstance(statement.target, ast.Name) and statement.target.id == name
    if isinstance(statement, (ast.If, ast.Try)) or type(statement).__name__ == "TryStar":
        paths = [statement.body, statement.orelse] if isinstance(statement, ast.If) else [
            statement.body + statement.orelse, *(h.body for h in statement.handlers)]  # type: ignore[attr-defined]
        return all(any(_binds(s, name) for s in path) for path in paths) or any(
            _binds(s, name) for s in getattr(statement, "finalbody", ()))
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return any(_binds(s, name) for s in statement.body)
    return False


def _before(node: ast.AST, start: ast.stmt) -> bool:
    return (node.lineno, node.col_offset) < (start.lineno, start.col_offset)  # type: ignore[attr-defined]


def _occurrences(root: ast.AST, name: str, prefix: Parents, skip: ast.AST | None = None
                 ) -> Iterator[tuple[ast.AST | str | None, Parents]]:
    """What LibCST's `_Uses` visitor finds of `name` under `root` (`prefix`: the ancestors of
    `root`): each `Name` read or written but as a plain assignment's target, with its
    ancestors; a name CPython's tree spells as a string (a definition's, a parameter's, an
    import's...) as (None, ancestors), or ("keyword", ancestors) for a keyword argument's
    name, which LibCST's visitor reads as a use that can only be `len(...)`'s."""
    stack: list[tuple[ast.AST, Parents]] = [(root, prefix)]
    while stack:
        node, parents = stack.pop()
        if node is skip:
            continue
        if isinstance(node, ast.Name):
            if node.id == name and not _assigned(node, parents):
                yield node, parents
            continue
        if _spells(node, name):
            yield (("keyword", (*parents, node)) if isinstance(node, ast.keyword) else (None, (*parents, node)))
        below = (*parents, node)
        stack.extend((child, below) for child in reversed(list(children(node))))


def _assigned(node: ast.Name, parents: Parents) -> bool:
    """Whether `node` is stored to by a plain assignment, also through tuples, lists and
    stars (`dataset, loader, sampler = load()`), as LibCST's `_Uses` reads its targets."""
    inner: ast.AST = node
    for parent in reversed(parents):
        if isinstance(parent, ast.Assign):
            return inner in parent.targets
        if not isinstance(parent, (ast.Tuple, ast.List, ast.Starred)) or not isinstance(node.ctx, ast.Store):
            return False
        inner = parent
    return False


def _spells(node: ast.AST, name: str) -> bool:
    """Whether `node` holds `name` as a string that LibCST's tree holds as a `Name`."""
    if isinstance(node, (*DEFINITIONS, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return getattr(node, "name", None) == name
    if isinstance(node, (ast.arg, ast.keyword)):
        return node.arg == name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.alias):
        return node.name.split(".")[0] == name or node.asname == name
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.MatchClass):
        return name in node.kwd_attrs
    return False


def _argument_of(node: ast.AST, parents: Parents) -> tuple[ast.Call, ast.AST] | None:
    """The call `node` is an argument of, and what LibCST's `Arg` holds it as: the node, or
    the `*x`/keyword around it."""
    parent = parents[-1]
    if isinstance(parent, ast.Call) and node in parent.args:
        return parent, node
    if isinstance(parent, (ast.Starred, ast.keyword)) and len(parents) > 1 and isinstance(parents[-2], ast.Call):
        call = parents[-2]
        if parent in call.args or parent in call.keywords:
            return call, parent
    return None


def _is_len_argument(node: ast.AST | str, parents: Parents) -> bool:
    if node == "keyword":  # `len(x=...)`: LibCST's Arg holds the keyword's name
        call = parents[-2] if len(parents) > 1 else None
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "len"
    found = _argument_of(node, parents)  # type: ignore[arg-type]
    return found is not None and isinstance(found[0].func, ast.Name) and found[0].func.id == "len"


def _loop_over(node: ast.AST | str, parents: Parents) -> tuple[ast.AST, ast.AST] | None:
    """loaders._loop_over: the `for` loop iterating `node`, directly or through a pass-through
    call, and the loop's batch target."""
    if isinstance(node, str):
        return None
    parent = parents[-1]
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is node:
        return parent, parent.target
    found = _argument_of(node, parents)
    if found is None:
        return None
    call, held = found
    # `for b in tqdm(x)`: the call is the loop's, one level up (two for `*x` or a keyword)
    loop = parents[-2] if held is node else parents[-3] if len(parents) > 2 else None
    ordered = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
    if not (ordered and ordered[0] is held and not (isinstance(held, ast.keyword) and held.arg is not None)
            and isinstance(call.func, ast.Name) and call.func.id in PASS_THROUGH
            and isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is call):
        return None
    if not PASS_THROUGH[call.func.id]:
        return loop, loop.target
    pair = tuple_items(loop.target)
    return (loop, pair[1]) if pair is not None and len(pair) == 2 else None


def _callee_parameter(module: Module, node: ast.AST | str, parents: Parents
                      ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """loaders._callee_parameter: (f, p) when `node` is passed as parameter `p` of `f`, a
    function defined once in the module, at module level or in a function around the call."""
    if isinstance(node, str):
        return None
    found = _argument_of(node, parents)
    if found is None:
        return None
    call, held = found
    if not isinstance(call.func, ast.Name) or isinstance(held, ast.Starred) or (
            isinstance(held, ast.keyword) and held.arg is None):
        return None
    definitions = []
    for definition, ancestors in _definitions(module.tree):
        if definition.name == call.func.id:
            module.check_kept(definition, ancestors)  # the builder finds only those LibCST parsed
            definitions.append(definition)
    if len(definitions) != 1:
        return None
    function = definitions[0]
    if not _definition_reached(module, function, parents):
        return None
    params = function.args
    if isinstance(held, ast.keyword):
        name = held.arg if held.arg in [p.arg for p in (*params.args, *params.kwonlyargs)] else None
    else:
        position = call.args.index(node)  # type: ignore[arg-type]
        positional = [*params.posonlyargs, *params.args]
        name = positional[position].arg if position < len(positional) else None
    return (function, name) if name is not None else None


def _definitions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Parents]]:
    """Every function definition of the module, with its ancestors (definitions are statements)."""
    stack: list[tuple[ast.AST, Parents]] = [(tree, ())]
    while stack:
        node, parents = stack.pop()
        if isinstance(node, FUNCTIONS):
            yield node, parents
        if node is tree or isinstance(node, (ast.stmt, ast.ExceptHandler, ast.match_case)):
            stack.extend((child, (*parents, node)) for child in ast.iter_child_nodes(node)
                         if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)))


def _definition_reached(module: Module, function: ast.AST, parents: Parents) -> bool:
    """loaders._definition_path: the call's name means `function`: defined at module level or
    directly in a function around the call (no class between), not a parameter there."""
    name = function.name  # type: ignore[attr-defined]
    scopes = [p for p in parents if isinstance(p, DEFINITIONS)]
    for outer in scopes:
        if isinstance(outer, FUNCTIONS):
            params = outer.args
            if any(p.arg == name for p in (*params.posonlyargs, *params.args, *params.kwonlyargs)):
                return False
    if any(statement is function for statement in module.tree.body):
        return True
    for depth, outer in enumerate(scopes):
        if any(statement is function for statement in outer.body):
            return all(isinstance(scope, FUNCTIONS) for scope in scopes[: depth + 1])
    return False


def _device_reaches(device: ast.AST, function: ast.AST, call_parents: Parents, owner: ast.AST) -> bool:
    """loaders._callee_moves: whether the loops of `function`, which a call (the innermost
    of `call_parents`) hands the plain loader, can move the batch to the right device: the
    device is visible there, the call passes it to a parameter, or the wrapper was made in a
    block of `owner` the call is in, so that "tpu" (the process's one device) is right."""
    return (any(p is owner for p in call_parents) or _visible(device, function, call_parents)
            or passed_as(device, function, next(p for p in reversed(call_parents) if isinstance(p, ast.Call))) is not None)


def _visible(device: ast.AST, function: ast.AST, call_parents: Parents) -> bool:
    """loaders._visible: no free name (`torch` aside), or a closure over the caller's variable."""
    if not isinstance(device, (ast.Name, ast.Attribute)):
        return not any(isinstance(n, ast.Name) and n.id != "torch" for n in ast.walk(device))
    caller = next((p for p in reversed(call_parents) if isinstance(p, FUNCTIONS)), None)
    return caller is None or any(n is function for n in ast.walk(caller) if n is not caller)


def passed_as(device: ast.AST, function: ast.AST, call: ast.Call) -> str | None:
    """The parameter of `function` to which `call` passes an argument spelled as `device`
    (`eval_on_val(val_loader, model, device)`): the device inside the function."""
    params = function.args  # type: ignore[attr-defined]
    spelled = ast.dump(device)
    positional = [*params.posonlyargs, *params.args]
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return None
        if ast.dump(argument) == spelled and position < len(positional):
            return positional[position].arg
    names = [p.arg for p in (*params.args, *params.kwonlyargs)]
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        if keyword.arg in names and ast.dump(keyword.value) == spelled:
            return keyword.arg
    return None


def _callee_moves(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> list[ast.AST] | None:
    """loaders._callee_moves: the batch targets of the called function's loops over its
    parameter, when it loops over it and only so."""
    body = ast.Module(body=function.body, type_ignores=[])  # its body alone, as LibCST's visitor reads it
    found = _name_uses(body, (function,), parameter, None)
    if found is None or not found[0]:
        return None
    targets = [target for _, target, _ in found[0]]
    return targets if all(map(_move, targets)) else None


def _move(target: ast.AST) -> bool:
    """loaders._move: the batch target names what to move (not only `_`)."""
    names = _names(target)
    return names is not None and (isinstance(target, ast.Name) or any(name != "_" for name in names))


def _names(target: ast.AST) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    items = tuple_items(target)
    if items is None:
        return None
    found: list[str] = []
    for item in items:
        inner = _names(item)
        if inner is None:
            return None
        found += inner
    return found


def alias_goes(call: ast.Call, loader: ast.AST, parents: Parents) -> bool:
    """aliases.without_alias: whether `x = <call>`, which the fix makes `x = loader`, goes
    (and every read of `x` in its function becomes `loader`)."""
    assigned = _assigned_name(call, parents)
    if not isinstance(loader, ast.Name) or assigned is None:
        return False
    (statement, alias), name = assigned, loader.id
    if alias == name:
        return True
    function = None
    for parent in reversed(parents):
        if isinstance(parent, FUNCTIONS):
            function = parent
            break
        if isinstance(parent, SCOPED):
            return False
    if function is None:
        return False
    bindings = _Bindings({alias, name}, statement)
    bindings.visit(function, 0)
    return not bindings.unclear and bindings.total.get(alias, 0) == 1 and not bindings.after.get(name, 0)


class _Bindings:
    """aliases._Bindings on CPython's tree: how often each of `names` is bound in a function,
    and how often from `start` on; `unclear` when one is declared global/nonlocal or bound
    in a nested scope."""

    def __init__(self, names: set[str], start: ast.stmt) -> None:
        self.names, self.start = names, start
        self.total: dict[str, int] = {}
        self.after: dict[str, int] = {}
        self.unclear = False

    def visit(self, node: ast.AST, depth: int) -> None:
        if isinstance(node, SCOPED):
            depth += 1
            if isinstance(node, DEFINITIONS):
                self._name(node.name, node, depth)
        if isinstance(node, (ast.Global, ast.Nonlocal)) and self.names.intersection(node.names):
            self.unclear = True
        for target in _bound(node):
            self._bind(target, depth)
        if isinstance(node, ast.arg):
            self._name(node.arg, node, depth)
        elif isinstance(node, ast.alias):
            bound = node.asname or (node.name if "." not in node.name else None)
            if bound is not None:
                self._name(bound, node, depth)
        elif isinstance(node, ast.ExceptHandler) and node.name is not None:
            self._name(node.name, node, depth)
        for child in ast.iter_child_nodes(node):
            self.visit(child, depth)

    def _bind(self, target: ast.AST, depth: int) -> None:
        if isinstance(target, ast.Name):
            self._name(target.id, target, depth)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind(element, depth)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, depth)

    def _name(self, name: str, where: ast.AST, depth: int) -> None:
        if name not in self.names:
            return
        if depth > 1:
            self.unclear = True
        self.total[name] = self.total.get(name, 0) + 1
        if not _before(where, self.start):
            self.after[name] = self.after.get(name, 0) + 1


def _bound(node: ast.AST) -> Sequence[ast.AST]:
    """The targets `node` binds as LibCST's `_Bindings` reads them."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    if isinstance(node, ast.Delete):
        return node.targets
    return ()
