"""The statements LibCST parses and visits, and positions computed only where needed.

Which statements are kept is the `Plan`'s (parse_plan.py): a pruned statement is left out of the
LibCST parse (layout.py) or, in a whole parse, visited by no pass, and kept as it is.
Inside a kept class, function or block (`for`, `while`, `with`, `if`, `try` bodies), its
statements are pruned the same way, except those that read a variable a kept statement
there assigns (the rewrite of a loader edits the loops over it).

Code: a rewritten module's code is the text of the top-level statements that stayed the
same objects (pruned or untouched) and the generated code of the others.

Positions: LibCST's PositionProvider walks the whole module. Here a top-level statement's
positions are computed when a node in it is first reported, by the same provider on a
module holding only that statement, shifted by the lines before it in the source (counted
as LibCST counts them: `\\r\\n`, `\\r` and `\\n` each end a line; columns are code points). A
top-level statement always starts at column 0, so columns need no shift.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider

from xla2tpu.trees.blocks import Group, groups_of
from xla2tpu.detect.positions import NEWLINE
from xla2tpu.rewrite.layout import Layout, lines_code
from xla2tpu.rewrite.reduction import assigned_names
from xla2tpu.rewrite.parse_plan import Plan, words
from xla2tpu.rewrite.statements import pass_statement

# Top-level statements whose header (decorators, signature) comes before a body.
_HEADED = (cst.FunctionDef, cst.ClassDef)
# LibCST's compound statements whose `body` is the `body` of these CPython statements.
_SAME_BODY: dict[type[cst.CSTNode], tuple[type[ast.stmt], ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.If: (ast.If,),
    cst.Try: (ast.Try,),
}


def _body_pairs(statement: cst.CSTNode, group: Group) -> list[tuple[cst.BaseStatement, Group]]:
    """Each statement of the body of `statement` (a compound one, whose CPython statement
    `group` holds) with its group in CPython's tree; none when the two do not line up."""
    node = group.nodes[0] if len(group.nodes) == 1 else None
    body = getattr(statement, "body", None)
    if node is None or not isinstance(body, cst.IndentedBlock) or not isinstance(node, _SAME_BODY.get(type(statement), ())):
        return []
    inner = groups_of(node.body)  # type: ignore[attr-defined]
    return list(zip(body.body, inner)) if len(inner) == len(body.body) else []


