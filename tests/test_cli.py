"""The command line, in-process (click's runner) and as a real subprocess."""

from __future__ import annotations

import subprocess
import json
from pathlib import Path

from tests.conftest import LEGACY, MIGRATED


def test_check_reports_each_idiom_with_lines_and_exits_1(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    result = invoke("check", "train.py")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "train.py:2:8: XLA001 [*]" in lines[0]
    assert any(line.startswith("train.py:4:10: XLA101 [*] ") for line in lines)
    assert any(line.startswith("train.py:7:5: XLA201 [*] ") for line in lines)
    assert any(line.startswith("train.py:8:54: XLA301 [*] ") for line in lines)
    assert "Found 4 findings." in lines
    assert (tmp_path / "train.py").read_text() == LEGACY  # check never writes


def test_check_clean_tree_exits_0(invoke, tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import torch\nprint(torch.ones(1))\n")
    result = invoke("check", ".")
    assert result.exit_code == 0
    assert "All checks passed!" in result.output


def test_fix_diff_prints_the_rewrite_and_writes_nothing(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    result = invoke("fix", "--diff", "train.py")
    assert result.exit_code == 1
    assert "-device = xm.xla_device()\n+device = torch.device(\"tpu\")\n" in result.stdout
    assert "--- a/train.py" in result.stdout
    assert (tmp_path / "train.py").read_text() == LEGACY


def test_fix_writes_then_second_run_changes_nothing(invoke, tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    first = invoke("fix", "train.py")
    assert first.exit_code == 0, first.output
    assert "Fixed 4 findings in 1 file." in first.output
    assert target.read_text() == MIGRATED
    mtime = target.stat().st_mtime_ns
    second = invoke("fix", "train.py")
    assert second.exit_code == 0
    assert "Fixed 0 findings in 0 files." in second.output
    assert target.stat().st_mtime_ns == mtime  # not even rewritten with the same bytes


def test_fix_reports_what_remains(invoke, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch_xla.core.xla_model as xm\nxm.wait_device_ops()\n")
    result = invoke("fix", "a.py")
    assert result.exit_code == 1
    assert "a.py:2:1: XLA202" in result.output
    assert "2 remaining" in result.output
    unsafe = invoke("fix", "--unsafe-fixes", "a.py")
    assert unsafe.exit_code == 0
    assert (tmp_path / "a.py").read_text() == "import torch\ntorch.accelerator.synchronize()\n"


def test_stdin_check_and_fix(invoke) -> None:
    check = invoke("check", "-", "--stdin-filename", "nb.py", input=LEGACY)
    assert check.exit_code == 1
    assert "nb.py:4:10: XLA101" in check.output
    fixed = invoke("fix", "-", input=LEGACY)
    assert fixed.stdout == MIGRATED


def test_select_ignore_and_target(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    only = invoke("check", "--select", "XLA2", "train.py")
    assert [line.split()[1] for line in only.output.splitlines() if line.startswith("train.py")] == ["XLA201"]
    ignored = invoke("check", "--ignore", "XLA0,XLA1,XLA3", "train.py")
    assert "XLA101" not in ignored.output and "XLA201" in ignored.output
    compile_target = invoke("check", "--target", "compile", "train.py")
    assert "step boundary" in compile_target.output


def test_unknown_code_is_a_usage_error(invoke, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    result = invoke("check", "--select", "XLA999", "a.py")
    assert result.exit_code == 2
    assert "unknown rule code or prefix 'XLA999'" in result.output


def test_rules_and_explain(invoke) -> None:
    rules = invoke("rules")
    assert rules.exit_code == 0
    assert any(line.startswith("XLA101  xla-device") for line in rules.output.splitlines())
    explain = invoke("explain", "xla101")
    assert explain.exit_code == 0
    assert "## Fix safety" in explain.output
    assert invoke("explain", "XLA999").exit_code == 2


def test_walks_folders_honouring_gitignore_and_excludes(invoke, tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("generated/\n")
    for folder in ("src", "generated", ".venv", "build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(LEGACY)
    (tmp_path / "src" / "notes.txt").write_text("torch_xla\n")
    result = invoke("check", ".")
    paths = {line.split(":")[0] for line in result.output.splitlines() if ".py:" in line}
    assert paths == {"src/m.py"}
    explicit = invoke("check", "generated/m.py")  # a file named on the command line is always read
    assert "generated/m.py:4:10: XLA101" in explicit.output


def test_real_subprocess(xla2tpu_exe: list[str], tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    check = subprocess.run([*xla2tpu_exe, "check", "train.py"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 1
    assert "train.py:4:10: XLA101 [*]" in check.stdout
    fix = subprocess.run([*xla2tpu_exe, "fix", "."], cwd=tmp_path, capture_output=True, text=True)
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert (tmp_path / "train.py").read_text() == MIGRATED
    version = subprocess.run([*xla2tpu_exe, "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("xla2tpu, version ")


def test_pool_and_serial_give_the_same_output(invoke, tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"m{i:02}.py").write_text(LEGACY if i % 2 else "x = 1\n")
    serial = invoke("check", "-j", "1", ".")
    pooled = invoke("check", "-j", "2", ".")
    assert serial.output == pooled.output
    assert serial.output.count("XLA101") == 20


_SPAWNED = (
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
    "def train(index, opt):\n"
    "    xm.optimizer_step(opt)\n\n\n"
    'if __name__ == "__main__":\n'
    "    xmp.spawn(train, args=(None,))\n"
)


def test_check_show_facts_prints_each_fact_with_its_line(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_SPAWNED)
    result = invoke("check", "--show-facts", "--show-reasons", "train.py")
    assert result.exit_code == 1
    assert "train.py: facts" in result.output
    assert "train.py:10: processes=spawn (starts its processes with a torch_xla launch, line 10 `xmp.spawn(train, args=(None,))`)" in result.output
    assert "hardware=unknown" in result.output and "spmd=no" in result.output
    # The finding the fact downgraded names it, with the launch line.
    finding = next(line for line in result.output.splitlines() if "XLA401" in line)
    assert "because processes=spawn" in finding and "line 10" in finding


def test_check_without_show_facts_prints_no_facts(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_SPAWNED)
    assert "facts" not in invoke("check", "train.py").output.split("XLA401")[0]


def test_json_output_carries_each_files_facts(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_SPAWNED)
    (tmp_path / "neuron.py").write_text("import torch_neuronx\nimport torch_xla.core.xla_model as xm\n\nxm.mark_step()\n")
    document = json.loads(invoke("check", "--output-format", "json", ".").output)
    files = {entry["filename"]: entry["facts"] for entry in document["files"]}
    assert files["train.py"]["processes"] == {
        "value": "spawn", "reason": "starts its processes with a torch_xla launch",
        "line": 10, "column": 5, "end_column": 35, "text": "xmp.spawn(train, args=(None,))",
    }
    assert files["neuron.py"]["hardware"]["value"] == "other" and files["neuron.py"]["hardware"]["line"] == 1
    # Other hardware: its one XLA100 finding and nothing else.
    assert [f["code"] for f in document["findings"] if f["filename"] == "neuron.py"] == ["XLA100"]


def test_facts_survive_the_cache(invoke, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_SPAWNED)
    first = invoke("check", "--show-facts", "train.py").output
    assert invoke("check", "--show-facts", "train.py").output == first
