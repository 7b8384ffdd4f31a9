"""Hostile inputs: each is one line `path: error: reason`, and the run goes on.

The trees are checked by a real `xla2tpu` process with a timeout, because the failures
guarded against here (a C stack overflow in the parser, a read that blocks on a FIFO)
would take pytest down with them rather than fail a test.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import LEGACY, MIGRATED
from xla2tpu.sources.decode import MAX_SOURCE_BYTES
from xla2tpu.sources.files import MAX_READ_BYTES

IDIOM = b"import torch_xla.core.xla_model as xm\n"
GOOD_FINDING = "good.py:4:10: XLA101"

HOSTILE: dict[str, tuple[bytes, str]] = {  # name: (bytes, the start of its error)
    "python2.py": (IDIOM + b"print 'hello'\n", "syntax error at 2:"),
    "python2_except.py": (IDIOM + b"try:\n    pass\nexcept ValueError, e:\n    pass\n", "syntax error at 4:"),
    "syntax.py": (IDIOM + b"def f(:\n", "syntax error at 2:"),
    "nul.py": (IDIOM + b"x = 1\x00\n", "binary file (contains NUL bytes)"),
    "undecodable.py": (IDIOM + b"name = 'caf\xe9'\n", "not valid utf-8: byte 0xe9 on line 2"),
    "bad_cookie.py": (b"# -*- coding: no-such-codec -*-\n" + IDIOM, "bad encoding declaration"),
    "deep_brackets.py": (IDIOM + b"x = " + b"(" * 100_000 + b"1" + b")" * 100_000 + b"\n", "syntax error at 2:"),
    "deep_unary.py": (IDIOM + b"x = " + b"-" * 100_000 + b"1\n", "cannot parse: the code nests too deeply"),
    "deep_lists.py": (IDIOM + b"x = " + b"[" * 50_000 + b"]" * 50_000 + b"\n", "syntax error at 2:"),
    # Python 3.12 syntax stops CPython 3.11 at line 2, before the nesting LibCST would
    # crash on: the fallback scan must catch it (brackets CPython's tokenizer counts anyway).
    "deep_after_newer_syntax.py": (IDIOM + b"type X = int\nx = " + b"-" * 100_000 + b"1\n", "cannot parse: a chain of 1,000"),
    "deep_ternary_after_newer_syntax.py": (IDIOM + b"type X = int\nx = " + b"a if b else " * 20_000 + b"c\n", "cannot parse: a chain of 1,000"),
    "deep_brackets_after_error.py": (IDIOM + b"def f(:\n    pass\nx = " + b"{" * 100_000 + b"\n", "syntax error at 4:"),
    "huge.py": (IDIOM + b"x = 1\n" * (50 * 2**20 // 6), "too large to parse: 50.0 MB"),
    "bad.ipynb": (b'{"cells": [{"cell_type": "code", "source": "import torch_xla"', "invalid notebook JSON"),
    "not_a_notebook.ipynb": (b'["torch_xla"]', "not a Jupyter notebook"),
}


def _errors(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        path, marker, message = line.partition(": error: ")
        if marker:
            found[path] = message
    return found


def _run(command: list[str], cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _hostile_tree(root: Path) -> None:
    for name, (data, _) in HOSTILE.items():
        (root / name).write_bytes(data)
    (root / "good.py").write_text(LEGACY)
    os.mkfifo(root / "fifo.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    (root / "self_loop.py").symlink_to(root / "self_loop.py")
    (root / "ping.py").symlink_to(root / "pong.py")
    (root / "pong.py").symlink_to(root / "ping.py")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to(root)  # a folder loop: linked folders are never followed
    (root / "sub" / "inner.py").write_text(LEGACY)
    # A clean file too large to parse is never parsed (no idiom can be in it), so no error.
    (root / "huge_clean.py").write_bytes(b"x = 1\n" * (50 * 2**20 // 6))


EXPECTED_OTHERS = {
    "fifo.py": "not a regular file",
    "dangling.py": "dangling symbolic link",
    "self_loop.py": "symbolic link loop",
    "ping.py": "symbolic link loop",
    "pong.py": "symbolic link loop",
}


def test_check_reports_each_hostile_file_on_one_line_and_goes_on(xla2tpu_exe: list[str], tmp_path: Path) -> None:
    _hostile_tree(tmp_path)
    started = time.monotonic()
    result = _run(xla2tpu_exe, tmp_path, "check", ".")
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr[-2000:]  # input errors and findings; never a crash
    assert "Traceback" not in result.stdout + result.stderr
    errors = _errors(result.stdout + result.stderr)
    for name, (_, reason) in HOSTILE.items():
        assert errors.get(name, "").startswith(reason), (name, errors.get(name))
    for name, reason in EXPECTED_OTHERS.items():
        assert errors.get(name, "").startswith(reason), (name, errors.get(name))
    assert set(errors) == set(HOSTILE) | set(EXPECTED_OTHERS)  # huge_clean.py and the folder loop are fine
    assert GOOD_FINDING in result.stdout and "sub/inner.py:4:10: XLA101" in result.stdout
    assert f"{len(errors)} files could not be checked" in result.stdout
    assert elapsed < 60  # two 50 MB files and 100,000-deep nesting cost seconds, not minutes


def test_fix_leaves_hostile_files_byte_identical(xla2tpu_exe: list[str], tmp_path: Path) -> None:
    _hostile_tree(tmp_path)
    result = _run(xla2tpu_exe, tmp_path, "fix", ".")
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stdout + result.stderr
    for name, (data, _) in HOSTILE.items():
        assert (tmp_path / name).read_bytes() == data, name
    assert "torch_xla" not in (tmp_path / "good.py").read_text()
    assert "torch_xla" not in (tmp_path / "sub" / "inner.py").read_text()
    assert sorted(p.name for p in tmp_path.glob(".*.xla2tpu")) == []


def test_a_fifo_named_on_the_command_line_never_blocks(xla2tpu_exe: list[str], tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    result = _run(xla2tpu_exe, tmp_path, "check", "pipe.py", "/dev/null", timeout=60)
    errors = _errors(result.stderr + result.stdout)
    assert errors["pipe.py"].startswith("not a regular file")
    assert errors["/dev/null"].startswith("not a regular file")


def test_a_file_beyond_the_read_limit_is_not_read(invoke, tmp_path: Path) -> None:
    with open(tmp_path / "dump.py", "wb") as handle:  # sparse: no disk is used
        handle.truncate(MAX_READ_BYTES + 1)
    (tmp_path / "good.py").write_text(LEGACY)
    result = invoke("check", "--no-cache", ".")
    assert _errors(result.output)["dump.py"].startswith("not read: 256 MB is larger than any source file")
    assert GOOD_FINDING in result.output


def test_a_file_just_under_the_parse_limit_is_parsed(invoke, tmp_path: Path) -> None:
    padding = MAX_SOURCE_BYTES - len(LEGACY) - 1
    (tmp_path / "big.py").write_text(LEGACY + "#" * padding + "\n")
    result = invoke("check", "--no-cache", "big.py")
    assert "big.py:4:10: XLA101" in result.output and ": error: " not in result.output


def test_unreadable_file_and_folder(invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI runs as root, which no permission bit stops, so the refusal is made where the
    # operating system would make it: opening the file, listing the folder.
    (tmp_path / "secret.py").write_text(LEGACY)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.py").write_text(LEGACY)
    (tmp_path / "good.py").write_text(LEGACY)
    real_open, real_scandir = os.open, os.scandir

    def refuse_open(path, flags, *args, **kwargs):
        if os.fspath(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    def refuse_scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "open", refuse_open)
    monkeypatch.setattr(os, "scandir", refuse_scandir)
    result = invoke("check", "--no-cache", ".")
    errors = _errors(result.output)
    assert errors == {"secret.py": "cannot read: Permission denied", "locked": "cannot list folder: Permission denied"}
    assert GOOD_FINDING in result.output
    assert result.exit_code == 1


def test_mixed_line_endings_each_line_keeps_its_own(invoke, tmp_path: Path) -> None:
    source = b"import torch_xla.core.xla_model as xm\rx = 1\r\nd = xm.xla_device()\ny = 2\rz = 3\r\n"
    (tmp_path / "m.py").write_bytes(source)
    assert invoke("fix", "--no-cache", "m.py").exit_code == 0
    assert (tmp_path / "m.py").read_bytes() == b"import torch\rx = 1\r\nd = torch.device(\"tpu\")\ny = 2\rz = 3\r\n"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[tool.xla2tpu\nselect = 1\n", "invalid TOML"),
        ("[tool.xla2tpu]\nselect = 1\n", "select"),
        ("[tool.xla2tpu]\nselect = [1, 2]\n", "select"),
        ("[tool.xla2tpu]\ntarget = 3\n", "target"),
        ("[tool.xla2tpu]\nexclude = \"build\"\n", "exclude"),
        ("[tool.xla2tpu]\nper-file-ignores = [\"x\"]\n", "per-file-ignores"),
        ("[tool.xla2tpu]\nno-such-key = true\n", "no-such-key"),
        ("[tool.xla2tpu]\nselect = [\"NOPE999\"]\n", "NOPE999"),
        ("[tool]\nxla2tpu = 3\n", "tool.xla2tpu"),
        ("\xff\xfe", "pyproject.toml"),
    ],
)
def test_bad_pyproject_is_one_line_exit_2_naming_the_file(invoke, tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_bytes(config.encode("latin-1"))
    (tmp_path / "a.py").write_text(LEGACY)
    result = invoke("check", "--no-cache", "a.py")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert "pyproject.toml" in line and message in line, line


# -- a rule that raises -------------------------------------------------------------------

ALL_REDUCE = "import torch_xla.core.xla_model as xm\n\ndef f(loss):\n    return xm.all_reduce(xm.REDUCE_SUM, loss)\n"


@pytest.mark.parametrize("files", [2, 20])  # in this process, and in a pool of workers (forked)
def test_a_rule_that_raises_is_an_internal_error_for_that_file_only(
    invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    from xla2tpu.rewrite.transforms import REGISTRY

    def broken(site):
        raise RuntimeError("a bug in the all-reduce transform")

    monkeypatch.setitem(REGISTRY, "all-reduce", broken)
    (tmp_path / "boom.py").write_text(ALL_REDUCE)
    for number in range(files - 1):
        (tmp_path / f"good{number:02d}.py").write_text(LEGACY)
    result = invoke("fix", "--no-cache", "--unsafe-fixes", "-j", "2", ".")
    assert result.exit_code == 2
    assert "boom.py: error: internal error, please report it" in result.output
    assert "RuntimeError: a bug in the all-reduce transform" in result.output
    assert (tmp_path / "boom.py").read_text() == ALL_REDUCE  # nothing half-done is written
    for number in range(files - 1):  # the other files went on, and were fixed
        assert (tmp_path / f"good{number:02d}.py").read_text() == MIGRATED
