"""The project model: the modules of the repository a run belongs to, what each imports,
and the facts that cross from one module to another.

A file's rewrite often depends on another file: a package's own availability probe is
imported relatively (`from ...utils import is_torch_xla_available`), a flag is set in one
module and read in others, a trainer module only ever runs inside the workers another
file starts with `xmp.spawn`, a device class keeps `dist_backend = "xla"` for a module that
hands it to `init_process_group`. The model sees those links; each file then gets a
`Context` (what its relative imports and the project's re-exports mean, the processes /
SPMD / DDP facts it inherits from the programs that import it, the project's findings in
it), which the engine applies like the file's own facts.

The model covers the whole project (the folder holding `pyproject.toml` / `.git`, or
`--project-root`), whichever files a run names: a pre-commit run over three staged files
sees the same model, and so gives the same findings, as a run over the tree; every shard
of `--shard` too.

Cost (bench/project_share.py): every module gets a light summary (its import lines, by
regex); only the modules that can matter are parsed (module_summary.py). The cache keeps the
summaries and the project's listing (checked against its folders' times) and the linked
model (checked against every module's size and time), so a warm pre-commit run reads no
file it does not check.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from xla2tpu.project.canonical import PROJECT, Canonicaliser
from xla2tpu.project.facts import ENTRY_POINTS, Fact, Facts, entry_point
from xla2tpu.sources.files import FileProblem, read
from xla2tpu.project.module_summary import Definition, Import, Site, Summary, light, summarise
from xla2tpu.sources.prefilter import holds_token

_MARKERS = ("pyproject.toml", ".git", "setup.py", "setup.cfg")
_DEPTH = 12  # re-export chains longer than this are not followed (a cycle, or nothing real)
# Processes that run in a process group: one the program creates, or the one every worker of
# its migrated launch joins (a program's fact once its own run settled it).
GROUPED = ("process-group", "launched")


def find_root(paths: Iterable[Path]) -> Path:
    """The project a run belongs to: the nearest folder above the first path that holds a
    project marker (`pyproject.toml`, `.git`, `setup.py`, `setup.cfg`), else the folder that
    holds the outermost package around it (how mypy names a file's module).

    Never the folder run in: the model walks every module under its root, and a run from
    $HOME or /tmp on one script would walk everything there."""
    first = next(iter(paths), Path("."))
    start = Path(os.path.abspath(first))
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        if any((folder / marker).exists() for marker in _MARKERS):
            return folder
    folder = start if start.is_dir() else start.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


@dataclass(frozen=True)
class Finding:
    """A finding the model makes in a file, with the rule code it belongs to."""

    code: str
    site: Site
    defined: str  # where the reason lies: "composer/utils/dist.py:579 `...`"


@dataclass(frozen=True)
class Context:
    """What the project says of one file (picklable: it goes to the worker with the file)."""

    relative: Mapping[tuple[int, str], str] = field(default_factory=dict)  # (dots, module) -> absolute module
    aliases: Mapping[str, str] = field(default_factory=dict)  # imported name -> what it means
    defined: Mapping[str, str] = field(default_factory=dict)  # PROJECT name -> where and what it is
    processes: Fact | None = None  # inherited from the programs that import the file
    spmd: Fact | None = None
    data_parallel: Fact | None = None
    findings: tuple[Finding, ...] = ()
    # The file must be analysed even without a prefilter token: it reads a project probe, or
    # a torch_xla name re-exported by a module of the project.
    forced: bool = False
    # The runtime variables the file sets that other modules of the project read
    # (Summary.env_reads): such a write may be the input of that read (a test setting what
    # the code it tests reads).
    env_reads: frozenset[str] = frozenset()
    # For a launcher of some module's entry point (`xmp.spawn(mod._mp_fn, ...)`): the modules
    # that define one, or what they import, create a process group of their own, which the
    # migrated launch's worker would clash with (launch_site.launchable).
    entry_groups: bool = False
    # The names holding a prefilter token (`XLA_AVAILABLE`, `is_torch_xla_available`) that other
    # modules of the project import from this one: a flag or a probe's import they read stays
    # when the file's own reads of it go (rewrite/dead_flags.py, import_sites.decide).
    imported_flags: frozenset[str] = frozenset()

    def canonicaliser(self, renames: Mapping[str, str]) -> Canonicaliser:
        return Canonicaliser(renames, self.aliases, self.relative)

    def apply(self, facts: Facts) -> Facts:
        """The file's facts with what it inherits: a module run inside a program's workers
        (or under its SPMD mode, or its DDP wrapper) is judged as part of that program."""
        updated = facts
        inherited = self.processes
        own = facts.processes.value
        # A torch_xla launch outranks a process group, as in one file (facts._processes): its
        # workers have no torchrun variables even when the module wraps its model in DDP. A
        # migrated launch does too: its worker made the group the module's DDP joins.
        spawned = inherited is not None and inherited.value in ("spawn", "launched") and own == "process-group"
        # A module that defines an entry point (`_mp_fn`) is started by the project's migrated launcher.
        spawned = spawned or inherited is not None and inherited.value == "launched" and entry_point(facts.processes.reason) is not None
        if inherited is not None and (own not in ("spawn", "process-group") or spawned):
            if own == "one" and inherited.value in GROUPED:
                reason = f"a one-process program of its own, and also {inherited.reason}: rewrites must be right for both"
                updated = replace(updated, processes=Fact("processes", "unknown", None, reason))
            else:
                updated = replace(updated, processes=inherited)
        if self.spmd is not None and facts.spmd.value == "no":
            updated = replace(updated, spmd=self.spmd)
        if self.data_parallel is not None and facts.data_parallel.value == "no":
            updated = replace(updated, data_parallel=self.data_parallel)
        return updated

    def key(self) -> str:
        """A stable text of the context, for the results cache."""
        def fact(f: Fact | None) -> object:
            return None if f is None else [f.value, f.reason]
        return json.dumps([sorted(f"{k[0]}|{k[1]}|{v}" for k, v in self.relative.items()), sorted(self.aliases.items()),
                           sorted(self.defined.items()), fact(self.processes), fact(self.spmd), fact(self.data_parallel),
                           [[f.code, f.site.line, f.site.col, f.defined] for f in self.findings], self.forced,
                           sorted(self.env_reads), self.entry_groups])


EMPTY = Context()


@dataclass
class Module:
    path: str  # absolute
    project: str  # the project root
    name: str  # dotted
    root: str  # the folder it is imported from (a sys.path entry)
    package: str  # the dotted package its relative imports start from ("" when none)
    summary: Summary

    @property
    def shown(self) -> str:
        """As messages show it: relative to the project root."""
        return os.path.relpath(self.path, self.project)


class Project:
    def __init__(self, root: Path, summaries: Mapping[str, Summary], renames: Mapping[str, str], probes: frozenset[str],
                 known: Callable[[str], bool], deepen: Callable[[str], Summary]) -> None:
        """`summaries`: absolute path -> summary of every Python file of the project (light
        ones are parsed with `deepen` where they can matter); `renames`: the catalogue's
        module renames; `probes`: the catalogue's availability probes (their qualified
        names); `known`: whether a rule matches a qualified name (following stops there:
        the rule knows it)."""
        self.root = root
        self._canonical = Canonicaliser(renames)
        self._known = known
        self._catalogue_probes = probes
        inits = {os.path.dirname(p) for p in summaries if os.path.basename(p) == "__init__.py"}
        self.modules: dict[str, Module] = {}
        self._by_name: dict[str, list[Module]] = {}
        packages: dict[str, tuple[str, list[str]]] = {}
        for path, summary in summaries.items():
            module = self._module(path, summary, inits, packages)
            self.modules[path] = module
            self._by_name.setdefault(module.name, []).append(module)
        self._edge_lists: dict[str, tuple[Module, ...]] = {}  # path -> its edges, while its summary stays
        self._deepen(deepen)
        self._follow: dict[tuple[str, str], str] = {}
        self._probes: dict[tuple[str, str], Definition] = {}
        self._find_probes()
        self._follow.clear()  # names followed while probes were still being found
        self._probe_where: dict[str, str] = {}  # PROJECT name -> where and what it is
        for (path, name), definition in self._probes.items():
            module = self.modules[path]
            self._probe_where[_probe_name(module, name)] = f"{module.shown}:{definition.line} `{definition.text}`"
        self._backends = self._backend_names()
        self._programs: dict[str, Fact] = {}  # path -> a program's processes fact as its run settles it
        self._inherited: dict[str, dict[str, Fact]] | None = None
        self._reads: frozenset[str] | None = None
        self._groups: bool | None = None
        self._flags_imported: dict[str, set[str]] | None = None

    def __getstate__(self) -> dict:
        """The linked model, for the cache: without the rule matcher (a closure, given back
        by `restored`) and without what one run settles (the programs' facts after its fix)."""
        state = dict(self.__dict__)
        state.update(_known=None, _programs={}, _inherited=None, _reads=None, _groups=None)
        return state

    def restored(self, known: Callable[[str], bool]) -> Project:
        self._known = known
        return self

    # ------------------------------------------------------------------ modules
    def _module(self, path: str, summary: Summary, inits: set[str], packages: dict[str, tuple[str, list[str]]]) -> Module:
        folder, _, name = path.rpartition(os.sep)  # absolute and normalised: no os.path.split needed
        stem = name[:-3] if name.endswith(".py") else name
        if folder not in packages:  # the same for every module of the folder
            top, package = folder, []
            root = str(self.root)
            while top in inits and len(top) >= len(root) and top != root:
                top, part = os.path.split(top)
                package.insert(0, part)
            if top in inits and top == root:  # the project root is itself a package folder
                top, part = os.path.split(top)
                package.insert(0, part)
            packages[folder] = (top, package)
        top, package = packages[folder]
        dotted = ".".join(package + ([] if stem == "__init__" else [stem])) or stem
        return Module(path, str(self.root), dotted, top, ".".join(package), summary)

    def _named(self, name: str, near: Module) -> Module | None:
        """The module a dotted name means when `near` imports it: the one importable from
        `near`'s own folder first (a script beside its helpers), else the only one."""
        found = self._by_name.get(name)
        if not found:
            return None
        same = [m for m in found if m.root == near.root]
        if len(same) == 1:
            return same[0]
        return found[0] if len(found) == 1 else None

    def _absolute(self, item: Import, module: Module) -> str | None:
        """The absolute dotted module an import reads (relative ones through `module`'s package)."""
        if not item.level:
            return item.module
        base = module.package.split(".") if module.package else []
        if item.level - 1 > len(base):
            return None
        base = base[: len(base) - (item.level - 1)]
        full = ".".join([*base, item.module] if item.module else base)
        return full or None

    def _targets(self, item: Import, module: Module) -> str | None:
        """The qualified name an import binds."""
        absolute = self._absolute(item, module)
        if absolute is None:
            return None
        return absolute if item.name is None else f"{absolute}.{item.name}"

    def _split(self, qualname: str, near: Module) -> tuple[Module, list[str]] | None:
        """The project module a qualified name lies in, and the attribute path under it."""
        parts = qualname.split(".")
        for end in range(len(parts), 0, -1):
            module = self._named(".".join(parts[:end]), near)
            if module is not None:
                return module, parts[end:]
        return None

    def follow(self, qualname: str, near: Module, depth: int = 0) -> str:
        """What a qualified name imported by `near` means: through the project's re-exports
        to the name outside it (`mypkg.compat.xm` → `torch_xla.core.xla_model`), or to the
        project's own probe (`PROJECT…`); as it is when neither."""
        key = (qualname, near.root)
        if key in self._follow:
            return self._follow[key]
        self._follow[key] = qualname  # a cycle resolves to the name itself
        result = qualname
        found = self._split(qualname, near) if depth < _DEPTH and not self._known(self._canonical(qualname)) else None
        if found is not None and found[1]:
            module, rest = found
            first = rest[0]
            probe = self._probes.get((module.path, first))
            binding = _top_binding(module.summary, first)
            if probe is not None:
                result = _probe_name(module, first) + "".join("." + r for r in rest[1:])
            elif binding is not None:
                target = self._targets(binding, module)
                if target is not None:
                    result = self.follow(".".join([target, *rest[1:]]), module, depth + 1)
        self._follow[key] = result
        return result

    def _deepen(self, deepen: Callable[[str], Summary]) -> None:
        """Parse the modules that can matter: those that can hold an idiom and are imported
        by another module, or import one and can show processes, or launch some module's
        `_mp_fn` (the launcher decides those modules' processes), or define one that a launcher
        of the project launches. A parsed module may import more than its light summary showed
        (imports inside functions): repeat until stable."""
        launched = any(module.summary.launcher for module in self.modules.values())
        changed = True
        while changed:
            changed = False
            imported = {target.path for module in self.modules.values() for target in self._edges(module)}
            for module in self.modules.values():
                summary = module.summary
                if summary.full or not summary.idiom:
                    continue
                if module.path in imported or (summary.program and (summary.launcher or self._edges(module))) \
                        or summary.entry and launched:
                    module.summary = deepen(module.path)
                    self._edge_lists.pop(module.path, None)  # a parse shows imports inside functions too
                    changed = changed or module.summary.full

    # ------------------------------------------------------------------ probes
    def _find_probes(self) -> None:
        """(path, name) of every module-level name that holds or computes whether torch_xla is
        installed: one that probes it itself, or reads one that does (to a fixed point)."""
        candidates = [(m, d) for m in self.modules.values() for d in m.summary.definitions]
        probes = self._probes
        probes.update({(m.path, d.name): d for m, d in candidates if d.direct})
        changed = True
        while changed:
            changed = False
            for module, definition in candidates:
                key = (module.path, definition.name)
                if key in probes:
                    continue
                if any(self._is_probe(name, module) for name in definition.reads):
                    probes[key] = definition
                    changed = True
                    self._follow.clear()

    def _is_probe(self, name: str, module: Module) -> bool:
        probes = self._probes
        if (module.path, name) in probes:
            return True
        binding = _top_binding(module.summary, name)
        if binding is None:
            return False
        target = self._targets(binding, module)
        if target is None:
            return False
        found = self._split(target, module)
        if found is not None and found[1] and (found[0].path, found[1][0]) in probes:
            return True
        return self._canonical(self.follow(target, module)) in self._catalogue_probes

    # ------------------------------------------------------------------ backends
    def _backend_names(self) -> dict[str, tuple[Module, Site]]:
        """Names handed to `init_process_group` as the backend anywhere in the project."""
        found: dict[str, tuple[Module, Site]] = {}
        for module in self.modules.values():
            for site in module.summary.backend_names:
                found.setdefault(site.name, (module, site))
        return found

    # ------------------------------------------------------------------ programs
    def _edges(self, module: Module) -> tuple[Module, ...]:
        """The project modules `module` imports (anywhere in it: a worker function's
        imports run in the worker). Asked for each module by the parse decision, and again
        by every program whose imports reach it: worked out once."""
        found = self._edge_lists.get(module.path)
        if found is None:
            found = self._edge_lists[module.path] = self._linked(module)
        return found

    def _linked(self, module: Module) -> tuple[Module, ...]:
        out = []
        for item in module.summary.imports:
            absolute = self._absolute(item, module)
            if absolute is None:
                continue
            target = self._named(absolute, module)
            if item.name is not None:
                target = self._named(f"{absolute}.{item.name}", module) or target
            if target is not None and target is not module:
                out.append(target)
        return tuple(out)

    def programs(self) -> tuple[list[str], list[str]]:
        """The paths of the modules whose torch_xla launch may be migrated by a fix, in two
        rounds: `xla_spawn.py`-style launchers first, as their processes after the fix decide
        the processes of the `_mp_fn` modules they start; then the other programs (those
        `_mp_fn` modules among them), whose processes after the fix decide what the modules
        they import inherit."""
        found = [m for m in self.modules.values() if m.summary.facts is not None
                 and m.summary.facts.processes.value == "spawn"
                 and (self._edges(m) or _entry_launch(m.summary.facts.processes))]
        launchers = sorted(m.path for m in found if _entry_launch(m.summary.facts.processes))  # type: ignore[union-attr]
        return launchers, sorted(m.path for m in found if m.path not in launchers)

    def settle(self, path: str, processes: Fact) -> None:
        """A program's processes fact as its own run decided it (its launch migrated or not)."""
        self._programs[path] = processes
        self._inherited = None

    def _inheritance(self) -> dict[str, dict[str, Fact]]:
        """path -> the facts a module inherits from the programs whose imports reach it (a
        program: a module that starts processes, creates a group, or runs as a script)."""
        if self._inherited is not None:
            return self._inherited
        reached: dict[str, list[tuple[Module, Facts]]] = {}
        for program in self.modules.values():
            facts = program.summary.facts
            if facts is None or not _is_program(program.summary):
                continue
            settled = self._programs.get(program.path) or self._entry_launcher(program) or facts.processes
            facts = replace(facts, processes=settled)
            seen = {program.path}
            queue = list(self._edges(program))
            while queue:
                module = queue.pop()
                if module.path not in seen:
                    seen.add(module.path)
                    reached.setdefault(module.path, []).append((program, facts))
                    queue.extend(self._edges(module))
        self._inherited = {path: _inherited(programs) for path, programs in reached.items()}
        return self._inherited

    # ------------------------------------------------------------------ contexts
    def module(self, path: str) -> Module | None:
        return self.modules.get(os.path.abspath(path))

    def context(self, path: str) -> Context:
        module = self.module(path)
        if module is None:
            return EMPTY
        relative: dict[tuple[int, str], str] = {}
        aliases: dict[str, str] = {}
        defined: dict[str, str] = {}
        forced = False
        # Whether resolving the relative imports can change a finding: a rule knows a name
        # they bind, or they reach into Transformers (its pin decides some fixes).
        matters = False
        for item in module.summary.imports:
            absolute = self._absolute(item, module)
            if absolute is None:
                continue
            qualname = absolute if item.name is None else f"{absolute}.{item.name}"
            if item.level:
                relative[(item.level, item.module)] = absolute
                matters = matters or self._known(self._canonical(qualname)) or qualname.split(".")[0] == "transformers"
            meaning = self.follow(qualname, module)
            if meaning == qualname:
                continue
            aliases[qualname] = meaning
            # A torch_xla name reached through the project (`from .compat import xm`), or a
            # project probe, is read even where the file's own bytes show no token.
            forced = forced or holds_token(meaning) or meaning.startswith(PROJECT)
            if meaning in self._probe_where:
                defined[meaning] = self._probe_where[meaning]
        facts = self._inheritance().get(module.path, {})
        launcher = self._entry_launcher(module)
        if launcher is not None:
            facts = {**facts, "processes": launcher}
        findings = tuple(self._findings(module))
        # Only the reads of what the file sets, not its own (which it tells itself): a context
        # the file does not need makes it analysed again after the model is built.
        reads = (self._env_reads() & module.summary.env_writes) - module.summary.env_reads
        groups = module.summary.launcher and self._entry_groups()
        flags = self._flags_read_elsewhere(module)
        if not (matters or aliases or facts or findings or reads or groups or flags):
            return EMPTY  # the project changes nothing in this file: it is judged on its own
        return Context(relative, aliases, defined, facts.get("processes"), facts.get("spmd"),
                       facts.get("data-parallel"), findings, forced, reads, groups, flags)

    def _flags_read_elsewhere(self, module: Module) -> frozenset[str]:
        """What `_imported_flags` says of `module`, kept to what matters there: a file needs a
        context of its own (analysed again once the model is built) only when it binds a name
        holding a token. One without a token binds none; a parsed one tells which it binds."""
        wanted = self._imported_flags().get(module.path, set())
        summary = module.summary
        if not wanted or not summary.idiom:
            return frozenset()
        if not summary.full:
            return frozenset(wanted)
        own = {name for name in (*summary.defined, *(i.bound for i in summary.imports if i.top)) if holds_token(name)}
        return frozenset(name for name in wanted if name in own or name == "*" and own)

    def _imported_flags(self) -> dict[str, set[str]]:
        """path -> the names holding a prefilter token that other modules import from it
        (`from .utils import XLA_AVAILABLE`), and "*" where one imports the module itself
        (`from . import env`, then `env._XLA_AVAILABLE`), worked out once. Star imports are
        not in the summaries: a flag read only through one is not seen."""
        if self._flags_imported is None:
            self._flags_imported = {}
            for module in self.modules.values():
                for item in module.summary.imports:
                    absolute = self._absolute(item, module)
                    if absolute is None:
                        continue
                    whole = self._named(absolute if item.name is None else f"{absolute}.{item.name}", module)
                    if whole is not None and whole is not module:
                        self._flags_imported.setdefault(whole.path, set()).add("*")
                    elif item.name is not None and holds_token(item.name):
                        source = self._named(absolute, module)
                        if source is not None and source is not module:
                            self._flags_imported.setdefault(source.path, set()).add(item.name)
        return self._flags_imported

    def _entry_groups(self) -> bool:
        """Whether a module of the project that defines a launcher entry point, or a module it
        imports itself, creates a process group of its own (Summary.own_group). Not the whole
        import closure: a library deep in it (accelerate's debug launcher) has group code that
        the entry point's program never runs."""
        if self._groups is None:
            entries = [m for m in self.modules.values() if m.summary.entry]
            self._groups = any(m.summary.own_group for entry in entries for m in (entry, *self._edges(entry)))
        return self._groups

    def _env_reads(self) -> frozenset[str]:
        """Every runtime variable a module of the project reads: worked out once."""
        if self._reads is None:
            self._reads = frozenset().union(*(module.summary.env_reads for module in self.modules.values()))
        return self._reads

    def _entry_launcher(self, module: Module) -> Fact | None:
        """For a module that defines a launcher entry point (`_mp_fn`, started by an
        `xla_spawn.py`-style launcher, facts.py), the migrated launch of such a launcher in the
        project: its worker starts the entry point in every process of the "tpu" group. None
        when the module is something else, or no launcher of it has its launch migrated."""
        own = module.summary.facts.processes if module.summary.facts is not None else None
        entry = None if own is None or own.value != "spawn" else entry_point(own.reason)
        if entry is None:
            return None
        for path, fact in sorted(self._programs.items()):
            if fact.value == "launched" and _entry_launch(fact, entry):
                shown = self.modules[path].shown if path in self.modules else path
                assert fact.evidence is not None
                return Fact("processes", "launched", None,
                            f"defines `{entry}`, which {shown} starts: its launch is migrated to TorchTPU by this fix, "
                            f"every worker joins the \"tpu\" process group ({shown}:{fact.evidence.line} `{fact.evidence.text}`)")
        return None

    def _findings(self, module: Module) -> Iterable[Finding]:
        """`dist_backend = "xla"` where the project hands `dist_backend` to `init_process_group`."""
        for site in module.summary.xla_values:
            handed = self._backends.get(site.name)
            if handed is not None:
                where, call = handed
                yield Finding("XLA604", site, f"{where.shown}:{call.line} `{call.text}`")


def _is_program(summary: Summary) -> bool:
    """Whether the code a module imports runs in its processes: it starts them (a launch
    anywhere in it, also a library's launcher function), or it is a program (a `__main__`
    block, or script code) that runs as one process or creates a group. A library function
    that creates a group says nothing of what the modules it imports run in."""
    assert summary.facts is not None
    value = summary.facts.processes.value
    return value in ("spawn", "one") or (value in GROUPED and summary.main)


def _inherited(programs: list[tuple[Module, Facts]]) -> dict[str, Fact]:
    """What a module inherits from the programs that reach it: the processes of a torch_xla
    launch when any of them has one (its workers have no process group), a process group
    when all of them create one; SPMD when any runs SPMD (its cases are the careful ones);
    a DDP/FSDP wrapper only when every one of them wraps the model (a wrapper that one
    program has does not reduce the gradients of the others)."""
    found: dict[str, Fact] = {}
    values = [facts.processes.value for _, facts in programs]
    if "spawn" in values:
        found["processes"] = _from(programs, "processes", "spawn")
    elif all(value == "launched" for value in values):  # every worker joins the group the launch made
        found["processes"] = _from(programs, "processes", "launched")
    elif all(value in GROUPED for value in values):
        found["processes"] = _from(programs, "processes", "process-group")
    if any(facts.spmd.value == "yes" for _, facts in programs):
        found["spmd"] = _from(programs, "spmd", "yes")
    if all(facts.data_parallel.value == "yes" for _, facts in programs):
        found["data-parallel"] = _from(programs, "data-parallel", "yes")
    return found


def _from(programs: list[tuple[Module, Facts]], name: str, value: str) -> Fact:
    """The fact `name=value` as the first program showing it shows it, naming that program."""
    program, fact = next((p, f.get(name)) for p, f in programs if f.get(name).value == value)
    where = f"{program.shown}:{fact.evidence.line} `{fact.evidence.text}`" if fact.evidence else program.shown
    return Fact(name, value, None, f"imported by {program.shown}, which {fact.reason} ({where})")


def _top_binding(summary: Summary, name: str) -> Import | None:
    """The module-level import that binds `name`, when nothing else binds it there."""
    if name in summary.defined:
        return None
    found = [item for item in summary.imports if item.top and item.bound == name]
    return found[0] if len(found) == 1 or len({(f.level, f.module, f.name) for f in found}) == 1 else None


def _probe_name(module: Module, name: str) -> str:
    """The name rules match for a project probe: `PROJECT` + "probe." + one dotted-name part."""
    return PROJECT + "probe." + (module.name + "." + name).replace(".", "__")


def stamps(paths: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Size and time of each file (those that cannot be stat'ed are left out)."""
    found = {}
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        found[path] = (info.st_size, info.st_mtime_ns)
    return found


def build(root: Path, files: Mapping[str, bytes], listed: Iterable[str], stored: Mapping[str, tuple[int, int, Summary]],
          renames: Mapping[str, str], probes: frozenset[str], known: Callable[[str], bool],
          override: Mapping[str, bytes] | None = None, prefiltered: Mapping[str, bool] | None = None,
          made: Mapping[str, Summary] | None = None) -> tuple[Project, dict[str, tuple[int, int, Summary]]]:
    """The model of the project at `root` from its Python files (`listed`, absolute paths).

    Each module is summarised lightly (its import lines), or taken from `stored` while its
    size and time match; then the modules that can matter are parsed: those that can hold an
    idiom and that another module imports (their probes, flags, re-exports), or that import
    one and can show processes (a launcher, a program). The bytes come from `files` where
    the run has read them, else from disk; `override` holds text that stands for a file's
    (stdin, for `--stdin-filename`); `prefiltered`, what the run's prefilter said of the
    files it read; `made`, the light summaries the run has made of them (scan.py). Returns
    the model and the summaries to store."""
    canonical = Canonicaliser(renames)
    prefiltered = prefiltered or {}
    override = override or {}
    made = made or {}
    summaries: dict[str, Summary] = {path: summarise(data, canonical) for path, data in override.items()}
    store: dict[str, tuple[int, int, Summary]] = {}

    def data_of(path: str) -> bytes | None:
        if path in files:
            return files[path]
        try:
            return read(Path(path))
        except FileProblem:
            return None  # not a module the model can read (a FIFO, a huge file, no access)

    stats = stamps(path for path in listed if path not in summaries)
    for path, stamp in stats.items():
        kept = stored.get(path)
        if kept is not None and kept[:2] == stamp:
            summaries[path] = kept[2]
        elif path in made:
            summaries[path] = made[path]
        elif (data := data_of(path)) is not None:
            summaries[path] = light(data, prefiltered.get(path))

    def deepen(path: str) -> Summary:
        summary = summaries[path]
        if not summary.full and path not in override and (data := data_of(path)) is not None:
            summary = summaries[path] = summarise(data, canonical)
        return summary

    model = Project(root, summaries, renames, probes, known, deepen)
    for path, (size, mtime) in stats.items():
        if path in summaries:
            store[path] = (size, mtime, summaries[path])
    return model, store


def _entry_launch(processes: Fact, entry: str | None = None) -> bool:
    """A torch_xla launch of some module's entry point (`xmp.spawn(mod._mp_fn, ...)`; `entry`:
    that one), read off the launch line its processes fact shows."""
    return processes.evidence is not None and any(
        f".{name}" in processes.evidence.text for name in ENTRY_POINTS if entry in (None, name))
