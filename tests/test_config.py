"""[tool.xla2tpu]: keys, validation, precedence of command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LEGACY
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run.config import ConfigError, from_table


def _codes(output: str) -> list[str]:
    return [line.split()[1] for line in output.splitlines() if ".py:" in line]


def test_select_and_ignore_from_pyproject(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\nselect = ["XLA1", "XLA2"]\nignore = ["XLA201"]\n')
    (tmp_path / "a.py").write_text(LEGACY)
    assert _codes(invoke("check", "a.py").output) == ["XLA101"]


def test_cli_flags_override_config(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\nselect = ["XLA1"]\ntarget = "compile"\n')
    (tmp_path / "a.py").write_text(LEGACY)
    result = invoke("check", "--select", "XLA2", "--target", "eager", "a.py")
    assert _codes(result.output) == ["XLA201"]
    assert "step boundary" not in result.output
    assert "step boundary" in invoke("check", "--select", "XLA2", "a.py").output


def test_extend_select_exclude_and_per_file_ignores(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.xla2tpu]\nselect = ["XLA1"]\nextend-select = ["XLA3"]\n'
        'extend-exclude = ["legacy_*"]\n[tool.xla2tpu.per-file-ignores]\n"tests/*" = ["XLA101"]\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(LEGACY)
    (tmp_path / "legacy_x.py").write_text(LEGACY)
    (tmp_path / "a.py").write_text(LEGACY)
    output = invoke("check", ".").output
    assert "legacy_x.py" not in output
    assert "a.py:4:10: XLA101" in output and "a.py:8:54: XLA301" in output
    assert "tests/t.py:4" not in output and "tests/t.py:8:54: XLA301" in output


def test_config_from_a_parent_folder_and_explicit_config(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\nselect = ["XLA2"]\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text(LEGACY)
    assert _codes(invoke("check", "sub/a.py").output) == ["XLA201"]
    (tmp_path / "other.toml").write_text('select = ["XLA3"]\n')
    assert _codes(invoke("check", "--config", "other.toml", "sub/a.py").output) == ["XLA301"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"selct": ["XLA1"]}, "unknown key 'selct'"),
        ({"select": "XLA1"}, "'select' must be a list of strings"),
        ({"target": "lazy"}, "'target' must be one of eager, compile"),
        ({"per-file-ignores": {"x": "XLA1"}}, "'per-file-ignores' must map"),
    ],
)
def test_bad_values_are_named(table: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_table(table, Path("/p/pyproject.toml"))


def test_unknown_code_in_config(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\nignore = ["XLA9999"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = invoke("check", "a.py")
    assert result.exit_code == 2
    assert "pyproject.toml: unknown rule code or prefix 'XLA9999'" in result.output


def test_config_wrong_type_exits_2(invoke, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.xla2tpu]\ntarget = 3\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = invoke("check", "a.py")
    assert result.exit_code == 2 and "'target' must be one of" in result.output


def test_default_selects_every_rule() -> None:
    cat = catalogue.load()
    assert from_table({}, Path("/p/pyproject.toml")).selected(cat) == frozenset(cat.by_code)
