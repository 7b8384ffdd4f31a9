"""The ast detector's helpers (xla2tpu/detect/, tensors.known_tensor_ast) give the LibCST
versions' answers: side by side on every expression and call of every fixture, for every
catalogue pattern, and on the small cases where the two trees differ most (issue 16).

Nodes of the two trees are paired by their source range (line, column in characters),
which both trees give without parentheses, except that ast counts a tuple's or a
generator's own (`span` takes them off)."""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from xla2tpu.catalogue import rules as catalogue, patterns
from tests import cst_earlier as earlier
from xla2tpu.detect import ast_earlier, ast_patterns
from xla2tpu.project.resolve import dotted_name
from xla2tpu.detect.tensors import known_tensor, known_tensor_ast, tensor_names

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "fixtures").rglob("*.py"))
Range = tuple[int, int, int, int]


def _catalogue() -> tuple[list[str], list[str]]:
    """The expression patterns and the `after:`/`then:` patterns of the catalogue."""
    rules = list(catalogue.load())
    expressions = [text for rule in rules if rule.kind == "expression" for text in rule.match]
    around = {
        c.arg
        for rule in rules
        for case in rule.cases
        for c in case.when
        if c.kind.endswith("after") or c.kind.endswith("then")
    }
    return expressions, sorted(around)


EXPRESSIONS, AROUND = _catalogue()
# More `after:`/`then:` patterns than the catalogue's three, for the fixtures' own calls.
AROUND_EXTRA = ["torch_xla.core.xla_model.mark_step()", "torch.manual_seed({_})", "torch.ones({_})", "print({_})"]


# ------------------------------------------------------------------ both trees of a file
class _Collect(cst.CSTVisitor):
    """Every node with its parents (the node last), and the Names that are no expression
    (an attribute's or keyword's name, a def's name, an import), which ast has no node for."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.nodes: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = []
        self.not_expressions: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        self.nodes.append((node, list(self.stack)))
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.not_expressions.update(id(n) for n in _cst_subtree(node))
        names = {
            cst.Attribute: "attr", cst.Arg: "keyword", cst.FunctionDef: "name", cst.ClassDef: "name",
            cst.Param: "name", cst.NameItem: "name", cst.MatchAs: "name", cst.MatchStar: "name",
            cst.MatchKeywordElement: "key", cst.MatchMapping: "rest",
        }  # fmt: skip
        field = names.get(type(node))  # type: ignore[call-overload]
        if field is not None and getattr(node, field) is not None:
            self.not_expressions.add(id(getattr(node, field)))
        if isinstance(node, cst.ExceptHandler) and node.name is not None:
            self.not_expressions.add(id(node.name.name))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _cst_subtree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _cst_subtree(child)


def _ast_nodes(node: ast.AST, stack: list[ast.AST]) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    stack = [*stack, node]
    yield node, stack
    for child in ast.iter_child_nodes(node):
        yield from _ast_nodes(child, stack)


@dataclass
class Parsed:
    source: str
    lines: list[str]
    module: cst.Module
    positions: dict[cst.CSTNode, Range]
    cst_nodes: list[tuple[cst.CSTNode, list[cst.CSTNode]]]  # expressions only
    cst_expressions: set[int]
    cst_calls: dict[Range, tuple[cst.Call, list[cst.CSTNode]]]
    tree: ast.Module
    ast_nodes: list[tuple[ast.expr, list[ast.AST]]]  # expressions, f-string parts too
    fstring_parts: set[int]
    ast_calls: dict[Range, tuple[ast.Call, list[ast.AST]]]
    imports: dict[str, str]

    def span(self, node: ast.AST) -> Range:
        def column(line: int, offset: int) -> int:  # ast counts UTF-8 bytes
            return len(self.lines[line - 1].encode()[:offset].decode())

        start = (node.lineno, column(node.lineno, node.col_offset))  # type: ignore[attr-defined]
        end = (node.end_lineno, column(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined,arg-type]
        if isinstance(node, (ast.Tuple, ast.GeneratorExp)) and _own_parentheses(self.segment(node) or ""):
            start, end = self._inside(start, end)  # ast counts a tuple's parentheses, LibCST not
        return (*start, *end)

    def _inside(self, start: tuple[int, int], end: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
        """The range within a pair of parentheses, without the blanks next to them."""
        line, col = start[0], start[1] + 1
        while col >= len(self.lines[line - 1]) or self.lines[line - 1][col].isspace():
            line, col = (line + 1, 0) if col >= len(self.lines[line - 1]) else (line, col + 1)
        end_line, end_col = end[0], end[1] - 1
        while end_col == 0 or self.lines[end_line - 1][end_col - 1].isspace():
            end_line, end_col = (end_line - 1, len(self.lines[end_line - 2])) if end_col == 0 else (end_line, end_col - 1)
        return (line, col), (end_line, end_col)

    def resolve_cst(self, node: cst.BaseExpression) -> str | None:
        return self._resolve(dotted_name(node))

    def resolve_ast(self, node: ast.expr) -> str | None:
        return self._resolve(ast_patterns.dotted_name(node))

    def _resolve(self, name: str | None) -> str | None:
        root, dot, rest = (name or "").partition(".")
        return self.imports[root] + dot + rest if root in self.imports else None

    def segment(self, node: ast.expr) -> str | None:
        return ast.get_source_segment(self.source, node)


def _own_parentheses(text: str) -> bool:
    """Whether `text` is wrapped in one pair of parentheses (`(a, b)`, not `(a), (b)`)."""
    depth = 0
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.OP]
    for i, token in enumerate(tokens):
        depth += token.string in "([{"
        depth -= token.string in ")]}"
        if depth == 0:
            return i == len(tokens) - 1 and tokens[0].string == "("
    return False


def _imports(tree: ast.Module) -> dict[str, str]:
    """What the file's imports bind (anywhere in it: the resolution is not under test)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.partition(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> Parsed | None:
    return parse_text(path.read_text(encoding="utf-8"))


