"""Where the engine's time goes, pass by pass, on the files that pass its prefilter.

    PYTHONPATH=<checkout> /work/venv/bin/python bench/passes.py PATH ... [--top N] [--cprofile]

Each pass is timed at its entry point, without a profiler's overhead: the parse
(`libcst.parse_module`), every whole-module visit (`Module.visit`, keyed by the visitor's
class: the import resolver, the rewriter, used names, import hygiene...), metadata
resolution (`MetadataWrapper.resolve_many`: the PositionProvider), code generation
(`Module.code`), the re-parse that guards every rewrite (`ast.parse`) and the file rules
(`prechecks.verdicts`). A bare parse of the same files and CPU seconds are printed next to
them; `--cprofile` adds the functions with the most own time.
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import pstats
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine
from xla2tpu.detect import prechecks
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.catalogue.settings import Settings

SPENT: dict[str, float] = defaultdict(float)
_DEPTH = [0]


def _timed(label: Callable[..., str], function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _DEPTH[0] += 1
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:  # nested timed calls are counted once, in the outer pass
                SPENT[label(*args, **kwargs)] += time.process_time() - start

    return wrapper


def instrument() -> None:
    cst.parse_module = _timed(lambda *a, **k: "parse (LibCST)", cst.parse_module)  # type: ignore[assignment]
    cst.Module.visit = _timed(lambda self, visitor: f"pass: {type(visitor).__name__}", cst.Module.visit)  # type: ignore[method-assign]
    MetadataWrapper.resolve_many = _timed(lambda *a, **k: "metadata (PositionProvider)", MetadataWrapper.resolve_many)  # type: ignore[method-assign]
    code = cst.Module.code.fget
    cst.Module.code = property(_timed(lambda *a: "codegen", code))  # type: ignore[method-assign,assignment]
    engine.ast.parse = _timed(lambda *a, **k: "re-parse check (ast)", ast.parse)  # type: ignore[attr-defined]
    prechecks.verdicts = _timed(lambda *a, **k: "file rules (prechecks)", prechecks.verdicts)  # type: ignore[assignment]
    engine.prechecks = prechecks


def candidates(paths: list[Path]) -> list[tuple[Path, bytes]]:
    found = []
    for path in paths:
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            data = file.read_bytes()
            if may_hold_idiom(data):
                found.append((file, data))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args()
    cat = catalogue.load()
    settings = Settings(frozenset(rule.code for rule in cat), frozenset({FixClass.SAFE, FixClass.UNSAFE}))
    files = candidates(args.paths)
    lines = sum(data.count(b"\n") for _path, data in files)

    start = time.process_time()
    for _path, data in files:
        try:
            cst.parse_module(data)
        except (cst.ParserSyntaxError, RecursionError):
            pass
    bare = time.process_time() - start

    instrument()
    SPENT.clear()
    profiler = cProfile.Profile() if args.cprofile else None
    start = time.process_time()
    if profiler is not None:
        profiler.enable()
    findings = 0
    for path, data in files:
        findings += len(engine.process_source(str(path), data, settings).diagnostics)
    if profiler is not None:
        profiler.disable()
    total = time.process_time() - start

    print(f"{len(files)} files past the prefilter, {lines:,} lines, {findings} findings")
    print(f"{'bare LibCST parse':<40} {bare:8.2f} s")
    print(f"{'xla2tpu process_source (check + fix)':<40} {total:8.2f} s  = {total / bare:.2f} x bare parse")
    for label, seconds in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<38} {seconds:8.2f} s  {seconds / total:6.1%}")
    rest = total - sum(SPENT.values())
    print(f"  {'other (decode, noqa, index, reporting)':<38} {rest:8.2f} s  {rest / total:6.1%}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
