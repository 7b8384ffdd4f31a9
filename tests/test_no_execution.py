"""`check` and `fix` never import or run the files they read.

Every trap below records its name in a marker file when it is imported or run: a module
at the top level, a package's `__init__.py`, a local `torch_xla` package that would shadow
the real one, `sitecustomize.py`, `conftest.py`, `setup.py`. The commands run as a user
runs them, from inside the trapped project, both in one process and with a pool of
workers. They must read every file (the fixes land) and trip none of the traps.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LEGACY

TRAP = "import pathlib\npathlib.Path({marker!r}).open('a').write({name!r} + '\\n')\n"


def _project(root: Path, marker: Path, pool: bool) -> list[Path]:
    """A project full of traps; returns the files `fix` must change."""
    def trap(relative: str, extra: str = "") -> Path:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TRAP.format(marker=str(marker), name=relative) + extra)
        return path

    targets = [
        trap("train.py", LEGACY),
        trap("pkg/__init__.py", LEGACY),
        trap("pkg/model.py", LEGACY),
        trap("torch_xla/__init__.py", LEGACY),  # `import torch_xla` here would run this
        trap("torch_xla/core/xla_model.py", LEGACY),
    ]
    for name in ("sitecustomize.py", "usercustomize.py", "conftest.py", "setup.py", "torch.py", "libcst.py", "click.py"):
        trap(name)
    if pool:  # enough files past the prefilter to start worker processes
        targets += [trap(f"many/m{number:02d}.py", LEGACY) for number in range(30)]
    return targets


@pytest.mark.parametrize("pool", [False, True])
def test_check_and_fix_never_import_or_run_what_they_read(tmp_path: Path, pool: bool) -> None:
    root = tmp_path / "project"
    marker = tmp_path / "executed.txt"
    targets = _project(root, marker, pool)
    # -P: the import path of the installed `xla2tpu` command, which does not include the
    # current folder (plain `python -m` would import a local click.py, by Python's rules).
    command = [sys.executable, "-P", "-m", "xla2tpu"]
    jobs = ["-j", "2" if pool else "1"]
    check = subprocess.run([*command, "check", "--no-cache", *jobs, "."], cwd=root, capture_output=True, text=True, timeout=300)
    assert check.returncode == 1, check.stderr[-2000:]
    for target in targets:
        assert f"{target.relative_to(root)}:6:10: XLA101" in check.stdout, target
    diff = subprocess.run([*command, "fix", "--diff", "--no-cache", *jobs, "."], cwd=root, capture_output=True, text=True, timeout=300)
    assert diff.returncode == 1, diff.stderr[-2000:]
    fix = subprocess.run([*command, "fix", "--no-cache", "--unsafe-fixes", *jobs, "."], cwd=root, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in fix.stderr, fix.stderr[-2000:]
    for target in targets:  # every file was read and fixed...
        assert "xm.xla_device()" not in target.read_text(), target
    assert not marker.exists(), f"executed: {marker.read_text()}"  # ...and none was run
    # The traps are live: running one does write the marker.
    subprocess.run([sys.executable, "-c", "import pkg"], cwd=root, capture_output=True, timeout=60)
    assert "pkg/__init__.py" in marker.read_text().splitlines()
