"""What the project model (xla2tpu/project/model.py) costs: its share of a cold `check` of a
5,000-file tree (budget 15%), and a warm pre-commit-sized run (budget 0.2 s), issue 14.

    .venv/bin/python bench/project_share.py [--files 5000] [--tree PATH ...] [--repeat 3]

On the synthetic tree (bench/synthetic.py, with a `pyproject.toml` at its root so it is a
project) and on each `--tree`:
- cold check: `xla2tpu check --no-cache TREE` as users run it (all cores), best wall of N;
- model: in this process, cold (no stored summaries), what the run does for the model
  beyond walking, reading and prefiltering the files (which it does anyway): summarise
  every module, link them, parse those that can matter, and compute each file's context.
  It runs in the main process ahead of the pool, so its wall adds to the check's one for
  one; share = model / cold check;
- warm pre-commit: with the cache primed by a whole-tree check, `xla2tpu check` of the
  first three files that carry idioms, best wall of N.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import run_once  # noqa: E402
from synthetic import generate  # noqa: E402

from xla2tpu.catalogue import rules as catalogue  # noqa: E402
from xla2tpu.sources.files import Excluder, discover  # noqa: E402
from xla2tpu.sources.prefilter import may_hold_idiom  # noqa: E402
from xla2tpu.run.workflow import load_project  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _model_seconds(tree: Path, repeat: int) -> tuple[float, int]:
    """The model's own work in a cold whole-tree run: the run has walked, read and
    prefiltered every file already (not timed here), the model links them, parses the
    ones that can matter, and gives each file its context."""
    cat = catalogue.load()
    excluder = Excluder(tree, [])
    listed = [os.path.abspath(found.path) for found in discover([tree], excluder, (".py",))]
    files = {path: Path(path).read_bytes() for path in listed}
    prefiltered = {path: may_hold_idiom(data) for path, data in files.items()}
    best = float("inf")
    modules = 0
    for _ in range(repeat):
        start = time.perf_counter()
        model = load_project(tree, excluder, cat, None, files, prefiltered=prefiltered, listed=listed)
        for path in model.modules:
            model.context(path)
        best = min(best, time.perf_counter() - start)
        modules = len(model.modules)
    return best, modules


# As installed: Python keeps the bytecode of xla2tpu's modules (a sandbox that sets
# PYTHONDONTWRITEBYTECODE would time their compilation on every run).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(argv: list[str], cwd: Path, repeat: int) -> float:
    return min(run_once(argv, cwd, env=_ENV).wall for _ in range(repeat))


def measure(tree: Path, repeat: int) -> list[str]:
    command = [sys.executable, "-m", "xla2tpu", "check", "--exit-zero"]
    cold = _wall([*command, "--no-cache", "."], tree, repeat)
    model, modules = _model_seconds(tree, repeat)
    cache = tree / ".xla2tpu_cache"
    run_once([*command, "."], tree, env=_ENV)  # primes the cache (and the bytecode)
    staged = [str(p.relative_to(tree)) for p in sorted(tree.rglob("*.py")) if may_hold_idiom(p.read_bytes())][:3]
    warm = _wall([*command, *staged], tree, repeat)
    if cache.exists():
        import shutil

        shutil.rmtree(cache)
    return [
        f"{tree}: {modules} modules",
        f"  cold check {cold:.3f} s; model {model:.3f} s = {100 * model / cold:.1f}% of it (budget 15%)",
        f"  warm pre-commit run of {len(staged)} files: {warm:.3f} s (budget 0.2 s)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="synthetic tree size (0: none)")
    parser.add_argument("--tree", type=Path, action="append", default=[], help="a real project to add (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/xla2tpu-bench-project"))
    args = parser.parse_args()
    trees = list(args.tree)
    if args.files:
        tree = generate(args.workdir / f"synthetic-{args.files}", args.files, 0.02, ROOT)
        (tree / "pyproject.toml").touch()
        trees.insert(0, tree)
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    for tree in trees:
        print("\n".join(measure(tree.resolve(), args.repeat)), flush=True)


if __name__ == "__main__":
    main()
