"""Expression patterns for `kind = "expression"` rules: `{d}.type == "xla"`, `"xla" in str({d})`.

A pattern is Python expression source in which
- `{name}` is a slot: it matches any expression and binds it to `name` for the template;
- a dotted name of two or more parts (`torch_xla.runtime.device_type`) matches whatever
  resolves to that name through the file's imports (`xr.device_type`, a bare imported
  `device_type`); a shadowed name resolves to nothing and does not match;
- a plain name (`str`, `XLA_AVAILABLE`) matches that identifier;
- a string literal matches an equal string in any quoting (never an f-string);
- everything else must match node for node; whitespace, comments, parentheses and
  trailing commas are ignored.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import libcst as cst

from xla2tpu.catalogue.pattern_text import Key, has_slot, placeholders, slot_name
from xla2tpu.project.resolve import dotted_name

# Fields holding only layout; two nodes differing there are the same code.
_LAYOUT = ("whitespace", "lpar", "rpar", "comma", "semicolon", "equal", "leading_lines")



class Pattern(NamedTuple):
    text: str
    tree: cst.BaseExpression
    key: Key


def key_of(node: cst.CSTNode) -> Key:
    """A pattern's discriminator: only nodes with this key among their candidate keys can match."""
    if isinstance(node, cst.Comparison):
        return "Comparison", type(node.comparisons[0].operator).__name__
    if isinstance(node, cst.Attribute):
        return "Attribute", node.attr.value
    if isinstance(node, cst.Name):
        return "Name", node.value
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and _slot(func.value) is not None:
            return "Call", func.attr.value
        return "Call", "*"  # callee matched by resolution: any spelling may name it
    return type(node).__name__, ""


@functools.lru_cache(maxsize=512)
def compile_pattern(text: str) -> Pattern:
    tree = cst.parse_expression(placeholders(text))
    return Pattern(text, tree, key_of(tree))


def candidate_keys(node: cst.CSTNode) -> tuple[Key, ...]:
    """The keys of the patterns that may match `node`."""
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute):
            return ("Call", node.func.attr.value), ("Call", "*")
        return (("Call", "*"),)
    return (key_of(node),)


def _slot(node: cst.CSTNode) -> str | None:
    return slot_name(node.value) if isinstance(node, cst.Name) else None


def _qualified(node: cst.CSTNode) -> str | None:
    """The dotted name a pattern node stands for, when it is matched by resolution."""
    if not isinstance(node, cst.Attribute):
        return None
    name = dotted_name(node)
    return name if name is not None and not has_slot(name) else None


class Match(NamedTuple):
    slots: dict[str, cst.BaseExpression]
    claimed: list[cst.CSTNode]  # the nodes the pattern itself covers (not inside a slot)


def match(pattern: Pattern, node: cst.CSTNode, resolve: Callable[[cst.BaseExpression], str | None]) -> Match | None:
    found = Match({}, [])
    return found if _match(pattern.tree, node, resolve, found) else None


def _match(
    pattern: cst.CSTNode,
    node: cst.CSTNode,
    resolve: Callable[[cst.BaseExpression], str | None],
    found: Match,
) -> bool:
    slot = _slot(pattern)
    if slot is not None:
        assert isinstance(node, cst.BaseExpression)
        found.slots[slot] = node
        return True
    found.claimed.append(node)
    qualname = _qualified(pattern)
    if qualname is not None:
        return isinstance(node, (cst.Name, cst.Attribute)) and resolve(node) == qualname
    if isinstance(pattern, cst.SimpleString):
        return isinstance(node, cst.SimpleString) and node.evaluated_value == pattern.evaluated_value
    if type(pattern) is not type(node):
        return False
    for field in dataclasses.fields(pattern):
        if field.name.startswith(_LAYOUT):
            continue
        if not _same(getattr(pattern, field.name), getattr(node, field.name), resolve, found):
            return False
    return True


def _same(expected: object, actual: object, resolve: Callable[[cst.BaseExpression], str | None], found: Match) -> bool:
    if isinstance(expected, cst.CSTNode):
        return isinstance(actual, cst.CSTNode) and _match(expected, actual, resolve, found)
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_same(e, a, resolve, found) for e, a in zip(expected, actual))
        )
    return expected == actual
