"""The Transformers release a project is built on, read from the files around a module.

A rewrite to `transformers.utils.is_torch_tpu_available()` is right only on a Transformers
release with TorchTPU support (5.x, PR #45918); on 4.x that name meant torch_xla or was
gone (trap 15). Which release a file runs on is not in the file: it is in the project's
pins (`requirements*.txt`, `pyproject.toml`, `setup.py`, `setup.cfg`) or, for a checkout
of Transformers itself (its examples, a fork), in the package's own `__version__`.

The folders from the file's up to the project root (the first holding `.git`,
`pyproject.toml` or `setup.py`) are read; the nearest pin wins. Each folder is listed once
per run (`forget_pins`), and read again when a listed file's size or time changed.
"""

from __future__ import annotations

import functools
import os
import re

# The files that can pin a release, per folder.
_PIN_FILES = re.compile(r"requirements[\w.-]*\.txt|pyproject\.toml|setup\.py|setup\.cfg|environment\.ya?ml")
_ROOT_MARKERS = (".git", "pyproject.toml", "setup.py")
# `transformers==4.40.0`, `transformers<4.41`, `"transformers~=4.38"`, `transformers = "^4.36"`.
_PIN = re.compile(r"""(?<![\w.-])transformers\s*(?:\[[^\]]*\])?\s*["']?\s*(==|~=|<=|<|=)\s*["']?([\^~]?)(\d+)(?:\.(\d+))?""")
_VERSION = re.compile(r"""^__version__\s*=\s*["'](\d+)\.(\d+)""", re.M)
_LARGEST = 1 << 20
# The first major release with TorchTPU support (PR #45918, in 5.x).
_TORCH_TPU_MAJOR = 5


def transformers_pin(path: str) -> tuple[str, str] | None:
    """("old" or "new", where it was read) for the Transformers release the project of
    `path` is held to, or None when nothing holds it below or at a release."""
    directory = os.path.dirname(os.path.abspath(path)) if path else ""
    while directory:
        found, is_root = _folder_pin(directory, _listing(directory))
        if found is not None:
            return found
        parent = os.path.dirname(directory)
        if is_root or parent == directory:
            return None
        directory = parent
    return None


_LISTINGS: dict[str, tuple[tuple[str, int, int], ...]] = {}


def forget_pins() -> None:
    """Drop the folders listed so far: each run sees the disk anew."""
    _LISTINGS.clear()


def _listing(directory: str) -> tuple[tuple[str, int, int], ...]:
    listed = _LISTINGS.get(directory)
    if listed is None:
        listed = _LISTINGS[directory] = _list(directory)
    return listed


def _list(directory: str) -> tuple[tuple[str, int, int], ...]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return ()
    listed = []
    for entry in entries:
        if entry.name in _ROOT_MARKERS or _PIN_FILES.fullmatch(entry.name) or entry.name in ("src", "transformers"):
            try:
                stat = entry.stat()
            except OSError:
                continue
            listed.append((entry.name, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(listed))


@functools.lru_cache(maxsize=256)
def _folder_pin(directory: str, listing: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, str] | None, bool]:
    names = {name for name, _, _ in listing}
    is_root = any(marker in names for marker in _ROOT_MARKERS)
    for package in ("src/transformers/__init__.py", "transformers/__init__.py"):
        if package.split("/", 1)[0] in names:
            version = _VERSION.search(_read(os.path.join(directory, package)))
            if version is not None:
                major = int(version.group(1))
                return ("new" if major >= _TORCH_TPU_MAJOR else "old", f"{package} is Transformers {major}.{version.group(2)}"), is_root
    for name, size, _ in listing:
        if size > _LARGEST or not _PIN_FILES.fullmatch(name):
            continue
        for line in _read(os.path.join(directory, name)).splitlines():
            pin = _PIN.search(line.split("#", 1)[0])
            verdict = _held(pin) if pin is not None else None
            if verdict is not None:
                return (verdict, f"{name} pins `{' '.join(line.split())[:60]}`"), is_root
    return None, is_root


def _held(pin: re.Match[str]) -> str | None:
    """"old" / "new" when the pin holds the release on one side of 5.0, else None."""
    op, caret, major, minor = pin.group(1), pin.group(2), int(pin.group(3)), pin.group(4)
    if op in ("==", "~=", "=") or caret:
        return "new" if major >= _TORCH_TPU_MAJOR else "old"
    below = major < _TORCH_TPU_MAJOR or (op == "<" and major == _TORCH_TPU_MAJOR and int(minor or 0) == 0)
    return "old" if below else None  # `<6` allows 4.x and 5.x alike


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(_LARGEST).decode("utf-8", "replace")
    except OSError:
        return ""