class Outline:
    def __init__(self, layout: Layout, plan: Plan | None) -> None:
        """`plan` is None when CPython has no tree of the file: then nothing is pruned."""
        module = layout.module
        self.module = module
        self._layout = layout
        self.pruned: set[int] = set()
        # node -> the ranges computed with it, and the lines to add to them (see `_record`)
        self._positions: dict[cst.CSTNode, tuple[Mapping[cst.CSTNode, CodeRange], int]] = {}
        self._done: set[object] = set()  # ids of statements located whole; ("header", id) of definitions located up to their body
        self._bodies: dict[int, dict[int, Group]] = {}  # see _body_groups
        self._index = {id(statement): i for i, statement in enumerate(module.body)}
        # id(top-level statement) -> its text; the module holds the statements, so no id is reused.
        self._texts = {id(statement): layout.texts[i] for i, statement in enumerate(module.body)}
        self._offsets = {id(statement): layout.starts[i] for i, statement in enumerate(module.body)}
        for i, statement in enumerate(module.body):
            group = layout.groups[i]
            if layout.gap(statement) is not None:
                self.pruned.add(id(statement))
            elif plan is None or group is None:
                continue
            elif plan.matches(layout.texts[i]):
                self._prune_inside(statement, group, plan, frozenset())
            elif not plan.keeps(layout.texts[i], group):
                self.pruned.add(id(statement))

    def lines(self, statement: cst.CSTNode) -> range:
        """The lines (1-based) of a top-level statement's text, its leading comments included
        (none for the module's header and footer lines)."""
        start = self._offsets.get(id(statement))
        if start is None:
            return range(0)
        return range(start + 1, start + 2 + len(NEWLINE.findall(self._texts[id(statement)])))

    def text(self, statement: cst.CSTNode) -> str:
        """The source of a top-level statement of the module."""
        return self._texts[id(statement)]

    def line(self, statement: cst.CSTNode) -> int:
        """The line (0-based) where the text of a top-level statement of the module starts."""
        return self._offsets[id(statement)]

    def _prune_inside(self, statement: cst.CSTNode, group: Group, plan: Plan, bound: frozenset[str]) -> None:
        """In a kept compound statement, the statements of its body that hold no site, judged
        as top-level ones are (their bindings land in the body's scope, where only a watched
        name's rebinding matters), and kept when they read a variable that a kept statement
        of the body, or of an enclosing one, assigns (a rewrite of the assignment may edit
        them: the loops over a loader). CPython's tree gives each statement's lines."""
        pairs = _body_pairs(statement, group)
        texts = [self._layout.lines(child_group) for _child, child_group in pairs]
        kept = [plan.matches(text) for text in texts]
        names = set(bound)
        while True:
            names_before = len(names)
            names.update(name for (_child, child_group), k in zip(pairs, kept) if k for name in assigned_names(child_group))
            reads = words(names) if names else None
            if reads is not None:
                kept = [k or re.search(reads, text) is not None for k, text in zip(kept, texts)]
            if len(names) == names_before:
                break
        for (child, child_group), text, k in zip(pairs, texts, kept):
            if k:
                self._prune_inside(child, child_group, plan, frozenset(names))
            elif not plan.keeps(text, child_group):
                self.pruned.add(id(child))

    def render(self, module: cst.Module, finish: Callable[[str], str] = str) -> tuple[str, list[str]]:
        """`module.code`, and the parts of it that were generated rather than copied, each
        passed through `finish` (wrap.py wraps their long lines).

        `module` is the rewritten module: a statement no pass changed (pruned, or visited
        without a rewrite inside) is the very object of the original module, so its text is
        the input's, whether or not LibCST would print it back the same; a placeholder of a
        reduced parse prints as the source it stands for. Each generated part is whole
        top-level statements, comment lines or the whole module, so it parses on its own
        exactly when it parses in place: checking those parts checks the rewrite.
        """
        layout = self._layout
        if not layout.reduced and (not module.has_trailing_newline or not module.body):
            code = finish(module.code)  # the module's own trailing-newline rules apply
            return code, [code]
        generated: list[str] = []
        parts = [layout.header(module)]
        for statement in module.body:
            text = self._texts.get(id(statement))
            if text is None:
                gap = layout.gap(statement)
                if gap is None:
                    text = finish(module.code_for_node(statement))
                else:  # a placeholder handed comment lines by a statement deleted before it
                    text = lines_code(module, statement.leading_lines)
                generated.append(text)
                if gap is not None:
                    text += layout.texts[gap]
            parts.append(text)
        parts.append(layout.footer(module))
        return "".join(parts), generated

    def reprints_changes(self, module: cst.Module) -> bool:
        """Whether LibCST prints every original top-level statement that `module` no longer holds
        back to its exact source: if not, generating the rewritten statement could drop bytes
        (some whitespace-only lines next to oddly indented comments) that nobody edited."""
        layout = self._layout
        if layout.reduced:
            return True  # every statement was checked when the reduced source was parsed
        if not layout.exact or not module.has_trailing_newline or not module.body:
            return self.module.code == layout.source
        kept = {id(statement) for statement in module.body}
        return all(
            self.module.code_for_node(statement) == self._texts[id(statement)]
            for statement in self.module.body
            if id(statement) not in kept
        )

    def where(self, top: cst.CSTNode, node: cst.CSTNode, inner: Sequence[cst.CSTNode] = ()) -> CodeRange:
        """The position of `node`, inside the top-level statement `top` and, when given, inside
        the statements `inner`: one of the body of `top`, one of the body of that, and so on."""
        if inner and node not in self._positions:
            self._locate_inner(top, inner)
        elif not inner and node not in self._positions and isinstance(top, _HEADED):
            self._locate_header(top)
        if node not in self._positions:
            self._locate(top)
        ranges, shift = self._positions[node]
        found = ranges[node]
        if not shift:
            return found
        return CodeRange(CodePosition(found.start.line + shift, found.start.column),
                         CodePosition(found.end.line + shift, found.end.column))

    def _locate_header(self, top: cst.FunctionDef | cst.ClassDef) -> None:
        """Positions of the decorators and signature of a definition (a test class's
        `@skipIf(xr.device_type() != "TPU")`): computed on it with its body cut to `pass`,
        since they come before the body."""
        if ("header", id(top)) in self._done or not isinstance(top.body, cst.IndentedBlock):
            return
        self._done.add(("header", id(top)))
        cut = top.with_changes(body=top.body.with_changes(body=[pass_statement()], footer=[]))
        self._record(self.module.with_changes(body=[cut], header=[], footer=[]), self._offsets[id(top)])

    def _locate(self, top: cst.CSTNode) -> None:
        if id(top) in self._done:
            return
        self._done.add(id(top))
        alone = self.module.with_changes(body=[top], header=[], footer=[])
        self._record(alone, self._offsets[id(top)])

    def _locate_inner(self, top: cst.CSTNode, inner: Sequence[cst.CSTNode]) -> None:
        """Positions inside the deepest of `inner` whose line CPython gives: computed on the
        headers of the statements around it, each with only the next in its body, and moved
        to that line (columns are the same: every statement keeps its indentation)."""
        index = self._index.get(id(top))
        group = None if index is None else self._layout.groups[index]
        chain: list[cst.CSTNode] = [top]
        for statement in inner:
            found = None if group is None else self._body_groups(chain[-1], group).get(id(statement))
            if found is None:
                break
            chain.append(statement)
            group = found
        deepest = chain[-1]
        if len(chain) == 1 or group is None or id(deepest) in self._done:
            return
        self._done.add(id(deepest))
        alone = deepest
        for outer in reversed(chain[:-1]):
            body = outer.body  # type: ignore[attr-defined]
            alone = outer.with_changes(leading_lines=[], body=body.with_changes(body=[alone], footer=[]))
        module = self.module.with_changes(body=[alone], header=[], footer=[])
        decorators = getattr(deepest, "decorators", None)
        self._record(module, None, group.first, decorators[0] if decorators else deepest, deepest)

    def _body_groups(self, statement: cst.CSTNode, group: Group) -> dict[int, Group]:
        """id(statement of the body of `statement`) -> its group in CPython's tree."""
        found = self._bodies.get(id(statement))
        if found is None:
            found = self._bodies[id(statement)] = {id(child): g for child, g in _body_pairs(statement, group)}
        return found

    def _record(self, module: cst.Module, shift: int | None, first: int = 0,
                anchor: cst.CSTNode | None = None, within: cst.CSTNode | None = None) -> None:
        """Keep the positions of `module`'s nodes, `shift` lines down; or, without a shift,
        those of `within` (from `anchor`, where it starts, to its end), moved so that
        `anchor` starts on line `first`."""
        positions = _positions(module)
        if shift is None:
            assert anchor is not None and within is not None
            start, end = positions[anchor].start.line, positions[within].end.line
            entry = (positions, first - start)
            # The statements around `within` hold only it: their other nodes' ranges are not theirs.
            self._positions.update(dict.fromkeys(
                (node for node, where in positions.items() if where.start.line >= start and where.end.line <= end), entry))
        else:  # shifted when asked for: most nodes never are
            self._positions.update(dict.fromkeys(positions, (positions, shift)))


def _positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """PositionProvider's ranges of `module`'s nodes, from the provider itself (its
    `_gen_impl`: one codegen pass). `MetadataWrapper.resolve` then walks the whole tree once
    more for the batchable providers, with none to run (libcst 1.x): ~40% of the cost."""
    provider = PositionProvider()
    provider._gen_impl(module)
    return provider._computed


def located(parents: Sequence[cst.CSTNode], node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode, list[cst.CSTNode]]:
    """`Outline.where`'s arguments for `node`, the last of `parents` (the module first, then
    each node down to it) or inside it: its top-level statement, the node, and the
    statements down to the innermost around it."""
    # [1] is the top-level statement, [3] a statement of its body when [2] is that body, and
    # so on down.
    inner: list[cst.CSTNode] = []
    depth = 1
    while depth + 2 < len(parents) and parents[depth + 1] is getattr(parents[depth], "body", None):
        inner.append(parents[depth + 2])
        depth += 2
    return parents[1], node, inner
