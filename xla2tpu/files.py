"""Finding the files to read (gitignore and excludes honoured), reading them, writing them back."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".xla2tpu_cache",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip

SOURCE_SUFFIXES = (".py",)


class FileProblem(Exception):
    """A path that cannot be read or written; the message names the reason."""


@dataclass(frozen=True)
class Found:
    """A path to read, or a problem with a path the user named."""

    path: Path
    problem: str | None = None


def _spec(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


class Excluder:
    """`exclude` / `extend-exclude` patterns, matched like .gitignore lines from the project root."""

    def __init__(self, root: Path, patterns: Sequence[str]) -> None:
        self.root = root
        self.spec = _spec(patterns)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        try:
            relative = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            relative = path.name
        if is_dir:
            relative += "/"
        return self.spec.match_file(relative) or self.spec.match_file(path.name + ("/" if is_dir else ""))


def _gitignore(directory: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _spec(lines)


def _ancestor_ignores(directory: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files above `directory`, up to its repository root, outermost first."""
    found: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
    current = directory.resolve()
    for parent in [current, *current.parents]:
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


def discover(paths: Sequence[Path], excluder: Excluder, suffixes: Sequence[str] = SOURCE_SUFFIXES) -> Iterator[Found]:
    """Files under `paths` in a stable order. A file named explicitly is always read."""
    for path in paths:
        if path.is_symlink() and not path.exists():
            yield Found(path, "dangling symbolic link")
        elif path.is_dir():
            root = path.resolve()
            yield from _walk(path, root, excluder, suffixes, _ancestor_ignores(root))
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
) -> Iterator[Found]:
    own = _gitignore(real)
    if own is not None:
        ignores = [*ignores, (real, own)]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        yield Found(directory, f"cannot list folder: {exc.strerror or exc}")
        return
    for entry in entries:
        path = Path(entry.path)
        real_path = real / entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError:
            continue
        if excluder.excluded(path, is_dir) or _ignored(real_path, is_dir, ignores):
            continue
        if is_dir:
            yield from _walk(path, real_path, excluder, suffixes, ignores)
        elif entry.name.endswith(tuple(suffixes)):
            if is_link and not path.exists():
                yield Found(path, "dangling symbolic link")
            elif is_link and path.is_dir():
                continue  # linked folders are not followed: they can loop
            else:
                yield Found(path)


def read(path: Path) -> bytes:
    try:
        info = path.stat()
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise FileProblem("is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem("not a regular file (a FIFO, socket or device is never read)")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None


def write_atomic(path: Path, data: bytes, expected_digest: bytes | None) -> None:
    """Replace `path` by `data` in one rename, unless it changed since it was read.

    `expected_digest` is the sha256 of the bytes that were read (None: do not check).
    The new file gets the old one's permission bits; a symbolic link keeps pointing at the
    file it pointed at, which is the one replaced.
    """
    target = Path(os.path.realpath(path))
    try:
        current = target.read_bytes()
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
    if expected_digest is not None and hashlib.sha256(current).digest() != expected_digest:
        raise FileProblem("changed on disk while xla2tpu ran; not overwritten (run again)")
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".xla2tpu")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as exc:  # an interrupt too: the original stays, the temporary goes
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
        raise
