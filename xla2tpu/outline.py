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

import keyword
import re
from collections.abc import Iterator

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
        # A matching literal's text starts right after its opening quote (`"tpu"`, not `output`).
        strings = "|".join(f"(?<=[\"'])(?:{rule.pattern.pattern})" for rule in index.string_args if rule.pattern is not None)
        _UNTOKENED[key] = (frozenset(n.rsplit(".", 1)[-1] for n in names), tuple(names), strings or r"(?!x)x")
    return _UNTOKENED[key]


def _words(names: set[str]) -> str:
    return r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b" if names else r"(?!x)x"


class Outline:
    def __init__(
        self, module: cst.Module, prefilter: re.Pattern[str], canonical: Canonicaliser, index: RuleIndex
    ) -> None:
        self.module = module
        self.pruned: set[int] = set()
        self._offsets: dict[int, int] = {}  # id(top-level statement) -> lines before it
        self._positions: dict[cst.CSTNode, CodeRange] = {}
        self._done: set[int] = set()
        texts = [module.code_for_node(statement) for statement in module.body]
        # id(top-level statement) -> its code; the module holds the statements, so no id is reused.
        self._texts = {id(statement): text for statement, text in zip(module.body, texts)}
        line = len(module.header)  # each header line is one EmptyLine
        for statement, text in zip(module.body, texts):
            self._offsets[id(statement)] = line
            line += len(_NEWLINE.findall(text))
        keywords, untokened, strings = _untokened(index, prefilter)
        interesting: set[str] = set(keywords)
        watched: set[str] = set(_ALSO_WATCHED)
        for statement in module.body:
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
        for statement, text in zip(module.body, texts):
            if self._matches(text):
                if isinstance(statement, cst.ClassDef):
                    self._prune_members(statement, watched)
                continue
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if statement.name.value in watched:  # its body binds in its own scope
                    continue
            elif next(_imports(statement), None) is not None or binds.search(text):
                continue
            self.pruned.add(id(statement))

    def _matches(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self._reads)

    def _prune_members(self, klass: cst.ClassDef, watched: set[str]) -> None:
        """In a class that holds a site, the methods and nested classes that hold none.

        A member's name binds in the class scope, which only the class body itself reads:
        unless it is a watched name, its body is all that matters, as for a top-level def.
        """
        if not isinstance(klass.body, cst.IndentedBlock):
            return
        for member in klass.body.body:
            if not isinstance(member, (cst.FunctionDef, cst.ClassDef)) or member.name.value in watched:
                continue
            if not self._matches(self.module.code_for_node(member)):
                self.pruned.add(id(member))
            elif isinstance(member, cst.ClassDef):
                self._prune_members(member, watched)

    def render(self, module: cst.Module) -> str:
        """`module.code`, reusing the text of the top-level statements that are still the original objects.

        `module` is the rewritten module: a statement no pass changed (pruned, or visited
        without a rewrite inside) is the very object of the original module.
        """
        if not module.has_trailing_newline or not module.body:
            return module.code  # the module's own trailing-newline rules apply
        parts = [module.code_for_node(line) for line in module.header]
        for statement in module.body:
            text = self._texts.get(id(statement))
            parts.append(text if text is not None else module.code_for_node(statement))
        parts += [module.code_for_node(line) for line in module.footer]
        return "".join(parts)

    def where(self, top: cst.CSTNode | None, node: cst.CSTNode) -> CodeRange:
        """The position of `node`, inside the top-level statement `top` (None: not known, search)."""
        if top is not None:
            self._locate(top)
        else:
            for statement in self.module.body:
                if node in self._positions:
                    break
                self._locate(statement)
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
