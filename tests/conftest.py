from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from xla2tpu.cli import main

# check_snapshots asserts there: show a diff on failure, as in a test module.
pytest.register_assert_rewrite("tests.fixture_cases")

# torch-tpu is a test extra and `import torch` autoloads it: keep libtpu away from the
# cloud metadata service in this process and every child it starts.
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")

LEGACY = """\
import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
for step in range(3):
    x = torch.ones(2).to(device)
    xm.mark_step()
model = torch.compile(torch.nn.Linear(2, 2), backend="openxla")
"""

MIGRATED = """\
import torch

device = torch.device("tpu")
for step in range(3):
    x = torch.ones(2).to(device)
model = torch.compile(torch.nn.Linear(2, 2), backend="tpu")
"""


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run the CLI in-process from `tmp_path`; returns click's Result."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str, input: bytes | str | None = None):
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)

    return run


@pytest.fixture
def xla2tpu_exe() -> list[str]:
    """The command as a user runs it: a real subprocess of this interpreter."""
    return [sys.executable, "-m", "xla2tpu"]


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    os.environ.pop("FORCE_COLOR", None)
