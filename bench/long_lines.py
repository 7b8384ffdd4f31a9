"""Generated lines longer than their project's line length, over the ecosystem corpus.

    .venv/bin/python bench/long_lines.py count --cache DIR --work WORK
    .venv/bin/python bench/long_lines.py run --cache DIR --base WORK --work NEW

Each repository's line length is what xla2tpu reads from the configuration files at its root
(pyproject.toml, setup.cfg, ... at the pinned commit; nested ones are not read). `count` reads
an ecosystem run's folder (WORK/src: the extracted sources, WORK/fixed: after `fix
--unsafe-fixes`, as bench/ecosystem.py leaves them) and counts, per repository, the lines of
the fixed files that the source file did not hold and that are wider than that length. The
corpus extraction has no configuration files (they would change the facts xla2tpu reads, the
Transformers pin among them), so `run` fixes a copy of BASE/src with each repository's length
given as `line-length` in a config file of its own at the copy's root, then counts; and checks
that the fix parses and that a second fix changes nothing.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from ecosystem_corpus import git_dir, load
from ecosystem_facts import code_of

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from xla2tpu.line_length import LineLengths  # noqa: E402
from xla2tpu.linesplit import width  # noqa: E402

CORPUS = REPO / "bench" / "ecosystem.toml"
CONFIGS = ("pyproject.toml", "ruff.toml", ".ruff.toml", "setup.cfg", "tox.ini", ".flake8")


def configured(gitdir: Path, commit: str) -> int:
    """The line length the repository's root configuration sets (88 when none does)."""
    with tempfile.TemporaryDirectory() as folder:
        for name in CONFIGS:
            shown = subprocess.run(["git", f"--git-dir={gitdir}", "show", f"{commit}:{name}"], capture_output=True, check=False)
            if shown.returncode == 0:
                (Path(folder) / name).write_bytes(shown.stdout)
        return LineLengths().of(str(Path(folder) / "x.py"))


def too_long(src: Path, fixed: Path, limit: int) -> list[tuple[str, str]]:
    """(file, line) of each line of a changed file that its source did not hold and that is
    wider than `limit`."""
    found = []
    for path in sorted(fixed.rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".ipynb"):
            continue
        name = path.relative_to(fixed).as_posix()
        before, after = (src / name).read_bytes(), path.read_bytes()
        if before == after:
            continue
        old, new = code_of(name, before) or "", code_of(name, after) or ""
        known = {line.strip() for line in old.splitlines()}
        found += [(name, line) for line in new.splitlines() if width(line) > limit and line.strip() not in known]
    return found


def _fix(root: Path, config: Path) -> None:
    subprocess.run([sys.executable, "-P", "-m", "xla2tpu", "fix", "--unsafe-fixes", "--no-cache", "--config", str(config), "."],
                   cwd=root, capture_output=True, check=False)


def _parses(root: Path) -> list[str]:
    """The Python files under `root` that do not parse, relative to it."""
    broken = []
    for path in root.rglob("*.py"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            broken.append(path.relative_to(root).as_posix())
    return broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("count", "run"))
    parser.add_argument("--cache", type=Path, required=True, help="folder holding the repositories' snapshots")
    parser.add_argument("--work", type=Path, required=True, help="an ecosystem run's folder (count) or a new one (run)")
    parser.add_argument("--base", type=Path, help="run: the ecosystem run whose src/ is fixed again")
    parser.add_argument("--show", action="store_true", help="print each long line")
    args = parser.parse_args()
    if args.command == "run" and args.base is None:
        parser.error("run needs --base")
    total = 0
    for repo in load(CORPUS):
        gitdir = git_dir(args.cache, repo)
        if gitdir is None:
            print(f"{repo.name}: no snapshot in {args.cache}", file=sys.stderr)
            continue
        limit = configured(gitdir, repo.commit)
        src = (args.base if args.command == "run" else args.work) / "src" / repo.slug
        fixed = args.work / "fixed" / repo.slug
        notes = ""
        if args.command == "run":
            shutil.rmtree(fixed, ignore_errors=True)
            shutil.copytree(src, fixed)
            config = fixed / "xla2tpu-line-length.toml"
            config.write_text(f"line-length = {limit}\n", encoding="utf-8")
            _fix(fixed, config)
            again = args.work / "again" / repo.slug
            shutil.rmtree(again, ignore_errors=True)
            shutil.copytree(fixed, again)
            _fix(again, config)
            unstable = [path.relative_to(again).as_posix() for path in again.rglob("*")
                        if path.is_file() and path.read_bytes() != (fixed / path.relative_to(again)).read_bytes()]
            config.unlink()
            (again / config.name).unlink()
            broken = set(_parses(fixed)) - set(_parses(src))
            notes = (f"  not idempotent: {unstable}" if unstable else "") + (f"  no longer parsing: {sorted(broken)}" if broken else "")
        found = too_long(src, fixed, limit)
        total += len(found)
        print(f"{repo.name}: line length {limit}: {len(found)} generated lines longer{notes}")
        for name, line in found if args.show else []:
            print(f"    {name}: {width(line)}: {line.strip()[:100]}")
    print(f"total: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
