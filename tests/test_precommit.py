"""The pre-commit hooks, run by pre-commit itself (`try-repo` on this checkout) in a scratch git repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LEGACY, MIGRATED

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
# What a hook install builds from: the project, as committed.
_PROJECT = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "xla2tpu", "rules")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def hook_repo(tmp_path: Path) -> Path:
    """This checkout's files committed to a scratch repo (try-repo reads committed and staged files only)."""
    repo = tmp_path / "xla2tpu"
    repo.mkdir()
    for name in _PROJECT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "commit", "-q", "-m", "hooks")
    return repo


@pytest.fixture
def legacy_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "legacy"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "train.py").write_text(LEGACY)
    (repo / "clean.py").write_text("import torch\n")
    _git(repo, "add", ".")
    return repo


def _try_repo(repo: Path, hooks: Path, hook: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), hook, "--all-files", "--color", "never"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900,
    )


def test_check_and_fix_hooks(legacy_repo: Path, hook_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "pre-commit-home"  # one hook environment for both runs
    check = _try_repo(legacy_repo, hook_repo, "xla2tpu-check", home)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:4:10: XLA101" in check.stdout
    assert (legacy_repo / "train.py").read_text() == LEGACY

    fix = _try_repo(legacy_repo, hook_repo, "xla2tpu-fix", home)
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified: the commit stops
    assert (legacy_repo / "train.py").read_text() == MIGRATED
    _git(legacy_repo, "add", ".")
    again = _try_repo(legacy_repo, hook_repo, "xla2tpu-fix", home)
    assert again.returncode == 0, again.stdout + again.stderr