def parse_text(source: str) -> Parsed | None:
    try:
        module = cst.parse_module(source)
        tree = ast.parse(source)
    except (SyntaxError, cst.ParserSyntaxError):
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = {n: (p.start.line, p.start.column, p.end.line, p.end.column) for n, p in wrapper.resolve(PositionProvider).items()}
    collect = _Collect()
    module.visit(collect)
    cst_nodes = [
        (n, parents)
        for n, parents in collect.nodes
        if isinstance(n, cst.BaseExpression) and id(n) not in collect.not_expressions
    ]
    fstring_parts = {
        id(part) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for part in n.values if isinstance(part, ast.Constant)
    }
    ast_nodes = [(n, parents) for n, parents in _ast_nodes(tree, []) if isinstance(n, ast.expr)]
    done = Parsed(
        source, source.split("\n"), module, positions, cst_nodes, {id(n) for n, _ in cst_nodes}, {},
        tree, ast_nodes, fstring_parts, {}, _imports(tree),  # type: ignore[arg-type]
    )  # fmt: skip
    done.cst_calls = {positions[n]: (n, p) for n, p in cst_nodes if isinstance(n, cst.Call)}
    done.ast_calls = {done.span(n): (n, p) for n, p in ast_nodes if isinstance(n, ast.Call)}  # type: ignore[misc]
    return done


def _files() -> list[Parsed]:
    return [p for p in (parsed(path) for path in FILES) if p is not None]


def _ids() -> list[str]:
    return [str(path.relative_to(ROOT)) for path in FILES]


# ------------------------------------------------------------------ expression patterns
Found = tuple[Range, tuple[tuple[str, Range], ...], tuple[Range, ...]]


def _cst_found(p: Parsed, text: str) -> set[Found]:
    pattern = patterns.compile_pattern(text)
    found: set[Found] = set()
    for node, _ in p.cst_nodes:
        if pattern.key not in patterns.candidate_keys(node):
            continue
        m = patterns.match(pattern, node, p.resolve_cst)
        if m is not None:
            claimed = tuple(
                sorted(p.positions[c] for c in m.claimed if isinstance(c, cst.BaseExpression) and not _no_expression(p, c))
            )
            found.add((p.positions[node], tuple(sorted((k, p.positions[v]) for k, v in m.slots.items())), claimed))
    return found


