"""Finding the files to read (gitignore and excludes honoured), reading them, writing them back."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".xla2tpu_cache",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip

SOURCE_SUFFIXES = (".py",)

# A file above this is not even read: no source file is this large, and reading a log or a
# data dump named *.py into memory (and a worker's) could exhaust it. The parse limit, far
# lower, is decode.MAX_SOURCE_BYTES; between the two a file is read for the prefilter only.
MAX_READ_BYTES = 256 * 1024 * 1024

# The prefix and suffix of the temporary file a fix is written to before the rename.
TEMPORARY_PREFIX, TEMPORARY_SUFFIX = ".", ".xla2tpu"


class FileProblem(Exception):
    """A path that cannot be read or written; the message names the reason."""


@dataclass(frozen=True)
class Found:
    """A path to read, or a problem with a path the user named."""

    path: Path
    problem: str | None = None


def _spec(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
    import pathspec  # here: a walk with bare-name excludes and no .gitignore never needs it (0.01 s to import)

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class Excluder:
    """`exclude` / `extend-exclude` patterns, matched like .gitignore lines from the project root."""

    def __init__(self, root: Path, patterns: Sequence[str]) -> None:
        self.root = root
        self._real_root = Path(os.path.realpath(root))
        self.patterns = list(patterns)
        # A bare name (`build`, `.venv/`: every default) excludes an entry of that name at any
        # depth, which a set tells at once; pathspec tries each of its patterns' regexes on
        # each entry, which cost the walk of a 5,000-file tree 0.1 s. A negation makes the
        # order of the lines matter, so then pathspec decides everything.
        simple = [] if any(p.startswith("!") for p in patterns) else [p for p in patterns if _BARE_NAME.fullmatch(p)]
        self._names = frozenset(p for p in simple if not p.endswith("/"))
        self._folder_names = frozenset(p.rstrip("/") for p in simple if p.endswith("/")) | self._names
        rest = [p for p in self.patterns if p not in simple]
        self.spec = _spec(rest) if rest else None
        self._folders: dict[Path, tuple[Path, bool]] = {}  # folder -> where it really is, and whether excluded

    def excluded(self, path: Path, is_dir: bool) -> bool:
        if not self.patterns:
            return False
        # Where the entry sits, not where a link points: a link's own place decides, and
        # resolving a link loop would raise.
        known = self._folders.get(path.parent)
        if known is None:
            known = self._folders[path.parent] = self._folder(path.parent)
        folder, folder_excluded = known
        if folder_excluded or path.name in (self._folder_names if is_dir else self._names):
            return True
        if self.spec is None:
            return False
        try:
            relative = (folder / path.name).relative_to(self._real_root).as_posix()
        except ValueError:
            relative = path.name
        if is_dir:
            relative += "/"
        return self.spec.match_file(relative) or self.spec.match_file(path.name + ("/" if is_dir else ""))

    def _folder(self, folder: Path) -> tuple[Path, bool]:
        """Where `folder` really is, and whether a bare name excludes one of the folders
        between the project root and it (a folder named on the command line, say)."""
        real = Path(os.path.realpath(folder))
        try:
            between = real.relative_to(self._real_root).parts
        except ValueError:
            between = ()
        return real, any(part in self._folder_names for part in between)


# A pattern that is a bare file or folder name: no wildcard, escape, slash inside, comment
# or space that .gitignore rules would treat specially.
_BARE_NAME = re.compile(r"[^*?\[\]!#\\/\s]+/?")


def _gitignore(directory: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _spec(lines)


def _ancestor_ignores(directory: Path, watched: list[Path] | None = None) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files above `directory`, up to its repository root, outermost first."""
    found: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
    current = directory.resolve()
    for parent in [current, *current.parents]:
        if watched is not None and parent != current:
            watched.append(parent / ".gitignore")
        spec = _gitignore(parent) if parent != current else None
        if spec is not None:
            found.append((parent, spec))
        if (parent / ".git").exists():
            break
    return list(reversed(found))


