"""The wrapped lines are black's: every one-line statement of the fixtures' fixed files,
wrapped at several line lengths, compared with what black prints for it (skipped when black
is not installed)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.fixture_cases import FIXTURES
from xla2tpu.formatting.wrap import Wrapper

black = pytest.importorskip("black")

LIMITS = (40, 60, 88, 119)


def _statements() -> list[str]:
    """The one-line statements (and block headers) of the fixed fixtures that black prints as
    they are: only the line breaks can then differ."""
    found: set[str] = set()
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt) or isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            line = lines[node.lineno - 1].strip()
            header = isinstance(node, (ast.If, ast.While, ast.For, ast.With)) and line.endswith(":")
            if (node.lineno == node.end_lineno or header) and len(line) > 30 and not line.endswith("\\"):
                found.add(line)
    return sorted(found)


def _module(statements: list[str]) -> str:
    """Each statement alone in a function, two blocks deep; an f-string makes black assume
    Python 3.6+ (trailing commas after `*args`), as any file xla2tpu migrates does."""
    functions = []
    for index, statement in enumerate(statements):
        body = f"{statement}\n            pass" if statement.endswith(":") else statement
        if statement.startswith(("elif", "else")):
            body = f"if x:\n            pass\n        {body}"
        functions.append(f"def f{index}():\n    if x:\n        {body}\n")
    return "\n\n".join(functions) + '\n\nversion = f"{3}"\n'


_FUNCTION = re.compile(r"(?m)^(?=def f\d+\(\):)")


def _black_stable(statements: list[str]) -> list[str]:
    module = _module(statements)
    printed = black.format_str(module, mode=black.Mode(line_length=10_000))
    pairs = zip(statements, _FUNCTION.split(module)[1:], _FUNCTION.split(printed)[1:])
    return [statement for statement, before, after in pairs if before == after]


@pytest.fixture(scope="module")
def statements() -> list[str]:
    found = _black_stable(_statements())
    assert len(found) > 200
    return found


@pytest.mark.parametrize("limit", LIMITS)
def test_generated_statements_wrap_as_black_wraps_them(statements: list[str], limit: int) -> None:
    module = _module(statements)
    ours = Wrapper("", limit)(module)
    theirs = black.format_str(module, mode=black.Mode(line_length=limit))
    for mine, blacks in zip(_FUNCTION.split(ours), _FUNCTION.split(theirs)):
        assert mine == blacks, f"at {limit} columns"
    assert ours == theirs