def _no_expression(p: Parsed, node: cst.CSTNode) -> bool:
    return id(node) not in p.cst_expressions


def _ast_found(p: Parsed, text: str, segment: bool) -> set[Found]:
    pattern = ast_patterns.compile_pattern(text)
    found: set[Found] = set()
    for node, _ in p.ast_nodes:
        if not segment and id(node) in p.fstring_parts:
            continue  # without the source the walk must leave f-string parts out (module docstring)
        if pattern.key not in ast_patterns.candidate_keys(node):
            continue
        m = ast_patterns.match(pattern, node, p.resolve_ast, p.segment if segment else None)
        if m is not None:
            slots = tuple(sorted((k, p.span(v)) for k, v in m.slots.items()))
            found.add((p.span(node), slots, tuple(sorted(p.span(c) for c in m.claimed))))
    return found


@pytest.mark.parametrize("path", FILES, ids=_ids())
def test_patterns_agree_on_fixture(path: Path) -> None:
    p = parsed(path)
    if p is None:
        pytest.skip("not Python")
    for text in EXPRESSIONS:
        expected = _cst_found(p, text)
        assert _ast_found(p, text, segment=True) == expected, text
        assert _ast_found(p, text, segment=False) == expected, text


def test_fixtures_exercise_every_kind_of_pattern() -> None:
    """The side-by-side test above means something: the fixtures match each kind of pattern."""
    hits = {text: sum(len(_cst_found(p, text)) for p in _files()) for text in EXPRESSIONS}
    for text in ['{d}.type == "xla"', '"xla" in str({d})', "XLA_AVAILABLE", "{x}.is_tpu", "{x}.tpu()", '"xla_fsdp_v2"']:
        assert hits[text] > 0, text
    assert any(hits[t] for t in EXPRESSIONS if t.startswith("torch_xla.")), "no callee matched by resolution"


# ------------------------------------------------------------------ after: / then:
def _first_argument_cst(call: cst.Call) -> dict[str, cst.BaseExpression]:
    plain = [a.value for a in call.args if a.keyword is None and not a.star]
    return {"seed": plain[0]} if plain else {}


def _first_argument_ast(call: ast.Call) -> dict[str, ast.expr]:
    plain = [a for a in call.args if not isinstance(a, ast.Starred)]
    return {"seed": plain[0]} if plain else {}


@pytest.mark.parametrize("path", FILES, ids=_ids())
def test_earlier_agrees_on_fixture(path: Path) -> None:
    p = parsed(path)
    if p is None:
        pytest.skip("not Python")
    assert p.cst_calls.keys() == p.ast_calls.keys()
    for where, (call, parents) in p.cst_calls.items():
        node, ancestors = p.ast_calls[where]
        before = earlier.calls_before(parents, call)
        after = ast_earlier.calls_before(ancestors, node)
        assert [p.span(c) for c in after] == [p.positions[c] for c in before], where
        following = earlier.call_next(parents)
        then = ast_earlier.call_next(ancestors, p.lines)
        assert [p.span(c) for c in then] == [p.positions[c] for c in following], where
        for pattern in [*AROUND, *AROUND_EXTRA]:
            for cst_calls, ast_calls in ((before, after), (following, then)):
                expected = earlier.matches(pattern, cst_calls, p.resolve_cst, _first_argument_cst(call))
                assert ast_earlier.matches(pattern, ast_calls, p.resolve_ast, _first_argument_ast(node)) == expected, (where, pattern)


# ------------------------------------------------------------------ known tensors
_SAME_KIND = {ast.Name: cst.Name, ast.Attribute: cst.Attribute, ast.Call: cst.Call}


@pytest.mark.parametrize("path", FILES, ids=_ids())
def test_known_tensor_agrees_on_fixture(path: Path) -> None:
    p = parsed(path)
    if p is None:
        pytest.skip("not Python")
    names = tensor_names(p.tree)
    by_range: dict[tuple[Range, type], cst.CSTNode] = {(p.positions[n], type(n)): n for n, _ in p.cst_nodes}
    for node, _ in p.ast_nodes:
        kind = _SAME_KIND.get(type(node))
        if kind is None:
            continue
        partner = by_range[(p.span(node), kind)]
        expected = known_tensor(partner, p.resolve_cst, names)  # type: ignore[arg-type]
        assert known_tensor_ast(node, p.resolve_ast, names) == expected, p.span(node)


