"""Availability flags: module-level names that record whether torch_xla imports
(`XLA_AVAILABLE = True` under `if is_torch_xla_available():`, `_HAS_XLA = False` in the
`except ImportError:` of a `try:` that imports it). Once the fixes take every read of one
(`if XLA_AVAILABLE: xm.mark_step()`), the flag goes with the probe that set it: made by
rewrite/dead_flags.py on LibCST's tree, told here on CPython's for `check`
(detect/after_fixes.py). The two walks judge the same shapes (see dead_flags.py)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Collection, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass

from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.sources.prefilter import holds_token
from xla2tpu.trees.blocks import catches_import_error


def flag_name(name: str) -> bool:
    """A name a flag of torch_xla's availability may have: one holding a prefilter token
    (`XLA_AVAILABLE`, `_HAS_XLA`, `USE_TPU`). Every statement that reads such a name holds
    the token, so no parse plan leaves it out (rewrite/parse_plan.py), and the project model
    knows which other modules import it (project/model.py, `Context.imported_flags`)."""
    return holds_token(name)


@dataclass(frozen=True)
class Assignment:
    node: ast.Assign
    chain: tuple[ast.AST, ...]  # the nodes from the module down to its block's owner
    probe: bool  # where a probe's result is recorded (dead_flags._assignments)

    @property
    def name(self) -> str:
        return self.node.targets[0].id  # type: ignore[attr-defined]


def assignments(tree: ast.Module, sites: Collection[int]) -> list[Assignment]:
    """dead_flags._assignments on CPython's tree: each assignment of a flag name by itself
    that the module runs when it loads (`sites`: the ids of the rule sites' nodes)."""
    return list(_walk(tree.body, (tree,), sites, False))


def _walk(body: list[ast.stmt], chain: tuple[ast.AST, ...], sites: Collection[int], probe: bool) -> Iterator[Assignment]:
    for node in body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and flag_name(node.targets[0].id)):
            yield Assignment(node, chain, probe or _holds_site(node, sites))
        elif isinstance(node, ast.If):
            inside = probe or _holds_site(node.test, sites)
            yield from _walk(node.body, (*chain, node), sites, inside)
            yield from _walk(node.orelse, (*chain, node), sites, inside)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            inside = probe or any(catches_import_error(h) for h in node.handlers)  # type: ignore[attr-defined]
            yield from _walk(node.body, (*chain, node), sites, inside)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                yield from _walk(handler.body, (*chain, node, handler), sites, inside)
            for block in (node.orelse, node.finalbody):  # type: ignore[attr-defined]
                yield from _walk(block, (*chain, node), sites, inside)


def _holds_site(node: ast.AST, sites: Collection[int]) -> bool:
    return any(id(inner) in sites for inner in ast.walk(node))


def mentions(tree: ast.AST, names: Collection[str], skip: Container[int] = ()) -> dict[str, int]:
    """dead_flags._names on CPython's tree: how many nodes name each of `names`. LibCST makes
    a `Name` of every identifier, so these count too: attribute, keyword, parameter,
    definition, import and `except ... as` names, `global` / `nonlocal`; and a string equal
    to one (`__all__`); not the nodes whose id is in `skip`."""
    count: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        for name in _identifiers(node):
            if name in names:
                count[name] = count.get(name, 0) + 1
    return count


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.keyword, ast.arg)):
        return [node.arg] if node.arg else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.alias):
        return [*node.name.split("."), *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return node.module.split(".") if node.module else []
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def dead(assigned: Mapping[str, int], mentioned: Mapping[str, int], values: Mapping[str, Iterable[Mapping[str, int]]],
         others: Container[str], imported: Container[str], unsafe: bool, package_init: bool) -> dict[str, FixClass]:
    """The flags that go, and how safe that is, as both trees judge them: `assigned` counts
    each flag's assignments, `mentioned` the nodes naming it once the fixes are made (its
    assignments' targets among them), `values` the flag names each of its assigned values
    names (a flag that goes frees what it read: `HAS_XLA = _XLA_AVAILABLE`). Not a name also
    bound some other way (`others`), one another module imports (`imported`; "*": the module
    itself), nor a public one unless unsafe fixes are on (and the module is no package
    `__init__.py`): code outside the project may import it, so its removal is unsafe."""
    if "*" in imported:
        return {}
    eligible = [name for name in assigned if name not in others and name not in imported
                and (name.startswith("_") or unsafe and not package_init)]
    reads = {name: Counter() for name in eligible}
    for name in eligible:
        for counts in values.get(name, ()):
            reads[name].update(counts)
    gone: dict[str, FixClass] = {}
    changed = True
    while changed:  # to a fixed point: one run of the fix removes all it will ever remove
        changed = False
        for name in eligible:
            freed = sum(reads[other][name] for other in gone)
            if name not in gone and mentioned.get(name, 0) - freed == assigned[name]:
                gone[name] = FixClass.SAFE if name.startswith("_") else FixClass.UNSAFE
                changed = True
    return gone
