"""A reduced parse (layout.py: only the statements some pass needs, the rest behind
placeholders) must give exactly what a parse of the whole file gives: the same findings
at the same positions and the same rewritten bytes."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from tests.fixture_cases import ROOT, Case, cases
from xla2tpu.rewrite import reduction
from xla2tpu.catalogue.diagnostics import FileResult
from xla2tpu.run.engine import process_source
from xla2tpu.rewrite.layout import Layout
from xla2tpu.rewrite.outline import Outline

CASES = cases()

# Plain code around a fixture's: statements no pass needs, with the comment placements
# LibCST gives to a neighbour (an indented comment after a body belongs to that body).
PLAIN = b'''

# a comment between statements
def helper(a, b):
    """No idiom here."""
    total = 0
    for i in range(a):
        total += i * b
    return total
    # the body's trailing comment


class Plain:
    value = 3

    def method(self):
        return self.value
        # also the body's

values = [
    1,
    2,
]  # trailing
if values: print(values)
else:
  print("empty")
'''


def _run(monkeypatch: pytest.MonkeyPatch, case: Case, data: bytes, reduce: bool) -> tuple[FileResult, int]:
    reduced = 0
    original = Layout.reduced_parse.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Layout], *args: object) -> Layout | None:
        nonlocal reduced
        found = original(cls, *args)
        reduced += found is not None
        return found

    monkeypatch.setattr(reduction, "MIN_LEFT_OUT", 0.0 if reduce else 2.0)
    monkeypatch.setattr(Layout, "reduced_parse", classmethod(counting))
    return process_source(str(case.path), data, case.settings()), reduced


def _findings(result: FileResult) -> list[tuple[object, ...]]:
    return [(d.line, d.col, d.end_line, d.end_col, d.code, d.message, d.fix, d.fixed) for d in result.diagnostics]


def _variants(data: bytes) -> dict[str, bytes]:
    found = {"plain after": data + PLAIN, "alone": data}
    if b"__future__" not in data:
        found["plain around"] = PLAIN.lstrip() + data + PLAIN
    mirror = _mirror(data)
    if mirror:
        found["methods named like its functions"] = data + PLAIN + mirror
    return found


def _mirror(data: bytes) -> bytes:
    """A class no pass needs whose methods have the names of the file's functions: a builder
    that asks whether a name is defined once must get the same answer from a reduced parse."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return b""
    names = sorted({node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))})
    methods = "".join(f"\n    def {name}(self):\n        return None\n" for name in names)
    return f"\n\nclass Mirror:{methods}".encode() if names else b""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_reduced_parse_gives_what_a_full_parse_gives(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    used = parsed = 0
    for name, data in _variants(case.path.read_bytes()).items():
        full, _ = _run(monkeypatch, case, data, reduce=False)
        reduced, count = _run(monkeypatch, case, data, reduce=True)
        used += count
        parsed += full.parsed  # a file whose facts stop every rule is never parsed at all
        assert reduced.error == full.error, name
        assert _findings(reduced) == _findings(full), name
        assert reduced.new_source == full.new_source, name
    if b"\n" in case.path.read_bytes().rstrip() and parsed:
        assert used, "the reduced parse was never taken: this test compares nothing"


_SOURCES = sorted(p for part in ("fixtures", "xla2tpu", "tests", "bench") for p in (ROOT / part).rglob("*.py"))


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_reduced_module_keeps_the_whole_modules_defaults(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated code takes the module's default indent and newline: a reduced parse, which
    may not hold the first indented block, must take them from the whole file."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pytest.skip("not Python that CPython accepts")
    monkeypatch.setattr(reduction, "MIN_LEFT_OUT", 0.0)
    reduced = Layout.reduced_parse(source, tree, lambda text, group: False)
    if reduced is None:
        pytest.skip("not reducible")
    whole = cst.parse_module(source)
    assert (reduced.module.default_indent, reduced.module.default_newline) == (whole.default_indent, whole.default_newline)
    rendered, generated = Outline(reduced, None).render(reduced.module)
    assert rendered == source and not generated
