"""Engine throughput on a tree: files, lines, files parsed, seconds, lines/s (a script, not a test).

    python bench/throughput.py [PATH ...] [--jobs N] [--repeat K]

Prints one row per tree: the whole `check` run (discovery, reading, prefilter, parsing,
rules) in this process, best of K runs, and the same over only the files that passed the
prefilter, which is what the parser sees.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run.config import Config
from xla2tpu.run.workflow import run, settings_for


def measure(path: Path, jobs: int | None, repeat: int) -> dict[str, float]:
    cat = catalogue.load()
    config = Config(root=path if path.is_dir() else path.parent)
    settings = settings_for(config, cat, unsafe_fixes=True)
    best = float("inf")
    outcome = None
    for _ in range(repeat):
        start = time.perf_counter()
        outcome = run([path], config, cat, settings, jobs)
        best = min(best, time.perf_counter() - start)
    assert outcome is not None
    return {
        "files": outcome.files,
        "lines": outcome.lines,
        "parsed": outcome.parsed,
        "findings": sum(len(r.diagnostics) for r in outcome.results),
        "seconds": best,
        "lines_per_s": outcome.lines / best if best else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(__file__).resolve().parent.parent / "fixtures"])
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'tree':<50} {'files':>7} {'parsed':>7} {'lines':>9} {'findings':>8} {'seconds':>8} {'lines/s':>10}")
    for path in args.paths:
        row = measure(path, args.jobs, args.repeat)
        print(
            f"{str(path)[-50:]:<50} {row['files']:>7} {row['parsed']:>7} {row['lines']:>9} "
            f"{row['findings']:>8} {row['seconds']:>8.2f} {row['lines_per_s']:>10.0f}"
        )


if __name__ == "__main__":
    main()
