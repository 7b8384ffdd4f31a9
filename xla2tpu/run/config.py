"""`[tool.xla2tpu]` in pyproject.toml, merged with command-line flags, validated strictly."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.sources.files import DEFAULT_EXCLUDE
from xla2tpu.project.line_length import LONGEST, valid

TARGETS = ("eager", "compile")
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
KEYS = (*_LIST_KEYS, "per-file-ignores", "target", "cache-dir", "line-length")


class ConfigError(Exception):
    """Bad configuration: the message names the file (or flag) and what is wrong."""


@dataclass
class Config:
    root: Path
    source: Path | None = None  # the pyproject.toml read, if any
    select: list[str] = field(default_factory=lambda: ["ALL"])
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    target: str = "eager"
    cache_dir: str | None = None  # relative to `root`
    line_length: int | None = None  # else each file's formatter configuration says (line_length.py)

    def selected(self, catalogue: Catalogue) -> frozenset[str]:
        return catalogue.select([*self.select, *self.extend_select], self.ignore)

    def selected_for(self, catalogue: Catalogue, path: Path, base: frozenset[str]) -> frozenset[str]:
        """`base` minus the codes that per-file-ignores switch off for `path`."""
        if not self.per_file_ignores:
            return base
        try:
            relative = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            relative = path.as_posix()
        import pathspec  # here: only per-file-ignores need it

        off: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            spec = pathspec.GitIgnoreSpec.from_lines([pattern])
            if spec.match_file(relative) or spec.match_file(path.name):
                off.extend(codes)
        if not off:
            return base
        return frozenset(code for code in base if code not in catalogue.select(off, []))

    def validate_codes(self, catalogue: Catalogue) -> None:
        where = f"{self.source}" if self.source else "the command line"
        named = [*self.select, *self.ignore, *self.extend_select]
        named += [code for codes in self.per_file_ignores.values() for code in codes]
        unknown = catalogue.unknown_selectors(named)
        if unknown:
            raise ConfigError(f"{where}: unknown rule code or prefix {', '.join(map(repr, unknown))} (see `xla2tpu rules`)")


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.xla2tpu] table."""
    start = start.resolve()
    for directory in [start if start.is_dir() else start.parent, *start.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return candidate  # reported properly by load()
            if "xla2tpu" in data.get("tool", {}):
                return candidate
    return None


def load(path: Path | None, explicit: bool = False) -> Config:
    """Read a pyproject.toml (or a bare xla2tpu.toml when given with --config)."""
    if path is None:
        return Config(root=Path.cwd())
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("xla2tpu")
    if table is None:
        if explicit and path.name != "pyproject.toml":
            table = data  # a dedicated config file holds the keys at its top level
        else:
            table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.xla2tpu] must be a table")
    return from_table(table, path)


def from_table(table: dict, source: Path) -> Config:
    config = Config(root=source.parent.resolve(), source=source)
    where = f"{source}: [tool.xla2tpu]"
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (expected one of: {', '.join(KEYS)})")
        if key in _LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: {key!r} must be a list of strings")
            setattr(config, key.replace("-", "_"), list(value))
        elif key == "per-file-ignores":
            if not isinstance(value, dict) or not all(
                isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
            ):
                raise ConfigError(f"{where}: 'per-file-ignores' must map glob patterns to lists of codes")
            config.per_file_ignores = dict(value)
        elif key == "target":
            if value not in TARGETS:
                raise ConfigError(f"{where}: 'target' must be one of {', '.join(TARGETS)}, not {value!r}")
            config.target = value
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: 'cache-dir' must be a folder path (a string)")
            config.cache_dir = value
        elif key == "line-length":
            if not valid(value):
                raise ConfigError(f"{where}: 'line-length' must be a whole number from 1 to {LONGEST}, not {value!r}")
            config.line_length = value
    return config
