"""The GitHub Action (action.yml): its step runs scripts/action.py, run here as the action
runs it, with an interpreter that already has xla2tpu instead of a fresh install."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "action.py"

spec = importlib.util.spec_from_file_location("action_script", SCRIPT)
action = importlib.util.module_from_spec(spec)
spec.loader.exec_module(action)


def test_action_yml_runs_the_script_with_its_inputs() -> None:
    meta = yaml.safe_load((ROOT / "action.yml").read_text())
    assert meta["runs"]["using"] == "composite"
    assert set(meta["inputs"]) == {"args", "summary"}
    (step,) = meta["runs"]["steps"]
    assert step["env"] == {"INPUT_ARGS": "${{ inputs.args }}", "INPUT_SUMMARY": "${{ inputs.summary }}",
                           "ACTION_PATH": "${{ github.action_path }}"}
    assert step["run"] == 'python3 "$ACTION_PATH/scripts/action.py"'


def _run(tmp_path: Path, args: str, summary: str = "true") -> tuple[subprocess.CompletedProcess, Path]:
    project = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", project / "examples")
    job_summary = tmp_path / "summary.md"
    env = {**os.environ, "INPUT_ARGS": args, "INPUT_SUMMARY": summary, "ACTION_PATH": str(ROOT),
           "XLA2TPU_PYTHON": sys.executable, "GITHUB_STEP_SUMMARY": str(job_summary), "RUNNER_TEMP": str(tmp_path)}
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    return done, job_summary


def test_check_annotates_and_puts_the_plan_in_the_summary(tmp_path: Path) -> None:
    done, summary = _run(tmp_path, "check examples")
    assert done.returncode == 1, done.stderr  # findings remain: the check's own exit code
    assert "::error title=xla2tpu (XLA201),file=examples/legacy_train.py" in done.stdout
    plan = summary.read_text()
    assert plan.startswith("# torch_xla → TorchTPU migration report")
    assert "_Dry run (`--diff`)" in plan
    assert "legacy_train.py" not in done.stderr  # the dry run's findings are not printed twice


def test_fix_diff_keeps_its_output_and_adds_the_plan(tmp_path: Path) -> None:
    done, summary = _run(tmp_path, "fix --diff --unsafe-fixes examples")
    assert done.returncode == 1
    assert "-        xm.mark_step()" in done.stdout
    assert "migration report" in summary.read_text()
    assert (tmp_path / "repo" / "examples" / "legacy_train.py").read_text() == (ROOT / "examples" / "legacy_train.py").read_text()


def test_summary_off_writes_none(tmp_path: Path) -> None:
    done, summary = _run(tmp_path, "check --output-format concise examples", summary="false")
    assert done.returncode == 1 and "::error" not in done.stdout
    assert not summary.exists()


@pytest.mark.parametrize(("args", "expected"), [
    (["check", "--output-file", "out.sarif", "--output-format=sarif", "--show-facts", "src"],
     [(["check", "--output-file", "out.sarif", "--output-format=sarif", "--show-facts", "src"], True),
      (["fix", "--diff", "--exit-zero", "--report", "P", "src"], False)]),
    (["fix", "--unsafe-fixes", "."], [(["fix", "--report", "P", "--unsafe-fixes", "."], True)]),
    (["fix", "--report", "m.html", "."], [(["fix", "--report", "m.html", "."], True)]),
    (["rules"], [(["rules"], True)]),
])
def test_commands(args: list[str], expected: list) -> None:
    assert action.commands(args, True, Path("P")) == expected
