"""Which top-level statements can hold a site, and positions computed only where needed.

Most of a file that passes the prefilter has nothing to do with torch_xla: a 5,000-line
module with one `xm.mark_step()` would otherwise be visited by every pass, and its
positions computed node by node, for one finding. A top-level statement is *pruned*
(no pass visits it; it is kept as it is) when its text shows none of:

- a prefilter token (`engine.PREFILTER`: the catalogue's names and strings hold one),
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
module holding only that statement, shifted by the lines before it (counted as LibCST
counts them: `\\r\\n`, `\\r` and `\\n` each end a line; columns are code points). A
top-level statement always starts at column 0, so columns need no shift.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Iterator, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from xla2tpu.index import RuleIndex
from xla2tpu.resolve import Canonicaliser, dotted_name

_NEWLINE = re.compile(r"\r\n?|\n")
# Names a transform asks the scope about (`Scope.binds`), beyond the import-bound ones.
_ALSO_WATCHED = ("bool",)


def _imports(node: cst.CSTNode) -> Iterator[cst.Import | cst.ImportFrom]:
    """The import statements inside a statement, found through statement bodies only.

    Expressions never hold a statement, so they are not entered (`node.children` would
    walk them all, at the cost of a full pass).
    """
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        yield node
    elif isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.IndentedBlock)):
        for child in node.body:
            yield from _imports(child)
    else:
        for field in ("body", "handlers", "cases", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, cst.CSTNode):
                yield from _imports(value)
            elif isinstance(value, (tuple, list)):
                for child in value:
                    yield from _imports(child)


def _bound(node: cst.Import | cst.ImportFrom, canonical: Canonicaliser) -> Iterator[tuple[str, str]]:
    """(name bound, qualified name) for each alias of an import."""
    if isinstance(node.names, cst.ImportStar):
        return
    module = ""
    if isinstance(node, cst.ImportFrom):
        module = "." * len(node.relative) + ((dotted_name(node.module) or "") if node.module is not None else "")
    for alias in node.names:
        full = dotted_name(alias.name) or ""
        qualname = f"{module}.{full}" if module else full
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            bound = alias.asname.name.value
        else:
            bound = full if module else full.split(".", 1)[0]
        yield bound, qualname
        yield bound, canonical(qualname)


_STRING = re.compile(r"([\"']).*?\1")
_IDENTIFIER = re.compile(r"(?<![{\w])[A-Za-z_]\w*(?![}\w])")
_UNTOKENED: dict[int, tuple[frozenset[str], tuple[str, ...], str]] = {}


def _untokened(index: RuleIndex, prefilter: re.Pattern[str]) -> tuple[frozenset[str], tuple[str, ...], str]:
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
                if not prefilter.search(pattern.text):  # else a site shows the token or an alias of it
                    code = _STRING.sub("", pattern.text)
                    names += [n for n in _IDENTIFIER.findall(code) if not keyword.iskeyword(n)]
        names += list(index.env)
        names = [n for n in names if not prefilter.search(n)]
        # A matching literal's text starts right after its opening quote (`"tpu"`, not `output`);
        # the quote leads the pattern, so that the regex engine skips to the quotes.
        strings = "|".join(f"(?:{rule.pattern.pattern})" for rule in index.string_args if rule.pattern is not None)
        strings = f"[\"'](?:{strings})" if strings else r"(?!x)x"
        _UNTOKENED[key] = (frozenset(n.rsplit(".", 1)[-1] for n in names), tuple(names), strings)
    return _UNTOKENED[key]


def _words(names: set[str]) -> str:
    return r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b" if names else r"(?!x)x"


def _groups(body: list[ast.stmt]) -> list[tuple[int, int, ast.stmt]]:
    """(first line, last line, node) of each statement as LibCST counts them: statements that
    share a line (`a = 1; b = 2`) are one, and a decorated definition starts at its first decorator."""
    groups: list[tuple[int, int, ast.stmt]] = []
    for node in body:
        decorators = getattr(node, "decorator_list", None)
        first = min(d.lineno for d in decorators) if decorators else node.lineno
        last = node.end_lineno or node.lineno
        if groups and first <= groups[-1][1]:
            groups[-1] = (groups[-1][0], max(last, groups[-1][1]), node)
        else:
            groups.append((first, last, node))
    return groups


_EMPTY_LINE = re.compile(r"[ \t\f]*(?:#[^\r\n]*)?(?:\r\n?|\n)?")


class Spans:
    """Where each top-level statement's text lies: `starts[i]` lines come before statement i's.

    Taken from the `ast` of the source (a C parse, a small fraction of LibCST's) and the
    number of comment and blank lines LibCST gives each statement, checked against the
    source; when a check fails (or Python rejects what LibCST parsed), from LibCST's own
    code generation, as exact but several times dearer. `exact` says the texts are slices
    of the source, which is then what an untouched statement is printed as.
    """

    def __init__(self, source: str, bounds: list[int], starts: list[int], texts: list[str] | None,
                 nodes: list[ast.stmt] | None, module: cst.Module) -> None:
        self.source = source
        self._bounds = bounds  # character offset of the start of each line, and the end
        self.starts = starts  # one more than statements: the last is where the footer starts
        self._texts = texts  # generated code, when not exact
        self._nodes = nodes
        self._module = module
        self.exact = texts is None

    @classmethod
    def of(cls, module: cst.Module, source: str, tree: ast.Module | None) -> Spans:
        """`tree` is CPython's tree of `source`, None when it rejects the source."""
        bounds = [0, *(match.end() for match in _NEWLINE.finditer(source))]
        if bounds[-1] != len(source):
            bounds.append(len(source))
        groups = None if tree is None else _groups(tree.body)
        starts = None if groups is None else cls._starts(module, source, bounds, groups)
        if starts is not None and groups is not None:
            return cls(source, bounds, starts, None, [node for _first, _last, node in groups], module)
        texts = [module.code_for_node(statement) for statement in module.body]
        starts = [len(module.header)]
        for text in texts:
            starts.append(starts[-1] + len(_NEWLINE.findall(text)))
        return cls(source, bounds, starts, texts, None, module)

    @staticmethod
    def _starts(module: cst.Module, source: str, bounds: list[int], groups: list[tuple[int, int, ast.stmt]]) -> list[int] | None:
        if len(groups) != len(module.body):
            return None
        starts: list[int] = []
        previous_last = len(module.header)
        for (first, last, _node), statement in zip(groups, module.body):
            leading = len(statement.leading_lines)
            decorators = getattr(statement, "decorators", ())
            if decorators:
                leading += len(decorators[0].leading_lines)
            start = first - 1 - leading
            if start < previous_last or (not starts and start != len(module.header)):
                return None
            # Its leading lines are blank or comments, and its first line is not.
            for line in range(start, first):
                empty = _EMPTY_LINE.fullmatch(source, bounds[line], bounds[line + 1]) is not None
                if empty != (line < first - 1):
                    return None
            starts.append(start)
            previous_last = last
        end = len(bounds) - 1 - len(module.footer)
        if end < previous_last:
            return None
        return [*starts, end]

    def _slice(self, first_line: int, end_line: int) -> str:
        return self.source[self._bounds[first_line]:self._bounds[end_line]]

    def text(self, index: int) -> str:
        if self._texts is not None:
            return self._texts[index]
        return self._slice(self.starts[index], self.starts[index + 1])

    def header(self) -> str:
        if self.exact:
            return self._slice(0, self.starts[0])
        return _code(self._module, self._module.header)

    def footer(self) -> str:
        if self.exact:
            return self._slice(self.starts[-1], len(self._bounds) - 1)
        return _code(self._module, self._module.footer)

    def members(self, index: int) -> list[str] | None:
        """The source of each statement of top-level class `index`'s body, leading comments left out."""
        node = self._nodes[index] if self._nodes is not None else None
        statement = self._module.body[index]
        if not isinstance(node, ast.ClassDef) or not isinstance(statement, cst.ClassDef):
            return None
        groups = _groups(node.body)
        if not isinstance(statement.body, cst.IndentedBlock) or len(groups) != len(statement.body.body):
            return None
        return [self._slice(first - 1, last) for first, last, _node in groups]


def _code(module: cst.Module, lines: Sequence[cst.EmptyLine]) -> str:
    return "".join(module.code_for_node(line) for line in lines)


class Outline:
    def __init__(
        self, module: cst.Module, text: str, tree: ast.Module | None, prefilter: re.Pattern[str],
        canonical: Canonicaliser, index: RuleIndex,
    ) -> None:
        """`text` is the source of `module`, `tree` CPython's tree of it (None: rejected)."""
        self.module = module
        self.pruned: set[int] = set()
        self._positions: dict[cst.CSTNode, CodeRange] = {}
        self._done: set[int] = set()
        spans = Spans.of(module, text, tree)
        self._spans = spans
        # id(top-level statement) -> its text; the module holds the statements, so no id is reused.
        self._texts = {id(statement): spans.text(i) for i, statement in enumerate(module.body)}
        self._offsets = {id(statement): spans.starts[i] for i, statement in enumerate(module.body)}
        keywords, untokened, strings = _untokened(index, prefilter)
        interesting: set[str] = set(keywords)
        watched: set[str] = set(_ALSO_WATCHED)
        # Finding import statements walks statement bodies: only where the word shows.
        importing = {id(s) for s in module.body if "import" in self._texts[id(s)]}
        for statement in module.body:
            if id(statement) not in importing:
                continue
            for node in _imports(statement):
                for bound, qualname in _bound(node, canonical):
                    watched.add(bound)
                    if prefilter.search(qualname) or any(
                        qualname == name or qualname.startswith(name + ".") for name in untokened
                    ):
                        interesting.add(bound)
        reads = re.compile(f"{_words(interesting)}|{strings}")
        names = _words(watched)
        # A name where it may be (re)bound: not followed by `.`, `(` or `[` (reads), or after def/class.
        binds = re.compile(rf"(?:def|class)\s+{names}|{names}(?!\s*[.(\[])")
        self._reads = (prefilter, reads)
        for i, statement in enumerate(module.body):
            text = self._texts[id(statement)]
            if self._matches(text):
                if isinstance(statement, cst.ClassDef):
                    self._prune_members(statement, spans.members(i), watched)
                continue
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if statement.name.value in watched:  # its body binds in its own scope
                    continue
            elif (id(statement) in importing and next(_imports(statement), None) is not None) or binds.search(text):
                continue
            self.pruned.add(id(statement))

    def text(self, statement: cst.CSTNode) -> str:
        """The source of a top-level statement of the module."""
        return self._texts[id(statement)]

    def _matches(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self._reads)

    def _prune_members(self, klass: cst.ClassDef, members: list[str] | None, watched: set[str]) -> None:
        """In a class that holds a site, the methods and nested classes that hold none.

        A member's name binds in the class scope, which only the class body itself reads:
        unless it is a watched name, its body is all that matters, as for a top-level def.
        `members` is the source of each statement of the class body, when it is known.
        """
        if not isinstance(klass.body, cst.IndentedBlock):
            return
        for position, member in enumerate(klass.body.body):
            if not isinstance(member, (cst.FunctionDef, cst.ClassDef)) or member.name.value in watched:
                continue
            text = members[position] if members is not None else self.module.code_for_node(member)
            if not self._matches(text):
                self.pruned.add(id(member))
            elif isinstance(member, cst.ClassDef):
                self._prune_members(member, None, watched)

    def render(self, module: cst.Module) -> tuple[str, list[str]]:
        """`module.code`, and the parts of it that were generated rather than copied.

        `module` is the rewritten module: a statement no pass changed (pruned, or visited
        without a rewrite inside) is the very object of the original module, so its text is
        the input's, whether or not LibCST would print it back the same. Each generated
        part is whole top-level statements (or the whole module), so it parses on its own
        exactly when it parses in place: checking those parts checks the rewrite.
        """
        if not module.has_trailing_newline or not module.body:
            code = module.code  # the module's own trailing-newline rules apply
            return code, [code]
        original = self.module
        generated: list[str] = []
        parts = [self._spans.header() if module.header is original.header else _code(module, module.header)]
        for statement in module.body:
            text = self._texts.get(id(statement))
            if text is None:
                text = module.code_for_node(statement)
                generated.append(text)
            parts.append(text)
        parts.append(self._spans.footer() if module.footer is original.footer else _code(module, module.footer))
        return "".join(parts), generated

    def reprints_changes(self, module: cst.Module) -> bool:
        """Whether LibCST prints every original top-level statement that `module` no longer holds
        back to its exact source: if not, generating the rewritten statement could drop bytes
        (some whitespace-only lines next to oddly indented comments) that nobody edited."""
        if not self._spans.exact or not module.has_trailing_newline or not module.body:
            return self.module.code == self._spans.source
        kept = {id(statement) for statement in module.body}
        return all(
            self.module.code_for_node(statement) == self._texts[id(statement)]
            for statement in self.module.body
            if id(statement) not in kept
        )

    def where(self, top: cst.CSTNode, node: cst.CSTNode) -> CodeRange:
        """The position of `node`, inside the top-level statement `top`."""
        self._locate(top)
        return self._positions[node]

    def _locate(self, top: cst.CSTNode) -> None:
        if id(top) in self._done:
            return
        self._done.add(id(top))
        alone = self.module.with_changes(body=[top], header=[], footer=[])
        shift = self._offsets[id(top)]
        for inner, where in MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider).items():
            self._positions[inner] = CodeRange(
                CodePosition(where.start.line + shift, where.start.column),
                CodePosition(where.end.line + shift, where.end.column),
            )
