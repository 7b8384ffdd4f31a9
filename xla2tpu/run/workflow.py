"""One run over many files: discover, read, process (engine), and write fixes back."""

from __future__ import annotations

import dataclasses

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from xla2tpu.run import notebook, pool
from xla2tpu.project import model as project_mod
from xla2tpu.run.cache import Cache
from xla2tpu.catalogue.rules import Catalogue, availability_probes, named_by_rules
from xla2tpu.run.config import Config
from xla2tpu.catalogue.diagnostics import FileResult, FixClass
from xla2tpu.project.facts import forget_folders, location_key
from xla2tpu.sources.files import SOURCE_SUFFIXES, Excluder, FileProblem, Found, discover, write_atomic
from xla2tpu.sources.files import read as read_file
from xla2tpu.project.line_length import LineLengths
from xla2tpu.project.module_summary import Summary
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.project.model import EMPTY, Context, Project, find_root
from xla2tpu.run.scan import scan
from xla2tpu.catalogue.settings import Settings
from xla2tpu.run.shard import Shard


SUFFIXES = (*SOURCE_SUFFIXES, notebook.SUFFIX)

# The front reads the tree in slices of this many files; from this many slices on, in the
# workers. Measured on files of ~150 lines without idioms (docs/performance.md): the pool
# is 0.02 s slower for 200 files, 0.03 s faster for 1,000.
_SLICE = 128
_POOL_MIN_SLICES = 4


@dataclass
class Outcome:
    """Results that matter (findings, changes, errors), sorted by path."""

    results: list[FileResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # about configuration read on the way
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


def settings_for(config: Config, catalogue: Catalogue, unsafe_fixes: bool, rewrite: bool = True) -> Settings:
    return Settings(config.selected(catalogue), fix_classes(unsafe_fixes), config.target, rewrite=rewrite)


def file_settings(config: Config, catalogue: Catalogue, settings: Settings, path: str, lengths: LineLengths) -> Settings:
    """The run's settings for one file: its per-file-ignores, and its project's line length
    (`line-length` in the config, else the formatter configuration nearest the file)."""
    selected = config.selected_for(catalogue, Path(path), settings.selected)
    length = config.line_length or lengths.of(path)
    if selected is settings.selected and length == settings.line_length:
        return settings
    return dataclasses.replace(settings, selected=selected, line_length=length)


def process(path: str, data: bytes, settings: Settings, context: Context = EMPTY) -> FileResult:
    """One file's result, a notebook's or a Python file's."""
    if path.endswith(notebook.SUFFIX):
        return notebook.process_notebook(path, data, settings)
    from xla2tpu.run import engine

    return engine.process_source(path, data, settings, context)


def stdin_context(name: str, data: bytes, config: Config, catalogue: Catalogue, settings: Settings, cache: Cache | None,
                  project_root: Path | None, lengths: LineLengths) -> Context:
    """What the project around `--stdin-filename` says of the source read from stdin: the
    same model as for the file on disk, with these bytes in its place. `settings`: the run's."""
    if name.endswith(notebook.SUFFIX):
        return EMPTY
    excluder = Excluder(config.root, [*config.exclude, *config.extend_exclude])
    model = load_project(project_root or find_root([Path(name)]), excluder, catalogue, cache, {}, {name: data})

    for round_ in _programs(model, settings, {name: data}):
        for path, program in round_:
            _settle(model, process(path, program, file_settings(config, catalogue, settings, path, lengths), model.context(path)))
    return model.context(name)


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
    project_root: Path | None = None,
) -> Outcome:
    """Every file under `paths` (this shard's share), from the cache when it holds the file.

    `progress`, given the number of files, returns the function to call after each one.
    """
    with pool.Workers(jobs) as workers:
        return _run(paths, config, catalogue, settings, workers, cache, shard, progress, project_root)


