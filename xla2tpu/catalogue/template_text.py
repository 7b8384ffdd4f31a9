"""What a replacement template says, read from its text without building it (templates.py
builds it, with LibCST): its placeholders, the names it writes, whether it is a statement.
The detector decides a fix with these; nothing here imports LibCST."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from typing import NamedTuple

from xla2tpu.trees.names import dotted_name as ast_dotted_name

# Roots a template may name; anything else in a template is a local name or a placeholder.
MODULE_ROOTS = frozenset({"torch", "os", "sys", "itertools", "transformers", "time", "datetime"})

# Submodules that templates name but `import torch` does not load (torch 2.13, backend
# autoload off): code using them needs its own `import torch.distributed.tensor`.
# tests/test_public_api.py checks this table against the installed torch.
EXPLICIT_IMPORTS = frozenset({"torch.distributed.tensor", "torch.distributed._functional_collectives", "torch.distributed.fsdp",
                              "torch.distributed.run"})


def explicit_import(qualname: str) -> str | None:
    """The longest module on `qualname`'s path that must be imported on its own, if any."""
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 1, -1):
        module = ".".join(parts[:end])
        if module in EXPLICIT_IMPORTS:
            return module
    return None


_PLACEHOLDER = re.compile(r"\{(\*?)(?:([A-Za-z_]\w*)=)?([A-Za-z_]\w*)(?:\?([^{}]*))?\}")
_SLOT = "__xla2tpu_slot_{}__"
_SLOT_MARK = re.compile(r"__xla2tpu_slot_\d+__")


class Slot(NamedTuple):
    param: str
    star: bool  # {*param}
    default: str | None  # {param?default}
    keyword: str | None  # {kw=param}

    @property
    def optional(self) -> bool:
        return self.star or self.default is not None or self.keyword is not None


@functools.lru_cache(maxsize=512)
def compiled(template: str) -> tuple[str, tuple[Slot, ...]]:
    """The template's source with each placeholder a name of its own (`__xla2tpu_slot_0__`),
    and the placeholders in order."""
    slots: list[Slot] = []

    def sub(match: re.Match[str]) -> str:
        slots.append(Slot(match.group(3), bool(match.group(1)), match.group(4), match.group(2)))
        slot = _SLOT.format(len(slots) - 1)
        return f"{match.group(2)}={slot}" if match.group(2) else slot

    return _PLACEHOLDER.sub(sub, template), tuple(slots)


def placeholders(template: str) -> tuple[Slot, ...]:
    """The template's placeholders, in order."""
    return compiled(template)[1]


def _names(template: str) -> Iterator[tuple[str, bool]]:
    """Each name token of the code a rendering of `template` writes itself (its
    placeholders' defaults too), and whether it follows a `.` (an attribute's tail)."""
    source, slots = compiled(template)
    for text in [source, *(slot.default for slot in slots if slot.default)]:
        after_dot = False
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME and not _SLOT_MARK.fullmatch(token.string):
                yield token.string, after_dot
            after_dot = token.type == tokenize.OP and token.string == "."


@functools.lru_cache(maxsize=512)
def identifiers(template: str) -> frozenset[str]:
    """The names a rendering of `template` writes itself (its placeholders' defaults too),
    whatever the arguments put in its slots: its code's, not its comments' or strings'."""
    return frozenset(name for name, _ in _names(template))


@functools.lru_cache(maxsize=512)
def read_names(template: str) -> frozenset[str]:
    """`identifiers` without the attribute tails (`tpu` and `synchronize` in
    `torch.tpu.synchronize()`), which read no variable: the names a rendering reads as
    written."""
    return frozenset(name for name, tail in _names(template) if not tail)


@functools.lru_cache(maxsize=512)
def all_spelled_names(template: str) -> tuple[str, ...]:
    """`spelled_names` of the template and of its placeholders' defaults."""
    defaults = [slot.default for slot in compiled(template)[1] if slot.default]
    return tuple(name for text in [template, *defaults] for name in spelled_names(text))


@functools.lru_cache(maxsize=512)
def shape(template: str) -> ast.expr:
    """The expression a template writes, each placeholder a name of its own (`compiled`)."""
    return ast.parse(compiled(template)[0].strip(), mode="eval").body


def holds_slot(text: str) -> bool:
    """Whether `text` (a string in `compiled` source) has a placeholder in it."""
    return _SLOT_MARK.search(text) is not None


@functools.lru_cache(maxsize=512)
def is_statement(template: str) -> bool:
    """True for a template that is a statement (`{t}[:] = f({t})`), not an expression."""
    source = compiled(template)[0]
    try:
        ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        ast.parse(source)  # neither: a broken template, which must fail loudly
        return True
    return False


@functools.lru_cache(maxsize=512)
def spelled_names(template: str) -> tuple[str, ...]:
    """The qualified names a rendering of `template` spells (`_Filler._respell`), in order:
    what decides, before any edit, whether they reach their modules at a site."""
    names: list[str] = []

    def walk(node: ast.AST, parent: ast.AST | None) -> None:
        if isinstance(node, ast.Attribute):
            name = ast_dotted_name(node)
            if name and name.split(".", 1)[0] in MODULE_ROOTS:
                names.append(name)
                return
        elif isinstance(node, ast.Name) and node.id in MODULE_ROOTS and not isinstance(parent, ast.Attribute):
            names.append(node.id)
        for child in ast.iter_child_nodes(node):
            walk(child, node)

    walk(ast.parse(compiled(template)[0]), None)
    return tuple(names)


def required(template: str) -> set[str]:
    """The parameters a template cannot be rendered without."""
    return {slot.param for slot in compiled(template)[1] if not slot.optional}


