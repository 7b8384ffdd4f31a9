"""The front of a run (read, prefilter, light summaries) gives the same results whether the
workers run it over slices of a big tree or this process runs it over a small one."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.fixture_cases import FIXTURES
from xla2tpu.run import workflow
from xla2tpu.project.module_summary import light
from xla2tpu.run.pool import POOL_MIN_ITEMS, Workers
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.run.scan import scan

IDIOMS = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"
NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [IDIOMS]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


def _tree(root: Path) -> None:
    """Enough files for the front to run in the workers, with what each part of it meets:
    a project whose modules only the model links, files that may hold an idiom and files
    that cannot, a notebook, a file that cannot be read and one that cannot be decoded."""
    shutil.copytree(FIXTURES / "projects" / "spawned_library" / "before", root)
    plain = workflow._SLICE * workflow._POOL_MIN_SLICES
    for number in range(plain):
        folder = root / f"pkg{number % 7}"
        folder.mkdir(exist_ok=True)
        text = IDIOMS if number % 97 == 0 else f"import json\n\nVALUE = {number}\n\n\ndef f():\n    return json.dumps(VALUE)"
        (folder / f"m{number}.py").write_text(text)
    (root / "pkg3" / "latin.py").write_bytes(b"import torch_xla\nname = '\xe9'\n")
    (root / "notes.ipynb").write_text(json.dumps(NOTEBOOK))
    os.mkfifo(root / "pkg5" / "pipe.py")


def _check(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "xla2tpu", "check", "--output-format", "json", *args, "."],
                          cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode in (1, 2), done.stderr[-2000:]
    return done.returncode, done.stdout


def test_the_workers_front_finds_what_one_process_finds(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    alone = _check(root, "--no-cache", "-j", "1")
    shown = json.loads(alone[1])
    assert {"notes.ipynb", "pkg0/m0.py", "train_lib/optim.py", "train_lib/callbacks.py"} <= {
        item["filename"] for item in shown["findings"]}
    assert {item["filename"] for item in shown["errors"]} == {"pkg3/latin.py", "pkg5/pipe.py"}
    assert _check(root, "--no-cache", "-j", "2") == alone
    assert _check(root, "-j", "2") == alone  # cold, filling the cache
    assert _check(root, "-j", "2") == alone  # warm


def test_the_workers_front_fixes_what_one_process_fixes(tmp_path: Path) -> None:
    trees = {}
    for jobs in ("1", "2"):
        root = tmp_path / f"jobs{jobs}"
        _tree(root)
        done = subprocess.run([sys.executable, "-m", "xla2tpu", "fix", "--no-cache", "-j", jobs, "."],
                              cwd=root, capture_output=True, text=True, timeout=600)
        assert done.returncode in (0, 1, 2), done.stderr[-2000:]
        trees[jobs] = {path.relative_to(root): path.read_bytes() for path in sorted(root.rglob("*.py*")) if path.is_file()}
    assert trees["1"] == trees["2"]
    assert trees["2"][Path("pkg0/m0.py")] != IDIOMS.encode()  # the fixes were written


def test_a_slice_tells_each_file_as_the_run_would(tmp_path: Path) -> None:
    files = {"idiom.py": IDIOMS.encode(), "plain.py": b"x = 1", "launched.py": b"def _mp_fn(i):\n    pass\n",
             "empty.py": b"", "notes.ipynb": json.dumps(NOTEBOOK).encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    names = [str(tmp_path / name) for name in [*files, "missing.py"]]
    found = {Path(item.name).name: item for item in scan(names, summarise=True)}
    assert "cannot read" in (found["missing.py"].error or "")
    for name, data in files.items():
        item = found[name]
        assert item.error is None
        assert item.lines == len(data.splitlines())
        if name.endswith(".ipynb"):
            assert item.candidate and item.data == data and item.summary is None
            continue
        assert item.candidate == may_hold_idiom(data)
        assert item.data == (data if item.candidate else None)
        assert item.summary == light(data)
    assert all(item.summary is None for item in scan(names, summarise=False))



def test_a_started_pool_takes_items_whose_results_are_in_before_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker may finish an item before this process looks at it (a loaded machine):
    the stream goes on with none pending."""
    with Workers(2) as workers:
        assert list(workers.map(abs, range(-POOL_MIN_ITEMS, 0))) == list(range(POOL_MIN_ITEMS, 0, -1))
        pool = workers._pool
        assert pool is not None
        submit = pool.submit

        def finished(*args: object) -> Future:
            future = submit(*args)
            future.result()
            return future

        monkeypatch.setattr(pool, "submit", finished)
        assert list(workers.map(abs, range(-3, 0))) == [3, 2, 1]


def test_the_pool_freezes_this_process_only_while_it_runs() -> None:
    """Frozen, what this process held when the workers forked is traversed by no collection
    (in them, that would copy its pages); a program running xla2tpu as a library must get
    its objects back to the collector once the run ends."""
    assert gc.get_freeze_count() == 0
    with Workers(2) as workers:
        assert list(workers.map(abs, range(-POOL_MIN_ITEMS, 0))) == list(range(POOL_MIN_ITEMS, 0, -1))
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
