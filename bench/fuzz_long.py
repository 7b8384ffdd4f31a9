"""The long fuzz profile: the property tests of tests/test_properties.py on fresh random
inputs, many more of them (a script, not a test; figures go to docs/reliability.md).

    python bench/fuzz_long.py [--inputs 10000] [--workers 2] [--seed S] [--out DIR]

Each worker runs Hypothesis with its own seed and no shrinking, so a failure does not
stop the run: it is counted and its input saved to DIR/failure-<worker>-<n>.py, with
its chunks, settings and assertion in failure-<worker>-<n>.json, to cut a reproducer from.
Prints one summary line: seed, inputs, inputs set aside, failures, seconds, inputs/s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from hypothesis.errors import UnsatisfiedAssumption  # noqa: E402

from tests.test_properties import Composite, check, composites  # noqa: E402
from xla2tpu.catalogue.diagnostics import FixClass  # noqa: E402


def _save(out: Path, worker: int, number: int, composite: Composite, problem: str) -> None:
    """The input as a file, and as JSON (its chunks and settings) to run `check` on again."""
    stem = out / f"failure-{worker}-{number}"
    stem.with_suffix(".py").write_bytes(composite.data())
    fields = {
        "chunks": composite.chunks,
        "crlf": composite.crlf,
        "bom": composite.bom,
        "unsafe": FixClass.UNSAFE in composite.settings.apply,
        "target": composite.settings.target,
        "problem": problem,
    }
    stem.with_suffix(".json").write_text(json.dumps(fields, indent=1))


def _work(job: tuple[int, int, int, str]) -> tuple[int, int, int]:
    worker, count, base_seed, out = job
    counts = {"inputs": 0, "aside": 0, "failures": 0}

    @seed(base_seed + worker)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(composites())
    def run(composite: Composite) -> None:
        counts["inputs"] += 1
        try:
            check(composite)
        except UnsatisfiedAssumption:  # LibCST cannot reproduce the input: see check()
            counts["aside"] += 1
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and the run goes on
            counts["failures"] += 1
            _save(Path(out), worker, counts["failures"], composite, f"{type(exc).__name__}: {exc}")

    run()
    return counts["inputs"], counts["aside"], counts["failures"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    share = -(-args.inputs // args.workers)
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        totals = list(pool.map(_work, [(w, share, args.seed, str(args.out)) for w in range(args.workers)]))
    seconds = time.perf_counter() - started
    inputs, aside, failures = (sum(column) for column in zip(*totals))
    print(
        f"seed {args.seed}: {inputs} inputs, {aside} set aside (LibCST does not reproduce them), "
        f"{failures} failures, {seconds:.0f} s, {inputs / seconds:.1f} inputs/s"
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