def test_fixtures_have_known_tensors() -> None:
    count = 0
    for p in _files():
        names = tensor_names(p.tree)
        count += sum(known_tensor_ast(n, p.resolve_ast, names) for n, _ in p.ast_nodes)
    assert count > 50


# ------------------------------------------------------------------ small cases, side by side
def _snippet(code: str) -> Parsed:
    p = parse_text(code)
    assert p is not None
    return p


def _both(code: str, text: str) -> set[Found]:
    """The matches of `text` in `code`, after checking that every version agrees."""
    p = _snippet(code)
    expected = _cst_found(p, text)
    assert _ast_found(p, text, segment=True) == expected
    return expected


def _where(found: set[Found]) -> list[Range]:
    return sorted(f[0] for f in found)


IMPORTS = "import torch_xla.runtime as xr\nimport torch_xla.core.xla_model as xm\n"


@pytest.mark.parametrize(
    ("code", "pattern", "hits"),
    [
        ('(d.type) == ("xla")\n', '{d}.type == "xla"', 1),
        ('((x.y).type) == "xla"\n', '{d}.type == "xla"', 1),
        ("d.type == 'xla'\n", '{d}.type == "xla"', 1),
        ('d.type == """xla"""\n', '{d}.type == "xla"', 1),
        ('d.type == u"xla"\n', '{d}.type == "xla"', 1),
        ('d.type == r"xla"\n', '{d}.type == "xla"', 1),
        ('d.type == b"xla"\n', '{d}.type == "xla"', 0),
        ('d.type == f"xla"\n', '{d}.type == "xla"', 0),
        ('d.type == f"xla{x}"\n', '{d}.type == "xla"', 0),
        ('d.type == "x" "la"\n', '{d}.type == "xla"', 0),
        ('d.type == ("x"\n  "la")\n', '{d}.type == "xla"', 0),
        ('d.type == "xla" == e\n', '{d}.type == "xla"', 0),
        ('d.type != "xla"\n', '{d}.type == "xla"', 0),
        ('"xla" not in str(d)\n', '"xla" not in str({d})', 1),
        ('"xla" in str(*d)\n', '"xla" in str({d})', 0),
        ('"xla" in str((a, b))\n', '"xla" in str({d})', 1),
        ('"xla" in str(( a,\n  b, ))\n', '"xla" in str({d})', 1),
        ('"xla" in str(x for x in y)\n', '"xla" in str({d})', 1),
        ('"xla" in str(((a), (b)))\n', '"xla" in str({d})', 1),
        ('"xla" in str(d, e)\n', '"xla" in str({d})', 0),
        ('"xla" in str(object=d)\n', '"xla" in str({d})', 0),
        ('f"{\'xla_fsdp_v2\'}"\n', '"xla_fsdp_v2"', 1),
        ('f"xla_fsdp_v2"\n', '"xla_fsdp_v2"', 0),
        ('f"xla_fsdp_v2{x}"\n', '"xla_fsdp_v2"', 0),
        ('x = {"xla_fsdp_v2": 1}\n', '"xla_fsdp_v2"', 1),
        ("x == 1\n", "{a} == 1", 1),
        ("x == 0x1\n", "{a} == 1", 0),
        ("x == 1.0\n", "{a} == 1", 0),
        ("x == True\n", "{a} == 1", 0),
        ("x = model.w.is_tpu\n", "{x}.is_tpu", 1),
        ("y = (a + b).tpu()\n", "{x}.tpu()", 1),
        ("y = tpu()\n", "{x}.tpu()", 0),
        (IMPORTS + 'xr.device_type() == "TPU"\n', 'torch_xla.runtime.device_type() == "TPU"', 1),
        (IMPORTS + 'xm.xla_device_hw(d) != "TPU"\n', 'torch_xla.core.xla_model.xla_device_hw({d}) != "TPU"', 1),
        (IMPORTS + 'xm.xla_device_hw(d) != "TPU"\n', 'torch_xla.core.xla_model.xla_device_hw({d}) == "TPU"', 0),
        ('other.device_type() == "TPU"\n', 'torch_xla.runtime.device_type() == "TPU"', 0),
        ("if XLA_AVAILABLE:\n    XLA_AVAILABLE = False\n", "XLA_AVAILABLE", 2),
        ("x = -(1)\n", "-1", 1),
        ("f(a, *b)\n", "f({x}, *{y})", 1),
        ("f(a, b)\n", "f({x}, *{y})", 0),
        ("x[1, 2]\n", "{v}[1, 2]", 1),
        ("x[(1, 2)]\n", "{v}[1, 2]", 0),
        ("x[1,]\n", "{v}[1]", 1),
        ("x[1:2, 3]\n", "{v}[1:2, 3]", 1),
        ("x[a, b]\n", "{v}[{i}, {j}]", 1),
    ],
)
def test_pattern_cases(code: str, pattern: str, hits: int) -> None:
    assert len(_both(code, pattern)) == hits


