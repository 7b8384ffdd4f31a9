"""What `check` costs next to a bare LibCST parse of the same files (issue 16), in one process.

    .venv/bin/python bench/detect_share.py PATH ... [--unsafe-fixes] [--repeat 3]
    .venv/bin/python bench/detect_share.py --corpus WORK   # the ecosystem corpus's TPU repositories

Over the .py files under the paths that pass the prefilter (the only ones `check` reads past
their bytes), CPU seconds, best of N, of:
- a bare `libcst.parse_module` of each file (the floor of any LibCST tool);
- CPython's `ast.parse` and a walk of every node;
- the engine as `check` runs it (`engine.process_source`, findings only, the safe fixes or the
  unsafe ones too), no project model; how many files it had LibCST parse, and the files
  answered on the ast alone and those that went through LibCST, each against their parse;
- with `--fix`, over the files a fix rewrites: the engine (which also writes the new code),
  and a bare LibCST parse of only the top-level statements that hold a fixed finding, the
  floor of any tool that parses what it edits.
`--corpus WORK` reads the TPU repositories of bench/ecosystem.toml as extracted under
WORK/src by `bench/ecosystem.py run --work WORK`.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst

import ecosystem_corpus
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.trees.blocks import groups_of
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.catalogue.settings import Settings


def corpus_trees(work: Path) -> list[Path]:
    repos = ecosystem_corpus.load(Path(__file__).with_name("ecosystem.toml"))
    return [work / "src" / repo.slug for repo in repos if repo.kind == "tpu" and (work / "src" / repo.slug).is_dir()]


def files_of(paths: list[Path]) -> list[tuple[str, bytes]]:
    found = []
    for root in paths:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            data = path.read_bytes()
            if may_hold_idiom(data):
                found.append((str(path), data))
    return found


def statements_edited(path: str, data: bytes, settings: Settings) -> str:
    """The top-level statements of the file that hold a fixed finding, one after the other."""
    result = engine.process_source(path, data, settings)
    lines = {d.line for d in result.diagnostics if d.fixed}
    text = data.decode("utf-8", errors="replace")
    rows = text.splitlines(keepends=True)
    picked = []
    for group in groups_of(ast.parse(data).body):
        if any(group.first <= line <= group.last for line in lines):
            picked.append("".join(rows[group.first - 1:group.last]))
    return "".join(part if part.endswith("\n") else part + "\n" for part in picked)


def _parse_or_not(data: bytes) -> None:
    try:
        cst.parse_module(data)
    except (cst.ParserSyntaxError, RecursionError):
        pass


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--corpus", type=Path, help="an ecosystem work folder: its TPU repositories")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fix", action="store_true", help="also: fix against a parse of the statements it edits")
    args = parser.parse_args()
    paths = [*args.paths, *(corpus_trees(args.corpus) if args.corpus else [])]
    files = files_of(paths)
    lines = sum(data.count(b"\n") for _, data in files)
    rules = frozenset(rule.code for rule in catalogue.load().rules)
    apply = {FixClass.SAFE, FixClass.UNSAFE} if args.unsafe_fixes else {FixClass.SAFE}
    settings = Settings(rules, frozenset(apply), "eager")
    checking = dataclasses.replace(settings, rewrite=False)  # findings only, as `check` asks

    def parse() -> None:
        for _, data in files:
            _parse_or_not(data)

    def walk() -> None:
        for _, data in files:
            try:
                for _node in ast.walk(ast.parse(data)):
                    pass
            except (SyntaxError, ValueError, RecursionError):
                pass

    parsed: list[int] = []

    def check() -> None:
        parsed[:] = [int(engine.process_source(path, data, checking).parsed) for path, data in files]

    check()  # warm: the catalogue, the index, compiled patterns
    bare, tree, engine_time = best(args.repeat, parse), best(args.repeat, walk), best(args.repeat, check)
    print(f"{len(files)} files past the prefilter, {lines:,} lines ({'unsafe' if args.unsafe_fixes else 'safe'} fixes)")
    print(f"bare LibCST parse           {bare:7.2f} s")
    print(f"CPython ast.parse + walk    {tree:7.2f} s   {tree / bare:5.2f} x the parse")
    print(f"check (engine)              {engine_time:7.2f} s   {engine_time / bare:5.2f} x the parse")
    print(f"files LibCST parsed         {sum(parsed):7d}   of {len(files)}")
    for label, chosen in (("on the ast alone", 0), ("through LibCST", 1)):
        part = [item for item, through in zip(files, parsed) if through == chosen]
        if part:
            part_parse = best(args.repeat, lambda: [_parse_or_not(data) for _, data in part])
            part_check = best(args.repeat, lambda: [engine.process_source(path, data, checking) for path, data in part])
            print(f"  {label:16s} {len(part):4d} files: check {part_check:6.2f} s, {part_check / part_parse:5.2f} x their parse")
    if args.fix:
        fixing = [(path, data) for path, data in files if engine.process_source(path, data, settings).new_source]
        edited = [statements_edited(path, data, settings) for path, data in fixing]

        def parse_edited() -> None:
            for text in edited:
                cst.parse_module(text)

        def print_edited() -> None:
            for text in edited:
                cst.parse_module(text).code

        def check_fixing() -> None:
            for path, data in fixing:
                engine.process_source(path, data, checking)

        def fix() -> None:
            for path, data in fixing:
                engine.process_source(path, data, settings)

        floor, fixed = best(args.repeat, parse_edited), best(args.repeat, fix)
        printed, found = best(args.repeat, print_edited), best(args.repeat, check_fixing)
        print(f"fix, {len(fixing)} files it rewrites: {fixed:.2f} s; bare parse of the statements it edits "
              f"{floor:.2f} s ({fixed / floor:.2f} x)")
        # What any fix must do at least: the findings `check` reports (fix reports them too),
        # and a parse and a print of the statements it edits, with nothing else between.
        print(f"  of which unavoidable: check of those files {found:.2f} s ({found / floor:.2f} x), parse and print "
              f"of the edited statements {printed:.2f} s ({printed / floor:.2f} x): at least "
              f"{(found + printed) / floor:.2f} x")


if __name__ == "__main__":
    main()
