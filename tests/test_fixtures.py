"""Every fixture: the findings, the fixed output, idempotency and that the output parses."""

from __future__ import annotations

import ast

import pytest

from tests.fixture_cases import FIXTURES, Case, cases, check_snapshots, render
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run.engine import process_source

CASES = cases()
KNOWN_WRONG = [c for c in CASES if c.known_wrong]


def _fix(case: Case) -> tuple[bytes, bytes, list]:
    data = case.path.read_bytes()
    settings = case.settings()
    result = process_source(str(case.path), data, settings)
    assert result.error is None, result.error
    output = result.new_source if result.new_source is not None else data
    ast.parse(output)
    # fix is idempotent: a second run changes nothing
    again = process_source(str(case.path), output, settings)
    assert again.new_source is None, "a second fix changed the file again"
    return data, output, result.diagnostics


@pytest.mark.parametrize("case", [c for c in CASES if not c.known_wrong], ids=lambda c: c.id)
def test_fixture(case: Case) -> None:
    data, output, diagnostics = _fix(case)
    # Without a .fixed.py the case must come out unchanged.
    check_snapshots({case.expected: render(diagnostics), case.fixed: output if output != data else None})


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=c.known_wrong)) for c in KNOWN_WRONG],
    ids=[c.id for c in KNOWN_WRONG])
def test_known_wrong_fixture(case: Case) -> None:
    """Fails (as expected) while the engine's output differs from the hand-written right one;
    passing makes the strict xfail fail: drop `--known-wrong` and record the findings."""
    data, output, _ = _fix(case)
    right = case.fixed.read_bytes() if case.fixed.exists() else data
    assert output == right


def test_every_rule_has_a_fixture_that_fires() -> None:
    fired: set[str] = set()
    for case in CASES:
        text = case.expected.read_text(encoding="utf-8") if case.expected.exists() else ""
        fired |= {line.split()[1] for line in text.splitlines() if line}
    for expected in FIXTURES.glob("projects/*/expected-*"):  # multi-module cases (test_projects.py)
        fired |= {line.split()[1] for line in expected.read_text(encoding="utf-8").splitlines() if line}
    missing = sorted(set(catalogue.load().by_code) - fired)
    assert not missing, f"rules with no fixture finding: {missing}"


def test_fixture_dirs_name_real_rules() -> None:
    codes = set(catalogue.load().by_code)
    dirs = {p.parent.name for p in (c.path for c in CASES)}
    assert dirs <= codes, f"fixture folders for unknown codes: {sorted(dirs - codes)}"
