"""Multi-module fixtures: findings and fixes whose reason lies in another module (project/model.py).

Each `fixtures/projects/<case>/` holds `before/` (a small project of our own, with its
`pyproject.toml`), and for each mode (`safe`: `xla2tpu fix`; `unsafe`: `--unsafe-fixes`) the
findings in `expected-<mode>` and the files the fix changes in `after-<mode>/` (a file not
there must come out unchanged). Every case also checks what users rely on when they run us
on part of a project: a run naming one file (pre-commit) gives that file the findings of the
whole-tree run, warm from the cache too; the shards of `--shard` add up to the whole run;
`--stdin-filename` gives the file's findings; and a second fix changes nothing.
Set XLA2TPU_UPDATE_FIXTURES=1 to rewrite the expectations, then review the diff.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fixture_cases import FIXTURES, check_snapshots
from xla2tpu.cli import main

PROJECTS = FIXTURES / "projects"
CASES = sorted(path.parent.name for path in PROJECTS.glob("*/before"))
MODES = {"safe": [], "unsafe": ["--unsafe-fixes"]}


def _invoke(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str, input: bytes | None = None) -> str:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _findings(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str, input: bytes | None = None) -> list[str]:
    """`check` over `args`, one line per finding: path:line:col: CODE [*] (fix) message."""
    output = _invoke(root, monkeypatch, "check", "--output-format", "json", *args, input=input)
    lines = []
    for item in json.loads(output)["findings"]:
        fix = item["fix"]
        applied = "[*] " if fix["applied"] else ""
        where = f"{Path(item['filename']).as_posix()}:{item['location']['row']}:{item['location']['column']}"
        lines.append(f"{where}: {item['code']} {applied}({fix['applicability']}) {item['message']}")
    return sorted(lines)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def _copy(case: str, tmp_path: Path) -> Path:
    root = tmp_path / case
    shutil.copytree(PROJECTS / case / "before", root)
    return root


def _of(findings: list[str], path: str) -> list[str]:
    return [line for line in findings if line.startswith(path + ":")]


def test_there_are_project_cases() -> None:
    assert len(CASES) >= 5


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_project_findings_and_fix(case: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(case, tmp_path)
    flags = MODES[mode]
    before = _tree(root)
    findings = _findings(root, monkeypatch, "--no-cache", *flags, ".")
    _invoke(root, monkeypatch, "fix", "--no-cache", *flags, ".")
    after = _tree(root)
    for path, data in after.items():
        compile(data, path, "exec")  # every output parses
    changed = {path: data for path, data in after.items() if before[path] != data}
    stored = PROJECTS / case / f"after-{mode}"
    recorded = {p.relative_to(stored).as_posix() for p in stored.rglob("*.py")} if stored.exists() else set()
    snapshots: dict[Path, str | bytes | None] = {PROJECTS / case / f"expected-{mode}": "".join(f"{line}\n" for line in findings)}
    snapshots.update({stored / path: changed.get(path) for path in sorted(recorded | set(changed))})
    check_snapshots(snapshots)
    _invoke(root, monkeypatch, "fix", "--no-cache", *flags, ".")
    assert _tree(root) == after, "a second fix changed the project again"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_a_run_over_part_of_the_project_sees_the_whole(case: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pre-commit names a few files, CI may shard, an editor pipes one file: each gives a
    file the findings the whole-tree run gives it, cold and warm."""
    root = _copy(case, tmp_path)
    flags = MODES[mode]
    whole = _findings(root, monkeypatch, "--no-cache", *flags, ".")
    _findings(root, monkeypatch, *flags, ".")  # fills the cache
    for path in _tree(root):
        assert _findings(root, monkeypatch, "--no-cache", *flags, path) == _of(whole, path), f"{path} alone, cold"
        assert _findings(root, monkeypatch, *flags, path) == _of(whole, path), f"{path} alone, warm"
        stdin = _findings(root, monkeypatch, "--no-cache", *flags, "--stdin-filename", path, "-", input=(root / path).read_bytes())
        assert stdin == _of(whole, path), f"{path} through stdin"
    shards = [_findings(root, monkeypatch, "--no-cache", *flags, "--shard", f"{k}/3", ".") for k in (1, 2, 3)]
    assert sorted(line for shard in shards for line in shard) == whole


def test_an_edit_in_another_module_reaches_a_cached_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keys a result by what the project says of the file: when the launcher that
    spawns a library's workers goes away, the library's cached verdict goes with it."""
    root = _copy("spawned_library", tmp_path)
    spawned = _findings(root, monkeypatch, "train_lib/optim.py")
    assert any("processes=spawn" in line for line in spawned)
    (root / "launch.py").write_text("print('no launch any more')\n", encoding="utf-8")
    alone = _findings(root, monkeypatch, "train_lib/optim.py")
    assert alone != spawned
    assert not any("processes=spawn" in line for line in alone)


def test_a_warm_run_sees_the_modules_added_and_ignored_since(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project listing is cached: a launcher added in a new folder, then that folder
    ignored, change what a staged run of a library module says."""
    root = _copy("spawned_library", tmp_path)
    launcher = (root / "launch.py").read_text(encoding="utf-8")
    (root / "launch.py").unlink()
    assert not any("processes=spawn" in line for line in _findings(root, monkeypatch, "."))
    (root / "tools").mkdir()
    (root / "tools" / "run.py").write_text(launcher, encoding="utf-8")
    assert any("processes=spawn" in line for line in _findings(root, monkeypatch, "train_lib/optim.py"))
    (root / ".gitignore").write_text("tools/\n", encoding="utf-8")
    assert not any("processes=spawn" in line for line in _findings(root, monkeypatch, "train_lib/optim.py"))


def test_without_a_marker_the_root_is_what_holds_the_named_files_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model walks its whole root: a run from a big folder without a project marker
    ($HOME, /tmp) on one script there must not walk everything under the folder run in."""
    from xla2tpu.project.model import find_root

    for folder in ("scripts", "lib/pkg/sub", "unrelated"):
        (tmp_path / folder).mkdir(parents=True)
    for package in ("lib/pkg", "lib/pkg/sub"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "scripts" / "train.py").write_text("import torch_xla\n")
    monkeypatch.chdir(tmp_path)
    assert find_root([Path("scripts/train.py")]) == tmp_path / "scripts"
    assert find_root([Path("scripts")]) == tmp_path / "scripts"
    assert find_root([Path("lib/pkg/sub/__init__.py")]) == tmp_path / "lib"
    assert find_root([Path("lib/pkg")]) == tmp_path / "lib"
    assert find_root([Path(".")]) == tmp_path
    (tmp_path / "pyproject.toml").write_text("")
    assert find_root([Path("scripts/train.py")]) == tmp_path
