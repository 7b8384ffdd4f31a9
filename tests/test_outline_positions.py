"""`Outline.where` computes a node's position on as little of the module as it can (the
innermost statement around it, or only that statement's header) and must give the range
LibCST's PositionProvider gives on the whole module: checked for every node of sources
that nest each kind of compound statement in the others."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from xla2tpu.rewrite.layout import Layout
from xla2tpu.rewrite.outline import Outline, located

SOURCES = [
    "def f(a=g(1)):\n    if x(a) and y:\n        z = h(a)\n    elif w(2):\n        q(3)\n    else:\n        r(4)\n"
    "    for i in it(5):\n        s(i)\n    else:\n        t(6)\n    while c(7):\n        u(8)\n"
    "    with m(9) as n, o(10):\n        v(11)\n    try:\n        import a.b as c\n    except E(12):\n        pass\n"
    "    finally:\n        w(13)\n",
    "class A(B(1), metaclass=M(2)):\n    @dec(3)\n    def m(self, x=d(4)) -> R(5):\n        return x(6)\n\n"
    "    @property\n    def p(self):\n        if self.q(7):  # note\n            return 1\n",
    "@top(1)\nclass C:\n    x = f(2)\n\n\n@a\n@b(3)\ndef g(\n    x=(4),\n):  # c\n    pass\n",
    "if a(1):\n    pass\nelif b(2):\n    c(3)\nfor x in y(2):\n    z(3)\nwith open(p(4)):\n    pass\n",
    "import os\n# lead\n\nif a(1):  # c\n    pass\n\n# more\nwhile b(\n    2):\n    c(3)\n",
    "async def f():\n    async with a(1):\n        pass\n    async for x in b(2):\n        pass\n",
    "def f():\n    def g(x=h(1)):\n        return k(2)\n\n    class K(L(3)):\n        pass\n    return g\n",
    "x = 1\r\nif y(1):\r\n    z(2)\r\nelse:\r\n    w(3)\r\n",
    "def f():\n    if a: b(1)\n    for x in y: z(2)\n    while q(3): r(4)\n",
    "def f():\n    # lead\n\n    if (a(1) and\n            b(2)):  # why\n        c(3)\n    with (\n        d(4) as e,\n    ):\n        pass\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_each_node_is_where_the_whole_modules_positions_put_it(source: str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    layout = Layout.full(module, source, ast.parse(source))
    parents: list[cst.CSTNode] = []
    found = {}

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            parents.append(node)
            if len(parents) > 2:  # below a top-level statement; asked first (what it computes stays)
                found[node] = Outline(layout, None).where(*located(parents, node))
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            parents.pop()

    module.visit(Walk())
    assert len(found) > 20
    wrong = [(type(node).__name__, module.code_for_node(node)[:30], where, expected[node])
             for node, where in found.items() if where != expected[node]]
    assert wrong == []
