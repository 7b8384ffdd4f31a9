"""What one module shows the rest of its project (project/model.py reads these): the imports it
makes, the names it defines, which of them record or compute whether torch_xla is there,
and what it hands to `init_process_group` as a backend.

A module that cannot hold an idiom (the byte prefilter) is read with a regex over its
import lines only: its imports still link the modules that can, and a full CPython parse of
every file would cost more than the whole cold run may grow (bench/project_share.py).
Summaries are plain data, stored between runs by file size and time (cache.py).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from xla2tpu.trees.blocks import blocks, catches_import_error, module_level
from xla2tpu.sources.decode import DecodeError, decode
from xla2tpu.project.facts import ENTRY_POINTS, Facts
from xla2tpu.project.facts import compute as compute_facts
from xla2tpu.project.facts import is_main
from xla2tpu.sources.prefilter import holds_token, may_hold_idiom
from xla2tpu.project.env_reads import variables_read, variables_written
from xla2tpu.project.process_groups import own_group
from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.trees.names import last_name

# A string that names the torch_xla package: `find_spec("torch_xla")`, `RequirementCache("torch_xla>=2.1")`.
_PACKAGE = re.compile(r"\btorch[_-]xla\b")
# What a module that starts processes, joins a group, wraps a model in DDP or runs SPMD says.
_PROGRAM = re.compile(r"spawn|launch|run_multiprocess|start_processes|init_process_group|DistributedDataParallel|_mp_fn"
                      r"|_mp_entry|FullyShardedDataParallel|fully_shard|use_spmd|XLA_USE_SPMD|fsdp_v2")
# A launcher entry point (facts.ENTRY_POINTS) defined, and a launch of some module's (`mod._mp_fn`).
_ENTRY = re.compile(rb"^[ \t]*def[ \t]+(?:" + b"|".join(name.encode() for name in ENTRY_POINTS) + rb")\b", re.M)
_ENTRY_LAUNCH = re.compile(r"\.(?:" + "|".join(ENTRY_POINTS) + r")\b")
# `import a.b as c, d` and `from .a import (b as c, d)` at any indentation: the light read.
_IMPORT_LINE = re.compile(
    rb"^[ \t]*(?:import[ \t]+([\w., \t]+)|from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\r\n#;]+))", re.M)


@dataclass(frozen=True)
class Import:
    level: int  # dots of a relative import
    module: str  # as written after `from` (or the imported module of `import`)
    name: str | None  # the name taken from the module; None for `import module`
    bound: str  # the name the import binds
    line: int
    top: bool  # run when the module loads (not inside a def): what the module re-exports


@dataclass(frozen=True)
class Definition:
    """A module-level name that holds or computes whether torch_xla is installed."""

    name: str
    line: int
    text: str  # its first line, shortened
    direct: bool  # probes torch_xla itself (a guarded import, a package probe)
    reads: tuple[str, ...]  # module-level names it reads: a probe when one of them is


@dataclass(frozen=True)
class Site:
    """A place in the module: a name handed to `init_process_group` as the backend, or a
    name (variable, class attribute) set to the string "xla"."""

    name: str
    line: int
    col: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Summary:
    imports: tuple[Import, ...] = ()
    defined: frozenset[str] = frozenset()  # names bound at module level by anything but an import
    definitions: tuple[Definition, ...] = ()
    backend_names: tuple[Site, ...] = ()  # `init_process_group(device.dist_backend)`: `dist_backend`
    xla_values: tuple[Site, ...] = ()  # `dist_backend = "xla"`
    # Its own processes / SPMD / DDP facts (facts.py), which its imports inherit when it
    # is a program; None when the text shows none of them.
    facts: Facts | None = None
    main: bool = False  # has an `if __name__ == "__main__":` block
    # Can hold an idiom (the prefilter, or an entry point like `_mp_fn`: started by a torch_xla launcher), and
    # can show processes, a group, DDP or SPMD (`_PROGRAM`): what a light summary tells.
    idiom: bool = False
    program: bool = False
    full: bool = False  # parsed (False: light, from the import lines only)
    # Launches some module's entry point (`xmp.spawn(mod._mp_fn, ...)`, an xla_spawn.py-style
    # launcher): its migrated launch decides the processes of the modules that define one.
    launcher: bool = False
    # Defines an entry point (`def _mp_fn`) that such a launcher starts.
    entry: bool = False
    # The runtime variables it reads (env_reads.variables_read) and sets, those a rule may
    # match: a write of one elsewhere in the project is the input of this read.
    env_reads: frozenset[str] = frozenset()
    env_writes: frozenset[str] = frozenset()
    # Creates a process group a migrated launch's worker would clash with
    # (process_groups.own_group); a module not parsed is taken to when it names the call.
    own_group: bool = False


def light(data: bytes, prefiltered: bool | None = None) -> Summary:
    """What a regex reads of a module: its imports (all of them where it can hold an idiom,
    else those before its first top-level def or class, where a module's imports are),
    whether it has a `__main__` block. Enough to link the modules; `summarise` parses the
    ones that can matter (project/model.py). `prefiltered`: `may_hold_idiom(data)`, when known."""
    prefiltered = may_hold_idiom(data) if prefiltered is None else prefiltered
    entry = _ENTRY.search(data) is not None
    idiom = prefiltered or entry  # an entry point: started by a torch_xla launcher
    head = data if idiom else data[: _first_definition(data)]
    if not idiom:  # a module without a token shows neither a backend nor a program fact
        return Summary(imports=tuple(_import_lines(head)), own_group=b"init_process_group" in data)
    handed = tuple(_sites(_HANDED, data)) if b"init_process_group" in data or b"init_distributed" in data else ()
    # The pattern tries every line; the literal it ends with is rare and found far faster.
    valued = tuple(_sites(_XLA_VALUE, data)) if b"xla'" in data or b'xla"' in data else ()
    text = data.decode("utf-8", "replace")
    return Summary(imports=tuple(_import_lines(head)), backend_names=handed, xla_values=valued,
                   main=b"__main__" in data and _MAIN.search(data) is not None, idiom=idiom,
                   program=_PROGRAM.search(text) is not None, launcher=_ENTRY_LAUNCH.search(text) is not None,
                   entry=entry, env_reads=_runtime(variables_read(text)), env_writes=_runtime(variables_written(text)),
                   own_group=b"init_process_group" in data)


def summarise(data: bytes, canonical: Canonicaliser) -> Summary:
    """The full summary of a module's bytes (a light one when CPython cannot parse them);
    never raises for a problem in the input."""
    try:
        decoded = decode(data)
    except DecodeError:
        return light(data)
    if decoded.tree is None:
        return light(data)
    return of_tree(decoded.tree, decoded.text, canonical)


_MAIN = re.compile(rb"^if\s+__name__\s*==\s*[\"']__main__[\"']", re.M)
_DEFINITION = re.compile(rb"^(?:def|class|async def)\s", re.M)


# A name handed to `init_process_group` as the backend, and a name set to "xla" (the light
# read of what `_backends` finds on the tree).
_HANDED = re.compile(rb"\binit_(?:process_group|distributed)\(\s*(?:(?:dist_)?backend\s*=\s*)?(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*)\s*[,)]")
_XLA_VALUE = re.compile(rb"^[ \t]*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*(?P<value>[\"']xla[\"'])", re.M)


def _sites(pattern: re.Pattern[bytes], data: bytes):
    for match in pattern.finditer(data):
        at = match.start("value") if "value" in pattern.groupindex else match.start(1)
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        text = " ".join(data[line_start: line_end if line_end >= 0 else len(data)].decode("utf-8", "replace").split())
        col = len(data[line_start:at].decode("utf-8", "replace"))
        end = col + len(data[at: match.end("value") if "value" in pattern.groupindex else match.end(1)].decode("utf-8", "replace"))
        yield Site(match.group(1).decode("ascii"), data.count(b"\n", 0, at) + 1, col, end, text if len(text) <= 80 else text[:77] + "...")


def _first_definition(data: bytes) -> int:
    found = _DEFINITION.search(data)
    return found.start() if found is not None else len(data)


def of_tree(tree: ast.Module, text: str, canonical: Canonicaliser) -> Summary:
    lines = text.splitlines()
    imports: list[Import] = []
    defined: set[str] = set()
    definitions: list[Definition] = []
    for node, top in _statements(tree.body, True):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.extend(_imports(node, top))
    for node in module_level(tree.body):
        names = _bound(node)
        defined.update(names)
        for name in names:
            definition = _definition(name, node, lines, tree.body)
            if definition is not None:
                definitions.append(definition)
    backend_names, xla_values = _backends(tree, lines)
    facts = compute_facts(tree, text, canonical) if _PROGRAM.search(text) else None
    main = any(is_main(node) for node in tree.body)
    return Summary(tuple(imports), frozenset(defined), tuple(definitions), backend_names, xla_values, facts, main,
                   True, facts is not None, True, _ENTRY_LAUNCH.search(text) is not None,
                   env_reads=_runtime(variables_read(text)), env_writes=_runtime(variables_written(text)),
                   own_group=own_group(tree), entry=not defined.isdisjoint(ENTRY_POINTS))


def _runtime(names: frozenset[str]) -> frozenset[str]:
    """The variables that hold a prefilter token (what a rule may match)."""
    return frozenset(name for name in names if holds_token(name))


# The standard library's modules: an import of one never links two modules of a project.
_STDLIB = frozenset(name.encode() for name in sys.stdlib_module_names) | {b"__future__"}


def _import_lines(data: bytes) -> list[Import]:
    found = []
    line, counted = 1, 0
    for match in _IMPORT_LINE.finditer(data):
        first = match.group(1) or (b"" if match.group(2) else match.group(3))
        if first and first.split(b".", 1)[0].split(b",", 1)[0].strip() in _STDLIB and b"," not in first:
            continue
        plain, dots, module, names = (g.decode("utf-8", "replace") if g is not None else None for g in match.groups())
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        top = match.group(0)[:1] not in (b" ", b"\t")
        if plain is not None:
            for part in plain.split(","):
                words = part.split()
                if words and _dotted(words[0]):
                    bound = words[2] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                    found.append(Import(0, words[0], None, bound, line, top))
            continue
        for part in (names or "").strip("() \t").replace("\n", ",").split(","):
            words = part.split()
            if words and words[0].isidentifier():
                bound = words[2] if len(words) == 3 and words[1] == "as" else words[0]
                found.append(Import(len(dots or ""), module or "", words[0], bound, line, top))
    return found


def _dotted(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _statements(body: list[ast.stmt], top: bool):
    """Every statement, with whether it runs when the module loads (outside any def)."""
    for node in body:
        yield node, top
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for block in blocks(node):
            yield from _statements([s for s in block if isinstance(s, ast.stmt)], inner)


def _imports(node: ast.Import | ast.ImportFrom, top: bool) -> list[Import]:
    if isinstance(node, ast.Import):
        return [Import(0, a.name, None, a.asname or a.name.split(".")[0], node.lineno, top) for a in node.names]
    return [Import(node.level, node.module or "", a.name, a.asname or a.name, node.lineno, top)
            for a in node.names if a.name != "*"]


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
    return [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]


def _definition(name: str, node: ast.stmt, lines: list[str], body: list[ast.stmt]) -> Definition | None:
    """`name` as bound by `node`, when it may hold torch_xla availability: a yes/no function
    or a value that probes the package itself (`find_spec("torch_xla")`, an import under
    `except ImportError`), or that is false whenever a name it reads is (project/model.py decides
    which names those are, across modules)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        returns = [inner for inner in _own_nodes(node) if isinstance(inner, ast.Return)]
        passed_on = any(isinstance(r.value, (ast.Call, ast.Name, ast.Attribute)) for r in returns)
        if not returns or not all(_yes_no(r.value) for r in returns) or (passed_on and not PREDICATE.fullmatch(node.name)):
            return None  # a probe answers yes or no (a setup function that tests one is no probe)
        direct = _probes(node)
        reads = {n for inner in _own_nodes(node) if isinstance(inner, ast.If) for n in _false_unless(inner)}
        if len(returns) == 1 and returns[0].value is not None:
            reads.update(_answers(returns[0].value))
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        value = node.value
        guarded = isinstance(value, ast.Constant) and isinstance(value.value, bool) and _set_by_guarded_import(node, body)
        direct = guarded or _probes(value)
        reads = set(_answers(value))
    else:
        return None
    reads.discard(name)
    if not direct and not reads:
        return None
    text = " ".join(lines[node.lineno - 1].split()) if node.lineno <= len(lines) else name
    return Definition(name, node.lineno, text if len(text) <= 80 else text[:77] + "...", direct, tuple(sorted(reads)))


# The name of a function that answers a yes/no question: only such a one may pass on the
# value of another call or name (`return _XLA_AVAILABLE`; `get_device()` returns a device).
PREDICATE = re.compile(r"_*(?:is|has|have|use|uses|can|should|check|supports?)_\w+|\w*(?:available|enabled|installed|supported)\w*", re.I)


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef):
    """The nodes of a function's body, not those of the functions and classes inside it."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _yes_no(value: ast.expr | None) -> bool:
    """An expression a yes/no function may return."""
    if value is None or (isinstance(value, ast.Constant) and value.value in (True, False, None)):
        return True
    return isinstance(value, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Call, ast.Name, ast.Attribute))


def _false_unless(test_holder: ast.If):
    """The names `if not A: return False` makes the function's answer depend on."""
    test = test_holder.test
    body = test_holder.body
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(body[0], ast.Return):
        value = body[0].value
        if isinstance(value, ast.Constant) and value.value is False:
            yield from _answers(test.operand)


