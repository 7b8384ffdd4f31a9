"""The line length a file's project is formatted to, for wrapping generated lines (wrap.py).

Read from the formatter and linter configuration nearest above the file, as ruff finds its
own: in the file's folder, else its parent's, and so on up. The first folder that says a
line length decides, in this order (ruff's own files first, each tool's order among its files):

  1. `.ruff.toml`, then `ruff.toml`: `line-length`
  2. `pyproject.toml`: `[tool.ruff] line-length`, then `[tool.black] line-length`, then
     `[tool.yapf] column_limit`
  3. `setup.cfg`, then `tox.ini`, then `.flake8`: `[flake8] max-line-length`, then (setup.cfg)
     `[yapf] column_limit`
  4. `.style.yapf`: `[style] column_limit`

(yapf's column limit, when a yapf section names only `based_on_style`, is that style's:
79 for pep8, 80 for google, facebook and yapf)

and 88 (black's and ruff's default) when none does. `[tool.xla2tpu] line-length` overrides all
of them (config.py). Each folder is read once per run. These are other tools' files: one that
cannot be read or holds a value that is not a line length is skipped with a warning naming it,
and the search goes on as if it said nothing.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from functools import partial

DEFAULT = 88
LONGEST = 320  # ruff's upper bound for line-length


def valid(value: object) -> bool:
    """Whether `value` is a line length: a whole number from 1 to LONGEST."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= LONGEST


def _checked(value: object, where: str, warnings: list[str]) -> int | None:
    if value is None:
        return None
    if valid(value):
        return value  # type: ignore[return-value]
    warnings.append(f"{where} must be a whole number from 1 to {LONGEST}, not {value!r}; ignored")
    return None


def _toml(path: str, data: bytes, warnings: list[str]) -> dict | None:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{path}: cannot read its line length ({exc}); ignored")
        return None


def _ruff_file(path: str, data: bytes, warnings: list[str]) -> int | None:
    table = _toml(path, data, warnings)
    return None if table is None else _checked(table.get("line-length"), f"{path}: line-length", warnings)


def _pyproject(path: str, data: bytes, warnings: list[str]) -> int | None:
    table = _toml(path, data, warnings)
    tools = table.get("tool") if table is not None else None
    if not isinstance(tools, dict):
        return None
    ruff, black = tools.get("ruff"), tools.get("black")
    if isinstance(ruff, dict):
        found = _checked(ruff.get("line-length"), f"{path}: [tool.ruff] line-length", warnings)
        if found is not None:
            return found
    if isinstance(black, dict):  # black reads `line_length` too
        value = black.get("line-length", black.get("line_length"))
        found = _checked(value, f"{path}: [tool.black] line-length", warnings)
        if found is not None:
            return found
    yapf = tools.get("yapf")
    if isinstance(yapf, dict):
        return _yapf_limit(yapf.get("column_limit"), yapf.get("based_on_style"), f"{path}: [tool.yapf]", warnings)
    return None


# yapf's column limit of each base style, when a configuration names the style alone.
_YAPF_STYLES = {"pep8": 79, "google": 80, "facebook": 80, "yapf": 80}


def _yapf_limit(limit: object, style: object, where: str, warnings: list[str]) -> int | None:
    if isinstance(limit, str):
        limit = int(limit.strip()) if limit.strip().isdigit() else limit.strip()
    if limit is not None:
        return _checked(limit, f"{where} column_limit", warnings)
    return _YAPF_STYLES.get(str(style).strip().lower()) if style is not None else None


def _ini(path: str, data: bytes, warnings: list[str], yapf_section: str | None = None) -> int | None:
    """`[flake8] max-line-length`, then the yapf section's column limit, if any."""
    import configparser  # only a folder whose INI file names a line length needs it: 1 ms of every run saved

    parser = configparser.RawConfigParser()
    try:
        parser.read_string(data.decode("utf-8"), source=path)
    except (configparser.Error, UnicodeDecodeError) as exc:
        warnings.append(f"{path}: cannot read its line length ({str(exc).splitlines()[0]}); ignored")
        return None
    for option in ("max-line-length", "max_line_length"):
        if parser.has_option("flake8", option):
            text = parser.get("flake8", option).strip()
            found = _checked(int(text) if text.isdigit() else text, f"{path}: [flake8] {option}", warnings)
            if found is not None:
                return found
    if yapf_section is None or not parser.has_section(yapf_section):
        return None
    options = dict(parser.items(yapf_section))
    return _yapf_limit(options.get("column_limit"), options.get("based_on_style"), f"{path}: [{yapf_section}]",
                       warnings)




# Each file a folder may hold, in the order of precedence: the bytes that show it may set a
# line length (else it is not parsed), and its reader.
_SOURCES: tuple[tuple[str, tuple[bytes, ...], Callable[[str, bytes, list[str]], int | None]], ...] = (
    (".ruff.toml", (b"line-length",), _ruff_file),
    ("ruff.toml", (b"line-length",), _ruff_file),
    ("pyproject.toml", (b"line-length", b"line_length", b"column_limit", b"based_on_style"), _pyproject),
    ("setup.cfg", (b"line-length", b"line_length", b"column_limit", b"based_on_style"),
     partial(_ini, yapf_section="yapf")),
    ("tox.ini", (b"line-length", b"line_length"), _ini),
    (".flake8", (b"line-length", b"line_length"), _ini),
    (".style.yapf", (b"column_limit", b"based_on_style"), partial(_ini, yapf_section="style")),
)


CONFIG_FILES = tuple(name for name, _, _ in _SOURCES)


class LineLengths:
    """The line length of each file's folder, found once per folder (see the module docstring)."""

    def __init__(self) -> None:
        self._by_folder: dict[str, int] = {}  # as the paths name it, and absolute
        self.warnings: list[str] = []

    def of(self, path: str) -> int:
        folder = os.path.dirname(path)
        found = self._by_folder.get(folder)
        if found is None:
            found = self._by_folder[folder] = self._resolved(os.path.abspath(folder or "."))
        return found

    def _resolved(self, folder: str) -> int:
        found = self._by_folder.get(folder)
        if found is None:
            said = self.said(folder)
            parent = os.path.dirname(folder)
            found = said if said is not None else DEFAULT if parent == folder else self._resolved(parent)
            self._by_folder[folder] = found
        return found

    def said(self, folder: str) -> int | None:
        """The line length the configuration files of `folder` set, if any."""
        for name, keys, read in _SOURCES:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue  # absent (or unreadable: not ours to report unless it matters)
            if any(key in data for key in keys):
                found = read(path, data, self.warnings)
                if found is not None:
                    return found
        return None
