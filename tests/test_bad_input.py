"""Bad input: a one-line error naming the file and the reason, the run goes on, no traceback."""

from __future__ import annotations

import codecs
import os
import threading
from pathlib import Path

import pytest

from tests.conftest import LEGACY
from xla2tpu.sources import files
from xla2tpu.sources.files import FileProblem, read

BAD = {
    "syntax.py": b"import torch_xla\ndef f(:\n",
    "python2.py": b"import torch_xla\nprint 'hello'\n",
    "binary.py": b"torch_xla\x00\x01\x02",
    "latin1_nocookie.py": "import torch_xla\nname = 'caf\xe9'\n".encode("latin-1"),
}


def _errors(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if ": error: " in line:
            path, _, message = line.partition(": error: ")
            found[path] = message
    return found


def test_each_bad_file_is_one_line_and_the_run_goes_on(invoke, tmp_path: Path) -> None:
    for name, data in BAD.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_text(LEGACY)
    result = invoke("check", ".", "missing.py")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    errors = _errors(result.output)
    assert errors["syntax.py"].startswith("syntax error at 2:")
    assert errors["python2.py"].startswith("syntax error at 2:")
    assert "binary file" in errors["binary.py"]
    assert "not valid utf-8: byte 0xe9 on line 2" in errors["latin1_nocookie.py"]
    assert errors["missing.py"] == "no such file or directory"
    assert "good.py:4:10: XLA101" in result.output  # the good file is still checked
    assert "5 files could not be checked" in result.output


def test_fix_leaves_bad_files_alone(invoke, tmp_path: Path) -> None:
    for name, data in BAD.items():
        (tmp_path / name).write_bytes(data)
    result = invoke("fix", ".")
    assert result.exit_code == 1
    for name, data in BAD.items():
        assert (tmp_path / name).read_bytes() == data


def test_latin1_cookie_is_decoded_and_kept(invoke, tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\nimport torch_xla.core.xla_model as xm\nname = 'caf\xe9'\nd = xm.xla_device()\n"
    (tmp_path / "l.py").write_bytes(source.encode("latin-1"))
    assert invoke("fix", "l.py").exit_code == 0
    expected = "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nd = torch.device(\"tpu\")\n"
    assert (tmp_path / "l.py").read_bytes() == expected.encode("latin-1")


def test_bom_is_preserved(invoke, tmp_path: Path) -> None:
    (tmp_path / "b.py").write_bytes(codecs.BOM_UTF8 + LEGACY.encode())
    assert invoke("fix", "b.py").exit_code == 0
    data = (tmp_path / "b.py").read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    assert b"torch.device(\"tpu\")" in data and b"torch_xla" not in data


def test_crlf_is_preserved_including_added_lines(invoke, tmp_path: Path) -> None:
    (tmp_path / "w.py").write_bytes(LEGACY.replace("\n", "\r\n").encode())
    assert invoke("fix", "w.py").exit_code == 0
    data = (tmp_path / "w.py").read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert data.startswith(b"import torch\r\n")


def test_mixed_line_endings_untouched_lines_keep_theirs(invoke, tmp_path: Path) -> None:
    source = b"import torch_xla.core.xla_model as xm\r\nx = 1\nd = xm.xla_device()\r\ny = 2\r\n"
    (tmp_path / "m.py").write_bytes(source)
    assert invoke("fix", "m.py").exit_code == 0
    assert (tmp_path / "m.py").read_bytes() == b"import torch\r\nx = 1\nd = torch.device(\"tpu\")\r\ny = 2\r\n"


def test_unreadable_file(invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI runs as root, which chmod cannot lock out, so the refusal is simulated where it surfaces.
    target = tmp_path / "secret.py"
    target.write_text(LEGACY)
    real = os.open

    def refuse(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    (tmp_path / "other.py").write_text(LEGACY)
    result = invoke("check", ".")
    assert _errors(result.output)["secret.py"] == "cannot read: Permission denied"
    assert "other.py:4:10: XLA101" in result.output


def test_fifo_is_not_read(invoke, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    result = invoke("check", "pipe.py")
    assert result.exit_code == 1
    assert _errors(result.output)["pipe.py"] == "not a regular file (a FIFO, socket or device is never read)"


def test_reading_a_fifo_never_blocks(tmp_path: Path) -> None:
    # `read` itself, as when a file is swapped for a FIFO after the walk: opening a FIFO
    # without O_NONBLOCK waits for a writer, forever.
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: outcome.append(_problem(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # release the blocked open before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert str(outcome[0]) == "not a regular file (a FIFO, socket or device is never read)"


def _problem(path: Path) -> FileProblem:
    with pytest.raises(FileProblem) as raised:
        files.read(path)
    return raised.value


def test_a_folder_is_not_read(tmp_path: Path) -> None:
    assert str(_problem(tmp_path)) == "is a folder"


def test_a_file_above_the_read_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_READ_BYTES", 2**20)
    at_limit, above = tmp_path / "at.py", tmp_path / "above.py"
    at_limit.write_bytes(b"#" * 2**20)
    above.write_bytes(b"#" * (3 * 2**20))
    assert files.read(at_limit) == b"#" * 2**20
    assert str(_problem(above)) == (
        "not read: 3 MB is larger than any source file (the limit is 1 MB; exclude it with `extend-exclude`)"
    )


def test_an_error_while_reading_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad_disk.py").write_text(LEGACY)

    def failing_read(descriptor: int, size: int) -> bytes:  # a disk error after the open succeeded
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", failing_read)
    assert str(_problem(tmp_path / "bad_disk.py")) == "cannot read: Input/output error"


def test_a_file_that_grew_since_its_stat_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "growing.py").write_text(LEGACY)
    real = os.fstat

    def stale(descriptor: int) -> os.stat_result:  # the size it had when it was looked at
        fields = list(real(descriptor))
        fields[6] = 3
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", stale)
    assert read(tmp_path / "growing.py") == LEGACY.encode()
    (tmp_path / "empty.py").write_bytes(b"")
    assert read(tmp_path / "empty.py") == b""


def test_dangling_symlink_and_loop(invoke, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    (tmp_path / "pkg" / "ok.py").write_text(LEGACY)
    result = invoke("check", "pkg")
    assert _errors(result.output)["pkg/dangling.py"] == "dangling symbolic link"
    assert "pkg/ok.py:4:10: XLA101" in result.output


def test_bad_config_is_exit_2_naming_the_file(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.xla2tpu\nselect = 1\n")
    (tmp_path / "a.py").write_text(LEGACY)
    result = invoke("check", "a.py")
    assert result.exit_code == 2
    assert "pyproject.toml: invalid TOML" in result.output
    assert "Traceback" not in result.output
