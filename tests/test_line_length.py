"""The line length generated lines are wrapped to: read from the formatter and linter
configuration nearest each file (line_length.py), or `[tool.xla2tpu] line-length`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from xla2tpu.run import config as config_mod
from xla2tpu.cli import main
from xla2tpu.run.config import ConfigError
from xla2tpu.project.line_length import DEFAULT, LineLengths


def _length(folder: Path, files: dict[str, str]) -> tuple[int, list[str]]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    lengths = LineLengths()
    return lengths.of(str(folder / "pkg" / "module.py")), lengths.warnings


@pytest.mark.parametrize(("name", "text", "expected"), [
    (".ruff.toml", "line-length = 101\n", 101),
    ("ruff.toml", "line-length = 102\n", 102),
    ("pyproject.toml", "[tool.ruff]\nline-length = 119\n", 119),
    ("pyproject.toml", "[tool.black]\nline-length = 100\n", 100),
    ("pyproject.toml", "[tool.black]\nline_length = 99\n", 99),
    ("setup.cfg", "[flake8]\nmax-line-length = 120\n", 120),
    ("tox.ini", "[flake8]\nmax_line_length = 121\n", 121),
    (".flake8", "[flake8]\nmax-line-length = 79\n", 79),
    ("pyproject.toml", "[tool.ruff.lint]\nselect = ['E']\n[tool.isort]\nline_length = 120\n", DEFAULT),
    # yapf: its column limit, or its base style's (pytorch/xla's .style.yapf says 80)
    (".style.yapf", "[style]\nbased_on_style = google\ncolumn_limit=80\nindent_width=2\n", 80),
    (".style.yapf", "[style]\nbased_on_style = pep8\n", 79),
    (".style.yapf", "[style]\nbased_on_style = google\n", 80),
    ("setup.cfg", "[yapf]\ncolumn_limit = 100\n", 100),
    ("setup.cfg", "[metadata]\nname = x\n[yapf]\nbased_on_style = facebook\n", 80),
    ("pyproject.toml", "[tool.yapf]\ncolumn_limit = 110\n", 110),
    ("pyproject.toml", "[tool.yapf]\nbased_on_style = 'pep8'\n", 79),
    ("pyproject.toml", "[tool.yapf]\nindent_width = 4\n", DEFAULT),
])
def test_each_source(tmp_path: Path, name: str, text: str, expected: int) -> None:
    assert _length(tmp_path, {name: text}) == (expected, [])


def test_nothing_configured_is_black_and_ruffs_default(tmp_path: Path) -> None:
    assert _length(tmp_path, {}) == (DEFAULT, [])


def test_ruffs_own_files_come_first_then_black_then_flake8_then_yapf(tmp_path: Path) -> None:
    files = {
        ".ruff.toml": "line-length = 101\n",
        "ruff.toml": "line-length = 102\n",
        "pyproject.toml": "[tool.black]\nline-length = 100\n\n[tool.ruff]\nline-length = 119\n",
        "setup.cfg": "[flake8]\nmax-line-length = 120\n",
        "tox.ini": "[flake8]\nmax-line-length = 121\n",
        ".flake8": "[flake8]\nmax-line-length = 122\n",
        ".style.yapf": "[style]\ncolumn_limit = 123\n",
    }
    order = [(".ruff.toml", 101), ("ruff.toml", 102), ("pyproject.toml", 119), ("setup.cfg", 120), ("tox.ini", 121), (".flake8", 122),
             (".style.yapf", 123)]
    for name, expected in order:
        assert _length(tmp_path, files)[0] == expected
        (tmp_path / name).unlink()
        del files[name]


def test_the_nearest_folder_that_says_a_length_decides(tmp_path: Path) -> None:
    files = {"pyproject.toml": "[tool.ruff]\nline-length = 119\n", "pkg/setup.cfg": "[flake8]\nmax-line-length = 79\n"}
    assert _length(tmp_path, files)[0] == 79
    (tmp_path / "pkg" / "setup.cfg").write_text("[metadata]\nname = pkg\n", encoding="utf-8")
    assert _length(tmp_path, {})[0] == 119  # a file that says nothing about it does not stop the search


def test_a_folder_is_read_once_per_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n", encoding="utf-8")
    lengths = LineLengths()
    assert lengths.of(str(tmp_path / "a.py")) == 100
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 60\n", encoding="utf-8")
    assert lengths.of(str(tmp_path / "b.py")) == 100
    assert LineLengths().of(str(tmp_path / "b.py")) == 60


@pytest.mark.parametrize(("name", "text", "named"), [
    ("pyproject.toml", "[tool.ruff]\nline-length = 'wide'\n", "[tool.ruff] line-length must be a whole number"),
    ("pyproject.toml", "[tool.black]\nline-length = true\n", "[tool.black] line-length must be a whole number"),
    ("ruff.toml", "line-length = 0\n", "line-length must be a whole number from 1 to 320, not 0"),
    ("ruff.toml", "line-length = 120\n[broken\n", "cannot read its line length"),
    ("setup.cfg", "[flake8]\nmax-line-length = 120  # wide\n", "[flake8] max-line-length must be a whole number"),
    ("tox.ini", "[flake8\nmax-line-length = 120\n", "cannot read its line length"),
    (".style.yapf", "[style]\ncolumn_limit = eighty\n", "[style] column_limit must be a whole number"),
    ("pyproject.toml", "[tool.yapf]\ncolumn_limit = 0\n", "[tool.yapf] column_limit must be a whole number"),
])
def test_a_bad_value_is_a_warning_naming_the_file_and_the_search_goes_on(tmp_path: Path, name: str, text: str, named: str) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / name).write_text(text, encoding="utf-8")
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 110\n", encoding="utf-8")
    length, warnings = _length(tmp_path, {})
    assert length == 110
    assert len(warnings) == 1
    assert warnings[0].startswith(str(tmp_path / "pkg" / name)) and named in warnings[0]


def test_the_projects_own_setting_overrides_every_file(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.ruff]\nline-length = 119\n\n[tool.xla2tpu]\nline-length = 100\n", encoding="utf-8")
    assert config_mod.load(path).line_length == 100
    path.write_text("[tool.xla2tpu]\nline-length = 'long'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.xla2tpu\]: 'line-length' must be a whole number"):
        config_mod.load(path)


_LEGACY = "import torch_xla.runtime as xr\n\n\ndef world():\n    return xr.world_size()\n"


def _fix(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, str]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["fix", "--unsafe-fixes", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.stdout, result.stderr


def test_a_changed_line_length_is_not_served_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 119\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(_LEGACY, encoding="utf-8")
    wide, _ = _fix(tmp_path, monkeypatch, "--diff", ".")
    assert "    return torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1\n" in wide
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n", encoding="utf-8")
    narrow, _ = _fix(tmp_path, monkeypatch, "--diff", ".")
    assert "+    return (\n+        torch.distributed.get_world_size()\n+        if torch.distributed.is_initialized()\n" in narrow


def test_a_bad_foreign_setting_is_reported_once_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = '88'\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(_LEGACY, encoding="utf-8")
    (tmp_path / "eval.py").write_text(_LEGACY, encoding="utf-8")
    _, stderr = _fix(tmp_path, monkeypatch, "--no-cache", "--diff", ".")
    assert stderr.count("warning: ") == 1
    assert f"warning: {tmp_path / 'pyproject.toml'}: [tool.black] line-length must be a whole number" in stderr


def test_standard_input_takes_the_line_length_of_the_file_it_stands_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "narrow").mkdir()
    (tmp_path / "narrow" / "ruff.toml").write_text("line-length = 60\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--stdin-filename", "narrow/train.py", "-"], input=_LEGACY)
    assert "    return (\n        torch.distributed.get_world_size()\n" in result.stdout
