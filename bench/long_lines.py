"""Generated lines longer than their project's line length, over the ecosystem corpus.

    .venv/bin/python bench/long_lines.py --cache DIR --work WORK [--show]

Each repository's line length is what xla2tpu reads from the configuration files at its root
(pyproject.toml, setup.cfg, ... at the pinned commit; nested ones are not read), which the
corpus extraction hands on as a `.ruff.toml` of its own (bench/ecosystem_corpus.py). This
reads an ecosystem run's folder (WORK/src: the extracted sources, WORK/fixed: after `fix
--unsafe-fixes`, as bench/ecosystem.py leaves them) and counts, per repository, the lines of
the fixed files that the source file did not hold and that are wider than that length.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ecosystem_corpus import configured, git_dir, load
from ecosystem_facts import code_of

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from xla2tpu.project.line_length import DEFAULT  # noqa: E402
from xla2tpu.formatting.linesplit import width  # noqa: E402

CORPUS = REPO / "bench" / "ecosystem.toml"


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
        new = code_of(name, after) or ""
        lines = new.splitlines()
        found += [(name, lines[index]) for index in long_generated(code_of(name, before) or "", new, limit)]
    return found


def long_generated(old: str, new: str, limit: int) -> list[int]:
    """0-based numbers of the lines of `new` wider than `limit` that `old` did not hold
    (moved or re-indented, a line of the user's is still the user's)."""
    known = {line.strip() for line in old.splitlines()}
    return [index for index, line in enumerate(new.splitlines()) if width(line) > limit and line.strip() not in known]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True, help="folder holding the repositories' snapshots")
    parser.add_argument("--work", type=Path, required=True, help="an ecosystem run's folder")
    parser.add_argument("--show", action="store_true", help="print each long line")
    args = parser.parse_args()
    total = 0
    for repo in load(CORPUS):
        gitdir = git_dir(args.cache, repo)
        if gitdir is None:
            print(f"{repo.name}: no snapshot in {args.cache}", file=sys.stderr)
            continue
        limit = configured(gitdir, repo.commit) or DEFAULT
        found = too_long(args.work / "src" / repo.slug, args.work / "fixed" / repo.slug, limit)
        total += len(found)
        print(f"{repo.name}: line length {limit}: {len(found)} generated lines longer")
        for name, line in found if args.show else []:
            print(f"    {name}: {width(line)}: {line.strip()[:100]}")
    print(f"total: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
