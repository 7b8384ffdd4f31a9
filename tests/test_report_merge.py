"""`xla2tpu report merge`: the JSON reports of a run's shards make that run's report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "report" / "demo"
FIX = ("fix", "--diff", "--unsafe-fixes", "--no-cache")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    shutil.copytree(DEMO, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.mark.parametrize("shards", [2, 3])
def test_merged_shards_equal_the_unsharded_run(invoke, demo: Path, shards: int) -> None:
    invoke(*FIX, "--report", "all.json", "--report", "all.md", "--report", "all.html", ".")
    for k in range(1, shards + 1):
        invoke(*FIX, "--shard", f"{k}/{shards}", "--report", f"shard{k}.json", ".")
    parts = [json.loads((demo / f"shard{k}.json").read_text())["files"] for k in range(1, shards + 1)]
    assert sum(1 for files in parts if files) > 1  # the shards did split the files
    result = invoke("report", "merge", *(f"shard{k}.json" for k in range(1, shards + 1)),
                    "--report", "merged.json", "--report", "merged.md", "--report", "merged.html")
    assert result.exit_code == 0, result.output
    for suffix in ("json", "md", "html"):
        assert (demo / f"merged.{suffix}").read_text() == (demo / f"all.{suffix}").read_text(), suffix


def test_merged_report_to_standard_output_and_the_job_summary(invoke, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    invoke(*FIX, "--shard", "1/2", "--report", "a.json", ".")
    invoke(*FIX, "--shard", "2/2", "--report", "b.json", ".")
    summary = demo / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke("report", "merge", "a.json", "b.json", "--report", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith("# torch_xla → TorchTPU migration report\n")
    assert summary.read_text().startswith("# torch_xla → TorchTPU migration report\n")


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: None, "a.json: cannot read the report: No such file or directory"),
    (lambda d: (d / "a.json").write_text("[]"), "a.json: not a migration report"),
    (lambda d: (d / "a.json").write_text('{"kind": "xla2tpu-migration-report", "format": 1, "figures": {}}'),
     "a.json: a damaged migration report"),
])
def test_an_unusable_report_is_one_line_and_exit_2(invoke, demo: Path, make, message: str) -> None:
    make(demo)
    invoke(*FIX, "--report", "b.json", ".")
    result = invoke("report", "merge", "b.json", "a.json", "--report", "out.md")
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not (demo / "out.md").exists()


def test_a_file_in_two_reports_is_refused(invoke, demo: Path) -> None:
    invoke(*FIX, "--report", "a.json", ".")
    result = invoke("report", "merge", "a.json", "a.json", "--report", "out.md")
    assert result.exit_code == 2
    assert "a.json: `lib/devices.py` is in an earlier report too" in result.output


def test_dry_runs_and_written_fixes_are_not_mixed(invoke, demo: Path) -> None:
    invoke(*FIX, "--shard", "1/2", "--report", "a.json", ".")
    invoke("fix", "--unsafe-fixes", "--no-cache", "--shard", "2/2", "--report", "b.json", ".")
    result = invoke("report", "merge", "a.json", "b.json", "--report", "out.md")
    assert result.exit_code == 2 and "mix dry runs" in result.output
