"""One run over many files: discover, read, process (engine), and write fixes back."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xla2tpu import engine
from xla2tpu.catalogue import Catalogue
from xla2tpu.config import Config
from xla2tpu.diagnostics import FileResult, FixClass
from xla2tpu.files import Excluder, FileProblem, discover, read, write_atomic
from xla2tpu.rewriter import Settings


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


def run(
    paths: Sequence[Path],
    config: Config,
    catalogue: Catalogue,
    settings: Settings,
    jobs: int | None = None,
) -> Outcome:
    outcome = Outcome()
    digests: dict[str, bytes] = {}
    excluder = Excluder(config.root, [*config.exclude, *config.extend_exclude])

    def items() -> Iterator[tuple[str, bytes, Settings]]:
        for found in discover(paths, excluder):
            name = str(found.path)
            if found.problem is not None:
                outcome.results.append(FileResult(name, error=found.problem))
                continue
            try:
                data = read(found.path)
            except FileProblem as exc:
                outcome.results.append(FileResult(name, error=str(exc)))
                continue
            digests[name] = hashlib.sha256(data).digest()
            selected = config.selected_for(catalogue, found.path, settings.selected)
            file_settings = settings if selected is settings.selected else Settings(selected, settings.apply, settings.target)
            yield name, data, file_settings

    for result in engine.run(items(), jobs):
        outcome.files += 1
        outcome.lines += result.lines
        outcome.parsed += result.parsed
        if result.diagnostics or result.error or result.new_source is not None:
            result.digest = digests.get(result.path)
            outcome.results.append(result)
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
