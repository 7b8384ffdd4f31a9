"""The migration plan: what a lead needs to act on, computed once from a `fix` run's results.

The renderers only lay it out: Markdown (migration.py), HTML (html.py) and the JSON that
the next run reads back as its `--baseline` (baseline.py).

Definitions (the report repeats them):
- a file is **fully migrated** when, after this fix, no torch_xla / Optimum TPU import is
  left in it and no finding is left for a human (every finding fixed);
- a **blocker** of a file is a rule with findings left in it (manual, or an unsafe fix not
  applied). An import that stays (XLA001 "still used", and the other import rules) stays
  because of a use: it is attributed to the file's other findings left, the uses that
  keep it, and counts as a blocker itself only where nothing else is left, i.e. where the
  use that keeps it is code no rule names. A torch_xla import left with no finding at all
  (its rule deselected) counts under XLA001 too;
- blockers are ranked by the files they keep from being fully migrated, then the programs;
- a blocker is **held by the launch** in a file when each of its findings there is left for
  a human only because the file's processes start with a torch_xla launch (the message
  names the `processes=spawn` fact, see conditions.explained): it stays that rule's in the
  ranking, and the plan says how much migrating the launch (XLA601, XLA602) would free.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from xla2tpu.trees.blocks import imported_modules
from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.project.facts import Fact
from xla2tpu.report.text import plural, position

MIGRATED, BLOCKED, UNREADABLE = "migrated", "blocked", "unreadable"
KEPT_IMPORT = "XLA001"  # the rule of a torch_xla import that is still used
_LAUNCH = "XLA601"  # its fix writes the TorchTPU launch (transforms/launch.py)
LAUNCH_RULES = frozenset({_LAUNCH, "XLA602"})  # xmp.spawn / torch_xla.launch, pjrt.run_multiprocess
# A finding decided by a fact names it after this (conditions.explained); the launch fact's value:
_BECAUSE, _SPAWNED = "[because ", Fact("processes", "spawn").describe()
_MAIN = re.compile(rb"""^if\s+(?:__name__\s*==\s*["']__main__["']|["']__main__["']\s*==\s*__name__)\s*:""", re.M)
_KEPT_GUIDANCE = "kept for a use no rule names: find that use, migrate it, then drop the import"
NO_PARSE = "the file no longer parses"
SHOWN_LINES = 4  # lines named per blocker of a program; the per-file detail has them all
SHOWN_RULES = 5  # rules named in the launch's sentence
PROGRAM_ROWS = 20  # programs in the plan's table; the others are one click away
AREA_ROWS = 30  # folders in the plan's progress table; deeper folders are rolled up into their parents
# What the headline figures mean, as every report says it.
DEFINITIONS = (
    "Fully migrated: no torch_xla / Optimum TPU import left and nothing left for a human. "
    "A blocker is a rule with findings left in a file (manual, or an unsafe fix not applied); "
    "an import kept by a use counts under that use's rule (XLA001 only where no rule names the use)."
)


@dataclass(frozen=True)
class FileState:
    """One file with torch_xla idioms (or one that could not be read), after this fix."""

    path: str
    state: str  # MIGRATED, BLOCKED or UNREADABLE
    done: tuple[Diagnostic, ...]  # fixed by this run (written, or would be with --diff)
    todo: tuple[Diagnostic, ...]  # left for a human
    imports_left: tuple[tuple[int, str], ...]  # (line, module) of torch_xla / Optimum TPU imports after the fix
    blockers: tuple[str, ...]  # rule codes, attributed as the module docstring says
    error: str | None = None
    held: tuple[str, ...] = ()  # the blockers whose findings all wait for the torch_xla launch to be migrated

    @property
    def folder(self) -> str:
        return PurePath(self.path).parent.as_posix()


@dataclass(frozen=True)
class Launch:
    """What the torch_xla launches hold back: findings a fix leaves for a human only because
    the file's processes start with `xmp.spawn` & co. (their message says `processes=spawn`);
    once the launch is migrated they are fixed like any other."""

    files: tuple[str, ...]  # files with such findings
    rules: tuple[tuple[str, int], ...]  # (code, files), the most first
    only: int  # files in which the launch and what it holds back are all that is left

    def describe(self) -> str:
        """One plain sentence for the plan (empty when no launch holds anything back)."""
        if not self.files:
            return ""
        rules = ", ".join(f"{code} in {n}" for code, n in self.rules[:SHOWN_RULES])
        more = ", …" if len(self.rules) > SHOWN_RULES else ""
        return (f"The torch_xla launch holds back findings in {plural(len(self.files), 'file')} ({rules}{more}): they are "
                "left for a human only because those files' processes start with xmp.spawn, torch_xla.launch or "
                f"run_multiprocess. Migrate the launch ({', '.join(sorted(LAUNCH_RULES))}) and they are fixed like the others"
                + (f"; in {self.only} of these files nothing else is left." if self.only else "."))


@dataclass(frozen=True)
class Blocker:
    """A rule that keeps files from being fully migrated."""

    code: str
    name: str
    guidance: str  # one line: the rule's summary
    fixes: tuple[str, ...]  # fix classes of its findings left ("manual", "unsafe")
    files: tuple[str, ...]
    programs: tuple[str, ...]
    only: int  # files in which it is the only blocker: fixing it migrates them
    findings: int  # its findings left

    @property
    def fix_label(self) -> str:
        """Its fix classes, an unsafe one with how to apply it."""
        return ", ".join("unsafe (not applied: --unsafe-fixes)" if f == "unsafe" else f for f in self.fixes)


@dataclass(frozen=True)
class Folder:
    path: str
    migrated: int
    blocked: int
    unreadable: int
    no_import_left: int

    @property
    def files(self) -> int:
        return self.migrated + self.blocked + self.unreadable

    def describe(self) -> str:
        """`3 files, 1 fully migrated, 2 blocked` (and how many could not be read)."""
        return (f"{plural(self.files, 'file')}, {self.migrated} fully migrated, {self.blocked} blocked"
                + (f", {self.unreadable} not read" if self.unreadable else ""))


@dataclass(frozen=True)
class Program:
    """A file with a `__main__` block: it runs on TorchTPU after this fix when nothing blocks it."""

    path: str
    imports_left: tuple[tuple[int, str], ...]
    todo: tuple[Diagnostic, ...]
    blockers: tuple[str, ...]  # rule codes, as for its file
    launched: bool  # its torch_xla launch was migrated (XLA601 fixed)

    @property
    def runs(self) -> bool:
        return not self.imports_left and not self.todo

    def start(self) -> str:
        """The command that starts it after this fix (it runs as before)."""
        if self.launched:
            return f'python {self.path} (as before; it spawns one worker per TPU chip, each in the "tpu" process group)'
        return f"python {self.path} (as before)"

    def items(self) -> list[str]:
        """What still blocks it, in plain words: the findings of each blocker by line, then
        the imports left (their own findings, XLA001, say the same and are not repeated)."""
        out = []
        for code in self.blockers:
            found = [d for d in self.todo if d.code == code]
            if not found:  # an import left with no finding
                continue
            where = ", ".join(position(d) for d in found[:SHOWN_LINES])
            more = f" and {len(found) - SHOWN_LINES} more" if len(found) > SHOWN_LINES else ""
            out.append(f"{code} ({found[0].fix.value}) at line{'s' if len(found) > 1 else ''} {where}{more}")
        if any(name == NO_PARSE for _, name in self.imports_left):
            out.append(NO_PARSE)
        elif self.imports_left:
            out.append("still imports " + ", ".join(f"{name} (line {line})" for line, name in self.imports_left))
        return out


@dataclass(frozen=True)
class Figures:
    """The headline numbers; a baseline compares them by name (baseline.FIGURES)."""

    files_scanned: int
    with_idioms: int
    fully_migrated: int
    no_import_left: int
    programs: int
    programs_running: int
    unreadable: int
    rewritten: int
    left_for_a_human: int


@dataclass(frozen=True)
class Change:
    """A finding count of one rule in one file that went down (gone) or up (new) since the baseline."""

    path: str
    code: str
    count: int


def by_rule(changes: Iterable[Change]) -> list[tuple[str, int]]:
    """(code, findings) over all files, the most first."""
    count: Counter[str] = Counter()
    for change in changes:
        count[change.code] += change.count
    return sorted(count.items(), key=lambda item: (-item[1], item[0]))


def by_file(changes: Iterable[Change]) -> list[tuple[str, str]]:
    """(path, "XLA001 ×2, XLA107 ×1") per file, by path."""
    files: dict[str, list[str]] = {}
    for change in sorted(changes, key=lambda c: (c.path, c.code)):
        files.setdefault(change.path, []).append(f"{change.code} ×{change.count}")
    return [(path, ", ".join(codes)) for path, codes in files.items()]


@dataclass(frozen=True)
class Delta:
    """What changed since the baseline run (baseline.compare)."""

    baseline: str  # the file it was read from
    figures: tuple[tuple[str, int, int], ...]  # (figure name, before, now)
    cleaned: int  # files of the baseline with no idiom left now: "now" counts them as fully migrated
    newly_migrated: tuple[str, ...]  # not fully migrated before; now migrated, or no idiom left
    regressed: tuple[str, ...]  # fully migrated before, not now
    gone: tuple[Change, ...]  # findings left for a human before and not now
    new: tuple[Change, ...]  # findings left for a human now and not before

    def cleaned_note(self) -> str:
        return (f"Now counts as fully migrated (and as running, the programs) the {plural(self.cleaned, 'file')} of "
                "the baseline with no torch_xla idiom left, which this report no longer lists.")


@dataclass(frozen=True)
class Plan:
    figures: Figures
    fixed_by_class: tuple[tuple[str, int, int], ...]  # (fix class, fixed, left)
    files: tuple[FileState, ...]  # by path
    blockers: tuple[Blocker, ...]  # ranked
    folders: tuple[Folder, ...]  # every folder holding such files, by path
    areas: tuple[Folder, ...]  # the folders rolled up to fit a first screen (roll_up), by path
    programs: tuple[Program, ...]  # those that run first, then the blocked ones closest to running
    launch: Launch
    dry_run: bool
    delta: Delta | None = None

    @property
    def unreadable(self) -> tuple[FileState, ...]:
        return tuple(f for f in self.files if f.state == UNREADABLE)


def build(results: Sequence[FileResult], files_scanned: int, written: set[str], catalogue: Catalogue, dry_run: bool) -> Plan:
    """The plan of a fix run: `written` holds the files it rewrote (or, with --diff, would)."""
    states, programs = _states(results, written, catalogue)
    return assemble(states, programs, files_scanned, catalogue, dry_run)


def _states(results: Sequence[FileResult], written: set[str], catalogue: Catalogue) -> tuple[list[FileState], list[Program]]:
    """Each file's state after the fix, and the programs among them."""
    import_rules = frozenset(rule.code for rule in catalogue.rules if rule.kind == "import")
    states: list[FileState] = []
    programs: list[Program] = []
    for result in results:
        if not result.diagnostics:
            if result.error:
                states.append(FileState(result.path, UNREADABLE, (), (), (), (), result.error))
            continue
        applied = result.path in written
        done = tuple(d for d in result.diagnostics if d.fixed and applied)
        todo = tuple(d for d in result.diagnostics if not (d.fixed and applied))
        text = result.new_source if result.new_source is not None and applied else _on_disk(result.path)
        left = tuple(_legacy_imports(result.path, text)) if text is not None else ()
        codes = _blockers(todo, left, import_rules)
        migrated = not (todo or left or result.error)
        held = held_blockers(codes, todo)
        states.append(FileState(result.path, MIGRATED if migrated else BLOCKED, done, todo, left, codes, result.error, held))
        if not result.error and text is not None and _MAIN.search(text) is not None:
            programs.append(Program(result.path, left, todo, codes, launched(done)))
    return states, programs


def held_blockers(codes: Iterable[str], todo: Sequence[Diagnostic]) -> tuple[str, ...]:
    """The blockers whose findings all wait for the file's torch_xla launch to be migrated."""
    return tuple(c for c in codes if _all_held([d for d in todo if d.code == c]))


def launched(done: Iterable[Diagnostic]) -> bool:
    """Whether the fixes include the migrated launch (XLA601)."""
    return any(d.code == _LAUNCH for d in done)


def assemble(states: Sequence[FileState], programs: Sequence[Program], files_scanned: int, catalogue: Catalogue,
             dry_run: bool) -> Plan:
    """The plan of files in these states (by path): the figures, the ranked blockers, the
    folders and programs. A run builds it from its results; `report merge` from the JSON
    reports of several runs (shards, repositories)."""
    with_idioms = [s for s in states if s.state != UNREADABLE]
    fixed: Counter[FixClass] = Counter(d.fix for s in with_idioms for d in s.done)
    still: Counter[FixClass] = Counter(d.fix for s in with_idioms for d in s.todo)
    figures = Figures(
        files_scanned=files_scanned,
        with_idioms=len(with_idioms),
        fully_migrated=sum(1 for s in with_idioms if s.state == MIGRATED),
        no_import_left=sum(1 for s in with_idioms if not s.imports_left),
        programs=len(programs),
        programs_running=sum(1 for p in programs if p.runs),
        unreadable=len(states) - len(with_idioms),
        rewritten=sum(fixed.values()),
        left_for_a_human=sum(still.values()),
    )
    folders = _folders(states)
    return Plan(
        figures=figures,
        fixed_by_class=tuple((fix.value, fixed[fix], still[fix]) for fix in FixClass),
        files=tuple(states),
        blockers=_rank(states, programs, catalogue),
        folders=folders,
        areas=roll_up(folders, AREA_ROWS),
        programs=tuple(sorted(programs, key=lambda p: (not p.runs, len(p.blockers), p.path))),
        launch=_launch(states),
        dry_run=dry_run,
    )


def _blockers(todo: Iterable[Diagnostic], imports_left: Sequence[tuple[int, str]], import_rules: frozenset[str]) -> tuple[str, ...]:
    """The rules that keep a file from being fully migrated (attribution: module docstring)."""
    codes = {d.code for d in todo}
    uses = codes - import_rules
    if uses:
        return tuple(sorted(uses))
    if codes:
        return tuple(sorted(codes))
    return (KEPT_IMPORT,) if imports_left else ()


def _all_held(found: Sequence[Diagnostic]) -> bool:
    """Whether findings (of one rule, in one file) are left for a human only because of the
    file's torch_xla launch: each names the launch fact as its reason. An import left with
    no finding is not."""
    return bool(found) and all(_BECAUSE in d.message and _SPAWNED in d.message.rpartition(_BECAUSE)[2] for d in found)


def _launch(states: Sequence[FileState]) -> Launch:
    held = [s for s in states if s.held]
    rules: Counter[str] = Counter(code for s in held for code in s.held)
    only = sum(1 for s in held if set(s.blockers) <= set(s.held) | LAUNCH_RULES)
    return Launch(tuple(s.path for s in held), tuple(sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))), only)


