"""How `check` and `fix` grow with the size of one file: a linter's cost must grow with its
input, not its square (issue 35).

    .venv/bin/python bench/file_size.py [--sizes 1000 2000 4000 8000 16000] [--runs 3]

The file is N small functions, each with two sites (`xm.mark_step()` and
`t.to(xm.xla_device())`), as generated test files and code with hundreds of sites are. Each
size runs `python -m xla2tpu check --no-cache` and `fix --no-cache` (which writes the fixed
file; a fresh copy each run) in a process of its own, the median of `--runs`; the curve prints
each wall time and its ratio to the size before (2.0 is linear when the size doubles).
`fix --diff` adds the unified diff of the whole file, which `difflib` computes in more than
linear time when thousands of lines change; it is not what this measures.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def source(functions: int) -> str:
    head = "import torch\nimport torch_xla.core.xla_model as xm\n\n"
    body = "".join(f"\n\ndef step_{i}(t):\n    xm.mark_step()\n    return t.to(xm.xla_device())\n"
                   for i in range(functions))
    return head + body


def timed(command: list[str], cwd: Path, runs: int, text: str) -> float:
    times = []
    for _ in range(runs):
        (cwd / "generated.py").write_text(text)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = [sys.executable, "-P", "-m", "xla2tpu"]
    print(f"{'functions':>10} {'lines':>7} {'check s':>8} {'x':>5} {'fix s':>8} {'x':>5}")
    before: tuple[float, float] | None = None
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
            text = source(size)
            check = timed([*base, "check", "--no-cache", "generated.py"], root, args.runs, text)
            fix = timed([*base, "fix", "--no-cache", "generated.py"], root, args.runs, text)
        lines = text.count("\n")
        ratios = ("", "") if before is None else (f"{check / before[0]:.2f}", f"{fix / before[1]:.2f}")
        print(f"{size:>10} {lines:>7} {check:>8.2f} {ratios[0]:>5} {fix:>8.2f} {ratios[1]:>5}", flush=True)
        before = (check, fix)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
