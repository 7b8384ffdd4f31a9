"""Replacement templates: `{optimizer}.step()` + the call's argument nodes -> a CST node.

Placeholders: `{param}` (the argument bound to that parameter, reused as written, comments
and all), `{param?default}` (the default source when the argument is absent),
`{kw=param}` (the keyword argument `kw=<argument>`, left out when the argument is absent)
and `{*param}` (every remaining positional argument, for `print(*args)`-style calls).
A template that is a statement (`{t}[:] = torch.tpu.ops.optimization_barrier({t})`)
replaces the call's whole statement. Fully qualified names in a template (`torch.accelerator.synchronize`) are spelled with
whatever the file already binds (`dist.get_rank` under `import torch.distributed as dist`);
when nothing binds them, the root module is reported as an import to add.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, cast

import libcst as cst

from xla2tpu.detect.names import dotted_name as ast_dotted_name
from xla2tpu.resolve import dotted_name

# Roots a template may name; anything else in a template is a local name or a placeholder.
MODULE_ROOTS = frozenset({"torch", "os", "sys", "itertools", "transformers", "time", "datetime"})

# Submodules that templates name but `import torch` does not load (torch 2.13, backend
# autoload off): code using them needs its own `import torch.distributed.tensor`.
# tests/test_public_api.py checks this table against the installed torch.
EXPLICIT_IMPORTS = frozenset({"torch.distributed.tensor", "torch.distributed._functional_collectives"})


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
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")

_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Ellipsis,
)
# Parents in which a non-atomic child binds wrongly unless parenthesised.
_TIGHT_PARENTS = (
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.UnaryOperation,
    cst.BinaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.Await,
)


def parenthesise_for(parent: cst.CSTNode | None, child: cst.BaseExpression) -> cst.BaseExpression:
    """`child` wrapped in parentheses when its new parent would otherwise rebind it."""
    if parent is None or not isinstance(parent, _TIGHT_PARENTS):
        return child
    if isinstance(child, _ATOMS) or getattr(child, "lpar", ()):
        return child
    if isinstance(parent, cst.BooleanOperation) and isinstance(child, cst.Comparison):
        return child  # comparisons bind tighter than `and` / `or`
    return child.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def fit_quotes(parents: list[cst.CSTNode], child: cst.BaseExpression) -> cst.BaseExpression:
    """`child` with its string literals requoted when it lands in an f-string's replacement
    field that is delimited by the same single quote character: before Python 3.12 that
    closes the f-string (`f"{os.environ.get("X")}"` does not parse)."""
    quote = next((_fstring_quote(p) for p in reversed(parents) if isinstance(p, cst.FormattedString)), None)
    if quote not in ('"', "'"):
        return child  # triple-quoted or no f-string: any single quote character fits
    return cast(cst.BaseExpression, child.visit(_Requote(quote)))


def _fstring_quote(node: cst.FormattedString) -> str:
    return node.start.lstrip("fFrRbBuU")


class _Requote(cst.CSTTransformer):
    def __init__(self, taken: str) -> None:
        self.taken, self.other = taken, "'" if taken == '"' else '"'

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        value = updated_node.value
        prefix = value[: len(value) - len(value.lstrip("rRbBuU"))]
        body = value[len(prefix):]
        if body.startswith(self.taken * 3) or not body.startswith(self.taken):
            return updated_node
        inner = body[1:-1]
        if self.other in inner or "\\" in inner:
            return updated_node  # cannot be requoted as is; the output check will refuse the file
        return updated_node.with_changes(value=f"{prefix}{self.other}{inner}{self.other}")


class Slot(NamedTuple):
    param: str
    star: bool  # {*param}
    default: str | None  # {param?default}
    keyword: str | None  # {kw=param}

    @property
    def optional(self) -> bool:
        return self.star or self.default is not None or self.keyword is not None


@functools.lru_cache(maxsize=512)
def _compile(template: str) -> tuple[str, tuple[Slot, ...]]:
    slots: list[Slot] = []

    def sub(match: re.Match[str]) -> str:
        slots.append(Slot(match.group(3), bool(match.group(1)), match.group(4), match.group(2)))
        slot = _SLOT.format(len(slots) - 1)
        return f"{match.group(2)}={slot}" if match.group(2) else slot

    return _PLACEHOLDER.sub(sub, template), tuple(slots)


def placeholders(template: str) -> tuple[Slot, ...]:
    """The template's placeholders, in order."""
    return _compile(template)[1]


@functools.lru_cache(maxsize=512)
def identifiers(template: str) -> frozenset[str]:
    """The names a rendering of `template` writes itself (its placeholders' defaults too),
    whatever the arguments put in its slots."""
    source, slots = _compile(template)
    texts = [_SLOT_MARK.sub("", source), *(slot.default for slot in slots if slot.default)]
    return frozenset(name for text in texts for name in _IDENTIFIER.findall(text))