def _rank(states: Sequence[FileState], programs: Sequence[Program], catalogue: Catalogue) -> tuple[Blocker, ...]:
    """Every blocker, the one keeping most files from being fully migrated first (then most
    programs, then by code)."""
    files: dict[str, list[str]] = {}
    only: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    fixes: dict[str, set[str]] = {}
    for state in states:
        for code in state.blockers:
            files.setdefault(code, []).append(state.path)
            fixes.setdefault(code, set())
        if len(state.blockers) == 1:
            only[state.blockers[0]] += 1
        for d in state.todo:
            if d.code in state.blockers:  # an import kept by a use is that use's, not counted again
                findings[d.code] += 1
                fixes[d.code].add(d.fix.value)
    blocked_programs: dict[str, list[str]] = {}
    for program in programs:
        for code in program.blockers:
            blocked_programs.setdefault(code, []).append(program.path)
    out = []
    for code, paths in files.items():
        rule = catalogue.by_code.get(code)
        imports = rule is not None and rule.kind == "import"
        out.append(Blocker(
            code=code,
            name=rule.name if rule is not None else "",
            guidance=_KEPT_GUIDANCE if imports else (rule.summary if rule is not None else ""),
            fixes=tuple(sorted(fixes[code])) or ("manual",),  # an import with no finding left: a human's
            files=tuple(paths),
            programs=tuple(blocked_programs.get(code, ())),
            only=only[code],
            findings=findings[code],
        ))
    out.sort(key=lambda b: (-len(b.files), -len(b.programs), b.code))
    return tuple(out)


