"""Mutation testing of the modules whose breakage the suite must catch (a script, not a test:
a run takes minutes to hours, so neither CI nor pytest runs it). docs/mutation.md records
a run and says what survives on purpose.

    pip install mutmut==3.8.1        # once, in the venv that has the test extras
    .venv/bin/python bench/mutation.py [SET_OR_MODULE ...] [--jobs 2] [--workdir DIR]
    .venv/bin/python bench/mutation.py engine --survivors   # after adding tests

Sets: default (engine, catalogue, files, runner, compare: ~45 minutes on two cores), pipe
(engine, rewriter, imports: hours), loader (catalogue), write (files), verify (runner,
compare), all. A module's short name (e.g. `compare`) runs that module alone. Each module
is mutated in its own copy of the checkout, with only the tests that guard it (MODULES
below), so a mutant is judged by the tests meant to catch it. The copies stay in --workdir
(default: a folder under the system's temporary folder) so a survivor can be read:

    cd WORKDIR/compare && mutmut show NAME

mutmut reads its settings from the pyproject.toml in the folder it runs in; each copy's
pyproject.toml gets a [tool.mutmut] table written by this script, which is why the
checkout's own pyproject.toml has none.

Prints, per module: mutants, killed, not collected, timeouts, survived, no tests (no
selected test calls the function), and the score, (killed + not collected + timeouts) /
mutants.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTMUT_VERSION = "3.8.1"


@dataclass(frozen=True)
class Module:
    """One module to mutate and the tests that are meant to catch a change in it."""

    path: str  # relative to the checkout
    tests: tuple[str, ...]
    # mutmut mutant-name globs restricting the run to some functions; empty: all of them.
    functions: tuple[str, ...] = ()
    # The module's output is loaded once per process (see bench/mutation_plugin.py).
    loaded_once: bool = False

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def dotted(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")


_ENGINE_TESTS = (
    "tests/test_engine.py",
    "tests/test_engine_rules.py",
    "tests/test_fixtures.py",
    "tests/test_unparsable_rewrite.py",
    "tests/test_bad_input.py",
)
_VERIFY_TESTS = (
    "tests/test_verify.py",
    "tests/test_verify_engine.py",
    "tests/test_verify_handstep.py",
    "tests/test_verify_standin.py",
    "tests/test_verify_judge.py",
)

MODULES = {
    module.name: module
    for module in (
        Module("xla2tpu/run/engine.py", _ENGINE_TESTS),
        Module("xla2tpu/rewrite/rewriter.py", _ENGINE_TESTS),
        Module("xla2tpu/rewrite/import_pass.py", _ENGINE_TESTS),
        Module("xla2tpu/catalogue/rules.py", ("tests/test_catalogue.py", "tests/test_catalogue_loader.py"), loaded_once=True),
        # The write path only: reading and writing a file. Finding the files (the walk,
        # .gitignore) is another concern, tested by other files.
        Module(
            "xla2tpu/sources/files.py",
            ("tests/test_write_path.py", "tests/test_bad_input.py"),
            functions=("xla2tpu.sources.files.x_read__*", "xla2tpu.sources.files.x_write_atomic__*", "xla2tpu.sources.files.x__keep_owner__*"),
        ),
        # The migration step and the judgement. The helpers that start processes and
        # build their environments are left out, and so is test_verify_engine.py (real
        # verify runs on torch, a minute a run, ~30 s a mutant): with them a run would
        # take hours on two cores.
        Module(
            "xla2tpu/verify/runner.py",
            tuple(test for test in _VERIFY_TESTS if test != "tests/test_verify_engine.py"),
            functions=tuple(f"xla2tpu.verify.runner.x_{name}__*" for name in ("_migrate", "_judge", "tolerances")),
        ),
        Module("xla2tpu/verify/compare.py", ("tests/test_verify.py",)),
    )
}

SETS = {
    "default": ("engine", "catalogue", "files", "runner", "compare"),
    "pipe": ("engine", "rewriter", "imports"),
    "loader": ("catalogue",),
    "write": ("files",),
    "verify": ("runner", "compare"),
}

def _checkout_files() -> list[str]:
    """The files of the checkout as git sees them, untracked ones included, ignored ones
    not (no .venv, no caches, no earlier mutation folders)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout
    return [name for name in out.split("\0") if name and (REPO / name).is_file()]