def test_claimed_nodes_leave_slots_and_qualified_names_whole() -> None:
    """The pattern claims its own nodes, never a slot's insides nor the parts of a callee it
    matched by resolution (reference rules still see `xm`)."""
    code = IMPORTS + 'xm.xla_device_hw(dev.index) == "TPU"\n'
    (found,) = _both(code, 'torch_xla.core.xla_model.xla_device_hw({d}) == "TPU"')
    where, slots, claimed = found
    assert slots == (("d", (3, 17, 3, 26)),)
    # the comparison, the call, its callee and the string; not `xm` nor `dev`
    assert claimed == ((3, 0, 3, 16), (3, 0, 3, 27), (3, 0, 3, 36), (3, 31, 3, 36))


def test_segment_tells_literals_apart_that_values_do_not() -> None:
    """Without the source, a number or a concatenation compares by value: documented."""
    p = _snippet('x == 0x1\nd.type == "x" "la"\n')
    assert not _cst_found(p, "{a} == 1") and not _cst_found(p, '{d}.type == "xla"')
    assert not _ast_found(p, "{a} == 1", segment=True)
    assert len(_ast_found(p, "{a} == 1", segment=False)) == 1
    assert len(_ast_found(p, '{d}.type == "xla"', segment=False)) == 1
    # but by type too: `1 == 1.0 == True` in Python, not in code
    other = _snippet("x == 1.0\nx == True\nx == b'1'\n")
    assert not _ast_found(other, "{a} == 1", segment=False)
    assert not _ast_found(other, "{a} == '1'", segment=False)


def test_keys_line_up() -> None:
    """A pattern's key is among the candidate keys of the nodes it matches, in both trees."""
    assert ast_patterns.compile_pattern('{d}.type == "xla"').key == ("Compare", "Eq")
    assert ast_patterns.compile_pattern('"xla" not in str({d})').key == ("Compare", "NotIn")
    assert ast_patterns.compile_pattern("{x}.tpu()").key == ("Call", "tpu")
    assert ast_patterns.compile_pattern("torch_xla.runtime.device_type()").key == ("Call", "*")
    call = ast.parse("a.b.tpu()", mode="eval").body
    assert ast_patterns.candidate_keys(call) == (("Call", "tpu"), ("Call", "*"))
    assert ast_patterns.compile_pattern("XLA_AVAILABLE").key == ("Name", "XLA_AVAILABLE")
    assert ast_patterns.compile_pattern('"xla"').key == ("Constant", (str, "xla"))
    literal = ast.parse('f("xla", b"xla", 1, True)', mode="eval").body
    assert [ast_patterns.candidate_keys(a) for a in literal.args] == [
        (("Constant", (str, "xla")),), (("Constant", (bytes, b"xla")),), (("Constant", (int, 1)),),
        (("Constant", (bool, True)),),
    ]


