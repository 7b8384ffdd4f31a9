"""The results cache: warm runs parse nothing, any change to an input misses, damage is harmless."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import LEGACY
from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.run.cache import Cache
from xla2tpu.run.config import Config
from xla2tpu.run.workflow import run, settings_for


def _run(root: Path, cache: Cache | None, unsafe: bool = False, target: str = "eager"):
    config = Config(root=root, target=target)
    catalogue = catalogue_mod.load()
    return run([root], config, catalogue, settings_for(config, catalogue, unsafe), jobs=1, cache=cache)


def _tree(root: Path) -> None:
    (root / "train.py").write_text(LEGACY)
    (root / "nb.ipynb").write_bytes((Path(__file__).resolve().parent.parent / "fixtures/notebooks/colab_tpu.ipynb").read_bytes())


def _view(outcome) -> list:
    return [(r.path, r.diagnostics, r.new_source, r.error) for r in outcome.results]


def test_warm_run_parses_nothing_and_gives_the_same_results(tmp_path: Path) -> None:
    _tree(tmp_path)
    cache = Cache(tmp_path / "cache")
    cold = _run(tmp_path, cache)
    assert cold.parsed == 2
    warm = _run(tmp_path, Cache(tmp_path / "cache"))
    assert warm.parsed == 0 and warm.files == cold.files
    assert _view(warm) == _view(cold)
    assert [type(d) for d in warm.results[0].diagnostics] == [type(d) for d in cold.results[0].diagnostics]


def test_content_and_settings_changes_miss(tmp_path: Path) -> None:
    _tree(tmp_path)
    _run(tmp_path, Cache(tmp_path / "cache"))
    assert _run(tmp_path, Cache(tmp_path / "cache"), unsafe=True).parsed == 2
    assert _run(tmp_path, Cache(tmp_path / "cache"), target="compile").parsed == 2
    (tmp_path / "train.py").write_text(LEGACY + "x = 1\n")
    assert _run(tmp_path, Cache(tmp_path / "cache")).parsed == 1


def test_corrupt_entries_are_ignored(tmp_path: Path) -> None:
    _tree(tmp_path)
    cold = _run(tmp_path, Cache(tmp_path / "cache"))
    for entry in (tmp_path / "cache").rglob("*"):
        if entry.is_file() and entry.name != ".gitignore":
            entry.write_bytes(b"\x00{not json")
    again = _run(tmp_path, Cache(tmp_path / "cache"))
    assert again.parsed == 2 and _view(again) == _view(cold)
    assert _run(tmp_path, Cache(tmp_path / "cache")).parsed == 0  # rewritten


def test_cli_default_dir_no_cache_and_config_key(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    first = invoke("check", ".")
    assert (tmp_path / ".xla2tpu_cache" / ".gitignore").read_text().endswith("*\n")
    assert invoke("check", ".").output == first.output
    assert invoke("check", "--no-cache", ".").output == first.output
    assert invoke("check", "--cache-dir", "elsewhere", ".").output == first.output
    assert (tmp_path / "elsewhere").is_dir()
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\ncache-dir = "build/xla2tpu"\n')
    assert invoke("check", ".").output == first.output
    assert (tmp_path / "build" / "xla2tpu").is_dir()
    (tmp_path / "pyproject.toml").write_text("[tool.xla2tpu]\ncache-dir = 3\n")
    assert invoke("check", ".").exit_code == 2


def test_fully_cached_run_never_imports_libcst(tmp_path: Path, xla2tpu_exe: list[str]) -> None:
    _tree(tmp_path)
    subprocess.run([*xla2tpu_exe, "check", "."], cwd=tmp_path, capture_output=True, check=False)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['xla2tpu', 'check', '.']\n"
        "try:\n    runpy.run_module('xla2tpu', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('libcst' in sys.modules, file=sys.stderr)\n"
    )
    warm = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert warm.stderr.strip().splitlines()[-1] == "False", warm.stderr
    assert "train.py:4:10: XLA101" in warm.stdout