def _run(paths: Sequence[Path], config: Config, catalogue: Catalogue, settings: Settings, workers: pool.Workers,
         cache: Cache | None, shard: Shard | None, progress: Callable[[int], Callable[[], None]] | None,
         project_root: Path | None) -> Outcome:
    outcome = Outcome()
    forget_folders()  # a folder's modules and pins are what is on disk now
    lengths = LineLengths()
    locations: dict[str, str] = {}  # the location each computed result's facts saw
    keys: dict[str, str] = {}
    excluder = Excluder(config.root, [*config.exclude, *config.extend_exclude])
    found = _found(paths, excluder, shard, config.root)
    step = progress(len(found)) if progress is not None else None
    read: dict[str, bytes] = {}  # the bytes of the files that may hold an idiom (and notebooks)
    lines: dict[str, int] = {}  # every file read, in the order found
    prefiltered: dict[str, bool] = {}
    summaries: dict[str, Summary] = {}
    root = project_root or find_root(paths)
    models: list[Project] = []
    # A cold run parses each file that may hold an idiom as soon as it is read, as if no other
    # module had a say (the "optimistic" result); the model is built while the workers parse,
    # and a file the model does have a say in is analysed again with its context. A warm run
    # builds the model first: most of its files come from the cache, keyed by their context.
    optimistic: dict[str, FileResult] = {}
    cold = cache is None or not cache.has_summaries()

    # A file's settings and digest only matter to its result: most files have none to report,
    # so neither is worked out until asked for.
    settings_by_name: dict[str, Settings] = {}
    digests: dict[str, bytes] = {}

    def settings_of(name: str) -> Settings:
        if name not in settings_by_name:
            settings_by_name[name] = file_settings(config, catalogue, settings, name, lengths)
        return settings_by_name[name]

    def digest(name: str, data: bytes) -> bytes:
        if name not in digests:
            digests[name] = hashlib.sha256(data).digest()
        return digests[name]

    names = []
    for item in found:
        if item.problem is not None:
            outcome.results.append(FileResult(str(item.path), error=item.problem))
        else:
            names.append(str(item.path))
    slices = [names[start:start + _SLICE] for start in range(0, len(names), _SLICE)]

    def reading() -> Iterator[pool.Item]:
        scanned = workers.map(partial(scan, summarise=cold), slices, at_least=_POOL_MIN_SLICES)
        for file in itertools.chain.from_iterable(scanned):
            name = file.name
            if file.error is not None:
                outcome.results.append(FileResult(name, error=file.error))
                continue
            lines[name] = file.lines
            if file.data is not None:
                read[name] = file.data
            if name.endswith(notebook.SUFFIX):
                continue
            prefiltered[name] = file.candidate
            if file.summary is not None:
                summaries[name] = file.summary
            if cold and file.candidate:
                yield name, file.data, settings_of(name), EMPTY
        walked = shard is None and any(os.path.abspath(path) == os.path.abspath(root) for path in paths)
        listed = [str(f.path) for f in found if f.problem is None and str(f.path).endswith(".py")] if walked else None
        python = [name for name in lines if not name.endswith(notebook.SUFFIX)]
        sources = {name: read[name] for name in python if name in read}
        models.append(load_project(root, excluder, catalogue, cache, sources, prefiltered=prefiltered, listed=listed,
                                   named=python, summaries=summaries))

    for result in workers.map(pool.analysed, reading()):
        optimistic[result.path] = result
    model = models[0]

    def add(result: FileResult) -> None:
        outcome.files += 1
        outcome.lines += result.lines
        outcome.parsed += result.parsed
        if step is not None:
            step()
        if result.diagnostics or result.error or result.new_source is not None:
            data = read.get(result.path)
            result.digest = None if data is None else digest(result.path, data)
            outcome.results.append(result)

    def finished(result: FileResult) -> None:
        if cache is not None and result.path in keys:
            cache.put(keys[result.path], result, locations.get(result.path))

    def cached(name: str, data: bytes, file_settings: Settings, context: Context) -> FileResult | None:
        """The stored result, when its facts saw what the file's location shows now (its
        folder, the modules importing it, the project's pins and model)."""
        if cache is None:
            return None
        is_notebook = name.endswith(notebook.SUFFIX)
        keys[name] = cache.key(digest(name, data), notebook.SUFFIX if is_notebook else ".py", file_settings)
        hit = cache.get(keys[name], name)
        location = location_key(name, data, context.canonicaliser({}).reaches("transformers"))
        location += context.key() if context is not EMPTY else ""
        if hit is not None and (hit[1] is None or hit[1] == location):
            return hit[0]
        locations[name] = location
        return None

    def compute(items: Sequence[tuple[str, bytes | None]]) -> Iterator[FileResult]:
        """Results of `items`, from the cache or computed (Python files in the pool). An
        item's bytes are None when the front read it for the prefilter only."""
        work: list[tuple[str, bytes, Settings, Context]] = []
        notebooks: list[tuple[str, bytes, Settings]] = []
        done: list[FileResult] = []
        for name, data in items:
            context = model.context(name)
            is_notebook = name.endswith(notebook.SUFFIX)
            if not (is_notebook or context.forced or context.findings
                    or (prefiltered[name] if name in prefiltered else data is not None and may_hold_idiom(data))):
                done.append(FileResult(name, lines=lines[name]) if data is None else FileResult.counted(name, data))
                continue  # nothing to parse: nothing to cache either
            if data is None:  # what the project says of it makes it worth a parse after all
                try:
                    data = read[name] = read_file(Path(name))
                except FileProblem as exc:
                    done.append(FileResult(name, error=str(exc)))
                    continue
            file_settings = settings_of(name)
            hit = cached(name, data, file_settings, context)
            if hit is not None:
                done.append(hit)
            elif context is EMPTY and name in optimistic:  # nothing in the project changes it
                result = optimistic.pop(name)
                finished(result)
                done.append(result)
            elif is_notebook:
                notebooks.append((name, data, file_settings))
            else:
                work.append((name, data, file_settings, context))
        yield from done
        for result in workers.map(pool.analysed, work):
            finished(result)
            yield result
        for item in notebooks:
            result = process(*item)
            finished(result)
            yield result

    programs: list[tuple[str, bytes]] = []
    for round_ in _programs(model, settings, read):  # each round's contexts see the last's settled
        programs += round_
        for result in compute(round_):
            _settle(model, result)
            if result.path in lines:  # a program of the run, not one read for its facts only
                add(result)
    settled = {os.path.abspath(name) for name, _ in programs}
    rest = [(name, read.get(name)) for name in lines if not settled or os.path.abspath(name) not in settled]
    for result in compute(rest):
        add(result)
    outcome.results.sort(key=lambda r: r.path)
    outcome.warnings = lengths.warnings
    return outcome