def _toml_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


# A mutant's tests run in a worker forked from a process that ran the unmutated tests:
# fast, but the worker inherits that process's caches. For a module whose output is
# loaded once per process that would hide every mutant, so its workers come from a fork
# server that has imported the third-party libraries and nothing of xla2tpu.
_LOADED_ONCE = """\
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "bench.mutation_plugin"]
process_isolation = "forkserver"
forkserver_warmup = "import"
preload_modules_file = "preload.txt"
"""
_PRELOAD = ("pytest", "libcst", "hypothesis", "click", "rich", "pathspec")


def prepare(module: Module, folder: Path) -> None:
    """A fresh copy of the checkout in `folder`, configured to mutate `module` only.

    Fresh on every run: mutmut keeps earlier verdicts for unchanged source, which would
    hide what new tests kill.
    """
    shutil.rmtree(folder, ignore_errors=True)
    for name in _checkout_files():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    configure(module, folder)


def configure(module: Module, folder: Path) -> None:
    """The copy's pyproject.toml: the checkout's, with a [tool.mutmut] table for `module`."""
    shutil.copy2(REPO / "pyproject.toml", folder / "pyproject.toml")
    # mutmut copies source_paths into mutants/ and runs the tests there; everything else
    # the tests read (rules/, fixtures/, examples/, ...) must be copied along.
    others = sorted({name.split("/", 1)[0] for name in _checkout_files()} - {"xla2tpu", "tests", "pyproject.toml"})
    config = f"""
[tool.mutmut]
source_paths = ["xla2tpu/"]
only_mutate = ["{module.path}"]
also_copy = {_toml_list(others)}
pytest_add_cli_args_test_selection = {_toml_list(module.tests)}
"""
    if module.loaded_once:
        config += _LOADED_ONCE
        (folder / "preload.txt").write_text("\n".join(_PRELOAD) + "\n", encoding="utf-8")
    else:
        config += 'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
    with (folder / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write(config)


PREVIOUS = "previous-verdicts.json"


def refresh_tests(module: Module, folder: Path) -> list[str]:
    """Bring the checkout's tests and test selection into the last run's copy and return
    the mutants that run left alive, for mutmut to judge again. The other verdicts are
    kept (in PREVIOUS: mutmut forgets them when the selection changes): a mutant killed
    stays killed when tests are only added, so the module itself must be unchanged."""
    if (folder / module.path).read_bytes() != (REPO / module.path).read_bytes():
        raise SystemExit(f"{module.path} changed since the last run: run it afresh (without --survivors)")
    previous = verdicts(module, folder)
    (folder / PREVIOUS).write_text(json.dumps(previous, indent=1), encoding="utf-8")
    for name in _checkout_files():
        if name.startswith(("tests/", "bench/")):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, folder / name)
    configure(module, folder)
    return [name for name, verdict in previous.items() if verdict in ("survived", "no tests")]


def run(module: Module, folder: Path, jobs: int, mutants: list[str] | None = None) -> None:
    env = {**os.environ, "TPU_SKIP_MDS_QUERY": "1"}
    env.pop("PJRT_DEVICE", None)  # never point a test at a real TPU
    command = ["mutmut", "run", "--max-children", str(jobs), *(module.functions if mutants is None else mutants)]
    log = folder / "mutmut.log"
    shown = command if mutants is None else [*command[:4], f"<{len(mutants)} survivors>"]
    print(f"$ (cd {folder} && {' '.join(shown)})  > {log}", flush=True)
    # mutmut exits non-zero when something is off before mutating (a failing clean run);
    # its log says what, and the verdicts read afterwards are then missing.
    with log.open("w", encoding="utf-8") as out:
        subprocess.run([_mutmut(), *command[1:]], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)