def _folders(states: Sequence[FileState]) -> tuple[Folder, ...]:
    counts: dict[str, Counter[str]] = {}
    for state in states:
        count = counts.setdefault(state.folder, Counter())
        count[state.state] += 1
        count["no-import"] += state.state != UNREADABLE and not state.imports_left
    return tuple(Folder(path, c[MIGRATED], c[BLOCKED], c[UNREADABLE], c["no-import"]) for path, c in sorted(counts.items()))


def roll_up(folders: Sequence[Folder], rows: int) -> tuple[Folder, ...]:
    """The folders summed up into their ancestors at the deepest level (counted below the
    folder all share) that gives at most `rows` rows, or at the first level when even that
    gives more: `test/spmd` and `test/pjrt` become `test` in a big repository."""
    parts = [PurePath(f.path).parts if f.path != "." else () for f in folders]
    shared = 0
    while parts and all(len(p) > shared for p in parts) and len({p[shared] for p in parts}) == 1:
        shared += 1
    deepest = max((len(p) for p in parts), default=0)
    for depth in range(deepest, shared, -1):
        prefixes = {p[:depth] for p in parts}
        if len(prefixes) <= rows or depth == shared + 1:
            break
    else:
        return tuple(folders)
    summed: dict[tuple[str, ...], list[int]] = {}
    for folder, path in zip(folders, parts):
        total = summed.setdefault(path[:depth], [0, 0, 0, 0])
        for i, n in enumerate((folder.migrated, folder.blocked, folder.unreadable, folder.no_import_left)):
            total[i] += n
    return tuple(Folder(PurePath(*key).as_posix() if key else ".", *n) for key, n in sorted(summed.items()))


def _legacy_imports(path: str, text: bytes) -> list[tuple[int, str]]:
    """(line, module) of each torch_xla / Optimum TPU import in a file's text (a notebook's:
    in its code cells, numbered as the cells' lines are)."""
    if path.endswith(".ipynb"):
        from xla2tpu.run import notebook

        try:
            nb = notebook.load(text)
        except notebook.NotebookError:
            return [(0, NO_PARSE)]
        sources = ["".join(cell.python) for cell in nb.cells if cell.kind == "python"]
    else:
        sources = [text]
    found = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return [(0, NO_PARSE)]
        found += [(line, name) for line, name in imported_modules(tree)
                  if name.split(".")[0] == "torch_xla" or name.startswith("optimum.tpu")]
    return found


def _on_disk(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