def _programs(model: Project, settings: Settings, read: dict[str, bytes]) -> list[list[tuple[str, bytes]]]:
    """The programs of the project whose torch_xla launch this fix may migrate (only unsafe
    fixes do), the run's own or read now, in the rounds `Project.programs` gives: what the
    modules they import inherit is their processes after the fix, so they are processed first."""
    if FixClass.UNSAFE not in settings.apply:
        return []
    given = {os.path.abspath(name): (name, data) for name, data in read.items()}
    rounds = []
    for paths in model.programs():
        items = []
        for path in paths:
            if path in given:
                items.append(given[path])
                continue
            try:
                items.append((path, read_file(Path(path))))
            except FileProblem:
                continue  # its own run reports it
        rounds.append(items)
    return rounds


def _settle(model: Project, result: FileResult) -> None:
    """A program's processes as its result says (after its launch migrated, or not)."""
    if result.facts is not None:
        model.settle(os.path.abspath(result.path), result.facts.processes)


def _listing(root: Path, excluder: Excluder, cache: Cache | None) -> list[str]:
    """The project's Python files, walked (a pre-commit run names a few files, the model
    needs them all), or kept in the cache while no folder walked has changed."""
    key = json.dumps([os.path.abspath(root), str(excluder.root), excluder.patterns])
    listed = cache.listing(key) if cache is not None else None
    if listed is None:
        watched: list[Path] = []
        listed = [os.path.abspath(f.path) for f in discover([root], excluder, (".py",), watched) if f.problem is None]
        if cache is not None:
            cache.keep_listing(key, watched, listed)
    return listed


def _absolute_in(folder: str) -> Callable[[str], str]:
    """`os.path.abspath` run from `folder`, which it asks the system for once, not per name,
    and each name worked out once (the model takes every file of a big tree through it, once
    for each table it is in)."""
    made: dict[str, str] = {}

    def absolute(name: str) -> str:
        found = made.get(name)
        if found is None:
            found = made[name] = os.path.normpath(os.path.join(folder, name))
        return found
    return absolute


def load_project(root: Path, excluder: Excluder, catalogue: Catalogue, cache: Cache | None,
                 files: dict[str, bytes], override: dict[str, bytes] | None = None,
                 prefiltered: dict[str, bool] | None = None, listed: list[str] | None = None,
                 named: Collection[str] = (), summaries: Mapping[str, Summary] | None = None) -> Project:
    """The model of the project at `root` (project/model.py), its module summaries kept in the
    cache. `files`: the bytes the run holds; `named`: the Python files the run reads (bytes
    at hand or not); `summaries`: light summaries the run has made; `listed`: the project's
    Python files, as the run names them, when it has walked them all already."""
    absolute = _absolute_in(os.getcwd())
    files = {absolute(name): data for name, data in files.items()}
    summaries = {absolute(name): summary for name, summary in (summaries or {}).items()}
    override = {absolute(name): data for name, data in (override or {}).items()}
    prefiltered = {absolute(name): value for name, value in (prefiltered or {}).items()}
    listed = _listing(root, excluder, cache) if listed is None else [absolute(name) for name in listed]
    known = set(listed)
    listed = listed + list(dict.fromkeys(path for path in [*map(absolute, named), *files, *override] if path not in known))
    # A warm run over an unchanged project (every module's size and time as stored) takes
    # the linked model from the cache; text from stdin stands for a file, so it never does.
    stamps = project_mod.stamps(listed) if cache is not None and not override else None
    if stamps is not None:
        kept = cache.model(os.path.abspath(root), stamps)
        if kept is not None:
            return kept.restored(named_by_rules(catalogue))
    stored = cache.summaries() if cache is not None else {}
    model, store = project_mod.build(
        Path(os.path.abspath(root)), files, listed, stored, catalogue.module_renames, availability_probes(catalogue),
        named_by_rules(catalogue), override, prefiltered, summaries)
    if cache is not None and (store.keys() != stored.keys() or any(store[k][2] is not stored[k][2] for k in store)):
        cache.keep_summaries(store)  # only when a summary was made anew: a warm run writes nothing
    if stamps is not None:
        cache.keep_model(os.path.abspath(root), stamps, model)
    return model


def write_back(result: FileResult) -> str | None:
    """Write a fixed file; the problem, if it could not be written."""
    assert result.new_source is not None
    path = Path(result.path)
    try:
        write_atomic(path, result.new_source, result.digest)
    except FileProblem as exc:
        return str(exc)
    return None
