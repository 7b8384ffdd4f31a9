"""The ecosystem check's own parts (bench/ecosystem*.py): corpus list, snapshot extraction,
file facts, figures and the comparison of two runs. The check itself needs the corpus
snapshots and is not run here; these make sure that what it reports is what happened."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.append(str(BENCH))  # after site-packages: bench module names must shadow nothing

from ecosystem_corpus import CorpusError, Repo, extract, git_dir, load  # noqa: E402
from ecosystem_facts import facts  # noqa: E402
from ecosystem_report import compare, figures  # noqa: E402


def test_the_pinned_corpus_is_valid_and_large_enough() -> None:
    corpus = load(BENCH / "ecosystem.toml")
    assert len(corpus) >= 15
    assert {r.kind for r in corpus} == {"tpu", "control"}


@pytest.mark.parametrize("body, error", [
    ('[[repo]]\nname = "a"\ncommit = "' + "0" * 40 + '"\nkind = "tpu"\npaths = ["."]\n', "owner/name"),
    ('[[repo]]\nname = "a/b"\ncommit = "abc"\nkind = "tpu"\npaths = ["."]\n', "40-hex"),
    ('[[repo]]\nname = "a/b"\ncommit = "' + "0" * 40 + '"\nkind = "gpu"\npaths = ["."]\n', "kind"),
    ('[[repo]]\nname = "a/b"\ncommit = "' + "0" * 40 + '"\nkind = "tpu"\npaths = []\n', "paths"),
    ('[[repo]]\nname = "a/b"\ncommit = "' + "0" * 40 + '"\nkind = "tpu"\npaths = ["."]\nbranch = "x"\n', "unknown keys"),
])
def test_a_bad_corpus_entry_is_named(tmp_path: Path, body: str, error: str) -> None:
    path = tmp_path / "corpus.toml"
    path.write_text(body)
    with pytest.raises(CorpusError, match=error):
        load(path)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}).stdout.strip()


# A src/ layout as in diffusers: src/ is no package, src/lib and below are.
_PACKAGE = {
    "src/lib/__init__.py": "from .models import unet\n",
    "src/lib/utils/__init__.py": "from .import_utils import is_torch_xla_available\n",
    "src/lib/utils/import_utils.py": "def is_torch_xla_available():\n    return True\n",
    "src/lib/models/__init__.py": "",
    "src/lib/models/unet.py": "class UNet: ...\n",
    "src/lib/pipelines/__init__.py": "",
    "src/lib/pipelines/pipeline_utils.py": "from ..models.unet import UNet\n",
    "src/lib/pipelines/schedulers/__init__.py": "from .ddim import DDIM\n",
    "src/lib/pipelines/schedulers/ddim.py": "class DDIM: ...\n",
    "src/lib/pipelines/other/__init__.py": "",
    "src/lib/pipelines/flux/__init__.py": "from .pipe import Pipe\n",
    "src/lib/pipelines/flux/pipe.py": (
        "from ...utils import is_torch_xla_available\n"
        "from ..pipeline_utils import DiffusionPipeline\n"
        "from .. import schedulers\n"
        "from .absent import nothing\n"
        "from ...... import above_the_root\n"
        "def f():\n    from ..models import x  # no such module: nothing to extract\n"
    ),
    "src/lib/pipelines/flux/broken.py": "from ..other import x\ndef (:\n",
    "src/lib/pipelines/flux/notebook.ipynb": json.dumps({"cells": [
        {"cell_type": "code", "source": "from ..other import x\n"}]}),
    "src/lib/pipelines/flux/data.json": "{}",
}


@pytest.fixture
def snapshot(tmp_path: Path) -> tuple[Path, str]:
    """A cache folder holding one bare snapshot, owner+name/repo, as the fetch tool lays it."""
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "train.py").write_text("import torch_xla.core.xla_model as xm\n")
    (work / "pkg" / "data.bin").write_bytes(b"\0" * 10)
    (work / "other.py").write_text("print(1)\n")
    for name, text in _PACKAGE.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "one")
    commit = _git(work, "rev-parse", "HEAD")
    cache = tmp_path / "cache"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(cache / "o+r" / "repo")], check=True)
    return cache, commit


def test_extract_reads_only_the_pinned_paths_sources(snapshot: tuple[Path, str], tmp_path: Path) -> None:
    cache, commit = snapshot
    repo = Repo("o/r", commit, "tpu", ("pkg", "missing"))
    gitdir = git_dir(cache, repo)
    assert gitdir is not None
    dest = tmp_path / "out"
    problems = extract(gitdir, repo, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == ["pkg/train.py"]
    assert problems == [f"path 'missing' is not in commit {commit[:12]}"]


def _extracted(snapshot: tuple[Path, str], tmp_path: Path, paths: tuple[str, ...]) -> list[str]:
    cache, commit = snapshot
    repo = Repo("o/r", commit, "tpu", paths)
    dest = tmp_path / "out" / str(len(list(tmp_path.glob("out/*"))))
    assert extract(git_dir(cache, repo), repo, dest) == []
    return sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())


def test_extract_keeps_the_package_structure_of_the_pinned_sources(snapshot: tuple[Path, str], tmp_path: Path) -> None:
    """The ancestors' __init__.py and what the relative imports of the pinned .py files name;
    not what those import in turn (utils/import_utils.py, models/unet.py, schedulers/ddim.py),
    nor what a file that does not parse or a notebook imports (pipelines/other)."""
    assert _extracted(snapshot, tmp_path, ("src/lib/pipelines/flux",)) == [
        "src/lib/__init__.py",
        "src/lib/pipelines/__init__.py",
        "src/lib/pipelines/flux/__init__.py",
        "src/lib/pipelines/flux/broken.py",
        "src/lib/pipelines/flux/notebook.ipynb",
        "src/lib/pipelines/flux/pipe.py",
        "src/lib/pipelines/pipeline_utils.py",  # from ..pipeline_utils import DiffusionPipeline
        "src/lib/pipelines/schedulers/__init__.py",  # from .. import schedulers
        "src/lib/utils/__init__.py",  # from ...utils import is_torch_xla_available
    ]


def test_a_pinned_file_brings_its_ancestors_and_imports_only(snapshot: tuple[Path, str], tmp_path: Path) -> None:
    assert _extracted(snapshot, tmp_path, ("src/lib/utils/__init__.py",)) == [
        "src/lib/__init__.py", "src/lib/utils/__init__.py", "src/lib/utils/import_utils.py"]
    assert _extracted(snapshot, tmp_path, ("src/lib/pipelines/pipeline_utils.py",)) == [
        "src/lib/__init__.py", "src/lib/models/__init__.py", "src/lib/models/unet.py",
        "src/lib/pipelines/__init__.py", "src/lib/pipelines/pipeline_utils.py"]


def test_a_commit_absent_from_the_snapshot_is_a_problem(snapshot: tuple[Path, str], tmp_path: Path) -> None:
    cache, _ = snapshot
    repo = Repo("o/r", "f" * 40, "tpu", ("pkg",))
    assert extract(git_dir(cache, repo), repo, tmp_path / "out") == [f"commit {'f' * 40} is not in the snapshot at {git_dir(cache, repo)}"]


def test_a_missing_snapshot_is_named_and_a_partial_run_not_recorded(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH / "ecosystem.py"), "run", "--cache", str(tmp_path),
                           "--work", str(tmp_path / "w"), "--only", "pytorch/xla"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert "missing: pytorch/xla has no snapshot in" in done.stderr
    refused = subprocess.run([sys.executable, str(BENCH / "ecosystem.py"), "run", "--cache", str(tmp_path),
                              "--only", "pytorch/xla", "--write"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--write records the whole corpus" in refused.stderr


def test_facts_of_a_program_and_of_a_notebook() -> None:
    program = facts("a.py", b'import torch\nfrom torch_xla.core import xla_model\nif __name__ == "__main__":\n    x = "tpu"\n')
    assert (program.parses, program.legacy_import, program.program, program.tpu_spellings) == (True, True, True, 1)
    inside = facts("b.py", b"def f():\n    try:\n        import optimum.tpu\n    except ImportError:\n        pass\n")
    assert inside.legacy_import and not inside.program
    notebook = json.dumps({"cells": [
        {"cell_type": "code", "source": ["!pip install torch_xla\n", "import torch_xla\n"]},
        {"cell_type": "code", "source": "%%bash\necho hi\n"},
        {"cell_type": "markdown", "source": "import torch_xla"},
    ]}).encode()
    cell = facts("n.ipynb", notebook)
    assert cell.parses and cell.legacy_import
    freed = facts("n.ipynb", notebook.replace(b"import torch_xla\\n", b"import torch\\n"))
    assert freed.parses and not freed.legacy_import
    broken = facts("c.py", b"import torch_xla\ndef (:\n")
    assert not broken.parses and broken.legacy_import


def _record(findings: list, changed: bool = True, sha: str = "1") -> dict:
    fact = {"lines": 3, "parses": True, "legacy_import": True, "program": True, "tpu_spellings": 0}
    return {"before": fact, "after": {**fact, "legacy_import": False, "tpu_spellings": 1}, "changed": changed,
            "output_sha": sha, "idempotent": True, "findings": findings, "promised_fixes": 1, "error": None}


def _run(files: dict) -> dict:
    step = {"crashed": None, "exit": 1, "wall": 1.0, "cpu": 1.0}
    return {"repos": [{"name": "o/r", "commit": "0" * 40, "kind": "tpu", "problems": [], "check": step, "fix": step,
                       "fix_again": step, "file_count": 5, "line_count": 50, "files": files}]}


def test_figures_count_what_the_files_say() -> None:
    run = _run({"a.py": _record([["XLA101", None, 1, 1, "safe", True], ["XLA601", None, 2, 1, "manual", False]])})
    f = figures(run["repos"][0])
    assert (f["files"], f["lines"], f["findings"], f["fixed"]) == (5, 50, 2, 1)
    assert (f["legacy_files"], f["legacy_files_freed"], f["legacy_programs"], f["programs_freed"]) == (1, 1, 1, 1)
    assert f["by_class"] == {"safe": 1, "unsafe": 0, "manual": 1} and f["tpu_introduced"] == 1


def test_compare_names_changed_outputs_and_moved_findings() -> None:
    old = _run({"a.py": _record([["XLA101", None, 1, 1, "safe", True]], sha="1")})
    new = _run({"a.py": _record([["XLA101", None, 1, 1, "manual", False]], sha="2")})
    assert compare(old, new) == ["o/r:a.py: output changed", "o/r:a.py: + XLA101 1:1 manual", "o/r:a.py: - XLA101 1:1 safe fixed"]
    assert compare(old, old) == []