@functools.lru_cache(maxsize=512)
def is_statement(template: str) -> bool:
    """True for a template that is a statement (`{t}[:] = f({t})`), not an expression."""
    source = _compile(template)[0]
    try:
        cst.parse_expression(source)
    except cst.ParserSyntaxError:
        cst.parse_statement(source)  # neither: a broken template, which must fail loudly
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

    walk(ast.parse(_compile(template)[0]), None)
    return tuple(names)


def required(template: str) -> set[str]:
    """The parameters a template cannot be rendered without."""
    return {slot.param for slot in _compile(template)[1] if not slot.optional}


class Rendered:
    """A rendered template: the node, and the module roots the file must import for it."""

    __slots__ = ("node", "imports")

    def __init__(self, node: cst.CSTNode, imports: set[str]) -> None:
        self.node = node
        self.imports = imports


def render(
    template: str,
    args: Mapping[str, cst.BaseExpression],
    star_args: Mapping[str, Sequence[cst.Arg]],
    spell: Callable[[str], tuple[str, str | None]],
    statement: bool = False,
) -> Rendered:
    """Build the node for `template`. `spell(qualname)` returns (spelling, import-to-add)."""
    source, slots = _compile(template)
    tree: cst.CSTNode = cst.parse_statement(source) if statement else cst.parse_expression(source)
    filler = _Filler(slots, args, star_args, spell)
    return Rendered(tree.visit(filler), filler.imports)


class _Filler(cst.CSTTransformer):
    def __init__(
        self,
        slots: tuple[Slot, ...],
        args: Mapping[str, cst.BaseExpression],
        star_args: Mapping[str, Sequence[cst.Arg]],
        spell: Callable[[str], tuple[str, str | None]],
    ) -> None:
        super().__init__()
        self.slots = slots
        self.args = args
        self.star_args = star_args
        self.spell = spell
        self.imports: set[str] = set()
        self._parents: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        # A qualified module name is replaced whole; do not descend into it.
        return not (isinstance(node, cst.Attribute) and self._module_name(node))

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        self._parents.pop()
        parent = self._parents[-1] if self._parents else None
        if isinstance(updated_node, cst.Arg) and isinstance(updated_node.value, cst.Name):
            slot = self._slot(updated_node.value.value)
            if slot is not None and slot.star:
                return cst.FlattenSentinel(self._star(slot.param, updated_node))
            if slot is not None and slot.keyword:
                if slot.param not in self.args:
                    return cst.RemovalSentinel.REMOVE
                return updated_node.with_changes(value=self.args[slot.param])
        if isinstance(updated_node, cst.Call) and len(updated_node.args) != len(original_node.args):  # type: ignore[attr-defined]
            # Optional arguments were left out: the new last one must not keep a comma.
            if updated_node.args:
                last = updated_node.args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                return updated_node.with_changes(args=[*updated_node.args[:-1], last])
        if isinstance(updated_node, cst.Name):
            slot = self._slot(updated_node.value)
            if slot is not None and not (slot.star or slot.keyword):
                return parenthesise_for(parent, self._value(slot))
            if slot is not None:
                return updated_node
            if updated_node.value in MODULE_ROOTS and not isinstance(parent, cst.Attribute):
                return self._respell(updated_node.value)
        if isinstance(updated_node, cst.Attribute):
            qualname = self._module_name(updated_node)
            if qualname:
                return self._respell(qualname)
        return updated_node

    def _module_name(self, node: cst.Attribute) -> str | None:
        name = dotted_name(node)
        if name and name.split(".", 1)[0] in MODULE_ROOTS:
            return name
        return None

    def _respell(self, qualname: str) -> cst.BaseExpression:
        spelling, needed = self.spell(qualname)
        if needed:
            self.imports.add(needed)
        return cst.parse_expression(spelling)

    def _slot(self, name: str) -> Slot | None:
        if name.startswith("__xla2tpu_slot_") and name.endswith("__"):
            return self.slots[int(name[len("__xla2tpu_slot_"):-2])]
        return None

    def _value(self, slot: Slot) -> cst.BaseExpression:
        if slot.param in self.args:
            return self.args[slot.param]
        if slot.default is None:
            raise KeyError(f"template needs argument {slot.param!r}")
        return cst.parse_expression(slot.default)

    def _star(self, name: str, placeholder: cst.Arg) -> list[cst.Arg]:
        extra = list(self.star_args.get(name, ()))
        if not extra:
            return []
        # The last spread argument takes the placeholder's comma, so the list stays well formed.
        return [*extra[:-1], extra[-1].with_changes(comma=placeholder.comma)]
