"""The walk's excludes: a bare name is decided by a set, everything else by pathspec, and the
two together must exclude exactly what pathspec alone does for the same lines."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
import pytest

from xla2tpu.sources.files import DEFAULT_EXCLUDE, Excluder, discover

_TREE = (
    "a.py", "build", "build.py", "dist/x.py", "src/build/y.py", "src/build.py", "src/keep/z.py", "src/keep.py",
    "src/.venv/lib.py", "src/venv", "legacy_one.py", "pkg/legacy_two/m.py", "pkg/deep/sub/build/n.py",
    "pkg/deep/sub/w.py", "notes/readme.txt",
)  # fmt: skip

_PATTERN_SETS = (
    list(DEFAULT_EXCLUDE),
    [*DEFAULT_EXCLUDE, "legacy_*"],
    ["build/"],
    ["build"],
    ["keep", "!keep"],
    ["sub/build", "venv"],
    ["src/", "*.txt"],
    ["**/deep", "build.py"],
    ["#build", "dist"],
)


def _pathspec_alone(root: Path, folder: Path, patterns: list[str]) -> list[str]:
    """What the walk found before bare names had a fast path: every entry matched against
    all the lines, by its path from the project root and by its name."""
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)

    def excluded(path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        return spec.match_file(path.relative_to(root).as_posix() + suffix) or spec.match_file(path.name + suffix)

    found = []
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(d for d in folders if not excluded(Path(current, d), True))
        found += [str(Path(current, f)) for f in sorted(files) if f.endswith(".py") and not excluded(Path(current, f), False)]
    return sorted(found)


@pytest.mark.parametrize("patterns", _PATTERN_SETS, ids=lambda p: ",".join(p)[:40])
@pytest.mark.parametrize("start", ["", "src/build", "pkg/deep"])
def test_bare_names_exclude_what_pathspec_does(tmp_path: Path, patterns: list[str], start: str) -> None:
    for name in _TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    folder = tmp_path / start if start else tmp_path
    walked = sorted(str(f.path) for f in discover([folder], Excluder(tmp_path, patterns)))
    assert walked == _pathspec_alone(tmp_path, folder, patterns)
