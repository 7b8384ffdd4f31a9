"""The layout of `xla2tpu/` follows the pipe (docs/architecture.md): the import contracts of
pyproject.toml hold, no two modules share a name, and each stage says what it does."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "xla2tpu"
STAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


def test_import_contracts_hold() -> None:
    """A stage imports only the stages before it, verify imports none, and no package's
    modules import each other in a cycle (`lint-imports`, configured in pyproject.toml)."""
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
                           "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_stage_is_in_the_layers_contract() -> None:
    """A new folder must take its place in the pipe, or it would escape the contracts."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index('name = "a stage imports only the stages before it"')
    layers = text[start:text.index("]\n", text.index("layers = [", start))]
    for stage in STAGES:
        assert f'"{stage}"' in layers or f"| {stage}" in layers or f"{stage} |" in layers, stage


def test_no_two_modules_share_a_name() -> None:
    names = Counter(p.stem for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    names.update(p.parent.name for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
    assert [name for name, count in names.items() if count > 1] == []


def test_each_stage_says_what_it_receives_and_hands_on() -> None:
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text())) or ""
        assert "Receives" in doc and "Hands on" in doc, f"xla2tpu/{stage}/__init__.py: say its job, what it receives and hands on"


def test_architecture_page_names_every_stage_and_is_linked() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    for stage in STAGES:
        assert f"{stage}/" in page, stage
    assert "docs/architecture.md" in (ROOT / "README.md").read_text()