# ------------------------------------------------------------------ after: / then:, small cases
def _around(code: str) -> dict[str, tuple[list[str], list[str]]]:
    """For each call of `code` (by its source text): the calls before it and the next call,
    as source text, after checking that both versions agree."""
    p = _snippet(code)
    out: dict[str, tuple[list[str], list[str]]] = {}
    for where, (call, parents) in p.cst_calls.items():
        node, ancestors = p.ast_calls[where]
        before = [p.segment(c) or "" for c in ast_earlier.calls_before(ancestors, node)]
        following = [p.segment(c) or "" for c in ast_earlier.call_next(ancestors, p.lines)]
        assert before == [p.module.code_for_node(c) for c in earlier.calls_before(parents, call)]
        assert following == [p.module.code_for_node(c) for c in earlier.call_next(parents)]
        out[p.segment(node) or ""] = (before, following)
    return out


def test_calls_before_in_source_order_not_into_nested_functions() -> None:
    code = (
        "a(b(c()))\n"
        "def f():\n"
        "    g(k=h(), *i())\n"
        "    def inner():\n"
        "        j()\n"
        "    lam = lambda: l()\n"
        "    d = {m(): n(), **o()}\n"
        "    x = p() if q() else r()\n"
        "    site()\n"
    )
    around = _around(code)
    assert around["c()"][0] == ["a(b(c()))", "b(c())"]
    assert around["site()"][0] == ["g(k=h(), *i())", "h()", "i()", "m()", "n()", "o()", "p()", "q()", "r()"]
    assert around["j()"][0] == []
    # a site inside a lambda is never met: the function's calls are all "before" (as in LibCST)
    assert "site()" in around["l()"][0]


def test_calls_before_at_module_level_skips_functions_and_classes() -> None:
    around = _around("a()\nclass C:\n    b()\ndef f(x=c()):\n    d()\nsite()\n")
    assert around["site()"][0] == ["a()"]


@pytest.mark.parametrize(
    ("code", "site", "following"),
    [
        ("a()\nb()\n", "a()", ["b()"]),
        ("a(); b()\nc()\n", "a()", ["c()"]),
        ("a()\nb(); c()\n", "a()", []),
        ("a()\nx = b()\n", "a()", []),
        ("if x:\n    a()\nb()\n", "a()", ["b()"]),
        ("if x:\n    pass\nelse:\n    a()\nb()\n", "a()", ["b()"]),
        ("if x:\n    pass\nelif y:\n    a()\nelif z:\n    pass\nb()\n", "a()", ["b()"]),
        ("if x:\n    a()\nelif y:\n    pass\nelse:\n    pass\nb()\n", "a()", ["b()"]),
        ("if x:\n    pass\nelse:\n    if y:\n        a()\n    c()\nb()\n", "a()", ["c()"]),
        ("if x:\n    pass\nelse:\n    if y:\n        a()\nb()\n", "a()", ["b()"]),
        ("with m():\n    a()\nb()\n", "a()", ["b()"]),
        ("for i in x:\n    a()\nb()\n", "a()", []),
        ("while x:\n    a()\nelse:\n    pass\nb()\n", "a()", []),
        ("try:\n    a()\nexcept E:\n    pass\nb()\n", "a()", []),
        ("def f():\n    a()\nb()\n", "a()", []),
        ("if x: a()\nb()\n", "a()", []),
        ("if x:\n    pass\nelse: a()\nb()\n", "a()", []),
        ("if x:\n    pass\nelif y: a()\nb()\n", "a()", []),
        ("if a():\n    pass\nb()\n", "a()", []),
        ("x = a()\nb()\n", "a()", ["b()"]),
        ("if x:\n    with m():\n        a()\nb()\n", "a()", ["b()"]),
    ],
)
def test_call_next(code: str, site: str, following: list[str]) -> None:
    assert _around(code)[site][1] == following


def test_matches_compares_arguments_as_code() -> None:
    p = _snippet("import torch\ntorch.manual_seed(seed + 1)\ntorch.set_rng_state(state)\nsite(seed + 1, k=1)\n")
    (node, ancestors) = next(v for v in p.ast_calls.values() if ast_patterns.dotted_name(v[0].func) == "site")
    calls = ast_earlier.calls_before(ancestors, node)
    args = {"seed": node.args[0]}
    assert ast_earlier.matches("torch.manual_seed({seed})", calls, p.resolve_ast, args)
    assert ast_earlier.matches("torch.set_rng_state|torch.random.set_rng_state({_})", calls, p.resolve_ast, None)
    assert not ast_earlier.matches("torch.manual_seed({seed})", calls, p.resolve_ast, {"seed": node.keywords[0].value})
    assert not ast_earlier.matches("torch.manual_seed({seed})", calls, p.resolve_ast, None)
    assert not ast_earlier.matches("torch.manual_seed({_}, {_})", calls, p.resolve_ast, None)
    assert not ast_earlier.matches("not a pattern", calls, p.resolve_ast, None)