def _answers(node: ast.expr):
    """The names that make a value false when they are: `A`, `A()`, `A.b`, `bool(A)`,
    `A and B()`; not the arguments of other calls (`Model(use_xla=A)`), nor `not A` or
    `A or B`, which are true without A."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            yield from _answers(value)
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1:
            yield from _answers(node.args[0])
        else:
            yield from _answers(node.func)
    elif isinstance(node, ast.Attribute):
        yield from _answers(node.value)
    elif isinstance(node, ast.Name):
        yield node.id


def _probes(node: ast.AST) -> bool:
    """A package probe for torch_xla (`find_spec("torch_xla")`, any call given that name) or
    an import of it whose failure is caught."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and _PACKAGE.search(a.value) for a in inner.args
        ):
            return True
        if isinstance(inner, ast.Try) and _catches_import_error(inner) and _imports_xla(inner.body):
            return True
    return False


def _catches_import_error(node: ast.Try) -> bool:
    return any(catches_import_error(handler) for handler in node.handlers)


def _imports_xla(body: list[ast.stmt]) -> bool:
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import) and any(a.name.split(".")[0] == "torch_xla" for a in inner.names):
                return True
            if isinstance(inner, ast.ImportFrom) and not inner.level and (inner.module or "").split(".")[0] == "torch_xla":
                return True
    return False


