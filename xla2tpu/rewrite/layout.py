"""Where each top-level statement's text lies, and parsing only the statements that matter.

LibCST's parse is most of the engine's cost, while the sites of a file that passes the
prefilter sit in a few of its top-level statements. CPython's `ast` (a C parse, built
anyway to guard nesting) gives every top-level statement's lines, so:

- `Layout.full` lays out a parse of the whole file: each statement's text is a slice of the
  source (checked against the comment and blank lines LibCST gives each statement;
  LibCST's code generation when a check fails);
- `Layout.reduced_parse` parses a *reduced* source: the statements some pass needs, in order,
  each run of the others replaced by a one-line placeholder statement (a bare name) that
  stands in for it as a sibling (deleting a statement, inserting an import, spacing an
  import section all see the same neighbours). Each placeholder prints back as the
  source it replaced. Every statement's code is checked against its source, so a file
  the reduction does not reproduce exactly is parsed whole instead.

Chunks: statement i's chunk runs from the end of statement i-1's last line to the end of
its own (the comment and blank lines between belong to the statement after them, as in
LibCST); the last chunk runs to the end of the file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

import libcst as cst

from xla2tpu.trees.blocks import Group, blocks, groups_of
from xla2tpu.detect.positions import NEWLINE, line_starts
from xla2tpu.rewrite.reduction import GAP, reduce

_EMPTY_LINE = re.compile(r"[ \t\f]*(?:#[^\r\n]*)?(?:\r\n?|\n)?")
_GAP_NAME = re.compile(rf"{GAP}(\d+)__")


def lines_code(module: cst.Module, lines: Sequence[cst.EmptyLine]) -> str:
    """The code of comment and blank lines (a header, a footer, a statement's leading lines)."""
    return "".join(module.code_for_node(line) for line in lines)


class Layout:
    """A parsed module and, for each statement of its body, its text, the line (0-based)
    where that text starts in the source, and its `ast` group (None: not known)."""

    def __init__(self, module: cst.Module, source: str, bounds: list[int], texts: list[str], starts: list[int],
                 groups: list[Group | None], header: str | None, footer: str | None, reduced: bool) -> None:
        self.module = module
        self.source = source
        self._bounds = bounds
        self.texts = texts
        self.starts = starts
        self.groups = groups
        self._header = header  # the source's text, None: generate it
        self._footer = footer
        # Reduced: every statement was checked to print back as its text, placeholders stand
        # for the rest (`gap`). Otherwise the texts are source slices when the header is.
        self.reduced = reduced
        self.exact = header is not None

    # ------------------------------------------------------------------ building
    @classmethod
    def full(cls, module: cst.Module, source: str, tree: ast.Module | None) -> Layout:
        """The layout of `module`, parsed from all of `source`; `tree` is CPython's tree of it."""
        bounds = line_starts(source)
        groups = None if tree is None else groups_of(tree.body)
        if groups is not None and len(groups) != len(module.body):
            groups = None
        starts = None if groups is None else _starts(module, source, bounds, groups)
        known: list[Group | None] = list(groups) if groups is not None else [None] * len(module.body)
        if starts is not None:
            texts = [source[bounds[a]:bounds[b]] for a, b in zip(starts, starts[1:])]
            return cls(module, source, bounds, texts, starts[:-1], known,
                       source[:bounds[starts[0]]], source[bounds[starts[-1]]:], False)
        texts = [module.code_for_node(statement) for statement in module.body]
        starts = [len(module.header)]
        for text in texts:
            starts.append(starts[-1] + len(NEWLINE.findall(text)))
        return cls(module, source, bounds, texts, starts[:-1], known, None, None, False)

    @classmethod
    def reduced_parse(cls, source: str, tree: ast.Module | None, keeps: Callable[[str, Group], bool]) -> Layout | None:
        """The layout of a parse of the statements that `keeps` accepts (a pass visits them;
        lints read CPython's tree) and those they reach (reduction.py), judged on each
        chunk's text; None when the reduction would not pay or does not reproduce the
        source exactly."""
        reduction = reduce(source, tree, keeps)
        if reduction is None:
            return None
        bounds, groups, ends, chunks, needed = reduction
        # Units: a needed chunk, or a run of others (chunk indices).
        units: list[list[int]] = []
        for index, need in enumerate(needed):
            if need or not units or needed[units[-1][-1]]:
                units.append([index])
            else:
                units[-1].append(index)
        reduced = "".join(chunks[u[0]] if needed[u[0]] else f"{GAP}{n}__\n" for n, u in enumerate(units))
        try:
            module = cst.parse_module(reduced)
        except (cst.ParserSyntaxError, RecursionError):
            return None
        if len(module.body) != len(units):
            return None
        texts: list[str] = []
        starts: list[int] = []
        known: list[Group | None] = []
        line = 0
        pending = lines_code(module, module.header)  # text printed since the last check
        expected = 0  # offset in the source where `pending` starts
        for number, (unit, statement) in enumerate(zip(units, module.body)):
            start, end = bounds[0 if unit[0] == 0 else ends[unit[0] - 1]], bounds[ends[unit[-1]]]
            if needed[unit[0]]:
                code = module.code_for_node(statement)
                if number == 0:
                    line = len(NEWLINE.findall(pending))
                texts.append(code)
                starts.append(line)
                known.append(groups[unit[0]])
                pending += code
                line += len(NEWLINE.findall(code))
                continue
            # A placeholder: what precedes it printed back exactly, and it is only its line.
            if source[expected:start] != pending or module.code_for_node(statement) != f"{GAP}{number}__\n":
                return None
            texts.append(source[start:end])
            starts.append(line)
            known.append(None)
            line += len(NEWLINE.findall(texts[-1]))
            pending, expected = "", end
        if source[expected:] != pending + lines_code(module, module.footer):
            return None
        module = module.with_changes(default_indent=_first_indent(source, bounds, groups))
        return cls(module, source, bounds, texts, starts, known, lines_code(module, module.header),
                   lines_code(module, module.footer), True)

    # ------------------------------------------------------------------ reading
    def gap(self, statement: cst.CSTNode) -> int | None:
        """The index of the placeholder statement `statement` is (or was, before edits), or None."""
        if not self.reduced or not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Name):
            match = _GAP_NAME.fullmatch(small.value.value)
            if match is not None:
                return int(match.group(1))
        return None

    def header(self, module: cst.Module) -> str:
        """The header of `module` (this layout's module or an edit of it) as code."""
        if self._header is not None and module.header is self.module.header:
            return self._header
        return lines_code(module, module.header)

    def footer(self, module: cst.Module) -> str:
        if self._footer is not None and module.footer is self.module.footer:
            return self._footer
        return lines_code(module, module.footer)

    def lines(self, group: Group) -> str:
        """The source lines of `group` (a statement at any depth), leading comments left out."""
        return self.source[self._bounds[group.first - 1]:self._bounds[group.last]]