def _ignored(path: Path, is_dir: bool, ignores: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
    for base, spec in ignores:
        try:
            relative = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(relative + ("/" if is_dir else "")):
            return True
    return False


def discover(
    paths: Sequence[Path], excluder: Excluder, suffixes: Sequence[str] = SOURCE_SUFFIXES, watched: list[Path] | None = None
) -> Iterator[Found]:
    """Files under `paths` in a stable order. A file named explicitly is always read.
    `watched` collects the folders walked and the .gitignore files that could apply (what
    the walk's result depends on, for a cached listing)."""
    for path in paths:
        broken = _broken_link(path)
        if broken is not None:
            yield Found(path, broken)
        elif path.is_dir():
            root = path.resolve()
            ignores = _ancestor_ignores(root, watched)
            yield from _walk(path, root, excluder, suffixes, ignores, watched)
        elif path.exists() or path.is_symlink():
            yield Found(path)
        else:
            yield Found(path, "no such file or directory")


def _walk(
    directory: Path,
    real: Path,
    excluder: Excluder,
    suffixes: Sequence[str],
    ignores: list[tuple[Path, pathspec.GitIgnoreSpec]],
    watched: list[Path] | None = None,
) -> Iterator[Found]:
    if watched is not None:
        watched += (real, real / ".gitignore")
    own = _gitignore(real)
    if own is not None:
        ignores = [*ignores, (real, own)]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        yield Found(directory, f"cannot list folder: {exc.strerror or exc}")
        return
    suffixes = tuple(suffixes)
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError as exc:
            yield Found(Path(entry.path), f"cannot read: {exc.strerror or exc}")
            continue
        if not (is_dir or entry.name.endswith(suffixes)):
            continue  # neither walked nor read: whether it is excluded does not matter
        path = Path(entry.path)
        if excluder.excluded(path, is_dir) or (ignores and _ignored(real / entry.name, is_dir, ignores)):
            continue
        if is_dir:
            yield from _walk(path, real / entry.name, excluder, suffixes, ignores, watched)
        else:
            broken = _broken_link(path) if is_link else None
            if broken is not None:
                yield Found(path, broken)
            elif is_link and path.is_dir():
                continue  # linked folders are not followed: they can loop
            else:
                yield Found(path)


def _broken_link(path: Path) -> str | None:
    """Why `path`, a symbolic link, leads nowhere; None when it is not a broken link."""
    if not path.is_symlink():
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return "symbolic link loop" if exc.errno == errno.ELOOP else "dangling symbolic link"
    return None


def read(path: Path | str) -> bytes:
    """The bytes of a regular file. Opened without blocking and checked on the open
    descriptor, so a FIFO (or a file swapped for one) can never hang the run, and a file
    swapped for a folder is reported (`os.fdopen` would raise on it)."""
    try:
        # Non-inheritable without O_CLOEXEC: os.open's descriptors are (PEP 446).
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):  # POSIX opens a folder read-only: no EISDIR above
            raise FileProblem("is a folder")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem("not a regular file (a FIFO, socket or device is never read)")
        if info.st_size > MAX_READ_BYTES:
            raise FileProblem(
                f"not read: {info.st_size / 2**20:.0f} MB is larger than any source file"
                f" (the limit is {MAX_READ_BYTES // 2**20} MB; exclude it with `extend-exclude`)"
            )
        # Reads straight off the descriptor until the end, which a file that grew since
        # the stat still reaches: a buffered file object around it cost a third more.
        chunks = []
        while chunk := os.read(descriptor, info.st_size + 1):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # none: an empty file
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


def write_atomic(path: Path, data: bytes, expected_digest: bytes | None) -> None:
    """Replace `path` by `data` in one rename, unless it changed since it was read.

    `expected_digest` is the sha256 of the bytes that were read (None: do not check).
    The data goes to a temporary file in the same folder (so the rename cannot cross file
    systems), flushed to disk, then renamed over the original: a reader, a crash or a
    kill sees the old file or the new one, never a mix. The new file gets the old one's
    permission bits and, where allowed, its owner and group; a symbolic link keeps
    pointing at the file it pointed at, which is the one replaced. SIGINT and SIGTERM are
    held while the temporary file exists, so an interrupt never leaves one behind.
    """
    target = Path(os.path.realpath(path))
    try:
        current = target.read_bytes()
        info = target.stat()
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
    if expected_digest is not None and hashlib.sha256(current).digest() != expected_digest:
        raise FileProblem("changed on disk while xla2tpu ran; not overwritten (run again)")
    with signals_held():
        try:
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f"{TEMPORARY_PREFIX}{target.name}.", suffix=TEMPORARY_SUFFIX)
        except OSError as exc:
            raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            _keep_owner(temporary, info)
            os.chmod(temporary, stat.S_IMODE(info.st_mode))
            os.replace(temporary, target)
        except BaseException as exc:  # the original stays, the temporary goes
            try:
                os.unlink(temporary)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
            raise


def _keep_owner(temporary: str, info: os.stat_result) -> None:
    """Give the new file the old one's owner and group: `sudo xla2tpu fix` must not make a
    user's files root's. Only root (or the owner, for the group) may; otherwise the new
    file is the runner's, as with any editor."""
    if (info.st_uid, info.st_gid) == (os.getuid(), os.getgid()):
        return
    try:
        os.chown(temporary, info.st_uid, info.st_gid)
    except OSError:
        pass


_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the duration of the block, then deliver the first one.

    A handler runs between any two bytecodes, so without this an interrupt could land
    after the temporary file is created and before the `try` that removes it. Signals are
    only handled in the main thread; elsewhere the block runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {number: signal.signal(number, lambda number, _frame: received.append(number)) for number in _HELD_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        if received:
            signal.raise_signal(received[0])
