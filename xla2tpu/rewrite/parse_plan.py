"""Which top-level statements (and, inside them, which definitions) can hold a site, read
from CPython's tree and the source before LibCST sees the file.

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
Inside a kept class, function or block (`for`, `while`, `with`, `if`, `try` bodies), its
statements are pruned the same way, except those that read a variable a kept statement
there assigns (the rewrite of a loader edits the loops over it).
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from collections.abc import Iterator

from xla2tpu.trees.blocks import Group, blocks
from xla2tpu.project.canonical import PROJECT, Canonicaliser
from xla2tpu.catalogue.index import RuleIndex
from xla2tpu.sources.prefilter import holds_token

# Names a transform asks the scope about (`Scope.binds`), beyond the import-bound ones.
_ALSO_WATCHED = ("bool",)


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements inside a statement, found through statement bodies only."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    for block in blocks(node):
        for child in block:
            yield from _imports(child)


def _bound(node: ast.Import | ast.ImportFrom, canonical: Canonicaliser) -> Iterator[tuple[str, str]]:
    """(name bound, qualified name) for each alias of an import."""
    module = ""
    if isinstance(node, ast.ImportFrom):
        module = (canonical.absolute(node.level, node.module or "") if node.level else node.module) or ("." * node.level + (node.module or ""))
    for alias in node.names:
        if alias.name == "*":
            return
        qualname = f"{module}.{alias.name}" if module else alias.name
        bound = alias.asname or (alias.name if module else alias.name.split(".", 1)[0])
        yield bound, qualname
        yield bound, canonical(qualname)


_STRING = re.compile(r"([\"']).*?\1")
_IDENTIFIER = re.compile(r"(?<![{\w])[A-Za-z_]\w*(?![}\w])")
_UNTOKENED: dict[int, tuple[frozenset[str], tuple[str, ...], re.Pattern[str]]] = {}


def _untokened(index: RuleIndex) -> tuple[frozenset[str], tuple[str, ...], re.Pattern[str]]:
    """What the selected rules match that holds no prefilter token (a rule gated by `file-matches`,
    e.g. on `torch._dynamo.mark_dynamic`): the last component of each such name (any spelling of
    it, through an import of a module above it, ends with it), and the names themselves (an
    import of the name, or of a module under it, binds an alias to watch). Last, the string
    patterns of string-argument rules (`inductor`), searched right after a quote, compiled
    once (every file's names differ, its strings do not)."""
    key = id(index)  # indexes are built once per selection and kept (index.build is cached)
    if key not in _UNTOKENED:
        names = [*index.calls.exact, *index.references.exact, *index.imports.exact]
        names += [prefix.rstrip(".") for matcher in (index.calls, index.references, index.imports)
                  for prefix, _rule in matcher.prefixes]
        for text, _rule in index.expressions:
            if not holds_token(text):  # else a site shows the token or an alias of it
                code = _STRING.sub("", text)
                names += [n for n in _IDENTIFIER.findall(code) if not keyword.iskeyword(n)]
        names += list(index.env)
        names = [n for n in names if not holds_token(n)]
        # A matching literal's text starts right after its opening quote (`"tpu"`, not `output`);
        # the quote leads the pattern, so that the regex engine skips to the quotes.
        strings = "|".join(f"(?:{rule.pattern.pattern})" for rule in index.string_args if rule.pattern is not None)
        strings = f"[\"'](?:{strings})" if strings else r"(?!x)x"
        _UNTOKENED[key] = (frozenset(n.rsplit(".", 1)[-1] for n in names), tuple(names), re.compile(strings))
    return _UNTOKENED[key]


_DECLARES = re.compile(r"\b(?:global|nonlocal)\b")


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """Files that import alike share their patterns (re's own cache holds too few)."""
    return re.compile(pattern)


_WORD = re.compile(r"\w+")  # the maximal runs a word-bounded name must be one of


@functools.lru_cache(maxsize=1024)
def _binding(name: str) -> re.Pattern[str]:
    """Where `name` may be (re)bound (`Plan._binds`); files import alike, so names recur."""
    return re.compile(rf"(?:def|class)\s+\b{re.escape(name)}\b|\b{re.escape(name)}\b(?!\s*[.(\[])")


def words(names: set[str]) -> str:
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
                    if holds_token(qualname) or qualname.startswith(PROJECT) or any(
                        qualname == name or qualname.startswith(name + ".") for name in untokened
                    ):
                        interesting.add(bound)
        self.watched = frozenset(watched)
        self._reads = _compiled(words(interesting))
        self._strings = strings
        self._matched: dict[str, bool] = {}

    def _binds(self, text: str) -> bool:
        """Whether `text` shows a watched name where it may be (re)bound: not followed by `.`,
        `(` or `[` (reads), or after def/class. The words of the text are met with the watched
        names first: one pattern of every name a file imports would cost more to compile than
        all its searches, and most statements show none of them."""
        return any(_binding(name).search(text) is not None for name in self.watched.intersection(_WORD.findall(text)))

    def matches(self, text: str) -> bool:
        """Whether `text` shows a token, an interesting name or a matched string (asked of a
        statement by each pass that reads it: answered once)."""
        found = self._matched.get(text)
        if found is None:
            found = self._matched[text] = (holds_token(text) or self._reads.search(text) is not None
                                           or self._strings.search(text) is not None)
        return found

    def reads_definition(self, text: str) -> bool:
        """Whether a definition inside a top-level statement, whose text is `text`, must be
        read: it may use what a rule looks for, or bind a name outside itself."""
        return self.matches(text) or _DECLARES.search(text) is not None

    def keeps(self, text: str, group: Group) -> bool:
        """Whether the statement of `group`, whose text is `text`, must be visited."""
        if self.matches(text):
            return True
        definition = group.definition
        if definition is not None:  # its body binds in its own scope
            return definition.name in self.watched
        return any(next(_imports(node), None) is not None for node in group.nodes) or self._binds(text)