def _starts(module: cst.Module, source: str, bounds: list[int], groups: list[Group]) -> list[int] | None:
    """The line where each statement's text starts (its leading lines first), then where the
    footer starts; None when the source does not bear that out."""
    starts: list[int] = []
    previous_last = len(module.header)
    for group, statement in zip(groups, module.body):
        leading = len(statement.leading_lines)
        decorators = getattr(statement, "decorators", ())
        if decorators:
            leading += len(decorators[0].leading_lines)
        start = group.first - 1 - leading
        if start < previous_last or (not starts and start != len(module.header)):
            return None
        # Its leading lines are blank or comments, and its first line is not.
        for line in range(start, group.first):
            empty = _EMPTY_LINE.fullmatch(source, bounds[line], bounds[line + 1]) is not None
            if empty != (line < group.first - 1):
                return None
        starts.append(start)
        previous_last = group.last
    end = len(bounds) - 1 - len(module.footer)
    if end < previous_last:
        return None
    return [*starts, end]


def _first_indent(source: str, bounds: list[int], groups: list[Group]) -> str:
    """The indentation of the file's first indented block, which LibCST takes as the
    module's default (a reduced parse may not hold that block)."""
    for group in groups:
        for node in group.nodes:
            found = _block_indent(source, bounds, node)
            if found is not None:
                return found
    return "    "


def _block_indent(source: str, bounds: list[int], node: ast.AST) -> str | None:
    for block in blocks(node):
        if not block or not isinstance(block[0], (ast.stmt, ast.match_case)):
            continue
        child = block[0]
        decorators = getattr(child, "decorator_list", None)
        if isinstance(child, ast.match_case):
            line = child.pattern.lineno
        else:
            line = min(d.lineno for d in decorators) if decorators else child.lineno
        text = source[bounds[line - 1]:bounds[line]]
        indent = text[: len(text) - len(text.lstrip(" \t\f"))]
        rest = text[len(indent):]
        # The child opens its line (`case`, its first decorator's `@`, or itself): a block.
        if isinstance(child, ast.match_case):
            opens = rest.startswith("case")
        elif decorators:
            opens = rest.startswith("@")
        else:
            opens = len(indent) == child.col_offset
        if indent and opens:
            return indent
        found = _block_indent(source, bounds, child)  # `if x: y` on one line; `elif`
        if found is not None:
            return found
    return None
