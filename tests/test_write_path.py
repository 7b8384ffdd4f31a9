"""The write path: temporary file in the same folder, one rename, permissions and owner
kept, a file changed since it was read left alone, and an interrupted run leaving every
file old or new, never partial, with no temporary file behind."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LEGACY, MIGRATED
from xla2tpu.run import engine
from xla2tpu.sources import files
from xla2tpu.sources.files import FileProblem, TEMPORARY_SUFFIX, signals_held, write_atomic


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(TEMPORARY_SUFFIX)]


def test_rename_from_a_temporary_in_the_same_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.py"
    target.write_text(LEGACY)
    renames: list[tuple[str, str]] = []
    real = os.replace

    def spy(source: str, destination: object) -> None:
        renames.append((source, os.fspath(destination)))
        assert Path(source).read_text() == MIGRATED  # complete and flushed before the rename
        real(source, destination)

    monkeypatch.setattr(os, "replace", spy)
    write_atomic(target, MIGRATED.encode(), hashlib.sha256(LEGACY.encode()).digest())
    [(source, destination)] = renames
    assert Path(source).parent == tmp_path and Path(destination) == target
    # A temporary a SIGKILL leaves behind is hidden, names its file, and is never read as
    # source by the next run (it does not end in .py).
    assert Path(source).name.startswith(".a.py.") and Path(source).name.endswith(".xla2tpu")
    assert target.read_text() == MIGRATED and _temporaries(tmp_path) == []


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o755, 0o444, 0o2775])
def test_permission_bits_are_kept(invoke, tmp_path: Path, mode: int) -> None:
    target = tmp_path / "a.py"
    target.write_text(LEGACY)
    target.chmod(mode)
    assert invoke("fix", "--no-cache", "a.py").exit_code == 0
    assert target.read_text() == MIGRATED
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_owner_and_group_are_kept(invoke, tmp_path: Path) -> None:
    # As root (CI), the file belongs to someone else, as after `sudo xla2tpu fix`;
    # otherwise to the runner, and the check is that nothing changes.
    owner = (4321, 4322) if os.getuid() == 0 else (os.getuid(), os.getgid())
    target = tmp_path / "a.py"
    target.write_text(LEGACY)
    os.chown(target, *owner)
    assert invoke("fix", "--no-cache", "a.py").exit_code == 0
    assert target.read_text() == MIGRATED
    assert (target.stat().st_uid, target.stat().st_gid) == owner


def test_a_symbolic_link_stays_a_link_to_the_fixed_file(invoke, tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text(LEGACY)
    (tmp_path / "link.py").symlink_to("real.txt")
    assert invoke("fix", "--no-cache", "link.py").exit_code == 0
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.txt").read_text() == MIGRATED


def test_a_file_changed_on_disk_since_it_was_read_is_not_overwritten(
    invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "edited.py").write_text(LEGACY)
    (tmp_path / "other.py").write_text(LEGACY)
    edit = "# the user's edit, saved while xla2tpu ran\n" + LEGACY
    real = engine.process_source

    def process_then_user_saves(path: str, data: bytes, settings, context):  # an editor saves mid-run
        result = real(path, data, settings, context)
        if path.endswith("edited.py"):
            (tmp_path / "edited.py").write_text(edit)
        return result

    monkeypatch.setattr(engine, "process_source", process_then_user_saves)
    result = invoke("fix", "--no-cache", "-j", "1", ".")
    assert (tmp_path / "edited.py").read_text() == edit
    assert (tmp_path / "other.py").read_text() == MIGRATED
    assert "edited.py: error: changed on disk while xla2tpu ran; not overwritten (run again)" in result.output
    assert result.exit_code == 1
    assert _temporaries(tmp_path) == []


def test_a_failed_rename_leaves_the_original_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.py"
    target.write_text(LEGACY)

    def full_disk(source: str, destination: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(FileProblem, match="cannot write: No space left on device"):
        write_atomic(target, MIGRATED.encode(), None)
    assert target.read_text() == LEGACY and _temporaries(tmp_path) == []


def test_a_file_gone_since_it_was_read_is_reported(tmp_path: Path) -> None:
    with pytest.raises(FileProblem) as raised:
        write_atomic(tmp_path / "gone.py", MIGRATED.encode(), None)
    assert str(raised.value) == "cannot write: No such file or directory"
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_is_reported_and_the_run_goes_on(invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root writes anywhere, so the refusal is made where the OS makes it: creating the temporary.
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "a.py").write_text(LEGACY)
    (tmp_path / "b.py").write_text(LEGACY)
    real = files.tempfile.mkstemp

    def refuse(*args, **kwargs):
        if Path(kwargs["dir"]).name == "ro":
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", refuse)
    result = invoke("fix", "--no-cache", ".")
    assert "ro/a.py: error: cannot write: Permission denied" in result.output
    assert (tmp_path / "ro" / "a.py").read_text() == LEGACY
    assert (tmp_path / "b.py").read_text() == MIGRATED


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, as in a terminal: a suite started in the background
    of a non-interactive shell inherits SIGINT ignored, where no interrupt would arrive."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("interruptible")
def test_signals_are_held_then_delivered() -> None:
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            signal.raise_signal(signal.SIGINT)
            inside = True  # reached: the interrupt waited for the block to end
    assert inside
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.usefixtures("interruptible")
def test_an_interrupt_during_a_write_completes_it_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.py"
    target.write_text(LEGACY)
    real = os.fsync

    def interrupted(descriptor: int) -> None:  # Ctrl-C lands while the temporary exists
        real(descriptor)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, MIGRATED.encode(), None)
    assert target.read_text() == MIGRATED and _temporaries(tmp_path) == []


# -- killing real runs mid-way ------------------------------------------------------------
#
# One tree of FILES files is analysed once, filling the results cache; each trial then
# restores the originals and runs `fix` from the cache, so the run spends its time writing,
# which is where the signal is aimed.

FILES = 1000


@pytest.fixture(scope="module")
def warm_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[bytes, bytes]]]:
    root = tmp_path_factory.mktemp("kill")
    expected = {}
    for number in range(FILES):
        name = f"pkg{number % 20:02d}/m{number:04d}.py"
        before = f"# file {number}\n{LEGACY}".encode()  # a distinct line: no two files alike
        expected[name] = (before, f"# file {number}\n{MIGRATED}".encode())
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(before)
    warm = subprocess.run([sys.executable, "-m", "xla2tpu", "fix", "--diff", "."], cwd=root, capture_output=True, timeout=600)
    assert warm.returncode == 1, warm.stderr[-2000:]
    return root, expected


def _restore(root: Path, expected: dict[str, tuple[bytes, bytes]]) -> None:
    for name, (before, _) in expected.items():
        (root / name).write_bytes(before)
    for leftover in _temporaries(root):
        leftover.unlink()


def _changed(root: Path, expected: dict[str, tuple[bytes, bytes]]) -> int:
    return sum((root / name).read_bytes() == after for name, (_, after) in expected.items())


def _kill_during_writes(command: list[str], root: Path, expected: dict[str, tuple[bytes, bytes]], how: signal.Signals, group: bool) -> int:
    """Start `fix`, wait until it is writing, send `how`, and return its exit status."""
    process = subprocess.Popen([*command, "fix", "."], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while _changed(root, expected) == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(random.uniform(0, 0.05))
        if group:
            os.killpg(process.pid, how)  # as Ctrl-C in a terminal: the whole group
        else:
            process.send_signal(how)
        process.wait(timeout=120)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # anything of this run still alive
        except ProcessLookupError:
            pass
    return process.returncode


@pytest.mark.parametrize(
    ("how", "group"), [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGTERM, True)]
)
def test_an_interrupted_run_leaves_each_file_old_or_new(
    xla2tpu_exe: list[str], warm_tree: tuple[Path, dict[str, tuple[bytes, bytes]]], how: signal.Signals, group: bool
) -> None:
    root, expected = warm_tree
    _restore(root, expected)
    status = _kill_during_writes(xla2tpu_exe, root, expected, how, group)
    changed = _changed(root, expected)
    print(f"{how.name} {'group' if group else 'process'}: exit {status}, {changed} of {FILES} files written")
    for name, (before, after) in expected.items():
        assert (root / name).read_bytes() in (before, after), name
    assert _temporaries(root) == []
    assert changed > 0, "the run was interrupted before it wrote anything"
    assert status != 0 or changed == FILES
    # A second run finishes the job.
    rerun = subprocess.run([*xla2tpu_exe, "fix", "."], cwd=root, capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert _changed(root, expected) == FILES and _temporaries(root) == []


def test_sigkill_can_leave_only_a_temporary_never_a_partial_file(
    xla2tpu_exe: list[str], warm_tree: tuple[Path, dict[str, tuple[bytes, bytes]]]
) -> None:
    root, expected = warm_tree
    _restore(root, expected)
    _kill_during_writes(xla2tpu_exe, root, expected, signal.SIGKILL, False)
    for name, (before, after) in expected.items():
        assert (root / name).read_bytes() in (before, after), name
    assert len(_temporaries(root)) <= 1  # at most the one file being written
