"""Whole legacy programs: `xla2tpu fix --unsafe-fixes` turns `legacy.py` into `migrated.py`
byte for byte, and leaves exactly the findings listed in `expected` for a human.

Each `fixtures/programs/<name>/` holds the three files; `migrated.py` is reviewed line by
line like hand-written code. XLA2TPU_UPDATE_FIXTURES=1 rewrites `migrated.py` and
`expected` from the current output and skips those tests (review the diff).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.fixture_cases import FIXTURES, check_snapshots, render
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.run.engine import process_source
from xla2tpu.catalogue.settings import Settings

PROGRAMS = sorted(path.parent for path in (FIXTURES / "programs").glob("*/legacy.py"))


def _settings() -> Settings:
    cat = catalogue.load()
    return Settings(cat.select(["ALL"], []), frozenset({FixClass.SAFE, FixClass.UNSAFE}), "eager")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_migration(program: Path) -> None:
    legacy = program / "legacy.py"
    result = process_source(str(legacy), legacy.read_bytes(), _settings())
    assert result.error is None, result.error
    assert result.new_source is not None, "nothing was migrated"
    ast.parse(result.new_source)
    remaining = render([d for d in result.diagnostics if not d.fixed])
    check_snapshots({program / "migrated.py": result.new_source, program / "expected": remaining})


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_migrated_program_is_stable(program: Path) -> None:
    """Running the tool again on its own output changes nothing."""
    migrated = program / "migrated.py"
    again = process_source(str(migrated), migrated.read_bytes(), _settings())
    assert again.error is None, again.error
    assert again.new_source is None


def test_the_programs_are_there() -> None:
    assert {"single_device", "xmp_spawn_dp", "hf_inference"} <= {p.name for p in PROGRAMS}
