"""A copy of a tree whose idiom files keep only the top-level statements the plan reads: the
bound on what `check` could gain by parsing only those (issue 16), not a tool to run on code.

    PYTHONPATH=<checkout> .venv/bin/python bench/blank_unkept.py SOURCE DEST
    .venv/bin/python bench/run.py --files 5000 --tree DEST --skip "..."   # both trees, one run

CPython parses every file that passes the prefilter whole, while `Plan.keeps` reads only
the statements that may hold or bind what a rule looks for. In each such file of DEST the
other top-level statements are blank lines, so every line and column stays where it was;
files the prefilter turns away are copied as they are. `check` on DEST is then what it
would cost if its parse skipped those statements and nothing else changed, an optimistic
bound: the facts, the reduced LibCST parse and the project model read statements the plan
does not keep, so a real partial parse would have to keep those too.
"""

from __future__ import annotations

import argparse
import ast
import shutil
from pathlib import Path

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.trees.blocks import groups_of
from xla2tpu.detect.positions import Positions
from xla2tpu.catalogue.index import build
from xla2tpu.rewrite.parse_plan import Plan
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.project.model import EMPTY


def blank_unkept(text: str) -> tuple[str, int]:
    """`text` with the top-level statements the plan does not keep made blank lines, and the
    number of lines kept."""
    rules = catalogue.load()
    tree = ast.parse(text)
    positions = Positions(text, tree)
    plan = Plan(tree, EMPTY.canonicaliser(rules.module_renames), build(rules, frozenset(r.code for r in rules)))
    lines = text.split("\n")
    kept = 0
    for group in groups_of(tree.body):
        if plan.keeps(positions.lines(group.first, group.last), group):
            kept += group.last - group.first + 1
        else:
            lines[group.first - 1:group.last] = [""] * (group.last - group.first + 1)
    return "\n".join(lines), kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    args = parser.parse_args()
    if args.dest.exists():
        shutil.rmtree(args.dest)
    shutil.copytree(args.source, args.dest, ignore=shutil.ignore_patterns(".xla2tpu_cache"))
    files = total = kept = 0
    for path in sorted(args.dest.rglob("*.py")):
        data = path.read_bytes()
        if not may_hold_idiom(data):
            continue
        try:
            blanked, lines = blank_unkept(data.decode("utf-8"))
        except (UnicodeDecodeError, SyntaxError):
            continue  # left whole: check reports it as it is
        path.write_text(blanked, encoding="utf-8")
        files += 1
        total += data.count(b"\n") + 1
        kept += lines
    print(f"{files} idiom files, {kept:,} of {total:,} lines kept ({kept / max(total, 1):.1%}) in {args.dest}")


if __name__ == "__main__":
    main()
