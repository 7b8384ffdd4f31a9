"""The least work any `check` written in Python does on a tree: a contender of bench/run.py.

    python bench/python_floor.py [--jobs N] PATH

It lists the .py files under PATH, reads each, tests xla2tpu's prefilter on its bytes, and
parses the files that pass with CPython's parser (the fastest parser Python has), the files
split over N processes (default: every core). Nothing else: no hashing, no configuration, no
project model, no detection, no findings, no output. `xla2tpu check` does all of this and
more, so on the same tree and machine it cannot be faster than this process; a peer faster
than this is out of reach for any design that parses its candidates in Python.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path

from xla2tpu.sources.prefilter import may_hold_idiom


def listed(root: str) -> list[str]:
    found, folders = [], [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    found.append(entry.path)
    return found


def parse_candidates(paths: list[str]) -> None:
    for path in paths:
        with open(path, "rb") as file:
            data = file.read()
        if may_hold_idiom(data):
            try:
                ast.parse(data)
            except (SyntaxError, ValueError, RecursionError):
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    paths = listed(str(args.path))
    children = []
    for job in range(1, args.jobs):  # interleaved shares: the candidates spread evenly
        pid = os.fork()
        if pid == 0:
            parse_candidates(paths[job :: args.jobs])
            os._exit(0)
        children.append(pid)
    parse_candidates(paths[0 :: args.jobs])
    for pid in children:
        os.waitpid(pid, 0)
    sys.exit(0)


if __name__ == "__main__":
    main()