# mutmut's exit codes (mutmut/stats.py), grouped into the columns printed. A worker whose
# pytest call raises exits -1 (255): under this suite that is pytest refusing the selected
# tests because the mutant broke their collection (a test module that cannot import), which
# mutmut files under "timeout"; a plain pytest run fails on it, so it counts as detected.
VERDICTS = {1: "killed", 3: "killed", 0: "survived", 255: "not collected", -1: "not collected",
            5: "no tests", 33: "no tests", -24: "timeout", 24: "timeout", 152: "timeout", 36: "timeout"}
COLUMNS = ("killed", "not collected", "timeout", "survived", "no tests")
DETECTED = ("killed", "not collected", "timeout")


def _mutmut() -> str:
    """mutmut's own command, beside this Python (mutmut warns against `python -m mutmut run`)."""
    return str(Path(sys.executable).parent / "mutmut")


def verdicts(module: Module, folder: Path) -> dict[str, str]:
    """mutant name -> verdict, for the module's mutants that were run (with --survivors,
    the earlier run's verdicts for the mutants not run again)."""
    found: dict[str, str] = {}
    if (folder / PREVIOUS).is_file():
        found.update(json.loads((folder / PREVIOUS).read_text(encoding="utf-8")))
    meta = folder / "mutants" / (module.path + ".meta")
    if meta.is_file():
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        found.update({name: VERDICTS.get(code, f"exit {code}") for name, code in codes.items() if code is not None})
    return found


def score_line(name: str, found: dict[str, str]) -> str:
    counts = Counter(found.values())
    total = len(found)
    detected = sum(counts[status] for status in DETECTED)
    other = total - sum(counts[column] for column in COLUMNS)
    score = f"{100 * detected / total:.1f}%" if total else "-"
    cells = [name, str(total), *(str(counts[column]) for column in COLUMNS), str(other), score]
    return " | ".join(cells)


def _requested(names: list[str]) -> list[Module]:
    chosen: list[str] = []
    for name in names:
        if name == "all":
            members = tuple(MODULES)
        elif name in SETS:
            members = SETS[name]
        elif name in MODULES:
            members = (name,)
        else:
            raise SystemExit(f"unknown set or module {name!r}; sets: all, {', '.join(SETS)}; modules: {', '.join(MODULES)}")
        chosen += [member for member in members if member not in chosen]
    return [MODULES[name] for name in chosen]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["default"], help="sets or modules (default: the set `default`)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "xla2tpu-mutation")
    parser.add_argument("--report-only", action="store_true", help="print the verdicts of the last run again")
    parser.add_argument("--survivors", action="store_true",
                        help="judge the last run's survivors again with the checkout's current tests")
    args = parser.parse_args()
    modules = _requested(args.names)
    try:
        import mutmut  # noqa: F401 - only to say how to install it
    except ImportError:
        print(f"mutmut is not installed here: {sys.executable} -m pip install mutmut=={MUTMUT_VERSION}", file=sys.stderr)
        return 2
    # The copies sit outside the checkout: inside it (build/ is git-ignored) the tests
    # that walk folders honouring .gitignore would see no file at all.
    workdir = args.workdir.resolve()
    if workdir.is_relative_to(REPO):
        raise SystemExit("--workdir must be outside the checkout")
    lines = []
    for module in modules:
        folder = workdir / module.name
        if args.survivors:
            survivors = refresh_tests(module, folder)
            if survivors:
                run(module, folder, args.jobs, survivors)
        elif not args.report_only:
            prepare(module, folder)
            run(module, folder, args.jobs)
        lines.append(score_line(module.dotted, verdicts(module, folder)))
    print("module | mutants | " + " | ".join(COLUMNS) + " | other | score")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