def test_matches_refuses_keyword_and_star_arguments() -> None:
    p = _snippet("import torch\ntorch.manual_seed(seed=1)\ntorch.manual_seed(*s)\nsite()\n")
    node, ancestors = p.ast_calls[(4, 0, 4, 6)]
    calls = ast_earlier.calls_before(ancestors, node)
    assert len(calls) == 2
    assert not ast_earlier.matches("torch.manual_seed({_})", calls, p.resolve_ast, None)


def test_known_tensor_cases() -> None:
    p = _snippet("import torch\nw = torch.zeros(2)\nn = 3\nw; n; m.weight; x.to(d); torch.ones(1); torch.nn.Linear(1, 1)\n")
    names = tensor_names(p.tree)
    values = [s.value for s in p.tree.body[3:]]  # type: ignore[attr-defined]
    assert [known_tensor_ast(v, p.resolve_ast, names) for v in values] == [True, False, True, True, True, False]


@pytest.mark.parametrize(
    ("code", "pattern"),
    [
        ("a and b and c\n", "{x} and {y}"),  # LibCST nests the BoolOp: `a and b` is a node
        ('s = "xla_fsdp_v2" "_x"\n', '"xla_fsdp_v2"'),  # LibCST matches a piece of the concatenation
        ("f(k=1, *a)\n", "f(*{a}, k=1)"),  # ast keeps keywords apart from positional arguments
    ],
)
def test_documented_differences(code: str, pattern: str) -> None:
    """Where the ast matcher knowingly differs (ast_patterns' docstring), and how."""
    p = _snippet(code)
    assert len(_cst_found(p, pattern)) != len(_ast_found(p, pattern, segment=True))


def test_documented_differences_around() -> None:
    """ast_earlier's docstring: arguments compare as code, not layout; without the lines a
    one-line suite is taken for a block."""
    p = _snippet("import torch\ntorch.manual_seed(seed+1)\nsite(seed + 1)\n")
    call, parents = p.cst_calls[(3, 0, 3, 14)]
    node, ancestors = p.ast_calls[(3, 0, 3, 14)]
    pattern = "torch.manual_seed({seed})"
    before = earlier.calls_before(parents, call)
    assert not earlier.matches(pattern, before, p.resolve_cst, _first_argument_cst(call))
    assert ast_earlier.matches(pattern, ast_earlier.calls_before(ancestors, node), p.resolve_ast, _first_argument_ast(node))
    suite = _snippet("if x: a()\nb()\n")
    node, ancestors = suite.ast_calls[(1, 6, 1, 9)]
    assert ast_earlier.call_next(ancestors, suite.lines) == []
    assert [suite.segment(c) for c in ast_earlier.call_next(ancestors)] == ["b()"]


def test_child_nodes_are_cpythons_children_without_contexts_and_operators() -> None:
    """order.child_nodes reads each node kind's fields by what they hold: checked against
    ast's own iteration over the standard library's modules and every kind of pattern."""
    from xla2tpu.trees import order

    def expected(node: ast.AST) -> list[ast.AST]:
        return [child for name, value in ast.iter_fields(node) if name not in order._NOT_WALKED
                for child in (value if isinstance(value, list) else [value]) if isinstance(child, ast.AST)]

    sources = [path.read_bytes() for path in sorted(Path(ast.__file__).parent.glob("*.py"))[:120]]
    sources.append(b"match x:\n    case None: pass\n    case P(1, y=[a, *rest]) | {'a': 1, **kw}: pass\n"
                   b"    case str() as s if {**d, 'k': v}: pass\n"
                   b"def f(a, /, b=1, *c, d, e=2, **f): global g; nonlocal h\n")
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            assert order.child_nodes(node) == expected(node), type(node).__name__
