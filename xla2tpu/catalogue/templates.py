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

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import libcst as cst

from xla2tpu.project.resolve import dotted_name
from xla2tpu.catalogue.template_text import MODULE_ROOTS, Slot, compiled

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
    source, slots = compiled(template)
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