def _set_by_guarded_import(node: ast.stmt, body: list[ast.stmt]) -> bool:
    """`try: import torch_xla; X = True / except ImportError: X = False`: X is set in the
    blocks of a module-level `try` that imports torch_xla and catches its failure."""
    for statement in body:
        if isinstance(statement, ast.Try) and _catches_import_error(statement) and _imports_xla(statement.body):
            if any(node is inner for block in blocks(statement) for inner in block):
                return True
        elif isinstance(statement, (ast.If, ast.Try)):
            if _set_by_guarded_import(node, [s for block in blocks(statement) for s in block if isinstance(s, ast.stmt)]):
                return True
    return False


_PROCESS_GROUP = ("init_process_group", "init_distributed")


def _backends(tree: ast.Module, lines: list[str]) -> tuple[tuple[Site, ...], tuple[Site, ...]]:
    """Names handed to `init_process_group` as the backend (`device.dist_backend`), and names
    set to the string "xla" (`dist_backend = "xla"`, `self.backend = "xla"`)."""
    handed: list[Site] = []
    values: list[Site] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = last_name(node.func) or ""
            if callee in _PROCESS_GROUP:
                backend = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("backend", "dist_backend")), None)
                name = last_name(backend) if backend is not None else None
                if name is not None:
                    handed.append(_site(name, backend, lines))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and node.value.value == "xla":
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = last_name(target)
                if name is not None:
                    values.append(_site(name, node.value, lines))
    return tuple(handed), tuple(values)


def _site(name: str, node: ast.expr, lines: list[str]) -> Site:
    line = node.lineno
    text = " ".join(lines[line - 1].split()) if line <= len(lines) else name
    end = node.end_col_offset if node.end_lineno == line else len(lines[line - 1]) if line <= len(lines) else node.col_offset + 1
    return Site(name, line, node.col_offset, end or node.col_offset + 1, text if len(text) <= 80 else text[:77] + "...")
