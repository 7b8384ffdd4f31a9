"""Which top-level statements can hold a site, and positions computed only where needed.

Most of a file that passes the prefilter has nothing to do with torch_xla: a 5,000-line
module with one `xm.mark_step()` would otherwise be parsed and visited whole by every
pass, and its positions computed node by node, for one finding. A `Plan`, read from
CPython's tree of the file before LibCST sees it, judges each top-level statement by its
text; one that shows none of the following is *pruned*: layout.py leaves it out of the
LibCST parse (or, in a whole parse, no pass visits it), and it is kept as it is.

- a prefilter token (`prefilter.PATTERN`: the catalogue's names and strings hold one),
  or the last component of a name a selected rule matches that holds none;
- a name bound by an import of a module whose name holds one (`xm`, `mark_step`): the
  spelling of a site that goes through an alias;
- for statements whose bindings land in the module scope, a name bound by any import
  (`torch`, `os`) or read by a transform (`bool`) appearing where it may be rebound: a
  rebinding makes the name ambiguous for resolution and spelling.

So no site, no binding that resolution or spelling depends on, and no use of a torch_xla
import is ever in a pruned statement, and the passes give the same result without them.
Import statements at module level are never pruned: spelling a replacement reads them.
Inside a top-level class that is kept, methods and nested classes are pruned the same way.

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
import keyword
import re
from collections.abc import Iterator

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from xla2tpu.index import RuleIndex
from xla2tpu.layout import Group, Layout, groups_of, lines_code
from xla2tpu.prefilter import holds_token
from xla2tpu.resolve import Canonicaliser

# Names a transform asks the scope about (`Scope.binds`), beyond the import-bound ones.
_ALSO_WATCHED = ("bool",)


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements inside a statement, found through statement bodies only."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    for field in ("body", "handlers", "orelse", "finalbody", "cases"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            for child in value:
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    yield from _imports(child)


def _bound(node: ast.Import | ast.ImportFrom, canonical: Canonicaliser) -> Iterator[tuple[str, str]]:
    """(name bound, qualified name) for each alias of an import."""
    module = "." * node.level + (node.module or "") if isinstance(node, ast.ImportFrom) else ""
    for alias in node.names:
        if alias.name == "*":
            return
        qualname = f"{module}.{alias.name}" if module else alias.name
        bound = alias.asname or (alias.name if module else alias.name.split(".", 1)[0])
        yield bound, qualname
        yield bound, canonical(qualname)


_STRING = re.compile(r"([\"']).*?\1")
_IDENTIFIER = re.compile(r"(?<![{\w])[A-Za-z_]\w*(?![}\w])")
_UNTOKENED: dict[int, tuple[frozenset[str], tuple[str, ...], str]] = {}


def _untokened(index: RuleIndex) -> tuple[frozenset[str], tuple[str, ...], str]:
    """What the selected rules match that holds no prefilter token (a rule gated by `file-matches`,
    e.g. on `torch._dynamo.mark_dynamic`): the last component of each such name (any spelling of
    it, through an import of a module above it, ends with it), and the names themselves (an
    import of the name, or of a module under it, binds an alias to watch). Last, the string
    patterns of string-argument rules (`inductor`), searched right after a quote."""
    key = id(index)  # indexes are built once per selection and kept (index.build is cached)
    if key not in _UNTOKENED:
        names = [*index.calls.exact, *index.references.exact, *index.imports.exact]
        names += [prefix.rstrip(".") for matcher in (index.calls, index.references, index.imports)
                  for prefix, _rule in matcher.prefixes]
        for pattern_rules in index.expressions.values():
            for pattern, _rule in pattern_rules:
                if not holds_token(pattern.text):  # else a site shows the token or an alias of it
                    code = _STRING.sub("", pattern.text)
                    names += [n for n in _IDENTIFIER.findall(code) if not keyword.iskeyword(n)]
        names += list(index.env)
        names = [n for n in names if not holds_token(n)]
        # A matching literal's text starts right after its opening quote (`"tpu"`, not `output`);
        # the quote leads the pattern, so that the regex engine skips to the quotes.
        strings = "|".join(f"(?:{rule.pattern.pattern})" for rule in index.string_args if rule.pattern is not None)
        strings = f"[\"'](?:{strings})" if strings else r"(?!x)x"
        _UNTOKENED[key] = (frozenset(n.rsplit(".", 1)[-1] for n in names), tuple(names), strings)
    return _UNTOKENED[key]


def _words(names: set[str]) -> str:
    return r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b" if names else r"(?!x)x"


class Plan:
    """What makes a top-level statement worth visiting, read from CPython's tree of the file
    before any LibCST parse (see the module docstring)."""

    def __init__(self, tree: ast.Module, canonical: Canonicaliser, index: RuleIndex) -> None:
        keywords, untokened, strings = _untokened(index)
        interesting: set[str] = set(keywords)
        watched: set[str] = set(_ALSO_WATCHED)
        for node in tree.body:
            for found in _imports(node):
                for bound, qualname in _bound(found, canonical):
                    watched.add(bound)
                    if holds_token(qualname) or any(
                        qualname == name or qualname.startswith(name + ".") for name in untokened
                    ):
                        interesting.add(bound)
        self.watched = frozenset(watched)
        self._reads = re.compile(f"{_words(interesting)}|{strings}")
        names = _words(watched)
        # A name where it may be (re)bound: not followed by `.`, `(` or `[` (reads), or after def/class.
        self._binds = re.compile(rf"(?:def|class)\s+{names}|{names}(?!\s*[.(\[])")

    def matches(self, text: str) -> bool:
        """Whether `text` shows a token, an interesting name or a matched string."""
        return holds_token(text) or self._reads.search(text) is not None

    def keeps(self, text: str, group: Group) -> bool:
        """Whether the statement of `group`, whose text is `text`, must be visited."""
        if self.matches(text):
            return True
        definition = group.definition
        if definition is not None:  # its body binds in its own scope
            return definition.name in self.watched
        return any(next(_imports(node), None) is not None for node in group.nodes) or self._binds.search(text) is not None


class Outline:
    def __init__(self, layout: Layout, plan: Plan | None) -> None:
        """`plan` is None when CPython has no tree of the file: then nothing is pruned."""
        module = layout.module
        self.module = module
        self._layout = layout
        self.pruned: set[int] = set()
        self._positions: dict[cst.CSTNode, CodeRange] = {}
        self._done: set[int] = set()
        self._members: dict[int, dict[int, int]] = {}  # see _member_lines
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
                if isinstance(statement, cst.ClassDef) and isinstance(group.definition, ast.ClassDef):
                    self._prune_members(statement, group.definition, plan)
            elif not plan.keeps(layout.texts[i], group):
                self.pruned.add(id(statement))

    def text(self, statement: cst.CSTNode) -> str:
        """The source of a top-level statement of the module."""
        return self._texts[id(statement)]

    def _prune_members(self, klass: cst.ClassDef, node: ast.ClassDef, plan: Plan) -> None:
        """In a class that holds a site, the methods and nested classes that hold none.

        A member's name binds in the class scope, which only the class body itself reads:
        unless it is a watched name, its body is all that matters, as for a top-level def.
        CPython's tree gives each member's lines.
        """
        inner = groups_of(node.body)
        if not isinstance(klass.body, cst.IndentedBlock) or len(inner) != len(klass.body.body):
            return
        for member, group in zip(klass.body.body, inner):
            if not isinstance(member, (cst.FunctionDef, cst.ClassDef)) or member.name.value in plan.watched:
                continue
            if not plan.matches(self._layout.lines(group)):
                self.pruned.add(id(member))
            elif isinstance(member, cst.ClassDef) and isinstance(group.definition, ast.ClassDef):
                self._prune_members(member, group.definition, plan)

    def render(self, module: cst.Module) -> tuple[str, list[str]]:
        """`module.code`, and the parts of it that were generated rather than copied.

        `module` is the rewritten module: a statement no pass changed (pruned, or visited
        without a rewrite inside) is the very object of the original module, so its text is
        the input's, whether or not LibCST would print it back the same; a placeholder of a
        reduced parse prints as the source it stands for. Each generated part is whole
        top-level statements, comment lines or the whole module, so it parses on its own
        exactly when it parses in place: checking those parts checks the rewrite.
        """
        layout = self._layout
        if not layout.reduced and (not module.has_trailing_newline or not module.body):
            code = module.code  # the module's own trailing-newline rules apply
            return code, [code]
        generated: list[str] = []
        parts = [layout.header(module)]
        for statement in module.body:
            text = self._texts.get(id(statement))
            if text is None:
                gap = layout.gap(statement)
                if gap is None:
                    text = module.code_for_node(statement)
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

    def where(self, top: cst.CSTNode, node: cst.CSTNode, member: cst.CSTNode | None = None) -> CodeRange:
        """The position of `node`, inside the top-level statement `top` and, when given, inside
        `member`, a statement of the body of `top` (a class or function)."""
        if member is not None and node not in self._positions:
            self._locate_member(top, member)
        if node not in self._positions:
            self._locate(top)
        return self._positions[node]

    def _locate(self, top: cst.CSTNode) -> None:
        if id(top) in self._done:
            return
        self._done.add(id(top))
        alone = self.module.with_changes(body=[top], header=[], footer=[])
        self._record(alone, self._offsets[id(top)], 0)

    def _locate_member(self, top: cst.CSTNode, member: cst.CSTNode) -> None:
        """Positions inside one statement of a big class or function: computed on the header
        of `top` with that statement alone in its body, and moved to the line CPython gives
        the statement (columns are the same: the statement keeps its indentation)."""
        if id(member) in self._done:
            return
        self._done.add(id(member))
        first = self._member_lines(top).get(id(member))
        if first is None or not isinstance(top, (cst.ClassDef, cst.FunctionDef)):
            return
        assert isinstance(top.body, cst.IndentedBlock)
        alone = top.with_changes(leading_lines=[], body=top.body.with_changes(body=[member], footer=[]))
        module = self.module.with_changes(body=[alone], header=[], footer=[])
        decorators = getattr(member, "decorators", None)
        self._record(module, None, first, decorators[0] if decorators else member)

    def _member_lines(self, top: cst.CSTNode) -> dict[int, int]:
        """id(statement of the body of `top`) -> its first line, as CPython gives it."""
        lines = self._members.get(id(top))
        if lines is None:
            lines = self._members[id(top)] = {}
            index = next((i for i, statement in enumerate(self.module.body) if statement is top), None)
            group = None if index is None else self._layout.groups[index]
            definition = None if group is None else group.definition
            body = getattr(top, "body", None)
            if definition is not None and isinstance(body, cst.IndentedBlock):
                inner = groups_of(definition.body)
                if len(inner) == len(body.body):
                    lines.update((id(statement), g.first) for statement, g in zip(body.body, inner))
        return lines

    def _record(self, module: cst.Module, shift: int | None, first: int = 0, anchor: cst.CSTNode | None = None) -> None:
        """Keep the positions of `module`'s nodes, `shift` lines down; or, without a shift,
        those from `anchor` on, moved so that `anchor` starts on line `first`."""
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        start = 0
        if shift is None:
            assert anchor is not None
            start = positions[anchor].start.line
            shift = first - start
        for inner, where in positions.items():
            if where.start.line >= start:
                self._positions[inner] = CodeRange(
                    CodePosition(where.start.line + shift, where.start.column),
                    CodePosition(where.end.line + shift, where.end.column),
                )
