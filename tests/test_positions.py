"""detect/positions.py gives a node of CPython's tree the range and code LibCST gives the
matching node: checked on every fixture and on sources made to be hard (non-ASCII text
before a node, parentheses of every owner, comments inside them, CR and CRLF line ends)."""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from xla2tpu.detect.positions import Positions

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))

# ast node type -> the LibCST node types it may correspond to.
_PAIRS: dict[type[ast.AST], tuple[type[cst.CSTNode], ...]] = {
    ast.Call: (cst.Call,),
    ast.Name: (cst.Name,),
    ast.Attribute: (cst.Attribute,),
    ast.Subscript: (cst.Subscript,),
    ast.Constant: (cst.SimpleString, cst.ConcatenatedString),  # strings and bytes only
    ast.Tuple: (cst.Tuple,),
    ast.GeneratorExp: (cst.GeneratorExp,),
    ast.Compare: (cst.Comparison,),
    ast.BinOp: (cst.BinaryOperation,),
    ast.alias: (cst.ImportAlias,),
}

HARD = [
    "s = 'é' + f(ü)\nt = '日本語'.upper(ü.x[0], 'ß')\nemoji = '🙂' + g('🙂', h)\n",
    "f((x))\nf(x)\ny = ((a) + b)\n(f)(x)\nf(a)(x)\nreturn (x)\nx = (yield)\nprint((yield))\n",
    "f(x for x in y)\nf((x for x in y))\ng = (x for x in y)\nf( x for x in y )\nsum((a for a in b), 0)\n",
    "x = ((1, 2))\nx = 1, 2\n(a), 2\nx = ((a), 2)\nprint(((a), 2))\ne = ()\nf(())\ne = ( )\ne = (\n    )\ne = ((  # c\n  ))\nu = ((a),)\na[(b), c]\n",
    "f((x),)\nf((x), )\nprint(\n    (loss.item()),  # c\n)\nf((x for x in y),)\nclass E((B),):\n    pass\n",
    "with (a):\n    pass\nwith ((a)):\n    pass\nwith (a) as b:\n    pass\nwith (a, b):\n    pass\n"
    "with (a), (b):\n    pass\n",
    "class A((B)):\n    pass\nclass C(B):\n    pass\nclass D((B), metaclass=M):\n    pass\n",
    "print((  # c\n  a  # d\n))\nfoo(  # note 'x' \"#\"\n    bar.baz,  # é\n)\nfoo(\n    (x)  # (\n)\n",
    "x = (a +\n     b)\ny = f(a, \\\n      b)\nz = (\\\n  c)\n",
    "if (a < b):\n    pass\ndel (a)\nfor (x) in (a):\n    pass\ntry:\n    pass\nexcept (E):\n    pass\n",
    "@(f)\ndef g(a=(1), *, b: (int) = c['k']) -> (str):\n    return lambda: (x)\n",
    "y = ('a'\n  'b')\nz = ('é' 'ü')\nb = b'x'[0]\nd = {'k': (v), (k2): 'ü'}\n",
    "x = 1\r\ny = f('é', (a))\r\nz = \"\"\"a\rb\"\"\"; w.q\rv = g(\tx\t)\nq = h(a, \x0c b)\n",
    "import a.b as c, d\nfrom e import (f as g, h)\nfrom . import i\n",
    "y = f'{(x)} é {g(ü)}'\nz = f'{a!r:>{w}}'\nt = f'{a, b} {(a, b)}'\nu = f\"\"\"é\n  {c.d[2], e} {g(h)}\"\"\"\n",
    "from m import (a,  # c\n    b as c,  # d\n)\nfrom n import a, \\\n    b\n",
]


def _ranges(source: str) -> tuple[Positions, ast.Module, cst.Module, dict[tuple, list[cst.CSTNode]]]:
    tree = compile(source, "<test>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    module = cst.parse_module(source)
    found: dict[tuple, list[cst.CSTNode]] = defaultdict(list)
    for node, where in MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider).items():
        found[(type(node), _key(where))].append(node)
    return Positions(source, tree), tree, module, found


