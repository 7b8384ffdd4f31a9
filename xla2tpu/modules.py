"""What one module shows the rest of its project (project.py reads these): the imports it
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
from dataclasses import dataclass

from xla2tpu.ast_blocks import blocks
from xla2tpu.decode import DecodeError, decode
from xla2tpu.facts import Facts
from xla2tpu.facts import compute as compute_facts
from xla2tpu.prefilter import may_hold_idiom
from xla2tpu.canonical import Canonicaliser

# A string that names the torch_xla package: `find_spec("torch_xla")`, `RequirementCache("torch_xla>=2.1")`.
_PACKAGE = re.compile(r"\btorch[_-]xla\b")
# What a module that starts processes, joins a group, wraps a model in DDP or runs SPMD says.
_PROGRAM = re.compile(r"spawn|launch|run_multiprocess|start_processes|init_process_group|DistributedDataParallel"
                      r"|FullyShardedDataParallel|fully_shard|use_spmd|XLA_USE_SPMD|fsdp_v2")
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
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
    full: bool = False  # parsed (False: the import lines only)


def summarise(data: bytes, canonical: Canonicaliser) -> Summary:
    """The summary of a module's bytes; never raises for a problem in the input."""
    if not may_hold_idiom(data):
        return Summary(imports=tuple(_import_lines(data)))
    try:
        decoded = decode(data)
    except DecodeError:
        return Summary()
    if decoded.tree is None:
        return Summary(imports=tuple(_import_lines(data)))
    return of_tree(decoded.tree, decoded.text, canonical)


def of_tree(tree: ast.Module, text: str, canonical: Canonicaliser) -> Summary:
    lines = text.splitlines()
    imports: list[Import] = []
    defined: set[str] = set()
    definitions: list[Definition] = []
    for node, top in _statements(tree.body, True):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.extend(_imports(node, top))
    for node in _module_level(tree.body):
        names = _bound(node)
        defined.update(names)
        for name in names:
            definition = _definition(name, node, lines, tree.body)
            if definition is not None:
                definitions.append(definition)
    backend_names, xla_values = _backends(tree, lines)
    facts = compute_facts(tree, text, canonical) if _PROGRAM.search(text) else None
    return Summary(tuple(imports), frozenset(defined), tuple(definitions), backend_names, xla_values, facts, True)


def _import_lines(data: bytes) -> list[Import]:
    found = []
    for match in _IMPORT_LINE.finditer(data):
        plain, dots, module, names = (g.decode("utf-8", "replace") if g is not None else None for g in match.groups())
        line = data.count(b"\n", 0, match.start()) + 1
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


def _module_level(body: list[ast.stmt]):
    """The statements that run at module level, into `if` / `try` / `with` blocks."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for block in blocks(node):
                yield from _module_level([s for s in block if isinstance(s, ast.stmt)])


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


# A function that answers a yes/no question: only such a one is a probe when it reads one
# (a setup function that tests `is_torch_xla_available()` is not itself a probe).
_PREDICATE = re.compile(r"_?(?:is|has|use|uses|can|check|should|have)_\w+|\w*available\w*|\w*(?:xla|tpu)\w*", re.I)


def _definition(name: str, node: ast.stmt, lines: list[str], body: list[ast.stmt]) -> Definition | None:
    """`name` as bound by `node`, when it may hold torch_xla availability: a predicate
    function, or a value, that probes the package (or imports it under `except
    ImportError`), or reads a name that may (project.py decides those, across modules)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if not _PREDICATE.fullmatch(node.name):
            return None
        direct = _probes(node)
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
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


def _answers(node: ast.expr):
    """The names whose value a yes/no expression passes on: `A`, `f()`, `A and not B()`,
    `A.b` (its root); not the arguments of a call (`Model(use_xla=A)` is no answer of A's)."""
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _answers(value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield from _answers(node.operand)
    elif isinstance(node, ast.Call):
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
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if handler.type is None or any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds):
            return True
    return False


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
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
            if callee in _PROCESS_GROUP:
                backend = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("backend", "dist_backend")), None)
                name = _last_name(backend) if backend is not None else None
                if name is not None:
                    handed.append(_site(name, backend, lines))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and node.value.value == "xla":
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = _last_name(target)
                if name is not None:
                    values.append(_site(name, node.value, lines))
    return tuple(handed), tuple(values)


def _last_name(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _site(name: str, node: ast.expr, lines: list[str]) -> Site:
    line = node.lineno
    text = " ".join(lines[line - 1].split()) if line <= len(lines) else name
    end = node.end_col_offset if node.end_lineno == line else len(lines[line - 1]) if line <= len(lines) else node.col_offset + 1
    return Site(name, line, node.col_offset, end or node.col_offset + 1, text if len(text) <= 80 else text[:77] + "...")
