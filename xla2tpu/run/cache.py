"""Per-file results cache: a re-run over unchanged files parses nothing.

An entry is keyed by the file's content hash, the kind of file, the tool's fingerprint
(version, its own source, the rule catalogue) and the effective settings for that file,
so any change to one of them misses. Entries are small JSON files; one that cannot be
read or decoded is a miss, never an error. The catalogue itself is kept too (pickled),
because parsing the rule TOML costs more than a warm run's whole budget.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import pickle
import re
import shutil
import tempfile
from pathlib import Path

from xla2tpu import __version__
from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.catalogue.settings import Settings
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.project.facts import Facts
from xla2tpu.run.notebook import CellDiagnostic


DEFAULT_DIR = ".xla2tpu_cache"
_FORMAT = "4"  # bump when the entry layout changes


@functools.cache
def fingerprint() -> str:
    """Changes whenever xla2tpu's code or rules do (a source checkout changes under it)."""
    digest = hashlib.sha256(f"{__version__}/{_FORMAT}".encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted([*package.rglob("*.py"), *catalogue_mod.rules_dir().glob("*.toml")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def settings_key(settings: Settings) -> str:
    fixes = ",".join(sorted(f.value for f in settings.apply))
    return f"{','.join(sorted(settings.selected))}|{fixes}|{settings.target}|{settings.line_length}|{settings.rewrite}"


class Cache:
    def __init__(self, directory: Path) -> None:
        self.root = directory
        self.directory = directory / fingerprint()
        self._settings: dict[Settings, str] = {}
        self._marked = False

    def key(self, digest: bytes, kind: str, settings: Settings) -> str:
        token = self._settings.get(settings)
        if token is None:
            token = self._settings[settings] = hashlib.sha256(settings_key(settings).encode()).hexdigest()
        return hashlib.sha256(digest + kind.encode() + token.encode()).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]

    def get(self, key: str, path: str) -> tuple[FileResult, str | None] | None:
        """The result stored under `key`, and the location it was computed in (None: its
        facts were never computed, so no location can change it); see `facts.location_key`."""
        try:
            entry = json.loads(self._entry(key).read_bytes())
            location = entry["o"]
            return _decode(entry, path), None if location is None else str(location)
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None  # missing or corrupt: recompute

    def put(self, key: str, result: FileResult, location: str | None = None) -> None:
        if result.internal_error:
            return  # a bug may be fixed by the next release: never remember it
        if not self._marked:
            _mark(self.root)
            _prune(self.root, keep=self.directory.name)
            self._marked = True
        _write(self._entry(key), json.dumps({**_encode(result), "o": location}, separators=(",", ":")).encode())

    def summaries(self) -> dict:
        """The module summaries of the project model (project/model.py), by absolute path: (size,
        time, summary). Empty when missing or damaged."""
        loaded = self._load("project.pickle")
        return loaded if isinstance(loaded, dict) else {}

    def listing(self, key: str) -> list[str] | None:
        """The project's Python files as a walk listed them, while every folder it walked
        and every .gitignore it could read has the time it had then (a file added, removed
        or renamed changes its folder's time); None otherwise."""
        stored = self._load("listing.pickle")
        try:
            if stored["key"] != key or any(_stamp(path) != stamp for path, stamp in stored["stamps"]):
                return None
            return list(stored["files"])
        except (TypeError, KeyError, ValueError):  # damaged: a miss
            return None

    def keep_listing(self, key: str, watched: list, files: list[str]) -> None:
        stamps = [(str(path), _stamp(str(path))) for path in watched]
        self._keep("listing.pickle", {"key": key, "stamps": stamps, "files": files})

    def model(self, root: str, stamps: dict) -> object | None:
        """The project model linked by an earlier run, while every module has the size and
        time it had then (project/model.py); None otherwise."""
        stored = self._load("model.pickle")
        try:
            return stored["model"] if stored["root"] == root and stored["stamps"] == stamps else None
        except (TypeError, KeyError):  # damaged: a miss
            return None

    def keep_model(self, root: str, stamps: dict, model: object) -> None:
        self._keep("model.pickle", {"root": root, "stamps": stamps, "model": model})

    def has_summaries(self) -> bool:
        """Whether a run of this build has stored the project's summaries (a warm cache)."""
        return (self.directory / "project.pickle").exists()

    def keep_summaries(self, summaries: dict) -> None:
        self._keep("project.pickle", summaries)

    def catalogue(self) -> Catalogue:
        """The rule catalogue, unpickled when this fingerprint's copy is there."""
        loaded = self._load("catalogue.pickle")
        if isinstance(loaded, Catalogue):
            return loaded
        catalogue = catalogue_mod.load()
        self._keep("catalogue.pickle", catalogue)
        return catalogue

    def _load(self, name: str) -> object:
        """What this build pickled under `name`; None when it is missing or damaged."""
        try:
            return pickle.loads((self.directory / name).read_bytes())
        except Exception:  # noqa: BLE001 - any damage to the file is a miss
            return None

    def _keep(self, name: str, value: object) -> None:
        _write(self.directory / name, pickle.dumps(value))


def _stamp(path: str) -> int:
    """A path's modification time, -1 when it does not exist."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _write(path: Path, data: bytes) -> None:
    """Write an entry atomically; a cache that cannot be written is simply not used."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        pass


def _mark(root: Path) -> None:
    """Keep the cache out of git, as ruff and pytest do with theirs."""
    ignore = root / ".gitignore"
    if not ignore.exists():
        _write(ignore, b"# created by xla2tpu\n*\n")


def _prune(root: Path, keep: str) -> None:
    """Drop the entries of other xla2tpu builds: they can never be hit again here."""
    if (root / keep).exists():
        return
    try:
        stale = [p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"[0-9a-f]{32}", p.name) and p.name != keep]
    except OSError:
        return
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)


def _encode(result: FileResult) -> dict:
    return {
        "d": [
            [d.line, d.col, d.code, d.message, d.fix.value, d.fixed, d.end_line, d.end_col, getattr(d, "cell", None)]
            for d in result.diagnostics
        ],
        "n": None if result.new_source is None else base64.b64encode(result.new_source).decode("ascii"),
        "e": result.error,
        "l": result.lines,
        "c": result.encoding,
        "f": None if result.facts is None else result.facts.as_json(),
    }


def _decode(entry: dict, path: str) -> FileResult:
    diagnostics: list[Diagnostic] = []
    for line, col, code, message, fix, fixed, end_line, end_col, cell in entry["d"]:
        args = (int(line), int(col), str(code), str(message), FixClass(fix), bool(fixed), int(end_line), int(end_col))
        diagnostics.append(Diagnostic(*args) if cell is None else CellDiagnostic(*args, cell=int(cell)))
    new = entry["n"]
    return FileResult(
        path,
        diagnostics=diagnostics,
        new_source=None if new is None else base64.b64decode(new, validate=True),
        error=entry["e"],
        lines=int(entry["l"]),
        encoding=str(entry["c"]),
        facts=None if entry["f"] is None else Facts.from_json(entry["f"]),
    )
