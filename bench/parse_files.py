"""The bare-parse contender: read every .py file under the paths and LibCST-parse it, nothing else.

    python bench/parse_files.py [--jobs N] PATH ...

It is the floor for any LibCST tool that must read a file: xla2tpu on a file that carries
an idiom can only be compared with this. Files that do not parse are counted, not fatal.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst


def files_under(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.rglob("*.py")))
        else:
            found.append(path)
    return found


def parse(path: Path) -> bool:
    try:
        cst.parse_module(path.read_bytes())
    except (cst.ParserSyntaxError, RecursionError):
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (1: parse in this process)")
    args = parser.parse_args()
    files = files_under(args.paths)
    if args.jobs <= 1:
        parsed = sum(map(parse, files))
    else:
        chunk = max(1, min(32, len(files) // (args.jobs * 4)))
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            parsed = sum(pool.map(parse, files, chunksize=chunk))
    print(f"{parsed} of {len(files)} files parsed (jobs={args.jobs}, cpus={os.cpu_count()})")


if __name__ == "__main__":
    main()