def _key(where: CodeRange) -> tuple[int, int, int, int]:
    return (where.start.line, where.start.column, where.end.line, where.end.column)


def _checked(source: str) -> Counter[str]:
    """Pair each ast node of `_PAIRS` with the LibCST node of its range; what was paired."""
    positions, tree, module, found = _ranges(source)
    in_fstring = {id(n) for joined in ast.walk(tree) if isinstance(joined, ast.JoinedStr)
                  for n in ast.walk(joined) if isinstance(n, ast.Constant)}
    counts: Counter[str] = Counter()
    for node in ast.walk(tree):
        kinds = _PAIRS.get(type(node))
        if kinds is None or id(node) in in_fstring:
            continue
        if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
            continue
        if isinstance(node, ast.alias) and node.name == "*":
            continue  # LibCST's ImportStar
        key = _key(positions.where(node))
        matches = [kind for kind in kinds if found.get((kind, key))]
        if isinstance(node, ast.Tuple) and not matches and _in_subscript(tree, node):
            continue  # LibCST has no tuple for `a[b, c]`: its elements are the subscript's
        assert matches, f"{type(node).__name__} at {key} in {source!r}: no LibCST {kinds} there"
        partner = found[(matches[0], key)].pop()
        expected = module.code_for_node(partner)
        if isinstance(node, ast.alias):
            expected = expected.split(",", 1)[0]  # the alias's comma, and what follows it
        # LibCST prints a node inside a block without the block's indentation on its
        # continuation lines: the same code once whitespace is flattened (as `{source}` is).
        assert positions.code(node).split() == expected.split(), f"code of {type(node).__name__} at {key}"
        counts[type(node).__name__] += 1
        line_text = source.splitlines()[key[0] - 1] if key[0] <= len(source.splitlines()) else ""
        counts["non-ascii line"] += not line_text.isascii()
        counts["own parentheses"] += expected.startswith("(") and not isinstance(node, (ast.Tuple, ast.GeneratorExp))
    return counts


def _in_subscript(tree: ast.Module, node: ast.Tuple) -> bool:
    return any(isinstance(parent, ast.Subscript) and parent.slice is node for parent in ast.walk(tree))


@pytest.mark.parametrize("source", HARD, ids=range(len(HARD)))
def test_hard_sources(source: str) -> None:
    assert _checked(source)


def test_the_hard_sources_cover_what_they_should() -> None:
    counts: Counter[str] = Counter()
    for source in HARD:
        counts += _checked(source)
    for kind in ("Call", "Name", "Attribute", "Subscript", "Constant", "Tuple", "GeneratorExp", "alias",
                 "non-ascii line", "own parentheses"):
        assert counts[kind] >= 3, kind


def test_every_fixture() -> None:
    counts: Counter[str] = Counter()
    checked = 0
    for path in FIXTURES:
        source = path.read_bytes().decode("utf-8")
        try:
            compile(source, str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            cst.parse_module(source)
        except (SyntaxError, ValueError, cst.ParserSyntaxError):
            continue
        counts += _checked(source)
        checked += 1
    assert checked > 500
    assert counts["Call"] > 1000 and counts["own parentheses"] > 0  # non-ASCII text: the hard sources


def test_a_form_feed_that_leads_a_statement_counts() -> None:
    # LibCST drops the whitespace before a top-level statement when it holds a form feed
    # (its code then lacks it too, and its columns on that line are short by as much);
    # the columns here are the source's.
    source = "x = 1\n\x0cq = h(a)\n"
    positions, tree, module, _found = _ranges(source)
    call = tree.body[1].value  # type: ignore[attr-defined]
    assert module.code != source
    assert _key(positions.where(call)) == (2, 5, 2, 9)


def test_a_wrong_conversion_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Byte columns taken for character columns: the first hard source must fail.
    monkeypatch.setattr(Positions, "_offset", lambda self, line, column: self._starts[line - 1] + column)
    with pytest.raises(AssertionError):
        _checked(HARD[0])
