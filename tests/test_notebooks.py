"""Jupyter notebooks, through the CLI: cell-level findings, magics untouched, formatting kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


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
    before = json.loads(path.read_text())
    result = invoke("fix", "--no-cache", "colab_tpu.ipynb")
    assert result.exit_code == 1  # the setup lines are left for a human
    after_text = path.read_text()
    after = json.loads(after_text)
    code = [c for c in after["cells"] if c["cell_type"] == "code"]
    assert code[1]["source"] == ["import torch\n", "\n", "device = torch.device(\"tpu\")\n", "%time x = torch.ones(2).to(device)"]
    assert code[2]["source"] == ["for step in range(3):\n", "    x = x * 1\n", "!nvidia-smi\n", "x?\n", "files = !ls\n", "x + 1"]
    assert code[0]["source"] == before["cells"][1]["source"]  # shell and magic lines are never changed
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert after["metadata"] == before["metadata"] and list(after) == list(before)
    # Untouched parts keep their bytes: only the two changed sources differ, line for line.
    expected = (FIXTURES / "colab_tpu.ipynb").read_text()
    changed = [line for line in after_text.splitlines() if line not in expected.splitlines()]
    assert changed == ['    "device = torch.device(\\"tpu\\")\\n",']
    assert invoke("fix", "--no-cache", "colab_tpu.ipynb").stdout.startswith("colab_tpu.ipynb:cell 1:1:1: XLA090")
    assert path.read_text() == after_text  # a second fix changes nothing


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


def test_syntax_error_names_the_cell(invoke, tmp_path: Path) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}
             for src in ["import torch_xla\n", "x = (\n"]]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = invoke("check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert result.stdout.startswith("nb.ipynb: error: syntax error in cell 2 at ")


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
