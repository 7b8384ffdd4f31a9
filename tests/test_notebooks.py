"""Jupyter notebooks: every fixture's findings and fixed bytes, then the CLI (cell-level
positions, cells that do not parse, magics untouched, formatting kept, the cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixture_cases import check_snapshots
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine, notebook
from xla2tpu.catalogue.diagnostics import FileResult, FixClass
from xla2tpu.catalogue.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
CASES = sorted(p for p in FIXTURES.glob("*.ipynb") if not p.name.endswith(".fixed.ipynb"))
SETTINGS = Settings(catalogue.load().select(["ALL"], []), frozenset({FixClass.SAFE}), "eager")


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


def _render(result: FileResult) -> str:
    lines = [f"cell {d.cell}:{d.line}:{d.col}: {d.code} {'[*] ' if d.fixed else ''}({d.fix.value}) {d.message}"
             for d in result.diagnostics]
    return "".join(line + "\n" for line in [*lines, *([f"error: {result.error}"] if result.error else [])])


def _without_sources(document: dict) -> dict:
    return {**document, "cells": [{k: v for k, v in cell.items() if k != "source"} for cell in document["cells"]]}


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture(case: Path) -> None:
    """`<name>.ipynb` in, `<name>.fixed.ipynb` out (none: unchanged), findings and per-cell
    errors in `<name>.expected` (XLA2TPU_UPDATE_FIXTURES=1 rewrites them for review)."""
    data = case.read_bytes()
    result = notebook.process_notebook(case.name, data, SETTINGS)
    assert not result.internal_error, result.error
    output = result.new_source if result.new_source is not None else data
    before, after = json.loads(data), json.loads(output)
    assert _without_sources(after) == _without_sources(before)  # only sources change
    again = notebook.process_notebook(case.name, output, SETTINGS)
    assert again.new_source is None, "a second fix changed the notebook again"
    assert again.error == result.error
    fixed = case.with_name(case.stem + ".fixed.ipynb")
    check_snapshots({case.with_suffix(".expected"): _render(result), fixed: output if output != data else None})


def test_findings_name_the_cell_and_line(invoke, tmp_path: Path) -> None:
    _copy(tmp_path, "colab_tpu.ipynb")
    lines = invoke("check", "--no-cache", ".").stdout.splitlines()
    assert any(line.startswith("colab_tpu.ipynb:cell 2:4:10: XLA101 [*] ") for line in lines)
    assert any(line.startswith("colab_tpu.ipynb:cell 3:3:5: XLA201 [*] ") for line in lines)
    setup = [line for line in lines if " XLA090 " in line]
    assert [line.split(" XLA090")[0] for line in setup] == ["colab_tpu.ipynb:cell 1:1:1:", "colab_tpu.ipynb:cell 1:2:1:"]
    assert all("pip install torch-tpu --extra-index-url https://download.pytorch.org/whl/cpu" in line for line in setup)
    assert not any("cell 4" in line for line in lines)  # a %%bash cell is not Python


def test_fix_keeps_outputs_metadata_magics_and_layout(invoke, tmp_path: Path) -> None:
    path = _copy(tmp_path, "colab_tpu.ipynb")
    result = invoke("fix", "--no-cache", "colab_tpu.ipynb")
    assert result.exit_code == 1  # the setup lines are left for a human
    after_text = path.read_text()
    # Untouched parts keep their bytes: only the two changed sources differ, line for line.
    expected = (FIXTURES / "colab_tpu.ipynb").read_text()
    changed = [line for line in after_text.splitlines() if line not in expected.splitlines()]
    assert changed == ['    "device = torch.device(\\"tpu\\")\\n",']
    assert invoke("fix", "--no-cache", "colab_tpu.ipynb").stdout.startswith("colab_tpu.ipynb:cell 1:1:1: XLA090")
    assert path.read_text() == after_text  # a second fix changes nothing


def test_a_cell_that_does_not_parse_is_reported_and_the_others_are_fixed(invoke, tmp_path: Path) -> None:
    path = _copy(tmp_path, "broken_cell.ipynb")
    result = invoke("fix", "--no-cache", "--output-format", "concise", "broken_cell.ipynb")
    assert result.exit_code == 1
    assert ("broken_cell.ipynb: error: cell 1 not checked: syntax error at 2:14: '(' was never closed;"
            " cell 3 not checked: syntax error at 3:6: unexpected indent;"
            " cell 5 not checked: syntax error at 1:5: invalid syntax"
            " (a shell command? start the cell with %%bash, or the line with !)") in result.stdout.splitlines()
    assert path.read_bytes() == (FIXTURES / "broken_cell.fixed.ipynb").read_bytes()
    again = invoke("fix", "--no-cache", "--output-format", "concise", "broken_cell.ipynb")
    assert again.exit_code == 1 and "cell 1 not checked" in again.stdout
    assert path.read_bytes() == (FIXTURES / "broken_cell.fixed.ipynb").read_bytes()


def test_a_cell_problem_goes_through_the_cache_and_the_reports(invoke, tmp_path: Path) -> None:
    _copy(tmp_path, "broken_cell.ipynb")
    cold = invoke("check", "--output-format", "json", ".")
    warm = invoke("check", "--output-format", "json", ".")
    assert warm.stdout == cold.stdout and warm.exit_code == cold.exit_code == 1
    document = json.loads(cold.stdout)
    assert [e["message"].split(":")[0] for e in document["errors"]] == ["cell 1 not checked"]
    assert {f["cell"] for f in document["findings"]} == {2, 4, 5}  # 5: its setup line
    assert invoke("fix", "--report", "migration.md", ".").exit_code == 1
    report = (tmp_path / "migration.md").read_text()
    assert "**Could not be processed:** cell 1 not checked: syntax error at 2:14" in report
    assert "| cell 2:3:10 | XLA101 `xla-device` |" in report  # what the other cells had is still listed


def test_a_cell_only_libcst_rejects_is_left_out_like_the_others(invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CPython and LibCST rarely disagree (newer syntax on a newer Python): stand in for one
    # by letting CPython's check pass everything.
    monkeypatch.setattr(notebook, "syntax_error", lambda text: None)
    _copy(tmp_path, "broken_cell.ipynb")
    result = invoke("fix", "--no-cache", "--output-format", "concise", "broken_cell.ipynb")
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "cell 1 not checked: syntax error at " in errors[0] and "cell 3 not checked" in errors[0]
    assert (tmp_path / "broken_cell.ipynb").read_bytes() == (FIXTURES / "broken_cell.fixed.ipynb").read_bytes()


def test_a_magic_line_moves_with_its_block(invoke, tmp_path: Path) -> None:
    source = ("import torch\nimport torch_xla\nfor step in range(2):\n    with torch_xla.step():\n"
              "        x = torch.ones(2)\n        !echo step \\\n              done\n        %time y = x * 2\n")
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert invoke("fix", "--no-cache", "--unsafe-fixes", "nb.ipynb").exit_code == 0
    after = json.loads(path.read_text())["cells"][0]["source"]
    assert after == ("import torch\nfor step in range(2):\n    x = torch.ones(2)\n    !echo step \\\n              done\n"
                     "    %time y = x * 2\n")


@pytest.mark.parametrize("lost", ["__xla2tpu_kept_1__", "__xla2tpu_magic_0__", "__xla2tpu_cell_2__"])
def test_a_fix_that_loses_a_marker_is_not_written(invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost: str) -> None:
    real = engine.process_source

    def losing(path: str, data: bytes, settings: Settings) -> FileResult:
        result = real(path, data, settings)
        assert result.new_source is not None
        lines = result.new_source.decode().splitlines(keepends=True)
        result.new_source = "".join(line for line in lines if not line.startswith(lost)).encode()
        return result

    monkeypatch.setattr(engine, "process_source", losing)
    path = _copy(tmp_path, "broken_cell.ipynb")
    path.write_text(path.read_text().replace('"model = make_model().to(device)"', '"!nvidia-smi"'))
    data = path.read_bytes()
    result = invoke("fix", "--no-cache", "--output-format", "concise", "broken_cell.ipynb")
    assert result.exit_code == 1 and path.read_bytes() == data
    assert "the fixes could not be mapped back to the cells, so the fixes were not written" in result.stdout
    assert " [*] " not in result.stdout


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("x = " + "(" * 5000 + ")" * 5000 + "\n", "syntax error at 1:205: too many nested parentheses"),
        ("x = " + "-" * 100_000 + "1\n", "cannot parse: "),
        ("x = '\ud800'\n", "cannot parse: 'utf-8' codec can't encode character '\\ud800'"),
        ("x = '\x00'\n", "cannot parse: source code string cannot contain null bytes"),
    ],
    ids=["deep-brackets", "deep-unary", "lone-surrogate", "nul"],
)
def test_a_hostile_cell_is_one_problem_and_the_rest_is_fixed(invoke, tmp_path: Path, source: str, problem: str) -> None:
    sources = ["import torch_xla.core.xla_model as xm\n", source, "device = xm.xla_device()\n"]
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s} for s in sources]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = invoke("fix", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert result.exit_code == 1
    assert f"nb.ipynb: error: cell 2 not checked: {problem}" in result.stdout
    after = [cell["source"] for cell in json.loads(path.read_text())["cells"]]
    assert after == ["import torch\n", source, 'device = torch.device("tpu")\n']


def test_notebook_with_nothing_to_change_round_trips_byte_identically(invoke, tmp_path: Path) -> None:
    path = _copy(tmp_path, "clean.ipynb")  # 2-space indent, Colab key order, no final newline, non-ASCII
    data = path.read_bytes()
    result = invoke("fix", "--no-cache", "clean.ipynb")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == data


def test_string_sources_and_other_indents_are_kept(invoke, tmp_path: Path) -> None:
    notebook = {
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": [{"cell_type": "code", "id": "x", "metadata": {}, "outputs": [], "execution_count": None,
                   "source": "import torch_xla.core.xla_model as xm\nxm.mark_step()\n!ls"}],
    }
    text = json.dumps(notebook, indent=4)
    (tmp_path / "s.ipynb").write_text(text)
    assert invoke("fix", "--no-cache", "s.ipynb").exit_code == 0
    notebook["cells"][0]["source"] = "!ls"
    assert (tmp_path / "s.ipynb").read_text() == json.dumps(notebook, indent=4)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"cells": [', "nb.ipynb: error: invalid notebook JSON: Expecting value at line 1 column 12"),
        ('{"worksheets": []}', "nb.ipynb: error: not a Jupyter notebook (nbformat 4): no `cells` list"),
    ],
)
def test_unreadable_notebooks_are_one_line_errors(invoke, tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "nb.ipynb").write_text(content)
    result = invoke("check", "--no-cache", "--output-format", "concise", ".")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [message]


def test_non_python_notebook_is_skipped(invoke, tmp_path: Path) -> None:
    # R through reticulate: it names torch_xla (so the prefilter lets it through) and is
    # not Python (`<-`, `$`), so only the kernel check keeps it from a syntax error.
    source = 'library(reticulate)\nxm <- import("torch_xla.core.xla_model")\ndevice <- xm$xla_device()\n'
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}]
    meta = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    path = tmp_path / "r.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))
    data = path.read_bytes()
    for command in ("check", "fix"):
        result = invoke(command, "--no-cache", ".")
        assert result.exit_code == 0 and "r.ipynb" not in result.output, result.output
    assert path.read_bytes() == data
