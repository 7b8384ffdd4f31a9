"""The facts stage's share of a cold `check`: the budget is 10% (issue 12).

    PYTHONPATH=<checkout> .venv/bin/python bench/facts_share.py PATH ... [--repeat N]

Every file under PATH is read once; then a cold check of all of them is timed
(`engine.process_source`, no cache: prefilter, decode, facts, parse, rules), and the
facts stage alone (`facts.compute` on the trees the engine's decode builds, for the files
that pass the prefilter, with the reading of their folders' modules for the hardware
fact). Best of `--repeat` runs each, single process.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine
from xla2tpu.project import facts
from xla2tpu.sources.decode import DecodeError, decode
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.project.resolve import Canonicaliser
from xla2tpu.catalogue.settings import Settings
from xla2tpu.catalogue.diagnostics import FixClass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = [(str(p), p.read_bytes()) for root in args.paths for p in sorted(root.rglob("*.py") if root.is_dir() else [root])]
    cat = catalogue.load()
    settings = Settings(selected=cat.select(["ALL"], []), apply=frozenset({FixClass.SAFE}), target="eager")
    canonical = Canonicaliser(cat.module_renames)
    decoded = []
    for path, data in files:
        if may_hold_idiom(data):
            try:
                decoded.append((path, decode(data)))
            except DecodeError:
                pass
    check = stage = float("inf")
    for _ in range(args.repeat):
        facts.forget_folders()  # cold: the folders of the files are read again
        start = time.perf_counter()
        for path, data in files:
            engine.process_source(path, data, settings)
        check = min(check, time.perf_counter() - start)
        facts.forget_folders()
        start = time.perf_counter()
        for path, item in decoded:
            facts.compute(item.tree, item.text, canonical, path)
        stage = min(stage, time.perf_counter() - start)
    print(f"{len(files)} files, {len(decoded)} past the prefilter")
    print(f"cold check: {check:.3f} s; facts stage: {stage:.3f} s = {100 * stage / check:.1f}% of it")


if __name__ == "__main__":
    main()
