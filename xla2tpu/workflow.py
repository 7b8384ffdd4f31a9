"""One run over many files: discover, read, process (engine), and write fixes back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xla2tpu import notebook, pool
from xla2tpu.cache import Cache
from xla2tpu.catalogue import Catalogue
from xla2tpu.config import Config
from xla2tpu.diagnostics import FileResult, FixClass
from xla2tpu.facts import forget_folders, location_key
from xla2tpu.files import SOURCE_SUFFIXES, Excluder, FileProblem, Found, discover, read, write_atomic
from xla2tpu.prefilter import may_hold_idiom
from xla2tpu.settings import Settings
from xla2tpu.shard import Shard


SUFFIXES = (*SOURCE_SUFFIXES, notebook.SUFFIX)


@dataclass
class Outcome:
    """Results that matter (findings, changes, errors), sorted by path."""

    results: list[FileResult] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    parsed: int = 0

    @property
    def diagnostics(self) -> Iterator:
        for result in self.results:
            yield from result.diagnostics

    @property
    def input_errors(self) -> list[FileResult]:
        return [r for r in self.results if r.error and not r.internal_error]

    @property
    def internal_errors(self) -> list[FileResult]:
        return [r for r in self.results if r.internal_error]


def fix_classes(unsafe_fixes: bool) -> frozenset[FixClass]:
    return frozenset({FixClass.SAFE, FixClass.UNSAFE} if unsafe_fixes else {FixClass.SAFE})


def settings_for(config: Config, catalogue: Catalogue, unsafe_fixes: bool) -> Settings:
    return Settings(config.selected(catalogue), fix_classes(unsafe_fixes), config.target)


def process(path: str, data: bytes, settings: Settings) -> FileResult:
    """One file's result, a notebook's or a Python file's."""
    if path.endswith(notebook.SUFFIX):
        return notebook.process_notebook(path, data, settings)
    from xla2tpu import engine

    return engine.process_source(path, data, settings)


def _found(paths: Sequence[Path], excluder: Excluder, shard: Shard | None, root: Path) -> list[Found]:
    found = list(discover(paths, excluder, SUFFIXES))
    return found if shard is None else [f for f in found if shard.owns(f.path, root)]


def run(
    paths: Sequence[Path],
    config: Config,
    catalogue: Catalogue,
    settings: Settings,
    jobs: int | None = None,
    cache: Cache | None = None,
    shard: Shard | None = None,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> Outcome:
    """Every file under `paths` (this shard's share), from the cache when it holds the file.

    `progress`, given the number of files, returns the function to call after each one.
    """
    outcome = Outcome()
    forget_folders()  # a folder's modules and pins are what is on disk now
    digests: dict[str, bytes] = {}
    locations: dict[str, str] = {}  # the location each computed result's facts saw
    keys: dict[str, str] = {}
    excluder = Excluder(config.root, [*config.exclude, *config.extend_exclude])
    found = _found(paths, excluder, shard, config.root)
    step = progress(len(found)) if progress is not None else None
    notebooks: list[tuple[str, bytes, Settings]] = []

    def add(result: FileResult) -> None:
        outcome.files += 1
        outcome.lines += result.lines
        outcome.parsed += result.parsed
        if step is not None:
            step()
        if result.diagnostics or result.error or result.new_source is not None:
            result.digest = digests.get(result.path)
            outcome.results.append(result)

    def finished(result: FileResult) -> None:
        if cache is not None:
            cache.put(keys[result.path], result, locations.get(result.path))
        add(result)

    def to_parse() -> Iterator[tuple[str, bytes, Settings]]:
        """Python files that may hold an idiom, as they are read; the rest are done here."""
        for item in found:
            name = str(item.path)
            if item.problem is not None:
                outcome.results.append(FileResult(name, error=item.problem))
                continue
            try:
                data = read(item.path)
            except FileProblem as exc:
                outcome.results.append(FileResult(name, error=str(exc)))
                continue
            digests[name] = hashlib.sha256(data).digest()
            selected = config.selected_for(catalogue, item.path, settings.selected)
            file_settings = settings if selected is settings.selected else Settings(selected, settings.apply, settings.target)
            is_notebook = name.endswith(notebook.SUFFIX)
            if cache is not None:
                keys[name] = cache.key(digests[name], notebook.SUFFIX if is_notebook else ".py", file_settings)
                hit = cache.get(keys[name], name)
                # A result whose facts were computed holds only while the file's location
                # says the same (its folder, the modules importing it, the project's pins).
                if hit is not None and (hit[1] is None or hit[1] == location_key(name, data)):
                    add(hit[0])
                    continue
            idioms = is_notebook or may_hold_idiom(data)
            if cache is not None and idioms:
                locations[name] = location_key(name, data)
            if is_notebook:
                notebooks.append((name, data, file_settings))
            elif idioms:
                yield name, data, file_settings
            else:  # nothing to parse, and its bytes are not kept
                finished(FileResult.counted(name, data))

    for result in pool.run(to_parse(), jobs):
        finished(result)
    for item in notebooks:
        finished(process(*item))
    outcome.results.sort(key=lambda r: r.path)
    return outcome


def write_back(result: FileResult) -> str | None:
    """Write a fixed file; the problem, if it could not be written."""
    assert result.new_source is not None
    path = Path(result.path)
    try:
        write_atomic(path, result.new_source, result.digest)
    except FileProblem as exc:
        return str(exc)
    return None
